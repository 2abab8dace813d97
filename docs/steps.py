# %% [markdown]
# # Why some batch sizes are suddenly slower
#
# The article asks this in its title and then doubles the batch at every step, so it
# cannot see the answer: the slowdowns sit between the powers of two. This page sweeps one Linear
# layer (`snippets/linear.py`, a single matrix multiply whose M dimension is the batch) one batch
# size at a time, finds the jumps that stand out from the run's own noise, and records which
# kernel the matrix library chose, so each jump can be matched to its cause.

# %% tags=["hide-input"]
from benchmarks.site.pages import steps

page = steps.build()
page.show("model")

# %% tags=["hide-input"]
page.show("lead")


# %% [markdown]
# ## Tiles and waves
#
# A GPU matrix library does not compute the output row by row. It cuts the output, a
# batch × out_features matrix, into tiles of T<sub>M</sub> × T<sub>N</sub> elements (64 to 256 on a side),
# gives each tile to one thread block, and runs the blocks on the streaming multiprocessors (SMs),
# about one tile per SM at a time. For a batch *b* and *N* output features:
#
# $$\text{tiles}(b) = \lceil b / T_M \rceil \cdot \lceil N / T_N \rceil$$
#
# $$\text{waves}(b) = \lceil \text{tiles}(b) / \text{SMs} \rceil$$
#
# - **Tile quantization.** One row past a multiple of T<sub>M</sub> adds a whole row of tiles that are
#   almost empty but cost nearly a full tile's time each.
# - **Wave quantization.** When the tile count passes a multiple of the SM count, the extra tiles
#   run in one more wave while most SMs wait. On a 132-SM H200 with 128 × 256 tiles and
#   N = 8192, a row of tiles is 32 tiles, so a wave holds just over four rows of tiles.
# - **Kernel switches.** At small batches the library may pick a different kernel (a
#   matrix-vector kernel, a split-K kernel, another tile shape), with its own cost.
#
# A library picks the kernel for each batch size. At small batches it picks one that keeps
# every SM busy (narrow tiles, or the work split along the inner dimension), so the time can
# stay near the time to read the weights and the tiles hardly show; once the layer is
# compute-bound, it uses large tiles, and their steps show. A kernel switch can show anywhere,
# since the new kernel may read the weights at another rate as well as tile the work another
# way.

# %% [markdown]
# The same arithmetic for that H200 layer, at batches on either side of two tile boundaries: one
# that stays within a wave and one that needs a second wave.

# %%
import math

N, SMS = 8192, 132  # output features, SMs of an H200
T_M, T_N = 128, 256  # a tile: batch rows × output columns
for b in (384, 385, 512, 513):
    tiles = math.ceil(b / T_M) * math.ceil(N / T_N)
    waves = math.ceil(tiles / SMS)
    print(f"batch {b}: {tiles} tiles in {waves} wave(s)")


# %% [markdown]
# ## The shape to expect, before a GPU is measured
#
# Put the same counting into a model of one kernel with one tile shape at every batch: every SM
# computes one whole tile at a time at its share of the datasheet's peak rate, so a wave takes
# one tile's time however few tiles it holds, and the layer takes as many of those as it has
# waves (or the time to read its weights, if that is longer). At the top of this page, that model for the
# snippet's GPU layer, every batch from 1 to 2,048, beside the roofline of the same layer with
# no tile or wave left partly empty. Both lines are predictions from datasheet figures; nothing
# in this chart was measured. Its left part is the cost of keeping large tiles at small batches,
# which a library avoids by switching kernels; its right part is the shape to expect past the
# knee.

# %% tags=["hide-input"]
page.show("model_words")

# %% [markdown]
# ## Measured, one batch size at a time

# %% tags=["hide-input"]
page.show("curves")

# %% [markdown]
# ## What the measurements say
#
# A step counts as explained when one of three checks holds: a recorded kernel name changes
# across it; a multiple of 64, 128 or 256 rows lies inside it (a tile boundary); or, with the
# tile shape that the kernel's name announces and the device's SM count, the number of waves
# grows across it. Steps that none of these explain are reported as such, not guessed at.

# %% tags=["hide-input"]
page.show("no_linear_sweep")
page.show_takeaway()
