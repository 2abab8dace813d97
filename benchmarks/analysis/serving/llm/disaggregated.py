"""Disaggregated prefill and decode: P engines that only compute prompts, D engines that only decode.

NVIDIA Dynamo, vLLM's disaggregated prefill and SGLang's PD mode split an engine's two kinds of work onto separate
GPUs, so that a long prompt never stalls the sequences that decode, and each side can be sized and batched for its
own bound (prefill by compute, decode by memory). The price is the KV cache of every prompt crossing from a prefill
engine to a decode engine.

The model here, each stage the continuous-batching simulator (`benchmarks.analysis.serving.llm.engine_loop`):

- requests arrive as a Poisson process and a router deals them to the prefill engines in turn;
- a prefill engine batches whole prompts (or chunks, with chunked prefill) up to its token budget and samples each
  request's first token; its blocks are freed once the prompt is computed (with prefix caching, the shared prefix's
  stay cached there; the whole prompt's cache still crosses to the decode engine);
- the prompt's cache crosses the link in prompt × (KV bytes a token) / (link bandwidth × GPUs of an engine) plus a
  stated latency: with tensor parallelism each GPU sends its own heads' share over its own link. Contention between
  transfers on one link is left out;
- the request then goes to the decode engines in turn, in the order the transfers end; a decode engine admits it
  once blocks for its prompt and the longest answer allowed are free (nothing is preempted) and streams the first
  token with its second: the time to first token is that admission, less the arrival.

Aggregated serving on the same GPUs is the same engine replicated, the load dealt evenly: its tokens/s per GPU is
one replica's at its share of the rate, over the replica's GPUs. Pure Python and numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchmarks.analysis.serving.arrivals import poisson_arrivals
from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.planning import largest_rate, largest_rate_of
from benchmarks.analysis.serving.llm.request_lengths import Lengths, clip_pairs
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.run_result import Budget, Result
from benchmarks.analysis.serving.llm.simulation import serve_requests, simulate
from benchmarks.gpus import GPU

KV_LINK_LATENCY_S = 20e-6  # an assumed per-transfer setup cost (a few RDMA round trips), stated with every result


@dataclass(frozen=True)
class KVLink:
    """The link a prompt's KV cache crosses from a prefill GPU to a decode GPU: bytes/s one way, per GPU."""

    name: str
    bytes_per_s: float
    latency_s: float = KV_LINK_LATENCY_S

    def seconds(self, kv_bytes: float, gpus: int) -> float:
        return self.latency_s + kv_bytes / (self.bytes_per_s * gpus)

    def describe(self) -> str:
        return (
            f"{self.name}, {self.bytes_per_s / 1e9:,.1f} GB/s one way per GPU, {self.latency_s * 1e6:g} µs a transfer "
            "(an assumed figure)"
        )


def nvlink(gpu: GPU) -> KVLink:
    """The GPU's own link between GPUs of one server (NVLink, or PCIe), one way."""
    if gpu.interconnect is None:
        raise ValueError(f"the {gpu.name} entry names no interconnect; give the network's bandwidth")
    return KVLink(gpu.interconnect.name, gpu.interconnect.bytes_per_s_each_way)


def network(gigabits_per_s: float) -> KVLink:
    """A network between servers at a stated line rate per GPU (e.g. 400 Gb/s InfiniBand NDR or RoCE)."""
    if not (gigabits_per_s > 0 and math.isfinite(gigabits_per_s)):
        raise ValueError("the network's bandwidth must be a positive number of Gb/s")
    return KVLink(f"a {gigabits_per_s:g} Gb/s network", gigabits_per_s * 1e9 / 8)


@dataclass(frozen=True)
class Split:
    """P prefill and D decode engines, each on `tensor_parallel` GPUs."""

    prefill: int
    decode: int
    tensor_parallel: int = 1

    @property
    def gpus(self) -> int:
        return (self.prefill + self.decode) * self.tensor_parallel

    def describe(self) -> str:
        tp = f" of {self.tensor_parallel} GPUs each" if self.tensor_parallel > 1 else ""
        return f"{self.prefill} prefill and {self.decode} decode engines{tp} ({self.gpus} GPUs)"


@dataclass(frozen=True)
class Disaggregated:
    """One run of a disaggregated deployment."""

    result: Result  # per request: the user's time to first token and per output token; tokens/s of the whole
    transfer_s: np.ndarray  # each request's KV transfer
    gpus: int

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.result.tokens_per_s / self.gpus


