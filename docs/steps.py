# %% [markdown]
# # Why some batch sizes are suddenly slower
#
# The original article asks this in its title and then doubles the batch at every step, so it
# cannot see the answer: the slowdowns sit between the powers of two. This page sweeps one Linear
# layer (`snippets/linear.py`, a single matrix multiply whose M dimension is the batch) one batch
# size at a time, finds the jumps that stand out from the run's own noise, and records which
# kernel the matrix library chose, so each jump can be matched to its cause.
#
# ## Tiles and waves
#
# A GPU matrix library does not compute the output row by row. It cuts the output, a
# batch × out_features matrix, into tiles of T<sub>M</sub> × T<sub>N</sub> elements (64 to 256 on a side),
# gives each tile to one thread block, and runs the blocks on the streaming multiprocessors (SMs),
# about one tile per SM at a time. For a batch *b* and *N* output features:
#
# $$\text{tiles}(b) = \lceil b / T_M \rceil \cdot \lceil N / T_N \rceil$$
#
# $$\text{waves}(b) = \lceil \text{tiles}(b) / \text{SMs} \rceil$$
#
# - **Tile quantization.** One row past a multiple of T<sub>M</sub> adds a whole row of tiles that are
#   almost empty but cost nearly a full tile's time each.
# - **Wave quantization.** When the tile count passes a multiple of the SM count, the extra tiles
#   run in one more wave while most SMs wait. On a 132-SM H200 with 128 × 256 tiles and
#   N = 8192, a row of tiles is 32 tiles, so a wave holds just over four rows of tiles.
# - **Kernel switches.** At small batches the library may pick a different kernel (a
#   matrix-vector kernel, a split-K kernel, another tile shape), with its own cost.
#
# These steps only show once the layer is compute-bound. Below the knee the time is the time to
# read the weights, whatever the tiles do.

# %% tags=["hide-input"]
from IPython.display import HTML, Markdown, display

from benchmarks.analysis import curves as report
from benchmarks.analysis.steps import curve_from_records, explain_step, find_steps, free_batch_up_to, noise_level
from benchmarks.site import charts
from benchmarks.site import text as txt

data = report.load_site_data()


def linear_groups(run):
    """(dtype, mode, cache, params) -> ok records of the run's Linear sweep."""
    groups = {}
    for record in run.records:
        if record["workload"] == "linear":
            key = (record["dtype"], record["mode"], record["cache"], tuple(sorted(record["params"].items())))
            groups.setdefault(key, []).append(record)
    return groups


def plateaus(points, free):
    """Runs of batch sizes that cost no more than the first of the run, in batch order."""
    found, index = [], 0
    batches = [p.batch for p in points]
    while index < len(points):
        start = points[index].batch
        end = free[start]
        found.append((start, end))
        index = batches.index(end) + 1
    return found


summary = []


