"""Where a served model's batch times come from: a model sweep, one curve of a profile run, a roofline
prediction of a workload on a datasheet GPU, or a table of batch times measured anywhere (a CSV file). Each gives a
`ServiceCurve` for the simulator and says what it is.

Measured curves keep every sample the file holds (the spread the simulator draws from); a prediction has no
spread, so its batches take exactly the predicted time.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.roofline.cost_model import FUSED
from benchmarks.analysis.roofline.forecast import expected_words, kind_of, percent, point_parts
from benchmarks.analysis.roofline.predict import predict
from benchmarks.analysis.serving.batcher.simulator import MAX_BATCH, ServiceCurve
from benchmarks.contract.errors import UserError
from benchmarks.contract.results import ModelSweep, Run
from benchmarks.gpus import GPU
from benchmarks.workloads import WORKLOADS

MAX_PREDICTED_BATCH = 4096


class SourceError(ValueError, UserError):
    """A curve that cannot be served: one line saying what is missing."""


@dataclass(frozen=True)
class ServiceSource:
    curve: ServiceCurve
    name: str  # what is served, e.g. 'ResNet50 (examples/resnet50_small.py:factory)'
    device: str  # e.g. 'CPU: AMD EPYC, 2 threads' or 'GPU: NVIDIA H100 SXM (datasheet)'
    dtype: str
    mode: str  # eager, graph, compile; 'forecast' or 'roofline' (the ceiling) for a prediction
    origin: str  # measured or predicted
    provenance: str  # the file and run, or the datasheet
    suggested: tuple[int, ...] = ()  # max batches worth trying beyond powers of two: those measured, a recommendation
    ceiling: ServiceCurve | None = None  # of a forecast: the bare roofline it was made from
    forecast_words: str = ""  # of a forecast: its efficiencies and expected error, in words

    @property
    def label(self) -> str:
        return f"{self.name} — {self.device}, {self.dtype}, {self.mode} ({self.origin})"


def _samples(point: Mapping[str, Any]) -> list[float]:
    timing = point.get("timing") or {}
    return list(timing.get("samples_s") or []) or [point["median_s"]]


def _device(doc: Mapping[str, Any]) -> str:
    device = doc["device"]
    if device["kind"] == "cuda":
        return f"GPU: {device['name']}"
    name = device.get("cpu_model") or device["name"]
    threads = device.get("threads")
    return f"CPU: {name}" + (f", {threads} thread{'s' * (threads != 1)}" if threads else "")


def from_sweep(sweep: ModelSweep) -> ServiceSource:
    """Every ok point of a model sweep, with its samples."""
    ok = [p for p in sweep.points if p["status"] == "ok" and p.get("median_s")]
    if not ok:
        raise SourceError(f"{sweep.path}: points: no batch size was measured (none is ok)")
    model = sweep.doc["model"]
    servable = _servable(sweep, {p["batch"]: _samples(p) for p in ok})
    curve = ServiceCurve.from_samples(servable, model["name"])
    return ServiceSource(
        curve,
        f"{model['name']} ({model['target']})",
        _device(sweep.doc),
        model["dtype"],
        model["mode"],
        "measured",
        f"sweep {sweep.id}, {sweep.started_at[:10]} ({sweep.path}){_left_out(len(ok) - len(servable))}",
        _suggested(curve, (sweep.doc.get("recommendation") or {}).get("run")),
    )


def _suggested(curve: ServiceCurve, recommended: Any = None) -> tuple[int, ...]:
    extra = {recommended} if isinstance(recommended, int) and not isinstance(recommended, bool) else set()
    return tuple(sorted(set(curve.batches) | extra))


def from_run(
    run: Run,
    workload: str,
    params: Mapping[str, Any] | None = None,
    dtype: str | None = None,
    mode: str | None = None,
    cache: str | None = None,
) -> ServiceSource:
    """One curve of a profile run: the records of `workload` whose parameters include `params` (and of `dtype`,
    `mode` and `cache` when given); more than one matching configuration is refused, naming what tells them apart."""
    params = dict(params or {})
    if workload not in WORKLOADS:
        raise SourceError(f"unknown workload {workload!r}; choose from {', '.join(WORKLOADS)}")
    mine = [r for r in run.records if r["workload"] == workload]
    if not mine:
        have = sorted({r["workload"] for r in run.records})
        raise SourceError(
            f"{run.path}: run {run.id} measured no {workload} (it measured {', '.join(have) or 'nothing'})"
        )
    found = [
        r
        for r in mine
        if all(r["params"].get(k) == v for k, v in params.items())
        and (dtype is None or r["dtype"] == dtype)
        and (mode is None or r["mode"] == mode)
        and (cache is None or r["cache"] == cache)
        and r["status"] == "ok"
    ]
    if not found:
        raise SourceError(f"{run.path}: no ok {workload} record has {_words(params, dtype, mode, cache)}")
    keys = {(tuple(sorted(r["params"].items())), r["dtype"], r["mode"], r["cache"]) for r in found}
    if len(keys) > 1:
        differ = []
        for index, name in enumerate(("params", "dtype", "mode", "cache")):
            values = {key[index] for key in keys}
            if len(values) > 1:
                if name == "params":
                    for pname in sorted({k for key in keys for k, _ in key[0]}):
                        choices = sorted({str(dict(key[0]).get(pname)) for key in keys})
                        if len(choices) > 1:
                            differ.append(f"--param {pname}=({'|'.join(choices)})")
                else:
                    differ.append(f"--{name} ({'|'.join(sorted(values))})")
        raise SourceError(f"{run.path}: {len(keys)} {workload} curves match; choose one with {' '.join(differ)}")
    (key,) = keys
    by_batch: dict[int, list[float]] = {}
    for record in found:
        by_batch.setdefault(record["batch"], []).extend(_samples(record))
    spec = WORKLOADS[workload]
    servable = _servable(run, by_batch)
    curve = ServiceCurve.from_samples(servable, spec.shape(dict(key[0])))
    return ServiceSource(
        curve,
        spec.shape(dict(key[0])),
        _device(run.doc),
        key[1],
        f"{key[2]}, {key[3]} weights",
        "measured",
        f"run {run.id}, {run.started_at[:10]} ({run.path}){_left_out(len(by_batch) - len(servable))}",
        _suggested(curve),
    )


def _servable(document: ModelSweep | Run, by_batch: dict[int, list[float]]) -> dict[int, list[float]]:
    """The batches a server can be planned with (up to the simulator's MAX_BATCH): larger ones, which a results file
    may hold, are left out; a curve with none left is refused in one line."""
    kept = {batch: samples for batch, samples in by_batch.items() if batch <= MAX_BATCH}
    if not kept:
        raise SourceError(
            f"{document.path}: every batch measured is above {MAX_BATCH:,}, the largest a served batch may be"
        )
    return kept


def _left_out(count: int) -> str:
    return f"; {count} batch size{'s' * (count != 1)} above {MAX_BATCH:,} left out" if count else ""


def _words(params: Mapping[str, Any], dtype: str | None, mode: str | None, cache: str | None) -> str:
    parts = [f"{k}={v}" for k, v in params.items()]
    parts += [f"dtype {dtype}"] if dtype else []
    parts += [f"mode {mode}"] if mode else []
    parts += [f"cache {cache}"] if cache else []
    return ", ".join(parts) or "any configuration"


def from_prediction(
    workload: str,
    params: Mapping[str, Any],
    gpu: GPU,
    dtype: str,
    max_batch: int,
    fusion: str = FUSED,
    forecast: bool = True,
) -> ServiceSource:
    """The time of `workload` on `gpu`'s datasheet at every batch up to `max_batch`, no spread: the forecast
    (the roofline's operations divided by the efficiencies fitted to published figures, plus their fixed cost
    per call: `benchmarks.analysis.roofline.forecast`), or with `forecast` False the bare roofline, no fixed cost per
    call, a lower bound on what a real server's batches take. A ResNet-50 is counted as `fusion` runs it (fused,
    as an inference server deploys it, with activations in the GPU's L2 while they fit; or eager)."""
    if dtype not in gpu.peak_flops:
        raise SourceError(f"the {gpu.name} datasheet gives no {dtype} rate; it gives {', '.join(gpu.peak_flops)}")
    if not 1 <= max_batch <= MAX_PREDICTED_BATCH:
        raise SourceError(f"the largest batch predicted must be from 1 to {MAX_PREDICTED_BATCH}, not {max_batch}")
    spec = WORKLOADS[workload]
    full = {**spec.defaults(), **params}
    counted = {"fusion": fusion, "l2_bytes": gpu.l2_bytes} if workload == "resnet50" else {}
    try:
        points = predict(workload, full, gpu.ceilings(dtype), dtype, range(1, max_batch + 1), **counted)
    except ValueError as exc:
        raise SourceError(str(exc)) from None
    ceiling = ServiceCurve.deterministic({p.batch: p.seconds for p in points}, spec.shape(full))
    how = f", {fusion}" if counted else ""
    words = ""
    if forecast:
        efficiency = calibration_file.committed().efficiency(workload, dtype)
        seconds = {p.batch: efficiency.seconds(point_parts(p)) for p in points}
        kind = kind_of(workload, full)
        words = (
            f"memory-bound work at {percent(efficiency.memory)} of the bandwidth, compute-bound at "
            f"{percent(efficiency.compute)} of the FLOP/s, {efficiency.fixed_s * 1e3:.2f} ms fixed per call "
            f"(fitted to published figures); {expected_words(calibration_file.committed().expected_for(kind, 1), kind)}"
        )
    curve = ServiceCurve.deterministic(seconds, spec.shape(full)) if forecast else ceiling
    return ServiceSource(
        curve,
        spec.shape(full),
        f"GPU: {gpu.name} (datasheet)",
        dtype,
        f"{'forecast' if forecast else 'roofline'}{how}",
        "predicted",
        gpu.source,
        ceiling=ceiling if forecast else None,
        forecast_words=words,
    )


CSV_TIME_COLUMNS = {"ms": 1e-3, "seconds": 1.0}  # the median (or the only) time per batch, and its unit
CSV_TAIL_COLUMNS = {"p90_ms": 90, "p99_ms": 99}
MAX_CSV_ROWS = 10_000


def from_csv(text: str, name: str) -> ServiceSource:
    """A batch curve measured anywhere: a header naming `batch` and one of `ms` or `seconds` (the median time of one
    call of that batch), optionally `p90_ms` and `p99_ms` for its spread, then one row per batch size. Every cell is
    checked; a bad one is refused in one line naming its row and column."""
    rows = list(csv.reader(io.StringIO(text)))
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        raise SourceError(f"{name}: empty; the first line names the columns, e.g. batch,ms")
    header = [cell.strip().lower() for cell in rows[0]]
    known = {"batch", *CSV_TIME_COLUMNS, *CSV_TAIL_COLUMNS}
    unknown = [cell for cell in header if cell not in known]
    if unknown or len(set(header)) != len(header):
        what = f"unknown column {unknown[0]!r}" if unknown else "a column named twice"
        raise SourceError(
            f"{name}: line 1: {what}; the columns are batch, ms or seconds, and optionally p90_ms, p99_ms"
        )
    times = [column for column in header if column in CSV_TIME_COLUMNS]
    if "batch" not in header or len(times) != 1:
        raise SourceError(f"{name}: line 1: needs a batch column and one of ms or seconds")
    if len(rows) - 1 > MAX_CSV_ROWS:
        raise SourceError(f"{name}: {len(rows) - 1:,} rows; at most {MAX_CSV_ROWS:,} batch sizes")
    if len(rows) == 1:
        raise SourceError(f"{name}: no rows under the header; give one row per batch size")
    medians: dict[int, float] = {}
    tails: dict[int, dict[float, float]] = {}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise SourceError(f"{name}: line {line}: {len(row)} cells under {len(header)} columns")
        cells = dict(zip(header, (cell.strip() for cell in row)))
        batch = _csv_number(name, line, "batch", cells["batch"], whole=True)
        if not 1 <= batch <= 65536:
            raise SourceError(f"{name}: line {line}: batch {cells['batch']!r} must be from 1 to 65,536")
        if batch in medians:
            raise SourceError(f"{name}: line {line}: batch {batch} is given twice")
        medians[batch] = _csv_number(name, line, times[0], cells[times[0]]) * CSV_TIME_COLUMNS[times[0]]
        tails[batch] = {p: _csv_number(name, line, column, cells[column]) * 1e-3
                        for column, p in CSV_TAIL_COLUMNS.items() if column in cells}  # fmt: skip
    try:
        curve = ServiceCurve.from_percentiles(medians, tails, name)
    except ValueError as exc:
        raise SourceError(f"{name}: {exc}") from None
    spread = [column for column in header if column in CSV_TAIL_COLUMNS]
    return ServiceSource(
        curve,
        name,
        "device not stated (a CSV of batch times)",
        "dtype not stated",
        "mode not stated",
        "measured",
        f"{name}: {len(medians)} batch sizes, median" + (f" and {', '.join(spread)}" if spread else " only, no spread"),
        _suggested(curve),
    )


def _csv_number(name: str, line: int, column: str, text: str, *, whole: bool = False) -> float:
    try:
        if not text.isascii():
            raise ValueError(text)
        value = int(text) if whole else float(text)
    except ValueError:
        raise SourceError(
            f"{name}: line {line}: {column} {text!r} is not {'a whole number' if whole else 'a number'}"
        ) from None
    if not whole and not (math.isfinite(value) and 0 < value < 3600 * (1e3 if column.endswith("ms") else 1)):
        raise SourceError(f"{name}: line {line}: {column} {text!r} must be a time above 0 and under an hour")
    return value
