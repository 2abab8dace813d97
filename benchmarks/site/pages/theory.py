"""The theory page: datasheet ridge batches, the intensity chart, and the corrections to the article."""

from __future__ import annotations

import json

from benchmarks.analysis.roofline.diagnosis import diagnose
from benchmarks.gpus import BYTES_PER_ELEMENT, GPUS, find_gpu
from benchmarks.site import charts, diagnosis_words, text
from benchmarks.site import data as site_data
from benchmarks.site.data import SiteData
from benchmarks.site.render import (
    Bullets,
    Details,
    Page,
    Paragraph,
    Table,
    autolink,
    link,
    measured_figure,
    strong,
)
from benchmarks.site.tables import ridge_table

T4 = find_gpu("NVIDIA T4")
A100 = find_gpu("NVIDIA A100 SXM4 80GB")
H100 = find_gpu("NVIDIA H100 SXM")
H200 = find_gpu("NVIDIA H200")
CHARTED = (T4, A100, H100, H200)
SEED_MAGIC_RATIO = 216  # the article's ridge batch for the T4, as it states it (65 TFLOP/s ÷ 300 GB/s)
A100_L1_PER_SM = 192 * 1024  # bytes of L1/shared memory per SM (A100 architecture whitepaper)


def build(data: SiteData | None = None) -> Page:
    data = data or site_data.load_site_data()
    return Page(
        {
            "ridges": [ridge_table()],
            "intensity": [intensity_figure()],
            "cache": [cache_words()],
            "corrections": [corrections_table()],
            "cpu": cpu_parts(data),
            "sources": sources(),
        },
        data,
        {"datasheet_ridge_batches": datasheet_ridge_batches()},
        lesson=lesson(datasheet_ridge_batches()),
    )


def intensity_figure():
    ridges = "; ".join(f"{name}: {text.sig(value, 3)} FLOP/B" for name, value in charts.gpu_ridges(CHARTED))
    return charts.figure(
        charts.gpu_intensity_chart(CHARTED, 4096, "Arithmetic intensity of a Linear layer"),
        "theory-intensity",
        "Intensity against batch, with datasheet ridge intensities",
        "Log-log chart of the arithmetic intensity (FLOP per byte) of a 4096×4096 Linear layer against batch size, "
        "for 2-byte and 4-byte weights. Intensity grows in proportion to the batch until the activations' bytes "
        "catch up with the weight's. Dashed horizontal lines are datasheet ridge intensities: " + ridges + ".",
        "Intensity grows in proportion to the batch until the activations' bytes catch up with the weight's; where a "
        "line crosses a GPU's ridge intensity (dashed), that GPU turns compute-bound.",
    )


def cache_words() -> Paragraph:
    mib = 8 * 1024 * 1024 * BYTES_PER_ELEMENT["bfloat16"] / 2**20
    caches = ", ".join(f"{g.name} {text.fmt_bytes(g.l2_bytes)}" for g in (A100, H100) if g.l2_bytes)
    return Paragraph(
        [
            "An 8-layer MLP of width 1024 holds 8·1024² weights: ",
            strong(f"{mib:.0f} MiB in bf16"),
            f", which fits in the L2 cache of an A100 or H100 ({caches}, datasheet). The harness therefore rotates "
            "through several copies of the weights, together larger than the cache, so every call reads memory; "
            "each chart says which cache state it measured.",
        ]
    )


