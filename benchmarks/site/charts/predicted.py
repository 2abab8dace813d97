"""The chart of a prediction: latency against batch from a device's ceilings, nothing measured, each
stretch shaded by what bounds it (launch overhead, memory, compute); the ceiling dashed, and where given the
forecast solid with the span of its expected error.

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import altair as alt

from benchmarks.analysis.roofline.predict import COMPUTE, MEMORY, OVERHEAD, PredictedPoint, Region
from benchmarks.site import text
from benchmarks.site.charts import (
    HEADLINE_PANEL,
    HEIGHT,
    LABEL_GREY,
    WIDTH,
    batch_axis,
    chart_rows,
    chart_title,
    every_batch_axis,
    labelled_rules,
)

BOUND_WORDS = {OVERHEAD: "launch overhead", MEMORY: "memory (weight read)", COMPUTE: "compute"}
BOUND_COLORS = {OVERHEAD: "#d95f02", MEMORY: "#1f77b4", COMPUTE: "#d62728"}
FORECAST_COLOR = "#222222"  # the forecast's line and band, over the bounds' shades


@dataclass(frozen=True)
class PredictedPanel:
    title: str
    points: Sequence[PredictedPoint]
    regions: Sequence[Region]
    marks: Sequence[tuple[float, str]]  # (batch, label) of the batches where the bound changes
    forecast: Sequence[dict] = ()  # batch, us, low_us, high_us: the forecast and the span its expected error gives


def _panel(panel: PredictedPanel, batches: Sequence[float]) -> alt.LayerChart:
    x = batch_axis(batches)
    bands = [
        {"start": r.start, "end": r.end, "bound": BOUND_WORDS[r.bound], "from": r.start, "to": r.end}
        for r in panel.regions
    ]
    shade = (
        alt.Chart(alt.Data(values=chart_rows(bands)))
        .mark_rect(opacity=0.16)
        .encode(
            x=alt.X("start:Q", scale=alt.Scale(type="log", base=2, domain=[min(batches), max(batches)], nice=False)),
            x2="end:Q",
            color=alt.Color(
                "bound:N",
                title="bound by (predicted)",
                scale=alt.Scale(domain=list(BOUND_WORDS.values()), range=list(BOUND_COLORS.values())),
            ),
            tooltip=[
                alt.Tooltip("bound:N", title="bound by"),
                alt.Tooltip("from:Q", title="from batch", format=",.0f"),
                alt.Tooltip("to:Q", title="to batch", format=",.0f"),
            ],
        )
    )
    rows = [{"batch": p.batch, "us": p.seconds * 1e6, "bound": BOUND_WORDS[p.bound]} for p in panel.points]
    line = (
        alt.Chart(alt.Data(values=chart_rows(rows)))
        .mark_line(
            strokeDash=[6, 4], strokeWidth=2.5, color=LABEL_GREY, point=alt.OverlayMarkDef(size=24, color=LABEL_GREY)
        )
        .encode(
            x=x,
            y=alt.Y("us:Q", title="predicted latency per call (µs)", scale=alt.Scale(type="log")),
            tooltip=[
                alt.Tooltip("batch:Q", format=",.0f"),
                alt.Tooltip("us:Q", title="predicted µs", format=".3~g"),
                alt.Tooltip("bound:N", title="bound by"),
            ],
        )
    )
    rules = labelled_rules([{"batch": b, "label": label} for b, label in panel.marks], "batch")
    layers = [shade, line]
    if panel.forecast:
        y = alt.Y("us:Q", title="predicted latency per call (µs)", scale=alt.Scale(type="log"))
        told = alt.Chart(alt.Data(values=chart_rows(list(panel.forecast))))
        band = told.mark_area(opacity=0.22, color=FORECAST_COLOR).encode(
            x=x, y=alt.Y("low_us:Q", title="predicted latency per call (µs)", scale=alt.Scale(type="log")),
            y2="high_us:Q",
        )  # fmt: skip
        solid = told.mark_line(strokeWidth=2.5, color=FORECAST_COLOR).encode(
            x=x,
            y=y,
            tooltip=[
                alt.Tooltip("batch:Q", format=",.0f"),
                alt.Tooltip("us:Q", title="forecast µs", format=".3~g"),
                alt.Tooltip("low_us:Q", title="within its median error from", format=".3~g"),
                alt.Tooltip("high_us:Q", title="to", format=".3~g"),
            ],
        )
        layers = [shade, band, line, solid]
    return alt.layer(*layers, *rules).properties(width=HEADLINE_PANEL, height=HEIGHT, title=panel.title)


def predicted_chart(panels: Sequence[PredictedPanel], title: str, subtitle: Sequence[str]) -> alt.HConcatChart:
    """Predicted latency against batch, one panel per configuration side by side, shaded by bound."""
    batches = [p.batch for panel in panels for p in panel.points]
    chart = alt.hconcat(*(_panel(panel, batches) for panel in panels)).properties(title=chart_title(title, *subtitle))
    return chart.configure_legend(orient="bottom", direction="horizontal")


def mark_label(name: str, batch: float) -> str:
    return f"{name} ≈ {text.fmt_batch(batch)}"


SAWTOOTH_LINES = {"tile and wave model": [1, 0], "roofline, no partial waves": [6, 4]}


def sawtooth_chart(
    rows: Sequence[dict], marks: Sequence[tuple[int, str]], title: str, subtitle: Sequence[str]
) -> alt.VConcatChart:
    """Predicted latency per call (top) and per row (bottom, log) against batch on a linear axis, like the
    measured steps chart below it. `rows` hold batch, line (a key of SAWTOOTH_LINES), us, waves and
    share (of the roofline); `marks` are (batch, label) rules where a wave is added."""
    x = every_batch_axis(max(r["batch"] for r in rows))
    color = alt.Color(
        "line:N",
        title="predicted by",
        scale=alt.Scale(domain=list(SAWTOOTH_LINES), range=[BOUND_COLORS[COMPUTE], LABEL_GREY]),
    )
    dash = alt.StrokeDash(
        "line:N",
        title="predicted by",
        scale=alt.Scale(domain=list(SAWTOOTH_LINES), range=list(SAWTOOTH_LINES.values())),
    )
    tip = [
        alt.Tooltip("line:N", title="predicted by"),
        alt.Tooltip("batch:Q", format=",.0f"),
        alt.Tooltip("us:Q", title="predicted µs", format=".4~g"),
        alt.Tooltip("us_per_row:Q", title="µs per row", format=".3~g"),
        alt.Tooltip("waves:Q", title="waves"),
        alt.Tooltip("share:Q", title="roofline ÷ model", format=".2f"),
    ]
    marked = alt.Chart(alt.Data(values=chart_rows([{"batch": b, "label": label} for b, label in marks])))
    rule = marked.mark_rule(strokeDash=[2, 2], color=LABEL_GREY).encode(x="batch:Q")
    # Labels run along the top of the upper panel, right of their rules, in headroom the staircase leaves free.
    label = marked.mark_text(align="left", baseline="top", dx=3, dy=2, fontSize=11, color=LABEL_GREY).encode(
        x="batch:Q", y=alt.value(0), text="label:N"
    )
    panels = []
    for y, y_title, scale, labelled in (
        ("us", "predicted latency per call (µs)", alt.Scale(domain=[0, 1.15 * max(r["us"] for r in rows)]), True),
        ("us_per_row", "predicted latency per row (µs, log)", alt.Scale(type="log"), False),
    ):
        line = (
            alt.Chart()
            .transform_calculate(us_per_row="datum.us / datum.batch")
            .mark_line(strokeWidth=2)
            .encode(
                x=x,
                y=alt.Y(f"{y}:Q", title=y_title, scale=scale, axis=alt.Axis(labelOverlap="greedy", labelSeparation=4)),
                color=color,
                strokeDash=dash,
                tooltip=tip,
            )
        )
        layers = [line, rule, label] if labelled and marks else [line, rule] if marks else [line]
        panels.append(alt.layer(*layers).properties(width=WIDTH, height=200))
    chart = alt.vconcat(*panels, data=alt.Data(values=chart_rows(list(rows)))).properties(
        title=chart_title(title, *subtitle)
    )
    return chart.configure_legend(orient="bottom", direction="horizontal")
