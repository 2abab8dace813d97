"""Forecasts: the roofline's ceiling turned into the time a deployed system takes, by a few efficiencies fitted to
the figures others published, and the error to expect, cross-validated one source at a time.

The ceiling of a call is the sum of its operations' rooflines, each max(FLOPs / peak, bytes / bandwidth)
(`benchmarks.analysis.roofline.predict`). The forecast keeps each operation's bound and divides its time by the share of
that resource deployed software reaches, then adds a fixed cost per call:

    t = Σ_memory-bound ops (bytes / BW) / η_memory + Σ_compute-bound ops (FLOPs / F) / η_compute + fixed

The efficiencies belong to a kind of software and a precision, not to a figure: one set for each of three families
of work (a language model's steps, a CNN's calls, matrix products) in each of two precisions (16-bit or wider,
8-bit), so at most 3 × 2 × 3 numbers for every figure and every tool. They are fitted by least squares on the log
of forecast ÷ published (a factor too high weighs as much as a factor too low), each source weighing the same
however many figures it published (a table of eight rows does not outvote a post with one). A term the
figures of a group cannot tell apart (under a quarter of the time of fewer than two of them) is not fitted but
borrowed: from the other precision of the same family, else the median of the groups that fitted it. A forecast
never beats its ceiling (η ≤ 1).

Leave-one-source-out: each figure is forecast by the efficiencies fitted without every figure of its source, and
its error is forecast ÷ published − 1. The expected error of a kind of work (decode, prefill, CNN, matrix product)
is the median and the 90th percentile (nearest rank) of the absolute errors of its figures; it is also given apart
for the figures of a model on one GPU and of one split over GPUs (tensor parallel), and a tool prints its own case's.
The committed result of the fit is read and written by `calibration_file`.

Pure Python: nothing on this module's import path may import torch or numpy.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.roofline.predict import PredictedPoint
from benchmarks.contract.errors import UserError
from benchmarks.contract.percentiles import nearest_rank
from benchmarks.gpus import BYTES_PER_ELEMENT

LLM, CNN, MATMUL = "language model", "CNN", "matrix product"
FAMILIES = (LLM, CNN, MATMUL)
WIDE, NARROW = "16-bit or wider", "8-bit"
PRECISIONS = (WIDE, NARROW)
DECODE, PREFILL, GEMM = "decode", "prefill", "GEMM"
KINDS = (DECODE, PREFILL, CNN, GEMM)  # the kinds of work an expected error is given for
ONE_GPU, TENSOR_PARALLEL = "one GPU", "tensor parallel"
SCOPES = (ONE_GPU, TENSOR_PARALLEL)  # each kind's error is also given apart for a model on one GPU and split over n
TERMS = ("memory", "compute", "fixed_s")
TERM_WORDS = {
    "memory": "share of the datasheet bandwidth reached where an operation is memory-bound",
    "compute": "share of the datasheet FLOP/s reached where an operation is compute-bound",
    "fixed_s": "fixed cost of every step or call, seconds (launches, scheduling, sampling)",
}
MIN_SHARE = 0.25  # a term is fitted when it takes at least this share of the time of MIN_FIGURES figures
MIN_FIGURES = 2
LOW_ETA, MAX_FIXED_S = 0.05, 0.05  # the search's bounds: η in [LOW_ETA, 1], a fixed cost up to MAX_FIXED_S


class CalibrationError(UserError):
    """A calibration file that cannot be used: its path, the field and what is wrong, in one line."""


def precision_of(dtype: str) -> str:
    return NARROW if BYTES_PER_ELEMENT.get(dtype, 2) < 2 else WIDE


def family_of(workload: str) -> str:
    """The family of software a workload's forecast borrows its efficiencies from."""
    if workload == "decode":
        return LLM
    if workload in ("resnet50", "conv"):
        return CNN
    return MATMUL  # a Linear layer, an MLP, a mixture of experts' FFN: matrix products


def kind_of(workload: str, params: Mapping[str, Any]) -> str:
    """The kind of work whose cross-validated error a forecast of this workload is given with."""
    if workload == "decode":
        return PREFILL if params.get("phase") == "prefill" else DECODE
    return CNN if family_of(workload) == CNN else GEMM


def scope_of(tensor_parallel: int) -> str:
    """Which expected error a configuration takes: one GPU's, or that of a model split over several."""
    return TENSOR_PARALLEL if tensor_parallel > 1 else ONE_GPU


def group_name(family: str, precision: str) -> str:
    return f"{family}, {precision}"


