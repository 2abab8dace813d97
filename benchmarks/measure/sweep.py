"""Sweep any PyTorch model over batch sizes and say which one to use (`python -m benchmarks sweep`).

The search, with the harness's sampler and backends throughout:

1. measure the device's ceilings (one large copy, one large matmul in the model's dtype);
2. search: double the batch from 1 until it runs out of memory or fails, passes --max-batch or the
   time limit, or throughput stops growing (under 5 % over two doublings), a few samples each;
3. refine: bisect the batch where the latency crosses the budget, below the first batch that failed;
4. probe: one row either side of the multiples of 8, 64 and 128 around the recommendation, where
   tile and wave steps sit, below the first batch that failed; those beyond the largest batch that
   ran go one at a time, up to the first that fails;
5. measure every batch found again, in shared rounds, for the final numbers; count each one's FLOPs,
   bytes and peak memory; recommend.

The results file is rewritten after every stage, so an interrupted sweep keeps what it measured. The
time limit binds the final pass too: a batch it takes no sample of keeps its search numbers, and a
pass cut short marks the file incomplete, saying how many samples each point got.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import torch

from benchmarks.analysis import recommend
from benchmarks.contract.results import write_atomic
from benchmarks.contract.schema import SCHEMA_VERSION
from benchmarks.contract.sweep_options import options_problem
from benchmarks.measure.adapters import DTYPES
from benchmarks.measure.backends import is_out_of_memory, select_backend
from benchmarks.measure.ceilings import measure_ceilings
from benchmarks.measure.fingerprint import fingerprint
from benchmarks.measure.model_cost import call_cost, peak_memory
from benchmarks.measure.sampler import Outcome, Point, measure_points
from benchmarks.measure.session import provenance
from benchmarks.measure.target import Target, load_target

SEARCH_SAMPLES = 5  # per batch while searching
FINAL_SAMPLES = {50: 15, 90: 30, 99: 100}  # per batch in the final pass, by percentile
FLAT = 0.05  # throughput "stops growing": under this gain over two doublings
PROBE_MULTIPLES = (8, 64, 128)
MAX_BISECTIONS = 8
WARMUP_S = 0.02


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
    command: list[str] = field(default_factory=list)


def percentile(samples: list[float], q: int) -> float:
    """The q-th percentile by nearest rank (p50 of an even count is the upper middle sample)."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


