"""Steady state of an open-loop run: the window that leaves out the warm-up and the drain, whether served keeps up
with offered there, and runs lengthened until it does.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.run_result import Budget, Result
from benchmarks.analysis.serving.llm.simulation import MAX_REQUESTS, simulate
from benchmarks.analysis.serving.llm.step_model import StepModel

STEADY_LENGTH = 5  # the check runs this many times the search's requests
STEADY_EDGE = 0.1  # the share of requests left out at each end: the warm-up (first arrivals) and the drain (last)
STEADY_SERVED = 0.95  # served ÷ offered over the window, at least
STEADY_BACKLOG = 0.02  # requests waiting for their first token may grow over the window by this share of it, at most
STEADY_STEP = 0.95  # each retry offers this share of the last rate that failed
STEADY_TRIES = 12


@dataclass(frozen=True)
class Steady:
    """One long run at a rate, measured over a window that leaves out the warm-up and the drain."""

    rate_per_s: float
    requests: int  # in the run
    window: int  # requests measured (arrived in the window, whatever their outputs)
    served_per_s: float  # requests that finished within the window's span ÷ that span
    ttft_first_half_s: float  # median TTFT of the window's first half (by arrival)
    ttft_second_half_s: float
    backlog_start: int  # requests arrived and waiting for their first token when the window opens
    backlog_end: int  # and when it closes
    tpot_s: float  # at the budget's percentile, over the window
    ttft_s: float
    tokens_per_s: float  # output tokens finished within the window's span ÷ that span
    result: Result
    window_arrivals_per_s: float | None = None  # requests arrived within the window ÷ its span

    @property
    def arrived_per_s(self) -> float:
        """Requests that arrived within the window ÷ its span: what this run offered there (a Poisson run's own
        window strays a few per cent from its nominal rate)."""
        return self.window_arrivals_per_s if self.window_arrivals_per_s is not None else self.rate_per_s

    @property
    def served_share(self) -> float:
        """Finished ÷ arrived over the window: about 1 at steady state, below it when the backlog grows."""
        return self.served_per_s / self.arrived_per_s

    @property
    def backlog_growth(self) -> int:
        return self.backlog_end - self.backlog_start

    @property
    def stable(self) -> bool:
        """Served ≈ offered, and the queue for a first token does not grow over the window."""
        return self.served_share >= STEADY_SERVED and self.backlog_growth <= STEADY_BACKLOG * self.window

    def meets(self, budget: Budget) -> bool:
        within = self.tpot_s <= budget.tpot_s and (budget.ttft_s is None or self.ttft_s <= budget.ttft_s)
        return self.stable and within

    def describe(self, budget: Budget) -> str:
        p = f"p{budget.percentile:g}"
        return (
            f"{self.rate_per_s:.2f} requests/s offered, {self.served_per_s:.2f} served; "
            f"{self.backlog_start:,} requests waiting for a first token as the window opens, "
            f"{self.backlog_end:,} as it closes; median TTFT "
            f"{self.ttft_first_half_s * 1e3:,.0f} ms in the window's first half and "
            f"{self.ttft_second_half_s * 1e3:,.0f} ms in its second; {p} time per output token "
            f"{self.tpot_s * 1e3:.1f} ms and {p} time to first token {self.ttft_s * 1e3:,.0f} ms"
        )


def steady(result: Result, budget: Budget) -> Steady:
    """The steady-state figures of one open-loop run: the requests that arrived after the first STEADY_EDGE and
    before the last STEADY_EDGE of arrivals, their latencies at the budget's percentile, and how fast requests and
    tokens finished over the window's span against the rate offered."""
    n = len(result.arrival_s)
    order = np.argsort(result.arrival_s, kind="stable")
    inside = order[int(n * STEADY_EDGE) : n - int(n * STEADY_EDGE)]
    start, end = result.arrival_s[inside[0]], result.arrival_s[inside[-1]]
    span = end - start
    finished = (result.finish_s >= start) & (result.finish_s <= end)
    ttft = result.first_s[inside] - result.arrival_s[inside]
    many = inside[result.outputs[inside] > 1]
    tpot = (result.finish_s[many] - result.first_s[many]) / (result.outputs[many] - 1)
    half = len(inside) // 2

    def backlog(t: float) -> int:
        return int((result.arrival_s <= t).sum() - (result.first_s <= t).sum())

    return Steady(
        rate_per_s=float(result.offered_rate),
        requests=n,
        window=len(inside),
        served_per_s=float(finished.sum() / span),
        ttft_first_half_s=float(np.median(ttft[:half])),
        ttft_second_half_s=float(np.median(ttft[half:])),
        backlog_start=backlog(start),
        backlog_end=backlog(end),
        tpot_s=float(np.percentile(tpot, budget.percentile)) if len(tpot) else math.nan,
        ttft_s=float(np.percentile(ttft, budget.percentile)),
        tokens_per_s=float(result.outputs[finished].sum() / span),
        result=result,
        window_arrivals_per_s=float(len(inside) / span),
    )


