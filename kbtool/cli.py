"""The `kb` command: parse arguments, call the KnowledgeBase facade, print.

No SQL, git or card logic here. Every library error becomes one line on stderr and the
error's exit code (2 bad input, 1 a failed check); nothing prints a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterable, Iterator, Optional

import typer
from typer.core import TyperGroup

from .errors import BadInput, KbError
from .locate import resolve_root

if TYPE_CHECKING:
    from .kb import KnowledgeBase
    from .records import StoredCard


class KbGroup(TyperGroup):
    """Maps library errors to one-line messages and exit codes, for every subcommand."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KbError as exc:
            typer.echo(f"kb: error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # usage errors and exits: typer prints and exits as usual
        except Exception as exc:  # a bug in kb: say so in one line, keep the traceback for KB_DEBUG
            if os.environ.get("KB_DEBUG"):
                raise
            typer.echo(f"kb: internal error: {type(exc).__name__}: {exc} (set KB_DEBUG=1 for the traceback)", err=True)
            raise typer.Exit(1) from None


def _app(help_text: str) -> typer.Typer:
    return typer.Typer(cls=KbGroup, help=help_text, rich_markup_mode=None, pretty_exceptions_enable=False,
                       no_args_is_help=True, add_completion=False)


app = _app("kb: a git-backed knowledge base of contracts, constraints, findings and gates.")
schema_app = _app("JSON Schemas of the card kinds.")
app.add_typer(schema_app, name="schema")

# Options shared by many commands, declared once.
KbPath = Annotated[Optional[Path], typer.Option("--kb", help="The knowledge base (default: $KB_DIR, else the nearest folder above with kb.toml).", show_default=False)]
JsonOut = Annotated[bool, typer.Option("--json", help="Print JSON (stable field names) instead of text.")]
Fields = Annotated[Optional[list[str]], typer.Option("--field", "-f", help="KEY=VALUE; dotted keys for nested fields (check.threshold=12), repeat a key for a list.", show_default=False)]
Tags = Annotated[Optional[list[str]], typer.Option("--tag", "-t", help="A tag (repeatable).", show_default=False)]
Where = Annotated[Optional[list[str]], typer.Option("--where", "-w", help="FIELD=VALUE filter on any card field, e.g. applies_to.hardware=B200 (repeatable).", show_default=False)]
CardRef = Annotated[str, typer.Argument(metavar="ID", help="A card id, or a unique prefix of one.")]
Status = Annotated[Optional[str], typer.Option("--status", help="draft, tentative, confirmed, refuted, superseded or retired.", show_default=False)]


@app.callback()
def _global_options(
    kb: Annotated[Optional[Path], typer.Option("--kb", help="The knowledge base for any command (default: $KB_DIR, else the nearest folder above with kb.toml).", show_default=False)] = None,
) -> None:
    # One invocation, one value: reset on every run so nothing leaks between runs in a process.
    _invocation["kb"] = kb


_invocation: dict[str, Optional[Path]] = {"kb": None}


def _root(path: Optional[Path]) -> Path:
    return resolve_root(path if path is not None else _invocation["kb"])


def open_kb(path: Optional[Path]) -> "KnowledgeBase":
    """The command's --kb, else the one given before the command (`kb --kb PATH list`)."""
    # imported here, not at the top: `kb search` answered by the daemon never needs pydantic or git
    from .kb import KnowledgeBase

    return KnowledgeBase.open(_root(path))


def show_notices(base: "KnowledgeBase") -> None:
    for notice in base.notices:
        typer.echo(f"kb: note: {notice}", err=True)


@contextmanager
def progress_bar(label: str) -> Iterator[Optional[Callable[[int, int], None]]]:
    """A progress bar on a terminal; nothing when stderr is a pipe or a file."""
    if not sys.stderr.isatty():
        yield None
        return
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = typer.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def read_text_arg(path: Path) -> str:
    """A file given on the command line ('-' is stdin), refused clearly when unreadable."""
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read ({exc})") from None


def body_from(body: Optional[str], body_file: Optional[Path]) -> Optional[str]:
    if body is not None and body_file is not None:
        raise BadInput("give --body or --body-file, not both")
    return read_text_arg(body_file) if body_file is not None else body


def print_written(stored: "StoredCard", as_json: bool) -> None:
    """What a write prints: the id, or with --json the whole card."""
    if as_json:
        print_json(stored.to_dict())
    else:
        typer.echo(stored.id)


def print_cards(cards: Iterable["StoredCard"]) -> None:
    rows = [(c.id, c.card.kind, c.card.status, c.card.title) for c in cards]
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        typer.echo(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}")


# --- commands ------------------------------------------------------------------------


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="Where to create it (default: here).")] = Path("."),
    name: Annotated[Optional[str], typer.Option(help="Its name in kb.toml (default: the folder name).")] = None,
) -> None:
    """Create a knowledge base: a git repository with kb.toml, .gitignore and a first commit."""
    from .kb import KnowledgeBase

    kb = KnowledgeBase.init(path, name)
    typer.echo(f"initialised knowledge base {kb.config.kb.name!r} at {kb.root}")


