"""The batch-size guide: the site's advice as steps, each number computed (datasheet, a cited model
configuration, or this site's measurements, and labelled as which)."""

from __future__ import annotations

from dataclasses import asdict

from benchmarks.analysis.roofline.guide import kv_budget, weight_only_ridge_batch
from benchmarks.analysis.roofline.predict import predict
from benchmarks.analysis.roofline.tile_steps import tiles_and_waves
from benchmarks.gpus import GPU, find_gpu
from benchmarks.llm_models import LLAMA_3_8B, model_weight_bytes
from benchmarks.site import charts, text
from benchmarks.site import data as site_data
from benchmarks.site.charts.guide import pick_chart
from benchmarks.site.data import SiteData
from benchmarks.site.forecasts import efficiency_words, error_words, forecast_s
from benchmarks.site.render import Page, Paragraph, SourceBox, Table, autolink, strong
from benchmarks.site.tables import ridge_table
from snippets.choose import FLAT_SHARE, choose, largest_within, throughput_flattens

H100 = find_gpu("NVIDIA H100 SXM")
EXAMPLE_BUDGET_S = 0.010  # a latency budget for the worked example
CONTEXTS = tuple(c for c in (2048, 4096, 8192, 32768) if c <= LLAMA_3_8B.max_context)  # within its context
WEIGHT_BITS = (16, 8, 4)
TILE = (128, 128)  # an example tile: batch rows × output columns
OUT_FEATURES = 4096
WAVE_BATCHES = (512, 513)


LESSON = (  # the takeaway's lesson, above the items the page measured
    "Start from the ridge batch, find your regime, then measure: the batch to run is the smaller of the largest one "
    "within your latency budget and the one where throughput stops rising, rounded to the hardware's tiles and to "
    'the sizes you captured. For decode, the KV cache usually runs out first. <a href="../theory/">Theory</a> '
    "derives every step."
)


def build(data: SiteData | None = None) -> Page:
    data = data or site_data.load_site_data()
    return Page(
        {
            "ridges": [ridge_table()],
            "snippet": [
                SourceBox("snippets/sweep_your_model.py")
            ],  # folded: an 80-line file in the middle of a checklist
            "pick": pick_example(data),
            "waves": [waves_example()],
            "kv": kv_example(),
            "quantization": [quantization_table()],
        },
        data,
        lesson=LESSON,
    )


def pick_example(data: SiteData) -> list:
    """The rule applied to the headline curve of the first device the site shows (measured)."""
    curve = site_data.headline_curve(data)
    if curve is None:
        return [Paragraph("No measured curve is committed yet to try the rule on.")]
    points = [(p.batch, p.median_s) for p in curve.points]
    fitting, flat = largest_within(points, EXAMPLE_BUDGET_S), throughput_flattens(points)
    best = max(points, key=lambda point: point[0] / point[1])
    at = dict(points)
    budget = text.fmt_time(EXAMPLE_BUDGET_S)
    fits = (
        f"the largest batch within a {budget} budget is {fitting} ({text.fmt_time(at[fitting])} per call)"
        if fitting
        else f"no measured batch fits a {budget} budget"
    )
    picked = choose(points, EXAMPLE_BUDGET_S)
    where = f"{text.device_label(curve.run)}, {curve.dtype}, {curve.mode}, cache {curve.cache}"
    figure = charts.figure(
        pick_chart(
            points,
            EXAMPLE_BUDGET_S,
            FLAT_SHARE,
            picked,
            f"The rule on a measured curve: {curve.shape}",
            [f"measured on {where} · ringed: the batch the rule picks"],
        ),
        "guide-pick",
        f"Step 4 on a measured {curve.shape}",  # the device is named in the chart: a new run keeps the caption
        f"Two log panels against batch size for the {curve.shape} measured on {where}: latency per call with the "
        f"{budget} budget as a dashed rule, and rows per second with {FLAT_SHARE * 100:.0f} % of the best throughput "
        f"as a dashed rule; batch {picked}, the rule's pick, ringed in both",
        f"Latency with the {budget} budget (top) and throughput with {FLAT_SHARE * 100:.0f} % of its best (bottom); "
        f"ringed: batch {picked}, the rule's pick.",
    )
    return [
        figure,
        Paragraph(
            [
                strong("Measured example: "),
                f"the {curve.shape} in {curve.dtype} on {text.device_label(curve.run)} ({curve.mode} calls; "
                f"{text.provenance(curve.run)}). {fits.capitalize()}; throughput reaches "
                f"{FLAT_SHARE * 100:.0f} % of its best ({text.fmt_rate(best[0] / best[1], 'rows/s')} at batch "
                f"{best[0]}) from batch {flat} ({text.fmt_rate(flat / at[flat], 'rows/s')}). The rule picks ",
                strong(f"batch {choose(points, EXAMPLE_BUDGET_S)}"),
                ".",
            ]
        ),
    ]


