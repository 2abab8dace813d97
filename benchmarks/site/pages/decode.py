"""The Transformer-decode page: decode steps against batch at several contexts, MHA against GQA, where
the bytes go, the MLP condition (the crossover batch and the intensity limit), prefill beside decode,
and (until a GPU run exists) what the formulas give on a GPU."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from benchmarks.analysis.roofline import curves as c
from benchmarks.analysis.roofline import decode as d
from benchmarks.analysis.roofline.curves import Curve
from benchmarks.contract.results import Run
from benchmarks.gpus import find_gpu
from benchmarks.profiles import FULL
from benchmarks.site import charts, text
from benchmarks.site import data as site_data
from benchmarks.site.charts import models as cm
from benchmarks.site.data import SiteData
from benchmarks.site.model_words import (
    knee_findings,
    measured_knee_text,
    not_measured_parts,
    predicted_knee_text,
    ridge_intensity_note,
)
from benchmarks.site.render import (
    Details,
    DeviceSection,
    Heading,
    Page,
    Paragraph,
    Table,
    device_sections,
    measured_figure,
)
from benchmarks.workloads import SEQUENCES, attention_name

DECODE_HEADERS = [
    "context",
    "attention",
    "dtype, mode",
    "ridge batch",
    "measured knee (log-log slope below → above)",
    "KV share of bytes, smallest batch",
    "KV share of bytes, largest batch",
    "measured ÷ roofline time at the smallest batch",
]
CONDITION_HEADERS = [
    "context",
    "attention",
    "weights W",
    "KV per sequence κ·n",
    "crossover b× = W/(κ·n)",
    "largest measured batch",
    "I∞ (FLOP/byte)",
    "ridge batch",
]
FORMULA_HEADERS = ["context", "attention", "KV per sequence", "crossover b×", "I∞ (FLOP/byte)", "ridge batch"]
FORMULA_CAPTION = "Formula with datasheet ceilings (NVIDIA H200, bf16): no measurement"


PREVIEW_FOLD = "The formulas on an H200's datasheet, context by context (no measurement)"


def fold_under_headings(parts: list, what: str) -> list:
    """Each heading and the parts under it, folded into one <details> named by the heading (and `what` it holds):
    the page reads through to its lesson, and the reader opens what they want to see."""
    found: list = []
    for part in parts:
        if isinstance(part, Heading):
            found.append(Details(f"{part.content}: {what}", []))
        elif found:
            found[-1].body.append(part)
        else:
            found.append(part)
    return found


def chart_folded_under_caption(part: Any) -> Any:
    """A figure folded under its caption (its numbers are in the words beside it); any other part as it is."""
    return Details(f"Chart: {part.caption}", [part]) if isinstance(part, charts.Figure) else part


LESSON = (  # the takeaway's lesson, above the items the page measured
    "A decoder batches like an MLP only while the batch is well below W/(κ·n), the batch at which the KV cache read "
    "equals the weight read. Past it every extra sequence costs its own cache read, and at long context the step "
    "never becomes compute-bound at all. Grouped-query attention divides the cache read by H/H<sub>kv</sub> and "
    "brings the knee back (a little less than H/H<sub>kv</sub>, since the weights shrink too); a prefill, many "
    "tokens per sequence per call, batches like an MLP."
)


def build(data: SiteData | None = None) -> Page:
    """The page's sections, in the order the notebook shows them, and the measured items under its takeaway."""
    data = data or site_data.load_site_data()
    items = [item for run in data.shown_for("decode") for item in measured_takeaway_items(run)]
    formulas = h200_formula_preview(data)  # its heading, then its body folded
    return Page(
        {
            "decode_steps_and_prefill_by_device": device_sections(
                data, lambda run: decode_device_section(data, run), workloads=("decode",)
            ),
            "step_time_per_operation_by_device": per_device_parts(data, per_operation_parts),
            "tokens_per_second_by_device": [
                chart_folded_under_caption(part) for part in per_device_parts(data, tokens_per_second_parts)
            ],
            "h200_formulas_until_a_gpu_run": (
                formulas[:1] + fold_under_headings([Heading(PREVIEW_FOLD), *formulas[1:]], "a table")
                if formulas
                else []
            ),
        },
        data,
        takeaway_items=items or ["No decode measurement is committed yet."],
        lesson=LESSON,
    )


# --------------------------------------------------------------------------- one device


