"""The roofline model against measurements others published.

For each row of the data file (`benchmarks.analysis.published.measurements_file`), the prediction for the same
configuration comes from `benchmarks.analysis.roofline.predict`, the code behind `python -m benchmarks predict`, on
the datasheet of the GPU used, and both sides are put in one unit: work per second (tokens, requests, images or
prompts), so that published ÷ predicted is the fraction of the roofline the published system reached (above 1:
faster than the model allows, so the configuration breaks one of its assumptions).

How a configuration is predicted, stated once here and on the page:

- a decode step of `batch` sequences at context c: `predict("decode", context=c)`; a published time per token
  is compared with the mean of the steps from the prompt's length to the last token's;
- a prefill of `batch` prompts: `predict("decode", phase="prefill")`;
- a generation with static batching (every request of the batch starts and ends together): the prefill, which
  yields the first token, then one decode step for each further token, each at its own context;
- a matrix product (kind `gemm`, the `linear` workload: batch M rows, K in, N out): its 2·M·N·K FLOPs over the
  predicted time, in TFLOP/s;
- a throughput benchmark of images: `batch` images per call at the predicted time per call; where the engine fuses
  the elementwise passes into the convolutions (departure `fused-elementwise`), kernel by kernel as deployed: each
  convolution with its BatchNorm, ReLU and residual add in one pass, its output kept in the GPU's L2 while it fits
  (`benchmarks.analysis.roofline.cost_model`), and the eager count beside it;
- tensor parallelism over n GPUs: each GPU does 1/n of the work, and every layer pays two ring all-reduces over
  the GPU's NVLink (`benchmarks.analysis.roofline.cost_model`);
  data parallelism: n copies, n times the work per second.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.analysis.published.measurements_file import Measurement, RowModel, read_published
from benchmarks.analysis.roofline.cost_model import EAGER, FUSED
from benchmarks.analysis.roofline.predict import COMPUTE, MEMORY, PredictedPoint, RidgeCount, predict, ridge_counts
from benchmarks.gpus import BYTES_PER_ELEMENT, Ceilings, find_gpu
from benchmarks.workloads import workload

# Departures that break an assumption of the model, as against details the source leaves unstated.
BREAKS = frozenset({"int8-weights", "fp8-mixed", "latency-bound", "power-limited"})
PER = {
    "ms/token": "tokens",
    "ms": "prompts",
    "tokens/s": "tokens",
    "tokens/s per GPU": "tokens",
    "requests/s": "requests",
    "samples/s": "images",
    "TFLOP/s": "TFLOP",
}


@dataclass(frozen=True)
class RowPrediction:
    per_second: float  # work per second, in the row's unit of work
    memory_s: float  # predicted time bound by memory, summed over the calls of one batch
    compute_s: float  # predicted time bound by compute
    prefill_s: float = 0.0  # of a generation: the prefill's share of the time

    @property
    def seconds(self) -> float:
        return self.memory_s + self.compute_s

    @property
    def bound(self) -> str:
        """What bounds most of the predicted time."""
        return COMPUTE if self.compute_s > self.memory_s else MEMORY


@dataclass(frozen=True)
class RooflineRowCheck:
    row: Measurement
    published: float  # work per second, as published or converted from a time
    prediction: RowPrediction
    per: str  # the unit of work: tokens, requests, images or prompts

    @property
    def predicted(self) -> float:
        return self.prediction.per_second

    @property
    def ratio(self) -> float:
        """Published ÷ predicted: the fraction of the roofline reached."""
        return self.published / self.predicted

    @property
    def breaks(self) -> list[str]:
        """The assumptions of the model this configuration breaks (departures in BREAKS), in the row's order."""
        return [d for d in self.row.model.departures if d in BREAKS]


@dataclass(frozen=True)
class KneeComparison:
    """A batch where a published curve bends, against the ridge batch in each dtype of its GPU: first under the
    count the registry states (`snippets.costs`), then under the other bound of the bytes where there is one."""

    row: Measurement
    predicted: dict[str, tuple[RidgeCount, ...]]  # dtype -> (the stated count, the other bound)

    @property
    def ratio(self) -> float | None:
        """Published ÷ the stated count's ridge batch in the dtype the row is modelled in."""
        found = self.predicted[self.row.model.dtype][0]
        return self.row.value / found.batch if found.batch and not found.on_ridge else None


def ceilings(model: RowModel) -> Ceilings:
    """The GPU's datasheet ceilings; under tensor parallelism, n GPUs' worth (for the knees and the share of the
    weights; the predictions themselves count each GPU's share of the work and the all-reduces between them)."""
    single = find_gpu(model.gpu).ceilings(model.dtype)
    n = model.gpus if model.parallelism == "tensor" else 1
    return Ceilings(single.flops_per_s * n, single.bytes_per_s * n)


def _call(model: RowModel, phase: str | None, context: int | None) -> PredictedPoint:
    params = {**model.params, "context": context, "phase": phase} if phase is not None else model.params
    gpu = find_gpu(model.gpu)
    if model.parallelism == "tensor":
        return predict(model.workload, params, gpu.ceilings(model.dtype), model.dtype, [model.batch],
                       tensor_parallel=model.gpus, interconnect=gpu.interconnect)[0]  # fmt: skip
    return predict(model.workload, params, ceilings(model), model.dtype, [model.batch])[0]


