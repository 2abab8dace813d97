"""A run fails early and says it once: results directory, threads, stop signals, write errors, one run per
device, honest provenance. Each run here is the tiny test profile on this CPU (tests/measure/test_runner.py)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from benchmarks.contract import results
from benchmarks.contract.results import read_run
from benchmarks.measure import runner, sampler
from benchmarks.measure.fingerprint import fingerprint
from benchmarks.measure.session import DeviceLock, provenance
from tests.measure.conftest import written
from tests.measure.test_runner import ROOT


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def test_a_results_dir_that_cannot_be_written_is_refused_before_measuring(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    measured = []
    monkeypatch.setattr(runner, "measure_ceilings", lambda *a, **k: measured.append(1))
    from benchmarks.commands.cli import main

    assert main(["run", "--device", "cpu", "--results-dir", str(blocker / "results")]) == 2
    assert _one_line(capsys).startswith(f"error: --results-dir {blocker / 'results'}: cannot write there")
    assert not measured


def test_threads_beyond_the_cores_are_refused(capsys):
    from benchmarks.commands.cli import main

    assert main(["run", "--threads", "100000"]) == 2
    assert _one_line(capsys) == f"error: --threads 100000: choose 1 to {os.cpu_count()}, the cores of this machine"


def test_sigterm_ends_with_a_valid_incomplete_file(tiny, capsys, monkeypatch):
    original = sampler.measure_points

    def signalled(*args, after_round=None, **kwargs):
        def after(outcomes):
            after_round(outcomes)
            os.kill(os.getpid(), signal.SIGTERM)

        return original(*args, after_round=after, **kwargs)

    monkeypatch.setattr(runner, "measure_points", signalled)
    assert tiny() == 143
    err = capsys.readouterr()
    assert err.err.strip().startswith("SIGTERM: stopped by a signal; kept ") and "Traceback" not in err.err
    run = read_run(Path(err.out.strip().splitlines()[-1]))
    assert not run.complete and run.doc["run"]["interrupted"] == "SIGTERM: stopped by a signal"
    assert run.doc["run"]["finished_at"] is None and run.records


def test_a_full_disk_ends_in_one_line_and_keeps_the_last_complete_write(tiny, capsys, monkeypatch):
    writes = {"n": 0}
    original = results.write_atomic

    def filling(path, doc):
        writes["n"] += 1
        if writes["n"] > 2:  # the ceilings' write and one round's go through; then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        original(path, doc)

    monkeypatch.setattr(runner, "write_atomic", filling)
    assert tiny() == 1
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("writing the results failed: No space left on device")
    assert "Traceback" not in out.err
    run = read_run(Path(out.out.strip().splitlines()[-1]))  # the last complete write is still valid
    assert not run.complete


def test_one_run_per_device_at_a_time(tiny, capsys, tmp_path):
    from benchmarks.measure.backends import CpuBackend

    lock = DeviceLock(fingerprint(CpuBackend(1))["slug"])
    assert lock.acquire(allow_contended=False) is False
    try:
        assert tiny() == 2
        assert _one_line(capsys).startswith("error: another measurement is using this device (pid ")
        assert tiny("--allow-contended") == 0
        assert read_run(written(capsys)).doc["run"]["contended"] is True
    finally:
        lock.release()
    assert tiny() == 0
    assert "contended" not in read_run(written(capsys)).doc["run"]


def test_leftover_temporaries_are_removed_and_ignored_by_git(tiny, capsys, tmp_path):
    assert tiny() == 0
    device_dir = written(capsys).parent
    stale = device_dir / ".20260101T000000Z-old.json.abc123.tmp"
    stale.write_text("{")
    assert tiny() == 0
    assert not stale.exists()
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "benchmarks/results/cpu-x/.20260101T000000Z-old.json.abc123.tmp"], cwd=ROOT
    )
    assert ignored.returncode == 0


def test_provenance_records_a_commit_only_for_code_that_repository_tracks(tmp_path):
    outer = tmp_path / "bigger-repo"
    outer.mkdir()

    def git(*args):
        return subprocess.run(["git", *args], cwd=outer, capture_output=True, text=True, check=True).stdout.strip()

    git("init", "-q")
    git("-c", "user.email=x@example.invalid", "-c", "user.name=x", "commit", "-q", "--allow-empty", "-m", "outer")
    for folder in ("benchmarks", "snippets"):
        shutil.copytree(ROOT / folder, outer / folder, ignore=shutil.ignore_patterns("results", "__pycache__"))
    (outer / "pyproject.toml").write_text("")
    code = "from benchmarks.measure.session import provenance; import json; print(json.dumps(provenance()))"

    def recorded():
        done = subprocess.run([sys.executable, "-c", code], cwd=outer, capture_output=True, text=True, check=True)
        return json.loads(done.stdout)

    assert recorded() == [None, None]  # the outer repository's commit is not this code's
    git("add", "benchmarks", "snippets")
    git("-c", "user.email=x@example.invalid", "-c", "user.name=x", "commit", "-q", "-m", "vendored")
    commit, dirty = recorded()
    assert commit == git("rev-parse", "HEAD") and dirty is False
    (outer / "snippets" / "scratch.py").write_text("# untracked")
    assert recorded()[1] is True  # an untracked file in the measured code makes it dirty


def test_this_checkout_records_its_commit():
    commit, dirty = provenance()
    assert commit is not None and len(commit) == 40 and dirty in (True, False)