def measured_curves(run: Run) -> tuple[list[Curve], list[Curve], list[Curve]]:
    """Every decode curve with a point, and the decode steps and prefills with at least two."""
    found = [curve for curve in c.curves(run, "decode") if curve.points]
    steps = [curve for curve in found if d.is_decode(curve) and len(curve.points) >= 2]
    prefills = [curve for curve in found if d.is_prefill(curve) and len(curve.points) >= 2]
    return found, steps, prefills


def decode_device_section(data: SiteData, run: Run) -> DeviceSection:
    found, steps, prefills = measured_curves(run)
    dtypes = sorted({curve.dtype for curve in steps + prefills})
    ridges = d.run_ridges(run, dtypes)
    note = ridge_intensity_note(ridges)
    if not steps and not prefills:
        body = [Paragraph("This run has no Transformer decode measurement (no decode workload).")]
    else:
        body = [
            *decoder_paragraph(run, steps),
            *step_latency_figures(run, steps),
            *fold_under_headings(intensity_and_bytes_figures(run, steps), "two charts"),
            *knee_and_kv_share_table(run, steps),
            *[part for dtype, ridge in ridges.items() for part in mlp_condition_parts(run, steps, dtype, ridge)],
            *[Paragraph(long) for long, _ in mha_against_gqa_sentences(steps)],
            *fold_under_headings(prefill_against_decode_parts(run, steps, prefills), "a chart"),
            *not_measured_parts(found),
        ]
    return DeviceSection(run, body, note, dtypes=dtypes, older=len(data.others(run)))


def decoder_config_words(params: dict[str, Any], dtype: str) -> str:
    return (
        f"{params['layers']}-layer decoder (d_model {params['d_model']}, {params['heads']} query heads of "
        f"{params['d_model'] // params['heads']}, {'SwiGLU' if params.get('ffn') == 'swiglu' else 'GELU'} FFN "
        f"{params['d_ff']}) in {dtype}"
    )


def decoder_paragraph(run: Run, steps: list[Curve]) -> list:
    if not steps:
        return []
    words = (
        f"The decoder: {decoder_config_words(steps[0].params, steps[0].dtype)}. Each chart's subtitle gives the cache "
        "state of the weights. Only the weights are rotated through copies; every sequence's KV cache is read where it "
        "lies."
    )
    cache_bytes = run.device.get("l2_bytes")
    if cache_bytes:
        words += (
            f" A KV cache smaller than this device's {text.fmt_bytes(cache_bytes)} last-level cache can be served from "
            "it, so the smallest batches at short context may run faster than the roofline."
        )
    return [Paragraph(words)]


def attention_slug(params: dict[str, Any]) -> str:
    return "mha" if d.is_mha(params) else f"gqa{params['kv_heads']}"


def attention_groups(curves: Sequence[Curve]) -> dict[str, list[Curve]]:
    """Curves by attention type (MHA first), each by context."""
    grouped: dict[str, list[Curve]] = {}
    for curve in d.by_attention(curves):
        grouped.setdefault(attention_slug(curve.params), []).append(curve)
    return grouped


def step_latency_figures(run: Run, steps: list[Curve]) -> list:
    parts = []
    for (dtype, mode, cache), group in c.group_by(steps, "dtype", "mode", "cache").items():
        for attn, shaped in attention_groups(group).items():
            shaped_name = attention_name(shaped[0].params)
            parts += [
                Heading(f"Decode steps, {shaped_name}: {dtype}, {mode}, cache {cache}"),
                measured_figure(
                    charts.latency_chart(shaped, f"Decode-step latency against batch: {shaped_name}", SEQUENCES),
                    f"decode-{run.device['slug']}-{attn}-{dtype}-{mode}-{cache}-latency",
                    f"Decode-step latency against batch, {shaped_name} ({dtype}, {mode})",
                    "Log-log chart of the median time of one decode step against the number of sequences, one line "
                    f"per context length, {shaped_name}, for a {decoder_config_words(shaped[0].params, dtype)}, with "
                    "the roofline prediction dashed",
                    shaped,
                    where=f"{text.device_label(run)}, {mode}, cache {cache}",
                    findings=knee_findings(shaped),
                ),
            ]
    return parts


