"""The page that checks the roofline against measurements others published: each published figure beside the
prediction for its configuration, the ratio, and what the gap means."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from benchmarks.analysis.published import roofline_check as pc
from benchmarks.analysis.published.calibration import Study, committed_study
from benchmarks.analysis.published.measurements_file import Measurement, RowModel, read_published
from benchmarks.analysis.published.roofline_check import KneeComparison, RooflineRowCheck
from benchmarks.analysis.roofline.forecast import (
    KINDS,
    ONE_GPU,
    TENSOR_PARALLEL,
    TERM_WORDS,
    TERMS,
    expected_by_source,
    percent,
)
from benchmarks.analysis.roofline.predict import RidgeCount
from benchmarks.analysis.serving.llm.engine_comparison import BELOW, forecast_against_engine
from benchmarks.contract.engine_check import EngineCheck, newest_engine_check
from benchmarks.gpus import BYTES_PER_ELEMENT, find_gpu
from benchmarks.site import charts, text
from benchmarks.site.charts.published import cross_validation_chart, published_chart
from benchmarks.site.render import Bullets, Details, Html, Page, Paragraph, Table, code, strong, tag

TABLE_HEADERS = ["published by", "configuration", "published", "ceiling", "published ÷ ceiling", "breaks"]
KNEE_HEADERS = ["published by", "configuration", "published bend", "ridge batch, float32", "ridge batch, float16",
                "published ÷ ridge batch"]  # fmt: skip
CV_HEADERS = ["figure", "kind of work", "GPU", "ceiling", "forecast", "published", "error", "in the fit"]
EXPECTED_HEADERS = ["kind of work", "model on", "figures", "median |error|", "90th percentile", "within ±30 %"]
SOURCE_HEADERS = ["source", "figures", "median |error|", "largest |error|", "within ±30 %"]
ACCURACY_HEADERS = ["kind of work", "figures", "forecast: median |error|", "90th percentile", "within ±30 %",
                    "ceiling reached: median (range)"]  # fmt: skip
PARAMETER_HEADERS = ["software and precision", "figures", "η memory", "η compute", "fixed per step", "fitted"]
SHORT = {
    "tensor-parallel": "tensor parallel",
    "int8-weights": "int8 weights",
    "fp8-mixed": "FP8",
    "latency-bound": "latency bound",
    "power-limited": "power limit",
}
DEPARTURES = {
    "tensor-parallel": "split over {gpus} GPUs by tensor parallelism: predicted with each GPU doing 1/{gpus} of the "
    "work, plus two ring all-reduces a layer over the GPU's NVLink",
    "data-parallel": "{gpus} GPUs, each with its own copy: predicted as {gpus} times one GPU",
    "int8-weights": "int8 weights: predicted in {dtype}, {size} bytes a weight, where the kernels read one",
    "fp8-mixed": "FP8 weights and KV cache: predicted with every element in one-byte float8 at the datasheet's dense "
    "FP8 rate",
    "int8-one-byte": "int8 weights and input: predicted with one byte an element at the {gpu} datasheet's dense FP8 "
    "rate, which the datasheet gives as its dense INT8 rate too",
    "fused-elementwise": "the engine fuses BatchNorm, ReLU and the residual adds into the convolutions: predicted "
    "kernel by kernel as deployed, each activation kept in the GPU's L2 while it fits",
    "latency-bound": "queries arrive at random and 99 % of them must finish within a latency bound (the Server "
    "scenario's rule)",
    "power-limited": "run under a power limit below the card's rating; the datasheet's rates are at full power",
    "variant-unstated": "the source does not say which variant of the GPU: predicted on the {gpu} datasheet, the "
    "faster variant, so that the prediction bounds either",
    "variant-inferred": "the GPU variant is inferred from the source: predicted on the {gpu} datasheet",
    "dtype-unstated": "the precision is not stated: predicted in {dtype}",
    "batch-unstated": "the batch size is not stated: predicted at {batch} per GPU",
    "batch-inferred": "the batch size is not in the files read: predicted at {batch} per GPU, the batch the "
    "submitter's harness configuration sets for this GPU and scenario in the round whose copy was read",
    "output-unstated": "the number of new tokens is not stated: predicted for {output}, the script's default",
}


def build(
    rows: Sequence[Measurement] | None = None, calibrated: Study | None = None, engine: EngineCheck | None = None
) -> Page:
    rows = read_published() if rows is None else list(rows)
    found = pc.checks(rows)
    calibrated = committed_study() if calibrated is None else calibrated
    share, cv = share_of_roofline_reached(found), cross_validation_numbers(calibrated)
    engine = engine if engine is not None else newest_engine_check()
    return Page(
        {
            "accuracy": accuracy_parts(calibrated, engine),
            "comparison": [comparison_figure(found), Paragraph(summary_words(found))],
            "table": [
                Details(
                    f"The table of all {len(found)} figures: source, configuration, published, predicted, "
                    "ratio and the assumptions each breaks",
                    [comparison_table(found)],
                )
            ],
            "details": details(found),
            "cross_validation": cross_validation_parts(calibrated),
            "knees": knee_parts(pc.knee_comparisons(rows)),
            "not_compared": not_compared(rows),
        },
        extra={
            "checks": found,
            "share_of_roofline_reached": share,
            "cross_validation": cv,
        },
        lesson=lesson(share, cv),
    )


# --------------------------------------------------------------------------- words


def gpu_words(model: RowModel) -> str:
    name = model.gpu.removeprefix("NVIDIA ")
    if model.gpus == 1:
        return name
    return f"{model.gpus} × {name} ({model.parallelism} parallel)"


def configuration(row: Measurement) -> str:
    m = row.model
    words = f"{row.configuration['model']} · {gpu_words(m)} · {m.dtype} · batch {m.batch}"
    if m.kind == "throughput":
        return words + " per GPU"
    if m.kind == "prefill":
        return words + f" · {m.input_tokens}-token prompt"
    if m.input_tokens is not None:
        return words + f" · {m.input_tokens} in, {m.output_tokens} out"
    return words


def compact(row: Measurement) -> str:
    """The configuration in a table cell: model, GPU(s), dtype, batch and lengths, e.g. '13B decoder · A100 SXM4
    40GB · fp16 · batch 1 · 512→10 tokens'."""
    m = row.model
    name = row.configuration["model"].split(":")[0].split(",")[0]
    gpu = m.gpu.removeprefix("NVIDIA ") if m.gpus == 1 else f"{m.gpus} × {m.gpu.removeprefix('NVIDIA ')}"
    dtype = "int8" if "int8-one-byte" in m.departures else charts.DTYPE_SHORT.get(m.dtype, m.dtype)
    words = f"{name} · {gpu}{mark(m, 'variant')} · {dtype}{mark(m, 'dtype')} · batch {m.batch}{mark(m, 'batch')}"
    if m.kind == "prefill":
        return words + f" · {m.input_tokens}-token prompt"
    if m.input_tokens is not None:
        return words + f" · {m.input_tokens}→{m.output_tokens} tokens"
    return words


