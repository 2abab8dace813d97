# %% [markdown]
# # Methodology: how every number is measured
#
# The harness lives in `benchmarks/` (the only part that imports torch is `benchmarks/measure/`).
# This page describes what it does; the settings quoted are read from the code when the site is
# built.

# %% tags=["hide-input"]
from benchmarks.site.pages import methodology

page = methodology.build()


# %% [markdown]
# ## Timers
#
# - **GPU**: CUDA events recorded on the stream around the timed calls, then synchronised; the
#   host clock never times GPU work. Each point is timed two ways: replaying a captured CUDA
#   graph (`graph`, close to what the hardware needs) and calling the model normally (`eager`,
#   what user code sees, including Python dispatch and one launch per kernel). Eager calls are
#   issued back to back inside one pair of events, so the host launches the next call while the
#   device still runs the last: the figure is about the larger of the host's time and the
#   device's time per call, the cost per call of a busy loop, not the latency of one request that
#   waits for its result before the next is sent (that adds one synchronisation per call).
# - **CPU**: `time.perf_counter` around the timed calls, with torch's intra-op thread count
#   fixed for the whole run and recorded in the results file (`device.threads`). The default is
#   every core but one, which keeps the operating system and the timing loop off the measured
#   cores. On a small shared machine this matters most: a parallel matmul waits for its slowest
#   thread, so when the host slows one core every thread waits, and the medians of repeated runs
#   drift far more with all cores busy than with one spare.
#
# ## Warm-up, repeats and the statistic
#
# Before a point is timed it runs for the profile's warm-up time (so allocator, kernel selection
# and caches settle), then the harness calibrates how many calls one *sample* needs to last at
# least the profile's minimum sample time, and a sample is the mean over those calls. Samples are
# taken in rounds: each round visits every point of the run (every workload, every curve, every
# batch size) once, in a fresh random order, so each point's samples span the whole run and a slow
# spell on a shared machine moves every point a little instead of one curve a lot. A point that
# needs fewer samples than there are rounds takes them in rounds spread evenly over the run. A
# point reports the **median** of its samples with the first and third quartiles (the band on
# every chart), and the raw samples are kept in the results file. `run --time-limit SECONDS` plans
# a run to end in time on its own measured ceilings (fewer samples per point first, then fewer batch
# sizes) and records the limit and what it cut; the limit covers the ceilings too, and one too small
# for anything is refused before any work. `python -m benchmarks list` gives each profile's estimated
# time from the same cost model. A run that timed no point is marked incomplete and never stands in
# for a device's newest good run; smoke runs, whose toy sizes are not measurements, are not shown.
#
# ## Kernel names
#
# For the fine Linear sweep, `torch.profiler` records which kernels one call runs at a sample of
# batch sizes (`kernels` in the results file), so a step in the time can be matched to a change
# of kernel or to the tile shape the kernel's name announces. It does so after every sample of the
# run is taken: a profiler session leaves its tracing attached to the process, which slows every
# later launch. A sampled batch without names says why in `kernels_error`. On a CPU the profiler
# only sees the operator (`aten::addmm`), not the BLAS kernel, so the quick profile records none.
#
# ## What the cache holds
#
# Small weights fit in the last-level cache (an 8×1024 MLP in bf16 is 16 MiB; see
# [Theory](../theory/)), and a loop that calls the same model again and again would then measure
# the cache rather than memory. By default the harness builds several copies of the weights and
# rotates through them call by call, so many that one pass over the copies, each with its batch's
# activations, spans at least three times the last-level cache (`cache: rotated`, with each point's
# number of copies in `weight_copies`: a large batch's activations fill the cache on their own,
# so it needs fewer copies than a small one). Copies are capped at 64: a point whose copies cannot
# span three cache sizes would still find its weights cached, so it is measured and labelled
# resident, or left to the resident curve where the run has one. `--cache resident` measures
# the hot-cache case on purpose. The quick profile's Linear sweep is cache-resident by design (a
# 4 MiB layer is compute-bound after a few rows on a CPU, and rotating 24 copies would multiply
# its time by 24). Every chart states which one it shows.
#
# ## Ceilings
#
# Predictions use ceilings measured on the same device in the same run, right before the
# workloads: the **copy bandwidth** of a large buffer copied within device memory (bytes read
# plus bytes written per second, the buffer far larger than any cache) and the **matmul rate** of
# a large square matrix product for each dtype (2·n³ FLOPs per call). Both are points of curves
# measured alongside: copy and read bandwidth against working-set size (a read is one kernel that
# sums one buffer many times over through a stride-0 view, so even a buffer that fits in L1 is timed
# for long enough), and matmul rate against n for every dtype the device has (on a GPU: fp32 with
# TF32 off, TF32, bf16, fp16 and, from compute capability 8.9, fp8 through `torch._scaled_mm` with
# fast accumulation, recorded as `fast_accum`). On a GPU each curve point replays a CUDA graph, so
# launch gaps do not hide the small sizes, and the copy curve starts at a 64 MiB working set: below
# it a copy lasts about as long as its launch, and the read curve is the instrument. The
# [three-regimes page](../regimes/) shows the curves. Datasheet figures appear beside measured ones,
# never instead of them.
#
# ## Execution modes
#
# `eager` times the calls user code makes, back to back; `graph` captures the call once in a CUDA graph and times
# its replays (one launch for all of its kernels); `compile` wraps the model in `torch.compile`
# (default mode, dynamic shapes, so one compilation serves every batch size, and `fullgraph=True`,
# so a graph break fails rather than timing Python between pieces), compiles inside the point's
# warm-up and times eager calls of the compiled model; the run records how many graphs it compiled
# (`compiled_graphs`). A compilation that fails is recorded
# as an error on every point of that curve, once, without retrying per batch size.
#
# ## Knees
#
# The [ridge batch](../glossary/#ridge-batch) is where the roofline's compute time overtakes its
# memory time, solved from the analytic FLOPs and bytes of each point and the measured ceilings
# (`benchmarks.analysis.roofline.roofline_model.crossing_batch`). The [measured knee](../glossary/#measured-knee)
# is the breakpoint of a continuous
# two-segment line fitted to log time against log batch (`benchmarks.analysis.roofline.roofline_model.detect_knee`),
# reported only when the curve grows at least like the square root of the batch past it and bends
# clearly; otherwise the site says that no knee was detected.
#
# ## Reading the decode tables
#
# *Ridge batch* is where the roofline's compute time overtakes its memory time, from the FLOPs
# and bytes counted for each point and the run's measured ceilings; "none" means the intensity
# stays below the ridge at every batch. *Measured knee* is where a two-segment fit of log time
# against log batch bends, with the fitted slopes either side: a slope near 0 below the knee is
# the MLP's flat region, a slope well above 0 means the time was already growing. The *KV share*
# columns are the cache's share of the bytes one step moves. In the MLP-condition table, *b*<sub>×</sub>
# and *I*<sub>∞</sub> come from the formulas at the top of the
# [decode page](../decode/) applied to the measured
# config, and the ridge batch there is where the same formulas cross the run's ridge intensity.
#
# ## Correctness and failures
#
# Before timing, each workload is checked against a float64 reference of the same weights (the
# `checks` section of the results file). Every configuration is set up before sampling starts, so
# the decode curves share 70 % of the memory left free once everything else is set up for their
# KV caches (curves that need little get it all, the rest split what is left); a batch whose cache
# would exceed its curve's part is not attempted and is recorded as `skipped` with the size it
# needed. A
# point that runs out of memory anyway is recorded as `oom`, the larger batches of its curve as
# `skipped`, and the run continues; the results file is rewritten atomically after every round, so an interrupted
# run keeps what it measured and is marked incomplete. The site charts each device's newest
# complete run and names it under every chart.
#
# ## Caveats
#
# - The analytic bytes count each weight, input and output once. That is a lower bound on the
#   traffic the kernels cause (re-reads between cache levels and the framework's temporary buffers
#   are not counted), and an upper bound on what a network must move when its activations stay
#   in cache between layers (the [calculator](../calculator/) draws that case dotted).
# - The measured copy bandwidth and matmul rate are what this harness reaches with PyTorch, not
#   the hardware's absolute peak; a custom kernel may do better.
# - Clocks and power limits change the ceilings; they are recorded where the driver reports them.
# - A CPU run shares its cores with everything else on the machine; the interleaved rounds and the
#   median damp that noise but do not remove it.
# - The MLP sweeps are coarse next to tile sizes: they show the knee but can miss the steps that
#   tile and wave quantization cause between the measured sizes. The Linear sweep on the
#   [Batch-size steps](../steps/) page is the fine one.
#
# ## What each profile measures
#
# Read from `benchmarks/profiles.py` when the site is built (graph mode needs CUDA).

# %% tags=["hide-input"]
page.show("profiles")

# %% tags=["hide-input"]
page.show_takeaway()
