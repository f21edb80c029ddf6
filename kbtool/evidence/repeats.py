"""Verdicts that survive noise: several runs of one configuration, and a change judged by its interval.

`kb add-finding --from RUN1 --from RUN2 --from RUN3 [--baseline-from B1 --baseline-from B2 ...]`:
each metric's runs give n, the mean, the standard deviation and a 95% interval of the mean
(Student's t, n-1 degrees of freedom). With one run, the interval is the one its per-request
records gave (the bootstrap's). Against the baseline's runs, the change of the mean gets its own
95% interval (Welch's, for two groups of runs; from the two intervals' standard errors when a
side has one run): a change whose interval excludes zero is better or worse, one whose interval
crosses zero is no clear change, and a finding none of whose changes is clear stays tentative.
A score with a standard error (lm-evaluation-harness's) is judged the same way, as normal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kbtool.evidence.load import describe, load_of, varying_keys
from kbtool.evidence.pairing import group_runs, pair
from kbtool.evidence.verdicts import RUNS_HINT, Change, NoiseFloor, judge_change, t95

Floors = Callable[[dict[str, Any]], "NoiseFloor | None"]  # an entry -> the noise floor the KB holds for it


def _combined(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """One entry over several runs' entries of one metric at one load: the mean of the runs, their std,
    min, max, n and a t-interval of the mean; the exports they came from, every one."""
    values = [float(e["value"]) for e in entries]
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t95(n - 1) * std / math.sqrt(n)
    first = entries[0]
    conditions = {k: v for k, v in (first.get("conditions") or {}).items() if k not in ("run",)}
    artifacts = [e["artifact"] for e in entries if e.get("artifact")]
    combined = {
        **{k: v for k, v in first.items() if k not in ("value", "stats", "samples", "conditions", "artifact")},
        "value": mean,
        "stats": {
            "avg": mean,
            "std": std,
            "min": min(values),
            "max": max(values),
            "ci95_low": mean - half,
            "ci95_high": mean + half,
        },
        "samples": sum(int(e.get("samples") or 0) for e in entries) or None,
        "conditions": {**conditions, "runs": n},
        "artifacts": artifacts or None,
    }
    return {k: v for k, v in combined.items() if v is not None}


def combine_runs(
    runs: Sequence[list[dict[str, Any]]],
    ignore: Iterable[str] = (),
    notes: list[str] | None = None,
    names: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """One evidence entry per metric and load over several runs (kbtool.evidence.pairing groups them): the
    mean of the runs at that load with its interval. A run may hold several loads (a sweep); a metric
    some runs at its load did not measure is left out and named in notes; several entries of one run
    at one load (a file of appended runs) are kept as they are, unjudged, and named. One run: its
    entries as they are."""
    if len(runs) == 1:
        return list(runs[0])
    out = []
    for group in group_runs(runs, ignore, notes, names):
        out.extend(group.entries if len(group.entries) == 1 or group.repeated else [_combined(group.entries)])
    return out


def judge(
    candidates: list[dict[str, Any]],
    baselines: list[dict[str, Any]],
    ignore: Iterable[str] = (),
    notes: list[str] | None = None,
    floors: Floors | None = None,
) -> list[str]:
    """Set each candidate entry's baseline (the baseline runs' mean at the same load), its change's
    interval, what it accounts for and the verdict (kbtool.evidence.verdicts), in stats and conditions; the
    lines a card body says them in. BadInput, naming the difference, when no entry pairs
    (kbtool.evidence.pairing)."""
    return judge_pairs(pair(candidates, baselines, ignore, notes), floors)


def judge_pairs(matched: list[tuple[dict[str, Any], dict[str, Any]]], floors: Floors | None = None) -> list[str]:
    """judge, for entries already paired."""
    loads = varying_keys([ev.get("conditions") or {} for ev, _ in matched])
    lines = []
    for ev, base in matched:
        ev["baseline"] = base["value"]
        shown = [base["artifact"]] if base.get("artifact") else base.get("artifacts") or []
        if shown:
            ev["baseline_artifacts"] = shown
        change = judge_change(ev, base, floors(ev) if floors else None)
        if change is None:
            continue
        stats = ev.setdefault("stats", {})
        if change.low is not None and change.high is not None:
            stats.update({"change_ci95_low": change.low, "change_ci95_high": change.high})
        if change.detectable is not None:
            stats["detectable_change"] = change.detectable
        said = change.verdict if change.judged else f"{change.verdict} ({change.needs})"
        ev["conditions"] = {**(ev.get("conditions") or {}), "verdict": said, "variation": change.variation}
        lines.append(_line(ev, base, change, describe(ev.get("conditions"), loads)))
    return lines


def _line(ev: dict[str, Any], base: dict[str, Any], change: Change, at: str) -> str:
    """'- ttft at ...: 120 vs 110 ms (+9.1%); the change's 95% interval [+7, +13] ms, between runs: 3 vs 3
    (detectable: 4.2 ms, 3.8%): worse', as a finding's body says it."""
    pct = f" ({(ev['value'] - base['value']) / base['value']:+.1%})" if base["value"] else ""
    unit = f" {ev['unit']}" if ev.get("unit") else ""
    interval = (
        f"the change's 95% interval [{change.low:+.4g}, {change.high:+.4g}]{unit}, "
        if change.low is not None and change.high is not None
        else ""
    )
    return (
        f"- {ev['metric']}{f' at {at}' if at else ''}: {ev['value']:.6g} vs {base['value']:.6g}{unit}{pct}; "
        f"{interval}{change.variation}{_detectable(change, base['value'], unit)}: {ev['conditions']['verdict']}"
    )


def _detectable(change: Change, baseline: float, unit: str) -> str:
    if change.detectable is None:
        return ""
    pct = f", {change.detectable / abs(baseline):.1%}" if baseline else ""
    return f" (detectable: {change.detectable:.3g}{unit}{pct})"


def compare(
    candidate_runs: Sequence[list[dict[str, Any]]],
    baseline_runs: Sequence[list[dict[str, Any]]],
    ignore: Iterable[str] = (),
    notes: list[str] | None = None,
    names: tuple[Sequence[str], Sequence[str]] | None = None,
    floors: Floors | None = None,
) -> list[dict[str, Any]]:
    """Each metric both sides measured under the same load: means, intervals, the change, its interval, what
    that interval accounts for and the verdict (`kb compare`), each row with its load. With one run a side
    there is no verdict unless floors gives a noise floor (kbtool.evidence.verdicts). BadInput when nothing
    pairs."""
    ignored = list(ignore)
    candidates = combine_runs(candidate_runs, ignored, notes, names[0] if names else None)
    baselines = combine_runs(baseline_runs, ignored, notes, names[1] if names else None)
    matched = pair(candidates, baselines, ignored, notes)
    judge_pairs(matched, floors)
    rows = []
    for ev, base in matched:
        stats, base_stats = ev.get("stats") or {}, base.get("stats") or {}
        change = ev["value"] - base["value"]
        conditions = ev.get("conditions") or {}
        verdict = conditions.get("verdict")
        detectable = stats.get("detectable_change")
        rows.append(
            {
                "metric": ev["metric"],
                "unit": ev.get("unit"),
                "direction": ev.get("direction"),
                "load": load_of(conditions),
                "ignored": conditions.get("ignored_conditions"),
                "candidate": ev["value"],
                "candidate_low": stats.get("ci95_low"),
                "candidate_high": stats.get("ci95_high"),
                "candidate_runs": int(conditions.get("runs", 1)),
                "baseline": base["value"],
                "baseline_low": base_stats.get("ci95_low"),
                "baseline_high": base_stats.get("ci95_high"),
                "baseline_runs": int((base.get("conditions") or {}).get("runs", 1)),
                "change": change,
                "change_pct": change / base["value"] if base["value"] else None,
                "change_low": stats.get("change_ci95_low"),
                "change_high": stats.get("change_ci95_high"),
                "variation": conditions.get("variation"),
                "detectable": detectable,
                "verdict": verdict or f"no verdict: no interval on a side ({RUNS_HINT})",
            }
        )
    return rows
