"""The notice every page carries while every committed measurement is from a CPU: one line under each page's
title that links to its explanation, which the Reproduce page carries in full. It is computed from the results
the site is built from, so it goes away by itself once a GPU run is committed.

Pure Python (no torch).
"""

from __future__ import annotations

from benchmarks.analysis.roofline.roofline_model import run_ceilings
from benchmarks.gpus import BYTES_PER_ELEMENT, find_gpu
from benchmarks.site import text
from benchmarks.site.data import SiteData
from benchmarks.site.render import Admonition, Paragraph, code, link, render, tag

COMPARED_GPU = "NVIDIA H100 SXM"
ANCHOR = "cpu-results"  # the explanation's id on the Reproduce page
EXPLAINED_ON = "reproduce/"


def cpu_only(data: SiteData) -> bool:
    return bool(data.shown) and not data.gpus


def ridge_batches_compared(data: SiteData) -> str:
    """' (≈ 5.6 rows in float32 from this CPU's measured ceilings, against ≈ 40 in float32 and ≈ 295 in bfloat16 on
    an H100 SXM's datasheet)', from the newest CPU run; '' when it measured no float32 rate."""
    ceilings = run_ceilings(data.cpus[0].ceilings, "float32") if data.cpus else None
    gpu = find_gpu(COMPARED_GPU)
    if ceilings is None or gpu is None:
        return ""
    cpu = ceilings.large_layer_ridge_batch(BYTES_PER_ELEMENT["float32"])
    fp32, bf16 = (gpu.ridge_batch(d) for d in ("float32", "bfloat16"))
    return (
        f" (≈ {text.fmt_batch(cpu)} rows in float32 from its measured ceilings, against ≈ {text.fmt_batch(fp32)} in "
        f"float32 and ≈ {text.fmt_batch(bf16)} in bfloat16 on an {gpu.name}'s datasheet)"
    )


def cpu_notice(data: SiteData) -> str:
    """The notice's HTML, or "" when a GPU run is committed or nothing is."""
    if not cpu_only(data):
        return ""
    devices = "; ".join(text.device_label(run) for run in data.cpus)
    body = [
        f"No GPU run is committed yet: every measured chart on this site shows a CPU ({devices}). A CPU has a "
        f"roofline too, with a far lower ridge batch{ridge_batches_compared(data)} and other overheads, so do not "
        "read its numbers as a GPU's. A GPU figure is a prediction from its datasheet, labelled either a forecast (the "
        "roofline slowed by efficiencies calibrated on published results, with its expected error) or a ceiling. Run ",
        code("nox -s bench docs"),
        " on a machine with an NVIDIA GPU and commit the file it writes (",
        link("Reproduce", "reproduce/"),
        "); the charts switch to it and this notice goes.",
    ]
    return f'<div id="{ANCHOR}">' + render([Admonition("warning cpu-notice", TITLE, [Paragraph(body)])]) + "</div>"


TITLE = "These results come from a CPU"


def cpu_line(data: SiteData) -> str:
    """The one line every other page carries under its title, linking to the explanation; "" as for the notice."""
    if not cpu_only(data):
        return ""
    body = [
        f"{TITLE}: no GPU run is committed yet; GPU figures are predictions from datasheets, each labelled a "
        "forecast or a ceiling. ",
        link("Why, and how to add a GPU run", f"{EXPLAINED_ON}#{ANCHOR}"),
    ]
    return str(tag("p", body, class_="cpu-line"))
