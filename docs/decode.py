# %% [markdown]
# # Transformer decode: the KV cache is a per-sequence weight
#
# The article treats a Transformer as an MLP. In the Chinese translation this site started from:
# “Transformers 本質上就是多層感知機（MLPs）” (“Transformers are in essence multilayer perceptrons (MLPs)”), and
# “由于有了 KV 緩存（能夠將計算數據保留在內存中），注意力機制所消耗的時間被大幅減少”
# (“thanks to the [KV cache](../glossary/#kv-cache),
# which keeps computed data in memory, the time the attention mechanism takes is greatly reduced”),
# so a decoder would batch like a stack of Linear layers. Half of that is right. The cache does save
# the arithmetic: a decode step computes keys and values for the new token only. But it does not
# save the memory traffic. Every step must read the cached keys and values of every position of
# every sequence, and unlike the weights that read is not shared across the batch. This page
# measures decode steps of a small decoder stack (`snippets/decode.py`: pre-norm attention and a
# SwiGLU FFN per layer, as in Llama, no embedding or LM head) at several context lengths, with full
# multi-head attention (MHA) and with grouped-query attention (GQA), and a prefill beside them.
#
# ## What one decode step moves
#
# Take *b* sequences that each hold *c* tokens in the cache. One step adds a token to each and
# attends over *n* = *c* + 1 positions. With *P* Linear-weight elements, *W* bytes of weights,
# *L* layers, *H* query heads and *H*<sub>kv</sub> key/value heads of size *d*<sub>h</sub>, and
# *s* bytes per element:
#
# $$\mathrm{FLOPs} = b\,\left(2P + 4\,L\,H\,d_h\,n\right)$$
#
# $$\mathrm{bytes} = W + b\,\left(\kappa\,n + a\right), \qquad \kappa = 2\,L\,H_\mathrm{kv}\,d_h\,s$$
#
# where κ is the KV-cache bytes per cached position of one sequence (a K and a V vector in every
# layer) and *a* the activation bytes per token. The weights *W* are read once for the whole batch;
# the KV term is read once *per sequence*. So the bytes grow with *b*·*n* from the first extra
# sequence, and the longer the context the faster they grow.
#
# ## When a decoder really is an MLP
#
# Drop the KV term and the step is an MLP: bytes ≈ *W*, flat in the batch, until the arithmetic
# catches up. That approximation holds while the cache read is small next to the weight read:
#
# $$b\,n\,\kappa \ll W \quad\Longleftrightarrow\quad b \ll b_\times = \frac{W}{\kappa\,n}$$
#
# At the **crossover batch** *b*<sub>×</sub> the step reads as many cache bytes as weight bytes,
# and beyond it the cache dominates. A second limit is worse. As the batch grows the weight term
# fades and the intensity of the step tends to
#
# $$I_\infty(n) = \frac{2P + 4\,L\,H\,d_h\,n}{\kappa\,n + a}$$
#
# If *I*<sub>∞</sub> is below the device's ridge (peak FLOP/s ÷ bandwidth), the step never turns
# compute-bound at any batch: there is no knee, only a line that grows with the batch. As the
# context grows, *I*<sub>∞</sub> falls towards 4·*L*·*H*·*d*<sub>h</sub>/κ = 2·(*H*/*H*<sub>kv</sub>)/*s*
# FLOP per byte, the intensity of attention alone, which is a few FLOP per byte, far below any
# GPU's ridge. Grouped-query attention shares each K/V head among *H*/*H*<sub>kv</sub> query heads,
# which divides κ by that factor. Since the K and V projections shrink too, *W* falls a little,
# so *b*<sub>×</sub> grows by a little less than *H*/*H*<sub>kv</sub>; *I*<sub>∞</sub> rises, and
# the knee moves back towards where an MLP's would be.

# %% [markdown]
# The cost model is `snippets/costs.py`, the one the harness counts with. Here it is applied to
# the decoder the GPU profile measures (bf16, full multi-head attention), eight sequences at a
# short and at a long context:

# %%
from snippets.costs import DecoderConfig, decode_cost

# 4 layers, d_model 4096, 32 query and 32 K/V heads, SwiGLU d_ff 14336
config = DecoderConfig(4, 4096, 32, 32, 14336, ffn="swiglu")
for context in (128, 8192):  # 8 sequences in bf16
    cost = decode_cost(8, context, config, bytes_per_element=2)
    weights = cost["weight_bytes"] // 2**20  # MiB
    kv = cost["kv_bytes"] // 2**20
    print(f"context {context}: weights {weights:,} MiB, KV {kv:,} MiB")

# %% tags=["hide-input"]
from benchmarks.site.pages import decode

page = decode.build()
page.show("decode_steps_and_prefill_by_device")

# %% [markdown]
# ## Read per operation
#
# "No compute knee" does not mean "batching does not help". A step does two kinds of work, one
# after the other: the matmuls, whose weights are read once for the whole batch, and the
# attention, which reads every sequence's own cache. Each has its own roofline, and the step's is
# their sum. The matmuls behave like an MLP, flat and then compute-bound; the attention grows with
# the batch from the first sequence and never catches up with the bytes.

# %% tags=["hide-input"]
page.show("step_time_per_operation_by_device")

# %% [markdown]
# ## Tokens per sequence
#
# A decode step gives every sequence in the batch one token. The server's tokens per second grow
# with the batch, but each user's own rate is one token per step, and falls as the step grows.

# %% tags=["hide-input"]
page.show("tokens_per_second_by_device")

# %% [markdown]
# The folded reference tables' columns are explained in
# [Methodology](../methodology/#reading-the-decode-tables).

# %% tags=["hide-input"]
page.show("h200_formulas_until_a_gpu_run")
page.show_takeaway()
