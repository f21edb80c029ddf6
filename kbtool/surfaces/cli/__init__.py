"""The `kb` command: parse arguments, call the KnowledgeBase facade, print.

No SQL, git or card logic here. Here: the commands on cards (init, add, show, list, edit, log,
recent, lint, gaps, stats, import), serve and schema. The application, its shared options and helpers are
base.py; the other commands, by what they are about, in the modules beside it: curating (link, supersede,
review, confirm, refute, retire, reopen), evidence (add-finding, compare, plot), gates, search
(search, index, eval), skills, install (skill install, kb agent), reuse (sync, sources, export,
new-project), web (ui, site), daemon (status, daemon status/stop).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from kbtool.model.errors import BadInput, CardNotFound
from kbtool.model.vocabulary import KINDS, LINT_CLASSES, words
from kbtool.surfaces.cli.base import (
    OPENED,
    AllowSecret,
    CardRef,
    Fields,
    For,
    JsonOut,
    KbPath,
    NoSources,
    OnlyApplying,
    Status,
    Tags,
    TakeSide,
    Where,
    app,
    body_from,
    committed,
    current_agent,
    open_kb,
    print_json,
    print_rows,
    print_written,
    read_text_arg,
    root_of,
    say_identity,
    schema_app,
    show_notices,
)

# --- commands ------------------------------------------------------------------------


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="Where to create it (default: here).")] = Path("."),
    name: Annotated[str | None, typer.Option(help="Its name in kb.toml (default: the folder name).")] = None,
) -> None:
    """Create a knowledge base: a git repository with kb.toml, .gitignore and a first commit."""
    from kbtool.facade.knowledge_base import KnowledgeBase

    kb = KnowledgeBase.init(path, name)
    OPENED.append(kb)
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
    card_ids: Annotated[
        list[str],
        typer.Argument(
            metavar="ID",
            help="Card ids (or unique prefixes of them), skill names, or SOURCE:ID for a source's card.",
            show_default=False,
        ),
    ],
    field: Annotated[
        list[str] | None,
        typer.Option(
            "--field",
            help="Only this field (body: the text), as a line each; repeatable. A field a card lacks is named.",
            show_default=False,
        ),
    ] = None,
    all_metrics: Annotated[
        bool, typer.Option("--all-metrics", help="A finding's every evidence entry, not only the headline ones.")
    ] = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Print cards, or skills by their names (what any search hit names): each one's file, a finding with
    more than 6 evidence entries (a benchmark export's 65) cut to its headline metrics, its body's verdict
    lines too, unless --all-metrics (--json: the MCP get tool's answer, each one's fields, path and body,
    and the ids that match nothing)."""
    from kbtool.evidence.headline import headline_body, headline_evidence
    from kbtool.model import markdown
    from kbtool.model.contracts.reading import only_fields
    from kbtool.model.records import StoredCard
    from kbtool.skills.spec import render_skill

    base = open_kb(kb)
    found, items = base.documents(card_ids)
    shown = [ref for ref in dict.fromkeys(card_ids) if ref not in found.missing]
    documents, texts, cut, locks = [], [], [], []
    for ref, item, document in zip(shown, items, found.cards, strict=True):
        if isinstance(item, StoredCard):
            card, document, total = (item.card, document, 0) if all_metrics else headline_evidence(item, document)
            owner, _ = base.owner_of(ref)  # SOURCE:ID: the file is in that source
            # uncut, the file as git holds it; cut, the card rendered with the evidence kept
            if total:
                body, left = headline_body(item.body, item.card, card)
                text = markdown.render(card, body)
                lines = f", {left} body lines left out" if left else ""
                cut.append(f"{item.id}: {len(getattr(card, 'evidence', []))} of {total}{lines}")
            else:
                text = (owner.root / item.path).read_text(encoding="utf-8")
        else:
            text = render_skill(item)
        if field:
            document, text = only_fields(document, field)
            text += "\n"
        elif document.lock_line() and not as_json:  # stdout stays the file as git holds it
            locks.append(f"{document.id}: {document.lock_line().strip()}")
        documents.append(document)
        texts.append(text)
    if as_json:
        print_json(found.model_copy(update={"cards": documents}).to_json())
    else:
        for text in texts:
            typer.echo(text, nl=False)
    if cut and (not field or "evidence" in field):
        note = (
            f"evidence cut to the headline metrics, rounded, without the runs' exports and recorded_on "
            f"({'; '.join(cut)} entries shown); --all-metrics for all"
        )
        typer.echo(f"kb: note: {note}", err=True)
    for lock in locks:
        typer.echo(f"kb: note: {lock}", err=True)
    if found.missing:
        raise CardNotFound(f"no card or skill with id {', '.join(found.missing)}")


