"""`kb gate lock|relock|run|verify`: immutable acceptance checks.

Each command calls the facade once (KnowledgeBase.lock_gates, relock_gate, run_gate, verify_gates) and
prints its answer. A locked gate's hashes are in kb.lock, and only a person's relock, with a reason, changes
them. `run` and `verify` exit 1 when a gate fails or does not match its lock, so a script or CI can stop on it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kbtool.surfaces.cli.base import (
    CardRef,
    JsonOut,
    KbPath,
    current_agent,
    gate_app,
    open_kb,
    print_json,
    project_dir,
    show_notices,
)


@gate_app.command("lock")
def gate_lock(
    ids: Annotated[
        list[str] | None,
        typer.Argument(
            help="Gates to lock (default: every confirmed unlocked gate; drafts are skipped and named).",
            show_default=False,
        ),
    ] = None,
    kb: KbPath = None,
) -> None:
    """Record gate hashes in kb.lock (committed); a locked gate can no longer be edited. Without ids,
    every confirmed unlocked gate."""
    locked, skipped = open_kb(kb).lock_gates(ids or [])
    for gate, why in skipped.items():
        typer.echo(
            f"kb: skipped {gate}: {why} (review it, then `kb confirm {gate}` or `kb gate lock {gate}`)", err=True
        )
    typer.echo(
        f"locked {', '.join(locked)}"
        if locked
        else "nothing locked: every confirmed gate is locked already" + (f"; {len(skipped)} skipped" if skipped else "")
    )


@gate_app.command("relock")
def gate_relock(
    card_id: CardRef,
    reason: Annotated[
        str,
        typer.Option(
            "--reason", help="Why the lock changes (required; it goes into the commit, for kb log).", show_default=False
        ),
    ],
    kb: KbPath = None,
) -> None:
    """A person's relock of a locked gate whose card or scripts changed: hash them anew and commit kb.lock (with
    the gate's uncommitted files) naming the reason and who. The only way a lock entry changes; any other
    change of one is reported as tampering by verify, run, lint and sync."""
    base = open_kb(kb)
    commit = base.relock_gate(card_id, reason, agent=current_agent())
    show_notices(base)
    typer.echo(
        f"relocked {card_id} (commit {commit[:10]})"
        if commit
        else f"nothing to relock: gate {card_id} matches its lock; nothing written"
    )


@gate_app.command("run")
def gate_run(
    card_id: CardRef,
    in_dir: Annotated[
        Path | None,
        typer.Option(
            "--in",
            help="The project folder to judge: the check runs there, with $KB_ROOT set to the knowledge "
            "base (default: kb.toml's [gates] project, else the top of the git repository you are in, else "
            "the working directory).",
            show_default=False,
        ),
    ] = None,
    no_record: Annotated[
        bool, typer.Option("--no-record", help="Do not append the run to runs/gates/<id>.jsonl.")
    ] = False,
    confirms: Annotated[
        str | None,
        typer.Option(
            "--confirms",
            metavar="FINDING",
            help="When this locked gate passes, confirm this finding in the same commit: only a finding whose "
            "evidence is this run's own measurement (from the candidate exports a comparison reads, or the "
            "value a command printed).",
            show_default=False,
        ),
    ] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Run a gate's check (its command, or the comparison kb runs itself) in the project it judges, compare
    the value with the threshold; exit 0 on pass, 1 on fail (saying why)."""
    base = open_kb(kb)

    def announce(what: str, folder: Path) -> None:
        typer.echo(f"kb: running in {folder}: {what}", err=True)

    result = base.run_gate(
        card_id,
        record=not no_record,
        in_dir=in_dir,
        confirms=confirms,
        before=announce,
        default_dir=project_dir(),
    )
    show_notices(base)
    if as_json:
        print_json({"gate": result.gate, **result.record()})
    else:
        typer.echo(result.line())
    if not result.passed:
        raise typer.Exit(1)


@gate_app.command("verify")
def gate_verify(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Check every locked gate, and every file its lock covers, against kb.lock and kb.lock's history (an entry
    changed other than by `kb gate relock` is tampering); exit 1 on any mismatch."""
    base = open_kb(kb)
    check = base.verify_gates()
    problems = check.problems
    if as_json:
        print_json(check.to_json())
    else:
        for p in problems:
            typer.echo(f"{p.path}: {'warning: ' if p.severity == 'warning' else ''}{p.message}")
        errors = sum(p.severity == "error" for p in problems)
        said = f"{check.locked} locked gates match kb.lock" if check.ok else f"{errors} mismatch(es)"
        typer.echo(said, err=not check.ok)
    show_notices(base)
    if not check.ok:
        raise typer.Exit(1)
