"""Reading, validating and atomically writing results files (one JSON document per run).

Layout: ``<results dir>/<device slug>/<run id>.json``. Runs never overwrite each other, so
results from many machines merge by copying directories together.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.contract.errors import UserError
from benchmarks.contract.inputs import RESULTS_LIMIT, InputError, read_text_bounded
from benchmarks.contract.schema import instant, migrate
from benchmarks.contract.text import printable
from benchmarks.contract.validate import validate_document

_PACKAGE = Path(__file__).resolve().parents[1]  # benchmarks/
_CHECKOUT = (_PACKAGE.parent / "pyproject.toml").is_file()
# In a checkout, results are committed beside the code; an installed copy writes under the working directory.
DEFAULT_RESULTS_DIR = _PACKAGE / "results" if _CHECKOUT else Path.cwd() / "benchmarks-results"
DEFAULT_SWEEPS_DIR = _PACKAGE / "sweeps" if _CHECKOUT else Path.cwd() / "benchmarks-sweeps"


class ResultsError(UserError):
    """A results file that cannot be used, with the file and the offending field."""

    def __init__(self, path: Path | str, field: str, message: str, more: int = 0):
        self.path = Path(path)
        self.field = field
        self.message = message
        self.more = more
        super().__init__(str(self))

    def __str__(self) -> str:
        tail = f" (and {self.more} more problem{'s' * (self.more > 1)})" if self.more else ""
        return printable(f"{self.path}: {self.field}: {self.message}{tail}")


@dataclass(eq=False)  # a document is itself: compared and hashed by identity, so analyses can cache per run
class Document:
    """One validated results document and where it came from."""

    path: Path
    doc: dict[str, Any]

    @property
    def id(self) -> str:
        return self.doc["run"]["id"]

    @property
    def device(self) -> dict[str, Any]:
        return self.doc["device"]

    @property
    def started_at(self) -> str:
        return self.doc["run"]["started_at"]

    @property
    def started(self) -> datetime:
        """When the run started, as an aware datetime: compare these, never `started_at` strings."""
        return instant(self.started_at)

    @property
    def complete(self) -> bool:
        return bool(self.doc["run"]["complete"])

    @property
    def synthetic(self) -> bool:
        return bool(self.doc["run"].get("synthetic", False))


@dataclass(eq=False)
class Run(Document):
    """A profile run: ceilings and records of the project's workloads."""

    @property
    def records(self) -> list[dict[str, Any]]:
        return self.doc["records"]

    @property
    def ceilings(self) -> dict[str, Any]:
        return self.doc["ceilings"]

    @property
    def workloads_done(self) -> set[str]:
        """The workloads whose every point finished (none for a run cut short)."""
        return set(self.doc["run"].get("workloads_done") or [])

    @property
    def workloads_measured(self) -> set[str]:
        """The workloads the run holds records of, finished or not."""
        return {r["workload"] for r in self.records}

    @property
    def workloads_ok(self) -> set[str]:
        """The workloads of which the run timed at least one point (status ok)."""
        return {r["workload"] for r in self.records if r["status"] == "ok"}

    @property
    def smoke(self) -> bool:
        """A smoke run: every code path at toy sizes, not a measurement to publish."""
        return self.doc["run"].get("profile") == "smoke"

    def only(self, workloads: Iterable[str]) -> Run:
        """This run with only the records of `workloads` (the rest of the document is shared)."""
        wanted = set(workloads)
        doc = {**self.doc, "records": [r for r in self.records if r["workload"] in wanted]}
        return Run(path=self.path, doc=doc)


@dataclass(eq=False)
class ModelSweep(Document):
    """A model sweep (`python -m benchmarks sweep`): one model's points over batch sizes."""

    @property
    def points(self) -> list[dict[str, Any]]:
        return self.doc["points"]


@dataclass
class LoadReport:
    """Every run that loaded, and every file that did not, so one bad file hides nothing."""

    runs: list[Run] = field(default_factory=list)
    errors: list[ResultsError] = field(default_factory=list)
    sweeps: list[ModelSweep] = field(default_factory=list)  # model sweeps found among the files


MAX_FILE_BYTES = RESULTS_LIMIT
KNOWN_VALID_ENV = "BATCHING_KNOWN_VALID"  # a site build's list of the files it validated (see KnownValid)


def _signature(path: Path) -> list[int]:
    """What says a file is the one it was: device, inode, size and modification time in nanoseconds."""
    found = path.stat()
    return [found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns]


