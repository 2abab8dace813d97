"""The training page's computed parts: per device, the measured training step against batch beside its roofline by
phase and the bytes autograd kept per sample beside their hand count; the memory of a Llama-shaped layer's step on a
datasheet GPU (a ceiling, labelled so); and the gradient noise scale and the steps-to-target it predicts, from the
committed noise-scale measurement; and the takeaway's lesson. The page's fixed prose is written in docs/training.py."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import altair as alt

from benchmarks.analysis.roofline import curves as c
from benchmarks.analysis.roofline import noise_scale as ns
from benchmarks.analysis.roofline import training as tr
from benchmarks.analysis.roofline.curves import Curve
from benchmarks.contract.noise_scale import NoiseScaleRun, load_noise_scale
from benchmarks.contract.results import Run
from benchmarks.gpus import BYTES_PER_ELEMENT, find_gpu
from benchmarks.site import charts, text
from benchmarks.site import data as site_data
from benchmarks.site.data import SiteData
from benchmarks.site.render import DeviceSection, Heading, Page, Paragraph, Table, device_sections, measured_figure
from benchmarks.workloads import saved_bytes_per_sample
from snippets import costs

WORKLOADS_SHOWN = ("train-mlp", "train-decoder")
# From charts.PALETTE and LABEL_GREY: each keeps 3:1 against the light and the dark page, as a legend symbol must
MEASURED_COLOR, STEP_ROOFLINE_COLOR, PHASE_COLORS = charts.PALETTE[0], charts.LABEL_GREY, charts.PALETTE[1:5]
PART_COLORS = charts.PALETTE[:4]
TRADEOFF_COLORS = [charts.PALETTE[1], charts.PALETTE[0], charts.PALETTE[4]]  # measured, from B_simple, fitted
MEMORY_GPU = "H100 SXM"
LLAMA_LAYER = {"layers": 1, "d_model": 4096, "heads": 32, "kv_heads": 8, "d_ff": 14336, "ffn": "swiglu",
               "seq": 2048, "optimizer": "adamw", "precision": "mixed"}  # fmt: skip
MEMORY_BATCHES = (1, 8, 32, 128)
STEP_HEADERS = ["batch", "measured", "roofline", "measured ÷ roofline", "optimizer's share of the roofline",
                "autograd kept per sample, measured", "hand count"]  # fmt: skip


LESSON = (  # the takeaway's lesson, above the items the page measured
    "A training step amortises a larger fixed cost than inference (the optimizer update), so its time per sample "
    "keeps falling to a larger batch; memory for activations caps the batch from above, and the gradient noise "
    "scale says how far past it a larger batch still cuts the steps."
)


def build(data: SiteData | None = None, noise: Sequence[NoiseScaleRun] | None = None) -> Page:
    data = data or site_data.load_site_data()
    noise = load_noise_scale() if noise is None else list(noise)
    newest = [n for n in noise if not n.synthetic or all(m.synthetic for m in noise)][-1:] if noise else []
    return Page(
        {
            "step_curves_by_device": device_sections(data, step_section, workloads=WORKLOADS_SHOWN),
            "memory": memory_parts(),
            "noise_scale": noise_parts(newest[0]) if newest else [Paragraph(NO_NOISE)],
            "tradeoff": tradeoff_parts(newest[0]) if newest else [Paragraph(NO_NOISE)],
        },
        data,
        takeaway_items=takeaway_items(data, newest[0] if newest else None),
        lesson=LESSON,
    )


NO_NOISE = "No noise-scale measurement is committed yet: run python -m benchmarks.measure.noise_scale to add one."


def _slug(*parts: Any) -> str:
    return re.sub(r"[^a-z0-9]+", "-", "-".join(str(p) for p in parts).lower()).strip("-")


# --------------------------------------------------------------------------- the step against batch


def training_curves(run: Run) -> list[Curve]:
    return [curve for workload in WORKLOADS_SHOWN for curve in c.curves(run, workload) if curve.points]


def phase_rows(curve: Curve) -> list[dict[str, Any]]:
    """The measured step, its roofline, and the roofline of each phase, per batch (the chart's data)."""
    size = BYTES_PER_ELEMENT[curve.dtype]
    rows = []
    for p in curve.points:
        rows.append({"series": "measured step", "batch": p.batch, "ms": p.median_s * 1e3})
        rows.append({"series": "roofline of the step", "batch": p.batch, "ms": p.predicted_s * 1e3})
        for name, flops, moved in curve.spec.operations(curve.params, size, p.batch):
            seconds = max(flops / curve.ceilings.flops_per_s, moved / curve.ceilings.bytes_per_s)
            rows.append({"series": f"roofline: {name}", "batch": p.batch, "ms": seconds * 1e3})
    return charts.chart_rows(rows)


def phase_chart(curve: Curve) -> alt.LayerChart:
    rows = phase_rows(curve)
    domain = ["measured step", "roofline of the step", *(f"roofline: {n}" for n in costs.TRAIN_PHASES)]
    colors = [MEASURED_COLOR, STEP_ROOFLINE_COLOR, *PHASE_COLORS]
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=charts.batch_axis([r["batch"] for r in rows], curve.unit),
        y=alt.Y("ms:Q", title="time per step (ms)", scale=alt.Scale(type="log")),
        color=alt.Color("series:N", scale=alt.Scale(domain=domain, range=colors), title=None),
        tooltip=["series:N", "batch:Q", alt.Tooltip("ms:Q", format=".3g")],
    )
    measured = base.transform_filter(alt.datum.series == "measured step").mark_line(point=True)
    dashes = alt.StrokeDash(  # forward and weight gradient cost the same: a dash of its own keeps each visible
        "series:N", scale=alt.Scale(domain=domain[1:], range=[[4, 3], [8, 3], [2, 2], [4, 3], [1, 3]]), legend=None
    )
    predicted = base.transform_filter(alt.datum.series != "measured step").mark_line().encode(strokeDash=dashes)
    title = charts.chart_title(curve.shape, f"{curve.label}; {text.describe_curves([curve])}")
    return alt.layer(measured, predicted).properties(title=title, width=520, height=280)


