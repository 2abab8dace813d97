"""Predicted curves: a workload's roofline on any device's ceilings, at any batch sizes.

Nothing here is measured. A prediction takes a workload from the registry (its FLOPs and bytes come from
`snippets.costs`), the ceilings of a device (a datasheet's or a run's) and, optionally, a fixed cost per
call (kernel launches, dispatch), and gives for each batch the time and what bounds it:

    t(b) = max(fixed, FLOPs(b) / F, bytes(b) / BW)

A workload whose call runs kinds of work one after the other (a decoder's matmuls, then its attention over each
sequence's own cache) is summed per operation, each with its own roofline, as the decode page draws it:

    t(b) = max(fixed, Σ_op max(FLOPs_op(b) / F, bytes_op(b) / BW))

As deployed (`benchmarks.analysis.roofline.cost_model`), `predict` also takes: `fusion` ("eager" or "fused") with the
GPU's `l2_bytes`, for a ResNet-50 counted per kernel; `kv_dtype`, for a decoder's cache in a dtype of its own; and
`tensor_parallel` with an `interconnect`, for a decoder split over GPUs, whose all-reduces are an operation of
their own ("communication", on the link: neither compute nor memory):

    t(b) = max(fixed, Σ_op max(FLOPs_op(b) / (p·F), bytes_op(b) / (p·BW)) + t_communication(b))

Left out, each keeps the registry's count (what this project's own eager runs move).

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.roofline.cnn import ON_RIDGE
from benchmarks.analysis.roofline.cost_model import (
    ALLREDUCES_PER_LAYER,
    FUSED,
    FUSIONS,
    cnn_operations,
    decoder_operations,
    step_tokens,
    tensor_parallel_seconds,
)
from benchmarks.analysis.roofline.roofline_model import crossing_batch
from benchmarks.gpus import BYTES_PER_ELEMENT, Ceilings, Interconnect
from benchmarks.workloads import decoder_config, workload
from snippets.costs import kv_cache_bytes, mlp_cost, resnet50_cost

OVERHEAD, MEMORY, COMPUTE = "overhead", "memory", "compute"
COMMUNICATION = "communication"  # an operation on the link between GPUs (a tensor-parallel all-reduce)


@dataclass(frozen=True)
class Operation:
    """One kind of work of a call with its own roofline: its FLOPs over the peak rate, its bytes over the bandwidth;
    or, for communication, its time on the link between GPUs (`link_s`). `detail` says where its tensors live."""

    name: str
    compute_s: float
    memory_s: float
    link_s: float = 0.0
    detail: str = ""

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s) + self.link_s

    @property
    def bound(self) -> str:
        if self.link_s > max(self.compute_s, self.memory_s):
            return COMMUNICATION
        return COMPUTE if self.compute_s >= self.memory_s else MEMORY


@dataclass(frozen=True)
class PredictedPoint:
    batch: int
    flops: float
    bytes: float
    compute_s: float  # FLOPs over the peak rate
    memory_s: float  # bytes over the bandwidth
    fixed_s: float  # the fixed cost of one call
    operations: tuple[Operation, ...] = ()  # per kind of work, where the workload sums them (see the module)

    @property
    def roofline_s(self) -> float:
        """The roofline of the call: the sum of its operations' where it has several, else of its totals."""
        if self.operations:
            return sum(op.seconds for op in self.operations)
        return max(self.compute_s, self.memory_s)

    @property
    def seconds(self) -> float:
        return max(self.fixed_s, self.roofline_s)

    @property
    def bound(self) -> str:
        """overhead when the fixed cost is the largest term, else memory or compute: for a call summed per
        operation, the resource that bounds the operations taking most of its time."""
        if self.fixed_s > self.roofline_s:
            return OVERHEAD
        if self.operations:
            compute = sum(op.seconds for op in self.operations if op.bound == COMPUTE)
            return COMPUTE if compute >= self.roofline_s - compute else MEMORY
        return COMPUTE if self.compute_s >= self.memory_s else MEMORY


@dataclass(frozen=True)
class Region:
    """A stretch of batch sizes bound by one resource, from where that bound takes over to where it ends."""

    bound: str
    start: float
    end: float


@dataclass(frozen=True)
class Span:
    """Consecutive batches of a prediction bound by one resource."""

    bound: str
    first: int
    last: int


