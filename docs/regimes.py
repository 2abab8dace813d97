# %% [markdown]
# # Three regimes: overhead, memory, compute
#
# The original article sees noisy, flat curves for its small networks and puts them down to
# "overhead" without measuring it. A flat curve can have two quite different causes, and a
# roofline with two regimes (memory-bound, compute-bound) misses one of them:
#
# - **Overhead-bound.** The device finishes each kernel faster than the host can launch the
#   next one, so the time is the number of launches times the cost of one launch. The time stays
#   flat as the batch grows and as the layers get wider, and grows only with the number of layers
#   (more launches). This flat region is a false knee: it says nothing about the hardware's
#   arithmetic or memory.
# - **Memory-bound.** The time is the bytes moved over the bandwidth. Flat in the batch while the
#   weights dominate the bytes, but it grows with the square of the width (a layer has width²
#   weights: about 4× per doubling).
# - **Compute-bound.** The time is the FLOPs over the arithmetic rate: it grows with the batch.
#
# Two more traps sit inside the memory regime. The bandwidth depends on where the data is: a
# modern GPU's L2 cache holds tens of megabytes, so a small model timed in a hot loop is read
# from L2, not from HBM, and looks faster than it will be in a real server. And the "peak" rates
# on a datasheet are not what a kernel gets. This page measures all of it: the bandwidth at every
# working-set size, the matmul rate at every size and dtype, the launch cost per kernel, and one
# MLP with its weights resident in cache and rotated through memory.

# %% tags=["hide-input"]
from IPython.display import HTML, Markdown, display

from benchmarks.analysis import curves as report
from benchmarks.analysis import regimes
from benchmarks.analysis.datasheet import find_gpu
from benchmarks.site import charts, charts_hardware
from benchmarks.site import text as txt

data = report.load_site_data()
takeaways = []


def plateau_table(run):
    """Median read and copy bandwidth per cache level, and the words for the takeaway."""
    levels = regimes.cache_levels(run)
    found = {kind: regimes.plateaus(regimes.bandwidth_points(run, kind), levels) for kind in ("read", "copy")}
    names = list(dict.fromkeys(p.name for kind in found.values() for p in kind))
    if not names:
        return "", ""
    rows = []
    for name in names:
        cells = [name]
        for kind in ("read", "copy"):
            match = next((p for p in found[kind] if p.name == name), None)
            cells.append(
                f"{txt.fmt_rate(match.bytes_per_s, 'B/s')} ({txt.fmt_bytes(match.low_bytes)}–"
                f"{txt.fmt_bytes(match.high_bytes)}, {match.points} size{'s' * (match.points != 1)})"
                if match
                else "–"
            )
        rows.append(cells)
    note = (
        "<p>The copy's smallest working sets measure the cost of each copy call as much as the cache: one pass "
        "is one call. The read kernel passes over its buffer many times in one call, so its plateaus are the "
        "cache levels' own.</p>"
    )
    table = txt.html_table(
        ["level", "read: median bandwidth (working sets)", "copy: median bandwidth (working sets)"],
        rows,
        caption=f"Bandwidth plateaus on {txt.device_label(run)}: working sets that fit each cache level "
        "(edges left out), and those at least 4× the largest cache (memory)",
    )
    words = ", ".join(f"{p.name} {txt.fmt_rate(p.bytes_per_s, 'B/s')}" for p in found["read"])
    return table + note, words


def matmul_table(run, gpu):
    rows = []
    for dtype, points in regimes.matmul_points(run).items():
        n, best = max(points, key=lambda p: p[1])
        sheet = gpu.peak_flops.get(dtype) if gpu else None
        rows.append(
            [
                dtype,
                txt.fmt_rate(best, "FLOP/s"),
                str(n),
                txt.fmt_rate(sheet, "FLOP/s") if sheet else "–",
                f"{best / sheet:.0%}" if sheet else "–",
            ]
        )
    return txt.html_table(
        ["dtype", "best measured", "at n", "datasheet (dense)", "measured ÷ datasheet"],
        rows,
        caption=f"Square-matmul rate on {txt.device_label(run)}",
    )