def mark(model: RowModel, subject: str) -> str:
    """' assumed' where the source leaves `subject` (variant, dtype, batch) unstated, ' inferred' where the
    model infers it from the source; '' where the source states it."""
    if f"{subject}-unstated" in model.departures:
        return " assumed"
    return " inferred" if f"{subject}-inferred" in model.departures else ""


def ratio_cell(found: RooflineRowCheck) -> str:
    if found.ratio <= 1:
        return f"{found.ratio:.2f}"
    return f"{text.sig(found.ratio, 2)}: above the roofline in {found.row.model.dtype}"


def published_cell(found: RooflineRowCheck) -> str:
    """The figure as published and, when that is a time, as work per second."""
    said = as_published(found.row)
    if found.row.unit in ("ms", "ms/token"):
        said += f" = {per_second(found.published, found.per)}"
    return said


def as_published(row: Measurement) -> str:
    return f"{row.value:,} {row.unit}"


def per_second(value: float, per: str) -> str:
    return f"{text.sig(value, 3)} {per}/s"


def reading(found: RooflineRowCheck) -> str:
    """What the ratio means: the fraction of the roofline reached, or how far past it the figure is."""
    if found.ratio <= 1:
        return f"{found.ratio * 100:.0f} % of the roofline"
    return f"{text.sig(found.ratio, 2)}× the roofline: faster than the model allows"


