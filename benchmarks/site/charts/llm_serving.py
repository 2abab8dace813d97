"""The charts of the LLM-serving page: the front of total against per-user tokens per second, and the latencies
against concurrency with the KV limit marked. Every point is a simulation on a step forecast from a datasheet
roofline, drawn with its expected error, and the ceiling beside it: nothing on them was measured, and each says so.

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import altair as alt

from benchmarks.site.charts import HEADLINE_PANEL, HEIGHT, LABEL_GREY, PALETTE, WIDTH, chart_rows, chart_title

DASH = {"p50": [1, 0], "p99": [6, 4]}
SPACED = {"labelOverlap": "greedy", "labelSeparation": 4}  # tick labels too close to read apart: every other one
LEGEND_LABELS = 320  # px: "chunked prefill (2,048 tokens a step)" whole


NARROWEST_PLOT = 220  # px: the plot on a phone (charts.js narrows it to the column); labels apart there stay apart
LABEL_CHAR, LABEL_HEIGHT = 6.2, 12  # px of a 10 px label: per digit, and its line


def _domain(values: Sequence[float]) -> list[float]:
    return [min(values) / 1.3, max(values) * 1.3]


def _log(values: Sequence[float]) -> alt.Scale:
    return alt.Scale(type="log", domain=_domain(values), nice=False)


def _at(value: float, domain: list[float], pixels: float) -> float:
    low, high = (math.log(v) for v in domain)
    return pixels * (math.log(value) - low) / (high - low)


def labelled_points(
    rows: Sequence[dict[str, Any]],
    height: float,
    x_domain: list[float] | None = None,
    y_domain: list[float] | None = None,
) -> list[dict[str, Any]]:
    """The rows whose concurrency label, drawn up and to the right of its point, clears every label kept before
    it and every point, on the narrowest plot the chart is drawn at (wider, they only move apart): each line's
    first and last point first, then the rest in order. The domains are the axes' (default: the rows' own)."""
    x_domain = x_domain or _domain([r["per_user"] for r in rows])
    y_domain = y_domain or _domain([r["total"] for r in rows])
    where = [(_at(r["per_user"], x_domain, NARROWEST_PLOT), height - _at(r["total"], y_domain, height)) for r in rows]
    points = [(x - 4, y - 4, x + 4, y + 4) for x, y in where]

    def clear(a, b):
        return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]

    ends = set()
    for gpu in dict.fromkeys(r["gpu"] for r in rows):
        mine = [i for i, r in enumerate(rows) if r["gpu"] == gpu]
        ends |= {min(mine, key=lambda i: rows[i]["concurrency"]), max(mine, key=lambda i: rows[i]["concurrency"])}
    kept, boxes = [], []
    for i in sorted(range(len(rows)), key=lambda i: (i not in ends, i)):
        x, y = where[i]
        box = (x + 4, y - 6 - LABEL_HEIGHT, x + 6 + LABEL_CHAR * len(f"{rows[i]['concurrency']:g}"), y - 4)
        others = [p for j, p in enumerate(points) if j != i]
        if all(clear(box, other) for other in boxes + others):
            kept.append(i)
            boxes.append(box)
    return [rows[i] for i in sorted(kept)]


DRAWN = {"forecast": [1, 0], "ceiling": [5, 3]}  # the forecast solid, the datasheet roofline's ceiling dashed


def front_chart(
    rows: Sequence[dict[str, Any]],
    title: str,
    subtitle: Sequence[str],
    band: tuple[float, float] | None = None,
    ceiling_rows: Sequence[dict[str, Any]] = (),
) -> alt.LayerChart:
    """`rows` hold gpu, concurrency, total (tokens/s), per_user (tokens/s) and kv_full (the cache full at its
    peak): one line per GPU through its concurrencies, per-user rate on x, total on y, both log. With `band`
    (low, high: the factors within which the expected error puts a point), a faint segment through each point from
    the low factor to the high one, per user and in all alike. `ceiling_rows` (the same fields): each GPU's line
    on the ceiling, dashed, without points."""
    gpus = list(dict.fromkeys(r["gpu"] for r in rows))
    color = alt.Color("gpu:N", title="GPU (datasheet)", scale=alt.Scale(domain=gpus, range=PALETTE[: len(gpus)]))
    low, high = band or (1.0, 1.0)
    spans = [{**r, "per_user_low": r["per_user"] * low, "total_low": r["total"] * low,
              "per_user_high": r["per_user"] * high, "total_high": r["total"] * high} for r in rows]  # fmt: skip
    drawn = [{**r, "drawn": "forecast"} for r in rows] + [{**r, "drawn": "ceiling"} for r in ceiling_rows]
    x_title = ["tokens per second per user (1 / median time", "per output token, first token's wait left out)"]
    x_domain = _domain([v for r in spans for v in (r["per_user_low"], r["per_user_high"])]
                       + [r["per_user"] for r in drawn])  # fmt: skip
    x_scale = alt.Scale(type="log", domain=x_domain, nice=False)
    y_title = "output tokens per second, all users"
    y_domain = _domain([v for r in spans for v in (r["total_low"], r["total_high"])] + [r["total"] for r in drawn])
    y_scale = alt.Scale(type="log", domain=y_domain, nice=False)
    x = alt.X("per_user:Q", title=x_title, scale=x_scale, axis=alt.Axis(format="~s", **SPACED))
    y = alt.Y("total:Q", title=y_title, scale=y_scale, axis=alt.Axis(format="~s", **SPACED))
    tip = [
        alt.Tooltip("gpu:N", title="GPU"),
        alt.Tooltip("concurrency:Q", title="concurrent requests"),
        alt.Tooltip("total:Q", title="tokens/s in all", format=",.0f"),
        alt.Tooltip("per_user:Q", title="tokens/s per user", format=",.1f"),
        alt.Tooltip("kv_peak:Q", title="KV cache at its peak", format=".0%"),
    ]
    base = alt.Chart(alt.Data(values=chart_rows(spans)))
    dash = alt.StrokeDash("drawn:N", title="drawn", scale=alt.Scale(domain=list(DRAWN), range=list(DRAWN.values())))
    line = (
        alt.Chart(alt.Data(values=chart_rows(drawn)))
        .mark_line(strokeWidth=2)
        .encode(x=x, y=y, color=color, strokeDash=dash, order="concurrency:Q", tooltip=[alt.Tooltip("drawn:N"), *tip])
    )
    points = base.mark_point(filled=True, size=50).encode(
        x=x,
        y=y,
        color=color,
        shape=alt.Shape("kv:N", title="KV cache", scale=alt.Scale(domain=["room left", "full"],
                                                                  range=["circle", "cross"])),
        tooltip=tip,
    )  # fmt: skip
    spaced = alt.Chart(alt.Data(values=chart_rows(labelled_points(rows, HEIGHT + 40, x_domain, y_domain))))
    labels = spaced.mark_text(align="left", dx=5, dy=-6, fontSize=10, color=LABEL_GREY).encode(
        x=x, y=y, text="concurrency:Q"
    )
    layers = [line, points, labels]
    if band is not None:
        segment = base.mark_rule(strokeWidth=4, opacity=0.25).encode(
            x=alt.X("per_user_low:Q", scale=x_scale, title=x_title),
            y=alt.Y("total_low:Q", scale=y_scale, title=y_title),
            x2="per_user_high:Q", y2="total_high:Q", color=color,
        )  # fmt: skip
        layers.insert(0, segment)
    chart = alt.layer(*layers).properties(width=WIDTH, height=HEIGHT + 40, title=chart_title(title, *subtitle))
    return chart.configure_legend(orient="bottom", direction="horizontal", labelLimit=LEGEND_LABELS)


def token_latency_chart(
    rows: Sequence[dict[str, Any]],
    limit: float | None,
    title: str,
    subtitle: Sequence[str],
    band_rows: Sequence[dict[str, Any]] = (),
    ceiling_rows: Sequence[dict[str, Any]] = (),
) -> alt.HConcatChart:
    """Two panels against concurrency (log-log): time to first token, and time per output token, each at p50
    (solid) and p99 (dashed), one colour per `series`; a rule where the KV cache fills (`limit`). `band_rows`
    (concurrency, fast_ms, slow_ms) shade, in the time-per-token panel, the span the expected error gives a p50.
    `ceiling_rows` (series, concurrency, metric, ms): a p50 on the ceiling, a thin dotted line in its colour."""
    series = list(dict.fromkeys(r["series"] for r in rows))
    color = alt.Color("series:N", title="engine", scale=alt.Scale(domain=series, range=PALETTE[: len(series)]))
    dash = alt.StrokeDash("percentile:N", title="percentile", scale=alt.Scale(domain=list(DASH),
                                                                              range=list(DASH.values())))  # fmt: skip
    concurrencies = [r["concurrency"] for r in rows]
    x = alt.X("concurrency:Q", title="concurrent requests (clients)",
              scale=alt.Scale(type="log", base=2, domain=[min(concurrencies), max(concurrencies)], nice=False),
              axis=alt.Axis(values=sorted(set(concurrencies)), format="d", **SPACED))  # fmt: skip
    panels = []
    for metric, words in (("ttft_ms", "time to first token (ms)"), ("tpot_ms", "time per output token (ms)")):
        data = [r for r in rows if r["metric"] == metric]
        tip = [
            alt.Tooltip("series:N", title="engine"),
            alt.Tooltip("concurrency:Q", title="clients"),
            alt.Tooltip("percentile:N"),
            alt.Tooltip("ms:Q", title=words, format=",.1f"),
        ]
        base = alt.Chart(alt.Data(values=chart_rows(data)))
        y = alt.Y("ms:Q", title=words, scale=alt.Scale(type="log"))
        line = base.mark_line(strokeWidth=2).encode(x=x, y=y, color=color, strokeDash=dash, tooltip=tip)
        dots = base.mark_point(filled=True, size=30).encode(x=x, y=y, color=color, tooltip=tip)
        layers = [line, dots]
        ceiling = [r for r in ceiling_rows if r["metric"] == metric]
        if ceiling:
            thin = alt.Chart(alt.Data(values=chart_rows(ceiling))).mark_line(strokeWidth=1.2, strokeDash=[1, 3])
            layers.append(thin.encode(x=x, y=y, color=color))
        if metric == "tpot_ms" and band_rows:
            shade = alt.Chart(alt.Data(values=chart_rows(list(band_rows)))).mark_area(opacity=0.15, color=LABEL_GREY)
            layers.insert(0, shade.encode(x=x, y=alt.Y("fast_ms:Q", title=words, scale=alt.Scale(type="log")),
                                          y2="slow_ms:Q"))  # fmt: skip
        if limit is not None:
            marked = alt.Chart(alt.Data(values=[{"concurrency": limit, "label": f"KV cache full ≈ {limit:,.0f}"}]))
            layers += [
                marked.mark_rule(strokeDash=[2, 2], color=LABEL_GREY).encode(x="concurrency:Q"),
                marked.mark_text(align="right", dx=-4, dy=4, baseline="top", fontSize=11, color=LABEL_GREY).encode(
                    x="concurrency:Q", y=alt.value(0), text="label:N"
                ),
            ]
        panels.append(alt.layer(*layers).properties(width=HEADLINE_PANEL, height=HEIGHT))
    chart = alt.hconcat(*panels).properties(title=chart_title(title, *subtitle))
    return chart.configure_legend(
        orient="bottom", direction="horizontal", labelLimit=LEGEND_LABELS, symbolType="stroke"
    )
