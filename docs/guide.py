# %% [markdown]
# # Choosing your batch size
#
# The rest of this site explains why latency stays flat, then grows, then sometimes jumps. This page
# turns that into steps for a model you serve. Numbers marked *datasheet* are vendors' figures,
# *measured* ones come from this site's committed runs, and the worked examples say which they use.

# %% tags=["hide-input"]
from benchmarks.site.pages import guide

page = guide.build()

# %% [markdown]
# ## 1. Look up the ridge batch
#
# For a layer large enough that its weights dominate the bytes, the roofline turns from
# memory-bound to compute-bound at the [ridge batch](../glossary/#ridge-batch)
# b\* = (F/BW)·(s/2): the device's peak FLOP/s over its bandwidth, times half the bytes per
# weight. Below it extra rows cost almost nothing; above it the time grows with the batch.
# The [Calculator](../calculator/) gives it for your own layer sizes, and
# `python -m benchmarks predict` for any workload the site knows, on any datasheet GPU or on
# the ceilings a run measured (`--help` lists the parameters).

# %% tags=["hide-input"]
page.show("ridges")

# %% [markdown]
# Read it as where the knee would be if every kernel reached the datasheet's rates, not as the
# [measured knee](../glossary/#measured-knee) itself: kernels at small batches fall short of the
# copy bandwidth and of the square-matmul peak, by different amounts, and the knee moves with the
# ratio of the two (on the CPU measured here it lands several times later). The [MLP page](../mlp/) measures by how much
# and predicts the knee again from the rates the kernels reached; how far real GPU systems fall
# short of the roofline, on figures others published, is on
# [Against published results](../published/).
#
# ## 2. Find your regime
#
# A few timings tell you which of the three regimes your model is in: at batch 1 as it is, with
# every layer twice as wide, and under a CUDA graph or `torch.compile`; then at batch 4
# ([the test](../regimes/#which-regime-am-i-in)):
#
# - **Overhead**: the time hardly changes when you double the width, and a CUDA graph or
#   `torch.compile` cuts it. Batching looks free, but the flat stretch is the launch cost, not the
#   hardware: capture a graph (or fuse) before you tune the batch.
# - **Memory**: the time grows with the width but hardly with the batch. Batching is close to
#   free up to the knee.
# - **Compute**: the time grows in proportion to the batch. A bigger batch buys latency, not
#   throughput.
#
# ## 3. Measure your own model
#
# Point the harness at it: `python -m benchmarks sweep my_model.py:factory --budget-ms 20` (or
# `nox -s sweep -- ...`) searches the batch sizes, measures them with the harness's sampler and
# explains the answer; [Your model](../your_model/) shows how, with two worked examples. Without the
# harness, this one file does the core of the job in a few dozen lines: replace `make_model` and
# `make_input`, set your latency budget, and run `python snippets/sweep_your_model.py`. It waits
# for every call, as a request would.

# %% tags=["hide-input"]
page.show("snippet")

# %% [markdown]
# ## 4. Take the largest batch that fits, or where throughput flattens
#
# Two numbers bound the choice: the largest batch whose latency fits your budget, and the
# smallest batch whose throughput is within 5 % of the best you measured. Past the second, a
# bigger batch buys latency and little throughput. Run the smaller of the two; when no batch fits
# the budget, run the fastest you measured (normally batch 1), knowing it misses. Last, if a larger
# batch measured no slower than that one, as can happen beside a tile boundary, run the larger: it
# does more in the same time (the rule is `snippets/choose.py`, which the snippet above uses).
# Behind a server the batch is not yours to pick: it forms from the requests that arrive, and
# [Serving with dynamic batching](../serving/) turns your measured curve into the server's max
# batch, max delay and instances.

# %% tags=["hide-input"]
page.show("pick")

# %% [markdown]
# ## 5. Round to what the hardware likes
#
# - **Tiles**: matrix libraries cut the output into tiles of 64, 128 or 256 rows, and tensor
#   cores want multiples of 8 or 16. A batch of 129 pays for 256 rows of tiles; keep to
#   multiples of the tile height once the layer is compute-bound.
# - **Waves**: tiles run about one per SM at a time. When the tile count passes a multiple of the
#   SM count, one more, mostly idle, wave follows. The [steps page](../steps/) measures both.
# - **CUDA graphs**: a graph is captured for fixed shapes. Serve the batch sizes you captured, and
#   pad a batch up to the next one, or the call falls back to eager launches.

# %% tags=["hide-input"]
page.show("waves")

# %% [markdown]
# ## 6. Decode: the KV cache is the real ceiling
#
# A decode step reads every sequence's own key/value cache, so its bytes grow with batch × context
# from the first sequence, and the cache has to fit in memory next to the weights
# ([Transformer decode](../decode/)). How the cache caps what an engine serves at once, with
# time to first token and each user's tokens per second, is on
# [Serving LLMs with continuous batching](../llm_serving/).
#
# Choosing a batch for training instead: a step adds the backward pass and a fixed-cost optimizer
# update, memory for activations caps the batch, and past the gradient noise scale a larger batch
# stops cutting the steps ([Training](../training/)).

# %% tags=["hide-input"]
page.show("kv")

# %% [markdown]
# ## 7. Weight-only quantization moves the ridge batch in
#
# Storing weights in fewer bits (W8A16, W4A16) and computing in bf16 divides the weight bytes by
# 16 ÷ bits and leaves the arithmetic as it was, so the flat stretch gets that much lower and the
# ridge batch that much smaller: W4A16 reaches compute-bound at a quarter of the batch.

# %% tags=["hide-input"]
page.show("quantization")

# %% [markdown]
# ## 8. Report throughput and latency together
#
# A batch size is a trade, so quote both sides: items per second **and** the latency of one call
# at that batch. For decode, say which tokens you count: a step of *t* seconds at batch *b* gives
# the server *b*/*t* tokens per second, and each sequence only 1/*t*. Throughput per GPU grows
# with the batch while each user's tokens per second falls; the
# [decode page](../decode/#tokens-per-sequence) shows both, measured.

# %% tags=["hide-input"]
page.show_takeaway()