def intensity_and_bytes_figures(run: Run, steps: list[Curve]) -> list:
    parts = []
    for (dtype,), group in c.group_by(steps, "dtype").items():
        unique = d.by_attention(list({curve.label: curve for curve in group[::-1]}.values())[::-1])
        parts += [
            Heading(f"Where the bytes go: {dtype}"),
            measured_figure(
                cm.intensity_chart(
                    unique, f"Decode-step arithmetic intensity against batch ({dtype})", "batch size (sequences)"
                ),
                f"decode-{run.device['slug']}-{dtype}-intensity",
                f"Decode-step arithmetic intensity against batch ({dtype})",
                "Log-log chart of FLOPs per byte of one decode step against the number of sequences, per context "
                "length and attention type, with the run's ridge intensity (measured matmul FLOP/s ÷ copy bytes/s) "
                "dashed: a line that stays below it never turns compute-bound",
                unique,
            ),
            *bytes_split_figure(run, dtype, unique),
        ]
    return parts


def bytes_split_figure(run: Run, dtype: str, unique: list[Curve]) -> list:
    """The weight, KV and activation bytes at the shortest and longest measured context."""
    contexts = sorted({curve.params["context"] for curve in unique})
    ends = {contexts[0], contexts[-1]}
    panels = [curve for curve in unique if curve.params["context"] in ends and cm.split_rows(curve)]
    if not panels:
        return []
    return [
        measured_figure(
            cm.bytes_split_chart(panels, f"Weight and KV-cache bytes per decode step ({dtype})"),
            f"decode-{run.device['slug']}-{dtype}-bytes",
            f"Weight and KV-cache bytes against batch ({dtype})",
            "Log-log panels, one per attention type at the shortest and longest measured context, of the bytes one "
            "decode step moves for the weights, the KV cache and the activations against the number of sequences; "
            "a dashed rule marks the batch where the KV cache bytes reach the weight bytes",
            panels,
        )
    ]


# --------------------------------------------------------------------------- tables


def kv_share_words(pair: tuple[int, float] | None) -> str:
    return f"{text.sig(100 * pair[1], 2)} % at batch {pair[0]}" if pair else "–"


def knee_table_cells(row: d.DecodeRow) -> list[str]:
    curve = row.curve
    overhead = curve.overhead_ratio()
    return [
        str(row.context),
        attention_name(curve.params),
        f"{curve.dtype}, {curve.mode}",
        predicted_knee_text(curve),
        measured_knee_text(curve.knee),
        kv_share_words(row.first),
        kv_share_words(row.last),
        f"{text.sig(overhead, 2)}×" if overhead else "–",
    ]


def knee_and_kv_share_table(run: Run, steps: list[Curve]) -> list:
    rows = d.decode_rows(steps)
    if not rows:
        return []
    notes = [
        Paragraph(
            f"Note: the recorded bytes of {r.curve.label} disagree with this page's cost formula (crossover "
            f"{text.sig(r.crossover, 3)} recorded against {text.sig(r.formula_crossover, 3)})."
        )
        for r in rows
        if r.disagrees
    ]
    return [  # a reference table: folded, so that the page reads through to its figures and words
        Details(
            f"Reference table: knees and KV share ({text.kind_word(run)})",
            [Table(DECODE_HEADERS, [knee_table_cells(r) for r in rows]), *notes],
        )
    ]


def ridge_batch_words(knee: float | None, none: str) -> str:
    return f"≈ {text.fmt_batch(knee)}" if knee is not None else none


def mlp_condition_cells(row: d.ConditionRow) -> list[str]:
    return [
        str(row.context),
        attention_name(row.params),
        text.fmt_bytes(row.terms.weight_bytes),
        text.fmt_bytes(row.terms.kv_bytes_per_sequence(row.context)),
        f"≈ {text.fmt_batch(row.crossover)}",
        str(row.largest_batch),
        text.sig(row.limit, 3),
        ridge_batch_words(row.knee, "none: below the ridge at every batch"),
    ]


def contexts_with_knee_words(terms: d.DecodeTerms, ridge: float) -> str:
    longest = terms.longest_context_with_knee(ridge)
    if longest is None:
        return "no context at all"
    if longest == math.inf:
        return "every context"
    return f"contexts up to about {longest:,.0f} tokens"


def terms_by_attention(rows: Sequence[d.ConditionRow]) -> dict[str, d.DecodeTerms]:
    """The cost model of each attention type among the rows (the first row of each)."""
    found: dict[str, d.DecodeTerms] = {}
    for row in rows:
        found.setdefault(attention_name(row.params), row.terms)
    return found


