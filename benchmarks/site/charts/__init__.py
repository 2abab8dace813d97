"""Every chart on the site: Altair builders plus the figure that embeds and exports them.

Pages call the builders with curves chosen by `benchmarks.analysis.roofline.curves` and show the result with
`figure(...)`. A figure is a `<figure>` holding the Vega-Lite spec as inert JSON in a <template>; the site's
own `charts.js` draws it with vega-embed (SVG renderer) on every page load, including
Material's instant navigation. `figure` also stages the spec and the drawn data under
$BATCHING_CHART_DIR; the docs hook turns them into site/charts/<id>.{svg,png,csv,json}.

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import altair as alt

from benchmarks.analysis.roofline.curves import Curve, predicted_at
from benchmarks.contract.text import printable
from benchmarks.site import text
from benchmarks.site.charts.links import embed_html
from benchmarks.site.placeholders import SITE_ROOT  # the page's relative path to the site root
from benchmarks.workloads import ROWS, BatchUnit
from snippets.costs import linear_cost

STAGE_ENV = "BATCHING_CHART_DIR"
# "0": skip Altair's check of each spec against the Vega-Lite schema. The site build sets it (the check costs
# more than drawing, and grows with the data); the tests build every page with it, from the same code.
CHECK_SPECS_ENV = "BATCHING_CHECK_CHART_SPECS"
DEFAULT_STAGE = Path(__file__).resolve().parents[3] / ".cache" / "charts"
CHART_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")

WIDTH, HEIGHT = 520, 300
LABEL_GREY = "#888"  # rule labels: readable on the light and the dark theme
HEADLINE_PANEL = 255  # two panels and their axes side by side fit the text column
KIND_DASH = {"measured": [1, 0], "roofline": [6, 4]}
KNEE_SHAPES = {"ridge batch": "diamond", "measured knee": "triangle-up"}
LEGEND = (
    "solid: measured median (band: q1–q3) · dashed: roofline from this run's measured ceilings"
    " · ◇ ridge batch · △ measured knee"
)
# Every colour keeps 3:1 against both palettes' backgrounds (white and Material's slate), as legend symbols must:
# relative luminance between 0.143 and 0.30 (the classic orange, brown, pink and cyan did not).
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#d95f02", "#b5651d", "#c2569e", "#0f8f9c"]


def stage_dir() -> Path:
    return Path(os.environ.get(STAGE_ENV) or DEFAULT_STAGE)


def _round(value: Any, digits: int = 4) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value != 0:
        return round(value, digits - 1 - math.floor(math.log10(abs(value))))
    return value


def chart_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: _round(v) for k, v in row.items()} for row in rows]


LEGEND_LABEL_LIMIT = 200  # px: Vega's default (160) cuts labels such as "context 2048, GQA (8 KV heads)"


def batch_axis(batches: Sequence[float], unit: BatchUnit = ROWS) -> alt.X:
    low, high = min(batches), max(batches)
    ticks = [2**i for i in range(0, 16) if low <= 2**i <= high]
    if len(ticks) > 8:  # every other power of two: a narrow panel would otherwise drop labels unevenly (256, 1024…)
        ticks = ticks[::2]
    return alt.X(
        "batch:Q",
        title=unit.axis,
        scale=alt.Scale(type="log", base=2, domain=[low, high], nice=False),
        axis=alt.Axis(values=ticks, format="d", labelOverlap="greedy", labelSeparation=4),
    )


def chart_title(text: str, *subtitle: str) -> alt.TitleParams:
    return alt.TitleParams(text=text, subtitle=[s for s in subtitle if s], anchor="start", subtitleFontSize=11)


def _series_scale(curves: Sequence[Curve]) -> alt.Scale:
    domain = list(dict.fromkeys(c.label for c in curves))
    return alt.Scale(domain=domain, range=PALETTE[: len(domain)] or PALETTE)


# --------------------------------------------------------------------------- data


def _point_row(series: str, kind: str, batch: float, seconds: float, **more: float) -> dict[str, Any]:
    return {"series": series, "kind": kind, "batch": batch, "ms": seconds * 1e3, **more, "rows_per_s": batch / seconds}


def curve_rows(curves: Sequence[Curve], series: str = "label") -> list[dict[str, Any]]:
    """Long-format rows drawn by the latency and throughput charts (also the CSV export)."""
    rows: list[dict[str, Any]] = []
    for curve in curves:
        name = getattr(curve, series)
        for p in curve.points:
            rows.append(_point_row(name, "measured", p.batch, p.median_s, q1_ms=p.q1_s * 1e3, q3_ms=p.q3_s * 1e3))
            if p.predicted_s:
                rows.append(_point_row(name, "roofline", p.batch, p.predicted_s))
        low, high = curve.batches[0], curve.batches[-1]
        if curve.predicted_knee and low <= curve.predicted_knee <= high:
            at = predicted_at(curve, curve.predicted_knee)
            rows.append(_point_row(name, "ridge batch", curve.predicted_knee, at))
        if curve.knee:
            rows.append(_point_row(name, "measured knee", curve.knee.batch, curve.knee.time_at_knee_s))
    return chart_rows(rows)


def curve_layers(
    rows: list[dict[str, Any]],
    y: str,
    y_title: str,
    color: alt.Color,
    batches: Sequence[float],
    band: bool,
    unit: BatchUnit = ROWS,
) -> alt.LayerChart:
    base = alt.Chart(alt.Data(values=rows)).encode(x=batch_axis(batches, unit))
    y_enc = alt.Y(f"{y}:Q", title=y_title, scale=alt.Scale(type="log"))
    tip = [
        alt.Tooltip("series:N", title="curve"),
        alt.Tooltip("kind:N", title="what"),
        alt.Tooltip("batch:Q", title="batch", format=",.0f"),
        alt.Tooltip("ms:Q", title="latency (ms)", format=".4~g"),
        alt.Tooltip("rows_per_s:Q", title=unit.rate, format=".4~s"),
    ]
    layers = []
    if band:
        layers.append(
            base.transform_filter("datum.kind == 'measured'")
            .mark_area(opacity=0.18)
            .encode(y=alt.Y("q1_ms:Q", scale=alt.Scale(type="log")), y2="q3_ms:Q", color=color)
        )
    dash = alt.StrokeDash(
        "kind:N",
        title="line",
        scale=alt.Scale(domain=list(KIND_DASH), range=list(KIND_DASH.values())),
        legend=None,  # explained in the subtitle (LEGEND)
    )
    lines = base.transform_filter("datum.kind == 'measured' || datum.kind == 'roofline'")
    layers.append(lines.mark_line(strokeWidth=1.8).encode(y=y_enc, color=color, strokeDash=dash))
    layers.append(
        base.transform_filter("datum.kind == 'measured'")
        .mark_point(filled=True, size=28)
        .encode(y=y_enc, color=color, tooltip=[*tip[:4], alt.Tooltip("q1_ms:Q", format=".4~g"), *tip[4:]])
    )
    if not any(row["kind"] in KNEE_SHAPES for row in rows):
        return alt.layer(*layers)  # no knee to mark: an empty layer would only warn in the browser
    layers.append(
        base.transform_filter("datum.kind == 'ridge batch' || datum.kind == 'measured knee'")
        .mark_point(size=150, strokeWidth=2, filled=False)
        .encode(
            y=y_enc,
            color=color,
            shape=alt.Shape(
                "kind:N",
                title="knee",
                scale=alt.Scale(domain=list(KNEE_SHAPES), range=list(KNEE_SHAPES.values())),
                legend=None,
            ),
            tooltip=tip,
        )
    )
    return alt.layer(*layers)


def _subtitle(curves: Sequence[Curve]) -> list[str]:
    first = curves[0]
    return [text.describe_curve(first), LEGEND]


def _series_color(curves: Sequence[Curve], legend: bool = True) -> alt.Color:
    return alt.Color(
        "series:N",
        title="configuration",
        scale=_series_scale(curves),
        legend=alt.Legend(labelLimit=LEGEND_LABEL_LIMIT) if legend else None,
    )


def latency_chart(curves: Sequence[Curve], title: str, unit: BatchUnit = ROWS) -> alt.LayerChart:
    """Median latency against batch (log-log) per curve, q1–q3 band, roofline dashed, knees marked."""
    rows = curve_rows(curves)
    batches = [b for c in curves for b in c.batches]
    chart = curve_layers(rows, "ms", "median latency per call (ms)", _series_color(curves), batches, True, unit)
    return chart.properties(width=WIDTH, height=HEIGHT, title=chart_title(title, *_subtitle(curves)))


def throughput_chart(curves: Sequence[Curve], title: str, unit: BatchUnit = ROWS) -> alt.LayerChart:
    """Rows (images, tokens) per second against batch per curve, measured against the roofline."""
    rows = curve_rows(curves)
    batches = [b for c in curves for b in c.batches]
    chart = curve_layers(rows, "rows_per_s", unit.throughput, _series_color(curves), batches, False, unit)
    return chart.properties(width=WIDTH, height=HEIGHT, title=chart_title(title, *_subtitle(curves)))


def _knee_rules(curve: Curve, y: str) -> list[alt.Chart]:
    """Vertical rules with labels at the ridge batch and the measured knee of one curve."""
    marks = []
    low, high = curve.batches[0], curve.batches[-1]
    if curve.predicted_knee and low <= curve.predicted_knee <= high:
        marks.append({"batch": curve.predicted_knee, "label": f"ridge batch ≈ {text.fmt_batch(curve.predicted_knee)}"})
    if curve.knee:
        marks.append({"batch": curve.knee.batch, "label": f"measured knee ≈ {text.fmt_batch(curve.knee.batch)}"})
    return labelled_rules(marks, "batch")


def labelled_rules(marks: list[dict[str, Any]], field: str, font_size: int = 11) -> list[alt.Chart]:
    """Dotted vertical rules at each mark's `field`, each labelled up its left side with its `label`."""
    if not marks:
        return []
    base = alt.Chart(alt.Data(values=chart_rows(marks))).encode(x=f"{field}:Q")
    rule = base.mark_rule(strokeDash=[2, 2], color="#888")
    text = base.mark_text(
        align="left", dx=4, dy=-4, baseline="bottom", fontSize=font_size, color=LABEL_GREY, angle=270
    ).encode(text="label:N", y=alt.value("height"))
    return [rule, text]


