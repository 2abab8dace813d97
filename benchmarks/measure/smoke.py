"""`run --profile smoke`: every code path of a full run at tiny sizes, judged path by path.

The run itself goes through the same harness as any other (ceilings, planning, sampling, kernel
names, the results file), into a temporary directory unless told otherwise; then each path is
judged from the file it wrote, and one deliberate out-of-memory is provoked through the sampler
(on CUDA inside a graph capture) to check that it is recorded and that the device measures again
afterwards. One line per path: PASS, FAIL or SKIP (a path this device does not have).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from benchmarks.contract.results import read_run
from benchmarks.measure.backends import select_backend
from benchmarks.measure.sampler import TimedPoint, measure_points
from benchmarks.profiles import SMOKE

IMPOSSIBLE_BYTES = 2**62  # more than any device has: the allocator refuses it at once


@dataclass
class Verdict:
    path: str
    status: str  # PASS, FAIL or SKIP
    detail: str

    def line(self) -> str:
        return f"{self.status:<4}  {self.path:<26} {self.detail}"


def _ok(records, **wanted) -> list[dict]:
    return [r for r in records if r["status"] == "ok" and all(r.get(k) == v for k, v in wanted.items())]


def judge(doc: dict) -> list[Verdict]:
    """Each path of a smoke run, judged from its results file."""
    records, kind = doc["records"], doc["device"]["kind"]
    verdicts = []

    def check(path: str, passed: bool, detail: str, skip: str | None = None) -> None:
        verdicts.append(Verdict(path, "SKIP" if skip else ("PASS" if passed else "FAIL"), skip or detail))

    curves = doc["ceilings"]["curves"]
    bad = [e for e in curves["bandwidth"] + curves["matmul"] if "timing" not in e]
    dtypes = sorted(doc["ceilings"]["matmul"])
    check("ceilings", not bad and bool(dtypes), f"copy, read and matmul curves; matmul in {', '.join(dtypes)}")
    failed = [c for c in doc["checks"] if not c["passed"]]
    check("correctness checks", bool(doc["checks"]) and not failed, f"{len(doc['checks'])} against float64")
    for workload in SMOKE_WORKLOADS:
        found = [r for r in records if r["workload"] == workload]
        good = _ok(found)
        problems = sorted({r["message"] or r["status"] for r in found if r["status"] != "ok"})
        check(f"workload {workload}", bool(good) and not problems, f"{len(good)} of {len(found)} points ok"
              + (f": {problems[0][:120]}" if problems else ""))  # fmt: skip
    for mode in ("eager", "graph", "compile"):
        skip = "needs CUDA" if mode == "graph" and kind != "cuda" else None
        check(f"mode {mode}", bool(_ok(records, mode=mode)), f"{len(_ok(records, mode=mode))} points", skip)
    rotated = [r for r in _ok(records, cache="rotated") if r["weight_copies"] > 1]
    check("rotated weights", bool(rotated), f"{len(rotated)} points over up to "
          f"{max((r['weight_copies'] for r in rotated), default=0)} weight copies")  # fmt: skip
    check("resident weights", bool(_ok(records, cache="resident")), f"{len(_ok(records, cache='resident'))} points")
    named = [r for r in records if r.get("kernels")]
    errors = sorted({r["kernels_error"] for r in records if r.get("kernels_error")})
    check("kernel names", bool(named) and not errors, f"{len(named)} sampled batches named"
          + (f": {errors[0][:120]}" if errors else ""))  # fmt: skip
    backends = sorted({r["attention_backend"] for r in records if r.get("attention_backend")})
    math_on_cuda = kind == "cuda" and "math" in backends
    check("attention backend", bool(backends) and not math_on_cuda, f"{', '.join(backends) or 'none recorded'}")
    return verdicts


SMOKE_WORKLOADS = tuple(dict.fromkeys(sweep.workload for sweep in SMOKE.sweeps))


def impossible_call(backend, allocate: Callable[[int], object] | None = None) -> Callable[[], object]:
    """A call that asks for more memory than any device has. On CUDA it asks only while a graph capture
    runs it (its warm-up calls ask for one byte), so the out-of-memory comes from inside the capture, the
    path a real capture that runs out takes. `reached` records whether it did."""
    cuda = backend.cuda if backend.kind == "cuda" else None
    allocate = allocate or (lambda size: torch.empty(size, dtype=torch.uint8, device=backend.device))

    def call() -> object:
        if cuda is not None and not cuda.is_current_stream_capturing():
            return allocate(1)
        call.reached = True
        return allocate(IMPOSSIBLE_BYTES)

    call.reached = False
    return call


def provoke_out_of_memory(backend) -> Verdict:
    """Allocate more than any device has, through the sampler (and on CUDA inside a graph capture); the
    point must be recorded as oom, the larger batch skipped, and a normal point still measured (on CUDA
    captured too, with the default stream current and the allocator recording into no pool)."""
    mode = "graph" if backend.kind == "cuda" else "eager"
    calls = []

    def too_big() -> Callable[[], object]:
        calls.append(impossible_call(backend))
        return backend.for_mode(calls[-1], mode)

    a = torch.ones(64, 64, device=backend.device)
    points = [
        TimedPoint("impossible", 1, too_big),
        TimedPoint("impossible", 2, too_big),
        TimedPoint("after", 1, lambda: backend.for_mode(lambda: a @ a, mode)),
    ]
    outcomes = measure_points(backend, points, rounds=2, min_sample_s=0.0005, warmup_s=0.0)
    statuses = [outcomes[(p.curve, p.batch)].status for p in points]
    passed = statuses == ["oom", "skipped", "ok"]
    detail = f"{mode}: {' → '.join(statuses)} (wanted oom → skipped → ok)"
    if backend.kind == "cuda":
        inside = any(call.reached for call in calls)
        current = torch.cuda.current_stream(backend.device) == torch.cuda.default_stream(backend.device)
        left_recording = backend.allocator.end_allocation(backend.graph_pool)
        passed = passed and inside and current and not left_recording
        detail += "; raised inside the capture" if inside else "; never reached the capture"
        detail += "; default stream current afterwards" if current else "; the capture stream stayed current"
        if left_recording:
            detail += "; the allocator was left recording into the graph pool"
    return Verdict("out of memory", "PASS" if passed else "FAIL", detail)


def smoke_verdicts(
    start_run_kwargs: dict, results_dir: Path | None, published_dir: Path
) -> tuple[list[Verdict], float]:
    """Run the smoke profile; its verdicts, one per path, and the seconds it took."""
    from benchmarks.measure.runner import start_run

    started = time.perf_counter()
    before = sorted(published_dir.rglob("*")) if published_dir.exists() else []
    with tempfile.TemporaryDirectory(prefix="batching-smoke-") as scratch:
        target = results_dir or Path(scratch)
        run, measure_all = start_run(profile_name="smoke", results_dir=target, **start_run_kwargs)
        measure_all()
        error = run.finish(complete=True)
        verdicts = []
        try:
            doc = read_run(run.path).doc
            verdicts.append(Verdict("results file", "PASS" if error is None else "FAIL", "valid, complete"))
            verdicts += judge(doc)
        except Exception as exc:  # a file the reader rejects is a failed path, said in one line
            verdicts.append(Verdict("results file", "FAIL", f"{type(exc).__name__}: {exc}"[:200]))
        backend = select_backend(start_run_kwargs["device"], start_run_kwargs.get("threads"))
        verdicts.append(provoke_out_of_memory(backend))
    after = sorted(published_dir.rglob("*")) if published_dir.exists() else []
    verdicts.append(Verdict("nothing published", "PASS" if before == after else "FAIL", f"{published_dir} unchanged"))
    return verdicts, time.perf_counter() - started


def summary_line(verdicts: list[Verdict], seconds: float) -> str:
    failed = sum(v.status == "FAIL" for v in verdicts)
    passed = len(verdicts) - failed
    return f"smoke: {passed} of {len(verdicts)} paths passed or skipped, {failed} failed, in {seconds:.1f} s"


def run_smoke(start_run_kwargs: dict, results_dir: Path | None, published_dir: Path) -> int:
    """Run the smoke profile and print one line per path; exit status 0 when nothing failed."""
    verdicts, seconds = smoke_verdicts(start_run_kwargs, results_dir, published_dir)
    for verdict in verdicts:
        print(verdict.line())
    print(summary_line(verdicts, seconds))
    return 1 if any(v.status == "FAIL" for v in verdicts) else 0
