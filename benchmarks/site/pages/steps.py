"""The steps page: a Linear layer swept one batch size at a time, its steps, their causes and
the free batch ranges between them."""

from __future__ import annotations

from benchmarks.analysis import curves as c
from benchmarks.analysis.curves import SiteData
from benchmarks.analysis.steps import Sweep, sweeps
from benchmarks.results import Run
from benchmarks.site import charts, notice, text
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
    takeaway,
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


def build(data: SiteData | None = None) -> Page:
    data = data or c.load_site_data()
    return Page(
        {
            "curves": device_sections(data, device_section, workloads=("linear",)),
            "summary": summary(data),
        },
        data,
    )


def label(sweep: Sweep) -> str:
    return f"{sweep.params.get('in_features')}→{sweep.params.get('out_features', 0)}, {sweep.dtype}"


def device_section(run: Run) -> DeviceSection:
    found = sweeps(run)
    sms = run.device.get("sm_count")
    note = CPU_NOTE if text.kind_word(run) == "CPU" else (f"This GPU has {sms} SMs." if sms else "")
    body = [part for sweep in found for part in sweep_parts(run, sweep)]
    if not any(r["workload"] == "linear" for r in run.records):
        body = [Paragraph("This run has no Linear-layer sweep.")]
    return DeviceSection(run, body, note, dtypes=sorted({s.dtype for s in found}))


def sweep_parts(run: Run, sweep: Sweep) -> list:
    return [
        Heading(f"Linear {label(sweep)}, {sweep.mode}, cache {sweep.cache}"),
        sweep_figure(run, sweep),
        Paragraph(sweep_words(sweep)),
        *step_table(run, sweep),
        free_ranges(sweep),
    ]


def noise_words(sweep: Sweep) -> str:
    return f"{text.sig(100 * sweep.noise, 2)} %"


def sweep_figure(run: Run, sweep: Sweep):
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


def sweep_words(sweep: Sweep) -> str:
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


def step_table(run: Run, sweep: Sweep) -> list:
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


def free_ranges(sweep: Sweep) -> Paragraph:
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


def summary(data: SiteData) -> list:
    lines = [
        f"{text.device_label(run)}, Linear {label(sweep)} ({sweep.mode}): {len(sweep.steps)} step(s) above a "
        f"typical noise of {noise_words(sweep)}, {sweep.explained} explained, {len(sweep.steps) - sweep.explained} not."
        for run in data.shown_for("linear")
        for sweep in sweeps(run)
    ]
    lesson = (
        "Sweep batch sizes one by one, not by doubling: the slow sizes sit just past tile and wave boundaries. "
        "Choose a batch at the end of a free range (the last size before a step), never the first size after one, "
        "and check the range on your own device, since tile shapes and SM counts differ."
    )
    cpu_only = notice.cpu_only(data)
    if cpu_only:
        lesson += " The tile and wave steps this page explains are a GPU's."
    parts = [] if lines else [Paragraph("No Linear-layer sweep is committed yet.")]
    return [*parts, takeaway(lesson, lines)]