def headline_chart(curve: Curve, title: str, unit: BatchUnit = ROWS) -> alt.HConcatChart:
    """Latency and throughput of one curve side by side, measured and predicted, knees marked."""
    rows = curve_rows([curve])
    color = _series_color([curve], legend=False)
    panels = []
    for y, y_title, band, name in (
        ("ms", "median latency per call (ms)", True, "latency"),
        ("rows_per_s", unit.throughput, False, "throughput"),
    ):
        layers = curve_layers(rows, y, y_title, color, curve.batches, band, unit)
        panel = alt.layer(layers, *_knee_rules(curve, y))
        panels.append(panel.properties(width=HEADLINE_PANEL, height=HEIGHT, title=name))
    return alt.hconcat(*panels).properties(title=chart_title(title, *_subtitle([curve])))


def mode_chart(curves: Sequence[Curve], title: str) -> alt.FacetChart:
    """Eager calls against CUDA-graph replay, one panel per configuration, roofline dashed."""
    rows = []
    for curve in curves:
        for row in curve_rows([curve]):
            if row["kind"] == "roofline" and curve.mode != curves[0].mode:
                continue  # the roofline does not depend on the mode: draw it once per panel
            if row["kind"] == "roofline":
                rows.append({**row, "panel": curve.label, "series": "roofline"})
            elif row["kind"] == "measured":
                rows.append({**row, "panel": curve.label, "series": curve.mode})
    modes = list(dict.fromkeys(c.mode for c in curves))
    color = alt.Color(
        "series:N",
        title="timed as",
        scale=alt.Scale(domain=[*modes, "roofline"], range=[*PALETTE[: len(modes)], "#777"]),
    )
    batches = [b for c in curves for b in c.batches]
    y = alt.Y("ms:Q", title="median latency (ms)", scale=alt.Scale(type="log"))
    base = alt.Chart().encode(x=batch_axis(batches), y=y, color=color)
    layer = alt.layer(
        base.mark_line(strokeWidth=1.8).encode(
            strokeDash=alt.StrokeDash(
                "kind:N", scale=alt.Scale(domain=list(KIND_DASH), range=list(KIND_DASH.values())), legend=None
            )
        ),
        base.transform_filter("datum.kind == 'measured'")
        .mark_point(filled=True, size=22)
        .encode(
            tooltip=[
                alt.Tooltip("panel:N", title="configuration"),
                alt.Tooltip("series:N", title="timed as"),
                alt.Tooltip("batch:Q", format=",.0f"),
                alt.Tooltip("ms:Q", title="latency (ms)", format=".4~g"),
            ]
        ),
        data=alt.Data(values=chart_rows(rows)),
    ).properties(width=250, height=180)
    first = curves[0]
    subtitle = [
        f"{text.device_label(first.run)} · {first.dtype} · modes: {', '.join(modes)} · cache: {first.cache}",
        "dashed grey: roofline from this run's measured ceilings",
    ]
    return layer.facet(
        facet=alt.Facet("panel:N", title=None, sort=list(dict.fromkeys(c.label for c in curves))), columns=2
    ).properties(title=chart_title(title, *subtitle))