def mlp_condition_parts(run: Run, steps: list[Curve], dtype: str, ridge: float) -> list:
    rows = d.condition_rows([curve for curve in steps if curve.dtype == dtype], ridge)
    if not rows:
        return []
    sentences = [
        f"With {name}, κ = {text.fmt_bytes(terms.kv_bytes_per_position)} per cached position and sequence, and the "
        f"step turns compute-bound at some batch only for {contexts_with_knee_words(terms, ridge)} (I∞ tends to "
        f"{text.sig(terms.attention_floor, 3)} FLOP/byte at endless context)."
        for name, terms in terms_by_attention(rows).items()
    ]
    return [
        Heading(f"The MLP condition on this run ({dtype}, ridge {text.sig(ridge, 3)})"),
        Paragraph(" ".join(sentences)),
        Details(
            "Reference table: the MLP condition per context",
            [
                Table(
                    CONDITION_HEADERS,
                    [mlp_condition_cells(r) for r in rows],
                    f"From the workload's config and the run's measured ridge; {text.device_label(run)}",
                )
            ],
        ),
    ]


def crossover_items(run: Run, steps: list[Curve], dtype: str, ridge: float) -> list[str]:
    """The takeaway: where the KV read equals the weight read, per attention type and context."""
    rows = d.condition_rows([curve for curve in steps if curve.dtype == dtype], ridge)
    if not rows:
        return []
    crossings: dict[str, list[str]] = {}
    for row in rows:
        crossings.setdefault(attention_name(row.params), []).append(
            f"≈ {text.fmt_batch(row.crossover)} sequences at context {row.context}"
        )
    return [
        f"{text.device_label(run)} ({dtype}): the KV cache read equals the weight read at "
        + "; ".join(f"{', '.join(v)} with {k}" for k, v in crossings.items())
        + "."
    ]


# --------------------------------------------------------------------------- MHA against GQA


def mha_against_gqa_sentences(steps: list[Curve]) -> list[tuple[str, str]]:
    """(paragraph, takeaway) for each context measured with MHA and GQA, in the first mode of each
    dtype and cache state."""
    said = []
    for group in c.group_by(steps, "dtype", "cache").values():
        mode = d.first_mode(group)
        for pair in d.attention_pairs([curve for curve in group if curve.mode == mode]):
            timed = gqa_step_time_words(pair)
            said.append((gqa_paragraph_words(pair) + timed + ".", gqa_takeaway_words(pair) + timed + "."))
    return said


def gqa_step_time_words(pair: d.AttentionPair) -> str:
    """The two step times at the largest common batch, the speed-up beside the one the roofline predicts on the
    run's ceilings (never a ratio of bytes alone: a compute-bound step does not speed up with fewer bytes), and the
    attention backend that ran (the claim that a K/V head is read once holds only
    for a backend that does not copy it per query head)."""
    if not pair.same_last_batch:
        return ""
    last_mha, last_gqa = pair.mha.points[-1], pair.gqa.points[-1]
    backends = {r.get("attention_backend") for r in pair.gqa.records("ok")} - {None}
    backend = f"attention backend {', '.join(sorted(backends))}" if backends else "attention backend not recorded"
    return (
        f"; at batch {last_mha.batch} a step takes {text.fmt_time(last_gqa.median_s)} with GQA against "
        f"{text.fmt_time(last_mha.median_s)} with MHA ({pair.gqa.mode}, {backend}): "
        f"{text.sig(last_mha.median_s / last_gqa.median_s, 2)}× faster, "
        + predicted_speedup_words(pair, last_mha.batch, last_mha.bytes / last_gqa.bytes)
    )


def predicted_speedup_words(pair: d.AttentionPair, batch: int, byte_ratio: float) -> str:
    """What the roofline predicts at the run's ceilings, with the ratio of the bytes beside it where they differ."""
    predicted = pair.roofline_speedup(batch)
    if predicted is None:
        return f"where the counted bytes shrink {text.sig(byte_ratio, 2)}× (no ceilings to predict a time from)"
    said = f"where the roofline predicts {text.sig(predicted, 3)}× at the run's ceilings"
    if text.sig(predicted, 2) != text.sig(byte_ratio, 2):
        said += f" (the bytes alone shrink {text.sig(byte_ratio, 2)}×, but the matmuls' arithmetic does not)"
    return said


