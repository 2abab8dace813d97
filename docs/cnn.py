# %% [markdown]
# # CNNs: every weight is reused at every pixel
#
# A Linear layer at batch 1 touches each weight once: it reads the weight and does one
# multiply-add with it. That is why an MLP has a long flat region, where extra rows are almost
# free until the arithmetic catches up with the weight read. A convolution is different: it
# slides the same filter over the whole image, so each weight is used once per output position
# before a second image ever arrives. This page measures single convolution layers and a whole
# ResNet-50 (`snippets/cnn.py`) against batch size and compares each with the roofline from the
# run's own measured ceilings.
#
# ## The cost of one convolution
#
# A same-padded *k*×*k* convolution from *C*<sub>in</sub> to *C*<sub>out</sub> channels, with
# stride 1 on an *H*×*W* image, has *k*²·*C*<sub>in</sub>·*C*<sub>out</sub> weights and
# *H*<sub>out</sub>·*W*<sub>out</sub> output positions. Every output position applies every weight
# once, so for a batch of *b* images
#
# $$\mathrm{FLOPs} = 2\,k^2\,C_\mathrm{in}\,C_\mathrm{out}\,H_\mathrm{out}\,W_\mathrm{out}\,b$$
#
# and, reading the weights once, the input once and writing the output once, with *s* bytes per
# element,
#
# $$\mathrm{bytes} \approx s\,(k^2 C_\mathrm{in} C_\mathrm{out}
# + b C_\mathrm{in} H W + b C_\mathrm{out} H_\mathrm{out} W_\mathrm{out})$$
#
# Two things follow, and together they explain why the flat region is short.
#
# - **The positions act as a batch the layer already has.** Each weight does
#   2·*H*<sub>out</sub>·*W*<sub>out</sub> FLOPs per image. An MLP needs a batch of
#   *H*<sub>out</sub>·*W*<sub>out</sub> rows to reuse its weights that often, so a convolution
#   starts where an MLP's knee usually is: its arithmetic intensity at batch 1 can already be above
#   the device's ridge (peak FLOP/s ÷ bandwidth), and then it is compute-bound from the first image.
# - **The activations grow with the batch.** In the early layers the feature maps are far larger
#   than the filters, so most of the bytes are per image. Even a memory-bound layer then gets
#   slower in proportion to the batch, because the bytes it moves do. Only a layer whose weights
#   dominate its bytes, a deep layer with many channels on a small feature map, has a weight read
#   that extra images can share.
#
# ## What the original article got wrong
#
# The article says a Conv2d has kernel_size² × out_channels weights and that a 3×3 filter on a
# 224×224 image at stride 1 is reused 224 times. Both undercount. The weight count leaves out the
# input channels, and the filter is applied at every output position, not once per row:

# %% tags=["hide-input"]
from IPython.display import HTML, Markdown, display

from benchmarks.analysis import curves as report
from benchmarks.analysis.datasheet import find_gpu
from benchmarks.profiles import FULL
from benchmarks.site import charts
from benchmarks.site import charts_models as cm
from benchmarks.site import text as txt
from benchmarks.workloads import IMAGES
from snippets import costs

data = report.load_site_data()
takeaways = []

example = cm.conv_reuse(64, 64, 3, 224)
example_flops, example_bytes = costs.conv_cost(1, 64, 64, 3, 224, 2)
display(
    Markdown(
        f"- A 3×3 convolution from 64 to 64 channels has 3²·64·64 = **{example.weights:,}** weights, "
        f"64 times the {3 * 3 * 64:,} that kernel_size² × out_channels gives.\n"
        f"- On a 224×224 image with stride 1 and same padding it has 224·224 = **{example.positions:,}** output "
        f"positions, so each weight is used {example.positions:,} times per image (not 224) and does "
        f"{example.flops_per_weight:,} FLOPs per image.\n"
        f"- In 2-byte bf16 that layer does {txt.sig(example_flops / example_bytes, 3)} FLOP per byte at batch 1, "
        "by the formulas above: a Linear layer in bf16 does about 1 FLOP per byte per row, so it would need a batch "
        f"of about {txt.fmt_batch(example_flops / example_bytes)} rows to match.\n"
        "- The article's conclusion, that batching helps a convolution less, is right, but the reason is "
        "arithmetic intensity: the reuse across positions means there is little weight read left to share, and "
        "the per-image activations make the bytes grow with the batch anyway."
    )
)

