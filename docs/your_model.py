# %% [markdown]
# # Your model: find its batch size
#
# Everything this site measures on its own workloads, the harness measures on yours: point it at a
# model and it times it at many batch sizes on your machine, then says which batch size to run and
# why. It doubles the batch from 1 until the model runs out of memory, reaches `--max-batch` or the
# time limit, or throughput stops growing; bisects where the latency crosses your budget; probes one
# row either side of the multiples of 8, 64 and 128 near the answer (where tile and wave steps sit);
# and measures every batch it found again, in shared rounds, for the final numbers.
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
# `from benchmarks import sweep; result = sweep(model, make_input, budget_ms=20)`.
#
# The recommendation comes from the measurements: the largest batch whose latency at the chosen
# percentile meets the budget (and what it buys against batch 1), the batch of highest throughput and
# the smallest batch within 5 % of it, the batch to run by the rule of the
# [batch-size guide](../guide/) (step 4), the free range (latency within 10 % of batch 1's), the largest
# batch that fits in memory, and what bounds the curve, judged as on the rest of the site: against the
# device's measured copy bandwidth and matmul rate, with the bytes counted as a band from every weight
# read once (fully fused) to every operator's inputs and outputs (nothing fused).
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
# are drawn from its results file under `benchmarks/sweeps/`.

# %% tags=["hide-input"]
page.show("sweeps")
page.show("takeaway")
