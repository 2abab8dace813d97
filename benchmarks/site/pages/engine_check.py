"""The parts of the section "Checked against a real engine" on the LLM serving page: the newest committed engine check
(`benchmarks/engine/`), a real vLLM replayed in the continuous-batching simulator, as a summary, the accuracy against
its targets, two charts, every load's figures and the method.

A notebook page shows them with `engine_check.build().show("summary")` (and "accuracy", "figure", "timeline",
"table", "method"). The site shows the newest committed measurement; a synthetic file (a test's) only when a test
passes it in. It builds from the committed file alone: vLLM is never imported. Pure Python: nothing imports torch.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

from benchmarks.analysis.serving.llm.engine_comparison import (
    BELOW,
    CAPACITY,
    METRICS,
    PAUSE_S,
    Accuracy,
    EngineComparison,
    LoadGroup,
    accuracy,
    compare,
    forecast_error,
    forecast_steps,
    grouped,
    load_near,
    paused_loads,
    tails_by_pause,
)
from benchmarks.contract.engine_check import EngineCheck, newest_engine_check
from benchmarks.site import charts, text
from benchmarks.site.charts.engine_check import METRIC_AXES, against_rate_chart, over_time_chart
from benchmarks.site.render import Page, Paragraph, Table, code, drawing_from

RATE_CHART_ID = "llm-serving-real-engine-against-rate"
TIME_CHART_ID = "llm-serving-real-engine-over-time"
SUBTITLE_CHARS = 80  # a chart's subtitle lines, so that the title is no wider than its panels
TIMELINE_SHARE = 0.9  # the load drawn over time: the rate nearest this share of its setting's capacity
METRIC_WORDS = {
    "ttft_p50_ms": "median time to first token",
    "ttft_p99_ms": "p99 time to first token",
    "tpot_p50_ms": "median time per output token",
    "tpot_p99_ms": "p99 time per output token",
    "output_tokens_per_s": "output tokens per second",
}
ABBREVIATIONS = (
    "meas.: measured (the median over the repeats, their range in brackets); sim.: simulated on the engine's "
    "measured step curve (the median over the replays of the repeats); TTFT: time to first token; TPOT: time per "
    "output token; closed N: a closed loop of N clients"
)


def build(check: EngineCheck | None = None, directory: Path | None = None) -> Page:
    check = check if check is not None else newest_engine_check(directory)
    if check is None:
        none = Paragraph(["No real-engine check is committed yet: ", code("nox -s engine-check"), " measures one."])
        return Page({k: [none] if k == "summary" else [] for k in SECTIONS})
    with drawing_from(check.path):
        found = compare(check, forecast_steps(check))
        a = accuracy(found)
        return Page(
            {
                "summary": [Paragraph(summary_words(found, a))],
                "accuracy": [accuracy_table(found, a), capacity_table(found, a)],
                "figure": [rate_figure(found)],
                "timeline": timeline_figure(found),
                "table": [loads_table(found)],
                "method": [Paragraph(method_words(found))],
            },
            extra={"comparison": found, "accuracy": a},
        )


SECTIONS = ("summary", "accuracy", "figure", "timeline", "table", "method")


def setting_words(s: dict) -> str:
    chunks = "chunked prefill" if s["chunked_prefill"] else "whole prompts"
    return f"max_num_seqs {s['max_num_seqs']}, {chunks}"


def setting_label(check: EngineCheck, name: str) -> str:
    s = check.setting(name)
    return f"{s['max_num_seqs']} seqs, {'chunked' if s['chunked_prefill'] else 'whole prompts'}"


def mix_label(check: EngineCheck, name: str) -> str:
    return next(m["label"] for m in check.doc["mixes"] if m["name"] == name)


def where(found: EngineComparison) -> str:
    doc = found.check.doc
    e, host = doc["engine"], doc["host"]
    c = e["model_config"]
    return (
        f"vLLM {e['version']} ({e['device']} build) serving {e['model']} ({c['num_hidden_layers']} layers, hidden "
        f"size {c['hidden_size']:,}, {doc['settings'][0]['dtype']}, random weights) on {host['name']} "
        f"({host['cpus']} CPUs), check {found.check.id}"
    )


def _within_words(a: Accuracy) -> str:
    """The medians and the throughput in words; every figure's count is in the accuracy table."""
    said = []
    for metric in ("ttft_p50_ms", "tpot_p50_ms", "output_tokens_per_s"):
        within, of = a.within[metric]
        if of:
            said.append(f"its {METRIC_WORDS[metric]} within ±{Accuracy.band(metric):.0%} in {within} of {of} loads")
    return "; ".join(said)


