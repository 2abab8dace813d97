"""The roofline model against measurements others published.

For each row of the data file (`benchmarks.analysis.published_file`), the prediction for the same configuration
comes from `benchmarks.analysis.predict`, the code behind `python -m benchmarks predict`, on the datasheet of the
GPU used, and both sides are put in one unit: work per second (tokens, requests, images or prompts), so that
published ÷ predicted is the fraction of the roofline the published system reached (above 1: faster than the
model allows, so the configuration breaks one of its assumptions).

How a configuration is predicted, stated once here and on the page:

- a decode step of `batch` sequences at context c: `predict("decode", context=c)`; a published time per token
  is compared with the mean of the steps from the prompt's length to the last token's;
- a prefill of `batch` prompts: `predict("decode", phase="prefill")`;
- a generation with static batching (every request of the batch starts and ends together): the prefill, which
  yields the first token, then one decode step for each further token, each at its own context;
- a throughput benchmark of images: `batch` images per call at the predicted time per call; where the engine fuses
  the elementwise passes into the convolutions (departure `fused-elementwise`), with those passes left out of the
  bytes (`snippets.costs.resnet50_cost(fused=True)`), and the count with them given beside;
- tensor parallelism over n GPUs: one device with n times the rate and the bandwidth, and no communication;
  data parallelism: n copies, n times the work per second.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.analysis.predict import COMPUTE, MEMORY, PredictedPoint, RidgeCount, predict, ridge_counts
from benchmarks.analysis.published_file import Measurement, Model, read_published
from benchmarks.analysis.roofline import predicted_time
from benchmarks.gpus import BYTES_PER_ELEMENT, Ceilings, find_gpu
from benchmarks.workloads import workload
from snippets.costs import resnet50_cost

# Departures that break an assumption of the model, as against details the source leaves unstated.
BREAKS = frozenset({"tensor-parallel", "int8-weights", "fp8-mixed", "latency-bound", "power-limited"})
PER = {"ms/token": "tokens", "ms": "prompts", "tokens/s": "tokens", "requests/s": "requests", "samples/s": "images"}


@dataclass(frozen=True)
class Prediction:
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
class Check:
    row: Measurement
    published: float  # work per second, as published or converted from a time
    prediction: Prediction
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


def ceilings(model: Model) -> Ceilings:
    """The GPU's datasheet ceilings; under tensor parallelism, n GPUs' worth."""
    single = find_gpu(model.gpu).ceilings(model.dtype)
    n = model.gpus if model.parallelism == "tensor" else 1
    return Ceilings(single.flops_per_s * n, single.bytes_per_s * n)


def _call(model: Model, phase: str, context: int) -> PredictedPoint:
    params = {**model.params, "context": context, "phase": phase}
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


def predicted(model: Model, unit: str) -> Prediction:
    """The predicted work per second of a configuration (see the module's docstring for how)."""
    copies = model.gpus if model.parallelism == "data" else 1
    if model.kind == "throughput":
        if "fused-elementwise" in model.departures and model.workload == "resnet50":
            return _resnet50(model, fused=True)
        point = predict(model.workload, model.params, ceilings(model), model.dtype, [model.batch])[0]
        return Prediction(copies * model.batch / point.seconds, *_split([point]))
    if model.kind == "prefill":
        point = _call(model, "prefill", model.input_tokens)
        return Prediction(copies * model.batch / point.seconds, *_split([point]), prefill_s=point.seconds)
    first = model.input_tokens
    if model.kind == "decode-step":
        steps = [_call(model, "decode", first + k) for k in range(model.output_tokens)]
        mean = sum(p.seconds for p in steps) / len(steps)
        return Prediction(copies * model.batch / mean, *_split(steps))
    prefill = _call(model, "prefill", first)
    steps = [_call(model, "decode", first + k) for k in range(model.output_tokens - 1)]
    total = prefill.seconds + sum(p.seconds for p in steps)
    work = model.batch * (model.output_tokens if PER[unit] == "tokens" else 1)
    return Prediction(copies * work / total, *_split([prefill, *steps]), prefill_s=prefill.seconds)


def published_per_second(row: Measurement) -> float:
    """The published figure as work per second: a time for one call of `batch` becomes batch ÷ time."""
    if row.unit in ("ms/token", "ms"):
        return row.model.batch / (row.value * 1e-3)
    return row.value


def check(row: Measurement) -> Check | None:
    """The comparison of one row; None for a row without a model or one about a knee."""
    if row.model is None or row.model.kind == "knee":
        return None
    return Check(row, published_per_second(row), predicted(row.model, row.unit), PER[row.unit])


def checks(rows: Sequence[Measurement] | None = None) -> list[Check]:
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


def ratio_summary(found: Sequence[Check]) -> tuple[float, float, float]:
    """(median, lowest, highest) of published ÷ predicted."""
    ratios = [c.ratio for c in found]
    return statistics.median(ratios), min(ratios), max(ratios)


def _resnet50(model: Model, fused: bool) -> Prediction:
    flops, moved = resnet50_cost(model.batch, BYTES_PER_ELEMENT[model.dtype], model.params["resolution"], fused=fused)
    c = ceilings(model)
    copies = model.gpus if model.parallelism == "data" else 1
    compute, memory = flops / c.flops_per_s, moved / c.bytes_per_s
    split = (0.0, compute) if compute >= memory else (memory, 0.0)
    return Prediction(copies * model.batch / predicted_time(flops, moved, c), *split)


def unfused_per_second(model: Model) -> float | None:
    """For a ResNet-50 row predicted with its elementwise passes fused: the predicted images per second when
    BatchNorm, ReLU, the residual adds and the pooling each take a pass of their own over memory, as an engine that
    does not fuse them runs it. None for any other row."""
    if model.workload != "resnet50" or "fused-elementwise" not in model.departures:
        return None
    return _resnet50(model, fused=False).per_second


def weight_share(model: Model) -> float:
    """The weights' share of the bytes of one call at the row's batch (how little the batch matters once small)."""
    spec = workload(model.workload)
    point = predict(model.workload, model.params, ceilings(model), model.dtype, [model.batch])[0]
    return spec.weight_bytes(model.params, BYTES_PER_ELEMENT[model.dtype]) / point.bytes