def waves_example() -> Paragraph:
    tiles_sms = [tiles_and_waves(b, OUT_FEATURES, TILE, H100.sm_count) for b in WAVE_BATCHES]
    said = "; ".join(
        f"batch {b}: {tiles} tiles in {waves} wave{'s' * (waves != 1)}"
        for b, (tiles, waves) in zip(WAVE_BATCHES, tiles_sms)
    )
    tiles, more = tiles_sms[-1]
    idle = tiles - (more - 1) * H100.sm_count
    return Paragraph(
        f"For example, a layer with {OUT_FEATURES:,} outputs cut into {TILE[0]}×{TILE[1]} tiles on an {H100.name} "
        f"({H100.sm_count} SMs, datasheet): {said}. One row more than {WAVE_BATCHES[0]} costs a whole second wave, "
        f"in which {idle} tiles keep {idle} of the {H100.sm_count} SMs busy."
    )


def kv_example() -> list:
    weights = model_weight_bytes(LLAMA_3_8B, 2)
    budgets = [kv_budget(LLAMA_3_8B, H100, context, 2) for context in CONTEXTS]
    per_token = budgets[0].kv_bytes_per_token
    rows = [
        [f"{context:,}", text.fmt_bytes(b.kv_bytes_per_sequence), f"{b.sequences:,}"]
        for context, b in zip(CONTEXTS, budgets)
    ]
    return [
        Paragraph(
            [
                strong("Worked example: "),
                f"{LLAMA_3_8B.name} in bf16 on an {H100.name} ({memory_words(H100)}). Its "
                f"weights take {text.fmt_bytes(weights)}, leaving {text.fmt_bytes(budgets[0].free_bytes)}. Each "
                f"cached token holds K and V in each of {LLAMA_3_8B.config.layers} layers for "
                f"{LLAMA_3_8B.config.kv_heads} KV heads of {LLAMA_3_8B.config.head_dim}: "
                f"{text.fmt_bytes(per_token)} per token. Its context is at most "
                f"{LLAMA_3_8B.max_context:,} tokens, so the rows stop there. The memory holds at most:",
            ]
        ),
        Table(["context (tokens)", "KV cache per sequence", "sequences that fit"], rows),
        Paragraph(budget_words(budgets)),
        Paragraph(step_example(budgets)),
        Paragraph(["Model dimensions: ", autolink(LLAMA_3_8B.source), "."]),
    ]


def memory_words(gpu: GPU) -> str:
    """A GPU's memory with its source: the driver's total where known, else the datasheet's."""
    if gpu.memory_from == "driver":
        return f"{text.fmt_bytes(gpu.memory_bytes)} as its driver reports it"
    return f"{text.fmt_bytes(gpu.memory_bytes)} on its datasheet"


def step_example(budgets) -> str:
    """One decode step of the worked example: its ceiling on the datasheet and, beside it, the forecast calibrated on
    published figures with the error to expect."""
    context, budget = CONTEXTS[1], budgets[1]
    batch = max(1, min(64, budget.sequences))
    params = {**asdict(LLAMA_3_8B.config), "context": context, "phase": "decode"}
    point = predict("decode", params, H100.ceilings("bfloat16"), "bfloat16", [batch])[0]
    said = (
        f"The ceiling (the roofline) of one decode step of {batch} sequences at context {context:,} is "
        f"{text.fmt_time(point.seconds)} on the datasheet ({point.bound}-bound; the matmuls' roofline plus the "
        "attention's, embeddings and the output head not counted). "
    )
    forecast = forecast_s(point, "decode", "bfloat16")
    terms = efficiency_words("decode", "bfloat16")
    return said + (
        f"The forecast, calibrated on published figures, is {text.fmt_time(forecast)} ({terms}); "
        f"{error_words('decode', params)}."
    )


def budget_words(budgets) -> str:
    ridge = H100.ridge_batch("bfloat16")
    below = [context for context, b in zip(CONTEXTS, budgets) if b.sequences < ridge]
    where = "every context listed" if len(below) == len(CONTEXTS) else f"contexts from {below[0]:,} tokens"
    said = (
        f"The datasheet ridge batch of the same GPU in bf16 is {ridge:,.0f}, and a decode step's KV read pushes the "
        f"real one further out (Transformer decode page). At {where} the memory is full first: the batch is set "
        "by the KV cache, not by the arithmetic."
        if below
        else f"The datasheet ridge batch of the same GPU in bf16 is {ridge:,.0f}."
    )
    return said + " Activations, workspace and fragmentation take a few GiB more than counted here."


def quantization_table() -> Table:
    rows = [
        [f"{bits}", f"{16 / bits:g}×", f"{weight_only_ridge_batch(H100, 'bfloat16', bits):,.0f}"]
        for bits in WEIGHT_BITS
    ]
    return Table(
        ["weight bits (bf16 arithmetic)", "fewer weight bytes", f"ridge batch on an {H100.name} (rows)"],
        rows,
        "From the datasheet: b* = (F/BW)·(bits/8)/2.",
    )