def step_table(curve: Curve) -> Table:
    size = BYTES_PER_ELEMENT[curve.dtype]
    kept = {r["batch"]: r.get("saved_activation_bytes") for r in curve.records("ok")}
    counted = saved_bytes_per_sample(curve.params, size)
    rows = []
    for p in curve.points:
        phases = {name: max(f / curve.ceilings.flops_per_s, m / curve.ceilings.bytes_per_s)
                  for name, f, m in curve.spec.operations(curve.params, size, p.batch)}  # fmt: skip
        measured_kept = kept.get(p.batch)
        ratio = f"{p.median_s / p.predicted_s:.2f}"
        rows.append([
            f"{p.batch:,}", text.fmt_time(p.median_s), text.fmt_time(p.predicted_s), ratio,
            f"{phases['optimizer'] / sum(phases.values()):.0%}",
            text.fmt_bytes(measured_kept / p.batch) if measured_kept else "–", text.fmt_bytes(counted),
        ])  # fmt: skip
    caption = f"{curve.shape}, {curve.label}: measured on {text.describe_curves([curve])}, roofline on its ceilings"
    return Table(STEP_HEADERS, rows, caption)


def step_section(run: Run) -> DeviceSection:
    body: list[Any] = []
    for curve in training_curves(run):
        chart_id = _slug("training", run.device["slug"], curve.workload, curve.label, curve.dtype, curve.mode)
        ratios = [p.median_s / p.predicted_s for p in curve.points if p.predicted_s]
        findings = f"measured ÷ roofline {min(ratios):.2f} to {max(ratios):.2f}" if ratios else ""
        body.append(Heading(f"{curve.shape}, {curve.label}"))
        body.append(
            measured_figure(
                phase_chart(curve),
                chart_id,
                f"Training step against batch: {curve.shape}, {curve.label}",
                "Measured time per step (solid) beside the roofline of the step and of each phase on this run's "
                "ceilings (dashed)",
                [curve],
                findings=findings,
            )
        )
        body.append(step_table(curve))
    if not body:
        body.append(Paragraph("This run measured no training step."))
    return DeviceSection(run, body, dtypes=sorted({cv.dtype for cv in training_curves(run)}))


