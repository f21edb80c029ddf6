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
from collections.abc import Iterator, Sequence
from typing import Any

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


# conditions that say which run it was, how it was judged, or which system answered, not what load it
# was under: a candidate served at another address or by another engine than its baseline still pairs
NOT_LOAD = (
    "run", "runs", "records", "requests", "verdict",  # the runs and their judging
    "endpoint", "backend", "sut",  # the system under test: where it listened, which engine it was
    "result", "unsatisfied", "errored",  # what came out (MLPerf validity, GuideLLM's errored requests)
)  # fmt: skip


def _key(ev: dict[str, Any]) -> tuple[str, str | None, str]:
    """Runs pair by metric, unit and the conditions of the load."""
    conditions = {k: v for k, v in (ev.get("conditions") or {}).items() if k not in NOT_LOAD}
    return ev["metric"], ev.get("unit"), repr(sorted(conditions.items()))


def combine_runs(runs: Sequence[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One evidence entry per metric over several runs' entries (a metric every run has): the mean of
    the runs, their std, min, max, n and a t-interval of the mean. One run: its entries as they are."""
    if len(runs) == 1:
        return list(runs[0])
    grouped: dict[tuple[str, str | None, str], list[dict[str, Any]]] = {}
    for run in runs:
        for ev in run:
            grouped.setdefault(_key(ev), []).append(ev)
    out = []
    for entries in grouped.values():
        if len(entries) != len(runs):
            continue  # not measured in every run: no mean over runs for it
        values = [float(e["value"]) for e in entries]
        n = len(values)
        mean = sum(values) / n
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
        half = t95(n - 1) * std / math.sqrt(n)
        first = entries[0]
        conditions = {k: v for k, v in (first.get("conditions") or {}).items() if k not in ("run",)}
        out.append(
            {
                **{k: v for k, v in first.items() if k not in ("value", "stats", "samples", "conditions")},
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
            }
        )
    return [{k: v for k, v in e.items() if v is not None} for e in out]


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


def pairs(
    candidates: list[dict[str, Any]], baselines: list[dict[str, Any]]
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(candidate entry, baseline entry) of each metric both sides measured under the same load."""
    by_key = {_key(b): b for b in baselines}
    for ev in candidates:
        base = by_key.get(_key(ev))
        if base is not None:
            yield ev, base


def judge(candidates: list[dict[str, Any]], baselines: list[dict[str, Any]]) -> list[str]:
    """Set each candidate entry's baseline (the baseline runs' mean), its change's interval and verdict
    (in stats and conditions); the lines a card body says them in."""
    lines = []
    for ev, base in pairs(candidates, baselines):
        ev["baseline"] = base["value"]
        interval = change_interval(ev, base)
        if interval is None:
            continue
        low, high = interval
        said = verdict(low, high, ev.get("direction"))
        ev.setdefault("stats", {}).update({"change_ci95_low": low, "change_ci95_high": high})
        ev["conditions"] = {**(ev.get("conditions") or {}), "verdict": said}
        pct = f" ({(ev['value'] - base['value']) / base['value']:+.1%})" if base["value"] else ""
        unit = f" {ev['unit']}" if ev.get("unit") else ""
        lines.append(
            f"- {ev['metric']}: {ev['value']:.6g} vs {base['value']:.6g}{unit}{pct}; the change's 95% interval "
            f"[{low:+.4g}, {high:+.4g}]{unit}: {said}"
        )
    return lines


def compare(
    candidate_runs: Sequence[list[dict[str, Any]]], baseline_runs: Sequence[list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Each metric both sides measured: means, intervals, the change, its interval and the verdict
    (`kb compare`). Without an interval on a side (one run, no per-request records), the verdict
    says so instead of guessing."""
    candidates, baselines = combine_runs(candidate_runs), combine_runs(baseline_runs)
    judge(candidates, baselines)
    rows = []
    for ev, base in pairs(candidates, baselines):
        stats, base_stats = ev.get("stats") or {}, base.get("stats") or {}
        change = ev["value"] - base["value"]
        rows.append(
            {
                "metric": ev["metric"],
                "unit": ev.get("unit"),
                "direction": ev.get("direction"),
                "candidate": ev["value"],
                "candidate_low": stats.get("ci95_low"),
                "candidate_high": stats.get("ci95_high"),
                "candidate_runs": int((ev.get("conditions") or {}).get("runs", 1)),
                "baseline": base["value"],
                "baseline_low": base_stats.get("ci95_low"),
                "baseline_high": base_stats.get("ci95_high"),
                "baseline_runs": int((base.get("conditions") or {}).get("runs", 1)),
                "change": change,
                "change_pct": change / base["value"] if base["value"] else None,
                "change_low": stats.get("change_ci95_low"),
                "change_high": stats.get("change_ci95_high"),
                "verdict": (ev.get("conditions") or {}).get("verdict")
                or "no interval: one run a side, no per-request records",
            }
        )
    return rows
