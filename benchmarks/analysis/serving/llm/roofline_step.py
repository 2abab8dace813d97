"""The step time on a datasheet's roofline: a decoder's matrix products then its attention, each at max(FLOPs / peak
rate, bytes / bandwidth), plus a stated fixed cost per step, all divided by a stated efficiency (1: the roofline).

Tensor parallelism over n GPUs is one device with n times the rate, the bandwidth and the memory, plus the
all-reduces between the GPUs (`benchmarks.analysis.roofline.cost_model`). A mixture of experts reads, each step,
the weights of the experts its tokens touch. The KV cache may have a dtype of its own.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import dataclasses
import functools

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
from benchmarks.analysis.serving.llm.engine_config import BLOCK_TOKENS, MEMORY_FRACTION
from benchmarks.analysis.serving.llm.step_model import StepTime, StepWork
from benchmarks.gpus import BYTES_PER_ELEMENT, GPU
from benchmarks.llm_models import PublishedModel, model_weight_bytes
from snippets.costs import FFN_MATRICES

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
