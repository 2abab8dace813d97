"""Steps in a fine batch sweep: where one more row costs a jump in time, and which batches are free.

A jump counts only when it stands out from the run's own noise, estimated from the repeated
samples of each point (the standard error of each median), and from the curve's local trend
(a compute-bound curve rises a little with every row; that rise is not a step).

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.contract.results import Run

Z = 4.0  # a step must exceed this many combined standard errors
FLOOR = 1e-3  # and 0.1 % of the time, however quiet the run (samples may all be equal)
TREND_WINDOW = 8  # intervals on each side used to estimate the local rise per row
LEVEL_WINDOW = 3  # points on each side whose median is the level before and after an interval
MIN_SIDE = 2  # points needed on each side of an interval


@dataclass(frozen=True)
class CurvePoint:
    batch: int
    median_s: float
    stderr_s: float  # standard error of the median, from the point's samples


@dataclass(frozen=True)
class TileJump:
    before: int  # last batch before the jump
    after: int  # first batch after it
    jump_s: float  # rise beyond the local trend
    relative: float  # jump over the time before it
    sigmas: float  # jump over its combined standard error


def median_stderr(samples: Sequence[float]) -> float:
    """Standard error of the median of samples: 1.2533·σ/√n, with σ from the IQR (robust)."""
    ordered = sorted(samples)
    n = len(ordered)
    if n < 2:
        return math.inf
    q1, q3 = statistics.quantiles(ordered, n=4, method="inclusive")[0::2]
    sigma = (q3 - q1) / 1.349
    return 1.2533 * sigma / math.sqrt(n)


def curve_from_records(records: Sequence[dict]) -> list[CurvePoint]:
    """CurvePoints from ok results-file records of one configuration, sorted by batch."""
    points = [
        CurvePoint(r["batch"], r["median_s"], median_stderr(r["timing"]["samples_s"]))
        for r in records
        if r["status"] == "ok"
    ]
    return sorted(points, key=lambda p: p.batch)


def noise_level(points: Sequence[CurvePoint]) -> float:
    """The curve's typical relative standard error (median over its points)."""
    finite = [p.stderr_s / p.median_s for p in points if math.isfinite(p.stderr_s)]
    return statistics.median(finite) if finite else math.inf


def find_steps(points: Sequence[CurvePoint], z: float = Z) -> list[TileJump]:
    """Upward jumps in level, beyond the local trend, larger than z combined standard errors.

    The level on each side of an interval is the median of LEVEL_WINDOW points (after taking
    out the local trend), so one stray point can neither make nor hide a step.
    """
    points = sorted(points, key=lambda p: p.batch)
    n = len(points)
    if n < 2 * MIN_SIDE:
        return []
    widths = [points[i + 1].batch - points[i].batch for i in range(n - 1)]
    slopes = [(points[i + 1].median_s - points[i].median_s) / widths[i] for i in range(n - 1)]
    pooled = noise_level(points)  # a point's own error estimate from few samples is itself noisy
    candidates: list[tuple[float, TileJump]] = []  # (rise across this very interval, step)
    for i in range(MIN_SIDE - 1, n - MIN_SIDE):
        neighbours = slopes[max(0, i - TREND_WINDOW) : i] + slopes[i + 1 : i + 1 + TREND_WINDOW]
        slope = statistics.median(neighbours)  # time per row of the smooth part of the curve
        anchor = points[i].batch

        def level(side: Sequence[CurvePoint], slope: float = slope, anchor: int = anchor) -> float:
            return statistics.median(p.median_s - slope * (p.batch - anchor) for p in side)

        before = points[max(0, i + 1 - LEVEL_WINDOW) : i + 1]
        after = points[i + 1 : i + 1 + LEVEL_WINDOW]
        jump = level(after) - level(before)
        typical = math.sqrt(2) * pooled * points[i].median_s
        error = max(math.hypot(points[i].stderr_s, points[i + 1].stderr_s), typical, FLOOR * points[i].median_s)
        if math.isfinite(error) and jump > z * error:
            base = points[i].median_s
            rise = points[i + 1].median_s - base - slope * widths[i]
            candidates.append((rise, TileJump(points[i].batch, points[i + 1].batch, jump, jump / base, jump / error)))
    # one step shows in the overlapping windows of neighbouring intervals: it sits where the
    # single-interval rise is largest
    steps: list[tuple[float, TileJump]] = []
    for rise, step in candidates:
        if steps and _adjacent(points, steps[-1][1], step):
            if rise > steps[-1][0]:
                steps[-1] = (rise, step)
            continue
        steps.append((rise, step))
    return [step for _, step in steps]


