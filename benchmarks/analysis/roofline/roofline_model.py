"""The roofline model and the knee detector.

A workload's time is at least max(FLOPs / peak FLOP/s, bytes / bandwidth). Predictions use
the ceilings measured in the same run; the knee detector reads a measured curve and says
where time stops being flat and starts to grow with the batch.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.gpus import Ceilings


def run_ceilings(ceilings: dict[str, Any], dtype: str) -> Ceilings | None:
    """The measured ceilings of a run's `ceilings` section for one dtype, if it has them."""
    matmul = ceilings.get("matmul", {}).get(dtype)
    copy = ceilings.get("copy")
    if not matmul or not copy:
        return None
    return Ceilings(flops_per_s=matmul["flops_per_s"], bytes_per_s=copy["bytes_per_s"])


def predicted_time(flops: float, bytes_moved: float, ceilings: Ceilings) -> float:
    """Roofline lower bound on the time of one call, in seconds."""
    return max(flops / ceilings.flops_per_s, bytes_moved / ceilings.bytes_per_s)


def bound_by(flops: float, bytes_moved: float, ceilings: Ceilings) -> str:
    """'compute' or 'memory': which term of the roofline is larger."""
    return "compute" if flops / ceilings.flops_per_s >= bytes_moved / ceilings.bytes_per_s else "memory"


