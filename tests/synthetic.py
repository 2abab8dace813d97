"""SYNTHETIC results documents for tests. Not measurements: never publish them.

Times follow the roofline of made-up ceilings plus a fixed overhead and seeded noise, and
every document says so (`run.synthetic` is true, the device is named as a fixture).
"""

from __future__ import annotations

import random
from typing import Any

from benchmarks.contract.schema import SCHEMA_VERSION

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


def _mlp_record(width, dtype, mode, cache, batch, seconds, rng, noise, copies=1) -> dict[str, Any]:
    size = {"float32": 4, "bfloat16": 2, "float16": 2}[dtype]
    timing = _timing(seconds, rng, noise)
    return {
        "workload": "mlp",
        "params": {"width": width, "depth": 8},
        "dtype": dtype,
        "mode": mode,
        "cache": cache,
        "weight_copies": copies,
        "batch": batch,
        "status": "ok",
        "message": None,
        "median_s": timing["median_s"],
        "timing": timing,
        "flops": 8 * 2 * width * width * batch,
        "bytes": 8 * size * (width * width + width + 2 * batch * width),
    }


def _hardware_records(flops_per_s, bytes_per_s, l2_bytes, overhead_s, batches, covered, rng, noise):
    """Resident bf16 MLPs in three modes (a tiny one and a 1024-wide one), and a batch-1 width
    sweep resident and rotated. Resident weights that fit in L2 read at 3× the memory bandwidth."""
    records = []
    launch = {"graph": overhead_s, "compile": 2 * overhead_s, "eager": 4 * overhead_s}

    def seconds(width, batch, mode, cache):
        weights = 8 * 2 * (width * width + width)
        bandwidth = 3 * bytes_per_s if cache == "resident" and weights < l2_bytes else bytes_per_s
        ideal = max(8 * 2 * width * width * batch / flops_per_s, (weights + 8 * 2 * 2 * batch * width) / bandwidth)
        return max(ideal, launch[mode]) + 0.1 * min(ideal, launch[mode])

    for width in (64, 1024):
        for mode in ("graph", "eager", "compile"):
            for batch in batches:
                records.append(
                    _mlp_record(width, "bfloat16", mode, "resident", batch, seconds(width, batch, mode, "resident"),
                                rng, noise)
                )  # fmt: skip
    for cache in ("resident", "rotated"):
        for width in (256, 512, 1024, 2048, 4096, 8192):
            if (cache, width) in covered:
                continue
            copies = 1 if cache == "resident" else 4
            records.append(
                _mlp_record(width, "bfloat16", "graph", cache, 1, seconds(width, 1, "graph", cache), rng, noise, copies)
            )
    return records


def _ceiling_curves(flops_per_s, bytes_per_s, l2_bytes, rng, noise) -> dict[str, Any]:
    """Made-up bandwidth (3× inside L2) and matmul (rising to the peak with n) curves."""
    bandwidth = []
    for kind in ("copy", "read"):
        for exponent in range(17, 33):
            working_set = 2**exponent
            per_s = (3 if working_set <= l2_bytes // 2 else 1) * bytes_per_s * (1 + rng.gauss(0, noise))
            moved = 2**30
            bandwidth.append(
                {"kind": kind, "working_set_bytes": working_set, "bytes_per_s": per_s,
                 "timing": _timing(moved / per_s, rng, 0.0)}
            )  # fmt: skip
    matmul = []
    for dtype, peak in (("float32", flops_per_s / 8), ("bfloat16", flops_per_s)):
        for n in (256, 1024, 4096, 8192):
            rate = peak * n / (n + 1024)
            matmul.append({"dtype": dtype, "n": n, "flops_per_s": rate, "timing": _timing(2 * n**3 / rate, rng, 0.0)})
    matmul.append({"dtype": "float8", "n": 256, "status": "error", "message": "synthetic: no fp8 kernel"})
    return {"bandwidth": bandwidth, "matmul": matmul}


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
    hardware: bool = True,
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
    l2_bytes = 40 * 2**20
    if hardware:
        covered = {("rotated", w) for w in widths if "bfloat16" in dtypes and "graph" in modes and 1 in batches}
        covered |= {("resident", 64), ("resident", 1024)}
        records.extend(
            _hardware_records(rate["bfloat16"], bytes_per_s, l2_bytes, overhead_s, batches, covered, rng, noise)
        )
    copy_timing = _timing(2**31 / bytes_per_s, rng, noise / 4)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "profile",
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
            "workloads_done": sorted({r["workload"] for r in records}) if complete else [],
            "synthetic": True,
        },
        "device": {
            "kind": kind,
            "name": name,
            "slug": slug,
            "sm_count": 100 if kind == "cuda" else None,
            "l2_bytes": l2_bytes,
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
            **({"curves": _ceiling_curves(flops_per_s, bytes_per_s, l2_bytes, rng, noise)} if hardware else {}),
        },
        "checks": [],
        "records": records,
    }


