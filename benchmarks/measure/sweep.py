"""Sweep any PyTorch model over batch sizes and say which one to use (`python -m benchmarks sweep`).

The search, with the harness's sampler and backends throughout:

1. measure the device's ceilings (one large copy, one large matmul in the model's dtype) and two small
   probes (the cost of one dispatched operator; the rate small matrix products stream weights at);
2. search: double the batch from 1 until it runs out of memory or fails, passes --max-batch or the
   time limit, or throughput stops growing (under 5 % over two doublings), a few samples each; a
   throughput that stops growing is measured again, with more samples, before it ends the search, and
   the file says why the search stopped;
3. refine: bisect the batch where the latency crosses the budget, below the first batch that failed;
4. probe: one row either side of the multiples of 8, 64 and 128 around the recommendation, where
   tile and wave steps sit, below the first batch that failed; those beyond the largest batch that
   ran go one at a time, up to the first that fails;
5. measure every batch found again, in shared rounds, for the final numbers; bisect again, at the final
   pass's sample count, any gap the final numbers open at the budget crossing; count each batch's FLOPs,
   bytes, operators and peak memory; recommend.

The results file is rewritten after every stage, so an interrupted sweep keeps what it measured. The
time limit bounds the whole command (import, ceilings, counting included) and binds the final pass too:
a batch it takes no sample of keeps its search numbers, and a pass cut short marks the file incomplete,
saying how many samples each point got.
"""

from __future__ import annotations

import math
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from benchmarks.contract.percentiles import nearest_rank
from benchmarks.contract.results import write_atomic
from benchmarks.contract.schema import SCHEMA_VERSION
from benchmarks.measure.adapters import DTYPES
from benchmarks.measure.backends import is_out_of_memory, select_backend
from benchmarks.measure.ceilings import CeilingError, measure_ceilings
from benchmarks.measure.estimate import least_sweep_s
from benchmarks.measure.fingerprint import fingerprint
from benchmarks.measure.model_cost import call_cost, peak_memory
from benchmarks.measure.sampler import PointOutcome, TimedPoint, measure_points
from benchmarks.measure.session import DeviceLock, RunRefused, check_writable, provenance
from benchmarks.measure.sweep_probe import measure_probes
from benchmarks.measure.target import Target, TargetError, load_target, tensors

SEARCH_SAMPLES = 5  # per batch while searching
FINAL_SAMPLES = {50: 15, 90: 30, 99: 100}  # per batch in the final pass, by percentile
FLAT = 0.05  # throughput "stops growing": under this gain over two doublings
PROBE_MULTIPLES = (8, 64, 128)
MAX_BISECTIONS = 8
WARMUP_S = 0.02
RECHECK_SAMPLES = 2 * SEARCH_SAMPLES  # a point that would end the search is measured again with these
COUNT_CALLS = 5  # model calls the counters and the memory peak take per batch, in medians (time reserved)
SEARCH_SHARE = 0.5  # under a time limit, the search stages end by this share of it: the rest is the final pass's


@dataclass
class SweepSettings:
    device: str = "auto"
    dtype: str | None = None  # None: bfloat16 on CUDA, float32 on a CPU
    mode: str = "eager"
    batches: list[int] | None = None  # None: search
    max_batch: int | None = None
    budget_ms: float | None = None
    percentile: int = 50
    time_limit_s: float | None = None
    threads: int | None = None
    input_shape: tuple[int, ...] | None = None
    input_dtype: str | None = None  # of inputs made from input_shape (default: the model's)
    vocab: int | None = None
    results_dir: Path | None = None  # None: keep nothing on disk
    allow_contended: bool = False  # measure even while another measurement holds the device's lock
    train: bool = False  # time a training step (`benchmarks.measure.train_sweep`), not a forward pass
    memory_gb: float | None = None  # a training sweep's memory budget for its recommendation
    command: list[str] = field(default_factory=list)