def departure_words(found: RooflineRowCheck) -> list[str]:
    m = found.row.model
    said = []
    for name in m.departures:
        size = BYTES_PER_ELEMENT[m.dtype]
        words = DEPARTURES[name].format(
            gpus=m.gpus, gpu=m.gpu, dtype=m.dtype, size=size, batch=m.batch, output=m.output_tokens
        )
        if name == "fused-elementwise" and (unfused := pc.unfused_per_second(m)) is not None:
            words += (
                f"; with each of those passes counted as a trip of its own through memory the roofline gives "
                f"{per_second(unfused, found.per)}, and the published figure is "
                f"{text.sig(found.published / unfused, 2)}× that"
                + (": faster than that count allows" if found.published > unfused else "")
            )
        if name == "batch-unstated":
            words += f", where the weights are {text.sig(100 * pc.weight_share(m), 2)} % of the bytes of a call"
        said.append(words)
    return said


def how_words(found: RooflineRowCheck) -> str:
    """How the configuration was predicted, in a clause."""
    m, p = found.row.model, found.prediction
    if m.kind == "throughput":
        return f"{m.batch} images a call on each GPU"
    if m.kind == "gemm":
        return f"one matrix product of {m.batch} rows, {m.params['in_features']} in and {m.params['out_features']} out"
    if m.kind == "prefill":
        return f"a prefill of {m.batch} prompt(s) of {m.input_tokens} tokens"
    last = m.input_tokens + m.output_tokens
    if m.kind == "decode-step":
        steps = f"{m.output_tokens} decode steps of {m.batch} sequence(s)"
        return f"the mean of {steps} at contexts {m.input_tokens}–{last - 1}"
    share = text.sig(100 * p.prefill_s / p.seconds, 2)
    return (
        f"a prefill of {m.batch} prompt(s) of {m.input_tokens} tokens, then {m.output_tokens - 1} decode steps at "
        f"contexts {m.input_tokens}–{last - 2}; the prefill is {share} % of the predicted time"
    )


def bound_words(found: RooflineRowCheck) -> str:
    """How the predicted time splits between operations bound by memory and by compute (each operation under its
    own bound), or the one bound when it holds all of it."""
    p = found.prediction
    memory = p.memory_s / p.seconds
    if memory in (0.0, 1.0):
        return f"all of the predicted time is {p.bound}-bound"
    return (
        f"of the predicted time, {text.sig(100 * memory, 2)} % is in operations bound by memory and "
        f"{text.sig(100 * (1 - memory), 2)} % in operations bound by compute"
    )


def method_words(found: RooflineRowCheck) -> str:
    m = found.row.model
    gpu = find_gpu(m.gpu)
    rates = f"{text.fmt_rate(gpu.peak_flops[m.dtype], 'FLOP/s')} {m.dtype}, {text.fmt_rate(gpu.bandwidth, 'B/s')}"
    return (
        f"Predicted as {how_words(found)}, on the {m.gpu} datasheet ({rates}); {bound_words(found)}. Dimensions: "
        f"{m.params_source}."
    )


# --------------------------------------------------------------------------- parts


def comparison_figure(found: Sequence[RooflineRowCheck]):
    rows = [
        {
            "source": c.row.source.short,
            "id": c.row.id,
            "configuration": configuration(c.row),
            "predicted": c.predicted,
            "published": c.published,
            "per": c.per,
            "ratio": c.ratio,
            "status": c.row.status,
        }
        for c in found
    ]
    gpus = ", ".join(dict.fromkeys(c.row.model.gpu.removeprefix("NVIDIA ") for c in found))
    dtypes = ", ".join(dict.fromkeys(c.row.model.dtype for c in found))
    chart = published_chart(
        rows,
        "Published by others, not measured here: published against the ceiling",
        [
            f"ceiling from the datasheets of: {gpus} · {dtypes}",
            "modes: as each source ran them (engines, batching and parallelism in the table) · dashed: equal",
        ],
    )
    median, low, high = pc.ratio_summary(found)
    return charts.figure(
        chart,
        "published-against-predicted",
        "Published by others against the roofline's ceiling",
        f"Log-log scatter of {len(found)} figures published by others (none measured here), each against the "
        f"roofline's prediction for its configuration, both in work per second (tokens, requests, images or prompts); "
        f"the dashed line is where they are equal. Published ÷ ceiling has a median of {text.sig(median, 2)} and "
        f"runs from {text.sig(low, 2)} to {text.sig(high, 2)}",
        "Each point is one figure published by others against the roofline's prediction for its configuration, in "
        "work per second; below the dashed line the published system fell short of the roofline.",
    )


