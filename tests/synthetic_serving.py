"""SYNTHETIC real-server check files for tests. Not measurements: never publish them.

The "server" here is the simulator itself (`benchmarks.analysis.serving.batcher.simulator`) with a made-up service
curve and a made-up overhead, and every document says so (`run.synthetic` is true, the host is named as a
fixture).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.analysis.serving.batcher.simulator import Policy, ServiceCurve, poisson_arrivals, simulate

SYNTHETIC_HOST = "Synthetic host (test fixture, not a measurement)"
OVERHEAD_S = 0.004


def synthetic_curve() -> ServiceCurve:
    """15 ms + 3.5 ms per request, ±5 % (made up)."""
    return ServiceCurve.from_samples(
        {b: [(0.015 + 0.0035 * (b - 1)) * f for f in (0.95, 0.98, 1.0, 1.02, 1.05)] for b in (1, 4, 8, 16)}
    )


def synthetic_run(
    handler: str, max_batch: int, delay: float, rate: float, repeat: int, *, server_handler: str | None = None
) -> dict[str, Any]:
    """One run whose "measurements" are a simulation; `server_handler` (default: `handler`) is the rule the
    fake server really followed, so a file can claim one handler style and behave like the other."""
    rng = np.random.default_rng(repeat * 1000 + int(rate))
    arrivals = poisson_arrivals(rate, 300, rng)
    arrivals = arrivals - arrivals[0] + 0.01
    policy = Policy("ray", max_batch, delay, 1, server_handler or handler)
    result = simulate(policy, synthetic_curve(), arrivals, overhead_s=OVERHEAD_S, seed=100 + repeat)
    batch_of = np.repeat(np.arange(result.batch_sizes.size), result.batch_sizes)
    arrived = result.arrivals_s + OVERHEAD_S / 2
    return {
        "name": f"curve-{handler}-b{max_batch}-d{round(delay * 1000)}ms-r{rate:g}-rep{repeat}",
        "service": "curve",
        "model": None,
        "handler": handler,
        "max_batch": max_batch,
        "max_delay_s": delay,
        "rate_per_s": rate,
        "repeat": repeat,
        "seed": repeat,
        "started_at": "2026-01-01T00:00:00.000+00:00",
        "failed": 0,
        "errors": [],
        "requests": {
            "scheduled_s": result.arrivals_s.tolist(),
            "sent_s": result.arrivals_s.tolist(),
            "latency_s": result.latency_s.tolist(),
            "arrived_s": arrived.tolist(),
            "batch": batch_of.tolist(),
        },
        "batches": {
            "size": result.batch_sizes.tolist(),
            "start_s": result.batch_start_s.tolist(),
            "service_s": result.batch_service_s.tolist(),
        },
    }


def synthetic_check(runs: list[dict[str, Any]] | None = None, check_id: str = "20260101T000000Z-serving-000000"):
    """A whole synthetic serving-check document (two repeats of two rates of one awaiting and one blocking
    policy unless `runs` is given)."""
    if runs is None:
        runs = [
            synthetic_run(handler, 16, 0.005, rate, repeat)
            for handler, rates in (("awaiting", (10.0, 30.0)), ("blocking", (20.0, 60.0)))
            for rate in rates
            for repeat in (1, 2)
        ]
    rng = np.random.default_rng(7)
    return {
        "schema_version": 1,
        "kind": "serving-check",
        "run": {
            "id": check_id,
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T00:05:00+00:00",
            "complete": True,
            "interrupted": None,
            "command": ["synthetic"],
            "git_commit": None,
            "git_dirty": None,
            "wall_s": 300.0,
            "synthetic": True,
        },
        "host": {
            "name": SYNTHETIC_HOST,
            "slug": "synthetic-host",
            "cpu_model": None,
            "cpus": 2,
            "platform": "fixture",
            "python": "3.11",
            "ray": "0.0-fixture",
            "torch": None,
            "load_average_start": [0.0, 0.0, 0.0],
            "load_average_end": [0.0, 0.0, 0.0],
        },
        "server": {
            "name": "Ray Serve",
            "version": "0.0-fixture",
            "replicas": 1,
            "max_ongoing_requests": 256,
            "max_concurrent_batches": 1,
            "transport": "none: simulated",
            "auth_mode": "disabled",
        },
        "curve": {
            "scale": 1.0,
            "source": "synthetic",
            "label": "15 ms + 3.5 ms per request (made up)",
            "batches": [{"batch": b, "samples_s": [0.015 + 0.0035 * (b - 1)]} for b in range(1, 17)],
        },
        "overhead": [
            {
                "rate_per_s": 20.0,
                "latency_s": (OVERHEAD_S * (1 + 0.05 * rng.standard_normal(100)).clip(0.5)).tolist(),
                "failed": 0,
            }
        ],
        "runs": runs,
    }


def write_check(directory: Path, doc: dict[str, Any]) -> Path:
    path = directory / doc["host"]["slug"] / f"{doc['run']['id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path