class Sweep:
    """One sweep in progress: the target, the backend, the document, the measured points."""

    def __init__(
        self, target: Target, backend, settings: SweepSettings, dtype: str, mode: str, say: Callable,
        started: float | None = None, advice: Any = None,
    ):  # fmt: skip
        self.target, self.backend, self.settings, self.advice = target, backend, settings, advice
        self.dtype, self.mode, self.say = dtype, mode, say
        self.points: dict[int, dict] = {}
        self.samples: dict[int, list[float]] = {}
        self.started = time.perf_counter() if started is None else started
        self.deadline = None if settings.time_limit_s is None else self.started + settings.time_limit_s
        self.stopped: str | None = None  # why the search stopped
        self.stage_deadline: float | None = None  # the search stages' own, earlier deadline under a time limit
        self.path: Path | None = None
        self.doc: dict = {}
        self._compiled = None
        self.rows_checked: set[int] = set()  # batches whose output was seen to keep the batch

    # ------------------------------------------------------------------ timing

    def _model(self):
        if self.mode != "compile":
            return self.target.model
        if self._compiled is None:
            self._compiled = torch.compile(self.target.model, dynamic=True)
        return self._compiled

    def _prepare(self, batch: int) -> Callable[[], Callable]:
        def prepare():
            args, kwargs = self.target.make_inputs(batch)
            model = self._model()
            if batch not in self.rows_checked:
                check_rows(model(*args, **kwargs), batch)
                self.rows_checked.add(batch)

            def call():
                model(*args, **kwargs)

            return self.backend.for_mode(call, self.mode)

        return prepare

    def measure(
        self, batches: list[int], stage: str, samples: int, again: bool = False, deadline: float | None = None
    ) -> dict[int, PointOutcome]:
        """Time these batches in shared rounds; record each one's outcome and return them by batch. `again`
        measures batches already measured anew (their new numbers replace the old ones)."""
        todo = [b for b in dict.fromkeys(batches) if b not in self.points or stage == "final" or again]
        if not todo:
            return {}
        # A fresh graph pool for each measurement: the last one's graphs are gone, and capturing into a pool
        # whose graphs all died fails torch's use-count check when the model kept a tensor made in a capture.
        self.backend.new_phase()
        points = [
            TimedPoint("model", b, self._prepare(b), rounds=samples, largest_first=self.mode == "graph") for b in todo
        ]
        with torch.no_grad():
            outcomes = measure_points(
                self.backend, points, rounds=samples, min_sample_s=0.0, warmup_s=WARMUP_S,
                deadline=self._deadline() if deadline is None else deadline,
            )  # fmt: skip
        for batch in todo:
            self._record(batch, outcomes[("model", batch)], stage, replace=again)
        self.save()
        return {batch: outcomes[("model", batch)] for batch in todo}

    def _record(self, batch: int, outcome: PointOutcome, stage: str, replace: bool = False) -> None:
        fewer = self.ok(batch) and _samples(outcome) < len(self.samples[batch])
        if fewer and outcome.status in ("ok", "skipped") and not (replace and outcome.status == "ok"):
            return  # a final pass the time limit cut short: the search's numbers rest on more samples
        stage = self.points[batch]["stage"] if batch in self.points else stage
        if outcome.status != "ok":
            self.points[batch] = {"batch": batch, "stage": stage, "status": outcome.status,
                                  "message": outcome.message, "median_s": None, "percentile_s": None}  # fmt: skip
            return
        samples = outcome.timing["samples_s"]
        self.samples[batch] = samples
        median = outcome.timing["median_s"]
        self.points[batch] = {
            **self.points.get(batch, {}),
            "batch": batch,
            "stage": stage,
            "status": "ok",
            "message": None,
            "median_s": median,
            "percentile_s": nearest_rank(samples, self.settings.percentile / 100),
            "timing": outcome.timing,
            "throughput": batch / median,
        }

    def ok(self, batch: int) -> bool:
        return self.points.get(batch, {}).get("status") == "ok"

    def out_of_time(self, deadline: float | None = None) -> bool:
        deadline = self._deadline() if deadline is None else deadline
        return deadline is not None and time.perf_counter() >= deadline

    def _deadline(self) -> float | None:
        return self.stage_deadline if self.stage_deadline is not None else self.deadline

    def _first_deadline(self) -> float | None:
        """The search's deadline, except for its first batch: when loading and the ceilings took the search's
        share of a time limit, the first batch may still use the final pass's, or the sweep would time nothing."""
        return self._deadline() if any(self.ok(b) for b in self.points) else self.deadline

    def counting_reserve(self) -> float:
        """Seconds to keep for counting every batch after the final pass (a few calls each)."""
        return COUNT_CALLS * sum(p["median_s"] for p in self.points.values() if p["status"] == "ok")

    # ------------------------------------------------------------------ the search

    def search(self) -> None:
        """Double from 1 until out of memory or an error, the largest batch allowed, the time limit, or a
        throughput that stops growing."""
        batch, limit = 1, self.settings.max_batch or 2**24
        self.say(
            f"search: quick timings ({SEARCH_SAMPLES} samples per batch) to steer the search; the final pass measures "
            "every batch again for the table"
        )
        while batch <= limit and not self.out_of_time(self._first_deadline()):
            self.measure([batch], "search", SEARCH_SAMPLES, deadline=self._first_deadline())
            point = self.points[batch]
            self.say(f"search: batch {batch}: " + (f"{point['median_s'] * 1e3:.3g} ms" if self.ok(batch)
                                                   else point["status"]))  # fmt: skip
            if point["status"] in ("oom", "error"):
                self.stopped = (f"out of memory at batch {batch}" if point["status"] == "oom"
                                else f"batch {batch} failed ({(point['message'] or '')[:80]})")  # fmt: skip
                return
            if point["status"] != "ok":
                self.stopped = f"the time limit, before batch {batch} was measured"
                return
            if self._flat(batch):
                first = self._flat_words(batch)
                checked = [batch // 4, batch // 2, batch]
                self.measure(checked, "search", RECHECK_SAMPLES, again=True)
                self.say(f"search: {first}; measured batches {', '.join(map(str, checked))} again")
                if self._flat(batch):
                    self.stopped = f"{self._flat_words(batch)}, measured twice"
                    return
            batch *= 2
        if self.out_of_time():
            share = f" ({SEARCH_SHARE:.0%} of it; the rest is the final pass's)" if self.stage_deadline else ""
            self.stopped = f"the time limit{share}, after batch {batch // 2}"
        else:
            self.stopped = f"the largest batch allowed (--max-batch {limit})"

    def _flat_words(self, batch: int) -> str:
        gain = self.points[batch]["throughput"] / self.points[batch // 4]["throughput"] - 1
        return f"throughput grew {100 * gain:+.0f} % (under {100 * FLAT:.0f} %) from batch {batch // 4} to {batch}"

    def _flat(self, batch: int) -> bool:
        earlier = batch // 4
        if not (self.ok(batch) and earlier >= 1 and self.ok(earlier)):
            return False
        return self.points[batch]["throughput"] < (1 + FLAT) * self.points[earlier]["throughput"]

    def refine(self, samples: int = SEARCH_SAMPLES, bisections: int = MAX_BISECTIONS, deadline=None) -> None:
        """Bisect between the largest batch within the budget and the next one that ran beyond it."""
        budget = self.settings.budget_ms
        if budget is None:
            return
        for _ in range(bisections):
            ok = sorted(b for b in self.points if self.ok(b) and b < (self.first_failure() or math.inf))
            within = [b for b in ok if self.points[b]["percentile_s"] * 1e3 <= budget]
            beyond = [b for b in ok if self.points[b]["percentile_s"] * 1e3 > budget]
            if not within:
                return
            low = max(within)
            high = min((b for b in beyond if b > low), default=None)
            if high is None or high - low <= 1 or self.out_of_time(deadline):
                return
            middle = (low + high) // 2
            self.measure([middle], "refine", samples, deadline=deadline)
            self.say(f"refine: batch {middle}")

    def probe(self) -> None:
        """One row either side of the multiples of 8, 64 and 128 next to the recommended batch (within a
        factor of two of it)."""
        measured = sorted(b for b in self.points if self.ok(b))
        if not measured or self.out_of_time():
            return
        centre = self._centre(measured)
        ceiling = self._probe_ceiling()
        wanted = set()
        for multiple in PROBE_MULTIPLES:
            below = centre // multiple * multiple
            for m in {below, below + multiple}:
                if m >= multiple and centre / 2 <= m <= 2 * centre:  # near the answer, not far beyond it
                    wanted |= {m - 1, m, m + 1}
        wanted = sorted(b for b in wanted if 1 <= b <= ceiling and b not in self.points)
        if not wanted:
            return
        self.say(f"probe: batches {', '.join(map(str, wanted))}")
        self.measure([b for b in wanted if b < measured[-1]], "probe", SEARCH_SAMPLES)
        for batch in (b for b in wanted if b > measured[-1]):  # untried ground: stop at the first failure
            self.measure([batch], "probe", SEARCH_SAMPLES)
            if not self.ok(batch) or self.out_of_time():
                return

    def first_failure(self) -> int | None:
        """The smallest batch that ran out of memory or raised: the search goes no further."""
        return min((b for b, p in self.points.items() if p["status"] in ("oom", "error")), default=None)

    def _probe_ceiling(self) -> int:
        """The largest batch a probe may try: --max-batch, and below the first batch that failed."""
        failure = self.first_failure()
        return min(self.settings.max_batch or 2**24, failure - 1 if failure else 2**24)

    def _centre(self, measured: list[int]) -> int:
        points = [self._sweep_point(b) for b in measured]
        rec = self.advice.recommend(points, [], self.settings.budget_ms, self.settings.percentile, None)
        chosen = rec.within_budget or rec.near_best
        return chosen.batch if chosen else measured[-1]

    def _sweep_point(self, batch: int) -> Any:
        p = self.points[batch]
        timing = p["timing"]
        return self.advice.SweepPoint(batch, p["median_s"], p["percentile_s"], tuple(timing["samples_s"]),
                                    timing["q1_s"], timing["q3_s"])  # fmt: skip

    def final(self) -> str | None:
        """Every batch that ran, measured again in shared rounds, then counted. Returns how the time
        limit cut the pass short, or None when every batch got the samples asked for."""
        batches = sorted(b for b in self.points if self.ok(b))
        if not batches:
            return None
        asked = FINAL_SAMPLES[self.settings.percentile]
        self.say(f"final: measuring {len(batches)} batch sizes again, {asked} samples each")
        end = None if self.deadline is None else self.deadline - self.counting_reserve()
        outcomes = self.measure(batches, "final", asked, deadline=end)
        if self.settings.batches is None:  # a gap the final numbers open at the budget crossing: bisect it
            self.refine(asked, deadline=end)
        uncounted = []
        for batch in sorted(b for b in self.points if self.ok(b)):
            needs = COUNT_CALLS * self.points[batch]["median_s"]
            if self.deadline is not None and time.perf_counter() + needs > self.deadline:
                uncounted.append(batch)
                continue
            self._count(batch)
        if uncounted:
            self.say(f"counting: the time limit left batches {', '.join(map(str, uncounted))} uncounted")
        self.save()
        taken = [_samples(o) for b, o in outcomes.items() if o.status == "ok" and self.points[b]["timing"] is o.timing]
        kept = [b for b, o in outcomes.items() if self.ok(b) and self.points[b]["timing"] is not o.timing]
        shortfall = cut_short(asked, taken, kept) if self.deadline is not None else None
        if shortfall:
            self.say(f"final: {shortfall}; the file is marked incomplete")
        return shortfall

    def _count(self, batch: int) -> None:
        args, kwargs = self.target.make_inputs(batch)
        try:
            cost = call_cost(self.target.model, args, kwargs, self.backend.device)
            self.points[batch].update(
                flops=cost.flops, bytes_low=cost.bytes_low, bytes_high=cost.bytes_high, ops=cost.ops,
                uncounted=[{"op": op, "time_share": share} for op, share in cost.uncounted],
            )  # fmt: skip
            self._count_notes(cost)
        except Exception as exc:  # a counter that cannot follow the model costs the counts, not the point
            self.say(f"counting FLOPs and bytes at batch {batch} failed: {type(exc).__name__}: {exc}"[:200])
        try:
            self.points[batch]["peak_memory_bytes"] = peak_memory(self.target.model, args, kwargs, self.backend.device)
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise

    def _count_notes(self, cost) -> None:
        notes = self.doc["model"]["notes"]
        if cost.fast_paths:
            note = (f"FLOPs and bytes counted with PyTorch's fast paths off ({', '.join(cost.fast_paths)} hide their "
                    "work from the counter); the outputs agree with the fast path's")  # fmt: skip
        elif cost.fast_path_problem:
            note = f"the fast paths could not be counted with them off: {cost.fast_path_problem}"
        else:
            return
        if note not in notes and len(notes) < 20:
            notes.append(note)

    # ------------------------------------------------------------------ the file

    def start_document(self, ceilings: dict, probes: dict | None = None) -> None:
        settings = self.settings
        started = datetime.now(timezone.utc)
        commit, dirty = provenance()
        device = fingerprint(self.backend)  # as run_sweep took it to lock the device
        sweep_id = f"{started:%Y%m%dT%H%M%SZ}-sweep-{secrets.token_hex(3)}"
        self.doc = {
            "schema_version": SCHEMA_VERSION,
            "kind": "sweep",
            "run": {
                "id": sweep_id,
                "started_at": started.isoformat(timespec="seconds"),
                "finished_at": None,
                "complete": False,
                "interrupted": None,
                "command": settings.command,
                "git_commit": commit,
                "git_dirty": dirty,
                **({"time_limit_s": settings.time_limit_s} if settings.time_limit_s else {}),
            },
            "device": device,
            "ceilings": ceilings,
            **({"probes": probes} if probes else {}),
            "model": {
                "target": self.target.spec,
                "name": self.target.name,
                "parameters": self.target.parameters(),
                "weight_bytes": self.target.weight_bytes(),
                "dtype": self.dtype,
                "mode": self.mode,
                "mode_requested": settings.mode,
                "input": self.target.input_words,
                "notes": list(self.target.notes),
            },
            "settings": {
                "percentile": settings.percentile,
                "budget_ms": settings.budget_ms,
                "batches": settings.batches or "auto",
                "max_batch": settings.max_batch,
                "samples": FINAL_SAMPLES[settings.percentile],
                "samples_asked": FINAL_SAMPLES[settings.percentile],
            },
            "points": [],
            "recommendation": None,
        }
        if settings.results_dir is not None:
            self.path = settings.results_dir / device["slug"] / f"{sweep_id}.json"
        self.save()

    def save(self) -> None:
        self.doc["points"] = [self.points[b] for b in sorted(self.points)]
        counts = [len(p["timing"]["samples_s"]) for p in self.doc["points"] if p["status"] == "ok"]
        self.doc["settings"]["samples"] = min(counts, default=self.doc["settings"]["samples_asked"])
        self.doc["run"]["wall_s"] = max(time.perf_counter() - self.started, 1e-6)
        if self.stopped:
            self.doc["run"]["search_stopped"] = self.stopped
        if self.path is not None:
            write_atomic(self.path, self.doc)

    def finish(self, interrupted: str | None = None) -> Any:
        rec = self.advice.from_document(self.doc | {"points": [self.points[b] for b in sorted(self.points)]})
        self.doc["recommendation"] = rec.as_dict()
        self.doc["run"]["complete"] = interrupted is None
        self.doc["run"]["interrupted"] = interrupted
        self.doc["run"]["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.save()
        return rec


def _say(text: str) -> None:
    sys.stderr.write(f"{text}\n")


def run_sweep(
    spec: str, settings: SweepSettings, advice: Any, say: Callable[[str], None] = _say, model=None, make_input=None,
    started: float | None = None, on_file: Callable[[Path], None] | None = None,
):  # fmt: skip
    """Load the target, search, measure, recommend; return the Sweep and its Recommendation. `advice` is the
    analysis that reads measured points (benchmarks.analysis.roofline.recommend, given by the command: measuring never
    imports analysis); the search asks it where the budget crossing lies. `started` (a time.perf_counter()
    value) is when the command began: the time limit counts from it.
    On KeyboardInterrupt the file is kept, marked incomplete, and the interrupt goes on up. `on_file(path)` is
    called once the results file is first written (a watching process then knows where it is)."""
    started = time.perf_counter() if started is None else started  # the limit covers the ceilings too
    backend = select_backend(settings.device, settings.threads)
    dtype = settings.dtype or ("bfloat16" if backend.kind == "cuda" else "float32")
    mode = settings.mode
    limit = settings.time_limit_s
    if limit is not None and limit < least_sweep_s(backend.kind, dtype):
        raise RunRefused(
            f"--time-limit {limit:g}: too short to measure anything; the smallest useful limit is "
            f"{math.ceil(least_sweep_s(backend.kind, dtype))} s (the ceilings and the first batches)"
        )
    device = fingerprint(backend)
    if settings.results_dir is not None:
        check_writable(settings.results_dir / device["slug"])  # refused now, not after the sweep
    notes = []
    if mode not in backend.modes:
        notes.append(f"mode {mode} needs CUDA: measured eager instead")
        mode = "eager"
    target = load_target(
        spec, backend.device, DTYPES[dtype], input_shape=settings.input_shape, vocab=settings.vocab,
        input_dtype=DTYPES.get(settings.input_dtype or dtype), model=model, make_input=make_input,
        train=settings.train,
    )  # fmt: skip
    target.notes.extend(notes)
    check_contract(target, spec, first_batches(settings))
    if mode == "compile":
        mode = _compiles(target, notes_to=target.notes)
    for note in target.notes:
        say(f"note: {note}")
    lock = DeviceLock(device["slug"])
    contended = lock.acquire(settings.allow_contended)
    try:
        return _locked_sweep(target, backend, settings, dtype, mode, say, started, contended, lock, advice, on_file)
    finally:
        lock.release()


def _locked_sweep(target, backend, settings, dtype, mode, say, started, contended, lock, advice, on_file=None):
    """The sweep itself, once the device is locked; its time limit counts from the command's start."""
    limit = settings.time_limit_s
    spent = time.perf_counter() - started
    if limit is not None and spent > limit / 2:
        raise RunRefused(
            f"--time-limit {limit:g}: loading the model and checking its first batches took {spent:.1f} s, over "
            "half the limit, which leaves too little for the ceilings and any batch; give more time"
        )
    say("measuring the ceilings (one large copy, one large matmul)")
    try:
        ceilings = measure_ceilings(backend, [dtype], rounds=5, min_sample_s=0.02, ceilings_only=True,
                                    deadline=None if limit is None else started + limit / 2)  # fmt: skip
    except CeilingError as exc:
        if limit is None:
            raise
        raise RunRefused(f"--time-limit {limit:g}: {exc} within the limit; give more time") from None
    sweep = Sweep(target, backend, settings, dtype, mode, say, started, advice)
    say("measuring two probes (one operator's dispatch; small matrix products' streaming rate)")
    probes = measure_probes(backend, dtype, mode, deadline=sweep.deadline)
    sweep.start_document(ceilings, probes)
    if settings.train:
        from benchmarks.measure.train_sweep import training_record

        sweep.doc["training"] = training_record(target.model, target.make_inputs, DTYPES[dtype].itemsize)
    if on_file is not None and sweep.path is not None:
        on_file(sweep.path)
    if contended:
        sweep.doc["run"]["contended"] = True
    try:
        if sweep.deadline is not None:
            sweep.stage_deadline = sweep.started + SEARCH_SHARE * settings.time_limit_s
        if settings.batches:
            sweep.measure(sorted(settings.batches), "search", SEARCH_SAMPLES)
            sweep.stopped = "the batch sizes asked for (--batches)"
        else:
            sweep.search()
            sweep.refine()
            sweep.probe()
        sweep.stage_deadline = None
        shortfall = sweep.final()
    except KeyboardInterrupt:
        raise SweepStopped(sweep, sweep.finish("KeyboardInterrupt: stopped")) from None
    if lock.joined():
        sweep.doc["run"]["contended"] = True  # another measurement started beside this one
    if not any(sweep.ok(b) for b in sweep.points):  # measured nothing: not complete, and says why
        reasons = [p["message"] for p in sweep.points.values() if p.get("message")]
        shortfall = "measured nothing: no batch size was timed" + (f" (first: {reasons[0]})" if reasons else "")
    return sweep, sweep.finish(shortfall)


def first_batches(settings: SweepSettings) -> list[int]:
    """The batches the model's contract is checked at: the first the sweep measures, and 2 after a first of 1
    (at batch 1 an output that drops or sums the batch still has a first dimension of 1)."""
    first = min(settings.batches) if settings.batches else 1
    limit = settings.max_batch or 2
    return [first, 2] if first == 1 and limit >= 2 else [first]


def check_contract(target: Target, spec: str, batches: list[int]) -> None:
    """The model's contract, checked once before any timing: its output holds a tensor, the first one's first
    dimension is the batch (inputs and outputs carry the batch first), and every floating output is finite.
    A broken contract is refused in one line (TargetError) naming what is wrong."""
    for batch in batches:
        args, kwargs = target.make_inputs(batch)
        try:
            with torch.no_grad():
                out = target.model(*args, **kwargs)
        except Exception as exc:
            if is_out_of_memory(exc) and batch != batches[0]:
                return  # the first batch ran; a larger one that does not fit is the search's to find
            raise TargetError(f"{spec}: the model fails at batch {batch}: {type(exc).__name__}: {exc}"[:300]) from None
        found = tensors(out)
        if not found:
            raise TargetError(f"{spec}: at batch {batch} the model returns {type(out).__name__}, not a tensor")
        first = found[0]
        if first.dim() == 0 or first.shape[0] != batch:
            size = "a scalar" if first.dim() == 0 else f"first dimension {first.shape[0]}"
            raise TargetError(
                f"{spec}: at batch {batch} the output has {size}, not the batch {batch}: the sweep needs the "
                "batch as the first dimension of the output, as of the input"
            )
        bad = [t for t in found if t.is_floating_point() and not bool(torch.isfinite(t).all())]
        if bad:
            raise TargetError(f"{spec}: at batch {batch} the output holds NaN or infinite values")


class BatchShrinks(Exception):
    """The model's output has fewer (or more) rows than its input: it did not compute the whole batch."""


def check_rows(out: Any, batch: int) -> None:
    """Refuse an output whose first tensor's first dimension is not the batch: a model that drops rows at some
    batch sizes would otherwise be credited with throughput it did not deliver."""
    found = tensors(out)
    rows = found[0].shape[0] if found and found[0].dim() > 0 else None
    if rows != batch:
        shown = "no batch dimension" if rows is None else f"{rows} rows"
        raise BatchShrinks(f"the output has {shown} at batch {batch}: not timed, as it does not compute the batch")


def _samples(outcome: PointOutcome) -> int:
    return len(outcome.timing["samples_s"]) if outcome.status == "ok" else 0


def _sizes(count: int) -> str:
    return f"{count} batch size{'s' * (count != 1)}"


def cut_short(asked: int, taken: list[int], kept: list[int]) -> str | None:
    """How the time limit cut the final pass short: the samples the re-measured batches got, and how
    many batches kept their search numbers; None when every batch got all it asked for."""
    parts = []
    if taken and min(taken) < asked:
        low, high = min(taken), max(taken)
        parts.append(f"{_sizes(len(taken))} got {low if low == high else f'{low} to {high}'} of {asked} samples")
    if kept:
        parts.append(f"{_sizes(len(kept))} got fewer than the search's {SEARCH_SAMPLES} samples and keep those")
    if not parts:
        return None
    return f"the time limit cut the final pass short: {'; '.join(parts)}"


class SweepStopped(Exception):
    """Ctrl-C during a sweep: its file is kept, marked incomplete, with what its points support."""

    def __init__(self, sweep: Sweep, recommendation: Any):
        super().__init__("KeyboardInterrupt: stopped")
        self.sweep, self.recommendation = sweep, recommendation


def _compiles(target: Target, notes_to: list[str]) -> str:
    """'compile' when torch.compile handles the model at batch 1, else 'eager' with a note why not."""
    try:
        compiled = torch.compile(target.model, dynamic=True)
        args, kwargs = target.make_inputs(1)
        with torch.no_grad():
            compiled(*args, **kwargs)
    except Exception as exc:
        notes_to.append(f"torch.compile failed ({type(exc).__name__}: {str(exc)[:120]}): measured eager instead")
        return "eager"
    return "compile"
