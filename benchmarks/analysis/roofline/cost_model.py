"""The per-operation cost model of inference as it is deployed, beside the plain roofline of the registry's counts.

The registry's counts (`snippets.costs`) are what this project's own eager PyTorch runs move. A deployed engine moves
less and does more between GPUs, and this module counts that, one operation at a time:

- fusion: a CNN's convolution, BatchNorm (folded into it), activation and residual add run as one pass, so an
  activation crosses memory once per fused block, and not at all while it fits in the GPU's L2 (decided per tensor,
  and said per layer);
- tensor parallelism: two all-reduces per layer (after the attention's output projection and after the FFN), each
  of tokens × d_model elements, by the ring algorithm over the GPU's NVLink (its PCIe where it has none), plus a
  per-call latency;
- mixture of experts: a step reads the weights of the experts its tokens touch, E·(1 − (1 − k/E)^b) of E per layer
  for b tokens under uniform routing, fewer under skew;
- a KV cache whose dtype is its own.

API (stable; later additions only add):

- `FUSIONS` ("eager", "fused"); `cnn_operations(params, bytes_per_element, batch, fusion=, l2_bytes=)` → tuple of
  `CostedOperation(name, flops, bytes, detail)`, one per kernel as that fusion runs them (bytes: to and from device
  memory; detail: which tensors stay in L2); `cnn_cost(...)` → their (FLOPs, bytes) summed.
- `ALLREDUCE_LATENCY_S` (an assumed figure, labelled so); `ring_allreduce_seconds(size_bytes, gpus, interconnect)`;
  `tensor_parallel_seconds(layers, tokens, d_model, gpus, interconnect, bytes_per_element)`: both all-reduces of
  every layer of one step; `allreduce_bytes_per_element(bytes_per_element)`.
- `expected_distinct_experts(tokens, experts, top_k, skew=0.0)`; `routing_shares(experts, skew)`.
- `decoder_operations(params, bytes_per_element, batch, kv_bytes_per_element=)` → the (name, FLOPs, bytes) of a
  decode step or prefill with the cache in a dtype of its own.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from benchmarks.analysis.roofline.cited_figures import Published
from benchmarks.gpus import Interconnect
from benchmarks.workloads import decoder_config, decoder_cost
from snippets import costs

EAGER, FUSED = "eager", "fused"
FUSIONS = (EAGER, FUSED)
FUSION_WORDS = {
    EAGER: "every BatchNorm, ReLU, residual add and pooling a pass of its own over memory (eager PyTorch)",
    FUSED: "convolution, BatchNorm (folded), ReLU and residual add one pass; an activation crosses memory once per "
    "fused block, and not at all while it, the tensors alive with it and the weights of the layer at hand fit in L2",
}


class CostedOperation(NamedTuple):
    """One kernel of a call: its FLOPs, its bytes to and from device memory, and where its tensors live."""

    name: str
    flops: float
    bytes: float
    detail: str = ""


# --------------------------------------------------------------------------- CNN fusion


@dataclass
class _Tensor:
    name: str
    bytes: float
    pinned: bool = False  # the network's input and output: always in device memory
    producer: int = -1
    last_use: int = -1
    in_l2: bool = False


@dataclass
class _Kernel:
    name: str
    flops: float
    weight_bytes: float
    reads: list[_Tensor]
    writes: list[_Tensor]


def _conv_flops(layer: costs.ConvLayer, batch: float) -> float:
    side = -(-layer.resolution // layer.stride)
    return 2 * layer.kernel**2 * layer.c_in * layer.c_out * side * side * batch


def _conv_weights(layer: costs.ConvLayer, s: float) -> float:
    return s * layer.kernel**2 * layer.c_in * layer.c_out


def _out_side(layer: costs.ConvLayer) -> int:
    return -(-layer.resolution // layer.stride)


def _fused_resnet50(batch: float, s: float, resolution: int) -> list[_Kernel]:
    """The kernels of a ResNet-50 as an inference engine runs it: each conv with its BatchNorm folded into its weights
    and bias, its ReLU and (for a block's last conv) the residual add and ReLU in its epilogue; the pools apart."""
    layers = {layer.name: layer for layer in costs.resnet50_layers(resolution)}

    def act(name: str, channels: int, side: int, pinned: bool = False) -> _Tensor:
        return _Tensor(name, s * batch * channels * side * side, pinned)

    def conv(layer: costs.ConvLayer, reads: list[_Tensor], out: _Tensor, what: str) -> _Kernel:
        weights = _conv_weights(layer, s) + s * layer.c_out  # BatchNorm folded: a bias per output channel
        return _Kernel(f"{layer.name}{what}", _conv_flops(layer, batch), weights, reads, [out])

    stem_layer = layers["conv1"]
    image = act("image", 3, resolution, pinned=True)
    stem = act("conv1 output", 64, _out_side(stem_layer))
    pooled_side = -(-_out_side(stem_layer) // 2)
    x = act("max pool output", 64, pooled_side)
    kernels = [
        conv(stem_layer, [image], stem, " + BatchNorm + ReLU"),
        _Kernel("max pool", 0.0, 0.0, [stem], [x]),
    ]
    for index, (blocks, width, _) in enumerate(costs.RESNET50_STAGES, start=1):
        for block in range(blocks):
            name = f"layer{index}.{block}"
            c1, c2, c3 = layers[f"{name}.conv1"], layers[f"{name}.conv2"], layers[f"{name}.conv3"]
            a = act(f"{name}.conv1 output", width, _out_side(c1))
            b = act(f"{name}.conv2 output", width, _out_side(c2))
            y = act(f"{name} output", c3.c_out, _out_side(c3))
            kernels += [conv(c1, [x], a, " + BatchNorm + ReLU"), conv(c2, [a], b, " + BatchNorm + ReLU")]
            shortcut = x
            if f"{name}.downsample.0" in layers:
                down = layers[f"{name}.downsample.0"]
                shortcut = act(f"{name}.downsample output", down.c_out, _out_side(down))
                kernels.append(conv(down, [x], shortcut, " + BatchNorm"))
            kernels.append(conv(c3, [b, shortcut], y, " + BatchNorm + residual add + ReLU"))
            x = y
    features = act("average pool output", 2048, 1)
    logits = act("logits", costs.RESNET50_CLASSES, 1, pinned=True)
    fc = layers["fc"]
    kernels += [
        _Kernel("average pool", 0.0, 0.0, [x], [features]),
        _Kernel("fc", _conv_flops(fc, batch), _conv_weights(fc, s) + s * fc.c_out, [features], [logits]),
    ]
    return kernels


THROUGH_MEMORY = "through memory"


def _eager_resnet50(batch: float, s: float, resolution: int) -> list[CostedOperation]:
    """Every kernel eager PyTorch runs, each through memory: the registry's count (`resnet50_cost`), per kernel."""
    layers = {layer.name: layer for layer in costs.resnet50_layers(resolution)}
    ops: list[CostedOperation] = []

    def conv(layer: costs.ConvLayer) -> int:
        """The conv, then its BatchNorm: it reads and writes the output, and reads four per-channel vectors (counted
        per image, as `resnet50_elementwise_bytes` does)."""
        flops, moved = costs.conv_cost(batch, layer.c_in, layer.c_out, layer.kernel, layer.resolution, s, layer.stride)
        out = layer.c_out * _out_side(layer) ** 2
        ops.append(CostedOperation(layer.name, flops, moved, THROUGH_MEMORY))
        ops.append(
            CostedOperation(f"{layer.name} BatchNorm", 0.0, s * batch * (2 * out + 4 * layer.c_out), THROUGH_MEMORY)
        )
        return out

    def elementwise(name: str, elements: float) -> None:
        ops.append(CostedOperation(name, 0.0, s * batch * elements, THROUGH_MEMORY))

    stem_layer = layers["conv1"]
    out = conv(stem_layer)
    elementwise("conv1 ReLU", 2 * out)
    stem = 64 * _out_side(stem_layer) ** 2
    elementwise("max pool", stem + stem // 4)
    for index, (blocks, _, _) in enumerate(costs.RESNET50_STAGES, start=1):
        for block in range(blocks):
            name = f"layer{index}.{block}"
            for part in ("conv1", "conv2"):
                elementwise(f"{name}.{part} ReLU", 2 * conv(layers[f"{name}.{part}"]))
            out = conv(layers[f"{name}.conv3"])
            if f"{name}.downsample.0" in layers:
                conv(layers[f"{name}.downsample.0"])
            elementwise(f"{name} residual add", 3 * out)
            elementwise(f"{name} ReLU", 2 * out)
    elementwise("average pool", 2048 * (-(-resolution // 32)) ** 2 + 2048)
    fc = layers["fc"]
    flops, moved = costs.conv_cost(batch, fc.c_in, fc.c_out, 1, 1, s)
    ops.append(CostedOperation("fc", flops, moved + s * costs.RESNET50_CLASSES, THROUGH_MEMORY))
    return ops


def _place_in_l2(kernels: Sequence[_Kernel], l2_bytes: float | None) -> None:
    """Mark each tensor kept in L2 from its producer to its last reader: when, at every kernel in between, the
    tensors alive then plus that kernel's weights fit in L2. The network's input and output never are."""
    for index, kernel in enumerate(kernels):
        for t in kernel.writes:
            t.producer = index
        for t in kernel.reads:
            t.last_use = index
    tensors = {id(t): t for k in kernels for t in (*k.reads, *k.writes)}.values()
    if not l2_bytes:
        return
    working = []
    for index, kernel in enumerate(kernels):
        alive = sum(t.bytes for t in tensors if t.producer <= index <= t.last_use)
        working.append(alive + kernel.weight_bytes)
    for t in tensors:
        if not t.pinned and t.last_use > t.producer >= 0:
            t.in_l2 = max(working[t.producer : t.last_use + 1]) <= l2_bytes


def _costed(kernel: _Kernel) -> CostedOperation:
    moved = kernel.weight_bytes + sum(t.bytes for t in (*kernel.reads, *kernel.writes) if not t.in_l2)
    words = [f"reads {t.name} {'from L2' if t.in_l2 else 'from memory'}" for t in kernel.reads]
    words += [f"writes {t.name} {'to L2' if t.in_l2 else 'to memory'}" for t in kernel.writes]
    return CostedOperation(kernel.name, kernel.flops, moved, "; ".join(words))


def cnn_operations(
    params: Mapping[str, Any], bytes_per_element: float, batch: float, *, fusion: str = FUSED, l2_bytes=None
) -> tuple[CostedOperation, ...]:
    """The kernels of one ResNet-50 call of `batch` images, as `fusion` runs them: "eager" (the registry's count,
    every elementwise pass through memory) or "fused" (as deployed; with `l2_bytes`, the GPU's L2, each tensor that
    fits stays there and its bytes are not counted, and each kernel's detail says which)."""
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
    resolution = params.get("resolution", 224)
    if fusion == EAGER:
        return tuple(_eager_resnet50(batch, bytes_per_element, resolution))
    kernels = _fused_resnet50(batch, bytes_per_element, resolution)
    _place_in_l2(kernels, l2_bytes)
    return tuple(_costed(k) for k in kernels)


def cnn_cost(params: Mapping[str, Any], bytes_per_element: float, batch: float, **how) -> tuple[float, float]:
    """(FLOPs, bytes) of `cnn_operations`, summed."""
    ops = cnn_operations(params, bytes_per_element, batch, **how)
    return sum(op.flops for op in ops), sum(op.bytes for op in ops)


# --------------------------------------------------------------------------- tensor-parallel communication

ALLREDUCE_LATENCY_S = Published(
    10e-6,
    "the fixed cost of one all-reduce call between GPUs of one server (launch and synchronisation), taken as 10 µs",
    "assumed: not a measurement; a figure of the order NCCL's small-message all-reduces take on NVLink, stated so "
    "that it can be changed, and the same for every GPU and link",
)
ALLREDUCES_PER_LAYER = 2  # after the attention's output projection and after the FFN's down projection


def allreduce_bytes_per_element(bytes_per_element: float) -> float:
    """An all-reduce sums activations in 16 bits at least: an fp8, int8 or fp4 matmul's output is dequantized."""
    return max(2.0, bytes_per_element)


def ring_allreduce_seconds(
    size_bytes: float, gpus: int, interconnect: Interconnect, latency_s: float = ALLREDUCE_LATENCY_S.value
) -> float:
    """One ring all-reduce of `size_bytes` over `gpus`: each GPU sends (and receives) 2(p − 1)/p of the data at the
    link's one-way rate, after a fixed latency; 0 on one GPU."""
    if gpus < 2:
        return 0.0
    return latency_s + 2 * (gpus - 1) / gpus * size_bytes / interconnect.bytes_per_s_each_way


def tensor_parallel_seconds(
    layers: int,
    tokens: float,
    d_model: int,
    gpus: int,
    interconnect: Interconnect,
    bytes_per_element: float,
    latency_s: float = ALLREDUCE_LATENCY_S.value,
) -> float:
    """The all-reduces of one step of `tokens` tokens (decode or prefill) on `gpus` in tensor parallel: two per
    layer, each of tokens × d_model activations."""
    size = tokens * d_model * allreduce_bytes_per_element(bytes_per_element)
    return layers * ALLREDUCES_PER_LAYER * ring_allreduce_seconds(size, gpus, interconnect, latency_s)


# --------------------------------------------------------------------------- mixture of experts


def routing_shares(experts: int, skew: float = 0.0) -> list[float]:
    """The share of routing each expert gets: uniform at skew 0, else ∝ (i + 1)^−skew (Zipf), summing to 1."""
    if skew < 0:
        raise ValueError(f"skew must be at least 0, got {skew}")
    weights = [(i + 1) ** -skew for i in range(experts)]
    total = sum(weights)
    return [w / total for w in weights]


def expected_distinct_experts(tokens: float, experts: int, top_k: int, skew: float = 0.0) -> float:
    """Experts of one layer that `tokens` tokens touch, in expectation, each choosing `top_k` of `experts`.

    Uniform (skew 0): each expert is missed by a token with chance 1 − k/E, so E·(1 − (1 − k/E)^b). Skewed: expert i
    is chosen by a token with chance min(1, k·pᵢ), pᵢ from `routing_shares`, so Σᵢ 1 − (1 − min(1, k·pᵢ))^b: a
    skewed router touches fewer experts for the same tokens, and reads fewer weights."""
    if tokens <= 0:
        return 0.0
    if skew == 0:
        return experts * (1 - (1 - top_k / experts) ** tokens)
    return sum(1 - (1 - min(1.0, top_k * p)) ** tokens for p in routing_shares(experts, skew))


def expert_blocks(experts: int, gpus: int) -> list[range]:
    """Expert parallelism's placement: GPU g holds experts g·E/n to (g+1)·E/n − 1, contiguous blocks (vLLM's
    default, before any load balancing moves them)."""
    if gpus < 1 or experts % gpus:
        raise ValueError(f"{experts} experts do not split evenly over {gpus} GPUs")
    size = experts // gpus
    return [range(g * size, (g + 1) * size) for g in range(gpus)]


def _count_distribution(chances: list[float]) -> list[float]:
    """P(exactly j of independent events happen), j = 0…len(chances)."""
    found = [1.0]
    for q in chances:
        found = [(found[j] if j < len(found) else 0.0) * (1 - q) + (found[j - 1] * q if j else 0.0)
                 for j in range(len(found) + 1)]  # fmt: skip
    return found


def busiest_gpu_experts(tokens: float, experts: int, top_k: int, gpus: int, skew: float = 0.0) -> float:
    """Under expert parallelism over `gpus` GPUs, the experts of one layer that `tokens` tokens touch on the GPU
    that holds the most of them, in expectation: each expert touched with its chance (as in
    `expected_distinct_experts`), independently, each GPU's count from its block's chances, and the expected
    maximum over the GPUs from their distributions. A step waits for that GPU. The independence is an
    approximation: for one token choosing 2 of 8 experts on two GPUs the busier holds 10/7 on average (both fall
    on one GPU 3 times in 7); this gives 1.46."""
    if tokens <= 0:
        return 0.0
    shares = routing_shares(experts, skew)
    chance = [1 - (1 - min(1.0, top_k * p)) ** tokens for p in shares]
    cumulative = []
    for block in expert_blocks(experts, gpus):
        dist = _count_distribution([chance[i] for i in block])
        running, total = [], 0.0
        for value in dist:
            total += value
            running.append(total)
        cumulative.append(running)
    size = experts // gpus
    # E[max] = Σ_j P(max > j) = Σ_j (1 − Π_g P(count_g ≤ j))
    return sum(1 - math.prod(c[j] for c in cumulative) for j in range(size))


def busiest_gpu_share(experts: int, gpus: int, skew: float = 0.0) -> float:
    """Under expert parallelism, the share of the routed (token, expert) pairs that land on the busiest GPU: 1/n
    under uniform routing, more when a skewed router favours the experts of one block."""
    shares = routing_shares(experts, skew)
    return max(sum(shares[i] for i in block) for block in expert_blocks(experts, gpus))


# --------------------------------------------------------------------------- decoders with a KV dtype of their own


def decoder_operations(
    params: Mapping[str, Any], bytes_per_element: float, batch: float, kv_bytes_per_element: float | None = None
) -> tuple[tuple[str, float, float], ...]:
    """(name, FLOPs, bytes) of the matmuls and the attention of one decode step or prefill, as the registry counts
    them, with the KV cache stored in `kv_bytes_per_element` bytes (default: the weights')."""
    cost = decoder_cost(params, bytes_per_element, batch)
    kv_size = bytes_per_element if kv_bytes_per_element is None else kv_bytes_per_element
    tokens = batch * (params["context"] if params.get("phase") == "prefill" else 1)
    matmul_flops = 2 * costs.matmul_weight_elements(decoder_config(params)) * tokens
    kv_bytes = cost["kv_bytes"] * kv_size / bytes_per_element
    return (
        ("matmuls", matmul_flops, cost["weight_bytes"] + cost["activation_bytes"]),
        ("attention", cost["flops"] - matmul_flops, kv_bytes),
    )


def step_tokens(params: Mapping[str, Any], batch: float) -> float:
    """Tokens through the matmuls of one call: a token per sequence in decode, the whole prompt in a prefill."""
    return batch * (params["context"] if params.get("phase") == "prefill" else 1)


def ceil_gpus(needed_bytes: float, per_gpu_bytes: float) -> int:
    """GPUs whose memory together holds `needed_bytes`."""
    return max(1, math.ceil(needed_bytes / per_gpu_bytes))
