"""Warm-up, calibration and interleaved sampling of a curve of points on any backend.

Backend-agnostic and torch-free: a backend supplies `time(fn, inner) -> seconds per call`,
`is_oom(exc)` and `release()`. Points are sampled in rounds, each round visiting every
batch size once in a fresh random order, so slow spells on a shared machine spread over all
points instead of bending one part of the curve.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from benchmarks.contract.text import printable
from benchmarks.measure.stats import summarize

MAX_INNER_LOOPS = 100_000


class Backend(Protocol):
    def time(self, fn: Callable[[], Any], inner: int) -> float: ...
    def is_oom(self, exc: BaseException) -> bool: ...
    def release(self) -> None: ...


@dataclass
class PointOutcome:
    """Result of one point: a timing summary when status is ok, else a message."""

    status: str
    timing: dict | None = None
    message: str | None = None


def calibrate(backend: Backend, fn: Callable[[], Any], min_sample_s: float, warmup_s: float) -> int:
    """Warm the call up, then pick how many calls one sample needs to last min_sample_s.

    Warm-up calls go through `backend.time`, which waits for the device: on a GPU, calls
    issued in a bare loop return at once, and a wall-clock deadline would queue far more work
    than it meant to.
    """
    return _calibrate(backend, fn, min_sample_s, warmup_s)[0]


def _calibrate(backend: Backend, fn: Callable[[], Any], min_sample_s: float, warmup_s: float) -> tuple[int, float]:
    """calibrate's calls per sample, and the seconds one call took."""
    deadline = time.perf_counter() + warmup_s
    calls = 0
    while calls < 2 or time.perf_counter() < deadline:
        backend.time(fn, 1)
        calls += 1
    inner = 1
    while True:
        per_call = backend.time(fn, inner)
        if per_call * inner >= min_sample_s / 4 or inner >= MAX_INNER_LOOPS:
            break
        inner = min(MAX_INNER_LOOPS, inner * 8)
    return max(1, min(MAX_INNER_LOOPS, math.ceil(min_sample_s / per_call))), per_call


