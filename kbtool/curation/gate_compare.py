"""The comparison a gate's check.compare asks for, run and judged by kb as `kb compare` does.

It sets a candidate's runs against a baseline's, one metric at one statistic, with the code `kb compare` runs:
kbtool.evidence.runs reads each side, kbtool.evidence.repeats gives each side's means and intervals, and
kbtool.evidence.verdicts the change's interval and verdict. A gate, a person at `kb compare` and gates/compare.py
therefore see the same numbers; and because the code ships with kb, a locked gate has no script that an agent
could edit to make it pass.

Each load both sides measured gives a row with the measures a gate judges (vocabulary.COMPARE_MEASURES):
- speedup: candidate / baseline, or baseline / candidate where lower is better, so "20% better" is
  speedup >= 1.2 either way; speedup_low: the speedup at the unfavourable end of the change's 95%
  interval (the baseline at its mean), for a gate that noise must not pass;
- delta: candidate - baseline (an accuracy score against an oracle), delta_low and delta_high the ends
  of its 95% interval;
- change_pct: the change as a fraction of the baseline, as `kb compare` gives it (0.2 is +20%).
Over a sweep (several loads) a gate is judged by the row least favourable to its check, and says which.
Whatever cannot be measured (an invalid run, a missing file or metric, runs at different loads) is a
BadInput whose one line says why: the gate fails with it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.evidence.load import describe, load_of, varying_keys
from kbtool.evidence.pairing import pair
from kbtool.evidence.repeats import combine_runs
from kbtool.evidence.runs import invalid_runs, runs_in
from kbtool.evidence.same_run import refuse_same_runs
from kbtool.evidence.values import guess_direction
from kbtool.evidence.verdicts import RUNS_HINT, judge_change
from kbtool.model.cards import GateCheck
from kbtool.model.errors import BadInput

Entry = dict[str, Any]


def side(path: Path, runs: list[dict[str, Any]], metric: str, stat: str = "avg") -> list[list[Entry]]:
    """A side's runs (read from path), each cut to its entries of the metric (one per load it measured), valued
    at stat. A percentile's run-to-run spread comes from repeated runs only: the records' interval is of the mean."""
    for why in invalid_runs(runs):
        raise BadInput(f"an invalid run cannot pass a gate: {why}")
    picked = []
    for run in runs:
        entries = [e for e in run["evidence"] if e["metric"] == metric]
        if not entries:
            raise BadInput(f"{path} has no metric {metric!r}")
        if stat != "avg":
            if any(stat not in (e.get("stats") or {}) for e in entries):
                raise BadInput(f"{path} has no {metric}.{stat}")
            entries = [{**e, "value": e["stats"][stat], "stats": {}} for e in entries]
        picked.append(entries)
    return picked


def by_load(candidate_runs: Sequence[list[Entry]], baseline_runs: Sequence[list[Entry]]) -> list[tuple[Entry, Entry]]:
    """(the candidate's runs combined, the baseline's) for each load both sides measured: the runs at one
    load averaged (kbtool.evidence.repeats), then paired by load (kbtool.evidence.pairing), which refuses, naming
    the condition that differs, when no load is on both sides. The one place that knows how."""
    # kb compare's way round a difference (--ignore-condition) is no gate's: a locked check compares like with like
    return pair(combine_runs(candidate_runs), combine_runs(baseline_runs), suggest_ignoring=False)


def compare_sides(
    candidate: Path, baseline: Path, metric: str, stat: str = "avg", direction: str | None = None
) -> list[dict[str, Any]]:
    """One row per load both sides measured: the two values, their runs, the change's interval and
    verdict, and each measure a gate judges (a measure that cannot be had is left out, and `why` says)."""
    rows = []
    ours, theirs = runs_in(candidate), runs_in(baseline)
    sides = side(candidate, ours, metric, stat), side(baseline, theirs, metric, stat)
    refuse_same_runs(ours, theirs)  # a copy of the baseline as the candidate would "pass" any no-worse gate
    for cand, base in by_load(*sides):
        way = direction or cand.get("direction") or guess_direction(metric, cand.get("unit")) or "higher"
        rows.append(_row(cand, base, way, metric if stat == "avg" else f"{metric}.{stat}", stat))
    return rows


def _row(cand: Entry, base: Entry, way: str, name: str, stat: str) -> dict[str, Any]:
    lower = way == "lower"
    c, b = float(cand["value"]), float(base["value"])
    row: dict[str, Any] = {
        "metric": name,
        "unit": cand.get("unit"),
        "direction": way,
        "load": load_of(cand.get("conditions")),
        "candidate": c,
        "baseline": b,
        "candidate_runs": int((cand.get("conditions") or {}).get("runs", 1)),
        "baseline_runs": int((base.get("conditions") or {}).get("runs", 1)),
        "delta": c - b,
        "why": {},
    }
    if c and b:
        row["speedup"] = b / c if lower else c / b
    else:
        row["why"]["speedup"] = f"{name} is zero on one side; no speedup"
    if b:
        row["change_pct"] = (c - b) / b
    else:
        row["why"]["change_pct"] = f"{name} is zero in the baseline; no change as a fraction of it"
    change = judge_change({**cand, "direction": way}, base)
    if change is None or not change.judged:  # an interval of one run's requests measures requests, not runs
        row["verdict"] = f"{change.verdict} ({change.needs})" if change else f"no verdict: one run a side ({RUNS_HINT})"
        for measure in ("speedup_low", "delta_low", "delta_high"):
            row["why"][measure] = row["verdict"]
        return row
    low, high = change.low, change.high
    assert low is not None and high is not None
    row.update(change_low=low, change_high=high, delta_low=low, delta_high=high, verdict=change.verdict)
    row["variation"] = change.variation
    if "speedup" in row:
        worst = b + (high if lower else low)  # the candidate at the unfavourable end of the change
        row["speedup_low"] = (b / worst if worst > 0 else math.inf) if lower else worst / b
    else:
        row["why"]["speedup_low"] = row["why"]["speedup"]
    return row


def least_favourable(rows: list[dict[str, Any]], measure: str, op: str, threshold: float) -> dict[str, Any]:
    """The row whose measure fares worst against `op threshold`: the smallest for >= and >, the largest
    for <= and <, the furthest from it for ==. A row without the measure fails the check, naming its load."""
    for row in rows:
        if measure not in row:
            where = f" at {describe(row['load'])}" if len(rows) > 1 and row["load"] else ""
            raise BadInput(f"no {measure}{where}: {row['why'].get(measure, 'not measured')}")

    def shortfall(row: dict[str, Any]) -> float:
        value = float(row[measure])
        return (
            threshold - value
            if op in (">", ">=")
            else value - threshold
            if op in ("<", "<=")
            else abs(value - threshold)
        )

    return max(rows, key=shortfall)


@dataclass(frozen=True)
class Judged:
    """A compare check's outcome: the value the threshold judges (None when it could not be had), a line
    that says what was compared or why it failed, and the comparison as JSON for the run's record."""

    value: float | None
    detail: str
    output: str


