"""The mixture-of-experts page: MoE latency beside its dense twin, the cost of routing skew,
latency against the busiest expert's load, and what expert choice drops."""

from __future__ import annotations

from benchmarks.analysis.roofline import curves as c
from benchmarks.analysis.roofline import moe
from benchmarks.analysis.roofline.curves import Curve
from benchmarks.analysis.roofline.moe import ExpertLoad, KneeShift, SkewCell, SkewTable
from benchmarks.contract.results import Run
from benchmarks.site import charts, text
from benchmarks.site import data as site_data
from benchmarks.site.data import SiteData
from benchmarks.site.render import (
    DeviceSection,
    Heading,
    Page,
    Paragraph,
    Table,
    device_sections,
    measured_figure,
    strong,
)

CPU_NOTE = "A CPU runs one expert after another on the same cores."


LESSON = (  # the takeaway's lesson, above the items the page measured
    "An MoE layer reads the weights of every expert its batch touches, so at small batch it costs more than its dense "
    "twin, and it stays memory-bound to a batch about E/k times larger. Whether routing skew costs time depends on how "
    "the experts run: measure your own dispatch, and look at the busiest expert's rows, not the average."
)


def build(data: SiteData | None = None) -> Page:
    data = data or site_data.load_site_data()
    found = knees_and_skew_costs(data)
    return Page(
        {
            "curves": device_sections(data, device_section, workloads=("moe",)),
            "no_moe_measurement": [] if found else [Paragraph("No MoE measurement is committed yet.")],
        },
        data,
        takeaway_items=found,
        lesson=LESSON,
    )


def measured_curves(run: Run) -> dict[tuple, list[Curve]]:
    """(dtype, mode, cache, experts, top_k) -> the run's MoE curves of at least two points."""
    found = [curve for curve in c.curves(run, "moe") if len(curve.points) >= 2]
    return {
        (*key, *shape): shaped
        for key, group in c.group_by(found, "dtype", "mode", "cache").items()
        for shape, shaped in moe.by_shape(group).items()
    }


def device_section(run: Run) -> DeviceSection:
    records = moe.moe_records(run)
    note = CPU_NOTE if text.kind_word(run) == "CPU" else ""
    if not records:
        return DeviceSection(run, [Paragraph("This run has no MoE measurement.")], note)
    body = [
        *[part for key, shaped in measured_curves(run).items() for part in latency_parts(run, key, shaped)],
        *[part for table in moe.skew_tables(records) for part in skew_parts(run, table)],
        *load_figure(run, records),
        *dropped(records),
    ]
    return DeviceSection(run, body, note, dtypes=sorted({r["dtype"] for r in records}))


def latency_parts(run: Run, key: tuple, shaped: list[Curve]) -> list:
    dtype, mode, cache, experts, top_k = key
    findings = "; ".join(f"{curve.label}: {text.knee_verdict(curve)}" for curve in shaped)
    return [
        Heading(f"E={experts}, k={top_k}: {dtype}, {mode}, cache {cache}"),
        measured_figure(
            charts.latency_chart(shaped, f"MoE layer against its dense twin: E={experts}, top-{top_k}"),
            f"moe-{run.device['slug']}-e{experts}-k{top_k}-{dtype}-{mode}-{cache}-latency",
            f"MoE latency against batch (E={experts}, k={top_k}, {dtype}, {mode})",
            f"Log-log chart of median latency per call against batch size for an MoE layer with {experts} experts "
            f"and top-{top_k} routing at several routing skews, expert choice, and the dense FFN with the same "
            "active parameters, with the roofline prediction dashed",
            shaped,
            findings=findings,
        ),
    ]


def skew_words(cell: SkewCell | None) -> str:
    if cell is None:
        return "–"
    ratio = f" ({text.sig(cell.ratio, 3)}×)" if cell.ratio is not None else ""
    return f"{text.fmt_time(cell.median_s)}{ratio}; busiest expert {cell.max_load} rows, {cell.touched} experts"


def skew_parts(run: Run, table: SkewTable) -> list:
    headers = ["batch", *(f"skew {s:g}" + (" (uniform)" if s == 0 else "") for s in table.skews)]
    rows = [[str(batch), *(skew_words(row.get(s)) for s in table.skews)] for batch, row in table.cells.items()]
    caption = (
        f"Token choice, E={table.experts}, k={table.top_k}, {table.dtype}, {table.mode}, on {text.device_label(run)}"
    )
    return [Heading(f"The cost of skew, E={table.experts}, k={table.top_k}"), Table(headers, rows, caption)]


def load_row(point: ExpertLoad) -> dict:
    return {
        "series": f"E={point.experts} k={point.top_k} skew {point.skew:g}",
        "batch": point.batch,
        "max_load": point.max_load,
        "ms": point.median_s * 1e3,
    }


def load_figure(run: Run, records: list[dict]) -> list:
    points = moe.load_points(records)
    if not points:
        return []
    rows = [load_row(point) for point in points]
    first = records[0]
    subtitle = [
        f"{text.device_label(run)} · {first['dtype']} · {first['mode']} · cache: {first['cache']}",
    ]
    return [
        measured_figure(
            charts.load_chart(rows, "Latency against the busiest expert's rows (token choice)", subtitle),
            f"moe-{run.device['slug']}-load",
            "Latency against the busiest expert's load",
            "Log-log scatter of median latency per call against the number of rows routed to the busiest expert, "
            "one point per batch size and routing skew, token choice",
            run=run,
        )
    ]


def dropped(records: list[dict]) -> list:
    found = moe.dropped_tokens(records)
    if not found:
        return []
    counts = ", ".join(f"{d} of {b}" for b, d in found)
    return [
        Paragraph(
            [
                strong("What expert choice drops."),
                f" Tokens that no expert took (their output is zero), per batch size: {counts}.",
            ]
        )
    ]


def knee_line(run: Run, shift: KneeShift) -> str:
    return (
        f"{text.device_label(run)}, E={shift.experts}, k={shift.top_k} ({shift.mode}): measured knee "
        f"{text.fmt_batch(shift.uniform_knee)} (uniform token choice) against {text.fmt_batch(shift.dense_knee)} "
        f"(dense), {text.sig(shift.moved, 2)}× for an expected E/k = {shift.expected:g}×."
    )


def skew_line(run: Run, table: SkewTable) -> str | None:
    contrast = table.largest_batch_contrast()
    if contrast is None:
        return None
    batch, skew, skewed, uniform = contrast
    return (
        f"{text.device_label(run)}, E={table.experts}, k={table.top_k}: at batch {batch}, skew {skew:g} takes "
        f"{text.sig(skewed.median_s / uniform.median_s, 3)}× the time of uniform routing while its busiest expert "
        f"gets {skewed.max_load} rows against {uniform.max_load}."
    )


def run_lines(run: Run) -> list[str]:
    records = moe.moe_records(run)
    if not records:
        return []
    shifts = [moe.knee_shift(shaped) for shaped in measured_curves(run).values()]
    skews = [skew_line(run, table) for table in moe.skew_tables(records)]
    return [knee_line(run, s) for s in shifts if s] + [line for line in skews if line]


def knees_and_skew_costs(data: SiteData) -> list[str]:
    """The takeaway's items: every device's knee shifts against its dense twin, then the cost of skew."""
    return [line for run in data.shown_for("moe") for line in run_lines(run)]
