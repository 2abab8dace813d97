"""The serving check's command line: every problem that would stop a measurement is one line, before any cluster."""

import sys
import types

import pytest

from benchmarks.commands import serving_check as command
from benchmarks.contract.results import DEFAULT_RESULTS_DIR, result_files
from benchmarks.measure import serving_check as check


@pytest.fixture
def no_cluster(monkeypatch):
    """Fail the test if a check would start; a Ray with Serve, so that only the command's own checks refuse."""
    monkeypatch.setattr(check, "run_check", lambda *a, **k: pytest.fail("a cluster started"))
    ray = types.ModuleType("ray")
    ray.serve = types.ModuleType("ray.serve")
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setitem(sys.modules, "ray.serve", ray.serve)
    return ray


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def test_a_profile_run_as_the_curve_is_one_line(no_cluster, capsys, tmp_path):
    run = result_files([DEFAULT_RESULTS_DIR])[0]
    assert command.main(["--quick", "--curve", str(run), "--out", str(tmp_path)]) == 2
    assert (
        one_line(capsys) == f"error: --curve {run}: kind: is a profile run, not a model sweep (read it with read_run)"
    )


def test_a_curve_that_is_no_file_is_one_line(no_cluster, capsys, tmp_path):
    assert command.main(["--quick", "--curve", str(tmp_path / "none.json"), "--out", str(tmp_path)]) == 2
    assert "none.json: (file): cannot be read" in one_line(capsys)


def test_an_out_that_cannot_be_written_is_refused_before_the_cluster(no_cluster, capsys, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    assert command.main(["--quick", "--out", str(blocked / "serving")]) == 2
    assert one_line(capsys).startswith(f"error: --out {blocked / 'serving'}: cannot write there")


def test_ray_without_its_serve_library_is_one_line(no_cluster, monkeypatch, capsys, tmp_path):
    del no_cluster.serve
    no_cluster.__path__ = []  # a package, as Ray is, whose serve subpackage fails to import
    monkeypatch.setitem(sys.modules, "ray.serve", None)
    assert command.main(["--quick", "--out", str(tmp_path)]) == 2
    line = one_line(capsys)
    assert (
        line.startswith("error: measuring needs Ray Serve, which this Ray lacks (")
        and "pip install 'ray[serve]'" in line
    )
