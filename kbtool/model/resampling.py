"""The percentile bootstrap, once for search and evidence.

Rows of indices drawn with replacement under a
fixed seed (the same data always gives the same interval), and the interval read off the statistic of each
resample. It assumes nothing about how the values are distributed: per-query scores are mostly 0s and 1s,
per-request latencies have long tails."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads where an interval is computed, not with the CLI that names the defaults
    import numpy as np


def resample_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    """resamples rows of n indices into the data, drawn with replacement."""
    import numpy as np

    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def percentile_interval(statistics: np.ndarray, level: float) -> tuple[float, float]:
    """The (1-level)/2 and (1+level)/2 quantiles of the resamples' statistics."""
    import numpy as np

    low, high = np.quantile(statistics, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)