DTYPE_SHORT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "tfloat32": "tf32", "float8": "fp8"}
LABEL_PX = 12  # px a 10 px label needs between its neighbours on one side of a chart
NOTE_PX = 17  # px from a rule to the top of the 10 px label set just above it, and a gap


def gpu_ridges(gpus: Sequence[Any]) -> list[tuple[str, float]]:
    """(label, ridge intensity) of each GPU's 16-bit and fp32 rates, once per distinct rate:
    'H100 SXM bf16/fp16' where both 16-bit types run at one rate."""
    found = []
    for gpu in gpus:
        short = gpu.name.removeprefix("NVIDIA ")
        sixteen = [d for d in ("bfloat16", "float16") if d in gpu.peak_flops]
        if sixteen:
            same = len({gpu.peak_flops[d] for d in sixteen}) == 1
            names = "/".join(DTYPE_SHORT[d] for d in sixteen) if same else DTYPE_SHORT[sixteen[0]]
            found.append((f"{short} {names}", gpu.ridge_intensity(sixteen[0])))
        if "float32" in gpu.peak_flops:
            found.append((f"{short} fp32", gpu.ridge_intensity("float32")))
    return found


def spaced_labels(values: Sequence[tuple[str, float]], min_ratio: float) -> list[dict[str, Any]]:
    """Labels for horizontal rules on a log axis that never print on top of each other: values closer
    than √min_ratio share one label, and labels alternate between the left and the right edge, so two
    on one side are at least min_ratio apart. Returns rows: value (the group's first), label, side."""
    groups: list[list[tuple[str, float]]] = []
    for name, value in sorted(values, key=lambda pair: pair[1]):
        if groups and value / groups[-1][0][1] < math.sqrt(min_ratio):
            groups[-1].append((name, value))
        else:
            groups.append([(name, value)])
    return [
        {
            "value": group[0][1],
            "label": " · ".join(f"{name} {text.sig(value, 3)}" for name, value in group),
            "side": "left" if index % 2 == 0 else "right",
        }
        for index, group in enumerate(groups)
    ]


