"""Bootstrap intervals over queries.

A gold set holds tens of queries, so a difference of a few points of MRR between two modes may be noise; an interval
says how much. Resampling the queries (with replacement) and recomputing the statistic keeps no assumption about how
per-query scores are distributed (they are mostly 0s and 1s). A ratio of two systems is resampled in pairs: each
resample takes the same queries for both, so what the queries have in common (an easy class, a hard one) cancels
out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kbtool.model import resampling

if TYPE_CHECKING:  # numpy loads where the intervals are computed, not with the CLI that names the defaults
    import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 1000
SEED = 0


def resample_indices(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """resamples rows of n query indices, drawn with replacement; the same for every system and metric."""
    return resampling.resample_indices(n, resamples, seed)


def mean_interval(
    scores: Sequence[float], indices: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """(the mean, the interval's low and high) of per-query scores."""
    import numpy as np

    values = np.asarray(scores, dtype=float)
    return (float(values.mean()), *resampling.percentile_interval(values[indices].mean(axis=1), confidence))


def ratio_interval(
    numerator: Sequence[float], denominator: Sequence[float], indices: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[float, float, float] | None:
    """(mean(numerator) / mean(denominator), low, high), both means taken over the same resampled queries;
    None when the denominator's mean is 0. Resamples whose denominator mean is 0 have no ratio and are left
    out of the interval."""
    import numpy as np

    top, bottom = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    if bottom.mean() == 0:
        return None
    tops, bottoms = top[indices].mean(axis=1), bottom[indices].mean(axis=1)
    defined = bottoms > 0
    ratios = tops[defined] / bottoms[defined]
    return (float(top.mean() / bottom.mean()), *resampling.percentile_interval(ratios, confidence))
