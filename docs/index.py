# %% [markdown]
# # How batching works on modern GPUs
#
# **What this site covers.** Inference: how long one call takes at each batch size ([MLPs](mlp/),
# [mixtures of experts](moe/), [CNNs](cnn/), [transformer decode](decode/)) and the settings that follow for
# [dynamic batching](serving/) and [LLM serving](llm_serving/). Training: [the batch a step affords and the batch the
# data can use](training/). Measured charts come from committed runs; a GPU figure without one says whether it is a
# forecast or a ceiling.
#
# **The question.** One input through a network, then a batch of 64: on a GPU the second call often takes barely
# longer. Why is the time flat as the batch grows, why does it then grow in proportion, and why are some batch sizes
# slower than their neighbours?

# %% tags=["hide-input"]
from benchmarks.site.pages import home

page = home.build()

# %% [markdown]
# ## The answer
#
# A layer reads all of its weights once per call whatever the batch. Below the
# [ridge batch](glossary/#ridge-batch) that read (or, for a small model called eagerly, launching its kernels) takes
# longer than the arithmetic, so extra rows ride along almost free; past it the arithmetic dominates and the time
# grows in proportion to the batch. For a large layer the ridge batch is the device's FLOP/s over its memory
# bandwidth, times half the bytes per element. Slowdowns at particular sizes come from how the matrix library cuts
# the work into tiles and runs them in waves across the processors: a batch just past a boundary pays for a nearly
# empty extra tile or wave.

# %% tags=["hide-input"]
page.show("gpu_curve_measured_or_predicted")

# %% [markdown]
# **Tuning a batch size?** [Choosing your batch size](guide/) walks through it: look up the ridge batch, find your
# regime, measure your own model, and round to what the hardware likes. **Training?**
# [Training: the batch a step affords and the batch the data can use](training/) adds the backward pass, the
# optimizer's fixed cost, activation memory and the gradient noise scale.
#
# The site started from Finbarr Timbers' article
# [“How does batching work on modern GPUs?”](https://www.artfintel.com/p/how-does-batching-work-on-modern)
# (called *the article* on every other page). Its intuition holds; several of its figures do not
# ([Theory](theory/#corrections-to-the-article) corrects them), and what it assumed is measured here.

# %% [markdown]
# ## Where the results come from
#
# Every measured chart on this site is drawn from a results file in the repository, measured by
# its own harness; each device's newest complete run is charted, and older runs stay listed here
# with their raw files (every timed sample). The other charts say in their titles what they show
# instead: a prediction from a datasheet or a model, or figures others published.

# %% tags=["hide-input"]
page.show("committed_runs_by_device")

# %% tags=["hide-input"]
page.show_takeaway()
