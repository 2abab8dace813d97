"""The charts of a model sweep: latency against batch with the budget, throughput against latency
with each point's batch, and, on CUDA, peak memory against batch. The site's "Your model" page and
the sweep's HTML report draw the same charts from the same document.

Pure Python (Altair): nothing on this module's import path may import torch.
"""

from __future__ import annotations

import altair as alt

from benchmarks.analysis import recommend

LATENCY_COLORS = ["#1f77b4", "#d62728"]
GREY = "#888"
WIDTH = 560
SPACED = alt.Axis(labelOverlap="greedy", labelSeparation=4)  # a log axis drops labels that would touch


def where(doc: dict) -> str:
    """Device, dtype and mode: the words every sweep chart carries."""
    model = doc["model"]
    return f"{doc['device']['name']}, {model['dtype']}, {model['mode']}"


def chart_rows(doc: dict) -> list[dict]:
    ok, _ = recommend.sweep_points(doc["points"])
    return [
        {
            "batch": p.batch,
            "labelled": (p.batch & (p.batch - 1)) == 0,  # the doubling search's sizes: probes sit too close to label
            "median_ms": p.median_s * 1e3,
            "percentile_ms": p.percentile_s * 1e3,
            "throughput": p.throughput,
            "memory_mib": p.peak_memory_bytes / 2**20 if p.peak_memory_bytes is not None else None,
        }
        for p in ok
    ]


def chart_title(text: str, doc: dict) -> alt.TitleParams:
    return alt.TitleParams(text, subtitle=[f"{doc['model']['name']}, measured on {where(doc)}"], anchor="start")


def sweep_latency_chart(doc: dict) -> alt.LayerChart:
    p = doc["settings"]["percentile"]
    rows = []
    for row in chart_rows(doc):
        rows.append({"batch": row["batch"], "latency_ms": row["median_ms"], "statistic": "median"})
        if p != 50:
            rows.append({"batch": row["batch"], "latency_ms": row["percentile_ms"], "statistic": f"p{p}"})
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("batch:Q", scale=alt.Scale(type="log", base=2), title="batch size"),
        y=alt.Y("latency_ms:Q", scale=alt.Scale(type="log"), title="latency per call (ms)", axis=SPACED),
        color=alt.Color("statistic:N", scale=alt.Scale(range=LATENCY_COLORS), legend=alt.Legend(orient="bottom")),
        tooltip=["batch:Q", alt.Tooltip("latency_ms:Q", format=".3g"), "statistic:N"],
    )
    layers = [base.mark_line(), base.mark_point(filled=True, size=30)]
    budget = doc["settings"].get("budget_ms")
    if budget:
        rule = alt.Chart(alt.Data(values=[{"budget": budget, "label": f"budget {budget:g} ms (p{p})"}]))
        layers.append(rule.mark_rule(color=GREY, strokeDash=[4, 3]).encode(y="budget:Q"))
        layers.append(
            rule.mark_text(color=GREY, align="left", dx=4, dy=-6, baseline="bottom").encode(
                y="budget:Q", x=alt.value(0), text="label:N"
            )
        )
    return alt.layer(*layers).properties(width=WIDTH, height=280, title=chart_title("Latency against batch size", doc))


def sweep_throughput_chart(doc: dict) -> alt.LayerChart:
    p = doc["settings"]["percentile"]
    rows = chart_rows(doc)
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("percentile_ms:Q", scale=alt.Scale(type="log"), title=f"p{p} latency per call (ms)", axis=SPACED),
        y=alt.Y("throughput:Q", title="throughput (samples per second)"),
        order="batch:Q",
        tooltip=["batch:Q", alt.Tooltip("percentile_ms:Q", format=".3g"), alt.Tooltip("throughput:Q", format=",.0f")],
    )
    layers = [
        base.mark_line(color=LATENCY_COLORS[0]),
        base.mark_point(filled=True, size=30, color=LATENCY_COLORS[0]),
        base.transform_filter("datum.labelled")
        .mark_text(align="left", dx=5, dy=-5, fontSize=10, color=GREY)
        .encode(text="batch:Q"),
    ]
    budget = doc["settings"].get("budget_ms")
    if budget:
        layers.append(
            alt.Chart(alt.Data(values=[{"budget": budget}]))
            .mark_rule(color=GREY, strokeDash=[4, 3])
            .encode(x="budget:Q")
        )
    title = chart_title("Throughput against latency (labels: the search's batch sizes)", doc)
    return alt.layer(*layers).properties(width=WIDTH, height=280, title=title)


NO_MEMORY_CHART = (
    "No memory chart: on a CPU the sweep can read only the process's peak resident memory, a high-water mark "
    "that is the same for every batch; the allocator's peak per batch is known only on CUDA."
)


def memory_note(doc: dict) -> str | None:
    """Why a sweep has no memory chart, when it has none for want of per-batch peaks."""
    return NO_MEMORY_CHART if doc["device"]["kind"] != "cuda" else None


def memory_chart(doc: dict) -> alt.LayerChart | None:
    """The allocator's peak during one call against batch (CUDA only: see NO_MEMORY_CHART)."""
    rows = [r for r in chart_rows(doc) if r["memory_mib"] is not None]
    if not rows or memory_note(doc):
        return None
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("batch:Q", scale=alt.Scale(type="log", base=2), title="batch size"),
        y=alt.Y("memory_mib:Q", title="allocator peak during one call (MiB)"),
        tooltip=["batch:Q", alt.Tooltip("memory_mib:Q", format=",.1f")],
    )
    chart = alt.layer(base.mark_line(color=LATENCY_COLORS[0]), base.mark_point(filled=True, size=30))
    return chart.properties(width=WIDTH, height=220, title=chart_title("Peak memory against batch size", doc))


def sweep_charts(doc: dict) -> list[tuple[str, alt.TopLevelMixin]]:
    """(name, chart) for each chart this sweep can draw."""
    charts = [("latency", sweep_latency_chart(doc)), ("throughput", sweep_throughput_chart(doc))]
    memory = memory_chart(doc)
    if memory is not None:
        charts.append(("memory", memory))
    return charts