def device_section(run):
    parts = []
    slug = run.device["slug"]
    kind = txt.kind_word(run)
    sms = run.device.get("sm_count")
    groups = linear_groups(run)
    intro = f"<strong>{txt.h(txt.device_label(run))}</strong> ({kind} run; {txt.h(txt.provenance(run))})."
    if kind == "CPU":
        intro += (
            " A CPU has no SMs and its matrix library names no kernels to the profiler (it sees only "
            "<code>aten::addmm</code>), so only the tile-boundary test applies here; the CPU's own "
            "blocking over cores and vector registers has no fixed tile this page can check."
        )
    elif sms:
        intro += f" This GPU has {sms} SMs."
    parts.append(f"<p>{intro}</p>")
    if not groups:
        parts.append("<p>This run has no Linear-layer sweep.</p>")
        return parts
    for (dtype, mode, cache, params), records in sorted(groups.items()):
        points = curve_from_records(records)
        if len(points) < 4:
            continue
        params = dict(params)
        out_features = params.get("out_features", 0)
        label = f"{params.get('in_features')}→{out_features}, {dtype}"
        steps = find_steps(points)
        noise = noise_level(points)
        kernels = {r["batch"]: r["kernels"] for r in records if r.get("kernels")}
        causes = [explain_step(step, kernels, out_features, sms) for step in steps]
        explained = sum(bool(c) for c in causes)
        summary.append((run, label, mode, len(steps), explained, noise))
        key = f"steps-{slug}-{dtype}-{mode}-{cache}"
        parts.append(f"<h3>Linear {txt.h(label)}, {txt.h(mode)}, cache {txt.h(cache)}</h3>")
        subtitle = [
            f"{txt.device_label(run)} · {dtype} · {mode} · cache: {cache}",
            txt.provenance(run),
        ]
        parts.append(
            charts.figure(
                charts.steps_chart([(label, points)], {label: steps}, f"Every batch size: Linear {label}", subtitle),
                key,
                f"Fine batch sweep of a Linear {label} layer ({mode})",
                f"Median latency per call (top) and latency per row (bottom, log scale) against batch size for one "
                f"Linear layer with {params.get('in_features')} inputs and {out_features} outputs in {dtype} on "
                f"{txt.device_label(run)}, {mode}, cache {cache}. Dashed rules mark the {len(steps)} step(s) "
                f"detected above the run's noise (typical standard error {txt.sig(100 * noise, 2)} % of the "
                f"median). Data: {txt.provenance(run)}.",
            )
        )
        text = (
            f"{len(points)} batch sizes from {points[0].batch} to {points[-1].batch}; typical standard error of a "
            f"point's median: {txt.sig(100 * noise, 2)} %. A step is a rise in level, beyond the curve's local "
            f"trend, larger than 4 combined standard errors. "
        )
        if steps:
            text += (
                f"{len(steps)} step(s) found; the tile/wave model or a recorded kernel switch accounts for "
                f"{explained} of them, and {len(steps) - explained} have no explanation this page can check."
            )
        else:
            text += "No step stands out from the noise on this curve."
        parts.append(f"<p>{text}</p>")
        if steps:
            rows = []
            for step, cause in zip(steps, causes):
                rows.append(
                    [
                        f"{step.before} → {step.after}",
                        f"+{txt.sig(100 * step.relative, 2)} %",
                        txt.sig(step.sigmas, 2),
                        "<br>".join(txt.h(c) for c in cause) or "not explained by tiles, waves or a kernel switch",
                    ]
                )
            parts.append(
                txt.html_table(
                    ["batch", "jump", "jump ÷ std. error", "likely cause"],
                    rows,
                    caption=f"Detected steps: Linear {label}, {mode}, on {txt.device_label(run)}",
                    raw=[3],
                )
            )
        free = free_batch_up_to(points)
        spans = plateaus(points, free)
        cheap = [(start, end) for start, end in spans if end > start]
        shown = ", ".join(f"{start}–{end}" for start, end in cheap[:12])
        more = f" and {len(cheap) - 12} more" if len(cheap) > 12 else ""
        parts.append(
            "<p><strong>Free batch sizes.</strong> Within each of these ranges every batch costs no more than the "
            f"first one, within twice the noise: {shown or 'none'}{more}. A batch at the start of a range pays for "
            "the whole range, so round it up to the range's end.</p>"
        )
    return parts


charts.show_device_sections(data.shown, device_section, "<p>No results are committed yet.</p>")

# %% [markdown]
# ## What the measurements say
#
# A step counts as explained when one of three checks holds: a recorded kernel name changes
# across it; a multiple of 64, 128 or 256 rows lies inside it (a tile boundary); or, with the
# tile shape that the kernel's name announces and the device's SM count, the number of waves
# grows across it. Steps that none of these explain are reported as such, not guessed at.

# %% tags=["hide-input"]
lines = []
for run, label, mode, count, explained, noise in summary:
    device = txt.device_label(run)
    lines.append(
        f"- {txt.esc(device)}, Linear {label} ({mode}): {count} step(s) above a typical noise of "
        f"{txt.sig(100 * noise, 2)} %, {explained} explained, {count - explained} not."
    )
display(Markdown("\n".join(lines) if lines else "No Linear-layer sweep is committed yet."))
gpu_note = (
    ""
    if data.gpus
    else " Every sweep here is from a CPU; the tile and wave steps this page explains are a GPU's, and "
    "appear here once a GPU run is committed."
)
display(
    HTML(
        '<div class="admonition success"><p class="admonition-title">Takeaway</p><p>Sweep batch sizes one by '
        "one, not by doubling: the slow sizes sit just past tile and wave boundaries. Choose a batch at the end "
        "of a free range (the last size before a step), never the first size after one, and check the range on "
        f"your own device, since tile shapes and SM counts differ.{gpu_note}</p></div>"
    )
)
