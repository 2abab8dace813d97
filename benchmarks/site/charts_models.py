"""Tables, formulas and charts for the CNN and Transformer-decode pages.

The pages choose curves with `benchmarks.analysis.curves` and show charts with `benchmarks.site.charts.figure`;
this module adds what those two pages need beyond the MLP pages: arithmetic intensity at batch 1
against the ridge, the decode cost model of `snippets.costs` in closed form over the batch and the context,
the weight/KV split of the bytes, and charts whose batch is images, sequences or tokens.

Pure Python (Altair builds JSON only): nothing here imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt

from benchmarks.analysis import curves as report
from benchmarks.analysis.curves import Curve
from benchmarks.analysis.roofline import Ceilings, Knee, affine_fit, critical_batch
from benchmarks.site import charts, text
from benchmarks.site.charts import HEIGHT, KIND_DASH, LABEL_GREY, PALETTE, WIDTH
from benchmarks.workloads import attention_name
from snippets import costs

PARTS = ("weights", "KV cache", "activations")
PART_KEYS = {"weights": "weight_bytes", "KV cache": "kv_bytes", "activations": "activation_bytes"}
PART_COLORS = {"weights": PALETTE[0], "KV cache": PALETTE[1], "activations": PALETTE[2]}


# --------------------------------------------------------------------------- shared


def intensity_at(curve: Curve, batch: float = 1) -> float | None:
    """FLOPs per byte of one call at `batch`: the recorded point if measured there, else the line
    through the recorded FLOPs and bytes (both are affine in the batch)."""
    for p in curve.points:
        if p.batch == batch and p.bytes:
            return p.flops / p.bytes
    if len(curve.points) < 2:
        return None
    batches = [float(p.batch) for p in curve.points]
    f0, f1 = affine_fit(batches, [p.flops for p in curve.points])
    b0, b1 = affine_fit(batches, [p.bytes for p in curve.points])
    moved = b0 + b1 * batch
    return (f0 + f1 * batch) / moved if moved > 0 else None


def intensity_limit(curve: Curve) -> float | None:
    """FLOPs per byte as the batch grows without bound: the per-item FLOPs over the per-item bytes."""
    if len({p.batch for p in curve.points}) < 2:
        return None
    batches = [float(p.batch) for p in curve.points]
    _, flops_per_item = affine_fit(batches, [p.flops for p in curve.points])
    _, bytes_per_item = affine_fit(batches, [p.bytes for p in curve.points])
    return flops_per_item / bytes_per_item if bytes_per_item > 0 else None


def fixed_share(curve: Curve, batch: float = 1) -> float | None:
    """Share of the bytes at `batch` that does not grow with the batch (the weights): the intercept of
    the line through the recorded bytes, over the bytes at `batch`."""
    if len({p.batch for p in curve.points}) < 2:
        return None
    batches = [float(p.batch) for p in curve.points]
    fixed, per_item = affine_fit(batches, [p.bytes for p in curve.points])
    total = fixed + per_item * batch
    return max(fixed, 0.0) / total if total > 0 else None


def describe_curves(curves: Sequence[Curve]) -> str:
    """Device, dtype(s), mode(s) and cache state(s) of several curves in one line (plain text)."""

    def values(name: str) -> str:
        return ", ".join(dict.fromkeys(getattr(c, name) for c in curves))

    first = curves[0]
    return f"{text.device_label(first.run)} · {values('dtype')} · {values('mode')} · cache: {values('cache')}"


def predicted_knee_text(curve: Curve) -> str:
    """The roofline's knee in words: 'none', 'below batch 1 (compute-bound from the start)', '≈ 12'."""
    knee = curve.predicted_knee
    if knee is None:
        return "none (memory-bound at every batch)"
    first = curve.batches[0] if curve.points else 1
    if knee < first:
        return f"below {first}: compute-bound from the start"
    return f"≈ {text.fmt_batch(knee)}"


