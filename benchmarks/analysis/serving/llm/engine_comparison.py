"""A real engine's measured loads against the continuous-batching simulator: every load replayed, the figures side by
side, and how far the simulator is from the engine.

Each load of an engine check (`benchmarks.contract.engine_check`) is replayed with the very requests the client
sent: their lengths, their send times (an open loop) or the same number of closed-loop clients, on the engine's own
settings (running-sequence cap, tokens a step, chunked prefill, its KV pool and block size) and vLLM V1's scheduling
rule. The step time is the engine's step curve (`engine_step.EngineCurveStep`, read off the check's probes, nothing
fitted to the loads) and, apart, the forecast from the host's measured ceilings (the calibrated efficiencies and fixed
cost, `benchmarks.analysis.roofline.forecast`). Both sides are summarised the same way: time to first token, time per
output token (per request: from its first token to its last, over the tokens after the first) and the gaps between
tokens at p50 and p99, and output tokens per second from the first request sent to the last token.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.roofline.forecast import Calibration, family_of, precision_of
from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.engine_step import EngineCurveStep, request_times
from benchmarks.analysis.serving.llm.simulation import replay
from benchmarks.analysis.serving.llm.step_model import StepModel
from benchmarks.contract.engine_check import EngineCheck
from benchmarks.contract.percentiles import nearest_rank

METRICS = ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "output_tokens_per_s")
SCHEDULER = "vllm-v1"  # the rule of the vLLM these checks measure (its V1 engine, the only one since 0.11)
# The accuracy targets: below BELOW of capacity, medians within MEDIAN, p99 within TAIL, throughput within
# THROUGHPUT; the capacity within CAPACITY.
BELOW, MEDIAN, TAIL, THROUGHPUT, CAPACITY = 0.8, 0.20, 0.35, 0.10, 0.15


@dataclass(frozen=True)
class LoadFigures:
    """One side of a load (measured or simulated): the figures of METRICS and what else the page draws."""

    ttft_p50_ms: float
    ttft_p99_ms: float
    tpot_p50_ms: float
    tpot_p99_ms: float
    itl_p50_ms: float
    itl_p99_ms: float
    output_tokens_per_s: float
    served_per_s: float  # requests finished per second in the second half of the finishes
    preemptions: int | None
    max_running: float | None

    def metrics(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in METRICS}


def _percentile(values: Sequence[float], p: float) -> float:
    return float(np.percentile(values, p)) if len(values) else math.nan


def served_per_s(finishes: Sequence[float]) -> float:
    """Requests finished per second over the second half of the finishes: a closed loop past its first round (every
    client starts at once), or an open loop past its warm-up."""
    ends = sorted(finishes)
    half = ends[len(ends) // 2 :]
    if len(half) < 2 or half[-1] <= half[0]:
        return math.nan
    return (len(half) - 1) / (half[-1] - half[0])


def _figures(sent, first, last, outputs, gaps, preemptions, max_running) -> LoadFigures:
    ttft = [f - s for s, f in zip(sent, first)]
    tpot = [(b - a) / (n - 1) for a, b, n in zip(first, last, outputs) if n > 1]
    span = max(last) - min(sent)
    return LoadFigures(
        ttft_p50_ms=_percentile(ttft, 50) * 1e3,
        ttft_p99_ms=_percentile(ttft, 99) * 1e3,
        tpot_p50_ms=_percentile(tpot, 50) * 1e3,
        tpot_p99_ms=_percentile(tpot, 99) * 1e3,
        itl_p50_ms=_percentile(gaps, 50) * 1e3,
        itl_p99_ms=_percentile(gaps, 99) * 1e3,
        output_tokens_per_s=sum(outputs) / span if span > 0 else math.nan,
        served_per_s=served_per_s(last),
        preemptions=preemptions,
        max_running=max_running,
    )


def measured_figures(load: Mapping[str, Any]) -> LoadFigures:
    """The client's view of one load (its answered requests)."""
    answered = request_times(load["requests"])
    outputs = [len(times) for _, times in answered]
    gaps = [b - a for _, times in answered for a, b in itertools.pairwise(times)]
    g = load["gauges"]
    counted = [v for v in g["preemptions"] if v is not None]
    running = [v for v in g["running"] if v is not None]
    preempted = int(counted[-1] - counted[0]) if counted else None
    first, last = [t[0] for _, t in answered], [t[-1] for _, t in answered]
    return _figures([s for s, _ in answered], first, last, outputs, gaps, preempted, max(running) if running else None)