def gpu_intensity_chart(gpus: Sequence[Any], width: int, title: str) -> alt.LayerChart:
    """Arithmetic intensity of one width×width Linear layer against batch, with datasheet ridges."""
    batches = [2**i for i in range(0, 13)]
    rows = []
    for dtype, size in (("2-byte weights (bf16/fp16)", 2), ("4-byte weights (fp32)", 4)):
        for b in batches:
            flops, moved = linear_cost(b, width, width, size)
            rows.append({"series": dtype, "batch": b, "intensity": flops / moved})
    ridges = gpu_ridges(gpus)
    values = [r["intensity"] for r in rows] + [v for _, v in ridges]
    domain = [min(values) / 1.5, max(values) * 1.5]
    # the labels alternate sides, so rules of either side sit √min_ratio apart: room for a label and its gap above
    # its own rule below the next one, which would otherwise strike through it
    min_ratio = (domain[1] / domain[0]) ** (2 * NOTE_PX / HEIGHT)
    marks = [{**mark, "lines": mark["label"].split(" · ")} for mark in spaced_labels(ridges, min_ratio)]
    scale = alt.Scale(type="log", domain=domain, nice=False)
    base = alt.Chart(alt.Data(values=chart_rows(rows))).encode(x=batch_axis(batches))
    y = alt.Y("intensity:Q", title="arithmetic intensity (FLOP per byte)", scale=scale)
    lines = base.mark_line(point=True).encode(
        y=y,
        color=alt.Color("series:N", title="Linear layer", scale=alt.Scale(range=PALETTE[:2])),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("batch:Q"), alt.Tooltip("intensity:Q", format=".3~g")],
    )
    rule_base = alt.Chart(alt.Data(values=chart_rows(marks))).encode(y=alt.Y("value:Q", scale=scale))
    rules = rule_base.mark_rule(strokeDash=[4, 3], color="#888").encode(
        tooltip=[alt.Tooltip("label:N", title="ridge intensity (FLOP/B)")]
    )
    # a lone ridge's label sits just above its rule; ridges that share one hang below it, one line each, where the
    # gap to the next rule down is wider (the 16-bit ridges crowd together, the fp32 ones sit far below)
    labels = [
        rule_base.transform_filter(f"datum.side == '{side}' && {test}")
        .mark_text(align=side, dx=4 if side == "left" else -4, dy=dy, baseline=baseline, fontSize=10,
                   color=LABEL_GREY)
        .encode(text="lines:N", x=alt.value(0 if side == "left" else "width"))
        for side in ("left", "right")
        for test, dy, baseline in (("length(datum.lines) == 1", -3, "bottom"), ("length(datum.lines) > 1", 3, "top"))
    ]  # fmt: skip
    subtitle = [
        f"{width}×{width} weight · dashed: datasheet ridge intensity (peak FLOP/s ÷ bandwidth)",
        "no measurement: datasheet figures, sources on this page",
    ]
    return alt.layer(lines, rules, *labels).properties(width=WIDTH, height=HEIGHT, title=chart_title(title, *subtitle))


