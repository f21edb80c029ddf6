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
from collections.abc import Iterable, Sequence
from typing import Any

from kbtool.evidence.load import describe, load_of, varying_keys
from kbtool.evidence.pairing import group_runs, pair

# two-sided 95% critical values of Student's t, by degrees of freedom (1-30); above, the normal's 1.96
T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
Z95 = 1.959964


def t95(df: float) -> float:
    if df < 1:
        return math.inf
    return T95[int(df) - 1] if df <= len(T95) else Z95


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


def _standard_error(ev: dict[str, Any]) -> tuple[float, float] | None:
    """(standard error of the mean, degrees of freedom) from an entry's interval, or from the standard
    error its tool reported (lm-evaluation-harness's `_stderr`, taken as normal)."""
    stats = ev.get("stats") or {}
    if "ci95_low" not in stats or "ci95_high" not in stats:
        stderr = stats.get("stderr")
        return (float(stderr), math.inf) if isinstance(stderr, (int, float)) and stderr >= 0 else None
    runs = int((ev.get("conditions") or {}).get("runs", 0))
    df = runs - 1 if runs >= 2 else math.inf  # one run: its per-request bootstrap, as good as normal
    crit = t95(df) if runs >= 2 else Z95
    return (stats["ci95_high"] - stats["ci95_low"]) / (2 * crit), df


def change_interval(candidate: dict[str, Any], baseline: dict[str, Any]) -> tuple[float, float] | None:
    """The 95% interval of (candidate - baseline) for the metric's mean (Welch-Satterthwaite degrees
    of freedom); None when either side has no interval."""
    a, b = _standard_error(candidate), _standard_error(baseline)
    if a is None or b is None:
        return None
    (sa, da), (sb, db) = a, b
    se = math.sqrt(sa**2 + sb**2)
    if se == 0:
        diff = candidate["value"] - baseline["value"]
        return diff, diff
    if math.isinf(da) and math.isinf(db):
        df = math.inf
    else:
        df = se**4 / ((sa**4 / da if not math.isinf(da) else 0) + (sb**4 / db if not math.isinf(db) else 0))
    diff = candidate["value"] - baseline["value"]
    half = (t95(df) if not math.isinf(df) else Z95) * se
    return diff - half, diff + half


def verdict(low: float, high: float, direction: str | None) -> str:
    """better, worse, or no clear change: where the change's interval lies against zero."""
    if low <= 0 <= high or direction is None:
        return "no clear change" if low <= 0 <= high else "changed"
    up = low > 0
    return "better" if up == (direction == "higher") else "worse"


def judge(
    candidates: list[dict[str, Any]],
    baselines: list[dict[str, Any]],
    ignore: Iterable[str] = (),
    notes: list[str] | None = None,
) -> list[str]:
    """Set each candidate entry's baseline (the baseline runs' mean at the same load), its change's
    interval and verdict (in stats and conditions); the lines a card body says them in. BadInput, naming
    the difference, when no entry pairs (kbtool.evidence.pairing)."""
    return judge_pairs(pair(candidates, baselines, ignore, notes))


def judge_pairs(matched: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[str]:
    """judge, for entries already paired."""
    loads = varying_keys([ev.get("conditions") or {} for ev, _ in matched])
    lines = []
    for ev, base in matched:
        ev["baseline"] = base["value"]
        shown = [base["artifact"]] if base.get("artifact") else base.get("artifacts") or []
        if shown:
            ev["baseline_artifacts"] = shown
        interval = change_interval(ev, base)
        if interval is None:
            continue
        low, high = interval
        said = verdict(low, high, ev.get("direction"))
        ev.setdefault("stats", {}).update({"change_ci95_low": low, "change_ci95_high": high})
        ev["conditions"] = {**(ev.get("conditions") or {}), "verdict": said}
        pct = f" ({(ev['value'] - base['value']) / base['value']:+.1%})" if base["value"] else ""
        unit = f" {ev['unit']}" if ev.get("unit") else ""
        at = describe(ev.get("conditions"), loads)
        lines.append(
            f"- {ev['metric']}{f' at {at}' if at else ''}: {ev['value']:.6g} vs {base['value']:.6g}{unit}{pct}; "
            f"the change's 95% interval [{low:+.4g}, {high:+.4g}]{unit}: {said}"
        )
    return lines


def compare(
    candidate_runs: Sequence[list[dict[str, Any]]],
    baseline_runs: Sequence[list[dict[str, Any]]],
    ignore: Iterable[str] = (),
    notes: list[str] | None = None,
    names: tuple[Sequence[str], Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """Each metric both sides measured under the same load: means, intervals, the change, its interval and
    the verdict (`kb compare`), each row with its load. Without an interval on a side (one run, no
    per-request records), the verdict says so instead of guessing. BadInput when nothing pairs."""
    ignored = list(ignore)
    candidates = combine_runs(candidate_runs, ignored, notes, names[0] if names else None)
    baselines = combine_runs(baseline_runs, ignored, notes, names[1] if names else None)
    matched = pair(candidates, baselines, ignored, notes)
    judge_pairs(matched)
    rows = []
    for ev, base in matched:
        stats, base_stats = ev.get("stats") or {}, base.get("stats") or {}
        change = ev["value"] - base["value"]
        conditions = ev.get("conditions") or {}
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
                "verdict": conditions.get("verdict") or "no interval: one run a side, no per-request records",
            }
        )
    return rows
