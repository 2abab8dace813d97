"""A SYNTHETIC merged results directory: many runs of many devices, for the build-time test. Not measurements.

Each run is a copy of the newest committed run of the most workloads, relabelled as a synthetic fixture: its device
(and a CPU's model, which labels it) renamed "Synthetic device N (test fixture, not a measurement)", its run id and
start time its own, `run.synthetic` true.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from benchmarks.contract.results import DEFAULT_RESULTS_DIR


def newest_committed() -> dict:
    """The newest committed run of the most workloads (a run of two training workloads draws no device's page)."""
    docs = [json.loads(path.read_text(encoding="utf-8")) for path in DEFAULT_RESULTS_DIR.rglob("*.json")]
    return max(docs, key=lambda doc: (len(doc["run"].get("workloads_done") or ()), doc["run"]["id"]))


def write_many_runs(directory: Path, devices: int = 40, runs_per_device: int = 5) -> int:
    """Write devices × runs_per_device SYNTHETIC runs under `directory`; return how many."""
    base = newest_committed()
    written = 0
    for d in range(devices):
        for r in range(runs_per_device):
            doc = copy.deepcopy(base)
            slug = f"synthetic-device-{d:02d}"
            run_id = f"2026010{1 + r}T0000{d:02d}Z-synthetic-{d:02d}-{r}"
            name = f"Synthetic device {d:02d} (test fixture, not a measurement)"
            doc["device"].update(name=name, slug=slug)
            if doc["device"].get("cpu_model"):  # a CPU is labelled by its model
                doc["device"]["cpu_model"] = name
            doc["run"].update(id=run_id, started_at=f"2026-01-0{1 + r}T00:00:{d:02d}+00:00", synthetic=True)
            doc["run"]["finished_at"] = f"2026-01-0{1 + r}T01:00:00+00:00"
            path = directory / slug / f"{run_id}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(doc), encoding="utf-8")
            written += 1
    return written
