"""`kb search`, `kb index` and `kb eval`: hybrid search and its index.

A plain `kb search` never loads this module: kbtool/surfaces/daemon/search_command.py answers it. The command
here gets what that path leaves to the CLI (--help, --batch, a flag or value it does not read); it builds its
request and prints its answer with that module's functions (options, answer, show), so both paths ask and
answer alike. The search runs in the daemon, else in this process. `kb index` is KnowledgeBase.refresh_index;
`kb eval` scores the gold queries with kbtool.search.evaluation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kbtool.model.errors import BadInput
from kbtool.model.parsing import json_input
from kbtool.model.vocabulary import MODES, words
from kbtool.search.bootstrap import RESAMPLES, SEED
from kbtool.surfaces.cli.base import (
    For,
    JsonOut,
    KbPath,
    NoSources,
    OnlyApplying,
    Status,
    Tags,
    Where,
    app,
    open_kb,
    print_json,
    progress_bar,
    read_text_arg,
    root_of,
    show_notices,
)

if TYPE_CHECKING:  # the contracts import yaml and markdown: kb search's client process stays light
    from kbtool.model.contracts import EvalReport


@app.command()
def search(
    query: Annotated[str | None, typer.Argument(help="What to look for, in words.")] = None,
    k: Annotated[int, typer.Option("-k", help="How many cards to return.")] = 10,
    offset: Annotated[int, typer.Option(min=0, help="Skip this many hits first (the next -k).")] = 0,
    kind: Annotated[str | None, typer.Option(help="Only this kind.")] = None,
    status: Status = None,
    tag: Tags = None,
    where: Where = None,
    mode: Annotated[str, typer.Option(help=f"{words(MODES)}.")] = MODES[0],
    explain: Annotated[bool, typer.Option(help="Show each leg's rank and score per hit.")] = False,
    env: Annotated[
        bool, typer.Option("--env", help="Flag findings measured on another GPU, engine or driver version.")
    ] = False,
    applies_for: For = None,
    only_applying: OnlyApplying = False,
    no_sources: NoSources = False,
    batch: Annotated[
        Path | None, typer.Option(help='One query per line (text, or JSON {"q": ...}); one JSON result per line.')
    ] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Hybrid search (BM25 + embeddings, fused); the index refreshes itself first (--json: the MCP search tool's
    answer, never cut to a budget)."""
    values = dict(locals())  # the parameters by name, as kb search's light path reads them from a command line
    from kbtool.surfaces.daemon.client import run_searches
    from kbtool.surfaces.daemon.search_command import answer, options, show

    if (query is None) == (batch is None):
        raise BadInput("give a QUERY or --batch FILE (one of them)")
    if batch is not None and offset:
        raise BadInput("--offset pages one QUERY's hits; with --batch, give each line its own k")
    if batch is None:
        assert query is not None
        show(answer(root_of(kb), query, values), as_json, explain)
        return
    requests = [
        _batch_request(line, n, options(values))
        for n, line in enumerate(read_text_arg(batch).splitlines(), 1)
        if line.strip()
    ]
    for result in run_searches(root_of(kb), requests):
        typer.echo(json.dumps(result, ensure_ascii=False))


def _batch_request(line: str, n: int, defaults: dict[str, Any]) -> dict[str, Any]:
    text = line.strip()
    if text.startswith("{"):
        data = json_input(text, f"--batch line {n}")
        if not isinstance(data, dict) or not isinstance(data.get("q", data.get("query")), str):
            raise BadInput(f'--batch line {n}: expected {{"q": "..."}}')
        return {**defaults, **data}
    return {**defaults, "query": text}


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


@app.command("eval")
def eval_cmd(
    gold: Annotated[
        Path,
        typer.Argument(
            help='JSONL of {"q": ..., "relevant": [card ids, source paths or path#heading], "split": dev|test, '
            '"class": keyword|paraphrase|symptom|cross-lingual}.'
        ),
    ],
    k: Annotated[int, typer.Option("-k", help="The k of recall@k.")] = 10,
    split: Annotated[
        str | None, typer.Option(help="Only the queries of this split: dev (tune on it) or test (report it).")
    ] = None,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples of the queries.")] = RESAMPLES,
    seed: Annotated[int, typer.Option(help="The resamples' random seed.")] = SEED,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Score search on gold queries: recall@k, hit@k, MRR@10, nDCG@10 for bm25, vector and hybrid, beside a
    plain BM25 baseline, overall and per query class, each with a 95% bootstrap interval over the queries, and
    hybrid's ratio to the plain BM25 (the same resamples for both)."""
    from kbtool.search.evaluation import evaluate_kb, load_gold

    base = open_kb(kb)
    queries = load_gold(gold, split=split)
    base.refresh_index()
    result = evaluate_kb(base, queries, k=k, split=split, resamples=resamples, seed=seed)
    show_notices(base)
    if as_json:
        print_json(result.to_json())
        return
    for line in report_lines(result):
        typer.echo(line)


def report_lines(result: EvalReport) -> list[str]:
    """One line per mode per group (all queries, then each class), each metric with its interval."""
    k = result.k
    lines = [
        f"{result.queries} queries, k={k}" + (f", {result.split} split" if result.split else "") + f"; "
        f"[{result.confidence:.0%} interval: {result.resamples} bootstrap resamples of the queries, seed {result.seed}]"
    ]
    names = {f"recall@{k}": f"recall@{k}", f"hit@{k}": f"hit@{k}", "mrr@10": "MRR@10", "ndcg@10": "nDCG@10"}
    for label, group in [("all", result.overall), *result.classes.items()]:
        lines.append(f"{label} ({group.queries} queries)")
        for mode, scores in group.modes.items():
            cells = [f"{names[n]} {i.value:.3f} [{i.low:.3f}, {i.high:.3f}]" for n, i in scores.metrics.items()]
            lines.append(f"  {mode:<10} " + "  ".join(cells) + f"  missed {len(scores.missed)}")
        if group.ratio:
            cells = [
                f"{names[n]} {i.value:.2f}x [{i.low:.2f}, {i.high:.2f}]" if i else f"{names[n]} -"
                for n, i in group.ratio.items()
            ]
            lines.append("  hybrid/plain " + "  ".join(cells))
    return lines
