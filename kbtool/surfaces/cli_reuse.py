"""`kb sync`: knowledge reused across machines and projects. The work is the KnowledgeBase facade's
(kbtool.store.sync underneath)."""

from __future__ import annotations

from typing import Annotated

import typer

from .cli_base import JsonOut, KbPath, app, open_kb, print_json


@app.command()
def sync(
    remote: Annotated[str, typer.Argument(help="The git remote to sync with.")] = "origin",
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Fetch, integrate and push: cards added on both sides both stay, a card both sides edited merges
    field by field (tags, evidence and links unioned, status by the later change); a conflict stops
    the sync (exit 1), names each one, and leaves this knowledge base as it was."""
    result = open_kb(kb).sync(remote)
    if as_json:
        print_json(
            {
                "remote": result.remote,
                "branch": result.branch,
                "received": result.received,
                "sent": result.sent,
                "merged": result.merged,
                "changed": result.changed,
            }
        )
    else:
        typer.echo(result.line())
