"""The CNN page's computed parts: the article's counts corrected by the formulas; per device, single Conv2d
layers and ResNet-50 against batch, their intensity at batch 1 against the ridge and what batching buys; (until a
GPU run exists) what the formulas give on a GPU; and the takeaway's lesson and measured items. The page's fixed
prose is written in docs/cnn.py."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.analysis.roofline import cnn
from benchmarks.analysis.roofline import curves as c
from benchmarks.analysis.roofline.curves import Curve
from benchmarks.analysis.roofline.diagnosis import diagnose
from benchmarks.contract.results import Run
from benchmarks.gpus import find_gpu
from benchmarks.profiles import FULL
from benchmarks.site import charts, diagnosis_words, text
from benchmarks.site import data as site_data
from benchmarks.site.charts import models as cm
from benchmarks.site.data import SiteData
from benchmarks.site.model_words import (
    knee_findings,
    knees_text,
    measured_knee_text,
    not_measured_parts,
    predicted_knee_text,
    ridge_intensity_note,
)
from benchmarks.site.render import (
    Bullets,
    DeviceSection,
    Heading,
    Page,
    Paragraph,
    Table,
    device_sections,
    measured_figure,
    strong,
)
from benchmarks.workloads import IMAGES
from snippets import costs

WORKLOADS = ("conv", "resnet50")

INTENSITY_HEADERS = [
    "layer",
    "dtype · mode · cache",
    "uses of each weight per image",
    "weights' share of bytes at batch 1",
    "FLOP/byte at batch 1",
    "ridge (FLOP/byte)",
    "ridge batch",
    "measured knee (log-log slope below → above)",
]
GAIN_HEADERS = [
    "layer",
    "dtype, mode",
    "batches",
    "throughput gain, measured",
    "throughput gain, roofline",
    "measured ÷ roofline time at the smallest batch",
]
FORMULA_CONV_HEADERS = [
    "layer",
    "weights",
    "uses of each weight per image",
    "weights' share of bytes at batch 1",
    "FLOP/byte at batch 1",
    "FLOP/byte of each extra image",
    "ridge batch",
]


LESSON = (  # the takeaway's lesson, above the items the page measured
    "A convolution reuses each weight at every output position, so its arithmetic intensity at batch 1 is "
    "already high. Early layers move mostly activations, which grow with the batch; deep layers move mostly "
    "weights, but reuse them so often that a few images reach the ridge. Either way the flat region that makes "
    "MLP batching nearly free is short or absent: batch a CNN only as far as the measured images per second keep "
    "rising, and expect latency to grow from the first few extra images."
)


def build(data: SiteData | None = None) -> Page:
    data = data or site_data.load_site_data()
    items = [item for run in data.shown_for(*WORKLOADS) for item in measured_takeaway_items(run)]
    return Page(
        {
            "article_counts_corrected_by_the_formulas": article_counts_corrected_by_the_formulas(),
            "measured_layers_and_resnet50_by_device": device_sections(
                data, lambda run: measured_device_section(data, run), workloads=WORKLOADS
            ),
            "h200_formula_preview_while_no_gpu_measured": h200_formula_preview_while_no_gpu_measured(data),
        },
        data,
        takeaway_items=items or ["No CNN measurement is committed yet."],
        lesson=LESSON,
    )


def article_counts_corrected_by_the_formulas() -> list:
    """The article's weight count and reuse of a 3×3, 64→64 layer on a 224×224 image, as the formulas count them,
    and that layer's intensity at batch 1 in bf16 (no measurement)."""
    reuse = cnn.conv_reuse(64, 64, 3, 224)
    flops, moved = costs.conv_cost(1, 64, 64, 3, 224, 2)
    return [
        Bullets(
            [
                [
                    "A 3×3 convolution from 64 to 64 channels has 3²·64·64 = ",
                    strong(f"{reuse.weights:,}"),
                    f" weights, 64 times the {3 * 3 * 64:,} that kernel_size² × out_channels gives.",
                ],
                [
                    "On a 224×224 image with stride 1 and same padding it has 224·224 = ",
                    strong(f"{reuse.positions:,}"),
                    f" output positions, so each weight is used {reuse.positions:,} times per image (not 224) and "
                    f"does {reuse.flops_per_weight:,} FLOPs per image.",
                ],
                f"In 2-byte bf16 that layer does {text.sig(flops / moved, 3)} FLOP per byte at batch 1, by the "
                "formulas above: a Linear layer in bf16 does about 1 FLOP per byte per row, so it would need a batch "
                f"of about {text.fmt_batch(flops / moved)} rows to match.",
            ]
        )
    ]


