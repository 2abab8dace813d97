"""A real vLLM engine, started and stopped: the quick engine check on the tiny decoder (about 80 s on two cores).

Skipped where vLLM is not installed (the test environment has none); `nox -s tests-engine` installs vLLM's CPU
build and runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is installed by `nox -s tests-engine` only")

ROOT = Path(__file__).resolve().parents[2]


def marked_processes(prefix: str) -> list[int]:
    """Processes whose environment carries an engine check's marker (none may outlive the check)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if prefix.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
@pytest.mark.engine
def test_the_quick_check_measures_a_real_engine_replays_it_and_stops_it(tmp_path):
    from benchmarks.contract.engine_check import read_engine_check
    from benchmarks.measure.engine_server import MARKER_PREFIX

    before = set(marked_processes(MARKER_PREFIX))  # another check may be running on this host
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.commands.engine_check", "--quick", "--json", "--results-dir",
         str(tmp_path)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 1
    check = read_engine_check(files[0])
    assert check.complete and check.doc["engine"]["name"] == "vLLM"
    assert check.doc["step_curve"]["decode"] and check.doc["step_curve"]["prefill"]
    assert all(load["failed"] == 0 for load in check.loads)
    assert list(files[0].parent.glob("*.logs/*.log")), "the engine's log is kept beside the results"
    found = json.loads(done.stdout)
    assert found["model_config"] == check.doc["engine"]["model_config"]
    assert found["capacity_per_s"]["measured"] > 0 and found["capacity_per_s"]["simulated"] > 0
    kinds = {load["load"] for load in found["loads"]}
    assert {"poisson", "closed"} <= kinds
    for load in found["loads"]:
        for side in ("measured", "simulated"):
            assert set(load[side]) == {"ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms",
                                       "output_tokens_per_s"}  # fmt: skip
            assert load[side]["ttft_p50_ms"] > 0
    assert json.loads(files[0].read_text())["simulated"]["check"] == check.id, "the file holds both sides"
    assert set(marked_processes(MARKER_PREFIX)) <= before, "an engine process outlived the check"
