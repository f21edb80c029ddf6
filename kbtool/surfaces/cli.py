"""The `kb` command: parse arguments, call the KnowledgeBase facade, print.

No SQL, git or card logic here. The application, its shared options and helpers are
kbtool/surfaces/cli_base.py; the commands that put skills and kb into agents, cli_install.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..loop import formats
from ..model.errors import BadInput
from ..model.vocabulary import DIRECTIONS, KINDS, LINT_CLASSES, MODES, words
from .cli_base import (
    AllowSecret,
    CardRef,
    Fields,
    JsonOut,
    KbPath,
    NoSources,
    Status,
    Tags,
    Where,
    app,
    body_from,
    committed,
    current_agent,
    gate_app,
    open_kb,
    print_json,
    print_rows,
    print_written,
    progress_bar,
    read_text_arg,
    root_of,
    schema_app,
    show_notices,
    skill_app,
)

# --- commands ------------------------------------------------------------------------


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="Where to create it (default: here).")] = Path("."),
    name: Annotated[str | None, typer.Option(help="Its name in kb.toml (default: the folder name).")] = None,
) -> None:
    """Create a knowledge base: a git repository with kb.toml, .gitignore and a first commit."""
    from ..kb import KnowledgeBase

    kb = KnowledgeBase.init(path, name)
    typer.echo(f"initialised knowledge base {kb.config.kb.name!r} at {kb.root}")


@app.command()
def add(
    kind: Annotated[str, typer.Argument(help=f"{words(KINDS)}.")],
    title: Annotated[str | None, typer.Option("--title", help="The card's title; its id is made from it.")] = None,
    field: Fields = None,
    tag: Tags = None,
    status: Status = None,
    body: Annotated[str | None, typer.Option(help="The markdown body.")] = None,
    body_file: Annotated[Path | None, typer.Option(help="Read the body from this file ('-' for stdin).")] = None,
    from_file: Annotated[Path | None, typer.Option(help="Add a whole card file (frontmatter + body).")] = None,
    kb: KbPath = None,
    allow_secret: AllowSecret = False,
    as_json: JsonOut = False,
) -> None:
    """Add a card and commit it; prints the new id (--json: the whole card)."""
    base = open_kb(kb, allow_secret)
    if from_file is not None:
        if title or field or tag or body is not None or body_file is not None or status:
            raise BadInput("--from-file takes the whole card; give no other card options with it")
        stored = base.add_from_text(kind, read_text_arg(from_file), str(from_file), agent=current_agent())
    else:
        if not title:
            raise BadInput("--title is required (or --from-file CARD.md)")
        stored = base.add(
            kind,
            title,
            fields=field or [],
            tags=tag or [],
            status=status,
            body=body_from(body, body_file) or "",
            agent=current_agent(),
        )
    print_written(stored, as_json)


@app.command()
def show(
    card_id: CardRef,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Print one card, or a skill by its name (what any search hit names): its file (--json: its fields,
    path and body)."""
    from ..skills.spec import render_skill

    base, ref = open_kb(kb).owner_of(card_id)  # SOURCE:ID reads a source's card
    found = base.card_or_skill(ref)
    if as_json:
        print_json(found.to_dict())
    elif not hasattr(found, "card"):  # a skill
        typer.echo(render_skill(found), nl=False)
    else:
        typer.echo((base.root / found.path).read_text(encoding="utf-8"), nl=False)


@app.command("list")
def list_cards(
    kind: Annotated[str | None, typer.Option(help="Only this kind.")] = None,
    status: Status = None,
    tag: Tags = None,
    where: Where = None,
    no_sources: NoSources = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """List cards (id, kind, status, title), filtered by kind, status, tags and any field; a source's
    cards (kb.toml [[sources]]) as SOURCE:ID after this knowledge base's own."""
    from .client import run_operation

    query = {"kind": kind, "status": status, "tags": tag or [], "where": where or [], "sources": not no_sources}
    if as_json:
        typer.echo(run_operation(root_of(kb), "list", {**query, "json_text": True}))
    else:
        print_rows(run_operation(root_of(kb), "list", {**query, "brief": True}))


@app.command()
def edit(
    card_id: CardRef,
    field: Fields = None,
    title: Annotated[str | None, typer.Option(help="A new title (the id stays).")] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", "-t", help="Replace the tags with these (repeatable).", show_default=False),
    ] = None,
    status: Status = None,
    body: Annotated[str | None, typer.Option(help="Replace the body.")] = None,
    body_file: Annotated[Path | None, typer.Option(help="Replace the body with this file ('-' for stdin).")] = None,
    kb: KbPath = None,
    allow_secret: AllowSecret = False,
    as_json: JsonOut = False,
) -> None:
    """Change fields or the body of a card; one commit (none when nothing changed)."""
    stored = open_kb(kb, allow_secret).edit(
        card_id,
        fields=field or [],
        body=body_from(body, body_file),
        title=title,
        tags=tag,
        status=status,
        agent=current_agent(),
    )
    print_written(stored, as_json)


