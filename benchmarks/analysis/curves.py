"""What the site shows: which runs, which curves, and the numbers stated about them.

The docs pages call this module to choose runs and curves and to phrase the numbers they
state; `benchmarks.site.charts` draws them. Everything here is computed from results files (or,
for the theory page, from `benchmarks.analysis.datasheet`), never typed in.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import html
import math
import os
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.analysis.datasheet import BYTES_PER_ELEMENT
from benchmarks.analysis.roofline import Ceilings, Knee, critical_batch, detect_knee, predicted_time, run_ceilings
from benchmarks.results import DEFAULT_RESULTS_DIR, Run, load_results, newest_complete_runs
from benchmarks.workloads import ROWS, WORKLOADS, BatchUnit, Workload

RESULTS_DIR_ENV = "BATCHING_RESULTS_DIR"  # read results from here instead of benchmarks/results/
SYNTHETIC_ENV = "BATCHING_INCLUDE_SYNTHETIC"  # "1" only in tests: also show synthetic fixtures

DTYPE_ORDER = ("bfloat16", "float16", "float32", "tfloat32", "float64")
MODE_ORDER = ("graph", "eager")
CACHE_WORDS = {
    "rotated": "weights rotated through copies larger than the cache, so every call reads memory",
    "resident": "weights resident, a hot loop: weights small enough may be served from cache",
    "flushed": "cache flushed before every call",
}
MODE_WORDS = {
    "graph": "CUDA-graph replay (the hardware's curve)",
    "eager": "eager calls (what user code sees)",
}


class SiteDataError(Exception):
    """Results that the site refuses to publish; the message names every file and field."""


# --------------------------------------------------------------------------- selection


def results_dir() -> Path:
    """The results directory the site reads: $BATCHING_RESULTS_DIR or benchmarks/results/."""
    chosen = os.environ.get(RESULTS_DIR_ENV)
    return Path(chosen) if chosen else DEFAULT_RESULTS_DIR


def include_synthetic() -> bool:
    """Synthetic fixtures appear only when a test asks for them explicitly."""
    return os.environ.get(SYNTHETIC_ENV) == "1"


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

    def others(self, run: Run) -> list[Run]:
        """The device's other runs, newest first, that the pages do not chart."""
        slug = run.device["slug"]
        same = [r for r in self.runs if r.device["slug"] == slug and r is not run]
        return sorted(same, key=lambda r: r.started_at, reverse=True)


def load_site_data(directory: Path | str | None = None, synthetic: bool | None = None) -> SiteData:
    """Load and validate every results file; raise SiteDataError if any file is bad."""
    directory = Path(directory) if directory is not None else results_dir()
    synthetic = include_synthetic() if synthetic is None else synthetic
    if not directory.exists():
        return SiteData(runs=[], shown=[])
    report = load_results(directory)
    if report.errors:
        lines = "\n".join(f"  {error}" for error in report.errors)
        raise SiteDataError(f"{len(report.errors)} bad results file(s); fix or remove them:\n{lines}")
    runs = [r for r in report.runs if synthetic or not r.synthetic]
    newest = newest_complete_runs(runs, include_synthetic=synthetic)
    shown = sorted(newest.values(), key=lambda r: (r.device["kind"] != "cuda", r.device["name"], r.device["slug"]))
    return SiteData(runs=runs, shown=shown)


# --------------------------------------------------------------------------- curves


@dataclass(frozen=True)
class Point:
    batch: int
    median_s: float
    q1_s: float
    q3_s: float
    flops: float
    bytes: float
    predicted_s: float | None


@dataclass
class Curve:
    """One workload configuration of one run, measured at many batch sizes."""

    run: Run
    workload: str
    params: dict[str, Any]
    dtype: str
    mode: str
    cache: str
    weight_copies: int
    points: list[Point]
    not_ok: list[dict[str, Any]] = field(default_factory=list)
    ceilings: Ceilings | None = None
    predicted_knee: float | None = None
    knee: Knee | None = None

    @property
    def width(self) -> int | None:
        return self.params.get("width")

    @property
    def spec(self) -> Workload | None:
        return WORKLOADS.get(self.workload)

    @property
    def label(self) -> str:
        """Short name of the configuration among its siblings, e.g. 'width 1024'."""
        if self.spec is None:
            return " ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return self.spec.label(self.params)

    @property
    def shape(self) -> str:
        """The configuration on its own, e.g. '8×1024 MLP'."""
        return self.spec.shape(self.params) if self.spec else f"{self.workload} {self.label}"

    @property
    def unit(self) -> BatchUnit:
        """What one element of the batch is: rows, images or sequences."""
        return self.spec.unit if self.spec else ROWS

    @property
    def batches(self) -> list[int]:
        return [p.batch for p in self.points]

    def knee_ratio(self) -> float | None:
        """Measured knee over predicted knee (1 means the roofline was right)."""
        if self.knee is None or not self.predicted_knee:
            return None
        return self.knee.batch / self.predicted_knee

    def overhead_ratio(self) -> float | None:
        """Measured over predicted time at the smallest batch: how far above the roofline it starts."""
        first = self.points[0] if self.points else None
        if first is None or not first.predicted_s:
            return None
        return first.median_s / first.predicted_s


