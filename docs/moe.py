# %% [markdown]
# # Mixture of experts: routing spreads the batch
#
# The original article says a mixture-of-experts (MoE) layer batches like a dense one, except
# that a biased gate can cause trouble, and stops there. This page measures an MoE feed-forward
# layer (`snippets/moe.py`) beside the dense layer with the same active parameters.
#
# ## How routing spreads a batch
#
# A router scores each of *b* tokens against *E* experts and sends it to its top *k*. The *b·k*
# assignments spread over the experts, about *b·k/E* rows each under uniform routing, and each
# expert that gets any rows must read all of its weights. Two things follow.
#
# - **More weights per call at small batch.** A token touches *k* experts; a batch touches about
#   *E*·(1 − (1 − *k*/*E*)<sup>*b*</sup>) of them, all *E* after a few dozen tokens. The layer
#   reads up to *E*/*k* times the weights of its dense twin for the same arithmetic.
# - **The knee moves out by about E/k.** Each expert is a Linear layer that turns compute-bound at
#   the usual critical batch *b*\* rows. It gets only *b·k/E* of the batch, so the whole layer
#   needs a batch of about *b*\*·*E*/*k* before arithmetic, not weight reads, sets its time.
#
# Routing skew, here a router bias −skew·ln(1 + expert index) that makes low-numbered experts
# popular, concentrates rows on a few experts. **Expert choice** turns routing around: each expert
# takes its top *C* = ⌈*b·k/E*⌉ tokens, so every expert gets exactly *C* rows and all shapes are
# fixed in advance (so a CUDA graph can capture it), at the price of tokens that no expert takes
# and tokens that several take.

# %% tags=["hide-input"]
from IPython.display import HTML, Markdown, display

from benchmarks.analysis import curves as report
from benchmarks.site import charts
from benchmarks.site import text as txt

data = report.load_site_data()
takeaways = []


def moe_records(run):
    return [r for r in run.records if r["workload"] == "moe" and r["status"] == "ok"]


def skew_table(run, records):
    """Latency and busiest-expert load per token-choice skew at each batch size."""
    by = {}
    for r in records:
        p = r["params"]
        if p["variant"] != "token-choice":
            continue
        shape = (p["experts"], p["top_k"], r["dtype"], r["mode"])
        by.setdefault(shape, {}).setdefault(r["batch"], {})[p["skew"]] = r
    tables = []
    for (experts, top_k, dtype, mode), batches in sorted(by.items()):
        skews = sorted({s for row in batches.values() for s in row})
        rows = []
        for batch in sorted(batches):
            cells = batches[batch]
            base = cells.get(0.0)
            row = [str(batch)]
            for skew in skews:
                r = cells.get(skew)
                if r is None:
                    row.append("–")
                    continue
                ratio = f" ({txt.sig(r['median_s'] / base['median_s'], 3)}×)" if base and skew else ""
                row.append(
                    f"{txt.fmt_time(r['median_s'])}{ratio}; busiest expert {r['routing']['max_load']} rows, "
                    f"{r['routing']['touched_experts']} experts"
                )
            rows.append(row)
        headers = ["batch", *(f"skew {s:g}" + (" (uniform)" if s == 0 else "") for s in skews)]
        caption = f"Token choice, E={experts}, k={top_k}, {dtype}, {mode}, on {txt.device_label(run)}"
        tables.append((experts, top_k, skews, batches, txt.html_table(headers, rows, caption=caption)))
    return tables


def _by_shape(curves):
    grouped = {}
    for curve in curves:
        grouped.setdefault((curve.params.get("experts"), curve.params.get("top_k")), []).append(curve)
    return grouped


