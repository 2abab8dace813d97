"""The three-regimes page: measured ceiling curves, launch overhead, the cache trap, and the
three-question test that tells the overhead, memory and compute regimes apart."""

from __future__ import annotations

from typing import Any

from benchmarks.analysis.roofline import regimes
from benchmarks.analysis.roofline.calculator import datasheet_of
from benchmarks.analysis.roofline.curves import Curve
from benchmarks.analysis.roofline.diagnosis import diagnose
from benchmarks.contract.results import Run
from benchmarks.gpus import GPU
from benchmarks.site import charts, diagnosis_words, notice, text
from benchmarks.site import data as site_data
from benchmarks.site.charts import hardware as charts_hardware
from benchmarks.site.data import SiteData
from benchmarks.site.render import (
    DeviceSection,
    Heading,
    Page,
    Paragraph,
    Table,
    device_sections,
    measured_figure,
)

PLATEAU_HEADERS = ["level", "read: median bandwidth (working sets)", "copy: median bandwidth (working sets)"]
MATMUL_HEADERS = ["dtype", "best measured", "at n", "datasheet (dense)", "measured ÷ datasheet"]
OVERHEAD_HEADERS = [
    "MLP",
    "dtype",
    "mode",
    "batch 1",
    "ops",
    "per op",
    "roofline (memory)",
    "read at cache speed",
    "batch 1 ÷ cache read",
]
SIGNAL_HEADERS = [
    "device",
    "MLP (eager)",
    "2× width, batch 1",
    "graph ÷ eager",
    "compile ÷ eager",
    "4× batch (1 → 4)",
    "the test says",
    "the diagnosis at batch 1",
]
COPY_NOTE = Paragraph(
    "The copy's smallest working sets measure the cost of each copy call as much as the cache: one pass is one "
    "call. The read kernel passes over its buffer many times in one call, so its plateaus are the cache levels' own."
)
BANDWIDTH_SUMMARY = (
    "Log-log chart of measured bandwidth in GB/s against the bytes one pass touches, from a few KiB to far beyond "
    "the last cache, for a copy (bytes read plus written) and a read that passes over one buffer many times in one "
    "kernel; the cache sizes the device reports are marked"
)
MATMUL_SUMMARY = "Log-log chart of measured FLOP/s of an n×n by n×n matmul against n for each dtype measured"


def build(data: SiteData | None = None) -> Page:
    data = data or site_data.load_site_data()
    tiny = next(filter(None, map(regimes.tiny_eager_curve, data.shown_for("mlp"))), None)
    taught = what_each_device_teaches(data)
    return Page(
        {
            "ceilings": device_sections(data, lambda run: ceilings_device(data, run)),
            "overhead": per_device(data, overhead_section),
            "cache": per_device(data, cache_section),
            "signals": [signals_table(data)],
            "no_ceiling_curves": [] if taught else [Paragraph("No measurement with ceiling curves is committed yet.")],
        },
        data,
        {"tiny": tiny, "cpu_only": notice.cpu_only(data)},
        takeaway_items=taught,
        lesson=lesson(notice.cpu_only(data)),
    )


def per_device(data: SiteData, section) -> list:
    """A device's parts under a short heading: the device was introduced in the first section."""
    parts = []
    for run in data.shown_for("mlp"):
        parts += [Heading(f"{text.device_label(run)} ({text.kind_word(run)} run)", 3), *section(run)]
    return parts


# --------------------------------------------------------------------------- the ceilings


def ceilings_device(data: SiteData, run: Run) -> DeviceSection:
    return DeviceSection(run, ceilings_section(run, datasheet_of(run)), older=len(data.others(run)))


def ceilings_section(run: Run, gpu: GPU | None) -> list:
    if not run.ceilings.get("curves"):
        return [Paragraph("This run predates the ceiling curves: it has only the single copy and matmul ceilings.")]
    return [bandwidth_figure(run, gpu), *plateau_table(run), matmul_figure(run, gpu), matmul_table(run, gpu)]


def plateau_words(run: Run) -> str:
    """'L1 195 GB/s, L2 116 GB/s, memory 31.2 GB/s': the read plateaus."""
    return ", ".join(f"{p.name} {text.fmt_rate(p.bytes_per_s, 'B/s')}" for p in regimes.read_plateaus(run))


