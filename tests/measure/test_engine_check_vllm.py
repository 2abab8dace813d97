"""A real vLLM engine, started and stopped: the quick engine check on the tiny decoder (about 80 s on two cores).

Skipped where vLLM is not installed (the test environment has none); `nox -s tests-engine` installs vLLM's CPU
build and runs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
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


QUICK_CHECK_LIMIT_S = 480  # about 80 s on a warm 2-core machine; a fresh one's first engine start takes minutes


def run_stopping_on_timeout(command: list[str], before: set[int], prefix: str) -> subprocess.CompletedProcess:
    """Run the check; past QUICK_CHECK_LIMIT_S stop it with SIGTERM (the command then stops its engine), and kill by
    pid any engine process it still left, so that a slow machine fails the test without leaving an engine behind."""
    process = subprocess.Popen(
        command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=QUICK_CHECK_LIMIT_S)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            stdout, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
        for pid in set(marked_processes(prefix)) - before:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        pytest.fail(f"the quick check took over {QUICK_CHECK_LIMIT_S} s and was stopped:\n{stderr[-3000:]}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


@pytest.mark.slow
@pytest.mark.engine
def test_the_quick_check_measures_a_real_engine_replays_it_and_stops_it(tmp_path):
    from benchmarks.contract.engine_check import read_engine_check
    from benchmarks.measure.engine_server import MARKER_PREFIX

    before = set(marked_processes(MARKER_PREFIX))  # another check may be running on this host
    done = run_stopping_on_timeout(
        [sys.executable, "-m", "benchmarks.commands.engine_check", "--quick", "--json", "--results-dir",
         str(tmp_path)], before, MARKER_PREFIX,
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