def _split(points: Sequence[PredictedPoint]) -> tuple[float, float]:
    """The predicted time in memory-bound and in compute-bound work: per operation where a call sums several (a
    decode step's matrix products and its attention each under their own bound), else per call."""
    memory = sum(_memory_bound_s(p) for p in points)
    return memory, sum(p.seconds for p in points) - memory


def _memory_bound_s(point: PredictedPoint) -> float:
    if point.operations and point.seconds == point.roofline_s:
        return sum(op.seconds for op in point.operations if op.bound != COMPUTE)
    return point.seconds if point.bound != COMPUTE else 0.0


@dataclass(frozen=True)
class Calls:
    """The calls a published figure's work takes in the model, and the work they do in the row's unit of work."""

    points: tuple[PredictedPoint, ...]
    work: float
    prefill: PredictedPoint | None = None  # of a generation or a prefill: the call that yields the first token

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.points)


def calls(model: RowModel, unit: str) -> Calls:
    """The predicted calls of a configuration and the work they do (see the module's docstring for how)."""
    copies = model.gpus if model.parallelism == "data" else 1
    if model.kind == "throughput":
        fused = "fused-elementwise" in model.departures and model.workload == "resnet50"
        point = _resnet50_point(model, fused=True) if fused else _call(model, None, None)
        return Calls((point,), copies * model.batch)
    if model.kind == "gemm":
        point = _call(model, None, None)
        return Calls((point,), point.flops / 1e12)
    if model.kind == "prefill":
        point = _call(model, "prefill", model.input_tokens)
        return Calls((point,), copies * model.batch, prefill=point)
    first = model.input_tokens
    if model.kind == "decode-step":
        steps = tuple(_call(model, "decode", first + k) for k in range(model.output_tokens))
        return Calls(steps, copies * model.batch * len(steps))
    prefill = _call(model, "prefill", first)
    steps = tuple(_call(model, "decode", first + k) for k in range(model.output_tokens - 1))
    work = model.batch * (model.output_tokens if PER[unit] == "tokens" else 1)
    return Calls((prefill, *steps), copies * work, prefill=prefill)


def predicted(model: RowModel, unit: str) -> RowPrediction:
    """The predicted work per second of a configuration (see the module's docstring for how)."""
    found = calls(model, unit)
    prefill_s = found.prefill.seconds if found.prefill is not None else 0.0
    return RowPrediction(found.work / found.seconds, *_split(found.points), prefill_s=prefill_s)


def published_per_second(row: Measurement) -> float:
    """The published figure as work per second: a time for one call of `batch` becomes batch ÷ time."""
    if row.unit in ("ms/token", "ms"):
        return row.model.batch / (row.value * 1e-3)
    if row.unit == "tokens/s per GPU":  # a tensor-parallel group's rate, published divided by its GPUs
        return row.value * row.model.gpus
    return row.value


def check(row: Measurement) -> RooflineRowCheck | None:
    """The comparison of one row; None for a row without a model or one about a knee."""
    if row.model is None or row.model.kind == "knee":
        return None
    return RooflineRowCheck(row, published_per_second(row), predicted(row.model, row.unit), PER[row.unit])


def checks(rows: Sequence[Measurement] | None = None) -> list[RooflineRowCheck]:
    rows = read_published() if rows is None else rows
    return [found for row in rows if (found := check(row)) is not None]


def knee_comparisons(rows: Sequence[Measurement] | None = None) -> list[KneeComparison]:
    rows = read_published() if rows is None else rows
    found = []
    for row in rows:
        if row.model is not None and row.model.kind == "knee":
            gpu = find_gpu(row.model.gpu)
            m = row.model
            counts = {dtype: ridge_counts(m.workload, m.params, gpu.ceilings(dtype), dtype) for dtype in gpu.peak_flops}
            found.append(KneeComparison(row, counts))
    return found


def ratio_summary(found: Sequence[RooflineRowCheck]) -> tuple[float, float, float]:
    """(median, lowest, highest) of published ÷ predicted."""
    ratios = [c.ratio for c in found]
    return statistics.median(ratios), min(ratios), max(ratios)


def _resnet50_point(model: RowModel, fused: bool) -> PredictedPoint:
    """One GPU's call, kernel by kernel as deployed: fused (each activation in the GPU's L2 while it fits) or
    eager (`benchmarks.analysis.roofline.cost_model`)."""
    gpu = find_gpu(model.gpu)
    return predict(model.workload, model.params, ceilings(model), model.dtype, [model.batch],
                   fusion=FUSED if fused else EAGER, l2_bytes=gpu.l2_bytes)[0]  # fmt: skip


def unfused_per_second(model: RowModel) -> float | None:
    """For a ResNet-50 row predicted with its elementwise passes fused: the predicted images per second when
    BatchNorm, ReLU, the residual adds and the pooling each take a pass of their own over memory, as an engine that
    does not fuse them runs it. None for any other row."""
    if model.workload != "resnet50" or "fused-elementwise" not in model.departures:
        return None
    copies = model.gpus if model.parallelism == "data" else 1
    return copies * model.batch / _resnet50_point(model, fused=False).seconds


def weight_share(model: RowModel) -> float:
    """The weights' share of the bytes of one call at the row's batch (how little the batch matters once small)."""
    spec = workload(model.workload)
    point = predict(model.workload, model.params, ceilings(model), model.dtype, [model.batch])[0]
    return spec.weight_bytes(model.params, BYTES_PER_ELEMENT[model.dtype]) / point.bytes