def predict(
    name: str,
    params: Mapping[str, Any],
    ceilings: Ceilings,
    dtype: str,
    batches: Iterable[int],
    fixed_s: float = 0.0,
    *,
    fusion: str | None = None,
    l2_bytes: float | None = None,
    kv_dtype: str | None = None,
    tensor_parallel: int = 1,
    interconnect: Interconnect | None = None,
) -> list[PredictedPoint]:
    """The predicted time of workload `name` with `params` in `dtype` at each batch, on a device with
    `ceilings`, plus a fixed cost per call. ValueError for parameters the workload does not allow.

    The keywords count the call as deployed (see the module): `fusion` and `l2_bytes` for a ResNet-50, `kv_dtype`
    and `tensor_parallel` (over `interconnect`, each GPU with `ceilings`) for a decoder. FLOPs and bytes stay the
    whole call's; the times are each GPU's share."""
    spec = workload(name)
    problems = spec.problems(params)
    if problems:
        raise ValueError("; ".join(f"{field} {message}" for field, message in problems))
    for given in (dtype, kv_dtype or dtype):
        if given not in BYTES_PER_ELEMENT:
            raise ValueError(f"unknown dtype {given!r}; choose from {', '.join(BYTES_PER_ELEMENT)}")
    _check_deployment(name, fusion, kv_dtype, tensor_parallel, interconnect)
    size = BYTES_PER_ELEMENT[dtype]
    flops_per_s, bytes_per_s = ceilings.flops_per_s * tensor_parallel, ceilings.bytes_per_s * tensor_parallel
    points = []
    for batch in sorted(set(batches)):
        counted = _counted_operations(spec, params, dtype, batch, fusion, l2_bytes, kv_dtype)
        if counted is None:
            flops, moved = spec.cost(params, size, batch)
            operations: tuple[Operation, ...] = ()
        else:
            flops, moved = sum(op[1] for op in counted), sum(op[2] for op in counted)
            operations = tuple(
                Operation(op_name, f / flops_per_s, m / bytes_per_s, 0.0, detail) for op_name, f, m, detail in counted
            )
        if tensor_parallel > 1:
            operations += (_communication(params, dtype, batch, tensor_parallel, interconnect),)
        points.append(
            PredictedPoint(batch, flops, moved, flops / flops_per_s, moved / bytes_per_s, fixed_s, operations)
        )
    return points


def deployed_keywords(name: str, l2_bytes: float | None) -> dict[str, Any]:
    """The `predict` keywords a datasheet GPU's prediction takes by default, as the workload is deployed: a ResNet-50
    fused with activations in L2; nothing for the others (their registry count is already how they run)."""
    return {"fusion": FUSED, "l2_bytes": l2_bytes} if name == "resnet50" else {}


def _check_deployment(name: str, fusion, kv_dtype, tensor_parallel: int, interconnect) -> None:
    if fusion is not None and name != "resnet50":
        raise ValueError(f"fusion is counted for resnet50, not {name}")
    if fusion is not None and fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
    if (kv_dtype is not None or tensor_parallel != 1) and name != "decode":
        raise ValueError(f"a KV-cache dtype and tensor parallelism are for decode, not {name}")
    if tensor_parallel < 1:
        raise ValueError("tensor_parallel must be at least 1")
    if tensor_parallel > 1 and interconnect is None:
        raise ValueError("tensor parallelism needs the interconnect its all-reduces cross")


def _counted_operations(spec, params, dtype, batch, fusion, l2_bytes, kv_dtype) -> list[tuple] | None:
    """(name, FLOPs, bytes, detail) of each operation as deployed, or the registry's own operations; None where the
    call is one kind of work counted as a whole."""
    size = BYTES_PER_ELEMENT[dtype]
    if fusion is not None:
        return [tuple(op) for op in cnn_operations(params, size, batch, fusion=fusion, l2_bytes=l2_bytes)]
    if spec.name == "decode":
        kv_size = BYTES_PER_ELEMENT[kv_dtype or dtype]
        return [(*op, "") for op in decoder_operations(params, size, batch, kv_size)]
    if spec.operations:
        return [(*op, "") for op in spec.operations(params, size, batch)]
    return None


def _communication(params, dtype, batch, gpus: int, interconnect: Interconnect) -> Operation:
    seconds = tensor_parallel_seconds(
        params["layers"], step_tokens(params, batch), params["d_model"], gpus, interconnect, BYTES_PER_ELEMENT[dtype]
    )
    words = f"{ALLREDUCES_PER_LAYER} ring all-reduces a layer over {interconnect.name} on {gpus} GPUs"
    return Operation(COMMUNICATION, 0.0, 0.0, seconds, words)


def ridge_batch(points: Sequence[PredictedPoint], ceilings: Ceilings) -> float | None:
    """The batch where compute time overtakes memory time (None: never in reach)."""
    return crossing_batch([(p.batch, p.flops, p.bytes) for p in points], ceilings)


KNEE_GRID = tuple(2**i for i in range(25))  # 1 … 16,777,216: where a workload's knee is looked for


def knee(name: str, params: Mapping[str, Any], ceilings: Ceilings, dtype: str) -> float | None:
    """The ridge batch of a configuration, whatever batches were asked for: where compute time
    overtakes memory time, followed along the workload's own FLOPs and bytes at every power of two up to
    KNEE_GRID's last. Below 1 when compute-bound from the first row; None when never compute-bound."""
    return ridge_batch(predict(name, params, ceilings, dtype, KNEE_GRID), ceilings)


@dataclass(frozen=True)
class RidgeCount:
    """The ridge batch of a configuration under one count of its bytes."""

    count: str  # which bytes are counted, in words
    batch: float | None  # None: never compute-bound; below 1: compute-bound from the first row
    on_ridge: bool  # never compute-bound, but each extra row within 5 % of the ridge: the count cannot decide


