"""The percentile of a set of samples that a budget is checked against: by nearest rank, so that it is always one
of the samples (the p90 of ten samples is the ninth smallest; the p50 of an even count is the upper middle one).

Summaries of timings (`benchmarks.measure.stats.quantile`) and of simulated latencies (numpy's percentile)
interpolate between samples instead: they describe a distribution, they do not pick a sample. Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def nearest_rank(values: Iterable[float], share: float) -> float:
    """The smallest value with at least `share` (0 < share ≤ 1) of the values at or below it."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("a percentile of no values")
    if not 0 < share <= 1:
        raise ValueError(f"a percentile's share is above 0 and at most 1, not {share!r}")
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]