def simulate_disaggregated(
    step: RooflineStep,
    engine: Engine,
    prompt: Lengths,
    output: Lengths,
    split: Split,
    link: KVLink,
    *,
    n_requests: int,
    rate_per_s: float,
    seed: int = 0,
) -> Disaggregated:
    """Serve `n_requests` Poisson arrivals at `rate_per_s` on `split`'s engines, each with `engine`'s settings.
    The requests' lengths and arrivals are those `simulate` draws under the same seed."""
    if split.prefill < 1 or split.decode < 1:
        raise ValueError("give at least one prefill and one decode engine")
    if not (rate_per_s > 0 and math.isfinite(rate_per_s)):
        raise ValueError("the rate must be a positive number of requests per second")
    rng = np.random.default_rng(seed)
    prompts = [int(x) for x in prompt.sample(n_requests, rng)]
    outputs = [int(x) for x in output.sample(n_requests, rng)]
    if engine.max_model_len is not None:
        prompts, outputs = clip_pairs(prompts, outputs, engine.max_model_len)
    arrivals = [float(t) for t in poisson_arrivals(rate_per_s, n_requests, rng)]
    carriers = [False] * n_requests
    if engine.prefix is not None:  # drawn as simulate draws them: the prefill engines cache the shared prefix
        carriers = [bool(x) for x in rng.random(n_requests) < engine.prefix.share]
    first, finish = [math.nan] * n_requests, [math.nan] * n_requests
    ready = [math.nan] * n_requests
    transfer = np.array([link.seconds(p * step.kv_bytes_per_token, split.tensor_parallel) for p in prompts])
    waiting, stage_results = 0, []
    for k in range(split.prefill):
        mine = list(range(k, n_requests, split.prefill))
        served = serve_requests(step, engine, [prompts[i] for i in mine], [1] * len(mine), [arrivals[i] for i in mine],
                                carriers=[carriers[i] for i in mine])  # fmt: skip
        waiting += served.result.waiting_at_last_arrival
        for j, i in enumerate(mine):
            ready[i] = served.first[j] + transfer[i]
            first[i] = finish[i] = ready[i]  # a one-token answer ends with its prefill
    decoding = sorted((i for i in range(n_requests) if outputs[i] > 1), key=lambda i: ready[i])
    for k in range(split.decode):
        mine = decoding[k :: split.decode]
        if not mine:
            continue
        served = serve_requests(step, engine, [prompts[i] for i in mine], [outputs[i] for i in mine],
                                [ready[i] for i in mine], prefilled=True)  # fmt: skip
        stage_results.append(served.result)
        for j, i in enumerate(mine):
            first[i], finish[i] = served.first[j], served.finish[j]
    last_arrival = max(arrivals)
    waiting += sum(1 for i in decoding if ready[i] <= last_arrival < first[i])
    return Disaggregated(_combined(arrivals, first, finish, outputs, prompts, stage_results, rate_per_s, waiting),
                         transfer, split.gpus)  # fmt: skip


def _combined(arrivals, first, finish, outputs, prompts, decode_runs, rate, waiting) -> Result:
    arr, fst, fin, outs = (np.array(x, dtype=float) for x in (arrivals, first, finish, outputs))
    many = outs > 1
    duration = float(fin.max() - arr.min())
    busy = sum(r.busy_s for r in decode_runs)
    return Result(
        ttft_s=fst - arr,
        tpot_s=(fin[many] - fst[many]) / (outs[many] - 1),
        e2e_s=fin - arr,
        itl_s=np.concatenate([r.itl_s for r in decode_runs]) if decode_runs else np.array([]),
        output_tokens=int(outs.sum()),
        requests=len(arrivals),
        duration_s=duration,
        mean_running=sum(r.mean_running * r.duration_s for r in decode_runs) / duration,
        max_running=sum(r.max_running for r in decode_runs),
        kv_blocks=sum(r.kv_blocks for r in decode_runs),
        kv_peak_blocks=sum(r.kv_peak_blocks for r in decode_runs),
        preemptions=0,
        steps=sum(r.steps for r in decode_runs),
        busy_s=busy,
        offered_rate=rate,
        prompt_mean=sum(prompts) / len(prompts),
        waiting_at_last_arrival=waiting,
        user_rate_s=outs / (fin - arr),
        arrival_s=arr,
        first_s=fst,
        finish_s=fin,
        outputs=outs,
    )


