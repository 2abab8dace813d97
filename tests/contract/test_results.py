import json

import pytest

from benchmarks.contract.results import DEFAULT_RESULTS_DIR, load_results, newest_complete_runs, read_run, write_atomic
from tests.synthetic import make_run


def test_one_bad_file_hides_no_good_ones(tmp_path, write_doc):
    write_doc(make_run(run_id="a"))
    write_doc(make_run(run_id="b", slug="other"))
    bad = write_doc('{"schema_version": 1}', name="bad.json")
    report = load_results(tmp_path)
    assert sorted(run.id for run in report.runs) == ["a", "b"]
    assert len(report.errors) == 1
    assert str(report.errors[0]).startswith(f"{bad}: run: is required but missing")


def test_newest_complete_run_per_device():
    runs = [
        make_run(run_id="old", started_at="2026-01-01T00:00:00+00:00"),
        make_run(run_id="new", started_at="2026-02-01T00:00:00+00:00"),
        make_run(run_id="newer-but-incomplete", started_at="2026-03-01T00:00:00+00:00", complete=False),
        make_run(run_id="cpu", slug="cpu-x", kind="cpu", started_at="2026-01-05T00:00:00+00:00", complete=False),
    ]
    from benchmarks.contract.results import Run

    loaded = [Run(path=None, doc=doc) for doc in runs]
    assert newest_complete_runs(loaded) == {}  # synthetic runs are never chosen for publication
    chosen = newest_complete_runs(loaded, include_synthetic=True)
    assert chosen["synthetic-gpu"].id == "new"
    assert chosen["cpu-x"].id == "cpu"  # an incomplete run is used when it is all there is


def test_write_atomic_replaces_whole_files_and_leaves_no_temporaries(tmp_path):
    path = tmp_path / "dev" / "run.json"
    write_atomic(path, {"a": 1})
    write_atomic(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    with pytest.raises(ValueError):
        write_atomic(path, {"a": float("nan")})  # refused: JSON has no NaN
    with pytest.raises(TypeError):
        write_atomic(path, {"a": object()})
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in path.parent.iterdir()] == ["run.json"]


def test_committed_results_are_valid_and_real():
    report = load_results(DEFAULT_RESULTS_DIR)
    assert report.errors == []
    for run in report.runs:
        assert not run.synthetic, f"{run.path} is a synthetic fixture"
        assert run.path.parent.name == run.device["slug"]
        assert run.path.stem == run.id
        assert read_run(run.path).doc == run.doc


def test_written_files_are_readable_by_others(tmp_path):
    import os
    import stat

    path = tmp_path / "run.json"
    old = os.umask(0o022)
    try:
        write_atomic(path, {"a": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
