"""The engine settings a tuned deployment chooses, searched against a latency budget.

A submitter to MLPerf or a user of `vllm bench sweep` tries the settings that change how an engine batches:
chunked prefill on or off, its token budget per step (max_num_batched_tokens), the running-sequence cap
(max_num_seqs) and the tensor-parallel width over the GPUs they have. This module tries each combination of the
first three with the budget planner (`benchmarks.analysis.serving.llm.engine_loop.plan`, which finds the
cap), and ranks them by the output tokens/s per GPU they serve at the largest Poisson rate that meets the budget:
that rate times the mean answer, over the engine's GPUs (every replica of an engine on the GPUs given serves the
same). Pure.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from benchmarks.analysis.serving.llm.engine_config import Engine, Infeasible
from benchmarks.analysis.serving.llm.planning import BudgetPlan, plan
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.run_result import Budget

CHUNK_BUDGETS = (512, 2048, 8192)  # tokens per step tried with chunked prefill
WHOLE_PROMPT_BUDGET = 8192  # vLLM's max_num_batched_tokens without chunked prefill (raised to the longest request)


@dataclass(frozen=True)
class Setting:
    tensor_parallel: int
    chunked_prefill: bool
    max_batched_tokens: int

    def describe(self) -> str:
        chunked = "chunked prefill" if self.chunked_prefill else "whole prompts first"
        return f"TP {self.tensor_parallel}, {chunked}, {self.max_batched_tokens:,} tokens a step"


@dataclass(frozen=True)
class Tried:
    setting: Setting
    found: BudgetPlan | None  # None: the budget is not met, or the setting cannot run (see `refused`)
    tokens_per_s_per_gpu: float | None
    refused: str | None = None


@dataclass(frozen=True)
class Tuning:
    budget: Budget
    gpus: int
    tried: tuple[Tried, ...]

    @property
    def best(self) -> Tried | None:
        met = [t for t in self.tried if t.tokens_per_s_per_gpu is not None]
        return max(met, key=lambda t: t.tokens_per_s_per_gpu) if met else None


def widths(gpus: int) -> list[int]:
    """Tensor-parallel widths over `gpus`: the powers of two that divide it (engines are replicated over the rest)."""
    return [w for w in (2**k for k in range(12)) if w <= gpus and gpus % w == 0]


def settings(gpus: int, longest_request: int) -> list[Setting]:
    found = []
    for tp in widths(gpus):
        found.append(Setting(tp, False, max(WHOLE_PROMPT_BUDGET, longest_request)))
        found.extend(Setting(tp, True, tokens) for tokens in CHUNK_BUDGETS)
    return found


def tune(
    step_for: Callable[[int], RooflineStep],
    engine: Engine,
    prompt: Lengths,
    output: Lengths,
    budget: Budget,
    gpus: int,
    *,
    n_requests: int = 1000,
    seed: int = 0,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Tuning:
    """Every setting over `gpus` GPUs (`step_for(tp)` gives the step of a TP-wide engine), its plan and its tokens/s
    per GPU. A width whose weights leave no room for one request's cache is tried and refused. The settings are
    planned on `workers` processes (every core for None); each plan is seeded alike, so the answer is the same on
    any number of them. `progress(done, total)` is called as each plan ends."""
    tried: list[Tried | None] = []
    jobs: list[tuple[int, tuple]] = []
    steps: dict[int, RooflineStep] = {}
    for s in settings(gpus, prompt.high + output.high):
        if s.tensor_parallel not in steps:
            steps[s.tensor_parallel] = step_for(s.tensor_parallel)
        step = steps[s.tensor_parallel]
        room = step.kv_blocks(engine.memory_fraction, engine.block_tokens) * engine.block_tokens
        if room < prompt.high + output.high:
            said = "the weights leave no room for a KV cache" if room == 0 else f"the cache holds {room:,} tokens"
            tried.append(Tried(s, None, None, said))
            continue
        settings_here = dataclasses.replace(engine, chunked_prefill=s.chunked_prefill,
                                            max_batched_tokens=s.max_batched_tokens)  # fmt: skip
        jobs.append((len(tried), (s, step, settings_here, prompt, output, budget, n_requests, seed)))
        tried.append(None)
    jobs.reverse()  # the widest engines run the most sequences and take longest: started first, they end together
    count = min(workers or os.cpu_count() or 1, len(jobs))
    if count <= 1:
        for done, (index, job) in enumerate(jobs, 1):
            tried[index] = _try(job)
            if progress:
                progress(done, len(jobs))
    else:
        with ProcessPoolExecutor(count) as pool:
            pending = {pool.submit(_try, job): index for index, job in jobs}
            for done, future in enumerate(as_completed(pending), 1):
                tried[pending[future]] = future.result()
                if progress:
                    progress(done, len(jobs))
    return Tuning(budget, gpus, tuple(t for t in tried if t is not None))


def _try(job: tuple) -> Tried:
    """One setting's plan (run in a worker process: a top-level function of picklable arguments)."""
    s, step, engine, prompt, output, budget, n_requests, seed = job
    try:
        found = plan(step, engine, prompt, output, budget, n_requests=n_requests, seed=seed)
    except Infeasible as exc:
        return Tried(s, None, None, str(exc))
    return Tried(s, found, _per_gpu(found, s.tensor_parallel))


