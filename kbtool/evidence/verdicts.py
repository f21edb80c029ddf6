"""A change's verdict names the variation it accounts for.

Requests inside one run vary less than runs do: clocks, the allocator, launch jitter and order move a whole
run. On one H100, back-to-back runs of one configuration differed by up to 67% in mean TTFT while each
run's per-request bootstrap interval was a few percent wide (tests/data/h100-serving/, bench/bench_verdicts.py:
judged by their requests, 92 of 144 metric verdicts called identical runs different), so an interval from one
run's requests says nothing about the configuration. What each verdict stands on:

- **between runs**: several runs on each side. The change of the means gets Welch's interval from the runs'
  spread (each run is one observation, its requests averaged into it). Measured on those H100 runs: nine
  identical runs taken three at a time in the order made gave no clear change on every metric; over every
  split into three against three, 2.3% of metric verdicts called them different (under the nominal 5%), all
  where the three slow runs sat on one side, which no test over three runs can tell from a change. Taking one
  side's spread for a side of one run called an identical run worse (runs have outliers a few runs miss).
- **the scores' standard errors**: an accuracy score with the harness's stderr (lm-evaluation-harness) varies
  with the task's items, which that stderr measures; judged as normal.
- otherwise **no verdict** (a side with one run). The change is shown with the within-run interval, labelled
  as such, and how many runs a side would let kb judge. Where the knowledge base already holds repeated runs
  of one configuration at the same load (kbtool/facade/findings.py finds them), their run-to-run spread says
  about how many runs a side a change of this size needs; it is not used as a verdict's interval, for the
  reason above: a spread from a few runs misses the outlier run.

Every verdict also says the smallest change its runs could have detected: (t at 97.5% + t at 80%) times the
change's standard error, the usual two-sided 5% test with 80% power.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# two-sided 95% critical values of Student's t, by degrees of freedom (1-30); above, the normal's 1.96
T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
Z95 = 1.959964
# one-sided 80% quantiles of Student's t (power 0.8), by degrees of freedom (1-30); above, the normal's
T80 = (
    1.376, 1.061, 0.978, 0.941, 0.920, 0.906, 0.896, 0.889, 0.883, 0.879,
    0.876, 0.873, 0.870, 0.868, 0.866, 0.865, 0.863, 0.862, 0.861, 0.860,
    0.859, 0.858, 0.858, 0.857, 0.856, 0.856, 0.855, 0.855, 0.854, 0.854,
)  # fmt: skip
Z80 = 0.841621

RUNS_FOR_A_VERDICT = 3  # what kb asks for: with 2 a side Welch's t has ~2 degrees of freedom (t = 4.3)
NO_VERDICT = "no verdict: one run a side"  # both sides one run
NO_VERDICT_ONE = "no verdict: one run on a side"  # one side several runs, the other one
RUNS_HINT = f"{RUNS_FOR_A_VERDICT} or more runs a side judge it"  # what a one-run-a-side comparison lacks
WITHIN_RUN = "within one run (its requests)"


def _quantile(table: tuple[float, ...], normal: float, df: float) -> float:
    if df < 1:
        return math.inf
    return table[int(df) - 1] if df <= len(table) else normal


def t95(df: float) -> float:
    return _quantile(T95, Z95, df)


def t80(df: float) -> float:
    return _quantile(T80, Z80, df)


def verdict(low: float, high: float, direction: str | None) -> str:
    """better, worse, or no clear change: where the change's interval lies against zero."""
    if low <= 0 <= high or direction is None:
        return "no clear change" if low <= 0 <= high else "changed"
    up = low > 0
    return "better" if up == (direction == "higher") else "worse"


@dataclass(frozen=True)
class NoiseFloor:
    """Repeated runs of one configuration the knowledge base already holds: their standard deviation as a
    fraction of their mean, and how many runs gave it."""

    cv: float
    runs: int
    source: str  # the finding that holds them

    def said(self) -> str:
        return f"{self.source}'s {self.runs} runs vary {self.cv:.1%} between runs"

    def runs_needed(self, change: float, mean: float) -> str:
        """About how many runs a side would judge a change this size, at this spread (95%, power 0.8)."""
        spread = self.cv * abs(mean)
        for n in range(RUNS_FOR_A_VERDICT, 31):
            if (t95(2 * n - 2) + t80(2 * n - 2)) * spread * math.sqrt(2 / n) <= abs(change):
                return f"{self.said()}: about {n} runs a side would judge a change this size"
        return f"{self.said()}: a change this size needs more than 30 runs a side"


