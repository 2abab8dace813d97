"""Measured ceilings, as curves: bandwidth against working-set size, matmul rate against size.

The single numbers that predictions use (a large copy; a large matmul per dtype) are points of
these curves. Every point is sampled in shared rounds like the workloads, so the curves and the
ceilings come from the same minutes of the same device.
"""

from __future__ import annotations

import torch

from benchmarks.measure import ceiling_plan
from benchmarks.measure.adapters import torch_dtype
from benchmarks.measure.ceiling_plan import CeilingPlan, copy_repeats, plan_ceilings, read_repeats
from benchmarks.measure.sampler import TimedPoint, measure_points

FP8_FAST_ACCUM = True  # recorded with the float8 ceiling


class CeilingError(RuntimeError):
    pass


def matmul_dtypes(backend, sweep_dtypes: list[str]) -> list[str]:
    """Every dtype the device's matmul curve covers: all that a CUDA device supports, and on a
    CPU the run's own dtypes (always including float32)."""
    if backend.kind != "cuda":
        return sorted({"float32", *sweep_dtypes}, key=("float32", "bfloat16", "float16").index)
    major, minor = torch.cuda.get_device_capability(backend.device)
    found = ["float32"]
    if major >= 8:
        found += ["tfloat32", "bfloat16"]
    found.append("float16")
    if (major, minor) >= (8, 9):
        found.append("float8")
    return found


