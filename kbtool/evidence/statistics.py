"""How sure a number is: per-request statistics and a bootstrap interval of the mean.

The statistics of per-request records are their mean, standard deviation, min, max, p50, p90, p95, p99 and count.
The interval is a 95% confidence interval of their mean by the percentile bootstrap (2000 resamples with a fixed
seed, so the same records always give the same interval); a mean pooled over requests (inter-token latencies)
resamples whole requests, whose tokens rise and fall together. Used by the readers of per-request exports (AIPerf's
profile_export.jsonl, the per-request lists of vLLM's `--save-detailed` and SGLang's output)."""

from __future__ import annotations

from collections.abc import Sequence

from kbtool.model.resampling import percentile_interval, resample_indices

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
    means = data[resample_indices(len(data), resamples, BOOTSTRAP_SEED)].mean(axis=1)
    return percentile_interval(means, level)


def bootstrap_pooled_mean_interval(
    sums: Sequence[float], counts: Sequence[int], level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """The interval of a mean pooled over requests (each request's inter-token latencies: their sum and
    how many), resampling whole requests: a request's tokens rise and fall together, so resampling
    the tokens one by one would make the interval too narrow."""
    import numpy as np

    total, many = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    if len(total) < 2:
        mean = float(total.sum() / many.sum())
        return mean, mean
    picks = resample_indices(len(total), resamples, BOOTSTRAP_SEED)
    means = total[picks].sum(axis=1) / many[picks].sum(axis=1)
    return percentile_interval(means, level)
