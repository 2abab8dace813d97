# %% [markdown]
# # Devices: every device, read the same way
#
# Each device with a committed results file appears here once, from its newest complete run,
# and every device is read the same way, so that a team that merges results from several
# machines can set them side by side: what its ceilings measured against what its datasheet
# promises, where the MLP's knee is predicted from those measured ceilings against where it
# was measured, its curves on axes that every machine shares, and the software it was
# measured with. Measured figures are plain; datasheet figures and predictions are in italics
# in the tables and dashed in the chart.

# %% tags=["hide-input"]
from benchmarks.site.pages import devices

page = devices.build()
page.show("beside")

# %% [markdown]
# ## Ceilings
#
# A run first measures what its device can do: the bandwidth of a large copy and the rate of
# a large matrix multiply in each dtype. Where the device is in the
# [datasheet table](../calculator/#the-datasheet-table), its figures stand beside them, with
# the share the measurement reached.

# %% tags=["hide-input"]
page.show("ceilings")

# %% [markdown]
# ## The MLP's knee, predicted and measured
#
# The [ridge batch](../glossary/#ridge-batch) of each depth-8 MLP is predicted from the
# roofline on the run's measured ceilings, before looking at the curve; the
# [measured knee](../glossary/#measured-knee) is where a two-segment fit of the measured curve
# bends. Where the knee lands later, the kernels at small batches reach less than the
# ceilings: the last two columns put the ridge batch at the rates they did reach (their
# bandwidth while the curve is flat, their arithmetic rate at its largest batch). Those rates
# are read off the same curve, so that ridge batch is a fit, not a prediction: it agrees with
# the knee when the curve is shaped like a roofline, flat and then proportional, and the
# [MLP page](../mlp/) says, curve by curve, where it is not. The curves are those that show the
# hardware: CUDA-graph replay on a GPU, eager calls on a CPU, with weights rotated so that
# every call reads memory.

# %% tags=["hide-input"]
page.show("knees")

# %% [markdown]
# ## All devices on shared axes
#
# Machines differ by orders of magnitude in speed, so their curves are normalised before they
# are compared: latency is divided by the roofline's latency at batch 1 (the time to read the
# weights at the run's measured bandwidth), and the batch by the ridge batch of that run's own
# ceilings. On these axes every roofline starts at 1, stays there until the batch reaches the
# ridge batch (x = 1) and then rises along the diagonal, whatever the machine. A measured curve
# sits above it by the share of the bound its kernels missed: at batch 1, by how much slower
# than the copy ceiling the weights were read; at large batches, by how far below the matmul
# ceiling the arithmetic ran.

# %% tags=["hide-input"]
page.show("curves")

# %% [markdown]
# ## Software

# %% tags=["hide-input"]
page.show("software")

# %% tags=["hide-input"]
page.show_takeaway()