def run_figure(run: Run, name: str, chart: Any, caption: str, summary: str, **words: str):
    """A figure of one run's own measurement, under the stable id regimes-<device>-<name>."""
    return measured_figure(chart, f"regimes-{run.device['slug']}-{name}", caption, summary, run=run, **words)


def bandwidth_figure(run: Run, gpu: GPU | None):
    chart = charts_hardware.bandwidth_chart(run, gpu, "Bandwidth against working-set size")
    findings = f"Read plateaus: {plateau_words(run) or 'none found'}"
    caption = "Copy and read bandwidth against working-set size"
    return run_figure(run, "bandwidth", chart, caption, BANDWIDTH_SUMMARY, findings=findings)


def plateau_cell(plateau: regimes.Plateau | None) -> str:
    if plateau is None:
        return "–"
    span = f"{text.fmt_bytes(plateau.low_bytes)}–{text.fmt_bytes(plateau.high_bytes)}"
    return f"{text.fmt_rate(plateau.bytes_per_s, 'B/s')} ({span}, {plateau.points} size{'s' * (plateau.points != 1)})"


def plateau_table(run: Run) -> list:
    rows = [[row.name, plateau_cell(row.read), plateau_cell(row.copy)] for row in regimes.plateau_rows(run)]
    if not rows:
        return []
    caption = (
        f"Bandwidth plateaus on {text.device_label(run)}: working sets that fit each cache level (edges left out), "
        "and those at least 4× the largest cache (memory)"
    )
    return [Table(PLATEAU_HEADERS, rows, caption), COPY_NOTE]


def matmul_figure(run: Run, gpu: GPU | None):
    chart = charts_hardware.matmul_chart(run, gpu, "Matmul rate against size, per dtype")
    summary = MATMUL_SUMMARY + (", with the datasheet's dense peaks dashed" if gpu else "")
    findings = "Small matrices leave the device partly idle; where the rate peaks depends on the device and dtype"
    return run_figure(run, "matmul", chart, "Square-matmul FLOP/s against matrix size", summary, findings=findings)


def matmul_table(run: Run, gpu: GPU | None) -> Table:
    rows = []
    for dtype, (n, best) in regimes.best_matmul(run).items():
        sheet = gpu.peak_flops.get(dtype) if gpu else None
        rows.append(
            [
                dtype,
                text.fmt_rate(best, "FLOP/s"),
                str(n),
                text.fmt_rate(sheet, "FLOP/s") if sheet else "–",
                f"{best / sheet:.0%}" if sheet else "–",
            ]
        )
    return Table(MATMUL_HEADERS, rows, f"Square-matmul rate on {text.device_label(run)}")


# --------------------------------------------------------------------------- launch overhead


def overhead_section(run: Run) -> list:
    shown = regimes.resident_curves(run)
    if not shown:
        return [Paragraph("This run has no MLP with resident weights in several modes.")]
    rows = regimes.overhead_rows(run, regimes.smallest_resident_width(run))
    parts: list[Any] = [modes_figure(run, shown)]
    if rows:
        parts.append(overhead_table(run, rows))
        sentence = compile_sentence(rows)
        if sentence:
            parts.append(Paragraph(sentence))
    return parts


def modes_figure(run: Run, shown: list[Curve]):
    dtype = shown[0].dtype
    group = [curve for curve in shown if curve.dtype == dtype]
    modes = ", ".join(dict.fromkeys(curve.mode for curve in shown))
    return measured_figure(
        charts.mode_chart(group, "The same MLPs in every execution mode"),
        f"regimes-{run.device['slug']}-modes",
        f"Latency against batch per execution mode ({dtype}, weights resident)",
        f"Small multiples, one per MLP width, of median latency against batch size for each execution mode "
        f"measured ({modes}), with the roofline dashed",
        group,
    )


def cost_word(run: Run) -> str:
    return "launch" if run.device.get("kind") == "cuda" else "framework dispatch"


def overhead_row(run: Run, row: regimes.OverheadRow) -> list[str]:
    floor = regimes.cache_floor(run, row.bytes)
    fused = row.mode == "compile"  # generated code fuses ops: the op count is not known
    return [
        f"8×{row.width}",
        row.dtype,
        row.mode,
        text.fmt_time(row.batch1_s),
        "–" if fused else str(row.ops),
        "–" if fused else text.fmt_time(row.per_op_s),
        text.fmt_time(row.roofline_s) if row.roofline_s else "–",
        f"{text.fmt_time(floor[1])} ({floor[0]})" if floor else "–",
        f"{row.batch1_s / floor[1]:,.0f}×" if floor else "–",
    ]


