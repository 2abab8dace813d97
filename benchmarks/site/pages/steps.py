"""The steps page: a Linear layer swept one batch size at a time, its steps, their causes and
the free batch ranges between them."""

from __future__ import annotations

from benchmarks.analysis.roofline import tile_model as tm
from benchmarks.analysis.roofline.tile_steps import FineSweep, sweeps
from benchmarks.contract.results import Run
from benchmarks.gpus import find_gpu
from benchmarks.site import charts, notice, text
from benchmarks.site import data as site_data
from benchmarks.site.charts.predicted import sawtooth_chart
from benchmarks.site.data import SiteData
from benchmarks.site.render import (
    DeviceSection,
    Heading,
    Html,
    Page,
    Paragraph,
    Table,
    code,
    device_sections,
    measured_figure,
    strong,
)

STEP_HEADERS = ["batch", "jump", "jump ÷ std. error", "likely cause"]
UNEXPLAINED = "not explained by tiles, waves or a kernel switch"
FREE_RANGES_SHOWN = 12
CPU_NOTE = [
    "A CPU has no SMs and its matrix library names no kernels to the profiler (it sees only ",
    code("aten::addmm"),
    "), so only the tile-boundary test applies here; the CPU's own blocking over cores and vector registers has "
    "no fixed tile this page can check.",
]
MODEL_GPU = find_gpu("NVIDIA H200")
MODEL_DTYPE, MODEL_FEATURES = "bfloat16", 8192  # the Linear snippet's layer on a GPU
MODEL_BATCHES = range(1, 2049)
MODEL_EVERY = 16  # batches between drawn points, besides the two on either side of every jump


def build(data: SiteData | None = None) -> Page:
    data = data or site_data.load_site_data()
    model = predicted_sawtooth()  # the staircase leads the page; its words follow the section on tiles and waves
    found = steps_per_sweep(data)
    return Page(
        {
            "model": model[:1],
            "model_words": model[1:],
            "lead": lead(data),
            "curves": device_sections(data, device_section, workloads=("linear",)),
            "no_linear_sweep": [] if found else [Paragraph("No Linear-layer sweep is committed yet.")],
        },
        data,
        {"cpu_only": notice.cpu_only(data)},
        takeaway_items=found,
        lesson=lesson(notice.cpu_only(data)),
    )


# --------------------------------------------------------------------------- the model, before any GPU run


def predicted_sawtooth() -> list:
    """The tile and wave model of the snippet's GPU layer on a datasheet GPU, with the roofline beside it."""
    gpu, tile = MODEL_GPU, tm.TILE
    points = tm.tiled_linear(gpu, MODEL_DTYPE, MODEL_FEATURES, MODEL_FEATURES, MODEL_BATCHES)
    jumps = tm.wave_starts(points)
    drawn = {1, points[-1].batch, *range(MODEL_EVERY, points[-1].batch + 1, MODEL_EVERY)}
    drawn |= {j.batch for j in jumps} | {j.batch - 1 for j in jumps}
    rows = []
    for p in points:
        if p.batch in drawn:
            common = {"batch": p.batch, "waves": p.waves, "share": p.share_of_roofline}
            rows.append({**common, "line": "tile and wave model", "us": p.model_s * 1e6})
            rows.append({**common, "line": "roofline, no partial waves", "us": p.roofline_s * 1e6})
    layer = f"Linear {MODEL_FEATURES}→{MODEL_FEATURES}"
    rates = f"{text.fmt_rate(gpu.peak_flops[MODEL_DTYPE], 'FLOP/s')} dense bf16, {text.fmt_rate(gpu.bandwidth, 'B/s')}"
    chart = sawtooth_chart(
        rows,
        [(j.batch, f"{j.waves} waves") for j in jumps],
        f"A model, not a measurement: {layer} on an {gpu.name}, bf16",
        [f"{tile[0]}×{tile[1]} tiles on {gpu.sm_count} SMs · {rates} (datasheet) · the ceiling, not the forecast"],
    )
    figure = charts.figure(
        chart,
        "steps-model",
        f"The tile and wave model of a {layer} layer on an {gpu.name}, not measured",
        f"Predicted latency per call (top) and per row (bottom, log scale) against every batch size from 1 to "
        f"{points[-1].batch} for a bf16 {layer} layer on an {gpu.name}: the tile and wave model with "
        f"{tile[0]}×{tile[1]} tiles as a staircase that jumps at batches "
        + ", ".join(str(j.batch) for j in jumps)
        + ", and the roofline as a dashed smooth curve beneath it",
        "Predicted, not measured: the tile and wave model's staircase against the smooth roofline, latency per call "
        "(top) and per row (bottom).",
    )
    return [figure, Paragraph(sawtooth_words(points, jumps))]


