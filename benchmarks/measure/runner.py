"""A whole benchmark run: ceilings, then every sweep, saved atomically after each curve."""

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

from benchmarks.contract.results import write_atomic
from benchmarks.contract.schema import SCHEMA_VERSION
from benchmarks.measure.adapters import ADAPTERS
from benchmarks.measure.backends import select_backend
from benchmarks.measure.ceilings import CeilingError, measure_ceilings
from benchmarks.measure.estimate import fit_to_time, machine_from_ceilings, time_budget
from benchmarks.measure.fingerprint import device_state, fingerprint
from benchmarks.measure.planning import (
    FALLBACK_CACHE_BYTES,
    KERNEL_NAMES_BUDGET_S,
    KV_MEMORY_SHARE,
    MAX_COPIES,
    ROTATE_FACTOR,
    SAVE_EVERY_S,
    copies_by_batch,
    share_memory,
    unrotatable,
)
from benchmarks.measure.sampler import PointOutcome, TimedPoint, measure_points
from benchmarks.measure.session import DeviceLock, RunRefused, check_writable, provenance, remove_temporaries
from benchmarks.profiles import PROFILES, CurvePlan, Profile, select_sweeps

SEED = 0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Progress:
    """One self-rewriting status line on a terminal; silent otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.started = time.perf_counter()

    def show(self, text: str) -> None:
        if self.enabled:
            elapsed = time.perf_counter() - self.started
            sys.stderr.write(f"\r\033[K{elapsed:5.0f}s  {text}")
            sys.stderr.flush()

    def curve(self, label: str) -> Callable[[int, int], None]:
        return lambda done, total: self.show(f"{label}  {100 * done // max(total, 1):3d}%")

    def note(self, text: str) -> None:
        """A line that stays, whether or not progress is shown."""
        if self.enabled:
            sys.stderr.write("\r\033[K")
        sys.stderr.write(f"note: {text}\n")

    def end_line(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


class RunFile:
    """The results document of one run, rewritten atomically whenever it changes."""

    def __init__(self, path: Path, doc: dict[str, Any], lock: DeviceLock | None = None):
        self.path = path
        self.doc = doc
        self.lock = lock  # held from before the ceilings until the run finishes

    def save(self) -> None:
        write_atomic(self.path, self.doc)

    def finish(self, complete: bool, interrupted: str | None = None) -> OSError | None:
        """Mark the run finished (or not) and write it; the write's error, if any, instead of raising:
        the previous atomic write stays valid."""
        self.doc["run"]["complete"] = complete
        self.doc["run"]["interrupted"] = interrupted[:1000] if interrupted else None
        if self.lock is not None and self.lock.joined():
            self.doc["run"]["contended"] = True  # another measurement started beside this one
        self.doc["run"]["finished_at"] = _now() if complete else None
        try:
            self.save()
        except OSError as exc:
            return exc
        finally:
            if self.lock is not None:
                self.lock.release()
        return None


def memory_budgets(sweeps: list[CurvePlan], memory_bytes: int | None) -> dict[tuple[int, str], float]:
    """Bytes each memory-hungry curve (sweep index, dtype) may hold, e.g. for its KV cache.

    Every configuration is set up before sampling starts, so their caches are held at once and
    share one budget: KV_MEMORY_SHARE of `memory_bytes`, the memory left free once every other
    configuration is set up, water-filled between the curves.
    """
    wants = {
        (index, dtype): ADAPTERS[sweep.workload].memory_needed(sweep.params, dtype, max(sweep.batches))
        for index, sweep in enumerate(sweeps)
        if hasattr(ADAPTERS[sweep.workload], "memory_needed") and memory_bytes
        for dtype in sweep.dtypes
    }
    return share_memory(wants, KV_MEMORY_SHARE * (memory_bytes or 0))


def _record(sweep: CurvePlan, dtype: str, mode: str, cache: str, copies: int, batch: int, outcome, extra=None) -> dict:
    """One results record; `extra` holds what was learnt while preparing the point (kernel
    names; for routed workloads the routing and the FLOPs and bytes it implies)."""
    extra = dict(extra or {})
    flops, bytes_moved = ADAPTERS[sweep.workload].cost(sweep.params, dtype, batch)
    flops, bytes_moved = extra.pop("flops", flops), extra.pop("bytes", bytes_moved)
    return {
        "workload": sweep.workload,
        "params": dict(sweep.params),
        "dtype": dtype,
        "mode": mode,
        "cache": cache,
        "weight_copies": copies,
        "batch": batch,
        "status": outcome.status,
        "message": outcome.message,
        "median_s": outcome.timing["median_s"] if outcome.timing else None,
        "timing": outcome.timing,
        "flops": flops,
        "bytes": bytes_moved,
        **extra,
    }


def _preparer(backend, workload, prepared, batch, copies, mode, curve, plan):
    """The TimedPoint.prepare of one batch: note its routing, then build the timed call over the
    point's weight copies."""

    def prepare():
        extra = plan.extras.setdefault((curve, batch), {})
        if hasattr(workload, "point_info"):
            extra.update(workload.point_info(prepared, batch))
        return backend.for_mode(prepared.call(batch, mode, copies), mode)

    return prepare


