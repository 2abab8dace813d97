"""Charts of the hardware itself: ceiling curves, the cache trap, and the batch-size calculator.

Built like every chart in `benchmarks.site.charts` (same palette, titles and `figure` export); the
data comes from `benchmarks.analysis.roofline.regimes` (measured) and `benchmarks.gpus` (cited).

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from typing import Any

import altair as alt

from benchmarks.analysis.roofline import calculator, calibration_file
from benchmarks.analysis.roofline.curves import Curve
from benchmarks.analysis.roofline.regimes import WeightBandwidth, bandwidth_points, cache_levels, matmul_points
from benchmarks.contract.results import Run
from benchmarks.gpus import BYTES_PER_ELEMENT, GPU
from benchmarks.site import text
from benchmarks.site.charts import (
    HEIGHT,
    LABEL_GREY,
    LEGEND,
    PALETTE,
    WIDTH,
    batch_axis,
    chart_rows,
    chart_title,
    curve_layers,
    curve_rows,
    labelled_rules,
)

BYTE_LABELS = (
    "datum.value >= 1073741824 ? format(datum.value / 1073741824, '~g') + ' GiB' : "
    "datum.value >= 1048576 ? format(datum.value / 1048576, '~g') + ' MiB' : "
    "datum.value >= 1024 ? format(datum.value / 1024, '~g') + ' KiB' : datum.value + ' B'"
)
DTYPE_COLORS = {"float32": PALETTE[0], "tfloat32": PALETTE[4], "bfloat16": PALETTE[1], "float16": PALETTE[2]}
DTYPE_COLORS["float8"] = PALETTE[3]


def _bytes_axis(field: str, title: str, values: Sequence[float]) -> alt.X:
    low, high = min(values), max(values)
    ticks = [4**i for i in range(5, 20) if low <= 4**i <= high]
    return alt.X(
        f"{field}:Q",
        title=title,
        scale=alt.Scale(type="log", base=2, domain=[low, high], nice=False),
        axis=alt.Axis(values=ticks, labelExpr=BYTE_LABELS, labelOverlap="greedy", labelSeparation=4),
    )


def _cache_rules(levels: list[dict[str, Any]], low: float, high: float) -> list[alt.Chart]:
    marks = [
        {"bytes": level["bytes"], "label": f"{level['name']} {text.fmt_bytes(level['bytes'])}"}
        for level in levels
        if low <= level["bytes"] <= high
    ]
    return labelled_rules(marks, "bytes")


def labelled_hline(
    rows: list[dict[str, Any]], y_field: str, color: alt.Color | None = None, crossing: Sequence[float] = ()
) -> list[alt.Chart]:
    """Dashed horizontal rules, each labelled just above its right end, or, where vertical rules cross the plot
    (`crossing`: their places, 0 to 1 across it), at the right end of the widest stretch between them."""
    if not rows:
        return []
    base = alt.Chart(alt.Data(values=chart_rows(rows))).encode(y=alt.Y(f"{y_field}:Q", scale=alt.Scale(type="log")))
    rule = base.mark_rule(strokeDash=[6, 4], strokeWidth=1.2)
    rule = rule.encode(color=color) if color else rule.encode(color=alt.value("#777"))
    edges = [0.0, *sorted(f for f in crossing if 0 < f < 1), 1.0]
    right = max(itertools.pairwise(edges), key=lambda gap: gap[1] - gap[0])[1]
    text = base.mark_text(align="right", dx=-4, dy=-3, baseline="bottom", fontSize=10, color=LABEL_GREY).encode(
        text="label:N", x=alt.value("width") if right == 1.0 else alt.value({"expr": f"width * {right:.4f}"})
    )
    return [rule, text]


def _across(levels: list[dict[str, Any]], low: float, high: float) -> list[float]:
    """Where each cache size's rule crosses a log bytes axis from `low` to `high`, 0 to 1."""
    span = math.log(high / low) if high > low else 1.0
    return [math.log(level["bytes"] / low) / span for level in levels if low <= level["bytes"] <= high]


