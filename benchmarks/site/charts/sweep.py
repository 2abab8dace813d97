"""The charts of a model sweep: latency against batch with the budget, throughput against latency
with each point's batch, and, on CUDA, peak memory against batch. The site's "Your model" page and
the sweep's HTML report draw the same charts from the same document.

Pure Python (Altair): nothing on this module's import path may import torch.
"""

from __future__ import annotations

import altair as alt

from benchmarks.analysis.roofline import recommend

LATENCY_COLORS = ["#1f77b4", "#d62728"]
GREY = "#888"
WIDTH = 560
SPACED = alt.Axis(labelOverlap="greedy", labelSeparation=4)  # a log axis drops labels that would touch


SWEEP_CACHE = "resident"  # a sweep calls the same model on the same inputs back to back after a warm-up


def where(doc: dict) -> str:
    """Device (with its thread count on a CPU), dtype, mode and cache state: the words every sweep chart carries."""
    model, device = doc["model"], doc["device"]
    threads = device.get("threads") if device.get("kind") == "cpu" else None
    on = f", {threads} thread{'s' * (threads != 1)}" if threads else ""
    return f"{device['name']}{on}, {model['dtype']}, {model['mode']}, cache {SWEEP_CACHE} (same inputs, warm)"


def sweep_rows(doc: dict) -> list[dict]:
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


def sweep_title(text: str, doc: dict, *more: str) -> alt.TitleParams:
    subtitle = [f"{doc['model']['name']}, measured on {where(doc)}", *(line for line in more if line)]
    return alt.TitleParams(text, subtitle=subtitle, anchor="start")


def _batch_x(rows: list[dict], title: str = "batch size") -> alt.X:
    """A log-2 batch axis fitted to the measured batches, ticked at whole batch sizes (powers of two, or every
    measured batch when the range holds fewer than three powers)."""
    batches = sorted({row["batch"] for row in rows}) or [1]
    low, high = batches[0], batches[-1]
    powers = [2**k for k in range(0, 31) if low <= 2**k <= high]
    ticks = powers if len(powers) >= 3 else batches
    return alt.X(
        "batch:Q",
        scale=alt.Scale(type="log", base=2, domain=[low, high] if high > low else [low / 2, low * 2], nice=False),
        axis=alt.Axis(values=ticks, format="d", labelOverlap="greedy", labelSeparation=4),
        title=title,
    )


def _fitted(values: list[float], *extra: float | None) -> alt.Scale:
    """A log scale spanning the values (and the budget, so that its rule shows), with a little room either side."""
    shown = [v for v in (*values, *extra) if v]
    low, high = min(shown), max(shown)
    return alt.Scale(type="log", domain=[low / 1.12, high * 1.12], nice=False)


def _recommended(doc: dict) -> tuple[int | None, str]:
    """The batch the guide's rule runs, and the subtitle line that names its ring."""
    rec = recommend.from_document(doc)
    return (rec.run.batch, f"ringed: batch {rec.run.batch}, the batch to run") if rec.run else (None, "")


def _mark(rows: list[dict], batch: int | None, x: str, y: str) -> list[alt.Chart]:
    """A ring on the recommended batch's point, named in the subtitle, not beside it: no label to cross a line."""
    chosen = [row for row in rows if row["batch"] == batch]
    if not chosen:
        return []
    ring = alt.Chart(alt.Data(values=chosen[:1])).encode(x=x, y=y)
    return [ring.mark_point(shape="circle", size=260, strokeWidth=2.5, color=GREY, filled=False)]


def sweep_latency_chart(doc: dict) -> alt.LayerChart:
    p = doc["settings"]["percentile"]
    rows = []
    for row in sweep_rows(doc):
        rows.append({"batch": row["batch"], "latency_ms": row["median_ms"], "statistic": "median"})
        if p != 50:
            rows.append({"batch": row["batch"], "latency_ms": row["percentile_ms"], "statistic": f"p{p}"})
    budget = doc["settings"].get("budget_ms")
    x = _batch_x(rows)
    y = alt.Y(
        "latency_ms:Q",
        scale=_fitted([r["latency_ms"] for r in rows], budget),
        title="latency per call (ms)",
        axis=SPACED,
    )
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=x,
        y=y,
        color=alt.Color("statistic:N", scale=alt.Scale(range=LATENCY_COLORS), legend=alt.Legend(orient="bottom")),
        tooltip=["batch:Q", alt.Tooltip("latency_ms:Q", format=".3g"), "statistic:N"],
    )
    layers = [base.mark_line(), base.mark_point(filled=True, size=30)]
    if budget:
        rule = alt.Chart(alt.Data(values=[{"budget": budget, "label": f"budget {budget:g} ms (p{p})"}]))
        layers.append(rule.mark_rule(color=GREY, strokeDash=[4, 3]).encode(y="budget:Q"))
        # at the left edge, just above the rule: the smallest batches sit below a budget the sweep could meet, so
        # the words keep clear of the lines as well as of the rule
        layers.append(
            rule.mark_text(color=GREY, align="left", dx=4, dy=-8, baseline="bottom").encode(
                y="budget:Q", x=alt.value(0), text="label:N"
            )
        )
    batch, label = _recommended(doc)
    stat = f"p{p}" if p != 50 else "median"
    layers += _mark([r for r in rows if r["statistic"] == stat], batch, "batch:Q", "latency_ms:Q")
    title = sweep_title("Latency against batch size", doc, label)
    return alt.layer(*layers).properties(width=WIDTH, height=280, title=title)