@app.command("list")
def list_cards(
    kind: Annotated[str | None, typer.Option(help="Only this kind.")] = None,
    status: Status = None,
    tag: Tags = None,
    where: Where = None,
    applies_for: For = None,
    only_applying: OnlyApplying = False,
    no_sources: NoSources = False,
    limit: Annotated[int | None, typer.Option(min=1, help="Show at most this many cards.")] = None,
    offset: Annotated[int, typer.Option(min=0, help="Skip this many cards first (the next page).")] = 0,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """List cards (id, kind, status, title), filtered by kind, status, tags and any field; a source's
    cards (kb.toml [[sources]]) as SOURCE:ID after this knowledge base's own. With an environment (--for, or
    kb.toml [environment]), each row says how the card applies to it, those scoped elsewhere last (--json: the MCP
    list tool's answer, each card's frontmatter)."""
    from kbtool.surfaces.daemon.client import run_operation

    query = {
        "kind": kind,
        "status": status,
        "tags": tag or [],
        "where": where or [],
        "sources": not no_sources,
        "for": applies_for or [],
        "only_applying": only_applying,
    }
    paged = limit is not None or offset
    if as_json:
        text = run_operation(root_of(kb), "list", {**query, "json_text": True})
        typer.echo(page_of_cards(text, offset, limit) if paged else text)
    else:
        rows = run_operation(root_of(kb), "list", {**query, "brief": True})
        print_rows(rows[offset : None if limit is None else offset + limit])


def page_of_cards(listed: str, offset: int, limit: int | None) -> str:
    """One page of `kb list --json`'s answer, as the MCP list tool pages it (limit, offset): the cards from
    offset, total all that match, truncated when more follow."""
    import json

    page = json.loads(listed)
    end = len(page["cards"]) if limit is None else offset + limit
    page.update(cards=page["cards"][offset:end], offset=offset, truncated=end < page["total"])
    return json.dumps(page, ensure_ascii=False, indent=1)


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
    """Change fields or the body of a card; one commit (none when nothing changed, said)."""
    base = open_kb(kb, allow_secret)
    before = base.store.head()
    stored = base.edit(
        card_id,
        fields=field or [],
        body=body_from(body, body_file),
        title=title,
        tags=tag,
        status=status,
        agent=current_agent(),
    )
    if base.store.head() == before:
        typer.echo(f"kb: note: nothing changed: {stored.id} already holds what was given; no commit", err=True)
    print_written(stored, as_json)


@app.command()
def log(
    card_id: CardRef,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """The git history of one card, newest first, with the reasons given; a gate's recorded runs first (--json:
    the MCP log tool's answer, every commit)."""
    found = open_kb(kb).card_log(card_id)
    if as_json:
        print_json(found.to_json())
        return
    for run in found.runs or []:
        typer.echo(f"run {run.line()}")
    if found.runs_total and found.runs and found.runs_total > len(found.runs):
        typer.echo(f"({len(found.runs)} of {found.runs_total} runs shown: the newest)")
    for c in found.commits:
        typer.echo(f"{c.sha[:10]}  {c.date}  {c.author}  {c.subject}")
        if c.reason:
            typer.echo(f"    {c.reason}")


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
    """What changed, newest first: each commit with the cards and skills it added, modified or deleted
    (--json: the MCP recent tool's answer)."""
    page = open_kb(kb).recent_changes(since, kind, limit)
    if as_json:
        print_json(page.to_json())
        return
    for c in page.changes:
        by = f" (agent {c.agent})" if c.agent else ""  # the kb-agent trailer: a cleaned label (clean_label)
        typer.echo(f"{c.sha[:10]}  {c.date}  {c.author}{by}  {c.op or 'commit'}: {c.what(titles=False)}")


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
    report = base.lint_page(skip=skip or [], env=env)  # every problem: one page, as the MCP lint tool shows it
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


@app.command()
def gaps(
    applies_for: For = None,
    only_applying: OnlyApplying = False,
    no_sources: NoSources = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Open gaps (questions worth an experiment), high priority first, the sources' among them. A gap closes
    only when a finding that closes it is confirmed (by a person, or a locked gate's pass): until then it is
    listed as answered, awaiting review, with the finding's id; a gap whose closing findings were all refuted,
    superseded, retired or deleted since is open again, and says so.
    With an environment (--for, or kb.toml [environment]), those scoped elsewhere come last (--json: the MCP gaps
    tool's answer)."""
    from kbtool.surfaces.daemon.client import run_operation

    asked = {"sources": not no_sources, "for": applies_for or [], "only_applying": only_applying}
    page = run_operation(root_of(kb), "gaps", asked)  # an OpenGaps, every open gap
    if as_json:
        print_json(page)
        return
    from kbtool.model.contracts.reading import gap_note

    for g in page["gaps"]:
        note = gap_note(g)
        why = f"  ({note})" if note else ""
        applies = f"{g['applies']:<7}  " if g.get("applies") else ""
        typer.echo(f"{g['priority']:<6}  {applies}{g['id']}  {g['question']}{why}")


@app.command()
def stats(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Counts by kind, status and project; open gaps; stale findings; locked gates."""
    from kbtool.surfaces.daemon.client import run_operation

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
    take: TakeSide = None,
    applies_for: For = None,
    relock: Annotated[
        str | None,
        typer.Option(
            "--relock",
            metavar="WHY",
            help="With --from-kb: take the changes of gates locked here too, relocking each (a person's "
            "review; WHY goes into the commit).",
            show_default=False,
        ),
    ] = None,
    kb: KbPath = None,
    allow_secret: AllowSecret = False,
    as_json: JsonOut = False,
) -> None:
    """Import documents as cards in one commit; importing again updates instead of duplicating. A .jsonl
    file is a card export: its cards are added or updated as they are. --from-kb copies another
    knowledge base's cards (of --kind, matching --where; none scoped elsewhere than --for); importing
    again merges the original's changes into each copy field by field, keeping the copy's own edits (a
    field both changed differently stops it, exit 1, unless --take), and `kb lint` says when an original
    changed since. A gate locked here changes only with --relock."""
    if (path is None) == (from_kb is None):
        raise BadInput("give a PATH to import or --from-kb LOCATION (one of them)")
    if path is not None and (kind or where or take or applies_for or relock is not None):
        raise BadInput("--kind, --where, --take, --for and --relock go with --from-kb")
    base = open_kb(kb, allow_secret)
    if path is None:
        from kbtool.facade.new_project import import_from_kb

        summary = import_from_kb(
            base, str(from_kb), kind, where or [], take=take, applies_for=applies_for or [], relock=relock,
            agent=current_agent(),
        )  # fmt: skip
    elif path.suffix == ".jsonl":
        summary = base.import_cards(path)
    else:
        summary = base.import_path(path)
    show_notices(base)  # what an origin left out
    if as_json:
        print_json(summary.to_json())
    else:
        typer.echo(
            f"{summary.collection}: {summary.added} added, {summary.updated} updated, "
            f"{summary.unchanged} unchanged, {summary.retired} retired" + committed(summary.commit)
        )


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
            help="The bearer token a writing tool's call over HTTP must carry, and off loopback every request "
            "(default: $KB_TOKEN, else a new one, printed).",
            show_default=False,
        ),
    ] = None,
    agent_token: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-token",
            metavar="NAME=TOKEN",
            help="Over HTTP, an agent's own bearer token: a call carrying it writes as agent NAME (who may edit "
            "what); repeat for each agent (default: $KB_AGENT_TOKENS, name=token,name2=token2). --token's agent "
            "is `shared`.",
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
    agent_tokens = agent_token or [t for t in os.environ.get("KB_AGENT_TOKENS", "").split(",") if t.strip()]
    try:
        from kbtool.surfaces.mcp import transports as mcp_transports
        from kbtool.surfaces.mcp.identity import parse_agent_tokens
    except ImportError as exc:
        raise BadInput(f"kb serve needs the MCP SDK ({exc.name} is missing): pip install 'kbtool[mcp]'") from None
    if http is None and token:
        raise BadInput("--token applies to --http; over stdio the client that started kb serve is the only peer")
    if http is None and agent_token:
        raise BadInput(
            "--agent-token applies to --http; over stdio the agent is $KB_AGENT, else the session's own name"
        )
    tokens = parse_agent_tokens(agent_tokens, token) if http is not None else {}
    served = mcp_transports.open_served(kb or [str(root_of(None))])
    if http is not None:
        mcp_transports.serve_http(served, http, token, read_only, tokens)
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
    from kbtool.model.schemas import drifted_schemas, export_schemas

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


# the command groups register their commands on app when imported
import kbtool.surfaces.cli.briefing  # noqa: E402
import kbtool.surfaces.cli.curating  # noqa: E402
import kbtool.surfaces.cli.daemon  # noqa: E402
import kbtool.surfaces.cli.evidence  # noqa: E402
import kbtool.surfaces.cli.gates  # noqa: E402
import kbtool.surfaces.cli.install  # noqa: E402
import kbtool.surfaces.cli.reuse  # noqa: E402
import kbtool.surfaces.cli.search  # noqa: E402
import kbtool.surfaces.cli.skills  # noqa: E402
import kbtool.surfaces.cli.web  # noqa: E402, F401

__all__ = ["app", "main"]  # what the entry point, the docs generator and the tests take from here


def main() -> None:
    """The kb command: its exit status is the command's, or 128 + a signal it received at any moment (said in one
    line; kbtool/store/interrupts.py)."""
    from kbtool.store import interrupts

    code = 1
    try:
        interrupts.handle_for_this_process()  # within the try: a signal once its handlers are in raises Terminated
        try:
            app(prog_name="kb")
        finally:
            interrupts.hold_from_now_on()  # the command is over: a signal now only sets the exit status
    except SystemExit as exc:  # typer ends every command so
        code = _status(exc.code)
    except (KeyboardInterrupt, interrupts.Terminated) as exc:  # before the command began, or as it ended
        code = interrupts.exit_code(exc)
    say_identity()  # what is said once is said now
    raise SystemExit(interrupts.final_status(code))


def _status(code: object) -> int:
    """SystemExit's code as an exit status (a message, as Python would: said on stderr, status 1)."""
    if code is None or isinstance(code, int):
        return code or 0
    typer.echo(str(code), err=True)
    return 1
