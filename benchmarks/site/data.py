"""Which results the site shows: every publishable run and, per device, the one its pages chart.

The results directory is benchmarks/results/ unless $BATCHING_RESULTS_DIR names another; synthetic fixtures appear
only when a test asks ($BATCHING_INCLUDE_SYNTHETIC=1), smoke runs only when asked ($BATCHING_INCLUDE_SMOKE=1).
Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.analysis.roofline.curves import DTYPE_ORDER, Curve, curves
from benchmarks.contract.errors import UserError
from benchmarks.contract.results import DEFAULT_RESULTS_DIR, KnownValid, Run, load_results, newest_complete_runs
from benchmarks.workloads import WORKLOADS

RESULTS_DIR_ENV = "BATCHING_RESULTS_DIR"  # read results from here instead of benchmarks/results/
SYNTHETIC_ENV = "BATCHING_INCLUDE_SYNTHETIC"  # "1" only in tests: also show synthetic fixtures
SMOKE_ENV = "BATCHING_INCLUDE_SMOKE"  # "1": also show smoke runs (toy sizes, not measurements to publish)


class SiteDataError(UserError):
    """Results that the site refuses to publish; the message names every file and field."""


# --------------------------------------------------------------------------- selection


def results_dir() -> Path:
    """The results directory the site reads: $BATCHING_RESULTS_DIR or benchmarks/results/."""
    chosen = os.environ.get(RESULTS_DIR_ENV)
    return Path(chosen) if chosen else DEFAULT_RESULTS_DIR


def include_synthetic() -> bool:
    """Synthetic fixtures appear only when a test asks for them explicitly."""
    return os.environ.get(SYNTHETIC_ENV) == "1"


def include_smoke() -> bool:
    """Smoke runs appear only when asked for (BATCHING_INCLUDE_SMOKE=1)."""
    return os.environ.get(SMOKE_ENV) == "1"


@dataclass
class SiteData:
    """Every publishable run, and per device the run the pages show."""

    runs: list[Run]
    shown: list[Run]  # one per device: GPUs first, then CPUs, each by name

    @property
    def gpus(self) -> list[Run]:
        return [r for r in self.shown if r.device["kind"] == "cuda"]

    @property
    def cpus(self) -> list[Run]:
        return [r for r in self.shown if r.device["kind"] != "cuda"]

    _views: dict[tuple, list[Run]] = field(default_factory=dict, repr=False)

    def others(self, run: Run) -> list[Run]:
        """The device's other runs, newest first."""
        slug = run.device["slug"]
        same = [r for r in self.runs if r.device["slug"] == slug and r.id != run.id]
        return sorted(same, key=lambda r: r.started, reverse=True)

    def source(self, slug: str, workload: str) -> Run | None:
        """The run a page charts `workload` of this device from: the newest that finished it, else (none
        did) the newest that measured some of it; a run that timed no point of it is never the source. A run
        of a few workloads never hides another's."""
        mine = [r for r in self.runs if r.device["slug"] == slug and workload in r.workloads_ok]  # timed some of it
        done = [r for r in mine if workload in r.workloads_done]
        some = done or mine
        return max(some, key=lambda r: (r.started, r.id), default=None)

    def shown_for(self, *workloads: str) -> list[Run]:
        """Per device, the run(s) a page about `workloads` charts, each holding only the workloads it is
        the source of (a device none of whose runs measured them: its shown run, holding none); devices
        in the order of `shown`."""
        if workloads not in self._views:
            views = []
            for shown in self.shown:
                chosen: dict[int, tuple[Run, list[str]]] = {}
                for workload in workloads:
                    run = self.source(shown.device["slug"], workload)
                    if run is not None:
                        chosen.setdefault(id(run), (run, []))[1].append(workload)
                if not chosen:  # no run of this device measured them: its page section says so
                    chosen[id(shown)] = (shown, list(workloads))
                ordered = sorted(chosen.values(), key=lambda pair: pair[0].started, reverse=True)
                views += [run.only(names) for run, names in ordered]
            self._views[workloads] = views
        return self._views[workloads]

    def charted(self, run: Run) -> list[str]:
        """The workloads the site charts from this run."""
        return [w for w in WORKLOADS if self.source(run.device["slug"], w) is run]


def load_site_data(directory: Path | str | None = None, synthetic: bool | None = None) -> SiteData:
    """Load and validate every results file; raise SiteDataError if any file is bad."""
    directory = Path(directory) if directory is not None else results_dir()
    synthetic = include_synthetic() if synthetic is None else synthetic
    if not directory.exists():
        return SiteData(runs=[], shown=[])
    report = load_results(directory, known=KnownValid.from_env())
    if report.errors:  # one line per bad file, naming the file and the field
        raise SiteDataError("\n".join(str(error) for error in report.errors))
    smoke = include_smoke()
    runs = [r for r in report.runs if (synthetic or not r.synthetic) and (smoke or not r.smoke)]
    newest = newest_complete_runs(runs, include_synthetic=synthetic, include_smoke=smoke)
    shown = sorted(newest.values(), key=lambda r: (r.device["kind"] != "cuda", r.device["name"], r.device["slug"]))
    return SiteData(runs=runs, shown=shown)


def headline_curve(data: SiteData) -> Curve | None:
    """The article's 8×1024 MLP where measured, on a GPU when one exists: the curve the home page shows once a GPU
    run is committed (until then the theory page shows it on a CPU)."""
    for run in data.shown_for("mlp"):  # GPUs first
        found = [c for c in curves(run) if len(c.points) >= 2]
        if not found:
            continue

        def preference(c: Curve) -> tuple:
            width = c.width or 0
            dtype = DTYPE_ORDER.index(c.dtype) if c.dtype in DTYPE_ORDER else 99
            return (abs(math.log2(max(width, 1) / 1024)), dtype, c.mode != "graph", c.cache != "rotated")

        return min(found, key=preference)
    return None