# --------------------------------------------------------------------------- one device


def measured_conv_and_resnet50_curves(run: Run) -> tuple[list[Curve], list[Curve]]:
    """The run's single-layer and ResNet-50 curves with at least two points."""
    convs = [curve for curve in c.curves(run, "conv") if len(curve.points) >= 2]
    nets = [curve for curve in c.curves(run, "resnet50") if len(curve.points) >= 2]
    return convs, nets


def measured_device_section(data: SiteData, run: Run) -> DeviceSection:
    convs, nets = measured_conv_and_resnet50_curves(run)
    found = convs + nets
    ridges = {curve.dtype: curve.ceilings.ridge_intensity for curve in found if curve.ceilings}
    note = ridge_intensity_note(dict(sorted(ridges.items())))
    if not found:
        body = [Paragraph("This run has no CNN measurement (no conv or resnet50 workload).")]
    else:
        rows = cnn.intensity_rows(found)
        body = [
            *single_layer_figures(run, convs),
            *resnet50_figures(run, nets),
            *intensity_charts_by_dtype(run, found),
            *intensity_table(run, rows),
            *throughput_gain_table(run, found),
            *faster_than_roofline(found),
            *not_measured_parts(found),
        ]
    dtypes = sorted({curve.dtype for curve in found})
    return DeviceSection(run, body, note, dtypes=dtypes, older=len(data.others(run)))


def measured_where(run: Run, curve: Curve) -> str:
    return f"{text.device_label(run)}, {curve.dtype}, {curve.mode}, cache {curve.cache} ({text.cache_words(curve)})"


def single_layer_figures(run: Run, convs: list[Curve]) -> list:
    parts = []
    for (dtype, mode, cache), group in c.group_by(convs, "dtype", "mode", "cache").items():
        key = f"cnn-{run.device['slug']}-conv-{dtype}-{mode}-{cache}"
        parts += [
            Heading(f"Single layers: {dtype}, {mode}, cache {cache}"),
            measured_figure(
                charts.latency_chart(group, "Latency against batch: single Conv2d layers", IMAGES),
                f"{key}-latency",
                f"Conv2d latency against batch ({dtype}, {mode})",
                "Log-log chart of median latency per call against the number of images for each Conv2d layer "
                "(kernel, input and output channels, feature-map side), with the roofline prediction dashed",
                group,
                where=measured_where(run, group[0]),
                findings=knee_findings(group),
            ),
            measured_figure(
                charts.throughput_chart(group, "Throughput against batch: single Conv2d layers", IMAGES),
                f"{key}-throughput",
                f"Conv2d throughput against batch ({dtype}, {mode})",
                "Log-log chart of images per second (batch ÷ median latency) against the number of images for each "
                "Conv2d layer, measured against the roofline prediction",
                group,
                where=measured_where(run, group[0]),
                findings="A flat line means batching buys nothing",
            ),
        ]
    return parts


def resnet50_figures(run: Run, nets: list[Curve]) -> list:
    parts = []
    for curve in nets:
        res = curve.params.get("resolution")
        parts += [
            Heading(f"ResNet-50 at {res}×{res}: {curve.dtype}, {curve.mode}, cache {curve.cache}"),
            measured_figure(
                charts.headline_chart(curve, f"ResNet-50 at {res}×{res}: latency and throughput against batch", IMAGES),
                f"cnn-{run.device['slug']}-resnet50-{res}-{curve.dtype}-{curve.mode}-{curve.cache}",
                f"ResNet-50 at {res}×{res} against batch ({curve.dtype}, {curve.mode})",
                f"Latency per call (left, with its quartile band) and images per second (right) of ResNet-50 "
                f"(v1.5, inference, channels-last) at {res}×{res} against batch, log-log, measured solid and dashed "
                "the roofline of the run's ceilings, counting the 53 convolutions, the fc layer and the passes between "
                "them",
                [curve],
                where=measured_where(run, curve),
                findings=f"Ridge batch {predicted_knee_text(curve)}, measured knee {measured_knee_text(curve.knee)}",
            ),
            resnet50_bytes_timed_against_fused(curve),
        ]
    return parts


