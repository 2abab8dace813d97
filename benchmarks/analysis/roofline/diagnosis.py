"""What bounds each point of a measured curve: fixed per-call overhead, memory, or compute.

The decision is made once, here, from the evidence a run holds, and every causal sentence on the
site, in the sweep report and in the CLI is built from it:

- **the fixed per-call cost**, estimated in the first of these ways the run allows: the gap between
  eager calls and CUDA-graph replay of the same configuration at the same batch (the launches a
  graph removes); the per-op dispatch cost measured on the run's tiny MLP times the ops of this
  call; or the intercept of time against bytes across the widths of the same MLP at batch 1 (two
  widths that differ only in their weights share the fixed cost);
- **the achieved rates**: bytes per second against the run's measured copy bandwidth, FLOP per
  second against its measured matmul rate for the dtype.

A point is overhead-bound when the fixed cost is at least half of its time; otherwise it is bound
by the resource whose roofline term is larger, and the share of that ceiling it reached says how
well the kernels used it. A point far below both ceilings is still memory- or compute-bound, at a
low share: the evidence then says that neither a fixed cost nor a ceiling explains its time.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.analysis.roofline.curves import Curve, MeasuredPoint, curves
from benchmarks.analysis.roofline.roofline_model import crossing_batch
from benchmarks.contract.results import Run
from benchmarks.gpus import Ceilings

OVERHEAD = "overhead"
MEMORY = "memory"
COMPUTE = "compute"
REGIMES = (OVERHEAD, MEMORY, COMPUTE)
OPS_PER_LAYER = 2  # an eager Linear+ReLU layer launches a matmul (with its bias) and a ReLU
TINY_WIDTH = 64  # the MLP whose batch-1 time is the per-op cost (benchmarks.profiles.TINY_WIDTH)


@dataclass(frozen=True)
class FixedCost:
    """The estimated fixed cost of one call and where the estimate comes from.

    source: "graph" (eager minus graph replay at this batch), "per-op" (ops × the per-op cost of the
    run's tiny MLP in this mode) or "widths" (the intercept of time against bytes across widths).
    """

    seconds: float
    source: str
    ops: int | None = None  # per-op: the ops of this call
    per_op_s: float | None = None  # per-op: the cost of one op
    reference: str = ""  # per-op: the configuration it was measured on, e.g. "8×64 MLP"


@dataclass(frozen=True)
class PointVerdict:
    """One measured point and what bounds it."""

    batch: int
    seconds: float
    regime: str  # overhead, memory or compute
    bytes_per_s: float  # achieved: counted bytes over the time
    flops_per_s: float  # achieved: counted FLOPs over the time
    bandwidth_share: float | None  # of the run's measured copy bandwidth
    compute_share: float | None  # of the run's measured matmul rate for this dtype
    fixed: FixedCost | None  # the fixed per-call cost, where the run allows an estimate

    @property
    def fixed_share(self) -> float | None:
        return self.fixed.seconds / self.seconds if self.fixed else None

    @property
    def share(self) -> float | None:
        """The share of its own ceiling this point reached (None for overhead)."""
        return {MEMORY: self.bandwidth_share, COMPUTE: self.compute_share}.get(self.regime)


@dataclass(frozen=True)
class Segment:
    """Consecutive points in one regime."""

    regime: str
    first: int  # batch
    last: int
    points: tuple[PointVerdict, ...]

    @property
    def share(self) -> float | None:
        """The median share of the regime's ceiling over the segment (None for overhead)."""
        shares = sorted(p.share for p in self.points if p.share is not None)
        return shares[len(shares) // 2] if shares else None


@dataclass(frozen=True)
class Diagnosis:
    curve: Curve
    points: tuple[PointVerdict, ...]
    segments: tuple[Segment, ...]
    predicted_knee: float | None  # where the roofline of the run's ceilings turns compute-bound
    reached: Ceilings | None  # the rates the kernels reached: see `reached_ceilings`
    reached_knee: float | None  # where the roofline of the reached ceilings turns compute-bound

    def at(self, batch: int) -> PointVerdict | None:
        return next((p for p in self.points if p.batch == batch), None)

    @property
    def first(self) -> PointVerdict | None:
        return self.points[0] if self.points else None

    @property
    def regimes(self) -> list[str]:
        return [s.regime for s in self.segments]


# --------------------------------------------------------------------------- the fixed cost


def _twin(run: Run, curve: Curve, mode: str) -> Curve | None:
    return next(
        (
            c
            for c in curves(run, curve.workload)
            if c.mode == mode and c.params == curve.params and c.dtype == curve.dtype and c.cache == curve.cache
        ),
        None,
    )


def _at(curve: Curve | None, batch: int) -> MeasuredPoint | None:
    return next((p for p in curve.points if p.batch == batch), None) if curve else None


def per_op_cost(run: Run, dtype: str, mode: str, exclude: Curve | None = None) -> tuple[float, str] | None:
    """(seconds per op, configuration) from the run's tiny resident MLP at batch 1 in this mode: its
    time over its ops. An upper bound on one op's fixed cost (it includes the op's tiny work). The
    tiny MLP is no evidence about itself: `exclude` names the curve being diagnosed."""
    for curve in curves(run, "mlp"):
        p = curve.params
        same = exclude is not None and (p, curve.mode, curve.cache) == (exclude.params, exclude.mode, exclude.cache)
        if not same and (p.get("width"), curve.dtype, curve.mode, curve.cache) == (TINY_WIDTH, dtype, mode, "resident"):
            first = _at(curve, 1)
            if first is not None:
                return first.median_s / (OPS_PER_LAYER * p["depth"]), curve.shape
    return None


def width_intercept(run: Run, curve: Curve, batch: int = 1) -> float | None:
    """The fixed cost of an MLP call from its width twins at one batch: the intercept of a line
    through (bytes, time) of the same depth, dtype, mode and cache state at two or more widths."""
    if curve.workload != "mlp":
        return None
    twins = [
        c
        for c in curves(run, "mlp")
        if c.params.get("depth") == curve.params.get("depth")
        and (c.dtype, c.mode, c.cache) == (curve.dtype, curve.mode, curve.cache)
    ]
    pairs = sorted((p.bytes, p.median_s) for c in twins if (p := _at(c, batch)) is not None)
    if len(pairs) < 2:
        return None
    (b0, t0), (b1, t1) = pairs[0], pairs[1]  # the two narrowest: the fixed cost weighs most there
    if b1 <= b0:
        return None
    return max(0.0, t0 - (t1 - t0) / (b1 - b0) * b0)


def fixed_cost(run: Run, curve: Curve, point: MeasuredPoint) -> FixedCost | None:
    """The fixed per-call cost of one point, from the best evidence the run holds."""
    if curve.mode in ("eager", "compile"):
        graph = _at(_twin(run, curve, "graph"), point.batch)
        if graph is not None:
            return FixedCost(max(0.0, point.median_s - graph.median_s), "graph")
    if curve.workload == "mlp":
        ops = OPS_PER_LAYER * curve.params["depth"]
        measured = per_op_cost(run, curve.dtype, curve.mode, curve) if curve.mode != "compile" else None
        if measured is not None:
            per_op, reference = measured
            return FixedCost(min(point.median_s, ops * per_op), "per-op", ops, per_op, reference)
        intercept = width_intercept(run, curve, point.batch)
        if intercept is not None:
            return FixedCost(min(point.median_s, intercept), "widths")
    return None


# --------------------------------------------------------------------------- the verdict


def verdict(point: MeasuredPoint, ceilings: Ceilings | None, fixed: FixedCost | None) -> PointVerdict:
    """What bounds one point: overhead when the fixed cost is at least half its time, else the
    resource whose roofline term is larger."""
    t = point.median_s
    bandwidth, rate = point.bytes / t, point.flops / t
    bw_share = bandwidth / ceilings.bytes_per_s if ceilings else None
    fl_share = rate / ceilings.flops_per_s if ceilings else None
    if fixed is not None and fixed.seconds >= 0.5 * t:
        regime = OVERHEAD
    elif ceilings is None:
        regime = MEMORY if point.flops < point.bytes else COMPUTE  # no ceilings: intensity below 1 FLOP/B
    else:
        regime = MEMORY if point.bytes / ceilings.bytes_per_s >= point.flops / ceilings.flops_per_s else COMPUTE
    return PointVerdict(point.batch, t, regime, bandwidth, rate, bw_share, fl_share, fixed)


def segments(points: Sequence[PointVerdict]) -> tuple[Segment, ...]:
    found: list[list[PointVerdict]] = []
    for p in points:
        if found and found[-1][-1].regime == p.regime:
            found[-1].append(p)
        else:
            found.append([p])
    return tuple(Segment(group[0].regime, group[0].batch, group[-1].batch, tuple(group)) for group in found)


def flat_part(points: Sequence[PointVerdict], predicted_knee: float | None) -> list[PointVerdict]:
    """The points the roofline of the run's ceilings calls memory-bound (batch up to its ridge batch), and at
    least the first: the small batches, where a kernel streams the weights."""
    return [p for i, p in enumerate(points) if i == 0 or (predicted_knee is not None and p.batch <= predicted_knee)]


def reached_ceilings(points: Sequence[PointVerdict], predicted_knee: float | None) -> Ceilings | None:
    """The rates the curve's own kernels reached: the median bandwidth of its flat part (the rate at which its
    small-batch kernels stream the weights; batch 1 alone may run another kernel) and its best FLOP rate (the
    shape's matmul rate, reached at large batch)."""
    if not points:
        return None
    streaming = statistics.median(p.bytes_per_s for p in flat_part(points, predicted_knee))
    return Ceilings(flops_per_s=max(p.flops_per_s for p in points), bytes_per_s=streaming)


def diagnose(curve: Curve, run: Run | None = None) -> Diagnosis:
    """The regime of every point of `curve`, with its evidence, and the knees the ceilings imply."""
    run = run or curve.run
    verdicts = tuple(verdict(p, curve.ceilings, fixed_cost(run, curve, p)) for p in curve.points)
    triples = [(p.batch, p.flops, p.bytes) for p in curve.points]
    predicted = crossing_batch(triples, curve.ceilings) if curve.ceilings and len(triples) >= 2 else None
    reached = reached_ceilings(verdicts, predicted)
    reached_knee = crossing_batch(triples, reached) if reached and len(triples) >= 2 else None
    return Diagnosis(curve, verdicts, segments(verdicts), predicted, reached, reached_knee)


def share_words(share: float | None) -> str:
    """A share of a ceiling as a whole percentage ('49 %'), or '–'."""
    return "–" if share is None or not math.isfinite(share) else f"{100 * share:.0f} %"
