"""`kb sync`, `kb export`, `kb promote`: knowledge reused across machines and projects.

The work is the KnowledgeBase facade's (kbtool.store.sync and kbtool.store.carry underneath)."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from kbtool.model.errors import BadInput, KbError, one_line
from kbtool.surfaces.cli.base import (
    For,
    JsonOut,
    KbPath,
    OnlyApplying,
    TakeSide,
    Where,
    app,
    make_app,
    open_kb,
    print_json,
    show_notices,
)

sources_app = make_app("The knowledge bases this one reads from (kb.toml [[sources]]), which search and list cover.")
app.add_typer(sources_app, name="sources")


@app.command()
def sync(
    remote: Annotated[str, typer.Argument(help="The git remote to sync with.")] = "origin",
    take: Annotated[
        list[str] | None,
        typer.Option(
            "--take",
            metavar="SIDE:[CARD_ID:]FIELD",
            help="Settle a conflict with one side's value: theirs:claim (every card's claim), "
            "ours:CARD_ID:applies_to (one card's, and all under it), theirs:GATE_ID:lock (a gate's kb.lock "
            "entry), theirs:CARD_ID:file or ours:PATH:file (a whole file); body for the body. Repeat for more.",
        ),
    ] = None,
    accept_rewrite: Annotated[
        bool,
        typer.Option(
            "--accept-rewrite",
            help="The remote was force-pushed: take its history, keep this clone's own changes since the last "
            "sync, and leave the commits it lost out.",
        ),
    ] = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Fetch, integrate and push: cards added on both sides both stay, a card both sides edited merges
    field by field (tags, evidence and links unioned, status by the later change), kb.lock gate by gate. A
    conflict (two values of a field, one gate locked twice, two different cards with one id) stops the sync
    (exit 1), names each one (--json: conflicts), and leaves this knowledge base as it was; so does a remote
    that lost commits this clone has (force-pushed). Two cards with one id: rename yours (git mv
    kb/KIND/ID.md kb/KIND/NEW-ID.md, set id: NEW-ID in it, commit) and sync again. Then each git source is
    fetched and moved to its ref, as `kb sources update` does."""
    from kbtool.store.sync import RemoteRewritten, SyncConflict  # git and the merger: only when syncing

    base = open_kb(kb)
    try:
        result = base.sync(remote, take or [], accept_rewrite)
    except (SyncConflict, RemoteRewritten) as exc:
        if as_json:
            found = {"conflicts": [c.as_json() for c in exc.clashes]} if isinstance(exc, SyncConflict) else {}
            print_json(
                {**found, **({"lost": exc.lost} if isinstance(exc, RemoteRewritten) else {}), "settle": exc.settle}
            )
        raise
    except KbError as exc:  # any other refusal: --json still answers, with the one line stderr has
        if as_json:
            print_json({"refused": one_line(str(exc), type(exc).__name__), "exit": exc.exit_code})
        raise
    refreshed = base.refresh_sources()  # the team's sources move with the team's knowledge base
    if as_json:
        print_json(
            {
                "remote": result.remote,
                "branch": result.branch,
                "received": result.received,
                "sent": result.sent,
                "merged": result.merged,
                "changed": result.changed,
                "sources": [{"name": n, "commit": c, "error": e} for n, c, e in refreshed],
                "taken": [{"take": t.spec, "file": f} for t in result.taken for f in t.settled],
                "rewritten": result.rewritten,
            }
        )
    else:
        typer.echo(result.line())
        for name, commit, error in refreshed:
            typer.echo(f"source {name}: {commit[:12]}" if commit else f"source {name} not refreshed: {error}")


@app.command()
def promote(
    card: Annotated[str, typer.Argument(help="The card to promote (its id, or a unique prefix).")],
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="SOURCE_OR_PATH",
            help="A source of this knowledge base read from a folder, or the path of a knowledge base (a clone "
            "of the team's).",
        ),
    ],
    take: TakeSide = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Carry a card (a finding, or any card) up into the team's knowledge base, in one commit there, its
    provenance naming this project. Promoted before and edited there since: both sides' edits are kept,
    field by field; a field both changed differently stops it (exit 1, nothing written) unless --take
    (ours: the team's value, theirs: this one's). The card here then records where it went and at which
    commit, so `kb import --from-kb` refreshes it. A git source: promote into your clone, and kb sync there."""
    try:
        done = open_kb(kb).promote(card, to, take)
    except KbError as exc:
        if as_json:  # a refusal a script can read too: the same line as stderr's, and each clash whole
            print_json(_refusal(exc))
        raise
    if as_json:
        print_json(done.to_dict())
    else:
        typer.echo(done.line())


def _refusal(exc: KbError) -> dict[str, Any]:
    """A refused command's --json answer: why (as stderr says it), its exit status, and any clashes."""
    clashes = getattr(exc, "clashes", None) or []
    return {
        "refused": True,
        "error": one_line(str(exc), type(exc).__name__),
        "exit": exc.exit_code,
        "conflicts": [c.as_json() for c in clashes],
    }