def resnet50_bytes_timed_against_fused(curve: Curve) -> Paragraph:
    """What the byte count of the timed ResNet-50 holds, beside what a fused engine would move."""
    s, res = c.bytes_per_element(curve.dtype) or 4, curve.params["resolution"]
    shares = []
    for batch in (curve.batches[0], curve.batches[-1]):
        _, unfused = costs.resnet50_cost(batch, s, res)
        _, fused = costs.resnet50_cost(batch, s, res, fused=True)
        shares.append(f"{text.fmt_bytes(unfused)} against {text.fmt_bytes(fused)} at batch {batch} "
                      f"(+{100 * (unfused / fused - 1):.0f} %)")  # fmt: skip
    return Paragraph(
        "The bytes counted for the roofline are those of the model as timed: it runs every BatchNorm, ReLU, "
        "residual add and pooling as its own pass over memory, each reading and writing a whole activation. An "
        "inference engine that folds BatchNorm into the convolution and fuses the rest moves only the "
        f"convolutions' own bytes: {'; '.join(shares)}."
    )


def intensity_charts_by_dtype(run: Run, found: list[Curve]) -> list:
    parts = []
    for (dtype,), group in c.group_by(found, "dtype").items():
        unique = list({curve.label: curve for curve in group[::-1]}.values())[::-1]  # one line per layer, first mode
        drawn = {curve.workload for curve in unique}
        # one id per device and dtype while one run holds both workloads; when a device's conv and resnet50 come
        # from different runs, each run's chart names its workload, so the two ids differ
        which = "" if drawn == set(WORKLOADS) else "".join(f"{w}-" for w in WORKLOADS if w in drawn)
        parts.append(
            measured_figure(
                cm.intensity_chart(unique, f"Arithmetic intensity against batch ({dtype})", "batch size (images)"),
                f"cnn-{run.device['slug']}-{which}{dtype}-intensity",
                f"CNN arithmetic intensity against batch ({dtype})",
                "Log-log chart of FLOPs per byte moved against the number of images, for each measured Conv2d layer "
                "and ResNet-50, with the run's ridge intensity (measured matmul FLOP/s ÷ copy bytes/s) dashed",
                unique,
            )
        )
    return parts


# --------------------------------------------------------------------------- tables and sentences


def intensity_cells(row: cnn.IntensityRow) -> list[str]:
    curve = row.curve
    return [
        curve.label,
        f"{curve.dtype} · {curve.mode} · {curve.cache}",
        f"{row.reuse.positions:,}" if row.reuse else "–",
        f"{text.sig(100 * row.weight_share, 2)} %" if row.weight_share is not None else "–",
        text.sig(row.intensity, 3) if row.intensity is not None else "–",
        text.sig(row.ridge, 3) if row.ridge is not None else "–",
        predicted_knee_text(curve),
        measured_knee_text(curve.knee),
    ]


def intensity_table(run: Run, rows: list[cnn.IntensityRow]) -> list:
    return [
        Heading(f"Intensity at batch 1 against the ridge ({text.kind_word(run)})"),
        Table(INTENSITY_HEADERS, [intensity_cells(r) for r in rows]),
        *[Paragraph(sentence) for sentence in single_layers_against_the_ridge(run, rows)],
    ]


def single_layers_against_the_ridge(run: Run, rows: Sequence[cnn.IntensityRow]) -> list[str]:
    """What the intensity table says about the single layers, in words."""
    unique = cnn.single_layers(rows)
    if not unique:
        return []
    above = [r for r in unique if r.above_ridge]
    low = min(unique, key=lambda r: r.intensity)
    high = max(unique, key=lambda r: r.intensity)
    words = (
        f"At batch 1 the single layers do {text.sig(low.intensity, 3)} ({low.curve.label}) to "
        f"{text.sig(high.intensity, 3)} ({high.curve.label}) FLOP per byte, against a ridge of "
        f"{text.sig(high.ridge, 3)} FLOP/byte on this {text.kind_word(run)}. "
    )
    if len(above) == len(unique):
        words += (
            "Every one of them is above the ridge from the first image, so the roofline has no flat region to "
            "offer: it predicts time in proportion to the batch from batch 1. "
        )
    elif above:
        words += (
            f"{len(above)} of {len(unique)} ({', '.join(r.curve.label for r in above)}) are above the ridge from "
            "the first image; the others start memory-bound. "
        )
    else:
        words += "All of them start memory-bound, so the roofline predicts a flat start. "
    shares = ", ".join(f"{r.curve.label}: {text.sig(100 * r.weight_share, 2)} %" for r in unique if r.weight_share)
    if shares:
        words += (
            f"The weights' share of the bytes at batch 1 ({shares}) says how much of the memory traffic a larger "
            "batch could share; the rest is activations, which grow with every image."
        )
    return [words]