class Sweep:
    """One sweep in progress: the target, the backend, the document, the measured points."""

    def __init__(self, target: Target, backend, settings: SweepSettings, dtype: str, mode: str, say: Callable):
        self.target, self.backend, self.settings = target, backend, settings
        self.dtype, self.mode, self.say = dtype, mode, say
        self.points: dict[int, dict] = {}
        self.samples: dict[int, list[float]] = {}
        self.started = time.perf_counter()
        self.deadline = None if settings.time_limit_s is None else self.started + settings.time_limit_s
        self.path: Path | None = None
        self.doc: dict = {}
        self._compiled = None

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

            def call():
                model(*args, **kwargs)

            return self.backend.for_mode(call, self.mode)

        return prepare

    def measure(self, batches: list[int], stage: str, samples: int) -> dict[int, Outcome]:
        """Time these batches in shared rounds; record each one's outcome and return them by batch."""
        todo = [b for b in dict.fromkeys(batches) if b not in self.points or stage == "final"]
        if not todo:
            return {}
        # A fresh graph pool for each measurement: the last one's graphs are gone, and capturing into a pool
        # whose graphs all died fails torch's use-count check when the model kept a tensor made in a capture.
        self.backend.new_phase()
        points = [Point("model", b, self._prepare(b), rounds=samples, largest_first=self.mode == "graph") for b in todo]
        with torch.no_grad():
            outcomes = measure_points(
                self.backend, points, rounds=samples, min_sample_s=0.0, warmup_s=WARMUP_S, deadline=self.deadline
            )
        for batch in todo:
            self._record(batch, outcomes[("model", batch)], stage)
        self.save()
        return {batch: outcomes[("model", batch)] for batch in todo}

    def _record(self, batch: int, outcome: Outcome, stage: str) -> None:
        if self.ok(batch) and outcome.status in ("ok", "skipped") and _samples(outcome) < len(self.samples[batch]):
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
            "percentile_s": percentile(samples, self.settings.percentile),
            "timing": outcome.timing,
            "throughput": batch / median,
        }

    def ok(self, batch: int) -> bool:
        return self.points.get(batch, {}).get("status") == "ok"

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    # ------------------------------------------------------------------ the search

    def search(self) -> None:
        """Double from 1 until out of memory or an error, the largest batch allowed, the time limit, or a
        throughput that stops growing."""
        batch, limit = 1, self.settings.max_batch or 2**24
        while batch <= limit and not self.out_of_time():
            self.measure([batch], "search", SEARCH_SAMPLES)
            point = self.points[batch]
            self.say(f"search: batch {batch}: " + (f"{point['median_s'] * 1e3:.3g} ms" if self.ok(batch)
                                                   else point["status"]))  # fmt: skip
            if point["status"] in ("oom", "error"):
                return
            if self._flat(batch):
                return
            batch *= 2

    def _flat(self, batch: int) -> bool:
        earlier = batch // 4
        if not (self.ok(batch) and earlier >= 1 and self.ok(earlier)):
            return False
        return self.points[batch]["throughput"] < (1 + FLAT) * self.points[earlier]["throughput"]

    def refine(self) -> None:
        """Bisect between the largest batch within the budget and the next one that ran beyond it."""
        budget = self.settings.budget_ms
        if budget is None:
            return
        for _ in range(MAX_BISECTIONS):
            ok = sorted(b for b in self.points if self.ok(b) and b < (self.first_failure() or math.inf))
            within = [b for b in ok if self.points[b]["percentile_s"] * 1e3 <= budget]
            beyond = [b for b in ok if self.points[b]["percentile_s"] * 1e3 > budget]
            if not within:
                return
            low = max(within)
            high = min((b for b in beyond if b > low), default=None)
            if high is None or high - low <= 1 or self.out_of_time():
                return
            middle = (low + high) // 2
            self.measure([middle], "refine", SEARCH_SAMPLES)
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
        rec = recommend.recommend(points, [], self.settings.budget_ms, self.settings.percentile, None)
        chosen = rec.within_budget or rec.near_best
        return chosen.batch if chosen else measured[-1]

    def _sweep_point(self, batch: int) -> recommend.SweepPoint:
        p = self.points[batch]
        timing = p["timing"]
        return recommend.SweepPoint(batch, p["median_s"], p["percentile_s"], tuple(timing["samples_s"]),
                                    timing["q1_s"], timing["q3_s"])  # fmt: skip

    def final(self) -> str | None:
        """Every batch that ran, measured again in shared rounds, then counted. Returns how the time
        limit cut the pass short, or None when every batch got the samples asked for."""
        batches = sorted(b for b in self.points if self.ok(b))
        if not batches:
            return None
        asked = FINAL_SAMPLES[self.settings.percentile]
        self.say(f"final: measuring {len(batches)} batch sizes again, {asked} samples each")
        outcomes = self.measure(batches, "final", asked)
        for batch in (b for b in batches if self.ok(b)):
            self._count(batch)
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
            cost = call_cost(self.target.model, args, kwargs, self.target.weight_bytes())
            self.points[batch].update(flops=cost.flops, bytes_low=cost.bytes_low, bytes_high=cost.bytes_high)
        except Exception as exc:  # a counter that cannot follow the model costs the counts, not the point
            self.say(f"counting FLOPs and bytes at batch {batch} failed: {type(exc).__name__}: {exc}"[:200])
        try:
            self.points[batch]["peak_memory_bytes"] = peak_memory(self.target.model, args, kwargs, self.backend.device)
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise

    # ------------------------------------------------------------------ the file

    def start_document(self, ceilings: dict) -> None:
        settings = self.settings
        started = datetime.now(timezone.utc)
        commit, dirty = provenance()
        device = fingerprint(self.backend)
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
            "model": {
                "target": self.target.spec,
                "name": self.target.name,
                "parameters": self.target.parameters(),
                "weight_bytes": self.target.weight_bytes(),
                "dtype": self.dtype,
                "mode": self.mode,
                "mode_requested": settings.mode,
                "input": self.target.input_words,
                "notes": self.target.notes,
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
        if self.path is not None:
            write_atomic(self.path, self.doc)

    def finish(self, interrupted: str | None = None) -> recommend.Recommendation:
        rec = recommend.from_document(self.doc | {"points": [self.points[b] for b in sorted(self.points)]})
        self.doc["recommendation"] = rec.as_dict()
        self.doc["run"]["complete"] = interrupted is None
        self.doc["run"]["interrupted"] = interrupted
        self.doc["run"]["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.save()
        return rec


def _say(text: str) -> None:
    sys.stderr.write(f"{text}\n")


def run_sweep(spec: str, settings: SweepSettings, say: Callable[[str], None] = _say, model=None, make_input=None):
    """Load the target, search, measure, recommend; return the Sweep and its Recommendation.
    On KeyboardInterrupt the file is kept, marked incomplete, and the interrupt goes on up."""
    backend = select_backend(settings.device, settings.threads)
    dtype = settings.dtype or ("bfloat16" if backend.kind == "cuda" else "float32")
    mode = settings.mode
    notes = []
    if mode not in backend.modes:
        notes.append(f"mode {mode} needs CUDA: measured eager instead")
        mode = "eager"
    target = load_target(
        spec, backend.device, DTYPES[dtype], input_shape=settings.input_shape, vocab=settings.vocab,
        input_dtype=DTYPES.get(settings.input_dtype or dtype), model=model, make_input=make_input,
    )  # fmt: skip
    target.notes.extend(notes)
    if mode == "compile":
        mode = _compiles(target, notes_to=target.notes)
    for note in target.notes:
        say(f"note: {note}")
    say("measuring the ceilings (one large copy, one large matmul)")
    ceilings = measure_ceilings(backend, [dtype], rounds=5, min_sample_s=0.02, ceilings_only=True)
    sweep = Sweep(target, backend, settings, dtype, mode, say)
    sweep.start_document(ceilings)
    try:
        if settings.batches:
            sweep.measure(sorted(settings.batches), "search", SEARCH_SAMPLES)
        else:
            sweep.search()
            sweep.refine()
            sweep.probe()
        shortfall = sweep.final()
    except KeyboardInterrupt:
        raise SweepStopped(sweep, sweep.finish("KeyboardInterrupt: stopped")) from None
    return sweep, sweep.finish(shortfall)


def _samples(outcome: Outcome) -> int:
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

    def __init__(self, sweep: Sweep, recommendation: recommend.Recommendation):
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


@dataclass
class SweepResult:
    """What `benchmarks.sweep` returns: the document, its recommendation, where it was written."""

    doc: dict
    recommendation: recommend.Recommendation
    path: Path | None

    @property
    def table(self) -> list[dict]:
        """One row per batch size: its stage, status and numbers."""
        return [{k: v for k, v in p.items() if k != "timing"} for p in self.doc["points"]]

    def charts(self) -> dict:
        """The sweep's Altair charts by name (latency, throughput, memory); needs altair."""
        from benchmarks.site.charts.sweep import sweep_charts

        return dict(sweep_charts(self.doc))

    def report(self, path: Path | str) -> Path:
        """Write the single-file HTML report; needs altair and vl-convert-python."""
        from benchmarks.site.report import write_report

        return write_report(self.doc, path)

    def __str__(self) -> str:
        from benchmarks.site.sweep_table import table_lines

        return "\n".join([*table_lines(self.doc), "", *self.recommendation.lines])


def sweep_model(model, make_input=None, *, quiet: bool = False, **options) -> SweepResult:
    """The Python API behind `benchmarks.sweep`: a model object instead of a TARGET. Options are checked
    as the command line checks them (ValueError, before any work); torch's thread count is restored."""
    if "results_dir" in options and options["results_dir"] is not None:
        options["results_dir"] = Path(options["results_dir"])
    unknown = set(options) - {f.name for f in dataclasses.fields(SweepSettings)} - {"command"}
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(sorted(unknown))}")
    settings = SweepSettings(command=["benchmarks.sweep()"], **options)
    problem = options_problem(dataclasses.asdict(settings), name=str)
    if problem:
        raise ValueError(problem)
    if settings.input_dtype == "int64":
        settings.input_dtype = None  # token ids below the vocabulary
    say = (lambda text: None) if quiet else _say
    spec = f"{type(model).__name__} (a model object)"
    threads = torch.get_num_threads()
    try:
        done, rec = run_sweep(spec, settings, say, model=model, make_input=make_input)
    finally:
        torch.set_num_threads(threads)
    return SweepResult(done.doc, rec, done.path)