def _adjacent(points: Sequence[CurvePoint], first: TileJump, second: TileJump) -> bool:
    batches = [p.batch for p in points]
    return batches.index(second.before) - batches.index(first.before) < LEVEL_WINDOW


def free_batch_up_to(points: Sequence[CurvePoint], slack: float | None = None) -> dict[int, int]:
    """For each batch, the largest measured batch that costs no more time (within the noise).

    `slack` is the relative tolerance; by default twice the curve's own noise level.
    """
    points = sorted(points, key=lambda p: p.batch)
    if slack is None:
        slack = 2 * noise_level(points)
    free: dict[int, int] = {}
    for i, point in enumerate(points):
        limit = point.median_s * (1 + slack)
        best = point.batch
        for later in points[i + 1 :]:
            if later.median_s <= limit:
                best = later.batch
        free[point.batch] = best
    return free


TILE_IN_NAME = (
    re.compile(r"tilesize(\d+)x(\d+)"),  # cuBLAS sm90 kernels: ..._tilesize128x256x64_...
    # cuBLAS's nvjet kernels (Hopper and later): nvjet_tst_128x256_64x4_2x1_v_bz_TNT,
    # nvjet_sm100_tst_64x16_64x16_2x4_2cta_..., nvjet_sm120_tst_mma_64x64x128_3_...
    re.compile(r"nvjet_(?:sm\d+_)?[a-z]+_(?:mma_)?(\d+)x(\d+)"),
    re.compile(r"_(\d+)x(\d+)_(?:\d+x\d+_)?"),  # CUTLASS/cuBLAS sm80 style: ..._bf16_128x128_32x3_...
)
TILE_MULTIPLES = (256, 128, 64)


def tile_shape(kernel: str) -> tuple[int, int] | None:
    """The output tile (rows, columns) a GEMM kernel's name announces, if it announces one."""
    for pattern in TILE_IN_NAME:
        match = pattern.search(kernel)
        if match:
            return int(match.group(1)), int(match.group(2))
    return None


def _gemm(kernels: Sequence[str]) -> str | None:
    names = [k for k in kernels if any(word in k.lower() for word in ("gemm", "gemv", "matmul", "nvjet"))]
    return names[0] if names else (kernels[0] if kernels else None)


def explain_step(
    step: TileJump,
    kernels: dict[int, Sequence[str]],
    out_features: int,
    sm_count: int | None,
) -> list[str]:
    """Candidate causes of a step, each stated with its evidence; [] when none fits.

    - a kernel switch: the recorded kernels on the two sides differ;
    - a tile boundary: a multiple of a side of the tile the kernel's name announces (of 64, 128 or 256
      when it announces none) lies in [before, after);
    - a wave boundary: with the kernel's tile, the number of output tiles crosses a multiple
      of the SM count (either tile dimension may be the batch's, so both are tried).
    """
    known_before = [b for b in kernels if b <= step.before]
    known_after = [b for b in kernels if b >= step.after]
    kernel_before = _gemm(kernels[max(known_before)]) if known_before else None
    kernel_after = _gemm(kernels[min(known_after)]) if known_after else None
    adjacent = known_before and known_after and max(known_before) == step.before and min(known_after) == step.after
    causes = [f"kernel switch: {kernel_before} → {kernel_after}"] if adjacent and kernel_before != kernel_after else []
    shape = tile_shape(kernel_after) if kernel_after else None
    causes += tile_boundary(step, shape)
    if shape and sm_count:
        causes += _wave_boundary(step, shape, out_features, sm_count)
    return causes