def _sort_key(curve: Curve) -> tuple:
    dtype = DTYPE_ORDER.index(curve.dtype) if curve.dtype in DTYPE_ORDER else len(DTYPE_ORDER)
    mode = MODE_ORDER.index(curve.mode) if curve.mode in MODE_ORDER else len(MODE_ORDER)
    return (curve.workload, dtype, curve.dtype, mode, curve.cache, sorted(curve.params.items()))


def curves(run: Run, workload: str = "mlp") -> list[Curve]:
    """The run's curves for one workload, with predictions from the run's own ceilings."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for record in run.records:
        if record["workload"] != workload:
            continue
        key = (
            tuple(sorted(record["params"].items())),
            record["dtype"],
            record["mode"],
            record["cache"],
            record.get("weight_copies", 1),
        )
        groups[key].append(record)
    found = []
    for (params, dtype, mode, cache, copies), records in groups.items():
        ceilings = run_ceilings(run.ceilings, dtype)
        points, not_ok = [], []
        for record in sorted(records, key=lambda r: r["batch"]):
            if record["status"] != "ok":
                not_ok.append(record)
                continue
            timing = record.get("timing") or {}
            median = record["median_s"]
            points.append(
                Point(
                    batch=record["batch"],
                    median_s=median,
                    q1_s=timing.get("q1_s", median),
                    q3_s=timing.get("q3_s", median),
                    flops=record["flops"],
                    bytes=record["bytes"],
                    predicted_s=predicted_time(record["flops"], record["bytes"], ceilings) if ceilings else None,
                )
            )
        curve = Curve(run, workload, dict(params), dtype, mode, cache, copies, points, not_ok, ceilings)
        if ceilings and len({p.batch for p in points}) >= 2:
            curve.predicted_knee = critical_batch([(p.batch, p.flops, p.bytes) for p in points], ceilings)
        curve.knee = detect_knee([p.batch for p in points], [p.median_s for p in points])
        found.append(curve)
    return sorted(found, key=_sort_key)


def predicted_at(curve: Curve, batch: float) -> float | None:
    """Roofline time at any batch, from the curve's FLOPs and bytes (affine in the batch)."""
    if curve.ceilings is None or len(curve.points) < 2:
        return None
    first, last = curve.points[0], curve.points[-1]
    span = last.batch - first.batch
    flops = first.flops + (last.flops - first.flops) * (batch - first.batch) / span
    moved = first.bytes + (last.bytes - first.bytes) * (batch - first.batch) / span
    return predicted_time(flops, moved, curve.ceilings)


def headline_curve(data: SiteData) -> Curve | None:
    """The curve for the home page: a GPU when one exists, the seed's 8×1024 MLP where measured."""
    for run in data.gpus + data.cpus:
        found = [c for c in curves(run) if len(c.points) >= 2]
        if not found:
            continue

        def preference(c: Curve) -> tuple:
            width = c.width or 0
            dtype = DTYPE_ORDER.index(c.dtype) if c.dtype in DTYPE_ORDER else 99
            return (abs(math.log2(max(width, 1) / 1024)), dtype, c.mode != "graph", c.cache != "rotated")

        return min(found, key=preference)
    return None


def group_by(items: Iterable[Curve], *names: str) -> dict[tuple, list[Curve]]:
    """Curves grouped by attributes, keeping their order."""
    grouped: dict[tuple, list[Curve]] = {}
    for item in items:
        grouped.setdefault(tuple(getattr(item, n) for n in names), []).append(item)
    return grouped


# --------------------------------------------------------------------------- words


