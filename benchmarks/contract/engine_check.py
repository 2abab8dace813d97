"""The results contract of a real-engine check (`benchmarks.measure.engine_check`): its JSON Schema, its rules and its
one strict reader.

An engine-check file is one document per check, `<engine dir>/<host slug>/<check id>.json`: the host, the engine
(vLLM, its version, the config.json of the decoder it served on random weights), the length mixes, this CPU's
measured ceilings, every engine setting with the KV pool it made, the step curve (decode batches, prompts alone,
decodes sharing a prefill), and one entry per load (a setting, a mix, a Poisson rate or a closed loop, a repeat):
every request's lengths, send time and every token's arrival, and the engine's gauges over the load. The command that
measured it adds what the simulator gave for each load (`simulated`), so that a file holds both side by side.

Like every results file it is input from strangers: every field is checked, and a bad file is refused in one line
naming the file and the field.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.contract.documents import DocumentKind
from benchmarks.contract.schema import (
    DATE_TIME,
    NAME,
    RUN_ID,
    SLUG,
    TEXT,
    described,
    instant,
    object_schema,
    provenance_fields,
)

_PACKAGE = Path(__file__).resolve().parents[1]
# In a checkout, checks are committed beside the code; an installed copy writes under the working directory.
DEFAULT_ENGINE_DIR = (
    _PACKAGE / "engine" if (_PACKAGE.parent / "pyproject.toml").is_file() else Path.cwd() / "benchmarks-engine"
)
KIND = "engine-check"
VERSION = 1
LOAD_KINDS = ("poisson", "closed", "capacity")
MAX_LOADS = 2_000
MAX_REQUESTS = 50_000  # per load
MAX_TOKENS = 1_000_000  # of one request
MAX_SECONDS = 86_400.0
MAX_SAMPLES = 2_000_000  # numbers in one array of numbers
NAME_OR_NULL = {"type": ["string", "null"], "maxLength": 200}
_SECONDS = {"type": "number", "minimum": 0, "maximum": MAX_SECONDS}
_SECONDS_OR_NULL = {"type": ["number", "null"], "minimum": 0, "maximum": MAX_SECONDS}
_POSITIVE = {"type": "number", "exclusiveMinimum": 0, "maximum": 1e18}
_COUNT = {"type": "integer", "minimum": 0, "maximum": MAX_REQUESTS}
_TOKENS = {"type": "integer", "minimum": 1, "maximum": MAX_TOKENS}
_LOAD = {"type": "array", "minItems": 3, "maxItems": 3, "items": {"type": "number", "minimum": 0, "maximum": 1e5}}
_NICE = {"type": ["integer", "null"], "minimum": -20, "maximum": 19}
_GAUGE = {"type": ["number", "null"], "minimum": 0, "maximum": 1e9}


def _array(items: dict, description: str, most: int = MAX_REQUESTS) -> dict:
    return described({"type": "array", "maxItems": most, "items": items}, description)


RUN = object_schema(
    {
        **provenance_fields("check", "True when every planned load finished.", "Why an incomplete check stopped."),
        "wall_s": described(_SECONDS, "Seconds from start to the last write."),
        "synthetic": described({"type": "boolean"}, "True for test fixtures; such files are never published."),
    },
    ["id", "started_at", "complete", "command"],
    "Provenance of the check.",
    extra=False,
)

HOST = object_schema(
    {
        "name": described(NAME, "The host's CPU model."),
        "slug": described({"type": "string", "pattern": SLUG}, "Directory name for this host, which holds the file."),
        "cpu_model": described(NAME_OR_NULL, "CPU model name."),
        "cpus": described({"type": "integer", "minimum": 1, "maximum": 4096}, "Logical CPUs."),
        "platform": described({"type": "string", "maxLength": 200}, "platform.platform()."),
        "python": described(NAME, "Python version."),
        "torch": described(NAME_OR_NULL, "torch.__version__ of the check's Python."),
        "load_average_start": described(_LOAD, "1, 5 and 15 minute load averages when the check started."),
        "load_average_end": described(_LOAD, "The same when it ended."),
    },
    ["name", "slug", "cpus", "python", "load_average_start"],
    "The machine the engine and the client ran on.",
    extra=False,
)

MODEL_CONFIG = object_schema(
    {
        "architectures": described({"type": "array", "minItems": 1, "maxItems": 4, "items": NAME}, "HF class."),
        "model_type": described(NAME, "HF model type."),
        "hidden_size": described(_TOKENS, "d_model."),
        "intermediate_size": described(_TOKENS, "d_ff."),
        "num_hidden_layers": described({"type": "integer", "minimum": 1, "maximum": 1000}, "Layers."),
        "num_attention_heads": described({"type": "integer", "minimum": 1, "maximum": 10_000}, "Heads."),
        "num_key_value_heads": described({"type": "integer", "minimum": 1, "maximum": 10_000}, "KV heads."),
        "vocab_size": described(_TOKENS, "Vocabulary."),
        "max_position_embeddings": described(_TOKENS, "Context."),
        "tie_word_embeddings": described({"type": "boolean"}, "One matrix for the embedding and the head."),
        "torch_dtype": described(NAME, "The dtype named in the config."),
    },
    [
        "architectures",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "vocab_size",
        "max_position_embeddings",
    ],
    "The config.json the engine loaded (its weights random: --load-format dummy). Other HF keys may appear.",
)

ENGINE = object_schema(
    {
        "name": described({"type": "string", "const": "vLLM"}, "The engine."),
        "version": described(NAME, "vllm.__version__."),
        "device": described({"type": "string", "enum": ["cpu", "cuda"]}, "What the engine ran on."),
        "api": described(TEXT, "How the client reached it."),
        "model": described(NAME, "The decoder's name in this project's registry (benchmarks/llm_models.py)."),
        "model_config": MODEL_CONFIG,
        "kv_space_gib": described({"type": "integer", "minimum": 0, "maximum": 1_000_000}, "VLLM_CPU_KVCACHE_SPACE."),
        "prefix_caching": described({"type": "boolean"}, "Whether prefix caching was on."),
        "client_nice": described(_NICE, "The load client's nice value (null: left as started)."),
    },
    ["name", "version", "device", "api", "model", "model_config", "prefix_caching"],
    "The engine and the model it served.",
    extra=False,
)

MIX = object_schema(
    {"name": described({"type": "string", "pattern": RUN_ID}, "Names the mix."), "label": TEXT},
    ["name", "label"],
    "A length mix the loads drew their requests from.",
    extra=False,
)

_SAMPLED = object_schema(
    {"median_s": described(_POSITIVE, "Median (s)."), "samples_s": _array(_POSITIVE, "Every sample (s).", 10_000)},
    ["median_s", "samples_s"],
    "A timed operation's samples.",
)
CEILINGS = object_schema(
    {
        "threads": described({"type": "integer", "minimum": 1, "maximum": 4096}, "Threads the ceilings ran on."),
        "copy": object_schema(
            {
                "bytes_per_s": described(_POSITIVE, "Bytes read and written per second."),
                "size_bytes": described(_POSITIVE, "Buffer copied."),
                "timing": _SAMPLED,
            },
            ["bytes_per_s"],
            "A large copy.",
        ),
        "matmul": described(
            {
                "type": "object",
                "maxProperties": 8,
                "additionalProperties": object_schema(
                    {
                        "flops_per_s": described(_POSITIVE, "FLOP/s."),
                        "n": described(_POSITIVE, "Matrix size."),
                        "timing": _SAMPLED,
                    },
                    ["flops_per_s"],
                    "A large square matmul in one dtype.",
                ),
            },
            "Per dtype, a large matmul's rate.",
        ),
    },
    ["threads", "copy", "matmul"],
    "This host's ceilings, measured before any engine started (on the engine worker's thread count).",
)

CACHE = object_schema(
    {
        "blocks": described({"type": ["integer", "null"], "minimum": 1, "maximum": 10**9}, "KV blocks made."),
        "block_size": described({"type": ["integer", "null"], "minimum": 1, "maximum": 1_000_000}, "Tokens a block."),
    },
    ["blocks", "block_size"],
    "The KV pool the engine made (its /metrics: vllm:cache_config_info).",
    extra=False,
)

SETTING = object_schema(
    {
        "name": described({"type": "string", "pattern": RUN_ID}, "Names the setting."),
        "max_num_seqs": described({"type": "integer", "minimum": 1, "maximum": 1_000_000}, "Running-sequence cap."),
        "max_num_batched_tokens": described(_TOKENS, "Tokens a step."),
        "chunked_prefill": described({"type": "boolean"}, "--enable-chunked-prefill."),
        "kv_blocks": described({"type": ["integer", "null"], "minimum": 1, "maximum": 10**9}, "Blocks asked for."),
        "dtype": described(NAME, "--dtype."),
        "max_model_len": described({"type": ["integer", "null"], "minimum": 1, "maximum": MAX_TOKENS}, "Length."),
        "port": described({"type": "integer", "minimum": 1, "maximum": 65535}, "Its port on 127.0.0.1."),
        "startup_s": described(_SECONDS, "Launch to the first healthy answer."),
        "api_nice": described(_NICE, "The API server's nice value (null: left as started)."),
        "cache": CACHE,
        "log": described(TEXT, "Its log, relative to this file's directory."),
    },
    ["name", "max_num_seqs", "max_num_batched_tokens", "chunked_prefill", "kv_blocks", "dtype", "startup_s", "cache"],
    "One engine setting: a server of its own.",
    extra=False,
)

REQUESTS = object_schema(
    {
        "prompt_tokens": _array(_TOKENS, "Prompt length."),
        "output_tokens": _array(_TOKENS, "Tokens asked for (ignore_eos: all are generated)."),
        "scheduled_s": _array(_SECONDS_OR_NULL, "The open-loop schedule's time from the load's start; null if closed."),
        "sent_s": _array(_SECONDS, "When it was sent, from the load's start."),
        "token_s": _array(_array(_SECONDS, "Each token's arrival after sending.", MAX_TOKENS), "Per request."),
        "error": _array(NAME_OR_NULL, "Why the request failed; null when every token came."),
    },
    ["prompt_tokens", "output_tokens", "scheduled_s", "sent_s", "token_s", "error"],
    "Every request, in the order sent; the arrays run in parallel.",
    extra=False,
)

GAUGES = object_schema(
    {key: _array(_GAUGE, f"vllm:{key}, sampled.", 100_000) for key in ("running", "waiting", "kv_usage", "preemptions")}
    | {"t_s": _array(_SECONDS, "When each sample was read, from the load's start.", 100_000)},
    ["t_s", "running", "waiting", "kv_usage", "preemptions"],
    "The engine's /metrics gauges over the load: running and waiting requests, KV-cache use (0–1), preemptions.",
    extra=False,
)

LOAD = object_schema(
    {
        "name": described({"type": "string", "pattern": RUN_ID}, "Names the load within the file."),
        "setting": described({"type": "string", "pattern": RUN_ID}, "The engine setting's name."),
        "mix": described({"type": "string", "pattern": RUN_ID}, "The length mix's name."),
        "load": described({"type": "string", "enum": list(LOAD_KINDS)}, "Poisson arrivals, or a closed loop."),
        "rate_per_s": described({"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1e6}, "Poisson rate."),
        "concurrency": described({"type": ["integer", "null"], "minimum": 1, "maximum": 1_000_000}, "Clients."),
        "repeat": described({"type": "integer", "minimum": 0, "maximum": 1000}, "Which repeat (0: the capacity)."),
        "seed": described({"type": "integer", "minimum": 0, "maximum": 2**63}, "Seed of its lengths and schedule."),
        "started_at": described(DATE_TIME, "When it started."),
        "failed": _COUNT,
        "errors": described({"type": "array", "maxItems": 10, "items": TEXT}, "The distinct errors."),
        "requests": REQUESTS,
        "gauges": GAUGES,
    },
    [
        "name",
        "setting",
        "mix",
        "load",
        "rate_per_s",
        "concurrency",
        "repeat",
        "seed",
        "started_at",
        "failed",
        "errors",
        "requests",
        "gauges",
    ],
    "One load on one engine setting.",
    extra=False,
)

_PROBE = {
    "repeat": described({"type": "integer", "minimum": 1, "maximum": 1000}, "Which repeat."),
    "prompt_tokens": _TOKENS,
    "requests": REQUESTS,
}
STEP_CURVE = object_schema(
    {
        "setting": described({"type": "string", "pattern": RUN_ID}, "The engine setting it was measured on."),
        "decode": _array(
            object_schema(
                {**_PROBE, "batch": _TOKENS},
                ["batch", *_PROBE],
                "Sequences decoding at once, started together with equal prompts.",
            ),
            "Decode probes.",
            10_000,
        ),
        "prefill": _array(object_schema(_PROBE, list(_PROBE), "One prompt alone."), "Prefill probes.", 10_000),
        "mixed": _array(
            object_schema(
                {**_PROBE, "decoders": _TOKENS},
                ["decoders", *_PROBE],
                "A prompt sent while decoders stream (the last request).",
            ),
            "Mixed probes.",
            10_000,
        ),
    },
    ["setting", "decode", "prefill", "mixed"],
    "The engine's own step curve, measured from its streamed tokens.",
    extra=False,
)

ENGINE_CHECK_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "batching real-engine check",
    **object_schema(
        {
            "schema_version": described({"type": "integer", "const": VERSION}, "Version of this kind of file."),
            "kind": described({"type": "string", "const": KIND}, "engine-check: an LLM engine measured."),
            "run": RUN,
            "host": HOST,
            "engine": ENGINE,
            "mixes": _array(MIX, "The length mixes.", 100),
            "ceilings": described({"oneOf": [{"type": "null"}, CEILINGS]}, "This host's ceilings."),
            "settings": _array(SETTING, "The engine settings.", 100),
            "step_curve": described({"oneOf": [{"type": "null"}, STEP_CURVE]}, "The step curve, when measured."),
            "loads": _array(LOAD, "The loads.", MAX_LOADS),
            "simulated": described(
                {"type": "object"},
                "What the simulator gave, as the command that measured wrote "
                "it (not read back: a reader replays the loads itself).",
            ),
        },
        ["schema_version", "kind", "run", "host", "engine", "mixes", "ceilings", "settings", "step_curve", "loads"],
        "One check of an LLM engine on one host.",
        extra=False,
    ),
}


def _requests_rules(path: str, requests: dict[str, Any]) -> list[tuple[str, str]]:
    n = len(requests["prompt_tokens"])
    for name, values in requests.items():
        if len(values) != n:
            return [(f"{path}.{name}", f"has {len(values)} items, but prompt_tokens has {n}")]
    if n == 0:
        return [(f"{path}.prompt_tokens", "must hold at least one request")]
    for i in range(n):
        tokens, error = requests["token_s"][i], requests["error"][i]
        if error is None and len(tokens) != requests["output_tokens"][i]:
            return [
                (
                    f"{path}.token_s[{i}]",
                    f"holds {len(tokens)} tokens, but output_tokens is "
                    f"{requests['output_tokens'][i]} and no error is given",
                )
            ]
        if error is not None and tokens:
            return [(f"{path}.token_s[{i}]", "must be empty for a failed request")]
        if any(b < a for a, b in itertools.pairwise(tokens)):
            return [(f"{path}.token_s[{i}]", "must not go back in time")]
    return []


def engine_check_rules(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """What the schema cannot say: names used once, loads naming a setting and a mix the file has, a rate for a
    Poisson load and clients for a closed one, parallel arrays of equal length, tokens in order, dates in order."""
    from benchmarks.contract.rules import date_problems

    problems = list(date_problems(doc["run"]))
    settings = [s["name"] for s in doc["settings"]]
    mixes = [m["name"] for m in doc["mixes"]]
    for what, names in (("settings", settings), ("mixes", mixes)):
        for index, name in enumerate(names):
            if names.index(name) != index:
                problems.append((f"{what}[{index}].name", f"{name!r} is also {what}[{names.index(name)}]'s"))
    curve = doc["step_curve"]
    if curve is not None:
        if curve["setting"] not in settings:
            problems.append(("step_curve.setting", f"names no setting of the file ({curve['setting']!r})"))
        for part in ("decode", "prefill", "mixed"):
            for index, probe in enumerate(curve[part]):
                problems += _requests_rules(f"step_curve.{part}[{index}].requests", probe["requests"])
    seen: dict[str, int] = {}
    for index, load in enumerate(doc["loads"]):
        path = f"loads[{index}]"
        if load["name"] in seen:
            problems.append((f"{path}.name", f"is also loads[{seen[load['name']]}]'s"))
        seen.setdefault(load["name"], index)
        if load["setting"] not in settings:
            problems.append((f"{path}.setting", f"names no setting of the file ({load['setting']!r})"))
        if load["mix"] not in mixes:
            problems.append((f"{path}.mix", f"names no mix of the file ({load['mix']!r})"))
        poisson = load["load"] == "poisson"
        if poisson != (load["rate_per_s"] is not None) or poisson == (load["concurrency"] is not None):
            problems.append(
                (f"{path}.rate_per_s", "a Poisson load has a rate and no concurrency; a closed one the reverse")
            )
        problems += _requests_rules(f"{path}.requests", load["requests"])
        failed = sum(e is not None for e in load["requests"]["error"])
        if failed != load["failed"]:
            problems.append((f"{path}.failed", f"must count the failed requests ({failed}), got {load['failed']}"))
        gauges = load["gauges"]
        for key, values in gauges.items():
            if len(values) != len(gauges["t_s"]):
                problems.append((f"{path}.gauges.{key}", f"has {len(values)} items, but t_s has {len(gauges['t_s'])}"))
        if problems:
            break
    return problems


@dataclass(eq=False)
class EngineCheck:
    """One validated engine check and where it came from."""

    path: Path
    doc: dict[str, Any]

    @property
    def id(self) -> str:
        return self.doc["run"]["id"]

    @property
    def synthetic(self) -> bool:
        return bool(self.doc["run"].get("synthetic", False))

    @property
    def complete(self) -> bool:
        return bool(self.doc["run"]["complete"])

    @property
    def started(self) -> datetime:
        return instant(self.doc["run"]["started_at"])

    @property
    def loads(self) -> list[dict[str, Any]]:
        return self.doc["loads"]

    def setting(self, name: str) -> dict[str, Any]:
        return next(s for s in self.doc["settings"] if s["name"] == name)


ENGINE_CHECK_KIND = DocumentKind(
    KIND, VERSION, ENGINE_CHECK_SCHEMA, engine_check_rules, "real-engine checks", EngineCheck
)


def read_engine_check(path: Path | str, *, layout: bool = True) -> EngineCheck:
    """Parse and validate one engine-check file, or raise ResultsError naming the file and the field. With `layout`,
    it must sit at `<host slug>/<id>.json`."""
    return ENGINE_CHECK_KIND.read(path, layout=layout)


def newest_engine_check(directory: Path | None = None) -> EngineCheck | None:
    """The check the site and `calibrate` show, read strictly: of the measurements (synthetic files never), the newest
    complete one with a step curve; failing that, the newest with any loads."""
    root = directory or DEFAULT_ENGINE_DIR
    if not root.is_dir():
        return None
    found = [read_engine_check(p) for p in sorted(root.glob("*/*.json"))]
    found = [c for c in found if not c.synthetic and c.loads and c.doc["step_curve"] is not None]
    return max(found, key=lambda c: (c.complete, c.started, c.id), default=None)