KERNEL_NAME_CHARS = 240  # a cuBLAS GEMM's name fits whole; an elementwise kernel's template arguments run to 800+
MAX_KERNEL_NAMES = 64  # the schema's limits: 64 names of at most 1000 characters


def short_names(names: list[str]) -> list[str]:
    """Kernel names as the results file keeps them: each cut to KERNEL_NAME_CHARS (marked '…'), at most
    MAX_KERNEL_NAMES of them, without duplicates."""
    cut = [n if len(n) <= KERNEL_NAME_CHARS else n[: KERNEL_NAME_CHARS - 1] + "…" for n in names]
    return list(dict.fromkeys(cut))[:MAX_KERNEL_NAMES]


def record_kernels(plan: RunPlan, outcomes: dict, budget_s: float) -> None:
    """Name the kernels (CUDA) or ops (CPU) of each sampled batch, after every sample is taken.

    A profiler session leaves CUPTI attached to the process, which slows later launches, so no
    timed call may follow one. Each sampled batch gets its names or a `kernels_error` saying why not.
    """
    started = time.perf_counter()
    for key, workload, prepared, batch in plan.kernel_jobs:
        outcome = outcomes.get(key)
        if outcome is None or outcome.status != "ok":
            continue
        extra = plan.extras.setdefault(key, {})
        if time.perf_counter() - started >= budget_s:
            extra["kernels_error"] = f"skipped: the run's {budget_s:.0f} s for recording kernel names were spent"
            continue
        try:
            names = workload.kernels(prepared, batch)
        except Exception as exc:  # a profiler that cannot trace here costs the names, not the point
            extra["kernels_error"] = f"{type(exc).__name__}: {exc}"[:300]
            continue
        if names:
            extra["kernels"] = short_names(names)
        else:
            extra["kernels_error"] = "no kernel names: the profiler recorded no matching kernel or op"


class RoundSaver:
    """Saves the outcomes after sampling rounds: the first round at once, then at most every SAVE_EVERY_S
    seconds, and whatever is pending on `flush`. A full profile's file grows to megabytes, and rewriting it
    after each of twenty rounds would cost more than some workloads' sampling."""

    def __init__(self, save: Callable[[dict], None]):
        self.save = save
        self.saved_at: float | None = None
        self.pending: dict | None = None

    def after_round(self, outcomes: dict) -> None:
        self.pending = outcomes
        if self.saved_at is None or time.perf_counter() - self.saved_at >= SAVE_EVERY_S:
            self.flush()

    def flush(self) -> None:
        if self.pending is not None:
            self.save(self.pending)
            self.saved_at, self.pending = time.perf_counter(), None