def _copy_call(size: int, kind: str, device):
    """A call that copies a buffer of `size` bytes `repeats` times; working set 2·size."""
    src = torch.randn(size // 4, device=device)
    dst = torch.empty_like(src)
    repeats = copy_repeats(size, kind)

    def copy_repeatedly():
        for _ in range(repeats):
            dst.copy_(src)

    return copy_repeatedly, 2 * size * repeats


def _read_call(size: int, kind: str, device):
    """A single kernel that reads one buffer of `size` bytes `repeats` times (a row sum over a
    stride-0 view), so even a buffer that fits in L1 is read for long enough to time."""
    x = torch.randn(size // 4, device=device)
    repeats = read_repeats(size, kind)
    view = x.expand(repeats, x.numel())
    out = torch.empty(repeats, device=device)
    return (lambda: torch.sum(view, dim=1, out=out)), size * repeats


def _matmul_call(dtype: str, n: int, device):
    if dtype == "float8":
        a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
        one = torch.ones((), device=device)
        # fast accumulation (fp32 partial sums promoted less often) is what reaches the fp8 peak
        return lambda: torch._scaled_mm(
            a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=FP8_FAST_ACCUM
        )
    storage = torch.float32 if dtype == "tfloat32" else torch_dtype(dtype)
    a, b, out = (torch.randn(n, n, device=device, dtype=storage) for _ in range(3))
    if dtype != "tfloat32":
        return lambda: torch.matmul(a, b, out=out)

    def tf32_matmul():  # the flag is read when the kernel is chosen, so a graph capture keeps it
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            torch.matmul(a, b, out=out)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous

    return tf32_matmul


def _in_mode(backend, make):
    """TimedPoint.prepare: build the call, then (on CUDA) capture it in a graph to drop launch gaps."""

    def prepare():
        fn = make()
        return backend.for_mode(fn, "graph" if backend.kind == "cuda" else "eager")

    return prepare


@torch.no_grad()
def measure_ceilings(
    backend,
    dtypes: list[str],
    rounds: int,
    min_sample_s: float,
    progress=None,
    small: bool = False,
    ceilings_only: bool = False,
    deadline: float | None = None,
) -> dict:
    """The bandwidth and matmul curves, and from them the ceilings that predictions use: copy
    bandwidth (bytes read + written per second) at the largest buffer and matmul FLOP/s at
    MATMUL_N for each dtype. With a `deadline` (a time.perf_counter() value) sampling stops by then.
    Raises CeilingError when the copy ceiling, or the matmul ceiling of one of `dtypes`, has no timing."""
    kind = backend.kind
    free = backend.free_memory() if kind == "cuda" else None
    measured_dtypes = dtypes if ceilings_only else matmul_dtypes(backend, dtypes)
    plan = plan_ceilings(kind, measured_dtypes, free, small, ceilings_only)
    calls = _Calls(backend)
    points = _points(plan, calls, rounds, min_sample_s)
    outcomes = measure_points(
        backend,
        points,
        rounds=rounds,
        min_sample_s=min_sample_s,
        warmup_s=ceiling_plan.WARMUP_S,
        progress=progress,
        deadline=deadline,
    )
    ceilings = {
        "copy": _copy_ceiling(plan, outcomes, calls.moved),
        "matmul": _matmul_ceilings(plan, outcomes, measured_dtypes, dtypes),
        "curves": {"bandwidth": _bandwidth_curve(plan, outcomes, calls.moved), "matmul": _matmul_curve(plan, outcomes)},
    }
    calls.alive.clear()  # free every buffer before the workloads allocate theirs
    points.clear()
    backend.release()
    return ceilings


class _Calls:
    """Builds the timed call of each ceiling point, and keeps what the results need of it: the bytes a
    copy or read call moves, and a reference to every call (a captured graph does not keep its tensors
    alive; these references do)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.moved: dict[tuple, int] = {}  # (curve, size) -> bytes one call moves
        self.alive: list = []

    def prepare(self, curve, size: int):
        """TimedPoint.prepare for one point of the plan."""
        return _in_mode(self.backend, lambda: self.build(curve, size))

    def build(self, curve, size: int):
        kind, device = self.backend.kind, self.backend.device
        if curve == "copy":
            fn, self.moved[(curve, size)] = _copy_call(size, kind, device)
        elif curve == "read":
            fn, self.moved[(curve, size)] = _read_call(size, kind, device)
        else:
            fn = _matmul_call(curve[1], size, device)
        self.alive.append(fn)
        return fn


def _points(plan: CeilingPlan, calls: _Calls, rounds: int, min_sample_s: float) -> list[TimedPoint]:
    """Every point of the plan, in the order the time estimate counts them; the curves' points take fewer,
    shorter samples than the ceilings."""
    curve_settings = {"rounds": max(5, rounds // 2), "min_sample_s": min_sample_s / 2}
    return [
        TimedPoint(curve, size, calls.prepare(curve, size), **({} if is_ceiling else curve_settings))
        for curve, size, is_ceiling in plan.points()
    ]


def _bandwidth_curve(plan: CeilingPlan, outcomes: dict, moved: dict[tuple, int]) -> list[dict]:
    bandwidth = []
    for curve, sizes in (("copy", plan.copy_sizes), ("read", plan.working_sets)):
        for size in sizes:
            outcome = outcomes[(curve, size)]
            entry = {"kind": curve, "working_set_bytes": 2 * size if curve == "copy" else size}
            if outcome.status == "ok":
                entry.update(bytes_per_s=moved[(curve, size)] / outcome.timing["median_s"], timing=outcome.timing)
            else:
                entry.update(status=outcome.status, message=outcome.message)
            bandwidth.append(entry)
    return bandwidth


def _matmul_curve(plan: CeilingPlan, outcomes: dict) -> list[dict]:
    matmul = []
    for name, sizes in plan.matmul_sizes.items():
        for n in sizes:
            outcome = outcomes[(("matmul", name), n)]
            entry = {"dtype": name, "n": n}
            if outcome.status == "ok":
                entry.update(flops_per_s=2 * n**3 / outcome.timing["median_s"], timing=outcome.timing)
            else:
                entry.update(status=outcome.status, message=outcome.message)
            matmul.append(entry)
    return matmul


def _copy_ceiling(plan: CeilingPlan, outcomes: dict, moved: dict[tuple, int]) -> dict:
    outcome = outcomes[("copy", plan.ceiling_copy)]
    if outcome.status != "ok":
        raise CeilingError(f"could not measure the copy ceiling: {outcome.message}")
    return {
        "bytes_per_s": moved[("copy", plan.ceiling_copy)] / outcome.timing["median_s"],
        "size_bytes": plan.ceiling_copy,
        "timing": outcome.timing,
    }


def _matmul_ceilings(plan: CeilingPlan, outcomes: dict, measured_dtypes: list[str], dtypes: list[str]) -> dict:
    """The matmul ceiling of every measured dtype; one the run asked for must have been measured."""
    found = {}
    for name in measured_dtypes:
        n = plan.matmul_ceilings[name]
        outcome = outcomes[(("matmul", name), n)]
        if outcome.status != "ok":
            if name in dtypes:
                raise CeilingError(f"could not measure the {name} matmul ceiling: {outcome.message}")
            continue  # a dtype only the curve wanted (e.g. float8 without a working kernel)
        found[name] = {"flops_per_s": 2 * n**3 / outcome.timing["median_s"], "n": n, "timing": outcome.timing}
        if name == "float8":
            found[name]["fast_accum"] = FP8_FAST_ACCUM
    return found
