# %% [markdown]
# # Transformer decode: the KV cache is a per-sequence weight
#
# The original article treats a Transformer as an MLP: thanks to the KV cache, it says, attention
# costs little, so a decoder batches like a stack of Linear layers. Half of that is right. The
# cache does save the arithmetic: a decode step computes keys and values for the new token only.
# But it does not save the memory traffic. Every step must read the cached keys and values of
# every position of every sequence, and unlike the weights that read is not shared across the
# batch. This page measures decode steps of a small decoder stack (`snippets/decode.py`: pre-norm
# attention and a GELU FFN per layer, no embedding or LM head) at several context lengths, with
# full multi-head attention (MHA) and with grouped-query attention (GQA), and a prefill beside them.
#
# ## What one decode step moves
#
# Take *b* sequences that each hold *c* tokens in the cache. One step adds a token to each and
# attends over *n* = *c* + 1 positions. With *P* Linear-weight elements, *W* bytes of weights,
# *L* layers, *H* query heads and *H*<sub>kv</sub> key/value heads of size *d*<sub>h</sub>, and
# *s* bytes per element:
#
# $$\mathrm{FLOPs} = b\,\left(2P + 4\,L\,H\,d_h\,n\right)$$
#
# $$\mathrm{bytes} = W + b\,\left(\kappa\,n + a\right), \qquad \kappa = 2\,L\,H_\mathrm{kv}\,d_h\,s$$
#
# where κ is the KV-cache bytes per cached position of one sequence (a K and a V vector in every
# layer) and *a* the activation bytes per token. The weights *W* are read once for the whole batch;
# the KV term is read once *per sequence*. So the bytes grow with *b*·*n* from the first extra
# sequence, and the longer the context the faster they grow.
#
# ## When a decoder really is an MLP
#
# Drop the KV term and the step is an MLP: bytes ≈ *W*, flat in the batch, until the arithmetic
# catches up. That approximation holds while the cache read is small next to the weight read:
#
# $$b\,n\,\kappa \ll W \quad\Longleftrightarrow\quad b \ll b_\times = \frac{W}{\kappa\,n}$$
#
# At the **crossover batch** *b*<sub>×</sub> the step reads as many cache bytes as weight bytes,
# and beyond it the cache dominates. A second limit is worse. As the batch grows the weight term
# fades and the intensity of the step tends to
#
# $$I_\infty(n) = \frac{2P + 4\,L\,H\,d_h\,n}{\kappa\,n + a}$$
#
# If *I*<sub>∞</sub> is below the device's ridge (peak FLOP/s ÷ bandwidth), the step never turns
# compute-bound at any batch: there is no knee, only a line that grows with the batch. As the
# context grows, *I*<sub>∞</sub> falls towards 4·*L*·*H*·*d*<sub>h</sub>/κ = 2·(*H*/*H*<sub>kv</sub>)/*s*
# FLOP per byte, the intensity of attention alone, which is a few FLOP per byte, far below any
# GPU's ridge. Grouped-query attention shares each K/V head among *H*/*H*<sub>kv</sub> query heads,
# which divides κ by that factor. Since the K and V projections shrink too, *W* falls a little,
# so *b*<sub>×</sub> grows by a little less than *H*/*H*<sub>kv</sub>; *I*<sub>∞</sub> rises, and
# the knee moves back towards where an MLP's would be.

# %% tags=["hide-input"]
from IPython.display import HTML, display

from benchmarks.analysis import curves as report
from benchmarks.analysis.datasheet import find_gpu
from benchmarks.profiles import FULL
from benchmarks.site import charts
from benchmarks.site import charts_models as cm
from benchmarks.site import text as txt
from benchmarks.workloads import SEQUENCES

data = report.load_site_data()
takeaways = []


def attention_slug(params):
    return "mha" if params["kv_heads"] == params["heads"] else f"gqa{params['kv_heads']}"


def config_words(params, dtype):
    return (
        f"{params['layers']}-layer decoder (d_model {params['d_model']}, {params['heads']} query heads of "
        f"{params['d_model'] // params['heads']}, FFN {params['d_ff']}) in {dtype}"
    )