def gain_cells(curve: Curve) -> list[str]:
    gain, predicted = cnn.throughput_gain(curve)
    overhead = curve.overhead_ratio()
    return [
        curve.label,
        f"{curve.dtype}, {curve.mode}",
        f"{curve.batches[0]} → {curve.batches[-1]}",
        f"{text.sig(gain, 2)}×",
        f"{text.sig(predicted, 2)}×" if predicted else "–",
        f"{text.sig(overhead, 2)}×" if overhead else "–",
    ]


def throughput_gain_table(run: Run, found: list[Curve]) -> list:
    return [
        Paragraph(
            [
                strong("What batching buys."),
                " Images per second at the largest measured batch over those at the smallest. A ratio near 1 means "
                "a bigger batch raises latency without raising throughput.",
            ]
        ),
        Table(GAIN_HEADERS, [gain_cells(curve) for curve in found]),
    ]


def faster_than_roofline(found: list[Curve]) -> list:
    beyond = cnn.beyond_ceiling(found)
    faster = [
        f"{curve.label} reaches {text.fmt_rate(rate, 'FLOP/s')} at batch {point.batch}, above the run's matmul "
        f"ceiling of {text.fmt_rate(curve.ceilings.flops_per_s, 'FLOP/s')}"
        for curve, point, rate in beyond
    ]
    if not faster:
        return []
    why = (
        " The FLOPs here count a direct convolution; a library may pick an algorithm that does fewer multiply-adds "
        "(Winograd or FFT for 3×3 filters), so for such a layer the roofline is an estimate, not a bound."
    )
    plain_gemm = [curve.label for curve, _, _ in beyond if curve.params.get("kernel") == 1]
    if plain_gemm:
        why += (
            f" That cannot explain {', '.join(plain_gemm)}: a 1×1 convolution is a plain matrix multiply with no "
            "cheaper algorithm, so the run's matmul ceiling (one large square matrix multiply through torch) is "
            "below what this device's convolution kernels reach, and every roofline here that uses it is too slow "
            "by as much."
        )
    return [Paragraph([strong("Faster than the roofline allows."), " " + "; ".join(faster) + "." + why])]


# --------------------------------------------------------------------------- takeaways


def measured_takeaway_items(run: Run) -> list[str]:
    convs, nets = measured_conv_and_resnet50_curves(run)
    rows = cnn.intensity_rows(convs + nets)
    items = [
        resnet50_takeaway_item(run, row)
        for row in rows
        if row.curve.workload == "resnet50" and row.intensity is not None
    ]
    single = [r for r in rows if r.curve.workload == "conv" and r.intensity is not None]
    if single:
        gains = [cnn.throughput_gain(r.curve)[0] for r in single]
        above = sum(r.above_ridge for r in single)
        items.append(
            f"{text.device_label(run)}, single Conv2d layers: {above} of {len(single)} curves are above the ridge "
            f"at batch 1; their throughput changes {text.sig(min(gains), 2)}× to {text.sig(max(gains), 2)}× "
            f"across the measured batches."
        )
    return items


def resnet50_takeaway_item(run: Run, row: cnn.IntensityRow) -> list:
    curve = row.curve
    gain, predicted = cnn.throughput_gain(curve)
    side = "above" if row.above_ridge else "below"
    words: list = [
        f"{text.device_label(run)}, {curve.label} ({curve.dtype}, {curve.mode}): {text.sig(row.intensity, 3)} "
        f"FLOP/byte at batch 1, {side} the ridge of {text.sig(row.ridge, 3)}; {knees_text(curve)}; throughput "
        f"from batch {curve.batches[0]} to {curve.batches[-1]} grows {text.sig(gain, 2)}×"
        + (f" (roofline: {text.sig(predicted, 2)}×). " if predicted else ". ")
    ]
    d = diagnose(curve)
    words += [
        diagnosis_words.point_sentence(d, curve.batches[0]),
        " ",
        diagnosis_words.point_sentence(d, curve.batches[-1]),
    ]
    return words