def tile_boundary(step: TileJump, shape: tuple[int, int] | None) -> list[str]:
    """A tile boundary inside the step: a multiple of a side of the tile the kernel names (either side
    may be the batch's), or, when the kernel names none, of a common tile size."""
    sizes = sorted(set(shape), reverse=True) if shape else list(TILE_MULTIPLES)
    for size in sizes:
        crossed = [m for m in range(size, step.after, size) if step.before <= m < step.after]
        if crossed:
            why = f"a side of the kernel's {shape[0]}×{shape[1]} tile" if shape else "a common tile size"
            return [f"tile boundary: batch crosses {crossed[0]} (a multiple of {size}, {why})"]
    return []


def tiles_and_waves(batch: int, out_features: int, tile: tuple[int, int], sm_count: int) -> tuple[int, int]:
    """Output tiles of a batch × out_features GEMM with (rows, columns) tiles, and the waves they take."""
    tiles = math.ceil(batch / tile[0]) * math.ceil(out_features / tile[1])
    return tiles, math.ceil(tiles / sm_count)


def _wave_boundary(step: TileJump, shape: tuple[int, int], out_features: int, sm_count: int) -> list[str]:
    for tile in {shape, shape[::-1]}:
        _, before = tiles_and_waves(step.before, out_features, tile, sm_count)
        tiles, after = tiles_and_waves(step.after, out_features, tile, sm_count)
        if after > before:
            return [
                f"wave boundary: {tile[0]}×{tile[1]} tiles, {tiles} tiles need {after} waves "
                f"on {sm_count} SMs (was {before})"
            ]
    return []


# --------------------------------------------------------------------------- one run's sweeps


def linear_groups(run: Run) -> dict[tuple, list[dict[str, Any]]]:
    """(dtype, mode, cache, sorted params) -> the run's Linear-sweep records of that configuration."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for record in run.records:
        if record["workload"] == "linear":
            key = (record["dtype"], record["mode"], record["cache"], tuple(sorted(record["params"].items())))
            groups.setdefault(key, []).append(record)
    return groups


def plateaus(points: Sequence[CurvePoint], free: dict[int, int]) -> list[tuple[int, int]]:
    """Runs of batch sizes that cost no more than the first of the run, in batch order."""
    found, index = [], 0
    batches = [p.batch for p in points]
    while index < len(points):
        start = points[index].batch
        end = free[start]
        found.append((start, end))
        index = batches.index(end) + 1
    return found


def free_ranges(points: Sequence[CurvePoint], steps: Sequence[TileJump]) -> list[tuple[int, int]]:
    """The plateaus that a detected step ends: batch ranges whose sizes all cost about the same, followed by
    a jump larger than the noise. On a curve without steps any stretch of equal times is the noise of a
    smooth curve, not a range where rows come free."""
    ends = {step.before for step in steps}
    return [(start, end) for start, end in plateaus(points, free_batch_up_to(points)) if end > start and end in ends]


@dataclass(frozen=True)
class FineSweep:
    """One configuration's fine sweep: its points, steps, their candidate causes and free ranges."""

    dtype: str
    mode: str
    cache: str
    params: dict[str, Any]
    points: list[CurvePoint]
    steps: list[TileJump]
    causes: list[list[str]]  # per step; [] when nothing explains it
    noise: float  # typical relative standard error of a point's median
    free_ranges: list[tuple[int, int]] = field(default_factory=list)  # plateaus that end at a detected step

    @property
    def explained(self) -> int:
        return sum(bool(cause) for cause in self.causes)


MIN_SWEEP_POINTS = 4


def sweeps(run: Run) -> list[FineSweep]:
    """Every Linear sweep of the run with at least MIN_SWEEP_POINTS measured batches, analysed."""
    found = []
    sm_count = run.device.get("sm_count")
    for (dtype, mode, cache, params), records in sorted(linear_groups(run).items()):
        points = curve_from_records(records)
        if len(points) < MIN_SWEEP_POINTS:
            continue
        params = dict(params)
        steps = find_steps(points)
        kernels = {r["batch"]: r["kernels"] for r in records if r.get("kernels")}
        causes = [explain_step(step, kernels, params.get("out_features", 0), sm_count) for step in steps]
        free = free_ranges(points, steps)
        found.append(FineSweep(dtype, mode, cache, params, points, steps, causes, noise_level(points), free))
    return found
