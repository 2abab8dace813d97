# %% [markdown]
# # Three regimes: overhead, memory, compute
#
# The article sees noisy, flat curves for its small networks and puts them down to
# "overhead" without measuring it. A flat curve can have two quite different causes, and a
# roofline with two regimes (memory-bound, compute-bound) misses one of them:
#
# - **[Overhead-bound](../glossary/#overhead-bound).** The device finishes each kernel faster
#   than the host can launch the next one, so the time is the number of launches times the cost
#   of one launch. The time stays flat as the batch grows and as the layers get wider, and grows
#   only with the number of layers (more launches). This flat region is a false knee: it says
#   nothing about the hardware's arithmetic or memory.
# - **[Memory-bound](../glossary/#memory-bound).** The time is the bytes moved over the
#   bandwidth. Flat in the batch while the weights dominate the bytes, but it grows with the
#   square of the width (a layer has width² weights: about 4× per doubling).
# - **[Compute-bound](../glossary/#compute-bound).** The time is the FLOPs over the arithmetic
#   rate: it grows with the batch.
#
# Two more traps sit inside the memory regime. The bandwidth depends on where the data is: a
# modern GPU's L2 cache holds tens of megabytes, so a small model timed in a hot loop is read
# from L2, not from HBM, and looks faster than it will be in a real server. And the "peak" rates
# on a datasheet are not what a kernel gets. This page measures all of it: the bandwidth at every
# working-set size, the matmul rate at every size and dtype, the launch cost per kernel, and one
# MLP with its weights [resident](../glossary/#resident) in cache and [rotated](../glossary/#rotated)
# through memory.

# %% tags=["hide-input"]
from benchmarks.site.pages import regimes

page = regimes.build()

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
page.show("ceilings")

# %% [markdown]
# ## Launch overhead: the false knee
#
# In eager PyTorch every layer of an 8-layer Linear+ReLU MLP launches two kernels (the matmul with
# its bias, then the ReLU): 16 launches per forward pass. Each launch costs the host a few
# microseconds of Python, dispatcher and driver work. When a kernel's own work is shorter than
# that, the device waits for the host, and the measured time is launches × cost per launch, flat
# in the batch and flat in the width.
#
# Two tools aim at it. A **[CUDA graph](../glossary/#graph)** records the kernels once and replays them with one
# launch. **torch.compile** traces the model, fuses element-wise work into fewer kernels and
# calls them from generated code with fewer Python layers; whether that pays at batch 1 depends
# on the device and the model, so it is measured here, not assumed. On a CPU nothing is
# launched: the per-op cost is the framework's dispatch. The charts below time the same MLPs,
# with their weights resident, in each mode the device supports (CUDA graphs need a GPU). A tiny
# 64-wide MLP does almost no work, so its time is the overhead itself; the 1024-wide one shows
# where the overhead stops mattering.

# %% tags=["hide-input"]
page.show("overhead")

# %% [markdown]
# The per-op column is one division: the batch-1 time of the smallest MLP, called eagerly, over
# the ops it launches. Here it is, run from the repository's root on the first device this page
# shows:

# %%
from benchmarks.analysis.roofline import regimes
from benchmarks.site.data import load_site_data

runs = load_site_data().shown_for("mlp")
tiny = next(filter(None, map(regimes.tiny_eager_curve, runs)), None)
if tiny is not None:
    batch1 = next(p.median_s for p in tiny.points if p.batch == 1)
    ops = 2 * tiny.params["depth"]  # a matmul and a ReLU per layer
    print(f"{tiny.shape} {tiny.dtype}: {batch1 * 1e6:.1f} µs")
    print(f"÷ {ops} ops = {batch1 / ops * 1e6:.2f} µs per op")

# %% [markdown]
# ## The cache trap
#
# An 8-layer MLP of width 1024 has 8 M weights: 16 MiB in bf16, 32 MiB in fp32. That fits in the
# 50 MB L2 of an H100 or H200, and in the last-level cache of many server CPUs. Time it in a loop
# and, from the second call on, its weights come from cache: the curve shows cache bandwidth, not
# the memory bandwidth a server with many models, or one model far larger than the cache, will
# get. This site's default is to rotate every call through enough weight copies that together
# they exceed the cache three times over (`cache: rotated` in a chart's subtitle); here the same
# MLP is also timed the naive way (`cache: resident`: the same weights every call, whether or not
# they fit in a cache), and a width sweep at batch 1 shows where the weights stop fitting.

# %% tags=["hide-input"]
page.show("cache")

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
page.show("signals")

# %% [markdown]
# ## Takeaways

# %% tags=["hide-input"]
page.show("no_ceiling_curves")
page.show_takeaway()
