"""Robust summary statistics of timing samples. Pure Python."""

from __future__ import annotations

import math
from collections.abc import Sequence


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of already sorted values."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    weight = position - low
    return sorted_values[low] * (1 - weight) + sorted_values[high] * weight


def summarize(samples: Sequence[float], inner_loops: int) -> dict:
    """Median, quartiles, extremes and the raw samples, in the results-file timing shape."""
    ordered = sorted(samples)
    return {
        "median_s": quantile(ordered, 0.5),
        "q1_s": quantile(ordered, 0.25),
        "q3_s": quantile(ordered, 0.75),
        "min_s": ordered[0],
        "max_s": ordered[-1],
        "samples_s": list(samples),
        "inner_loops": inner_loops,
    }