def bend_words(curve):
    """The measured knee, and whether the time was flat below it."""
    text = f"measured knee {cm.measured_knee_text(curve.knee)}"
    if curve.knee and curve.knee.slope_below >= 0.4:
        text += (
            f", a bend and not the end of a flat region: below it the time already grows like "
            f"batch^{curve.knee.slope_below:.2f}"
        )
    return text


def condition_rows(curves, ridge):
    """Per attention and context: weights, KV per sequence, crossover batch, intensity limit against the ridge."""
    rows, seen = [], set()
    for c in sorted(curves, key=lambda c: (-c.params["kv_heads"], c.params["context"])):
        size = report.bytes_per_element(c.dtype)
        key = (tuple(sorted(c.params.items())), c.dtype)
        if key in seen or size is None:
            continue
        seen.add(key)
        terms = cm.decode_terms(c.params, size)
        context = c.params["context"]
        limit = terms.intensity_limit(context)
        knee = terms.knee(context, ridge)
        rows.append(
            (
                c,
                terms,
                [
                    str(context),
                    cm.attention_name(c.params),
                    txt.fmt_bytes(terms.weight_bytes),
                    txt.fmt_bytes(terms.kv_bytes_per_sequence(context)),
                    f"≈ {txt.fmt_batch(terms.crossover_batch(context))}",
                    str(c.batches[-1]),
                    txt.sig(limit, 3),
                    f"≈ {txt.fmt_batch(knee)}" if knee is not None else "none: below the ridge at every batch",
                ],
            )
        )
    return rows


CONDITION_HEADERS = [
    "context",
    "attention",
    "weights W",
    "KV per sequence κ·n",
    "crossover b× = W/(κ·n)",
    "largest measured batch",
    "I∞ (FLOP/byte)",
    "roofline knee",
]


def longest_words(terms, ridge):
    longest = terms.longest_context_with_knee(ridge)
    if longest is None:
        return "no context at all"
    if longest == float("inf"):
        return "every context"
    return f"contexts up to about {longest:,.0f} tokens"


def gqa_sentences(curves):
    """At each context measured with both MHA and GQA: what sharing K/V heads did to the cache and the knee."""
    texts = []
    by_context = {}
    for c in curves:
        by_context.setdefault(c.params["context"], []).append(c)
    for context, group in sorted(by_context.items()):
        mha = next((c for c in group if c.params["kv_heads"] == c.params["heads"]), None)
        for gqa in (c for c in group if c.params["kv_heads"] < c.params["heads"]):
            if mha is None:
                continue
            size = report.bytes_per_element(gqa.dtype) or 0
            before, after = cm.decode_terms(mha.params, size), cm.decode_terms(gqa.params, size)
            group_size = gqa.params["heads"] // gqa.params["kv_heads"]
            if mha.predicted_knee is None and gqa.predicted_knee is None:
                knees = short_knees = "the roofline predicts no knee with either"
            else:
                knees = f"the predicted knee from {cm.predicted_knee_text(mha)} to {cm.predicted_knee_text(gqa)}"
                short_knees = (
                    f"moves the predicted knee from {cm.predicted_knee_text(mha)} to {cm.predicted_knee_text(gqa)}"
                )
            text = (
                f"At context {context}, {cm.attention_name(gqa.params)} shares each K/V head among {group_size} "
                f"query heads: the crossover batch goes from ≈ {txt.fmt_batch(before.crossover_batch(context))} to "
                f"≈ {txt.fmt_batch(after.crossover_batch(context))} sequences, and {knees}"
            )
            if mha.knee or gqa.knee:
                text += (
                    f" (measured: {cm.measured_knee_text(mha.knee)} with MHA, {cm.measured_knee_text(gqa.knee)} "
                    "with GQA)"
                )
            short = f"at context {context}, {cm.attention_name(gqa.params)} {short_knees}"
            if short_knees.startswith("the roofline"):
                short = (
                    f"at context {context} the roofline predicts no knee with MHA or {cm.attention_name(gqa.params)}"
                )
            growing = any(k is not None and k.slope_below > 0.4 for k in (mha.knee, gqa.knee))
            short += (
                f" (measured bend: {cm.measured_knee_text(mha.knee)} with MHA, {cm.measured_knee_text(gqa.knee)} "
                "with GQA"
                + (
                    "; where time already grows below the bend, it marks the KV read taking over, not a compute knee)"
                    if growing
                    else ")"
                )
            )
            last_mha, last_gqa = mha.points[-1], gqa.points[-1]
            if last_mha.batch == last_gqa.batch:
                timed = (
                    f"; at batch {last_mha.batch} a step takes {txt.fmt_time(last_gqa.median_s)} with GQA against "
                    f"{txt.fmt_time(last_mha.median_s)} with MHA ({gqa.mode})"
                )
                text, short = text + timed, short + timed
            texts.append((text + ".", short + "."))
    return texts


