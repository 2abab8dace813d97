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
