"""From a batch curve to a serving policy: the max batch, max delay and instances that keep a latency percentile
within a budget at a given request rate, and the highest rate each policy sustains within it (its capacity).

Everything is simulated (`benchmarks.analysis.serving.batcher.simulator`) from the curve's measured or predicted times:

- `capacity(policy, …)`: the latency percentile over a grid of rates up to the policy's ceiling (every batch
  full, at its mean time), then a bisection between the highest rate within the budget and the next one;
- `search(…)`: every candidate policy at every rate asked for; among those within the budget at all of them,
  the fewest instances, then the most headroom (capacity ÷ the highest rate asked for);
- `explain(…)`: one paragraph with the numbers: the p-th percentile and what it is made of, the batch formed
  against the max, the capacity and why it ends there, and what the same instances sustain without batching.

Arrivals use common random numbers: the same seed gives the same sequence of gaps, scaled to each rate, so a
curve of latency against rate is smooth and two policies meet the same requests.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from benchmarks.analysis.serving.batcher.simulation_result import SimulationResult
from benchmarks.analysis.serving.batcher.simulator import (
    Policy,
    ServiceCurve,
    full_batch_ceiling,
    simulate,
)

DELAYS_S = (0.0, 0.0005, 0.001, 0.002, 0.005, 0.010, 0.020, 0.050)
RATE_GRID = (0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98)
SEARCH_REQUESTS = 10_000  # per simulation while searching
CHECK_REQUESTS = 50_000  # for the policy finally recommended
MIN_BATCHES = 200  # a simulation runs at least this many full batches' worth of requests
MAX_REQUESTS = 1_000_000
BISECTIONS = 6
SHORTLIST = 5  # candidates within budget whose capacity is measured


# ---------------------------------------------------------------------------------------------------------
# Arrivals at any rate

TRACE_RATES = (1e-6, 1e9)  # requests per second a trace may average: the bounds --rate has


@dataclass(frozen=True)
class Arrivals:
    """How requests arrive, at whatever rate is asked: Poisson, gamma gaps of a coefficient of variation, or a
    recorded trace (its gaps scaled to the rate; without a rate, its own)."""

    kind: str = "poisson"
    cv: float = 1.0
    trace: tuple[float, ...] | None = None  # the trace's gaps in seconds
    name: str = ""

    def __post_init__(self):
        if self.kind not in ("poisson", "gamma", "trace"):
            raise ValueError(f"arrivals are poisson, gamma or trace, not {self.kind!r}")
        if self.kind == "trace" and not self.trace:
            raise ValueError("a trace needs at least two arrival times")

    @classmethod
    def from_trace(cls, times: Sequence[float], name: str) -> Arrivals:
        gaps = np.diff(np.asarray(times, dtype=float))
        if gaps.size == 0 or float(np.sum(gaps)) <= 0:
            raise ValueError(f"{name}: a trace needs at least two distinct arrival times")
        rate = gaps.size / float(np.sum(gaps))
        if not (math.isfinite(rate) and TRACE_RATES[0] <= rate <= TRACE_RATES[1]):
            low, high = TRACE_RATES
            raise ValueError(
                f"{name}: its own rate, {rate:.3g} requests/s, is outside {low:g} to {high:g} requests/s: "
                "give its times in seconds"
            )
        return cls("trace", trace=tuple(gaps.tolist()), name=name)

    @property
    def own_rate(self) -> float | None:
        """A trace's own mean rate, requests per second."""
        return len(self.trace) / sum(self.trace) if self.trace else None

    def times(self, rate: float, n: int, seed: int = 0) -> np.ndarray:
        """n arrival times at `rate` per second (a trace gives at most its own length, repeated to reach n)."""
        rng = np.random.default_rng(seed)
        if self.kind == "poisson":
            gaps = rng.standard_exponential(n)
        elif self.kind == "gamma":
            shape = 1 / (self.cv * self.cv)
            gaps = rng.standard_gamma(shape, n) / shape
        else:
            base = np.asarray(self.trace)
            gaps = np.resize(base, n) / float(np.mean(base))
        return np.concatenate(([0.0], np.cumsum(gaps[: n - 1]))) / rate

    def describe(self) -> str:
        if self.kind == "poisson":
            return "Poisson arrivals"
        if self.kind == "gamma":
            return f"bursty arrivals (gamma gaps, coefficient of variation {self.cv:g})"
        return f"arrivals of the trace {self.name}"


# ---------------------------------------------------------------------------------------------------------
# One policy


