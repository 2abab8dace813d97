# %% [markdown]
# # Serving LLMs with continuous batching
#
# ## The answer
#
# The engine settings for the page's worked cases: the running-sequence cap that keeps the time per output token
# within the budget, with chunked prefill off and on, and the load that then fits. How they follow, and how far
# published systems landed from these predictions, is below.

# %% tags=["hide-input"]
from benchmarks.site.pages import llm_serving

page = llm_serving.build()
page.show("answer")

# %% [markdown]
# ## How an engine batches
#
# A language model is not served in fixed batches. An engine such as vLLM, TensorRT-LLM or SGLang
# runs one forward pass, a *step*, over every sequence it holds, then adds waiting requests and
# retires finished ones before the next step. Nobody sets the batch: it is however many sequences
# are running, and what the engine's users tune is a cap on running sequences, a cap on tokens per
# step, whether prompts are cut into chunks, and how much memory the KV cache may take. What they
# need to see is the trade-off those settings move along: total tokens per second against each
# user's tokens per second, with the time to first token, and where the KV cache stops the batch
# from growing.
#
# This page builds that from the decode roofline of the [Transformer decode](../decode/) page.
# Every number on it is either a **prediction** from a GPU's datasheet (labelled so; nothing here
# was measured) or a **published** figure by others, quoted and cited.
#
# ## The model
#
# A simulator (`benchmarks/analysis/serving/llm/engine_loop.py`) serves requests step by step, as an
# engine does: requests arrive, each step prefills or decodes what the KV cache admits, and a step takes the
# decode page's per-operation time.
#
# <details class="note"><summary>How the simulator serves requests: arrivals, steps, the KV cache, a step's
# time and tensor parallelism</summary>
#
# - **Requests** have a prompt and an answer length and arrive at random (Poisson) or from *N*
#   clients that each send the next request when the last one ends (a closed loop, as benchmark
#   clients run). In a closed loop each client's first request is a warm-up, left out of the
#   latencies.
# - **A step** either prefills whole waiting prompts while the running sequences wait (*prompts
#   first*, the older engines' default), or, with *chunked prefill*, decodes every running
#   sequence and fills the rest of its token budget with pieces of prompts.
# - **The KV cache** lives in blocks of 16 tokens in the memory the weights leave (90 % of the
#   GPU's, as vLLM's default). A request is admitted only when its prompt's blocks are free; when a
#   running sequence needs a block that is not there, the newest one is preempted and computed
#   again later.
# - **A step's time** is the decode page's per-operation sum: the matrix products (every weight
#   read once for the whole step; two FLOPs per weight per new token; the output head for each
#   sequence that samples a token), then the attention (each sequence reads its own cache), each
#   at max(FLOPs ÷ peak FLOP/s, bytes ÷ bandwidth), plus a fixed cost per step for the kernels'
#   launches, counted under the table below. A step that only decodes runs on a captured CUDA
#   graph, its batch padded up to the next of the engine's capture sizes, as vLLM and TensorRT-LLM
#   pad; the padding rows cost their matrix products. vLLM's V0 engine captured 1, 2, 4, then every
#   multiple of 8 up to the cap, the page's default; its V1 engine (the only one since 0.11) captures
#   1, 2, 4, every multiple of 8 below 256, then every multiple of 16, up to min(2 × max_num_seqs, 512)
#   by default, and runs a larger batch without a graph (`--max-cudagraph-capture-size` in
#   [vLLM's engine arguments](https://docs.vllm.ai/en/latest/configuration/engine_args/)).
#
# Tensor parallelism over *n* GPUs is one device with *n* times the rate, bandwidth and memory, plus
# the two all-reduces a layer (after the attention and after the feed-forward block), each a ring
# over the GPUs' NVLink (PCIe where there is none) with a latency per call; the imbalance between
# the GPUs is left out. The same simulator also runs on the decode and prefill steps a committed run
# measured, interpolated over batch and context
# (`python -m benchmarks serve llm:run --run benchmarks/results/<device>/<run>.json`); this page
# uses the datasheet GPUs.
#
# </details>

# %% tags=["hide-input"]
page.show("predicted_memory_and_step_time_by_gpu")

# %% [markdown]
# ## The front: tokens per second in all against per user
#
# Each point is a closed loop of a number of clients. One client gets the fastest stream; more
# clients share each step's weight read, so the total climbs while each user's rate falls. The
# total stops climbing where the KV cache is full (beyond it, new requests wait for blocks) or
# where the matrix products of a step turn compute-bound, whichever comes first: for short
# requests on a small model the compute bound can come first.
# **Per user** is 1 ÷ the median time per output token: the rate a user sees while an answer
# streams, the wait for the first token left out. Counting that wait (output tokens ÷ the time
# from sending the request to its last token, `serve llm`'s "user e2e" column) gives less, and
# the budget's answer below gives both.