def gqa_paragraph_words(pair: d.AttentionPair) -> str:
    mha, gqa = pair.mha, pair.gqa
    before, after = pair.crossovers
    if mha.predicted_knee is None and gqa.predicted_knee is None:
        knees = "the roofline gives no ridge batch with either"
    else:
        knees = f"the ridge batch from {predicted_knee_text(mha)} to {predicted_knee_text(gqa)}"
    words = (
        f"At context {pair.context}, {attention_name(gqa.params)} shares each K/V head among {pair.group_size} "
        f"query heads: the crossover batch goes from ≈ {text.fmt_batch(before)} to ≈ {text.fmt_batch(after)} "
        f"sequences, and {knees}"
    )
    if mha.knee or gqa.knee:
        words += f" (measured: {measured_knee_text(mha.knee)} with MHA, {measured_knee_text(gqa.knee)} with GQA)"
    return words


def gqa_takeaway_words(pair: d.AttentionPair) -> str:
    mha, gqa = pair.mha, pair.gqa
    name = attention_name(gqa.params)
    if mha.predicted_knee is None and gqa.predicted_knee is None:
        words = f"at context {pair.context} the roofline gives no ridge batch with MHA or {name}"
    else:
        words = (
            f"at context {pair.context}, {name} moves the ridge batch from {predicted_knee_text(mha)} to "
            f"{predicted_knee_text(gqa)}"
        )
    growing = any(k is not None and k.slope_below > 0.4 for k in (mha.knee, gqa.knee))
    return words + (
        f" (measured bend: {measured_knee_text(mha.knee)} with MHA, {measured_knee_text(gqa.knee)} with GQA"
        + (
            "; where time already grows below the bend, it marks the KV read taking over, not a compute knee)"
            if growing
            else ")"
        )
    )


# --------------------------------------------------------------------------- prefill


def prefill_groups(steps: list[Curve], prefills: list[Curve]):
    """(dtype, mode, cache, prefills, decode steps of the same dtype, mode and attention), per group."""
    for (dtype, mode, cache), group in c.group_by(prefills, "dtype", "mode", "cache").items():
        kv_heads = {curve.params["kv_heads"] for curve in group}
        # decode steps in any cache state: a prefill is compute-bound, so it runs with resident weights and
        # the steps with rotated ones; the chart's description says so
        twins = [s for s in steps if (s.dtype, s.mode) == (dtype, mode) and s.params["kv_heads"] in kv_heads]
        yield dtype, mode, cache, group, twins


def prefill_against_decode_parts(run: Run, steps: list[Curve], prefills: list[Curve]) -> list:
    parts = []
    for dtype, mode, cache, group, twins in prefill_groups(steps, prefills):
        caches = ", ".join(sorted({f"{s.label}: cache {s.cache}" for s in twins} | {f"prefill: cache {cache}"}))
        shown = sorted(twins, key=lambda s: s.params["context"]) + group
        parts += [
            Heading(f"Prefill against decode: {dtype}, {mode}"),
            measured_figure(
                cm.tokens_chart(shown, "Tokens per second against tokens per call: prefill and decode"),
                f"decode-{run.device['slug']}-{dtype}-{mode}-{cache}-prefill",
                f"Prefill against decode ({dtype}, {mode})",
                "Log-log chart of tokens processed per second against tokens per call: decode steps (one new token "
                "per sequence) at each context, and prefills of whole prompts (batch × prompt length tokens per "
                "call); measured solid, roofline dashed",
                shown,
                where=f"{text.device_label(run)}, {dtype}, {mode}; cache states differ ({caches})",
            ),
            *[Paragraph(prefill_rate_words(p, twins)) for p in group],
        ]
    return parts


def prefill_rate_words(prefill: Curve, twins: list[Curve]) -> str:
    top, rate = d.prefill_tokens_per_s(prefill)
    words = (
        f"A prefill of {prefill.params['context']}-token prompts processes {text.fmt_rate(rate, 'tokens/s')} at "
        f"batch {top.batch} ({text.fmt_time(top.median_s / (top.batch * prefill.params['context']))} per token)"
    )
    best = d.fastest_step(twins)
    if best:
        step, point = best
        words += (
            f"; the fastest decode step measured here, {step.label} at batch {point.batch}, manages "
            f"{text.fmt_rate(point.batch / point.median_s, 'tokens/s')} ({text.fmt_time(point.median_s / point.batch)} "
            "per token)"
        )
    return (
        words + ". A prefill pushes many tokens of each sequence through the weights in one call, so it is an MLP "
        "with a large batch, while a decode step has only one token per sequence."
    )