# --------------------------------------------------------------------------- the forecast of one call


@dataclass(frozen=True)
class Parts:
    """A ceiling split by what bounds it: seconds of memory-bound and of compute-bound operations, and calls."""

    memory_s: float
    compute_s: float
    calls: float
    link_s: float = 0.0  # time on the link between GPUs (tensor-parallel all-reduces): modelled, not scaled

    @property
    def seconds(self) -> float:
        return self.memory_s + self.compute_s + self.link_s

    def __add__(self, other: Parts) -> Parts:
        return Parts(self.memory_s + other.memory_s, self.compute_s + other.compute_s, self.calls + other.calls,
                     self.link_s + other.link_s)  # fmt: skip


NO_PARTS = Parts(0.0, 0.0, 0)


def point_parts(point: PredictedPoint) -> Parts:
    """The ceiling of one predicted call split by bound, operation by operation where it has several; an
    operation's time on the link between GPUs is kept apart (the all-reduce model has its own latency)."""
    memory = compute = link = 0.0
    for op in point.operations or ():
        core = max(op.compute_s, op.memory_s)
        if op.compute_s >= op.memory_s:
            compute += core
        else:
            memory += core
        link += getattr(op, "link_s", 0.0)
    if not point.operations:
        compute, memory = (point.roofline_s, 0.0) if point.compute_s >= point.memory_s else (0.0, point.roofline_s)
    return Parts(memory, compute, 1, link)


def total_parts(points: Iterable[PredictedPoint]) -> Parts:
    found = NO_PARTS
    for point in points:
        found = found + point_parts(point)
    return found


@dataclass(frozen=True)
class Efficiency:
    memory: float
    compute: float
    fixed_s: float

    def seconds(self, parts: Parts) -> float:
        return parts.memory_s / self.memory + parts.compute_s / self.compute + parts.link_s + parts.calls * self.fixed_s

    def step_seconds(self, memory_s: float, compute_s: float) -> float:
        """One step or call whose ceiling is `memory_s` memory-bound plus `compute_s` compute-bound seconds."""
        return memory_s / self.memory + compute_s / self.compute + self.fixed_s


CEILING = Efficiency(1.0, 1.0, 0.0)


# --------------------------------------------------------------------------- published figures as the fit sees them


@dataclass(frozen=True)
class PublishedFigure:
    """One published figure: its ceiling split by bound, the ceiling's value and the published one, in its unit.

    `time_like`: the figure is a time (it grows with the step time), else a rate (it shrinks). `ceiling_extra_s`:
    seconds the ceiling counts beyond `parts` (a simulator's own default fixed cost per step), replaced by the
    forecast's fixed cost. `fit`: whether the fit may use it; `note` says why not."""

    id: str
    source: str
    kind: str
    family: str
    precision: str
    gpu: str
    parts: Parts
    ceiling: float
    published: float
    unit: str
    time_like: bool
    fit: bool
    note: str = ""
    ceiling_extra_s: float = 0.0
    tensor_parallel: int = 1  # the GPUs one copy of the model is split over (1: one GPU, or copies side by side)

    @property
    def scope(self) -> str:
        return scope_of(self.tensor_parallel)

    @property
    def group(self) -> str:
        return group_name(self.family, self.precision)

    def forecast(self, efficiency: Efficiency) -> float:
        """The figure the forecast gives, scaling the ceiling's by the forecast time over the ceiling time."""
        ratio = efficiency.seconds(self.parts) / (self.parts.seconds + self.ceiling_extra_s)
        return self.ceiling * ratio if self.time_like else self.ceiling / ratio

    @property
    def slowdown(self) -> float:
        """How many times the ceiling's time the published system took: 1 at the ceiling itself."""
        return self.published / self.ceiling if self.time_like else self.ceiling / self.published

    def target_seconds(self) -> float:
        """The forecast time at which the forecast equals the published figure."""
        return (self.parts.seconds + self.ceiling_extra_s) * self.slowdown

    def error(self, value: float) -> float:
        return value / self.published - 1


# --------------------------------------------------------------------------- the fit


@dataclass(frozen=True)
class Calibration:
    """The efficiencies of every group, which terms the figures fitted (the rest borrowed), and on how many."""

    efficiencies: dict[str, Efficiency]
    fitted: dict[str, tuple[str, ...]]
    figures: dict[str, int]

    def efficiency(self, family: str, precision: str) -> Efficiency:
        return self.efficiencies[group_name(family, precision)]

    @property
    def parameters(self) -> int:
        """The numbers the figures set (fitted terms over all groups)."""
        return sum(len(terms) for terms in self.fitted.values())


