# %% [markdown]
# # Reproduce: measure your own GPU
#
# ## Run it
#
# On a machine with an NVIDIA GPU and Python 3.10 or newer:
#
# ```sh
# python3 -m pip install nox && nox -s bench docs
# ```
#
# `bench` measures the GPU (the `full` profile; a CPU gets the shorter `quick` profile) and writes
# one results file under `benchmarks/results/<device>/`; it reuses the torch your Python already
# has, so a CUDA build is never downloaded twice. `docs` rebuilds this site into `site/` from every
# results file, without torch. Open `site/index.html`, or run `nox -s serve` for a live preview
# that rebuilds when a page or a results file changes.
#
# Useful options, passed after `--`:
#
# ```sh
# nox -s bench -- --profile quick --device cpu   # the short CPU profile
# nox -s bench -- --cache resident               # measure with weights kept in cache
# python -m benchmarks validate benchmarks/results/   # check results files
# ```
#
# ## Contribute a device's results
#
# 1. Run `nox -s bench` on the device. Let it finish: an interrupted run is kept, marked
#    incomplete, and a complete run of the same device is preferred over it.
# 2. Check the file with `python -m benchmarks validate benchmarks/results/` and build the site
#    with `nox -s docs` to see your curves.
# 3. Commit the new file under `benchmarks/results/<device>/` as it is. Runs never overwrite each
#    other, so results from many machines merge by copying directories together; the site shows
#    the newest complete run of each device and lists the older ones on the home page.
#
# ## What a results file contains
#
# One JSON document per run: where and when it ran, the device's fingerprint, the ceilings
# measured in the run, correctness checks, and one record per measured point with its timing
# samples. The table below is generated from the schema in `benchmarks/contract/schema.py` when the site is
# built (`python -m benchmarks schema` prints the same schema as JSON Schema).

# %% tags=["hide-input"]
from benchmarks.site.pages import reproduce

page = reproduce.build()
page.show("schema")


# %% [markdown]
# Results files marked `run.synthetic` are test fixtures and are never published. A file that
# breaks the schema stops the site's build with a message naming the file and the field.
#
# ## The committed results

# %% tags=["hide-input"]
page.show("runs")
page.show("takeaway")
