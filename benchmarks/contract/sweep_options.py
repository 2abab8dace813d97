"""The options of a model sweep, checked before any work: one set of rules for `python -m benchmarks
sweep` and for `benchmarks.sweep(...)`, each naming an option its own way (--budget-ms, budget_ms).

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("float32", "bfloat16", "float16")
INPUT_DTYPES = (*DTYPES, "int64")
MODES = ("eager", "graph", "compile")
PERCENTILES = (50, 90, 99)
WHOLE_FROM_1 = ("max_batch", "threads", "vocab")
ABOVE_0 = ("budget_ms", "time_limit_s", "memory_gb")


def flag(name: str) -> str:
    """The command line's name of an option: budget_ms is --budget-ms, time_limit_s is --time-limit."""
    return "--" + name.removesuffix("_s").replace("_", "-")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _above_0(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf


def _whole_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(_whole(v) for v in value)


def unwritable(folder: Path) -> str | None:
    """Why a folder cannot be made or written to at this path, or None when it can: the nearest folder
    that exists is tried with a file created and removed at once (permissions alone say nothing for root,
    or for /proc)."""
    folder = Path(folder)
    if not str(folder).strip():
        return "give a folder (an empty name would write into the current one)"
    existing = next(p for p in [folder, *folder.absolute().parents] if p.exists())
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".write-check-", suffix=".tmp"):
            pass
    except OSError as exc:
        return f"{existing} is not writable ({exc.strerror or exc})"
    return None


def report_problem(report: Path | None, name: Callable[[str], str] = flag, force: bool = False) -> str | None:
    """Why the HTML report cannot be written at this path, or None; an existing file is replaced only
    with `force`."""
    if report is None:
        return None
    report = Path(report)
    if report.suffix.lower() not in (".html", ".htm"):
        return f"{name('report')} {report}: give a path ending in .html"
    if report.is_dir():
        return f"{name('report')} {report}: is a folder"
    if report.exists() and not force:
        return f"{name('report')} {report}: the file exists; pass {name('force')} to replace it"
    why = unwritable(report.parent)
    return f"{name('report')} {report}: {why}" if why else None


def options_problem(options: dict[str, Any], name: Callable[[str], str] = flag) -> str | None:
    """The first thing wrong with a sweep's options (SweepSettings' fields), in one line, or None."""
    get = options.get
    for key, allowed in (("device", DEVICES), ("mode", MODES), ("percentile", PERCENTILES)):
        if get(key) not in allowed:
            return f"{name(key)} {get(key)!r}: choose {', '.join(map(str, allowed))}"
    for key, allowed in (("dtype", DTYPES), ("input_dtype", INPUT_DTYPES)):
        if get(key) is not None and get(key) not in allowed:
            return f"{name(key)} {get(key)!r}: choose {', '.join(allowed)}"
    for key in WHOLE_FROM_1:
        if get(key) is not None and not _whole(get(key)):
            return f"{name(key)} {get(key)!r}: give a whole number from 1"
    for key in ABOVE_0:
        if get(key) is not None and not _above_0(get(key)):
            return f"{name(key)} {get(key)!r}: give a number above 0"
    if get("batches") is not None and not _whole_list(get("batches")):
        return f"{name('batches')} {get('batches')!r}: give batch sizes, whole numbers from 1"
    if get("input_shape") is not None and not _whole_list(get("input_shape")):
        return f"{name('input_shape')} {get('input_shape')!r}: give one sample's shape, every side at least 1"
    if get("input_dtype") == "int64" and get("vocab") is None:
        return f"{name('input_dtype')} int64: give {name('vocab')} N, the number of token ids"
    if get("vocab") is not None and get("input_shape") is None:
        return f"{name('vocab')}: give {name('input_shape')} too (one sample's tokens, e.g. 128)"
    if get("batches") and get("max_batch") and max(get("batches")) > get("max_batch"):
        return f"{name('batches')} goes to {max(get('batches'))}, beyond {name('max_batch')} {get('max_batch')}"
    if get("results_dir") is not None:
        why = unwritable(get("results_dir"))
        if why:
            return f"{name('results_dir')} {get('results_dir')}: {why}"
    return None