def bandwidth_chart(run: Run, gpu: GPU | None, title: str) -> alt.LayerChart:
    """Copy and read bandwidth against working-set size, cache sizes marked, datasheet bandwidth dashed."""
    rows = []
    for kind, name in (("copy", "copy (bytes read + written)"), ("read", "read (one kernel, many passes)")):
        for working_set, per_s in bandwidth_points(run, kind):
            rows.append({"series": name, "bytes": working_set, "gb_per_s": per_s / 1e9})
    sizes = [r["bytes"] for r in rows]
    x = _bytes_axis("bytes", "working set (bytes touched per pass)", sizes)
    y = alt.Y("gb_per_s:Q", title="bandwidth (GB/s)", scale=alt.Scale(type="log"))
    lines = (
        alt.Chart(alt.Data(values=chart_rows(rows)))
        .mark_line(point=alt.OverlayMarkDef(filled=True, size=24), strokeWidth=1.8)
        .encode(
            x=x,
            y=y,
            color=alt.Color("series:N", title="measured", scale=alt.Scale(range=PALETTE[:2])),
            tooltip=[
                alt.Tooltip("series:N", title="kernel"),
                alt.Tooltip("bytes:Q", title="working set (bytes)", format=",.0f"),
                alt.Tooltip("gb_per_s:Q", title="GB/s", format=".4~g"),
            ],
        )
    )
    datasheet = []
    if gpu is not None:
        datasheet.append({"gb_per_s": gpu.bandwidth / 1e9, "label": f"datasheet {text.fmt_rate(gpu.bandwidth, 'B/s')}"})
    subtitle = [
        f"{text.device_label(run)} · float32 buffers · "
        + ("each point a CUDA graph of back-to-back kernels" if run.device.get("kind") == "cuda" else "eager"),
        "dotted: cache sizes the device reports" + (" · dashed: datasheet bandwidth" if datasheet else ""),
    ]
    levels, low, high = cache_levels(run), min(sizes), max(sizes)
    layers = [
        lines,
        *_cache_rules(levels, low, high),
        *labelled_hline(datasheet, "gb_per_s", crossing=_across(levels, low, high)),
    ]
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=chart_title(title, *subtitle))


def matmul_chart(run: Run, gpu: GPU | None, title: str) -> alt.LayerChart:
    """Square-matmul FLOP/s against n for each dtype, datasheet peaks dashed in the same colour."""
    rows = []
    for dtype, points in matmul_points(run).items():
        for n, per_s in points:
            rows.append({"dtype": dtype, "n": n, "tflops": per_s / 1e12})
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    color = alt.Color(
        "dtype:N", title="dtype", scale=alt.Scale(domain=dtypes, range=[DTYPE_COLORS.get(d, "#555") for d in dtypes])
    )
    ns = [r["n"] for r in rows]
    x = alt.X(
        "n:Q",
        title="matrix size n (n×n times n×n)",
        scale=alt.Scale(type="log", base=2, domain=[min(ns), max(ns)], nice=False),
        axis=alt.Axis(values=sorted(set(ns)), format="d"),
    )
    lines = (
        alt.Chart(alt.Data(values=chart_rows(rows)))
        .mark_line(point=alt.OverlayMarkDef(filled=True, size=24), strokeWidth=1.8)
        .encode(
            x=x,
            y=alt.Y("tflops:Q", title="TFLOP/s", scale=alt.Scale(type="log")),
            color=color,
            tooltip=[alt.Tooltip("dtype:N"), alt.Tooltip("n:Q", format="d"), alt.Tooltip("tflops:Q", format=".4~g")],
        )
    )
    peaks = []
    if gpu is not None:
        for dtype in dtypes:
            if dtype in gpu.peak_flops:
                rate = gpu.peak_flops[dtype]
                peaks.append({"dtype": dtype, "tflops": rate / 1e12, "label": f"{dtype} datasheet {rate / 1e12:g}"})
    subtitle = [
        f"{text.device_label(run)} · float32 with TF32 off; tfloat32 = the same tensors with TF32 allowed; "
        "float8 = e4m3 scaled matmul",
        "dashed: datasheet dense peak per dtype" if peaks else "",
    ]
    return alt.layer(lines, *labelled_hline(peaks, "tflops", color)).properties(
        width=WIDTH, height=HEIGHT, title=chart_title(title, *subtitle)
    )


