"""Evidence as people read it: `kb compare`, two sets of runs (or two findings) side by side, each
metric's change with its 95% interval and a verdict (KnowledgeBase.compare, kbtool.loop.repeats
underneath); `kb plot`, a metric across findings or a session's progress as a picture
(KnowledgeBase.plot and plot_session, kbtool.loop.plots underneath)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..model.errors import BadInput
from .cli_base import JsonOut, KbPath, Where, app, open_kb, print_json


def _interval(low: float | None, high: float | None) -> str:
    return f" [{low:.4g}, {high:.4g}]" if low is not None and high is not None else ""


@app.command()
def compare(
    candidate: Annotated[str, typer.Argument(help="An export, a folder of exports (a run each), or a finding id.")],
    baseline: Annotated[str, typer.Argument(help="The same, for the baseline.")],
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Each metric both sides measured: the means with their 95% intervals, the change with its
    interval, and a verdict (better, worse, no clear change)."""
    result = open_kb(kb).compare(candidate, baseline)
    if as_json:
        print_json(result.to_json())
        return
    for row in result.metrics:
        unit = f" {row.unit}" if row.unit else ""
        pct = f" ({row.change_pct:+.1%})" if row.change_pct is not None else ""
        typer.echo(
            f"{row.metric}: {row.candidate:.6g}{_interval(row.candidate_low, row.candidate_high)} "
            f"vs {row.baseline:.6g}{_interval(row.baseline_low, row.baseline_high)}{unit}; "
            f"change {row.change:+.4g}{pct}{_interval(row.change_low, row.change_high)}: {row.verdict}"
        )


@app.command()
def plot(
    out: Annotated[Path, typer.Option("--out", "-o", help="The picture to write: FILE.png or FILE.svg.")],
    metric: Annotated[
        str | None, typer.Option(help="The metric to draw across findings (as their evidence names it).")
    ] = None,
    where: Where = None,
    by: Annotated[
        str | None,
        typer.Option(help="A condition to draw the metric over (e.g. concurrency): a line per finding."),
    ] = None,
    session: Annotated[
        Path | None,
        typer.Option(help="Draw an experiment session instead: its results TSV, each experiment in order."),
    ] = None,
    metric_name: Annotated[
        str, typer.Option(help="With --session: the column to draw (default: its first of numbers).")
    ] = "metric",
    title: Annotated[str | None, typer.Option(help="The picture's title (default: what it shows).")] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Draw evidence as a PNG or SVG (needs matplotlib: pip install 'kbtool[plot]'): a metric across
    the findings of a scope, each with its 95% interval and baseline, or a session's progress."""
    if (metric is None) == (session is None):
        raise BadInput("give --metric NAME (across findings) or --session RESULTS.tsv (one of them)")
    if session is not None and (where or by):
        raise BadInput("--where and --by go with --metric; a session is one results TSV")
    base = open_kb(kb)
    if session is not None:
        result = base.plot_session(session, out, metric_name, title)
    else:
        assert metric is not None
        result = base.plot(metric, out, where or [], by, title)
    if as_json:
        print_json(result.to_json())
        return
    if result.experiments is not None:
        typer.echo(
            f"wrote {result.path}: {result.metric} over {result.experiments} experiments, {result.kept} kept"
            + (f", {result.left_off} with no value left off" if result.left_off else "")
        )
    else:
        typer.echo(f"wrote {result.path}: {result.metric}, {result.points} values from {', '.join(result.findings)}")