# The count of bytes the registry states (`snippets.costs`, what the harness records), and the other bound of them
# where a workload has one: an MLP's activations may stay in cache between layers, and an engine may fuse
# ResNet-50's BatchNorm, ReLU, residual adds and pooling into its convolutions.
STATED_COUNT = {"mlp": "every layer's activations through memory", "resnet50": "every elementwise pass through memory"}
OTHER_COUNT = {"mlp": "activations kept in cache", "resnet50": "elementwise passes fused"}


def ridge_count(count: str, cost: Callable[[int], tuple[float, float]], ceilings: Ceilings) -> RidgeCount:
    """The ridge batch of (FLOPs, bytes) = cost(batch) on `ceilings`, followed over KNEE_GRID, and whether a
    configuration that never turns compute-bound sits on the ridge (each extra row within 5 % of it: the site's
    rule, `benchmarks.analysis.roofline.cnn.ON_RIDGE`)."""
    points = [(b, *cost(b)) for b in KNEE_GRID]
    batch = crossing_batch(points, ceilings)
    (_, f1, m1), (_, f2, m2) = points[:2]
    per_row = (f2 - f1) / (m2 - m1) if m2 > m1 else float("inf")
    return RidgeCount(count, batch, batch is None and per_row >= ON_RIDGE * ceilings.ridge_intensity)


def ridge_counts(name: str, params: Mapping[str, Any], ceilings: Ceilings, dtype: str) -> tuple[RidgeCount, ...]:
    """The ridge batch under the count of bytes the registry states and, for an MLP and a ResNet-50, under the
    other bound of its bytes (the stated count first)."""
    spec, size, p = workload(name), BYTES_PER_ELEMENT[dtype], params
    stated = ridge_count(STATED_COUNT.get(name, "bytes as counted"), lambda b: spec.cost(p, size, b), ceilings)
    if name == "mlp":
        other = ridge_count(OTHER_COUNT[name], lambda b: mlp_cost(b, p["width"], p["depth"], size, "cache"), ceilings)
    elif name == "resnet50":
        other = ridge_count(OTHER_COUNT[name], lambda b: resnet50_cost(b, size, p["resolution"], True), ceilings)
    else:
        return (stated,)
    return stated, other


def footprint_bytes(name: str, params: Mapping[str, Any], dtype: str, batch: int, kv_dtype: str | None = None) -> float:
    """Device memory a call needs to hold: the weights, plus for a decode step or a prefill the KV cache of
    `batch` sequences, in `kv_dtype` (default `dtype`); activations, workspace and the framework's own memory are not
    counted."""
    size = BYTES_PER_ELEMENT[dtype]
    held = workload(name).weight_bytes(params, size)
    if name == "decode":
        positions = params["context"] + (params.get("phase", "decode") == "decode")  # a decode step adds a token
        held += kv_cache_bytes(decoder_config(params), batch, positions, BYTES_PER_ELEMENT[kv_dtype or dtype])
    return held


def _term(point: PredictedPoint, bound: str) -> float:
    return {OVERHEAD: point.fixed_s, MEMORY: point.memory_s, COMPUTE: point.compute_s}[bound]


def switch_batch(before: PredictedPoint, after: PredictedPoint) -> float:
    """Where the bound of `after` takes over from that of `before`: the batch at which their two terms are
    equal, linear between the two points (each term is affine in the batch)."""
    gap0 = _term(before, before.bound) - _term(before, after.bound)
    gap1 = _term(after, before.bound) - _term(after, after.bound)
    if gap0 == gap1:
        return float(after.batch)
    return before.batch + (after.batch - before.batch) * gap0 / (gap0 - gap1)


def overhead_ends(points: Sequence[PredictedPoint]) -> float | None:
    """The batch where the arithmetic or the memory read overtakes the fixed cost; None when the fixed
    cost never sets the time or sets it at every batch."""
    for before, after in itertools.pairwise(points):
        if before.bound == OVERHEAD and after.bound != OVERHEAD:
            return switch_batch(before, after)
    return None


def regions(points: Sequence[PredictedPoint]) -> list[Region]:
    """The predicted batches cut where the bound changes, each cut at the batch where the terms meet."""
    if not points:
        return []
    found = [Region(points[0].bound, float(points[0].batch), float(points[-1].batch))]
    for before, after in itertools.pairwise(points):
        if after.bound != before.bound:
            cut = switch_batch(before, after)
            found[-1] = Region(found[-1].bound, found[-1].start, cut)
            found.append(Region(after.bound, cut, float(points[-1].batch)))
    return found


def spans(points: Sequence[PredictedPoint]) -> list[Span]:
    """The prediction cut into runs of one bound, in batch order."""
    found: list[Span] = []
    for p in points:
        if found and found[-1].bound == p.bound:
            found[-1] = Span(p.bound, found[-1].first, p.batch)
        else:
            found.append(Span(p.bound, p.batch, p.batch))
    return found