@dataclass(frozen=True)
class LoadComparison:
    name: str
    setting: str
    mix: str
    kind: str  # poisson, closed or capacity
    rate_per_s: float | None
    concurrency: int | None
    repeat: int
    measured: LoadFigures
    simulated: LoadFigures
    forecast: LoadFigures | None
    timeline: list[tuple[float, int, int, int]] = field(repr=False, default_factory=list)
    gauges: Mapping[str, Any] = field(repr=False, default_factory=dict)

    def ratio(self, metric: str, side: str = "simulated") -> float:
        m, s = self.measured.metrics()[metric], getattr(self, side).metrics()[metric]
        return s / m if m > 0 and math.isfinite(s) else math.nan


def engine_config(check: EngineCheck, setting_name: str, step: StepModel, overhead_s: float) -> Engine:
    s = check.setting(setting_name)
    return Engine(max_num_seqs=s["max_num_seqs"], max_batched_tokens=s["max_num_batched_tokens"],
                  chunked_prefill=s["chunked_prefill"], block_tokens=s["cache"]["block_size"] or 16,
                  scheduler=SCHEDULER, request_overhead_s=overhead_s)  # fmt: skip


def curve_step(check: EngineCheck, setting_name: str) -> EngineCurveStep:
    """The engine's measured step curve, with this setting's KV pool."""
    s = check.setting(setting_name)
    cache, label = s["cache"], f"vLLM {check.doc['engine']['version']}"
    return EngineCurveStep(check.doc["step_curve"], kv_blocks=cache["blocks"], block_tokens=cache["block_size"],
                           label=label)  # fmt: skip


def simulated_figures(step: StepModel, engine: Engine, load: Mapping[str, Any]) -> tuple[LoadFigures, list]:
    r = load["requests"]
    kept = [i for i, e in enumerate(r["error"]) if e is None]
    prompts = [r["prompt_tokens"][i] for i in kept]
    outputs = [r["output_tokens"][i] for i in kept]
    if load["load"] == "poisson":
        done = replay(step, engine, prompts, outputs, arrivals=[r["sent_s"][i] for i in kept])
    else:
        done = replay(step, engine, prompts, outputs, clients=load["concurrency"])
    res = done.result
    gaps = res.itl_s
    figures = _figures(list(res.arrival_s), list(res.first_s), list(res.finish_s), [int(x) for x in res.outputs], gaps,
                       res.preemptions, res.max_running)  # fmt: skip
    return figures, done.timeline


@dataclass(frozen=True)
class EngineComparison:
    check: EngineCheck
    loads: tuple[LoadComparison, ...]
    overhead_s: float
    step_description: str

    def capacity(self, setting: str, mix: str) -> tuple[float, float]:
        """(measured, simulated) requests/s of the setting's capacity load on the mix."""
        found = [c for c in self.loads if c.kind == "capacity" and c.setting == setting and c.mix == mix]
        if not found:
            return math.nan, math.nan
        return found[0].measured.served_per_s, found[0].simulated.served_per_s

    def cases(self) -> list[tuple[str, str]]:
        return list(dict.fromkeys((c.setting, c.mix) for c in self.loads))


def compare(check: EngineCheck, forecast_step=None) -> EngineComparison:
    """Every load of the check, replayed on the engine's step curve (and on `forecast_step(setting)` when given)."""
    if check.doc["step_curve"] is None:
        from benchmarks.analysis.serving.llm.engine_step import NoStepCurve

        raise NoStepCurve(f"check {check.id} measured no step curve; it cannot be replayed")
    found = []
    overhead = None
    for load in check.loads:
        step = curve_step(check, load["setting"])
        overhead = step.request_overhead_s
        engine = engine_config(check, load["setting"], step, overhead)
        simulated, timeline = simulated_figures(step, engine, load)
        forecast = None
        if forecast_step is not None:
            fstep = forecast_step(load["setting"])
            forecast, _ = simulated_figures(fstep, engine_config(check, load["setting"], fstep, overhead), load)
        found.append(LoadComparison(load["name"], load["setting"], load["mix"], load["load"], load["rate_per_s"],
                                    load["concurrency"], load["repeat"], measured_figures(load), simulated, forecast,
                                    timeline, load["gauges"]))  # fmt: skip
    description = curve_step(check, check.loads[0]["setting"]).describe() if check.loads else ""
    return EngineComparison(check, tuple(found), overhead or 0.0, description)


