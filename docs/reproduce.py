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
# ## Run it on every GPU of a Ray cluster
#
# A team with several kinds of GPU runs the same profile on each through Ray, the cluster engine
# many ML teams already have (on Kubernetes through KubeRay, on a cloud through `ray up`, or inside a
# Slurm allocation with `ray start` on each node). From any machine that can reach the cluster:
#
# ```sh
# nox -s fleet -- --address HEAD:6379 --dry-run    # what would run where
# nox -s fleet -- --address HEAD:6379              # one run per GPU kind
# nox -s fleet -- --address HEAD:6379 --per-node --accelerators H100,A100 --time-limit 600
# ```
#
# `fleet` reads each node's GPU kind from the accelerator type Ray gives it, runs `python -m benchmarks
# run` once per kind (or on every node with `--per-node`) as a task holding one GPU, with the node's
# own Python and torch (the checkout travels as Ray's working directory; nothing is installed there),
# and prints each node's progress. The runs go on in parallel, so the whole fleet takes about as long
# as its slowest node's profile (the `full` profile is planned to stay within five minutes on an
# H200). Each node sends its results file back through Ray; the driver validates it with the same
# strict reader as `validate` and writes it under `benchmarks/results/<device>/`, never replacing a
# file. A node that fails, disappears or overruns `--time-limit` costs only its own run: one line names
# it and why, and the exit status counts the failures. CPU-only nodes are skipped unless
# `--include-cpu` is given; options after a second `--` go to every node's run. Then commit the new
# files and rebuild the site with `nox -s docs`: every device appears beside the others.
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
page.show_takeaway()
