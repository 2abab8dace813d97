"""The home page's measured and computed parts: the answer on a GPU (a committed GPU run's measured curve and
what it measured, or until there is one the datasheet's prediction for an H100 and its figures), and the committed
runs each device's charts come from, and the takeaway's lesson. Its fixed prose is written in docs/index.py."""

from __future__ import annotations

from benchmarks.analysis.roofline.cited_figures import KERNEL_LAUNCH_S
from benchmarks.analysis.roofline.curves import Curve
from benchmarks.analysis.roofline.diagnosis import OPS_PER_LAYER, diagnose
from benchmarks.analysis.roofline.predict import overhead_ends, predict, regions, ridge_batch, ridge_counts
from benchmarks.contract.results import Run
from benchmarks.gpus import find_gpu
from benchmarks.site import charts, diagnosis_words, text
from benchmarks.site import data as site_data
from benchmarks.site.charts import SITE_ROOT
from benchmarks.site.charts.predicted import PredictedPanel, mark_label, predicted_chart
from benchmarks.site.data import SiteData
from benchmarks.site.forecasts import band_chart_line, efficiency_words, error_words, forecast_rows
from benchmarks.site.render import (
    Admonition,
    Bullets,
    Details,
    Page,
    Paragraph,
    Table,
    autolink,
    code,
    measured_figure,
    strong,
    tag,
)
from benchmarks.workloads import MLP
from snippets.costs import mlp_cost

RUNS_HEADERS = ["device", "detail", "profile", "date", "commit", "complete", "covers", "charted here", "results file"]
ANSWER_GPU = find_gpu("NVIDIA H100 SXM")
ANSWER_DTYPE = "bfloat16"
ANSWER_BATCHES = [2**i for i in range(15)]  # 1 … 16,384 rows
LARGE = {"width": 4096, "depth": 8}  # weights far larger than the L2: every call reads memory
SMALL = {"width": 1024, "depth": 8}  # the article's MLP


LESSON = (  # the takeaway's lesson, above the items the page measured
    "Batching is free only while something other than arithmetic sets the time: reading the weights, or fixed "
    'per-call overhead. The <a href="guide/">guide</a> turns that into a batch size; the '
    '<a href="theory/">Theory</a> page derives the ridge batch, the <a href="calculator/">Calculator</a> predicts '
    'it for your layer sizes, and the <a href="mlp/">MLP</a> page compares every measured knee with its prediction.'
)


def build(data: SiteData | None = None) -> Page:
    data = data or site_data.load_site_data()
    curve = committed_gpu_curve(data)
    return Page(
        {
            "gpu_curve_measured_or_predicted": measured_answer_parts(curve) if curve else predicted_answer_parts(),
            "committed_runs_by_device": committed_runs_parts(data),
        },
        data,
        {"curve": curve},
        lesson=LESSON,
    )


def committed_gpu_curve(data: SiteData) -> Curve | None:
    """The headline curve of a committed GPU run, if there is one."""
    curve = site_data.headline_curve(data)
    return curve if curve is not None and curve.run.device["kind"] == "cuda" else None


# --------------------------------------------------------------------------- until a GPU run is committed


def predicted_h100_curves():
    """The two predicted curves of the answer: a large MLP on the roofline alone, and the article's MLP called
    eagerly, each kernel paying the launch cost others measured."""
    ceilings = ANSWER_GPU.ceilings(ANSWER_DTYPE)
    launches = OPS_PER_LAYER * SMALL["depth"]
    large = predict("mlp", LARGE, ceilings, ANSWER_DTYPE, ANSWER_BATCHES)
    small = predict("mlp", SMALL, ceilings, ANSWER_DTYPE, ANSWER_BATCHES, fixed_s=launches * KERNEL_LAUNCH_S.value)
    return ceilings, launches, large, small


def predicted_answer_parts() -> list:
    """The H100 prediction's chart and the paragraphs that state its figures and cite their sources."""
    ceilings, launches, large, small = predicted_h100_curves()
    ridge, free_until = ridge_batch(large, ceilings), overhead_ends(small)
    ridge_marks = [(ridge, mark_label("ridge batch", ridge))] if ridge else []
    eager_marks = [(free_until, mark_label("launches overtaken", free_until))] if free_until else []
    panels = [
        PredictedPanel(f"{MLP.shape(LARGE)}, roofline alone", large, regions(large), ridge_marks,
                       forecast_rows(large, "mlp", LARGE, ANSWER_DTYPE)),
        PredictedPanel(f"{MLP.shape(SMALL)}, eager ({launches} launches)", small, regions(small), eager_marks,
                       forecast_rows(small, "mlp", SMALL, ANSWER_DTYPE)),
    ]  # fmt: skip
    rates = f"{text.fmt_rate(ceilings.flops_per_s, 'FLOP/s')} dense bf16, {text.fmt_rate(ceilings.bytes_per_s, 'B/s')}"
    launch = launch_cost_words()
    chart = predicted_chart(
        panels,
        f"Predicted from the datasheet, not measured: {ANSWER_GPU.name}, bf16",
        [
            f"{rates} (datasheet) · eager launches at {launch} each (measured by others)",
            f"{band_chart_line('mlp', LARGE)}; ceiling dashed",
        ],
    )
    figure = charts.figure(
        chart,
        "home-predicted",
        f"Predicted for an {ANSWER_GPU.name} in bf16, not measured",
        f"Two log-log panels of predicted latency per call against batch size, shaded by what bounds it, the "
        "datasheet ceiling dashed and the forecast solid within the span of its median error. Left: "
        f"{MLP.shape(LARGE)} from the datasheet's roofline alone: flat while reading the weights takes longer than "
        f"the arithmetic, then growing with the batch past the ridge batch ≈ {text.fmt_batch(ridge)}. Right: the "
        f"article's {MLP.shape(SMALL)} called eagerly, its {launches} kernel launches costing more than its weight "
        "read until the arithmetic overtakes them",
        "Predicted latency per call against batch, shaded by what bounds it, ceiling dashed and forecast solid: a "
        "large MLP on the roofline alone (left) and the article's MLP called eagerly (right).",
    )
    return [figure, *prediction_paragraphs(ceilings, launches, large, small)]