@dataclass
class PolicyOutcome:
    """One policy at one rate: its latency at the percentile and whether it overloaded, and the simulation behind
    them until `verdict_only` lets it go."""

    policy: Policy
    rate: float
    result: SimulationResult | None  # None once only the verdict is kept
    percentile: float
    budget_s: float
    latency_s: float = field(init=False)  # the percentile's latency; infinite when overloaded
    overloaded: bool = field(init=False)

    def __post_init__(self) -> None:
        self.latency_s = self.result.percentile(self.percentile)
        self.overloaded = self.result.overloaded

    @property
    def meets(self) -> bool:
        return not self.overloaded and self.latency_s <= self.budget_s

    def verdict_only(self) -> PolicyOutcome:
        """This outcome without its simulation's per-request arrays: a search keeps one per policy and rate tried,
        and a curve up to batch 65,536 simulates a million requests for each (40 MB apiece)."""
        self.result = None
        return self


def outcome(
    policy: Policy,
    curve: ServiceCurve,
    rate: float,
    budget_s: float,
    percentile: float,
    arrivals: Arrivals = Arrivals(),
    *,
    n: int = SEARCH_REQUESTS,
    overhead_s: float = 0.0,
    seed: int = 0,
    host_cores: int | None = None,
) -> PolicyOutcome:
    n = min(max(n, MIN_BATCHES * policy.max_batch), MAX_REQUESTS)  # long enough for queues of full batches
    result = simulate(
        policy, curve, arrivals.times(rate, n, seed), overhead_s=overhead_s, host_cores=host_cores, seed=seed + 1
    )
    return PolicyOutcome(policy, rate, result, percentile, budget_s)


def ceiling_per_s(policy: Policy, curve: ServiceCurve) -> float:
    """Requests per second the policy serves at most: every batch full, at its mean time, every instance busy."""
    return full_batch_ceiling(policy, curve)


@dataclass
class Capacity:
    """The highest rate a policy sustains within the budget, and the latency it gave along the way."""

    policy: Policy
    rate_per_s: float  # 0 when no rate tried meets the budget
    ceiling_per_s: float
    grid: list[tuple[float, float]]  # (rate, latency at the percentile; inf when overloaded)

    @property
    def overloads_first(self) -> bool:
        """True when the budget holds right up to where the backlog starts to grow without end."""
        above = [latency for rate, latency in self.grid if rate > self.rate_per_s]
        return bool(above) and math.isinf(above[0])


def capacity(
    policy: Policy,
    curve: ServiceCurve,
    budget_s: float,
    percentile: float,
    arrivals: Arrivals = Arrivals(),
    *,
    n: int = SEARCH_REQUESTS,
    overhead_s: float = 0.0,
    seed: int = 0,
    shares: Sequence[float] = RATE_GRID,
    bisections: int = BISECTIONS,
    host_cores: int | None = None,
) -> Capacity:
    top = ceiling_per_s(policy, curve)
    if host_cores is not None and overhead_s > 0:
        top = min(top, host_cores / overhead_s)
    grid = []
    for share in shares:
        found = outcome(
            policy, curve, top * share, budget_s, percentile, arrivals, n=n, overhead_s=overhead_s, seed=seed,
            host_cores=host_cores,
        )  # fmt: skip
        grid.append((top * share, found.latency_s))
    passing = [rate for rate, latency in grid if latency <= budget_s]
    if not passing:
        return Capacity(policy, 0.0, top, grid)
    lo = max(passing)
    hi = next((rate for rate, _ in grid if rate > lo), top)
    for _ in range(bisections):
        mid = (lo + hi) / 2
        found = outcome(
            policy, curve, mid, budget_s, percentile, arrivals, n=n, overhead_s=overhead_s, seed=seed,
            host_cores=host_cores,
        )  # fmt: skip
        grid.append((mid, found.latency_s))
        lo, hi = (mid, hi) if found.meets else (lo, mid)
    return Capacity(policy, lo, top, sorted(grid))


@dataclass(frozen=True)
class LoadPoint:
    """One policy at one offered rate, reduced to what a chart shows."""

    rate: float
    throughput: float
    latency_s: float  # at the percentile; inf when overloaded
    mean_batch: float
    overloaded: bool
    utilisation: float
    breakdown: dict[str, float]  # of the requests at the percentile (seconds)


