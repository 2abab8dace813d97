"""Small multiples of every measured device's curves on shared, normalised axes: latency ÷ the roofline's batch-1
latency against batch ÷ the ridge batch of the device's own measured ceilings. Measured solid, predicted dashed.

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from benchmarks.site.charts import KIND_DASH, LABEL_GREY, PALETTE, chart_rows, chart_title

MEASURED, ROOFLINE = "measured", "roofline (predicted)"  # the kinds of row
PANEL_WIDTH, PANEL_HEIGHT = 240, 200  # three panels to a row fit the page
ALONE_WIDTH, ALONE_HEIGHT = 420, 300  # one device has the row to itself


def _log_domain(values: Sequence[float]) -> list[float]:
    """One domain for every panel, a little wider than the data, so that the panels share their axes."""
    return [min(values) / 1.15, max(values) * 1.15]


def normalised_chart(
    rows: Sequence[dict[str, Any]], devices: Sequence[str], title: str, subtitle: Sequence[str]
) -> alt.ConcatChart:
    """`rows` hold device, curve, kind (MEASURED or ROOFLINE), x (batch ÷ ridge batch), y (latency ÷ the roofline's
    latency at batch 1) and batch; one panel per device, in the order of `devices`, titled with the
    device's name (a title wraps on a narrow screen; a facet header would not) and drawn on the same domains."""
    labels = list(dict.fromkeys(row["curve"] for row in rows))
    x_scale = alt.Scale(type="log", domain=_log_domain([row["x"] for row in rows]), nice=False)
    y_scale = alt.Scale(type="log", domain=_log_domain([row["y"] for row in rows]), nice=False)
    y_title = "latency ÷ roofline latency at batch 1"
    base = alt.Chart().encode(
        x=alt.X(
            "x:Q",
            title="batch ÷ ridge batch of the run's ceilings",
            scale=x_scale,
            axis=alt.Axis(labelOverlap="greedy", labelSeparation=4, labelFlush=True),
        ),
        y=alt.Y("y:Q", title=y_title, scale=y_scale, axis=alt.Axis(labelOverlap="greedy", labelSeparation=4)),
        detail="curve:N",
    )
    # The rooflines of the curves nearly coincide once normalised: one grey dashed line, whichever curve is on top.
    roofline = (
        base.transform_filter(f"datum.kind == '{ROOFLINE}'")
        .mark_line(strokeWidth=1.5, strokeDash=KIND_DASH["roofline"], color=LABEL_GREY, clip=True)
        .encode(tooltip=[alt.Tooltip("curve:N"), alt.Tooltip("y:Q", title=f"roofline: {y_title}", format=".3~g")])
    )
    measured = base.transform_filter(f"datum.kind == '{MEASURED}'").encode(
        color=alt.Color("curve:N", title="measured", scale=alt.Scale(domain=labels, range=PALETTE[: len(labels)]))
    )
    lines = measured.mark_line(strokeWidth=1.8, clip=True)
    points = measured.mark_point(filled=True, size=20, clip=True).encode(
        tooltip=[
            alt.Tooltip("device:N"),
            alt.Tooltip("curve:N"),
            alt.Tooltip("batch:Q", format=",.0f"),
            alt.Tooltip("x:Q", title="batch ÷ ridge batch", format=".3~g"),
            alt.Tooltip("y:Q", title=y_title, format=".3~g"),
        ]
    )
    alone = len(devices) == 1
    size = {"width": ALONE_WIDTH, "height": ALONE_HEIGHT} if alone else {"width": PANEL_WIDTH, "height": PANEL_HEIGHT}
    panels = [
        alt.layer(
            roofline, lines, points, data=alt.Data(values=chart_rows([row for row in rows if row["device"] == device]))
        ).properties(title=alt.TitleParams(device, fontSize=12, anchor="start"), **size)
        for device in devices
    ]
    return alt.concat(*panels, columns=min(3, len(devices))).properties(title=chart_title(title, *subtitle))


def beside_datasheets_chart(rows: Sequence[dict[str, Any]], title: str, subtitle: Sequence[str]) -> alt.LayerChart:
    """`rows` hold device, kind (MEASURED or "predicted (datasheet)"), batch and ms: one measured curve solid with its
    points, each datasheet GPU's roofline prediction of the same workload dashed, all on one pair of log axes."""
    devices = list(dict.fromkeys(row["device"] for row in rows))
    color = alt.Color(
        "device:N",
        title="device",
        scale=alt.Scale(domain=devices, range=PALETTE[: len(devices)]),
        legend=alt.Legend(labelLimit=0),  # a device's whole name: charts.js puts the legend below on a narrow page
    )
    dash = alt.StrokeDash(
        "kind:N",
        title="line",
        scale=alt.Scale(domain=[MEASURED, DATASHEET], range=[KIND_DASH["measured"], KIND_DASH["roofline"]]),
        legend=None,  # the subtitle says it (solid measured, dashed predicted): one legend fits a phone's column
    )
    batches = sorted({row["batch"] for row in rows})
    base = alt.Chart(alt.Data(values=chart_rows(list(rows)))).encode(
        x=alt.X(
            "batch:Q",
            title="batch size (rows)",
            scale=alt.Scale(type="log", base=2, domain=[batches[0], batches[-1]], nice=False),
            axis=alt.Axis(values=_ticks(batches), format="d", labelOverlap="greedy"),
        ),
        y=alt.Y(
            "ms:Q",
            title="latency per call (ms)",
            scale=alt.Scale(type="log", domain=_log_domain([row["ms"] for row in rows]), nice=False),
            axis=alt.Axis(labelOverlap="greedy", labelSeparation=4),
        ),
        color=color,
        tooltip=[
            alt.Tooltip("device:N"),
            alt.Tooltip("kind:N", title="what"),
            alt.Tooltip("batch:Q", format=",.0f"),
            alt.Tooltip("ms:Q", title="latency (ms)", format=".4~g"),
        ],
    )
    lines = base.mark_line(strokeWidth=1.8).encode(strokeDash=dash)
    points = base.transform_filter(f"datum.kind == '{MEASURED}'").mark_point(filled=True, size=24)
    return alt.layer(lines, points).properties(
        width=ALONE_WIDTH, height=ALONE_HEIGHT, title=chart_title(title, *subtitle)
    )


DATASHEET = "predicted (datasheet)"


def _ticks(batches: Sequence[int]) -> list[int]:
    """The powers of two among the batches; every other one when there are more than six, so a phone's narrow plot
    keeps a gap between its labels."""
    powers = [b for b in batches if b & (b - 1) == 0]
    return powers[::2] if len(powers) > 6 else powers
