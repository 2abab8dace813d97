"""Serving requests on one engine: the simulator's entry points, from settings, lengths and arrivals to a run's
figures. The step loop itself is `benchmarks.analysis.serving.llm.engine_loop`.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from benchmarks.analysis.serving.arrivals import poisson_arrivals
from benchmarks.analysis.serving.llm.engine_config import Engine, Infeasible
from benchmarks.analysis.serving.llm.engine_loop import EngineLoop
from benchmarks.analysis.serving.llm.kv_cache import KVCacheManager
from benchmarks.analysis.serving.llm.request_lengths import Lengths, clip_pairs
from benchmarks.analysis.serving.llm.run_result import Result
from benchmarks.analysis.serving.llm.scheduler import SCHEDULERS, DecodeOnly
from benchmarks.analysis.serving.llm.step_model import StepModel

MAX_REQUESTS = 200_000


def simulate(
    step: StepModel,
    engine: Engine,
    prompt: Lengths,
    output: Lengths,
    *,
    n_requests: int,
    rate_per_s: float | None = None,
    clients: int | None = None,
    seed: int = 0,
    kv_blocks: int | None = None,
) -> Result:
    """Serve `n_requests` requests on `step`'s device with `engine`'s settings; Poisson arrivals at `rate_per_s`
    or a closed loop of `clients`. Infeasible when the cache cannot hold one request or the settings cannot
    serve a prompt; ValueError for settings that make no sense."""
    problems = engine.problems()
    if problems:
        raise ValueError(problems[0])
    if (rate_per_s is None) == (clients is None):
        raise ValueError("give a rate or a number of clients, not both")
    if not 1 <= n_requests <= MAX_REQUESTS:
        raise ValueError(f"n_requests must be from 1 to {MAX_REQUESTS:,}")
    rng = np.random.default_rng(seed)
    prompts = [int(x) for x in prompt.sample(n_requests, rng)]
    outputs = [int(x) for x in output.sample(n_requests, rng)]
    if min(prompts) < 1 or min(outputs) < 1:
        raise ValueError("every prompt and output holds at least one token")
    blocks_total = step.kv_blocks(engine.memory_fraction, engine.block_tokens) if kv_blocks is None else kv_blocks
    output_cap = max(output.high, max(outputs))
    if engine.max_model_len is not None:
        prompts, outputs = clip_pairs(prompts, outputs, engine.max_model_len)
        output_cap = min(output_cap, engine.max_model_len - min(prompts))  # no answer runs past the model's length
    _check_fits(engine, prompts, outputs, output_cap, blocks_total)
    if rate_per_s is not None:
        if not (rate_per_s > 0 and math.isfinite(rate_per_s)):
            raise ValueError("the rate must be a positive number of requests per second")
        arrivals = [float(t) for t in poisson_arrivals(rate_per_s, n_requests, rng)]
    else:
        if clients is None or clients < 1:
            raise ValueError("clients must be at least 1")
        arrivals = [0.0] * min(clients, n_requests) + [math.inf] * max(0, n_requests - clients)
    kv = KVCacheManager(blocks_total, engine.block_tokens, n_requests, engine.prefix)
    if engine.prefix is not None:
        kv.carriers = [bool(x) for x in rng.random(n_requests) < engine.prefix.share]
    loop = EngineLoop(
        step, engine, prompts, outputs, arrivals, kv, SCHEDULERS[engine.scheduler](), rate_per_s, clients, output_cap
    )
    return loop.run()


@dataclass(frozen=True)
class Served:
    """Requests served by one engine from given arrivals: when each got its first token and its last, and the run's
    figures."""

    first: list[float]
    finish: list[float]
    result: Result


def serve_requests(
    step: StepModel,
    engine: Engine,
    prompts: list[int],
    outputs: list[int],
    arrivals: list[float],
    *,
    prefilled: bool = False,
    carriers: list[bool] | None = None,
) -> Served:
    """Serve requests that arrive at the given times (one stage of a disaggregated deployment). With `prefilled`,
    each arrives with its prompt's KV cache and its first token, computed elsewhere: it is admitted once blocks for
    its prompt and the longest answer allowed are free (nothing is preempted), and decodes its other tokens; its
    `first` is the time it was admitted. With the engine's prefix caching, `carriers` says which requests begin with
    the shared prefix (none when not given)."""
    if not prompts or len(prompts) != len(outputs) or len(prompts) != len(arrivals):
        raise ValueError("give one prompt, output and arrival per request, at least one")
    if prefilled and min(outputs) < 2:
        raise ValueError("a decode engine serves answers of two tokens or more: the first came with the cache")
    if prefilled:
        engine = dataclasses.replace(engine, reserve=True, prefix=None)
    blocks_total = step.kv_blocks(engine.memory_fraction, engine.block_tokens)
    output_cap = max(outputs)
    _check_fits(engine if not prefilled else dataclasses.replace(engine, chunked_prefill=True), prompts, outputs,
                output_cap, blocks_total)  # fmt: skip
    rate = len(arrivals) / max(max(arrivals) - min(arrivals), 1e-9)
    kv = KVCacheManager(blocks_total, engine.block_tokens, len(prompts), engine.prefix)
    if engine.prefix is not None and carriers is not None:
        kv.carriers = list(carriers)
    policy = DecodeOnly() if prefilled else SCHEDULERS[engine.scheduler]()
    loop = EngineLoop(step, engine, list(prompts), list(outputs), list(arrivals), kv, policy, rate, None, output_cap)
    result = loop.run()
    return Served(list(loop.first), list(loop.finish), result)


@dataclass(frozen=True)
class Replayed:
    """A replayed load's figures, and what the engine held after every step: (its end, running sequences, waiting
    requests, KV blocks in use)."""

    result: Result
    timeline: list[tuple[float, int, int, int]]


def replay(
    step: StepModel,
    engine: Engine,
    prompts: list[int],
    outputs: list[int],
    *,
    arrivals: list[float] | None = None,
    clients: int | None = None,
) -> Replayed:
    """Serve exactly these requests: sent at `arrivals` (an open loop, as a real client sent them) or by `clients`
    closed-loop clients in order (each sends the next request when its last ends), as a real engine was driven."""
    problems = engine.problems()
    if problems:
        raise ValueError(problems[0])
    if (arrivals is None) == (clients is None):
        raise ValueError("give the arrivals or a number of clients, not both")
    if not prompts or len(prompts) != len(outputs) or (arrivals is not None and len(arrivals) != len(prompts)):
        raise ValueError("give one prompt, output (and arrival) per request, at least one")
    n = len(prompts)
    blocks_total = step.kv_blocks(engine.memory_fraction, engine.block_tokens)
    _check_fits(engine, prompts, outputs, max(outputs), blocks_total)
    if clients is not None:
        arrivals = [0.0] * min(clients, n) + [math.inf] * max(0, n - clients)
        rate = None
    else:
        rate = n / max(max(arrivals) - min(arrivals), 1e-9)
    kv = KVCacheManager(blocks_total, engine.block_tokens, n, engine.prefix)
    loop = EngineLoop(step, engine, list(prompts), list(outputs), list(arrivals), kv, SCHEDULERS[engine.scheduler](),
                      rate, clients, max(outputs))  # fmt: skip
    loop.timeline = []
    return Replayed(loop.run(), loop.timeline)


def _check_fits(engine: Engine, prompts: list[int], outputs: list[int], output_cap: int, blocks_total: int) -> None:
    """Infeasible when the longest request cannot fit in the cache or, without chunked prefill, in one step."""
    bt = engine.block_tokens
    longest = max(p + o for p, o in zip(prompts, outputs))
    if engine.reserve:  # a prompt with the longest answer allowed
        longest = min(max(prompts) + output_cap, engine.max_model_len or math.inf)
    if -(-longest // bt) > blocks_total:
        raise Infeasible(
            f"the KV cache holds {blocks_total * bt:,} tokens ({blocks_total:,} blocks of {bt}), fewer than one "
            f"request of {longest:,} tokens needs"
        )
    if not engine.chunked_prefill and longest > engine.max_batched_tokens:
        raise Infeasible(
            f"without chunked prefill a prompt (with the tokens a preempted request computes again) must fit in "
            f"max_batched_tokens ({engine.max_batched_tokens:,}); requests reach {longest:,} tokens"
        )
