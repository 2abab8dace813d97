"""The rules of a results file that a JSON Schema cannot say.

`benchmarks.contract.validate.validate_document` runs these after the schema has passed, so every field here
already has its type: each workload's parameters against its spec, timing statistics that agree with
their samples, a status that agrees with its timing, bytes that add up, dates in order, and no point
measured twice.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from datetime import datetime
from itertools import pairwise
from typing import Any

from benchmarks.workloads import WORKLOADS

Problem = tuple[str, str]
TOLERANCE = 1e-9  # relative: statistics are computed from the samples, so only rounding separates them


def document_rules(doc: dict[str, Any]) -> list[Problem]:
    problems = list(date_problems(doc["run"]))
    for path, timing in _timings(doc):
        problems += timing_problems(path, timing)
    seen: dict[str, int] = {}
    for index, record in enumerate(doc["records"]):
        path = f"records[{index}]"
        problems += _record(path, record)
        identity = json.dumps(
            [record[k] for k in ("workload", "params", "dtype", "mode", "cache", "batch")], sort_keys=True
        )
        if identity in seen:
            problems.append((path, f"measures the same point as records[{seen[identity]}]"))
        seen.setdefault(identity, index)
    return problems


def date_problems(run: dict[str, Any]) -> Iterator[Problem]:
    finished = run.get("finished_at")
    if finished is not None and datetime.fromisoformat(finished) < datetime.fromisoformat(run["started_at"]):
        yield "run.finished_at", "must not be before run.started_at"
    if run["complete"] and finished is None:
        yield "run.finished_at", "must be set when the run is complete"


def _timings(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every timing object of the document, with its path."""
    ceilings = doc["ceilings"]
    yield "ceilings.copy.timing", ceilings["copy"]["timing"]
    for dtype, entry in ceilings["matmul"].items():
        yield f"ceilings.matmul.{dtype}.timing", entry["timing"]
    for kind in ("bandwidth", "matmul"):
        for index, entry in enumerate(ceilings.get("curves", {}).get(kind, [])):
            if entry.get("timing") is not None:
                yield f"ceilings.curves.{kind}[{index}].timing", entry["timing"]
    for index, record in enumerate(doc["records"]):
        if record.get("timing") is not None:
            yield f"records[{index}].timing", record["timing"]


def timing_problems(path: str, timing: dict[str, Any]) -> list[Problem]:
    samples = timing["samples_s"]
    low, high = min(samples), max(samples)
    slack = TOLERANCE * high
    order = [("min_s", timing.get("min_s", low)), ("q1_s", timing["q1_s"]), ("median_s", timing["median_s"])]
    order += [("q3_s", timing["q3_s"]), ("max_s", timing.get("max_s", high))]
    for (first, a), (second, b) in pairwise(order):
        if a > b + slack:
            return [(f"{path}.{second}", f"must not be below {first} ({b:g} < {a:g})")]
    for name in ("min_s", "q1_s", "median_s", "q3_s", "max_s"):
        value = timing.get(name)
        if value is not None and not low - slack <= value <= high + slack:
            return [(f"{path}.{name}", f"must lie within the samples ({low:g} to {high:g}), got {value:g}")]
    middle = statistics.median(samples)
    if abs(timing["median_s"] - middle) > TOLERANCE * high:
        return [(f"{path}.median_s", f"must be the median of the samples ({middle:g}), got {timing['median_s']:g}")]
    return []


def _record(path: str, record: dict[str, Any]) -> list[Problem]:
    problems = [
        (f"{path}.params" if name == "(params)" else f"{path}.params.{name}", message)
        for name, message in _params(record)
    ]
    status, timing, median = record["status"], record.get("timing"), record["median_s"]
    if status == "ok":
        if median is None or timing is None:
            problems.append((f"{path}.{'median_s' if median is None else 'timing'}", "must be set when status is ok"))
        elif abs(median - timing["median_s"]) > TOLERANCE * median:
            problems.append((f"{path}.median_s", f"must equal timing.median_s ({timing['median_s']:g})"))
    else:
        if not record.get("message"):
            problems.append((f"{path}.message", f"must explain a {status!r} status"))
        if median is not None:
            problems.append((f"{path}.median_s", f"must be null when status is {status!r}"))
    split = record.get("bytes_split")
    if split and abs(sum(split.values()) - record["bytes"]) > 1e-6 * max(record["bytes"], 1):
        problems.append((f"{path}.bytes_split", f"must add up to bytes ({record['bytes']:g})"))
    return problems


def _params(record: dict[str, Any]) -> list[Problem]:
    return WORKLOADS[record["workload"]].problems(record["params"])