def ceilings_section(run, slug, gpu):
    parts = []
    if not run.ceilings.get("curves"):
        return ["<p>This run predates the ceiling curves: it has only the single copy and matmul ceilings.</p>"]
    table, words = plateau_table(run)
    parts.append(
        charts.figure(
            charts_hardware.bandwidth_chart(run, gpu, "Bandwidth against working-set size"),
            f"regimes-{slug}-bandwidth",
            "Copy and read bandwidth against working-set size",
            f"Log-log chart of measured bandwidth in GB/s against the bytes one pass touches, from a few KiB to far "
            f"beyond the last cache, on {txt.device_label(run)}, for a copy (bytes read plus written) and a read "
            f"that passes over one buffer many times in one kernel; the cache sizes the device reports are marked. "
            f"Read plateaus: {words or 'none found'}. Data: {txt.provenance(run)}.",
        )
    )
    parts.append(table)
    if words:
        takeaways.append(
            f"{txt.device_label(run)}: read bandwidth by where the data sits: {words}. A working set that fits "
            "a cache is read several times faster than one that does not."
        )
    parts.append(
        charts.figure(
            charts_hardware.matmul_chart(run, gpu, "Matmul rate against size, per dtype"),
            f"regimes-{slug}-matmul",
            "Square-matmul FLOP/s against matrix size",
            f"Log-log chart of measured FLOP/s of an n×n by n×n matmul against n for each dtype measured on "
            f"{txt.device_label(run)}"
            + (", with the datasheet's dense peaks dashed" if gpu else "")
            + ". Small matrices leave the device partly idle; where the rate peaks depends on the device and dtype. "
            f"Data: {txt.provenance(run)}.",
        )
    )
    parts.append(matmul_table(run, gpu))
    return parts


def overhead_section(run, slug):
    parts = []
    tiny = regimes.mlp_curves(run, None, "resident")
    widths = sorted({c.params["width"] for c in tiny if len(c.points) >= 2})
    shown = [c for c in tiny if c.params["width"] in widths and len(c.points) >= 2]
    if not shown:
        return ["<p>This run has no MLP with resident weights in several modes.</p>"]
    dtype = shown[0].dtype
    modes = list(dict.fromkeys(c.mode for c in shown))
    parts.append(
        charts.figure(
            charts.mode_chart([c for c in shown if c.dtype == dtype], "The same MLPs in every execution mode"),
            f"regimes-{slug}-modes",
            f"Latency against batch per execution mode ({dtype}, weights resident)",
            f"Small multiples, one per MLP width, of median latency against batch size for each execution mode "
            f"measured ({', '.join(modes)}) on {txt.device_label(run)}, {dtype}, weights resident, with the "
            f"roofline dashed. Data: {txt.provenance(run)}.",
        )
    )
    smallest = widths[0]
    rows = regimes.overhead_rows(run, smallest)
    cost = "launch" if run.device.get("kind") == "cuda" else "framework dispatch"
    if rows:
        table_rows = []
        for r in rows:
            floor = regimes.cache_floor(run, r.bytes)
            fused = r.mode == "compile"  # generated code fuses ops: the op count is not known
            table_rows.append(
                [
                    f"8×{r.width}",
                    r.dtype,
                    r.mode,
                    txt.fmt_time(r.batch1_s),
                    "–" if fused else str(r.ops),
                    "–" if fused else txt.fmt_time(r.per_op_s),
                    txt.fmt_time(r.roofline_s) if r.roofline_s else "–",
                    f"{txt.fmt_time(floor[1])} ({floor[0]})" if floor else "–",
                    f"{r.batch1_s / floor[1]:,.0f}×" if floor else "–",
                ]
            )
        parts.append(
            txt.html_table(
                [
                    "MLP",
                    "dtype",
                    "mode",
                    "batch 1",
                    "ops",
                    "per op",
                    "roofline (memory)",
                    "read at cache speed",
                    "batch 1 ÷ cache read",
                ],
                table_rows,
                caption=f"The smallest MLP at batch 1 on {txt.device_label(run)}: time per op bounds the {cost} "
                "cost of one op from above (it includes the op's own tiny work). Its weights are resident, so the "
                "fair floor is reading its bytes at the read plateau of the cache level that holds them.",
            )
        )
        eager = next((r for r in rows if r.mode == "eager"), None)
        saved = regimes.launch_cost_saved(rows)
        if eager:
            floor = regimes.cache_floor(run, eager.bytes)
            text = (
                f"{txt.device_label(run)}: the 8×{smallest} MLP takes {txt.fmt_time(eager.batch1_s)} at batch 1 "
                f"in eager mode, {txt.fmt_time(eager.per_op_s)} of {cost} per op"
            )
            if floor:
                text += (
                    f", {eager.batch1_s / floor[1]:,.0f}× the time to read its "
                    f"{txt.fmt_bytes(eager.bytes)} from {floor[0]}"
                )
            if saved is not None:
                text += f"; a CUDA graph saves {txt.fmt_time(saved)} per kernel"
            takeaways.append(text + ".")
        compiled = next((r for r in rows if r.mode == "compile"), None)
        if eager and compiled:
            ratio = compiled.batch1_s / eager.batch1_s
            verdict = "slower than" if ratio > 1.02 else "no faster than" if ratio > 0.95 else "faster than"
            sentence = (
                f"{txt.device_label(run)}: torch.compile (default mode) runs the 8×{smallest} MLP at batch 1 in "
                f"{txt.fmt_time(compiled.batch1_s)}, {ratio:.2f}× the eager time: {verdict} eager here."
            )
            takeaways.append(sentence)
            parts.append(f"<p>{txt.h(sentence.split(': ', 1)[1])}</p>")
    return parts