def launch_cost_words() -> str:
    """The launch cost of an empty kernel that others measured, in µs."""
    return f"{KERNEL_LAUNCH_S.value * 1e6:g} µs"


def published_band_words(name: str, params: dict | None = None) -> str:
    """The forecast beside a ceiling of workload `name`: its efficiencies and the error to expect."""
    return f"{efficiency_words(name, 'bfloat16')}; {error_words(name, params or {})}"


def launches_overtaken_at(fixed_s: float, cost, ceilings) -> float:
    """The batch where a call's roofline, max(FLOPs/F, bytes/BW) with (FLOPs, bytes) = cost(batch) affine in the
    batch, reaches a fixed cost per call: where the launches stop setting the time."""
    (f1, m1), (f2, m2) = cost(1), cost(2)
    terms = [(f1 - (f2 - f1), f2 - f1, ceilings.flops_per_s), (m1 - (m2 - m1), m2 - m1, ceilings.bytes_per_s)]
    return min((fixed_s * rate - start) / slope for start, slope, rate in terms if slope > 0)


def eager_flat_range(ceilings, launches: int) -> tuple[float, float]:
    """Where the eager MLP's launches stop setting its time, under the two counts of its ReLUs' bytes: each ReLU
    a pass of its own through memory (it reads and writes the layer's output: the earlier crossing) or fused
    into the matmul (no bytes of its own: the later one), at the launch cost others measured for an empty kernel."""
    fixed, size = launches * KERNEL_LAUNCH_S.value, 2
    w, depth = SMALL["width"], SMALL["depth"]

    def unfused(batch):
        flops, moved = mlp_cost(batch, w, depth, size)
        return flops, moved + depth * 2 * batch * w * size

    return (
        launches_overtaken_at(fixed, unfused, ceilings),
        launches_overtaken_at(fixed, lambda b: mlp_cost(b, w, depth, size), ceilings),
    )


def prediction_paragraphs(ceilings, launches: int, large, small) -> list:
    """The prediction's figures: the large MLP's weight read and ridge batch, the eager MLP's launches and where
    they stop setting its time, and the sources of both."""
    stated, cached = ridge_counts("mlp", LARGE, ceilings, ANSWER_DTYPE)
    free_until = overhead_ends(small)
    flat, last = large[0].seconds, large[-1]
    said = [
        Paragraph(
            [
                strong("A prediction, not a measurement: "),
                f"the {ANSWER_GPU.name}'s datasheet gives {text.fmt_rate(ceilings.flops_per_s, 'FLOP/s')} of dense "
                f"bf16 arithmetic and {text.fmt_rate(ceilings.bytes_per_s, 'B/s')} of memory bandwidth. An "
                f"{MLP.shape(LARGE)} in bf16 must read its {text.fmt_bytes(MLP.weight_bytes(LARGE, 2))} of weights "
                f"once per call, which takes {text.fmt_time(flat)} whatever the batch; the arithmetic takes longer "
                "only past the ",
                strong(f"ridge batch ≈ {text.fmt_batch(stated.batch)}"),
                f" with {stated.count}, as the harness counts them (≈ {text.fmt_batch(cached.batch)} with "
                f"{cached.count}, the other bound; F/BW = {text.fmt_batch(ANSWER_GPU.ridge_batch(ANSWER_DTYPE))} for "
                "the weights alone: each row's activations add bytes and push it out), and from there the time grows "
                f"in proportion to the batch ({text.fmt_time(last.seconds)} at {last.batch:,} rows). That is the "
                "ceiling; the forecast beside it divides each part by what published systems reach: "
                f"{published_band_words('mlp')}.",
            ]
        )
    ]
    if free_until:
        early, late = eager_flat_range(ceilings, launches)
        said.append(
            Paragraph(
                f"Called eagerly, the article's {MLP.shape(SMALL)} launches {launches} kernels: a matmul and a ReLU "
                f"for each of its {SMALL['depth']} layers. At {launch_cost_words()} each, the floor of an empty "
                f"kernel's launch as measured by others (PyTorch's own cost per operation is higher), that is at least "
                f"{text.fmt_time(small[0].fixed_s)}, against {text.fmt_time(small[0].memory_s)} to read its weights, "
                f"so its curve stays flat until somewhere from about {text.fmt_batch(early)} rows (each ReLU reading "
                f"and writing its layer's output as a kernel of its own) to {text.fmt_batch(late)} (the ReLUs' bytes "
                "counted as fused, as the chart draws it); a larger cost per launch moves both out. Flat because of "
                "the launches, not the memory: that flat stretch says nothing about the hardware, and capturing the "
                "calls in a CUDA graph removes most of it."
            )
        )
    sources = ["Launch cost: ", autolink(KERNEL_LAUNCH_S.source), ". Datasheet: ", autolink(ANSWER_GPU.source), "."]
    return [*said, Paragraph(sources)]


