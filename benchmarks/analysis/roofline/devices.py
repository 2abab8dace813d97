"""Every measured device read the same way: its measured ceilings against its datasheet, the MLP's ridge batch
against its measured knee, its curves normalised so that different machines share axes, and its software.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.roofline.calculator import datasheet_of, measured_curves
from benchmarks.analysis.roofline.curves import Curve
from benchmarks.analysis.roofline.diagnosis import diagnose
from benchmarks.contract.results import Run

COPY = "copy"


@dataclass(frozen=True)
class Ceiling:
    """One measured ceiling beside the datasheet's figure for it, where the device is in the datasheet."""

    name: str  # "copy" or a dtype
    measured: float  # bytes/s for the copy, FLOP/s for a matmul
    datasheet: float | None

    @property
    def fraction(self) -> float | None:
        return self.measured / self.datasheet if self.datasheet else None


@dataclass(frozen=True)
class KneeRow:
    curve: Curve
    ridge: float | None  # predicted from the run's measured ceilings, before looking at the curve
    reached: float | None  # at the rates the curve's own kernels reached: fitted to the curve, not a prediction
    measured: float | None  # the detected knee

    @property
    def ratio(self) -> float | None:
        """Measured knee ÷ the ridge batch predicted from the run's ceilings."""
        return self.measured / self.ridge if self.measured and self.ridge else None

    @property
    def fitted_ratio(self) -> float | None:
        """Measured knee ÷ the ridge batch at the rates reached: the MLP page's check that the curve is shaped like
        a roofline, flat then proportional, not an independent prediction of where it bends."""
        return self.measured / self.reached if self.measured and self.reached else None


@dataclass(frozen=True)
class NormalisedPoint:
    curve: Curve
    batch: int
    x: float  # batch ÷ the ridge batch of the run's ceilings
    measured: float  # latency ÷ the roofline's latency at batch 1
    predicted: float  # the roofline's latency, ÷ the same


def ceilings(run: Run) -> list[Ceiling]:
    """The copy bandwidth, then the matmul rate of every dtype measured, with the datasheet's figures."""
    sheet = datasheet_of(run)
    found = [Ceiling(COPY, run.ceilings["copy"]["bytes_per_s"], sheet.bandwidth if sheet else None)]
    for dtype, entry in sorted(run.ceilings.get("matmul", {}).items()):
        peak = sheet.peak_flops.get(dtype) if sheet else None
        found.append(Ceiling(dtype, entry["flops_per_s"], peak))
    return found


def knee_rows(run: Run) -> list[KneeRow]:
    """The run's depth-8 MLPs in the mode that shows the hardware (`calculator.measured_curves`)."""
    return [
        KneeRow(c, c.predicted_knee, diagnose(c, run).reached_knee, c.knee.batch if c.knee else None)
        for c in measured_curves(run)
    ]


def normalised(run: Run) -> list[NormalisedPoint]:
    """Each MLP curve's measured and predicted latency ÷ the roofline's latency at batch 1, against batch ÷ its
    ridge batch: the roofline then starts at 1, stays there until the batch reaches the ridge batch and rises along
    the diagonal after it, on every machine, and a measured point sits above it by the share of the bound its
    kernels missed. Curves without a ridge batch (never compute-bound at the run's ceilings) or without batch 1
    are left out."""
    found = []
    for curve in measured_curves(run):
        if not curve.predicted_knee or not curve.points or curve.points[0].batch != 1:
            continue
        bound = curve.points[0].predicted_s
        if not bound or not all(p.predicted_s for p in curve.points):
            continue
        for p in curve.points:
            x = p.batch / curve.predicted_knee
            found.append(NormalisedPoint(curve, p.batch, x, p.median_s / bound, p.predicted_s / bound))
    return found


def software(run: Run) -> dict[str, Any]:
    """What the run measured with: torch, CUDA, driver, Python and CPU threads (None where unrecorded)."""
    device = run.device
    return {name: device.get(name) for name in ("torch", "cuda", "driver", "python", "threads")}