def cache_state_chart(curves: Sequence[Curve], title: str) -> alt.LayerChart:
    """One configuration's latency against batch with its weights resident and rotated."""
    rows = curve_rows(curves, series="cache")
    caches = list(dict.fromkeys(c.cache for c in curves))
    color = alt.Color("series:N", title="weights", scale=alt.Scale(domain=caches, range=PALETTE[: len(caches)]))
    batches = [b for c in curves for b in c.batches]
    chart = curve_layers(rows, "ms", "median latency per call (ms)", color, batches, band=True)
    first = curves[0]
    subtitle = [
        f"{text.device_label(first.run)} · {first.dtype} · {first.mode} · cache: {' vs '.join(caches)}",
        LEGEND,
    ]
    return chart.properties(width=WIDTH, height=HEIGHT, title=chart_title(title, *subtitle))


def weight_bandwidth_chart(
    run: Run, rows: Sequence[WeightBandwidth], memory_read: float | None, title: str, subtitle: str
) -> alt.LayerChart:
    """Bytes of weights over time at one batch size, against the weights' size, per cache state."""
    data = [
        {
            "cache": r.cache,
            "width": r.width,
            "bytes": r.weight_bytes,
            "gb_per_s": r.bytes_per_s / 1e9,
            "ms": r.seconds * 1e3,
        }
        for r in rows
    ]
    sizes = [r["bytes"] for r in data]
    caches = list(dict.fromkeys(r["cache"] for r in data))
    lines = (
        alt.Chart(alt.Data(values=chart_rows(data)))
        .mark_line(point=alt.OverlayMarkDef(filled=True, size=30), strokeWidth=1.8)
        .encode(
            x=_bytes_axis("bytes", "weights of the MLP (bytes)", sizes),
            y=alt.Y("gb_per_s:Q", title="weight bytes per second (GB/s)", scale=alt.Scale(type="log")),
            color=alt.Color("cache:N", title="weights", scale=alt.Scale(domain=caches, range=PALETTE[: len(caches)])),
            tooltip=[
                alt.Tooltip("cache:N", title="weights"),
                alt.Tooltip("width:Q", title="width"),
                alt.Tooltip("bytes:Q", title="weight bytes", format=",.0f"),
                alt.Tooltip("ms:Q", title="latency (ms)", format=".4~g"),
                alt.Tooltip("gb_per_s:Q", title="GB/s", format=".4~g"),
            ],
        )
    )
    reference = []
    if memory_read:
        reference.append(
            {"gb_per_s": memory_read / 1e9, "label": f"measured memory read {text.fmt_rate(memory_read, 'B/s')}"}
        )
    full_subtitle = [subtitle, "dotted: cache sizes · dashed: the memory read plateau"]
    levels, low, high = cache_levels(run), min(sizes), max(sizes)
    plateau = labelled_hline(reference, "gb_per_s", crossing=_across(levels, low, high))
    layers = [lines, *_cache_rules(levels, low, high), *plateau]
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=chart_title(title, *full_subtitle))


# --------------------------------------------------------------------------- calculator

STEPS_PER_DOUBLING = 4
CALCULATOR_BATCHES = [round(2 ** (i / STEPS_PER_DOUBLING)) for i in range(0, 65)]  # 1 .. 65536
CALCULATOR_WIDTHS = [256, 512, 1024, 2048, 4096, 8192, 16384]
CALCULATOR_DTYPES = ["bfloat16", "float16", "float8", "tfloat32", "float32"]
SELECTED = "datum.gpu == gpu && datum.dtype == dtype"  # the rates row of the chosen device and dtype


