"""The three regimes a forward pass can be in, read off a run: overhead, memory, compute.

Everything here is computed from a results file: the bandwidth plateaus of the working-set
curve, the per-op cost of a tiny network, the weight bandwidth of one MLP across widths with its
weights resident in cache or rotated through memory, and the answers to a three-question test.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.roofline.curves import Curve, bytes_per_element, curves, group_by
from benchmarks.contract.results import Run
from snippets.costs import mlp_cost

OPS_PER_LAYER = 2  # an eager Linear+ReLU layer launches a matmul (with its bias) and a ReLU


# --------------------------------------------------------------------------- ceiling curves


def bandwidth_points(run: Run, kind: str) -> list[tuple[int, float]]:
    """(working-set bytes, bytes/s) of the run's copy or read curve, measured points only."""
    found = run.ceilings.get("curves", {}).get("bandwidth", [])
    return sorted((e["working_set_bytes"], e["bytes_per_s"]) for e in found if e["kind"] == kind and "bytes_per_s" in e)


def matmul_points(run: Run) -> dict[str, list[tuple[int, float]]]:
    """dtype -> (n, FLOP/s) of the run's matmul curve, measured points only."""
    by_dtype: dict[str, list[tuple[int, float]]] = {}
    for entry in run.ceilings.get("curves", {}).get("matmul", []):
        if "flops_per_s" in entry:
            by_dtype.setdefault(entry["dtype"], []).append((entry["n"], entry["flops_per_s"]))
    return {dtype: sorted(points) for dtype, points in by_dtype.items()}


def cache_levels(run: Run) -> list[dict[str, Any]]:
    """The device's data-cache levels, smallest first: [{'name': 'L2', 'bytes': ...}, ...]."""
    levels = run.device.get("cache_levels") or []
    if not levels and run.device.get("l2_bytes"):
        name = "L2" if run.device.get("kind") == "cuda" else "last-level cache"
        return [{"name": name, "bytes": run.device["l2_bytes"]}]
    return [{"name": f"L{entry['level']}", "bytes": entry["bytes"]} for entry in levels]


@dataclass(frozen=True)
class Plateau:
    name: str  # "L1", "L2", ..., or "memory"
    low_bytes: int  # working sets measured for this plateau span low..high
    high_bytes: int
    bytes_per_s: float  # median over those working sets
    points: int


def plateaus(points: list[tuple[int, float]], levels: list[dict[str, Any]]) -> list[Plateau]:
    """Median bandwidth of the working sets that fit each cache level (more than half the level
    below, at most half of this one, so the edges between levels are left out), and of those
    at least four times the largest cache: memory."""
    found = []
    below = 0
    for level in levels:
        inside = [(w, bw) for w, bw in points if below / 2 < w <= level["bytes"] / 2]
        if inside:
            found.append(_plateau(level["name"], inside))
        below = level["bytes"]
    beyond = [(w, bw) for w, bw in points if levels and w >= 4 * levels[-1]["bytes"]]
    if beyond:
        found.append(_plateau("memory", beyond))
    return found


def cache_floor(run: Run, nbytes: float) -> tuple[str, float] | None:
    """(level, seconds) to read `nbytes` at the read plateau of the smallest cache level holding them."""
    levels = cache_levels(run)
    found = {p.name: p for p in plateaus(bandwidth_points(run, "read"), levels)}
    for level in levels:
        if nbytes <= level["bytes"] and level["name"] in found:
            return level["name"], nbytes / found[level["name"]].bytes_per_s
    return None


def _plateau(name: str, points: list[tuple[int, float]]) -> Plateau:
    return Plateau(name, points[0][0], points[-1][0], statistics.median(bw for _, bw in points), len(points))


def read_plateaus(run: Run) -> list[Plateau]:
    """The plateaus of the run's read curve: one per cache level it measured, then memory."""
    return plateaus(bandwidth_points(run, "read"), cache_levels(run))


def memory_read(run: Run) -> float | None:
    """Bytes/s of the read curve's memory plateau (working sets at least 4× the largest cache)."""
    return next((p.bytes_per_s for p in read_plateaus(run) if p.name == "memory"), None)


@dataclass(frozen=True)
class PlateauRow:
    """One level of the memory hierarchy, with the read and the copy plateau measured there."""

    name: str
    read: Plateau | None
    copy: Plateau | None


def plateau_rows(run: Run) -> list[PlateauRow]:
    """The read and copy plateaus side by side, one row per level either kernel found."""
    levels = cache_levels(run)
    found = {kind: {p.name: p for p in plateaus(bandwidth_points(run, kind), levels)} for kind in ("read", "copy")}
    names = dict.fromkeys([*found["read"], *found["copy"]])
    return [PlateauRow(name, found["read"].get(name), found["copy"].get(name)) for name in names]


