"""`kb ui` and `kb site`: the web view for the people who curate a knowledge base (kbtool.surfaces.web).
Both need the `ui` extra (Starlette, uvicorn, Jinja2); the core install refuses them in one line."""

from __future__ import annotations

import os
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Annotated, Any

import typer

from kbtool.model.errors import BadInput
from kbtool.surfaces.cli.base import JsonOut, KbPath, app, open_kb, print_json


def _web(module: str) -> Any:
    """kbtool.surfaces.web.<module>, or a one-line refusal when the ui extra is not installed."""
    import importlib

    try:
        return importlib.import_module(f"kbtool.surfaces.web.{module}")
    except ImportError as exc:
        raise BadInput(f"the web view needs {exc.name}: pip install 'kbtool[ui]'") from None


@app.command()
def ui(
    port: Annotated[int, typer.Option(help="The port (0: any free one).")] = 8765,
    host: Annotated[
        str, typer.Option(help="The address to listen on; beyond loopback it needs --token.")
    ] = "127.0.0.1",
    token: Annotated[
        str | None,
        typer.Option(
            help="The token a browser presents once as ?token=, needed to confirm, refute or edit, and off loopback "
            "for every page (default: $KB_TOKEN, else a new one, printed).",
            show_default=False,
        ),
    ] = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open it in the default browser.")] = False,
    kb: KbPath = None,
) -> None:
    """Serve the web view: search, cards with their evidence and history, the review queue (confirm,
    refute, edit: a commit each), gates, gaps and lint, at http://HOST:PORT/. Open the address it prints,
    with its token: the browser keeps it, and only a browser holding it may confirm, refute or edit."""
    from kbtool.surfaces.web.access import is_loopback, listening_socket, new_token

    token = token or os.environ.get("KB_TOKEN") or None
    if not is_loopback(host) and not token:
        raise BadInput(f"--host {host}: serving beyond loopback needs --token (or KB_TOKEN)")
    create_app = _web("app").create_app
    import uvicorn

    base = open_kb(kb)
    token = token or new_token()  # on a shared machine any local user reaches loopback: writes need it there too
    application = create_app(base, token=token, loopback=is_loopback(host))
    sock, url = listening_socket(host, port, "--port")
    shown = f"{url}/?token={token}"
    print(f"kb: the web view of {base.root} at {shown}", file=sys.stderr, flush=True)
    base.warm_in_background()
    from kbtool.store import servers

    servers.register("ui", [base.root], url)  # so `kb status` shows it and what it holds
    if open_browser:
        threading.Timer(0.5, webbrowser.open, args=(shown,)).start()
    uvicorn.Server(uvicorn.Config(application, log_level="warning", lifespan="off")).run(sockets=[sock])


@app.command()
def site(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="The folder to write (empty, or one kb site wrote).")],
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Write the web view as a static site (no server): every card, the review queue, gates, gaps and
    lint, with search in the browser; for a team's pages host or a folder opened from disk."""
    write_site = _web("site").write_site
    counts = write_site(open_kb(kb), out)
    if as_json:
        print_json({"path": str(out), **counts})
        return
    typer.echo(f"wrote {counts['pages']} pages ({counts['cards']} cards) to {out}; open {out / 'index.html'}")