def _extreme(found: Sequence[RooflineRowCheck], value: float) -> str:
    match = next(c for c in found if c.ratio == value)
    return f"{text.sig(value, 2)} ({match.row.source.short}: {configuration(match.row)})"


def summary_words(found: Sequence[RooflineRowCheck]) -> list:
    median, low, high = pc.ratio_summary(found)
    sources = len({c.row.source.short for c in found})
    words: list = [
        f"{len(found)} figures from {sources} sources. ",
        strong(f"Published ÷ ceiling over all {len(found)}: median {text.sig(median, 2)}"),
        f", from {_extreme(found, low)} to {_extreme(found, high)}. ",
    ]
    clean = [c for c in found if not c.breaks]
    if clean:
        m, lo, hi = pc.ratio_summary(clean)
        above = sum(c.ratio > 1 for c in clean)
        words.append(
            f"Over the {len(clean)} whose configuration breaks none of the model's assumptions (no "
            f"{', '.join(SHORT[b] for b in sorted(pc.BREAKS))}) the median is {text.sig(m, 2)}, from "
            f"{text.sig(lo, 2)} to {text.sig(hi, 2)}: "
            + (
                "every one of them below the roofline, as a bound should be."
                if not above
                else f"{above} of them above it, which a bound should never be."
            )
            + " By source, since one table of many batch sizes weighs as much as that many figures: "
            + "; ".join(by_source(clean))
            + "."
        )
    return words


def by_source(found: Sequence[RooflineRowCheck]) -> list[str]:
    """'source low–high (n figures)' for each source, in the order of the file."""
    said = []
    for source in dict.fromkeys(c.row.source.short for c in found):
        ratios = [c.ratio for c in found if c.row.source.short == source]
        said.append(f"{source}: {text.sig_range(ratios)} ({len(ratios)} figure{'' if len(ratios) == 1 else 's'})")
    return said


def comparison_table(found: Sequence[RooflineRowCheck]) -> Table:
    rows = [
        [
            tag("a", c.row.source.short, href=c.row.source.url),
            compact(c.row),
            published_cell(c),
            per_second(c.predicted, c.per),
            ratio_cell(c),
            ", ".join(SHORT[b] for b in c.breaks) or "none",
        ]
        for c in found
    ]
    caption = "Published by others, not measured here, against the roofline's prediction for the same configuration"
    return Table(TABLE_HEADERS, rows, caption)


def row_parts(found: RooflineRowCheck) -> list:
    row = found.row
    source = row.source
    said = [
        strong(f"{row.metric}: {as_published(row)}"),
        f" ({configuration(row)}). ",
        tag("a", source.title, href=source.url),
        f", {source.author}, {source.locator}, {source.date}. ",
        tag("em", f"{row.status.capitalize()}: {row.note}."),
    ]
    facts = "; ".join(f"{name}: {value}" for name, value in row.configuration.items())
    return [
        Paragraph(said),
        Html(f"<blockquote>{tag('p', row.quote)}</blockquote>"),
        Paragraph(f"As the source states it: {facts}."),
        Paragraph(
            [
                method_words(found),
                f" Published {per_second(found.published, found.per)} against {per_second(found.predicted, found.per)}"
                f" predicted: {reading(found)}.",
            ]
        ),
        *([Bullets(departure_words(found))] if found.row.model.departures else []),
    ]


