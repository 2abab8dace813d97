"""Serving results others published for language models (benchmarks/published/serving.json), read, checked and
predicted with the continuous-batching simulator.

Each row holds its source, the configuration in the source's words, one figure with its unit, a verbatim quote,
how it was checked, and under `model` what this project simulates to predict it: a published model by name on
a datasheet GPU (n of them in tensor parallel, or n independent copies), the lengths, the load (clients of a
closed loop, or a Poisson rate for all copies together), the engine's settings and which figure of the run to
compare. The file is input like any other: every field is checked and a bad row stops the reader with one line
naming the file and the field.

Ratios are published ÷ predicted in a "higher is better" sense: for a throughput, published tokens/s over
predicted tokens/s; for a time, predicted time over published time. Either way a ratio under 1 says the
published system reached that fraction of what the roofline model allows.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.analysis.published.measurements_file import FieldReader
from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.planning import largest_rate
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.run_result import Budget, Result
from benchmarks.analysis.serving.llm.simulation import simulate
from benchmarks.contract.errors import UserError
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import PublishedModel, find_model

SERVING_FILE = Path(__file__).resolve().parents[2] / "published" / "serving.json"
STATUSES = ("verified", "as reported")
UNITS = ("ms", "tokens/s")
FIGURES = {  # figure -> (unit, what of the run)
    "itl_mean": ("ms", "the mean gap between two tokens of a sequence"),
    "ttft_mean": ("ms", "the mean time to first token"),
    "tpot_mean": ("ms", "the mean time per output token"),
    "tpot_p99": ("ms", "the p99 time per output token"),
    "tokens_per_s": ("tokens/s", "output tokens per second, every copy together"),
    "tokens_per_s_at_budget": ("tokens/s", "output tokens per second at the largest Poisson rate meeting the budget"),
}
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,80}$")
URL = re.compile(r"^https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]*)?$")
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
SOURCE_FIELDS = ("short", "title", "author", "url", "locator", "date")
CONFIGURATION_FIELDS = ("hardware", "model", "precision", "software", "lengths", "load", "parallelism")
ROW_FIELDS = {"id", "source", "configuration", "metric", "value", "unit", "quote", "verification", "model"}
MODEL_FIELDS = {"model", "gpu", "dtype", "tensor_parallel", "copies", "prompt", "output", "load", "requests", "engine",
                "figure", "budget", "assumptions"}  # fmt: skip
ENGINE_FIELDS = {"max_num_seqs", "max_batched_tokens", "chunked_prefill", "reserve", "memory_fraction"}
MAX_REQUESTS = 30_000


class ServingDataError(UserError):
    """A data file that cannot be used: its path, the field and what is wrong, in one line."""


@dataclass(frozen=True)
class Setup:
    """What to simulate for one row."""

    model: PublishedModel
    gpu: str
    dtype: str
    tensor_parallel: int
    copies: int
    prompt: Lengths
    output: Lengths
    clients: int | None
    rate_per_s: float | None  # all copies together
    requests: int
    engine: Engine
    figure: str
    budget: Budget | None
    assumptions: str

    def step(self) -> RooflineStep:
        return RooflineStep(self.model, find_gpu(self.gpu), self.dtype, tensor_parallel=self.tensor_parallel)


@dataclass(frozen=True)
class ServingRow:
    id: str
    source: dict[str, str]
    configuration: dict[str, str]
    metric: str
    value: float
    unit: str
    quote: str
    status: str
    note: str
    setup: Setup


class _ServingFiguresReader(FieldReader):
    error = ServingDataError

    def number(self, value: Any, where: str, high: float = math.inf) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or not 0 < value <= high:
            self.fail(where, f"must be a number above 0{'' if high == math.inf else f' and at most {high:g}'}")
        return float(value)

    def lengths(self, value: Any, where: str, longest: int) -> Lengths:
        if not isinstance(value, dict):
            self.fail(where, "must be an object: {fixed: N} or {lognormal: MEAN, sigma: S, max: N}")
        if "fixed" in value:
            self.mapping(value, where, {"fixed"}, {"fixed"})
            return Lengths.fixed(self.count(value["fixed"], f"{where}.fixed", high=longest))
        self.mapping(value, where, {"lognormal", "sigma", "max"}, {"lognormal", "sigma", "max"})
        top = self.count(value["max"], f"{where}.max", high=longest)
        mean = self.number(value["lognormal"], f"{where}.lognormal", high=top)
        return Lengths.lognormal(mean, self.number(value["sigma"], f"{where}.sigma", high=3), top)

    def setup(self, value: Any, where: str, unit: str) -> Setup:
        value = self.mapping(value, where, MODEL_FIELDS, MODEL_FIELDS - {"budget"})
        model = find_model(self.text(value["model"], f"{where}.model"))
        if model is None:
            self.fail(f"{where}.model", f"{value['model']!r} is not a published model of benchmarks/llm_models.py")
        gpu = find_gpu(self.text(value["gpu"], f"{where}.gpu"))
        if gpu is None:
            self.fail(f"{where}.gpu", f"{value['gpu']!r} is not in the datasheet (benchmarks/gpus.py)")
        if not isinstance(value["dtype"], str) or value["dtype"] not in gpu.peak_flops:
            self.fail(f"{where}.dtype", f"must be one of {', '.join(gpu.peak_flops)}")
        figure = value["figure"]
        if not isinstance(figure, str) or figure not in FIGURES:
            self.fail(f"{where}.figure", f"must be one of {', '.join(FIGURES)}")
        if FIGURES[figure][0] != unit:
            self.fail(f"{where}.figure", f"{figure} is in {FIGURES[figure][0]}, not {unit}")
        load = self.mapping(value["load"], f"{where}.load", {"clients", "rate_per_s"}, set())
        if len(load) != 1:
            self.fail(f"{where}.load", "must give clients or rate_per_s (one of them)")
        clients = self.count(load["clients"], f"{where}.load.clients", high=MAX_REQUESTS) if "clients" in load else None
        rate = self.number(load["rate_per_s"], f"{where}.load.rate_per_s") if "rate_per_s" in load else None
        engine_fields = self.mapping(
            value["engine"], f"{where}.engine", ENGINE_FIELDS, ENGINE_FIELDS - {"memory_fraction", "reserve"}
        )
        engine = Engine(
            max_num_seqs=self.count(engine_fields["max_num_seqs"], f"{where}.engine.max_num_seqs", high=65536),
            max_batched_tokens=self.count(engine_fields["max_batched_tokens"], f"{where}.engine.max_batched_tokens"),
            chunked_prefill=engine_fields["chunked_prefill"] is True,
            reserve=engine_fields.get("reserve", False) is True,
            memory_fraction=self.number(
                engine_fields.get("memory_fraction", 0.9), f"{where}.engine.memory_fraction", 1
            ),
        )
        for flag in ("chunked_prefill", "reserve"):
            if not isinstance(engine_fields.get(flag, False), bool):
                self.fail(f"{where}.engine.{flag}", "must be true or false")
        if engine.problems():
            self.fail(f"{where}.engine", engine.problems()[0])
        budget = None
        if figure == "tokens_per_s_at_budget":
            if "budget" not in value:
                self.fail(f"{where}.budget", "is required for tokens_per_s_at_budget")
            b = self.mapping(value["budget"], f"{where}.budget", {"tpot_ms", "ttft_ms", "percentile"},
                             {"tpot_ms", "ttft_ms", "percentile"})  # fmt: skip
            budget = Budget(self.number(b["tpot_ms"], f"{where}.budget.tpot_ms") / 1e3,
                            self.number(b["ttft_ms"], f"{where}.budget.ttft_ms") / 1e3,
                            self.number(b["percentile"], f"{where}.budget.percentile", high=100))  # fmt: skip
        elif "budget" in value:
            self.fail(f"{where}.budget", "is only for tokens_per_s_at_budget")
        return Setup(
            model, gpu.name, value["dtype"],
            self.count(value["tensor_parallel"], f"{where}.tensor_parallel", high=64),
            self.count(value["copies"], f"{where}.copies", high=4096),
            self.lengths(value["prompt"], f"{where}.prompt", model.max_context),
            self.lengths(value["output"], f"{where}.output", model.max_context),
            clients, rate, self.count(value["requests"], f"{where}.requests", high=MAX_REQUESTS), engine, figure,
            budget, self.text(value["assumptions"], f"{where}.assumptions"),
        )  # fmt: skip

    def row(self, value: Any, where: str) -> ServingRow:
        value = self.mapping(value, where, ROW_FIELDS, ROW_FIELDS)
        self.text(value["id"], f"{where}.id", SLUG, "lower-case letters, digits and hyphens")
        source = self.mapping(value["source"], f"{where}.source", set(SOURCE_FIELDS), set(SOURCE_FIELDS))
        for name in SOURCE_FIELDS:
            self.text(source[name], f"{where}.source.{name}")
        self.text(source["url"], f"{where}.source.url", URL, "an https address")
        self.text(source["date"], f"{where}.source.date", DATE, "a date: YYYY, YYYY-MM or YYYY-MM-DD")
        conf = self.mapping(value["configuration"], f"{where}.configuration", set(CONFIGURATION_FIELDS),
                            set(CONFIGURATION_FIELDS))  # fmt: skip
        for name in CONFIGURATION_FIELDS:
            self.text(conf[name], f"{where}.configuration.{name}")
        checked = self.mapping(value["verification"], f"{where}.verification", {"status", "note"}, {"status", "note"})
        if checked["status"] not in STATUSES:
            self.fail(f"{where}.verification.status", f"must be one of {', '.join(STATUSES)}")
        if value["unit"] not in UNITS:
            self.fail(f"{where}.unit", f"must be one of {', '.join(UNITS)}")
        return ServingRow(
            value["id"], dict(source), dict(conf), self.text(value["metric"], f"{where}.metric"),
            self.number(value["value"], f"{where}.value"), value["unit"],
            self.text(value["quote"], f"{where}.quote", lines=True),
            checked["status"], self.text(checked["note"], f"{where}.verification.note"),
            self.setup(value["model"], f"{where}.model", value["unit"]),
        )  # fmt: skip


def read_serving(path: Path | str = SERVING_FILE) -> list[ServingRow]:
    """Every row of the data file, checked; ServingDataError (one line: file, field, problem) otherwise."""
    return _ServingFiguresReader(Path(path)).rows()


# --------------------------------------------------------------------------- predictions


@dataclass(frozen=True)
class ServingRowCheck:
    row: ServingRow
    predicted: float  # in the row's unit
    result: Result  # the simulated run behind it (one copy)

    @property
    def ratio(self) -> float:
        """The fraction of the model's prediction the published system reached (higher is better)."""
        if self.row.unit == "ms":
            return self.predicted / self.row.value
        return self.row.value / self.predicted