def device_section(run):
    parts = []
    slug = run.device["slug"]
    kind = txt.kind_word(run)
    found = [c for c in report.curves(run, "decode") if c.points]
    steps = [c for c in found if cm.is_decode(c) and len(c.points) >= 2]
    prefills = [c for c in found if cm.is_prefill(c) and len(c.points) >= 2]
    intro = f"<strong>{txt.h(txt.device_label(run))}</strong> ({kind} run; {txt.h(txt.provenance(run))})."
    dtypes = sorted({c.dtype for c in steps + prefills})
    copy = run.ceilings.get("copy", {}).get("bytes_per_s")
    ridges = {}
    for dtype in dtypes:
        matmul = run.ceilings.get("matmul", {}).get(dtype)
        if matmul and copy:
            ridges[dtype] = matmul["flops_per_s"] / copy
            intro += (
                f" Measured ceilings: copy {txt.fmt_rate(copy, 'B/s')}, {txt.h(dtype)} matmul "
                f"{txt.fmt_rate(matmul['flops_per_s'], 'FLOP/s')}: ridge {txt.sig(ridges[dtype], 3)} FLOP/byte."
            )
    if kind == "CPU":
        intro += (
            " This is a CPU run of a small decoder: its ridge is a CPU's, tens of times lower than a GPU's, so it "
            "shows the cost model at work, not how a GPU decodes."
        )
    parts.append(f"<p>{intro}</p>")
    if not steps and not prefills:
        parts.append("<p>This run has no Transformer decode measurement (no decode workload).</p>")
        return parts
    if steps:
        first = steps[0]
        cache_bytes = run.device.get("l2_bytes")
        words = (
            f"The decoder: {config_words(first.params, first.dtype)}. "
            "Each chart's subtitle gives the cache state of the weights. Only the weights are rotated through "
            "copies; every sequence's KV cache is read where it lies."
        )
        if cache_bytes:
            words += (
                f" A KV cache smaller than this device's {txt.fmt_bytes(cache_bytes)} last-level cache can be "
                "served from it, so the smallest batches at short context may run faster than the roofline."
            )
        parts.append(f"<p>{txt.h(words)}</p>")
    for (dtype, mode, cache), group in report.group_by(steps, "dtype", "mode", "cache").items():
        by_attention = {}
        for c in sorted(group, key=lambda c: (-c.params["kv_heads"], c.params["context"])):
            by_attention.setdefault(attention_slug(c.params), []).append(c)
        for attn, shaped in by_attention.items():
            name = cm.attention_name(shaped[0].params)
            key = f"decode-{slug}-{attn}-{dtype}-{mode}-{cache}-latency"
            verdicts = "; ".join(
                f"{c.label}: predicted knee {cm.predicted_knee_text(c)}, measured knee {cm.measured_knee_text(c.knee)}"
                for c in shaped
            )
            parts.append(f"<h3>Decode steps, {txt.h(name)}: {txt.h(dtype)}, {txt.h(mode)}, cache {txt.h(cache)}</h3>")
            parts.append(
                charts.figure(
                    charts.latency_chart(shaped, f"Decode-step latency against batch: {name}", SEQUENCES),
                    key,
                    f"Decode-step latency against batch, {name} ({dtype}, {mode})",
                    f"Log-log chart of the median time of one decode step against the number of sequences, one line "
                    f"per context length, {name}, for a {config_words(shaped[0].params, dtype)} on "
                    f"{txt.device_label(run)}, {mode}, cache {cache}, with the roofline prediction dashed. "
                    f"{verdicts}. Data: {txt.provenance(run)}.",
                )
            )
    for (dtype,), group in report.group_by(steps, "dtype").items():
        unique = list({c.label: c for c in group[::-1]}.values())[::-1]
        unique.sort(key=lambda c: (-c.params["kv_heads"], c.params["context"]))
        parts.append(f"<h3>Where the bytes go: {txt.h(dtype)}</h3>")
        parts.append(
            charts.figure(
                cm.intensity_chart(
                    unique, f"Decode-step arithmetic intensity against batch ({dtype})", "batch size (sequences)"
                ),
                f"decode-{slug}-{dtype}-intensity",
                f"Decode-step arithmetic intensity against batch ({dtype})",
                f"Log-log chart of FLOPs per byte of one decode step against the number of sequences, per context "
                f"length and attention type ({cm.describe_curves(unique)}), with the run's ridge intensity "
                f"(measured matmul FLOP/s ÷ copy bytes/s) dashed: a line that stays below it never turns "
                f"compute-bound. Data: {txt.provenance(run)}.",
            )
        )
        contexts = sorted({c.params["context"] for c in unique})
        ends = {contexts[0], contexts[-1]}
        panels = [c for c in unique if c.params["context"] in ends and cm.split_rows(c)]
        if panels:
            parts.append(
                charts.figure(
                    cm.bytes_split_chart(panels, f"Weight and KV-cache bytes per decode step ({dtype})"),
                    f"decode-{slug}-{dtype}-bytes",
                    f"Weight and KV-cache bytes against batch ({dtype})",
                    f"Log-log panels, one per attention type at the shortest and longest measured context, of the "
                    f"bytes one decode step moves for the weights, the KV cache and the activations against the "
                    f"number of sequences ({cm.describe_curves(panels)}); a dashed rule marks the batch where the KV "
                    f"cache bytes reach the weight bytes. Data: {txt.provenance(run)}.",
                )
            )
    rows = cm.decode_rows(steps)
    if rows:
        parts.append(f"<h3>Knees and KV share ({txt.h(kind)})</h3>")
        parts.append(
            txt.html_table(
                cm.DECODE_HEADERS,
                [r.cells() for r in rows],
                caption=f"{txt.device_label(run)}; {txt.provenance(run)}",
            )
        )
        for r in rows:
            formula = cm.decode_terms(r.curve.params, report.bytes_per_element(r.curve.dtype) or 0)
            if r.crossover and abs(formula.crossover_batch(r.context) / r.crossover - 1) > 1e-3:
                parts.append(
                    f"<p>Note: the recorded bytes of {txt.h(r.curve.label)} disagree with this page's cost formula "
                    f"(crossover {txt.sig(r.crossover, 3)} recorded against "
                    f"{txt.sig(formula.crossover_batch(r.context), 3)}).</p>"
                )
    for dtype, ridge in ridges.items():
        table = condition_rows([c for c in steps if c.dtype == dtype], ridge)
        if not table:
            continue
        parts.append(f"<h3>The MLP condition on this run ({txt.h(dtype)}, ridge {txt.sig(ridge, 3)})</h3>")
        parts.append(
            txt.html_table(
                CONDITION_HEADERS,
                [cells for _, _, cells in table],
                caption=f"From the workload's config and the run's measured ridge; {txt.device_label(run)}",
            )
        )
        by_attention = {}
        for c, terms, _ in table:
            by_attention.setdefault(cm.attention_name(c.params), (c, terms))
        sentences = []
        for name, (_, terms) in by_attention.items():
            sentences.append(
                f"With {name}, κ = {txt.fmt_bytes(terms.kv_bytes_per_position)} per cached position and "
                f"sequence, and the step turns compute-bound at some batch only for {longest_words(terms, ridge)} "
                f"(I∞ tends to {txt.sig(terms.attention_floor, 3)} FLOP/byte at endless context)."
            )
        parts.append(f"<p>{txt.h(' '.join(sentences))}</p>")
        crossings = {}
        for c, terms, _ in table:
            context = c.params["context"]
            crossings.setdefault(cm.attention_name(c.params), []).append(
                f"≈ {txt.fmt_batch(terms.crossover_batch(context))} sequences at context {context}"
            )
        takeaways.append(
            f"{txt.device_label(run)} ({dtype}): the KV cache read equals the weight read at "
            + "; ".join(f"{', '.join(v)} with {k}" for k, v in crossings.items())
            + "."
        )
    for (dtype, _), group in report.group_by(steps, "dtype", "cache").items():
        mode = min({c.mode for c in group}, key=lambda m: report.MODE_ORDER.index(m) if m in report.MODE_ORDER else 9)
        group = [c for c in group if c.mode == mode]
        for text, short in gqa_sentences(group):
            parts.append(f"<p>{txt.h(text)}</p>")
            takeaways.append(f"{txt.device_label(run)} ({dtype}, {mode}): {short}")
    for (dtype, mode, cache), group in report.group_by(prefills, "dtype", "mode", "cache").items():
        kv_heads = {c.params["kv_heads"] for c in group}
        # decode steps in any cache state: a prefill is compute-bound, so it runs with resident weights and
        # the steps with rotated ones; the chart's description says so
        twins = [c for c in steps if (c.dtype, c.mode) == (dtype, mode) and c.params["kv_heads"] in kv_heads]
        caches = ", ".join(sorted({f"{c.label}: cache {c.cache}" for c in twins} | {f"prefill: cache {cache}"}))
        shown = sorted(twins, key=lambda c: c.params["context"]) + group
        parts.append(f"<h3>Prefill against decode: {txt.h(dtype)}, {txt.h(mode)}</h3>")
        parts.append(
            charts.figure(
                cm.tokens_chart(shown, "Tokens per second against tokens per call: prefill and decode"),
                f"decode-{slug}-{dtype}-{mode}-{cache}-prefill",
                f"Prefill against decode ({dtype}, {mode})",
                f"Log-log chart of tokens processed per second against tokens per call: decode steps (one new token "
                f"per sequence) at each context, and prefills of whole prompts (batch × prompt length tokens per "
                f"call), on {txt.device_label(run)}, {dtype}, {mode}; cache states differ ({caches}); measured "
                f"solid, roofline dashed. Data: {txt.provenance(run)}.",
            )
        )
        for p in group:
            top = p.points[-1]
            best = max(
                ((c, q) for c in twins for q in c.points), key=lambda cq: cq[1].batch / cq[1].median_s, default=None
            )
            text = (
                f"A prefill of {p.params['context']}-token prompts processes "
                f"{txt.fmt_rate(top.batch * p.params['context'] / top.median_s, 'tokens/s')} at batch {top.batch} "
                f"({txt.fmt_time(top.median_s / (top.batch * p.params['context']))} per token)"
            )
            if best:
                c, q = best
                text += (
                    f"; the fastest decode step measured here, {c.label} at batch {q.batch}, manages "
                    f"{txt.fmt_rate(q.batch / q.median_s, 'tokens/s')} "
                    f"({txt.fmt_time(q.median_s / q.batch)} per token)"
                )
                ratio = (top.batch * p.params["context"] / top.median_s) / (q.batch / q.median_s)
                takeaways.append(
                    f"{txt.device_label(run)}: prefill ({p.params['context']}-token prompts, batch {top.batch}) "
                    f"runs {txt.sig(ratio, 2)}× the tokens per second of the fastest measured decode step."
                )
            parts.append(
                f"<p>{txt.h(text)}. A prefill pushes many tokens of each sequence through the weights in one "
                "call, so it is an MLP with a large batch, while a decode step has only one token per sequence.</p>"
            )
    missing = cm.not_measured(found)
    if missing:
        parts.append(f"<p>Points not measured: {txt.h('; '.join(missing))}.</p>")
    return parts