def prefill_speedup_items(run: Run, steps: list[Curve], prefills: list[Curve]) -> list[str]:
    items = []
    for _, _, _, group, twins in prefill_groups(steps, prefills):
        best = d.fastest_step(twins)
        for p in group:
            if best:
                top, rate = d.prefill_tokens_per_s(p)
                ratio = rate / (best[1].batch / best[1].median_s)
                items.append(
                    f"{text.device_label(run)}: prefill ({p.params['context']}-token prompts, batch {top.batch}) "
                    f"runs {text.sig(ratio, 2)}× the tokens per second of the fastest measured decode step."
                )
    return items


def measured_takeaway_items(run: Run) -> list[str]:
    _, steps, prefills = measured_curves(run)
    ridges = d.run_ridges(run, sorted({curve.dtype for curve in steps + prefills}))
    items = [item for dtype, ridge in ridges.items() for item in crossover_items(run, steps, dtype, ridge)]
    for (dtype, _), group in c.group_by(steps, "dtype", "cache").items():
        mode = d.first_mode(group)
        items += [
            f"{text.device_label(run)} ({dtype}, {mode}): {short}" for _, short in mha_against_gqa_sentences(group)
        ]
    return items + prefill_speedup_items(run, steps, prefills)


# --------------------------------------------------------------------------- per operation, per sequence


def per_device_parts(data: SiteData, parts) -> list:
    """A device's heading and what `parts(run, steps)` gives, for each device with decode steps."""
    found = []
    for run in data.shown_for("decode"):
        _, steps, _ = measured_curves(run)
        body = parts(run, steps) if steps else []
        if body:
            found += [Heading(text.device_label(run), 3), *body]
    return found


def first_compared_group(steps: list[Curve]) -> list[Curve]:
    """The decode steps of the first dtype and cache state, in the first mode: what a section compares."""
    group = next(iter(c.group_by(steps, "dtype", "cache").values()))
    mode = d.first_mode(group)
    return [curve for curve in group if curve.mode == mode]


def per_operation_parts(run: Run, steps: list[Curve]) -> list:
    group = [curve for curve in first_compared_group(steps) if curve.ceilings is not None]
    contexts = sorted({curve.params["context"] for curve in group})
    shown = d.by_attention([curve for curve in group if curve.params["context"] in {contexts[0], contexts[-1]}])
    if not shown:
        return []
    first = shown[0]
    return [
        measured_figure(
            cm.operations_chart(shown, f"Decode step per operation ({first.dtype}, {first.mode})"),
            f"decode-{run.device['slug']}-{first.dtype}-{first.mode}-{first.cache}-operations",
            f"Decode step per operation ({first.dtype}, {first.mode})",
            "Log-log panels, one per attention type at the shortest and longest measured context, of the measured "
            "time of a decode step against the number of sequences, beside the roofline of its matmuls, the roofline "
            "of its attention, and their sum",
            shown,
        ),
        Paragraph(
            per_operation_words(max(shown, key=lambda curve: (curve.params["context"], curve.params["kv_heads"])))
        ),
    ]


def per_operation_words(curve: Curve) -> str:
    """What the split shows for one curve: where the matmuls turn compute-bound, that the attention never
    does, and what batching still saves per token (measured)."""
    terms, ridge = d.curve_terms(curve), curve.ceilings.ridge_intensity
    points = d.operation_points(curve)
    first, last = points[0], points[-1]
    matmul_ridge = d.matmul_ridge_batch(curve)
    matmuls = (
        f"the matmuls turn compute-bound at batch ≈ {text.fmt_batch(matmul_ridge)} (their own ridge batch at this "
        "run's ceilings)"
        if matmul_ridge
        else "the matmuls stay memory-bound at every batch"
    )
    attention = (
        "stays memory-bound at every batch: each sequence reads its own cache, at "
        f"{text.sig(terms.attention_floor, 2)} FLOP per byte whatever the batch, below the run's ridge "
        f"intensity of {text.sig(ridge, 3)}"
        if terms.attention_floor < ridge
        else f"reaches {text.sig(terms.attention_floor, 2)} FLOP per byte, above the run's ridge {text.sig(ridge, 3)}"
    )
    return (
        f"At context {curve.params['context']} with {attention_name(curve.params)}, {matmuls}, while the attention "
        f"{attention}. A step is both, one after the other, so its roofline is their sum. Batching still pays: the "
        f"weights are read once for the whole batch, and the measured time per token falls from "
        f"{text.fmt_time(first.measured_s)} at batch {first.batch} to {text.fmt_time(last.measured_s / last.batch)} "
        f"at batch {last.batch}."
    )