def _figure(setup: Setup, result: Result) -> float:
    if setup.figure == "itl_mean":
        return float(result.itl_s.mean()) * 1e3
    if setup.figure == "ttft_mean":
        return float(result.ttft_s.mean()) * 1e3
    if setup.figure == "tpot_mean":
        return float(result.tpot_s.mean()) * 1e3
    if setup.figure == "tpot_p99":
        return result.percentile("tpot", 99) * 1e3
    return result.tokens_per_s * setup.copies


def predict_row(
    row: ServingRow, seed: int = 0, cache: dict | None = None, step: RooflineStep | None = None
) -> ServingRowCheck:
    """Simulate the row's configuration (one copy) and read its figure; runs shared by rows are simulated once
    when `cache` is given. `step`: a step to simulate in place of the row's ceiling (never cached)."""
    s = row.setup
    if step is not None:
        cache = None
    step = s.step() if step is None else step
    key = (s.model.name, s.gpu, s.dtype, s.tensor_parallel, s.copies, s.prompt, s.output, s.clients, s.rate_per_s,
           s.requests, s.engine, s.budget, seed)  # fmt: skip
    if cache is not None and key in cache:
        result = cache[key]
    elif s.budget is not None:
        start = (s.rate_per_s or 1.0) / s.copies
        _, result = largest_rate(step, s.engine, s.prompt, s.output, s.budget, start, n_requests=s.requests,
                                 seed=seed)  # fmt: skip
        if result is None:
            raise ValueError(f"{row.id}: no load meets the budget in the model")
    else:
        rate = s.rate_per_s / s.copies if s.rate_per_s is not None else None
        result = simulate(step, s.engine, s.prompt, s.output, n_requests=s.requests, rate_per_s=rate,
                          clients=s.clients, seed=seed)  # fmt: skip
    if cache is not None:
        cache[key] = result
    return ServingRowCheck(row, _figure(s, result), result)


def serving_checks(rows: list[ServingRow] | None = None, seed: int = 0) -> list[ServingRowCheck]:
    rows = read_serving() if rows is None else rows
    cache: dict = {}
    return [predict_row(row, seed, cache) for row in rows]
