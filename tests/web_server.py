"""A `kb ui` server as a user starts it (a subprocess on a free port), for the web view's tests."""

from __future__ import annotations

import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import KB_COMMAND


class UiUrl(str):
    """The server's base URL ("http://127.0.0.1:PORT/"), and the token in the address it printed."""

    token: str
    printed: str


@contextmanager
def running_ui(root: Path, env: dict[str, str], *args: str) -> Iterator[UiUrl]:
    """The server's base URL while it runs."""
    proc = subprocess.Popen(
        [*KB_COMMAND, "--kb", str(root), "ui", "--port", "0", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"(http://\S+/)\?token=(\S+)", line)
        assert found, f"kb ui printed {line!r}"
        url = UiUrl(found.group(1))
        url.token, url.printed = found.group(2), found.group(0)
        for _ in range(100):  # listening already; wait for the app to answer
            try:
                urllib.request.urlopen(url.split("?")[0] + "gaps", timeout=5)
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return None


def request(
    url: str, data: dict[str, str] | None = None, headers: dict[str, str] | None = None, token: str | None = None
) -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of a GET, or a form POST when data is given; redirects are not followed.
    token: sent as a bearer token, as a script sends it."""
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    opener = urllib.request.build_opener(NoRedirect)
    headers = {**(headers or {}), **({"Authorization": f"Bearer {token}"} if token else {})}
    req = urllib.request.Request(url, data=body, headers=headers)
    try:
        with opener.open(req, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no form with the CSRF secret"
    return found.group(1)


def form_of(page: str, action: str = "") -> dict[str, str]:
    """What a form of the page carries hidden (the first whose action ends with `action`): the CSRF secret
    and the version of the card it shows."""
    pattern = r'<form[^>]* method="post" action="[^"]*' + re.escape(action) + r'"[^>]*>(.*?)</form>'
    forms = re.findall(pattern, page, re.S)
    assert forms, f"the page has no form posting to ...{action}"
    found = re.search(r'name="version" value="([^"]+)"', forms[0])
    assert found, "the form has no version of the card"
    return {"csrf": csrf_of(forms[0]), "version": found.group(1)}