def overhead_table(run: Run, rows: list[regimes.OverheadRow]) -> Table:
    caption = (
        f"The smallest MLP at batch 1 on {text.device_label(run)}: time per op bounds the {cost_word(run)} cost of "
        "one op from above (it includes the op's own tiny work). Its weights are resident, so the fair floor is "
        "reading its bytes at the read plateau of the cache level that holds them."
    )
    return Table(OVERHEAD_HEADERS, [overhead_row(run, row) for row in rows], caption)


def compile_sentence(rows: list[regimes.OverheadRow]) -> str:
    """torch.compile against eager at batch 1, in words ('' when either was not measured)."""
    ratio = regimes.mode_ratio(rows, "compile")
    if ratio is None:
        return ""
    compiled = next(r for r in rows if r.mode == "compile")
    verdict = "slower than" if ratio > 1.02 else "no faster than" if ratio > 0.95 else "faster than"
    return (
        f"torch.compile (default mode) runs the 8×{compiled.width} MLP at batch 1 in "
        f"{text.fmt_time(compiled.batch1_s)}, {ratio:.2f}× the eager time: {verdict} eager here."
    )


def overhead_takeaway(run: Run, rows: list[regimes.OverheadRow]) -> str:
    eager = next((r for r in rows if r.mode == "eager"), None)
    if eager is None:
        return ""
    words = (
        f"{text.device_label(run)}: the 8×{eager.width} MLP takes {text.fmt_time(eager.batch1_s)} at batch 1 "
        f"in eager mode, {text.fmt_time(eager.per_op_s)} of {cost_word(run)} per op"
    )
    floor = regimes.cache_floor(run, eager.bytes)
    if floor:
        words += (
            f", {eager.batch1_s / floor[1]:,.0f}× the time to read its {text.fmt_bytes(eager.bytes)} from {floor[0]}"
        )
    saved = regimes.launch_cost_saved(rows)
    if saved is not None:
        words += f"; a CUDA graph saves {text.fmt_time(saved)} per kernel"
    return words + "."


# --------------------------------------------------------------------------- the cache trap


def cache_section(run: Run) -> list:
    parts: list[Any] = []
    for (dtype, mode), group in regimes.cache_pairs(run, 1024).items():
        parts += [cache_state_figure(run, group, dtype, mode), *batch_one_comparison(run, group)]
    sweep = regimes.widest_weight_sweep(run)
    if sweep:
        parts.append(weight_bandwidth_figure(run, *sweep))
    return parts


def cache_state_figure(run: Run, group: list[Curve], dtype: str, mode: str):
    width = group[0].params["width"]
    return measured_figure(
        charts_hardware.cache_state_chart(group, f"8×{width} MLP: weights resident against rotated"),
        f"regimes-{run.device['slug']}-cache-{dtype}-{mode}",
        f"Latency against batch with weights resident and rotated ({dtype}, {mode})",
        f"Log-log chart of median latency against batch size for the 8×{width} MLP, once timed in a hot loop "
        "(weights resident) and once rotating through weight copies larger than the cache",
        group,
    )


def batch_one_comparison(run: Run, group: list[Curve]) -> list:
    caches = {curve.cache: curve for curve in reversed(group)}  # the first curve of each cache state
    resident, rotated = caches.get("resident"), caches.get("rotated")
    first_r = regimes.point_at(resident, 1) if resident else None
    first_m = regimes.point_at(rotated, 1) if rotated else None
    if not (first_r and first_m):
        return []
    words = (
        f"At batch 1 the resident loop reports {text.fmt_time(first_r.median_s)} and the rotated one "
        f"{text.fmt_time(first_m.median_s)}: {first_m.median_s / first_r.median_s:.2f}×."
    )
    levels = regimes.cache_levels(run)
    weights = regimes.weight_bytes(resident)
    if levels and weights >= levels[-1]["bytes"]:
        words += (
            f" Its {text.fmt_bytes(weights)} of weights do not fit in this device's largest cache "
            f"({levels[-1]['name']}, {text.fmt_bytes(levels[-1]['bytes'])}), so both loops read memory "
            "here; the width sweep below shows the trap at the widths that do fit."
        )
    return [Paragraph(words)]


