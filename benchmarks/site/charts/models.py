"""Charts for the CNN and Transformer-decode pages, and the rows they draw.

The numbers come from `benchmarks.analysis.roofline.cnn` and `benchmarks.analysis.roofline.decode`; the words from the
page modules. This module adds what those two pages need beyond the MLP pages: arithmetic intensity
against batch with the ridge, the weight/KV/activation split of the bytes, and tokens per second for
prefill and decode side by side.

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from benchmarks.analysis.roofline.curves import Curve
from benchmarks.analysis.roofline.decode import curve_records, is_prefill, operation_points, recorded_crossover
from benchmarks.site import charts, text
from benchmarks.site.charts import HEIGHT, KIND_DASH, LABEL_GREY, PALETTE, WIDTH

PARTS = ("weights", "KV cache", "activations")
PART_KEYS = {"weights": "weight_bytes", "KV cache": "kv_bytes", "activations": "activation_bytes"}
PART_COLORS = {"weights": PALETTE[0], "KV cache": PALETTE[1], "activations": PALETTE[2]}


def _log_axis(field: str, values: Sequence[float], title: str, channel=alt.X):
    low, high = min(values), max(values)
    ticks = [2**i for i in range(0, 40) if low <= 2**i <= high]
    return channel(
        f"{field}:Q",
        title=title,
        scale=alt.Scale(type="log", base=2, domain=[low, high], nice=False),
        axis=alt.Axis(values=ticks, format="d", labelOverlap="greedy", labelSeparation=4),
    )


def _subtitle(curves: Sequence[Curve], *more: str) -> list[str]:
    return [text.describe_curves(curves), *more]


def _lines(base: alt.Chart, y: alt.Y, color: alt.Color, series: tuple[str, str], value: tuple[str, str, str]):
    """A line with points per series; the tooltip gives the series, the batch and the value."""
    (series_field, series_title), (field, title, number) = series, value
    return base.mark_line(point=True, strokeWidth=1.8).encode(
        y=y,
        color=color,
        tooltip=[
            alt.Tooltip(f"{series_field}:N", title=series_title),
            alt.Tooltip("batch:Q", format=",.0f"),
            alt.Tooltip(f"{field}:Q", title=title, format=number),
        ],
    )


# --------------------------------------------------------------------------- rows


def split_rows(curve: Curve) -> list[dict[str, Any]]:
    """Long-format rows of the weight, KV and activation bytes (MiB) of one curve's ok records."""
    rows = []
    for r in curve_records(curve):
        split = r.get("bytes_split")
        if not split:
            continue
        for part in PARTS:
            rows.append(
                {"panel": curve.label, "part": part, "batch": r["batch"], "mib": split[PART_KEYS[part]] / 2**20}
            )
    return rows


def tokens_rows(curves: Sequence[Curve]) -> list[dict[str, Any]]:
    """Tokens per call against tokens per second, measured and roofline, for decode and prefill curves."""
    rows = []
    for c in curves:
        per_call = c.params["context"] if is_prefill(c) else 1
        for p in c.points:
            tokens = p.batch * per_call
            for kind, seconds in (("measured", p.median_s), ("roofline", p.predicted_s)):
                if seconds:
                    rows.append(
                        {
                            "series": c.label,
                            "kind": kind,
                            "batch": p.batch,
                            "tokens": tokens,
                            "tokens_per_s": tokens / seconds,
                            "us_per_token": seconds / tokens * 1e6,
                        }
                    )
    return charts.chart_rows(rows)


# --------------------------------------------------------------------------- charts


def _ridge_layers(curves: Sequence[Curve]) -> list[alt.Chart]:
    """A dashed, labelled rule at the ridge of each dtype of the curves."""
    ridges: dict[str, float] = {}
    for c in curves:
        if c.ceilings:
            ridges.setdefault(c.dtype, c.ceilings.ridge_intensity)
    rule_rows = [
        {"ridge": f"ridge, {dtype}: {text.sig(value, 3)} FLOP/byte", "intensity": value}
        for dtype, value in ridges.items()
    ]
    if not rule_rows:
        return []
    rule_base = alt.Chart(alt.Data(values=charts.chart_rows(rule_rows))).encode(
        y=alt.Y("intensity:Q", scale=alt.Scale(type="log"))
    )
    return [
        rule_base.mark_rule(strokeDash=[4, 3], color="#888").encode(tooltip=["ridge:N"]),
        rule_base.mark_text(align="left", dx=4, dy=-3, baseline="bottom", fontSize=10, color=LABEL_GREY).encode(
            text="ridge:N", x=alt.value(2)
        ),
    ]


