"""The results contract of a real-server check (`benchmarks.measure.serving_check`): its JSON Schema, its rules
and its one strict reader.

A serving-check file is one document per check, `<serving dir>/<host slug>/<check id>.json`: the host and
the server (Ray Serve, its version and the settings that shape its batches), the measured curve the
service followed, what a request costs the server by itself (latencies through a replica that does no
work), and one entry per run (a handler style, a policy, a rate and a repeat): every request's schedule,
send time, latency and batch, and every batch the server formed, with its size, start and the time it
ran, measured inside the server.

Like every results file it is input from strangers: every field is checked, and a bad file is refused in
one line naming the file and the field.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

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
from benchmarks.contract.validate import SERVING_CHECK

_PACKAGE = Path(__file__).resolve().parents[1]
# In a checkout, checks are committed beside the code; an installed copy writes under the working directory.
DEFAULT_SERVING_DIR = (
    _PACKAGE / "serving" if (_PACKAGE.parent / "pyproject.toml").is_file() else Path.cwd() / "benchmarks-serving"
)
NAME_OR_NULL = {"type": ["string", "null"], "maxLength": 200}
KIND = SERVING_CHECK
VERSION = 1  # of this kind of file; profile runs and sweeps have their own
SERVICES = ("curve", "model")
HANDLERS = ("awaiting", "blocking")
MAX_RUNS = 500
MAX_REQUESTS = 100_000  # per run
MAX_BATCH = 65_536
MAX_SECONDS = 86_400.0
TOLERANCE_S = 0.05  # a request sent this much before its scheduled time is a clock that went backwards

_SECONDS = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SECONDS}
_OFFSET = {"type": "number", "minimum": -MAX_SECONDS, "maximum": MAX_SECONDS}
_SECONDS_OR_NULL = {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": MAX_SECONDS}
_OFFSET_OR_NULL = {"type": ["number", "null"], "minimum": -MAX_SECONDS, "maximum": MAX_SECONDS}
_COUNT = {"type": "integer", "minimum": 0, "maximum": MAX_REQUESTS}
_BATCH = {"type": "integer", "minimum": 1, "maximum": MAX_BATCH}
_LOAD = {"type": "array", "minItems": 3, "maxItems": 3, "items": {"type": "number", "minimum": 0, "maximum": 1e5}}


def _array(items: dict, description: str, most: int = MAX_REQUESTS) -> dict:
    return described({"type": "array", "maxItems": most, "items": items}, description)


RUN = object_schema(
    {
        **provenance_fields("check", "True when every planned run finished.", "Why an incomplete check stopped."),
        "wall_s": described(_SECONDS, "Seconds from start to the last write."),
        "synthetic": described({"type": "boolean"}, "True for test fixtures; such files are never published."),
    },
    ["id", "started_at", "complete", "command"],
    "Provenance of the check.",
    extra=False,
)

HOST = object_schema(
    {
        "name": described(NAME, "The host's CPU model (the server ran on the CPU)."),
        "slug": described(
            {"type": "string", "pattern": SLUG}, "Directory name for this host; the file must sit in it."
        ),
        "cpu_model": described(NAME_OR_NULL, "CPU model name."),
        "cpus": described({"type": "integer", "minimum": 1, "maximum": 4096}, "Logical CPUs."),
        "platform": described({"type": "string", "maxLength": 200}, "platform.platform()."),
        "python": described(NAME, "Python version."),
        "ray": described(NAME, "ray.__version__."),
        "torch": described(NAME_OR_NULL, "torch.__version__, where the model service ran."),
        "load_average_start": described(_LOAD, "1, 5 and 15 minute load averages when the check started."),
        "load_average_end": described(_LOAD, "The same when it ended: how busy the machine was with other work."),
    },
    ["name", "slug", "cpus", "python", "ray", "load_average_start"],
    "The machine the server and the client ran on.",
    extra=False,
)

SERVER = object_schema(
    {
        "name": described({"type": "string", "const": "Ray Serve"}, "The server."),
        "version": described(NAME, "Its version."),
        "replicas": described({"type": "integer", "minimum": 1, "maximum": 1024}, "Replicas per deployment."),
        "max_ongoing_requests": described(
            {"type": "integer", "minimum": 1, "maximum": 1_000_000},
            "Set explicitly: the default (5) caps every batch at 5.",
        ),
        "max_concurrent_batches": described(
            {"type": "integer", "minimum": 1, "maximum": 1024}, "@serve.batch's setting."
        ),
        "transport": described(TEXT, "How requests reached the replica."),
        "auth_mode": described({"type": "string", "enum": ["disabled", "token"]}, "RAY_AUTH_MODE, set explicitly."),
    },
    ["name", "version", "replicas", "max_ongoing_requests", "max_concurrent_batches", "transport", "auth_mode"],
    "The server and the settings that shape its batches.",
    extra=False,
)

CURVE = object_schema(
    {
        "scale": described(
            {"type": "number", "exclusiveMinimum": 0, "maximum": 1e6}, "The sweep's times were multiplied by this."
        ),
        "source": described(TEXT, "The committed sweep file whose measured samples the service followed."),
        "label": described(TEXT, "What that sweep measured."),
        "batches": _array(
            object_schema(
                {
                    "batch": _BATCH,
                    "samples_s": _array(_SECONDS, "Seconds one call takes at this batch.", 10_000),
                },
                ["batch", "samples_s"],
                "The times the service drew from at one batch size.",
                extra=False,
            ),
            "Per batch size, the times a batch of that size slept for (one drawn at random per batch).",
            MAX_BATCH,
        ),
    },
    ["scale", "source", "label", "batches"],
    "The curve the service followed.",
    extra=False,
)

OVERHEAD = object_schema(
    {
        "rate_per_s": described(_SECONDS, "Poisson rate of the requests."),
        "latency_s": _array(_SECONDS, "Each answered request's latency through a replica that does no work."),
        "failed": _COUNT,
    },
    ["rate_per_s", "latency_s", "failed"],
    "What a request costs the server by itself: proxy, routing and the replica, with no batching and no work.",
    extra=False,
)

REQUESTS = object_schema(
    {
        "scheduled_s": _array(_OFFSET, "When the open-loop schedule sent it, from the start of the run."),
        "sent_s": _array(_OFFSET, "When it was sent (the client may lag its schedule)."),
        "latency_s": _array(_SECONDS_OR_NULL, "Sent to answered; null when it failed."),
        "arrived_s": _array(_OFFSET_OR_NULL, "When the replica took it (the server's clock; the same host)."),
        "batch": _array({"type": ["integer", "null"], "minimum": 0, "maximum": MAX_REQUESTS}, "Index of its batch."),
    },
    ["scheduled_s", "sent_s", "latency_s", "arrived_s", "batch"],
    "Every request of the run, in schedule order; the arrays run in parallel.",
    extra=False,
)

BATCHES = object_schema(
    {
        "size": _array(_BATCH, "Requests in the batch."),
        "start_s": _array(_OFFSET, "When the batch handler started, from the start of the run."),
        "service_s": _array(_SECONDS, "How long the batch handler ran, measured inside the server."),
    },
    ["size", "start_s", "service_s"],
    "Every batch the server formed, in the order answers named them; the arrays run in parallel.",
    extra=False,
)

RUN_FIELDS = ["name", "service", "model", "handler", "max_batch", "max_delay_s", "rate_per_s", "repeat", "seed"]
RUN_FIELDS += ["started_at", "failed", "errors", "requests", "batches"]

RUN_ENTRY = object_schema(
    {
        "name": described({"type": "string", "pattern": RUN_ID}, "Names the run within the file."),
        "service": described({"type": "string", "enum": list(SERVICES)}, "curve: slept along the curve; model: torch."),
        "model": described(NAME_OR_NULL, "The torch model of a model service (path.py:factory)."),
        "handler": described({"type": "string", "enum": list(HANDLERS)}, "Whether the batch handler awaits or blocks."),
        "max_batch": described(_BATCH, "@serve.batch's max_batch_size."),
        "max_delay_s": described(
            {"type": "number", "minimum": 0, "maximum": 3600}, "@serve.batch's batch_wait_timeout_s."
        ),
        "rate_per_s": described(_SECONDS, "The Poisson rate the client offered."),
        "repeat": described({"type": "integer", "minimum": 1, "maximum": 1000}, "Which repeat of this case."),
        "seed": described({"type": "integer", "minimum": 0, "maximum": 2**63}, "Seed of the schedule."),
        "started_at": described(DATE_TIME, "When sending started."),
        "failed": _COUNT,
        "errors": described(
            {"type": "array", "maxItems": 10, "items": TEXT}, "The distinct errors of failed requests."
        ),
        "requests": REQUESTS,
        "batches": BATCHES,
    },
    RUN_FIELDS,
    "One run: a handler style and a policy under one rate.",
    extra=False,
)

SERVING_CHECK_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "batching real-server check",
    **object_schema(
        {
            "schema_version": described({"type": "integer", "const": VERSION}, "Version of this kind of file."),
            "kind": described({"type": "string", "const": KIND}, "serving-check: a dynamic-batching server measured."),
            "run": RUN,
            "host": HOST,
            "server": SERVER,
            "curve": CURVE,
            "overhead": _array(OVERHEAD, "Measurements of the server's own cost per request.", 100),
            "runs": _array(RUN_ENTRY, "The runs.", MAX_RUNS),
        },
        ["schema_version", "kind", "run", "host", "server", "curve", "overhead", "runs"],
        "One check of a dynamic-batching server on one host.",
        extra=False,
    ),
}


def serving_check_rules(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """What the schema cannot say: parallel arrays of equal length, batches that hold the requests that
    name them and no more than max batch, a schedule in order, dates in order, names used once."""
    from benchmarks.contract.rules import date_problems

    problems = list(date_problems(doc["run"]))
    seen_batches = set()
    for index, entry in enumerate(doc["curve"]["batches"]):
        if entry["batch"] in seen_batches:
            problems.append((f"curve.batches[{index}].batch", f"{entry['batch']} is listed twice"))
        seen_batches.add(entry["batch"])
        if not entry["samples_s"]:
            problems.append((f"curve.batches[{index}].samples_s", "must hold at least one time"))
    if not doc["overhead"] or not any(o["latency_s"] for o in doc["overhead"]):
        problems.append(("overhead", "must hold at least one answered request"))
    names: dict[str, int] = {}
    for index, run in enumerate(doc["runs"]):
        path = f"runs[{index}]"
        if run["name"] in names:
            problems.append((f"{path}.name", f"is also runs[{names[run['name']]}]'s"))
        names.setdefault(run["name"], index)
        problems += _run_rules(path, run)
    return problems


def _run_rules(path: str, run: dict[str, Any]) -> list[tuple[str, str]]:
    requests, batches = run["requests"], run["batches"]
    n, m = len(requests["scheduled_s"]), len(batches["size"])
    for name, values in requests.items():
        if len(values) != n:
            return [(f"{path}.requests.{name}", f"has {len(values)} items, but scheduled_s has {n}")]
    for name, values in batches.items():
        if len(values) != m:
            return [(f"{path}.batches.{name}", f"has {len(values)} items, but size has {m}")]
    if n == 0:
        return [(f"{path}.requests.scheduled_s", "must hold at least one request")]
    if (run["service"] == "model") != (run["model"] is not None):
        return [(f"{path}.model", "names the model of a model service, and is null otherwise")]
    members = [0] * m
    failed = 0
    previous = None
    for i in range(n):
        where = f"{path}.requests"
        scheduled, sent = requests["scheduled_s"][i], requests["sent_s"][i]
        if previous is not None and scheduled < previous:
            return [(f"{where}.scheduled_s[{i}]", "must not come before the request scheduled ahead of it")]
        previous = scheduled
        if sent < scheduled - TOLERANCE_S:
            return [(f"{where}.sent_s[{i}]", f"is before its scheduled time ({scheduled:g} s)")]
        answered = [requests[k][i] is not None for k in ("latency_s", "arrived_s", "batch")]
        if any(answered) and not all(answered):
            return [(f"{where}.batch[{i}]", "latency_s, arrived_s and batch are all set or all null")]
        if not answered[0]:
            failed += 1
            continue
        batch = requests["batch"][i]
        if batch >= m:
            return [(f"{where}.batch[{i}]", f"must index a batch (there are {m}), got {batch}")]
        members[batch] += 1
    if failed != run["failed"]:
        return [(f"{path}.failed", f"must count the requests with no answer ({failed}), got {run['failed']}")]
    for k, (count, size) in enumerate(zip(members, batches["size"])):
        if size > run["max_batch"]:
            return [(f"{path}.batches.size[{k}]", f"must not exceed max_batch ({run['max_batch']}), got {size}")]
        if not 1 <= count <= size:
            return [(f"{path}.batches.size[{k}]", f"is {size}, but {count} answered requests name this batch")]
    return []


@dataclass(eq=False)
class ServingCheck:
    """One validated real-server check and where it came from."""

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
        """When the check started, as an aware datetime (never compare the strings)."""
        return instant(self.doc["run"]["started_at"])

    @property
    def answered(self) -> int:
        """Requests the server answered, over every run."""
        return sum(len(r["requests"]["latency_s"]) - r["failed"] for r in self.runs)

    @property
    def runs(self) -> list[dict[str, Any]]:
        return self.doc["runs"]


SERVING_CHECK_KIND = DocumentKind(
    KIND, VERSION, SERVING_CHECK_SCHEMA, serving_check_rules, "real-server checks", ServingCheck
)


def validate_serving_check(doc: Any) -> list[tuple[str, str]]:
    """Every problem of a parsed serving-check document as (field path, message); [] when it is valid."""
    return SERVING_CHECK_KIND.problems(doc)


def read_serving_check(path: Path | str, *, layout: bool = True) -> ServingCheck:
    """Parse and validate one serving-check file, or raise ResultsError naming the file and the field. With
    `layout`, it must sit at `<host slug>/<id>.json`."""
    return SERVING_CHECK_KIND.read(path, layout=layout)
