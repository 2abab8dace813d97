"""The MLP page: latency and throughput against batch for every measured width, and the knees."""

from __future__ import annotations

from benchmarks.analysis.roofline import curves as c
from benchmarks.analysis.roofline import knees
from benchmarks.analysis.roofline.curves import Curve
from benchmarks.analysis.roofline.diagnosis import Diagnosis, diagnose
from benchmarks.contract.results import Run
from benchmarks.site import charts, diagnosis_words, text
from benchmarks.site import data as site_data
from benchmarks.site.data import SiteData
from benchmarks.site.model_words import not_measured_parts
from benchmarks.site.render import (
    Bullets,
    DeviceSection,
    Heading,
    Page,
    Paragraph,
    SourceBox,
    Table,
    device_sections,
    measured_figure,
)

KNEE_HEADERS = [
    "curve (dtype · mode · cache)",
    "ridge batch, run's ceilings",
    "rates reached: streaming · matmul",
    "ridge batch, rates reached",
    "measured knee (log-log slope below → above)",
    "measured ÷ ridge batch at rates reached",
]


LESSON = (  # the takeaway's lesson, above the items the page measured
    "The flat part of each curve is where a call costs the same whatever the batch; the measured knee is where that "
    "stops. A measured knee far past the ridge batch of the device's ceilings means that the small-batch kernels fall "
    "short of those ceilings, or that a fixed per-call cost hides the flat part: the ridge batch at the rates the "
    "kernels reached, and the diagnosis under each table, say which, and name their evidence."
)


def build(data: SiteData | None = None) -> Page:
    data = data or site_data.load_site_data()
    return Page(
        {
            "curves": device_sections(data, lambda run: device_section(data, run), workloads=("mlp",)),
            "code": [SourceBox("snippets/mlp.py")],
        },
        data,
        {"curve": site_data.headline_curve(data)},
        lesson=LESSON,
    )


def device_section(data: SiteData, run: Run) -> DeviceSection:
    found = [curve for curve in c.curves(run, "mlp") if len(curve.points) >= 2]
    note = ""
    if run.device["kind"] != "cuda":
        note = "There is no CUDA graph on a CPU, so only eager calls are timed."
    body = [*curve_figures(run, found), *mode_figures(run, found), *knee_table(run, found), *not_measured_parts(found)]
    if not found:
        body = [Paragraph("This run has no measured MLP curve.")]
    return DeviceSection(run, body, note, older=len(data.others(run)))


def curve_figures(run: Run, found: list[Curve]) -> list:
    parts = []
    slug = run.device["slug"]
    for (dtype, mode, cache), group in c.group_by(found, "dtype", "mode", "cache").items():
        key = f"mlp-{slug}-{dtype}-{mode}-{cache}"
        where = f"{text.describe_curves(group)} ({text.cache_words(group[0])})"
        findings = "; ".join(f"{curve.label}: {text.knee_verdict(curve)}" for curve in group)
        depth = group[0].params.get("depth")
        parts += [
            Heading(f"{dtype}, {mode}, cache {cache}"),
            measured_figure(
                charts.latency_chart(group, f"Latency against batch: {depth}-layer MLP"),
                f"{key}-latency",
                f"Latency against batch ({dtype}, {mode})",
                "Log-log chart of median latency per call against batch size for each width, with the roofline "
                "prediction dashed",
                group,
                where=where,
                findings=findings,
            ),
            measured_figure(
                charts.throughput_chart(group, "Throughput against batch"),
                f"{key}-throughput",
                f"Throughput against batch ({dtype}, {mode})",
                "Log-log chart of rows per second (batch ÷ median latency) against batch size for each width, "
                "measured against the roofline prediction",
                group,
                findings="Throughput keeps rising while latency is flat and levels off past the knee",
            ),
        ]
    return parts


def mode_figures(run: Run, found: list[Curve]) -> list:
    parts = []
    for (dtype, cache), group in c.group_by(found, "dtype", "cache").items():
        modes = list(dict.fromkeys(curve.mode for curve in group))
        if len(modes) < 2:
            continue
        against = " against ".join(modes)
        parts += [
            Heading(f"Execution modes, {dtype}: {against}"),
            measured_figure(
                charts.mode_chart(group, f"{against.capitalize()}: {dtype}"),
                f"mlp-{run.device['slug']}-{dtype}-{cache}-modes",
                f"Execution modes ({dtype}): {against}",
                "One log-log panel per width: median latency of each execution mode against batch size, with the "
                "roofline dashed grey",
                group,
                findings=mode_ratios(group),
            ),
        ]
    return parts


