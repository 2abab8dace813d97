"""The real-server check stops the processes its cluster started, found by their marker, and no others."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from benchmarks.measure.serving_cleanup import MARKER, marked_processes, stop_leftovers

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds processes through /proc")


def _sleeper(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)


def test_only_the_marked_processes_are_stopped():
    marked = _sleeper({**os.environ, MARKER: "0123456789abcdef"})
    other = _sleeper({**os.environ, MARKER: "fedcba9876543210"})
    plain = _sleeper({k: v for k, v in os.environ.items() if k != MARKER})
    try:
        assert marked_processes("0123456789abcdef") == [marked.pid]
        assert stop_leftovers("0123456789abcdef", grace_s=5) == []
        assert marked.wait(timeout=5) is not None
        assert other.poll() is None and plain.poll() is None
        assert marked_processes("0123456789abcdef") == []
    finally:
        for process in (marked, other, plain):
            process.kill()
            process.wait()
