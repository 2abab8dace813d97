"""Does the ridge batch hold? Each measured knee against the ridge batch of the rates the curve's own
kernels reached, and, where that misses, the evidence for why.

The roofline overlaps reading and arithmetic: t = max(bytes/BW, FLOPs/F). A call whose small batches are
set by a fixed cost that runs before its arithmetic instead of beside it (Python and dispatch on the same
CPU thread) follows the sum instead, t = t_flat + FLOPs/F, and bends earlier and more gently. Where the
ridge batch misses the measured knee, the check says whether that serial model fits the points better
and bends where the measurement does.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.analysis.roofline.diagnosis import Diagnosis, flat_part
from benchmarks.analysis.roofline.roofline_model import detect_knee

TOLERANCE = 1.5  # a prediction holds when measured ÷ predicted lies within [1/1.5, 1.5]


def within(ratio: float | None, tolerance: float = TOLERANCE) -> bool:
    return ratio is not None and 1 / tolerance <= ratio <= tolerance


def log_error(model: Sequence[float], measured: Sequence[float]) -> float:
    """Root-mean-square of log(model ÷ measured): 0.1 is about 10 % off on a typical point."""
    return math.sqrt(statistics.mean(math.log(m / t) ** 2 for m, t in zip(model, measured)))


@dataclass(frozen=True)
class KneeCheck:
    diagnosis: Diagnosis
    measured: float | None  # the measured knee
    reached: float | None  # the ridge batch at the rates the kernels reached
    flat_s: float  # the median time of the flat part
    serial: float | None  # the measured-knee detector run on t_flat + FLOPs/F
    roofline_error: float  # of max(bytes/BW, FLOPs/F) at the rates reached, over the measured points
    serial_error: float  # of t_flat + FLOPs/F

    @property
    def ratio(self) -> float | None:
        """Measured knee ÷ ridge batch at the rates reached."""
        return self.measured / self.reached if self.measured and self.reached else None

    @property
    def serial_ratio(self) -> float | None:
        return self.measured / self.serial if self.measured and self.serial else None

    @property
    def holds(self) -> bool:
        return within(self.ratio)

    @property
    def serial_explains(self) -> bool:
        """The ridge batch misses, and the serial model fits the points better and bends where they do."""
        return not self.holds and within(self.serial_ratio) and self.serial_error < self.roofline_error


def check(diagnosis: Diagnosis) -> KneeCheck | None:
    """The check of one curve, or None when it lacks the rates (no ceilings) or the points (fewer than two)."""
    curve, reached = diagnosis.curve, diagnosis.reached
    if reached is None or len(curve.points) < 2:
        return None
    flat_s = statistics.median(p.seconds for p in flat_part(diagnosis.points, diagnosis.predicted_knee))
    measured = [p.median_s for p in curve.points]
    roofline = [max(p.bytes / reached.bytes_per_s, p.flops / reached.flops_per_s) for p in curve.points]
    serial = [flat_s + p.flops / reached.flops_per_s for p in curve.points]
    bend = detect_knee(curve.batches, serial)
    return KneeCheck(
        diagnosis,
        curve.knee.batch if curve.knee else None,
        diagnosis.reached_knee,
        flat_s,
        bend.batch if bend else None,
        log_error(roofline, measured),
        log_error(serial, measured),
    )