def weight_bandwidth_figure(run: Run, dtype: str, mode: str, rows: list[regimes.WeightBandwidth]):
    where = f"{text.device_label(run)} · {dtype} · {mode} · batch 1 · cache: resident vs rotated"
    title = "Where the weights stop fitting in cache"
    chart = charts_hardware.weight_bandwidth_chart(run, rows, regimes.memory_read(run), title, where)
    caption = f"Weight bandwidth against weight size, resident and rotated ({dtype}, {mode}, batch 1)"
    summary = (
        f"Log-log chart of an 8-layer MLP's weight bytes divided by its batch-1 latency, against the size of its "
        f"weights, for widths {', '.join(str(w) for w in sorted({r.width for r in rows}))}, with weights resident "
        "and rotated; cache sizes are marked"
    )
    return run_figure(run, "weight-bandwidth", chart, caption, summary, where=where)


def cache_trap_takeaway(run: Run) -> str:
    sweep = regimes.widest_weight_sweep(run)
    trap = regimes.cache_trap(sweep[2]) if sweep else None
    if trap is None:
        return ""
    return (
        f"{text.device_label(run)} ({sweep[0]}, {sweep[1]}, batch 1): the cache trap is largest at width {trap.width} "
        f"({text.fmt_bytes(trap.weight_bytes)} of weights), where a hot loop reports {trap.ratio:.1f}× the weight "
        f"bandwidth of rotated weights; at width {trap.widest} ({text.fmt_bytes(trap.widest_bytes)}) the hot loop "
        f"reports {trap.widest_ratio:.2f}× it"
        + (" (the same within a tenth)." if abs(trap.widest_ratio - 1) <= 0.1 else ".")
    )


# --------------------------------------------------------------------------- which regime, takeaways


def ratio_cell(value: float | None) -> str:
    return f"{value:.2f}×" if value is not None else "not measured"


def signals_table(data: SiteData):
    rows = [
        [
            text.device_label(run),
            f"8×{curve.params['width']} {curve.dtype}, {curve.cache}",
            *map(ratio_cell, (s.width_ratio, s.graph_ratio, s.compile_ratio, s.batch_ratio)),
            regimes.regime_of(s),
            diagnosis_words.point_brief(diagnose(curve), 1),
        ]
        for run in data.shown_for("mlp")
        for curve, s in regimes.signal_rows(run)
    ]
    if not rows:
        return Paragraph("No MLP measurement is committed yet.")
    caption = (
        "The three-question test on measured curves: time ratios and the regime they point to, beside the "
        "diagnosis from the run's measured fixed costs and ceilings"
    )
    return Table(SIGNAL_HEADERS, rows, caption)


def ceilings_takeaways(run: Run) -> list[str]:
    """What this device's ceilings teach."""
    words = plateau_words(run) if run.ceilings.get("curves") else ""
    if not words:
        return []
    return [
        f"{text.device_label(run)}: read bandwidth by where the data sits: {words}. A working set that fits "
        "a cache is read several times faster than one that does not."
    ]


def mlp_takeaways(run: Run) -> list[str]:
    """What this device's MLPs teach, in the order the page shows them."""
    width = regimes.smallest_resident_width(run)
    rows = regimes.overhead_rows(run, width) if width is not None else []
    compiled = compile_sentence(rows)
    items = [overhead_takeaway(run, rows), f"{text.device_label(run)}: {compiled}" if compiled else ""]
    items.append(cache_trap_takeaway(run))
    return [item for item in items if item]


def what_each_device_teaches(data: SiteData) -> list[str]:
    """The takeaway's items: each device's ceilings, then each device's MLPs."""
    items = [item for run in data.shown for item in ceilings_takeaways(run)]
    return items + [item for run in data.shown_for("mlp") for item in mlp_takeaways(run)]


def lesson(cpu_only: bool) -> str:
    """The takeaway's lesson; on a site of CPU runs only, it says what stands in for a CUDA graph."""
    words = (
        "A flat latency curve is either the memory regime (real: batching is nearly free) or the overhead regime (a "
        "false knee: the host is the bottleneck). Tell them apart by changing the width and by replaying a CUDA "
        "graph. Then time with weights that do not sit in cache, or your numbers describe the cache, not the memory "
        "your model will be read from in production."
    )
    if cpu_only:
        words += " On a CPU there are no CUDA graphs, and the overhead is the framework's per-op cost."
    return words
