"""The committed model sweeps the site shows (`python -m benchmarks sweep`). Pure Python."""

from __future__ import annotations

import os
from pathlib import Path

from benchmarks.contract.results import DEFAULT_SWEEPS_DIR, KnownValid, ModelSweep, load_results
from benchmarks.site.data import SiteDataError, include_synthetic

SWEEPS_DIR_ENV = "BATCHING_SWEEPS_DIR"


def sweeps_dir() -> Path:
    """The sweeps directory the site reads: $BATCHING_SWEEPS_DIR or benchmarks/sweeps/."""
    chosen = os.environ.get(SWEEPS_DIR_ENV)
    return Path(chosen) if chosen else DEFAULT_SWEEPS_DIR


def load_sweeps(directory: Path | str | None = None, synthetic: bool | None = None) -> list[ModelSweep]:
    """Every sweep to publish (one that timed at least one batch size), newest first; a bad file stops the
    build with one line per file."""
    directory = Path(directory) if directory is not None else sweeps_dir()
    if not directory.exists():
        return []
    report = load_results(directory, known=KnownValid.from_env())
    if report.errors:
        raise SiteDataError("\n".join(str(e) for e in report.errors))
    if report.runs:
        names = ", ".join(str(r.path) for r in report.runs)
        raise SiteDataError(f"{names}: run.kind: is a profile run; it belongs under benchmarks/results/")
    wanted = include_synthetic() if synthetic is None else synthetic
    # a sweep that timed no batch size has nothing to chart or recommend: it is never published
    found = [s for s in report.sweeps if (wanted or not s.synthetic) and any(p["status"] == "ok" for p in s.points)]
    return sorted(found, key=lambda s: s.started, reverse=True)