def judge(check: GateCheck, project: Path) -> Judged:
    """Run a compare check on the project's runs and pick the value its threshold judges. Paths in what
    it says are the project's own (runs/candidate), never where the project sits on this machine: the
    line goes into a record others read."""
    spec = check.compare
    if spec is None:
        raise ValueError("judge() takes a compare check")
    try:
        rows = compare_sides(project / spec.candidate, project / spec.baseline, spec.metric, spec.stat, spec.direction)
        row = least_favourable(rows, check.metric, check.op, check.threshold)
    except BadInput as exc:
        return Judged(None, str(exc).replace(f"{project}/", ""), "")
    value = row[check.metric]
    output = json.dumps(public(row) if len(rows) == 1 else {**public(row), "loads": [public(r) for r in rows]})
    if not math.isfinite(value):
        return Judged(None, f"{check.metric} is {value}, not a finite number", output)
    unit = f" {row['unit']}" if row.get("unit") else ""
    where = ""
    if len(rows) > 1:
        varying = varying_keys(r["load"] for r in rows)
        where = f" at {describe(row['load'], varying) or 'one load'}, the least favourable of {len(rows)} loads"
    detail = (
        f"{check.metric} of {row['metric']}{where}: {row['candidate']:.6g} vs {row['baseline']:.6g}{unit} "
        f"({row['direction']} is better): {row['verdict']}"
    )
    return Judged(value, detail, output)


def public(row: dict[str, Any]) -> dict[str, Any]:
    """A row as JSON shows it: without the reasons kept for measures it does not have."""
    return {k: v for k, v in row.items() if k != "why"}