def _per_gpu(found: BudgetPlan | None, tensor_parallel: int) -> float | None:
    if found is None or found.rate_per_s is None or found.rate_result is None:
        return None
    r = found.rate_result
    return found.rate_per_s * r.output_tokens / r.requests / tensor_parallel


def explain_tuning(t: Tuning) -> str:
    """One paragraph: the setting picked, its cap and rate, and how far the runner-up is."""
    best = t.best
    if best is None:
        return f"No setting over {t.gpus} GPU{'s' * (t.gpus > 1)} meets {t.budget.describe()} under Poisson arrivals."
    f = best.found
    replicas = t.gpus // best.setting.tensor_parallel
    said = (
        f"Of {len(t.tried)} settings over {t.gpus} GPU{'s' * (t.gpus > 1)}, the one that meets {t.budget.describe()} "
        f"with the most output tokens/s per GPU is {best.setting.describe()}, max_num_seqs {f.max_num_seqs}"
        f"{f' ({replicas} replicas)' if replicas > 1 else ''}: up to about {f.rate_per_s:.2f} requests/s per "
        f"replica, {best.tokens_per_s_per_gpu:,.0f} tokens/s per GPU."
    )
    others = sorted((x for x in t.tried if x is not best and x.tokens_per_s_per_gpu is not None),
                    key=lambda x: -x.tokens_per_s_per_gpu)  # fmt: skip
    if others:
        runner = others[0]
        gap = 1 - runner.tokens_per_s_per_gpu / best.tokens_per_s_per_gpu
        said += (
            f" Next: {runner.setting.describe()}, max_num_seqs {runner.found.max_num_seqs}, "
            f"{runner.tokens_per_s_per_gpu:,.0f} tokens/s per GPU ({gap * 100:.0f} % fewer)."
        )
    missed = sum(1 for x in t.tried if x.tokens_per_s_per_gpu is None)
    if missed:
        said += f" {missed} setting{'s' * (missed > 1)} met the budget at no rate or could not run."
    return said


def rows(t: Tuning) -> list[dict[str, object]]:
    """Each setting tried, JSON-ready."""
    found = []
    for x in t.tried:
        f = x.found
        found.append({
            "tensor_parallel": x.setting.tensor_parallel,
            "chunked_prefill": x.setting.chunked_prefill,
            "max_batched_tokens": x.setting.max_batched_tokens,
            "max_num_seqs": None if f is None else f.max_num_seqs,
            "rate_per_s": None if f is None else f.rate_per_s,
            "tokens_per_s_per_gpu": x.tokens_per_s_per_gpu,
            "refused": x.refused,
            "picked": x is t.best,
        })  # fmt: skip
    return found