def cache_section(run, slug):
    parts = []
    for width in (1024,):
        twins = [c for c in regimes.mlp_curves(run, width) if len(c.points) >= 2]
        pairs = report.group_by(twins, "dtype", "mode")
        for (dtype, mode), group in pairs.items():
            if len({c.cache for c in group}) < 2:
                continue
            parts.append(
                charts.figure(
                    charts_hardware.cache_state_chart(group, f"8×{width} MLP: weights resident against rotated"),
                    f"regimes-{slug}-cache-{dtype}-{mode}",
                    f"Latency against batch with weights resident and rotated ({dtype}, {mode})",
                    f"Log-log chart of median latency against batch size for the 8×{width} MLP on "
                    f"{txt.device_label(run)}, {dtype}, {mode}, once timed in a hot loop (weights resident) and "
                    f"once rotating through weight copies larger than the cache. Data: {txt.provenance(run)}.",
                )
            )
            resident = next(c for c in group if c.cache == "resident")
            rotated = next(c for c in group if c.cache == "rotated")
            first_r, first_m = regimes.point_at(resident, 1), regimes.point_at(rotated, 1)
            if first_r and first_m:
                text = (
                    f"At batch 1 the resident loop reports {txt.fmt_time(first_r.median_s)} and the rotated one "
                    f"{txt.fmt_time(first_m.median_s)}: {first_m.median_s / first_r.median_s:.2f}×."
                )
                levels = regimes.cache_levels(run)
                weights = regimes.weight_bytes(resident)
                if levels and weights >= levels[-1]["bytes"]:
                    text += (
                        f" Its {txt.fmt_bytes(weights)} of weights do not fit in this device's largest cache "
                        f"({levels[-1]['name']}, {txt.fmt_bytes(levels[-1]['bytes'])}), so both loops read memory "
                        "here; the width sweep below shows the trap at the widths that do fit."
                    )
                parts.append(f"<p>{txt.h(text)}</p>")
    best = None
    for dtype, mode in {(c.dtype, c.mode) for c in regimes.mlp_curves(run)}:
        rows = regimes.weight_bandwidth(run, dtype, mode, batch=1)
        if len({r.cache for r in rows}) == 2 and (best is None or len(rows) > len(best[2])):
            best = (dtype, mode, rows)
    if best:
        dtype, mode, rows = best
        memory = next(
            (p.bytes_per_s for p in regimes.plateaus(regimes.bandwidth_points(run, "read"), regimes.cache_levels(run))
             if p.name == "memory"),
            None,
        )  # fmt: skip
        subtitle = f"{txt.device_label(run)} · {dtype} · {mode} · batch 1 · cache: resident vs rotated"
        parts.append(
            charts.figure(
                charts_hardware.weight_bandwidth_chart(
                    run, rows, memory, "Where the weights stop fitting in cache", subtitle
                ),
                f"regimes-{slug}-weight-bandwidth",
                f"Weight bandwidth against weight size, resident and rotated ({dtype}, {mode}, batch 1)",
                f"Log-log chart of an 8-layer MLP's weight bytes divided by its batch-1 latency, against the size of "
                f"its weights, for widths {', '.join(str(w) for w in sorted({r.width for r in rows}))} on "
                f"{txt.device_label(run)}, {dtype}, {mode}, with weights resident and rotated; cache sizes are "
                f"marked. Data: {txt.provenance(run)}.",
            )
        )
        by = {(r.cache, r.width): r for r in rows}
        both = sorted(w for (cache, w) in by if cache == "resident" and ("rotated", w) in by)
        if both:
            gap = max(both, key=lambda w: by[("resident", w)].bytes_per_s / by[("rotated", w)].bytes_per_s)
            ratio = by[("resident", gap)].bytes_per_s / by[("rotated", gap)].bytes_per_s
            largest = both[-1]
            takeaways.append(
                f"{txt.device_label(run)} ({dtype}, {mode}, batch 1): the cache trap is largest at width {gap} "
                f"({txt.fmt_bytes(by[('resident', gap)].weight_bytes)} of weights), where a hot loop reports "
                f"{ratio:.1f}× the weight bandwidth of rotated weights; at width {largest} "
                f"({txt.fmt_bytes(by[('resident', largest)].weight_bytes)}) the two differ by "
                f"{by[('resident', largest)].bytes_per_s / by[('rotated', largest)].bytes_per_s:.2f}×."
            )
    return parts


