"""SYNTHETIC results documents for tests. Not measurements: never publish them.

Times follow the roofline of made-up ceilings plus a fixed overhead and seeded noise, and
every document says so (`run.synthetic` is true, the device is named as a fixture).
"""

from __future__ import annotations

import random
from typing import Any

from benchmarks.schema import SCHEMA_VERSION

SYNTHETIC_DEVICE = "Synthetic GPU (test fixture, not a measurement)"


def _timing(median: float, rng: random.Random, noise: float) -> dict[str, Any]:
    samples = [median * (1 + rng.gauss(0, noise)) for _ in range(9)]
    samples = [max(s, median * 0.5) for s in samples]
    ordered = sorted(samples)
    return {
        "median_s": ordered[4],
        "q1_s": ordered[2],
        "q3_s": ordered[6],
        "min_s": ordered[0],
        "max_s": ordered[-1],
        "samples_s": samples,
        "inner_loops": 10,
    }


SYNTHETIC_KERNEL = "synthetic_gemm_tilesize{}x128_fixture"


def _linear_records(batches, flops_per_s, bytes_per_s, rng, noise) -> list[dict[str, Any]]:
    """A 4096→4096 bf16 layer whose time steps up every 64 rows (made-up tiles), kernels named."""
    records = []
    features = 4096
    for batch in batches:
        flops = 2 * batch * features * features
        moved = 2 * (features * features + features + batch * 2 * features)
        tiles = -(-batch // 64)
        ideal = max(tiles * 64 * 2 * features * features / flops_per_s, moved / bytes_per_s)
        timing = _timing(ideal, rng, noise / 2)
        record = {
            "workload": "linear",
            "params": {"in_features": features, "out_features": features},
            "dtype": "bfloat16",
            "mode": "graph",
            "cache": "rotated",
            "weight_copies": 1,
            "batch": batch,
            "status": "ok",
            "message": None,
            "median_s": timing["median_s"],
            "timing": timing,
            "flops": flops,
            "bytes": moved,
        }
        if batch % 16 in (0, 1):
            record["kernels"] = [SYNTHETIC_KERNEL.format(64)]
        records.append(record)
    return records


def make_run(
    *,
    name: str = SYNTHETIC_DEVICE,
    slug: str = "synthetic-gpu",
    kind: str = "cuda",
    run_id: str = "20260101T000000Z-synthetic",
    started_at: str = "2026-01-01T00:00:00+00:00",
    flops_per_s: float = 400e12,
    bytes_per_s: float = 2e12,
    overhead_s: float = 20e-6,
    widths: tuple[int, ...] = (1024, 4096),
    dtypes: tuple[str, ...] = ("bfloat16", "float32"),
    modes: tuple[str, ...] = ("graph", "eager"),
    batches: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048),
    noise: float = 0.02,
    seed: int = 0,
    complete: bool = True,
    linear_batches: tuple[int, ...] = tuple(range(1, 301)),
) -> dict[str, Any]:
    """A valid, clearly labelled synthetic results document."""
    rng = random.Random(seed)
    size = {"float32": 4, "bfloat16": 2, "float16": 2}
    rate = {"float32": flops_per_s / 8, "bfloat16": flops_per_s, "float16": flops_per_s}
    records = []
    for width in widths:
        for dtype in dtypes:
            for mode in modes:
                for batch in batches:
                    flops = 8 * 2 * width * width * batch
                    bytes_moved = 8 * size[dtype] * (width * width + width + 2 * batch * width)
                    ideal = max(flops / rate[dtype], bytes_moved / bytes_per_s)
                    extra = overhead_s * (4 if mode == "eager" else 1)
                    timing = _timing(max(ideal, extra) + 0.1 * min(ideal, extra), rng, noise)
                    records.append(
                        {
                            "workload": "mlp",
                            "params": {"width": width, "depth": 8},
                            "dtype": dtype,
                            "mode": mode,
                            "cache": "rotated",
                            "weight_copies": 4,
                            "batch": batch,
                            "status": "ok",
                            "message": None,
                            "median_s": timing["median_s"],
                            "timing": timing,
                            "flops": flops,
                            "bytes": bytes_moved,
                        }
                    )
    if linear_batches:
        records.extend(_linear_records(linear_batches, rate["bfloat16"], bytes_per_s, rng, noise))
    copy_timing = _timing(2**31 / bytes_per_s, rng, noise / 4)
    return {
        "schema_version": SCHEMA_VERSION,
        "run": {
            "id": run_id,
            "started_at": started_at,
            "finished_at": started_at if complete else None,
            "complete": complete,
            "interrupted": None if complete else "KeyboardInterrupt: stopped by the user",
            "git_commit": None,
            "git_dirty": None,
            "command": ["synthetic fixture"],
            "profile": "synthetic",
            "workloads_done": ["mlp"],
            "synthetic": True,
        },
        "device": {
            "kind": kind,
            "name": name,
            "slug": slug,
            "sm_count": 100 if kind == "cuda" else None,
            "l2_bytes": 40 * 2**20,
            "memory_bytes": 80 * 2**30,
            "compute_capability": "9.0" if kind == "cuda" else None,
            "driver": None,
            "cuda": None,
            "torch": "synthetic",
            "python": "3.11",
            "platform": "synthetic",
            "cpu_model": None,
            "threads": 1,
            "clocks_mhz": None,
            "power_limit_w": None,
            "float32_matmul_precision": "highest",
        },
        "ceilings": {
            "copy": {
                "bytes_per_s": 2**31 / copy_timing["median_s"],
                "size_bytes": 2**30,
                "timing": copy_timing,
            },
            "matmul": {
                dtype: {
                    "flops_per_s": rate[dtype],
                    "n": 8192,
                    "timing": _timing(2 * 8192**3 / rate[dtype], rng, 0.0),
                }
                for dtype in dtypes
            },
        },
        "checks": [],
        "records": records,
    }