def details(found: Sequence[RooflineRowCheck]) -> list:
    by_source: dict[str, list[RooflineRowCheck]] = {}
    for c in found:
        by_source.setdefault(c.row.source.short, []).append(c)
    return [
        Details(
            f"{source}: {len(group)} figure(s), with quotes and what each gap means",
            [part for c in group for part in row_parts(c)],
            searched=False,  # the table above is searched; these quotes would add ~1.5 kB a figure to every page
        )
        for source, group in by_source.items()
    ]


def knee_cell(counts: Sequence[RidgeCount]) -> str:
    """The ridge batch under the stated count, and under the other bound of the bytes where it differs."""
    stated, *others = counts
    said = f"{text.ridge_count_words(stated, 'image')} ({stated.count})"
    for other in others:
        if text.ridge_count_words(other, "image") != text.ridge_count_words(stated, "image"):
            said += f"; {text.ridge_count_words(other, 'image')} ({other.count})"
    return said


def knee_parts(found: Sequence[KneeComparison]) -> list:
    if not found:
        return []
    rows = [
        [
            tag("a", k.row.source.short, href=k.row.source.url),
            f"{k.row.configuration['model']} · {k.row.model.gpu.removeprefix('NVIDIA ')}",
            f"≈ {k.row.value:,}",
            knee_cell(k.predicted["float32"]),
            knee_cell(k.predicted["float16"]),
            f"{text.sig(k.ratio, 2)} (against {k.row.model.dtype})" if k.ratio else "–",
        ]
        for k in found
    ]
    quotes = [
        [strong(f"{k.row.configuration['model']}: "), f"“{k.row.quote}” ", tag("em", f"{k.row.note}.")] for k in found
    ]
    caption = "Where a published curve bends, against the ridge batch under each count of the bytes"
    return [Table(KNEE_HEADERS, rows, caption), Bullets(quotes)]


def not_compared(rows: Sequence[Measurement]) -> list:
    items = [
        [
            tag("a", row.source.short, href=row.source.url),
            f", {row.configuration['model']} on {row.configuration['hardware']}: {as_published(row)} ({row.metric}). "
            f"Not compared: {row.not_compared}.",
        ]
        for row in rows
        if row.not_compared
    ]
    return [Bullets(items)] if items else []


def engine_row(check: EngineCheck | None) -> list | None:
    """The same forecast on this project's CPU: the committed real-engine check's step, forecast from the host's
    measured ceilings with the GPUs' fitted efficiencies, against the median time per output token vLLM measured at
    each Poisson load below capacity; None without a check or a forecast."""
    found = None if check is None else forecast_against_engine(check)
    if found is None:
        return None
    return [
        "decode, a real vLLM run on this CPU (not fitted)", f"{found.loads} loads", percent(found.median),
        percent(found.p90), percent(found.within_30), "–",
    ]  # fmt: skip


def accuracy_parts(study: Study, engine: EngineCheck | None = None) -> list:
    """The page's answer first: the forecast's leave-one-source-out error by kind of work, and how much of its
    ceiling each kind's published systems reached, over the figures the fit may use; then the same forecast against
    the real engine this project measured on its CPU, where a check is committed."""
    every = study.expected()
    if every is None:
        return [Paragraph("No published figure is committed, so the forecast's error cannot be checked.")]
    rows = []
    for kind in (*KINDS, None):
        found, reached = every if kind is None else study.expected(kind), study.ceiling_reached(kind)
        if found is None:
            continue
        rows.append([
            strong("every kind") if kind is None else kind, f"{found.figures}", percent(found.median),
            percent(found.p90), percent(found.within_30),
            f"{percent(statistics.median(reached))} ({percent(reached[0])}–{percent(reached[-1])})",
        ])  # fmt: skip
    lead = Paragraph([
        strong(f"The forecast misses a published figure by a median of {percent(every.median)}"),
        f" ({percent(every.p90)} at the 90th percentile; {percent(every.within_30)} of {every.figures} figures within "
        "±30 %), each forecast by the efficiencies fitted without its own source. The ceiling, the datasheet "
        "roofline, is an upper bound: how much of it the published systems reached is the last column.",
    ])  # fmt: skip
    caption = (
        "The forecast's error by kind of work, leave one source out, over the figures the fit may use; the ceiling "
        "reached is the published rate over the ceiling's (or the ceiling's time over the published one). GPUs, "
        "precisions and software as each source ran them, nothing measured by this project"
    )
    mine = engine_row(engine)
    if mine is not None:
        rows.append(mine)
        caption += (
            f"; except the last row, this project's own measurement: the committed real-engine check ({engine.id}), "
            "vLLM's CPU build on "
            f"{engine.doc['host']['name']}, its median time per output token at each Poisson load below "
            f"{percent(BELOW)} of capacity against the forecast from the host's measured one-thread ceilings with "
            "the GPU figures' efficiencies and fixed cost unchanged (the page Checked against a real engine)"
        )
    return [lead, Table(ACCURACY_HEADERS, rows, caption)]


