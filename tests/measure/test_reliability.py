"""Runs and sweeps that measured nothing, time limits that cover everything, one lock for every measuring
command, paths checked before any work, and a model's contract checked before any timing."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from benchmarks.commands.cli import main
from benchmarks.contract.results import read_run, read_sweep
from benchmarks.measure import estimate, runner
from benchmarks.measure import sweep as sweep_module
from benchmarks.measure.backends import CpuBackend
from benchmarks.measure.fingerprint import fingerprint
from benchmarks.measure.sampler import PointOutcome
from benchmarks.measure.session import DeviceLock
from benchmarks.site.data import load_site_data
from benchmarks.site.model_sweeps import load_sweeps
from tests.measure.conftest import written
from tests.measure.test_sweep import TINY as TINY_MODEL
from tests.measure.test_sweep import fast, target  # noqa: F401 (fixtures)

SLUG = fingerprint(CpuBackend(1))["slug"]


def _err(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def _nothing_timed(monkeypatch, module):
    """Every workload point skipped, as when a time limit leaves no time to sample (the ceilings still run)."""
    measured = module.measure_points

    def skipped(backend, points, **options):
        if any(p.curve == "copy" for p in points):
            return measured(backend, points, **options)  # the ceilings
        late = "not sampled: the run's time limit came before this point's first sample"
        return {(p.curve, p.batch): PointOutcome("skipped", message=late) for p in points}

    monkeypatch.setattr(module, "measure_points", skipped)


# --------------------------------------------------------------------------- runs that measured nothing


def test_a_time_limit_too_small_for_anything_is_refused_before_any_work(tiny, capsys, monkeypatch):
    monkeypatch.setattr(runner, "measure_ceilings", lambda *a, **k: pytest.fail("measured"))
    assert tiny("--time-limit", "0.001") == 2
    (line,) = _err(capsys)
    assert line.startswith("error: --time-limit 0.001: too short to measure anything; the smallest useful limit is ")
    least = estimate.time_budget(runner.PROFILES["tiny"], list(runner.PROFILES["tiny"].sweeps), "cpu").least_s
    assert f"limit is {int(-(-least // 1))} s" in line


def test_a_run_that_timed_nothing_is_incomplete_and_never_shown(tiny, capsys, monkeypatch, tmp_path):
    assert tiny() == 0
    good = read_run(written(capsys))
    _nothing_timed(monkeypatch, runner)
    assert tiny() == 1
    out = capsys.readouterr()
    empty = read_run(Path(out.out.strip().splitlines()[-1]))
    assert "measured nothing: none of 8 points was timed (first: not sampled" in out.err
    assert not empty.complete and empty.doc["run"]["workloads_done"] == []
    assert empty.started_at >= good.started_at
    data = load_site_data(tmp_path, synthetic=True)
    assert [r.id for r in data.shown] == [good.id]
    assert data.source(good.device["slug"], "mlp") is not None and data.source(good.device["slug"], "mlp").id == good.id


def test_a_complete_run_without_a_timed_point_never_replaces_a_good_one(tiny, capsys, tmp_path):
    """As older harnesses wrote it: complete, every workload 'done', every point skipped."""
    assert tiny() == 0
    good = read_run(written(capsys))
    doc = json.loads(good.path.read_text())
    doc["run"].update(id=doc["run"]["id"][:-6] + "ffffff", started_at="2099-01-01T00:00:00+00:00",
                      finished_at="2099-01-01T00:01:00+00:00")  # fmt: skip
    for record in doc["records"]:
        record.update(status="skipped", message="not sampled (fixture)", median_s=None, timing=None)
    (good.path.parent / f"{doc['run']['id']}.json").write_text(json.dumps(doc))
    data = load_site_data(tmp_path, synthetic=True)
    assert [r.id for r in data.shown] == [good.id]
    assert data.source(good.device["slug"], "mlp").id == good.id


def test_smoke_runs_stay_out_of_the_site_unless_asked_for(tiny, capsys, tmp_path, monkeypatch):
    assert tiny() == 0
    good = read_run(written(capsys))
    doc = json.loads(good.path.read_text())
    doc["run"].update(id=doc["run"]["id"][:-6] + "eeeeee", started_at="2099-01-01T00:00:00+00:00",
                      finished_at="2099-01-01T00:01:00+00:00", profile="smoke")  # fmt: skip
    (good.path.parent / f"{doc['run']['id']}.json").write_text(json.dumps(doc))
    data = load_site_data(tmp_path, synthetic=True)
    assert [r.id for r in data.shown] == [good.id] and len(data.runs) == 1
    monkeypatch.setenv("BATCHING_INCLUDE_SMOKE", "1")
    assert [r.id for r in load_site_data(tmp_path, synthetic=True).shown] == [doc["run"]["id"]]


# --------------------------------------------------------------------------- the time limit covers the ceilings


def test_the_ceilings_are_inside_the_time_limit(tiny, capsys, monkeypatch):
    """Ceilings whose curves would take over half the limit are measured without them, by a deadline that
    leaves the workloads their share; the whole run ends within the limit."""
    seen = {}
    measured = runner.measure_ceilings

    def spy(*args, **options):
        seen.update(options)
        return measured(*args, **options)

    budget = estimate.time_budget(runner.PROFILES["tiny"], list(runner.PROFILES["tiny"].sweeps), "cpu")
    slow = estimate.TimeBudget(budget.least_s, budget.every_s, budget.least_ceilings_s, 1000.0, budget.machine)
    monkeypatch.setattr(runner, "time_budget", lambda *a, **k: slow)
    monkeypatch.setattr(runner, "measure_ceilings", spy)
    started = time.perf_counter()
    assert tiny("--time-limit", "6") == 0
    elapsed = time.perf_counter() - started
    run = read_run(written(capsys))
    assert seen["ceilings_only"] is True and seen["deadline"] < started + 6
    curves = run.ceilings["curves"]  # the ceiling points alone: one copy size, one matmul size per dtype
    assert len(curves["bandwidth"]) == 1 and len(curves["matmul"]) == len(run.ceilings["matmul"])
    assert run.doc["run"]["fitted_to_time"].startswith("to fit 6 s: the ceilings without their bandwidth and matmul")
    assert elapsed < 6 + 1, elapsed


# --------------------------------------------------------------------------- paths before work


def test_a_results_dir_whose_device_folder_is_a_file_is_refused_before_measuring(tiny, capsys, tmp_path, monkeypatch):
    (tmp_path / SLUG).write_text("")
    monkeypatch.setattr(runner, "measure_ceilings", lambda *a, **k: pytest.fail("measured"))
    assert tiny() == 2
    (line,) = _err(capsys)
    assert line.startswith(f"error: --results-dir {tmp_path / SLUG}: cannot write there")


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_an_empty_results_dir_is_refused(command, capsys):
    args = ["run", "--device", "cpu"] if command == "run" else ["sweep", "x.py:factory", "--device", "cpu"]
    with pytest.raises(SystemExit) as stopped:
        main([*args, "--results-dir", ""])
    assert stopped.value.code == 2
    assert "--results-dir: give a directory (an empty name would write into the current one)" in _err(capsys)[-1]


def _sweep(tmp_path, spec, *options):
    args = ["sweep", spec, "--device", "cpu", "--threads", "1", "--input-shape", "32"]
    return main([*args, "--results-dir", str(tmp_path / "out"), *options])


def test_a_report_path_that_cannot_be_written_is_refused_before_any_work(tmp_path, target, capsys, monkeypatch):  # noqa: F811
    monkeypatch.setattr(sweep_module, "run_sweep", lambda *a, **k: pytest.fail("the sweep started"))
    assert _sweep(tmp_path, target(TINY_MODEL), "--report", "/proc/r.html") == 2
    (line,) = _err(capsys)
    assert line.startswith("error: --report /proc/r.html: /proc is not writable")


def test_an_existing_report_is_replaced_only_with_force(tmp_path, target, capsys, monkeypatch):  # noqa: F811
    report = tmp_path / "r.html"
    report.write_text("mine")
    monkeypatch.setattr(sweep_module, "run_sweep", lambda *a, **k: pytest.fail("the sweep started"))
    assert _sweep(tmp_path, target(TINY_MODEL), "--report", str(report)) == 2
    assert _err(capsys) == [f"error: --report {report}: the file exists; pass --force to replace it"]
    assert _sweep(tmp_path, target(TINY_MODEL), "--report", str(report), "--force") == 1  # in the measuring process
    assert _err(capsys)[-2:] == [
        "error: the measuring process failed: Failed: the sweep started",
        "error: the model's process exited with status 1 before timing any batch; no results file kept",
    ]
    assert report.read_text() == "mine"


def test_a_sweep_whose_device_folder_is_a_file_is_refused_before_measuring(fast, tmp_path, target, capsys, monkeypatch):  # noqa: F811
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / SLUG).write_text("")
    monkeypatch.setattr(sweep_module, "measure_ceilings", lambda *a, **k: pytest.fail("measured"))
    assert _sweep(tmp_path, target(TINY_MODEL)) == 2
    (line,) = _err(capsys)
    assert line.startswith(f"error: --results-dir {tmp_path / 'out' / SLUG}: cannot write there")


# --------------------------------------------------------------------------- sweeps


def test_a_sweep_that_timed_nothing_is_incomplete_exits_1_and_is_not_published(fast, tmp_path, target, capsys,  # noqa: F811
                                                                                monkeypatch):  # fmt: skip
    _nothing_timed(monkeypatch, sweep_module)
    assert _sweep(tmp_path, target(TINY_MODEL), "--report", str(tmp_path / "r.html")) == 1
    out = capsys.readouterr()
    found = read_sweep(out.out.strip().splitlines()[-1])
    assert not found.doc["run"]["complete"]
    assert found.doc["run"]["interrupted"].startswith("measured nothing: no batch size was timed (first: not sampled")
    assert out.err.strip().splitlines()[-1].startswith("error: measured nothing: no batch size was timed")
    assert not (tmp_path / "r.html").exists()
    assert load_sweeps(tmp_path / "out", synthetic=True) == []


def test_a_sweep_time_limit_too_small_is_refused_before_any_work(tmp_path, target, capsys, monkeypatch):  # noqa: F811
    monkeypatch.setattr(sweep_module, "measure_ceilings", lambda *a, **k: pytest.fail("measured"))
    assert _sweep(tmp_path, target(TINY_MODEL), "--time-limit", "0.001") == 2
    (line,) = _err(capsys)
    least = estimate.least_sweep_s("cpu", "float32")
    assert line == (f"error: --time-limit 0.001: too short to measure anything; the smallest useful limit is "
                    f"{int(-(-least // 1))} s (the ceilings and the first batches)")  # fmt: skip


def test_a_sweep_takes_the_device_lock(fast, tmp_path, target, capsys):  # noqa: F811
    lock = DeviceLock(SLUG)
    assert lock.acquire(allow_contended=False) is False
    try:
        assert _sweep(tmp_path, target(TINY_MODEL), "--batches", "1") == 2
        assert _err(capsys)[-1].startswith("error: another measurement is using this device (pid ")
        assert _sweep(tmp_path, target(TINY_MODEL), "--batches", "1", "--allow-contended") == 0
        out = capsys.readouterr()
        assert read_sweep(out.out.strip().splitlines()[-1]).doc["run"]["contended"] is True
        assert lock.joined()  # the run holding the lock is marked contended when it finishes
    finally:
        lock.release()
    assert _sweep(tmp_path, target(TINY_MODEL), "--batches", "1") == 0
    assert "contended" not in read_sweep(capsys.readouterr().out.strip().splitlines()[-1]).doc["run"]


def test_a_run_beside_a_contended_sweep_is_marked_contended(tiny, capsys):
    lock = DeviceLock(SLUG)
    assert lock.acquire(allow_contended=False) is False
    joiner = DeviceLock(SLUG)
    try:
        assert joiner.acquire(allow_contended=True) is True
        assert lock.joined()
    finally:
        joiner.release()
        lock.release()


BROKEN = {
    "drops the batch": ("return self.layer(x)[:1]", "at batch 2 the output has first dimension 1, not the batch 2"),
    "sums the batch": ("return self.layer(x).sum(0)", "at batch 1 the output has first dimension 32, not the batch 1"),
    "a scalar": ("return self.layer(x).sum()", "at batch 1 the output has a scalar, not the batch 1"),
    "NaN": ("return self.layer(x) * float('nan')", "at batch 1 the output holds NaN or infinite values"),
    "no tensor": ("return None", "the model returned NoneType with no tensor in it"),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_model_that_breaks_the_contract_is_refused_in_one_line(tmp_path, target, capsys, monkeypatch, name):  # noqa: F811
    forward, message = BROKEN[name]
    source = f"""
    import torch
    from torch import nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(32, 32)

        def forward(self, x):
            {forward}

    def factory():
        return Model()
    """
    monkeypatch.setattr(sweep_module, "measure_ceilings", lambda *a, **k: pytest.fail("measured"))
    spec = target(source)
    assert _sweep(tmp_path, spec) == 2
    (line,) = _err(capsys)
    assert line.startswith("error: ") and message in line
