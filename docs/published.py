# %% [markdown]
# # Checked against published measurements
#
# Most curves on this site's other pages are measured by its own harness, with the roofline's
# prediction beside them; some are predictions alone, and labelled so: the home page's and the
# calculator's GPU curves, the devices page's datasheet lines, the steps page's tile model and every
# curve on the LLM-serving page. The roofline says a call takes at least as long as its bytes take
# to cross memory and its FLOPs take to compute. Until a GPU run is committed here, the way to see how
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
#   cost per call, and reading and arithmetic overlap perfectly within each operation.
# - **One model, summed per operation.** A decoder's call runs its matmuls, then its attention
#   over each sequence's own cache; each gets its own roofline (the slower of its arithmetic and
#   its bytes) and the call's time is their sum, as on the [decode page](../decode/).
# - **A CNN run by an engine that fuses** BatchNorm, ReLU and the residual adds into the
#   convolutions is predicted without those passes over memory; the count with them is given
#   beside it.
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
# ## What to expect beside a prediction
#
# The figures that break none of the model's assumptions give, for each kind of work, the share
# of the roofline that published systems reached: the band that `python -m benchmarks predict`,
# the calculator and the guide show beside each GPU prediction. A generation counts under the
# kind that takes most of its predicted time. A kind with too few figures gets no band rather
# than another kind's.

# %% tags=["hide-input"]
page.show("bands")

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
share = page.extra["share_of_roofline_reached"]  # from the comparisons above
page.show_takeaway(
    f"The roofline is a bound, not a forecast: the {share['figures kept']} published figures that keep to its "
    f"assumptions reached <strong>{share['lowest %']}–{share['highest %']} % of it (median {share['median %']} %)"
    "</strong>. Use it to find the knee and what bounds a configuration, then expect real kernels to fall short of it "
    f"by about that much (by kind of work, the band above; the median over all {share['figures']} figures, "
    f"{share['median ratio, all figures']}, includes those that break an assumption); a figure above it is a "
    "configuration the model does not describe (fewer bytes a weight, split over more GPUs than counted). Run "
    "<code>python -m benchmarks predict</code> for your own configuration, with the band of its kind beside it."
)