def site_data(*docs: dict[str, Any], empty: bool = False):
    """SiteData over SYNTHETIC documents (default: one synthetic GPU run; none with `empty`), for
    page-module tests."""
    from pathlib import Path

    from benchmarks.contract.results import Run, newest_complete_runs
    from benchmarks.site.data import SiteData

    docs = () if empty else docs or (make_run(),)
    runs = [Run(path=Path(f"/synthetic/{d['device']['slug']}/{d['run']['id']}.json"), doc=d) for d in docs]
    newest = newest_complete_runs(runs, include_synthetic=True)  # as load_site_data chooses
    shown = sorted(newest.values(), key=lambda r: (r.device["kind"] != "cuda", r.device["name"]))
    return SiteData(runs=runs, shown=shown)


def record(workload: str, params: dict[str, Any], batch: int, seconds: float, flops: float, moved: float, **fields):
    """One SYNTHETIC ok record with a tight timing around `seconds`."""
    timing = {
        "median_s": seconds,
        "q1_s": seconds * 0.99,
        "q3_s": seconds * 1.01,
        "min_s": seconds * 0.98,
        "max_s": seconds * 1.02,
        "samples_s": [seconds * 0.98, seconds * 0.99, seconds, seconds * 1.01, seconds * 1.02],
        "inner_loops": 1,
    }
    base = {"dtype": "bfloat16", "mode": "eager", "cache": "rotated", "weight_copies": 1, "status": "ok"}
    return {
        **base,
        "workload": workload,
        "params": params,
        "batch": batch,
        "message": None,
        "median_s": seconds,
        "timing": timing,
        "flops": flops,
        "bytes": moved,
        **fields,
    }


def run_of(records: list[dict[str, Any]], **options):
    """A SYNTHETIC Run holding exactly `records`, with make_run's ceilings (options go to make_run)."""
    from pathlib import Path

    from benchmarks.contract.results import Run

    doc = make_run(widths=(), linear_batches=(), hardware=False, **options)
    doc["records"] = records
    return Run(path=Path(f"/synthetic/{doc['device']['slug']}/{doc['run']['id']}.json"), doc=doc)


PAYLOAD = "<img src=x onerror=alert(1)>[x](javascript:alert(2))<script>alert(3)</script>"


def hostile(doc: dict[str, Any], payload: str = PAYLOAD) -> dict[str, Any]:
    """The document with `payload` in every free-form string field the schema allows (device texts, the
    command, a failed point's message, kernel names, a ceiling's error): for escaping tests. SYNTHETIC."""
    device = doc["device"]
    device["name"] = f"{payload} (test fixture)"
    for name in ("cpu_model", "platform", "torch", "python", "driver", "cuda"):
        device[name] = payload
    device["cache_levels"] = [{"level": 3, "type": payload[:40], "bytes": 32 * 2**20}]
    doc["run"]["command"] = [payload, payload]
    failed = next(r for r in doc["records"] if r["workload"] == "mlp")
    failed.update(status="error", message=payload, median_s=None, timing=None)
    for record in doc["records"]:
        if record["workload"] == "linear" and record["batch"] % 16 in (0, 1):
            record["kernels"] = [payload]
        record.setdefault("kernels_error", payload) if record["workload"] == "linear" else None
    for entry in doc["ceilings"].get("curves", {}).get("matmul", []):
        if entry.get("status") == "error":
            entry["message"] = payload
    return doc


