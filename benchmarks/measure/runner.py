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

from benchmarks.measure.adapters import ADAPTERS
from benchmarks.measure.backends import select_backend
from benchmarks.measure.ceilings import measure_ceilings
from benchmarks.measure.fingerprint import fingerprint
from benchmarks.measure.sampler import Outcome, Point, measure_points
from benchmarks.measure.session import DeviceLock, check_writable, provenance, remove_temporaries
from benchmarks.profiles import PROFILES, Profile, Sweep, select_sweeps
from benchmarks.results import write_atomic
from benchmarks.schema import SCHEMA_VERSION

ROTATE_FACTOR = 3  # rotated weight copies together span at least this many cache sizes
MAX_COPIES = 64
SEED = 0
KERNEL_BUDGET_S = 30.0  # at most this long spent recording kernel names per run
FALLBACK_CACHE_BYTES = 256 * 2**20  # when the device does not report its cache size


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

    def end_line(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def weight_copies(weight_bytes: int, cache_bytes: int | None, cache: str, memory_bytes: int | None) -> int:
    """How many weight copies to rotate through so that no call finds its weights cached."""
    if cache == "resident":
        return 1
    wanted = math.ceil(ROTATE_FACTOR * (cache_bytes or FALLBACK_CACHE_BYTES) / max(weight_bytes, 1))
    if memory_bytes:
        wanted = min(wanted, max(1, memory_bytes // 4 // max(weight_bytes, 1)))
    return max(1, min(MAX_COPIES, wanted))


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
        self.doc["run"]["finished_at"] = _now() if complete else None
        try:
            self.save()
        except OSError as exc:
            return exc
        finally:
            if self.lock is not None:
                self.lock.release()
        return None


def memory_budgets(sweeps: list[Sweep], memory_bytes: int | None) -> dict[tuple[int, str], float]:
    """Bytes each memory-hungry curve (sweep index, dtype) may hold, e.g. for its KV cache.

    Every configuration is set up before sampling starts, so their caches are held at once and
    share one budget: a workload's MEMORY_SHARE of `memory_bytes`, the memory left free once every
    other configuration is set up. It is shared by water-filling: curves that need little get what
    they need at their largest batch, and the rest split what is left equally.
    """
    wants = {}
    share = 0.0
    for index, sweep in enumerate(sweeps):
        workload = ADAPTERS[sweep.workload]
        if hasattr(workload, "memory_needed") and memory_bytes:
            share = max(share, workload.MEMORY_SHARE)
            for dtype in sweep.dtypes:
                wants[(index, dtype)] = workload.memory_needed(sweep.params, dtype, max(sweep.batches))
    left = share * (memory_bytes or 0)
    budgets = {}
    pending = sorted(wants, key=wants.get)
    while pending:
        key = pending.pop(0)
        budgets[key] = min(wants[key], left / (len(pending) + 1))
        left -= budgets[key]
    return budgets


def _record(sweep: Sweep, dtype: str, mode: str, cache: str, copies: int, batch: int, outcome, extra=None) -> dict:
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
    """The Point.prepare of one batch: note its routing, then build the timed call over the
    point's weight copies."""

    def prepare():
        extra = plan.extras.setdefault((curve, batch), {})
        if hasattr(workload, "point_info"):
            extra.update(workload.point_info(prepared, batch))
        return backend.for_mode(prepared.call(batch, mode, copies), mode)

    return prepare


def record_kernels(plan: Plan, outcomes: dict) -> None:
    """Name the kernels (CUDA) or ops (CPU) of each sampled batch, after every sample is taken.

    A profiler session leaves CUPTI attached to the process, which slows later launches, so no
    timed call may follow one. Each sampled batch gets its names or a `kernels_error` saying why not.
    """
    started, budget_s = time.perf_counter(), KERNEL_BUDGET_S
    for key, workload, prepared, batch in plan.kernel_jobs:
        outcome = outcomes.get(key)
        if outcome is None or outcome.status != "ok":
            continue
        extra = plan.extras.setdefault(key, {})
        if time.perf_counter() - started >= budget_s:
            extra["kernels_error"] = f"skipped: the run's {budget_s:.0f} s for recording kernel names was spent"
            continue
        try:
            names = workload.kernels(prepared, batch)
        except Exception as exc:  # a profiler that cannot trace here costs the names, not the point
            extra["kernels_error"] = f"{type(exc).__name__}: {exc}"[:300]
            continue
        if names:
            extra["kernels"] = names
        else:
            extra["kernels_error"] = "no kernel names: the profiler recorded no matching kernel or op"


@dataclass
class Plan:
    """Everything set up before sampling: the points to time, the records that need no timing, and
    what each point's record carries."""

    fixed: list[dict] = field(default_factory=list)  # records of points that are never timed
    points: list[Point] = field(default_factory=list)
    labels: dict[tuple, tuple[Sweep, str, str, str]] = field(default_factory=dict)  # curve -> record fields
    copies: dict[tuple, int] = field(default_factory=dict)  # (curve, batch) -> weight copies
    extras: dict[tuple, dict] = field(default_factory=dict)  # (curve, batch) -> what preparing recorded
    keep_alive: list = field(default_factory=list)
    kernel_jobs: list[tuple] = field(default_factory=list)  # (curve, batch) key, workload, prepared, batch

    def fail(self, sweep, dtype, modes, state, copies: dict[int, int], status: str, message: str) -> None:
        for mode in modes:
            for batch, n in copies.items():
                self.fixed.append(_record(sweep, dtype, mode, state, n, batch, Outcome(status, message=message)))


def copies_by_batch(workload, sweep: Sweep, dtype: str, cache: str, device: dict, batches) -> dict[int, int]:
    """Weight copies per batch: enough that one pass over the copies, each with that batch's
    activations, spans ROTATE_FACTOR cache sizes. Large batches need fewer: their activations
    push the weights out of the cache on their own, so rotating more copies would only repeat work."""
    return {
        batch: weight_copies(footprint, device.get("l2_bytes"), cache, device.get("memory_bytes"))
        for batch, footprint in _footprints(workload, sweep, dtype, batches).items()
    }


def _footprints(workload, sweep: Sweep, dtype: str, batches) -> dict[int, float]:
    """Bytes one copy touches per call at each batch: its weights and that batch's activations."""
    weights = workload.weight_bytes(sweep.params, dtype)
    return {b: weights + max(0.0, workload.cost(sweep.params, dtype, b)[1] - weights) for b in batches}


def unrotatable(workload, sweep: Sweep, dtype: str, device: dict, copies: dict[int, int]) -> list[int]:
    """Batches whose rotated copies cannot together span ROTATE_FACTOR cache sizes (copies are
    capped at MAX_COPIES and by memory): their weights would stay cached, so they are resident."""
    cache_bytes = device.get("l2_bytes") or FALLBACK_CACHE_BYTES
    footprints = _footprints(workload, sweep, dtype, copies)
    return [b for b, n in copies.items() if n * footprints[b] < ROTATE_FACTOR * cache_bytes]


def _fits(plan: Plan, workload, sweep, dtype, modes, state, copies, budget, sharing) -> dict[int, int]:
    """The batches whose KV cache fits this curve's memory budget; the others are recorded as skipped."""
    if budget is None:
        return copies
    needs = {b: workload.memory_needed(sweep.params, dtype, b) for b in copies}
    for mode in modes:
        for batch in [b for b in copies if needs[b] > budget]:
            message = (
                f"not run: needs {needs[batch] / 2**30:.1f} GiB of KV cache, over this curve's "
                f"{budget / 2**30:.1f} GiB share ({workload.MEMORY_SHARE:.0%} of the memory left free, "
                f"shared by {sharing} curves held at once)"
            )
            plan.fixed.append(
                _record(sweep, dtype, mode, state, copies[batch], batch, Outcome("skipped", message=message))
            )
    return {b: n for b, n in copies.items() if needs[b] <= budget}


def cache_states(plan: Plan, workload, sweep, dtype, modes, device, sweep_cache, copies, twins) -> dict:
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
                outcome = Outcome("skipped", message=message)
                plan.fixed.append(_record(sweep, dtype, mode, "rotated", copies[batch], batch, outcome))
            else:
                states[(mode, "resident")][batch] = 1
    return states


def plan_configuration(run: RunFile, backend, plan: Plan, sweep: Sweep, dtype: str, settings, budget, sharing, cache,
                       twins=frozenset()):  # fmt: skip
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
            plan.points.append(Point(curve, batch, prepare, n, **settings))
            if batch in sweep.kernel_batches and hasattr(workload, "kernels"):
                plan.kernel_jobs.append(((curve, batch), workload, prepared, batch))


def resident_points(sweeps: list[Sweep], cache: str, modes) -> set[tuple]:
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


def run_sweeps(run: RunFile, backend, sweeps: list[Sweep], profile: Profile, cache: str, progress) -> None:
    """Measure every sweep, all points interleaved, saving the file after every round.

    Sampling every point of the run in shared rounds means each point's samples span the
    whole run, so a spell of contention on a shared machine moves all points a little
    instead of moving one workload a lot.
    """
    plan = Plan()
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
    with torch.no_grad():
        outcomes = measure_points(
            backend,
            plan.points,
            rounds=profile.rounds,
            min_sample_s=profile.min_sample_s,
            warmup_s=profile.warmup_s,
            progress=progress,
            after_round=save,
        )
    save(outcomes)
    record_kernels(plan, outcomes)
    save(outcomes)
    plan.keep_alive.clear()  # the prepared models and inputs: free them before the next run phase
    plan.points.clear()
    backend.release()


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
) -> tuple[RunFile, Callable[[], None]]:
    """Measure the device and its ceilings, write the first version of the file, return it
    with a function that runs every sweep (so the caller can report the path on interrupt)."""
    profile = PROFILES[profile_name]
    sweeps = select_sweeps(profile, only)
    check_writable(results_dir)
    backend = select_backend(device, threads)
    progress = Progress(show_progress)
    started = datetime.now(timezone.utc)
    commit, dirty = provenance()
    device_info = fingerprint(backend)
    lock = DeviceLock(device_info["slug"])
    contended = lock.acquire(allow_contended)
    if not contended:
        remove_temporaries(results_dir / device_info["slug"])
    try:
        return _first_write(profile, sweeps, backend, progress, started, commit, dirty, device_info, contended, lock,
                            results_dir, cache, command)  # fmt: skip
    except BaseException:
        lock.release()
        raise


def _first_write(profile, sweeps, backend, progress, started, commit, dirty, device_info, contended, lock, results_dir,
                 cache, command):  # fmt: skip
    """Measure the ceilings, write the first version of the file, and return it with the rest of the run."""
    progress.show("measuring ceilings (copy bandwidth, matmul rate)")
    dtypes = sorted({d for s in sweeps for d in s.dtypes})
    ceilings = measure_ceilings(
        backend,
        dtypes,
        rounds=profile.rounds,
        min_sample_s=profile.min_sample_s,
        progress=progress.curve("ceilings: bandwidth and matmul curves"),
    )
    run_id = f"{started:%Y%m%dT%H%M%SZ}-{profile.name}-{secrets.token_hex(3)}"
    doc = {
        "schema_version": SCHEMA_VERSION,
        "run": {
            "id": run_id,
            "started_at": started.isoformat(timespec="seconds"),
            "finished_at": None,
            "complete": False,
            "interrupted": None,
            "git_commit": commit,
            "git_dirty": dirty,
            "command": command,
            "profile": profile.name,
            "workloads_planned": list(dict.fromkeys(sweep.workload for sweep in sweeps)),
            "workloads_done": [],
            **({"contended": True} if contended else {}),
        },
        "device": device_info,
        "ceilings": ceilings,
        "checks": [],
        "records": [],
    }
    run = RunFile(results_dir / device_info["slug"] / f"{run_id}.json", doc, lock)
    workloads = list(dict.fromkeys(sweep.workload for sweep in sweeps))
    run.save()

    def measure_all() -> None:
        run_sweeps(run, backend, sweeps, profile, cache, progress.curve(" + ".join(dict.fromkeys(workloads))))
        doc["run"]["workloads_done"] = workloads
        run.save()
        progress.end_line()

    return run, measure_all
