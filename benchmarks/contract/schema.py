"""The results-file contract: a JSON Schema plus the few rules a schema cannot say.

The schema below is the single source of truth. `benchmarks.contract.validate` checks a parsed
document against it (a small interpreter for the subset of JSON Schema used here, so
the bench path needs nothing beyond the standard library), the docs render their
schema reference from it, and `python -m benchmarks schema` prints it.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

from benchmarks.workloads import WORKLOADS

SCHEMA_VERSION = 2  # 2: a document says its kind ("profile" run or model "sweep"); 1 is read as a profile run
READABLE_VERSIONS = (1, 2)
KINDS = ("profile", "sweep")

STATUSES = ("ok", "oom", "skipped", "error")
MODES = ("eager", "graph", "compile")
CACHE_STATES = ("resident", "rotated", "flushed")
DEVICE_KINDS = ("cpu", "cuda")
DTYPES = ("float64", "float32", "tfloat32", "bfloat16", "float16", "float8")
ATTENTION_BACKENDS = ("flash_attention", "cudnn_attention", "efficient_attention", "math")
SLUG = r"^[a-z0-9][a-z0-9-]{0,63}$"
RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"

# Limits: far beyond any real run, small enough that a hostile file cannot make a reader slow or crash.
MAX_SECONDS = 1e6  # one call
MAX_COUNT = 1e24  # FLOPs or bytes of one call
MAX_BATCH = 2**24
MAX_TEXT = 1000  # characters of a message or a free-form field
MAX_NAME = 200  # characters of a name
MAX_SAMPLES = 100_000
MAX_RECORDS = 200_000

_NUMBER = {"type": "number", "minimum": 0, "maximum": MAX_COUNT}
POSITIVE = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SECONDS}
# Ceilings a single device can physically have, with wide margins: memory bandwidth from 1 MB/s to 1 PB/s
# (an H200's HBM is 4.8 TB/s; a GPU's aggregate L1, which the read curve reaches at small working sets, some
# tens of TB/s), matmul rate from 1 MFLOP/s to 100 PFLOP/s (the fastest datasheet rate, sparse fp8/fp4, is a
# few PFLOP/s). Outside these a value is not a measurement, and a ratio of two of them would not be finite.
MIN_BANDWIDTH, MAX_BANDWIDTH = 1e6, 1e15
MIN_FLOP_RATE, MAX_FLOP_RATE = 1e6, 1e17
_BANDWIDTH = {"type": "number", "minimum": MIN_BANDWIDTH, "maximum": MAX_BANDWIDTH}  # bytes/s
_FLOP_RATE = {"type": "number", "minimum": MIN_FLOP_RATE, "maximum": MAX_FLOP_RATE}  # FLOP/s
POSITIVE_OR_NULL = {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": MAX_SECONDS}
NAME = {"type": "string", "minLength": 1, "maxLength": MAX_NAME}
TEXT = {"type": "string", "maxLength": MAX_TEXT}
_NAME_OR_NULL = {"type": ["string", "null"], "maxLength": MAX_NAME}
TEXT_OR_NULL = {"type": ["string", "null"], "maxLength": MAX_TEXT}
_INT_OR_NULL = {"type": ["integer", "null"], "minimum": 0, "maximum": 2**50}
_SIZE = {"type": "integer", "minimum": 1, "maximum": 2**50}
DTYPE = {"type": "string", "enum": list(DTYPES)}
DATE_TIME = {"type": "string", "format": "date-time", "maxLength": 40}


def object_schema(properties: dict, required: list[str], description: str, extra: bool = True) -> dict:
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": required,
        "additionalProperties": extra,
    }


def described(schema: dict, description: str) -> dict:
    return {**schema, "description": description}


def provenance_fields(noun: str, complete: str, interrupted: str, *, code: str = "measuring") -> dict[str, dict]:
    """The fields every kind of file's `run` block opens with (its id, times, whether it finished, its command
    line and commit), worded for its `noun` (run, sweep, check)."""
    return {
        "id": described({"type": "string", "pattern": RUN_ID}, f"{noun.capitalize()} id; also the file name."),
        "started_at": described(DATE_TIME, "UTC start time, ISO 8601 with its offset."),
        "finished_at": described(
            {**DATE_TIME, "type": ["string", "null"]}, f"UTC end time; null if the {noun} did not finish."
        ),
        "complete": described({"type": "boolean"}, complete),
        "interrupted": described(TEXT_OR_NULL, interrupted),
        "command": described({"type": "array", "maxItems": 200, "items": TEXT}, f"Command line of the {noun}."),
        "git_commit": described(
            {"type": ["string", "null"], "pattern": "^[0-9a-f]{7,64}$"}, f"Commit of the {code} code."
        ),
        "git_dirty": described({"type": ["boolean", "null"]}, f"Uncommitted or untracked changes to the {code} code."),
    }


TIMING = object_schema(
    {
        "median_s": described(POSITIVE, "Median of the samples, in seconds per call."),
        "q1_s": described(POSITIVE, "First quartile of the samples (s)."),
        "q3_s": described(POSITIVE, "Third quartile of the samples (s)."),
        "min_s": described(POSITIVE, "Fastest sample (s)."),
        "max_s": described(POSITIVE, "Slowest sample (s)."),
        "samples_s": described(
            {"type": "array", "items": POSITIVE, "minItems": 1, "maxItems": MAX_SAMPLES},
            "Every timed sample, seconds per call, in the order taken.",
        ),
        "inner_loops": described(
            {"type": "integer", "minimum": 1, "maximum": 10**9},
            "Calls timed back to back inside one sample; a sample is their mean.",
        ),
    },
    ["median_s", "q1_s", "q3_s", "samples_s", "inner_loops"],
    "Timing statistics of one measurement: q1 ≤ median ≤ q3, all within the samples.",
)

DEVICE = object_schema(
    {
        "kind": described({"type": "string", "enum": list(DEVICE_KINDS)}, "cpu or cuda."),
        "name": described(NAME, "Device name as the driver reports it."),
        "slug": described(
            {"type": "string", "pattern": SLUG},
            "Directory name under benchmarks/results/ for this device; the results file must sit in it.",
        ),
        "sm_count": described(
            {"type": ["integer", "null"], "minimum": 0, "maximum": 100_000}, "Streaming multiprocessors."
        ),
        "l2_bytes": described(
            _INT_OR_NULL, "L2 cache size in bytes (CUDA), or the last-level cache (CPU) where readable."
        ),
        "memory_bytes": described(_INT_OR_NULL, "Device memory (CUDA) or system memory (CPU) in bytes."),
        "compute_capability": described(
            {"type": ["string", "null"], "pattern": r"^[0-9]{1,2}\.[0-9]{1,2}$"}, "CUDA compute capability, e.g. 9.0."
        ),
        "driver": described(_NAME_OR_NULL, "NVIDIA driver version, where nvidia-smi answers."),
        "cuda": described(_NAME_OR_NULL, "CUDA version torch was built with."),
        "torch": described(NAME, "torch.__version__."),
        "python": described(NAME, "Python version."),
        "platform": described({"type": "string", "maxLength": MAX_NAME}, "platform.platform()."),
        "cpu_model": described(_NAME_OR_NULL, "Host CPU model name."),
        "threads": described({"type": "integer", "minimum": 1, "maximum": 4096}, "torch intra-op threads (fixed)."),
        "clocks_mhz": described(
            {
                "type": ["object", "null"],
                "additionalProperties": {"type": ["number", "null"], "minimum": 0, "maximum": 100_000},
                "maxProperties": 32,
            },
            "SM and memory clocks (current and max) where readable.",
        ),
        "power_limit_w": described(
            {"type": ["number", "null"], "minimum": 0, "maximum": 100_000}, "Board power limit."
        ),
        "cache_levels": described(
            {
                "type": "array",
                "maxItems": 8,
                "items": object_schema(
                    {
                        "level": {"type": "integer", "minimum": 1, "maximum": 8},
                        "type": {"type": "string", "maxLength": 40},
                        "bytes": _SIZE,
                    },
                    ["level", "bytes"],
                    "One cache level.",
                ),
            },
            "Data cache levels the device reports (per core for a CPU's private levels).",
        ),
        "float32_matmul_precision": described(
            {"type": "string", "enum": ["highest", "high", "medium"]},
            "torch.get_float32_matmul_precision(); 'highest' means TF32 is off.",
        ),
        "cudnn": described(_INT_OR_NULL, "cuDNN version torch loaded (e.g. 91002), or null without cuDNN."),
        "math_flags": described(
            {
                "type": "object",
                "additionalProperties": {"type": "boolean"},
                "maxProperties": 16,
            },
            "torch.backends flags that change the kernels: matmul_allow_tf32, cudnn_allow_tf32 (fp32 convolutions "
            "in TF32), cudnn_benchmark (per-shape algorithm search).",
        ),
    },
    ["kind", "name", "slug", "torch", "python", "threads"],
    "Fingerprint of the machine the run measured.",
)

CEILINGS = object_schema(
    {
        "copy": object_schema(
            {
                "bytes_per_s": described(_BANDWIDTH, "Bytes read plus bytes written per second."),
                "size_bytes": described(_SIZE, "Bytes in the copied buffer."),
                "timing": TIMING,
            },
            ["bytes_per_s", "size_bytes", "timing"],
            "A large device-to-device (or RAM-to-RAM) copy.",
        ),
        "matmul": {
            "type": "object",
            "description": "Square matmul rate per dtype, keyed by dtype name.",
            "propertyNames": DTYPE,
            "additionalProperties": object_schema(
                {
                    "flops_per_s": described(_FLOP_RATE, "2·n³ over the median time."),
                    "n": described({"type": "integer", "minimum": 1, "maximum": 2**20}, "Matrix size n (n×n by n×n)."),
                    "fast_accum": described(
                        {"type": "boolean"},
                        "float8 only: torch._scaled_mm's use_fast_accum (true reaches the fp8 peak).",
                    ),
                    "timing": TIMING,
                },
                ["flops_per_s", "n", "timing"],
                "One dtype's matmul ceiling.",
            ),
        },
        "curves": object_schema(
            {
                "bandwidth": {
                    "type": "array",
                    "description": "Bandwidth against working-set size.",
                    "maxItems": 1000,
                    "items": object_schema(
                        {
                            "kind": described(
                                {"type": "string", "enum": ["copy", "read"]},
                                "copy: dst.copy_(src), bytes read + written; read: a row sum over a stride-0 view "
                                "that reads one buffer many times in one kernel.",
                            ),
                            "working_set_bytes": described(_SIZE, "Bytes touched per pass."),
                            "bytes_per_s": _BANDWIDTH,
                            "timing": TIMING,
                            "status": {"type": "string", "enum": list(STATUSES)},
                            "message": TEXT_OR_NULL,
                        },
                        ["kind", "working_set_bytes"],
                        "One working-set size; bytes_per_s and timing when measured, else status and message.",
                    ),
                },
                "matmul": {
                    "type": "array",
                    "description": "Square matmul rate against size, per dtype.",
                    "maxItems": 1000,
                    "items": object_schema(
                        {
                            "dtype": described(
                                DTYPE,
                                "float32 (TF32 off), tfloat32, bfloat16, float16 or float8 (e4m3, scaled matmul).",
                            ),
                            "n": {"type": "integer", "minimum": 1, "maximum": 2**20},
                            "flops_per_s": _FLOP_RATE,
                            "timing": TIMING,
                            "status": {"type": "string", "enum": list(STATUSES)},
                            "message": TEXT_OR_NULL,
                        },
                        ["dtype", "n"],
                        "One matmul size; flops_per_s and timing when measured, else status and message.",
                    ),
                },
            },
            ["bandwidth", "matmul"],
            "The curves the ceilings are points of (absent in runs before they were measured).",
        ),
    },
    ["copy", "matmul"],
    "Ceilings measured on the same device in the same run; predictions use these.",
)

_WORKLOAD = {"type": "string", "enum": list(WORKLOADS)}

RECORD = object_schema(
    {
        "workload": described(_WORKLOAD, "Workload name, one of benchmarks/workloads.py."),
        "params": described(
            {"type": "object", "maxProperties": 32},
            "Workload parameters, each declared with its type and range by the workload (`python -m benchmarks list`).",
        ),
        "dtype": described(DTYPE, "torch dtype name, e.g. bfloat16."),
        "mode": described(
            {"type": "string", "enum": list(MODES)},
            "eager: the calls user code makes, back to back; graph: a captured CUDA graph replayed; "
            "compile: the model wrapped in torch.compile (default mode, dynamic shapes), called eagerly.",
        ),
        "cache": described(
            {"type": "string", "enum": list(CACHE_STATES)},
            "What the cache held: resident (hot loop, weights may stay cached), rotated "
            "(several weight copies, larger than L2 together, used in turn) or flushed.",
        ),
        "weight_copies": described(
            {"type": "integer", "minimum": 1, "maximum": 10_000}, "Weight copies rotated through."
        ),
        "batch": described({"type": "integer", "minimum": 1, "maximum": MAX_BATCH}, "Rows in the batch."),
        "status": described({"type": "string", "enum": list(STATUSES)}, "Outcome of this point."),
        "message": described(TEXT_OR_NULL, "Why the point is not ok (null when ok)."),
        "median_s": described(POSITIVE_OR_NULL, "Median seconds per call; null unless status is ok."),
        "timing": {"oneOf": [TIMING, {"type": "null"}]},
        "flops": described(_NUMBER, "Analytic floating-point operations per call."),
        "routing": described(
            object_schema(
                {
                    "max_load": {"type": "number", "minimum": 0, "maximum": 2**40},
                    "mean_load": {"type": "number", "minimum": 0, "maximum": 2**40},
                    "touched_experts": {"type": "number", "minimum": 0, "maximum": 2**20},
                    "dropped_tokens": {"type": "number", "minimum": 0, "maximum": 2**40},
                },
                [],
                "routing",
                extra=False,
            ),
            "Routed workloads, for the timed input: max_load and mean_load (rows per expert), touched_experts, "
            "and for expert choice dropped_tokens (tokens no expert took).",
        ),
        "bytes_split": described(
            {
                "type": "object",
                "propertyNames": {"enum": ["weight_bytes", "kv_bytes", "activation_bytes"]},
                "additionalProperties": _NUMBER,
            },
            "Workloads whose bytes have parts (decode): weight_bytes, kv_bytes and activation_bytes, summing to bytes.",
        ),
        "attention_backend": described(
            {"type": "string", "enum": list(ATTENTION_BACKENDS)},
            "Attention workloads: the scaled-dot-product-attention backend the calls were pinned to.",
        ),
        "saved_activation_bytes": described(
            {"type": "number", "minimum": 0, "maximum": 2**60},
            "Training steps: bytes of the tensors autograd kept for the backward at this batch, parameters left out, "
            "counted with torch.autograd.graph.saved_tensors_hooks (each storage once).",
        ),
        "kernels_error": described(
            TEXT, "Why kernel names could not be recorded at a sampled batch (the point is still timed)."
        ),
        "kernels": described(
            {"type": "array", "maxItems": 64, "items": {"type": "string", "maxLength": MAX_TEXT}},
            "Kernels the library ran at this batch (CUDA) or the ops (CPU), from torch.profiler; sampled batches only.",
        ),
        "bytes": described(_NUMBER, "Analytic minimum bytes moved per call (memory traffic)."),
    },
    ["workload", "params", "dtype", "mode", "cache", "batch", "status", "median_s", "flops", "bytes"],
    "One measured point: a workload configuration at one batch size.",
)

RUN = object_schema(
    {
        **provenance_fields(
            "run",
            "True only when every planned workload finished.",
            "Why an incomplete run stopped (e.g. KeyboardInterrupt).",
            code="measured",
        ),
        "git_commit": described(
            {"type": ["string", "null"], "pattern": "^[0-9a-f]{7,64}$"},
            "Commit of the measured code, where the code belongs to that repository's commit.",
        ),
        "profile": described(
            {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,39}$"}, "Profile name: quick or full."
        ),
        "workloads_planned": described(
            {"type": "array", "maxItems": 64, "items": _WORKLOAD},
            "Workloads the run set out to measure (a subset with `run --only`).",
        ),
        "workloads_done": described(
            {"type": "array", "maxItems": 64, "items": _WORKLOAD},
            "Workloads whose points all finished (every point is sampled in shared rounds, so this fills at the end).",
        ),
        "contended": described({"type": "boolean"}, "Another run was measuring this device at the same time."),
        "compiled_graphs": described(
            {"type": "integer", "minimum": 0, "maximum": 100_000},
            "Graphs torch.compile made for the compile-mode curves (one per curve unless a batch size recompiled).",
        ),
        "time_limit_s": described(POSITIVE, "The run's --time-limit: it planned to end within this many seconds."),
        "device_at_end": described(
            {
                "type": ["object", "null"],
                "properties": {
                    "clocks_mhz": {
                        "type": "object",
                        "additionalProperties": {"type": ["number", "null"], "minimum": 0, "maximum": 100_000},
                        "maxProperties": 8,
                    },
                    "temperature_c": {"type": ["number", "null"], "minimum": -100, "maximum": 200},
                    "power_w": {"type": ["number", "null"], "minimum": 0, "maximum": 100_000},
                    "throttle_reasons": _NAME_OR_NULL,
                },
                "additionalProperties": False,
            },
            "CUDA: SM and memory clocks, temperature, power draw and active throttle reasons when the run ended.",
        ),
        "fitted_to_time": described(TEXT, "What the time limit cut (fewer samples per point, fewer batch sizes)."),
        "synthetic": described({"type": "boolean"}, "True for test fixtures; such files are never published."),
    },
    ["id", "started_at", "complete", "profile"],
    "Provenance of the run.",
)

CHECK = object_schema(
    {
        "workload": _WORKLOAD,
        "dtype": DTYPE,
        "max_rel_error": described(_NUMBER, "‖out − ref‖ / ‖ref‖ against a float64 reference."),
        "tolerance": _NUMBER,
        "passed": {"type": "boolean"},
    },
    ["workload", "dtype", "max_rel_error", "tolerance", "passed"],
    "A correctness check made before timing.",
)

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "batching benchmark run",
    **object_schema(
        {
            "schema_version": described(
                {"type": "integer", "const": SCHEMA_VERSION},
                f"Version of this contract; this code writes version {SCHEMA_VERSION} and reads version 1 as a "
                "profile run.",
            ),
            "kind": described({"type": "string", "const": "profile"}, "profile: a run of a profile's workloads."),
            "run": RUN,
            "device": DEVICE,
            "ceilings": CEILINGS,
            "checks": {"type": "array", "maxItems": 1000, "items": CHECK, "description": CHECK["description"]},
            "records": {
                "type": "array",
                "maxItems": MAX_RECORDS,
                "items": RECORD,
                "description": RECORD["description"],
            },
        },
        ["schema_version", "kind", "run", "device", "ceilings", "records"],
        "One benchmark run on one device: provenance, fingerprint, ceilings and records.",
    ),
}

_PY_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def _check(value: Any, schema: dict, path: str, problems: list[tuple[str, str]]) -> None:
    """Append (field path, message) for every way `value` breaks `schema`."""
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not schema_problems(value, s, path)]
        if len(matching) != 1:
            options = [schema_problems(value, s, path) for s in schema["oneOf"]]
            problems.extend(min(options, key=len) or [(path, "matches no allowed shape")])
        return
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_PY_TYPES[t](value) for t in types):
            problems.append((path, f"must be {' or '.join(types)}, got {describe_value(value)}"))
            return
    if isinstance(value, float) and not math.isfinite(value):
        problems.append((path, f"must be a finite number, got {value}"))
        return
    if "const" in schema and value != schema["const"]:
        problems.append((path, f"must be {schema['const']!r}, got {describe_value(value)}"))
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(e) for e in schema["enum"])
        problems.append((path, f"must be one of {allowed}, got {describe_value(value)}"))
    if _PY_TYPES["number"](value):
        _check_number(value, schema, path, problems)
    elif isinstance(value, str):
        _check_string(value, schema, path, problems)
    elif isinstance(value, dict):
        _check_object(value, schema, path, problems)
    elif isinstance(value, list):
        _check_array(value, schema, path, problems)


def _check_number(value, schema: dict, path: str, problems: list) -> None:
    if "exclusiveMinimum" in schema and not value > schema["exclusiveMinimum"]:
        problems.append((path, f"must be > {schema['exclusiveMinimum']}, got {describe_value(value)}"))
    if "minimum" in schema and not value >= schema["minimum"]:
        problems.append((path, f"must be >= {schema['minimum']}, got {describe_value(value)}"))
    if "maximum" in schema and not value <= schema["maximum"]:
        problems.append((path, f"must be <= {schema['maximum']:g}, got {describe_value(value)}"))


def _check_string(value: str, schema: dict, path: str, problems: list) -> None:
    if len(value) < schema.get("minLength", 0):
        problems.append((path, "must not be empty"))
    if len(value) > schema.get("maxLength", math.inf):
        problems.append((path, f"must be at most {schema['maxLength']} characters, got {len(value)}"))
    elif "pattern" in schema and not re.fullmatch(schema["pattern"], value):  # the whole string, newlines too
        problems.append((path, f"must match {schema['pattern']}, got {describe_value(value)}"))
    elif schema.get("format") == "date-time" and not _is_datetime(value):
        problems.append((path, f"must be an ISO 8601 date and time with its offset, got {describe_value(value)}"))


def _is_datetime(value: str) -> bool:
    try:
        return datetime.fromisoformat(value).tzinfo is not None
    except ValueError:
        return False


def _check_object(value: dict, schema: dict, path: str, problems: list) -> None:
    if len(value) > schema.get("maxProperties", math.inf):
        problems.append((path, f"must have at most {schema['maxProperties']} fields, got {len(value)}"))
        return
    for name in schema.get("required", []):
        if name not in value:
            problems.append((_join(path, name), "is required but missing"))
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames")
    for name, item in value.items():
        if names is not None and name not in names.get("enum", [name]):
            problems.append((_join(path, name), f"is not a known key (one of {', '.join(names['enum'])})"))
        elif name in properties:
            _check(item, properties[name], _join(path, name), problems)
        elif isinstance(extra, dict):
            _check(item, extra, _join(path, name), problems)
        elif extra is False:
            problems.append((_join(path, name), "is not an allowed field"))


def _check_array(value: list, schema: dict, path: str, problems: list) -> None:
    if len(value) > schema.get("maxItems", math.inf):
        problems.append((path, f"must have at most {schema['maxItems']} items, got {len(value)}"))
        return
    if len(value) < schema.get("minItems", 0):
        problems.append((path, f"must have at least {schema['minItems']} item(s)"))
    if "items" in schema:
        for index, item in enumerate(value):
            _check(item, schema["items"], f"{path}[{index}]", problems)


def schema_problems(value: Any, schema: dict, path: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    _check(value, schema, path, found)
    return found


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def describe_value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def migrate(doc: dict) -> dict:
    """A document in the current version: version 1 had one kind of document, the profile run."""
    if doc.get("schema_version") == 1:
        rest = {k: v for k, v in doc.items() if k != "schema_version"}
        return {"schema_version": SCHEMA_VERSION, "kind": "profile", **rest}
    return doc


def describe_fields(schema: dict | None = None, prefix: str = "") -> list[tuple[str, str, bool, str]]:
    """Flatten the schema into (field path, type, required, description) rows for the docs."""
    schema = SCHEMA if schema is None else schema
    rows: list[tuple[str, str, bool, str]] = []
    required = set(schema.get("required", []))
    for name, sub in schema.get("properties", {}).items():
        path = _join(prefix, name)
        if "oneOf" in sub:
            sub = next(s for s in sub["oneOf"] if s.get("type") == "object")
            type_name = "object or null"
        else:
            kinds = sub.get("type", "any")
            type_name = kinds if isinstance(kinds, str) else " or ".join(kinds)
        if type_name == "array" and isinstance(sub.get("items"), dict):
            item = sub["items"]
            rows.append((path, f"array of {item.get('type', 'any')}", name in required, sub.get("description", "")))
            if item.get("type") == "object":
                rows.extend(describe_fields(item, path + "[]"))
            continue
        rows.append((path, type_name, name in required, sub.get("description", "")))
        if "properties" in sub:
            rows.extend(describe_fields(sub, path))
        elif isinstance(sub.get("additionalProperties"), dict):
            rows.extend(describe_fields(sub["additionalProperties"], path + ".<dtype>"))
    return rows