def intensity_chart(curves: Sequence[Curve], title: str, batch_title: str) -> alt.LayerChart:
    """FLOP per byte of every recorded point against batch, per curve, with this run's ridge dashed."""
    rows = [{"series": c.label, "batch": p.batch, "intensity": p.flops / p.bytes} for c in curves for p in c.points]
    batches = [r["batch"] for r in rows]
    labels = list(dict.fromkeys(c.label for c in curves))
    base = alt.Chart(alt.Data(values=charts.chart_rows(rows))).encode(x=_log_axis("batch", batches, batch_title))
    y = alt.Y("intensity:Q", title="arithmetic intensity (FLOP per byte moved)", scale=alt.Scale(type="log"))
    color = alt.Color("series:N", title="configuration", scale=alt.Scale(domain=labels, range=PALETTE[: len(labels)]))
    layers = [_lines(base, y, color, ("series", "curve"), ("intensity", "FLOP/byte", ".3~g")), *_ridge_layers(curves)]
    subtitle = _subtitle(
        curves,
        "FLOPs and bytes as counted for each measured point; dashed: this run's ridge (matmul FLOP/s ÷ copy "
        "bytes/s). Above it the roofline is compute-bound.",
    )
    chart = alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=charts.chart_title(title, *subtitle))
    return chart.configure_legend(labelLimit=charts.LEGEND_LABEL_LIMIT)


def _split_panel(c: Curve, rows: list[dict[str, Any]], color: alt.Color) -> alt.LayerChart:
    """One curve's panel of the bytes split, with the KV = weights rule inside the measured range."""
    batches = [r["batch"] for r in rows]
    base = alt.Chart(alt.Data(values=charts.chart_rows(rows))).encode(
        x=_log_axis("batch", batches, "batch size (sequences)")
    )
    y = alt.Y("mib:Q", title="bytes moved per step (MiB)", scale=alt.Scale(type="log"))
    layers = [_lines(base, y, color, ("part", "bytes of"), ("mib", "MiB", ".4~g"))]
    crossover = recorded_crossover(curve_records(c))
    if crossover and min(batches) <= crossover <= max(batches):
        marks = [{"batch": crossover, "label": f"KV = weights at ≈ {crossover:.3g}"}]
        layers.extend(charts.labelled_rules(marks, "batch", font_size=10))
    return alt.layer(*layers).properties(width=250, height=200, title=c.label)


def bytes_split_chart(curves: Sequence[Curve], title: str) -> alt.ConcatChart:
    """One log-log panel per curve: weight, KV-cache and activation bytes per step against batch,
    with a rule where the KV bytes reach the weight bytes."""
    color = alt.Color(
        "part:N", title="bytes of", scale=alt.Scale(domain=list(PARTS), range=[PART_COLORS[p] for p in PARTS])
    )
    panels = [_split_panel(c, rows, color) for c in curves if (rows := split_rows(c))]
    if not panels:
        raise ValueError("bytes_split_chart needs at least one curve whose records have bytes_split")
    subtitle = _subtitle(
        curves,
        "bytes counted per decode step (analytic, from each record's bytes_split); dashed: KV bytes = weight bytes",
    )
    return alt.concat(*panels, columns=2).properties(title=charts.chart_title(title, *subtitle))


def tokens_chart(curves: Sequence[Curve], title: str) -> alt.LayerChart:
    """Tokens per second against tokens per call (log-log): decode steps and prefills side by side,
    measured solid, roofline dashed."""
    rows = tokens_rows(curves)
    if not rows:
        raise ValueError("tokens_chart needs measured points")
    labels = list(dict.fromkeys(c.label for c in curves))
    color = alt.Color("series:N", title="configuration", scale=alt.Scale(domain=labels, range=PALETTE[: len(labels)]))
    dash = alt.StrokeDash(
        "kind:N", scale=alt.Scale(domain=list(KIND_DASH), range=list(KIND_DASH.values())), legend=None
    )
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=_log_axis("tokens", [r["tokens"] for r in rows], "tokens per call (sequences × new tokens each)")
    )
    y = alt.Y("tokens_per_s:Q", title="throughput (tokens per second)", scale=alt.Scale(type="log"))
    tip = [
        alt.Tooltip("series:N", title="curve"),
        alt.Tooltip("kind:N", title="what"),
        alt.Tooltip("batch:Q", title="sequences", format=",.0f"),
        alt.Tooltip("tokens:Q", title="tokens per call", format=",.0f"),
        alt.Tooltip("tokens_per_s:Q", title="tokens/s", format=".4~s"),
        alt.Tooltip("us_per_token:Q", title="µs per token", format=".4~g"),
    ]
    chart = alt.layer(
        base.mark_line(strokeWidth=1.8).encode(y=y, color=color, strokeDash=dash),
        base.transform_filter("datum.kind == 'measured'")
        .mark_point(filled=True, size=28)
        .encode(y=y, color=color, tooltip=tip),
    )
    subtitle = _subtitle(curves, "solid: measured median · dashed: roofline from this run's measured ceilings")
    chart = chart.properties(width=WIDTH, height=HEIGHT, title=charts.chart_title(title, *subtitle))
    return chart.configure_legend(labelLimit=charts.LEGEND_LABEL_LIMIT)