@dataclass
class RunPlan:
    """Everything set up before sampling: the points to time, the records that need no timing, and
    what each point's record carries."""

    fixed: list[dict] = field(default_factory=list)  # records of points that are never timed
    points: list[TimedPoint] = field(default_factory=list)
    labels: dict[tuple, tuple[CurvePlan, str, str, str]] = field(default_factory=dict)  # curve -> record fields
    copies: dict[tuple, int] = field(default_factory=dict)  # (curve, batch) -> weight copies
    extras: dict[tuple, dict] = field(default_factory=dict)  # (curve, batch) -> what preparing recorded
    keep_alive: list = field(default_factory=list)
    kernel_jobs: list[tuple] = field(default_factory=list)  # (curve, batch) key, workload, prepared, batch

    def fail(self, sweep, dtype, modes, state, copies: dict[int, int], status: str, message: str) -> None:
        for mode in modes:
            for batch, n in copies.items():
                self.fixed.append(_record(sweep, dtype, mode, state, n, batch, PointOutcome(status, message=message)))


def _fits(plan: RunPlan, workload, sweep, dtype, modes, state, copies, budget, sharing) -> dict[int, int]:
    """The batches whose KV cache fits this curve's memory budget; the others are recorded as skipped."""
    if budget is None:
        return copies
    needs = {b: workload.memory_needed(sweep.params, dtype, b) for b in copies}
    for mode in modes:
        for batch in [b for b in copies if needs[b] > budget]:
            message = (
                f"not run: needs {needs[batch] / 2**30:.1f} GiB of KV cache, over this curve's "
                f"{budget / 2**30:.1f} GiB share ({KV_MEMORY_SHARE:.0%} of the memory left free, "
                f"shared by {sharing} curves held at once)"
            )
            plan.fixed.append(
                _record(sweep, dtype, mode, state, copies[batch], batch, PointOutcome("skipped", message=message))
            )
    return {b: n for b, n in copies.items() if needs[b] <= budget}


def cache_states(plan: RunPlan, workload, sweep, dtype, modes, device, sweep_cache, copies, twins) -> dict:
    """The points of one configuration, {(mode, cache state): {batch: copies}}.

    A rotated point whose copies cannot span ROTATE_FACTOR cache sizes is measured resident (one
    copy) and labelled so, unless another sweep of the run already measures that point resident:
    then it is recorded here as skipped, with the reason.
    """
    if sweep_cache == "resident":
        return {(mode, "resident"): copies for mode in modes}
    stuck = unrotatable(workload, sweep, dtype, device, copies)
    cache_bytes = device.get("l2_bytes") or FALLBACK_CACHE_BYTES
    message = (
        f"not run rotated: at most {MAX_COPIES} copies cannot span {ROTATE_FACTOR}× the "
        f"{cache_bytes / 2**20:.0f} MiB cache, so the weights would stay cached; the resident curve measures it"
    )
    states = {}
    for mode in modes:
        states[(mode, "rotated")] = {b: n for b, n in copies.items() if b not in stuck}
        states[(mode, "resident")] = {}
        for batch in stuck:
            if (sweep.label(), dtype, mode, batch) in twins:
                outcome = PointOutcome("skipped", message=message)
                plan.fixed.append(_record(sweep, dtype, mode, "rotated", copies[batch], batch, outcome))
            else:
                states[(mode, "resident")][batch] = 1
    return states