# %% [markdown]
# ## Measured curves
#
# For each device, the single layers share one chart and ResNet-50 has its own. Solid lines are
# measured medians with their interquartile band; dashed lines are the roofline from the run's
# own measured ceilings (copy bandwidth and matmul FLOP/s); ◇ marks the predicted knee where it
# falls inside the measured range and △ the knee detected in the measurement. The table under the
# charts puts each layer's intensity at batch 1 beside the run's ridge.

# %% tags=["hide-input"]


def ceilings_text(run, dtypes):
    copy = run.ceilings["copy"]["bytes_per_s"]
    parts = []
    for dtype in dtypes:
        matmul = run.ceilings.get("matmul", {}).get(dtype)
        if matmul:
            parts.append(
                f"{dtype} matmul {txt.fmt_rate(matmul['flops_per_s'], 'FLOP/s')}, ridge "
                f"{txt.sig(matmul['flops_per_s'] / copy, 3)} FLOP/byte"
            )
    return f"Measured ceilings: copy {txt.fmt_rate(copy, 'B/s')}; " + "; ".join(parts) + "."


def conv_sentences(run, rows):
    """What the intensity table says about the single layers, in words."""
    convs = [r for r in rows if r.curve.workload == "conv" and r.intensity is not None]
    if not convs:
        return []
    seen, unique = set(), []
    for r in convs:  # intensity does not depend on the mode: one line per layer and dtype
        key = (r.curve.label, r.curve.dtype)
        if key not in seen:
            seen.add(key)
            unique.append(r)
    above = [r for r in unique if r.above_ridge]
    low = min(unique, key=lambda r: r.intensity)
    high = max(unique, key=lambda r: r.intensity)
    text = (
        f"At batch 1 the single layers do {txt.sig(low.intensity, 3)} ({low.curve.label}) to "
        f"{txt.sig(high.intensity, 3)} ({high.curve.label}) FLOP per byte, against a ridge of "
        f"{txt.sig(high.ridge, 3)} FLOP/byte on this {txt.kind_word(run)}. "
    )
    if len(above) == len(unique):
        text += (
            "Every one of them is above the ridge from the first image, so the roofline has no flat region to "
            "offer: it predicts time in proportion to the batch from batch 1. "
        )
    elif above:
        text += (
            f"{len(above)} of {len(unique)} ({', '.join(r.curve.label for r in above)}) are above the ridge from "
            "the first image; the others start memory-bound. "
        )
    else:
        text += "All of them start memory-bound, so the roofline predicts a flat start. "
    shares = ", ".join(f"{r.curve.label}: {txt.sig(100 * r.weight_share, 2)} %" for r in unique if r.weight_share)
    if shares:
        text += (
            f"The weights' share of the bytes at batch 1 ({shares}) says how much of the memory traffic a larger "
            "batch could share; the rest is activations, which grow with every image."
        )
    return [text]


def gain_cells(curve):
    measured, predicted = cm.throughput_gain(curve)
    overhead = curve.overhead_ratio()
    return [
        curve.label,
        f"{curve.dtype}, {curve.mode}",
        f"{curve.batches[0]} → {curve.batches[-1]}",
        f"{txt.sig(measured, 2)}×",
        f"{txt.sig(predicted, 2)}×" if predicted else "–",
        f"{txt.sig(overhead, 2)}×" if overhead else "–",
    ]