def sawtooth_words(points: list[tm.TiledPoint], jumps: list[tm.TiledPoint]) -> str:
    by_batch = {p.batch: p for p in points}
    first, before = jumps[0], by_batch[jumps[0].batch - 1]
    row_of_tiles = points[0].tiles  # batch 1 is one row of tiles

    def us(point: tm.TiledPoint) -> str:
        return f"{text.sig(point.model_s * 1e6, 3)} µs"

    one_more = text.sig(first.model_s / before.model_s, 2)
    wave = f"{text.sig(tm.wave_seconds(MODEL_GPU, MODEL_DTYPE, MODEL_FEATURES) * 1e6, 3)} µs"
    sentences = [
        f"In the model every wave costs the same {wave}, so the time is a staircase: flat while the tiles "
        "fit in one wave, then a whole wave more each time they overflow one.",
        f"Batch {before.batch} fills {before.tiles} of the {MODEL_GPU.sm_count} SMs in {us(before)}, "
        f"{text.sig(100 * before.share_of_roofline, 2)} % of the roofline's speed;",
        f"batch {first.batch} adds a row of {row_of_tiles} tiles that spills into a second wave and takes "
        f"{us(first)}, {one_more} times as long for one more row, at {text.sig(100 * first.share_of_roofline, 2)} % "
        "of the roofline.",
        "Per row, the bottom panel is the sawtooth: it falls as a wave fills and jumps back up as the next one opens.",
        f"At small batches the model keeps the same {tm.TILE[0]}-row tiles, so even batch 1 pays a whole tile on "
        f"{row_of_tiles} SMs and sits far above the roofline; real libraries switch to other kernels there (split-K, "
        "narrower tiles, matrix-vector), one of the kernel switches a measured sweep records.",
    ]
    return " ".join(sentences)


# --------------------------------------------------------------------------- measured sweeps


def label(sweep: FineSweep) -> str:
    return f"{sweep.params.get('in_features')}→{sweep.params.get('out_features', 0)}, {sweep.dtype}"


def device_section(run: Run) -> DeviceSection:
    found = sweeps(run)
    sms = run.device.get("sm_count")
    note = CPU_NOTE if text.kind_word(run) == "CPU" else (f"This GPU has {sms} SMs." if sms else "")
    body = [part for sweep in found for part in sweep_parts(run, sweep)]
    if not any(r["workload"] == "linear" for r in run.records):
        body = [Paragraph("This run has no Linear-layer sweep.")]
    return DeviceSection(run, body, note, dtypes=sorted({s.dtype for s in found}))


def sweep_parts(run: Run, sweep: FineSweep) -> list:
    return [
        Heading(f"Linear {label(sweep)}, {sweep.mode}, cache {sweep.cache}"),
        sweep_figure(run, sweep),
        Paragraph(sweep_words(sweep)),
        *step_table(run, sweep),
        free_ranges_sentence(sweep),
    ]


def noise_words(sweep: FineSweep) -> str:
    return f"{text.sig(100 * sweep.noise, 2)} %"


def sweep_figure(run: Run, sweep: FineSweep):
    name, params = label(sweep), sweep.params
    subtitle = [f"{text.device_label(run)} · {sweep.dtype} · {sweep.mode} · cache: {sweep.cache}"]
    chart = charts.steps_chart(
        [(name, sweep.points)], {name: sweep.steps}, f"Every batch size: Linear {name}", subtitle
    )
    return measured_figure(
        chart,
        f"steps-{run.device['slug']}-{sweep.dtype}-{sweep.mode}-{sweep.cache}",
        f"Fine batch sweep of a Linear {name} layer ({sweep.mode})",
        "Median latency per call (top) and latency per row (bottom, log scale) against batch size for one Linear "
        f"layer with {params.get('in_features')} inputs and {params.get('out_features', 0)} outputs",
        run=run,
        where=f"{text.device_label(run)}, {sweep.dtype}, {sweep.mode}, cache {sweep.cache}",
        findings=(
            f"Dashed rules mark the {len(sweep.steps)} step(s) detected above the run's noise"
            if sweep.steps
            else "No step stands out from the run's noise"
        )
        + f" (typical standard error {noise_words(sweep)} of the median)",
    )


