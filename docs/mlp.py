# %% [markdown]
# # The MLP: latency against batch
#
# The workload is the article's: a stack of equally wide Linear+ReLU layers, timed at
# many batch sizes for several widths. Each chart draws the measured median with its
# [quartile band](../glossary/#quartile-band), the roofline from the run's own measured ceilings
# (dashed), its [ridge batch](../glossary/#ridge-batch) (◇, where compute time overtakes memory
# time) and the [measured knee](../glossary/#measured-knee) (△, where a two-segment fit of log
# time against log batch bends). Hover a point for its numbers.

# %% tags=["hide-input"]
from benchmarks.site.pages import mlp

page = mlp.build()

# %% [markdown]
# ## What the roofline says to look for
#
# - **The height of the flat part grows with the square of the width.** A *w*×*w* layer holds
#   *w*² weights, so doubling the width quadruples the bytes each call must read at small batch.
# - **The knee hardly moves with the width.** For wide layers the ridge batch is
#   (F/BW)·(s/2) whatever *w* is; narrow layers move it a little, because their activations are a
#   larger share of the bytes.
# - **Throughput rises in proportion to the batch along the flat part and levels off past the
#   knee.** Past it, a bigger batch buys latency, not throughput.
#
# Each measured curve below either follows these shapes or says, in its knee table, how far it
# departs from them.
#
# ## Measured curves

# %% tags=["hide-input"]
page.show("curves")

# %% [markdown]
# ## Reading the knee table
#
# The table sets each [measured knee](../glossary/#measured-knee) beside two
# [ridge batches](../glossary/#ridge-batch): one from the run's own ceilings (a large square matmul
# and a large copy, the best the device does) and one from the rates this curve's own kernels
# reached: the bandwidth at which its small batches stream the weights (the median over the
# batches the first ridge batch calls memory-bound; batch 1 alone often runs a matrix-vector kernel
# at another rate) and the FLOP rate of its largest batch. Skinny matmuls run far below both
# ceilings, so the first ridge batch predicts small batches faster than they are and the knee
# earlier than it comes; the second puts the same roofline on the rates actually reached. Those
# rates are read off the curve itself, so the second ridge batch is a fit, not a forecast: it
# checks that the curve bends where a roofline with its own rates would, and it says how far
# short of the ceilings the kernels fell, which is what moves the knee on another device too.
#
# Where even that misses, the list under the table says why, from the run's evidence. It calls a
# point overhead-bound only when a measured fixed cost (the gap to CUDA-graph replay, the per-op
# cost of the tiny MLP, or the intercept across widths) is at least half its time, and otherwise
# names the ceiling that bounds it and the share of it reached; every causal sentence on this
# site comes from that same diagnosis. A flat part that is a fixed cost running before the
# arithmetic, not beside it, follows the sum of the two instead of the roofline's maximum, and
# bends earlier and more gently; the list shows that sum against the points where it applies.
#
# The detector is a few lines of arithmetic on the medians; here it is, run from the repository's
# root on the article's 8×1024 MLP, measured (the curve the theory page shows on a CPU):

# %%
from benchmarks.analysis.roofline.roofline_model import detect_knee
from benchmarks.site.data import headline_curve, load_site_data

curve = headline_curve(load_site_data())  # the article's 8×1024 MLP on the newest device
if curve is not None:
    times = [p.median_s for p in curve.points]
    knee = detect_knee(curve.batches, times)
    print(f"{curve.shape}, {curve.dtype}, cache {curve.cache}")
    if knee is not None:
        print(f"knee at batch {knee.batch:.0f}")
        print(f"slope {knee.slope_below:.2f} below it")
        print(f"slope {knee.slope_above:.2f} above it")

# %% [markdown]
# ## The code that was timed
#
# This is `snippets/mlp.py`, the file the harness imports, shown as it is in the repository.

# %% tags=["hide-input"]
page.show("code")

# %% tags=["hide-input"]
page.show_takeaway()