@dataclass
class KnownValid:
    """The results files a site build validated once, each with its `_signature`, so that every page of the build
    (each a process of its own) parses them without validating them again: a file that changed since is
    validated again. The list lives in a file of the build's own temporary directory, named by
    $BATCHING_KNOWN_VALID; without it every file is validated."""

    entries: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> KnownValid | None:
        where = os.environ.get(KNOWN_VALID_ENV)
        if not where:
            return None
        try:
            entries = json.loads(Path(where).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return cls(entries) if isinstance(entries, dict) else None

    def holds(self, path: Path) -> bool:
        try:
            return self.entries.get(str(path.resolve())) == _signature(path)
        except OSError:
            return False

    def add(self, path: Path) -> None:
        self.entries[str(path.resolve())] = _signature(path)

    def save(self, where: Path) -> None:
        where.write_text(json.dumps(self.entries), encoding="utf-8")


def read_document(path: Path | str, *, layout: bool = True, known: KnownValid | None = None) -> Run | ModelSweep:
    """Parse, validate and migrate one results file, a profile run or a model sweep; raise
    ResultsError naming the file and field. With `layout`, the file must also sit where a results
    directory keeps it: `<device slug>/<id>.json`. A file `known` holds as validated earlier in this build,
    unchanged since, is parsed but not validated again."""
    path = Path(path)
    doc = load_json(path)
    problems = [] if known is not None and known.holds(path) else validate_document(doc)
    if problems:
        where, message = problems[0]
        raise ResultsError(path, where, message, more=len(problems) - 1)
    doc = migrate(doc)
    found = ModelSweep(path=path, doc=doc) if doc["kind"] == "sweep" else Run(path=path, doc=doc)
    if layout and path.name != f"{found.id}.json":
        raise ResultsError(path, "run.id", f"must name the file: {found.id!r} is not the file's name")
    if layout and path.parent.name != found.device["slug"]:
        raise ResultsError(path, "device.slug", f"must name the file's directory: {found.device['slug']!r} is not it")
    return found


def read_run(path: Path | str, *, layout: bool = True) -> Run:
    """One profile run (see read_document); a model sweep is refused, saying so."""
    found = read_document(path, layout=layout)
    if not isinstance(found, Run):
        raise ResultsError(path, "kind", "is a model sweep, not a profile run: this needs a profile run")
    return found


def read_sweep(path: Path | str, *, layout: bool = True) -> ModelSweep:
    """One model sweep (see read_document); a profile run is refused, saying so."""
    found = read_document(path, layout=layout)
    if not isinstance(found, ModelSweep):
        raise ResultsError(path, "kind", "is a profile run, not a model sweep: this needs a model sweep")
    return found


def load_json(path: Path) -> Any:
    """The parsed JSON of one file of any kind this contract reads (results, sweeps, serving checks), or
    ResultsError naming the file: too large, unreadable, empty or not JSON. Validation is the caller's."""
    try:
        text = read_text_bounded(path, kind="results file", limit_bytes=MAX_FILE_BYTES)
    except InputError as exc:
        raise ResultsError(path, "(file)", exc.message) from None
    if not text.strip():
        raise ResultsError(path, "(file)", "is empty")
    return _parse(path, text)


def _parse(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(path, "(json)", f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise ResultsError(path, "(json)", "is nested too deeply to be a results file") from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise ResultsError(path, "(json)", f"holds a value no results file has: {str(exc)[:120]}") from None


def result_files(paths: Iterable[Path | str]) -> list[Path]:
    """The .json files named, plus those found (recursively) under directories named."""
    found: list[Path] = []
    for item in paths:
        item = Path(item)
        if item.is_dir():
            found.extend(sorted(item.rglob("*.json")))
        else:
            found.append(item)
    return found


def load_results(*paths: Path | str, known: KnownValid | None = None) -> LoadReport:
    """Load every results file under the given files/directories (default: the committed ones). A
    run id may appear once per device: a second file with it is reported, and only the first loads.
    Files `known` holds as validated (and unchanged) are not validated again."""
    report = LoadReport()
    seen: dict[tuple[str, str], Path] = {}
    for path in result_files(paths or (DEFAULT_RESULTS_DIR,)):
        try:
            run = read_document(path, known=known)
        except ResultsError as exc:
            report.errors.append(exc)
            continue
        if not isinstance(run, Run):
            report.sweeps.append(run)
            continue
        key = (run.device["slug"], run.id)
        if key in seen:
            report.errors.append(ResultsError(path, "run.id", f"{run.id!r} of this device is also {seen[key]}"))
            continue
        seen[key] = path
        report.runs.append(run)
    return report


def newest_complete_runs(
    runs: Iterable[Run], include_synthetic: bool = False, include_smoke: bool = False
) -> dict[str, Run]:
    """Per device slug, the newest complete run that timed something (or, failing that, the newest run
    that timed something, then the newest run). A run that measured nothing never replaces one that did;
    smoke runs (toy sizes, not measurements) are left out unless `include_smoke`."""
    chosen: dict[str, Run] = {}

    def rank(run: Run) -> tuple:
        return (bool(run.workloads_ok), run.complete, run.started)

    for run in runs:
        if (run.synthetic and not include_synthetic) or (run.smoke and not include_smoke):
            continue
        slug = run.device["slug"]
        best = chosen.get(slug)
        if best is None or rank(run) > rank(best):
            chosen[slug] = run
    return chosen


def write_atomic(path: Path | str, doc: dict[str, Any]) -> None:
    """Write JSON so that readers see the old file or the new one, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp_name, 0o666 & ~umask)  # mkstemp makes 0600; results are for everyone to read
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(doc, out, indent=1, allow_nan=False)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
