"""A real Ray Serve deployment, started and stopped: the quick serving check (about a minute on two cores).

Skipped where Ray is not installed (the test environment has none); `nox -s tests-ray` installs
Ray and runs it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray is installed by `nox -s tests-ray` only")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.ray
def test_the_quick_check_measures_both_handler_styles_and_stops_its_cluster(tmp_path):
    from benchmarks.analysis.serving.batcher.ray_serve_comparison import compare
    from benchmarks.contract.serving_check import read_serving_check

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.commands.serving_check", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 1
    check = read_serving_check(files[0])
    assert check.doc["run"]["complete"] and not check.synthetic
    assert {r["handler"] for r in check.runs} == {"awaiting", "blocking"}
    assert all(r["failed"] == 0 and r["batches"]["size"] for r in check.runs)
    assert check.doc["server"]["max_ongoing_requests"] >= 16
    found = compare(check)
    awaiting = next(r for r in found.rows if r.case.handler == "awaiting")
    assert awaiting.mean_batch < 2  # 10 requests/s, 5 ms wait: about 1 + 10 × 0.005 requests per batch
    assert "within 20%" in done.stdout
    # every process the cluster started is gone: none carries the cluster's marker
    from benchmarks.measure.serving_cleanup import marked_processes

    marker = re.search(r"cluster ([0-9a-f]{16}) stopped; 0 of its processes left", done.stderr)
    assert marker, done.stderr[-2000:]
    assert marked_processes(marker.group(1)) == []