def every_batch_axis(largest: int) -> alt.X:
    """A linear batch axis from 0 to `largest` with whole-number ticks: for charts of every batch size, where the
    steps between neighbours are the point."""
    return alt.X(
        "batch:Q",
        title="batch size (rows)",
        scale=alt.Scale(domain=[0, largest], nice=False),
        axis=alt.Axis(tickMinStep=1, format="d"),
    )


def steps_chart(curves: Sequence[Any], steps: dict[str, Sequence[Any]], title: str, subtitle: Sequence[str]):
    """Latency and latency per row against batch (linear batch axis), detected steps as rules.

    `curves` is a list of (label, list of `tile_steps.CurvePoint`) pairs; `steps` maps a label to
    the `tile_steps.TileJump`s detected on that curve. A fine sweep has a thousand points, so each row
    carries only what is drawn (µs per row is computed in the browser) and both panels share
    one copy of the data.
    """
    several = len(curves) > 1
    rows, rules = [], []
    for label, points in curves:
        for p in points:
            row = {"batch": p.batch, "us": p.median_s * 1e6}
            if math.isfinite(p.stderr_s):
                row["se"] = p.stderr_s * 1e6
            rows.append({"series": label, **row} if several else row)
        for step in steps.get(label, ()):
            rules.append(
                {
                    "series": label,
                    "batch": (step.before + step.after) / 2,
                    "step": f"{step.before}→{step.after}",
                    "jump_pct": 100 * step.relative,
                    "sigmas": step.sigmas,
                }
            )
    labels = list(dict.fromkeys(label for label, _ in curves))
    color = (
        alt.Color("series:N", title="curve", scale=alt.Scale(domain=labels, range=PALETTE[: len(labels)]))
        if several
        else alt.value(PALETTE[0])
    )
    x = every_batch_axis(max(r["batch"] for r in rows))
    tip = [
        alt.Tooltip("batch:Q", title="batch", format=",.0f"),
        alt.Tooltip("us:Q", title="latency (µs)", format=".4~g"),
        alt.Tooltip("us_per_row:Q", title="µs per row", format=".4~g"),
        alt.Tooltip("se:Q", title="std. error (µs)", format=".2~g"),
    ]
    if several:
        tip.insert(0, alt.Tooltip("series:N", title="curve"))
    panels = []
    for y, y_title, scale in (
        ("us", "median latency per call (µs)", alt.Scale(zero=False)),
        ("us_per_row", "latency per row (µs, log)", alt.Scale(type="log")),
    ):
        base = alt.Chart().transform_calculate(us_per_row="datum.us / datum.batch").encode(x=x, color=color)
        layers = [
            base.mark_line(strokeWidth=1.2).encode(y=alt.Y(f"{y}:Q", title=y_title, scale=scale)),
            base.mark_point(filled=True, size=10).encode(y=alt.Y(f"{y}:Q", scale=scale), tooltip=tip),
        ]
        if rules:
            layers.append(
                alt.Chart(alt.Data(values=chart_rows(rules)))
                .mark_rule(strokeDash=[3, 3], color="#888")  # full strength: 3:1 on the dark page too
                .encode(
                    x="batch:Q",
                    tooltip=[
                        alt.Tooltip("series:N", title="curve"),
                        alt.Tooltip("step:N", title="step at batch"),
                        alt.Tooltip("jump_pct:Q", title="jump (%)", format=".3~g"),
                        alt.Tooltip("sigmas:Q", title="jump ÷ std. error", format=".3~g"),
                    ],
                )
            )
        panels.append(alt.layer(*layers).properties(width=WIDTH, height=200))
    return alt.vconcat(*panels, data=alt.Data(values=chart_rows(rows))).properties(
        title=chart_title(title, *subtitle, "dashed rules: detected steps" if rules else "")
    )