def calculator_chart(
    gpus: Sequence[GPU],
    measured_devices: Sequence[dict[str, Any]],
    measured: list[dict[str, Any]],
    default_gpu: str,
    title: str,
) -> alt.VConcatChart:
    """Predicted latency and throughput of an MLP against batch on the chosen device, dtype, width
    and depth, with the ridge marked; measured MLP points (depth 8) overlaid where they match.

    `measured_devices` are extra choices predicted from a run's measured ceilings: dicts with
    name and rates {dtype: (FLOP/s, bytes/s)}. `measured` rows carry option (that choice's name),
    datasheet (the matching datasheet GPU's name, or ""), dtype, width, batch, ms, mode, cache.
    The predictions run in the browser (Vega expressions from `benchmarks.analysis.roofline.calculator`), so the
    page stays static and its data is one row per (device, dtype).
    """
    names = [g.name for g in gpus] + [d["name"] for d in measured_devices]
    rates = _calculator_rates(gpus, measured_devices)
    predicted, ridge = _predicted(rates), _ridge(rates)
    panels = [
        alt.layer(*_calculator_layers(predicted, ridge, measured, field, y_title), _missing_rate(rates)).properties(
            width=WIDTH, height=210
        )
        for field, y_title in (
            ("ms", "predicted latency per call (ms)"),
            ("rows_per_s", "throughput (rows per second)"),
        )
    ]
    subtitle = [
        "solid red: the forecast, the ceiling divided by the share of its bound published matrix products",
        "reached, shaded within their median error (a measured device: its own ceilings, no band) · dashed blue:",
        "the ceiling, max(FLOPs ÷ peak, bytes ÷ bandwidth) per call from the datasheet (a measured device: from its",
        "run's ceilings), every layer's activations to memory · grey dashed: the ridge batch · grey dotted: the",
        "ridge if activations stay in cache between layers · dots: the device's measured depth-8 MLPs, if any",
    ]
    return (
        alt.vconcat(*panels)
        .add_params(*_calculator_params(names, default_gpu))
        .properties(title=alt.TitleParams(**{**chart_title(title, *subtitle).to_dict(), "text": chosen_title(title)}))
    )


def chosen_title(title: str) -> alt.ExprRef:
    """The title as two lines that follow the controls: `title`, then the chosen device, dtype and MLP, so that the
    drawn chart and every image made of it (the exported PNG shows the default choice) say what they show."""
    choice = "gpu, dtype + ' · MLP of ' + layers + ' layers, width ' + layer_width"  # short lines: a phone's column
    return alt.ExprRef(expr=f"[{json.dumps(title)}, {choice}]")


def _missing_rate(rates: list[dict[str, Any]]) -> alt.Chart:
    """A line across the panel when the chosen device has no rate for the chosen dtype, instead of empty axes."""
    have = {(row["gpu"], row["dtype"]) for row in rates}
    missing = [
        {"gpu": gpu, "dtype": dtype, "words": f"No {dtype} rate for the {gpu}: choose another dtype"}
        for gpu in dict.fromkeys(row["gpu"] for row in rates)
        for dtype in CALCULATOR_DTYPES
        if (gpu, dtype) not in have
    ]
    return (
        alt.Chart(alt.Data(values=missing))
        .transform_filter(SELECTED)
        .mark_text(fontSize=13, color=LABEL_GREY)
        .encode(text="words:N", x=alt.value(WIDTH / 2), y=alt.value(105))
    )


