"""A run's curves: its points per workload, dtype, mode and cache, with the numbers stated about them.

The docs pages take the runs they show from `benchmarks.site.data` and their curves from here;
`benchmarks.site.charts` draws them. Everything here is computed from results files (or,
for the theory page, from `benchmarks.gpus`), never typed in.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.analysis.roofline.roofline_model import Knee, crossing_batch, detect_knee, predicted_time, run_ceilings
from benchmarks.contract.results import Run
from benchmarks.gpus import BYTES_PER_ELEMENT, Ceilings
from benchmarks.workloads import ROWS, WORKLOADS, BatchUnit, Workload

DTYPE_ORDER = ("bfloat16", "float16", "float32", "tfloat32", "float64")
MODE_ORDER = ("graph", "eager")


# --------------------------------------------------------------------------- curves


@dataclass(frozen=True)
class MeasuredPoint:
    batch: int
    median_s: float
    q1_s: float
    q3_s: float
    flops: float
    bytes: float
    predicted_s: float | None


@dataclass
class Curve:
    """One workload configuration of one run, measured at many batch sizes."""

    run: Run
    workload: str
    params: dict[str, Any]
    dtype: str
    mode: str
    cache: str
    weight_copies: int  # the most weight copies any of its points rotated through
    points: list[MeasuredPoint]
    not_ok: list[dict[str, Any]] = field(default_factory=list)
    ceilings: Ceilings | None = None
    predicted_knee: float | None = None
    knee: Knee | None = None

    @property
    def width(self) -> int | None:
        return self.params.get("width")

    @property
    def spec(self) -> Workload | None:
        return WORKLOADS.get(self.workload)

    @property
    def label(self) -> str:
        """Short name of the configuration among its siblings, e.g. 'width 1024'."""
        if self.spec is None:
            return " ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return self.spec.label(self.params)

    @property
    def shape(self) -> str:
        """The configuration on its own, e.g. '8×1024 MLP'."""
        return self.spec.shape(self.params) if self.spec else f"{self.workload} {self.label}"

    @property
    def unit(self) -> BatchUnit:
        """What one element of the batch is: rows, images or sequences."""
        return self.spec.unit if self.spec else ROWS

    @property
    def batches(self) -> list[int]:
        return [p.batch for p in self.points]

    def dips(self) -> list[tuple[MeasuredPoint, MeasuredPoint]]:
        """(smaller, larger) consecutive batches where the larger one is faster beyond the spread of both: every
        quartile of the larger below every quartile of the smaller. A roofline never predicts one."""
        return [(a, b) for a, b in zip(self.points, self.points[1:]) if b.q3_s < a.q1_s]

    def records(self, status: str | None = None) -> list[dict[str, Any]]:
        """The run's records behind this curve (with this status; every status when None), by batch."""
        found = [
            r
            for r in self.run.records
            if (r["workload"], r["params"], r["dtype"], r["mode"], r["cache"])
            == (self.workload, self.params, self.dtype, self.mode, self.cache)
            and (status is None or r["status"] == status)
        ]
        return sorted(found, key=lambda r: r["batch"])

    def knee_ratio(self) -> float | None:
        """Measured knee over the ridge batch (1 means the roofline was right)."""
        if self.knee is None or not self.predicted_knee:
            return None
        return self.knee.batch / self.predicted_knee

    def overhead_ratio(self) -> float | None:
        """Measured over predicted time at the smallest batch: how far above the roofline it starts."""
        first = self.points[0] if self.points else None
        if first is None or not first.predicted_s:
            return None
        return first.median_s / first.predicted_s


def _sort_key(curve: Curve) -> tuple:
    dtype = DTYPE_ORDER.index(curve.dtype) if curve.dtype in DTYPE_ORDER else len(DTYPE_ORDER)
    mode = MODE_ORDER.index(curve.mode) if curve.mode in MODE_ORDER else len(MODE_ORDER)
    return (curve.workload, dtype, curve.dtype, mode, curve.cache, sorted(curve.params.items()))


