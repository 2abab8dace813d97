"""Every measured device read the same way: its measured ceilings against its datasheet, the MLP's ridge batch
against its measured knee, its curves normalised so that different machines share axes, and its software.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.calculator import datasheet_of, measured_curves
from benchmarks.analysis.curves import Curve
from benchmarks.analysis.diagnosis import diagnose
from benchmarks.results import Run

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
    ridge: float | None  # from the run's measured ceilings
    reached: float | None  # at the rates the curve's own kernels reached (`diagnosis.reached_ceilings`)
    measured: float | None  # the detected knee

    @property
    def ratio(self) -> float | None:
        """Measured knee ÷ the ridge batch at the rates reached: the MLP page's check of the knee."""
        return self.measured / self.reached if self.measured and self.reached else None


@dataclass(frozen=True)
class NormalisedPoint:
    curve: Curve
    batch: int
    x: float  # batch ÷ the ridge batch of the run's ceilings
    measured: float  # latency ÷ the latency at batch 1
    predicted: float | None  # the roofline's, normalised the same way


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
    """Each MLP curve as latency ÷ its latency at batch 1 against batch ÷ its ridge batch; curves without a ridge
    batch (never compute-bound at the run's ceilings) or without batch 1 are left out."""
    found = []
    for curve in measured_curves(run):
        if not curve.predicted_knee or not curve.points or curve.points[0].batch != 1:
            continue
        first = curve.points[0]
        for p in curve.points:
            predicted = p.predicted_s / first.predicted_s if p.predicted_s and first.predicted_s else None
            found.append(
                NormalisedPoint(curve, p.batch, p.batch / curve.predicted_knee, p.median_s / first.median_s, predicted)
            )
    return found


def software(run: Run) -> dict[str, Any]:
    """What the run measured with: torch, CUDA, driver, Python and CPU threads (None where unrecorded)."""
    device = run.device
    return {name: device.get(name) for name in ("torch", "cuda", "driver", "python", "threads")}