def device_section(run):
    parts = []
    slug = run.device["slug"]
    kind = txt.kind_word(run)
    convs = [c for c in report.curves(run, "conv") if len(c.points) >= 2]
    nets = [c for c in report.curves(run, "resnet50") if len(c.points) >= 2]
    dtypes = sorted({c.dtype for c in convs + nets})
    intro = f"<strong>{txt.h(txt.device_label(run))}</strong> ({kind} run; {txt.h(txt.provenance(run))})."
    if dtypes:
        intro += " " + txt.h(ceilings_text(run, dtypes))
    if kind == "CPU":
        intro += (
            " This is a CPU run: its ridge is a CPU's, far lower than a GPU's, and it says nothing about how a GPU "
            "batches convolutions."
        )
    parts.append(f"<p>{intro}</p>")
    if not convs and not nets:
        parts.append("<p>This run has no CNN measurement (no conv or resnet50 workload).</p>")
        return parts
    for (dtype, mode, cache), group in report.group_by(convs, "dtype", "mode", "cache").items():
        key = f"cnn-{slug}-conv-{dtype}-{mode}-{cache}"
        where = f"{txt.device_label(run)}, {dtype}, {mode}, cache {cache} ({txt.cache_words(group[0])})"
        verdicts = "; ".join(
            f"{c.label}: predicted knee {cm.predicted_knee_text(c)}, measured knee {cm.measured_knee_text(c.knee)}"
            for c in group
        )
        parts.append(f"<h3>Single layers: {txt.h(dtype)}, {txt.h(mode)}, cache {txt.h(cache)}</h3>")
        parts.append(
            charts.figure(
                charts.latency_chart(group, "Latency against batch: single Conv2d layers", IMAGES),
                f"{key}-latency",
                f"Conv2d latency against batch ({dtype}, {mode})",
                f"Log-log chart of median latency per call against the number of images for each Conv2d layer "
                f"(kernel, input and output channels, feature-map side), on {where}, with the roofline prediction "
                f"dashed. {verdicts}. Data: {txt.provenance(run)}.",
            )
        )
        parts.append(
            charts.figure(
                charts.throughput_chart(group, "Throughput against batch: single Conv2d layers", IMAGES),
                f"{key}-throughput",
                f"Conv2d throughput against batch ({dtype}, {mode})",
                f"Log-log chart of images per second (batch ÷ median latency) against the number of images for each "
                f"Conv2d layer on {where}, measured against the roofline prediction. A flat line means batching "
                f"buys nothing. Data: {txt.provenance(run)}.",
            )
        )
    for curve in nets:
        res = curve.params.get("resolution")
        key = f"cnn-{slug}-resnet50-{res}-{curve.dtype}-{curve.mode}-{curve.cache}"
        parts.append(
            f"<h3>ResNet-50 at {txt.h(res)}×{txt.h(res)}: {txt.h(curve.dtype)}, {txt.h(curve.mode)}, "
            f"cache {txt.h(curve.cache)}</h3>"
        )
        parts.append(
            charts.figure(
                charts.headline_chart(curve, f"ResNet-50 at {res}×{res}: latency and throughput against batch", IMAGES),
                key,
                f"ResNet-50 at {res}×{res} against batch ({curve.dtype}, {curve.mode})",
                f"Two log-log panels for ResNet-50 (v1.5, inference, channels-last) at {res}×{res} pixels on "
                f"{txt.device_label(run)}, {curve.dtype}, {curve.mode}, cache {curve.cache} "
                f"({txt.cache_words(curve)}). Left: median latency per call with its interquartile band; right: "
                f"images per second. Dashed: the roofline from the run's ceilings, counting the 53 convolutions and "
                f"the fc layer. Predicted knee {cm.predicted_knee_text(curve)}, measured knee "
                f"{cm.measured_knee_text(curve.knee)}. Data: {txt.provenance(run)}.",
            )
        )
    rows = cm.intensity_rows(convs + nets)
    for (dtype,), group in report.group_by(convs + nets, "dtype").items():
        unique = list({c.label: c for c in group[::-1]}.values())[::-1]  # one line per layer, first mode
        parts.append(
            charts.figure(
                cm.intensity_chart(unique, f"Arithmetic intensity against batch ({dtype})", "batch size (images)"),
                f"cnn-{slug}-{dtype}-intensity",
                f"CNN arithmetic intensity against batch ({dtype})",
                f"Log-log chart of FLOPs per byte moved against the number of images, for each measured Conv2d layer "
                f"and ResNet-50 ({cm.describe_curves(unique)}), with the run's ridge intensity (measured matmul "
                f"FLOP/s ÷ copy bytes/s) dashed. Data: {txt.provenance(run)}.",
            )
        )
    parts.append(f"<h3>Intensity at batch 1 against the ridge ({txt.h(kind)})</h3>")
    parts.append(
        txt.html_table(
            cm.INTENSITY_HEADERS,
            [r.cells() for r in rows],
            caption=f"{txt.device_label(run)}; {txt.provenance(run)}",
        )
    )
    for text in conv_sentences(run, rows):
        parts.append(f"<p>{txt.h(text)}</p>")
    gains = [gain_cells(c) for c in convs + nets]
    if gains:
        parts.append(
            "<p><strong>What batching buys.</strong> Images per second at the largest measured batch over those at "
            "the smallest. A ratio near 1 means a bigger batch raises latency without raising throughput.</p>"
        )
        parts.append(
            txt.html_table(
                [
                    "layer",
                    "dtype, mode",
                    "batches",
                    "throughput gain, measured",
                    "throughput gain, roofline",
                    "measured ÷ roofline time at the smallest batch",
                ],
                gains,
                caption=f"{txt.device_label(run)}; {txt.provenance(run)}",
            )
        )
    faster = []
    for c in convs + nets:
        best = max(c.points, key=lambda p: p.flops / p.median_s)
        if c.ceilings and best.flops / best.median_s > 1.05 * c.ceilings.flops_per_s:  # beyond run-to-run noise
            faster.append(
                f"{c.label} reaches {txt.fmt_rate(best.flops / best.median_s, 'FLOP/s')} at batch {best.batch}, "
                f"above the run's matmul ceiling of {txt.fmt_rate(c.ceilings.flops_per_s, 'FLOP/s')}"
            )
    if faster:
        parts.append(
            "<p><strong>Faster than the roofline allows.</strong> "
            + txt.h("; ".join(faster))
            + ". The FLOPs here count a direct convolution; a library may pick an algorithm that does fewer "
            "multiply-adds (Winograd or FFT for 3×3 filters), so for such a layer the roofline is an estimate, "
            "not a bound.</p>"
        )
    for row in rows:
        c = row.curve
        if c.workload != "resnet50" or row.intensity is None:
            continue
        measured, predicted = cm.throughput_gain(c)
        side = "above" if row.above_ridge else "below"
        takeaways.append(
            f"{txt.device_label(run)}, {c.label} ({c.dtype}, {c.mode}): {txt.sig(row.intensity, 3)} FLOP/byte "
            f"at batch 1, {side} the ridge of {txt.sig(row.ridge, 3)}; predicted knee "
            f"{cm.predicted_knee_text(c)}, measured knee {cm.measured_knee_text(c.knee)}; throughput from batch "
            f"{c.batches[0]} to {c.batches[-1]} grows {txt.sig(measured, 2)}×"
            + (f" (roofline: {txt.sig(predicted, 2)}×)." if predicted else ".")
            + (
                f" The gain beyond the roofline's is the cost of small calls: at batch {c.batches[0]} the time is "
                f"{txt.sig(c.overhead_ratio(), 2)}× the roofline's, a fixed per-call cost that larger batches "
                "amortise (not measured separately here); it is not a shared weight read."
                if predicted and measured > 1.3 * predicted and (c.overhead_ratio() or 0) > 1.5
                else ""
            )
        )
    single = [r for r in rows if r.curve.workload == "conv" and r.intensity is not None]
    if single:
        gains = [cm.throughput_gain(r.curve)[0] for r in single]
        above = sum(r.above_ridge for r in single)
        takeaways.append(
            f"{txt.device_label(run)}, single Conv2d layers: {above} of {len(single)} curves are above the ridge "
            f"at batch 1; their throughput changes {txt.sig(min(gains), 2)}× to {txt.sig(max(gains), 2)}× "
            f"across the measured batches."
        )
    missing = cm.not_measured(convs + nets)
    if missing:
        parts.append(f"<p>Points not measured: {txt.h('; '.join(missing))}.</p>")
    return parts


