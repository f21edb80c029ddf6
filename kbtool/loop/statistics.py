"""How sure a number is: the statistics of per-request records, and a 95% confidence interval of
their mean by the percentile bootstrap (resampled with a fixed seed, so the same records always give
the same interval). Used by the readers of per-request exports (AIPerf's profile_export.jsonl)."""

from __future__ import annotations

from collections.abc import Sequence

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261204  # fixed: a finding's interval must not change each time it is read
PERCENTILES = (50, 90, 95, 99)


def describe(values: Sequence[float]) -> dict[str, float]:
    """avg, std (sample, n-1), min, max, p50/p90/p95/p99 (linear interpolation), count."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    out = {
        "avg": float(data.mean()),
        "std": float(data.std(ddof=1)) if len(data) > 1 else 0.0,
        "min": float(data.min()),
        "max": float(data.max()),
        "count": float(len(data)),
    }
    out.update({f"p{p}": float(np.percentile(data, p)) for p in PERCENTILES})
    return out


def bootstrap_mean_interval(
    values: Sequence[float], level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """The percentile-bootstrap interval of the mean: resample the records with replacement, take
    each resample's mean, and read the (1-level)/2 and (1+level)/2 quantiles of those means."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    if len(data) < 2:
        return float(data[0]), float(data[0])
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)