def sweep_words(sweep: FineSweep) -> str:
    points, steps = sweep.points, sweep.steps
    words = (
        f"{len(points)} batch sizes from {points[0].batch} to {points[-1].batch}; typical standard error of a "
        f"point's median: {noise_words(sweep)}. A step is a rise in level, beyond the curve's local trend, larger "
        "than 4 combined standard errors. "
    )
    if not steps:
        return words + "No step stands out from the noise on this curve."
    return words + (
        f"{len(steps)} step(s) found; the tile/wave model or a recorded kernel switch accounts for "
        f"{sweep.explained} of them, and {len(steps) - sweep.explained} have no explanation this page can check."
    )


def cause_cell(causes: list[str]) -> list:
    """The causes one per line (each escaped), or the words for none."""
    if not causes:
        return [UNEXPLAINED]
    cell: list = [causes[0]]
    for cause in causes[1:]:
        cell += [Html("<br>"), cause]
    return cell


def step_table(run: Run, sweep: FineSweep) -> list:
    if not sweep.steps:
        return []
    rows = [
        [
            f"{step.before} → {step.after}",
            f"+{text.sig(100 * step.relative, 2)} %",
            text.sig(step.sigmas, 2),
            cause_cell(causes),
        ]
        for step, causes in zip(sweep.steps, sweep.causes)
    ]
    caption = f"Detected steps: Linear {label(sweep)}, {sweep.mode}, on {text.device_label(run)}"
    return [Table(STEP_HEADERS, rows, caption)]


def free_ranges_sentence(sweep: FineSweep) -> Paragraph:
    cheap = sweep.free_ranges
    if not cheap:
        return Paragraph(
            [
                strong("Free batch sizes: none beyond the noise."),
                " Without a step, neighbouring sizes that cost the same within the noise are the scatter of a smooth "
                "curve, not a range where rows come free.",
            ]
        )
    shown = ", ".join(f"{start}–{end}" for start, end in cheap[:FREE_RANGES_SHOWN])
    more = f" and {len(cheap) - FREE_RANGES_SHOWN} more" if len(cheap) > FREE_RANGES_SHOWN else ""
    return Paragraph(
        [
            strong("Free batch sizes."),
            " Each of these ranges ends at a detected step, and every batch in it costs no more than the first one, "
            f"within twice the noise: {shown}{more}. A batch at the start of a range pays for the whole range, so "
            "round it up to the range's end.",
        ]
    )


def lead(data: SiteData) -> list:
    """One line under the predicted staircase: what the committed sweeps found, device by device."""
    said = []
    for run in data.shown_for("linear"):
        for sweep in sweeps(run):
            found = (
                f"{len(sweep.steps)} step(s) stood out from its noise"
                if sweep.steps
                else "no step stood out from its noise"
            )
            said.append(
                f"{text.device_label(run)}, Linear {label(sweep)} ({sweep.mode}), {len(sweep.points)} batch sizes: "
                f"{found} (typical standard error {noise_words(sweep)})"
            )
    if not said:
        return []
    return [Paragraph([strong("Measured so far: "), "; ".join(said), ". The measured sweeps are below."])]


def steps_per_sweep(data: SiteData) -> list[str]:
    """The takeaway's items: every sweep's steps above its noise, how many explained and how many not."""
    return [
        f"{text.device_label(run)}, Linear {label(sweep)} ({sweep.mode}): {len(sweep.steps)} step(s) above a "
        f"typical noise of {noise_words(sweep)}, {sweep.explained} explained, {len(sweep.steps) - sweep.explained} not."
        for run in data.shown_for("linear")
        for sweep in sweeps(run)
    ]


def lesson(cpu_only: bool) -> str:
    """The takeaway's lesson; on a site of CPU runs only, it says whose steps these are."""
    words = (
        "Sweep batch sizes one by one, not by doubling: the slow sizes sit just past tile and wave boundaries. Choose "
        "a batch at the end of a free range (the last size before a step), never the first size after one, and check "
        "the range on your own device, since tile shapes and SM counts differ."
    )
    if cpu_only:
        words += " The tile and wave steps this page explains are a GPU's."
    return words
