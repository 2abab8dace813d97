"""The committed calibration (benchmarks/published/calibration.json): the efficiencies the fit found and the error
cross-validation measured, written by `calibrate` and read, checked field by field, by every forecast.

Pure Python: nothing on this module's import path may import torch or numpy.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from benchmarks.analysis.roofline.forecast import (
    FAMILIES,
    KINDS,
    LOW_ETA,
    MAX_FIXED_S,
    PRECISIONS,
    SCOPES,
    TERMS,
    Calibration,
    CalibrationError,
    Efficiency,
    Expected,
    HeldOutForecast,
    expected,
    family_of,
    group_name,
    precision_of,
    scope_of,
)
from benchmarks.contract.inputs import PUBLISHED_LIMIT, InputError, read_text_bounded
from benchmarks.contract.text import printable

CALIBRATION_FILE = Path(__file__).resolve().parents[2] / "published" / "calibration.json"


@dataclass(frozen=True)
class CommittedForecast:
    """One published figure as the cross-validation forecast it, without its source: the forecast (the figure's
    unit), forecast ÷ published − 1, whether the fit may use the figure, and why not."""

    forecast: float
    error: float
    fitted: bool
    note: str


@dataclass(frozen=True)
class Committed:
    """What the tools read: the efficiencies fitted on every figure, each kind's cross-validated error, and each
    figure's forecast without its source (by figure id)."""

    calibration: Calibration
    expected: dict[str, Expected]
    figures: int
    sources: int
    forecasts: dict[str, CommittedForecast] = field(default_factory=dict)
    by_scope: dict[str, dict[str, Expected]] = field(default_factory=dict)  # scope -> kind -> its own error

    def efficiency(self, workload: str, dtype: str) -> Efficiency:
        return self.calibration.efficiency(family_of(workload), precision_of(dtype))

    def expected_for(self, kind: str, tensor_parallel: int | None = None) -> Expected | None:
        """The error a forecast of `kind` carries: that of its scope's figures (one GPU, or split over
        `tensor_parallel` > 1) where the calibration has some, else that of every figure of the kind."""
        if tensor_parallel is not None:
            found = self.by_scope.get(scope_of(tensor_parallel), {}).get(kind)
            if found is not None:
                return found
        return self.expected.get(kind)


def to_json(
    calibration: Calibration, outcomes: Sequence[HeldOutForecast], figures: int, sources: int
) -> dict[str, Any]:
    chosen = [o for o in outcomes if o.figure.fit]
    groups = {
        name: {**{t: getattr(e, t) for t in TERMS}, "fitted": list(calibration.fitted[name]),
               "figures": calibration.figures[name]}
        for name, e in calibration.efficiencies.items()
    }  # fmt: skip
    return {
        "about": "Efficiencies fitted to the published figures (benchmarks/published/) and the error of forecasts "
        "cross-validated leaving one source out; made by `python -m benchmarks calibrate` "
        "(benchmarks/analysis/published/calibration.py), checked against a fresh fit by the tests. Nothing here is "
        "typed in.",
        "figures": figures,
        "sources": sources,
        "groups": groups,
        "expected_error": _expected_json(chosen),
        "expected_error_by_scope": {scope: _expected_json(chosen, scope) for scope in SCOPES},
        "forecasts": {
            o.figure.id: {"forecast": o.forecast, "error": o.error, "fitted": o.figure.fit, "note": o.figure.note}
            for o in outcomes
        },
    }


def _expected_json(chosen: Sequence[HeldOutForecast], scope: str | None = None) -> dict[str, dict[str, float]]:
    """Each kind's expected error (of one scope, or of both for None), as `_expected_errors` reads it back."""
    return {
        kind: {"figures": found.figures, "median": found.median, "p90": found.p90, "within_30": found.within_30}
        for kind in KINDS
        if (found := expected(chosen, kind, scope)) is not None
    }


def _number(value: Any, where: str, path: Path, low: float, high: float) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not low <= value <= high:
        raise CalibrationError(f"{path}: {where}: must be a number from {low:g} to {high:g}")
    return float(value)


