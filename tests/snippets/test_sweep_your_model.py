"""The guide's snippet: it runs on a CPU in seconds, and the rule it applies picks the batch the guide says."""

import subprocess
import sys
from pathlib import Path

import pytest

from snippets.choose import choose, largest_within, throughput_flattens

ROOT = Path(__file__).resolve().parents[2]


def test_the_rule_on_a_flat_then_linear_curve():
    points = [(1, 1.0), (2, 1.0), (4, 1.0), (8, 1.1), (16, 2.0), (32, 4.0), (64, 8.0)]
    assert largest_within(points, 2.0) == 16 and largest_within(points, 0.5) is None
    assert throughput_flattens(points) == 16  # batch 8 reaches 8 / 1.1 = 7.3 rows per unit, 91 % of the best (8)
    assert choose(points, 4.0) == 16 and choose(points, 1.0) == 4
    assert choose(points, 0.5) == 4  # nothing fits: the fastest (batch 1), then batch 4, measured no slower


def test_the_rule_never_runs_a_batch_a_larger_one_beats():
    points = [(1, 1.0), (32, 1.2), (63, 1.86), (64, 1.82), (96, 2.9)]
    assert throughput_flattens(points) == 63 and choose(points, 10.0) == 64


@pytest.mark.slow
def test_the_snippet_runs_on_a_cpu_and_names_a_batch():
    done = subprocess.run(
        [sys.executable, "snippets/sweep_your_model.py"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].split() == ["batch", "ms", "per", "call", "items/s"]
    assert len(lines) == 1 + 9 + 3 and lines[-1].startswith("run batch ")