def affine_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of y against x; a single x gives slope 0."""
    n = len(xs)
    if n == 0:
        raise ValueError("affine_fit needs at least one point")
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx == 0:
        return mean_y, 0.0
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sxx
    return mean_y - slope * mean_x, slope


def critical_batch(points: Iterable[tuple[int, float, float]], ceilings: Ceilings) -> float | None:
    """Batch where compute time equals memory time, from (batch, flops, bytes) points.

    FLOPs and bytes of the workloads here are affine in the batch (a fixed weight term plus
    a per-row term), so two or more points determine them. Returns None when the workload
    never becomes compute-bound (its per-row intensity is below the ridge).
    """
    points = sorted(set(points))
    if len({batch for batch, _, _ in points}) < 2:
        raise ValueError("critical_batch needs points at two or more batch sizes")
    batches = [float(b) for b, _, _ in points]
    flops0, flops_per_row = affine_fit(batches, [f for _, f, _ in points])
    bytes0, bytes_per_row = affine_fit(batches, [m for _, _, m in points])
    # flops0 + a·b = (bytes0 + c·b)·(F/BW)  =>  b = (bytes0·r - flops0) / (a - c·r)
    ratio = ceilings.ridge_intensity
    denominator = flops_per_row - bytes_per_row * ratio
    if denominator <= 0:
        return None
    return max((bytes0 * ratio - flops0) / denominator, 0.0)


def crossing_batch(points: Iterable[tuple[int, float, float]], ceilings: Ceilings) -> float | None:
    """Batch where compute time overtakes memory time, following the measured points' own FLOPs and
    bytes: linear between neighbouring batches (exact where they are affine, as for most workloads
    here) and along the first and last segments beyond them. Unlike `critical_batch` it does not
    assume one line through every point, so a workload whose bytes stop growing (an MoE layer once
    its batch touches every expert) gets the knee where its roofline bends. 0 when compute-bound
    from the start; None when never compute-bound.
    """
    points = sorted({b: (b, f, m) for b, f, m in points}.values())
    if len(points) < 2:
        raise ValueError("crossing_batch needs points at two or more batch sizes")

    def gap(point) -> float:  # compute time minus memory time
        return point[1] / ceilings.flops_per_s - point[2] / ceilings.bytes_per_s

    gaps = [gap(p) for p in points]
    if gaps[0] >= 0:  # compute-bound at the first point: where the first segment's line crosses zero
        (b0, *_), (b1, *_), g0, g1 = points[0], points[1], gaps[0], gaps[1]
        return max(b0 - (b1 - b0) * g0 / (g1 - g0), 0.0) if g1 > g0 else 0.0
    for (b0, *_), (b1, *_), g0, g1 in zip(points, points[1:], gaps, gaps[1:]):
        if g0 < 0 <= g1:
            return b0 + (b1 - b0) * (-g0) / (g1 - g0)  # where the segment's line crosses zero
    (b0, *_), (b1, *_) = points[-2:]
    g0, g1 = gaps[-2:]
    if g1 < 0 and g1 > g0:  # still memory-bound but closing in: the last segment's line crosses later
        return b1 + (b1 - b0) * (-g1) / (g1 - g0)
    return None


@dataclass(frozen=True)
class Knee:
    """Where a measured latency curve turns from flat to growing.

    `batch` is the breakpoint of a two-segment fit of log(time) against log(batch);
    `slope_below` and `slope_above` are the fitted log-log slopes on each side (0 is flat,
    1 is time proportional to batch).
    """

    batch: float
    slope_below: float
    slope_above: float
    time_at_knee_s: float


def _solve3(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Solve a 3×3 linear system by Gaussian elimination with pivoting."""
    m = [[*row, rhs] for row, rhs in zip(a, b)]
    for col in range(3):
        pivot = max(range(col, 3), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-12:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for row in range(3):
            if row != col:
                factor = m[row][col] / m[col][col]
                m[row] = [v - factor * p for v, p in zip(m[row], m[col])]
    return [m[i][3] / m[i][i] for i in range(3)]


class _HingeSums:
    """Fits of y = c0 + c1·x + c2·max(0, x - knee) to one curve, for many knees. The sums the normal equations
    need are gathered once: for any knee, those of the points past it come from suffix sums, so each knee tried
    costs one pass (its squared error) instead of a dozen."""

    def __init__(self, xs: list[float], ys: list[float]):
        self.xs, self.ys = xs, ys
        self.n = float(len(xs))
        self.sx, self.sxx = sum(xs), sum(x * x for x in xs)
        self.sy, self.sxy = sum(ys), sum(x * y for x, y in zip(xs, ys))
        # suffix[i]: (count, Σx, Σx², Σy, Σxy) over the points i.. (xs ascending)
        self.suffix = [(0.0, 0.0, 0.0, 0.0, 0.0)]
        for x, y in zip(reversed(xs), reversed(ys)):
            c, s1, s2, t1, t2 = self.suffix[-1]
            self.suffix.append((c + 1, s1 + x, s2 + x * x, t1 + y, t2 + x * y))
        self.suffix.reverse()

    def fit(self, knee_x: float) -> tuple[float, list[float]] | None:
        """(squared error, coefficients) of the fit with its knee at `knee_x`; None when they are not determined."""
        first = next((i for i, x in enumerate(self.xs) if x > knee_x), len(self.xs))
        c, s1, s2, t1, t2 = self.suffix[first]
        sh = s1 - knee_x * c  # Σh, h = max(0, x - knee)
        sxh = s2 - knee_x * s1
        shh = s2 - 2 * knee_x * s1 + knee_x * knee_x * c
        shy = t2 - knee_x * t1
        ata = [[self.n, self.sx, sh], [self.sx, self.sxx, sxh], [sh, sxh, shh]]
        coef = _solve3(ata, [self.sy, self.sxy, shy])
        if coef is None:
            return None
        c0, c1, c2 = coef
        xs, ys = self.xs, self.ys  # below the knee the hinge term is zero
        sse = sum((c0 + c1 * xs[i] - ys[i]) ** 2 for i in range(first))
        sse += sum((c0 + c1 * xs[i] + c2 * (xs[i] - knee_x) - ys[i]) ** 2 for i in range(first, len(xs)))
        return sse, coef


MIN_SLOPE_ABOVE = 0.5  # time must grow at least like batch**0.5 past the knee
MIN_SLOPE_CHANGE = 0.3  # and bend by at least this much


def detect_knee(batches: Sequence[float], times: Sequence[float], grid: int = 400) -> Knee | None:
    """Find the knee of a latency curve, or None if it has no clear flat-then-growing shape.

    Fits a continuous two-segment line to log(time) against log(batch), trying breakpoints on
    a fine grid between the second-smallest and second-largest batch (so each side keeps at
    least two points), and keeps the best. A knee is reported only when the curve grows past
    it (slope >= MIN_SLOPE_ABOVE) and bends (slope change >= MIN_SLOPE_CHANGE).
    """
    pairs = sorted((float(b), float(t)) for b, t in zip(batches, times) if b > 0 and t > 0)
    if len(pairs) < 4:
        return None
    xs = [math.log(b) for b, _ in pairs]
    ys = [math.log(t) for _, t in pairs]
    low, high = xs[1], xs[-2]
    if high <= low:
        return None
    best: tuple[float, float, list[float]] | None = None
    sums = _HingeSums(xs, ys)
    for step in range(grid + 1):
        knee_x = low + (high - low) * step / grid
        fit = sums.fit(knee_x)
        if fit is not None and (best is None or fit[0] < best[0]):
            best = (fit[0], knee_x, fit[1])
    if best is None:
        return None
    _, knee_x, (c0, c1, c2) = best
    slope_above = c1 + c2
    if slope_above < MIN_SLOPE_ABOVE or c2 < MIN_SLOPE_CHANGE:
        return None
    return Knee(
        batch=math.exp(knee_x),
        slope_below=c1,
        slope_above=slope_above,
        time_at_knee_s=math.exp(c0 + c1 * knee_x),
    )