def plan_configuration(run: RunFile, backend, plan: RunPlan, sweep: CurvePlan, dtype: str, settings, budget, sharing,
                       cache, twins=frozenset()):  # fmt: skip
    """Check, set up and enqueue one workload configuration in one dtype, in each mode it runs in.
    `twins` are the points other sweeps of the run measure with resident weights."""
    workload = ADAPTERS[sweep.workload]
    modes = [mode for mode in sweep.modes if mode in backend.modes]
    sweep_cache = sweep.cache or cache
    device = run.doc["device"]
    copies = copies_by_batch(workload, sweep, dtype, sweep_cache, device, sweep.batches)
    points = cache_states(plan, workload, sweep, dtype, modes, device, sweep_cache, copies, twins)
    points = {(m, s): _fits(plan, workload, sweep, dtype, [m], s, c, budget, sharing) for (m, s), c in points.items()}
    points = {key: batches for key, batches in points.items() if batches}
    if not points:
        return

    def fail(status: str, message: str) -> None:
        for (mode, state), batches in points.items():
            plan.fail(sweep, dtype, [mode], state, batches, status, message)

    try:
        error, tolerance = workload.check(dtype, backend.device)
    except Exception as exc:
        fail("error", f"correctness check failed: {exc}")
        return
    check = {"workload": sweep.workload, "dtype": dtype, "max_rel_error": error, "tolerance": tolerance}
    run.doc["checks"].append({**check, "passed": True})
    try:
        torch.manual_seed(SEED)  # same weights, inputs and so routing in every run of a profile
        most_copies = max(n for batches in points.values() for n in batches.values())
        largest_batch = max(b for batches in points.values() for b in batches)
        prepared = workload.setup(sweep.params, dtype, backend.device, most_copies, largest_batch)
    except Exception as exc:
        fail("oom" if backend.is_oom(exc) else "error", f"setup failed: {type(exc).__name__}: {exc}")
        backend.release()
        return
    plan.keep_alive.append(prepared)
    for (mode, state), batches in points.items():
        curve = (sweep.label(), dtype, mode, state)
        plan.labels[curve] = (sweep, dtype, mode, state)
        for batch, n in batches.items():
            plan.copies[(curve, batch)] = n
            prepare = _preparer(backend, workload, prepared, batch, n, mode, curve, plan)
            plan.points.append(TimedPoint(curve, batch, prepare, n, **settings, largest_first=mode == "graph"))
            if batch in sweep.kernel_batches and hasattr(workload, "kernels"):
                plan.kernel_jobs.append(((curve, batch), workload, prepared, batch))


def resident_points(sweeps: list[CurvePlan], cache: str, modes) -> set[tuple]:
    """(label, dtype, mode, batch) of every point some sweep of the run measures with resident weights."""
    return {
        (s.label(), dtype, mode, batch)
        for s in sweeps
        if (s.cache or cache) == "resident"
        for dtype in s.dtypes
        for mode in s.modes
        if mode in modes
        for batch in s.batches
    }