@dataclass(frozen=True)
class Accuracy:
    """How the simulator (on the engine's curve) meets the targets: per metric, the loads below BELOW of capacity
    within their band, of those compared; the capacities within CAPACITY; where preemptions begin, per case."""

    within: dict[str, tuple[int, int]]  # metric → (loads within its band, loads compared)
    median_error: dict[str, float]  # metric → median |simulated / measured − 1| over those loads
    capacity: list[tuple[str, str, float, float]]  # (setting, mix, measured, simulated)
    preemptions_start: list[tuple[str, str, str | None, str | None]]  # (setting, mix, measured load, simulated load)

    @staticmethod
    def band(metric: str) -> float:
        return {"ttft_p50_ms": MEDIAN, "tpot_p50_ms": MEDIAN, "ttft_p99_ms": TAIL, "tpot_p99_ms": TAIL,
                "output_tokens_per_s": THROUGHPUT}[metric]  # fmt: skip


def accuracy(c: EngineComparison) -> Accuracy:
    within, errors = {}, {}
    for metric in METRICS:
        ratios = []
        for load in c.loads:
            capacity, _ = c.capacity(load.setting, load.mix)
            if load.kind == "poisson" and load.rate_per_s < BELOW * capacity:
                ratios.append(load.ratio(metric))
        ratios = [r for r in ratios if math.isfinite(r)]
        within[metric] = (int(sum(abs(r - 1) <= Accuracy.band(metric) for r in ratios)), len(ratios))
        errors[metric] = float(statistics.median(abs(r - 1) for r in ratios)) if ratios else math.nan
    capacities = [(s, m, *c.capacity(s, m)) for s, m in c.cases()]
    starts = []
    for s, m in c.cases():
        ordered = sorted((x for x in c.loads if x.setting == s and x.mix == m and x.kind == "poisson"),
                         key=lambda x: x.rate_per_s)  # fmt: skip

        def first(side: str, ordered=ordered) -> str | None:
            for x in ordered:
                count = getattr(x, side).preemptions
                if count:
                    return f"{x.rate_per_s:.3g}/s"
            return None

        starts.append((s, m, first("measured"), first("simulated")))
    return Accuracy(within, errors, capacities, starts)


class _PooledForecast:
    """A forecast step on the host's measured ceilings, with the engine's own KV pool (a CPU has no datasheet memory
    for the step to size a pool from)."""

    def __init__(self, step, kv_pool: int):
        self.step, self.kv_pool = step, kv_pool
        self.tensor_parallel, self.timed_on = 1, step.timed_on
        self.fixed_s, self.efficiency = step.fixed_s, 1.0

    def step_seconds(self, *args) -> float:
        return self.step.step_seconds(*args)

    def kv_blocks(self, memory_fraction: float = 0.0, block_tokens: int = 0) -> int:
        return self.kv_pool

    def describe(self) -> str:
        return self.step.describe()


def host_device(check: EngineCheck):
    """This host as the roofline sees it: the check's measured one-thread copy bandwidth and matmul rates."""
    from benchmarks.gpus import GPU

    c = check.doc["ceilings"]
    rates = {dtype: m["flops_per_s"] for dtype, m in c["matmul"].items()}
    return GPU(f"{check.doc['host']['name']} (measured, {c['threads']} thread)", rates, c["copy"]["bytes_per_s"],
               f"engine check {check.id}: measured ceilings")  # fmt: skip


def forecast_steps(check: EngineCheck, calibration: Calibration | None = None):
    """setting name → the calibrated forecast's step on the host's measured ceilings (the GPUs' fitted efficiencies
    and fixed cost, unchanged: those of `calibration`, the committed ones by default), or None where the check
    measured no ceilings or its model is not in the registry."""
    from benchmarks.analysis.serving.llm.forecast_step import ForecastStep
    from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
    from benchmarks.llm_models import find_model

    model = find_model(check.doc["engine"]["model"])
    dtype = check.doc["engine"]["model_config"].get("torch_dtype", "bfloat16")
    if check.doc["ceilings"] is None or model is None or dtype not in check.doc["ceilings"]["matmul"]:
        return None
    if calibration is None:
        efficiency = calibration_file.committed().efficiency("decode", dtype)
    else:
        efficiency = calibration.efficiency(family_of("decode"), precision_of(dtype))
    step = ForecastStep.of(RooflineStep(model, host_device(check), dtype), efficiency)

    def for_setting(name: str) -> _PooledForecast:
        return _PooledForecast(step, check.setting(name)["cache"]["blocks"] or 1)

    return for_setting


