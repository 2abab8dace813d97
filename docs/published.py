# %% [markdown]
# # Checked against published measurements
#
# How close do the forecasts that `python -m benchmarks predict`, `serve`, the calculator and the guide print come to
# what real GPUs reach? Every figure in `benchmarks/published/measurements.json` and `benchmarks/published/serving.json`
# cites its source (document, table or section, date), states its configuration in the source's words and quotes
# the figure; each is forecast by the efficiencies fitted without any figure of its own source. **Nothing on this
# page was measured by this project**, except the accuracy table's last row: the same forecast against the real
# engine this project ran on its own CPU (the page Checked against a real engine).

# %% tags=["hide-input"]
from benchmarks.site.pages import published

page = published.build()
page.show("accuracy")

# %% [markdown]
# ## How it is checked
#
# Each configuration is first put through the ceiling, the code behind `predict`'s roofline line, on the
# datasheet of the GPU the source used (the faster variant where the source does not say which): a call takes at
# least as long as its bytes take to cross memory and its FLOPs take to compute. Both sides are put in work per
# second (generated tokens, requests, images or prompts). Published ÷ ceiling is the share of the ceiling the
# published system reached; above 1, it ran faster than the ceiling allows, so the configuration breaks one of the
# model's assumptions. The [forecast](#from-ceiling-to-forecast-cross-validated) turns those shares into a few
# efficiencies. The home page's and the calculator's GPU curves, the devices page's datasheet lines, the steps
# page's tile model and the LLM-serving page's curves are predictions of this kind, and labelled so.
#
# ### How a published figure becomes a ceiling
#
# - **The model counts bytes and FLOPs, nothing else.** Weights are read once per call, every
#   sequence reads its own KV cache, and each projection's input and output cross memory once
#   (`snippets/costs.py`); embeddings and the output head are not counted. There is no fixed
#   cost per call, and reading and arithmetic overlap perfectly within each operation.
# - **One model, summed per operation.** A decoder's call runs its matmuls, then its attention
#   over each sequence's own cache; each gets its own roofline (the slower of its arithmetic and
#   its bytes) and the call's time is their sum, as on the [decode page](../decode/).
# - **A CNN run by an engine that fuses** BatchNorm, ReLU and the residual adds into the
#   convolutions is predicted kernel by kernel as deployed, each activation kept in the GPU's L2
#   while it fits; the eager count is given beside it.
# - **A time per token** is compared with the mean decode step over the generated tokens, each
#   step at its own context.
# - **A throughput benchmark with static batching** (every request of the batch starts and ends
#   together, as in TensorRT-LLM's `gptSessionBenchmark`) is a prefill of the whole batch, which
#   yields the first token, then one decode step for each further token, each at its own context.
#   A benchmark of 128 tokens in and 128 out is a prefill of 128-token prompts and 127 decode
#   steps at contexts 128 to 254.
# - **Several GPUs.** Tensor parallelism over *n* GPUs gives each GPU 1/*n* of the work, and
#   every layer pays two ring all-reduces over the GPU's NVLink; data parallelism is *n* copies.
# - **What the source leaves out** (the GPU's memory variant, the precision, the batch size, the
#   number of new tokens) is chosen and named under each figure.
#
# ## Published against the ceiling

# %% tags=["hide-input"]
page.show("comparison")

# %% [markdown]
# The table gives each figure as published, the same figure as work per second, the ceiling,
# their ratio, and the assumptions of the model that the configuration breaks. Each source's
# quotes, the configuration as the source states it, and how the ceiling was computed are under
# the table.

# %% tags=["hide-input"]
page.show("table")

# %% [markdown]
# ## What each gap means

# %% tags=["hide-input"]
page.show("details")

# %% [markdown]
# ## From ceiling to forecast, cross-validated
#
# The ratios above are not a forecast: they say how far below the ceiling each system ran, figure
# by figure. The forecast turns them into a few efficiencies (`benchmarks/analysis/roofline/forecast.py`):
# each operation of the ceiling keeps its bound and is divided by the share of that resource
# deployed software reaches (η memory where it is memory-bound, η compute where it is
# compute-bound), plus a fixed cost per step. One set per family of software (a language model's
# steps, a CNN's calls, matrix products) and precision (16-bit or wider, 8-bit), fitted by least
# squares on log(forecast ÷ published) with every source weighing the same, and nothing per
# figure. Serving figures (`benchmarks/published/serving.json`, the page
# [Serving language models](../llm_serving/)) are simulated on the forecast's step. The fit
# leaves out figures whose configuration breaks an assumption of the model and figures that the
# queue sets rather than the step; each is still forecast below.
#
# How good is it? Each figure is forecast by the efficiencies fitted **without any figure of
# its own source**, and its error is forecast ÷ published − 1. The expected error of a kind of
# work, the median and the 90th percentile of those errors' sizes, is what
# `python -m benchmarks predict`, `serve`, the calculator and the guide print beside every
# forecast: the error of the figures of the same case, a model on one GPU or one split over
# several in tensor parallel, since the two miss by different amounts. Everything below is
# computed when the site is built, from the committed files.

# %% tags=["hide-input"]
page.show("cross_validation")

# %% [markdown]
# ## The article's T4 observations
#
# The article that this site started from measured an MLP and ResNet-50 on a T4, but published
# only charts: its text gives no times, only the batch sizes where the curves bend, read off
# those charts by the author. Its other observations, that smaller MLPs stay flat over every
# batch it tried and that its first runs were noisy, are charts without numbers and cannot be
# compared. The bends are set here against the ridge batch of the same layers on the T4's
# datasheet; the article does not say which precision it ran, so both are given. Each ridge
# batch is given under the count of bytes the harness states (every layer's activations, and
# every elementwise pass of ResNet-50, through memory) and, where it differs, under the other
# bound (activations kept in cache; elementwise passes fused into the convolutions). Where a
# count has no ridge batch, the layer is memory-bound at every batch under it; where each extra
# image sits within 5 % of the ridge, the count cannot say which side it falls, and the page
# says undecided.

# %% tags=["hide-input"]
page.show("knees")

# %% [markdown]
# ## Not compared

# %% tags=["hide-input"]
page.show("not_compared")

# %% tags=["hide-input"]
page.show_takeaway()