SWEEP_OPS = 100  # operators per call of the SYNTHETIC sweep's model: its fixed cost is all dispatch


def make_sweep(
    batches=(1, 2, 4, 8, 16, 32, 64),
    fixed_s: float = 1e-3,
    per_row_s: float = 1e-4,
    budget_ms: float | None = 3.0,
    percentile: int = 90,
    oom_from: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """A SYNTHETIC model-sweep document: latency = fixed + per_row·batch with seeded noise, the fixed part being
    SWEEP_OPS operators at the dispatch probe's cost; FLOPs and bytes of a made-up 4096² layer. Not a
    measurement: never publish it."""
    rng = random.Random(seed)
    points = []
    for batch in batches:
        if oom_from is not None and batch >= oom_from:
            points.append({"batch": batch, "stage": "search", "status": "oom", "message": "out of memory (fixture)",
                           "median_s": None, "percentile_s": None})  # fmt: skip
            break
        timing = _timing(fixed_s + per_row_s * batch, rng, 0.02)
        ordered = sorted(timing["samples_s"])
        points.append({
            "batch": batch, "stage": "search", "status": "ok", "message": None, "median_s": timing["median_s"],
            "percentile_s": ordered[min(len(ordered) - 1, -(-percentile * len(ordered) // 100) - 1)],
            "timing": timing, "throughput": batch / timing["median_s"], "peak_memory_bytes": 2**30 + batch * 2**20,
            "flops": 2.0 * batch * 4096 * 4096, "bytes_low": 2.0 * 4096 * 4096, "bytes_high": 2.0 * 4096 * 4096 * 3,
            "ops": SWEEP_OPS,
        })  # fmt: skip
    device = make_run()["device"]
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sweep",
        "run": {
            "id": f"20260101T000000Z-sweep-{seed:06x}",
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T00:01:00+00:00",
            "complete": True,
            "interrupted": None,
            "command": ["test"],
            "synthetic": True,
            "wall_s": 60.0,
        },
        "device": device,
        "ceilings": {
            "copy": {"bytes_per_s": 1e12, "size_bytes": 2**30, "timing": _timing(2**31 / 1e12, rng, 0.01)},
            "matmul": {"bfloat16": {"flops_per_s": 5e14, "n": 8192, "timing": _timing(2 * 8192**3 / 5e14, rng, 0.01)}},
        },
        "probes": {
            "dispatch": {"per_op_s": fixed_s / SWEEP_OPS, "ops": 24, "model": "8×64 MLP at batch 1 (fixture)"},
            "small_matmul": {"bytes_per_s": 5e11, "weight_bytes": 2**28, "model": "8×4096 MLP at batch 1 (fixture)"},
        },
        "model": {
            "target": "fixture.py:factory",
            "name": "SyntheticModel",
            "parameters": 4096 * 4096,
            "weight_bytes": 2 * 4096 * 4096,
            "dtype": "bfloat16",
            "mode": "eager",
            "mode_requested": "eager",
            "input": "random bfloat16 of shape (batch, 4096)",
            "notes": [],
        },
        "settings": {
            "percentile": percentile,
            "budget_ms": budget_ms,
            "batches": "auto",
            "max_batch": None,
            "samples": 9,
        },
        "points": points,
        "recommendation": None,
    }


def hostile_sweep(doc: dict[str, Any], payload: str = PAYLOAD) -> dict[str, Any]:
    """A sweep with `payload` in every free-form string it holds: the device, the model's target, name,
    input and notes, the command and a failed point's message. SYNTHETIC, for escaping tests."""
    doc["device"]["name"] = f"{payload} (test fixture)"
    doc["model"].update(target=payload, name=payload, input=payload, notes=[payload])
    doc["run"]["command"] = [payload]
    doc["points"].append({"batch": 4096, "stage": "search", "status": "error", "message": payload,
                          "median_s": None, "percentile_s": None})  # fmt: skip
    return doc