def compiled_graphs() -> int:
    """Graphs torch.compile has made in this process so far (each recompilation adds one)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def run_sweeps(
    run: RunFile,
    backend,
    sweeps: list[CurvePlan],
    profile: Profile,
    cache: str,
    progress,
    deadline: float | None = None,
) -> None:
    """Measure every sweep, all points interleaved, saving the file after every round.

    Sampling every point of the run in shared rounds means each point's samples span the
    whole run, so a spell of contention on a shared machine moves all points a little
    instead of moving one workload a lot.
    """
    plan = RunPlan()
    backend.new_phase()  # the ceilings' graphs are gone: the workloads capture into a fresh pool
    twins = resident_points(sweeps, cache, backend.modes)
    hungry = [s for s in sweeps if hasattr(ADAPTERS[s.workload], "memory_needed")]
    for sweep in (s for s in sweeps if s not in hungry):
        for dtype in sweep.dtypes:
            plan_configuration(run, backend, plan, sweep, dtype, profile.settings(sweep), None, 0, cache, twins)
    budgets = memory_budgets(hungry, backend.free_memory())  # what the rest left free
    for index, sweep in enumerate(hungry):
        for dtype in sweep.dtypes:
            budget = budgets.get((index, dtype))
            plan_configuration(run, backend, plan, sweep, dtype, profile.settings(sweep), budget, len(budgets), cache,
                               twins)  # fmt: skip
    existing = list(run.doc["records"])

    def save(outcomes: dict) -> None:
        measured = [
            _record(*plan.labels[curve], plan.copies[key], batch, outcome, plan.extras.get(key))
            for key, outcome in outcomes.items()
            for curve, batch in [key]
        ]
        run.doc["records"] = existing + plan.fixed + measured
        run.save()

    save({})
    rounds = RoundSaver(save)
    graphs_before = compiled_graphs()
    try:
        with torch.no_grad():
            outcomes = measure_points(
                backend,
                plan.points,
                rounds=profile.rounds,
                min_sample_s=profile.min_sample_s,
                warmup_s=profile.warmup_s,
                progress=progress,
                after_round=rounds.after_round,
                deadline=deadline,
            )
    except BaseException:
        rounds.flush()  # Ctrl-C, SIGTERM, a crash: keep every round sampled so far
        raise
    if any(label[2] == "compile" for label in plan.labels.values()):
        run.doc["run"]["compiled_graphs"] = compiled_graphs() - graphs_before
    save(outcomes)
    left = None if deadline is None else max(0.0, deadline - time.perf_counter())
    record_kernels(plan, outcomes, KERNEL_NAMES_BUDGET_S if left is None else min(KERNEL_NAMES_BUDGET_S, left))
    save(outcomes)
    plan.keep_alive.clear()  # the prepared models and inputs: free them before the next run phase
    plan.points.clear()
    backend.release()


@dataclass(frozen=True)
class RunOptions:
    """What the command line asked for."""

    profile: Profile
    sweeps: list[CurvePlan]
    results_dir: Path
    cache: str
    command: list[str]
    time_limit_s: float | None = None


def start_run(
    *,
    profile_name: str,
    device: str,
    only: list[str] | None,
    results_dir: Path,
    threads: int | None,
    cache: str,
    command: list[str],
    show_progress: bool,
    allow_contended: bool = False,
    time_limit_s: float | None = None,
) -> tuple[RunFile, Callable[[], None]]:
    """Measure the device and its ceilings, write the first version of the file, return it
    with a function that runs every sweep (so the caller can report the path on interrupt).
    With `time_limit_s`, the sweeps are planned to end within that many seconds of this call."""
    clock_started = time.perf_counter()
    profile = PROFILES[profile_name]
    options = RunOptions(profile, select_sweeps(profile, only), results_dir, cache, command, time_limit_s)
    check_writable(results_dir)
    backend = select_backend(device, threads)
    budget = None if time_limit_s is None else time_budget(profile, options.sweeps, backend.kind, cache)
    if budget is not None and time_limit_s < budget.least_s:
        raise RunRefused(
            f"--time-limit {time_limit_s:g}: too short to measure anything; the smallest useful limit is "
            f"{math.ceil(budget.least_s)} s (the ceilings and the least of one curve; every curve needs about "
            f"{math.ceil(budget.every_s)} s), by the cost model of {budget.machine.name}"
        )
    progress = Progress(show_progress)
    started = datetime.now(timezone.utc)
    device_info = fingerprint(backend)
    check_writable(results_dir / device_info["slug"])  # where the file goes: refused now, not after measuring
    lock = DeviceLock(device_info["slug"])
    contended = lock.acquire(allow_contended)
    if not contended:
        remove_temporaries(results_dir / device_info["slug"])
    deadline = None if time_limit_s is None else clock_started + time_limit_s
    try:
        return _first_write(options, backend, progress, started, device_info, contended, lock, deadline, budget)
    except CeilingError as exc:
        lock.release()
        if budget is None:
            raise
        raise RunRefused(f"--time-limit {time_limit_s:g}: {exc} within the limit; give more time") from None
    except BaseException:
        lock.release()
        raise


def _first_write(options: RunOptions, backend, progress, started, device_info, contended, lock, deadline, budget):
    """Measure the ceilings, write the first version of the file, and return it with the rest of the run.
    Under a time limit the ceilings are inside it: with their curves when those take at most half the limit
    by the cost model, else only the points predictions use; their sampling leaves the workloads the least
    time the cost model gives them."""
    profile, sweeps = options.profile, options.sweeps
    commit, dirty = provenance()
    progress.show("measuring ceilings (copy bandwidth, matmul rate)")
    dtypes = sorted({d for s in sweeps for d in s.dtypes})
    curves = budget is None or budget.curves_fit(options.time_limit_s)
    ceilings = measure_ceilings(
        backend,
        dtypes,
        rounds=profile.rounds,
        min_sample_s=profile.min_sample_s,
        progress=progress.curve("ceilings: bandwidth and matmul curves" if curves else "ceilings"),
        small=profile.small_ceilings,
        ceilings_only=not curves,
        deadline=None if budget is None else deadline - _workloads_reserve(budget, options.time_limit_s),
    )
    run_id = f"{started:%Y%m%dT%H%M%SZ}-{profile.name}-{secrets.token_hex(3)}"
    workloads = list(dict.fromkeys(sweep.workload for sweep in sweeps))
    doc = {
        "schema_version": SCHEMA_VERSION,
        "kind": "profile",
        "run": {
            "id": run_id,
            "started_at": started.isoformat(timespec="seconds"),
            "finished_at": None,
            "complete": False,
            "interrupted": None,
            "git_commit": commit,
            "git_dirty": dirty,
            "command": options.command,
            "profile": profile.name,
            "workloads_planned": workloads,
            "workloads_done": [],
            **({"contended": True} if contended else {}),
        },
        "device": device_info,
        "ceilings": ceilings,
        "checks": [],
        "records": [],
    }
    if deadline is not None:
        sweeps = _fit(doc, options, backend.kind, deadline, progress, curves)
    run = RunFile(options.results_dir / device_info["slug"] / f"{run_id}.json", doc, lock)
    run.save()

    def measure_all() -> None:
        label = progress.curve(" + ".join(workloads))
        run_sweeps(run, backend, sweeps, profile, options.cache, label, deadline)
        timed = {r["workload"] for r in doc["records"] if r["status"] == "ok"}
        doc["run"]["workloads_done"] = [w for w in workloads if w in timed]  # a workload with no point timed is not
        doc["run"]["device_at_end"] = device_state(backend)
        run.save()
        progress.end_line()

    return run, measure_all


def _workloads_reserve(budget, limit_s: float) -> float:
    """Seconds of a time limit the ceilings leave to the workloads: the least of every curve by the cost
    model, at most half the limit, and never less than the least of one curve."""
    return max(budget.least_s - budget.least_ceilings_s, min(budget.every_s, 0.5 * limit_s))


SAVE_MARGIN = 0.05  # share of the time limit (at most 2 s) kept free for the last writes of the file


def _fit(doc: dict, options: RunOptions, kind: str, deadline: float, progress, curves: bool = True) -> list[CurvePlan]:
    """The sweeps cut to end by the deadline by the cost model on this run's own ceilings; the
    run records its limit and what was cut."""
    machine = machine_from_ceilings(kind, doc["ceilings"], doc["device"]).at("high")  # plan on the slow end
    margin = min(2.0, SAVE_MARGIN * options.time_limit_s)
    seconds = max(0.0, deadline - time.perf_counter() - margin)
    sweeps, note = fit_to_time(options.profile, options.sweeps, machine, seconds, options.cache)
    doc["run"]["time_limit_s"] = options.time_limit_s
    if not curves:
        cut = "the ceilings without their bandwidth and matmul curves (they would take over half the limit)"
        note = f"{cut}; {note}" if note else f"to fit {options.time_limit_s:g} s: {cut}"
    if note:
        doc["run"]["fitted_to_time"] = note
        progress.note(note)
    return sweeps