def load_curve(
    policy: Policy,
    curve: ServiceCurve,
    rates: Sequence[float],
    percentile: float,
    arrivals: Arrivals = Arrivals(),
    *,
    n: int = SEARCH_REQUESTS,
    overhead_s: float = 0.0,
    seed: int = 0,
) -> list[LoadPoint]:
    """The policy at each rate: latency at the percentile, batch formed, utilisation and the breakdown."""
    points = []
    for rate in rates:
        r = outcome(policy, curve, rate, math.inf, percentile, arrivals, n=n, overhead_s=overhead_s, seed=seed).result
        points.append(
            LoadPoint(
                rate, r.throughput_per_s, r.percentile(percentile), r.mean_batch, r.overloaded, r.utilisation,
                r.breakdown(percentile),
            )
        )  # fmt: skip
    return points


# ---------------------------------------------------------------------------------------------------------
# The search


def candidates(
    curve: ServiceCurve,
    server: str,
    instances: int,
    budget_s: float,
    handler: str,
    largest: int | None = None,
    batches: Sequence[int] = (),
    per_device: int = 1,
) -> list[Policy]:
    """Every policy tried: max batch at each power of two up to the largest batch of the curve (or `largest`, if
    smaller), that batch and each of `batches` up to it (the batch sizes measured, a sweep's recommendation), each
    max delay shorter than the budget, with `instances` instances."""
    if server == "none":
        return [Policy("none", 1, 0.0, instances, per_device=per_device)]
    largest = min(curve.largest, largest or curve.largest)
    powers = {2**i for i in range(largest.bit_length()) if 2**i <= largest}
    batches = sorted(powers | {largest} | {int(b) for b in batches if 1 <= b <= largest})
    found = []
    for batch in batches:
        for delay in DELAYS_S:
            if delay >= budget_s or (batch == 1 and delay > 0):
                continue
            found.append(
                Policy(server, batch, delay, instances, handler if server == "ray" else "blocking", per_device)
            )
    return found


@dataclass
class Candidate:
    policy: Policy
    outcomes: list[PolicyOutcome]
    capacity: Capacity | None = None

    @property
    def meets(self) -> bool:
        return all(o.meets for o in self.outcomes)

    @property
    def worst_s(self) -> float:
        return max(o.latency_s for o in self.outcomes)


@dataclass
class PolicySearch:
    """The answer of `search`: the policy chosen (None when nothing meets the budget) and its evidence."""

    rates: list[float]
    budget_s: float
    percentile: float
    server: str
    arrivals: Arrivals
    overhead_s: float
    chosen: Candidate | None
    checked: list[PolicyOutcome]  # the chosen policy at each rate, with more requests
    unbatched: Capacity  # no batching on as many instances
    tried: list[Candidate] = field(default_factory=list)
    closest: Candidate | None = None  # when nothing meets: the candidate of lowest latency
    host_cores: int | None = None  # the cores the overhead's work runs on (None: a fixed delay)


def search(
    curve: ServiceCurve,
    rates: Sequence[float],
    budget_s: float,
    percentile: float = 99,
    *,
    server: str = "triton",
    max_instances: int = 1,
    max_batch: int | None = None,
    handler: str = "blocking",
    arrivals: Arrivals = Arrivals(),
    overhead_s: float = 0.0,
    n: int = SEARCH_REQUESTS,
    check_n: int = CHECK_REQUESTS,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    batches: Sequence[int] = (),
    max_per_device: int = 1,
    host_cores: int | None = None,
) -> PolicySearch:
    """The policy that keeps the `percentile` of latency within `budget_s` at every rate of `rates`: the fewest
    devices (up to `max_instances`, one instance each, or up to `max_per_device` sharing each), then the most
    capacity within the budget; max batch at most `max_batch` (default: the curve's largest batch), tried at powers
    of two and at each of `batches`."""
    rates = sorted(rates)
    trials = _Trials(curve, budget_s, percentile, arrivals, overhead_s, n, seed, progress, host_cores)
    tried, meeting, last = _fewest_instances(
        trials, rates, server, max_instances, max_batch, handler, batches, max_per_device
    )
    chosen = _most_capacity(trials, meeting) if meeting else None
    shape = chosen.policy if chosen else last
    trials.say("no batching, for comparison")
    unbatched = trials.capacity(Policy("none", 1, 0.0, shape.instances, per_device=shape.per_device))
    checked = [trials.outcome(chosen.policy, r, check_n) for r in rates] if chosen else []
    closest = None if chosen else min(tried, key=lambda c: c.worst_s, default=None)
    return PolicySearch(
        list(rates), budget_s, percentile, server, arrivals, overhead_s, chosen, checked, unbatched, tried, closest,
        host_cores,
    )  # fmt: skip