# --------------------------------------------------------------------------- memory


def memory_rows(params: dict, dtype: str, batches: Sequence[int]) -> list[dict[str, Any]]:
    held = tr.memory("train-decoder", params, dtype)
    rows = []
    for batch in batches:
        for kind, checkpointed in (("no checkpointing", False), ("every layer checkpointed", True)):
            for part, size in held.held.items():
                rows.append({"batch": str(batch), "kind": kind, "part": part, "GiB": size / 2**30})
            per_sample = held.per_sample_checkpointed if checkpointed else held.per_sample
            rows.append({"batch": str(batch), "kind": kind, "part": "activations", "GiB": batch * per_sample / 2**30})
    return charts.chart_rows(rows)


CHECKPOINTING = ["no checkpointing", "every layer checkpointed"]
PAIRS = "each pair of bars: no checkpointing (left), every layer checkpointed (right, lighter)"


def memory_chart(rows: list[dict[str, Any]], memory_gib: float, title: str, subtitle: str) -> alt.LayerChart:
    """Bars by part, a pair per batch; the lighter bar of a pair is named in the subtitle (PAIRS), not a legend,
    since a lighter swatch would fall under 3:1 against one of the two palettes."""
    parts = ["weights", "gradients", "optimizer state", "activations"]
    bars = (
        alt.Chart(alt.Data(values=rows))
        .mark_bar()
        .encode(
            x=alt.X("batch:N", title="batch size (sequences of 2,048 tokens)", sort=None),
            xOffset=alt.XOffset("kind:N", sort=CHECKPOINTING),
            y=alt.Y("sum(GiB):Q", title="memory (GiB)"),
            color=alt.Color("part:N", scale=alt.Scale(domain=parts, range=PART_COLORS), title=None),
            opacity=alt.Opacity("kind:N", scale=alt.Scale(domain=CHECKPOINTING, range=[1.0, 0.55]), legend=None),
            tooltip=["batch:N", "kind:N", "part:N", alt.Tooltip("GiB:Q", format=".3g")],
        )
    )
    limit = (
        alt.Chart(alt.Data(values=[{"GiB": memory_gib}]))
        .mark_rule(strokeDash=[4, 3], color=charts.LABEL_GREY)
        .encode(y="GiB:Q")
    )
    title_params = charts.chart_title(title, subtitle, PAIRS)
    return alt.layer(bars, limit).properties(title=title_params, width=520, height=280)


