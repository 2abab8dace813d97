# %% [markdown]
# # Calculator: predict your own GPU
#
# The roofline needs only two numbers per device and dtype, a peak arithmetic rate *F* and a
# memory bandwidth *BW*, so a reader without a GPU at hand can still predict where batching stops
# being free. Pick a device, a dtype, a layer width and a depth below: the chart draws the
# predicted latency and throughput of that MLP against batch, and marks the ridge batch where
# arithmetic starts to cost more than reading the weights. The formulas run in your browser;
# nothing is sent anywhere.
#
# For an MLP of *depth* Linear layers of *w* × *w* at batch *b*, with *s*-byte elements:
#
# $$\text{time} = \text{depth} \cdot \max\left(\frac{2 w^2 b}{F},\ \frac{s\,(w^2 + w + 2 b w)}{BW}\right)$$
#
# $$b^* = \frac{s\,(w^2 + w) / BW}{2 w^2 / F - 2 s w / BW} \;\longrightarrow\; \frac{F}{BW}\cdot\frac{s}{2}
# \text{ for wide layers}$$
#
# These count every layer's input and output as a trip to memory, which is what the harness
# counts: an upper bound on the bytes a network must move (though not on what its kernels move,
# since re-reads between cache levels are not counted; see [Methodology](../methodology/)). On a
# GPU the activations between layers usually stay in L2 (a batch of 64 rows of width 4096 in
# bf16 is 512 KiB), so only the weights and the network's own input and output cross memory;
# that lower bound gives a smaller ridge, marked dotted on the chart and listed beside the first
# in the table. For the article's example, an 8×1024
# MLP in fp16 on a T4, the two bounds are 337 and 214 rows, and the wide-layer limit is 203.
#
# Three cautions. Datasheet peaks are upper bounds that real kernels do not reach (the
# [three-regimes page](../regimes/) measures how far short they fall); the roofline ignores launch
# overhead, which dominates small models in eager mode; and a model whose weights fit in L2
# runs faster than this predicts when it is timed in a hot loop. Devices listed as "measured"
# use the ceilings their committed run measured instead of a datasheet, and their measured
# points appear as dots when the dtype and width match a run (depth 8 only).

# %% tags=["hide-input"]
from benchmarks.site.pages import calculator as calculator_page

page = calculator_page.build()
page.show("chart")

# %% [markdown]
# ## Worked examples
#
# The table computes the same formulas for a few choices, so the chart can be checked by hand.

# %% tags=["hide-input"]
page.show("examples")

# %% [markdown]
# Each row is two calls of `benchmarks.analysis.roofline.calculator`: `predict` returns the time, FLOPs,
# bytes and bound of one forward pass, and `gpu_ridge_batch` the batch where the layer turns
# compute-bound. The first row, by hand:

# %%
from benchmarks import gpus
from benchmarks.analysis.roofline import calculator

gpu, dtype = gpus.find_gpu("NVIDIA H100 SXM"), "bfloat16"
one = calculator.predict_mlp(gpu, dtype, width=4096, depth=8, batch=1)
print(f"batch 1: {one.seconds * 1e6:.1f} µs, {one.bound}-bound")
print(f"ridge: {calculator.gpu_ridge_batch(gpu, dtype, 4096):.0f}")

# %% [markdown]
# ## Presets: whole models
#
# The chart above is one MLP. For a whole model, `python -m benchmarks predict` counts every
# layer's FLOPs and bytes with the same roofline; here are two presets, a ResNet-50 and a decode
# step of a Llama-class model, each with the command that prints the same numbers.

# %% tags=["hide-input"]
page.show("presets")

# %% [markdown]
# ## The datasheet table
#
# Dense rates (without structured sparsity) per dtype, memory bandwidth, L2 size, SM count and
# memory, with the source of each entry. "float32" is the plain FP32 rate and "tfloat32" the
# TF32 tensor-core rate on the same fp32 tensors.

# %% tags=["hide-input"]
page.show("datasheet")

# %% tags=["hide-input"]
page.show_takeaway()
