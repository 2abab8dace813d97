# %% [markdown]
# # Mixture of experts: routing spreads the batch
#
# The article says a mixture-of-experts (MoE) layer batches like a dense one, except
# that a biased gate can cause trouble, and stops there. This page measures an MoE feed-forward
# layer (`snippets/moe.py`) beside the dense layer with the same active parameters.
#
# ## How routing spreads a batch
#
# A router scores each of *b* tokens against *E* experts and sends it to its top *k*. The *b·k*
# assignments spread over the experts, about *b·k/E* rows each under uniform routing, and each
# expert that gets any rows must read all of its weights. Two things follow.
#
# - **More weights per call at small batch.** A token touches *k* experts; a batch touches about
#   *E*·(1 − (1 − *k*/*E*)<sup>*b*</sup>) of them, all *E* after a few dozen tokens. The layer
#   reads up to *E*/*k* times the weights of its dense twin for the same arithmetic.
# - **The knee moves out by about E/k.** Each expert is a Linear layer that turns compute-bound at
#   the usual ridge batch *b*\* rows. It gets only *b·k/E* of the batch, so the whole layer
#   needs a batch of about *b*\*·*E*/*k* before arithmetic, not weight reads, sets its time.
#
# Routing skew, here a router bias −skew·ln(1 + expert index) that makes low-numbered experts
# popular, concentrates rows on a few experts. **Expert choice** turns routing around: each expert
# takes its top *C* = ⌈*b·k/E*⌉ tokens, so every expert gets exactly *C* rows and all shapes are
# fixed in advance (so a CUDA graph can capture it), at the price of tokens that no expert takes
# and tokens that several take.

# %% [markdown]
# Take an 8-expert, top-2 layer of the harness's default size (token width 256, expert width
# 512) in float32. For a few batch sizes, the cost formulas the harness records with every point
# give the experts a batch touches under uniform routing, and the bytes the layer moves as a
# multiple of its dense twin's:

# %%
from snippets.costs import dense_cost, expected_routing, moe_cost

d, f, E, k = 256, 512, 8, 2  # widths, experts, top-k
for b in (1, 4, 16, 64):
    touched, rows = expected_routing("token-choice", b, E, k)
    sparse = moe_cost(b, d, f, E, k, touched, rows, 4)[1]
    ratio = sparse / dense_cost(b, d, k * f, 4)[1]
    print(f"batch {b}: {touched:.1f} experts, {ratio:.1f}× dense")

# %% tags=["hide-input"]
from benchmarks.site.pages import moe

page = moe.build()
page.show("curves")

# %% [markdown]
# ## When skew costs time
#
# The token-choice layer here runs its experts one after another on one device. Then every
# assignment is computed exactly once whatever the routing, and skew changes only how many experts
# are touched: fewer experts means fewer weights read and fewer kernels launched, so at small and
# medium batches a skewed router can even be *faster*. The busiest expert sets the latency when
# experts run side by side: one expert per GPU (expert parallelism), or one grouped kernel whose
# longest group finishes last. There, each step waits for the expert with the most rows, and a
# capacity limit (or expert choice) caps that load by dropping or rerouting tokens instead.

# %% tags=["hide-input"]
page.show("no_moe_measurement")
page.show_takeaway()