@dataclass(frozen=True)
class Change:
    """A change (candidate - baseline) judged: its 95% interval, what that interval accounts for, the verdict
    it supports (or NO_VERDICT), and the smallest change the runs could have detected (None without one)."""

    low: float | None
    high: float | None
    verdict: str
    variation: str
    detectable: float | None = None
    needs: str = RUNS_HINT  # with no verdict: what would give one

    @property
    def judged(self) -> bool:
        return not self.verdict.startswith("no verdict")


def _runs(ev: dict[str, Any]) -> int:
    return int((ev.get("conditions") or {}).get("runs", 1))


def _spread(ev: dict[str, Any]) -> float | None:
    """The standard deviation of a side's runs, when it has several."""
    std = (ev.get("stats") or {}).get("std")
    return float(std) if _runs(ev) >= 2 and isinstance(std, (int, float)) else None


def _stderr(ev: dict[str, Any]) -> float | None:
    """The standard error a tool reported for a score (lm-evaluation-harness's `_stderr`)."""
    stderr = (ev.get("stats") or {}).get("stderr")
    return float(stderr) if isinstance(stderr, (int, float)) and stderr >= 0 and _runs(ev) < 2 else None


def _within_run(ev: dict[str, Any]) -> float | None:
    """The standard error of one run's mean from its requests (the per-request bootstrap's interval)."""
    stats = ev.get("stats") or {}
    if _runs(ev) >= 2 or "ci95_low" not in stats or "ci95_high" not in stats:
        return None
    return (float(stats["ci95_high"]) - float(stats["ci95_low"])) / (2 * Z95)


def _interval(diff: float, se: float, df: float, direction: str | None, variation: str) -> Change:
    if se == 0:
        return Change(diff, diff, verdict(diff, diff, direction), variation)
    half = t95(df) * se
    low, high = diff - half, diff + half
    return Change(low, high, verdict(low, high, direction), variation, (t95(df) + t80(df)) * se)


def judge_change(candidate: dict[str, Any], baseline: dict[str, Any], floor: NoiseFloor | None = None) -> Change | None:
    """The change of the candidate's mean from the baseline's, judged by the variation the two sides allow
    (module docstring); floor only says how many runs would judge it. None when a side has no interval and
    there is nothing to say."""
    c, b = float(candidate["value"]), float(baseline["value"])
    diff, direction = c - b, candidate.get("direction")
    nc, nb = _runs(candidate), _runs(baseline)
    sc, sb = _spread(candidate), _spread(baseline)
    if sc is not None and sb is not None:  # Welch, Satterthwaite's degrees of freedom
        vc, vb = sc**2 / nc, sb**2 / nb
        se = math.sqrt(vc + vb)
        df = se**4 / (vc**2 / (nc - 1) + vb**2 / (nb - 1)) if se else math.inf
        return _interval(diff, se, df, direction, f"between runs: {nc} vs {nb}")
    ec, eb = _stderr(candidate), _stderr(baseline)
    if ec is not None and eb is not None:
        return _interval(diff, math.hypot(ec, eb), math.inf, direction, "the scores' standard errors")
    said = NO_VERDICT if sc is None and sb is None else NO_VERDICT_ONE
    needs = floor.runs_needed(diff, b) if floor is not None else RUNS_HINT
    wc, wb = _within_run(candidate), _within_run(baseline)
    if wc is not None and wb is not None:
        half = Z95 * math.hypot(wc, wb)
        return Change(diff - half, diff + half, said, WITHIN_RUN, needs=needs)
    if sc is not None or sb is not None:
        return Change(None, None, said, "between runs on one side only", needs=needs)
    return Change(None, None, said, "no interval on a side", needs=needs) if floor is not None else None


def noise_floor_of(entry: dict[str, Any], source: str) -> NoiseFloor | None:
    """The noise floor an evidence entry over several runs of one configuration gives (None without a spread
    or with a mean of zero)."""
    spread, mean = _spread(entry), entry.get("value")
    if spread is None or not isinstance(mean, (int, float)) or not mean:
        return None
    return NoiseFloor(abs(spread / mean), _runs(entry), source)