def corrections_table() -> Table:
    t4_fp16, t4_fp32 = T4.peak_flops["float16"], T4.peak_flops["float32"]
    sustained, where = T4.sustained_flops["float16"]
    side = 224
    rows = [
        [
            "The T4 does 65 TFLOP/s in 32-bit floats.",
            f"65 TFLOP/s is the T4's fp16 tensor-core rate; plain fp32 is {text.sig(t4_fp32 / 1e12, 2)} TFLOP/s, "
            f"{text.sig(t4_fp16 / t4_fp32, 2)}× less.",
            T4.source,
        ],
        ["The T4's memory bandwidth is 300 GB/s.", f"It is {text.sig(T4.bandwidth / 1e9, 3)} GB/s.", T4.source],
        [
            f"So the batch where a T4 turns compute-bound (its “magic ratio”) is {SEED_MAGIC_RATIO}.",
            "For fp16 the article's F/BW is already the right formula: b* = (F/BW)·(s/2) with s = 2 bytes. Its "
            "errors are the fp32 label and 300 for 320 GB/s, so b* ≈ "
            f"{T4.ridge_batch('float16'):.0f} in fp16 and ≈ {T4.ridge_batch('float32'):.0f} in fp32 (4-byte weights "
            f"at the fp32 rate). Both assume the 65 TFLOP/s peak, which a 70 W card does not sustain: about "
            f"{sustained / 1e12:.0f} TFLOP/s was measured on a large fp16 matmul, which puts its practical fp16 ridge "
            f"near {sustained / T4.bandwidth:.0f}.",
            f"computed from the two rows above; the sustained rate: {where}",
        ],
        [
            "An A100's “device memory” is only 192 KB.",
            f"192 KB is the L1/shared memory of one SM. An A100 has {A100.sm_count} SMs "
            f"({text.fmt_bytes(A100.sm_count * A100_L1_PER_SM)} of L1/shared memory in all) and a "
            f"{A100.l2_bytes / 2**20:.0f} MB L2 cache, in front of 40 or 80 GB of HBM.",
            A100.source,
        ],
        [
            "A Conv2d layer holds kernel_size² × out_channels weights.",
            "It holds kernel_size² × in_channels × out_channels weights (plus a bias per output channel).",
            "PyTorch torch.nn.Conv2d documentation (weight shape)",
        ],
        [
            f"A 3×3, stride-1 filter on a {side}×{side} image is reused {side} times.",
            f"It is applied at every output position: about {side}² = {side**2:,} times per image, which is why "
            "a convolution has high arithmetic intensity even at batch 1.",
            "arithmetic on the layer's output shape",
        ],
    ]
    return Table(["the article says", "correct", "source"], rows)


def cpu_curve(data: SiteData):
    """The curve the site would head with on a CPU: the 8×1024 MLP where measured."""
    return site_data.headline_curve(SiteData(runs=data.runs, shown=data.cpus))


def cpu_parts(data: SiteData) -> list:
    curve = cpu_curve(data)
    if curve is None:
        return [cpu_words(data)]
    figure = measured_figure(
        charts.headline_chart(curve, f"Latency and throughput against batch: {curve.shape} on a CPU"),
        "theory-cpu",
        f"{curve.shape} on a CPU",
        f"Latency per call (left, with its quartile band) and rows per second (right) of the {curve.shape} against "
        "batch, log-log, measured solid and dashed the roofline of the run's own ceilings",
        [curve],
        findings=text.knee_verdict(curve).capitalize(),
    )
    return [figure, cpu_words(data)]


def cpu_words(data: SiteData) -> Paragraph:
    words: list = [
        "On its roofline, the time grows slowly while reading the weights dominates, and in proportion to the batch "
        "beyond its own, much smaller, ridge batch."
    ]
    curve = cpu_curve(data)
    if curve is not None:
        first, last = curve.points[0], curve.points[-1]
        words.append(
            f" Measured here ({curve.dtype}, {curve.mode}, cache {curve.cache}): {text.fmt_time(first.median_s)} at "
            f"batch {first.batch}, {text.fmt_time(last.median_s)} at batch {last.batch} ({text.knee_verdict(curve)}; "
            f"{text.provenance(curve.run)}). "
        )
        why = diagnosis_words.knee_sentence(diagnose(curve))
        if why is not None:
            words.append(why)
        words += dip_words(curve)
        words.append(ceiling_words(curve, data))
        words += [" The ", link("MLP page", "mlp/"), " shows every curve and what bounds each of them."]
    return Paragraph(words)


def matmul_ceiling(run, dtype: str) -> float | None:
    """The run's measured matmul rate in `dtype` (FLOP/s), or None when it measured none."""
    rate = (run.ceilings.get("matmul") or {}).get(dtype, {}).get("flops_per_s")
    return float(rate) if rate else None