def _mapping(value: Any, where: str, path: Path, keys: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CalibrationError(f"{path}: {where}: must be an object")
    for key in value:
        if key not in keys:
            raise CalibrationError(f"{path}: {where}.{key}: is not a field here (fields: {', '.join(sorted(keys))})")
    for key in sorted(keys - set(value)):
        raise CalibrationError(f"{path}: {where}.{key}: is required but missing")
    return value


def _expected_errors(errors: Any, where: str, path: Path, scope: str | None = None) -> dict[str, Expected]:
    if not isinstance(errors, dict) or any(kind not in KINDS for kind in errors):
        raise CalibrationError(f"{path}: {where}: must be an object keyed by {', '.join(KINDS)}")
    found = {}
    for kind, value in errors.items():
        at = f"{where}.{kind}"
        value = _mapping(value, at, path, {"figures", "median", "p90", "within_30"})
        found[kind] = Expected(
            kind,
            int(_number(value["figures"], f"{at}.figures", path, 1, 100_000)),
            _number(value["median"], f"{at}.median", path, 0, 100),
            _number(value["p90"], f"{at}.p90", path, 0, 100),
            _number(value["within_30"], f"{at}.within_30", path, 0, 1),
            scope,
        )
    return found


def _forecasts(value: Any, path: Path) -> dict[str, CommittedForecast]:
    if not isinstance(value, dict) or len(value) > 100_000:
        raise CalibrationError(f"{path}: forecasts: must be an object keyed by figure id")
    found = {}
    for figure_id, item in value.items():
        where = f"forecasts.{printable(str(figure_id))[:80]}"
        item = _mapping(item, where, path, {"forecast", "error", "fitted", "note"})
        if not isinstance(item["fitted"], bool):
            raise CalibrationError(f"{path}: {where}.fitted: must be true or false")
        if not isinstance(item["note"], str) or len(item["note"]) > 500:
            raise CalibrationError(f"{path}: {where}.note: must be a string of at most 500 characters")
        found[figure_id] = CommittedForecast(
            _number(item["forecast"], f"{where}.forecast", path, 0, 1e15),
            _number(item["error"], f"{where}.error", path, -1, 1e6),
            item["fitted"],
            item["note"],
        )
    return found


def read_calibration(path: Path | str = CALIBRATION_FILE) -> Committed:
    """The committed calibration, checked field by field; CalibrationError (one line) otherwise."""
    path = Path(path)
    try:
        doc = json.loads(read_text_bounded(path, kind="calibration file", limit_bytes=PUBLISHED_LIMIT))
    except InputError as exc:
        raise CalibrationError(str(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise CalibrationError(f"{path}: (json): is not JSON: {str(exc)[:120]}") from None
    doc = _mapping(
        doc, "(document)", path,
        {"about", "figures", "sources", "groups", "expected_error", "expected_error_by_scope", "forecasts"},
    )  # fmt: skip
    groups = _mapping(doc["groups"], "groups", path, {group_name(f, p) for f in FAMILIES for p in PRECISIONS})
    efficiencies, fitted, counts = {}, {}, {}
    for name, value in groups.items():
        where = f"groups.{name}"
        value = _mapping(value, where, path, {*TERMS, "fitted", "figures"})
        efficiencies[name] = Efficiency(
            _number(value["memory"], f"{where}.memory", path, LOW_ETA, 1),
            _number(value["compute"], f"{where}.compute", path, LOW_ETA, 1),
            _number(value["fixed_s"], f"{where}.fixed_s", path, 0, MAX_FIXED_S),
        )
        terms = value["fitted"]
        if not isinstance(terms, list) or any(t not in TERMS for t in terms):
            raise CalibrationError(f"{path}: {where}.fitted: must be a list of {', '.join(TERMS)}")
        fitted[name] = tuple(terms)
        counts[name] = int(_number(value["figures"], f"{where}.figures", path, 0, 100_000))
    scopes = _mapping(doc["expected_error_by_scope"], "expected_error_by_scope", path, set(SCOPES))
    return Committed(
        Calibration(efficiencies, fitted, counts),
        _expected_errors(doc["expected_error"], "expected_error", path),
        int(_number(doc["figures"], "figures", path, 0, 100_000)),
        int(_number(doc["sources"], "sources", path, 0, 100_000)),
        _forecasts(doc["forecasts"], path),
        {
            scope: _expected_errors(value, f"expected_error_by_scope.{scope}", path, scope)
            for scope, value in scopes.items()
        },
    )


@lru_cache(maxsize=1)
def committed() -> Committed:
    """The committed calibration (benchmarks/published/calibration.json)."""
    return read_calibration()
