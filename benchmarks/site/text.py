"""Words and numbers for the site and the CLI: device and run labels, provenance, formatted
quantities, and the one escaping function for text that reaches HTML.

Pure Python (no plotting, no torch).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from benchmarks.analysis.roofline.curves import Curve
from benchmarks.analysis.roofline.predict import RidgeCount
from benchmarks.contract.results import Run

CACHE_WORDS = {
    "rotated": "weights rotated through copies larger than the cache, so every call reads memory",
    "resident": "weights resident, a hot loop: weights small enough may be served from cache",
    "flushed": "cache flushed before every call",
}
MODE_WORDS = {
    "graph": "CUDA-graph replay (the hardware's curve)",
    "eager": "eager calls back to back (what user code sees in a busy loop)",
}


def h(value: Any) -> str:
    """Text made safe for HTML (no Markdown escaping): markup escaped, and every '$' written as the
    character reference &#36;, so that text from a results file never opens or closes a formula (the
    site renders $$...$$ only where an authored page wrote it, and a '$$' from data would pair with it), and
    every '__' as two references &#95; (the placeholders the site hook fills in with the site's addresses carry
    a token of the build's own, benchmarks/site/placeholders.py, which is what keeps data from spelling one:
    the notebook conversion turns these references back into '__')."""
    return html.escape(str(value), quote=True).replace("$", "&#36;").replace("__", "&#95;&#95;")


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


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def run_day(run: Run) -> str:
    """The run's start day as '2 Dec 2026' (no hyphen to break a narrow table column at; English month names
    whatever the machine's locale)."""
    year, month, day = run_date(run).split("-")
    return f"{int(day)} {_MONTHS[int(month) - 1]} {year}"


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
        varied = len({r.get("weight_copies", 1) for r in curve.records()}) > 1
        count = f"up to {curve.weight_copies}" if varied else str(curve.weight_copies)
        text = text.replace("through copies", f"through {count} copies")
    return text


FIXTURE = " · SYNTHETIC test fixture"


def describe_curve(curve: Curve) -> str:
    """Device, dtype, mode and cache state of a curve in one line (plain text); a test fixture says so."""
    fixture = FIXTURE if curve.run.synthetic else ""
    return f"{device_label(curve.run)} · {curve.dtype} · {curve.mode} · cache: {curve.cache}{fixture}"


def describe_curves(curves: Sequence[Curve]) -> str:
    """Device, dtype(s), mode(s) and cache state(s) of several curves in one line (plain text)."""

    def values(name: str) -> str:
        return ", ".join(dict.fromkeys(getattr(c, name) for c in curves))

    first = curves[0]
    fixture = FIXTURE if first.run.synthetic else ""
    return f"{device_label(first.run)} · {values('dtype')} · {values('mode')} · cache: {values('cache')}{fixture}"


def ceilings_words(run: Run, dtypes: Sequence[str] = ()) -> str:
    """'copy 26.7 GB/s; matmul float32 97.9 GFLOP/s': the run's measured ceilings, for `dtypes`
    (every dtype measured when none is given)."""
    copy = run.ceilings.get("copy", {}).get("bytes_per_s")
    matmul = run.ceilings.get("matmul", {})
    chosen = sorted(d for d in matmul if not dtypes or d in dtypes)
    rates = [f"{d} {fmt_rate(matmul[d]['flops_per_s'], 'FLOP/s')}" for d in chosen]
    words = [f"copy {fmt_rate(copy, 'B/s')}"] if copy else []
    if rates:
        words.append("matmul " + ", ".join(rates))
    return "; ".join(words)


def sig(value: float, digits: int = 3) -> str:
    """A number to `digits` significant figures, without exponent for everyday sizes."""
    if value == 0 or not math.isfinite(value):
        return str(value)
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(digits - 1 - magnitude, 0)
    return f"{round(value, decimals - 0):,.{decimals}f}"


def sig_range(values: Sequence[float], digits: int = 2) -> str:
    """'low–high' of `values` to `digits` significant figures, or one number when both read the same."""
    low, high = sig(min(values), digits), sig(max(values), digits)
    return low if low == high else f"{low}–{high}"


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


def ridge_count_words(found: RidgeCount, item: str = "row", *, explained: bool = False) -> str:
    """A ridge batch under one count of the bytes: '≈ 345', 'none: memory-bound at every batch', …; `explained` adds
    what each side of it means (the `predict` command's line), `item` names what a batch counts."""
    if found.on_ridge:
        return f"undecided: each extra {item} within 5 % of the ridge"
    if found.batch is None:
        return "none: memory-bound at every batch" + (" (compute never overtakes memory)" if explained else "")
    if found.batch < 1:
        return "below 1: compute-bound from the first row" if explained else "compute-bound from batch 1"
    return f"≈ {fmt_batch(found.batch)}" + (": memory-bound below it, compute-bound above" if explained else "")


def knee_verdict(curve: Curve) -> str:
    """The ridge batch against the measured knee, in words (plain text)."""
    predicted, knee = curve.predicted_knee, curve.knee
    if predicted is None and knee is None:
        return "no ridge batch (never compute-bound at the measured ceilings) and no measured knee"
    if predicted is None:
        return f"measured knee at batch ≈ {fmt_batch(knee.batch)}; the roofline gives no ridge batch"
    if knee is None:
        low, high = curve.batches[0], curve.batches[-1]
        return f"ridge batch ≈ {fmt_batch(predicted)}; no clear measured knee in the measured range {low}–{high}"
    ratio = knee.batch / predicted if predicted else float("inf")
    return (
        f"ridge batch ≈ {fmt_batch(predicted)}, measured knee ≈ {fmt_batch(knee.batch)}: "
        f"{sig(ratio, 2)}× the ridge batch ({(ratio - 1) * 100:+.0f} %)"
    )