@app.command()
def log(
    card_id: CardRef,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """The git history of one card, newest first."""
    commits = open_kb(kb).history(card_id)
    if as_json:
        print_json(
            [
                {"sha": c.sha, "date": c.date, "author": c.author, "subject": c.subject, "message": c.message}
                for c in commits
            ]
        )
    else:
        for c in commits:
            typer.echo(f"{c.sha[:10]}  {c.date}  {c.author}  {c.subject}")


@app.command()
def recent(
    since: Annotated[
        str | None,
        typer.Option(help="A date (2026-12-01), an age (12h, 7d, 2w) or a commit; all history when left out."),
    ] = None,
    kind: Annotated[str | None, typer.Option(help="Only changes to cards of this kind (or skill).")] = None,
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many commits.")] = 20,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """What changed, newest first: each commit with the cards and skills it added, modified or deleted."""
    changes = open_kb(kb).recent(since, kind)[:limit]
    if as_json:
        print_json([c.to_json() for c in changes])
        return
    for c in changes:
        cards = ", ".join(f"{card.change} {card.id} [{card.kind}]" for card in c.cards)
        typer.echo(f"{c.sha[:10]}  {c.date}  {c.author}  {c.op or 'commit'}: {cards}")


@app.command()
def lint(
    skip: Annotated[
        list[str] | None,
        typer.Option(
            "--skip",
            help=f"A class of checks to leave out (repeatable): {words(LINT_CLASSES, 'and')}.",
            show_default=False,
        ),
    ] = None,
    env: Annotated[
        bool,
        typer.Option(
            "--env", help="Also warn of findings measured on another GPU, engine or driver version than this project's."
        ),
    ] = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Check the knowledge base: schema, links, gate locks, stale findings, contradictions, duplicates,
    skills. Exit 1 on any error (warnings do not fail)."""
    base = open_kb(kb)
    report = base.lint_report(skip=skip or [], env=env)
    show_notices(base)
    if as_json:
        print_json(report.to_json())
    else:
        for p in report.problems:
            typer.echo(p.line())
        warnings = report.count - report.errors
        tail = f", {warnings} warning(s)" if warnings else ""
        verdict = f"ok: no problems{tail}" if report.ok else f"{report.errors} problem(s){tail}"
        typer.echo(verdict, err=not report.ok)
    if not report.ok:
        raise typer.Exit(1)


@app.command("add-finding")
def add_finding(
    title: Annotated[str | None, typer.Option("--title", help="What was found, in one line.")] = None,
    claim: Annotated[str | None, typer.Option(help="The claim, if longer than the title.")] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", "-m", help="NAME=VALUE[UNIT] measured, e.g. tpot=0.56ms (repeatable).", show_default=False
        ),
    ] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline", help="NAME=VALUE[UNIT] of the baseline for a --metric (repeatable).", show_default=False
        ),
    ] = None,
    direction: Annotated[
        str | None,
        typer.Option(help=f"{words(DIRECTIONS)}: which way is better (guessed from the metric's name when left out)."),
    ] = None,
    applies_to: Annotated[
        list[str] | None,
        typer.Option(
            "--applies-to",
            "-a",
            help="KEY=VALUE scope: model, arch, hardware, precision, phase, workload, engine (repeatable).",
            show_default=False,
        ),
    ] = None,
    status: Status = None,
    project: Annotated[str | None, typer.Option(help="The project that measured it.")] = None,
    closes: Annotated[str | None, typer.Option(help="The id of a gap this finding answers; links both.")] = None,
    tag: Tags = None,
    from_file: Annotated[
        list[Path] | None,
        typer.Option(
            "--from",
            help=f"A benchmark export: {formats.described()}. Repeat it for several runs of one configuration: "
            "each metric then gets n, mean, std and a 95% interval.",
            show_default=False,
        ),
    ] = None,
    baseline_from: Annotated[
        list[Path] | None,
        typer.Option(
            "--baseline-from",
            help="An export of the baseline (repeatable, a run each): each metric's change gets a 95% interval and a "
            "verdict (better, worse, no clear change); a finding none of whose changes is clear stays tentative.",
            show_default=False,
        ),
    ] = None,
    metric_name: Annotated[
        str, typer.Option(help="The metric of a results TSV: the column to read (default: its first of numbers).")
    ] = "metric",
    repo: Annotated[
        Path | None,
        typer.Option(
            help="The experiment repository whose HEAD and dirty state to record (default: the working "
            "directory, when it is one)."
        ),
    ] = None,
    command: Annotated[
        str | None, typer.Option(help="The command that measured the --metric values (kept with each).")
    ] = None,
    condition: Annotated[
        list[str] | None,
        typer.Option(
            "--condition",
            "-c",
            help="KEY=VALUE under which the --metric values were measured, e.g. concurrency=32 (repeatable).",
            show_default=False,
        ),
    ] = None,
    json_input: Annotated[bool, typer.Option(help="Read the same fields as a JSON object on stdin.")] = False,
    body: Annotated[str | None, typer.Option(help="Notes (markdown).")] = None,
    strict: Annotated[
        bool, typer.Option(help="Refuse (exit 1, nothing written) when likely duplicates or contradictions exist.")
    ] = False,
    kb: KbPath = None,
    allow_secret: AllowSecret = False,
    as_json: JsonOut = False,
) -> None:
    """Record an experiment's finding with measured evidence; one commit, the index updated.

    Run by an agent (see `kb review`), the finding is tentative until a person confirms it."""
    from ..loop.finding_input import finding_arguments, parse_conditions, parse_metric_flags
    from ..model.contracts import FindingInput

    base = open_kb(kb, allow_secret)
    if json_input:
        flags = {
            "--title": title,
            "--claim": claim,
            "--metric": metric,
            "--baseline": baseline,
            "--from": from_file,
            "--baseline-from": baseline_from,
        }
        given = [flag for flag, value in {**flags, "--body": body}.items() if value]
        if given:
            raise BadInput(
                f"--json-input takes every field from stdin; {', '.join(given)} would be ignored, so drop it"
            )
        args = finding_arguments(FindingInput.parse(_json_stdin(), "--json-input"))
        args["repo"] = args["repo"] or repo
    else:
        args = {
            "title": title,
            "claim": claim,
            "metrics": parse_metric_flags(metric or [], "--metric"),
            "baselines": parse_metric_flags(baseline or [], "--baseline"),
            "direction": direction,
            "applies_to": applies_to or [],
            "status": status,
            "project": project,
            "closes": closes,
            "tags": tag or [],
            "artifact": from_file or None,
            "baseline_artifacts": baseline_from or [],
            "metric_name": metric_name,
            "repo": repo,
            "body": body or "",
            "command": command,
            "conditions": parse_conditions(condition or [], "--condition"),
        }
    if not args["title"]:
        raise BadInput("a finding needs a --title")
    if args["repo"] is None:
        args["repo"] = git_top(Path.cwd())
    stored, related = base.add_finding(**args, strict=strict, agent=current_agent())
    for label in ("duplicates", "contradictions"):
        if related[label]:
            typer.echo(
                f"kb: warning: likely {label[:-1] if label.endswith('s') else label}s of {stored.id}: "
                f"{', '.join(related[label])}",
                err=True,
            )
    show_notices(base)
    if as_json:
        print_json({**stored.to_dict(), "related": related})
    else:
        typer.echo(stored.id)


