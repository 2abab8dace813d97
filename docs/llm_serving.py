# %% [markdown]
# # Serving LLMs with continuous batching
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
# A simulator (`benchmarks/analysis/continuous_batching.py`) serves requests step by step, as an
# engine does:
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
#   at max(FLOPs ÷ peak FLOP/s, bytes ÷ bandwidth), plus a fixed cost per step: one published
#   kernel-launch time (about 3 µs) for each of eight kernels per layer.
#
# Tensor parallelism over *n* GPUs is one device with *n* times the rate, bandwidth and memory:
# the all-reduces between them are not counted, which flatters it. The same simulator also runs on
# the decode and prefill steps a committed run measured, interpolated over batch and context
# (`python -m benchmarks serve llm:run --run benchmarks/results/<device>/<run>.json`); this page
# uses the datasheet GPUs.

# %% tags=["hide-input"]
from benchmarks.site.pages import llm_serving

page = llm_serving.build()
page.show("setup")

# %% [markdown]
# ## The front: tokens per second in all against per user
#
# Each point is a closed loop of a number of clients. One client gets the fastest stream; more
# clients share each step's weight read, so the total climbs while each user's rate falls. The
# total stops climbing where the KV cache is full: beyond it, new requests wait for blocks.

# %% tags=["hide-input"]
page.show("front")

# %% [markdown]
# ## Time to first token and per output token against concurrency

# %% tags=["hide-input"]
page.show("latency")

# %% [markdown]
# ## A budget on the time per output token
#
# Given a budget on the p99 time per output token (and, if you like, on the time to first
# token), the simulator finds the largest concurrency that meets it, which is also the
# running-sequence cap to set, then the largest random arrival rate that meets it with that cap,
# and says what stops more: the KV memory, the step time, or the prefills.

# %% tags=["hide-input"]
page.show("budget")

# %% [markdown]
# ## Against published serving results

# %% tags=["hide-input"]
page.show("published")

# %% [markdown]
# ## How the engines' settings map onto the model
#
# The command takes each engine's main settings under one name:

# %% tags=["hide-input"]
page.show("settings")

# %% tags=["hide-input"]
page.show("takeaway")