def measured_knee_text(knee: Knee | None) -> str:
    """The detected knee with the log-log slopes either side (0 is flat, 1 is proportional)."""
    if knee is None:
        return "none detected"
    return f"≈ {text.fmt_batch(knee.batch)} (slope {knee.slope_below:.2f} → {knee.slope_above:.2f})"


def throughput_gain(curve: Curve) -> tuple[float, float | None]:
    """Items per second at the largest measured batch over the smallest: measured, and the roofline's."""
    first, last = curve.points[0], curve.points[-1]
    measured = (last.batch / last.median_s) / (first.batch / first.median_s)
    predicted = None
    if first.predicted_s and last.predicted_s:
        predicted = (last.batch / last.predicted_s) / (first.batch / first.predicted_s)
    return measured, predicted


def curve_records(curve: Curve, status: str | None = "ok") -> list[dict[str, Any]]:
    """The run's records behind one curve (with this status; None for every status), by batch."""
    found = [
        r
        for r in curve.run.records
        if r["workload"] == curve.workload
        and r["params"] == curve.params
        and r["dtype"] == curve.dtype
        and r["mode"] == curve.mode
        and r["cache"] == curve.cache
        and r.get("weight_copies", 1) == curve.weight_copies
        and (status is None or r["status"] == status)
    ]
    return sorted(found, key=lambda r: r["batch"])


def not_measured(curves: Sequence[Curve]) -> list[str]:
    """One line per configuration and status listing the batches that were not measured, every mode
    together, with the first message as an example (plain text)."""
    grouped: dict[tuple, dict[str, Any]] = {}
    for c in curves:
        for r in c.not_ok:
            entry = grouped.setdefault(
                (c.label, c.dtype, r["status"]), {"batches": set(), "modes": [], "message": r.get("message")}
            )
            entry["batches"].add(r["batch"])
            if c.mode not in entry["modes"]:
                entry["modes"].append(c.mode)
    lines = []
    for (label, dtype, status), entry in grouped.items():
        batches = sorted(entry["batches"])
        line = f"{label} ({dtype}, {', '.join(entry['modes'])}): batch{'es' * (len(batches) > 1)} "
        line += ", ".join(str(b) for b in batches) + f" {status}"
        if entry["message"]:
            line += f" ({entry['message']})"
        lines.append(line)
    return lines


def _log_axis(field: str, values: Sequence[float], title: str, channel=alt.X):
    low, high = min(values), max(values)
    ticks = [2**i for i in range(0, 40) if low <= 2**i <= high]
    return channel(
        f"{field}:Q",
        title=title,
        scale=alt.Scale(type="log", base=2, domain=[low, high], nice=False),
        axis=alt.Axis(values=ticks, format="d"),
    )


def _subtitle(curves: Sequence[Curve], *more: str) -> list[str]:
    return [describe_curves(curves), text.provenance(curves[0].run), *more]


# --------------------------------------------------------------------------- CNN


@dataclass(frozen=True)
class ConvReuse:
    """How often a convolution uses each weight element for one image."""

    weights: int  # k²·C_in·C_out
    positions: int  # H_out·W_out output positions, each of which applies every weight once
    flops_per_weight: int  # 2·positions: a multiply and an add per weight per position