def cross_validation_numbers(study: Study) -> dict[str, str]:
    """The first lines of the cross-validation: median and 90th-percentile |error|, over the figures the fit may
    use and over every figure, as the page states them."""
    fitted, every = study.expected(), study.expected(fitted_only=False)
    return {
        "figures": f"{every.figures}",
        "sources": f"{study.sources}",
        "fitted figures": f"{fitted.figures}",
        "median": percent(fitted.median),
        "p90": percent(fitted.p90),
        "within 30": percent(fitted.within_30),
        "median, every figure": percent(every.median),
        "p90, every figure": percent(every.p90),
        "within 30, every figure": percent(every.within_30),
        "parameters": f"{study.calibration.parameters}",
        "target met": "yes" if fitted.median <= 0.15 and fitted.within_30 >= 0.9 else "no",
    }


def scope_words(study: Study) -> list:
    """The same errors for a model on one GPU and for one split over several, where the calibration has both."""
    one, split = study.expected(scope=ONE_GPU), study.expected(scope=TENSOR_PARALLEL)
    if one is None or split is None:
        return []
    return [
        f"On one GPU ({one.figures} figures) the median is {percent(one.median)}, the 90th percentile "
        f"{percent(one.p90)}, and {percent(one.within_30)} are within ±30 %; for a model split over GPUs in tensor "
        f"parallel ({split.figures} figures), {percent(split.median)}, {percent(split.p90)} and "
        f"{percent(split.within_30)}. Each tool gives the error of its own case."
    ]


def _value(value: float, unit: str) -> str:
    return f"{text.sig(value, 3)} {unit}"


def cross_validation_rows(study: Study) -> list[dict]:
    return [
        {
            "id": o.figure.id,
            "kind": o.figure.kind,
            "source": o.figure.source,
            "ceiling_ratio": o.figure.ceiling / o.figure.published,
            "forecast_ratio": o.forecast / o.figure.published,
            "fitted": "fitted" if o.figure.fit else "not fitted",
            "error": o.error,
        }
        for o in study.outcomes
    ]


