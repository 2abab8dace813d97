"""The real-server check's chart: what Ray Serve did against what the simulator says, per case, for the p50
latency and for the mean batch formed, with the line where the two are equal and the band of agreement.

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from benchmarks.site.charts import LABEL_GREY, PALETTE, chart_rows, chart_title

PANEL = 250
HANDLER_COLORS = {"awaiting": PALETTE[0], "blocking": PALETTE[1]}
SERVICE_SHAPES = {"curve": "circle", "model": "triangle-up"}


def _panel(
    rows: list[dict[str, Any]], measured: str, simulated: str, title: str, unit: str, tolerance: float, fmt: str
) -> alt.LayerChart:
    values = [v for row in rows for v in (row[measured], row[simulated])]
    low, high = min(values) * 0.85, max(values) * 1.15
    scale = alt.Scale(domain=[low, high], nice=False, zero=False)
    line = [{"x": low, "y": low, "lo": low * (1 - tolerance), "hi": low * (1 + tolerance)}]
    line.append({"x": high, "y": high, "lo": high * (1 - tolerance), "hi": high * (1 + tolerance)})
    base = alt.Chart(alt.Data(values=line))
    band = base.mark_area(opacity=0.12, color=LABEL_GREY, clip=True).encode(
        x=alt.X("x:Q", scale=scale), y=alt.Y("lo:Q", scale=scale), y2="hi:Q"
    )
    equal = base.mark_line(strokeDash=[6, 4], color=LABEL_GREY, clip=True).encode(
        x=alt.X("x:Q", scale=scale), y=alt.Y("y:Q", scale=scale)
    )
    points = (
        alt.Chart(alt.Data(values=rows))
        .mark_point(filled=True, size=70, opacity=0.85, clip=True)
        .encode(
            x=alt.X(f"{simulated}:Q", title=f"simulated {unit}", scale=scale, axis=alt.Axis(format=fmt)),
            y=alt.Y(f"{measured}:Q", title=f"measured {unit}", scale=scale, axis=alt.Axis(format=fmt)),
            color=alt.Color(
                "handler:N",
                title="batch handler",
                scale=alt.Scale(domain=list(HANDLER_COLORS), range=list(HANDLER_COLORS.values())),
            ),
            shape=alt.Shape(
                "service:N",
                title="service",
                scale=alt.Scale(domain=list(SERVICE_SHAPES), range=list(SERVICE_SHAPES.values())),
            ),
            tooltip=[
                alt.Tooltip("service:N"),
                alt.Tooltip("handler:N", title="batch handler"),
                alt.Tooltip("policy:N"),
                alt.Tooltip("rate_per_s:Q", title="requests/s offered"),
                alt.Tooltip("repeats:Q"),
                alt.Tooltip(f"{measured}:Q", title=f"measured {unit}", format=".3~g"),
                alt.Tooltip(f"{simulated}:Q", title=f"simulated {unit}", format=".3~g"),
            ],
        )
    )
    return alt.layer(band, equal, points).properties(width=PANEL, height=PANEL, title=title)


def serving_check_chart(
    rows: Sequence[dict[str, Any]], title: str, subtitle: Sequence[str], tolerance: float
) -> alt.HConcatChart:
    """`rows` are `benchmarks.analysis.serving.batcher.ray_serve_comparison.RayServeComparison.table()` rows: measured
    against simulated p50 (ms) and mean batch, one point per case, coloured by handler style; the band is
    ±`tolerance`."""
    rows = chart_rows([dict(row) for row in rows])
    left = _panel(rows, "p50_ms", "sim_p50_ms", "p50 latency", "p50 (ms)", tolerance, "d")
    right = _panel(rows, "mean_batch", "sim_mean_batch", "mean batch formed", "mean batch", tolerance, ".1~f")
    return alt.hconcat(left, right).properties(title=chart_title(title, *subtitle)).resolve_scale(color="shared")