def memory_parts() -> list:
    gpu = find_gpu(MEMORY_GPU) or find_gpu("NVIDIA " + MEMORY_GPU)
    if gpu is None:
        return [Paragraph(f"The datasheet of the {MEMORY_GPU} is not in benchmarks/gpus.py.")]
    params, dtype = LLAMA_LAYER, "bfloat16"
    held = tr.memory("train-decoder", params, dtype)
    full_model = tr.memory("train-decoder", {**params, "layers": 32}, dtype)
    step = tr.steps("train-decoder", params, gpu.ceilings(dtype), dtype, [8])[0]
    where = f"{gpu.name} (datasheet), bf16 with fp32 master weights and AdamW state, a ceiling (roofline), not measured"
    rows = memory_rows(params, dtype, MEMORY_BATCHES)
    chart = memory_chart(rows, gpu.memory_bytes / 2**30, "Memory of one Llama-3-8B-shaped layer's training step",
                         where)  # fmt: skip
    figure = charts.figure(
        chart,
        "training-memory-llama-layer-h100",
        "Training-step memory by part against batch",
        f"Weights, gradients, optimizer state and activations of one layer (d 4096, 32 heads, 8 KV heads, SwiGLU "
        f"14336) at sequence 2,048, without and with activation checkpointing, against the {gpu.name}'s memory "
        f"(dashed). Predicted from the hand count of snippets/costs.py on {where}",
    )
    largest, largest_ckpt = held.largest_batch(gpu.memory_bytes), held.largest_batch(gpu.memory_bytes, True)
    words = (
        f"Ceiling (roofline) on the {gpu.name} datasheet, not measured: one such layer holds "
        f"{text.fmt_bytes(held.held_bytes)} whatever the batch (16 bytes a parameter: bf16 weights and gradients, "
        f"fp32 master weights and two AdamW moments) and keeps {text.fmt_bytes(held.per_sample)} of activations per "
        f"2,048-token sequence, so at most {largest:,} sequences fit ({largest_ckpt:,} with it checkpointed: one layer "
        "alone gains nothing, since it keeps its input as well). A step at batch 8 takes at least "
        f"{text.fmt_time(step.seconds)} ({text.fmt_time(step.checkpointed_seconds)} checkpointed). All 32 layers hold "
        f"{text.fmt_bytes(full_model.held_bytes)} before any activation, over the {text.fmt_bytes(gpu.memory_bytes)}"
        " of one GPU: the optimizer state has to be sharded or offloaded before the batch matters; checkpointed, "
        f"their activations shrink from {text.fmt_bytes(full_model.per_sample)} to "
        f"{text.fmt_bytes(full_model.per_sample_checkpointed)} per sequence."
    )
    return [figure, Paragraph(words)]


# --------------------------------------------------------------------------- noise scale


def noise_where(found: NoiseScaleRun) -> str:
    doc = found.doc
    d, h = doc["dataset"], doc["host"]
    synthetic = " (synthetic test data)" if found.synthetic else ""
    return (
        f"{d['name']} from {d['package']} {d['package_version']} ({d['train_examples']:,} training examples), "
        f"{doc['model']['description']} ({doc['model']['parameters']:,} parameters), float32 eager on CPU: "
        f"{h['name']}, {h['threads']} thread; measurement {found.id}{synthetic}"
    )


def noise_parts(found: NoiseScaleRun) -> list:
    doc = found.doc
    noise = doc["noise"]
    rows = [
        [str(e.seed), f"{e.step:,}", f"{e.train_loss:.3f}", f"{e.gradient_sq:.3g}", f"{e.trace:.3g}",
         f"{e.b_simple:.0f}" if e.b_simple is not None else "– (|G|² not positive)"]
        for e in ns.estimates(doc)
    ]  # fmt: skip
    scale = ns.noise_scale(doc)
    table = Table(
        ["seed", "step of the reference run", "training loss", "|G|²", "tr(Σ)", "B_simple"],
        rows,
        f"From the squared gradient norms of {noise['draws']} batches of {noise['small_batch']} and of "
        f"{noise['large_batch']} examples at each checkpoint; {noise_where(found)}",
    )
    per_seed = ", ".join(f"{v:.0f}" for v in scale.per_seed.values())
    words = (
        f"Measured: B_simple = {scale.mean:.0f} ± {scale.spread:.0f} (mean ± standard deviation over "
        f"{len(scale.per_seed)} seeds; per seed, the mean over its checkpoints: {per_seed})."
    )
    return [table, Paragraph(words)]


def tradeoff_rows(check: ns.NoiseScaleCheck) -> list[dict[str, Any]]:
    rows = []
    for p in check.points:
        rows.append({"series": "measured (median over seeds, best learning rate)", "batch": p.batch,
                     "steps": p.steps, "low": min(p.per_seed), "high": max(p.per_seed)})  # fmt: skip
    batches = [2**k for k in range(0, 11)]
    for b in batches:
        rows.append({"series": f"S_min(1 + B_simple/B), B_simple = {check.noise.mean:.0f}", "batch": b,
                     "steps": check.predicted(b)})  # fmt: skip
        rows.append({"series": f"fitted to the steps, B_noise = {check.fitted_b_noise:.0f}", "batch": b,
                     "steps": ns.predicted_steps(check.fitted_s_min, check.fitted_b_noise, b)})  # fmt: skip
    return charts.chart_rows(rows)


