# %% [markdown]
# # How batching works on modern GPUs
#
# **The question.** Send one input through a neural network, then send a batch of 64: on a GPU
# the second call often takes barely longer than the first. Why does the time stay flat as the
# batch grows, why does it then start to grow in proportion to the batch, and why do some batch
# sizes suddenly get slower than their neighbours?

# %% tags=["hide-input"]
from IPython.display import HTML, Markdown, display

from benchmarks.analysis import curves as report
from benchmarks.analysis.datasheet import GPUS
from benchmarks.site import charts
from benchmarks.site import text as txt

data = report.load_site_data()
curve = report.headline_curve(data)

# %% [markdown]
# ## The answer in three sentences
#
# A layer must read all of its weights once per call whatever the batch, and below a critical
# batch that read (or, for small models, the fixed cost of launching the work) takes longer
# than the arithmetic, so extra rows ride along almost for free. Past the *ridge point*, where
# the work per byte read reaches the device's peak FLOP/s divided by its memory bandwidth, the
# arithmetic dominates and the time grows in proportion to the batch; for a large Linear layer
# that batch is about (FLOP/s ÷ bandwidth) × (bytes per element ÷ 2). Sudden slowdowns at
# particular sizes come from how the matrix library cuts the work into tiles and waves across the
# processors, so a batch just past a boundary pays for a nearly empty extra tile.
#
# ## The headline measurement

# %% tags=["hide-input"]
if curve is None:
    display(
        HTML(
            '<div class="admonition warning"><p class="admonition-title">No results yet</p>'
            "<p>No results file is committed under <code>benchmarks/results/</code>, so this site has "
            "nothing measured to show. Run <code>nox -s bench docs</code> on a machine with a GPU and "
            "commit the file it writes.</p></div>"
        )
    )
else:
    run = curve.run
    kind = txt.kind_word(run)
    chart = charts.headline_chart(curve, f"Latency and throughput against batch: {curve.shape}, measured on a {kind}")
    description = (
        f"Two log-log panels for the {curve.shape} ({curve.dtype}, {curve.mode}, cache {curve.cache}) on "
        f"{txt.device_label(run)}. Left: median latency per call with its interquartile band; right: rows "
        f"per second. Solid lines are measured, dashed lines the roofline prediction from the run's own "
        f"ceilings. {txt.knee_verdict(curve).capitalize()}. Data: {txt.provenance(run)}."
    )
    display(charts.figure(chart, "home-headline", f"{curve.shape} on a {kind}", description))

# %% tags=["hide-input"]
if curve is not None:
    first, last = curve.points[0], curve.points[-1]
    lines = [
        f"On **{txt.esc(txt.device_label(run))}**, the {curve.shape} in {curve.dtype} "
        f"({txt.MODE_WORDS.get(curve.mode, curve.mode)}; {txt.cache_words(curve)}) takes "
        f"**{txt.fmt_time(first.median_s)}** at batch {first.batch} and "
        f"**{txt.fmt_time(last.median_s)}** at batch {last.batch}: "
        f"{txt.sig(last.batch / first.batch, 3)}× the rows for "
        f"{txt.sig(last.median_s / first.median_s, 3)}× the time.",
        f"The roofline of this run's own measured ceilings "
        f"({txt.fmt_rate(curve.ceilings.flops_per_s, 'FLOP/s')} and "
        f"{txt.fmt_rate(curve.ceilings.bytes_per_s, 'B/s')}) gives a {txt.knee_verdict(curve)}."
        if curve.ceilings
        else "This run has no measured ceilings for this dtype, so it makes no prediction.",
    ]
    ratio = curve.overhead_ratio()
    if ratio and ratio > 2:
        lines.append(
            f"At batch {first.batch} the measured time is {txt.sig(ratio, 2)}× the roofline's: there the "
            "call is bound by fixed per-call costs (overhead), not by memory, which is the flat region's "
            "other cause."
        )
    lines.append(f"Chart data: {txt.esc(txt.provenance(run))}.")
    display(Markdown("\n\n".join(lines)))
    if not data.gpus:
        display(
            HTML(
                '<div class="admonition warning"><p class="admonition-title">These results come from a CPU</p>'
                f"<p>No GPU run is committed yet, so every measured chart on this site shows a CPU "
                f"({txt.h(txt.device_label(run))}). A CPU has a roofline too, but its ridge point and "
                "overheads differ from a GPU's, so do not read these numbers as GPU numbers. To produce GPU "
                "results, run <code>nox -s bench docs</code> on a machine with an NVIDIA GPU and commit the "
                "file it writes under <code>benchmarks/results/</code> "
                f'(see <a href="{charts.SITE_ROOT}reproduce/">Reproduce</a>); '
                "this chart then switches to the GPU automatically.</p></div>"
            )
        )

# %% [markdown]
# ## Where the results come from
#
# Each device's newest complete run is shown; older runs stay in the repository and are listed
# here. The raw results files (every timed sample) can be downloaded from the last column.

# %% tags=["hide-input"]
rows = []
for run in data.shown:
    for shown, each in [(True, run), *((False, r) for r in data.others(run))]:
        device = each.device
        detail = (
            f"{device.get('sm_count') or '?'} SMs, {txt.fmt_bytes(device['l2_bytes'])} L2"
            if device["kind"] == "cuda" and device.get("l2_bytes")
            else f"{device['threads']} thread{'s' * (device['threads'] != 1)}"
        )
        href = f"{charts.SITE_ROOT}results/{device['slug']}/{txt.h(each.id)}.json"
        link = f'<a href="{href}">{txt.h(each.id)}.json</a>'
        rows.append(
            [
                txt.kind_word(each),
                device["name"],
                detail,
                each.doc["run"].get("profile", ""),
                txt.run_date(each),
                (each.doc["run"].get("git_commit") or "unknown")[:7],
                "yes" if each.complete else "no (interrupted)",
                "charted" if shown else "older",
                link,
            ]
        )
if rows:
    display(
        HTML(
            txt.html_table(
                ["kind", "device", "detail", "profile", "date", "commit", "complete", "on this site", "results file"],
                rows,
                raw=[8],
            )
        )
    )
else:
    display(Markdown("No results are committed yet."))

# %% tags=["hide-input"]
gpu_names = ", ".join(g.name for g in GPUS)
display(
    HTML(
        '<div class="admonition success"><p class="admonition-title">Takeaway</p>'
        "<p>Batching is free only while something other than arithmetic sets the time: reading the weights, "
        "or fixed per-call overhead. Find the knee of your own device with <code>nox -s bench docs</code>; "
        f'the <a href="{charts.SITE_ROOT}theory/">Theory</a> page gives the datasheet ridge points of the '
        f'{txt.h(gpu_names)}, the <a href="{charts.SITE_ROOT}calculator/">Calculator</a> predicts any of them '
        f'for your layer sizes, and the <a href="{charts.SITE_ROOT}mlp/">MLP</a> page compares every measured '
        "knee with its prediction.</p></div>"
    )
)
