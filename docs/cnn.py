# %% [markdown]
# # CNNs: every weight is reused at every pixel
#
# A Linear layer at batch 1 touches each weight once: it reads the weight and does one
# multiply-add with it. That is why an MLP has a long flat region, where extra rows are almost
# free until the arithmetic catches up with the weight read. A convolution is different: it
# slides the same filter over the whole image, so each weight is used once per output position
# before a second image ever arrives. This page measures single convolution layers and a whole
# ResNet-50 (`snippets/cnn.py`) against batch size and compares each with the roofline from the
# run's own measured ceilings.
#
# ## The cost of one convolution
#
# A same-padded *k*×*k* convolution from *C*<sub>in</sub> to *C*<sub>out</sub> channels, with
# stride 1 on an *H*×*W* image, has *k*²·*C*<sub>in</sub>·*C*<sub>out</sub> weights and
# *H*<sub>out</sub>·*W*<sub>out</sub> output positions. Every output position applies every weight
# once, so for a batch of *b* images
#
# $$\mathrm{FLOPs} = 2\,k^2\,C_\mathrm{in}\,C_\mathrm{out}\,H_\mathrm{out}\,W_\mathrm{out}\,b$$
#
# and, reading the weights once, the input once and writing the output once, with *s* bytes per
# element,
#
# $$\mathrm{bytes} \approx s\,(k^2 C_\mathrm{in} C_\mathrm{out}
# + b C_\mathrm{in} H W + b C_\mathrm{out} H_\mathrm{out} W_\mathrm{out})$$
#
# Two things follow, and together they explain why the flat region is short.
#
# - **The positions act as a batch the layer already has.** Each weight does
#   2·*H*<sub>out</sub>·*W*<sub>out</sub> FLOPs per image. An MLP needs a batch of
#   *H*<sub>out</sub>·*W*<sub>out</sub> rows to reuse its weights that often, so a convolution
#   starts where an MLP's knee usually is: its arithmetic intensity at batch 1 can already be above
#   the device's ridge (peak FLOP/s ÷ bandwidth), and then it is compute-bound from the first image.
# - **The activations grow with the batch.** In the early layers the feature maps are far larger
#   than the filters, so most of the bytes are per image. Even a memory-bound layer then gets
#   slower in proportion to the batch, because the bytes it moves do. Only a layer whose weights
#   dominate its bytes, a deep layer with many channels on a small feature map, has a weight read
#   that extra images can share.
#
# ## What the article got wrong
#
# The article says a Conv2d has kernel_size² × out_channels weights and that a 3×3 filter on a
# 224×224 image at stride 1 is reused 224 times. Both undercount. The weight count leaves out the
# input channels, and the filter is applied at every output position, not once per row:

# %% tags=["hide-input"]
from benchmarks.site.pages import cnn

page = cnn.build()
page.show("article_counts_corrected_by_the_formulas")

# %% [markdown]
# The article's conclusion, that batching helps a convolution less, is right, but the reason is
# arithmetic intensity: the reuse across positions means there is little weight read left to share,
# and the per-image activations make the bytes grow with the batch anyway.
#
# The same arithmetic with `snippets/costs.py`, the formulas the harness counts with: that layer
# on one image, beside one row through a 4096-wide Linear layer, both in bf16.

# %%
from snippets.costs import conv_cost, linear_cost

layers = {  # batch 1 in bf16 (2 bytes per element)
    "Conv2d 3×3, 64→64, 224×224": conv_cost(1, 64, 64, 3, 224, 2),
    "Linear 4096→4096, one row": linear_cost(1, 4096, 4096, 2),
}
for name, (flops, moved) in layers.items():
    print(f"{name}: {flops:.3g} FLOPs, {moved:.3g} bytes")
    print(f"    {flops / moved:.3g} FLOP/byte")

# %% [markdown]
# ## Measured curves
#
# For each device, the single layers share one chart and ResNet-50 has its own. Solid lines are
# measured medians with their interquartile band; dashed lines are the roofline from the run's
# own measured ceilings (copy bandwidth and matmul FLOP/s); ◇ marks the ridge batch where it
# falls inside the measured range and △ the measured knee. The table under the
# charts puts each layer's intensity at batch 1 beside the run's ridge.

# %% tags=["hide-input"]
page.show("measured_layers_and_resnet50_by_device")

# %% [markdown]
# ## Reading the intensity table
#
# *Uses of each weight per image* is *H*<sub>out</sub>·*W*<sub>out</sub>. *FLOP/byte at batch 1*
# divides the FLOPs by the bytes that the harness counts for one image. The *ridge* is the run's
# measured matmul FLOP/s divided by its measured copy bandwidth: a call whose intensity is above
# it is compute-bound on the roofline, so its time grows with every image from the first. The
# *ridge batch* is the batch where the roofline's compute time overtakes its memory time; when
# the intensity is already above the ridge at batch 1 that batch is below 1, and there is no flat
# region at all. ResNet-50's row counts its 53 convolutions and the fc layer together. Its early
# layers move mostly activations and its last ones, with millions of weights on small feature maps,
# mostly weights (compare the single layers' weight shares), so one whole-network intensity is an
# average over very different layers, and the roofline of the sum is optimistic: it lets layers
# that are short of bandwidth borrow it from layers that are short of arithmetic.

# %% tags=["hide-input"]
page.show("h200_formula_preview_while_no_gpu_measured")

# %% tags=["hide-input"]
page.show_takeaway()