def frontier(rows: list[dict]) -> list[dict]:
    """The points no faster batch beats on throughput: the best throughput at or under each latency. A line through
    them never turns back, where one through every batch in batch order zigzags wherever a larger batch ran
    faster than a smaller one."""
    best, kept = 0.0, []
    for row in sorted(rows, key=lambda r: (r["percentile_ms"], -r["throughput"])):
        if row["throughput"] > best:
            best = row["throughput"]
            kept.append(row)
    return kept


def sweep_throughput_chart(doc: dict) -> alt.LayerChart:
    p = doc["settings"]["percentile"]
    rows = sweep_rows(doc)
    budget = doc["settings"].get("budget_ms")
    x = alt.X(
        "percentile_ms:Q",
        scale=_fitted([r["percentile_ms"] for r in rows], budget),
        title=f"p{p} latency per call (ms)",
        axis=SPACED,
    )
    y = alt.Y("throughput:Q", title="throughput (samples per second)")
    tip = ["batch:Q", alt.Tooltip("percentile_ms:Q", format=".3g"), alt.Tooltip("throughput:Q", format=",.0f")]
    base = alt.Chart(alt.Data(values=rows)).encode(x=x, y=y, tooltip=tip)
    line = alt.Chart(alt.Data(values=frontier(rows))).encode(x=x, y=y, order="percentile_ms:Q")
    layers = [
        line.mark_line(color=LATENCY_COLORS[0]),
        base.mark_point(filled=True, size=30, color=LATENCY_COLORS[0]),
        base.transform_filter("datum.labelled")
        .mark_text(align="left", dx=5, dy=8, baseline="top", fontSize=10, color=GREY)
        .encode(text="batch:Q"),
    ]
    if budget:
        rule = alt.Chart(alt.Data(values=[{"budget": budget}]))
        layers.append(rule.mark_rule(color=GREY, strokeDash=[4, 3]).encode(x="budget:Q"))  # named in the subtitle
    batch, label = _recommended(doc)
    layers += _mark(rows, batch, "percentile_ms:Q", "throughput:Q")
    title = sweep_title(
        "Throughput against latency", doc, "dots: every batch measured (labels: the search's sizes)",
        "line: the best throughput at or under each latency",
        f"dashed: the {budget:g} ms budget" if budget else "", label,
    )  # fmt: skip
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
    rows = [r for r in sweep_rows(doc) if r["memory_mib"] is not None]
    if not rows or memory_note(doc):
        return None
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=_batch_x(rows),
        y=alt.Y("memory_mib:Q", title="allocator peak during one call (MiB)"),
        tooltip=["batch:Q", alt.Tooltip("memory_mib:Q", format=",.1f")],
    )
    layers = [base.mark_line(color=LATENCY_COLORS[0]), base.mark_point(filled=True, size=30)]
    batch, label = _recommended(doc)
    layers += _mark(rows, batch, "batch:Q", "memory_mib:Q")
    within = recommend.from_document(doc).within_budget
    budget = doc["settings"].get("budget_ms")
    if budget and within is not None:  # the budget, on a batch axis: the largest batch that meets it
        edge = alt.Chart(alt.Data(values=[{"batch": within.batch, "label": f"largest within {budget:g} ms"}]))
        layers.append(edge.mark_rule(color=GREY, strokeDash=[4, 3]).encode(x="batch:Q"))
        layers.append(
            edge.mark_text(color=GREY, align="right", dx=-4, dy=-4, baseline="bottom").encode(
                x="batch:Q", y=alt.value(220), text="label:N"
            )  # at the foot of the rule: memory's axis starts at zero, so the points sit high above it
        )
    chart = alt.layer(*layers)
    return chart.properties(width=WIDTH, height=220, title=sweep_title("Peak memory against batch size", doc, label))


def sweep_charts(doc: dict) -> list[tuple[str, alt.TopLevelMixin]]:
    """(name, chart) for each chart this sweep can draw."""
    charts = [("latency", sweep_latency_chart(doc)), ("throughput", sweep_throughput_chart(doc))]
    memory = memory_chart(doc)
    if memory is not None:
        charts.append(("memory", memory))
    return charts