def best_matmul(run: Run) -> dict[str, tuple[int, float]]:
    """dtype -> (n, FLOP/s) of the fastest square matmul the run measured in that dtype."""
    return {dtype: max(points, key=lambda p: p[1]) for dtype, points in matmul_points(run).items()}


# --------------------------------------------------------------------------- overhead


def mlp_curves(run: Run, width: int | None = None, cache: str | None = None) -> list[Curve]:
    """The run's depth-8 MLP curves, optionally of one width and cache state."""
    return [
        c
        for c in curves(run, "mlp")
        if c.params.get("depth") == 8
        and (width is None or c.params.get("width") == width)
        and (cache is None or c.cache == cache)
    ]


def point_at(curve: Curve, batch: int):
    return next((p for p in curve.points if p.batch == batch), None)


@dataclass(frozen=True)
class OverheadRow:
    width: int
    dtype: str
    mode: str
    ops: int  # kernels (CUDA) or ops (CPU) one eager call launches
    batch1_s: float
    per_op_s: float  # batch-1 time over ops: an upper bound on the cost of one launch in this mode
    roofline_s: float | None  # what the roofline says batch 1 should take
    bytes: float  # analytic bytes at batch 1


def overhead_rows(run: Run, width: int) -> list[OverheadRow]:
    """Batch-1 time per op of the resident `width` MLP in every mode the run measured."""
    rows = []
    for curve in mlp_curves(run, width, "resident"):
        first = point_at(curve, 1)
        if first is None:
            continue
        ops = OPS_PER_LAYER * curve.params["depth"]
        rows.append(
            OverheadRow(
                width,
                curve.dtype,
                curve.mode,
                ops,
                first.median_s,
                first.median_s / ops,
                first.predicted_s,
                first.bytes,
            )
        )
    return rows


def launch_cost_saved(rows: list[OverheadRow]) -> float | None:
    """Seconds per kernel that graph replay saves against eager calls: (eager − graph) / kernels."""
    by_mode = {(r.dtype, r.mode): r for r in rows}
    for (dtype, mode), eager in by_mode.items():
        graph = by_mode.get((dtype, "graph"))
        if mode == "eager" and graph:
            return (eager.batch1_s - graph.batch1_s) / eager.ops
    return None


def resident_curves(run: Run) -> list[Curve]:
    """The run's depth-8 MLPs with resident weights, measured at two batch sizes or more."""
    return [c for c in mlp_curves(run, None, "resident") if len(c.points) >= 2]


def smallest_resident_width(run: Run) -> int | None:
    """Width of the run's smallest resident MLP: the one whose time is the overhead itself."""
    return min((c.params["width"] for c in resident_curves(run)), default=None)


def tiny_eager_curve(run: Run) -> Curve | None:
    """The eager curve of the smallest resident MLP, when it was measured at batch 1."""
    width = smallest_resident_width(run)
    found = [c for c in resident_curves(run) if c.params["width"] == width and c.mode == "eager"]
    return next((c for c in found if point_at(c, 1)), None)


def mode_ratio(rows: list[OverheadRow], mode: str, base: str = "eager") -> float | None:
    """Batch-1 time in `mode` over the time in `base`, from the first row of each mode."""
    first = {r.mode: r for r in reversed(rows)}  # the first row of each mode
    if mode in first and base in first:
        return first[mode].batch1_s / first[base].batch1_s
    return None


# --------------------------------------------------------------------------- the cache trap


@dataclass(frozen=True)
class WeightBandwidth:
    width: int
    cache: str
    weight_bytes: float
    seconds: float
    bytes_per_s: float  # weight bytes per second at this batch: the bandwidth the weights were read at


def weight_bandwidth(run: Run, dtype: str, mode: str, batch: int = 1) -> list[WeightBandwidth]:
    """For every depth-8 MLP measured at `batch`: its weights' bytes over its time, per cache state."""
    rows = []
    for curve in mlp_curves(run):
        if curve.dtype != dtype or curve.mode != mode:
            continue
        p = point_at(curve, batch)
        if p is None:
            continue
        weights = weight_bytes(curve)
        rows.append(WeightBandwidth(curve.params["width"], curve.cache, weights, p.median_s, weights / p.median_s))
    return sorted(rows, key=lambda r: (r.cache, r.width))


def weight_bytes(curve: Curve) -> float:
    """The weight term of an MLP's analytic bytes: its cost at batch 0."""
    return mlp_cost(0, curve.params["width"], curve.params["depth"], bytes_per_element(curve.dtype) or 4)[1]


