"""Mixture-of-experts runs: the cost of routing skew, what expert choice drops, and how far
routing moves the knee from the dense twin's.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.roofline.curves import Curve
from benchmarks.contract.results import Run


def moe_records(run: Run) -> list[dict[str, Any]]:
    """The run's measured (ok) MoE records, in file order."""
    return [r for r in run.records if r["workload"] == "moe" and r["status"] == "ok"]


def _token_choice(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["params"]["variant"] == "token-choice"]


# --------------------------------------------------------------------------- the cost of skew


@dataclass(frozen=True)
class SkewCell:
    """One token-choice measurement: a batch at one routing skew."""

    median_s: float
    max_load: int | None  # rows routed to the busiest expert
    touched: int | None  # experts that got any row
    ratio: float | None  # time over uniform routing's at the same batch; None for uniform or without one


@dataclass(frozen=True)
class SkewTable:
    """Token choice at every skew and batch of one layer shape, dtype and mode."""

    experts: int
    top_k: int
    dtype: str
    mode: str
    skews: list[float]
    cells: dict[int, dict[float, SkewCell]]  # batch -> skew -> cell, batches ascending

    def largest_batch_contrast(self) -> tuple[int, float, SkewCell, SkewCell] | None:
        """(batch, skew, skewed, uniform) at the largest batch and the largest skew, when both
        that skew (above 0) and uniform routing were measured there."""
        batch = max(self.cells)
        row, skew = self.cells[batch], max(self.skews)
        if skew > 0 and skew in row and 0.0 in row:
            return batch, skew, row[skew], row[0.0]
        return None


def _cell(record: dict[str, Any], uniform: dict[str, Any] | None, skew: float) -> SkewCell:
    routing = record.get("routing") or {}
    ratio = record["median_s"] / uniform["median_s"] if uniform and skew else None
    return SkewCell(record["median_s"], routing.get("max_load"), routing.get("touched_experts"), ratio)


def skew_tables(records: Sequence[dict[str, Any]]) -> list[SkewTable]:
    """Latency and busiest-expert load per token-choice skew at each batch, one table per shape."""
    by: dict[tuple, dict[int, dict[float, dict[str, Any]]]] = {}
    for r in _token_choice(records):
        p = r["params"]
        shape = (p["experts"], p["top_k"], r["dtype"], r["mode"])
        by.setdefault(shape, {}).setdefault(r["batch"], {})[p.get("skew", 0.0)] = r
    tables = []
    for (experts, top_k, dtype, mode), batches in sorted(by.items()):
        skews = sorted({s for row in batches.values() for s in row})
        cells = {
            batch: {skew: _cell(r, batches[batch].get(0.0), skew) for skew, r in sorted(batches[batch].items())}
            for batch in sorted(batches)
        }
        tables.append(SkewTable(experts, top_k, dtype, mode, skews, cells))
    return tables


@dataclass(frozen=True)
class ExpertLoad:
    """A token-choice measurement placed by the rows of its busiest expert."""

    experts: int
    top_k: int
    skew: float
    batch: int
    max_load: int
    median_s: float


def load_points(records: Sequence[dict[str, Any]]) -> list[ExpertLoad]:
    """Every token-choice measurement that recorded its routing, in file order."""
    return [
        ExpertLoad(
            r["params"]["experts"],
            r["params"]["top_k"],
            r["params"].get("skew", 0.0),
            r["batch"],
            r["routing"]["max_load"],
            r["median_s"],
        )
        for r in _token_choice(records)
        if r.get("routing")
    ]


def dropped_tokens(records: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    """(batch, tokens no expert took) of every expert-choice measurement, sorted, without repeats."""
    found = {
        (r["batch"], r["routing"]["dropped_tokens"])
        for r in records
        if r["params"]["variant"] == "expert-choice" and "dropped_tokens" in (r.get("routing") or {})
    }
    return sorted(found)


# --------------------------------------------------------------------------- the knee


def by_shape(curves: Iterable[Curve]) -> dict[tuple, list[Curve]]:
    """Curves grouped by (experts, top_k), keeping their order."""
    grouped: dict[tuple, list[Curve]] = {}
    for curve in curves:
        grouped.setdefault((curve.params.get("experts"), curve.params.get("top_k")), []).append(curve)
    return grouped


@dataclass(frozen=True)
class KneeShift:
    """The measured knee of uniform token choice against the dense twin's, and E/k."""

    experts: int
    top_k: int
    mode: str
    dense_knee: float
    uniform_knee: float

    @property
    def moved(self) -> float:
        return self.uniform_knee / self.dense_knee

    @property
    def expected(self) -> float:
        return self.experts / self.top_k


def knee_shift(curves: Sequence[Curve]) -> KneeShift | None:
    """KneeShift of one layer shape's curves (one dtype, mode and cache), when both knees were found."""
    dense = next((c for c in curves if c.params.get("variant") == "dense"), None)
    uniform = next((c for c in curves if c.params.get("variant") == "token-choice" and not c.params.get("skew")), None)
    if not (dense and uniform and dense.knee and uniform.knee):
        return None
    p = uniform.params
    return KneeShift(p["experts"], p["top_k"], uniform.mode, dense.knee.batch, uniform.knee.batch)
