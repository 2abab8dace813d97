"""Small multiples of every measured device's curves on shared, normalised axes: latency ÷ the smallest batch's
latency against batch ÷ the ridge batch of the device's own measured ceilings. Measured solid, predicted dashed.

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from benchmarks.site.charts import KIND_DASH, PALETTE, _rows, _title

KINDS = {"measured": KIND_DASH["measured"], "roofline (predicted)": KIND_DASH["roofline"]}
PANEL_WIDTH, PANEL_HEIGHT = 240, 200  # three panels to a row fit the page
ALONE_WIDTH, ALONE_HEIGHT = 420, 300  # one device has the row to itself


def normalised_chart(
    rows: Sequence[dict[str, Any]], devices: Sequence[str], title: str, subtitle: Sequence[str]
) -> alt.FacetChart:
    """`rows` hold device, curve, kind (measured or roofline (predicted)), x (batch ÷ ridge batch), y (latency ÷
    the smallest batch's latency) and batch; one panel per device, in the order of `devices`."""
    labels = list(dict.fromkeys(row["curve"] for row in rows))
    base = alt.Chart().encode(
        x=alt.X(
            "x:Q",
            title="batch ÷ ridge batch of the run's ceilings",
            scale=alt.Scale(type="log"),
            axis=alt.Axis(labelOverlap="greedy", labelSeparation=4, labelFlush=True),
        ),
        y=alt.Y(
            "y:Q",
            title="latency ÷ latency at batch 1",
            scale=alt.Scale(type="log"),
            axis=alt.Axis(labelOverlap="greedy", labelSeparation=4),
        ),
        color=alt.Color("curve:N", title="curve", scale=alt.Scale(domain=labels, range=PALETTE[: len(labels)])),
        detail="kind:N",
    )
    lines = base.mark_line(strokeWidth=1.8).encode(
        strokeDash=alt.StrokeDash(
            "kind:N", title="line", scale=alt.Scale(domain=list(KINDS), range=list(KINDS.values()))
        )
    )
    points = (
        base.transform_filter("datum.kind == 'measured'")
        .mark_point(filled=True, size=20)
        .encode(
            tooltip=[
                alt.Tooltip("device:N"),
                alt.Tooltip("curve:N"),
                alt.Tooltip("batch:Q", format=",.0f"),
                alt.Tooltip("x:Q", title="batch ÷ ridge batch", format=".3~g"),
                alt.Tooltip("y:Q", title="latency ÷ latency at batch 1", format=".3~g"),
            ]
        )
    )
    alone = len(devices) == 1
    layer = alt.layer(lines, points, data=alt.Data(values=_rows(list(rows)))).properties(
        width=ALONE_WIDTH if alone else PANEL_WIDTH, height=ALONE_HEIGHT if alone else PANEL_HEIGHT
    )
    return layer.facet(
        facet=alt.Facet("device:N", title=None, sort=list(devices)), columns=min(3, max(1, len(devices)))
    ).properties(title=_title(title, *subtitle))
