"""The git URLs kb clones and fetches, and the protocols it allows.

They come from a source in kb.toml, `kb import --from-kb`, `kb new-project --from` and `kb skill install`.

Git hands a URL of the form `<transport>::<address>` (and a scheme it does not know itself) to a
remote-helper program: `ext::sh -c ...` runs any command line, `fd::17` talks over a file descriptor
and waits for ever when nothing is there. A knowledge base names URLs other people wrote, so kb takes
only what a repository is shared over (a path, file://, http(s)://, ssh:// or user@host:path, git://),
refuses the rest in one line before git runs, and tells every git it runs the same (GIT_ALLOW_PROTOCOL, in
kbtool/store/git_runner.py), so a URL that reaches git some other way (a submodule, a redirect) is refused
there too.
"""

from __future__ import annotations

import re

from kbtool.model.errors import BadInput

PROTOCOLS = ("file", "git", "http", "https", "ssh")

_HELPER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEMES = frozenset({*PROTOCOLS, "git+ssh", "ssh+git"})


def check_git_url(url: str, what: str) -> str:
    """url, when git may fetch it; else BadInput naming what it was given as (`--from-kb`, `source NAME`)."""
    if not url.strip():
        raise BadInput(f"{what}: an empty URL")
    if url.startswith("-"):  # git would read it as an option
        raise BadInput(f"{what} {url!r}: starts with '-'; a URL or path does not")
    if "\0" in url or "\n" in url or "\r" in url:
        raise BadInput(f"{what}: the URL holds a control character (NUL or a line break)")
    if _HELPER.match(url):
        raise BadInput(
            f"{what} {url!r}: git would run a remote helper for <transport>::, which kb does not; "
            f"give a path or a {', '.join(p + '://' for p in PROTOCOLS)} or user@host:path URL"
        )
    scheme = _SCHEME.match(url)
    if scheme and scheme.group(1).lower() not in _SCHEMES:
        raise BadInput(
            f"{what} {url!r}: kb fetches over {', '.join(PROTOCOLS)} only, not {scheme.group(1)}://; "
            "give a path or one of those URLs"
        )
    return url
