"""The charts of the serving page: the batch a dynamic batcher forms against the offered rate, what the latency
at a percentile is made of, latency against throughput for several policies (the hockey stick), the capacity
within a budget against the max batch, and the MLPerf Server check.

Every chart is drawn from simulations of a committed curve (or of a curve scaled to a published figure); its
subtitle names the curve's device, dtype and mode, and that the points are simulated.

Pure Python (Altair): nothing on this module's import path may import torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from benchmarks.site.charts import PALETTE, chart_rows, chart_title

WIDTH, HEIGHT = 520, 300
GREY = "#888"
PARTS = ["queue", "batch formation", "service"]
PART_COLORS = ["#d62728", "#ff7f0e", "#1f77b4"]
LEGEND = alt.Legend(orient="bottom", columns=2, labelLimit=420, title=None)


def _color(field: str, names: Sequence[str]) -> alt.Color:
    return alt.Color(f"{field}:N", scale=alt.Scale(domain=list(names), range=PALETTE[: len(names)]), legend=LEGEND)


def _rule(value: float, label: str, axis: str) -> list[alt.Chart]:
    rule = alt.Chart(alt.Data(values=[{"v": value, "label": label}]))
    if axis == "y":
        line = rule.mark_rule(color=GREY, strokeDash=[4, 3]).encode(y="v:Q")
        text = rule.mark_text(color=GREY, align="left", dx=4, dy=-6, baseline="bottom").encode(
            y="v:Q", x=alt.value(0), text="label:N"
        )
    else:
        line = rule.mark_rule(color=GREY, strokeDash=[4, 3]).encode(x="v:Q")
        text = rule.mark_text(color=GREY, align="left", dx=4, baseline="top").encode(
            x="v:Q", y=alt.value(2), text="label:N"
        )
    return [line, text]


def batch_formed_chart(
    rows: list[dict[str, Any]], max_batch: int, title: str, subtitle: Sequence[str], names: Sequence[str] = ()
) -> alt.LayerChart:
    """rows: policy, rate, mean_batch (stable points only); `names`: every policy, in order (one colour each, the
    same on every chart of the page)."""
    names = list(names) or list(dict.fromkeys(r["policy"] for r in rows))
    base = alt.Chart(alt.Data(values=chart_rows(rows))).encode(
        x=alt.X("rate:Q", title="offered rate (requests per second)"),
        y=alt.Y("mean_batch:Q", title="mean batch formed (requests)"),
        color=_color("policy", names),
        tooltip=["policy:N", alt.Tooltip("rate:Q", format=",.3g"), alt.Tooltip("mean_batch:Q", format=".2f")],
    )
    layers = [base.mark_line(), base.mark_point(filled=True, size=30), *_rule(max_batch, f"max batch {max_batch}", "y")]
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=chart_title(title, *subtitle))


def breakdown_chart(rows: list[dict[str, Any]], title: str, subtitle: Sequence[str]) -> alt.Chart:
    """rows: rate_label, part (queue, batch formation, service), ms."""
    order = {part: index for index, part in enumerate(PARTS)}
    data = [{**r, "order": order[r["part"]]} for r in rows]
    return (
        alt.Chart(alt.Data(values=chart_rows(data)))
        .mark_bar()
        .encode(
            y=alt.Y("rate_label:N", title="offered rate", sort=None),
            x=alt.X("ms:Q", title="mean time of the requests at the percentile (ms)", stack="zero"),
            color=alt.Color(
                "part:N", scale=alt.Scale(domain=PARTS, range=PART_COLORS), legend=alt.Legend(orient="bottom")
            ),
            order="order:Q",
            tooltip=["rate_label:N", "part:N", alt.Tooltip("ms:Q", format=".3g")],
        )
        .properties(width=WIDTH, height=36 * len({r["rate_label"] for r in rows}), title=chart_title(title, *subtitle))
    )


def hockey_chart(
    rows: list[dict[str, Any]],
    budget_ms: float,
    percentile: float,
    title: str,
    subtitle: Sequence[str],
    names: Sequence[str] = (),
) -> alt.LayerChart:
    """rows: policy, throughput, latency_ms (stable points only); `names` as for batch_formed_chart."""
    names = list(names) or list(dict.fromkeys(r["policy"] for r in rows))
    base = alt.Chart(alt.Data(values=chart_rows(rows))).encode(
        x=alt.X("throughput:Q", title="throughput (requests per second)"),
        y=alt.Y("latency_ms:Q", scale=alt.Scale(type="log"), title=f"p{percentile:g} latency (ms)"),
        color=_color("policy", names),
        order="throughput:Q",
        tooltip=["policy:N", alt.Tooltip("throughput:Q", format=",.3g"), alt.Tooltip("latency_ms:Q", format=".3g")],
    )
    layers = [
        base.mark_line(),
        base.mark_point(filled=True, size=26),
        *_rule(budget_ms, f"budget {budget_ms:g} ms", "y"),
    ]
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=chart_title(title, *subtitle))


def capacity_chart(rows: list[dict[str, Any]], unbatched: float, title: str, subtitle: Sequence[str]) -> alt.LayerChart:
    """rows: policy, max_batch, capacity (requests per second within the budget)."""
    names = list(dict.fromkeys(r["policy"] for r in rows))
    base = alt.Chart(alt.Data(values=chart_rows(rows))).encode(
        x=alt.X("max_batch:Q", scale=alt.Scale(type="log", base=2), title="max batch"),
        y=alt.Y("capacity:Q", title="highest rate within the budget (requests/s)"),
        color=_color("policy", names),
        tooltip=["policy:N", "max_batch:Q", alt.Tooltip("capacity:Q", format=",.3g")],
    )
    layers = [
        base.mark_line(),
        base.mark_point(filled=True, size=30),
        *_rule(unbatched, f"no batching: {unbatched:,.3g}/s", "y"),
    ]
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=chart_title(title, *subtitle))


def mlperf_chart(
    rows: list[dict[str, Any]], published: dict[str, float], bound_ms: float, title: str, subtitle: Sequence[str]
) -> alt.LayerChart:
    """rows: rate, latency_ms (simulated p99, stable points); published: rate, latency_ms."""
    sim = alt.Chart(alt.Data(values=chart_rows(rows))).encode(
        x=alt.X("rate:Q", title="queries per second, the whole system"),
        y=alt.Y("latency_ms:Q", title="p99 latency (ms)"),
        tooltip=[alt.Tooltip("rate:Q", format=",.0f"), alt.Tooltip("latency_ms:Q", format=".3g")],
    )
    point = alt.Chart(alt.Data(values=[{**published, "what": "published (MLPerf v3.0 Server)"}])).encode(
        x="rate:Q", y="latency_ms:Q", tooltip=["what:N", alt.Tooltip("rate:Q", format=",.2f"), "latency_ms:Q"]
    )
    layers = [
        sim.mark_line(color=PALETTE[0]),
        sim.mark_point(filled=True, size=26, color=PALETTE[0]),
        point.mark_point(shape="diamond", size=120, filled=True, color=PALETTE[1]),
        point.mark_text(align="right", dx=-8, dy=-8, color=PALETTE[1]).encode(text="what:N"),
        *_rule(bound_ms, f"bound {bound_ms:g} ms", "y"),
    ]
    return alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=chart_title(title, *subtitle))
