# %% [markdown]
# # The MLP: latency against batch
#
# The workload is the original article's: a stack of equally wide Linear+ReLU layers, timed at
# many batch sizes for several widths. Each chart draws the measured median with its
# interquartile band, the roofline prediction from the run's own measured ceilings (dashed),
# the predicted knee (◇, where compute time overtakes memory time) and the knee detected in the
# measurement (△, where a two-segment fit of log time against log batch bends). Hover a point
# for its numbers.

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
# *Predicted knee* is the batch where the roofline's compute time overtakes its memory time, from
# the FLOPs and bytes the harness counts for each point and the run's measured ceilings.
# *Measured knee* is where a continuous two-segment line fitted to log time against log batch
# bends, reported only if the time grows at least like the square root of the batch beyond it.
# A ratio near 1 means the roofline explains the curve. A measured knee far beyond the predicted
# one has two possible causes, and the same slow batch 1 fits both: a fixed per-call cost (Python
# dispatch, kernel launches) that hides the flat part, or small-batch kernels that move bytes well
# below the copy bandwidth the prediction assumes, so reading the weights stays slower than the
# arithmetic for more rows. The list under the table tells them apart with the run's own
# evidence: it calls a point overhead-bound only when a measured fixed cost (the gap to CUDA-graph
# replay, the per-op cost of the tiny MLP, or the intercept across widths) is at least half its
# time, and otherwise names the ceiling that bounds it and the share of it reached; every causal
# sentence on this site comes from that same diagnosis. *Knee at the rates reached* puts the
# kernels' own best bandwidth and FLOP rate into the same roofline: where it lands near the
# measured knee, the kernels' shortfall, not a fixed cost, is what moved the knee.
#
# The detector is a few lines of arithmetic on the medians; here it is, run from the repository's
# root on the 8×1024 curve that the home page shows:

# %%
from benchmarks.analysis.curves import headline_curve, load_site_data
from benchmarks.analysis.roofline import detect_knee

curve = headline_curve(load_site_data())  # the home page's curve
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
page.show("takeaway")