@app.command()
def add(
    kind: Annotated[str, typer.Argument(help="contract, constraint, finding, failure-mode, gate, gap or reference.")],
    title: Annotated[Optional[str], typer.Option("--title", help="The card's title; its id is made from it.")] = None,
    field: Fields = None,
    tag: Tags = None,
    status: Status = None,
    body: Annotated[Optional[str], typer.Option(help="The markdown body.")] = None,
    body_file: Annotated[Optional[Path], typer.Option(help="Read the body from this file ('-' for stdin).")] = None,
    from_file: Annotated[Optional[Path], typer.Option(help="Add a whole card file (frontmatter + body).")] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Add a card and commit it; prints the new id (--json: the whole card)."""
    base = open_kb(kb)
    if from_file is not None:
        if title or field or tag or body is not None or body_file is not None or status:
            raise BadInput("--from-file takes the whole card; give no other card options with it")
        stored = base.add_from_text(kind, read_text_arg(from_file), str(from_file))
    else:
        if not title:
            raise BadInput("--title is required (or --from-file CARD.md)")
        stored = base.add(kind, title, fields=field or [], tags=tag or [], status=status,
                          body=body_from(body, body_file) or "")
    print_written(stored, as_json)


@app.command()
def show(
    card_id: CardRef,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Print one card: its file (--json: its fields, path and body)."""
    base = open_kb(kb)
    stored = base.get(card_id)
    if as_json:
        print_json(stored.to_dict())
    else:
        typer.echo((base.root / stored.path).read_text(encoding="utf-8"), nl=False)


@app.command("list")
def list_cards(
    kind: Annotated[Optional[str], typer.Option(help="Only this kind.")] = None,
    status: Status = None,
    tag: Tags = None,
    where: Where = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """List cards (id, kind, status, title), filtered by kind, status, tags and any field."""
    cards = open_kb(kb).list(kind=kind, status=status, tags=tag or [], where=where or [])
    if as_json:
        print_json([c.to_dict(body=False) for c in cards])
    else:
        print_cards(cards)


@app.command()
def edit(
    card_id: CardRef,
    field: Fields = None,
    title: Annotated[Optional[str], typer.Option(help="A new title (the id stays).")] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", "-t", help="Replace the tags with these (repeatable).", show_default=False)] = None,
    status: Status = None,
    body: Annotated[Optional[str], typer.Option(help="Replace the body.")] = None,
    body_file: Annotated[Optional[Path], typer.Option(help="Replace the body with this file ('-' for stdin).")] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Change fields or the body of a card; one commit (none when nothing changed)."""
    stored = open_kb(kb).edit(card_id, fields=field or [], body=body_from(body, body_file), title=title,
                              tags=tag, status=status)
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
        print_json([{"sha": c.sha, "date": c.date, "author": c.author, "subject": c.subject, "message": c.message} for c in commits])
    else:
        for c in commits:
            typer.echo(f"{c.sha[:10]}  {c.date}  {c.author}  {c.subject}")


@app.command()
def lint(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Check every card: schema, ids, folders, links. Exit 1 when anything is wrong."""
    problems = open_kb(kb).lint()
    if as_json:
        print_json({"ok": not problems, "problems": [p.__dict__ for p in problems]})
    else:
        for p in problems:
            typer.echo(f"{p.path}: [{p.code}] {p.message}")
        typer.echo(f"{len(problems)} problem(s)" if problems else "ok: no problems", err=bool(problems))
    if problems:
        raise typer.Exit(1)


@app.command()
def search(
    query: Annotated[Optional[str], typer.Argument(help="What to look for, in words.")] = None,
    k: Annotated[int, typer.Option("-k", help="How many cards to return.")] = 10,
    kind: Annotated[Optional[str], typer.Option(help="Only this kind.")] = None,
    status: Status = None,
    tag: Tags = None,
    where: Where = None,
    mode: Annotated[str, typer.Option(help="hybrid (default), bm25 or vector.")] = "hybrid",
    explain: Annotated[bool, typer.Option(help="Show each leg's rank and score per hit.")] = False,
    batch: Annotated[Optional[Path], typer.Option(help="One query per line (text, or JSON {\"q\": ...}); one JSON result per line.")] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Hybrid search (BM25 + embeddings, fused); the index refreshes itself first."""
    from .client import run_searches

    if (query is None) == (batch is None):
        raise BadInput("give a QUERY or --batch FILE (one of them)")
    options = {"k": k, "kind": kind, "status": status, "tags": tag or [], "where": where or [], "mode": mode,
               "explain": explain}
    if batch is not None:
        requests = [_batch_request(line, n, options) for n, line in enumerate(read_text_arg(batch).splitlines(), 1)
                    if line.strip()]
        for result in run_searches(_root(kb), requests):
            typer.echo(json.dumps(result, ensure_ascii=False))
        return
    [result] = run_searches(_root(kb), [{"query": query, **options}])
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
            raise BadInput(f"--batch line {n}: expected {{\"q\": \"...\"}}")
        return {**defaults, **data}
    return {**defaults, "query": text}


def print_hits(result: dict[str, Any], explain: bool) -> None:
    for n, hit in enumerate(result["hits"], 1):
        typer.echo(f"{n:>2}. {hit['id']}  [{hit['kind']}, {hit['status']}]  {hit['score']:.4f}")
        typer.echo(f"    {hit['title']}")
        if hit.get("source"):
            where = hit["source"]["path"] + (f" # {hit['source']['heading']}" if hit["source"].get("heading") else "")
            typer.echo(f"    from {where}")
        typer.echo(f"    {hit['snippet']}")
        if explain:
            legs = ", ".join(f"{name} {'rank %d (%.4f)' % (v['rank'], v['score']) if v else '-'}"
                             for name, v in hit["explain"].items() if name in ("bm25", "vector"))
            typer.echo(f"    explain: {legs}; demoted: {hit['explain']['demoted']}")
    if not result["hits"]:
        typer.echo("no matching cards", err=True)


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
    summary = {"scanned": stats.scanned, "added": stats.added, "updated": stats.updated, "removed": stats.removed,
               "embedded": stats.embedded, "invalid": stats.invalid, "seconds": round(stats.seconds, 3)}
    if as_json:
        print_json(summary)
    else:
        typer.echo(f"{stats.scanned} cards: {stats.added} added, {stats.updated} updated, {stats.removed} removed, "
                   f"{stats.embedded} chunks embedded in {stats.seconds:.2f} s"
                   + (f"; {len(stats.invalid)} invalid (see kb lint)" if stats.invalid else ""))


@app.command("import")
def import_cmd(
    path: Annotated[Path, typer.Argument(help="A folder of markdown, one markdown file, or a MetaInfer inference_blueprint.json.")],
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Import documents as cards in one commit; importing again updates instead of duplicating."""
    summary = open_kb(kb).import_path(path)
    if as_json:
        print_json(summary)
    else:
        typer.echo(f"{summary['collection']}: {summary['added']} added, {summary['updated']} updated, "
                   f"{summary['unchanged']} unchanged, {summary['retired']} retired"
                   + (f" (commit {summary['commit'][:10]})" if summary["commit"] else " (nothing to commit)"))


@app.command("eval")
def eval_cmd(
    gold: Annotated[Path, typer.Argument(help="JSONL of {\"q\": ..., \"relevant\": [card ids, source paths or path#heading]}.")],
    k: Annotated[int, typer.Option("-k", help="The k of recall@k.")] = 10,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Score search on gold queries: recall@k, MRR@10, nDCG@10 for bm25, vector and hybrid."""
    from .evaluation import evaluate, load_gold

    base = open_kb(kb)
    queries = load_gold(gold)
    base.refresh_index()
    report = evaluate(queries, lambda q, depth, mode: base.search(q, k=depth, mode=mode)["hits"], k=k)
    if as_json:
        print_json(report)
        return
    typer.echo(f"{report['queries']} queries, k={k}")
    for mode, scores in report["modes"].items():
        typer.echo(f"  {mode:<7} recall@{k} {scores[f'recall@{k}']:.3f}  hit@{k} {scores[f'hit@{k}']:.3f}  MRR@10 {scores['mrr@10']:.3f}  "
                   f"nDCG@10 {scores['ndcg@10']:.3f}  missed {len(scores['missed'])}")


@schema_app.command("export")
def schema_export(
    out: Annotated[Optional[Path], typer.Option(help="Folder to write to (default: schemas/ in the knowledge base).")] = None,
    check: Annotated[bool, typer.Option(help="Write nothing; exit 1 when the files differ from the models.")] = False,
    kb: KbPath = None,
) -> None:
    """Write one JSON Schema (draft 2020-12) per card kind, generated from the models."""
    from .schemas import drifted_schemas, export_schemas

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


def main() -> None:
    app(prog_name="kb")
