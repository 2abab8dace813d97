"""The guide's picture of its step 4: one measured curve, latency and throughput against batch, with the latency
budget, the throughput that counts as flat, and the batch the rule picks marked.

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt

from benchmarks.site.charts import LABEL_GREY, PALETTE, chart_title

WIDTH, HEIGHT = 420, 170


def pick_chart(
    points: Sequence[tuple[int, float]],
    budget_s: float,
    flat_share: float,
    picked: int,
    title: str,
    subtitle: Sequence[str],
) -> alt.VConcatChart:
    """`points`: (batch, median seconds) of one measured curve. Two panels on one batch axis: latency with the budget
    as a rule, throughput with the share of the best that counts as flat; the picked batch ringed in both."""
    rows = [{"batch": b, "ms": s * 1e3, "rows_per_s": b / s, "picked": b == picked} for b, s in points]
    batches = [b for b, _ in points]
    x = alt.X(
        "batch:Q",
        title="batch size (rows)",
        scale=alt.Scale(type="log", base=2, domain=[batches[0], batches[-1]], nice=False),
        axis=alt.Axis(values=[b for b in batches if b & (b - 1) == 0], format="d", labelOverlap="greedy"),
    )
    base = alt.Chart(alt.Data(values=rows)).encode(x=x)
    best = max(r["rows_per_s"] for r in rows)

    def panel(field: str, y_title: str, rule: float, words: str) -> alt.LayerChart:
        y = alt.Y(f"{field}:Q", title=y_title, scale=alt.Scale(type="log"), axis=alt.Axis(labelOverlap="greedy"))
        marks = alt.Chart(alt.Data(values=[{"y": rule, "words": words}]))
        return alt.layer(
            base.mark_line(color=PALETTE[0], strokeWidth=1.8).encode(y=y),
            base.mark_point(filled=True, size=24, color=PALETTE[0]).encode(y=y),
            base.transform_filter("datum.picked").mark_point(size=200, strokeWidth=2, color=PALETTE[1]).encode(y=y),
            marks.mark_rule(color=LABEL_GREY, strokeDash=[4, 3]).encode(y=alt.Y("y:Q", scale=alt.Scale(type="log"))),
            marks.mark_text(color=LABEL_GREY, align="left", dx=4, dy=-6, baseline="bottom").encode(
                y=alt.Y("y:Q", scale=alt.Scale(type="log")), x=alt.value(0), text="words:N"
            ),
        ).properties(width=WIDTH, height=HEIGHT)

    latency = panel("ms", "latency per call (ms)", budget_s * 1e3, f"budget {budget_s * 1e3:g} ms")
    throughput = panel(
        "rows_per_s", "rows per second", flat_share * best, f"{flat_share * 100:.0f} % of the best throughput"
    )
    return alt.vconcat(latency, throughput).properties(title=chart_title(title, *subtitle))
