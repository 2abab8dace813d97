# %% [markdown]
# # Every device, read the same way
#
# Each device with a committed results file appears here once, from its newest complete run,
# and every device is read the same way, so that a team that merges results from several
# machines can set them side by side: what its ceilings measured against what its datasheet
# promises, where the MLP's knee is predicted from those measured ceilings against where it
# was measured, its curves on axes that every machine shares, and the software it was
# measured with. Measured figures are plain; datasheet figures and predictions are in italics
# in the tables and dashed in the chart.
#
# ## Ceilings
#
# A run first measures what its device can do: the bandwidth of a large copy and the rate of
# a large matrix multiply in each dtype. Where the device is in the
# [datasheet table](../calculator/#the-datasheet-table), its figures stand beside them, with
# the share the measurement reached.

# %% tags=["hide-input"]
from benchmarks.site.pages import devices

page = devices.build()
page.show("ceilings")

# %% [markdown]
# ## The MLP's knee, predicted and measured
#
# Each depth-8 MLP has two [ridge batches](../glossary/#ridge-batch), both predictions: one
# from the roofline on the run's measured ceilings, the other on the rates the MLP's own
# kernels reached (their bandwidth while the curve is flat, their arithmetic rate at its
# largest batch). The [measured knee](../glossary/#measured-knee) is where a two-segment fit of
# the measured curve bends; the last column is the check the [MLP page](../mlp/) makes, curve
# by curve, with the reasons a knee lands where it does. The curves are those that show the
# hardware: CUDA-graph replay on a GPU, eager calls on a CPU, with weights rotated so that
# every call reads memory.

# %% tags=["hide-input"]
page.show("knees")

# %% [markdown]
# ## All devices on shared axes
#
# Machines differ by orders of magnitude in speed, so their curves are normalised before they
# are compared: latency is divided by the latency at batch 1, and the batch by the ridge batch
# of that run's own ceilings. On these axes the roofline of a wide layer is flat at 1 up to 1
# and then rises along the diagonal, whatever the machine; each measured curve shows how its
# device departs from that shape.

# %% tags=["hide-input"]
page.show("curves")

# %% [markdown]
# ## Software

# %% tags=["hide-input"]
page.show("software")

# %% tags=["hide-input"]
page.show("takeaway")