@app.command()
def export(
    fmt: Annotated[
        str, typer.Option("--format", help="jsonl: a header, then one typed record a line (cards, locks, skills...).")
    ] = "jsonl",
    out: Annotated[Path | None, typer.Option("--out", help="The file to write (default: stdout).")] = None,
    where: Where = None,
    applies_for: For = None,
    only_applying: OnlyApplying = False,
    kb: KbPath = None,
) -> None:
    """The knowledge base as JSON Lines, lossless: every card (matching --where), each gate's lock with the
    files its command runs and its run log, every skill file and kb.toml; `kb import FILE.jsonl` reads it
    back (into this or another knowledge base). A selection (--where, --for) carries cards and their gates
    only. What it cannot carry (a [[sources]] folder of this machine) is said on stderr and in the header.
    For an environment (--for, or kb.toml [environment]) each card says how it applies, those scoped
    elsewhere last."""
    base = open_kb(kb)
    lines = base.export_cards(fmt, where or [], applies_for or [], only_applying)
    show_notices(base)
    if out is None:
        for line in lines:
            typer.echo(line)
        return
    if not out.name or out.is_dir():
        raise BadInput(f"--out {out}: a folder, not a file to write the cards to")
    text = "".join(f"{line}\n" for line in lines)  # whole before the file is touched: a bad card leaves none
    staging = out.with_name(f".{out.name}.partial")
    try:
        staging.write_text(text, encoding="utf-8")
        staging.replace(out)
    except OSError as exc:  # said of the file asked for, not of the staging file beside it
        staging.unlink(missing_ok=True)
        raise BadInput(f"--out {out}: cannot write it ({exc.strerror or exc})") from None
    cards = sum(line.startswith('{"type": "card"') for line in lines)
    typer.echo(f"{cards} cards ({len(lines)} records) written to {out}", err=True)


@sources_app.command("update")
def sources_update(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Fetch each git source and move its copy (.kb/sources/NAME) to its ref; check each folder source."""
    done = open_kb(kb).update_sources()
    if as_json:
        print_json([{"name": name, "commit": commit} for name, commit in done])
    else:
        for name, commit in done:
            typer.echo(f"{name}: {commit[:12] if commit else 'a folder outside git'}")
        if not done:
            typer.echo("no sources in kb.toml (add a [[sources]] table with name and path or url)", err=True)


@sources_app.command("list")
def sources_list(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Each source: its name, where it is read from, its identity, how many cards it holds, the commit it
    reads and how old that is (and, for a git source, when it was last fetched), or how to get it."""
    base = open_kb(kb)
    opened = dict(base.source_bases())
    rows = []
    for source, state in zip(base.config.sources, base.source_states(), strict=True):
        found = opened.get(source.name)
        rows.append(
            {
                "name": source.name,
                "from": source.path or f"{source.url}" + (f"@{source.ref}" if source.ref else ""),
                "root": str(found.root) if found else None,
                "cards": len(found.summaries()) if found else None,
                "kb_id": state.kb_id,
                "commit": state.commit,
                "committed": state.committed,
                "fetched": state.fetched,
            }
        )
    if as_json:
        print_json(rows)
        return
    for row in rows:
        typer.echo(f"{row['name']}: {row['from']} ({_source_held(row)})")
    show_notices(base)


def _source_held(row: dict[str, Any]) -> str:
    if row["cards"] is None:
        return "not there: kb sources update"
    out = f"{row['cards']} cards, id {row['kb_id']}"
    if row["commit"]:
        out += f", at {row['commit'][:12]} committed {_ago(row['committed'])}"
    if row["fetched"]:
        out += f", fetched {_ago(row['fetched'])}"
    elif row["from"] and not row["commit"]:
        out += ", a folder outside git"
    return out


def _ago(iso: str) -> str:
    """How long ago an ISO 8601 time was, in the unit that reads best."""
    seconds = max(0.0, time.time() - datetime.fromisoformat(iso).timestamp())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


@app.command("new-project")
def new_project(
    name: Annotated[str, typer.Argument(help="The project's name (and its folder, unless --dir).")],
    from_kb: Annotated[
        str, typer.Option("--from", metavar="PATH_OR_GIT_URL", help="The knowledge base it starts from.")
    ],
    applies_for: Annotated[
        list[str] | None,
        typer.Option(
            "--for",
            help="FIELD=VALUE of what the project is for (hardware=H100, modality=vision; repeatable): the cards "
            "that apply to it are copied, none scoped elsewhere; kept as its kb.toml [environment].",
            show_default=False,
        ),
    ] = None,
    where: Where = None,
    directory: Annotated[Path | None, typer.Option("--dir", help="Where to create it (default: ./NAME).")] = None,
    source_name: Annotated[
        str | None, typer.Option("--source-name", help="What the project calls the origin (default: its name).")
    ] = None,
    as_json: JsonOut = False,
) -> None:
    """A project knowledge base started from a team's: the team's read as a source, what applies to
    --for (and matches --where) copied (constraints, failure modes, gates, confirmed findings), the gates
    locked, a knowledge pack made, and the open gaps that apply listed."""
    from kbtool.facade.new_project import new_project as start

    made = start(name, from_kb, where or [], directory, source_name, applies_for or [])
    if as_json:
        print_json(
            {
                "root": str(made.root),
                "source": made.source,
                "where_from": made.where_from,
                "copied": made.copied,
                "locked": made.locked,
                "pack": made.pack,
                "open_gaps": [g.to_dict() for g in made.open_gaps],
            }
        )
    else:
        for line in made.lines():
            typer.echo(line)