@dataclass(frozen=True)
class _Trials:
    """What every simulation of one search shares: the curve, the budget, the arrivals, the run length, the seed."""

    curve: ServiceCurve
    budget_s: float
    percentile: float
    arrivals: Arrivals
    overhead_s: float
    n: int
    seed: int
    progress: Callable[[str], None] | None
    host_cores: int | None = None

    def say(self, text: str) -> None:
        if self.progress:
            self.progress(text)

    def outcome(self, policy: Policy, rate: float, n: int | None = None) -> PolicyOutcome:
        return outcome(
            policy, self.curve, rate, self.budget_s, self.percentile, self.arrivals,
            n=self.n if n is None else n, overhead_s=self.overhead_s, seed=self.seed, host_cores=self.host_cores,
        )  # fmt: skip

    def capacity(self, policy: Policy) -> Capacity:
        return capacity(
            policy, self.curve, self.budget_s, self.percentile, self.arrivals, n=self.n, overhead_s=self.overhead_s,
            seed=self.seed, host_cores=self.host_cores,
        )  # fmt: skip


def _fewest_instances(
    trials: _Trials,
    rates: list[float],
    server: str,
    max_instances: int,
    max_batch: int | None,
    handler: str,
    batches: Sequence[int] = (),
    max_per_device: int = 1,
) -> tuple[list[Candidate], list[Candidate], Policy]:
    """Every candidate policy at every rate, one device more at a time (and on each, one instance more at a time up
    to `max_per_device`) until some meet the budget at all of them. Returns every candidate tried, those that meet
    it, and the last policy tried (its instances and devices)."""
    tried: list[Candidate] = []
    meeting: list[Candidate] = []
    last = Policy("none", 1, 0.0)
    for devices in range(1, max_instances + 1):
        for share in range(1, max_per_device + 1):
            instances = devices * share
            policies = candidates(trials.curve, server, instances, trials.budget_s, handler, max_batch, batches, share)
            for index, policy in enumerate(policies):
                trials.say(f"{devices} device(s), {share} instance(s) each: policy {index + 1} of {len(policies)}")
                tried.append(Candidate(policy, [trials.outcome(policy, rate).verdict_only() for rate in rates]))
                last = policy
            meeting = [c for c in tried if (c.policy.devices, c.policy.per_device) == (devices, share) and c.meets]
            if meeting:
                return tried, meeting, last
    return tried, meeting, last


def _most_capacity(trials: _Trials, meeting: list[Candidate]) -> Candidate:
    """Of the candidates that meet the budget, the lowest-latency few get their capacity measured; of those within
    3 % of the most capacity, the one of lowest latency."""
    shortlist = sorted(meeting, key=lambda c: c.worst_s)[:SHORTLIST]
    for candidate in shortlist:
        trials.say(f"capacity of {candidate.policy.describe()}")
        candidate.capacity = trials.capacity(candidate.policy)
    best = max(c.capacity.rate_per_s for c in shortlist)
    near = [c for c in shortlist if c.capacity.rate_per_s >= 0.97 * best]
    return min(near, key=lambda c: c.worst_s)


@dataclass
class Evaluation:
    """One given policy (the settings a server runs now) at every rate asked, and its capacity within the budget
    when a budget is given."""

    policy: Policy
    outcomes: list[PolicyOutcome]
    percentile: float
    budget_s: float | None
    capacity: Capacity | None
    host_cores: int | None = None

    @property
    def meets(self) -> bool | None:
        """Whether it keeps the percentile within the budget at every rate (None without a budget)."""
        return None if self.budget_s is None else all(o.meets for o in self.outcomes)


def evaluate(
    policy: Policy,
    curve: ServiceCurve,
    rates: Sequence[float],
    percentile: float = 99,
    budget_s: float | None = None,
    *,
    arrivals: Arrivals = Arrivals(),
    overhead_s: float = 0.0,
    n: int = CHECK_REQUESTS,
    seed: int = 0,
    host_cores: int | None = None,
) -> Evaluation:
    """What `policy` does at each rate (latency percentiles, batch formed, utilisation, overload), with `n` requests
    per rate; with a budget, also the highest rate it sustains within it."""
    bound = math.inf if budget_s is None else budget_s
    outcomes = [
        outcome(
            policy,
            curve,
            rate,
            bound,
            percentile,
            arrivals,
            n=n,
            overhead_s=overhead_s,
            seed=seed,
            host_cores=host_cores,
        )
        for rate in sorted(rates)
    ]
    found = None
    if budget_s is not None:
        found = capacity(
            policy, curve, budget_s, percentile, arrivals, overhead_s=overhead_s, seed=seed, host_cores=host_cores
        )
    return Evaluation(policy, outcomes, percentile, budget_s, found, host_cores)