def cross_validation_parts(study: Study) -> list:
    """The first lines (median and p90), the chart, the expected error per kind, the fitted parameters, and every
    figure's ceiling, forecast without its source, published value and error."""
    n = cross_validation_numbers(study)
    met = "meets" if n["target met"] == "yes" else "does not meet"
    lead = Paragraph([
        strong(f"Leave one source out, median |error| {n['median']}, 90th percentile {n['p90']}"),
        f" over the {n['fitted figures']} figures the model describes ({n['within 30']} of them within ±30 %); over "
        f"all {n['figures']} figures from {n['sources']} sources, median {n['median, every figure']} and 90th "
        f"percentile {n['p90, every figure']} ({n['within 30, every figure']} within ±30 %). The target, a median "
        f"within 15 % and 90 % of the figures within ±30 %, this calibration {met}. Each figure is forecast by the "
        f"{n['parameters']} efficiencies fitted without any figure of its own source. ",
        *scope_words(study),
    ])  # fmt: skip
    chart = cross_validation_chart(
        cross_validation_rows(study),
        "The ceiling and the forecast against every published figure",
        [f"forecast: fitted without the figure's source; median |error| {n['median']}, p90 {n['p90']} (fitted "
         f"figures), {n['median, every figure']} and {n['p90, every figure']} (all)",
         "ceiling: the datasheet roofline · triangles: figures the fit leaves out (see the table)"],
    )  # fmt: skip
    figure = charts.figure(
        chart,
        "published-cross-validation",
        "Forecast and ceiling over each published figure, leave one source out",
        "A dot plot, one row per published figure sorted by the forecast's error: the ceiling's value and the "
        "forecast's value divided by the published value, on a log axis, with 1 marked and ±30 % shaded.",
    )
    expected_rows = [
        [e.kind, e.scope or "either", f"{e.figures}", percent(e.median), percent(e.p90), percent(e.within_30)]
        for e in study.expected_table()
    ]
    source_rows = [
        [source, f"{found.figures}", percent(found.median), percent(largest), percent(found.within_30)]
        for source, found, largest in expected_by_source([o for o in study.outcomes if o.figure.fit])
    ]
    c = study.calibration
    parameter_rows = [
        [name, f"{c.figures[name]}", f"{e.memory:.2f}", f"{e.compute:.2f}", text.fmt_time(e.fixed_s) if e.fixed_s
         else "0", ", ".join(c.fitted[name]) or "none (borrowed)"]
        for name, e in c.efficiencies.items()
    ]  # fmt: skip
    table_rows = [
        [code(o.figure.id), o.figure.kind, o.figure.gpu, _value(o.figure.ceiling, o.figure.unit),
         _value(o.forecast, o.figure.unit), _value(o.figure.published, o.figure.unit), f"{o.error * 100:+.0f} %",
         "yes" if o.figure.fit else o.figure.note]
        for o in study.outcomes
    ]  # fmt: skip
    terms = "; ".join(f"{t}: {TERM_WORDS[t]}" for t in TERMS)
    return [
        lead,
        figure,
        Table(EXPECTED_HEADERS, expected_rows, "The error to expect, by kind of work and whether the model runs on one "
              "GPU or is split over several (tensor parallel): what predict, serve, the calculator and the guide print "
              "beside each forecast, the row of their configuration (over the figures the fit may use)"),
        Table(SOURCE_HEADERS, source_rows, "The same errors by source, each forecast without its own source: a "
              "source's figures share its software, so the pooled median weighs a source by how many it published"),
        Table(PARAMETER_HEADERS, parameter_rows, f"The efficiencies, fitted on every figure ({terms})"),
        Details(f"Every figure's forecast, all {len(table_rows)}: the ceiling, the forecast fitted without its "
                "source, the published value and the error", [
            Table(CV_HEADERS, table_rows, "Every figure: the ceiling, the forecast fitted without its source, the "
                  "published value and the error, forecast ÷ published − 1"),
        ]),
    ]  # fmt: skip


def share_of_roofline_reached(found: Sequence[RooflineRowCheck]) -> dict[str, str]:
    """What the lesson states: how many figures keep to the roofline's assumptions and the share of it they reached
    (lowest, highest and median, in %), and the median ratio over all the figures."""
    clean = [c for c in found if not c.breaks] or list(found)
    median, low, high = pc.ratio_summary(clean)
    return {
        "figures kept": f"{len(clean)}",
        "lowest %": f"{low * 100:.0f}",
        "highest %": f"{high * 100:.0f}",
        "median %": f"{median * 100:.0f}",
        "figures": f"{len(found)}",
        "median ratio, all figures": text.sig(pc.ratio_summary(found)[0], 2),
    }


def lesson(share: dict[str, str], cv: dict[str, str]) -> str:
    """The takeaway's lesson, with `share_of_roofline_reached` and `cross_validation_numbers`."""
    return (
        f"The roofline is a ceiling, not a forecast: the {share['figures kept']} published figures that keep to its "
        f"assumptions reached <strong>{share['lowest %']}–{share['highest %']} % of it (median {share['median %']} %)"
        f"</strong>. Calibrated on {cv['figures']} published figures from {cv['sources']} sources with "
        f"{cv['parameters']} efficiencies, and checked leaving each source out, the forecast misses by a median of "
        f"<strong>{cv['median']}</strong> ({cv['p90']} at the 90th percentile) on the figures the model describes. "
        "Run <code>python -m benchmarks predict</code> for your own configuration: the forecast comes with the error "
        "of its kind of work, the ceiling beside it."
    )
