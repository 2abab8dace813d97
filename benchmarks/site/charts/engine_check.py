"""The real-engine check's charts: a real vLLM's measured loads (points, with their range over the repeats) against the
continuous-batching simulator replaying them on the engine's measured step curve (lines), against the Poisson rate;
and one load over time, the engine's running sequences and KV use against the simulator's.

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from benchmarks.site.charts import LABEL_GREY, PALETTE, chart_rows, chart_title

PANEL_W, PANEL_H = 140, 140
METRIC_AXES = {  # metric → (panel title, axis title, log scale)
    "ttft_p50_ms": ("TTFT p50", "TTFT p50 (ms)", True),
    "tpot_p50_ms": ("TPOT p50", "TPOT p50 (ms)", False),
    "output_tokens_per_s": ("output tokens/s", "output tokens/s", False),
}


def _panel(rows: list[dict[str, Any]], metric: str, settings: list[str], mix_label: str) -> alt.LayerChart:
    title, axis, log = METRIC_AXES[metric]
    mine = [r for r in rows if r["metric"] == metric]
    scale = alt.Scale(type="log") if log else alt.Scale(zero=True)
    palette = alt.Scale(domain=settings, range=PALETTE[: len(settings)])
    color = alt.Color("setting:N", title="engine setting", scale=palette)
    x = alt.X("rate_per_s:Q", title="requests/s", scale=alt.Scale(zero=True))
    base = alt.Chart(alt.Data(values=mine))
    line = base.mark_line(strokeWidth=2, opacity=0.8).encode(x=x, y=alt.Y("simulated:Q", title=axis, scale=scale),
                                                              color=color)  # fmt: skip
    spread = base.mark_rule(strokeWidth=1.5).encode(x=x, y=alt.Y("low:Q", scale=scale), y2="high:Q", color=color)
    points = base.mark_point(filled=True, size=45, opacity=0.95).encode(
        x=x,
        y=alt.Y("measured:Q", scale=scale),
        color=color,
        tooltip=[
            alt.Tooltip("setting:N", title="engine setting"),
            alt.Tooltip("mix:N", title="lengths"),
            alt.Tooltip("rate_per_s:Q", title="requests/s offered", format=".3~g"),
            alt.Tooltip("measured:Q", title=f"measured {axis}", format=".3~g"),
            alt.Tooltip("low:Q", title="lowest repeat", format=".3~g"),
            alt.Tooltip("high:Q", title="highest repeat", format=".3~g"),
            alt.Tooltip("simulated:Q", title=f"simulated {axis}", format=".3~g"),
        ],
    )
    return alt.layer(line, spread, points).properties(width=PANEL_W, height=PANEL_H, title=f"{title} · {mix_label}")


def against_rate_chart(rows: Sequence[dict[str, Any]], mixes: Sequence[tuple[str, str]], title: str,
                       subtitle: Sequence[str]) -> alt.VConcatChart:  # fmt: skip
    """`rows`: one per (setting, mix, rate, metric of METRIC_AXES): `measured` (the median over the repeats), `low`
    and `high` (their range) and `simulated` (the median of the replays). One row of panels per mix (name, label)."""
    rows = chart_rows([dict(r) for r in rows])
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    lines = [
        alt.hconcat(*(_panel([r for r in rows if r["mix"] == name], m, settings, label) for m in METRIC_AXES))
        for name, label in mixes
    ]
    chart = alt.vconcat(*lines).properties(title=chart_title(title, *subtitle)).resolve_scale(color="shared")
    return chart.configure_legend(orient="bottom")  # three panels fit the text column only with the legend below


def over_time_chart(rows: Sequence[dict[str, Any]], title: str, subtitle: Sequence[str]) -> alt.HConcatChart:
    """`rows`: {t_s, quantity ("running" or "kv"), side ("measured" or "simulated"), value}: the engine's gauges
    (sampled from /metrics) and the simulator's state after every step, over one load."""
    rows = chart_rows([dict(r) for r in rows])
    sides = alt.Color("side:N", title=None, scale=alt.Scale(domain=["measured", "simulated"],
                                                            range=[PALETTE[0], LABEL_GREY]))  # fmt: skip
    panels = []
    for quantity, axis in (("running", "running sequences"), ("kv", "KV cache in use (%)")):
        mine = [r for r in rows if r["quantity"] == quantity]
        panels.append(
            alt.Chart(alt.Data(values=mine))
            .mark_line(interpolate="step-after", strokeWidth=1.6)
            .encode(
                x=alt.X("t_s:Q", title="seconds from the load's start"),
                y=alt.Y("value:Q", title=axis),
                color=sides,
                strokeDash=alt.StrokeDash("side:N", legend=None, scale=alt.Scale(domain=["measured", "simulated"],
                                                                                 range=[[1, 0], [5, 3]])),
                tooltip=[alt.Tooltip("side:N"), alt.Tooltip("t_s:Q", title="s", format=".2f"),
                         alt.Tooltip("value:Q", title=axis, format=".3~g")],
            )
            .properties(width=PANEL_W * 1.6, height=PANEL_H, title=axis)
        )  # fmt: skip
    return alt.hconcat(*panels).properties(title=chart_title(title, *subtitle))
