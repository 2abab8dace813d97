"""The results contract of a model sweep (`python -m benchmarks sweep`): its JSON Schema and rules.

A sweep file is one document per sweep, `<sweeps dir>/<device slug>/<sweep id>.json`: the device
fingerprint and ceilings as in a profile run, the model and its input, the settings, one entry per
batch size tried, and the recommendation the measurements support.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from typing import Any

from benchmarks.contract.rules import TOLERANCE, date_problems, timing_problems
from benchmarks.contract.schema import (
    CEILINGS,
    DEVICE,
    DTYPE,
    MAX_BATCH,
    MODES,
    NAME,
    POSITIVE,
    POSITIVE_OR_NULL,
    SCHEMA_VERSION,
    STATUSES,
    TEXT,
    TEXT_OR_NULL,
    TIMING,
    described,
    object_schema,
    provenance_fields,
)

STAGES = ("search", "refine", "probe")
PERCENTILES = (50, 90, 99)
MAX_POINTS = 10_000
_BATCH = {"type": "integer", "minimum": 1, "maximum": MAX_BATCH}
_BATCH_OR_NULL = {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_BATCH}
_COUNT_OR_NULL = {"type": ["number", "null"], "minimum": 0, "maximum": 1e24}

SWEEP_RUN = object_schema(
    {
        **provenance_fields(
            "sweep", "True when the search ran to its end.", "Why an incomplete sweep stopped (e.g. KeyboardInterrupt)."
        ),
        "time_limit_s": described(POSITIVE, "The sweep's --time-limit."),
        "contended": described({"type": "boolean"}, "Another measurement was using this device at the same time."),
        "wall_s": described(POSITIVE, "Seconds from start to the last write."),
        "search_stopped": described(
            TEXT, "Why the doubling search stopped (out of memory, flat throughput, time limit)."
        ),
        "synthetic": described({"type": "boolean"}, "True for test fixtures; such files are never published."),
    },
    ["id", "started_at", "complete"],
    "Provenance of the sweep.",
)

MODEL = object_schema(
    {
        "target": described(NAME, "What was swept: path/to/file.py:factory or package.module:factory."),
        "name": described(NAME, "The model's class name."),
        "parameters": described({"type": "integer", "minimum": 0, "maximum": 2**50}, "Parameters (elements)."),
        "weight_bytes": described({"type": "integer", "minimum": 0, "maximum": 2**50}, "Parameter and buffer bytes."),
        "dtype": DTYPE,
        "mode": described({"type": "string", "enum": list(MODES)}, "The execution mode measured."),
        "mode_requested": described(
            {"type": "string", "enum": list(MODES)}, "The mode asked for (it may have fallen back)."
        ),
        "input": described(TEXT, "How inputs were made: the factory's input maker, or a shape and dtype."),
        "notes": described(
            {"type": "array", "maxItems": 20, "items": TEXT},
            "What the sweep did to the model or its inputs (eval mode, no_grad, fallbacks).",
        ),
    },
    ["target", "name", "dtype", "mode", "input"],
    "The model swept.",
)

SETTINGS = object_schema(
    {
        "percentile": described(
            {"type": "integer", "enum": list(PERCENTILES)}, "Latency percentile the budget applies to."
        ),
        "budget_ms": described({"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1e9}, "Latency budget."),
        "batches": described(
            {"oneOf": [{"type": "string", "enum": ["auto"]}, {"type": "array", "maxItems": 1000, "items": _BATCH}]},
            "auto (searched) or the batch sizes asked for.",
        ),
        "max_batch": described(_BATCH_OR_NULL, "The largest batch the search may try."),
        "samples": described(
            {"type": "integer", "minimum": 1, "maximum": 100_000},
            "The fewest samples behind any measured batch's numbers: the final pass's count when it ran to its end.",
        ),
        "samples_asked": described(
            {"type": "integer", "minimum": 1, "maximum": 100_000},
            "Samples per batch the final pass asked for; a time limit can leave fewer (see samples).",
        ),
    },
    ["percentile", "batches", "samples"],
    "What the sweep was asked to do.",
)

SWEEP_POINT = object_schema(
    {
        "batch": _BATCH,
        "stage": described(
            {"type": "string", "enum": list(STAGES)}, "search (doubling), refine (budget) or probe (steps)."
        ),
        "status": described({"type": "string", "enum": list(STATUSES)}, "ok, oom, skipped or error."),
        "message": described(TEXT_OR_NULL, "Why a point is not ok."),
        "median_s": described(POSITIVE_OR_NULL, "Median seconds per call."),
        "percentile_s": described(POSITIVE_OR_NULL, "The settings' percentile of seconds per call."),
        "timing": {**TIMING, "type": ["object", "null"]},
        "throughput": described({"type": ["number", "null"], "minimum": 0, "maximum": 1e21}, "Samples per second."),
        "peak_memory_bytes": described(
            {"type": ["integer", "null"], "minimum": 0, "maximum": 2**50},
            "CUDA: the allocator's peak during one call; CPU: the process's peak resident memory so far.",
        ),
        "flops": described(_COUNT_OR_NULL, "FLOPs of one call, counted by torch.utils.flop_counter."),
        "bytes_low": described(
            _COUNT_OR_NULL,
            "Low end of bytes moved: every weight read at each use, the inputs read and the outputs written once.",
        ),
        "bytes_high": described(_COUNT_OR_NULL, "Upper bound: every operator's inputs and outputs (nothing fused)."),
        "ops": described(
            {"type": "integer", "minimum": 0, "maximum": 10**9}, "Operators one call dispatches (views too)."
        ),
        "uncounted": described(
            {
                "type": "array",
                "maxItems": 100,
                "items": object_schema(
                    {
                        "op": described(NAME, "An operator doing matrix work that no FLOP count covers."),
                        "time_share": described(
                            {"type": "number", "minimum": 0, "maximum": 1}, "Its share of the time."
                        ),
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

PROBES = object_schema(
    {
        "dispatch": object_schema(
            {
                "per_op_s": described(
                    POSITIVE, "Seconds per dispatched operator (an upper bound: tiny work included)."
                ),
                "ops": described(
                    {"type": "integer", "minimum": 1, "maximum": 10**6}, "Operators the probe dispatches."
                ),
                "model": described(TEXT, "The probe, e.g. 8×64 MLP at batch 1."),
                "timing": TIMING,
            },
            ["per_op_s", "ops", "model"],
            "The cost of one dispatched operator, from a tiny MLP at batch 1.",
        ),
        "small_matmul": object_schema(
            {
                "bytes_per_s": described(
                    {"type": "number", "exclusiveMinimum": 0, "maximum": 1e16},
                    "Weight bytes per second a batch-1 matrix product streams.",
                ),
                "weight_bytes": described({"type": "integer", "minimum": 1, "maximum": 2**50}, "The probe's weights."),
                "model": described(TEXT, "The probe, e.g. 8×1024 MLP at batch 1."),
                "timing": TIMING,
            },
            ["bytes_per_s", "weight_bytes", "model"],
            "The rate at which this device's small matrix products stream their weights.",
        ),
    },
    [],
    "Small probes measured beside the ceilings, the evidence for a sweep's diagnosis.",
)

_BYTES = {"type": "number", "minimum": 0, "maximum": 2**60}
TRAINING = object_schema(
    {
        "optimizer": described(TEXT, "The optimizer of the timed step."),
        "loss": described(TEXT, "The loss of the timed step."),
        "held_bytes": described(
            {
                "type": "object",
                "propertyNames": {"enum": ["weights", "gradients", "optimizer state"]},
                "additionalProperties": _BYTES,
                "required": ["weights", "gradients", "optimizer state"],
            },
            "Held whatever the batch: weights, their gradients and the optimizer's state.",
        ),
        "saved_bytes": described(
            {
                "type": "object",
                "maxProperties": 16,
                "propertyNames": {"pattern": "^[1-9][0-9]{0,6}$"},
                "additionalProperties": _BYTES,
            },
            "Bytes of the tensors autograd kept for the backward, by batch.",
        ),
        "saved_bytes_per_sample": described(_BYTES, "Their growth per sample."),
        "counted": described(TEXT, "How they were counted."),
    },
    ["optimizer", "loss", "held_bytes", "saved_bytes", "saved_bytes_per_sample", "counted"],
    "A training sweep (`sweep --train`): what its step holds and what autograd keeps per sample.",
    extra=False,
)

SWEEP_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "batching model sweep",
    **object_schema(
        {
            "schema_version": described({"type": "integer", "const": SCHEMA_VERSION}, "Version of this contract."),
            "kind": described({"type": "string", "const": "sweep"}, "sweep: one model swept over batch sizes."),
            "run": SWEEP_RUN,
            "device": DEVICE,
            "ceilings": CEILINGS,
            "probes": PROBES,
            "model": MODEL,
            "settings": SETTINGS,
            "points": {"type": "array", "maxItems": MAX_POINTS, "items": SWEEP_POINT},
            "training": TRAINING,
            "recommendation": described(
                {"type": ["object", "null"], "maxProperties": 64},
                "What the measurements support (benchmarks.analysis.roofline.recommend), as numbers and its verdict "
                "lines.",
            ),
        },
        ["schema_version", "kind", "run", "device", "ceilings", "model", "settings", "points"],
        "One model swept over batch sizes on one device.",
    ),
}


def _point_timing(path: str, point: dict[str, Any], timing: dict[str, Any]) -> list[tuple[str, str]]:
    """A point's median and percentile are its timing's: the median equal to it, the percentile within the samples."""
    median, percentile = point.get("median_s"), point.get("percentile_s")
    if median is not None and abs(median - timing["median_s"]) > TOLERANCE * timing["median_s"]:
        return [(f"{path}.median_s", f"must equal timing.median_s ({timing['median_s']:g}), got {median:g}")]
    low, high = min(timing["samples_s"]), max(timing["samples_s"])
    if percentile is not None and not low * (1 - TOLERANCE) <= percentile <= high * (1 + TOLERANCE):
        return [(f"{path}.percentile_s", f"must lie within the samples ({low:g} to {high:g}), got {percentile:g}")]
    return []


def sweep_rules(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """What the schema cannot say: timings within their samples, a status that agrees with its
    numbers, each batch once, dates in order."""
    problems = list(date_problems(doc["run"]))
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
                problems += timing_problems(f"{path}.timing", timing) or _point_timing(path, point, timing)
        else:
            if not point.get("message"):
                problems.append((f"{path}.message", f"must explain a {point['status']!r} status"))
            if point["median_s"] is not None:
                problems.append((f"{path}.median_s", f"must be null when status is {point['status']!r}"))
        low, high = point.get("bytes_low"), point.get("bytes_high")
        if low is not None and high is not None and low > high * (1 + 1e-9):
            problems.append((f"{path}.bytes_low", f"must not exceed bytes_high ({high:g})"))
    return problems
