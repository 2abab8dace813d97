"""What a simulated dynamic batcher did, per request and per batch, and the figures read off it: throughput,
utilisation, percentiles, the split of a latency into queueing, batch formation and service, the batches formed,
and whether the queue kept up.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

WARMUP = 0.02  # the share of the first requests left out of percentiles: the queue starts empty


@dataclass
class SimulationResult:
    """Per request (in arrival order): arrival, latency and its parts; per batch: size, start and run time."""

    policy: Any  # the simulator's Policy: read for its instances, max batch and words (importing it: a cycle)
    arrivals_s: np.ndarray
    latency_s: np.ndarray
    queue_s: np.ndarray
    formation_s: np.ndarray
    service_s: np.ndarray
    batch_sizes: np.ndarray
    batch_start_s: np.ndarray
    batch_service_s: np.ndarray
    overhead_s: float
    capacity_bound_per_s: float  # every batch full, at its mean time: no policy-following server does better
    clients: int | None = None
    host_s: np.ndarray | None = None  # per request, with host cores: the overhead's CPU work and its wait for a core

    @property
    def n(self) -> int:
        return int(self.latency_s.size)

    @cached_property
    def _span(self) -> float:
        end = float(np.max(self.batch_start_s + self.batch_service_s))
        return max(end - float(self.arrivals_s[0]), 1e-300)

    @property
    def offered_rate_per_s(self) -> float:
        """Requests per second offered: the arrivals' own rate (for a closed loop, what the clients sent)."""
        span = float(self.arrivals_s[-1] - self.arrivals_s[0])
        return (self.n - 1) / span if span > 0 else math.inf

    @property
    def throughput_per_s(self) -> float:
        """Requests answered per second, from the first arrival to the last batch's end."""
        return self.n / self._span

    @property
    def mean_batch(self) -> float:
        """The mean size of the batches formed."""
        return float(np.mean(self.batch_sizes))

    def batch_histogram(self) -> dict[int, int]:
        """How many batches of each size were formed."""
        sizes, counts = np.unique(self.batch_sizes, return_counts=True)
        return {int(s): int(c) for s, c in zip(sizes, counts)}

    @property
    def utilisation(self) -> float:
        """The share of the instances' time spent running batches."""
        return float(np.sum(self.batch_service_s)) / (self.policy.instances * self._span)

    @cached_property
    def overloaded(self) -> bool:
        """True when the offered rate is more than this policy serves: the backlog grows for as long as the
        run lasts, so no latency percentile describes it (it depends only on how long the run is). A closed loop
        never is: its clients wait for their answers, so at most `clients` requests are ever waiting."""
        if self.clients is not None:
            return False
        if self.offered_rate_per_s > self.capacity_bound_per_s:
            return True
        n = self.n
        if n < 200:
            return False
        if self.host_s is not None:
            second, last = float(np.mean(self.host_s[n // 4 : n // 2])), float(np.mean(self.host_s[3 * n // 4 :]))
            if last > 1.5 * second + 4 * self.overhead_s:  # the host's own queue grows without end
                return True
        starts = np.sort(self.arrivals_s + self.queue_s + self.formation_s)
        backlog = np.arange(n) - np.searchsorted(starts, self.arrivals_s, side="right") + 1
        second = float(np.mean(backlog[n // 4 : n // 2]))
        last = float(np.mean(backlog[3 * n // 4 :]))
        slack = 4 * self.policy.instances * self.policy.max_batch
        if last <= 1.5 * second + slack:
            return False
        # and the instances were busy all along the second half: a growing backlog with idle instances
        # is a burst, not an overload
        lo, hi = float(self.arrivals_s[n // 2]), float(self.arrivals_s[-1])
        if hi <= lo:
            return True
        busy = np.clip(self.batch_start_s + self.batch_service_s, lo, hi) - np.clip(self.batch_start_s, lo, hi)
        return float(np.sum(busy)) / (self.policy.instances * (hi - lo)) >= 0.98

    @cached_property
    def _steady(self) -> slice:
        return slice(int(self.n * WARMUP), None)

    def raw_percentile(self, p: float) -> float:
        """The p-th percentile of latency in seconds over the run (leaving out the first 2 %), overloaded or not."""
        if not 0 <= p <= 100:
            raise ValueError(f"a percentile is from 0 to 100, not {p!r}")
        return float(np.percentile(self.latency_s[self._steady], p))

    def percentile(self, p: float) -> float:
        """The p-th percentile of latency in seconds; infinite when overloaded."""
        value = self.raw_percentile(p)
        return math.inf if self.overloaded else value

    def mean(self, part: str = "latency") -> float:
        """The mean of latency or of one of its parts (queue, formation, service, host), in seconds."""
        values = {"latency": self.latency_s, "queue": self.queue_s, "formation": self.formation_s}
        values["service"] = self.service_s
        values["host"] = self.host_s if self.host_s is not None else np.full(self.n, self.overhead_s)
        if part not in values:
            raise ValueError(f"part must be one of {', '.join(values)}, not {part!r}")
        return float(np.mean(values[part][self._steady]))

    def breakdown(self, p: float) -> dict[str, float]:
        """What the requests at the p-th latency percentile spent their time on: the mean queue, formation
        and service seconds (and the fixed overhead) of the requests within half a percentile point of it."""
        latency = self.latency_s[self._steady]
        lo, hi = np.percentile(latency, [max(p - 0.5, 0), min(p + 0.5, 100)])
        near = (latency >= lo) & (latency <= hi)
        parts = {"queue": self.queue_s, "formation": self.formation_s, "service": self.service_s}
        if self.host_s is not None:
            parts["overhead"] = self.host_s
        out = {name: float(np.mean(values[self._steady][near])) for name, values in parts.items()}
        out.setdefault("overhead", self.overhead_s)
        return out

    def summary(self, percentiles: Sequence[float] = (50, 90, 99, 99.9)) -> dict:
        """The result as plain numbers (seconds), for JSON; percentiles are null when overloaded."""
        return {
            "policy": self.policy.describe(),
            "requests": self.n,
            "offered_rate_per_s": self.offered_rate_per_s,
            "throughput_per_s": self.throughput_per_s,
            "overloaded": self.overloaded,
            "mean_batch": self.mean_batch,
            "utilisation": self.utilisation,
            "percentiles_s": {str(p): (None if self.overloaded else self.raw_percentile(p)) for p in percentiles},
            "mean_s": {part: self.mean(part) for part in ("latency", "queue", "formation", "service", "host")},
            "overhead_s": self.overhead_s,
            "batch_histogram": {str(k): v for k, v in self.batch_histogram().items()},
        }
