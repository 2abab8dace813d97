"""The home page: the headline measurement and where every result comes from."""

from __future__ import annotations

from benchmarks.analysis import curves as c
from benchmarks.analysis.curves import Curve, SiteData
from benchmarks.analysis.datasheet import GPUS
from benchmarks.analysis.diagnosis import diagnose
from benchmarks.results import Run
from benchmarks.site import charts, text, verdicts
from benchmarks.site.charts import SITE_ROOT
from benchmarks.site.render import (
    Admonition,
    Page,
    Paragraph,
    Table,
    code,
    link,
    measured_figure,
    strong,
    tag,
    takeaway,
)

RUNS_HEADERS = ["device", "detail", "profile", "date", "commit", "complete", "covers", "charted here", "results file"]


def build(data: SiteData | None = None) -> Page:
    data = data or c.load_site_data()
    curve = c.headline_curve(data)
    return Page(
        {
            "headline": headline(data, curve),
            "runs": [runs_table(data)] if data.shown else [Paragraph("No results are committed yet.")],
            "takeaway": [closing()],
        },
        data,
        {"curve": curve},
    )


def headline(data: SiteData, curve: Curve | None) -> list:
    if curve is None:
        return [
            Admonition(
                "warning",
                "No results yet",
                [
                    Paragraph(
                        [
                            "No results file is committed under ",
                            code("benchmarks/results/"),
                            ", so this site has nothing measured to show. Run ",
                            code("nox -s bench docs"),
                            " on a machine with a GPU and commit the file it writes.",
                        ]
                    )
                ],
            )
        ]
    run = curve.run
    kind = text.kind_word(run)
    figure = measured_figure(
        charts.headline_chart(curve, f"Latency and throughput against batch: {curve.shape}, measured on a {kind}"),
        "home-headline",
        f"{curve.shape} on a {kind}",
        f"Two log-log panels for the {curve.shape}. Left: median latency per call with its interquartile band; "
        "right: rows per second. Solid lines are measured, dashed lines the roofline prediction from the run's own "
        "ceilings",
        [curve],
        findings=text.knee_verdict(curve).capitalize(),
    )
    parts = [figure, *headline_words(curve)]
    if not data.gpus:
        parts.append(cpu_notice(run))
    return parts


def headline_words(curve: Curve) -> list:
    first, last = curve.points[0], curve.points[-1]
    run = curve.run
    said = [
        Paragraph(
            [
                "On ",
                strong(text.device_label(run)),
                f", the {curve.shape} in {curve.dtype} ({text.MODE_WORDS.get(curve.mode, curve.mode)}; "
                f"{text.cache_words(curve)}) takes ",
                strong(text.fmt_time(first.median_s)),
                f" at batch {first.batch} and ",
                strong(text.fmt_time(last.median_s)),
                f" at batch {last.batch}: {text.sig(last.batch / first.batch, 3)}× the rows for "
                f"{text.sig(last.median_s / first.median_s, 3)}× the time.",
            ]
        ),
        Paragraph(
            f"The roofline of this run's own measured ceilings ({text.fmt_rate(curve.ceilings.flops_per_s, 'FLOP/s')} "
            f"and {text.fmt_rate(curve.ceilings.bytes_per_s, 'B/s')}) gives a {text.knee_verdict(curve)}."
            if curve.ceilings
            else "This run has no measured ceilings for this dtype, so it makes no prediction."
        ),
    ]
    diagnosis = diagnose(curve)
    why = [verdicts.point_sentence(diagnosis, first.batch), verdicts.knee_sentence(diagnosis)]
    said.append(Paragraph([part for w in why if w is not None for part in (w, " ")]))
    said.append(Paragraph(f"Chart data: {text.provenance(run)}."))
    return said


def cpu_notice(run: Run) -> Admonition:
    return Admonition(
        "warning",
        "These results come from a CPU",
        [
            Paragraph(
                [
                    "No GPU run is committed yet, so every measured chart on this site shows a CPU "
                    f"({text.device_label(run)}). A CPU has a roofline too, but its ridge point and overheads differ "
                    "from a GPU's, so do not read these numbers as GPU numbers. To produce GPU results, run ",
                    code("nox -s bench docs"),
                    " on a machine with an NVIDIA GPU and commit the file it writes under ",
                    code("benchmarks/results/"),
                    " (see ",
                    link("Reproduce", "reproduce/"),
                    "); this chart then switches to the GPU automatically.",
                ]
            )
        ],
    )


def runs_table(data: SiteData) -> Table:
    rows = []
    for run in data.shown:
        for each in [run, *data.others(run)]:
            rows.append(run_row(data, each))
    return Table(RUNS_HEADERS, rows)


def run_row(data: SiteData, run: Run) -> list:
    device = run.device
    if device["kind"] == "cuda" and device.get("l2_bytes"):
        detail = f"{device.get('sm_count') or '?'} SMs, {text.fmt_bytes(device['l2_bytes'])} L2"
    else:
        detail = f"{device['threads']} thread{'s' * (device['threads'] != 1)}"
    href = f"{SITE_ROOT}results/{device['slug']}/{run.id}.json"
    planned = run.doc["run"].get("workloads_planned") or sorted(run.workloads_measured)
    done = run.workloads_done
    covers = ", ".join(w if w in done else f"{w} (unfinished)" for w in planned)
    charted = data.charted(run)
    return [
        text.device_label(run),
        detail,
        run.doc["run"].get("profile", ""),
        text.run_date(run),
        (run.doc["run"].get("git_commit") or "unknown")[:7],
        "yes" if run.complete else f"no: {run.doc['run'].get('interrupted') or 'stopped early'}",
        covers or "nothing measured",
        ", ".join(charted) if charted else "no: a newer run measured the same",
        tag("a", f"{run.id}.json", href=href),
    ]


def closing() -> Admonition:
    return takeaway(
        [
            "Batching is free only while something other than arithmetic sets the time: reading the weights, or "
            "fixed per-call overhead. Find the knee of your own device with ",
            code("nox -s bench docs"),
            "; the ",
            link("Theory", "theory/"),
            f" page gives the datasheet ridge points of the {', '.join(g.name for g in GPUS)}, the ",
            link("Calculator", "calculator/"),
            " predicts any of them for your layer sizes, and the ",
            link("MLP", "mlp/"),
            " page compares every measured knee with its prediction.",
        ]
    )