def load_chart(rows: list[dict[str, Any]], title: str, subtitle: Sequence[str]) -> alt.Chart:
    """Latency against the busiest expert's rows, one point per (curve, batch), log-log.

    `rows` hold series, batch, max_load (rows of the busiest expert) and ms.
    """
    labels = list(dict.fromkeys(r["series"] for r in rows))
    return (
        alt.Chart(alt.Data(values=chart_rows(rows)))
        .mark_point(filled=True, size=40, opacity=0.85)
        .encode(
            x=alt.X("max_load:Q", title="rows of the busiest expert", scale=alt.Scale(type="log")),
            y=alt.Y("ms:Q", title="median latency per call (ms)", scale=alt.Scale(type="log")),
            color=alt.Color("series:N", title="routing", scale=alt.Scale(domain=labels, range=PALETTE[: len(labels)])),
            shape=alt.Shape("series:N", legend=None),
            tooltip=[
                alt.Tooltip("series:N", title="routing"),
                alt.Tooltip("batch:Q", title="batch", format=",.0f"),
                alt.Tooltip("max_load:Q", title="busiest expert's rows", format=",.0f"),
                alt.Tooltip("ms:Q", title="latency (ms)", format=".4~g"),
            ],
        )
        .properties(width=WIDTH, height=HEIGHT, title=chart_title(title, *subtitle))
    )


