# %% [markdown]
# # How batching works on modern GPUs
#
# **The question.** Send one input through a neural network, then send a batch of 64: on a GPU
# the second call often takes barely longer than the first. Why does the time stay flat as the
# batch grows, why does it then start to grow in proportion to the batch, and why do some batch
# sizes suddenly get slower than their neighbours?

# %% tags=["hide-input"]
from benchmarks.site.pages import home

page = home.build()

# %% [markdown]
# ## The answer in three sentences
#
# A layer must read all of its weights once per call whatever the batch, and below a critical
# batch that read (or, for small models, the fixed cost of launching the work) takes longer
# than the arithmetic, so extra rows ride along almost for free. Past the *ridge point*, where
# the work per byte read reaches the device's peak FLOP/s divided by its memory bandwidth, the
# arithmetic dominates and the time grows in proportion to the batch; for a large Linear layer
# that batch is about (FLOP/s ÷ bandwidth) × (bytes per element ÷ 2). Sudden slowdowns at
# particular sizes come from how the matrix library cuts the work into tiles and waves across the
# processors, so a batch just past a boundary pays for a nearly empty extra tile.
#
# ## The headline measurement

# %% tags=["hide-input"]
page.show("headline")

# %% [markdown]
# ## Where the results come from
#
# Each device's newest complete run is shown; older runs stay in the repository and are listed
# here. The raw results files (every timed sample) can be downloaded from the last column.

# %% tags=["hide-input"]
page.show("runs")

# %% tags=["hide-input"]
page.show("takeaway")
