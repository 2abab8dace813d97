"""A team's merged results directory builds in minutes: the whole site over 200 SYNTHETIC runs of 40 devices
(copies of the newest committed run, relabelled as fixtures: tests/many_runs.py) within three minutes, its
peak memory reported.

The time limit holds on an idle 2-core machine; BATCHING_MANY_RUNS_LIMIT_S sets another (a loaded machine).
"""

from __future__ import annotations

import os
import resource
import sys
import time

import pytest

from tests.end_to_end.test_site_build import build
from tests.many_runs import write_many_runs

pytestmark = [pytest.mark.build, pytest.mark.slow]
LIMIT_S = float(os.environ.get("BATCHING_MANY_RUNS_LIMIT_S", "180"))


@pytest.mark.xfail(
    reason="not yet within three minutes: 40 devices draw 1,053 charts, and exporting each as SVG and PNG "
    "(vl-convert) dominates the build; the pages themselves no longer validate every file again",
    strict=False,
    run=False,  # a build that cannot finish in time only runs into the build's 10-minute timeout: run it with
    # --runxfail to measure it
)
def test_200_runs_of_40_devices_build_within_three_minutes(tmp_path):
    results = tmp_path / "results"
    assert write_many_runs(results, devices=40, runs_per_device=5) == 200
    started = time.perf_counter()
    done = build(tmp_path / "site", results, synthetic=True, sweeps_dir=tmp_path / "no-sweeps")
    took = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the largest process: KiB on Linux
    print(f"200 runs of 40 devices: built in {took:.0f} s, largest process peak {peak_mib:.0f} MiB", file=sys.stderr)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "devices" / "index.html").read_text(encoding="utf-8").count("Synthetic device") >= 40
    assert took <= LIMIT_S, f"the build took {took:.0f} s (limit {LIMIT_S:.0f} s)"
