# %% [markdown]
# # Your model: find its batch size
#
# Everything this site measures on its own workloads, the harness measures on yours: point it at a
# model and it times it at many batch sizes on your machine, then says which batch size to run and
# why. It doubles the batch from 1 until the model runs out of memory, reaches `--max-batch` or the
# time limit, or throughput stops growing (a point that would end the search is measured again first,
# and the output says why the search stopped); bisects where the latency crosses your budget; probes
# one row either side of the multiples of 8, 64 and 128 near the answer (where tile and wave steps
# sit); measures every batch it found again, in shared rounds, for the final numbers; and bisects
# again any gap those numbers open at the budget. `--time-limit` bounds the whole command, importing
# torch and measuring the ceilings included. Your model runs in a process of its own: a forward or a
# factory that never returns is ended a few seconds past the limit, and the file keeps the batches
# already timed, marked incomplete.
#
# ```sh
# nox -s sweep -- examples/resnet50_small.py:factory --budget-ms 100 --percentile 90 --report report.html
# python -m benchmarks sweep my_model.py:build --input-shape 3,224,224 --budget-ms 20
# ```
#
# `TARGET` is `path/to/file.py:factory` or `package.module:factory`. The factory returns the model,
# or the model and `make_input(batch)`, which returns a tensor, a tuple of arguments or a dict of
# keyword arguments with the batch first. Without a maker, `--input-shape` (one sample's shape) and,
# for token ids, `--vocab N` make random inputs. Outputs may be tensors, tuples, dicts or dataclasses;
# the model is swept in eval mode without gradients. In a notebook:
# `from benchmarks import sweep; result = sweep(model, make_input, budget_ms=20)` leaves your model as it
# was (a copy is swept when it must move to another device or dtype; train/eval modes are restored).
#
# The recommendation comes from the measurements: the largest batch whose latency at the chosen
# percentile meets the budget (and what it buys against batch 1), the batch of highest throughput and
# the smallest batch within 5 % of it, the batch to run by the rule of the
# [batch-size guide](../guide/) (step 4), the free range (latency within 10 % of batch 1's), the largest
# batch that fits in memory, and what bounds the curve, stretch by stretch, judged as on the rest of the
# site. The evidence is what the sweep itself measured:
#
# - **Fixed cost**: the operators one call dispatches, times the cost of one operator on a tiny probe
#   (an 8-layer MLP of width 64 at batch 1). It is never the intercept of a line through the first
#   batches: a line's intercept also holds work that grows slowly with the batch.
# - **Bytes**: a band from every weight read at each use (an RNN reads its recurrent weights at every
#   time step), the inputs read once (a KV cache included) and the outputs written once, to every
#   operator's inputs and outputs (nothing fused). The achieved rate is set against the measured copy
#   bandwidth and against the rate this device's small matrix products stream weights at (a second
#   probe: the same MLP, far wider, at batch 1), which is what small batches can reach.
# - **FLOPs**: PyTorch's FLOP counter, with the attention kernels it misses added and PyTorch's inference
#   fast paths (the Transformer encoder layer, oneDNN and cuDNN RNN layers) counted with those paths off
#   when the outputs agree. Operators no count covers are named with their share of the time, and no
#   verdict that needs the count is given while they hold 5 % of it or more.
#
# A stretch that runs faster than a measured ceiling is said not to be bounded by it; no share above
# 100 % is quoted. Every answer carries its noise: the first line says how noisy the machine was (the
# p90 against the median, the ceilings' spread between their samples); a budget met or missed within the
# spread of a batch's percentile says so and names the largest batch clearly within it; a 5 % cut-off
# that falls within a batch's noise names the next batch beyond it; and a step or an "avoid it" is said
# only beyond the noise. Each batch it names is named for what it is (the largest within the budget,
# the one with a margin, the recommended one), with a line saying how they relate.
# To serve the model behind a dynamic batcher, `python -m benchmarks serve SWEEP.json` plans the max
# batch, max delay and instances from the same file ([Serving with dynamic batching](../serving/)).
#
# ## Two examples
#
# ResNet-50 on small images, and one decode step of the project's small decoder at a context of 1,024
# tokens, whose input maker builds the KV cache a server would hold for each sequence:

# %% tags=["hide-input"]
from benchmarks.site.pages import your_model

page = your_model.build()
page.show("examples")

# %% [markdown]
# ## Committed sweeps
#
# Each sweep below was measured with the command shown, on the device named, by the code of the
# commit named (its line says when that tree had uncommitted changes); the charts and the sentences
# are drawn from its results file under `benchmarks/sweeps/`. Both ran on a shared two-core machine
# while other work ran on it: their first line says how noisy it was, and their numbers carry that
# noise.

# %% tags=["hide-input"]
page.show("sweeps")
page.show_takeaway()