def conv_reuse(c_in: int, c_out: int, kernel: int, resolution: int, stride: int = 1) -> ConvReuse:
    """Weight count and reuse of a same-padded square k×k convolution (one image)."""
    side = -(-resolution // stride)
    return ConvReuse(kernel * kernel * c_in * c_out, side * side, 2 * side * side)


@dataclass(frozen=True)
class IntensityRow:
    """One CNN curve's line of the intensity table."""

    curve: Curve
    intensity: float | None  # FLOP per byte at batch 1
    ridge: float | None  # FLOP per byte where this run's compute and memory times meet
    reuse: ConvReuse | None  # single conv layers only
    weight_share: float | None  # share of the bytes at batch 1 that the weights take

    @property
    def above_ridge(self) -> bool:
        return self.intensity is not None and self.ridge is not None and self.intensity >= self.ridge

    def cells(self) -> list[str]:
        c = self.curve
        return [
            c.label,
            f"{c.dtype} · {c.mode} · {c.cache}",
            f"{self.reuse.positions:,}" if self.reuse else "–",
            f"{text.sig(100 * self.weight_share, 2)} %" if self.weight_share is not None else "–",
            text.sig(self.intensity, 3) if self.intensity is not None else "–",
            text.sig(self.ridge, 3) if self.ridge is not None else "–",
            predicted_knee_text(c),
            measured_knee_text(c.knee),
        ]


INTENSITY_HEADERS = [
    "layer",
    "dtype · mode · cache",
    "uses of each weight per image",
    "weights' share of bytes at batch 1",
    "FLOP/byte at batch 1",
    "ridge (FLOP/byte)",
    "predicted knee",
    "measured knee (log-log slope below → above)",
]


def intensity_rows(curves: Sequence[Curve]) -> list[IntensityRow]:
    """Intensity at batch 1 against the run's ridge for conv and ResNet-50 curves."""
    rows = []
    for c in curves:
        reuse = None
        if c.workload == "conv":
            p = c.params
            reuse = conv_reuse(p["c_in"], p["c_out"], p["kernel"], p["resolution"])
        ridge = c.ceilings.ridge_intensity if c.ceilings else None
        rows.append(IntensityRow(c, intensity_at(c, 1), ridge, reuse, fixed_share(c, 1)))
    return rows


@dataclass(frozen=True)
class FormulaConv:
    """One conv shape costed by the formula with given ceilings (no measurement)."""

    label: str
    reuse: ConvReuse
    weight_share: float  # share of the bytes at batch 1 that the weights take
    intensity: float  # FLOP per byte at batch 1
    per_image_intensity: float  # FLOP per byte of each extra image (its activations only)
    ridge: float
    knee: float | None  # the roofline's knee; None when never compute-bound

    def cells(self) -> list[str]:
        if self.knee is None:
            knee = "none: memory-bound at every batch"
        elif self.knee < 1:
            knee = "below batch 1: compute-bound from the start"
        else:
            knee = f"≈ {text.fmt_batch(self.knee)}"
        return [
            self.label,
            f"{self.reuse.weights:,}",
            f"{self.reuse.positions:,}",
            f"{text.sig(100 * self.weight_share, 2)} %",
            text.sig(self.intensity, 3),
            text.sig(self.per_image_intensity, 3),
            knee,
        ]


FORMULA_CONV_HEADERS = [
    "layer",
    "weights",
    "uses of each weight per image",
    "weights' share of bytes at batch 1",
    "FLOP/byte at batch 1",
    "FLOP/byte of each extra image",
    "roofline knee",
]


def formula_convs(shapes, dtype: str, ceilings: Ceilings) -> list[FormulaConv]:
    """Conv shapes (c_in, c_out, kernel, resolution) costed by the formula with given (datasheet)
    ceilings: intensity at batch 1, per extra image, and the roofline's knee. No measurement."""
    size = report.bytes_per_element(dtype)
    found = []
    for c_in, c_out, kernel, resolution in shapes:
        (_, f1, m1), (_, f2, m2) = [(b, *costs.conv_cost(b, c_in, c_out, kernel, resolution, size)) for b in (1, 2)]
        reuse = conv_reuse(c_in, c_out, kernel, resolution)
        found.append(
            FormulaConv(
                label=f"{kernel}×{kernel}, {c_in}→{c_out} @{resolution}²",
                reuse=reuse,
                weight_share=size * reuse.weights / m1,
                intensity=f1 / m1,
                per_image_intensity=(f2 - f1) / (m2 - m1),
                ridge=ceilings.ridge_intensity,
                knee=critical_batch([(1, f1, m1), (2, f2, m2)], ceilings),
            )
        )
    return found


# --------------------------------------------------------------------------- decode


@dataclass(frozen=True)
class DecodeTerms:
    """The decode cost model of one decoder config, per call (all sizes in bytes and FLOPs).

    A step of b sequences that hold c cached positions each attends over n = c + 1 positions:
    FLOPs = b·(2·P + A·n), bytes = W + b·(κ·n + a), with P the matmul weight elements, W every
    weight's bytes, A the attention FLOPs per position, κ the KV bytes per position, a the
    activation bytes per token.
    """

    matmul_weights: int  # P: elements of every Linear weight
    weight_bytes: int  # W: every weight once (Linear and RMSNorm)
    attention_flops_per_position: int  # A = 4·layers·heads·head_dim (QKᵀ and PV)
    kv_bytes_per_position: int  # κ = 2·layers·kv_heads·head_dim·s (K and V, every layer)
    activation_bytes_per_token: int  # a = s·layers·(8·d_model + 2·d_ff)

    def kv_bytes_per_sequence(self, context: int) -> int:
        return self.kv_bytes_per_position * (context + 1)

    def flops(self, batch: float, context: int) -> float:
        return batch * (2 * self.matmul_weights + self.attention_flops_per_position * (context + 1))

    def bytes(self, batch: float, context: int) -> float:
        return self.weight_bytes + batch * (self.kv_bytes_per_sequence(context) + self.activation_bytes_per_token)

    def intensity(self, batch: float, context: int) -> float:
        return self.flops(batch, context) / self.bytes(batch, context)

    def crossover_batch(self, context: int) -> float:
        """Batch at which the KV cache read equals the weight read: W / (κ·(c + 1))."""
        return self.weight_bytes / self.kv_bytes_per_sequence(context)

    def intensity_limit(self, context: int) -> float:
        """FLOP per byte as the batch grows without bound: (2·P + A·n) / (κ·n + a)."""
        n = context + 1
        return (2 * self.matmul_weights + self.attention_flops_per_position * n) / (
            self.kv_bytes_per_position * n + self.activation_bytes_per_token
        )

    @property
    def attention_floor(self) -> float:
        """The limit's limit at endless context: A / κ = 2·(heads / kv_heads) / s FLOP per byte."""
        return self.attention_flops_per_position / self.kv_bytes_per_position

    def longest_context_with_knee(self, ridge: float) -> float | None:
        """The longest context whose decode step still turns compute-bound at some batch.

        math.inf when every context does (the attention alone is above the ridge); None when none
        does. Solves (2·P + A·n) / (κ·n + a) = ridge for n = c + 1.
        """
        top = 2 * self.matmul_weights - ridge * self.activation_bytes_per_token
        bottom = ridge * self.kv_bytes_per_position - self.attention_flops_per_position
        if bottom <= 0:
            return math.inf if top > 0 or self.attention_floor > ridge else None
        if top <= 0:
            return None
        n = top / bottom
        return n - 1 if n >= 1 else None

    def knee(self, context: int, ridge: float) -> float | None:
        """Batch at which compute time equals memory time at this context, or None if never."""
        n = context + 1
        per_flops = 2 * self.matmul_weights + self.attention_flops_per_position * n
        per_bytes = self.kv_bytes_per_position * n + self.activation_bytes_per_token
        denominator = per_flops - ridge * per_bytes
        if denominator <= 0:
            return None
        return ridge * self.weight_bytes / denominator


def decode_terms(params: dict[str, Any], bytes_per_element: int) -> DecodeTerms:
    """The terms of `snippets.costs.decode_cost` for one config (layers, d_model, heads, kv_heads, d_ff)."""
    config = costs.DecoderConfig(*(params[k] for k in ("layers", "d_model", "heads", "kv_heads", "d_ff")))
    s = bytes_per_element
    return DecodeTerms(
        matmul_weights=costs.matmul_weight_elements(config),
        weight_bytes=s * costs.weight_elements(config),
        attention_flops_per_position=costs.attention_flops_per_position(config),
        kv_bytes_per_position=costs.kv_cache_bytes(config, 1, 1, s),
        activation_bytes_per_token=s * config.layers * costs.activation_elements_per_token(config),
    )


def is_decode(curve: Curve) -> bool:
    return curve.workload == "decode" and curve.params.get("phase", "decode") == "decode"


def is_prefill(curve: Curve) -> bool:
    return curve.workload == "decode" and curve.params.get("phase") == "prefill"


def kv_share(record: dict[str, Any]) -> float | None:
    """Share of the call's bytes that is KV cache, from the record's bytes_split."""
    split = record.get("bytes_split") or {}
    if "kv_bytes" not in split or not record.get("bytes"):
        return None
    return split["kv_bytes"] / record["bytes"]


def recorded_crossover(records: Sequence[dict[str, Any]]) -> float | None:
    """Weight bytes over KV bytes per sequence, from the records' bytes_split (None without one)."""
    for r in records:
        split = r.get("bytes_split") or {}
        if split.get("kv_bytes") and r["batch"] > 0:
            return split["weight_bytes"] / (split["kv_bytes"] / r["batch"])
    return None


@dataclass(frozen=True)
class DecodeRow:
    """One decode curve's line of the knee table."""

    curve: Curve
    first: tuple[int, float] | None  # (batch, KV share of bytes) at the smallest measured batch
    last: tuple[int, float] | None  # and at the largest
    crossover: float | None  # batch at which KV bytes equal weight bytes (from the records)

    @property
    def context(self) -> int:
        return self.curve.params["context"]

    def cells(self) -> list[str]:
        c = self.curve

        def share(pair):
            return f"{text.sig(100 * pair[1], 2)} % at batch {pair[0]}" if pair else "–"

        return [
            str(self.context),
            attention_name(c.params),
            f"{c.dtype}, {c.mode}",
            predicted_knee_text(c),
            measured_knee_text(c.knee),
            share(self.first),
            share(self.last),
            f"{text.sig(c.overhead_ratio(), 2)}×" if c.overhead_ratio() else "–",
        ]


DECODE_HEADERS = [
    "context",
    "attention",
    "dtype, mode",
    "predicted knee",
    "measured knee (log-log slope below → above)",
    "KV share of bytes, smallest batch",
    "KV share of bytes, largest batch",
    "measured ÷ roofline time at the smallest batch",
]


def decode_rows(curves: Sequence[Curve]) -> list[DecodeRow]:
    """Knees and KV shares of decode curves, ordered by attention then context."""
    rows = []
    for c in curves:
        if not is_decode(c):
            continue
        records = [r for r in curve_records(c) if kv_share(r) is not None]
        first = (records[0]["batch"], kv_share(records[0])) if records else None
        last = (records[-1]["batch"], kv_share(records[-1])) if records else None
        rows.append(DecodeRow(c, first, last, recorded_crossover(records)))
    return sorted(rows, key=lambda r: (-r.curve.params["kv_heads"], r.context, r.curve.dtype, r.curve.mode))


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
            rows.append(
                {
                    "series": c.label,
                    "kind": "measured",
                    "batch": p.batch,
                    "tokens": tokens,
                    "tokens_per_s": tokens / p.median_s,
                    "us_per_token": p.median_s / tokens * 1e6,
                }
            )
            if p.predicted_s:
                rows.append(
                    {
                        "series": c.label,
                        "kind": "roofline",
                        "batch": p.batch,
                        "tokens": tokens,
                        "tokens_per_s": tokens / p.predicted_s,
                        "us_per_token": p.predicted_s / tokens * 1e6,
                    }
                )
    return charts._rows(rows)


# --------------------------------------------------------------------------- charts


def intensity_chart(curves: Sequence[Curve], title: str, batch_title: str) -> alt.LayerChart:
    """FLOP per byte of every recorded point against batch, per curve, with this run's ridge dashed."""
    rows = [{"series": c.label, "batch": p.batch, "intensity": p.flops / p.bytes} for c in curves for p in c.points]
    ridges = {}
    for c in curves:
        if c.ceilings:
            ridges.setdefault(c.dtype, c.ceilings.ridge_intensity)
    rule_rows = [
        {"ridge": f"ridge, {dtype}: {text.sig(value, 3)} FLOP/byte", "intensity": value}
        for dtype, value in ridges.items()
    ]
    batches = [r["batch"] for r in rows]
    labels = list(dict.fromkeys(c.label for c in curves))
    base = alt.Chart(alt.Data(values=charts._rows(rows))).encode(x=_log_axis("batch", batches, batch_title))
    y = alt.Y("intensity:Q", title="arithmetic intensity (FLOP per byte moved)", scale=alt.Scale(type="log"))
    color = alt.Color("series:N", title="configuration", scale=alt.Scale(domain=labels, range=PALETTE[: len(labels)]))
    lines = base.mark_line(point=True, strokeWidth=1.8).encode(
        y=y,
        color=color,
        tooltip=[
            alt.Tooltip("series:N", title="curve"),
            alt.Tooltip("batch:Q", format=",.0f"),
            alt.Tooltip("intensity:Q", title="FLOP/byte", format=".3~g"),
        ],
    )
    layers = [lines]
    if rule_rows:
        rule_base = alt.Chart(alt.Data(values=charts._rows(rule_rows))).encode(
            y=alt.Y("intensity:Q", scale=alt.Scale(type="log"))
        )
        layers.append(rule_base.mark_rule(strokeDash=[4, 3], color="#888").encode(tooltip=["ridge:N"]))
        layers.append(
            rule_base.mark_text(align="left", dx=4, dy=-3, baseline="bottom", fontSize=10, color=LABEL_GREY).encode(
                text="ridge:N", x=alt.value(2)
            )
        )
    subtitle = _subtitle(
        curves,
        "FLOPs and bytes as counted for each measured point; dashed: this run's ridge (matmul FLOP/s ÷ copy "
        "bytes/s). Above it the roofline is compute-bound.",
    )
    chart = alt.layer(*layers).properties(width=WIDTH, height=HEIGHT, title=charts._title(title, *subtitle))
    return chart.configure_legend(labelLimit=charts.LEGEND_LABEL_LIMIT)


def bytes_split_chart(curves: Sequence[Curve], title: str) -> alt.ConcatChart:
    """One log-log panel per curve: weight, KV-cache and activation bytes per step against batch,
    with a rule where the KV bytes reach the weight bytes."""
    color = alt.Color(
        "part:N", title="bytes of", scale=alt.Scale(domain=list(PARTS), range=[PART_COLORS[p] for p in PARTS])
    )
    panels = []
    for c in curves:
        rows = split_rows(c)
        if not rows:
            continue
        batches = [r["batch"] for r in rows]
        base = alt.Chart(alt.Data(values=charts._rows(rows))).encode(
            x=_log_axis("batch", batches, "batch size (sequences)")
        )
        y = alt.Y("mib:Q", title="bytes moved per step (MiB)", scale=alt.Scale(type="log"))
        layers = [
            base.mark_line(point=True, strokeWidth=1.8).encode(
                y=y,
                color=color,
                tooltip=[
                    alt.Tooltip("part:N", title="bytes of"),
                    alt.Tooltip("batch:Q", format=",.0f"),
                    alt.Tooltip("mib:Q", title="MiB", format=".4~g"),
                ],
            )
        ]
        crossover = recorded_crossover(curve_records(c))
        if crossover and min(batches) <= crossover <= max(batches):
            marks = [{"batch": crossover, "label": f"KV = weights at ≈ {crossover:.3g}"}]
            layers.extend(charts.labelled_rules(marks, "batch", height=200, font_size=10))
        panels.append(alt.layer(*layers).properties(width=250, height=200, title=c.label))
    if not panels:
        raise ValueError("bytes_split_chart needs at least one curve whose records have bytes_split")
    subtitle = _subtitle(
        curves,
        "bytes counted per decode step (analytic, from each record's bytes_split); dashed: KV bytes = weight bytes",
    )
    return alt.concat(*panels, columns=2).properties(title=charts._title(title, *subtitle))


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
    chart = chart.properties(width=WIDTH, height=HEIGHT, title=charts._title(title, *subtitle))
    return chart.configure_legend(labelLimit=charts.LEGEND_LABEL_LIMIT)