def _tail_words(a: Accuracy) -> str:
    """Whether the p99s land in their band less often than the medians do, read from the counts."""
    share = {m: within / of for m, (within, of) in a.within.items() if of}
    tails, medians = (
        [share.get(f"{x}_p99_ms") for x in ("ttft", "tpot")],
        [share.get(f"{x}_p50_ms") for x in ("ttft", "tpot")],
    )
    if None in tails or None in medians:
        return ""
    if max(tails) < min(medians):
        return "; the p99s land within their band less often than the medians (the table below)"
    return "; the p99s are in the table below"


def _compared_capacities(a: Accuracy) -> list[tuple[str, str, float, float]]:
    """The (setting, mix, measured, simulated) capacities that both sides reached."""
    return [c for c in a.capacity if math.isfinite(c[2]) and math.isfinite(c[3])]


def _capacity_words(a: Accuracy) -> str:
    cases = _compared_capacities(a)
    held = sum(abs(s / m - 1) <= CAPACITY for _, _, m, s in cases)
    return (
        f"The capacity (the requests per second a closed loop of max_num_seqs clients is served at) is within "
        f"±{CAPACITY:.0%} in {held} of {len(cases)} cases."
    )


def capacity_table(found: EngineComparison, a: Accuracy) -> Table:
    rows = [
        [setting_label(found.check, setting), mix, text.sig(measured, 3), text.sig(simulated, 3),
         f"{simulated / measured:.2f}"]
        for setting, mix, measured, simulated in _compared_capacities(a)
    ]  # fmt: skip
    return Table(
        ["engine", "lengths", "capacity meas. (requests/s)", "sim.", "sim. ÷ meas."],
        rows,
        f"The capacity of each setting and mix: a closed loop of max_num_seqs clients, measured and simulated on the "
        f"engine's measured step curve (target ±{CAPACITY:.0%}). Measured on {where(found)}.",
    )


def _preemption_words(a: Accuracy) -> str:
    starts = [(m, s) for _, _, m, s in a.preemptions_start]
    if all(m is None and s is None for m, s in starts):
        return "Neither the engine nor the simulator preempted a request at any load."
    same = sum(m == s for m, s in starts)
    return f"Preemptions begin at the same load in {same} of {len(starts)} cases."


def summary_words(found: EngineComparison, a: Accuracy) -> str:
    doc = found.check.doc
    settings = "; ".join(setting_words(s) for s in doc["settings"])
    answered = sum(len(load["requests"]["error"]) - load["failed"] for load in doc["loads"])
    repeats = max(load["repeat"] for load in doc["loads"])
    tpot_forecast = forecast_error(found, "tpot_p50_ms")
    forecast = (
        f" The forecast from this host's measured ceilings (the efficiencies and fixed cost fitted to published GPU "
        f"figures, unchanged) misses the median time per output token by a median of {tpot_forecast:.0%} over the "
        "same loads."
        if math.isfinite(tpot_forecast)
        else ""
    )
    return (
        f"Measured: {where(found)}, through its OpenAI server on 127.0.0.1, {len(doc['settings'])} engine settings "
        f"({settings}; {doc['settings'][0]['max_num_batched_tokens']:,} tokens a step), {len(doc['mixes'])} length "
        f"mixes, every load repeated {repeats} times: {answered:,} requests answered. Replayed with the same requests "
        f"on the engine's own step curve and settings, below {BELOW:.0%} of the measured capacity the simulator has "
        f"{_within_words(a)}{_tail_words(a)}."
        f" {_capacity_words(a)} {_preemption_words(a)} {pause_words(found)}{forecast}"
    )