_CURVES: weakref.WeakKeyDictionary[Run, dict[str, list[Curve]]] = weakref.WeakKeyDictionary()


def curves(run: Run, workload: str = "mlp") -> list[Curve]:
    """The run's curves for one workload, with predictions from the run's own ceilings. Built once per
    run and workload (a run is read-only once loaded); each call returns a new list of the same curves."""
    cached = _CURVES.setdefault(run, {})
    if workload not in cached:
        cached[workload] = _build_curves(run, workload)
    return list(cached[workload])


def _build_curves(run: Run, workload: str) -> list[Curve]:
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for record in run.records:
        if record["workload"] != workload:
            continue
        key = (
            tuple(sorted(record["params"].items())),
            record["dtype"],
            record["mode"],
            record["cache"],
        )
        groups[key].append(record)
    found = []
    for (params, dtype, mode, cache), records in groups.items():
        copies = max(record.get("weight_copies", 1) for record in records)
        ceilings = run_ceilings(run.ceilings, dtype)
        points, not_ok = [], []
        for record in sorted(records, key=lambda r: r["batch"]):
            if record["status"] != "ok":
                not_ok.append(record)
                continue
            timing = record.get("timing") or {}
            median = record["median_s"]
            points.append(
                MeasuredPoint(
                    batch=record["batch"],
                    median_s=median,
                    q1_s=timing.get("q1_s", median),
                    q3_s=timing.get("q3_s", median),
                    flops=record["flops"],
                    bytes=record["bytes"],
                    predicted_s=roofline_s(workload, record, ceilings) if ceilings else None,
                )
            )
        curve = Curve(run, workload, dict(params), dtype, mode, cache, copies, points, not_ok, ceilings)
        if ceilings and len({p.batch for p in points}) >= 2:
            curve.predicted_knee = crossing_batch([(p.batch, p.flops, p.bytes) for p in points], ceilings)
        curve.knee = detect_knee([p.batch for p in points], [p.median_s for p in points])
        found.append(curve)
    return sorted(found, key=_sort_key)


def roofline_s(workload: str, record: dict[str, Any], ceilings: Ceilings) -> float:
    """The roofline of one measured call: for a workload whose call runs kinds of work one after the other (a
    decoder's matmuls, then its attention), the sum of each one's roofline, as `benchmarks.analysis.roofline.predict`
    and the published page model it; else max(FLOPs / F, bytes / BW) of the recorded totals."""
    spec, size = WORKLOADS.get(workload), bytes_per_element(record["dtype"])
    if spec is None or spec.operations is None or size is None or spec.problems(record["params"]):
        return predicted_time(record["flops"], record["bytes"], ceilings)
    operations = spec.operations(record["params"], size, record["batch"])
    return sum(predicted_time(flops, moved, ceilings) for _, flops, moved in operations)


def predicted_at(curve: Curve, batch: float) -> float | None:
    """Roofline time at any batch, from the curve's FLOPs and bytes (affine in the batch)."""
    if curve.ceilings is None or len(curve.points) < 2:
        return None
    first, last = curve.points[0], curve.points[-1]
    span = last.batch - first.batch
    flops = first.flops + (last.flops - first.flops) * (batch - first.batch) / span
    moved = first.bytes + (last.bytes - first.bytes) * (batch - first.batch) / span
    return predicted_time(flops, moved, curve.ceilings)


def group_by(items: Iterable[Curve], *names: str) -> dict[tuple, list[Curve]]:
    """Curves grouped by attributes, keeping their order."""
    grouped: dict[tuple, list[Curve]] = {}
    for item in items:
        grouped.setdefault(tuple(getattr(item, n) for n in names), []).append(item)
    return grouped


def bytes_per_element(dtype: str) -> int | None:
    return BYTES_PER_ELEMENT.get(dtype)