def device_section(run):
    parts = []
    slug = run.device["slug"]
    kind = txt.kind_word(run)
    records = moe_records(run)
    intro = f"<strong>{txt.h(txt.device_label(run))}</strong> ({kind} run; {txt.h(txt.provenance(run))})."
    if kind == "CPU":
        intro += " A CPU runs one expert after another on the same cores; it shows the cost model, not a GPU's."
    parts.append(f"<p>{intro}</p>")
    if not records:
        parts.append("<p>This run has no MoE measurement.</p>")
        return parts
    found = [c for c in report.curves(run, "moe") if len(c.points) >= 2]
    for (dtype, mode, cache), group in report.group_by(found, "dtype", "mode", "cache").items():
        for (experts, top_k), shaped in _by_shape(group).items():
            key = f"moe-{slug}-e{experts}-k{top_k}-{dtype}-{mode}-{cache}"
            where = f"{txt.device_label(run)}, {dtype}, {mode}, cache {cache}"
            parts.append(f"<h3>E={experts}, k={top_k}: {txt.h(dtype)}, {txt.h(mode)}, cache {txt.h(cache)}</h3>")
            verdicts = "; ".join(f"{c.label}: {txt.knee_verdict(c)}" for c in shaped)
            parts.append(
                charts.figure(
                    charts.latency_chart(shaped, f"MoE layer against its dense twin: E={experts}, top-{top_k}"),
                    f"{key}-latency",
                    f"MoE latency against batch (E={experts}, k={top_k}, {dtype}, {mode})",
                    f"Log-log chart of median latency per call against batch size for an MoE layer with {experts} "
                    f"experts and top-{top_k} routing at several routing skews, expert choice, and the dense FFN "
                    f"with the same active parameters, on {where}, with the roofline prediction dashed. "
                    f"{verdicts}. Data: {txt.provenance(run)}.",
                )
            )
            dense = next((c for c in shaped if c.params.get("variant") == "dense"), None)
            uniform = next(
                (c for c in shaped if c.params.get("variant") == "token-choice" and not c.params.get("skew")), None
            )
            if dense and uniform and dense.knee and uniform.knee:
                moved = uniform.knee.batch / dense.knee.batch
                takeaways.append(
                    f"{txt.device_label(run)}, E={experts}, k={top_k} ({mode}): measured knee "
                    f"{txt.fmt_batch(uniform.knee.batch)} (uniform token choice) against "
                    f"{txt.fmt_batch(dense.knee.batch)} (dense), {txt.sig(moved, 2)}× for an expected "
                    f"E/k = {experts / top_k:g}×."
                )
    for experts, top_k, skews, batches, table in skew_table(run, records):
        parts.append(f"<h3>The cost of skew, E={experts}, k={top_k}</h3>")
        parts.append(table)
        largest = max(batches)
        row = batches[largest]
        if 0.0 in row and max(skews) in row and max(skews) > 0:
            ratio = row[max(skews)]["median_s"] / row[0.0]["median_s"]
            takeaways.append(
                f"{txt.device_label(run)}, E={experts}, k={top_k}: at batch {largest}, skew {max(skews):g} "
                f"takes {txt.sig(ratio, 3)}× the time of uniform routing while its busiest expert gets "
                f"{row[max(skews)]['routing']['max_load']} rows against {row[0.0]['routing']['max_load']}."
            )
    load_rows = [
        {
            "series": f"E={r['params']['experts']} k={r['params']['top_k']} skew {r['params']['skew']:g}",
            "batch": r["batch"],
            "max_load": r["routing"]["max_load"],
            "ms": r["median_s"] * 1e3,
        }
        for r in records
        if r["params"]["variant"] == "token-choice" and r.get("routing")
    ]
    if load_rows:
        dtype = records[0]["dtype"]
        parts.append(
            charts.figure(
                charts.load_chart(
                    load_rows,
                    "Latency against the busiest expert's rows (token choice)",
                    [
                        f"{txt.device_label(run)} · {dtype} · eager · cache: {records[0]['cache']}",
                        txt.provenance(run),
                    ],
                ),
                f"moe-{slug}-load",
                "Latency against the busiest expert's load",
                f"Log-log scatter of median latency per call against the number of rows routed to the busiest "
                f"expert, one point per batch size and routing skew, token choice, on {txt.device_label(run)}. "
                f"Data: {txt.provenance(run)}.",
            )
        )
    dropped = [
        (r["batch"], r["routing"]["dropped_tokens"])
        for r in records
        if r["params"]["variant"] == "expert-choice" and "dropped_tokens" in r.get("routing", {})
    ]
    if dropped:
        seen = sorted(set(dropped))
        text = ", ".join(f"{d} of {b}" for b, d in seen)
        parts.append(
            f"<p><strong>What expert choice drops.</strong> Tokens that no expert took (their output is zero), per "
            f"batch size: {text}.</p>"
        )
    return parts


charts.show_device_sections(data.shown, device_section, "<p>No results are committed yet.</p>")

# %% [markdown]
# ## When skew costs time
#
# The token-choice layer here runs its experts one after another on one device. Then every
# assignment is computed exactly once whatever the routing, and skew changes only how many experts
# are touched: fewer experts means fewer weights read and fewer kernels launched, so at small and
# medium batches a skewed router can even be *faster*. The busiest expert sets the latency when
# experts run side by side: one expert per GPU (expert parallelism), or one grouped kernel whose
# longest group finishes last. There, each step waits for the expert with the most rows, and a
# capacity limit (or expert choice) caps that load by dropping or rerouting tokens instead.

# %% tags=["hide-input"]
lines = [f"- {txt.esc(t)}" for t in takeaways]
display(Markdown("\n".join(lines) if lines else "No MoE measurement is committed yet."))
gpu_note = "" if data.gpus else " Every measurement here is from a CPU; a GPU run will appear here once committed."
display(
    HTML(
        '<div class="admonition success"><p class="admonition-title">Takeaway</p><p>An MoE layer reads the '
        "weights of every expert its batch touches, so at small batch it costs more than its dense twin, and it "
        "stays memory-bound to a batch about E/k times larger. Whether routing skew costs time depends on how the "
        "experts run: measure your own dispatch, and look at the busiest expert's rows, not the average."
        f"{gpu_note}</p></div>"
    )
)