if not data.shown:
    display(HTML("<p>No results are committed yet.</p>"))
sections = {}
for run in data.shown:
    slug = run.device["slug"]
    gpu = find_gpu(run.device.get("name", "")) if run.device.get("kind") == "cuda" else None
    sections[slug] = (run, ceilings_section(run, slug, gpu), overhead_section(run, slug), cache_section(run, slug))


def show(index):
    for parts in sections.values():
        run = parts[0]
        kind = txt.kind_word(run)
        display(HTML(f"<h3>{txt.h(txt.device_label(run))} ({kind} run)</h3>"))
        for part in parts[index]:
            display(HTML(part) if isinstance(part, str) else part)


# %% [markdown]
# ## The ceilings, measured as curves
#
# A roofline needs two numbers, a bandwidth and an arithmetic rate, and both depend on size. The
# bandwidth chart times two kernels over working sets from a few kilobytes to several times the
# largest cache: a copy (bytes read plus bytes written) and a read that passes over one buffer
# many times inside a single kernel, so that even a buffer that fits in the first cache level is
# timed for long enough. Each plateau is a level of the memory hierarchy; the cliffs sit at the
# cache sizes. The matmul chart times square matrix products per dtype: small ones leave most of
# the device idle, large ones approach its peak. Predictions elsewhere on this site use the
# largest copy and the largest matmul of the same run.

# %% tags=["hide-input"]
show(1)

# %% [markdown]
# ## Launch overhead: the false knee
#
# In eager PyTorch every layer of an 8-layer Linear+ReLU MLP launches two kernels (the matmul with
# its bias, then the ReLU): 16 launches per forward pass. Each launch costs the host a few
# microseconds of Python, dispatcher and driver work. When a kernel's own work is shorter than
# that, the device waits for the host, and the measured time is launches × cost per launch, flat
# in the batch and flat in the width.
#
# Two tools aim at it. A **CUDA graph** records the kernels once and replays them with one
# launch. **torch.compile** traces the model, fuses element-wise work into fewer kernels and
# calls them from generated code with fewer Python layers; whether that pays at batch 1 depends
# on the device and the model, so it is measured here, not assumed. On a CPU nothing is
# launched: the per-op cost is the framework's dispatch. The charts below time the same MLPs,
# with their weights resident, in each mode the device supports (CUDA graphs need a GPU). A tiny
# 64-wide MLP does almost no work, so its time is the overhead itself; the 1024-wide one shows
# where the overhead stops mattering.