charts.show_device_sections(
    data.shown,
    device_section,
    "<p>No results are committed yet: run <code>nox -s bench docs</code> to measure this machine.</p>",
)

# %% [markdown]
# ## Reading the tables
#
# *Predicted knee* is where the roofline's compute time overtakes its memory time, from the FLOPs
# and bytes counted for each point and the run's measured ceilings; "none" means the intensity
# stays below the ridge at every batch. *Measured knee* is where a two-segment fit of log time
# against log batch bends, with the fitted slopes either side: a slope near 0 below the knee is
# the MLP's flat region, a slope well above 0 means the time was already growing. The *KV share*
# columns are the cache's share of the bytes one step moves. In the MLP-condition table, *b*<sub>×</sub>
# and *I*<sub>∞</sub> come from the formulas at the top of this page applied to the measured
# config, and the roofline knee there is where the same formulas cross the run's ridge.

# %% tags=["hide-input"]
have_gpu_decode = any(any(cm.is_decode(c) for c in report.curves(run, "decode")) for run in data.gpus)
if not have_gpu_decode:
    h200 = find_gpu("NVIDIA H200")
    sweeps = [s for s in FULL.sweeps if s.workload == "decode" and s.params.get("phase") == "decode"]
    if h200 and sweeps and "bfloat16" in h200.peak_flops:
        ridge = h200.ridge_intensity("bfloat16")
        rows, notes = [], {}
        for s in sorted(sweeps, key=lambda s: (-s.params["kv_heads"], s.params["context"])):
            terms = cm.decode_terms(s.params, 2)
            context = s.params["context"]
            knee = terms.knee(context, ridge)
            rows.append(
                [
                    str(context),
                    cm.attention_name(s.params),
                    txt.fmt_bytes(terms.kv_bytes_per_sequence(context)),
                    f"≈ {txt.fmt_batch(terms.crossover_batch(context))}",
                    txt.sig(terms.intensity_limit(context), 3),
                    f"≈ {txt.fmt_batch(knee)}" if knee is not None else "none",
                ]
            )
            notes.setdefault(cm.attention_name(s.params), terms)
        first = sweeps[0].params
        summary = " ".join(
            f"With {name}, a decode step of this config reaches the ridge at some batch only for "
            f"{longest_words(terms, ridge)}."
            for name, terms in notes.items()
        )
        display(
            HTML(
                "<h2>What a GPU run will show</h2><p>No GPU decode measurement is committed yet. Until one is, here "
                "is what the formulas above give for the decoder the GPU profile measures "
                f"({config_words(first, 'bf16')}; weights "
                + " and ".join(f"{txt.fmt_bytes(terms.weight_bytes)} with {name}" for name, terms in notes.items())
                + ") with the H200's datasheet "
                f"ceilings ({txt.fmt_rate(h200.peak_flops['bfloat16'], 'FLOP/s')} dense bf16, "
                f"{txt.fmt_rate(h200.bandwidth, 'B/s')}, ridge {txt.sig(ridge, 3)} FLOP/byte). These are "
                "formulas, not measurements.</p>"
                + txt.html_table(
                    ["context", "attention", "KV per sequence", "crossover b×", "I∞ (FLOP/byte)", "roofline knee"],
                    rows,
                    caption="Formula with datasheet ceilings (NVIDIA H200, bf16): no measurement",
                )
                + f"<p>{txt.h(summary)} At longer contexts the step is memory-bound at every batch: its time is "
                "flat only while the weights dominate the bytes (a batch well below b×) and grows with every "
                "sequence after that. Throughput then saturates: it tends to the bandwidth divided by one "
                "sequence's cache read, and at b× it is already half of that, so a few times b× past the "
                "crossover extra sequences buy latency and little throughput.</p>"
            )
        )

# %% tags=["hide-input"]
gpu_note = (
    ""
    if have_gpu_decode
    else " Every decode measurement here is from a CPU; a GPU run will appear here once one is committed."
)
measured = "".join(f"<li>{txt.h(t)}</li>" for t in takeaways) or "<li>No decode measurement is committed yet.</li>"
display(
    HTML(
        '<div class="admonition success"><p class="admonition-title">Takeaways</p><p>A decoder batches like an '
        "MLP only while the batch is well below W/(κ·n), the batch at which the KV cache read equals the weight "
        "read. Past it every extra sequence costs its own cache read, and at long context the step never becomes "
        "compute-bound at all. Grouped-query attention divides the cache read by H/H<sub>kv</sub> and brings the "
        "knee back (a little less than H/H<sub>kv</sub>, since the weights shrink too); a prefill, many tokens "
        f"per sequence per call, batches like an MLP.{gpu_note}</p>"
        f"<ul>{measured}</ul></div>"
    )
)