# --------------------------------------------------------------------------- once a GPU run is committed


def measured_answer_parts(curve: Curve) -> list:
    """The measured curve's chart and the paragraphs that state what it measured and why."""
    figure = measured_figure(
        charts.headline_chart(curve, f"Latency and throughput against batch: {curve.shape}, measured on a GPU"),
        "home-headline",
        f"{curve.shape} on a GPU",
        f"Latency per call (left, with its quartile band) and rows per second (right) of the {curve.shape} against "
        "batch, log-log, measured solid and dashed the roofline of the run's own ceilings",
        [curve],
        findings=text.knee_verdict(curve).capitalize(),
    )
    return [figure, *measured_curve_paragraphs(curve)]


def measured_curve_paragraphs(curve: Curve) -> list:
    """What the curve measured at its two ends, the roofline of the run's own ceilings, the diagnosis's reasons,
    and the run the chart comes from."""
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
    why = [diagnosis_words.point_sentence(diagnosis, first.batch), diagnosis_words.knee_sentence(diagnosis)]
    said.append(Paragraph([part for w in why if w is not None for part in (w, " ")]))
    said.append(Paragraph(f"Chart data: {text.provenance(run)}."))
    return said


# --------------------------------------------------------------------------- the runs


def committed_runs_parts(data: SiteData) -> list:
    """One line per device saying which runs its charts come from, and every committed run in a folded table; or,
    with no results committed, how to get them."""
    if not data.shown:
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
    rows = every_run_table(data)
    return [
        Bullets([device_runs_line(data, run) for run in data.shown]),
        Details(f"Every committed run ({len(rows.rows)})", [rows]),
    ]


def device_runs_line(data: SiteData, shown: Run) -> list:
    """One device's runs in one line: how many, over which dates, and which of them the site charts."""
    runs = sorted([shown, *data.others(shown)], key=lambda r: r.started)
    dates = sorted({text.run_date(r) for r in runs})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    charted = [(r, data.charted(r)) for r in reversed(runs) if data.charted(r)]
    sources = [
        [tag("a", r.id, href=f"{SITE_ROOT}results/{r.device['slug']}/{r.id}.json"), f" ({', '.join(w)})"]
        for r, w in charted
    ]
    said = [strong(text.device_label(shown)), f": {len(runs)} run{'s' * (len(runs) != 1)}, {when}; "]
    if not sources:
        return [*said, "none charted."]
    return [*said, "charted from ", *_joined(sources), "."]


def every_run_table(data: SiteData) -> Table:
    """Every committed run, device by device, with what it covers and what the site charts from it."""
    rows = []
    for run in data.shown:
        for each in [run, *data.others(run)]:
            rows.append(run_row(data, each))
    return Table(RUNS_HEADERS, rows)


def run_row(data: SiteData, run: Run) -> list:
    """One row of the table of every committed run."""
    device = run.device
    if device["kind"] == "cuda" and device.get("l2_bytes"):
        detail = f"{device.get('sm_count') or '?'} SMs, {text.fmt_bytes(device['l2_bytes'])} L2"
    else:
        detail = f"{device['threads']} thread{'s' * (device['threads'] != 1)}"
    href = f"{SITE_ROOT}results/{device['slug']}/{run.id}.json"
    planned = run.doc["run"].get("workloads_planned") or sorted(run.workloads_measured)
    done = run.workloads_done
    covers = _joined([code(w) if w in done else [code(w), " (unfinished)"] for w in planned])
    charted = data.charted(run)
    return [
        text.device_label(run),
        detail,
        run.doc["run"].get("profile", ""),
        tag("time", text.run_day(run), datetime=text.run_date(run)),
        (run.doc["run"].get("git_commit") or "unknown")[:7],
        "yes" if run.complete else f"no: {run.doc['run'].get('interrupted') or 'stopped early'}",
        covers or "nothing measured",
        _joined([code(w) for w in charted]) if charted else "no: a newer run measured the same",
        tag("a", code(f"{run.id}.json"), href=href),
    ]


def _joined(items: list) -> list:
    """Inline items with ', ' between them."""
    return [part for i, item in enumerate(items) for part in ([", "] if i else []) + [item]]