def _shares(figure: PublishedFigure) -> dict[str, float]:
    total = (figure.parts.memory_s + figure.parts.compute_s) or 1.0
    return {"memory": figure.parts.memory_s / total, "compute": figure.parts.compute_s / total}


def free_terms(family: str, chosen: Sequence[PublishedFigure]) -> tuple[str, ...]:
    """The terms the figures of one group can set: a bound's efficiency where it takes at least MIN_SHARE of the
    time of MIN_FIGURES figures; a language model's fixed cost per step where η_memory is fitted on at least
    MIN_FIGURES + 1 figures (a CNN's or a matrix product's calls are long enough for launches not to count)."""
    free = [t for t in ("memory", "compute") if sum(_shares(f)[t] >= MIN_SHARE for f in chosen) >= MIN_FIGURES]
    if family == LLM and "memory" in free and len(chosen) > MIN_FIGURES:
        free.append("fixed_s")
    return tuple(free)


@dataclass(frozen=True)
class _Term:
    """What the loss needs of one figure, computed once per fit: its parts, its target time's log and its weight."""

    memory_s: float
    compute_s: float
    constant_s: float  # the link's time, not scaled
    calls: float
    log_target: float
    weight: float  # 1 / the figures of its source


def _terms(chosen: Sequence[PublishedFigure]) -> tuple[_Term, ...]:
    per_source = Counter(f.source for f in chosen)
    return tuple(
        _Term(
            f.parts.memory_s,
            f.parts.compute_s,
            f.parts.link_s,
            f.parts.calls,
            math.log(f.target_seconds()),
            1 / per_source[f.source],
        )
        for f in chosen
    )


def _loss(values: dict[str, float], terms: Sequence[_Term]) -> float:
    """Σ weight · log(forecast time ÷ target time)², the same as scaling each figure by `Efficiency.seconds`."""
    memory, compute, fixed = values["memory"], values["compute"], values["fixed_s"]
    return sum(
        t.weight
        * (math.log(t.memory_s / memory + t.compute_s / compute + t.constant_s + t.calls * fixed) - t.log_target) ** 2
        for t in terms
    )


