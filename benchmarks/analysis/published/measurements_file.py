"""The data file of measurements others published (benchmarks/published/measurements.json), read and checked.

Each row holds its source (title, author, address, where in it, date), the configuration in the source's
words, the figure with its unit, a verbatim quote, how it was checked, and under `model` the choices this
project makes to predict the same configuration. The file is input like any other: every field is checked,
an unknown one is refused, and a bad row stops the reader with one line naming the file and the field.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.contract.errors import UserError
from benchmarks.contract.inputs import InputError, read_text_bounded
from benchmarks.contract.text import printable, text_problem
from benchmarks.gpus import find_gpu
from benchmarks.workloads import WORKLOADS

PUBLISHED_FILE = Path(__file__).resolve().parents[2] / "published" / "measurements.json"
MAX_FILE_BYTES = 1_000_000
MAX_TEXT = 1_000  # characters in any one string

STATUSES = ("verified", "partly verified")
KINDS = {  # how a row's figure is predicted, and the units it may be published in
    "decode-step": ("ms/token",),
    "prefill": ("ms",),
    "generation": ("tokens/s", "tokens/s per GPU", "requests/s"),  # per GPU: of n tensor-parallel GPUs, 1/n of it
    "throughput": ("samples/s",),
    "gemm": ("TFLOP/s",),
    "knee": ("batch",),
}
UNITS = tuple(dict.fromkeys(unit for units in KINDS.values() for unit in units))
PARALLELISM = ("none", "tensor", "data")
DEPARTURES = (
    "tensor-parallel", "data-parallel", "int8-weights", "fp8-mixed", "int8-one-byte", "fused-elementwise",
    "latency-bound", "power-limited", "variant-unstated", "variant-inferred", "dtype-unstated", "batch-unstated",
    "batch-inferred", "output-unstated",
)  # fmt: skip
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,80}$")
URL = re.compile(r"^https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]*)?$")
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
SOURCE_FIELDS = ("short", "title", "author", "url", "locator", "date")
CONFIGURATION_FIELDS = ("hardware", "model", "precision", "software", "batch", "lengths", "parallelism")
MODEL_FIELDS = {"kind", "workload", "params", "params_source", "gpu", "dtype", "batch", "gpus", "parallelism",
                "input_tokens", "output_tokens", "departures"}  # fmt: skip
ROW_FIELDS = {"id", "source", "configuration", "metric", "value", "unit", "quote", "verification", "model",
              "not_compared"}  # fmt: skip


class PublishedDataError(UserError):
    """A data file that cannot be used: its path, the field and what is wrong, in one line."""


@dataclass(frozen=True)
class Source:
    short: str  # a name for legends, e.g. "MLPerf Inference v4.0"
    title: str
    author: str
    url: str
    locator: str
    date: str


@dataclass(frozen=True)
class RowModel:
    """How this project predicts a row: a workload of the registry on a datasheet GPU, in one dtype."""

    kind: str
    workload: str
    params: dict[str, Any]
    params_source: str
    gpu: str
    dtype: str
    batch: int
    gpus: int
    parallelism: str
    departures: tuple[str, ...]
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True)
class Measurement:
    id: str
    source: Source
    configuration: dict[str, str]
    metric: str
    value: int | float
    unit: str
    quote: str
    status: str
    note: str
    model: RowModel | None
    not_compared: str | None


class FieldReader:
    """The checks every published-figures file shares: one document, raising `error` at the first problem,
    with the file and the field."""

    error: type[Exception] = Exception

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, message: str):
        raise self.error(printable(f"{self.path}: {where}: {message}"))

    def mapping(self, value: Any, where: str, allowed: set[str], required: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(where, "must be an object")
        for key in value:
            if key not in allowed:
                self.fail(f"{where}.{key}", f"is not a field here (fields: {', '.join(sorted(allowed))})")
        for key in sorted(required):
            if key not in value:
                self.fail(f"{where}.{key}", "is required but missing")
        return value

    def text(
        self, value: Any, where: str, pattern: re.Pattern | None = None, words: str = "", *, lines: bool = False
    ) -> str:
        """Non-empty text of at most MAX_TEXT characters with nothing hidden in it (line breaks only with `lines`,
        for a quotation of several lines), matching `pattern` when one is given."""
        if not isinstance(value, str) or not value.strip():
            self.fail(where, "must be non-empty text")
        if len(value) > MAX_TEXT:
            self.fail(where, f"must be at most {MAX_TEXT} characters")
        hidden = text_problem(value, lines=lines)
        if hidden:
            self.fail(where, hidden)
        if pattern is not None and not pattern.match(value):
            self.fail(where, f"must be {words}")
        return value

    def rows(self) -> list:
        """Every row of the file's `measurements` list, each checked by the subclass's `row`, their ids unique."""
        try:
            doc = json.loads(read_text_bounded(self.path, kind="published-figures file", limit_bytes=MAX_FILE_BYTES))
        except InputError as exc:
            self.fail("(file)", exc.message)
        except (ValueError, RecursionError) as exc:  # ValueError: bad JSON, or a number of thousands of digits
            self.fail("(json)", f"is not JSON: {str(exc)[:120]}")
        doc = self.mapping(doc, "(document)", {"about", "measurements"}, {"about", "measurements"})
        self.text(doc["about"], "about")
        if not isinstance(doc["measurements"], list) or not doc["measurements"]:
            self.fail("measurements", "must be a non-empty list")
        rows = [self.row(item, f"measurements[{index}]") for index, item in enumerate(doc["measurements"])]
        seen: set[str] = set()
        for index, row in enumerate(rows):
            if row.id in seen:
                self.fail(f"measurements[{index}].id", f"{row.id!r} is the id of an earlier row")
            seen.add(row.id)
        return rows

    def row(self, value: Any, where: str) -> Any:
        raise NotImplementedError

    def count(self, value: Any, where: str, low: int = 1, high: int = 2**24) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            self.fail(where, f"must be a whole number from {low} to {high:,}")
        return value


class _MeasurementsReader(FieldReader):
    """Checks one measurements document, raising PublishedDataError at the first problem, with its field."""

    error = PublishedDataError

    def choice(self, value: Any, where: str, choices) -> str:
        if value not in choices:
            self.fail(where, f"must be one of {', '.join(choices)}")
        return value

    def number(self, value: Any, where: str) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
        if not ok:
            self.fail(where, "must be a number above 0")
        return value  # as the source printed it: 5353 stays 5353, 22.0 stays 22.0

    def source(self, value: Any, where: str) -> Source:
        value = self.mapping(value, where, set(SOURCE_FIELDS), set(SOURCE_FIELDS))
        self.text(value["url"], f"{where}.url", URL, "an https address")
        self.text(value["date"], f"{where}.date", DATE, "a date: YYYY, YYYY-MM or YYYY-MM-DD")
        return Source(*(self.text(value[name], f"{where}.{name}") for name in SOURCE_FIELDS))

    def model(self, value: Any, where: str, unit: str) -> RowModel:
        required = MODEL_FIELDS - {"input_tokens", "output_tokens"}
        value = self.mapping(value, where, MODEL_FIELDS, required)
        kind = self.choice(value["kind"], f"{where}.kind", tuple(KINDS))
        if unit not in KINDS[kind]:
            self.fail(f"{where}.kind", f"{kind} compares a figure in {' or '.join(KINDS[kind])}, not {unit}")
        name = self.choice(value["workload"], f"{where}.workload", tuple(WORKLOADS))
        gpu = find_gpu(self.text(value["gpu"], f"{where}.gpu"))
        if gpu is None:
            self.fail(f"{where}.gpu", f"{value['gpu']!r} is not in the datasheet (benchmarks/gpus.py)")
        dtype = self.choice(value["dtype"], f"{where}.dtype", tuple(gpu.peak_flops))
        params = self.params(value["params"], f"{where}.params", name, kind)
        lengths = {}
        if name == "decode" and kind != "knee":
            lengths["input_tokens"] = self.count(value.get("input_tokens"), f"{where}.input_tokens")
            if kind in ("decode-step", "generation"):
                lengths["output_tokens"] = self.count(value.get("output_tokens"), f"{where}.output_tokens")
        departures = value["departures"]
        if not isinstance(departures, list):
            self.fail(f"{where}.departures", "must be a list")
        for index, item in enumerate(departures):
            self.choice(item, f"{where}.departures[{index}]", DEPARTURES)
        gpus = self.count(value["gpus"], f"{where}.gpus", high=4096)
        parallelism = self.choice(value["parallelism"], f"{where}.parallelism", PARALLELISM)
        if (parallelism == "none") != (gpus == 1):
            self.fail(f"{where}.parallelism", "must be none for one GPU, tensor or data for several")
        return RowModel(
            kind, name, params, self.text(value["params_source"], f"{where}.params_source"), gpu.name, dtype,
            self.count(value["batch"], f"{where}.batch"), gpus, parallelism, tuple(departures), **lengths,
        )  # fmt: skip

    def params(self, value: Any, where: str, name: str, kind: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(where, "must be an object")
        spec = WORKLOADS[name]
        full = {**spec.defaults(), **value}
        if name == "decode" and "context" in value:
            self.fail(f"{where}.context", "is set from input_tokens and output_tokens, not given")
        problems = spec.problems(full)
        if problems:
            field, message = problems[0]
            self.fail(f"{where}.{field}", message)
        return full  # what was checked is what is predicted: a parameter left out takes the workload's default

    def row(self, value: Any, where: str) -> Measurement:
        value = self.mapping(value, where, ROW_FIELDS, ROW_FIELDS - {"model", "not_compared"})
        self.text(value["id"], f"{where}.id", SLUG, "lower-case letters, digits and hyphens")
        configuration = self.mapping(
            value["configuration"], f"{where}.configuration", set(CONFIGURATION_FIELDS), set(CONFIGURATION_FIELDS)
        )
        for name in CONFIGURATION_FIELDS:
            self.text(configuration[name], f"{where}.configuration.{name}")
        checked = {"status", "note"}
        verification = self.mapping(value["verification"], f"{where}.verification", checked, checked)
        unit = self.choice(value["unit"], f"{where}.unit", UNITS)
        if ("model" in value) == ("not_compared" in value):
            self.fail(where, "needs a model, or not_compared saying why there is none (not both)")
        return Measurement(
            value["id"],
            self.source(value["source"], f"{where}.source"),
            dict(configuration),
            self.text(value["metric"], f"{where}.metric"),
            self.number(value["value"], f"{where}.value"),
            unit,
            self.text(value["quote"], f"{where}.quote", lines=True),
            self.choice(verification["status"], f"{where}.verification.status", STATUSES),
            self.text(verification["note"], f"{where}.verification.note"),
            self.model(value["model"], f"{where}.model", unit) if "model" in value else None,
            self.text(value["not_compared"], f"{where}.not_compared") if "not_compared" in value else None,
        )


def read_published(path: Path | str = PUBLISHED_FILE) -> list[Measurement]:
    """Every row of the data file, checked; PublishedDataError (one line: file, field, problem) otherwise."""
    return _MeasurementsReader(Path(path)).rows()
