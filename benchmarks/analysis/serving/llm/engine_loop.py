"""Serving a language model with continuous batching: an iteration-level simulator of an LLM engine.

An engine such as vLLM, TensorRT-LLM or SGLang does not serve fixed batches: at every step it runs one forward
pass over the sequences it holds, adding new ones and retiring finished ones between steps. This module
simulates that loop, request by request and step by step, from a step time that comes from the roofline:

- **requests** have a prompt and an output length (fixed, uniform, log-normal or listed) and arrive as a
  Poisson process or from N clients that each send the next request when the last one ends (closed loop);
- **scheduling** is per step, with a cap on running sequences (`max_num_seqs`) and on tokens per step
  (`max_num_batched_tokens`). Without chunked prefill, waiting prompts get priority: a step either prefills
  whole prompts or decodes every running sequence (vLLM's default before chunked prefill). With chunked
  prefill, every step decodes all running sequences first and fills the rest of its token budget with
  pieces of prompts;
- **the KV cache** is held in blocks (16 tokens by default) in the memory the weights leave; a request is
  admitted only when blocks for its prompt are free, and when a running sequence needs a block that is not
  there, the most recently admitted sequence is preempted (its blocks freed, its prompt and the tokens it has
  emitted computed again later, as vLLM's recompute preemption does);
- **a step's time** is the decode page's per-operation sum: the matrix products (every weight read once for
  the whole step, 2 FLOPs per weight per token, plus the output head for each sequence that samples a token)
  then the attention (every sequence reads its own cache), each at max(FLOPs / peak rate, bytes / bandwidth),
  plus a stated fixed cost per step, all divided by a stated efficiency (1: the roofline itself).

Tensor parallelism over n GPUs is modelled as one device with n times the rate, the bandwidth and the memory,
plus the all-reduces between the GPUs: two a layer of tokens × d_model activations, by the ring algorithm over the
GPU's NVLink (PCIe where it has none) with a per-call latency (`benchmarks.analysis.roofline.cost_model`), as a part of
the step of their own. Imbalance between the GPUs is left out. A mixture of experts reads, each step, the weights
of the experts its tokens touch (their expected number under uniform or skewed routing), plus the shared parts.
The KV cache may have a dtype of its own. With a shared prompt prefix the engine caches its blocks
(`benchmarks.analysis.serving.llm.prefix_cache`): a prompt that begins with cached blocks is computed from after
them, and they are held once. Pipeline parallelism and speculative decoding are not modelled.

Pure Python and numpy, deterministic under a seed: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np

from benchmarks.analysis.roofline.cited_figures import KERNEL_LAUNCH_S
from benchmarks.analysis.roofline.cost_model import (
    ALLREDUCE_LATENCY_S,
    ALLREDUCES_PER_LAYER,
    busiest_gpu_experts,
    busiest_gpu_share,
    expected_distinct_experts,
    expert_blocks,
    tensor_parallel_seconds,
)
from benchmarks.analysis.roofline.decode import DecodeTerms, decode_terms
from benchmarks.analysis.serving.arrivals import poisson_arrivals
from benchmarks.analysis.serving.llm.prefix_cache import PrefixCache, SharedPrefix
from benchmarks.contract.inputs import LENGTHS_LIMIT, InputError, read_text_bounded
from benchmarks.gpus import BYTES_PER_ELEMENT, GPU
from benchmarks.llm_models import PublishedModel, model_weight_bytes
from snippets.costs import FFN_MATRICES

BLOCK_TOKENS = 16  # vLLM's default block size
MEMORY_FRACTION = 0.9  # vLLM's default gpu_memory_utilization
# The kernels one decoder layer launches in this model of a step: its four matrix products and its attention, and
# the elementwise passes between them (two norms and the activation), one launch each. A count of operations, not
# of any engine's kernels: engines fuse some (a norm into a projection) and split others.
LAYER_KERNELS = (
    "attention norm",
    "QKV projection",
    "attention",
    "output projection",
    "MLP norm",
    "gate-up projection",
    "activation",
    "down projection",
)
KERNELS_PER_LAYER = len(LAYER_KERNELS)
MAX_REQUESTS = 200_000
MAX_LENGTH = 10_000_000
# The decode batch sizes vLLM captures CUDA graphs for, up to max_num_seqs rounded up to a multiple of 8
# (vllm/worker/model_runner.py, https://github.com/vllm-project/vllm/pull/7894, merged 2024-08-29: “Capture graphs
# for token size 1, 2, 4, 8, 16, 24, 32, 40, ..., 256.”, `_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [_BATCH_SIZE_ALIGNMENT
# * i for i in range(1, 1025)]`, `_BATCH_SIZE_ALIGNMENT = 8`). TensorRT-LLM pads the same way with its own list when
# asked (https://nvidia.github.io/TensorRT-LLM/llm-api/reference/DecodeCudaGraphConfig.html, enable_padding: “If
# true, batches are rounded up to the nearest cuda_graph_batch_size.”).
GRAPH_ALIGNMENT = 8
VECTOR_STEPS = 16  # from this many decode steps at once, a step model's decode_run_seconds times them in numpy


# --------------------------------------------------------------------------- the step time


@dataclass(frozen=True)
class StepWork:
    """What one step computes, summed over its sequences.

    tokens: new tokens through the matrix products (1 per decoding sequence, a chunk's length per prefill);
    logits: sequences that sample a token this step (the output head runs only for them);
    attended: (query token, cached position) pairs, each 4·layers·heads·head_dim FLOPs;
    kv_positions: cached positions read or written, each κ bytes.
    """

    tokens: int
    logits: int
    attended: float
    kv_positions: float


@dataclass(frozen=True)
class StepTime:
    """The roofline of a step: max(compute, memory) for the matrix products, then for the attention."""

    matmul_s: float
    attention_s: float
    fixed_s: float
    efficiency: float
    matmul_bound: str
    attention_bound: str
    communication_s: float = 0.0  # tensor parallelism's all-reduces, on the link between the GPUs

    @property
    def seconds(self) -> float:
        return self.fixed_s + (self.matmul_s + self.attention_s + self.communication_s) / self.efficiency


def vllm_graph_sizes(max_num_seqs: int) -> tuple[int, ...]:
    """The batch sizes vLLM captures for a running-sequence cap: 1, 2, 4, then every multiple of 8 up to the cap
    rounded up to one."""
    if max_num_seqs <= 4:
        top = min(n for n in (1, 2, 4) if n >= max_num_seqs)
        return tuple(n for n in (1, 2, 4) if n <= top)
    top = -(-max_num_seqs // GRAPH_ALIGNMENT) * GRAPH_ALIGNMENT
    return (1, 2, 4, *range(GRAPH_ALIGNMENT, top + 1, GRAPH_ALIGNMENT))


def padded_batches(sizes: Sequence[int], largest: int) -> list[int]:
    """For every decode batch 0..largest, the captured size it runs at: the smallest size that holds it, or itself
    beyond the largest size (run without a graph)."""
    ordered = sorted(set(sizes))
    table, k = [], 0
    for n in range(largest + 1):
        while k < len(ordered) and ordered[k] < n:
            k += 1
        table.append(ordered[k] if k < len(ordered) and n > 0 else n)
    return table


def step_terms(model: PublishedModel, dense: DecodeTerms, s: float, kv_s: float) -> DecodeTerms:
    """A step's terms for `model`: for a mixture of experts, the FLOPs of the k experts a token uses and the bytes of
    the parts every step reads (attention, norms, router, shared expert; the routed experts are read as touched);
    the KV cache in `kv_s` bytes an element."""
    c, e = model.config, model.experts
    kv = dense.kv_bytes_per_position * kv_s / s
    if e is None:
        return dataclasses.replace(dense, kv_bytes_per_position=kv)
    d, one_ffn = c.d_model, FFN_MATRICES[c.ffn] * c.d_model * c.d_ff
    shared = e.shared_elements(d) + e.router_elements(d)
    active = dense.matmul_weights + c.layers * (e.top_k * e.expert_elements(d) + shared - one_ffn)
    always_read = dense.weight_bytes + s * c.layers * (shared - one_ffn)
    per_token = 6 * d + e.top_k * 3 * (d + e.expert_d_ff) + (3 * (d + e.shared_d_ff) if e.shared_d_ff else 0)
    return dataclasses.replace(
        dense,
        matmul_weights=active,
        weight_bytes=always_read,
        kv_bytes_per_position=kv,
        activation_bytes_per_token=s * c.layers * per_token,
    )


@runtime_checkable
class StepModel(Protocol):
    """What the engine asks of a device, and all it asks: the seconds of one step and how many KV blocks fit. The
    datasheet's (RooflineStep), the calibrated forecast (forecast_step.ForecastStep) and a measured decoder's
    (measured_step.MeasuredStep) each give both."""

    def step_seconds(
        self, decoders: int, positions: float, prefill_tokens: int, prefill_attended: float, prefill_positions: float,
        logits: int,
    ) -> float:  # fmt: skip
        """A step of `decoders` decoding sequences over `positions` cached positions in all, and prompt pieces of
        `prefill_tokens` tokens (attending over `prefill_attended` pairs, touching `prefill_positions` positions);
        `logits` sequences sample a token."""
        ...

    def kv_blocks(self, memory_fraction: float = ..., block_tokens: int = ...) -> int:
        """The KV-cache blocks of `block_tokens` tokens that fit in `memory_fraction` of the device's memory."""
        ...

    def describe(self) -> str:
        """The step in words, for a result's provenance."""
        ...


class RooflineStep:
    """Step times of one decoder on one GPU kind (n of them in tensor parallel), from the datasheet.

    `fixed_s` is a cost paid by every step whatever it holds (kernel launches, the scheduler, sampling); by
    default one published kernel launch time (about 3 µs) for each of KERNELS_PER_LAYER kernels in every layer.
    `efficiency` divides the roofline time: 1 is the roofline; a published system's share of it (e.g. 0.5) gives
    a slower, more realistic step. Both are stated with every result.

    `kv_dtype` stores the cache in a dtype of its own (default `dtype`); `communication` (on by default) counts
    tensor parallelism's all-reduces; `routing_skew` makes a mixture of experts' router favour some experts
    (`benchmarks.analysis.roofline.cost_model.routing_shares`), touching fewer of them. `expert_parallel` places
    whole experts on the tensor-parallel GPUs instead of a slice of each (`cost_model.busiest_gpu_experts`): the
    attention stays tensor parallel and the all-reduces are counted as before.
    """

    timed_on = "on the roofline"  # what a step's time is, in words (a forecast step says its own)

    def __init__(
        self,
        model: PublishedModel,
        gpu: GPU,
        dtype: str,
        *,
        tensor_parallel: int = 1,
        fixed_s: float | None = None,
        efficiency: float = 1.0,
        kv_dtype: str | None = None,
        communication: bool = True,
        routing_skew: float = 0.0,
        expert_parallel: bool = False,
    ):
        if dtype not in gpu.peak_flops:
            raise ValueError(f"the {gpu.name} datasheet gives no {dtype} rate; it gives {', '.join(gpu.peak_flops)}")
        if tensor_parallel < 1:
            raise ValueError("tensor_parallel must be at least 1")
        if not 0 < efficiency <= 1:
            raise ValueError("efficiency must be above 0 and at most 1")
        if kv_dtype is not None and kv_dtype not in BYTES_PER_ELEMENT:
            raise ValueError(f"unknown KV-cache dtype {kv_dtype!r}; choose from {', '.join(BYTES_PER_ELEMENT)}")
        if tensor_parallel > 1 and communication and gpu.interconnect is None:
            raise ValueError(f"the {gpu.name} entry names no interconnect for tensor parallelism")
        self.model, self.gpu, self.dtype = model, gpu, dtype
        self.kv_dtype = kv_dtype or dtype
        self.tensor_parallel = tensor_parallel
        self.bytes_per_element = BYTES_PER_ELEMENT[dtype]
        self.flops_per_s = gpu.peak_flops[dtype] * tensor_parallel
        self.bytes_per_s = gpu.bandwidth * tensor_parallel
        self.memory_bytes = (gpu.memory_bytes or 0) * tensor_parallel
        self.communication = communication and tensor_parallel > 1
        self.routing_skew = routing_skew
        if expert_parallel and (model.experts is None or tensor_parallel < 2):
            raise ValueError("expert parallelism needs a mixture of experts on at least 2 GPUs (--tp 2 or more)")
        if expert_parallel:
            expert_blocks(model.experts.experts, tensor_parallel)  # ValueError when they do not split evenly
        self.expert_parallel = expert_parallel
        c = model.config
        params = {"layers": c.layers, "d_model": c.d_model, "heads": c.heads, "kv_heads": c.kv_heads,
                  "d_ff": c.d_ff, "ffn": c.ffn}  # fmt: skip
        self.terms: DecodeTerms = step_terms(model, decode_terms(params, self.bytes_per_element),
                                             self.bytes_per_element, BYTES_PER_ELEMENT[self.kv_dtype])  # fmt: skip
        s = self.bytes_per_element
        self.expert_bytes = s * model.experts.expert_elements(c.d_model) if model.experts else 0.0
        # the matmul FLOPs count as if the busiest GPU's share of the routed experts' work were every GPU's: under
        # expert parallelism a skewed router loads one block of experts more (1 without expert parallelism)
        self.matmul_weights = self.terms.matmul_weights
        if expert_parallel:
            e = model.experts
            routed = c.layers * e.top_k * e.expert_elements(c.d_model)
            busiest = tensor_parallel * busiest_gpu_share(e.experts, tensor_parallel, routing_skew)
            self.matmul_weights += (busiest - 1) * routed
        self.head_elements = model.vocab * c.d_model  # the output head: vocab × d_model, read once a step
        self.step_weight_bytes = self.terms.weight_bytes + s * self.head_elements
        self.weight_bytes = model_weight_bytes(model, s)  # held in memory: with the input embedding too
        default_fixed = KERNEL_LAUNCH_S.value * KERNELS_PER_LAYER * c.layers
        self.fixed_s = default_fixed if fixed_s is None else fixed_s
        self.efficiency = efficiency

    @property
    def kv_bytes_per_token(self) -> int:
        return self.terms.kv_bytes_per_position

    @functools.lru_cache(maxsize=8192)  # noqa: B019 (one step model lives as long as its simulations)
    def _busiest_touched(self, tokens: float) -> float:
        e = self.model.experts
        return busiest_gpu_experts(tokens, e.experts, e.top_k, self.tensor_parallel, self.routing_skew)

    def expert_read_bytes(self, tokens: float) -> float:
        """Bytes of routed experts a step of `tokens` tokens reads: in every layer, each expert its tokens touch."""
        if not self.model.experts:
            return 0.0
        e = self.model.experts
        if self.expert_parallel:  # every GPU waits for the one with the most touched experts
            touched = self.tensor_parallel * self._busiest_touched(tokens)
        else:  # each expert is split over the GPUs: the touched ones are read evenly
            touched = expected_distinct_experts(tokens, e.experts, e.top_k, self.routing_skew)
        return self.model.config.layers * touched * self.expert_bytes

    def communication_s(self, tokens: float) -> float:
        """The all-reduces of a step of `tokens` tokens between the tensor-parallel GPUs; 0 on one GPU."""
        if not self.communication:
            return 0.0
        c = self.model.config
        gpus, link = self.tensor_parallel, self.gpu.interconnect
        return tensor_parallel_seconds(c.layers, tokens, c.d_model, gpus, link, self.bytes_per_element)

    def detail(self, work: StepWork) -> StepTime:
        t = self.terms
        mm_flops = 2 * self.matmul_weights * work.tokens + 2 * self.head_elements * work.logits
        mm_bytes = (
            self.step_weight_bytes + self.expert_read_bytes(work.tokens) + t.activation_bytes_per_token * work.tokens
        )
        mm_c, mm_m = mm_flops / self.flops_per_s, mm_bytes / self.bytes_per_s
        at_c = t.attention_flops_per_position * work.attended / self.flops_per_s
        at_m = t.kv_bytes_per_position * work.kv_positions / self.bytes_per_s
        return StepTime(
            max(mm_c, mm_m),
            max(at_c, at_m),
            self.fixed_s,
            self.efficiency,
            "compute" if mm_c >= mm_m else "memory",
            "compute" if at_c >= at_m else "memory",
            self.communication_s(work.tokens),
        )

    def seconds(self, tokens: int, logits: int, attended: float, kv_positions: float) -> float:
        """The hot path of the simulator: `detail(...).seconds` without building objects."""
        t = self.terms
        weights = self.step_weight_bytes + (self.expert_read_bytes(tokens) if self.expert_bytes else 0.0)
        mm = max(
            (2 * self.matmul_weights * tokens + 2 * self.head_elements * logits) / self.flops_per_s,
            (weights + t.activation_bytes_per_token * tokens) / self.bytes_per_s,
        )
        at = max(
            t.attention_flops_per_position * attended / self.flops_per_s,
            t.kv_bytes_per_position * kv_positions / self.bytes_per_s,
        )
        link = self.communication_s(tokens) if self.communication else 0.0
        return self.fixed_s + (mm + at + link) / self.efficiency

    def decode_run_seconds(self, decoders: int, positions: np.ndarray, padding: int) -> np.ndarray:
        """`step_seconds(decoders, p, padding, 0.0, 0.0, decoders + padding)` for every p of `positions`: steps
        that only decode, whose matrix products and all-reduces are the same for all; equal to the last bit."""
        t, tokens = self.terms, decoders + padding
        weights = self.step_weight_bytes + (self.expert_read_bytes(tokens) if self.expert_bytes else 0.0)
        mm = max(
            (2 * self.matmul_weights * tokens + 2 * self.head_elements * tokens) / self.flops_per_s,
            (weights + t.activation_bytes_per_token * tokens) / self.bytes_per_s,
        )
        at = np.maximum(
            t.attention_flops_per_position * positions / self.flops_per_s,
            t.kv_bytes_per_position * positions / self.bytes_per_s,
        )
        link = self.communication_s(tokens) if self.communication else 0.0
        return self.fixed_s + (mm + at + link) / self.efficiency

    def step_seconds(
        self,
        decoders: int,
        positions: float,
        prefill_tokens: int,
        prefill_attended: float,
        prefill_positions: float,
        logits: int,
    ) -> float:
        """A step of `decoders` decoding sequences attending over `positions` cached positions in all, and prompt
        pieces of `prefill_tokens` tokens (attending over `prefill_attended` pairs, touching `prefill_positions`
        cached positions); `logits` sequences sample a token."""
        return self.seconds(decoders + prefill_tokens, logits, positions + prefill_attended,
                            positions + prefill_positions)  # fmt: skip

    def decode_work(self, batch: int, context: float) -> StepWork:
        """A decode step of `batch` sequences that each hold `context` tokens before it."""
        return StepWork(batch, batch, batch * (context + 1), batch * (context + 1))

    def prefill_work(self, prompt: int) -> StepWork:
        """A prefill of one whole prompt of `prompt` tokens (causal attention: token i sees i positions)."""
        return StepWork(prompt, 1, prompt * (prompt + 1) / 2, prompt)

    def kv_blocks(self, memory_fraction: float = MEMORY_FRACTION, block_tokens: int = BLOCK_TOKENS) -> int:
        """Blocks of `block_tokens` positions the cache holds: the memory an engine may use, less the weights.
        Activations and workspace are taken to fit in the rest (1 − memory_fraction)."""
        free = self.memory_bytes * memory_fraction - self.weight_bytes
        return max(0, int(free // (self.kv_bytes_per_token * block_tokens)))

    def describe(self) -> str:
        tp = ""
        if self.tensor_parallel > 1 and self.communication:
            link = self.gpu.interconnect
            tp = (
                f" × {self.tensor_parallel} (tensor parallel: {ALLREDUCES_PER_LAYER} ring all-reduces a layer over "
                f"{link.name}, {link.bidirectional_bytes_per_s / 1e9:,.0f} GB/s both ways, each "
                f"{ALLREDUCE_LATENCY_S.value * 1e6:g} µs of latency, an assumed figure)"
            )
        elif self.tensor_parallel > 1:
            tp = f" × {self.tensor_parallel} (tensor parallel, no communication counted)"
        kv = f", KV cache in {self.kv_dtype}" if self.kv_dtype != self.dtype else ""
        moe = ""
        if self.model.experts:
            e = self.model.experts
            skew = f", routing skew {self.routing_skew:g}" if self.routing_skew else ", uniform routing"
            moe = f", reading the experts a step's tokens touch (top-{e.top_k} of {e.experts}{skew})"
            if self.expert_parallel:
                n = self.tensor_parallel
                moe += (
                    f", expert parallel: {e.experts // n} whole experts on each of the {n} GPUs, in order, every "
                    "step waiting for the GPU that reads the most of them and does the most routed work"
                )
        return (
            f"{self.model.name} in {self.dtype}{kv} on {self.gpu.name}{tp}: roofline of the datasheet "
            f"({self.flops_per_s / 1e12:,.0f} TFLOP/s, {self.bytes_per_s / 1e12:.2f} TB/s), matrix products then "
            f"attention{moe}, plus {self.fixed_s * 1e3:.2f} ms fixed per step, at efficiency {self.efficiency:g}"
        )


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Lengths:
    """Token lengths of requests: fixed, uniform (low..high), log-normal (a mean and σ of log) or listed."""

    kind: str  # fixed, uniform, lognormal, listed
    low: int = 0
    high: int = 0
    mean: float = 0.0
    sigma: float = 0.0
    values: tuple[int, ...] = ()

    @classmethod
    def fixed(cls, n: int) -> Lengths:
        return cls("fixed", low=n, high=n, mean=n)

    @classmethod
    def uniform(cls, low: int, high: int) -> Lengths:
        return cls("uniform", low=low, high=high, mean=(low + high) / 2)

    @classmethod
    def lognormal(cls, mean: float, sigma: float, high: int) -> Lengths:
        """Log-normal with this mean (in tokens) and σ of the logarithm, clipped to 1..high."""
        return cls("lognormal", low=1, high=high, mean=mean, sigma=sigma)

    @classmethod
    def listed(cls, values: Sequence[int]) -> Lengths:
        found = tuple(int(v) for v in values)
        return cls("listed", low=min(found), high=max(found), mean=sum(found) / len(found), values=found)

    @classmethod
    def from_file(cls, path: Path | str) -> Lengths:
        """One whole number a line (blank lines and lines starting with # skipped). ValueError otherwise (also for
        a file that is not a regular text file of at most LENGTHS_LIMIT bytes)."""
        path = Path(path)
        values = []
        try:
            text = read_text_bounded(path, kind="token-length file", limit_bytes=LENGTHS_LIMIT)
        except InputError as exc:
            raise ValueError(str(exc)) from None
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if not (line.isascii() and line.isdigit()) or not 1 <= int(line) <= MAX_LENGTH:
                raise ValueError(f"{path}: line {number}: must be a whole number of tokens from 1 to {MAX_LENGTH:,}")
            values.append(int(line))
        if not values:
            raise ValueError(f"{path}: holds no lengths")
        return cls.listed(values)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "fixed":
            return np.full(n, self.low, dtype=np.int64)
        if self.kind == "uniform":
            return rng.integers(self.low, self.high + 1, size=n)
        if self.kind == "lognormal":
            mu = math.log(self.mean) - self.sigma**2 / 2
            return np.clip(np.rint(rng.lognormal(mu, self.sigma, size=n)), 1, self.high).astype(np.int64)
        return rng.choice(np.array(self.values, dtype=np.int64), size=n)

    def describe(self) -> str:
        if self.kind == "fixed":
            return f"{self.low:,}"
        if self.kind == "uniform":
            return f"uniform {self.low:,}–{self.high:,}"
        if self.kind == "lognormal":
            return f"log-normal, mean {self.mean:,.0f}, σ {self.sigma:g} (at most {self.high:,})"
        return f"{len(self.values):,} listed lengths, mean {self.mean:,.0f}"


# --------------------------------------------------------------------------- the engine


@dataclass(frozen=True)
class Engine:
    """The settings an engine's users tune (vLLM's names)."""

    max_num_seqs: int = 256
    max_batched_tokens: int = 8192
    chunked_prefill: bool = False
    reserve: bool = False  # admit only when blocks for the longest answer allowed are free (no preemption ever)
    block_tokens: int = BLOCK_TOKENS
    memory_fraction: float = MEMORY_FRACTION
    max_model_len: int | None = None  # the longest a request (prompt and answer) may be; longer ones are clipped
    prefix: SharedPrefix | None = None  # prefix caching on, for the prompt beginning the workload shares
    cuda_graphs: bool = False  # decode-only steps run on CUDA graphs of vLLM's sizes for the cap, padded up to one

    def problems(self) -> list[str]:
        found = [] if self.prefix is None else self.prefix.problems()
        if self.max_num_seqs < 1:
            found.append("max_num_seqs must be at least 1")
        if self.max_batched_tokens < 1:
            found.append("max_batched_tokens must be at least 1")
        if self.max_model_len is not None and self.max_model_len < 2:
            found.append("max_model_len must be at least 2 (a prompt token and an answer token)")
        if self.chunked_prefill and self.max_batched_tokens < self.max_num_seqs:
            found.append("with chunked prefill, max_batched_tokens must be at least max_num_seqs")
        if self.block_tokens < 1:
            found.append("block_tokens must be at least 1")
        if not 0 < self.memory_fraction <= 1:
            found.append("memory_fraction must be above 0 and at most 1")
        return found


@dataclass
class Result:
    """Per-request and per-token figures of one simulated run (seconds)."""

    ttft_s: np.ndarray  # time to first token, per request
    tpot_s: np.ndarray  # time per output token after the first, per request with more than one
    e2e_s: np.ndarray  # arrival to last token
    itl_s: np.ndarray  # every gap between two tokens of a sequence
    output_tokens: int
    requests: int
    duration_s: float  # first arrival to last token
    mean_running: float  # sequences held, averaged over time
    max_running: int
    kv_blocks: int
    kv_peak_blocks: int
    preemptions: int
    steps: int
    busy_s: float  # time spent in steps
    offered_rate: float | None = None  # requests/s offered (Poisson); None for a closed loop
    clients: int | None = None
    step_share: dict[str, float] = field(default_factory=dict)  # prefill and decode shares of the busy time
    prompt_mean: float = 0.0  # tokens, over the requests served
    waiting_at_last_arrival: int = 0  # of an open loop
    user_rate_s: np.ndarray = field(default_factory=lambda: np.array([]))  # per request: output tokens ÷ e2e
    # per request, in request order (every request, warm-up included): arrival, first token, last token, outputs
    arrival_s: np.ndarray = field(default_factory=lambda: np.array([]))
    first_s: np.ndarray = field(default_factory=lambda: np.array([]))
    finish_s: np.ndarray = field(default_factory=lambda: np.array([]))
    outputs: np.ndarray = field(default_factory=lambda: np.array([]))
    prefilled_tokens: int = 0  # prompt tokens computed (after preemptions too), not taken from the prefix cache
    prefix_hit_share: float | None = None  # blocks of the shared prefix found cached, of those asked for
    prefix_evictions: int = 0

    def percentile(self, metric: str, p: float) -> float:
        values = getattr(self, f"{metric}_s")
        return float(np.percentile(values, p)) if len(values) else math.nan

    @property
    def tokens_per_s(self) -> float:
        """Output tokens over the whole run, first arrival to last token (as benchmark clients report it)."""
        return self.output_tokens / self.duration_s

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.duration_s

    @property
    def tokens_per_s_per_user(self) -> float:
        """What one user sees while its answer streams, the first token's wait left out: 1 / the median time per
        output token after the first."""
        return 1 / float(np.median(self.tpot_s)) if len(self.tpot_s) else math.nan

    @property
    def tokens_per_s_per_user_with_first(self) -> float:
        """What one user gets from sending its request to its last token, the first token's wait included: the
        median over requests of output tokens ÷ end-to-end time."""
        return float(np.median(self.user_rate_s)) if len(self.user_rate_s) else math.nan

    @property
    def kv_peak_share(self) -> float:
        return self.kv_peak_blocks / self.kv_blocks if self.kv_blocks else math.nan

    @property
    def overloaded(self) -> bool:
        """An open loop that could not keep up: when the last request arrived, more than 5 % of all requests were
        still waiting to be admitted (a queue that grows with time)."""
        return self.offered_rate is not None and self.waiting_at_last_arrival > 0.05 * self.requests

    def summary(self) -> dict[str, float | int | bool | None]:
        found: dict[str, float | int | bool | None] = {}
        for metric in ("ttft", "tpot", "itl"):
            for p in (50, 90, 99):
                found[f"{metric}_p{p}_ms"] = self.percentile(metric, p) * 1e3
        found.update(
            tokens_per_s=self.tokens_per_s,
            tokens_per_s_per_user=self.tokens_per_s_per_user,
            tokens_per_s_per_user_with_first=self.tokens_per_s_per_user_with_first,
            requests_per_s=self.requests_per_s,
            mean_running=self.mean_running,
            max_running=self.max_running,
            kv_blocks=self.kv_blocks,
            kv_peak_share=self.kv_peak_share,
            preemptions=self.preemptions,
            steps=self.steps,
            overloaded=self.overloaded,
            prefilled_tokens=self.prefilled_tokens,
        )
        if self.prefix_hit_share is not None:
            found.update(prefix_hit_share=self.prefix_hit_share, prefix_evictions=self.prefix_evictions)
        return found


class Infeasible(ValueError):
    """A workload the engine can never serve (one line, for the command line)."""


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
    loop = _Loop(step, engine, prompts, outputs, arrivals, blocks_total, rate_per_s, clients, output_cap)
    if engine.prefix is not None:
        loop.carriers = [bool(x) for x in rng.random(n_requests) < engine.prefix.share]
        loop.cache = PrefixCache()
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
    loop = _Loop(step, engine, list(prompts), list(outputs), list(arrivals), blocks_total, rate, None, output_cap)
    loop.prefilled_arrivals = prefilled
    if engine.prefix is not None:
        loop.carriers = list(carriers) if carriers is not None else [False] * len(prompts)
        loop.cache = PrefixCache()
    result = loop.run()
    return Served(list(loop.first), list(loop.finish), result)


def clip_pairs(prompts: list[int], outputs: list[int], longest: int) -> tuple[list[int], list[int]]:
    """Each request clipped to `longest` tokens in all, as an engine's max_model_len bounds it: a prompt to
    `longest` - 1 (one token of answer at least), then its answer to what is left."""
    clipped = [min(p, longest - 1) for p in prompts]
    return clipped, [min(o, longest - p) for p, o in zip(clipped, outputs)]


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


class _Loop:
    """The step loop. Sequences are request indices; every list below is indexed by request."""

    __slots__ = (  # the state every step reads: slots read a little faster than an instance's dictionary
        "_cursor",
        "arrivals",
        "blocks",
        "blocks_total",
        "busy",
        "cache",
        "carriers",
        "clients",
        "computed",
        "done",
        "emitted",
        "engine",
        "finish",
        "first",
        "free",
        "issued",
        "itl",
        "last",
        "max_running",
        "now",
        "output_cap",
        "outputs",
        "pad",
        "peak_blocks",
        "pending",
        "preemptions",
        "prefill_time",
        "prefilled",
        "prefilled_arrivals",
        "prefix_blocks",
        "prompts",
        "rate",
        "running",
        "running_area",
        "shared",
        "start",
        "step",
        "steps",
        "target",
        "waiting",
        "waiting_at_last_arrival",
    )  # fmt: skip

    def __init__(self, step, engine, prompts, outputs, arrivals, blocks_total, rate, clients, output_cap):
        self.step, self.engine = step, engine
        self.prompts, self.outputs, self.arrivals = prompts, outputs, arrivals
        self.blocks_total, self.rate, self.clients = blocks_total, rate, clients
        self.output_cap = output_cap  # the longest answer allowed (what `reserve` holds blocks for)
        n = len(prompts)
        self.target = list(prompts)  # tokens to prefill before decoding (after a preemption, with those emitted)
        self.computed = [0] * n  # positions in the cache
        self.emitted = [0] * n
        self.blocks = [0] * n
        self.first = [math.nan] * n
        self.last = [0.0] * n
        self.finish = [math.nan] * n
        self.itl = array("d")
        self.waiting_at_last_arrival = 0
        # the queues: requests released in `pending` order (arrival order; a closed loop's in index order)
        self.pending = sorted(range(n), key=lambda i: arrivals[i]) if rate is not None else list(range(n))
        self.issued = 0
        self.waiting: deque[int] = deque()
        self.running: list[int] = []  # in admission order
        self.free = blocks_total  # always the total less the blocks the running sequences hold
        self._cursor = 0
        # the clock and what the result reports
        self.start = self.now = min(arrivals)
        self.done, self.steps, self.preemptions = 0, 0, 0
        self.busy, self.prefill_time, self.running_area = 0.0, 0.0, 0.0
        self.peak_blocks, self.max_running = 0, 0
        self.prefilled = 0
        self.prefilled_arrivals = False  # requests come with their prompt's cache and first token (a decode engine)
        # a decode-only step of n sequences runs at the captured size pad[n] (the padding rows cost matrix products)
        cap = engine.max_num_seqs
        self.pad = padded_batches(vllm_graph_sizes(cap), cap) if engine.cuda_graphs else None
        # prefix caching (set by simulate when the engine has it): who carries the prefix, the cached blocks each
        # sequence references, and how many whole prefix blocks its prompt holds
        self.cache: PrefixCache | None = None
        self.carriers: list[bool] = []
        self.shared: list[list[int]] = [[] for _ in range(n)] if engine.prefix is not None else []
        self.prefix_blocks = [0] * n if engine.prefix is not None else []

    def run(self) -> Result:
        """Every step: queue the arrivals, schedule the step's tokens, run it (or several plain decode steps at
        once), record it, then retire the sequences that finished."""
        n = len(self.prompts)
        while self.done < n:
            self._release_arrivals()
            if not self.running and not self.waiting:
                self.now = self.arrivals[self.pending[self.issued]]
                continue
            decoders, chunks = self._schedule()
            if not decoders and not chunks:
                if not self.running:
                    raise Infeasible("a waiting request can never be admitted")  # simulate's checks rule it out
                self._preempt_newest()  # prompts part-way through hold every free block
                continue
            if not chunks and len(decoders) == len(self.running) and self._decode_in_bulk(decoders):
                continue
            dt = self._step_seconds(decoders, chunks)
            self._record(dt, len(self.running) * dt, 1)
            if chunks and not decoders:
                self.prefill_time += dt
            self._retire(self._advance(decoders, chunks))
        return self._result()

    def _release_arrivals(self) -> None:
        """Queue the requests that have arrived by now."""
        arrivals, pending, waiting, n = self.arrivals, self.pending, self.waiting, len(self.pending)
        while self.issued < n and arrivals[pending[self.issued]] <= self.now:
            waiting.append(pending[self.issued])
            self.issued += 1
            if self.issued == n:
                self.waiting_at_last_arrival = len(waiting)

    def _schedule(self) -> tuple[list[int], list[tuple[int, int]]]:
        """The step's tokens: the sequences that decode one, and the prompt pieces (sequence, tokens) it computes.
        Without chunked prefill, waiting prompts come first: a step that admits any prefills whole prompts only.
        Otherwise every sequence that holds its prompt decodes (preempting while blocks run short) and, with
        chunked prefill, pieces of prompts fill the rest of the token budget."""
        e, computed, target = self.engine, self.computed, self.target
        if self.prefilled_arrivals:
            self._admit_prefilled()
            return self._grow_caches([i for i in self.running if computed[i] >= target[i]]), []
        decoders = [i for i in self.running if computed[i] >= target[i]]
        chunks: list[tuple[int, int]] = []
        if not e.chunked_prefill and self.waiting:
            self._admit(e.max_batched_tokens, chunks, whole=True)
            if chunks:
                return [], chunks
        decoders = self._grow_caches(decoders)
        if e.chunked_prefill:
            budget = self._continue_prompts(e.max_batched_tokens - len(decoders), chunks)
            self._admit(budget, chunks, whole=False)
        return decoders, chunks

    def _admit(self, budget: int, chunks: list[tuple[int, int]], *, whole: bool) -> int:
        """Admit waiting requests, oldest first, while the running-sequence cap, the token budget and the free blocks
        allow, each with its whole prompt (`whole`) or the piece of it the budget leaves. Returns the budget left."""
        bt, cap, target = self.engine.block_tokens, self.engine.max_num_seqs, self.target
        waiting, running = self.waiting, self.running
        while waiting and budget > 0 and len(running) < cap:
            i = waiting[0]
            cached, pinned = self._cached_beginning(i)
            left = target[i] - cached * bt
            take = left if whole else min(left, budget)
            held = -(-self._held_at_admission(i, cached * bt + take) // bt)
            need = held - cached + pinned
            if take > budget or need > self.free:
                break
            waiting.popleft()
            running.append(i)
            self.free -= need
            self.blocks[i] = held
            if self.cache is not None and self.carriers[i]:
                self._take_cached(i)
            chunks.append((i, take))
            budget -= take
        return budget

    def _admit_prefilled(self) -> None:
        """A decode engine's admission: requests whose prompt's cache came from a prefill engine, oldest first, each
        once blocks for its prompt and the longest answer allowed are free. Its first token came with the cache."""
        bt, cap, waiting, running = self.engine.block_tokens, self.engine.max_num_seqs, self.waiting, self.running
        while waiting and len(running) < cap:
            i = waiting[0]
            need = -(-self._held_at_admission(i, self.target[i]) // bt)
            if need > self.free:
                break
            waiting.popleft()
            running.append(i)
            self.free -= need
            self.blocks[i] = need
            self.computed[i] = self.target[i]
            self.emitted[i] = 1
            self.first[i] = self.last[i] = self.now

    def _cached_beginning(self, i: int) -> tuple[int, int]:
        """Prefix caching: the blocks of sequence i's prompt found in the cache, and how many of them no sequence
        holds now (counted free until taken). (0, 0) without a prefix."""
        if self.cache is None or not self.carriers[i]:
            return 0, 0
        self.cache.evict_to(self.free)
        wanted = self.engine.prefix.blocks(self.engine.block_tokens, self.target[i])
        self.prefix_blocks[i] = wanted
        found = self.cache.resident(0, wanted)
        return found, sum(1 for b in range(found) if self.cache.references[(0, b)] == 0)

    def _take_cached(self, i: int) -> None:
        """Sequence i references the prefix's cached blocks (those `_cached_beginning` found): its prefill starts
        after them."""
        taken, _ = self.cache.acquire(0, self.prefix_blocks[i])
        self.shared[i] = list(range(taken))
        self.computed[i] = taken * self.engine.block_tokens
        self.cache.evict_to(self.free)

    def _release_blocks(self, i: int) -> None:
        """Sequence i's blocks go back: its own at once, the cached ones it shared when no other sequence holds them
        (they stay cached until evicted)."""
        if self.cache is not None and self.shared[i]:
            self.free += self.blocks[i] - len(self.shared[i]) + self.cache.release(0, self.shared[i])
            self.shared[i] = []
        else:
            self.free += self.blocks[i]
        self.blocks[i] = 0

    def _publish_prefix(self, i: int, before: int) -> None:
        """Once sequence i has computed the prefix's whole blocks, those it computed itself enter the cache."""
        end = self.prefix_blocks[i] * self.engine.block_tokens
        if self.carriers[i] and before < end <= self.computed[i]:
            self.shared[i] += self.cache.publish(0, len(self.shared[i]), self.prefix_blocks[i])

    def _held_at_admission(self, i: int, tokens: int) -> int:
        """Positions to hold blocks for when sequence i is admitted with `tokens` of its prompt this step: those
        tokens, or with `reserve` the longest sequence it may become (its prompt and the longest answer the output
        lengths allow, as an engine reserves a request's max_tokens: it cannot know the answer's length)."""
        if self.engine.reserve:
            longest = self.target[i] + self.output_cap - self.emitted[i]
            return longest if self.engine.max_model_len is None else min(longest, self.engine.max_model_len)
        return tokens

    def _continue_prompts(self, budget: int, chunks: list[tuple[int, int]]) -> int:
        """With chunked prefill: the next piece of each prompt part-way through, oldest first, while the budget
        lasts. Returns the budget left."""
        computed, target = self.computed, self.target
        for i in self.running:
            if budget <= 0:
                break
            if computed[i] < target[i]:
                take = self._chunk(i, budget)
                if take:
                    chunks.append((i, take))
                    budget -= take
        return budget

    def _chunk(self, i: int, budget: int) -> int:
        """The next piece of sequence i's prompt that fits the token budget and the free blocks (taken)."""
        bt = self.engine.block_tokens
        take = min(self.target[i] - self.computed[i], budget)
        while take > 0:
            need = max(0, -(-(self.computed[i] + take) // bt) - self.blocks[i])
            if need <= self.free:
                self.blocks[i] += need
                self.free -= need
                return take
            take = min(take - 1, (self.blocks[i] + self.free) * bt - self.computed[i])
        return 0

    def _grow_caches(self, decoders: list[int]) -> list[int]:
        """Give each decoding sequence the block its next token needs, preempting the newest sequences while blocks
        run short. Returns the decoders left."""
        bt, blocks, computed = self.engine.block_tokens, self.blocks, self.computed
        while True:
            growing = [i for i in decoders if -(-(computed[i] + 1) // bt) > blocks[i]]
            if len(growing) <= self.free or not self.running:
                break
            victim = self._preempt_newest()
            decoders = [i for i in decoders if i != victim]
        for i in growing:
            blocks[i] += 1
        self.free -= len(growing)
        return decoders

    def _preempt_newest(self) -> int:
        """Preempt the most recently admitted sequence by recompute: its blocks are freed, and it waits at the head
        of the queue to compute its prompt and the tokens it has emitted again. Returns it."""
        victim = self.running.pop()
        self._release_blocks(victim)
        self.target[victim] = self.prompts[victim] + self.emitted[victim]
        self.computed[victim] = 0
        self.waiting.appendleft(victim)
        self.preemptions += 1
        return victim

    def _step_seconds(self, decoders: list[int], chunks: list[tuple[int, int]]) -> float:
        """The step's time, from what it computes: each decoding sequence attends over its cache and its new token;
        a prompt piece attends causally over the positions before it and itself; a prompt it ends samples a token."""
        computed, target = self.computed, self.target
        positions = 0.0
        for i in decoders:
            positions += computed[i] + 1
        logits = len(decoders)
        pf_tokens, pf_attended, pf_positions = 0, 0.0, 0.0
        for i, take in chunks:
            c = computed[i]
            self.prefilled += take
            pf_tokens += take
            pf_attended += take * c + take * (take + 1) / 2
            pf_positions += c + take
            if c + take >= target[i]:
                logits += 1
        if not chunks and self.pad is not None and len(decoders) < len(self.pad):
            padding = self.pad[len(decoders)] - len(decoders)
            return self.step.step_seconds(len(decoders), positions, padding, 0.0, 0.0, logits + padding)
        return self.step.step_seconds(len(decoders), positions, pf_tokens, pf_attended, pf_positions, logits)

    def _record(self, seconds: float, area: float, steps: int) -> None:
        """Move the clock past `steps` steps that took `seconds`, and keep the run's totals and peaks (`area`: the
        running sequences integrated over the time)."""
        self.running_area += area
        if self.cache is not None:
            self.cache.evict_to(self.free)
        self.max_running = max(self.max_running, len(self.running))
        self.peak_blocks = max(self.peak_blocks, self.blocks_total - self.free)
        self.now += seconds
        self.busy += seconds
        self.steps += steps

    def _advance(self, decoders: list[int], chunks: list[tuple[int, int]]) -> list[int]:
        """After a step: each decoding sequence emits a token; each prompt piece is in the cache, and a prompt it
        ends emits its first token (after a preemption, its next). Returns the sequences that finished."""
        now, itl, last = self.now, self.itl, self.last
        computed, emitted, outputs, target = self.computed, self.emitted, self.outputs, self.target
        finished: list[int] = []
        for i in decoders:
            computed[i] += 1
            emitted[i] += 1
            itl.append(now - last[i])
            last[i] = now
            if emitted[i] >= outputs[i]:
                finished.append(i)
        for i, take in chunks:
            computed[i] += take
            if self.cache is not None:
                self._publish_prefix(i, computed[i] - take)
            if computed[i] >= target[i]:
                emitted[i] += 1
                if math.isnan(self.first[i]):
                    self.first[i] = now
                else:
                    itl.append(now - last[i])
                last[i] = now
                if emitted[i] >= outputs[i]:
                    finished.append(i)
        return finished

    def _retire(self, finished: list[int]) -> None:
        """Remove finished sequences, free their blocks; a closed loop's client sends its next request now."""
        if not finished:
            return
        gone = set(finished)
        self.running = [i for i in self.running if i not in gone]
        for i in finished:
            self._release_blocks(i)
            self.finish[i] = self.now
            self.done += 1
            if self.clients is not None:
                nxt = self._next_unscheduled()
                if nxt is not None:
                    self.arrivals[nxt] = self.now

    def _next_unscheduled(self) -> int | None:
        """For a closed loop: the lowest request index whose arrival is not yet set."""
        while self._cursor < len(self.arrivals) and self.arrivals[self._cursor] != math.inf:
            self._cursor += 1
        return self._cursor if self._cursor < len(self.arrivals) else None

    def _decode_in_bulk(self, decoders: list[int]) -> bool:
        """Run and record the decode steps `_bulk` finds can be taken at once; False when it finds none."""
        bulk = self._bulk(decoders)
        if bulk is None:
            return False
        steps, seconds, area, blocks_taken = bulk
        self.free -= blocks_taken
        self._record(seconds, area, steps)
        self._retire([i for i in decoders if self.emitted[i] >= self.outputs[i]])
        return True

    def _bulk(self, decoders: list[int]) -> tuple[int, float, float, int] | None:
        """Run several decode steps at once while nothing can change the batch: no sequence finishes before the
        last of them, the free blocks cover every block the batch needs meanwhile, and no request arrives that
        could be admitted (none can while the running-sequence cap is reached). Exactly the steps one at a time
        would give. Returns the steps taken, their seconds, the running sequences integrated over them and the
        blocks they took; None when fewer than two steps qualify."""
        outputs, emitted, computed, blocks = self.outputs, self.emitted, self.computed, self.blocks
        bt = self.engine.block_tokens
        k = min(outputs[i] - emitted[i] for i in decoders)
        if k < 2:
            return None
        need = sum(max(0, -(-(computed[i] + k) // bt) - blocks[i]) for i in decoders)
        if need > self.free:
            return None
        horizon = math.inf
        if len(self.running) < self.engine.max_num_seqs and self.issued < len(self.pending):
            horizon = self.arrivals[self.pending[self.issued]]
        d = len(decoders)
        base = sum(computed[i] + 1 for i in decoders)
        step, itl, now = self.step, self.itl, self.now
        padding = self.pad[d] - d if self.pad is not None and d < len(self.pad) else 0
        run_seconds = getattr(step, "decode_run_seconds", None)
        if run_seconds is not None and k >= VECTOR_STEPS:
            # the same sums in the same order as the loop below: accumulate adds left to right, one at a time
            gaps = run_seconds(d, (base + d * np.arange(k, dtype=np.int64)).astype(np.float64), padding)
            ends = np.add.accumulate(np.concatenate(([now], gaps)))[1:]
            crossed = np.flatnonzero(ends >= horizon)
            taken = int(crossed[0]) + 1 if crossed.size else k
            gaps = gaps[:taken]
            t, area = float(ends[taken - 1]), float(np.add.accumulate(d * gaps)[-1])
        else:
            t, area, taken, steps = now, 0.0, 0, []
            for j in range(k):
                dt = step.step_seconds(d, base + j * d, padding, 0.0, 0.0, d + padding)
                t += dt
                area += d * dt
                steps.append(dt)
                taken += 1
                if t >= horizon:
                    break
            gaps = np.array(steps)
        if taken < 2 and t < horizon:
            return None
        first = float(gaps[0])
        for i in decoders:
            itl.append(now + first - self.last[i])
        itl.frombytes(np.repeat(gaps[1:], d).tobytes())
        used = 0
        for i in decoders:
            computed[i] += taken
            emitted[i] += taken
            self.last[i] = t
            want = -(-computed[i] // bt)
            used += max(0, want - blocks[i])
            blocks[i] = max(blocks[i], want)
        return taken, t - now, area, used

    def _result(self) -> Result:
        """The run's figures, per request and in all."""
        n, clients, busy = len(self.prompts), self.clients, self.busy
        first = np.array(self.first)
        finish = np.array(self.finish)
        arr = np.array(self.arrivals)
        outs = np.array(self.outputs)
        duration = float(finish.max() - self.start)
        # A closed loop's first request from each client arrives with every other client's at once: a warm-up,
        # left out of the latencies (not of the throughput) when the run holds more than one round.
        kept = np.ones(n, dtype=bool)
        if clients is not None and n > clients:
            kept[:clients] = False
        many = kept & (outs > 1)
        tpot = (finish[many] - first[many]) / (outs[many] - 1)
        return Result(
            ttft_s=(first - arr)[kept],
            tpot_s=tpot,
            e2e_s=(finish - arr)[kept],
            itl_s=np.frombuffer(self.itl, dtype=np.float64).copy(),
            output_tokens=int(outs.sum()),
            requests=n,
            duration_s=duration,
            mean_running=self.running_area / duration if duration > 0 else math.nan,
            max_running=self.max_running,
            kv_blocks=self.blocks_total,
            kv_peak_blocks=self.peak_blocks,
            preemptions=self.preemptions,
            steps=self.steps,
            busy_s=busy,
            offered_rate=self.rate,
            clients=clients,
            step_share={"prefill-only steps": self.prefill_time / busy if busy else 0.0},
            prompt_mean=sum(self.prompts) / n,
            waiting_at_last_arrival=self.waiting_at_last_arrival,
            user_rate_s=outs[kept] / (finish - arr)[kept],
            arrival_s=arr,
            first_s=first,
            finish_s=finish,
            outputs=outs,
            prefilled_tokens=self.prefilled,
            prefix_hit_share=None if self.cache is None else self.cache.hit_share,
            prefix_evictions=0 if self.cache is None else self.cache.evicted,
        )


# --------------------------------------------------------------------------- the front and the budget


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
class Budget:
    """Limits at a percentile of the per-request time per output token and, optionally, time to first token."""

    tpot_s: float
    ttft_s: float | None = None
    percentile: float = 99

    def misses(self, result: Result) -> list[str]:
        """What the run misses: 'tpot', 'ttft', 'overload' (an open loop that fell behind)."""
        found = []
        if result.percentile("tpot", self.percentile) > self.tpot_s:
            found.append("tpot")
        if self.ttft_s is not None and result.percentile("ttft", self.percentile) > self.ttft_s:
            found.append("ttft")
        if result.overloaded:
            found.append("overload")
        return found

    def describe(self) -> str:
        said = f"p{self.percentile:g} time per output token ≤ {self.tpot_s * 1e3:g} ms"
        if self.ttft_s is not None:
            said += f" and p{self.percentile:g} time to first token ≤ {self.ttft_s * 1e3:g} ms"
        return said


@dataclass(frozen=True)
class Plan:
    """The largest load that meets a budget, and why not more."""

    budget: Budget
    concurrency: int  # clients of a closed loop (and the running-sequence cap to set)
    result: Result  # at that concurrency
    beyond: Result | None  # one client more (None: the KV limit stopped the search)
    kv_limit: int
    rate_per_s: float | None  # the largest Poisson rate meeting the budget with the cap set to `concurrency`
    rate_result: Result | None
    binds: str  # "kv-memory", "step-time", "prefills" or "time-to-first-token"
    step: StepModel
    steady: Steady | None = None  # the check of `rate_per_s` at steady state (None: no rate searched)
    searched_per_s: float | None = None  # the short search's rate, before the steady-state check
    failed: tuple[Steady, ...] = ()  # the rates that failed the steady-state check, highest first

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
) -> Plan | None:
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
    while bad is not None and bad - good > 1:
        middle = (good + bad) // 2
        if budget.misses(run(middle)):
            bad = middle
        else:
            good = middle
    beyond = run(good + 1) if bad is not None else None
    binds = _binding(budget, cache[good], beyond)
    rate, rate_result = (None, None)
    if not find_rate:
        return Plan(budget, good, cache[good], beyond, limit, rate, rate_result, binds, step)
    capped = _with_cap(engine, good)
    rate, rate_result = largest_rate(step, capped, prompt, output, budget, cache[good].requests_per_s,
                                     n_requests=n_requests, seed=seed)  # fmt: skip
    if rate is None:
        return Plan(budget, good, cache[good], beyond, limit, rate, rate_result, binds, step)
    passed, failed = steady_rate(step, capped, prompt, output, budget, rate, n_requests=n_requests, seed=seed)
    return Plan(budget, good, cache[good], beyond, limit, passed.rate_per_s if passed else None,
                passed.result if passed else None, binds, step, passed, rate, failed)  # fmt: skip


# --------------------------------------------------------------------------- steady state

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


def explain(found: Plan) -> str:
    """One paragraph: the answer, then what binds and the numbers that show it."""
    r, b = found.result, found.budget
    p = f"p{b.percentile:g}"
    head = (
        f"Up to {found.concurrency} concurrent requests meet {b.describe()}: set the running-sequence cap "
        f"(max_num_seqs) to {found.concurrency}. There the {p} time per output token is "
        f"{r.percentile('tpot', b.percentile) * 1e3:.1f} ms and the {p} time to first token "
        f"{r.percentile('ttft', b.percentile) * 1e3:,.0f} ms, for {r.tokens_per_s:,.0f} output tokens/s in all and "
        f"{r.tokens_per_s_per_user:,.0f} per user while an answer streams ({r.tokens_per_s_per_user_with_first:,.0f} "
        f"counting the wait for the first token), with {r.kv_peak_share * 100:.0f} % of the KV cache at its peak."
    )
    head += rate_words(found)
    x = found.beyond
    if found.binds == "kv-memory":
        why = (
            f" What binds is the KV memory: {found.kv_limit} sequences of this length fill the cache "
            f"({found.step.kv_blocks():,} blocks at the default memory share), so more clients would wait for blocks "
            "or be preempted, not run."
        )
    elif found.binds == "time-to-first-token":
        why = (
            f" What binds is the time to first token: with {found.concurrency + 1} clients it reaches "
            f"{x.percentile('ttft', b.percentile) * 1e3:,.0f} ms at {p}, as new prompts wait behind others."
        )
    else:
        tpot, itl = x.percentile("tpot", b.percentile) * 1e3, x.percentile("itl", 50) * 1e3
        why = (
            f" What binds is the time per output token: with {found.concurrency + 1} clients its {p} reaches "
            f"{tpot:.1f} ms, while the median gap between two tokens is {itl:.1f} ms"
        )
        if isinstance(found.step, RooflineStep):
            why += decode_step_words(found.step, x.mean_running, _mean_context(found))
        why += "."
        if found.binds == "prefills":
            why += (
                " Most of the difference is prefills: each new prompt takes a step of its own (or a share of one) "
                "in which the running sequences wait, so the more sequences run, the more often each one stalls."
            )
        else:
            why += " Each extra sequence adds its own cache read and its arithmetic to every step."
    return head + why


def rate_words(found: Plan) -> str:
    """The Poisson rate the cap sustains at steady state, how it was checked, and the rates that failed the check."""
    b, ok = found.budget, found.steady
    if found.searched_per_s is None:
        return ""
    if ok is None:
        return (
            f" Under random (Poisson) arrivals the short search's {found.searched_per_s:.2f} requests/s, and "
            f"{len(found.failed)} lower rates, failed the steady-state check; no rate is reported."
        )
    said = (
        f" Under random (Poisson) arrivals the same cap meets the budget at steady state up to about "
        f"{ok.rate_per_s:.2f} requests/s ({ok.tokens_per_s:,.0f} output tokens/s over the measured window): checked "
        f"with {ok.requests:,} requests, the first and last {STEADY_EDGE:.0%} of arrivals left out as warm-up and "
        f"drain, {ok.describe(b)}."
    )
    if found.failed:
        worst = found.failed[0]
        why = "it did not keep up" if not worst.stable else "it missed the budget"
        more = len(found.failed) - 1
        between = f", as {'does' if more == 1 else 'do'} {more} lower rate{'s' * (more > 1)} tried" if more else ""
        said += (
            f" The short search ({worst.requests // STEADY_LENGTH:,} requests a run) found "
            f"{found.searched_per_s:.2f}/s, which fails that check ({why}: {worst.describe(b)}){between}."
        )
    return said


def decode_step_words(step: RooflineStep, running: float, context: float) -> str:
    """A plain decode step of the run's mean running batch at its mean context, and the parts that sum to it."""
    batch = max(1, round(running))
    detail = step.detail(step.decode_work(batch, context))
    e = detail.efficiency
    scaled = "" if e == 1 else f"; each roofline time divided by the stated efficiency {e:g}"
    return (
        f"; a plain decode step of {batch} sequences (the run's mean batch) at the mean context of "
        f"{context:,.0f} tokens takes {detail.seconds * 1e3:.1f} ms {step.timed_on}: the matrix products "
        f"{detail.matmul_s / e * 1e3:.1f} ms, {detail.matmul_bound}-bound, the attention over every sequence's cache "
        f"{detail.attention_s / e * 1e3:.1f} ms, plus {detail.fixed_s * 1e3:.2f} ms fixed{scaled}"
    )


def _mean_context(found: Plan) -> float:
    """A sequence's mean context over its answer (prompt plus half the answer), from the run's lengths."""
    return found.result.output_tokens / found.result.requests / 2 + found.result.prompt_mean
