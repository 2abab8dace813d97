"""The results contract of a model sweep (`python -m benchmarks sweep`): its JSON Schema and rules.

A sweep file is one document per sweep, `<sweeps dir>/<device slug>/<sweep id>.json`: the device
fingerprint and ceilings as in a profile run, the model and its input, the settings, one entry per
batch size tried, and the recommendation the measurements support.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from typing import Any

from benchmarks.schema import (
    _DATE,
    _DTYPE,
    _NAME,
    _POSITIVE,
    _POSITIVE_OR_NULL,
    _TEXT,
    _TEXT_OR_NULL,
    CEILINGS,
    DEVICE,
    MAX_BATCH,
    MODES,
    RUN_ID,
    SCHEMA_VERSION,
    STATUSES,
    TIMING,
    _d,
    _obj,
)

STAGES = ("search", "refine", "probe")
PERCENTILES = (50, 90, 99)
MAX_POINTS = 10_000
_BATCH = {"type": "integer", "minimum": 1, "maximum": MAX_BATCH}
_BATCH_OR_NULL = {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_BATCH}
_COUNT_OR_NULL = {"type": ["number", "null"], "minimum": 0, "maximum": 1e24}

SWEEP_RUN = _obj(
    {
        "id": _d({"type": "string", "pattern": RUN_ID}, "Sweep id; also the file name."),
        "started_at": _d(_DATE, "UTC start time, ISO 8601 with its offset."),
        "finished_at": _d({**_DATE, "type": ["string", "null"]}, "UTC end time; null if the sweep did not finish."),
        "complete": _d({"type": "boolean"}, "True when the search ran to its end."),
        "interrupted": _d(_TEXT_OR_NULL, "Why an incomplete sweep stopped (e.g. KeyboardInterrupt)."),
        "command": _d({"type": "array", "maxItems": 200, "items": _TEXT}, "Command line of the sweep."),
        "git_commit": _d({"type": ["string", "null"], "pattern": "^[0-9a-f]{7,64}$"}, "Commit of the measuring code."),
        "git_dirty": _d({"type": ["boolean", "null"]}, "Uncommitted or untracked changes to the measuring code."),
        "time_limit_s": _d(_POSITIVE, "The sweep's --time-limit."),
        "wall_s": _d(_POSITIVE, "Seconds from start to the last write."),
        "search_stopped": _d(_TEXT, "Why the doubling search stopped (out of memory, flat throughput, time limit)."),
        "synthetic": _d({"type": "boolean"}, "True for test fixtures; such files are never published."),
    },
    ["id", "started_at", "complete"],
    "Provenance of the sweep.",
)

MODEL = _obj(
    {
        "target": _d(_NAME, "What was swept: path/to/file.py:factory or package.module:factory."),
        "name": _d(_NAME, "The model's class name."),
        "parameters": _d({"type": "integer", "minimum": 0, "maximum": 2**50}, "Parameters (elements)."),
        "weight_bytes": _d({"type": "integer", "minimum": 0, "maximum": 2**50}, "Parameter and buffer bytes."),
        "dtype": _DTYPE,
        "mode": _d({"type": "string", "enum": list(MODES)}, "The execution mode measured."),
        "mode_requested": _d({"type": "string", "enum": list(MODES)}, "The mode asked for (it may have fallen back)."),
        "input": _d(_TEXT, "How inputs were made: the factory's input maker, or a shape and dtype."),
        "notes": _d(
            {"type": "array", "maxItems": 20, "items": _TEXT},
            "What the sweep did to the model or its inputs (eval mode, no_grad, fallbacks).",
        ),
    },
    ["target", "name", "dtype", "mode", "input"],
    "The model swept.",
)

SETTINGS = _obj(
    {
        "percentile": _d({"type": "integer", "enum": list(PERCENTILES)}, "Latency percentile the budget applies to."),
        "budget_ms": _d({"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1e9}, "Latency budget."),
        "batches": _d(
            {"oneOf": [{"type": "string", "enum": ["auto"]}, {"type": "array", "maxItems": 1000, "items": _BATCH}]},
            "auto (searched) or the batch sizes asked for.",
        ),
        "max_batch": _d(_BATCH_OR_NULL, "The largest batch the search may try."),
        "samples": _d(
            {"type": "integer", "minimum": 1, "maximum": 100_000},
            "The fewest samples behind any measured batch's numbers: the final pass's count when it ran to its end.",
        ),
        "samples_asked": _d(
            {"type": "integer", "minimum": 1, "maximum": 100_000},
            "Samples per batch the final pass asked for; a time limit can leave fewer (see samples).",
        ),
    },
    ["percentile", "batches", "samples"],
    "What the sweep was asked to do.",
)

SWEEP_POINT = _obj(
    {
        "batch": _BATCH,
        "stage": _d({"type": "string", "enum": list(STAGES)}, "search (doubling), refine (budget) or probe (steps)."),
        "status": _d({"type": "string", "enum": list(STATUSES)}, "ok, oom, skipped or error."),
        "message": _d(_TEXT_OR_NULL, "Why a point is not ok."),
        "median_s": _d(_POSITIVE_OR_NULL, "Median seconds per call."),
        "percentile_s": _d(_POSITIVE_OR_NULL, "The settings' percentile of seconds per call."),
        "timing": {**TIMING, "type": ["object", "null"]},
        "throughput": _d({"type": ["number", "null"], "minimum": 0, "maximum": 1e21}, "Samples per second."),
        "peak_memory_bytes": _d(
            {"type": ["integer", "null"], "minimum": 0, "maximum": 2**50},
            "CUDA: the allocator's peak during one call; CPU: the process's peak resident memory so far.",
        ),
        "flops": _d(_COUNT_OR_NULL, "FLOPs of one call, counted by torch.utils.flop_counter."),
        "bytes_low": _d(
            _COUNT_OR_NULL,
            "Low end of bytes moved: every weight read at each use, the inputs read and the outputs written once.",
        ),
        "bytes_high": _d(_COUNT_OR_NULL, "Upper bound: every operator's inputs and outputs (nothing fused)."),
        "ops": _d({"type": "integer", "minimum": 0, "maximum": 10**9}, "Operators one call dispatches (views too)."),
        "uncounted": _d(
            {
                "type": "array",
                "maxItems": 100,
                "items": _obj(
                    {
                        "op": _d(_NAME, "An operator doing matrix work that no FLOP count covers."),
                        "time_share": _d({"type": "number", "minimum": 0, "maximum": 1}, "Its share of the time."),
                    },
                    ["op", "time_share"],
                    "One uncounted operator.",
                ),
            },
            "Operators whose FLOPs no count saw, with their share of the call's operator time.",
        ),
    },
    ["batch", "stage", "status", "median_s", "percentile_s"],
    "One batch size tried.",
)

PROBES = _obj(
    {
        "dispatch": _obj(
            {
                "per_op_s": _d(_POSITIVE, "Seconds per dispatched operator (an upper bound: tiny work included)."),
                "ops": _d({"type": "integer", "minimum": 1, "maximum": 10**6}, "Operators the probe dispatches."),
                "model": _d(_TEXT, "The probe, e.g. 8×64 MLP at batch 1."),
                "timing": TIMING,
            },
            ["per_op_s", "ops", "model"],
            "The cost of one dispatched operator, from a tiny MLP at batch 1.",
        ),
        "small_matmul": _obj(
            {
                "bytes_per_s": _d(
                    {"type": "number", "exclusiveMinimum": 0, "maximum": 1e16},
                    "Weight bytes per second a batch-1 matrix product streams.",
                ),
                "weight_bytes": _d({"type": "integer", "minimum": 1, "maximum": 2**50}, "The probe's weights."),
                "model": _d(_TEXT, "The probe, e.g. 8×1024 MLP at batch 1."),
                "timing": TIMING,
            },
            ["bytes_per_s", "weight_bytes", "model"],
            "The rate at which this device's small matrix products stream their weights.",
        ),
    },
    [],
    "Small probes measured beside the ceilings, the evidence for a sweep's diagnosis.",
)

SWEEP_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "batching model sweep",
    **_obj(
        {
            "schema_version": _d({"type": "integer", "const": SCHEMA_VERSION}, "Version of this contract."),
            "kind": _d({"type": "string", "const": "sweep"}, "sweep: one model swept over batch sizes."),
            "run": SWEEP_RUN,
            "device": DEVICE,
            "ceilings": CEILINGS,
            "probes": PROBES,
            "model": MODEL,
            "settings": SETTINGS,
            "points": {"type": "array", "maxItems": MAX_POINTS, "items": SWEEP_POINT},
            "recommendation": _d(
                {"type": ["object", "null"], "maxProperties": 64},
                "What the measurements support (benchmarks.analysis.recommend), as numbers and its verdict lines.",
            ),
        },
        ["schema_version", "kind", "run", "device", "ceilings", "model", "settings", "points"],
        "One model swept over batch sizes on one device.",
    ),
}


def sweep_rules(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """What the schema cannot say: timings within their samples, a status that agrees with its
    numbers, each batch once, dates in order."""
    from benchmarks.rules import _dates, _timing

    problems = list(_dates(doc["run"]))
    seen: dict[int, int] = {}
    for index, point in enumerate(doc["points"]):
        path = f"points[{index}]"
        if point["batch"] in seen:
            problems.append((f"{path}.batch", f"is also points[{seen[point['batch']]}]"))
        seen.setdefault(point["batch"], index)
        timing = point.get("timing")
        if point["status"] == "ok":
            for name in ("median_s", "percentile_s", "timing"):
                if point.get(name) is None:
                    problems.append((f"{path}.{name}", "must be set when status is ok"))
            if timing is not None:
                problems += _timing(f"{path}.timing", timing)
        else:
            if not point.get("message"):
                problems.append((f"{path}.message", f"must explain a {point['status']!r} status"))
            if point["median_s"] is not None:
                problems.append((f"{path}.median_s", f"must be null when status is {point['status']!r}"))
        low, high = point.get("bytes_low"), point.get("bytes_high")
        if low is not None and high is not None and low > high * (1 + 1e-9):
            problems.append((f"{path}.bytes_low", f"must not exceed bytes_high ({high:g})"))
    return problems