def _golden(loss: Callable[[float], float], low: float, high: float, steps: int = 48) -> float:
    ratio = (math.sqrt(5) - 1) / 2
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = loss(c), loss(d)
    for _ in range(steps):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = loss(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = loss(d)
    best = min(((fc, c), (fd, d), (loss(low), low), (loss(high), high)))
    return best[1]


def _best(term: str, values: dict[str, float], chosen: Sequence[_Term]) -> float:
    """The value of one term that minimises the loss, the others held."""
    if term == "fixed_s":
        return _golden(lambda x: _loss({**values, term: x}, chosen), 0.0, MAX_FIXED_S)
    return 1 / _golden(lambda x: _loss({**values, term: 1 / x}, chosen), 1.0, 1 / LOW_ETA)


def fit_group(chosen: Sequence[PublishedFigure], free: Sequence[str], start: Efficiency) -> Efficiency:
    """Least squares on log(forecast ÷ published) over the free terms, the others held at `start`; coordinate
    descent, each η searched on its inverse (time is linear in 1/η) within [1, 1/LOW_ETA]."""
    values = {"memory": start.memory, "compute": start.compute, "fixed_s": start.fixed_s}
    if not chosen or not free:
        return start
    terms = _terms(chosen)
    for _ in range(30):
        before = dict(values)
        for term in free:
            values[term] = _best(term, values, terms)
        if all(abs(values[t] - before[t]) <= 1e-6 * max(abs(before[t]), 1e-9) for t in free):
            break
    return Efficiency(values["memory"], values["compute"], values["fixed_s"])


def _borrowed(term: str, family: str, precision: str, fitted: dict, found: dict) -> float:
    other = group_name(family, next(p for p in PRECISIONS if p != precision))
    if term in fitted.get(other, ()):
        return getattr(found[other], term)
    if term == "fixed_s":
        return 0.0
    values = [getattr(found[g], term) for g, terms in fitted.items() if term in terms]
    return statistics.median(values) if values else 1.0


def fit(figures: Sequence[PublishedFigure]) -> Calibration:
    """Every group's efficiencies from the figures marked `fit` (see the module's docstring)."""
    groups = [(family, precision) for family in FAMILIES for precision in PRECISIONS]
    chosen = {group_name(*g): [f for f in figures if f.fit and (f.family, f.precision) == g] for g in groups}
    fitted = {group_name(*g): free_terms(g[0], chosen[group_name(*g)]) for g in groups}
    found = {name: fit_group(chosen[name], fitted[name], CEILING) for name in chosen}
    for _ in range(2):  # borrow what a group cannot fit, then refit its own terms beside the borrowed ones
        start = {}
        for family, precision in groups:
            name = group_name(family, precision)
            values = {t: getattr(found[name], t) if t in fitted[name] else
                      _borrowed(t, family, precision, fitted, found) for t in TERMS}  # fmt: skip
            start[name] = Efficiency(**values)
        found = {name: fit_group(chosen[name], fitted[name], start[name]) for name in chosen}
    return Calibration(found, fitted, {name: len(chosen[name]) for name in chosen})


# --------------------------------------------------------------------------- cross-validation


@dataclass(frozen=True)
class HeldOutForecast:
    """One figure forecast without its source: the ceiling, the forecast and the published figure, its unit's."""

    figure: PublishedFigure
    forecast: float

    @property
    def error(self) -> float:
        return self.figure.error(self.forecast)


Evaluate = Callable[[PublishedFigure, Calibration], float]


def _forecast(figure: PublishedFigure, calibration: Calibration) -> float:
    return figure.forecast(calibration.efficiency(figure.family, figure.precision))


def leave_one_source_out(
    figures: Sequence[PublishedFigure], evaluate: Evaluate = _forecast, fitter: Callable[..., Calibration] = fit
) -> list[HeldOutForecast]:
    """Every figure forecast by the calibration fitted without its source's figures."""
    outcomes = {}
    for source in dict.fromkeys(f.source for f in figures):
        calibration = fitter([f for f in figures if f.source != source])
        for figure in figures:
            if figure.source == source:
                outcomes[figure.id] = HeldOutForecast(figure, evaluate(figure, calibration))
    return [outcomes[f.id] for f in figures]


@dataclass(frozen=True)
class Expected:
    """The cross-validated error of one kind of work: median and 90th percentile of |forecast ÷ published − 1|."""

    kind: str
    figures: int
    median: float
    p90: float
    within_30: float  # share of the figures within ±30 %
    scope: str | None = None  # ONE_GPU or TENSOR_PARALLEL: over those figures alone; None: over both


def expected(outcomes: Sequence[HeldOutForecast], kind: str | None = None, scope: str | None = None) -> Expected | None:
    """The expected error over the outcomes of `kind` (all of them for None), of one scope (both for None); None
    without any."""
    errors = [
        abs(o.error)
        for o in outcomes
        if (kind is None or o.figure.kind == kind) and (scope is None or o.figure.scope == scope)
    ]
    if not errors:
        return None
    within = sum(e <= 0.30 + 1e-9 for e in errors) / len(errors)
    return Expected(kind or "all", len(errors), statistics.median(errors), nearest_rank(errors, 0.9), within, scope)


def expected_by_source(outcomes: Sequence[HeldOutForecast]) -> list[tuple[str, Expected, float]]:
    """Each source's own (name, expected error, largest |error|), in the order the sources first appear: how the
    error depends on whose system ran, where the pooled median weighs a source by how many figures it published."""
    sources = dict.fromkeys(o.figure.source for o in outcomes)
    found = []
    for source in sources:
        mine = [o for o in outcomes if o.figure.source == source]
        found.append((source, expected(mine), max(abs(o.error) for o in mine)))
    return found


# --------------------------------------------------------------------------- the committed calibration file


# --------------------------------------------------------------------------- words


def percent(value: float) -> str:
    return f"{value * 100:.0f} %"


SCOPE_WORDS = {ONE_GPU: " on one GPU", TENSOR_PARALLEL: " split over GPUs (tensor parallel)", None: ""}


def expected_words(found: Expected | None, kind: str) -> str:
    """'expected error ±14 % median, ±23 % at p90 (over 41 published decode figures on one GPU, each forecast
    without its own source)', or why there is none."""
    if found is None:
        return f"no expected error: no published {kind} figure is in the calibration"
    return (
        f"expected error ±{percent(found.median)} median, ±{percent(found.p90)} at p90 "
        f"(over {found.figures} published {kind} figure{'' if found.figures == 1 else 's'}{SCOPE_WORDS[found.scope]}, "
        "each forecast without its own source)"
    )