def tradeoff_chart(check: ns.NoiseScaleCheck, subtitle: str) -> alt.LayerChart:
    rows = tradeoff_rows(check)
    series = list(dict.fromkeys(row["series"] for row in rows))  # measured, from B_simple, fitted
    legend = alt.Legend(orient="bottom", direction="vertical", labelLimit=0)  # whole names: they carry the values
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X("batch:Q", title="batch size (examples)", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("steps:Q", title="steps to the target loss", scale=alt.Scale(type="log")),
        color=alt.Color("series:N", title=None, scale=alt.Scale(domain=series, range=TRADEOFF_COLORS), legend=legend),
        tooltip=["series:N", "batch:Q", alt.Tooltip("steps:Q", format=".0f")],
    )
    measured = alt.datum.series == rows[0]["series"]
    points = base.transform_filter(measured).mark_point(filled=True, size=60)
    spread = base.transform_filter(measured).mark_rule().encode(y="low:Q", y2="high:Q")
    lines = base.transform_filter(~measured).mark_line(strokeDash=[4, 3])
    title = charts.chart_title("Steps to the target against batch", subtitle)
    return alt.layer(lines, spread, points).properties(title=title, width=520, height=300)


def tradeoff_parts(found: NoiseScaleRun) -> list:
    doc = found.doc
    check = ns.check(doc)
    where = noise_where(found)
    figure = charts.figure(
        tradeoff_chart(check, where),
        "training-steps-to-target-digits",
        "Steps to the target loss against batch",
        f"Steps plain SGD took to a training loss of {doc['training']['target_loss']:g} at each batch size (median "
        "over seeds, with their range, at the best learning rate of the grid), beside S_min(1 + B_noise/B) with "
        f"B_noise the measured B_simple and with B_noise fitted to the steps. Measured on {where}",
    )
    rows = [
        [f"{p.batch:,}", f"{p.learning_rate:g}", f"{p.steps:.0f}", f"{check.predicted(p.batch):.0f}",
         f"{check.ratios()[p.batch]:.2f}", f"{p.batch * p.steps:,.0f}"]
        for p in check.points
    ]  # fmt: skip
    table = Table(
        [
            "batch",
            "best learning rate",
            "steps, measured",
            "steps, predicted from B_simple",
            "measured ÷ predicted",
            "examples processed",
        ],
        rows,
        f"S_min = {check.s_min:.0f} fitted with B_noise fixed at the measured B_simple; {where}",
    )
    ratios = check.ratios().values()
    words = (
        f"Measured: with B_noise fixed at the measured B_simple ({check.noise.mean:.0f}), the model is off by "
        f"{min(ratios):.2f}× to {max(ratios):.2f}× across the batch sizes; fitted to the steps alone, B_noise is "
        f"{check.fitted_b_noise:.0f} and S_min {check.fitted_s_min:.0f}."
    )
    return [figure, table, Paragraph(words)]


# --------------------------------------------------------------------------- takeaways


def takeaway_items(data: SiteData, found: NoiseScaleRun | None) -> list[str]:
    items = []
    for run in data.shown_for(*WORKLOADS_SHOWN):
        for curve in training_curves(run):
            first, last = curve.points[0], curve.points[-1]
            items.append(
                f"{curve.shape}, {curve.label} ({text.describe_curves([curve])}): {text.fmt_time(first.median_s)} at "
                f"batch {first.batch} to {text.fmt_time(last.median_s)} at {last.batch}, "
                f"{first.median_s / first.predicted_s:.2f}× and {last.median_s / last.predicted_s:.2f}× its roofline."
            )
    if found is not None:
        check = ns.check(found.doc)
        items.append(
            f"Gradient noise scale of the digits classifier: B_simple {check.noise.mean:.0f} ± {check.noise.spread:.0f}"
            f" over seeds; the steps to the target fit B_noise ≈ {check.fitted_b_noise:.0f}."
        )
    return items