# --------------------------------------------------------------------------- formulas until a GPU run exists


def h200_formula_preview_while_no_gpu_measured(data: SiteData) -> list:
    """What the formulas give on an H200 for the GPU profile's layers, while no GPU measured them."""
    gpus = [run for run in data.shown_for(*WORKLOADS) if run.device["kind"] == "cuda"]
    if any(c.curves(run, "conv") or c.curves(run, "resnet50") for run in gpus):
        return []
    h200 = find_gpu("NVIDIA H200")
    shapes = [
        tuple(s.params[k] for k in ("c_in", "c_out", "kernel", "resolution"))
        for s in FULL.sweeps
        if s.workload == "conv"
    ]
    if not (h200 and shapes and "bfloat16" in h200.peak_flops):
        return []
    ridge = h200.ridge_intensity("bfloat16")
    found = cnn.formula_convs(shapes, "bfloat16", h200.ceilings("bfloat16"))
    found_verdicts = cnn.formula_verdicts(found)
    said = formula_verdict_sentences(found_verdicts, ridge)
    longest = found_verdicts.longest
    if longest is not None:
        said.append(
            f"The longest flat region is about {text.fmt_batch(longest)} images, against "
            f"{text.fmt_batch(h200.ridge_batch('bfloat16'))} rows for a large Linear layer in bf16 on the same GPU."
        )
    return [
        Heading("What a GPU run will show", 2),
        Paragraph(
            "No GPU measurement of these layers is committed yet. Until one is, here is what the formulas above give "
            "for the layers the GPU profile measures, in bf16 with the H200's datasheet ceilings "
            f"({text.fmt_rate(h200.peak_flops['bfloat16'], 'FLOP/s')} dense bf16, "
            f"{text.fmt_rate(h200.bandwidth, 'B/s')}, ridge {text.sig(ridge, 3)} FLOP/byte). These are formulas, "
            "not measurements."
        ),
        Table(
            FORMULA_CONV_HEADERS,
            [formula_cells(f) for f in found],
            "Formula with datasheet ceilings (NVIDIA H200, bf16): no measurement",
        ),
        Paragraph("By these formulas, on that GPU:"),
        Bullets(said),
    ]


def formula_cells(f: cnn.FormulaConv) -> list[str]:
    if f.knee is None:
        knee = "none: memory-bound at every batch"
    elif f.knee < 1:
        knee = "below batch 1: compute-bound from the start"
    else:
        knee = f"≈ {text.fmt_batch(f.knee)}"
    return [
        f.label,
        f"{f.reuse.weights:,}",
        f"{f.reuse.positions:,}",
        f"{text.sig(100 * f.weight_share, 2)} %",
        text.sig(f.intensity, 3),
        text.sig(f.per_image_intensity, 3),
        knee,
    ]


def formula_verdict_sentences(verdicts: cnn.FormulaVerdicts, ridge: float) -> list[str]:
    said = []
    if verdicts.from_start:
        labels = " and ".join(f.label for f in verdicts.from_start)
        said.append(f"{labels}: compute-bound from the first image, so no flat region at all.")
    if verdicts.short:
        shared = all(f.weight_share > 0.5 for f in verdicts.short)
        said.append(
            " and ".join(f"{f.label} (knee ≈ {text.fmt_batch(f.knee)})" for f in verdicts.short)
            + ": a flat region that ends at the knee"
            + (
                ", because the weights dominate the bytes at batch 1 and extra images share their read."
                if shared
                else "."
            )
        )
    if verdicts.never:
        said.append(
            f"{' and '.join(f.label for f in verdicts.never)}: never compute-bound, because the activations each extra "
            "image brings have their own intensity below the ridge; memory-bound, yet slower with every image, since "
            "those bytes grow with the batch."
        )
    if verdicts.on_ridge:
        said.append(
            " and ".join(
                f"{f.label} ({text.sig(f.per_image_intensity, 3)} FLOP/byte per extra image)" for f in verdicts.on_ridge
            )
            + f": on the ridge ({text.sig(ridge, 3)} FLOP/byte) to within 5 %, so the formula cannot say which side it "
            "falls; either way each extra image costs about as much time as the first."
        )
    return said