# --------------------------------------------------------------------------- decode per operation

OPERATIONS = {
    "measured step": (PALETTE[0], [1, 0]),
    "matmuls (roofline)": (PALETTE[2], [6, 4]),
    "attention (roofline)": (PALETTE[1], [6, 4]),
    "sum of the two": ("#777", [2, 2]),
}


def operation_rows(curve: Curve) -> list[dict[str, Any]]:
    """Per point: the measured step, and the matmuls', the attention's and the summed rooflines (ms)."""
    rows = []
    for p in operation_points(curve):
        for what, seconds in zip(OPERATIONS, (p.measured_s, p.matmul_s, p.attention_s, p.sum_s)):
            rows.append({"panel": curve.label, "what": what, "batch": p.batch, "ms": seconds * 1e3})
    return charts.chart_rows(rows)


def _operations_panel(curve: Curve, rows: list[dict[str, Any]]) -> alt.LayerChart:
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=_log_axis("batch", [r["batch"] for r in rows], "batch (sequences)")
    )
    y = alt.Y("ms:Q", title="time per decode step (ms)", scale=alt.Scale(type="log"))
    color = alt.Color(
        "what:N", title="time of", scale=alt.Scale(domain=list(OPERATIONS), range=[c for c, _ in OPERATIONS.values()])
    )
    dash = alt.StrokeDash(
        "what:N", title="time of", scale=alt.Scale(domain=list(OPERATIONS), range=[d for _, d in OPERATIONS.values()])
    )
    tip = [alt.Tooltip("what:N"), alt.Tooltip("batch:Q", format=",.0f"), alt.Tooltip("ms:Q", format=".3~g")]
    lines = base.mark_line(strokeWidth=1.8).encode(y=y, color=color, strokeDash=dash, tooltip=tip)
    dots = (
        base.transform_filter("datum.what == 'measured step'")
        .mark_point(filled=True, size=24)
        .encode(y=y, color=color, tooltip=tip)
    )
    return alt.layer(lines, dots).properties(width=250, height=200, title=curve.label)


def operations_chart(curves: Sequence[Curve], title: str) -> alt.ConcatChart:
    """One log-log panel per curve: the measured step against the matmuls' and the attention's rooflines
    and their sum."""
    panels = [_operations_panel(c, rows) for c in curves if (rows := operation_rows(c))]
    if not panels:
        raise ValueError("operations_chart needs decode curves with ceilings")
    subtitle = _subtitle(curves, "dashed: each operation's roofline at the run's ceilings · dotted: their sum")
    chart = alt.concat(*panels, columns=2).properties(title=charts.chart_title(title, *subtitle))
    return chart.configure_legend(orient="bottom", columns=2, symbolStrokeWidth=2)


def sequence_rows(curves: Sequence[Curve]) -> list[dict[str, Any]]:
    """Tokens per second of the whole batch and of one sequence, per measured decode step."""
    rows = []
    for c in curves:
        for p in c.points:
            rows += [
                {"series": c.label, "rate": "whole batch", "batch": p.batch, "tokens_per_s": p.batch / p.median_s},
                {"series": c.label, "rate": "one sequence", "batch": p.batch, "tokens_per_s": 1 / p.median_s},
            ]
    return charts.chart_rows(rows)


def sequence_chart(curves: Sequence[Curve], title: str) -> alt.HConcatChart:
    """Two log-log panels against batch: tokens per second of the batch, and of each sequence in it."""
    rows = sequence_rows(curves)
    if not rows:
        raise ValueError("sequence_chart needs measured points")
    labels = list(dict.fromkeys(c.label for c in curves))
    color = alt.Color("series:N", title="configuration", scale=alt.Scale(domain=labels, range=PALETTE[: len(labels)]))
    x = _log_axis("batch", [r["batch"] for r in rows], "batch (sequences)")
    panels = []
    for rate, y_title in (("whole batch", "tokens/s, whole batch"), ("one sequence", "tokens/s, each sequence")):
        base = alt.Chart(alt.Data(values=rows)).transform_filter(f"datum.rate == '{rate}'").encode(x=x)
        y = alt.Y("tokens_per_s:Q", title=y_title, scale=alt.Scale(type="log"))
        line = _lines(base, y, color, ("series", "curve"), ("tokens_per_s", "tokens/s", ".4~s"))
        panels.append(line.properties(width=250, height=220, title=rate))
    chart = alt.hconcat(*panels).properties(title=charts.chart_title(title, *_subtitle(curves)))
    return chart.configure_legend(labelLimit=charts.LEGEND_LABEL_LIMIT, orient="bottom", columns=2)