# --------------------------------------------------------------------------- figure


def _inert_json(spec: dict[str, Any]) -> str:
    """JSON text that HTML parses as plain text: no '<', '>', '&' or '$' (they become \\u escapes; no '$' can
    open or close a formula on the page), and no '__' (the placeholders the site hook fills in are spelled with
    a token of the build's own, benchmarks/site/placeholders.py; this keeps data from even resembling one).

    It sits in a <template>, not a <script>: Material's instant navigation re-creates script
    elements as executable ones, while a template's content is inert.
    """
    text = json.dumps(spec, separators=(",", ":"), ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("$", "\\u0024")
    return text.replace("__", "\\u005f\\u005f")


def _chart_rows(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every inline data row of a spec, in the order drawn (the CSV export)."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, dict) and isinstance(data.get("values"), list):
                found.extend(data["values"])
            for key, value in node.items():
                if key != "data":
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(spec)
    for values in spec.get("datasets", {}).values():
        found.extend(values)
    unique, seen = [], set()
    for row in found:
        key = json.dumps(row, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(row)
    return unique


def printable_strings(node: Any) -> Any:
    """`node` with every string made printable (`benchmarks.contract.text.printable`): the chart renderers that
    export a spec abort on some control characters, and a title from data must not carry one."""
    if isinstance(node, str):
        return printable(node)
    if isinstance(node, dict):
        return {printable(key): printable_strings(value) for key, value in node.items()}
    if isinstance(node, list):
        return [printable_strings(item) for item in node]
    return node


def legible(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with legend symbols drawn at full strength: Vega-Lite copies a mark's opacity to its legend symbol, so
    a faint quartile band made a faint swatch, and a legend without a colour scale drew its symbols black, unseen
    on the dark palette. LABEL_GREY keeps 3:1 against both palettes' backgrounds. Settings a spec gives win."""
    legend = spec.setdefault("config", {}).setdefault("legend", {})
    for key, value in (
        ("symbolOpacity", 1),
        ("symbolBaseFillColor", LABEL_GREY),
        ("symbolBaseStrokeColor", LABEL_GREY),
    ):
        legend.setdefault(key, value)
    _major_grid_only(spec)
    return spec


# A log axis's grid at powers of ten only: Vega puts a tick, and so a grid line, at every 2, 3, … 9 between them.
MAJOR_GRID = {"condition": {"test": "abs(log(datum.value) / LN10 - round(log(datum.value) / LN10)) < 1e-6", "value": 1}}


def _major_grid_only(node: Any) -> None:
    """Every base-10 log axis in `node` (a spec or part of one) draws grid lines at powers of ten only; an axis
    whose values the spec lists, or that sets its own grid opacity, is left as it is."""
    if isinstance(node, list):
        for item in node:
            _major_grid_only(item)
        return
    if not isinstance(node, dict):
        return
    scale = node.get("scale")
    axis = node.get("axis", {})
    decimal_log = isinstance(scale, dict) and scale.get("type") == "log" and scale.get("base", 10) == 10
    if decimal_log and axis is not None and "values" not in axis and "gridOpacity" not in axis:
        node["axis"] = {**axis, "gridOpacity": {**MAJOR_GRID, "value": 0}}
    for key, value in node.items():
        if key not in ("data", "datasets"):
            _major_grid_only(value)


class Figure:
    """A chart ready for a page: `_repr_html_` gives the <figure>, staged exports beside it."""

    def __init__(self, chart_id: str, spec: dict[str, Any], caption: str, description: str, visible: str | None = None):
        self.chart_id, self.spec, self.caption, self.description = chart_id, spec, caption, description
        self.visible = description if visible is None else visible  # the caption's text under the title

    def _repr_html_(self) -> str:
        cid = self.chart_id
        links = " · ".join(
            f'<a href="{SITE_ROOT}charts/{cid}.{ext}">{label}</a>'
            for ext, label in (("png", "PNG"), ("svg", "SVG"), ("csv", "data (CSV)"), ("json", "Vega-Lite spec"))
        )
        return (
            f'<figure class="bchart" id="chart-{cid}">'
            f'<div class="bchart-view" data-chart-id="{cid}" data-search-exclude>'
            f'<p class="bchart-wait">Drawing the chart… (without JavaScript, open the '
            f'<a href="{SITE_ROOT}charts/{cid}.svg">SVG</a>)</p></div>'
            f'<template class="bchart-spec" data-search-exclude>{_inert_json(self.spec)}</template>'
            f"<figcaption>"
            f'<a class="bchart-anchor" href="#chart-{cid}" title="Link to this chart">#</a> '
            f"<strong>{text.h(self.caption)}</strong> {text.h(self.visible)}"
            f'<span class="bchart-links">Chart <code>{cid}</code>: {links}</span>'
            f"{embed_html(cid, self.caption)}"
            f"</figcaption></figure>"
        )


def chart_id_of(text: str) -> str:
    """`text` as a chart id: lowercase letters and digits, anything else one dash."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def distinct_ids(named: Sequence[tuple[Any, str, Any]]) -> dict[Any, str]:
    """A chart id per item of (item, text to derive it from, order), distinct even where two texts make the same id
    (a run id may differ from another only in '.', '_' or case). Of the items sharing an id, the first in `order`
    (the oldest) keeps it, so an id never changes when a later file lands; each other gets a suffix from a hash of
    its own text, the same in every build."""
    groups: dict[str, list[tuple[Any, str, Any]]] = {}
    for entry in named:
        groups.setdefault(chart_id_of(entry[1]), []).append(entry)
    found: dict[Any, str] = {}
    for base, entries in groups.items():
        first, *rest = sorted(entries, key=lambda entry: entry[2])
        found[first[0]] = base
        for item, source, _ in rest:
            found[item] = f"{base}-{hashlib.sha256(source.encode('utf-8')).hexdigest()[:8]}"
    return found


def figure(
    chart: alt.TopLevelMixin, chart_id: str, caption: str, description: str, visible: str | None = None
) -> Figure:
    """Embed `chart` under a stable id and stage its spec and data for export.

    `caption` is a short title and `description` the text alternative (plain text: both are
    escaped); the caption under the chart shows `visible` (default: the description). The id must
    be stable across rebuilds: derive it from the page and what the chart shows, never from data
    values.
    """
    if not CHART_ID.match(chart_id):
        raise ValueError(f"chart id {chart_id!r} must be lowercase letters, digits and dashes")
    chart = chart.properties(description=f"{caption}. {description}")
    spec = printable_strings(legible(chart.to_dict(validate=os.environ.get(CHECK_SPECS_ENV) != "0")))
    spec.pop("$schema", None)
    stage = stage_dir()
    stage.mkdir(parents=True, exist_ok=True)
    target = stage / f"{chart_id}.json"
    if target.exists() and os.environ.get(STAGE_ENV):
        raise ValueError(f"chart id {chart_id!r} is used twice in this build")
    full = {"$schema": "https://vega.github.io/schema/vega-lite/v6.json", **spec}
    target.write_text(json.dumps(full, indent=1, ensure_ascii=False), encoding="utf-8")
    rows = _chart_rows(spec)
    columns = list(dict.fromkeys(k for row in rows for k in row))
    with (stage / f"{chart_id}.csv").open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return Figure(chart_id, spec, caption, description, visible)