def faster_than_ceiling(run, dtype: str) -> dict[str, list[float]]:
    """Per workload of `run`, the best FLOP/s of each of its curves in `dtype` that beat the run's matmul ceiling."""
    ceiling = matmul_ceiling(run, dtype)
    if ceiling is None:
        return {}
    best: dict[tuple, float] = {}
    for r in run.records:
        if r["status"] == "ok" and r["dtype"] == dtype and r.get("flops") and r.get("median_s"):
            key = (r["workload"], json.dumps(r["params"], sort_keys=True), r["mode"], r["cache"])
            best[key] = max(best.get(key, 0.0), r["flops"] / r["median_s"])
    found: dict[str, list[float]] = {}
    for (workload, *_), rate in best.items():
        if rate > ceiling:
            found.setdefault(workload, []).append(rate)
    return found


def ceiling_words(curve, data: SiteData) -> str:
    """What the run's matmul ceiling is (one kernel, on this many threads) and, when other work in the same run beat
    it, that it is not the CPU's peak."""
    run = next((r for r in data.runs if r.id == curve.run.id), curve.run)  # every record of the run, not one page's
    ceiling = matmul_ceiling(run, curve.dtype)
    if ceiling is None:
        return f" This run measured no {curve.dtype} matmul ceiling, so its roofline has no arithmetic ceiling to name."
    threads = run.device.get("threads")
    on = f" on {threads} thread{'s' * (threads != 1)}" if threads else ""
    said = (
        f" The arithmetic ceiling of this roofline is what this run's own square {curve.dtype} matmul reached{on}, "
        f"{text.fmt_rate(ceiling, 'FLOP/s')}: a ceiling for that kernel, measured, not the CPU's peak"
    )
    beaten = faster_than_ceiling(run, curve.dtype)
    if not beaten:
        return said + "."
    parts = "; ".join(
        f"its {workload} curves {text.fmt_rate(min(rates), 'FLOP/s')}–{text.fmt_rate(max(rates), 'FLOP/s')}"
        if len(rates) > 1
        else f"one {workload} curve {text.fmt_rate(rates[0], 'FLOP/s')}"
        for workload, rates in sorted(beaten.items())
    )
    return said + (
        f": in the same run, work the library runs with other kernels went faster ({parts}). So the ridge batch here "
        "is that of this run's matmul on this machine, not a property of CPUs."
    )


def dip_words(curve) -> list[str]:
    """The batches a larger batch beats, which no roofline predicts, stated as measured."""
    dips = curve.dips()
    if not dips:
        return []
    pairs = "; ".join(
        f"batch {a.batch} takes {text.fmt_time(a.median_s)} and batch {b.batch} {text.fmt_time(b.median_s)}"
        for a, b in dips
    )
    return [
        f" Not every step is slower: {pairs}, beyond the spread of either. A roofline never gets faster with the "
        "batch; the matrix library choosing another kernel for some batch sizes can, and a CPU's library does not "
        "name its kernels, so this page does not say which. "
    ]


def sources() -> list:
    return [
        Details(
            f"Datasheet sources ({len(GPUS)} GPUs)",
            [Bullets([[strong(g.name), ": ", autolink(g.source), "."] for g in GPUS])],
        ),
        Paragraph("Rates are dense (without structured sparsity); bandwidth is the memory's, in bytes per second."),
    ]


def datasheet_ridge_batches() -> dict[str, str]:
    """The large-layer ridge batch, in rows, of the two devices the lesson names, from the datasheet table."""
    return {"H100 SXM, bf16": f"{H100.ridge_batch('bfloat16'):.0f}", "T4, fp32": f"{T4.ridge_batch('float32'):.0f}"}


def lesson(ridge: dict[str, str]) -> str:
    """The takeaway's lesson, with `datasheet_ridge_batches()`."""
    return (
        "The ridge batch of a large layer is the device's FLOP/s over its bandwidth, times half the bytes per element: "
        f"from the datasheets, about {ridge['H100 SXM, bf16']} rows for an H100 SXM in bf16 (the GPU of the home page "
        f"and the guide) and {ridge['T4, fp32']} for a T4 in fp32 (datasheet peaks; a T4 sustains far less than its "
        "fp16 peak). Below it, extra rows are nearly free; measure your own device, because kernels that fall short "
        "of the ceilings, launch overhead and caches all move the knee you actually see."
    )
