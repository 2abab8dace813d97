"""The notice every page carries while every committed measurement is from a CPU. It is computed from the
results the site is built from, so it goes away by itself once a GPU run is committed.

Pure Python (no torch).
"""

from __future__ import annotations

from benchmarks.analysis.curves import SiteData
from benchmarks.site import text
from benchmarks.site.render import Admonition, Paragraph, code, link, render


def cpu_only(data: SiteData) -> bool:
    return bool(data.shown) and not data.gpus


def cpu_notice(data: SiteData) -> str:
    """The notice's HTML, or "" when a GPU run is committed or nothing is."""
    if not cpu_only(data):
        return ""
    devices = "; ".join(text.device_label(run) for run in data.cpus)
    body = [
        f"No GPU run is committed yet: every measured chart on this site shows a CPU ({devices}). A CPU has a "
        "roofline too, with a far lower ridge batch and other overheads, so do not read its numbers as a GPU's; "
        "datasheet predictions for GPUs are labelled as such. Run ",
        code("nox -s bench docs"),
        " on a machine with an NVIDIA GPU and commit the file it writes (",
        link("Reproduce", "reproduce/"),
        "); the charts switch to it and this notice goes.",
    ]
    return render([Admonition("warning cpu-notice", "These results come from a CPU", [Paragraph(body)])])