# %% tags=["hide-input"]
page.show("predicted_front_by_gpu")

# %% [markdown]
# ## Time to first token and per output token against concurrency

# %% tags=["hide-input"]
page.show("predicted_latencies_and_chunked_prefill")

# %% [markdown]
# ## A budget on the time per output token
#
# Given a budget on the p99 time per output token (and, if you like, on the time to first
# token), the simulator finds the largest concurrency that meets it, which is also the
# running-sequence cap to set, then the largest random arrival rate that meets it with that cap,
# and says what stops more: the KV memory, the step time, or the prefills.

# %% tags=["hide-input"]
page.show("largest_concurrency_within_budget")

# %% [markdown]
# ## Against published serving results

# %% tags=["hide-input"]
page.show("published_results_against_predictions")

# %% [markdown]
# ## Checked against a real engine
#
# Every answer above comes from the simulator, so it is held to the engine it models: a real vLLM
# serves the project's own streaming client, its step curve is measured first, and each load is
# replayed in the simulator with the very requests sent. Nothing is fitted to the loads.
# `nox -s engine-check` repeats it on any machine, a GPU host's own vLLM included.

# %% tags=["hide-input"]
page.show("checked_against_a_real_engine")

# %% [markdown]
# ## Prefix caching and disaggregated prefill and decode
#
# Two things deployments add on top of continuous batching. **Prefix caching** (vLLM's automatic
# prefix caching, SGLang's RadixAttention) keeps the KV blocks of a prompt's beginning that other
# prompts share, such as a system prompt: a prompt that finds them is computed from after them,
# and all sequences hold one copy; blocks no sequence uses stay cached until memory runs short,
# then go longest-unused first (`--prefix-tokens`, `--prefix-hit`). **Disaggregated serving**
# (NVIDIA Dynamo, vLLM's and SGLang's prefill/decode split) gives prompts and decoding GPUs of
# their own, and each prompt's KV cache crosses a link from one to the other
# (`--disaggregate P:D`, `--kv-link-gbps`).

# %% tags=["hide-input"]
page.show("prefix_caching_and_disaggregation")

# %% [markdown]
# ## How the engines' settings map onto the model
#
# The command takes each engine's main settings under one name:
#
# <div class="md-typeset__scrollwrap"><div class="md-typeset__table"><table>
# <caption>The engines' names for what the model varies</caption>
# <thead><tr><th>in this model (serve llm)</th><th>vLLM</th><th>TensorRT-LLM</th><th>SGLang</th><th>what it
# sets</th></tr></thead><tbody>
# <tr><td><code>--max-num-seqs</code></td> <td><code>--max-num-seqs</code></td> <td><code>max_batch_size</code></td>
# <td><code>--max-running-requests</code></td> <td>the most sequences in one step: the running-sequence
# cap</td></tr>
# <tr><td><code>--max-batched-tokens</code></td> <td><code>--max-num-batched-tokens</code></td>
# <td><code>max_num_tokens</code></td> <td><code>--chunked-prefill-size</code></td> <td>the most new tokens in one
# step (prompt pieces plus one per decoding sequence)</td></tr>
# <tr><td><code>--chunked-prefill</code></td> <td><code>--enable-chunked-prefill</code></td>
# <td><code>enable_chunked_context</code></td> <td>pieces on unless the size is -1; a piece shares a step with
# decoding only with <code>--enable-mixed-chunk</code></td> <td>prompts cut into pieces that share steps with
# decoding, instead of steps of their own</td></tr>
# <tr><td><code>--memory-fraction</code></td> <td><code>--gpu-memory-utilization</code></td>
# <td><code>kv_cache_free_gpu_mem_fraction</code> (of the memory left after the weights)</td>
# <td><code>--mem-fraction-static</code></td> <td>the memory the weights and the KV blocks may take</td></tr>
# <tr><td><code>--block-size</code></td> <td><code>--block-size</code></td> <td><code>tokens_per_block</code></td>
# <td><code>--page-size</code></td> <td>the tokens in one KV block</td></tr>
# <tr><td><code>--reserve-kv</code></td> <td>(none: it preempts)</td> <td><code>capacity_scheduler_policy</code>
# <code>GUARANTEED_NO_EVICT</code> (its default)</td> <td>–</td> <td>admit a request only when its whole answer's
# blocks are free, instead of preempting when the cache fills</td></tr>
# <tr><td><code>--tp</code></td> <td><code>--tensor-parallel-size</code></td> <td><code>tp_size</code></td>
# <td><code>--tp-size</code></td> <td>GPUs sharing each layer, two all-reduces a layer</td></tr>
# </tbody></table></div></div>

# %% tags=["hide-input"]
page.show_takeaway()