@dataclass(frozen=True)
class DeploymentComparison:
    """The largest Poisson rate each deployment serves within the budget on the same GPUs, and its tokens/s per GPU
    (None where no rate meets it): the rate times the mean answer over the GPUs, since a run that keeps up serves
    what it is offered (a run's own tokens/s also counts its ramp-up and its drain, longer for a longer tail)."""

    gpus: int
    split: Split
    link: KVLink
    aggregated_replicas: int
    aggregated_rate: float | None
    aggregated: Result | None  # one replica at its share of the rate
    disaggregated_rate: float | None
    disaggregated: Disaggregated | None
    tensor_parallel: int

    @property
    def aggregated_per_gpu(self) -> float | None:
        return _per_gpu(self.aggregated_rate, self.aggregated, self.gpus)

    @property
    def disaggregated_per_gpu(self) -> float | None:
        run = None if self.disaggregated is None else self.disaggregated.result
        return _per_gpu(self.disaggregated_rate, run, self.gpus)

    @property
    def winner(self) -> str | None:
        """'aggregated' or 'disaggregated': the one that meets the budget with more tokens/s per GPU."""
        a, d = self.aggregated_per_gpu, self.disaggregated_per_gpu
        if a is None and d is None:
            return None
        if d is None or (a is not None and a >= d):
            return "aggregated"
        return "disaggregated"


def _per_gpu(rate: float | None, run: Result | None, gpus: int) -> float | None:
    if rate is None or run is None:
        return None
    return rate * run.output_tokens / run.requests / gpus


def compare(
    step: RooflineStep,
    engine: Engine,
    prompt: Lengths,
    output: Lengths,
    budget: Budget,
    split: Split,
    link: KVLink,
    *,
    n_requests: int = 1000,
    seed: int = 0,
) -> DeploymentComparison:
    """Aggregated against disaggregated serving on split.gpus GPUs, each at the largest Poisson rate that meets
    `budget`. Aggregated: split.gpus / tensor_parallel replicas of the engine, each at its share of the rate;
    disaggregated: `split`; every engine with `engine`'s settings."""
    tp = split.tensor_parallel
    replicas = split.gpus // tp
    alone = _one_at_a_time_rate(step, engine, prompt, output, seed)
    one_rate, aggregated = largest_rate(step, engine, prompt, output, budget, alone, n_requests=n_requests, seed=seed)
    rate = None if one_rate is None else one_rate * replicas

    def run(r: float) -> Result:
        return simulate_disaggregated(step, engine, prompt, output, split, link, n_requests=n_requests,
                                      rate_per_s=r, seed=seed).result  # fmt: skip

    start = rate if rate else alone * split.decode
    d_rate, _ = largest_rate_of(run, budget, start)
    disaggregated = None
    if d_rate is not None:
        disaggregated = simulate_disaggregated(step, engine, prompt, output, split, link, n_requests=n_requests,
                                               rate_per_s=d_rate, seed=seed)  # fmt: skip
    return DeploymentComparison(split.gpus, split, link, replicas, rate, aggregated, d_rate, disaggregated, tp)


def _one_at_a_time_rate(step: RooflineStep, engine: Engine, prompt: Lengths, output: Lengths, seed: int) -> float:
    """Requests/s of one client served alone: where a search for a rate starts when no other start is known."""
    one = simulate(step, engine, prompt, output, n_requests=8, clients=1, seed=seed)
    return one.requests_per_s


def explain_comparison(c: DeploymentComparison, budget: Budget) -> str:
    """One paragraph: each deployment's answer and which meets the budget with more tokens/s per GPU."""

    def said(rate: float | None, result: Result | None, per_gpu: float | None, what: str) -> str:
        if rate is None or result is None:
            return f"{what} meets it at no rate"
        return (
            f"{what} meets it up to about {rate:.2f} requests/s ({per_gpu:,.0f} output tokens/s per GPU; p"
            f"{budget.percentile:g} time to first token {result.percentile('ttft', budget.percentile) * 1e3:,.0f} ms, "
            f"per output token {result.percentile('tpot', budget.percentile) * 1e3:.1f} ms)"
        )

    a = said(c.aggregated_rate, c.aggregated, c.aggregated_per_gpu,
             f"Aggregated serving ({c.aggregated_replicas} replicas of {c.tensor_parallel} GPU"
             f"{'s' * (c.tensor_parallel > 1)})")  # fmt: skip
    d_result = None if c.disaggregated is None else c.disaggregated.result
    d = said(c.disaggregated_rate, d_result, c.disaggregated_per_gpu, f"disaggregated ({c.split.describe()})")
    transfer = ""
    if c.disaggregated is not None:
        transfer = (
            f" A prompt's KV cache takes {float(np.median(c.disaggregated.transfer_s)) * 1e3:.2f} ms (median) over "
            f"{c.link.describe()}."
        )
    verdict = {
        None: "Neither meets it.",
        "aggregated": "Aggregated serving meets it with more tokens/s per GPU.",
        "disaggregated": "Disaggregated serving meets it with more tokens/s per GPU.",
    }[c.winner]
    return f"On {c.gpus} GPUs, for {budget.describe()}: {a}; {d}.{transfer} {verdict}"