def mode_ratios(group: list[Curve]) -> str:
    """'width 64: compile 1.10× the eager time at batch 1' for each width measured in several modes."""
    said = []
    for (label,), curves in c.group_by(group, "label").items():
        eager = next((curve for curve in curves if curve.mode == "eager"), None)
        if eager is None or not eager.points:
            continue
        first = eager.points[0]
        for other in curves:
            twin = next((p for p in other.points if p.batch == first.batch), None)
            if other is not eager and twin is not None:
                said.append(f"{label}: {other.mode} {twin.median_s / first.median_s:.2f}× the eager time at batch "
                            f"{first.batch}")  # fmt: skip
    return "; ".join(said)


def knee_table(run: Run, found: list[Curve]) -> list:
    diagnoses = [diagnose(curve) for curve in found]
    if not diagnoses:
        return []
    checks = [k for d in diagnoses if (k := knees.check(d)) is not None and k.measured]
    return [
        Heading(f"Measured knees against ridge batches ({text.kind_word(run)})"),
        Table(KNEE_HEADERS, [knee_row(d) for d in diagnoses]),
        *([Paragraph(claim(checks))] if checks else []),
        Heading("What bounds each curve", level=5),
        Bullets([bounds(d) for d in diagnoses]),
    ]


def knee_row(d: Diagnosis) -> list:
    curve, knee = d.curve, d.curve.knee
    measured = f"≈ {text.fmt_batch(knee.batch)} ({knee.slope_below:.2f} → {knee.slope_above:.2f})" if knee else "none"
    rates = (
        f"{text.fmt_rate(d.reached.bytes_per_s, 'B/s')} · {text.fmt_rate(d.reached.flops_per_s, 'FLOP/s')}"
        if d.reached
        else "–"
    )
    ratio = knee.batch / d.reached_knee if knee and d.reached_knee else None
    return [
        f"{curve.label} ({curve.dtype} · {curve.mode} · {curve.cache})",
        text.fmt_batch(curve.predicted_knee),
        rates,
        text.fmt_batch(d.reached_knee),
        measured,
        f"{text.sig(ratio, 2)}×" if ratio else "–",
    ]


def claim(checks: list[knees.KneeCheck]) -> str:
    """How many measured knees the ridge batch at the rates reached holds to, against the run's ceilings'."""
    held = [k for k in checks if k.holds]
    words = (
        f"At the rates the kernels reached, the ridge batch lies within ×{knees.TOLERANCE:g} of the measured knee on "
        f"{len(held)} of {len(checks)} curves"
    )
    if held:
        ratios = sorted(k.ratio for k in held)
        words += f" (measured knee ÷ ridge batch {text.sig(ratios[0], 2)}–{text.sig(ratios[-1], 2)})"
    peaks = sorted(k.measured / k.diagnosis.predicted_knee for k in checks if k.diagnosis.predicted_knee)
    if peaks:
        words += f"; from the run's ceilings it misses by ×{text.sig(peaks[0], 2)}–{text.sig(peaks[-1], 2)}"
    missed = len(checks) - len(held)
    explained = sum(k.serial_explains for k in checks)
    if missed:
        words += f". The {missed} other{'s' * (missed != 1)}" + (
            " are explained below by a fixed cost that adds to the arithmetic"
            if explained == missed
            else f": {explained} explained below by a fixed cost that adds to the arithmetic"
        )
    return words + "."


def bounds(d: Diagnosis) -> list:
    """'width 1024, float32, eager, cache rotated: memory-bound at batches 1–4 …; At batch 1 the call …'"""
    curve = d.curve
    words: list = [
        f"{curve.label}, {curve.dtype}, {curve.mode}, cache {curve.cache}: ",
        diagnosis_words.curve_summary(d),
        ". ",
    ]
    said = [diagnosis_words.point_sentence(d, curve.batches[0]), diagnosis_words.knee_sentence(d)]
    check = knees.check(d)
    if check is not None:
        said.append(diagnosis_words.serial_sentence(check))
    return [*words, *[part for sentence in said if sentence is not None for part in (sentence, " ")]]
