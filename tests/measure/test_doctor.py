"""`python -m benchmarks doctor`: the table, the smoke verdicts, the JSON file, bad input."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.commands.cli import main
from benchmarks.measure import doctor, smoke
from benchmarks.measure.smoke import Verdict

ROOT = Path(__file__).resolve().parents[2]
ROWS = ["python", "torch", "cuDNN", "host", "torch API", "CUDA", "torch.compile", "attention backends"]


def test_the_table_on_a_cpu_and_its_json(tmp_path, capsys):
    report = tmp_path / "doctor.json"
    assert main(["doctor", "--device", "cpu", "--no-smoke", "--json", str(report)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split("  ")[0].strip() for line in out] == ROWS
    found = json.loads(report.read_text())
    assert [row["name"] for row in found["environment"]] == ROWS and found["passed"] is True
    assert found["smoke"] is None
    values = {row["name"]: row["value"] for row in found["environment"]}
    assert "math" in values["attention backends"] and values["torch API"].startswith("all ")


def test_smoke_verdicts_decide_the_exit_status_and_reach_the_json(tmp_path, capsys, monkeypatch):
    verdicts = [Verdict("ceilings", "PASS", "ok"), Verdict("mode graph", "SKIP", "needs CUDA"),
                Verdict("kernel names", "FAIL", "no kernel names")]  # fmt: skip
    monkeypatch.setattr(smoke, "smoke_verdicts", lambda options, results_dir, published: (verdicts, 1.5))
    report = tmp_path / "doctor.json"
    assert main(["doctor", "--device", "cpu", "--threads", "1", "--json", str(report)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  kernel names" in out and "smoke: 2 of 3 paths passed or skipped, 1 failed, in 1.5 s" in out
    found = json.loads(report.read_text())
    assert found["passed"] is False and found["smoke"]["paths"][2] == {
        "path": "kernel names", "status": "FAIL", "detail": "no kernel names"}  # fmt: skip


def test_a_missing_compiler_is_a_problem_that_fails_the_check(capsys, monkeypatch):
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("CXX", raising=False)
    assert main(["doctor", "--device", "cpu", "--no-smoke"]) == 1
    assert "torch.compile on a CPU needs a C++ compiler" in capsys.readouterr().out


def test_a_missing_torch_name_is_a_problem(capsys, monkeypatch):
    monkeypatch.setitem(doctor.torch_api.SINCE, "torch.cuda.no_such_function", "2.0")
    assert main(["doctor", "--device", "cpu", "--no-smoke"]) == 1
    assert "names missing: torch.cuda.no_such_function" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--threads", "0"], "error: --threads 0: choose 1 to"),
        (["--json", "/no/such/folder/doctor.json"], "error: --json /no/such/folder/doctor.json: give a file in an"),
    ],
)
def test_bad_input_is_one_line_and_status_2(options, message, capsys):
    assert main(["doctor", "--device", "cpu", *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


@pytest.mark.slow
def test_the_doctor_runs_the_smoke_profile_on_this_cpu_in_about_a_minute(tmp_path):
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "doctor", "--threads", "1", "--json", str(tmp_path / "d.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert ", 0 failed, in " in done.stdout and json.loads((tmp_path / "d.json").read_text())["passed"]
    print(f"doctor: {time.perf_counter() - started:.0f} s")
