"""Measured ceilings: copy bandwidth and square-matmul rate, on the device being benchmarked."""

from __future__ import annotations

import torch

from benchmarks.measure.sampler import Point, measure_points
from benchmarks.measure.workloads import torch_dtype

COPY_BYTES = {"cpu": 256 * 2**20, "cuda": 2**30}  # far larger than any last-level cache
MATMUL_N = {"cpu": 2048, "cuda": 8192}
CPU_LOW_PRECISION_MATMUL_N = 1024  # bf16/fp16 matmul is slow on most CPUs


class CeilingError(RuntimeError):
    pass


@torch.no_grad()
def measure_ceilings(backend, dtypes: list[str], rounds: int, min_sample_s: float) -> dict:
    """Copy bandwidth (bytes read + written per second) and matmul FLOP/s for each dtype."""
    size = COPY_BYTES[backend.kind]
    if backend.kind == "cuda":
        size = min(size, torch.cuda.mem_get_info()[0] // 8)
    src = torch.randn(size // 4, device=backend.device)
    dst = torch.empty_like(src)
    points = [Point("copy", 1, lambda src=src, dst=dst: lambda: dst.copy_(src))]

    sizes = {}
    for name in dtypes:
        n = MATMUL_N[backend.kind]
        if backend.kind == "cpu" and name != "float32":
            n = CPU_LOW_PRECISION_MATMUL_N
        a, b, out = (torch.randn(n, n, device=backend.device, dtype=torch_dtype(name)) for _ in range(3))
        sizes[name] = n
        points.append(Point(name, 1, lambda a=a, b=b, out=out: lambda: torch.matmul(a, b, out=out)))

    outcomes = measure_points(backend, points, rounds=rounds, min_sample_s=min_sample_s, warmup_s=0.05)
    failed = [f"{curve}: {o.message}" for (curve, _), o in outcomes.items() if o.status != "ok"]
    if failed:
        raise CeilingError("could not measure the ceilings: " + "; ".join(failed))
    copy_timing = outcomes[("copy", 1)].timing
    ceilings = {
        "copy": {
            "bytes_per_s": 2 * size / copy_timing["median_s"],
            "size_bytes": size,
            "timing": copy_timing,
        },
        "matmul": {},
    }
    for name, n in sizes.items():
        timing = outcomes[(name, 1)].timing
        ceilings["matmul"][name] = {"flops_per_s": 2 * n**3 / timing["median_s"], "n": n, "timing": timing}
    del points, src, dst
    backend.release()
    return ceilings
