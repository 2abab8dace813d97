"""The chart of published measurements against the roofline's predictions: one point per published figure, log-log,
with the line where the two are equal. Nothing on it was measured by this project.

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import altair as alt

from benchmarks.site.charts import HEIGHT, LABEL_GREY, PALETTE, WIDTH, chart_rows, chart_title

SHAPES = {"verified": "circle", "partly verified": "diamond"}
DRAWN = alt.Scale(domain=["ceiling", "forecast"], range=[LABEL_GREY, PALETTE[0]])
FITTED = alt.Scale(domain=["fitted", "not fitted"], range=["circle", "triangle"])


def published_chart(rows: Sequence[dict[str, Any]], title: str, subtitle: Sequence[str]) -> alt.LayerChart:
    """`rows` hold source, id, configuration, predicted and published (work per second), per (its unit), ratio and
    status (verified or partly verified)."""
    values = [v for row in rows for v in (row["predicted"], row["published"])]
    low, high = min(values) / 2, max(values) * 2
    scale = alt.Scale(type="log", domain=[low, high], nice=False)
    decades = [10.0**k for k in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)]
    axis = alt.Axis(
        values=[d for d in decades if low <= d <= high], format="~s", labelOverlap="greedy", labelSeparation=4
    )
    sources = list(dict.fromkeys(row["source"] for row in rows))
    equal = alt.Chart(alt.Data(values=[{"x": low, "y": low}, {"x": high, "y": high}]))
    line = equal.mark_line(strokeDash=[6, 4], color=LABEL_GREY).encode(x="x:Q", y="y:Q")
    label = (
        alt.Chart(alt.Data(values=[{"x": high / 1.6, "y": high / 1.6, "text": "published = ceiling"}]))
        .mark_text(align="right", dx=-6, dy=-6, fontSize=11, color=LABEL_GREY, angle=315)
        .encode(x="x:Q", y="y:Q", text="text:N")
    )
    points = (
        alt.Chart(alt.Data(values=chart_rows(list(rows))))
        .mark_point(filled=True, size=70, opacity=0.9)
        .encode(
            x=alt.X("predicted:Q", title="ceiling: the datasheet roofline (work per second)", scale=scale, axis=axis),
            y=alt.Y("published:Q", title="published by others (work per second)", scale=scale, axis=axis),
            color=alt.Color(
                "source:N", title="published by", scale=alt.Scale(domain=sources, range=PALETTE[: len(sources)])
            ),
            shape=alt.Shape(
                "status:N", title="checked", scale=alt.Scale(domain=list(SHAPES), range=list(SHAPES.values()))
            ),
            tooltip=[
                alt.Tooltip("source:N", title="published by"),
                alt.Tooltip("configuration:N"),
                alt.Tooltip("published:Q", title="published per second", format=",.4~g"),
                alt.Tooltip("predicted:Q", title="ceiling per second", format=",.4~g"),
                alt.Tooltip("per:N", title="unit of work"),
                alt.Tooltip("ratio:Q", title="published ÷ ceiling", format=".2f"),
                alt.Tooltip("status:N", title="checked"),
            ],
        )
    )
    return alt.layer(line, label, points).properties(
        width=WIDTH, height=HEIGHT + 80, title=chart_title(title, *subtitle)
    )


def cross_validation_chart(rows: Sequence[dict[str, Any]], title: str, subtitle: Sequence[str]) -> alt.LayerChart:
    """One row per published figure, sorted by its error: the ceiling's and the forecast's value over the
    published one (log scale), the forecast fitted without the figure's source. `rows` hold id, kind, source,
    ceiling_ratio, forecast_ratio, fitted ("fitted" or "not fitted") and error."""
    ratios = [v for row in rows for v in (row["ceiling_ratio"], row["forecast_ratio"])]
    low, high = min(min(ratios), 1 / 1.5) / 1.2, max(max(ratios), 1.5) * 1.2
    scale = alt.Scale(type="log", domain=[low, high], nice=False)
    order = [row["id"] for row in sorted(rows, key=lambda r: r["error"])]
    # the figures' ids would take half a phone's width: the table below the chart names each, the tooltip too
    y = alt.Y("id:N", sort=order, axis=alt.Axis(labels=False, ticks=False, title="figures, by the forecast's error"))
    ticks = [t for t in (0.25, 0.5, 1.0, 2.0, 4.0) if low <= t <= high]
    band = alt.Chart(alt.Data(values=[{"low": 0.7, "high": 1.3}])).mark_rect(color="#ddd", opacity=0.5)
    band = band.encode(x=alt.X("low:Q", scale=scale), x2="high:Q")
    one = alt.Chart(alt.Data(values=[{"x": 1.0}])).mark_rule(color=LABEL_GREY).encode(x="x:Q")
    long = [
        {**row, "which": which, "ratio": row[f"{which}_ratio"]}
        for row in chart_rows(list(rows))
        for which in ("ceiling", "forecast")
    ]
    points = (
        alt.Chart(alt.Data(values=long))
        .mark_point(filled=True, size=45)
        .encode(
            x=alt.X(
                "ratio:Q",
                title="÷ published (grey: ±30 %)",
                scale=scale,
                axis=alt.Axis(values=ticks, labelOverlap="greedy", grid=True),
            ),
            y=y,
            color=alt.Color("which:N", title="drawn", scale=DRAWN),
            shape=alt.Shape("fitted:N", title="in the fit", scale=FITTED),
            tooltip=[
                alt.Tooltip("id:N", title="figure"),
                alt.Tooltip("source:N", title="published by"),
                alt.Tooltip("kind:N", title="kind of work"),
                alt.Tooltip("which:N", title="drawn"),
                alt.Tooltip("ratio:Q", title="÷ published", format=".2f"),
                alt.Tooltip("error:Q", title="forecast error", format="+.0%"),
            ],
        )
    )
    return (
        alt.layer(band, one, points)
        .properties(width=WIDTH, height=max(HEIGHT, 13 * len(rows)), title=chart_title(title, *subtitle))
        .resolve_scale(x="shared")
    )