def _side(figures: LoadFigures | None) -> dict[str, float | None] | None:
    if figures is None:
        return None
    return {k: (round(v, 4) if math.isfinite(v) else None) for k, v in figures.metrics().items()}


def summary(c: EngineComparison) -> dict[str, Any]:
    """The comparison as one JSON-ready object (the command's --json): the model's config.json, the capacity of the
    step curve's setting on the first mix, every capacity, and every load measured, simulated and forecast."""
    curve_setting = (c.check.doc["step_curve"] or {}).get("setting") or (c.cases()[0][0] if c.cases() else None)
    first_mix = c.check.doc["mixes"][0]["name"] if c.check.doc["mixes"] else None
    measured, simulated = c.capacity(curve_setting, first_mix)

    def num(x: float) -> float | None:
        return round(x, 4) if math.isfinite(x) else None

    a = accuracy(c)
    return {
        "check": c.check.id,
        "engine": {k: c.check.doc["engine"][k] for k in ("name", "version", "device", "model")},
        "host": c.check.doc["host"]["name"],
        "model_config": c.check.doc["engine"]["model_config"],
        "capacity_per_s": {
            "setting": curve_setting,
            "mix": first_mix,
            "measured": num(measured),
            "simulated": num(simulated),
        },
        "capacities": [{"setting": s, "mix": m, "measured": num(x), "simulated": num(y)} for s, m, x, y in a.capacity],
        "step": c.step_description,
        "loads": [
            {
                "name": x.name,
                "setting": x.setting,
                "mix": x.mix,
                "load": x.kind,
                "repeat": x.repeat,
                **({"rate_per_s": x.rate_per_s} if x.rate_per_s is not None else {"concurrency": x.concurrency}),
                "measured": _side(x.measured),
                "simulated": _side(x.simulated),
                "forecast": _side(x.forecast),
            }
            for x in c.loads
        ],
        "accuracy": {
            "within": {m: {"within": w, "of": n, "band": Accuracy.band(m)} for m, (w, n) in a.within.items()},
            "median_error": {m: num(e) for m, e in a.median_error.items()},
            "preemptions_start": [
                {"setting": s, "mix": m, "measured": x, "simulated": y} for s, m, x, y in a.preemptions_start
            ],
        },
    }


def compare_file(path) -> EngineComparison:
    """Read an engine-check file strictly (ResultsError names the file and field) and compare it, on the engine's
    curve and on the forecast from the host's measured ceilings."""
    from benchmarks.contract.engine_check import read_engine_check

    check = read_engine_check(path, layout=False)
    return compare(check, forecast_steps(check))


def record_simulated(path, c: EngineComparison) -> None:
    """Add what the simulator gave (`summary`) to the file, beside what was measured."""
    from benchmarks.contract.results import write_atomic

    doc = dict(c.check.doc)
    doc["simulated"] = summary(c)
    write_atomic(path, doc)


@dataclass(frozen=True)
class LoadGroup:
    """The repeats of one load (a setting, a mix, a Poisson rate or a closed loop): per metric the measured median and
    range over the repeats, and the simulated and forecast medians."""

    setting: str
    mix: str
    kind: str
    rate_per_s: float | None
    concurrency: int | None
    repeats: tuple[LoadComparison, ...]

    def measured(self, metric: str) -> tuple[float, float, float]:
        values = [getattr(x.measured, metric) for x in self.repeats]
        return float(np.median(values)), min(values), max(values)

    def simulated(self, metric: str, side: str = "simulated") -> float:
        values = [getattr(getattr(x, side), metric) for x in self.repeats if getattr(x, side) is not None]
        return float(np.median(values)) if values else math.nan

    def ratio(self, metric: str, side: str = "simulated") -> float:
        m = self.measured(metric)[0]
        s = self.simulated(metric, side)
        return s / m if m > 0 and math.isfinite(s) else math.nan


def grouped(c: EngineComparison) -> list[LoadGroup]:
    """The loads with their repeats together, in the check's order."""
    found: dict[tuple, list[LoadComparison]] = {}
    for x in c.loads:
        found.setdefault((x.setting, x.mix, x.kind, x.rate_per_s, x.concurrency), []).append(x)
    return [LoadGroup(*key, tuple(xs)) for key, xs in found.items()]


def load_near(c: EngineComparison, setting: str, mix: str, share: float) -> LoadComparison | None:
    """The first repeat of the Poisson load of `setting` and `mix` whose rate is nearest `share` of its capacity."""
    capacity, _ = c.capacity(setting, mix)
    found = [x for x in c.loads if x.setting == setting and x.mix == mix and x.kind == "poisson"]
    if not found or not math.isfinite(capacity):
        return None
    return min(found, key=lambda x: (abs(x.rate_per_s - share * capacity), x.repeat))


