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
# samples. The table below is generated from the schema in `benchmarks/schema.py` when the site is
# built (`python -m benchmarks schema` prints the same schema as JSON Schema).

# %% tags=["hide-input"]
from IPython.display import HTML, display

from benchmarks.analysis import curves as report
from benchmarks.schema import SCHEMA_VERSION, describe_fields
from benchmarks.site import charts
from benchmarks.site import text as txt

rows = [
    [f"<code>{txt.h(path)}</code>", kind, "yes" if required else "", description]
    for path, kind, required, description in describe_fields()
]
display(
    HTML(
        txt.html_table(
            ["field", "type", "required", "meaning"],
            rows,
            caption=f"Results file, schema version {SCHEMA_VERSION}",
            raw=[0],
        )
    )
)

# %% [markdown]
# Results files marked `run.synthetic` are test fixtures and are never published. A file that
# breaks the schema stops the site's build with a message naming the file and the field.
#
# ## The committed results

# %% tags=["hide-input"]
data = report.load_site_data()
items = [
    f'<li><a href="{charts.SITE_ROOT}results/{r.device["slug"]}/{txt.h(r.id)}.json">'
    f"{txt.h(r.device['slug'])}/{txt.h(r.id)}.json</a>: {txt.h(txt.device_label(r))}, "
    f"{txt.h(txt.provenance(r))}</li>"
    for r in sorted(data.runs, key=lambda r: (r.device["slug"], r.started_at))
]
display(HTML(f"<ul>{''.join(items)}</ul>" if items else "<p>No results are committed yet.</p>"))
display(
    HTML(
        '<div class="admonition success"><p class="admonition-title">Takeaway</p><p>One command measures a '
        "device and rebuilds this site; one committed JSON file per run adds the device to it.</p></div>"
    )
)