def _json_stdin() -> Any:
    try:
        return json.loads(sys.stdin.read())
    except json.JSONDecodeError as exc:
        raise BadInput(f"--json-input: stdin is not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise BadInput("--json-input: nested too deeply to be a finding") from None


@app.command()
def supersede(
    old: Annotated[str, typer.Argument(help="The card that no longer holds.")],
    new: Annotated[str, typer.Argument(help="The card that replaces it.")],
    reason: Annotated[str | None, typer.Option(help="Why, recorded in the old card and the commit.")] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Mark OLD superseded by NEW: links both ways, one commit; search demotes OLD."""
    old_card, new_card = open_kb(kb).supersede(old, new, reason, agent=current_agent())
    if as_json:
        print_json({"superseded": old_card.to_dict(body=False), "by": new_card.to_dict(body=False)})
    else:
        typer.echo(f"{old_card.id} superseded by {new_card.id}")


@app.command()
def gaps(no_sources: NoSources = False, kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Open gaps (questions worth an experiment), high priority first, the sources' among them."""
    from .client import run_operation

    open_gaps = run_operation(root_of(kb), "gaps", {"sources": not no_sources})
    if as_json:
        print_json(open_gaps)
        return
    for g in open_gaps:
        typer.echo(f"{g.get('priority', 'medium'):<6}  {g['id']}  {g.get('question', g['title'])}")


@app.command()
def review(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Cards agents wrote that nobody has reviewed yet, oldest first: confirm or refute each."""
    waiting = open_kb(kb).review_queue()
    if as_json:
        print_json([c.to_dict(body=False) for c in waiting])
        return
    for c in waiting:
        typer.echo(
            f"{c.id}  [{c.card.kind}, {c.card.status}]  by {c.card.provenance.agent}, "
            f"{c.card.provenance.created or 'undated'}  {c.card.title}"
        )
    typer.echo(
        f"{len(waiting)} card(s) to review: `kb show ID`, then `kb confirm ID` or `kb refute ID --reason R`"
        if waiting
        else "nothing to review",
        err=True,
    )


@app.command()
def confirm(
    card_id: CardRef,
    reason: Annotated[str | None, typer.Option(help="What you checked, recorded in the commit.")] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Vouch for a card (an agent's, typically): status confirmed, you as reviewer; one commit."""
    print_written(open_kb(kb).confirm(card_id, reason, agent=current_agent()), as_json)


@app.command()
def refute(
    card_id: CardRef,
    reason: Annotated[str, typer.Option(help="Why it does not hold, recorded in the commit.")],
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Reject a card: status refuted (search demotes it, packs leave it out), you as reviewer; one commit."""
    print_written(open_kb(kb).refute(card_id, reason, agent=current_agent()), as_json)


@app.command()
def retire(
    card_id: CardRef,
    reason: Annotated[str, typer.Option(help="Why it no longer applies, recorded in the commit.")],
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Retire a card that no longer applies (search demotes it, packs leave it out); one commit."""
    print_written(open_kb(kb).set_status(card_id, "retired", reason, agent=current_agent()), as_json)


@app.command()
def reopen(
    card_id: CardRef,
    reason: Annotated[str, typer.Option(help="Why the question is open again, recorded in the commit.")],
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Reopen a gap: what closed it is cleared (the findings keep their links); one commit."""
    print_written(open_kb(kb).set_status(card_id, "open", reason, agent=current_agent()), as_json)


@app.command()
def stats(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Counts by kind, status and project; open gaps; stale findings; locked gates."""
    from .client import run_operation

    report = run_operation(root_of(kb), "stats")
    if as_json:
        print_json(report)
        return
    typer.echo(
        f"{report['cards']} cards; {report['open_gaps']} open gaps; {len(report['stale_findings'])} stale findings; "
        f"{report['locked_gates']} locked gates"
    )
    for key in ("by_kind", "by_status", "by_project"):
        typer.echo(f"{key.replace('_', ' ')}: " + ", ".join(f"{k} {v}" for k, v in sorted(report[key].items())))


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


@gate_app.command("run")
def gate_run(
    card_id: CardRef,
    in_dir: Annotated[
        Path | None,
        typer.Option(
            "--in",
            help="The project folder to judge: the command runs there, with $KB_ROOT set to the knowledge "
            "base (default: the top of the git repository you are in, else the working directory).",
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
            help="When this locked gate passes, confirm this finding in the same commit.",
            show_default=False,
        ),
    ] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Run a gate's command in the project it judges, read its metric, compare with the threshold; exit 0
    on pass, 1 on fail."""
    base = open_kb(kb)

    def announce(command: str, folder: Path) -> None:
        typer.echo(f"kb: running in {folder}: {command}", err=True)

    result = base.run_gate(
        card_id,
        record=not no_record,
        in_dir=in_dir if in_dir is not None else project_dir(),
        confirms=confirms,
        before=announce,
    )
    show_notices(base)
    if as_json:
        print_json({"gate": result.gate, **result.record()})
    else:
        typer.echo(result.line())
    if not result.passed:
        raise typer.Exit(1)


def project_dir() -> Path:
    """Where a gate runs when no --in is given: a gate judges a project, and a project is a repository,
    so the top of the git repository around the working directory (as `make` or `pytest` would be run
    from it), else the working directory itself."""
    return git_top(Path.cwd()) or Path.cwd()


def git_top(here: Path) -> Path | None:
    """The top of the git repository holding here, if any (no git process: this runs on every add-finding)."""
    here = here.resolve()
    return next((folder for folder in (here, *here.parents) if (folder / ".git").exists()), None)


@gate_app.command("verify")
def gate_verify(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Check every locked gate against kb.lock; exit 1 on any mismatch."""
    check = open_kb(kb).verify_gates()
    problems = check.problems
    if as_json:
        print_json(check.to_json())
    else:
        for p in problems:
            typer.echo(f"{p.path}: {p.message}")
        typer.echo(
            f"{check.locked} locked gates match kb.lock" if not problems else f"{len(problems)} mismatch(es)",
            err=bool(problems),
        )
    if problems:
        raise typer.Exit(1)


@app.command()
def search(
    query: Annotated[str | None, typer.Argument(help="What to look for, in words.")] = None,
    k: Annotated[int, typer.Option("-k", help="How many cards to return.")] = 10,
    kind: Annotated[str | None, typer.Option(help="Only this kind.")] = None,
    status: Status = None,
    tag: Tags = None,
    where: Where = None,
    mode: Annotated[str, typer.Option(help=f"{words(MODES)}.")] = MODES[0],
    explain: Annotated[bool, typer.Option(help="Show each leg's rank and score per hit.")] = False,
    env: Annotated[
        bool, typer.Option("--env", help="Flag findings measured on another GPU, engine or driver version.")
    ] = False,
    no_sources: NoSources = False,
    batch: Annotated[
        Path | None, typer.Option(help='One query per line (text, or JSON {"q": ...}); one JSON result per line.')
    ] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Hybrid search (BM25 + embeddings, fused); the index refreshes itself first."""
    from .client import run_searches

    if (query is None) == (batch is None):
        raise BadInput("give a QUERY or --batch FILE (one of them)")
    options = {
        "k": k,
        "kind": kind,
        "status": status,
        "tags": tag or [],
        "where": where or [],
        "mode": mode,
        "explain": explain,
        "sources": not no_sources,
        "env": env,
    }
    if batch is not None:
        requests = [
            _batch_request(line, n, options)
            for n, line in enumerate(read_text_arg(batch).splitlines(), 1)
            if line.strip()
        ]
        for result in run_searches(root_of(kb), requests):
            typer.echo(json.dumps(result, ensure_ascii=False))
        return
    [result] = run_searches(root_of(kb), [{"query": query, **options}])
    if as_json:
        print_json(result)
    else:
        print_hits(result, explain)


def _batch_request(line: str, n: int, defaults: dict[str, Any]) -> dict[str, Any]:
    text = line.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadInput(f"--batch line {n}: not JSON ({exc.msg})") from None
        if not isinstance(data, dict) or not isinstance(data.get("q", data.get("query")), str):
            raise BadInput(f'--batch line {n}: expected {{"q": "..."}}')
        return {**defaults, **data}
    return {**defaults, "query": text}


def _leg_rank(leg: dict[str, Any] | None) -> str:
    return f"rank {leg['rank']} ({leg['score']:.4f})" if leg else "-"


def print_hits(result: dict[str, Any], explain: bool) -> None:
    for n, hit in enumerate(result["hits"], 1):
        typer.echo(f"{n:>2}. {hit['id']}  [{hit['kind']}, {hit['status']}]  {hit['score']:.4f}")
        typer.echo(f"    {hit['title']}")
        if hit.get("source"):
            typer.echo(f"    from {source_line(hit['source'])}")
        typer.echo(f"    {hit['snippet']}")
        if hit.get("may_not_apply"):
            typer.echo(f"    may not apply here: {'; '.join(hit['may_not_apply'])}")
        if explain:
            legs = ", ".join(
                f"{name} {_leg_rank(v)}" for name, v in hit["explain"].items() if name in ("bm25", "vector")
            )
            typer.echo(f"    explain: {legs}; demoted: {hit['explain']['demoted']}")
    if not result["hits"]:
        typer.echo("no matching cards", err=True)


def source_line(source: dict[str, Any]) -> str:
    """Where a card came from, in one line: a path or a URL (a source needs one), and the heading."""
    where = source.get("path") or source.get("url") or "?"
    return where + (f" # {source['heading']}" if source.get("heading") else "")


@app.command("index")
def index_cmd(
    rebuild: Annotated[bool, typer.Option(help="Delete the index and build it again from the cards.")] = False,
    lexical: Annotated[bool, typer.Option(help="Keyword index only; skip embeddings (no model loaded).")] = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Bring the search index (.kb/index.db) up to date; only changed text is re-embedded."""
    base = open_kb(kb)
    with progress_bar("embedding") as progress:
        stats = base.refresh_index(rebuild=rebuild, semantic=not lexical, progress=progress)
    show_notices(base)
    summary = {
        "scanned": stats.scanned,
        "added": stats.added,
        "updated": stats.updated,
        "removed": stats.removed,
        "embedded": stats.embedded,
        "invalid": stats.invalid,
        "seconds": round(stats.seconds, 3),
    }
    if as_json:
        print_json(summary)
    else:
        typer.echo(
            f"{stats.scanned} cards: {stats.added} added, {stats.updated} updated, {stats.removed} removed, "
            f"{stats.embedded} chunks embedded in {stats.seconds:.2f} s"
            + (f"; {len(stats.invalid)} invalid (see kb lint)" if stats.invalid else "")
        )


@app.command("import")
def import_cmd(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="A folder of markdown, one markdown file, a MetaInfer inference_blueprint.json, or cards "
            "exported by `kb export --format jsonl` (FILE.jsonl).",
            show_default=False,
        ),
    ] = None,
    from_kb: Annotated[
        str | None,
        typer.Option(
            "--from-kb",
            metavar="PATH_OR_GIT_URL",
            help="Copy another knowledge base's cards instead, each recording where it came from.",
            show_default=False,
        ),
    ] = None,
    kind: Annotated[str | None, typer.Option(help="With --from-kb: only this kind.")] = None,
    where: Where = None,
    kb: KbPath = None,
    allow_secret: AllowSecret = False,
    as_json: JsonOut = False,
) -> None:
    """Import documents as cards in one commit; importing again updates instead of duplicating. A .jsonl
    file is a card export: its cards are added or updated as they are. --from-kb copies another
    knowledge base's cards (of --kind, matching --where); importing again updates the copies, and
    `kb lint` says when an original changed since."""
    if (path is None) == (from_kb is None):
        raise BadInput("give a PATH to import or --from-kb LOCATION (one of them)")
    if path is not None and (kind or where):
        raise BadInput("--kind and --where go with --from-kb")
    base = open_kb(kb, allow_secret)
    if path is None:
        from ..reuse import import_from_kb

        summary = import_from_kb(base, str(from_kb), kind, where or [])
    elif path.suffix == ".jsonl":
        summary = base.import_cards(path)
    else:
        summary = base.import_path(path)
    if as_json:
        print_json(summary.to_json())
    else:
        typer.echo(
            f"{summary.collection}: {summary.added} added, {summary.updated} updated, "
            f"{summary.unchanged} unchanged, {summary.retired} retired" + committed(summary.commit)
        )


@app.command("eval")
def eval_cmd(
    gold: Annotated[
        Path,
        typer.Argument(
            help='JSONL of {"q": ..., "relevant": [card ids, source paths or path#heading], "split": dev|test}.'
        ),
    ],
    k: Annotated[int, typer.Option("-k", help="The k of recall@k.")] = 10,
    split: Annotated[
        str | None, typer.Option(help="Only the queries of this split: dev (tune on it) or test (report it).")
    ] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Score search on gold queries: recall@k, hit@k, MRR@10, nDCG@10 for bm25, vector and hybrid, beside a
    plain BM25 baseline."""
    from ..search.evaluation import PlainBM25, evaluate, load_gold

    base = open_kb(kb)
    queries = load_gold(gold, split=split)
    base.refresh_index()
    report = evaluate(queries, lambda q, depth, mode: base.search(q, k=depth, mode=mode).to_json()["hits"], k=k)
    plain = PlainBM25.of_cards(base.cards())
    report["modes"]["plain bm25"] = evaluate(
        queries, lambda q, depth, mode: plain.search(q, depth), k=k, modes=("plain",)
    )["modes"]["plain"]
    show_notices(base)
    if as_json:
        print_json(report)
        return
    typer.echo(f"{report['queries']} queries, k={k}" + (f", {split} split" if split else ""))
    for mode, scores in report["modes"].items():
        typer.echo(
            f"  {mode:<10} recall@{k} {scores[f'recall@{k}']:.3f}  hit@{k} {scores[f'hit@{k}']:.3f}  "
            f"MRR@10 {scores['mrr@10']:.3f}  "
            f"nDCG@10 {scores['ndcg@10']:.3f}  missed {len(scores['missed'])}"
        )


SkillName = Annotated[str, typer.Argument(metavar="NAME", help="A skill's name (its folder under skills/).")]


def _skill_line(skill: Any) -> str:
    return f"{skill.name:<28} {skill.description if len(skill.description) <= 100 else skill.description[:99] + '…'}"


@skill_app.command("new")
def skill_new(
    name: SkillName,
    description: Annotated[
        str, typer.Option(help="What the skill does and when to use it (1-1024 characters; agents match on it).")
    ],
    license: Annotated[str | None, typer.Option(help="A license name, or the name of a bundled license file.")] = None,
    compatibility: Annotated[
        str | None, typer.Option(help="Environment requirements, up to 500 characters (e.g. 'an NVIDIA GPU and nsys').")
    ] = None,
    body_file: Annotated[
        Path | None,
        typer.Option(help="The instructions (markdown) for the body; default: a skeleton of sections to fill in."),
    ] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Create skills/NAME/SKILL.md, one commit."""
    body = read_text_arg(body_file) if body_file is not None else None
    skill = open_kb(kb).new_skill(name, description, license, compatibility, body)
    print_json(skill.to_dict()) if as_json else typer.echo(f"{skill.path}/SKILL.md")


@skill_app.command("list")
def skill_list(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """The valid skills, by name, with their descriptions."""
    from ..skills.spec import skill_folders

    base = open_kb(kb)
    skills = base.skills()
    invalid = len(skill_folders(base.skills_dir)) - len(skills)
    if as_json:
        print_json([s.to_dict(body=False) for s in skills])
    else:
        for skill in skills:
            typer.echo(_skill_line(skill))
    if invalid:
        typer.echo(f"kb: note: {invalid} invalid skill(s) not listed; run `kb skill validate`", err=True)


@skill_app.command("show")
def skill_show(name: SkillName, kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Print a skill's SKILL.md (and, with --json, its fields and files)."""
    from ..skills.spec import render_skill

    skill = open_kb(kb).skill(name)
    print_json(skill.to_dict()) if as_json else typer.echo(render_skill(skill), nl=False)


@skill_app.command("validate")
def skill_validate(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[PATH ...]",
            help="Skill folders, or folders of them (default: the knowledge base's skills/).",
            show_default=False,
        ),
    ] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Judge skills by the Agent Skills specification; exit 1 on any violation, each one named."""
    from ..skills.registry import skill_sources
    from ..skills.spec import InvalidSkill, discoverability, load_skill, skill_folders

    folders = [f for p in paths for f in skill_sources(p)] if paths else skill_folders(open_kb(kb).skills_dir)
    report: list[dict[str, Any]] = []
    for folder in folders:
        try:
            warnings = [m for _, m in discoverability(load_skill(folder))]
            report.append({"path": str(folder), "valid": True, "violations": [], "warnings": warnings})
        except InvalidSkill as exc:
            report.append({"path": str(folder), "valid": False, "violations": exc.violations, "warnings": []})
    bad = [r for r in report if not r["valid"]]
    if as_json:
        print_json({"ok": not bad, "skills": report})
    else:
        for r in report:
            typer.echo(f"{r['path']}: {'ok' if r['valid'] else 'INVALID'}")
            for v in r["violations"]:
                typer.echo(f"  - {v}")
            for w in r["warnings"]:
                typer.echo(f"  warning: {w}")
        typer.echo(f"{len(report) - len(bad)} valid, {len(bad)} invalid", err=bool(bad))
    if bad:
        raise typer.Exit(1)


@skill_app.command("import")
def skill_import(
    path: Annotated[Path, typer.Argument(help="A skill folder, or a folder of skill folders.")],
    trust: Annotated[
        bool, typer.Option("--trust", help="Import despite high-severity findings of the security scan: you read them.")
    ] = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Copy valid skills into skills/ in one commit; report each invalid one with its reasons (exit 1 if any).
    Each is scanned first (see `kb skill scan`)."""
    summary = open_kb(kb).import_skills(path, trust)
    if as_json:
        print_json(summary.to_json())
    else:
        for name in summary.added:
            typer.echo(f"added {name}")
        for name in summary.updated:
            typer.echo(f"updated {name}")
        for r in summary.rejected:
            typer.echo(f"kb: rejected {r.path}: {'; '.join(r.violations)}", err=True)
        typer.echo(
            f"{len(summary.added)} added, {len(summary.updated)} updated, {len(summary.rejected)} rejected"
            + committed(summary.commit)
        )
    if summary.rejected:
        raise typer.Exit(1)


@skill_app.command("export")
def skill_export(
    names: Annotated[list[str], typer.Argument(metavar="NAME ...", help="The skills to export.")],
    to: Annotated[Path, typer.Option("--to", help="The folder to copy them into, e.g. .claude/skills.")],
    kb: KbPath = None,
) -> None:
    """Copy skills to DIR/NAME/ (replacing an earlier export) for an agent to load."""
    for target in open_kb(kb).export_skills(names, to):
        typer.echo(str(target))


@skill_app.command("pack")
def skill_pack(
    name: Annotated[str, typer.Option("--name", help="The new skill's name, e.g. h100-pack.")],
    where: Where = None,
    general: Annotated[
        bool, typer.Option(help="Also take cards that do not set the filtered fields (rules that hold everywhere).")
    ] = False,
    description: Annotated[
        str | None, typer.Option(help="The skill's description (default: made from the filters and counts).")
    ] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """A knowledge-pack skill of the matching confirmed findings, constraints, failure-modes and gates
    (cards under references/)."""
    skill = open_kb(kb).pack_skill(name, where or [], general, description)
    if as_json:
        print_json(skill.to_dict(body=False))
    else:
        typer.echo(f"{skill.path}/SKILL.md: {skill.metadata.get('kb-cards')} cards ({skill.description})")


@app.command()
def serve(
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
            show_default=False,
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="Bearer token every HTTP request must carry (default: $KB_TOKEN); required off loopback.",
            show_default=False,
        ),
    ] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Offer only the reading tools (no writer is offered).")
    ] = False,
    kb: Annotated[
        list[str] | None,
        typer.Option(
            "--kb",
            metavar="[NAME=]PATH",
            help="A knowledge base to serve; repeat for several (NAME=PATH each, the first the default). "
            "Default: the one given before the command, $KB_DIR, or the nearest folder above with kb.toml.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve knowledge bases to agents over MCP: stdio by default, or streamable HTTP."""
    token = token or os.environ.get("KB_TOKEN") or None
    try:
        from . import mcp_transports
    except ImportError as exc:
        raise BadInput(f"kb serve needs the MCP SDK ({exc.name} is missing): pip install 'kbtool[mcp]'") from None
    if http is None and token:
        raise BadInput("--token applies to --http; over stdio the client that started kb serve is the only peer")
    served = mcp_transports.open_served(kb or [str(root_of(None))])
    if http is not None:
        mcp_transports.serve_http(served, http, token, read_only)
    else:
        mcp_transports.serve_stdio(served, read_only)


@schema_app.command("export")
def schema_export(
    out: Annotated[
        Path | None, typer.Option(help="Folder to write to (default: schemas/ in the knowledge base).")
    ] = None,
    check: Annotated[bool, typer.Option(help="Write nothing; exit 1 when the files differ from the models.")] = False,
    kb: KbPath = None,
) -> None:
    """Write one JSON Schema (draft 2020-12) per card kind, generated from the models."""
    from ..model.schemas import drifted_schemas, export_schemas

    directory = out if out is not None else open_kb(kb).root / "schemas"
    if check:
        drifted = drifted_schemas(directory)
        if drifted:
            typer.echo(f"schemas out of date in {directory}: {', '.join(drifted)}; run `kb schema export`", err=True)
            raise typer.Exit(1)
        typer.echo(f"schemas in {directory} match the models")
        return
    for path in export_schemas(directory):
        typer.echo(str(path))


from . import cli_evidence, cli_install, cli_reuse, cli_web  # noqa: E402, F401  (they register their commands on the app)


def main() -> None:
    app(prog_name="kb")
