"""`kb sync`, `kb export`: knowledge reused across machines and projects. The work is the KnowledgeBase facade's
(kbtool.store.sync underneath)."""

from __future__ import annotations

from pathlib import Path
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


@app.command()
def export(
    fmt: Annotated[str, typer.Option("--format", help="jsonl: one card a line, {card, body}.")] = "jsonl",
    out: Annotated[Path | None, typer.Option("--out", help="The file to write (default: stdout).")] = None,
    kb: KbPath = None,
) -> None:
    """Every card as JSON Lines, lossless: `kb import FILE.jsonl` reads it back (into this or another
    knowledge base) to the same cards."""
    lines = open_kb(kb).export_cards(fmt)
    if out is None:
        for line in lines:
            typer.echo(line)
        return
    text = "".join(f"{line}\n" for line in lines)  # whole before the file is touched: a bad card leaves none
    staging = out.with_name(f".{out.name}.partial")
    staging.write_text(text, encoding="utf-8")
    staging.replace(out)
    typer.echo(f"{text.count(chr(10))} cards written to {out}", err=True)