def cache_pairs(run: Run, width: int = 1024) -> dict[tuple[str, str], list[Curve]]:
    """(dtype, mode) -> the `width` MLP's curves timed both with weights resident and rotated."""
    twins = [c for c in mlp_curves(run, width) if len(c.points) >= 2]
    pairs = group_by(twins, "dtype", "mode")
    return {key: group for key, group in pairs.items() if len({c.cache for c in group}) >= 2}


def widest_weight_sweep(run: Run, batch: int = 1) -> tuple[str, str, list[WeightBandwidth]] | None:
    """(dtype, mode, rows) of the batch-1 width sweep with both cache states and the most rows."""
    best = None
    for dtype, mode in dict.fromkeys((c.dtype, c.mode) for c in mlp_curves(run)):
        rows = weight_bandwidth(run, dtype, mode, batch)
        if len({r.cache for r in rows}) == 2 and (best is None or len(rows) > len(best[2])):
            best = (dtype, mode, rows)
    return best


@dataclass(frozen=True)
class CacheTrap:
    """Where a hot loop overstates the weight bandwidth most, and how much at the widest width."""

    width: int  # the width with the largest resident ÷ rotated ratio
    weight_bytes: float
    ratio: float  # resident ÷ rotated weight bandwidth at that width
    widest: int  # the widest width measured in both states
    widest_bytes: float
    widest_ratio: float


def cache_trap(rows: list[WeightBandwidth]) -> CacheTrap | None:
    """The cache trap read off a width sweep measured with weights resident and rotated."""
    by = {(r.cache, r.width): r for r in rows}
    both = sorted(w for (cache, w) in by if cache == "resident" and ("rotated", w) in by)
    if not both:
        return None

    def ratio(width: int) -> float:
        return by[("resident", width)].bytes_per_s / by[("rotated", width)].bytes_per_s

    gap, widest = max(both, key=ratio), both[-1]
    resident = {w: by[("resident", w)].weight_bytes for w in (gap, widest)}
    return CacheTrap(gap, resident[gap], ratio(gap), widest, resident[widest], ratio(widest))


# --------------------------------------------------------------------------- which regime


@dataclass(frozen=True)
class RegimeSignals:
    """Ratios a reader can measure on their own model to tell the regimes apart."""

    label: str
    batch_ratio: float | None  # time at 4× the batch over time at the batch (small batches)
    width_ratio: float | None  # time at 2× the width over time at the width (batch 1), where measured
    graph_ratio: float | None  # graph-replay time over eager time at batch 1 (CUDA only)
    compile_ratio: float | None  # torch.compile time over eager time at batch 1


def regime_of(signals: RegimeSignals) -> str:
    """The regime the signals point to, by the test on the page."""
    faster = [r for r in (signals.graph_ratio, signals.compile_ratio) if r is not None]
    if faster and min(faster) < 0.6:  # replaying a graph, or compiling, cut the host's work
        return "overhead"
    if signals.width_ratio is not None and signals.width_ratio < 1.5:
        return "overhead"
    if signals.batch_ratio is not None and signals.batch_ratio > 2.5:
        return "compute"
    return "memory"


def signals(run: Run, curve: Curve, wider: Curve | None) -> RegimeSignals:
    """The test's three ratios for one curve (eager), from this run's other modes and widths."""

    def ratio(a, b):
        return a.median_s / b.median_s if a and b else None

    batch_ratio = ratio(point_at(curve, 4), point_at(curve, 1))
    width_ratio = ratio(point_at(wider, 1), point_at(curve, 1)) if wider else None
    twins = {
        c.mode: c
        for c in curves(run, "mlp")
        if c.params == curve.params and c.dtype == curve.dtype and c.cache == curve.cache
    }
    graph = twins.get("graph")
    compiled = twins.get("compile")
    return RegimeSignals(
        curve.label,
        batch_ratio,
        width_ratio,
        ratio(point_at(graph, 1), point_at(curve, 1)) if graph else None,
        ratio(point_at(compiled, 1), point_at(curve, 1)) if compiled else None,
    )


def wider_twin(run: Run, curve: Curve) -> Curve | None:
    """The MLP twice as wide as `curve`, in the same dtype, eager, with the same cache state."""
    return next(
        (
            c
            for c in mlp_curves(run, curve.params["width"] * 2)
            if c.dtype == curve.dtype and c.mode == "eager" and c.cache == curve.cache
        ),
        None,
    )


def signal_rows(run: Run) -> list[tuple[Curve, RegimeSignals]]:
    """The three-question test on every eager depth-8 MLP of the run measured at two batches or more."""
    eager = [c for c in mlp_curves(run) if c.mode == "eager" and len(c.points) >= 2]
    return [(curve, signals(run, curve, wider_twin(run, curve))) for curve in eager]
