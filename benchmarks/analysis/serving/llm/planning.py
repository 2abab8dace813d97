"""Planning on top of the simulator: the front of total against per-user tokens/s, the largest load a latency budget
allows (closed-loop concurrency, then Poisson rate, checked at steady state), and what binds.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.run_result import Budget, Result
from benchmarks.analysis.serving.llm.simulation import MAX_REQUESTS, simulate
from benchmarks.analysis.serving.llm.steady_state import Steady, steady_rate
from benchmarks.analysis.serving.llm.step_model import StepModel

# The bisection for the largest concurrency stops once a concurrency that meets the budget and one that misses it
# are at most 1/CAP_RESOLUTION of the first apart (exact below 128): finer than the forecast step it simulates on
# (whose expected error is ±14 % or more), and each run of thousands of clients costs most of a search.
CAP_RESOLUTION = 64


def kv_limit(step: StepModel, engine: Engine, prompt: Lengths, output: Lengths) -> int:
    """Sequences whose caches fit at once when each holds a mean prompt and a mean answer: beyond it, requests
    wait for blocks (or are preempted) instead of joining the batch."""
    per_sequence = -(-math.ceil(prompt.mean + output.mean) // engine.block_tokens)
    return step.kv_blocks(engine.memory_fraction, engine.block_tokens) // per_sequence


def closed_loop_requests(n_requests: int, clients: int) -> int:
    """Requests a closed loop of `clients` serves: at least four per client, so that three quarters or more are
    measured after the warm-up round."""
    return min(MAX_REQUESTS, max(n_requests, 4 * clients))


@dataclass(frozen=True)
class FrontPoint:
    concurrency: int
    result: Result


def front(
    step: StepModel,
    engine: Engine,
    prompt: Lengths,
    output: Lengths,
    concurrencies: Sequence[int],
    *,
    n_requests: int = 1000,
    seed: int = 0,
) -> list[FrontPoint]:
    """Closed loops of each number of clients, the running-sequence cap raised to it where it is lower: total
    against per-user tokens per second, one point per concurrency."""
    found = []
    for clients in sorted(set(concurrencies)):
        settings = Engine(**{**engine.__dict__, "max_num_seqs": max(engine.max_num_seqs, clients)})
        if settings.chunked_prefill and settings.max_batched_tokens < settings.max_num_seqs:
            settings = Engine(**{**settings.__dict__, "max_batched_tokens": settings.max_num_seqs})
        result = simulate(
            step, settings, prompt, output, n_requests=closed_loop_requests(n_requests, clients), clients=clients,
            seed=seed,
        )  # fmt: skip
        found.append(FrontPoint(clients, result))
    return found


def pareto(points: Sequence[FrontPoint]) -> list[FrontPoint]:
    """The points no other point beats on both total and per-user tokens per second."""
    return [
        p
        for p in points
        if not any(
            q.result.tokens_per_s >= p.result.tokens_per_s
            and q.result.tokens_per_s_per_user >= p.result.tokens_per_s_per_user
            and (q.result.tokens_per_s, q.result.tokens_per_s_per_user)
            != (p.result.tokens_per_s, p.result.tokens_per_s_per_user)
            for q in points
        )
    ]


@dataclass(frozen=True)
class BudgetPlan:
    """The largest load that meets a budget, and why not more."""

    budget: Budget
    concurrency: int  # clients of a closed loop (and the running-sequence cap to set)
    result: Result  # at that concurrency
    beyond: Result | None  # the fewest clients found to miss the budget (None: the KV limit stopped the search)
    kv_limit: int
    rate_per_s: float | None  # the largest Poisson rate meeting the budget with the cap set to `concurrency`
    rate_result: Result | None
    binds: str  # "kv-memory", "step-time", "prefills" or "time-to-first-token"
    step: StepModel
    steady: Steady | None = None  # the check of `rate_per_s` at steady state (None: no rate searched)
    searched_per_s: float | None = None  # the short search's rate, before the steady-state check
    failed: tuple[Steady, ...] = ()  # the rates that failed the steady-state check, highest first
    beyond_concurrency: int | None = None  # the clients of `beyond`: concurrency + 1 unless the search stopped short

    @property
    def max_num_seqs(self) -> int:
        return self.concurrency


def plan(
    step: StepModel,
    engine: Engine,
    prompt: Lengths,
    output: Lengths,
    budget: Budget,
    *,
    n_requests: int = 1000,
    seed: int = 0,
    find_rate: bool = True,
) -> BudgetPlan | None:
    """The largest closed-loop concurrency (up to the KV limit) whose run meets `budget`, searched by doubling
    then bisection, the running-sequence cap set to it; then the largest Poisson rate that meets the budget with
    that cap. None when even one client misses it."""
    limit = max(1, kv_limit(step, engine, prompt, output))
    cache: dict[int, Result] = {}

    def run(clients: int) -> Result:
        if clients not in cache:
            settings = _with_cap(engine, clients)
            n = closed_loop_requests(n_requests, clients)
            cache[clients] = simulate(step, settings, prompt, output, n_requests=n, clients=clients, seed=seed)
        return cache[clients]

    if budget.misses(run(1)):
        return None
    good, bad = 1, None
    while bad is None and good < limit:
        trial = min(limit, good * 2)
        if budget.misses(run(trial)):
            bad = trial
        else:
            good = trial
    while bad is not None and bad - good > max(1, good // CAP_RESOLUTION):
        middle = (good + bad) // 2
        if budget.misses(run(middle)):
            bad = middle
        else:
            good = middle
    beyond = cache[bad] if bad is not None else None
    binds = _binding(budget, cache[good], beyond)
    rate, rate_result = (None, None)
    if not find_rate:
        return BudgetPlan(
            budget, good, cache[good], beyond, limit, rate, rate_result, binds, step, beyond_concurrency=bad
        )
    capped = _with_cap(engine, good)
    rate, rate_result = largest_rate(step, capped, prompt, output, budget, cache[good].requests_per_s,
                                     n_requests=n_requests, seed=seed)  # fmt: skip
    if rate is None:
        return BudgetPlan(
            budget, good, cache[good], beyond, limit, rate, rate_result, binds, step, beyond_concurrency=bad
        )
    passed, failed = steady_rate(step, capped, prompt, output, budget, rate, n_requests=n_requests, seed=seed)
    return BudgetPlan(budget, good, cache[good], beyond, limit, passed.rate_per_s if passed else None,
                passed.result if passed else None, binds, step, passed, rate, failed, bad)  # fmt: skip


def _with_cap(engine: Engine, cap: int) -> Engine:
    tokens = max(engine.max_batched_tokens, cap) if engine.chunked_prefill else engine.max_batched_tokens
    return Engine(**{**engine.__dict__, "max_num_seqs": cap, "max_batched_tokens": tokens})


def _binding(budget: Budget, at: Result, beyond: Result | None) -> str:
    """What stops a larger concurrency: the cache (the search reached the KV limit), the first token's wait, or
    the time per output token, and then whether prefills (stalls between tokens) or the step itself made it."""
    if beyond is None:
        return "kv-memory"
    missed = budget.misses(beyond)
    if "tpot" not in missed:
        return "time-to-first-token"
    steady = beyond.percentile("itl", 50)
    return "prefills" if beyond.percentile("tpot", budget.percentile) > 1.25 * steady else "step-time"


def largest_rate(
    step: StepModel,
    engine: Engine,
    prompt: Lengths,
    output: Lengths,
    budget: Budget,
    start_per_s: float,
    *,
    n_requests: int = 1000,
    seed: int = 0,
    halvings: int = 6,
) -> tuple[float | None, Result | None]:
    """The largest Poisson rate whose run meets `budget` and keeps up: doubling from `start_per_s` until a
    rate misses, then `halvings` bisections. (None, None) when even a sixty-fourth of the start misses."""

    def run(rate: float) -> Result:
        return simulate(step, engine, prompt, output, n_requests=n_requests, rate_per_s=rate, seed=seed)

    return largest_rate_of(run, budget, start_per_s, halvings=halvings)


def largest_rate_of(
    run: Callable[[float], Result], budget: Budget, start_per_s: float, *, halvings: int = 6
) -> tuple[float | None, Result | None]:
    """`largest_rate` for any deployment: `run(rate)` serves Poisson arrivals at `rate` requests/s."""
    low, best, high = 0.0, None, start_per_s
    for _ in range(12):
        result = run(high)
        if budget.misses(result):
            break
        low, best, high = high, result, 2 * high
    else:
        return low, best
    if best is None:
        for _ in range(6):
            high /= 2
            result = run(high)
            if not budget.misses(result):
                low, best, high = high, result, 2 * high
                break
        if best is None:
            return None, None
    for _ in range(halvings):
        middle = (low + high) / 2
        result = run(middle)
        if budget.misses(result):
            high = middle
        else:
            low, best = middle, result
    return low, best