def tokens_per_second_parts(run: Run, steps: list[Curve]) -> list:
    group = d.by_attention(first_compared_group(steps))
    first = group[0]
    widest = max(group, key=lambda curve: (curve.params["context"], curve.params["kv_heads"]))
    low, high = widest.points[0], widest.points[-1]
    return [
        measured_figure(
            cm.sequence_chart(group, f"Tokens per second: the batch and each sequence ({first.dtype}, {first.mode})"),
            f"decode-{run.device['slug']}-{first.dtype}-{first.mode}-{first.cache}-sequences",
            f"Tokens per second, whole batch and per sequence ({first.dtype}, {first.mode})",
            "Two log-log panels against the number of sequences: tokens per second of the whole batch (batch ÷ step "
            "time) and of each sequence in it (1 ÷ step time), one line per context and attention type",
            group,
        ),
        Paragraph(
            f"At context {widest.params['context']} with {attention_name(widest.params)}, going from batch {low.batch} "
            f"to {high.batch} takes the batch from {text.fmt_rate(low.batch / low.median_s, 'tokens/s')} to "
            f"{text.fmt_rate(high.batch / high.median_s, 'tokens/s')}, while each sequence's own rate falls from "
            f"{text.fmt_rate(1 / low.median_s, 'tokens/s')} to {text.fmt_rate(1 / high.median_s, 'tokens/s')}: "
            "quote both."
        ),
    ]


# --------------------------------------------------------------------------- formulas until a GPU run exists


def h200_formula_preview(data: SiteData) -> list:
    """What the formulas give on an H200 for the GPU profile's decoder, while no GPU measured a decode step."""
    gpus = [run for run in data.shown_for("decode") if run.device["kind"] == "cuda"]
    if any(any(d.is_decode(curve) for curve in c.curves(run, "decode")) for run in gpus):
        return []
    h200 = find_gpu("NVIDIA H200")
    sweeps = [s for s in FULL.sweeps if s.workload == "decode" and s.params.get("phase") == "decode"]
    if not (h200 and sweeps and "bfloat16" in h200.peak_flops):
        return []
    ridge = h200.ridge_intensity("bfloat16")
    rows = d.formula_rows(sweeps, ridge, 2)
    terms = terms_by_attention(rows)
    weights = " and ".join(f"{text.fmt_bytes(t.weight_bytes)} with {name}" for name, t in terms.items())
    summary = " ".join(
        f"With {name}, a decode step of this config reaches the ridge at some batch only for "
        f"{contexts_with_knee_words(t, ridge)}."
        for name, t in terms.items()
    )
    decoder = decoder_config_words(sweeps[0].params, "bf16")
    return [
        Heading("What a GPU run will show", 2),
        Paragraph(
            "No GPU decode measurement is committed yet. Until one is, here is what the formulas above give for the "
            f"decoder the GPU profile measures ({decoder}; weights {weights}) with the H200's datasheet ceilings "
            f"({text.fmt_rate(h200.peak_flops['bfloat16'], 'FLOP/s')} dense bf16, "
            f"{text.fmt_rate(h200.bandwidth, 'B/s')}, ridge {text.sig(ridge, 3)} FLOP/byte). These are formulas, "
            "not measurements."
        ),
        Table(FORMULA_HEADERS, [h200_formula_cells(r) for r in rows], FORMULA_CAPTION),
        Paragraph(
            f"{summary} At longer contexts the step is memory-bound at every batch: its time is flat only while the "
            "weights dominate the bytes (a batch well below b×) and grows with every sequence after that. Throughput "
            "then saturates: it tends to the bandwidth divided by one sequence's cache read, and at b× it is already "
            "half of that, so a few times b× past the crossover extra sequences buy latency and little throughput."
        ),
    ]


def h200_formula_cells(row: d.ConditionRow) -> list[str]:
    return [
        str(row.context),
        attention_name(row.params),
        text.fmt_bytes(row.terms.kv_bytes_per_sequence(row.context)),
        f"≈ {text.fmt_batch(row.crossover)}",
        text.sig(row.limit, 3),
        ridge_batch_words(row.knee, "none"),
    ]
