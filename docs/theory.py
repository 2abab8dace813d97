# %% [markdown]
# # Theory: the roofline of a Linear layer
#
# Every number on this page that is not a measurement comes from the datasheet table in
# `benchmarks/gpus.py`, computed when the site is built; the sources are listed at the end.

# %% tags=["hide-input"]
from benchmarks.site.pages import theory

page = theory.build()


# %% [markdown]
# ## Step 1: a call takes at least as long as its slowest resource
#
# A kernel has two jobs: do its arithmetic and move its operands between memory and the
# processors. A device with peak arithmetic rate *F* (FLOP/s) and memory bandwidth *BW*
# (bytes/s) cannot finish sooner than either job alone allows, and a well-written kernel
# overlaps the two, so
#
# $$t \;\ge\; \max\left(\frac{\mathrm{FLOPs}}{F},\ \frac{\mathrm{bytes}}{BW}\right)$$
#
# This is the *roofline*. Wherever a device was measured, the site predicts its curves with *F*
# and *BW* measured on that device in the same run (a large matmul and a large copy). Datasheet
# figures appear only where nothing was measured, and say so: the prediction on the home page,
# the ridge table below, the guide, the calculator, the tile and wave model on the steps page,
# and the GPU previews on the CNN and decode pages.
#
# ## Step 2: the arithmetic intensity of a Linear layer
#
# A Linear layer with an *m*×*n* weight applied to a batch of *b* rows multiplies a *b*×*m*
# matrix by an *m*×*n* one: *b·m·n* multiply-adds. At the least it reads the weight once, reads
# the input and writes the output; with *s* bytes per element:
#
# $$\mathrm{FLOPs} = 2\,m\,n\,b \qquad \mathrm{bytes} \approx s\,(m\,n + b\,m + b\,n)$$
#
# Their ratio, the *arithmetic intensity*, is the work done per byte moved:
#
# $$I(b) = \frac{2\,m\,n\,b}{s\,(m\,n + b\,m + b\,n)} \;\approx\; \frac{2\,b}{s} \quad\text{while } b \ll m, n$$
#
# The weight term *m·n* does not grow with the batch. While it dominates the bytes, doubling the
# batch doubles the FLOPs but barely changes the bytes: the call stays as long as reading the
# weights takes, and the extra rows are nearly free.
#
# The project counts these bytes once, in `snippets/costs.py`, and every prediction on the site
# uses that count. Applied to one 4096×4096 layer in bf16:

# %%
from snippets.costs import linear_cost

for batch in (1, 8, 64, 512, 4096):
    # a 4096 → 4096 layer in bf16 (2 bytes per element)
    flops, moved = linear_cost(batch, 4096, 4096, 2)
    print(f"batch {batch:>4}: {flops / moved:6.1f} FLOP per byte")

# %% [markdown]
# Intensity grows as 2·*b*/*s* = *b* FLOP per byte while the weight dominates, and levels off
# once the activations' bytes catch up with it.
#
# ## Step 3: the ridge batch
#
# Memory time and compute time are equal when the intensity reaches the device's own ratio
# *F*/*BW*, its [ridge intensity](../glossary/#ridge-intensity). Setting 2*b*/*s* = *F*/*BW* gives
# the [ridge batch](../glossary/#ridge-batch) of a large layer:
#
# $$b^{*} \;\approx\; \frac{F}{BW}\cdot\frac{s}{2}$$
#
# Below *b*\* the layer is memory-bound and its time is flat in the batch; above it the layer is
# compute-bound and its time grows in proportion to the batch. For 2-byte weights (bf16, fp16)
# *b*\* = *F*/*BW*; for 4-byte fp32 weights it is 2·*F*/*BW*.
#
# ## Step 4: why bytes per element matter
#
# Bytes per element enter twice. Halving *s* halves the bytes of the weight read, so a bf16
# layer at small batch runs about twice as fast as the same layer in fp32. And the dtype picks the
# arithmetic units: tensor cores give bf16/fp16 many times the fp32 rate, so *F* and with it
# the ridge batch move too. The table below computes *b*\* for each GPU (rows) and dtype
# (columns) of the datasheet table.

# %% tags=["hide-input"]
page.show("ridges")


# %% tags=["hide-input"]
page.show("intensity")


# %% [markdown]
# Where a line crosses a ridge intensity, that GPU turns from memory-bound to compute-bound. The
# 4-byte line crosses each fp32 ridge at twice the batch of the 2-byte line: the same ridge needs
# twice the rows when every weight costs twice the bytes.
#
# ## Step 5: three regimes, not two
#
# The roofline has two terms, but a measured curve has a third cause of flatness. Every call
# also pays fixed costs: the framework's Python dispatch and one kernel launch per operation
# (an 8-layer MLP of Linear+ReLU launches at least 16 kernels in eager PyTorch). For a small model those
# costs exceed both roofline terms, and the curve is flat because of *overhead*, not memory. That
# flat region looks like free batching, but its knee is false: it says nothing about the
# hardware. Replaying a captured CUDA graph removes most of the launch cost, so the site times
# both (`graph` and `eager`) wherever a GPU is measured. The [three-regimes page](../regimes/)
# measures the cost of one launch and gives a three-question test for telling the regimes apart.
#
# ## Step 6: caches can hide the memory term
#
# If the weights fit in the last-level cache, a benchmark that calls the same layer in a loop
# reads them from cache, not from memory, and measures a much higher bandwidth than the device's
# memory has. The [three-regimes page](../regimes/) measures bandwidth at every working-set size
# and shows the same MLP timed both ways.

# %% tags=["hide-input"]
page.show("cache")


# %% [markdown]
# ## Step 7: why some batch sizes are suddenly slower
#
# A GPU matmul library cuts the output into tiles (for example 64, 128 or 256 rows at a time) and
# hands tiles to the streaming multiprocessors (SMs) in waves. One row past a tile boundary
# adds a whole, mostly empty [tile](../glossary/#tile) (*tile quantization*); one tile past a
# full wave (the SM count times the tiles each SM runs at once: the SM count itself only at one
# tile per SM) adds a mostly idle extra [wave](../glossary/#wave) (*wave quantization*). At small
# batches the library may also switch to a different kernel altogether (a matrix-vector kernel,
# or split-K). Each of these makes a step or a sawtooth along a fine
# sweep of batch sizes. A sweep that only doubles the batch lands on powers of two, where tiles
# divide evenly, and so misses the tile steps; it does not avoid wave steps, since SM counts such
# as 108 and 132 are not powers of two (128 tiles on 108 SMs are 1.19 waves).
#
# ## Corrections to the article
#
# The article this site started from has the right intuition but several wrong figures.

# %% tags=["hide-input"]
page.show("corrections")


# %% [markdown]
# ## A CPU has a roofline too
#
# The article says a CPU scales linearly with the batch. Measured here, it does not quite: the
# run below follows a roofline made of its own copy bandwidth and matmul rate, with a far lower
# ridge batch than a datacenter GPU's. What that ceiling is, and what it is not, is said under
# the chart.

# %% tags=["hide-input"]
page.show("cpu")


# %% [markdown]
# Finally, “transformers are just MLPs” holds only at short context. In decoding, the weights are
# read once per step for the whole batch, but every sequence reads its own key/value cache, so the
# bytes grow with batch × context from the first row. Long contexts push the knee out or remove
# it; grouped-query attention, which shares keys and values between heads, moves it back.
#
# ## Sources

# %% tags=["hide-input"]
page.show("sources")

# %% tags=["hide-input"]
page.show_takeaway()
