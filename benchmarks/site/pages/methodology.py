"""The methodology page: what each profile measures, read from the profiles themselves."""

from __future__ import annotations

from benchmarks.profiles import PROFILES
from benchmarks.site.render import Details, Page, Paragraph, Table, code

PROFILE_HEADERS = [
    "profile",
    "workload",
    "dtypes",
    "modes",
    "batches",
    "samples per point",
    "minimum sample, warm-up per point",
    "cache",
]


LESSON = (  # the takeaway's lesson, above the items the page measured
    "Every point is a median of interleaved samples with its quartiles, timed with the device's own clock, with "
    "weights rotated out of the cache, and predicted from ceilings measured in the same run."
)


def build() -> Page:
    return Page({"profiles": [profiles()]}, lesson=LESSON)


def profiles() -> Details | Paragraph:
    """The profile table, collapsed: a reference, not part of the argument."""
    table = profile_table()
    if not isinstance(table, Table):
        return table
    return Details(f"Every sweep of every profile ({len(table.rows)} rows)", [table])


def profile_table() -> Table | Paragraph:
    rows = []
    for profile in PROFILES.values():
        for sweep in profile.sweeps:
            settings, batches = profile.settings(sweep), sweep.batches
            rows.append(
                [
                    profile.name,
                    code(sweep.label()),
                    ", ".join(sweep.dtypes),
                    ", ".join(sweep.modes),
                    f"{batches[0]}–{batches[-1]} ({len(batches)} sizes)",
                    str(settings["rounds"]),
                    f"{settings['min_sample_s'] * 1e3:g} ms, {settings['warmup_s'] * 1e3:g} ms",
                    sweep.cache or "rotated (default)",
                ]
            )
    if not rows:
        return Paragraph("No profile is defined.")
    caption = "What each profile measures, from benchmarks/profiles.py (graph mode needs CUDA)"
    return Table(PROFILE_HEADERS, rows, caption)
