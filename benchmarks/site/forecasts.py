"""The forecast beside a GPU prediction, in words and as JSON: the calibrated time, the kind of work whose
cross-validated error it carries, and the ceiling it comes from (`benchmarks.analysis.roofline.forecast`).

Pure Python (no torch, no numpy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.roofline.forecast import (
    Efficiency,
    expected_words,
    family_of,
    kind_of,
    percent,
    point_parts,
    precision_of,
)
from benchmarks.analysis.roofline.predict import PredictedPoint
from benchmarks.site import text

WHERE = "benchmarks/published/calibration.json"
CEILING_WORDS = "ceiling: the datasheet roofline, no efficiency applied (--ceiling)"


def efficiency_for(workload: str, dtype: str) -> Efficiency:
    return calibration_file.committed().efficiency(workload, dtype)


def forecast_s(point: PredictedPoint, workload: str, dtype: str) -> float:
    """The calibrated time of one predicted call."""
    return efficiency_for(workload, dtype).seconds(point_parts(point))


def error_words(workload: str, params: Mapping[str, Any], tensor_parallel: int = 1) -> str:
    """The error a forecast of this work carries, on one GPU or split over `tensor_parallel` GPUs."""
    kind = kind_of(workload, params)
    return expected_words(calibration_file.committed().expected_for(kind, tensor_parallel), kind)


def short_error(workload: str, params: Mapping[str, Any], tensor_parallel: int = 1) -> str:
    """'±18 % median, ±32 % p90' for a chart or a table cell; 'error unknown' without published figures."""
    found = calibration_file.committed().expected_for(kind_of(workload, params), tensor_parallel)
    return "error unknown" if found is None else f"±{percent(found.median)} median, ±{percent(found.p90)} p90"


def efficiency_words(workload: str, dtype: str) -> str:
    e = efficiency_for(workload, dtype)
    fixed = f", plus {text.fmt_time(e.fixed_s)} fixed per call" if e.fixed_s else ""
    return (
        f"memory-bound work at {percent(e.memory)} of the bandwidth, compute-bound at {percent(e.compute)} of the "
        f"FLOP/s{fixed} ({family_of(workload)} software, {precision_of(dtype)}, fitted to published figures: {WHERE})"
    )


def forecast_json(workload: str, params: Mapping[str, Any], dtype: str, tensor_parallel: int = 1) -> dict[str, Any]:
    kind = kind_of(workload, params)
    e = efficiency_for(workload, dtype)
    found = calibration_file.committed().expected_for(kind, tensor_parallel)
    return {
        "kind": kind,
        "scope": found.scope if found is not None else None,
        "family": family_of(workload),
        "precision": precision_of(dtype),
        "efficiency": {"memory": e.memory, "compute": e.compute, "fixed_s": e.fixed_s},
        "expected_error": None
        if found is None
        else {"median": found.median, "p90": found.p90, "within_30": found.within_30, "figures": found.figures},
        "words": expected_words(found, kind),
        "from": WHERE,
    }


def chart_line(workload: str, params: Mapping[str, Any], dtype: str | None = None) -> str:
    """What a chart of a GPU prediction draws, for its subtitle."""
    kind = kind_of(workload, params)
    return (
        f"draws the forecast (calibrated on published {kind} figures, {short_error(workload, params)}), not the ceiling"
    )


def ceiling_chart_line() -> str:
    return "draws the ceiling: the datasheet roofline, no efficiency applied"


def forecast_rows(points: Sequence[PredictedPoint], workload: str, params: Mapping[str, Any], dtype: str) -> list[dict]:
    """Each predicted call's forecast in µs, at least its launches as the ceiling counts them (a call takes the longer
    of its launches and its operations), and the span within which the kind's median error puts a published time:
    forecast ÷ (1 ± median). Where the launches set the time the span is none: that is a cited cost, not the
    forecast. Empty where no published figure of the kind is in the calibration."""
    found = calibration_file.committed().expected_for(kind_of(workload, params), 1)
    if found is None:
        return []
    rows = []
    for p in points:
        operations = forecast_s(p, workload, dtype)
        us = max(p.fixed_s, operations) * 1e6
        error = found.median if operations >= p.fixed_s else 0.0
        rows.append({"batch": p.batch, "us": us, "low_us": us / (1 + error), "high_us": us / (1 - error)})
    return rows


def band_chart_line(workload: str, params: Mapping[str, Any]) -> str:
    """What a chart drawing the forecast with its band beside the ceiling draws, for its subtitle."""
    kind = kind_of(workload, params)
    return f"forecast solid, shaded within its median error ({short_error(workload, params)}, published {kind} figures)"