def _calculator_params(names: list[str], default_gpu: str) -> list[alt.Parameter]:
    """The controls: device, dtype, layer width and depth, each a Vega parameter bound to an input."""
    gpu_param = alt.param(name="gpu", value=default_gpu, bind=alt.binding_select(options=names, name="device "))
    dtype_param = alt.param(
        name="dtype", value="bfloat16", bind=alt.binding_select(options=CALCULATOR_DTYPES, name="dtype ")
    )
    # Not "width" or "depth": Vega's own "width" signal sizes the chart, and a parameter of that name replaces it.
    width_param = alt.param(
        name="layer_width", value=4096, bind=alt.binding_select(options=CALCULATOR_WIDTHS, name="layer width ")
    )
    depth_param = alt.param(
        name="layers", value=8, bind=alt.binding_range(min=1, max=64, step=1, name="layers (depth) ")
    )
    return [gpu_param, dtype_param, width_param, depth_param]


def _calculator_rates(gpus: Sequence[GPU], measured_devices: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (device, dtype): peak rate, bandwidth and element size, datasheet then measured."""
    rates = [
        {"gpu": gpu.name, "dtype": dtype, "peak": peak, "bandwidth": gpu.bandwidth, "size": BYTES_PER_ELEMENT[dtype],
         **_etas(calibration_file.committed().efficiency("mlp", dtype)), "error": _median_error()}
        for gpu in gpus
        for dtype, peak in gpu.peak_flops.items()
        if dtype in CALCULATOR_DTYPES
    ]  # fmt: skip
    rates += [  # a measured device's own ceilings: its forecast line is those ceilings
        {"gpu": d["name"], "dtype": dtype, "peak": peak, "bandwidth": bandwidth, "size": BYTES_PER_ELEMENT[dtype],
         "eta_memory": 1.0, "eta_compute": 1.0, "error": 0.0}
        for d in measured_devices
        for dtype, (peak, bandwidth) in d["rates"].items()
        if dtype in CALCULATOR_DTYPES
    ]  # fmt: skip
    return rates


def _median_error() -> float:
    """The matrix products' cross-validated median error: the half-width of the forecast's band (0 without one)."""
    found = calibration_file.committed().expected_for("GEMM", 1)
    return found.median if found is not None else 0.0


def _etas(efficiency) -> dict[str, float]:
    return {"eta_memory": efficiency.memory, "eta_compute": efficiency.compute}


def _predicted(rates: list[dict[str, Any]]) -> alt.Chart:
    """The chosen device's prediction at every batch of the grid, computed in the browser."""
    expressions = calculator.vega_expressions("layer_width", "layers")
    steps = len(CALCULATOR_BATCHES)
    return (
        alt.Chart(alt.Data(values=rates))
        .transform_filter(SELECTED)
        .transform_calculate(step=f"sequence(0, {steps})")  # the batch grid, built in the browser
        .transform_flatten(["step"])
        .transform_calculate(batch=f"round(pow(2, datum.step / {STEPS_PER_DOUBLING}))")
        .transform_calculate(seconds=expressions["seconds"], forecast=expressions["forecast"])
        .transform_calculate(ms="datum.seconds * 1000", rows_per_s="datum.batch / datum.seconds")
        .transform_calculate(forecast_ms="datum.forecast * 1000", forecast_rows_per_s="datum.batch / datum.forecast")
        .transform_calculate(  # where the median error puts a published figure: forecast ÷ (1 ± error)
            forecast_ms_low="datum.forecast_ms / (1 + datum.error)",
            forecast_ms_high="datum.forecast_ms / (1 - datum.error)",
            forecast_rows_per_s_low="datum.forecast_rows_per_s * (1 - datum.error)",
            forecast_rows_per_s_high="datum.forecast_rows_per_s * (1 + datum.error)",
        )
    )


def _ridge(rates: list[dict[str, Any]], which: str = "ridge") -> alt.Chart:
    """The chosen device's ridge batch, with its label, when it falls inside the batch grid: with every
    layer's activations crossing memory ("ridge"), or kept in cache between layers ("ridge_cached")."""
    expressions = calculator.vega_expressions("layer_width", "layers")
    words = "'ridge: batch ≈ '" if which == "ridge" else "'in-cache ridge ≈ '"
    return (
        alt.Chart(alt.Data(values=rates))
        .transform_filter(SELECTED)
        .transform_calculate(batch=expressions[which])
        .transform_filter("datum.batch != null && datum.batch <= 65536")
        .transform_calculate(label=f"{words} + format(datum.batch, ',.0f')")
    )


def _calculator_layers(
    predicted: alt.Chart, ridge: alt.Chart, measured: list[dict[str, Any]], field: str, y_title: str
) -> list[alt.Chart]:
    """One panel's layers: the prediction, the ridge rule and its label, and the measured dots."""
    x = batch_axis(CALCULATOR_BATCHES)
    y = alt.Y(f"{field}:Q", title=y_title, scale=alt.Scale(type="log"))
    line = predicted.mark_line(strokeWidth=2, strokeDash=[6, 4], color=PALETTE[0]).encode(
        x=x,
        y=y,
        tooltip=[
            alt.Tooltip("batch:Q", format=",.0f"),
            alt.Tooltip("ms:Q", title="latency (ms)", format=".4~g"),
            alt.Tooltip("rows_per_s:Q", title="rows/s", format=".4~s"),
        ],
    )
    band = predicted.mark_area(opacity=0.2, color=PALETTE[1]).encode(
        x=x, y=alt.Y(f"forecast_{field}_low:Q", scale=alt.Scale(type="log")), y2=f"forecast_{field}_high:Q"
    )
    forecast = predicted.mark_line(strokeWidth=2.5, color=PALETTE[1]).encode(
        x=x,
        y=alt.Y(f"forecast_{field}:Q", scale=alt.Scale(type="log")),
        tooltip=[
            alt.Tooltip("batch:Q", format=",.0f"),
            alt.Tooltip("forecast_ms:Q", title="forecast latency (ms)", format=".4~g"),
            alt.Tooltip("forecast_rows_per_s:Q", title="forecast rows/s", format=".4~s"),
        ],
    )
    rules = []
    # the two ridges can sit close: one label rises from the bottom, the other hangs from the top, and each sits on
    # the outer side of its rule (the ridge with activations to memory is never the smaller: more bytes), so that
    # neither rule strikes through the other's label
    for chart, dash, align, y, side in (
        (ridge, [4, 3], "left", "height", 1),
        (_ridge(ridge.data.values, "ridge_cached"), [1, 3], "right", 0, -1),
    ):
        rules.append(chart.mark_rule(strokeDash=dash, color="#888").encode(x="batch:Q"))
        rules.append(
            chart.mark_text(
                align=align, dx=-4 if align == "right" else 4, dy=4 * side, baseline="top" if side > 0 else "bottom",
                fontSize=11, color=LABEL_GREY, angle=270,
            ).encode(x="batch:Q", y=alt.value(y), text="label:N")
        )  # fmt: skip
    drawn = [band, line, forecast, *rules]
    return [*drawn, _measured_dots(measured, field)] if measured else drawn


def _measured_dots(measured: list[dict[str, Any]], field: str) -> alt.Chart:
    """The measured depth-8 MLP points of the chosen device, dtype and width."""
    points = (
        alt.Chart(alt.Data(values=chart_rows(measured)))
        .transform_filter("(datum.option == gpu || datum.datasheet == gpu) && datum.dtype == dtype")
        .transform_filter("datum.width == layer_width && layers == 8")
        .transform_calculate(rows_per_s="datum.batch / (datum.ms / 1000)")
    )
    return points.mark_point(filled=True, size=36).encode(
        x="batch:Q",
        y=f"{field}:Q",
        color=alt.Color(
            "series:N",
            title="measured (depth 8)",
            scale=alt.Scale(range=PALETTE[1:]),
            legend=None,  # named in the tooltip; the subtitle says what dots are
        ),
        tooltip=[
            alt.Tooltip("series:N", title="measured"),
            alt.Tooltip("run:N"),
            alt.Tooltip("cache:N"),
            alt.Tooltip("batch:Q", format=",.0f"),
            alt.Tooltip("ms:Q", title="latency (ms)", format=".4~g"),
        ],
    )
