"""Predicted curves: a workload's roofline on any device's ceilings, at any batch sizes.

Nothing here is measured. A prediction takes a workload from the registry (its FLOPs and bytes come from
`snippets.costs`), the ceilings of a device (a datasheet's or a run's) and, optionally, a fixed cost per
call (kernel launches, dispatch), and gives for each batch the time and what bounds it:

    t(b) = max(fixed, FLOPs(b) / F, bytes(b) / BW)

A workload whose call runs kinds of work one after the other (a decoder's matmuls, then its attention over each
sequence's own cache) is summed per operation, each with its own roofline, as the decode page draws it:

    t(b) = max(fixed, Σ_op max(FLOPs_op(b) / F, bytes_op(b) / BW))

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.datasheet import BYTES_PER_ELEMENT
from benchmarks.analysis.roofline import Ceilings, crossing_batch
from benchmarks.workloads import decoder_config, workload
from snippets.costs import kv_cache_bytes

OVERHEAD, MEMORY, COMPUTE = "overhead", "memory", "compute"


@dataclass(frozen=True)
class Operation:
    """One kind of work of a call with its own roofline: its FLOPs over the peak rate, its bytes over the bandwidth."""

    name: str
    compute_s: float
    memory_s: float

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def bound(self) -> str:
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
) -> list[PredictedPoint]:
    """The predicted time of workload `name` with `params` in `dtype` at each batch, on a device with
    `ceilings`, plus a fixed cost per call. ValueError for parameters the workload does not allow."""
    spec = workload(name)
    problems = spec.problems(params)
    if problems:
        raise ValueError("; ".join(f"{field} {message}" for field, message in problems))
    if dtype not in BYTES_PER_ELEMENT:
        raise ValueError(f"unknown dtype {dtype!r}; choose from {', '.join(BYTES_PER_ELEMENT)}")
    size = BYTES_PER_ELEMENT[dtype]
    points = []
    for batch in sorted(set(batches)):
        flops, moved = spec.cost(params, size, batch)
        operations = tuple(
            Operation(name, f / ceilings.flops_per_s, m / ceilings.bytes_per_s)
            for name, f, m in (spec.operations(params, size, batch) if spec.operations else ())
        )
        points.append(
            PredictedPoint(
                batch, flops, moved, flops / ceilings.flops_per_s, moved / ceilings.bytes_per_s, fixed_s, operations
            )
        )
    return points


def ridge_batch(points: Sequence[PredictedPoint], ceilings: Ceilings) -> float | None:
    """The batch where compute time overtakes memory time (None: never in reach)."""
    return crossing_batch([(p.batch, p.flops, p.bytes) for p in points], ceilings)


KNEE_GRID = tuple(2**i for i in range(25))  # 1 … 16,777,216: where a workload's knee is looked for


def knee(name: str, params: Mapping[str, Any], ceilings: Ceilings, dtype: str) -> float | None:
    """The ridge batch of a configuration, whatever batches were asked for: where compute time
    overtakes memory time, followed along the workload's own FLOPs and bytes at every power of two up to
    KNEE_GRID's last. Below 1 when compute-bound from the first row; None when never compute-bound."""
    return ridge_batch(predict(name, params, ceilings, dtype, KNEE_GRID), ceilings)


def footprint_bytes(name: str, params: Mapping[str, Any], dtype: str, batch: int) -> float:
    """Device memory a call needs to hold: the weights, plus for a decode step or a prefill the KV cache of
    `batch` sequences (activations, workspace and the framework's own memory are not counted)."""
    size = BYTES_PER_ELEMENT[dtype]
    held = workload(name).weight_bytes(params, size)
    if name == "decode":
        positions = params["context"] + (params.get("phase", "decode") == "decode")  # a decode step adds a token
        held += kv_cache_bytes(decoder_config(params), batch, positions, size)
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