# %% tags=["hide-input"]
show(2)

# %% [markdown]
# ## The cache trap
#
# An 8-layer MLP of width 1024 has 8 M weights: 16 MiB in bf16, 32 MiB in fp32. That fits in the
# 50 MB L2 of an H100 or H200, and in the last-level cache of many server CPUs. Time it in a loop
# and, from the second call on, its weights come from cache: the curve shows cache bandwidth, not
# the memory bandwidth a server with many models, or one model far larger than the cache, will
# get. This site's default is to rotate every call through enough weight copies that together
# they exceed the cache three times over (`cache: rotated` on every chart); here the same MLP is
# also timed the naive way (`cache: resident`), and a width sweep at batch 1 shows where the
# weights stop fitting.

# %% tags=["hide-input"]
show(3)

# %% [markdown]
# ## Which regime am I in?
#
# Three questions, each answered by timing your own model twice:
#
# 1. **Does the time change with the width?** Double the hidden size at batch 1, which
#    quadruples the parameter count. If the time barely moves (well under 1.5×), you are paying
#    for launches, not for bytes or FLOPs: the overhead regime. Memory-bound layers take up to
#    about 4× as long.
# 2. **Does a CUDA graph or torch.compile cut the time?** If replaying a CUDA graph of the same
#    call takes well under the eager time (say below 0.6×), the host was the bottleneck.
# 3. **Does the time change with the batch?** Multiply the batch by 4. Flat (well under 2.5×)
#    after questions 1 and 2 came out "no": memory-bound, and batching is close to free. Close to
#    4×: compute-bound, and a bigger batch only adds latency.
#
# The table applies the test to the MLPs this site measured at batch 1 and 4 (eager calls).

# %% tags=["hide-input"]
signal_rows = []
for run in data.shown:
    eager = [c for c in regimes.mlp_curves(run) if c.mode == "eager" and len(c.points) >= 2]
    for curve in eager:
        wider = next(
            (
                c
                for c in regimes.mlp_curves(run, curve.params["width"] * 2)
                if c.dtype == curve.dtype and c.mode == "eager" and c.cache == curve.cache
            ),
            None,
        )
        s = regimes.signals(run, curve, wider)

        def cell(value):
            return f"{value:.2f}×" if value is not None else "not measured"

        signal_rows.append(
            [
                txt.device_label(run),
                f"8×{curve.params['width']} {curve.dtype}, {curve.cache}",
                cell(s.width_ratio),
                cell(s.graph_ratio),
                cell(s.compile_ratio),
                cell(s.batch_ratio),
                regimes.regime_of(s),
            ]
        )
if signal_rows:
    display(
        HTML(
            txt.html_table(
                [
                    "device",
                    "MLP (eager)",
                    "2× width, batch 1",
                    "graph ÷ eager",
                    "compile ÷ eager",
                    "4× batch (1 → 4)",
                    "regime at small batch",
                ],
                signal_rows,
                caption="The three-question test on measured curves: time ratios, and the regime they point to",
            )
        )
    )
else:
    display(HTML("<p>No MLP measurement is committed yet.</p>"))

# %% [markdown]
# ## Takeaways

# %% tags=["hide-input"]
lines = [f"- {txt.esc(t)}" for t in takeaways]
display(Markdown("\n".join(lines) if lines else "No measurement with ceiling curves is committed yet."))
gpu_note = (
    ""
    if data.gpus
    else " Every measurement on this page is from a CPU, where there are no CUDA graphs and the overhead is the "
    "framework's per-op cost; a GPU run will appear here once committed."
)
display(
    HTML(
        '<div class="admonition success"><p class="admonition-title">Takeaway</p><p>A flat latency curve is '
        "either the memory regime (real: batching is nearly free) or the overhead regime (a false knee: the host "
        "is the bottleneck). Tell them apart by changing the width and by replaying a CUDA graph. Then time with "
        "weights that do not sit in cache, or your numbers describe the cache, not the memory your model will be "
        f"read from in production.{gpu_note}</p></div>"
    )
)