def pause_words(found: EngineComparison) -> str:
    """The engine's pauses, and the p99s with and without them (the simulator never pauses)."""
    paused, loads, longest = paused_loads(found)
    if not paused:
        return f"The engine never paused for {PAUSE_S * 1e3:.0f} ms with requests in flight."
    (w_in, w_of), (s_in, s_of) = tails_by_pause(found)
    return (
        f"In {paused} of {loads} loads the engine paused for {PAUSE_S * 1e3:.0f} ms or more (up to "
        f"{text.sig(longest, 2)} s) with requests in flight and no token reaching any of them; the simulator has no "
        f"such pauses. Its p99 time to first token is within ±{Accuracy.band('ttft_p99_ms'):.0%} in {w_in} of the "
        f"{w_of} loads below {BELOW:.0%} of capacity that paused, and in {s_in} of the {s_of} that did not."
    )


def accuracy_table(found: EngineComparison, a: Accuracy) -> Table:
    rows = []
    for metric in METRICS:
        within, of = a.within[metric]
        error = a.median_error[metric]
        forecast = forecast_error(found, metric)
        rows.append([METRIC_WORDS[metric], f"±{Accuracy.band(metric):.0%}", f"{within} of {of}",
                     f"{error:.0%}" if of else "none compared",
                     f"{forecast:.0%}" if math.isfinite(forecast) else "none"])  # fmt: skip
    return Table(
        ["figure", "target", "loads within it", "median error", "forecast's median error"],
        rows,
        f"The Poisson loads below {BELOW:.0%} of their setting's measured capacity, one per repeat: the simulator on "
        f"the engine's measured step curve against the engine, and the forecast from the host's measured ceilings. "
        f"Measured on {where(found)}.",
    )


def _rate_rows(found: EngineComparison) -> list[dict]:
    rows = []
    for g in grouped(found):
        if g.kind != "poisson":
            continue
        for metric in METRIC_AXES:
            measured, low, high = g.measured(metric)
            rows.append({"setting": setting_label(found.check, g.setting), "mix": g.mix, "metric": metric,
                         "rate_per_s": g.rate_per_s, "measured": measured, "low": low, "high": high,
                         "simulated": g.simulated(metric)})  # fmt: skip
    return [r for r in rows if all(math.isfinite(r[k]) and r[k] > 0 for k in ("measured", "low", "simulated"))]


def rate_figure(found: EngineComparison):
    doc = found.check.doc
    mixes = [(m["name"], m["name"]) for m in doc["mixes"]]
    lengths = "; ".join(f"{m['name']}: {m['label']}" for m in doc["mixes"])
    chart = against_rate_chart(
        _rate_rows(found),
        mixes,
        "A real vLLM against the simulator, per Poisson rate",
        [line for words in (where(found), f"lengths · {lengths}", "points: measured, the median of the repeats, "
                            "bars their range · lines: simulated on the engine's measured step curve")
         for line in textwrap.wrap(words, SUBTITLE_CHARS)],
    )  # fmt: skip
    return charts.figure(
        chart,
        RATE_CHART_ID,
        "A real vLLM against the simulator",
        f"Line charts against the Poisson rate, one row per length mix, one line per engine setting: the median time "
        f"to first token (log scale), the median time per output token and the output tokens per second, measured "
        f"(points, with the range over the repeats) and simulated on the engine's own step curve (lines). Measured "
        f"on {where(found)}.",
        "Points: what the engine did at each rate (bars: the range over the repeats); lines: the simulator replaying "
        "the same requests on the engine's measured steps.",
    )


