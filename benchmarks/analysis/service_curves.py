"""Where a served model's batch times come from: a model sweep, one curve of a profile run, or a roofline
prediction of a workload on a datasheet GPU. Each gives a `ServiceCurve` for the simulator and says what it is.

Measured curves keep every sample the file holds (the spread the simulator draws from); a prediction has no
spread, so its batches take exactly the predicted time.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.cost_model import FUSED
from benchmarks.analysis.dynamic_batching import ServiceCurve
from benchmarks.analysis.forecast import committed, expected_words, kind_of, percent, point_parts
from benchmarks.analysis.predict import predict
from benchmarks.contract.results import ModelSweep, Run
from benchmarks.gpus import GPU
from benchmarks.workloads import WORKLOADS

MAX_PREDICTED_BATCH = 4096


class SourceError(ValueError):
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
    curve = ServiceCurve.from_samples({p["batch"]: _samples(p) for p in ok}, model["name"])
    return ServiceSource(
        curve,
        f"{model['name']} ({model['target']})",
        _device(sweep.doc),
        model["dtype"],
        model["mode"],
        "measured",
        f"sweep {sweep.id}, {sweep.started_at[:10]} ({sweep.path})",
    )


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
    curve = ServiceCurve.from_samples(by_batch, spec.shape(dict(key[0])))
    return ServiceSource(
        curve,
        spec.shape(dict(key[0])),
        _device(run.doc),
        key[1],
        f"{key[2]}, {key[3]} weights",
        "measured",
        f"run {run.id}, {run.started_at[:10]} ({run.path})",
    )


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
    per call: `benchmarks.analysis.forecast`), or with `forecast` False the bare roofline, no fixed cost per
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
        efficiency = committed().efficiency(workload, dtype)
        seconds = {p.batch: efficiency.seconds(point_parts(p)) for p in points}
        kind = kind_of(workload, full)
        words = (
            f"memory-bound work at {percent(efficiency.memory)} of the bandwidth, compute-bound at "
            f"{percent(efficiency.compute)} of the FLOP/s, {efficiency.fixed_s * 1e3:.2f} ms fixed per call "
            f"(fitted to published figures); {expected_words(committed().expected_for(kind), kind)}"
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
        ceiling if forecast else None,
        words,
    )
