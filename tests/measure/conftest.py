"""Tiny whole runs for the measuring tests: a two-MLP profile, small ceilings, a small cache."""

from pathlib import Path

import pytest

from benchmarks import profiles
from benchmarks.commands.cli import main
from benchmarks.contract.results import read_run
from benchmarks.measure import ceiling_plan, runner
from benchmarks.profiles import CurvePlan, Profile

TINY = Profile(
    name="tiny",
    description="test-only: two tiny MLPs",
    sweeps=tuple(
        CurvePlan("mlp", {"width": w, "depth": 2}, ("float32",), ("graph", "eager"), (1, 4, 8, 16)) for w in (64, 128)
    ),
    rounds=3,
    min_sample_s=0.001,
    warmup_s=0.0,
)


def small_ceilings(monkeypatch):
    """Ceiling curves at a few small sizes: the fault paths do not need the real ones."""
    monkeypatch.setitem(ceiling_plan.COPY_BYTES, "cpu", 2**20)
    monkeypatch.setitem(ceiling_plan.WORKING_SETS, "cpu", [2**14, 2**17])
    monkeypatch.setitem(ceiling_plan.MATMUL_N, "cpu", 128)
    monkeypatch.setitem(ceiling_plan.MATMUL_SIZES, "cpu", [32, 128])
    monkeypatch.setattr(ceiling_plan, "WARMUP_S", 0.0)


def small_cache(monkeypatch, l2_bytes=2**16):
    """Report a 64 KiB last-level cache, so that 64 copies of a tiny MLP can rotate past it."""
    measured = runner.fingerprint

    def fingerprint(backend):
        return {**measured(backend), "l2_bytes": l2_bytes}

    monkeypatch.setattr(runner, "fingerprint", fingerprint)


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    monkeypatch.setitem(profiles.PROFILES, "tiny", TINY)
    monkeypatch.setattr(runner, "PROFILES", profiles.PROFILES)
    small_ceilings(monkeypatch)
    small_cache(monkeypatch)

    def run(*extra):
        return main(
            ["run", "--profile", "tiny", "--device", "cpu", "--threads", "1", "--results-dir", str(tmp_path), *extra]
        )

    return run


def written(capsys) -> Path:
    lines = capsys.readouterr().out.strip().splitlines()
    return Path(lines[-1])


@pytest.fixture
def one_sweep(monkeypatch, tmp_path, capsys):
    """Run a test-only profile of one sweep on the CPU; return the records by batch."""
    small_ceilings(monkeypatch)

    def run(sweep: CurvePlan) -> dict[int, dict]:
        profile = Profile(name="one-sweep", description="test-only", sweeps=(sweep,), rounds=3, min_sample_s=0.001)
        monkeypatch.setitem(profiles.PROFILES, "one-sweep", profile)
        args = ["run", "--profile", "one-sweep", "--device", "cpu", "--threads", "1", "--results-dir", str(tmp_path)]
        assert main(args) == 0
        return {r["batch"]: r for r in read_run(written(capsys)).records}

    return run
