# %% [markdown]
# # Checked against published measurements
#
# Every curve on this site's other pages is measured by its own harness, and every prediction
# beside it comes from the roofline: a call takes at least as long as its bytes take to cross
# memory and its FLOPs take to compute. Until a GPU run is committed here, the way to see how
# far real GPUs fall short of that bound is to predict what others have measured and published.
# This page does that for every figure in `benchmarks/published/measurements.json` that names
# one configuration (the one that does not is listed at the end): each row there cites its
# source (document, table or section, date), states the configuration in the source's words,
# quotes the figure, and says how it was checked. **Nothing on this page was measured by this
# project.**
#
# Each configuration is predicted with the code behind `python -m benchmarks predict`, on the
# datasheet of the GPU the source used (the faster variant where the source does not say which),
# and both sides are put in work per second: generated
# tokens, requests, images or prompts. Published ÷ predicted is then the fraction of the
# roofline the published system reached; above 1, it ran faster than the model allows, so the
# configuration breaks one of the model's assumptions.
#
# ## How a published figure becomes a prediction
#
# - **The model counts bytes and FLOPs, nothing else.** Weights are read once per call, every
#   sequence reads its own KV cache, and each projection's input and output cross memory once
#   (`snippets/costs.py`); embeddings and the output head are not counted. There is no fixed
#   cost per call, and reading and arithmetic overlap perfectly.
# - **A time per token** is compared with the mean decode step over the generated tokens, each
#   step at its own context.
# - **A throughput benchmark with static batching** (every request of the batch starts and ends
#   together, as in TensorRT-LLM's `gptSessionBenchmark`) is a prefill of the whole batch, which
#   yields the first token, then one decode step for each further token, each at its own context.
#   A benchmark of 128 tokens in and 128 out is a prefill of 128-token prompts and 127 decode
#   steps at contexts 128 to 254.
# - **Several GPUs.** Tensor parallelism over *n* GPUs is one device with *n* times the rate and
#   the bandwidth and no communication; data parallelism is *n* copies.
# - **What the source leaves out** (the GPU's memory variant, the precision, the batch size, the
#   number of new tokens) is chosen and named under each figure.
#
# ## Published against predicted

# %% tags=["hide-input"]
from benchmarks.site.pages import published

page = published.build()
page.show("comparison")

# %% [markdown]
# The table gives each figure as published, the same figure as work per second, the prediction,
# their ratio, and the assumptions of the model that the configuration breaks. Each source's
# quotes, the configuration as the source states it, and how the prediction was made are under
# the table.

# %% tags=["hide-input"]
page.show("table")

# %% [markdown]
# ## What each gap means

# %% tags=["hide-input"]
page.show("details")

# %% [markdown]
# ## The article's T4 observations
#
# The article that this site started from measured an MLP and ResNet-50 on a T4, but published
# only charts: its text gives no times, only the batch sizes where the curves bend, read off
# those charts by the author. Its other observations, that smaller MLPs stay flat over every
# batch it tried and that its first runs were noisy, are charts without numbers and cannot be
# compared. The bends are set here against the predicted critical batch of the same layers on
# the T4's datasheet; the article does not say which precision it ran, so both are given. Where
# the prediction has no critical batch, the layer is memory-bound at every batch: its predicted
# time grows with the bytes each image adds from the first image on.

# %% tags=["hide-input"]
page.show("knees")

# %% [markdown]
# ## Not compared

# %% tags=["hide-input"]
page.show("not_compared")

# %% tags=["hide-input"]
page.show("takeaway")
