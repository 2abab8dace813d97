# %% [markdown]
# # Training: the batch a step affords and the batch the data can use
#
# Every other page times inference: one forward pass. A training step does three things with the
# batch and one without it:
#
# - **forward**, as in inference;
# - **input gradient**: each layer multiplies the gradient of its output by its weight, to pass
#   the gradient down, the same FLOPs as its forward product;
# - **weight gradient**: each layer multiplies the gradient of its output by its input, again the
#   same FLOPs, summed over the batch into one gradient per weight;
# - **optimizer update**: every parameter, its gradient and its optimizer state are read and
#   written once, whatever the batch. AdamW touches 7 tensors of a parameter's size (the
#   parameter, its gradient and two moments read; the parameter and the moments written); in mixed
#   precision, with fp32 master weights and moments beside bf16 weights, that is 28 bytes a
#   parameter moved and 16 bytes a parameter held.
#
# So a step is about three forwards of matrix work, plus a fixed cost that is several times the
# weights' bytes. The fixed cost a batch amortises is larger than in inference, so the batch at
# which the step stops being bound by memory (its ridge batch) is larger too. Activations are the
# other side: autograd keeps each layer's inputs for the backward, so memory grows with the batch
# and sets the largest batch that fits. Activation checkpointing keeps only each layer's input and
# recomputes the rest during the backward (one more forward); gradient accumulation reaches a
# larger batch in several steps.
#
# The workloads are `train-mlp` and `train-decoder` (`snippets/train.py`, FLOPs and bytes by phase
# in `snippets/costs.py`); the statistical side comes from `python -m benchmarks.measure.noise_scale`
# (`benchmarks/noise/`).

# %% tags=["hide-input"]
from benchmarks.site.pages import training

page = training.build()

# %% [markdown]
# ## The measured step against its roofline by phase
#
# Each chart draws the measured time per step (solid) beside the roofline of the whole step and
# of each of its four phases on the same run's measured ceilings (dashed), and the table beside
# it gives the ratio, the optimizer's share of the roofline and the bytes autograd kept per
# sample, counted by `torch.autograd.graph.saved_tensors_hooks` during the run beside the hand
# count of `snippets/costs.py`. The roofline counts the update as one fused pass (7 accesses a
# parameter for AdamW); torch's AdamW on a CPU makes a separate pass over memory for each of its
# elementwise operations. The ceilings are the run's own, measured on the same shared machine as
# the steps, so a step at a large batch can come out faster than its roofline.

# %% tags=["hide-input"]
page.show("step_curves_by_device")

# %% [markdown]
# ## What a step holds, and the largest batch that fits
#
# The weights, their gradients and the optimizer state are held whatever the batch; the
# activations grow with it. For a layer shaped like Llama-3-8B's, on the datasheet of a GPU
# (a ceiling, not a measurement: `python -m benchmarks predict train-decoder --gpu "H100 SXM"
# --dtype bf16 --param precision=mixed --batch 1,8` gives the same numbers for any GPU):

# %% tags=["hide-input"]
page.show("memory")

# %% [markdown]
# ## The batch the data can use: the gradient noise scale
#
# A batch's gradient is the true gradient *G* plus noise whose variance falls as 1/*B*. McCandlish
# et al. (2018, "An Empirical Model of Large-Batch Training") measure how large a batch has to be
# before the noise stops mattering with the simple noise scale
#
# $$B_\text{simple} = \frac{\operatorname{tr}(\Sigma)}{|G|^2}$$
#
# where Σ is the covariance of one example's gradient. Since the squared norm of a batch's
# gradient has expectation |G|² + tr(Σ)/B, the mean squared norm at two batch sizes gives both.
# Here, a small classifier on scikit-learn's digits, at four checkpoints of a reference training
# run, for three seeds:

# %% tags=["hide-input"]
page.show("noise_scale")

# %% [markdown]
# ## Steps against batch: where a larger batch stops paying
#
# Their model says that with a tuned learning rate the steps to a given loss are
# S = S<sub>min</sub>(1 + B<sub>noise</sub>/B): below the noise scale, doubling the batch nearly halves
# the steps; above it, the steps barely fall while each step costs more examples. The check: short
# training runs with plain SGD at eight batch sizes, each with the best of six learning rates, on
# the same data, against the model with B<sub>noise</sub> set to the measured B<sub>simple</sub>
# (only S<sub>min</sub> fitted) and against the model fitted to the steps alone. The authors note
# that B<sub>simple</sub> equals the noise scale that sets the steps only when the loss's curvature
# is the same in every direction; where the two fits differ, the measured steps are what a batch
# size should be chosen from.

# %% tags=["hide-input"]
page.show("tradeoff")

# %% [markdown]
# The two sides pull apart: a step's time per sample keeps falling until its ridge batch, which the
# fixed cost of the update pushes out, while past the noise scale each extra sample buys fewer
# saved steps. Read the measured step curves above against the steps-to-target chart: the batch to
# train at is where both have stopped paying, capped by the memory. On a GPU the roofline puts the
# step's ridge batch much further out than on this CPU (`python -m benchmarks predict train-mlp
# --gpu "H100 SXM" --dtype bf16 --batch 1,1024,4096` computes it, a ceiling). For your own model,
# `python -m benchmarks sweep MODEL --train --memory-gb GB` measures the step against batch and the
# activations autograd keeps per sample, and recommends a batch.

# %% tags=["hide-input"]
page.show_takeaway()
