"""The reproduce page: the results-file reference, generated from the schema, and the committed runs."""

from __future__ import annotations

from benchmarks.contract.schema import SCHEMA_VERSION, describe_fields
from benchmarks.site import data as site_data
from benchmarks.site import text
from benchmarks.site.charts import SITE_ROOT
from benchmarks.site.data import SiteData
from benchmarks.site.render import Bullets, Details, Page, Paragraph, Table, code, tag

LESSON = (  # the takeaway's lesson, above the items the page measured
    "One command measures a device and rebuilds this site; one committed JSON file per run adds the device to it."
)


def build(data: SiteData | None = None) -> Page:
    data = data or site_data.load_site_data()
    return Page(
        {
            "schema": [Details(f"Every field of a results file ({len(schema_table().rows)} fields)", [schema_table()])],
            "runs": [committed_runs(data)],
        },
        data,
        lesson=LESSON,
    )


def schema_table() -> Table:
    rows = [  # "required" beside the type rather than a column of its own: the long field paths need the room
        [code(path), f"{kind}, required" if required else kind, description]
        for path, kind, required, description in describe_fields()
    ]
    return Table(["field", "type", "meaning"], rows, f"Results file, schema version {SCHEMA_VERSION}")


def committed_runs(data: SiteData):
    items = []
    for run in sorted(data.runs, key=lambda r: (r.device["slug"], r.started)):
        name = f"{run.device['slug']}/{run.id}.json"
        items.append(
            [
                tag("a", name, href=f"{SITE_ROOT}results/{name}"),
                f": {text.device_label(run)}, {text.provenance(run)}",
            ]
        )
    return Bullets(items) if items else Paragraph("No results are committed yet.")