charts.show_device_sections(
    data.shown,
    device_section,
    "<p>No results are committed yet: run <code>nox -s bench docs</code> to measure this machine.</p>",
)

# %% [markdown]
# ## Reading the intensity table
#
# *Uses of each weight per image* is *H*<sub>out</sub>·*W*<sub>out</sub>. *FLOP/byte at batch 1*
# divides the FLOPs by the bytes that the harness counts for one image. The *ridge* is the run's
# measured matmul FLOP/s divided by its measured copy bandwidth: a call whose intensity is above
# it is compute-bound on the roofline, so its time grows with every image from the first. The
# *predicted knee* is the batch where the roofline's compute time overtakes its memory time; when
# the intensity is already above the ridge at batch 1 that batch is below 1, and there is no flat
# region at all. ResNet-50's row counts its 53 convolutions and the fc layer together. Its early
# layers move mostly activations and its last ones, with millions of weights on small feature maps,
# mostly weights (compare the single layers' weight shares), so one whole-network intensity is an
# average over very different layers, and the roofline of the sum is optimistic: it lets layers
# that are short of bandwidth borrow it from layers that are short of arithmetic.

# %% tags=["hide-input"]
have_gpu_cnn = any(report.curves(run, "conv") or report.curves(run, "resnet50") for run in data.gpus)
if not have_gpu_cnn:
    h200 = find_gpu("NVIDIA H200")
    shapes = [
        tuple(s.params[k] for k in ("c_in", "c_out", "kernel", "resolution"))
        for s in FULL.sweeps
        if s.workload == "conv"
    ]
    if h200 and shapes and "bfloat16" in h200.peak_flops:
        ridge = h200.ridge_intensity("bfloat16")
        found = cm.formula_convs(shapes, "bfloat16", h200.ceilings("bfloat16"))
        from_start = [f.label for f in found if f.knee is not None and f.knee < 1]
        short = [f for f in found if f.knee is not None and f.knee >= 1]
        never = [f for f in found if f.knee is None]
        on_ridge = [f for f in never if f.per_image_intensity > 0.95 * f.ridge]  # within 5 %: a rounding apart
        never = [f.label for f in never if f not in on_ridge]
        said = []
        if from_start:
            said.append(f"{' and '.join(from_start)}: compute-bound from the first image, so no flat region at all.")
        if short:
            said.append(
                " and ".join(f"{f.label} (knee ≈ {txt.fmt_batch(f.knee)})" for f in short)
                + ": a flat region that ends at the knee"
                + (
                    ", because the weights dominate the bytes at batch 1 and extra images share their read."
                    if all(f.weight_share > 0.5 for f in short)
                    else "."
                )
            )
        if never:
            said.append(
                f"{' and '.join(never)}: never compute-bound, because the activations each extra image brings have "
                "their own intensity below the ridge; memory-bound, yet slower with every image, since those bytes "
                "grow with the batch."
            )
        if on_ridge:
            said.append(
                " and ".join(
                    f"{f.label} ({txt.sig(f.per_image_intensity, 3)} FLOP/byte per extra image)" for f in on_ridge
                )
                + f": on the ridge ({txt.sig(ridge, 3)} FLOP/byte) to within 5 %, so the formula cannot say which "
                "side it falls; either way each extra image costs about as much time as the first."
            )
        longest = max((f.knee for f in short), default=None)
        if longest is not None:
            said.append(
                f"The longest flat region is about {txt.fmt_batch(longest)} images, against "
                f"{txt.fmt_batch(h200.ridge_batch('bfloat16'))} rows for a large Linear layer in bf16 on the "
                "same GPU."
            )
        display(
            HTML(
                "<h2>What a GPU run will show</h2><p>No GPU measurement of these layers is committed yet. Until one "
                "is, here is what the formulas above give for the layers the GPU profile measures, in bf16 with the "
                f"H200's datasheet ceilings ({txt.fmt_rate(h200.peak_flops['bfloat16'], 'FLOP/s')} dense bf16, "
                f"{txt.fmt_rate(h200.bandwidth, 'B/s')}, ridge {txt.sig(ridge, 3)} FLOP/byte). These are "
                "formulas, not measurements.</p>"
                + txt.html_table(
                    cm.FORMULA_CONV_HEADERS,
                    [f.cells() for f in found],
                    caption="Formula with datasheet ceilings (NVIDIA H200, bf16): no measurement",
                )
                + "<p>By these formulas, on that GPU:</p><ul>"
                + "".join(f"<li>{txt.h(line)}</li>" for line in said)
                + "</ul>"
            )
        )

# %% tags=["hide-input"]
gpu_note = (
    ""
    if have_gpu_cnn
    else " Every CNN measurement here is from a CPU; a GPU run will appear here once one is committed."
)
measured = "".join(f"<li>{txt.h(t)}</li>" for t in takeaways) or "<li>No CNN measurement is committed yet.</li>"
display(
    HTML(
        '<div class="admonition success"><p class="admonition-title">Takeaways</p><p>A convolution reuses each '
        "weight at every output position, so its arithmetic intensity at batch 1 is already high. Early layers "
        "move mostly activations, which grow with the batch; deep layers move mostly weights, but reuse them so "
        "often that a few images reach the ridge. Either way the flat region that makes MLP batching nearly free "
        "is short or absent: batch a CNN only as far as the measured images per second keep rising, and expect "
        f"latency to grow from the first few extra images.{gpu_note}</p><ul>{measured}</ul></div>"
    )
)