def _failure(backend: Backend, exc: BaseException, batch: int) -> PointOutcome:
    if backend.is_oom(exc):
        return PointOutcome("oom", message=f"out of memory at batch {batch}: {_first_line(exc)}")
    return PointOutcome("error", message=f"{type(exc).__name__}: {_first_line(exc)}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return printable(text[0])[:300] if text else type(exc).__name__


@dataclass
class TimedPoint:
    """One batch size of one curve, and how to build its timed call."""

    curve: Hashable
    batch: int
    prepare: Callable[[], Callable[[], Any]]
    calls_per_unit: int = 1  # the timed call runs this many units (e.g. weight copies)
    rounds: int | None = None  # samples to take; default: the measurement's rounds
    min_sample_s: float | None = None  # default: the measurement's
    warmup_s: float | None = None  # default: the measurement's
    largest_first: bool = False  # captured into a graph pool its curve shares: see preparation_order


def preparation_order(points: list[TimedPoint]) -> list[TimedPoint]:
    """The order points are prepared in: the curves in turn, one point of each at a time, so that a run
    its time limit cuts short keeps some points of every curve rather than every point of a few.

    Within a curve, batches ascend, except for `largest_first` curves: a graph pool keeps every block
    its captures ever took, and a capture reuses a free block only if it is large enough, so ascending
    captures would each add new blocks (the pool grows to the sum of every batch's activations) while
    descending ones fit into what the largest left (the pool stays near the largest batch's)."""
    curves: dict[Hashable, list[TimedPoint]] = {}
    for point in sorted(points, key=lambda p: (str(p.curve), p.batch)):
        curves.setdefault(point.curve, []).append(point)
    for curve in curves.values():
        if curve[0].largest_first:
            curve.reverse()
    longest = max(map(len, curves.values()), default=0)
    return [curve[i] for i in range(longest) for curve in curves.values() if i < len(curve)]


def takes_sample(round_index: int, wanted: int, rounds: int) -> bool:
    """Spread `wanted` samples evenly over `rounds` rounds (every round when wanted >= rounds)."""
    return (round_index + 1) * wanted // rounds > round_index * wanted // rounds


def measure_points(
    backend: Backend,
    points: list[TimedPoint],
    *,
    rounds: int,
    min_sample_s: float,
    warmup_s: float,
    progress: Callable[[int, int], None] | None = None,
    after_round: Callable[[dict[tuple[Hashable, int], PointOutcome]], None] | None = None,
    seed: int = 0,
    deadline: float | None = None,
) -> dict[tuple[Hashable, int], PointOutcome]:
    """Time every point; return (curve, batch) -> PointOutcome, seconds per unit.

    Each round visits every point once, in a fresh random order, so that all points share
    whatever the machine was doing during the whole measurement. A point that wants fewer
    samples than there are rounds takes them in rounds spread evenly over the measurement.

    Points are prepared in `preparation_order`. An out-of-memory while preparing a batch records `oom`
    there and `skipped` for every larger batch of the same curve not yet prepared; one while sampling
    stops that point alone, which keeps the samples it took (`oom` if it had none). Any other exception
    records `error` for that point alone. Nothing raised escapes except KeyboardInterrupt and
    SystemExit. `after_round` receives the outcomes so far (ok points summarised from the samples
    taken until then), so a caller can save partial results.

    With a `deadline` (a time.perf_counter() value) preparation stops once the prepared points'
    estimated sampling time would reach it, and no round starts that would end after it, judging by
    the last round's length: the measurement ends with fewer samples per point, and a point that got
    none is recorded as skipped, saying why.
    """
    measurement = _Measurement(backend, preparation_order(points), rounds, min_sample_s, warmup_s, progress, deadline)
    measurement.prepare_all()
    measurement.sample_rounds(seed, after_round)
    return measurement.outcomes(final=True)


_Key = tuple[Hashable, int]  # (curve, batch)
_LATE = "not sampled: the run's time limit came before this point's first sample"


class _Measurement:
    """One measure_points call's state: which points are ready to sample, their samples, and every
    point that ended without them (failed, skipped, too late)."""

    def __init__(
        self,
        backend: Backend,
        points: list[TimedPoint],
        rounds: int,
        min_sample_s: float,
        warmup_s: float,
        progress: Callable[[int, int], None] | None,
        deadline: float | None,
    ) -> None:
        self.backend = backend
        self.points = points
        self.rounds = max([rounds, *(p.rounds for p in points if p.rounds)])
        self.min_sample_s = min_sample_s
        self.warmup_s = warmup_s
        self.progress = progress
        self.deadline = deadline
        self.total = len(points) + sum(p.rounds or self.rounds for p in points)  # progress steps
        self.done = 0
        self.ended: dict[_Key, PointOutcome] = {}  # points that will take no more samples and have none to keep
        self.ready: dict[_Key, tuple[TimedPoint, Callable[[], Any], int]] = {}  # point, timed call, calls per sample
        self.stopped: dict[_Key, int] = {}  # points an out-of-memory stopped while sampling: their calls per sample
        self.samples: dict[_Key, list[float]] = {}
        self.late = PointOutcome("skipped", message=_LATE)

    def out_of_time(self, needed: float = 0.0) -> bool:
        return self.deadline is not None and time.perf_counter() + needed > self.deadline

    def step_done(self) -> None:
        self.done += 1
        if self.progress:
            self.progress(min(self.done, self.total), self.total)

    def prepare_all(self) -> None:
        """Prepare and calibrate the points in order, until their estimated sampling time reaches the deadline."""
        planned_s = 0.0  # the estimated sampling time of the points prepared so far
        for point in self.points:
            key = (point.curve, point.batch)
            if key not in self.ended and self.out_of_time(planned_s):
                self.ended[key] = self.late
            elif key not in self.ended:
                planned_s += self.prepare(point)
            self.step_done()

    def prepare(self, point: TimedPoint) -> float:
        """Build one point's timed call and calibrate it; return its estimated sampling time (0 if it failed)."""
        try:
            fn = point.prepare()
            sample_s = self.min_sample_s if point.min_sample_s is None else point.min_sample_s
            warmup_s = self.warmup_s if point.warmup_s is None else point.warmup_s
            inner, per_call = _calibrate(self.backend, fn, sample_s, warmup_s)
        except Exception as exc:
            self.fail(point, exc)
            return 0.0
        key = (point.curve, point.batch)
        self.ready[key] = (point, fn, inner)
        self.samples[key] = []
        return (point.rounds or self.rounds) * max(sample_s, per_call)

    def sample_rounds(self, seed: int, after_round: Callable[[dict[_Key, PointOutcome]], None] | None) -> None:
        """Sample in rounds, starting none that the last round's length says would end after the deadline."""
        rng = random.Random(seed)
        round_s = 0.0
        for round_index in range(self.rounds):
            if self.out_of_time(round_s):
                break
            round_started = time.perf_counter()
            self.sample_round(round_index, rng)
            round_s = time.perf_counter() - round_started
            if after_round:
                after_round(self.outcomes())

    def sample_round(self, round_index: int, rng: random.Random) -> None:
        """One sample of every ready point due in this round, in a fresh random order."""
        order = list(self.ready)
        rng.shuffle(order)
        for key in order:
            if key not in self.ready:
                continue  # dropped earlier in this round
            point, fn, inner = self.ready[key]
            if not takes_sample(round_index, point.rounds or self.rounds, self.rounds):
                continue
            try:
                self.samples[key].append(self.backend.time(fn, inner) / point.calls_per_unit)
            except Exception as exc:
                self.fail(point, exc)
            self.step_done()

    def fail(self, point: TimedPoint, exc: BaseException) -> None:
        """Drop a point that raised. An out-of-memory after some samples stops it and keeps them; else it
        ends as `oom` or `error`, and an out-of-memory also skips its curve's larger batches not yet ready."""
        key = (point.curve, point.batch)
        entry = self.ready.pop(key, None)
        if self.samples.get(key) and self.backend.is_oom(exc):
            self.stopped[key] = entry[2]
            self.backend.release()
            return
        self.ended[key] = _failure(self.backend, exc, point.batch)
        if self.ended[key].status == "oom":
            self.backend.release()
            self.skip_larger(point)

    def skip_larger(self, point: TimedPoint) -> None:
        """Skip the batches of `point`'s curve larger than it that are neither ready to sample nor ended."""
        for other in self.points:
            other_key = (other.curve, other.batch)
            if (
                other.curve == point.curve
                and other.batch > point.batch
                and other_key not in self.ended
                and other_key not in self.ready
            ):
                self.ended[other_key] = PointOutcome(
                    "skipped", message=f"not run: batch {point.batch} ran out of memory"
                )

    def outcomes(self, final: bool = False) -> dict[_Key, PointOutcome]:
        """Every point's outcome so far, sampled points summarised from their samples; when `final`, a
        prepared point that got no sample is skipped as too late."""
        result = dict(self.ended)
        for key, inner in [*((k, v[2]) for k, v in self.ready.items()), *self.stopped.items()]:
            if self.samples[key]:
                result[key] = PointOutcome("ok", timing=summarize(self.samples[key], inner))
            elif final:
                result[key] = self.late
        return result
