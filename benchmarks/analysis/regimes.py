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

from benchmarks.analysis.curves import Curve, bytes_per_element, curves
from benchmarks.results import Run
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
    if signals.graph_ratio is not None and signals.graph_ratio < 0.6:
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