def timeline_figure(found: EngineComparison) -> list:
    doc = found.check.doc
    curve_setting = doc["step_curve"]["setting"]
    mix = doc["mixes"][-1]["name"]
    load = load_near(found, curve_setting, mix, TIMELINE_SHARE)
    if load is None or not load.timeline:
        return []
    pool = found.check.setting(curve_setting)["cache"]["blocks"] or 1
    g = load.gauges
    rows = [{"t_s": t, "quantity": "running", "side": "measured", "value": v}
            for t, v in zip(g["t_s"], g["running"]) if v is not None]  # fmt: skip
    rows += [{"t_s": t, "quantity": "kv", "side": "measured", "value": 100 * v}
             for t, v in zip(g["t_s"], g["kv_usage"]) if v is not None]  # fmt: skip
    for end, running, _waiting, blocks in load.timeline:
        rows.append({"t_s": end, "quantity": "running", "side": "simulated", "value": running})
        rows.append({"t_s": end, "quantity": "kv", "side": "simulated", "value": 100 * blocks / pool})
    rate = f"{text.sig(load.rate_per_s, 3)} requests/s"
    chart = over_time_chart(
        rows,
        f"One load over time: {setting_label(found.check, curve_setting)}, {mix} lengths, {rate}",
        [
            *textwrap.wrap(where(found), SUBTITLE_CHARS),
            "measured: the engine's /metrics, sampled every 0.25 s · simulated: after every step",
        ],
    )
    return [
        charts.figure(
            chart,
            TIME_CHART_ID,
            "A real vLLM's running sequences and KV use over one load, against the simulator",
            f"Two step charts over the seconds of one Poisson load ({rate}, {mix} lengths, "
            f"{setting_words(found.check.setting(curve_setting))}): the running sequences and the share of the KV "
            f"cache in use, as the engine reported them and as the simulator had them. Measured on {where(found)}.",
            "Solid: the engine's own gauges; dashed: the simulator replaying the same arrivals.",
        )
    ]


def _load_name(found: EngineComparison, g: LoadGroup) -> str:
    if g.kind == "poisson":
        return f"{text.sig(g.rate_per_s, 3)}/s"
    return f"closed {g.concurrency}" if g.kind == "closed" else f"capacity ({g.concurrency} clients)"


def _cell(g: LoadGroup, metric: str) -> list[str]:
    measured, low, high = g.measured(metric)
    span = f" ({text.sig_range([low, high], 3)})" if len(g.repeats) > 1 else ""
    ratio = g.ratio(metric)
    return [f"{text.sig(measured, 3)}{span}", text.sig(g.simulated(metric), 3),
            f"{ratio:.2f}" if math.isfinite(ratio) else "none"]  # fmt: skip


def loads_table(found: EngineComparison) -> Table:
    rows = []
    for g in grouped(found):
        rows.append([setting_label(found.check, g.setting), g.mix, _load_name(found, g),
                     *_cell(g, "ttft_p50_ms"), f"{g.ratio('ttft_p99_ms'):.2f}", *_cell(g, "tpot_p50_ms"),
                     f"{g.ratio('tpot_p99_ms'):.2f}", *_cell(g, "output_tokens_per_s")])  # fmt: skip
    return Table(
        ["engine", "lengths", "load", "TTFT p50 meas. (ms)", "sim.", "sim. ÷ meas.", "TTFT p99 sim. ÷ meas.",
         "TPOT p50 meas. (ms)", "sim.", "sim. ÷ meas.", "TPOT p99 sim. ÷ meas.", "tokens/s meas.", "sim.",
         "sim. ÷ meas."],
        rows,
        f"Every load of check {found.check.id}, measured and simulated. {ABBREVIATIONS}",
    )  # fmt: skip


def method_words(found: EngineComparison) -> str:
    doc = found.check.doc
    curve = doc["step_curve"]
    nice = doc["settings"][0].get("api_nice")
    priority = (
        f" The API server and the client ran at nice {nice}, the engine core and its worker at 0: on two cores the "
        "engine core's wait for its worker shares a core with them."
        if nice is not None and nice < 0
        else ""
    )
    return (
        f"The client is the project's own (standard-library asyncio over HTTP/1.1 to 127.0.0.1): prompts are lists "
        f"of random token ids (the engine runs without a tokenizer), every request asks for exactly its output length "
        f"(ignore_eos) and every token's arrival is kept; /metrics is read every 0.25 s. The step curve was measured "
        f"on the setting {setting_words(found.check.setting(curve['setting']))}: decode steps as the gaps between "
        f"tokens while a batch of equal requests all decode ({len(curve['decode'])} probes), lone prompts' time to "
        f"first token ({len(curve['prefill'])} probes) and prompts landing among decodes ({len(curve['mixed'])}). "
        f"The simulator ({found.step_description}) schedules as vLLM's V1 engine does: running requests first, "
        f"then waiting ones, all in one budget of tokens a step, the KV pool and block size the engine reported, "
        f"and a request's own cost (HTTP, the API server, the engine's queues) added once on its way in. Nothing "
        f"is fitted to the loads.{priority} Poisson rates are shares of each setting's capacity as the check "
        f"measured it first."
    )