def esc(value: Any) -> str:
    """Text from a results file made safe for HTML and for Markdown."""
    text = html.escape(str(value), quote=True)
    return re.sub(r"([\\`*_\[\]{}|#!])", r"\\\1", text)


def h(value: Any) -> str:
    """Text made safe for HTML (no Markdown escaping)."""
    return html.escape(str(value), quote=True)


def kind_word(run: Run) -> str:
    return "GPU" if run.device["kind"] == "cuda" else "CPU"


def device_label(run: Run) -> str:
    """'GPU: NVIDIA H200' or 'CPU: AMD EPYC, 2 threads' (plain text, not escaped)."""
    device = run.device
    if device["kind"] == "cuda":
        return f"GPU: {device['name']}"
    name = device.get("cpu_model") or device["name"]
    return f"CPU: {name}, {device['threads']} thread{'s' * (device['threads'] != 1)}"


def run_date(run: Run) -> str:
    return run.started_at[:10]


def provenance(run: Run) -> str:
    """'run ID, DATE, commit abc1234' (plain text, not escaped)."""
    commit = run.doc["run"].get("git_commit")
    text = f"run {run.id}, {run_date(run)}, " + (f"commit {commit[:7]}" if commit else "commit unknown")
    if not run.complete:
        text += ", incomplete"
    if run.synthetic:
        text += ", SYNTHETIC test fixture"
    return text


def cache_words(curve: Curve) -> str:
    if curve.cache == "rotated" and curve.weight_copies == 1:
        return "weights larger than three times the cache, so every call reads memory (no copies needed)"
    text = CACHE_WORDS.get(curve.cache, curve.cache)
    if curve.cache == "rotated":
        text = text.replace("through copies", f"through {curve.weight_copies} copies")
    return text


def describe_curve(curve: Curve) -> str:
    """Device, dtype, mode and cache state of a curve in one line (plain text)."""
    return f"{device_label(curve.run)} · {curve.dtype} · {curve.mode} · cache: {curve.cache}"


def bytes_per_element(dtype: str) -> int | None:
    return BYTES_PER_ELEMENT.get(dtype)


def sig(value: float, digits: int = 3) -> str:
    """A number to `digits` significant figures, without exponent for everyday sizes."""
    if value == 0 or not math.isfinite(value):
        return str(value)
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(digits - 1 - magnitude, 0)
    return f"{round(value, decimals - 0):,.{decimals}f}"


def fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{sig(seconds / scale)} {unit}"
    return f"{sig(seconds / 1e-9)} ns"


def fmt_rate(per_s: float, unit: str) -> str:
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if per_s >= scale:
            return f"{sig(per_s / scale)} {prefix}{unit}"
    return f"{sig(per_s)} {unit}"


def fmt_bytes(count: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{sig(count / scale)} {unit}"
    return f"{count:.0f} B"


def fmt_batch(batch: float | None) -> str:
    if batch is None:
        return "none"
    return sig(batch, 2) if batch < 10 else f"{batch:,.0f}"


def knee_verdict(curve: Curve) -> str:
    """The predicted knee against the measured one, in words (plain text)."""
    predicted, knee = curve.predicted_knee, curve.knee
    if predicted is None and knee is None:
        return "no knee predicted (never compute-bound at the measured ceilings) and none detected"
    if predicted is None:
        return f"measured knee at batch ≈ {fmt_batch(knee.batch)}; the roofline predicts none"
    if knee is None:
        low, high = curve.batches[0], curve.batches[-1]
        return (
            f"predicted knee at batch ≈ {fmt_batch(predicted)}; no clear knee detected in the measured "
            f"range {low}–{high}"
        )
    ratio = knee.batch / predicted if predicted else float("inf")
    return (
        f"predicted knee at batch ≈ {fmt_batch(predicted)}, measured ≈ {fmt_batch(knee.batch)}: "
        f"{sig(ratio, 2)}× the prediction ({(ratio - 1) * 100:+.0f} %)"
    )


def html_table(headers: list[str], rows: list[list[Any]], *, caption: str = "", raw: Iterable[int] = ()) -> str:
    """An HTML table with every cell escaped, except columns listed in `raw` (already HTML)."""
    raw = set(raw)
    head = "".join(f"<th>{h(x)}</th>" for x in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell if i in raw else h(cell)}</td>" for i, cell in enumerate(row)) + "</tr>"
        for row in rows
    )
    cap = f"<caption>{h(caption)}</caption>" if caption else ""
    return (
        f'<div class="md-typeset__table"><table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
    )