def forecast_errors(c: EngineComparison, metric: str) -> list[float]:
    """|forecast ÷ measured − 1| of `metric` at each Poisson load below BELOW of capacity, one per repeat."""
    errors = []
    for x in c.loads:
        capacity, _ = c.capacity(x.setting, x.mix)
        if x.kind == "poisson" and x.forecast is not None and x.rate_per_s < BELOW * capacity:
            r = x.ratio(metric, "forecast")
            if math.isfinite(r):
                errors.append(abs(r - 1))
    return errors


ENGINE_METRIC = "tpot_p50_ms"  # what the forecast is judged on against the engine: its median time per output token


@dataclass(frozen=True)
class ForecastAgainstEngine:
    """The forecast's |forecast ÷ measured − 1| of ENGINE_METRIC over a check's Poisson loads below BELOW of capacity:
    how many, the median, the 90th percentile (nearest rank) and the share within ±30 %."""

    check_id: str
    loads: int
    median: float
    p90: float
    within_30: float


def forecast_against_engine(check: EngineCheck, calibration: Calibration | None = None) -> ForecastAgainstEngine | None:
    """The forecast (of `calibration`, the committed one by default) against the real engine's check; None without a
    forecast of its step or a load to judge it on."""
    steps = forecast_steps(check, calibration)
    if steps is None:
        return None
    errors = forecast_errors(compare(check, steps), ENGINE_METRIC)
    if not errors:
        return None
    within = sum(e <= 0.30 + 1e-9 for e in errors) / len(errors)
    return ForecastAgainstEngine(check.id, len(errors), float(statistics.median(errors)), nearest_rank(errors, 0.9),
                                 within)  # fmt: skip


def forecast_error(c: EngineComparison, metric: str) -> float:
    """The median |forecast ÷ measured − 1| of `metric` over the Poisson loads below BELOW of capacity."""
    errors = forecast_errors(c, metric)
    return float(statistics.median(errors)) if errors else math.nan


PAUSE_S = 0.25  # a pause: this long with requests in flight and no token to any of them (some 50 decode steps here)


def longest_pause_s(requests: Mapping[str, Any]) -> float:
    """The longest time in one load when some request was in flight (sent, its last token not yet in) and no token
    reached any request: the engine or the host paused. The simulator never pauses, so such a load's tail is the
    engine's, not the simulator's."""
    answered = request_times(requests)  # arrivals in seconds from the load's start
    spans = [(sent, times[-1]) for sent, times in answered]
    events = np.sort(np.array([t for _, times in answered for t in times] + [s for s, _ in spans]))
    if len(events) < 2:
        return 0.0
    starts, ends = np.array([s for s, _ in spans]), np.array([e for _, e in spans])
    mids, gaps = (events[1:] + events[:-1]) / 2, np.diff(events)
    in_flight = np.searchsorted(np.sort(starts), mids) - np.searchsorted(np.sort(ends), mids) > 0
    return float(gaps[in_flight].max()) if in_flight.any() else 0.0


def paused_loads(c: EngineComparison) -> tuple[int, int, float]:
    """(loads with a pause of PAUSE_S or more, loads, the longest pause in seconds)."""
    pauses = [longest_pause_s(load["requests"]) for load in c.check.loads]
    return sum(p >= PAUSE_S for p in pauses), len(pauses), max(pauses, default=0.0)


def tails_by_pause(c: EngineComparison, metric: str = "ttft_p99_ms") -> tuple[tuple[int, int], tuple[int, int]]:
    """Of the Poisson loads below BELOW of capacity, ((within the band, of them) with a pause, (within, of) without):
    whether the loads the simulator's tail misses are those where the engine paused."""
    paused, steady = [0, 0], [0, 0]
    pauses = {load["name"]: longest_pause_s(load["requests"]) for load in c.check.loads}
    for x in c.loads:
        capacity, _ = c.capacity(x.setting, x.mix)
        ratio = x.ratio(metric)
        if x.kind != "poisson" or not x.rate_per_s < BELOW * capacity or not math.isfinite(ratio):
            continue
        side = paused if pauses[x.name] >= PAUSE_S else steady
        side[0] += abs(ratio - 1) <= Accuracy.band(metric)
        side[1] += 1
    return (paused[0], paused[1]), (steady[0], steady[1])