def window_figures(result: Result) -> dict[str, float | int | bool] | None:
    """An open-loop run's own throughput at steady state: requests and output tokens finished per second over the
    window that leaves out the warm-up and the drain (`steady`), and whether the run was steady there (served ≈
    offered, the queue for a first token not growing). None for a closed loop or a run too short for a window."""
    n = len(result.arrival_s)
    if result.offered_rate is None or n - 2 * int(n * STEADY_EDGE) < 2:
        return None
    order = np.sort(result.arrival_s)[int(n * STEADY_EDGE) : n - int(n * STEADY_EDGE)]
    if order[-1] <= order[0]:
        return None
    found = steady(result, Budget(math.inf))
    return {
        "steady_requests_per_s": found.served_per_s,
        "steady_tokens_per_s": found.tokens_per_s,
        "steady_arrived_per_s": found.arrived_per_s,
        "steady_window": found.window,
        "steady": found.stable,
    }


T = TypeVar("T")
STEADY_GROWTH = 8  # an open-loop run at a rate is lengthened (doubling) up to this many times the asked requests


def simulate_steady(
    step: StepModel,
    engine: Engine,
    prompt: Lengths,
    output: Lengths,
    *,
    rate_per_s: float,
    n_requests: int,
    seed: int = 0,
) -> Result:
    """An open-loop run at `rate_per_s`, lengthened until its window is steady (`lengthen_until_steady`)."""

    def run(n: int) -> Result:
        return simulate(step, engine, prompt, output, n_requests=n, rate_per_s=rate_per_s, seed=seed)

    return lengthen_until_steady(run, lambda r: r, n_requests)


def lengthen_until_steady(run: Callable[[int], T], result_of: Callable[[T], Result], n_requests: int) -> T:
    """`run(n)` for n = `n_requests`, doubled until the run's window is steady (`window_figures`), the run is
    overloaded, or n reaches STEADY_GROWTH times `n_requests` (or MAX_REQUESTS): a short run measures the warm-up,
    where fewer sequences share each step than the rate keeps at steady state."""
    most = min(MAX_REQUESTS, STEADY_GROWTH * n_requests)
    n = n_requests
    while True:
        found = run(n)
        result = result_of(found)
        window = window_figures(result)
        if result.overloaded or window is None or window["steady"] or n >= most:
            return found
        n = min(most, 2 * n)


def steady_rate(
    step: StepModel,
    engine: Engine,
    prompt: Lengths,
    output: Lengths,
    budget: Budget,
    rate_per_s: float,
    *,
    n_requests: int = 1000,
    seed: int = 0,
) -> tuple[Steady | None, tuple[Steady, ...]]:
    """Re-check a rate the short search found with a run STEADY_LENGTH times as long, measured at steady state;
    while it fails (unstable, or over the budget), offer STEADY_STEP of it. The largest rate that passed (None when
    none of STEADY_TRIES did), and the ones that failed."""
    n = min(MAX_REQUESTS, STEADY_LENGTH * n_requests)
    failed = []
    rate = rate_per_s
    for _ in range(STEADY_TRIES):
        result = simulate(step, engine, prompt, output, n_requests=n, rate_per_s=rate, seed=seed)
        found = steady(result, budget)
        if found.meets(budget):
            return found, tuple(failed)
        failed.append(found)
        rate *= STEADY_STEP
    return None, tuple(failed)
