"""`kb compare`: two sets of runs (or two findings) side by side, each metric's change with its 95%
interval and a verdict. The work is KnowledgeBase.compare (kbtool.loop.repeats underneath)."""

from __future__ import annotations

from typing import Annotated

import typer

from .cli_base import JsonOut, KbPath, app, open_kb, print_json


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
