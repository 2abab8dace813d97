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


def test_the_table_on_a_gpu_from_stand_ins(monkeypatch):
    """The CUDA rows, from a stand-in device (no GPU here): an H200 as torch and nvidia-smi report it,
    with one clock nvidia-smi could not read."""
    from types import SimpleNamespace

    import torch

    props = SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132, L2_cache_size=60 * 2**20)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index: (139 * 2**30, 140 * 2**30))
    smi = {"driver": "580.159.03", "clocks_mhz": {"sm": 345.0, "sm_max": 1980.0, "memory": None, "memory_max": 3201.0},
           "power_limit_w": 700.0}  # fmt: skip
    monkeypatch.setattr(doctor, "nvidia_smi", lambda index: smi)
    monkeypatch.setattr(doctor, "attention_backends", lambda device: doctor.Fact("attention backends", "flash"))
    facts = {f.name: f for f in doctor.environment("auto")}
    assert facts["device"].value == "NVIDIA H200, compute capability 9.0" and facts["SMs"].value == "132"
    assert facts["L2"].value == "60 MiB" and facts["memory"].value == "139.0 GiB free of 140.0 GiB"
    assert facts["clocks"].value == "SM 345 of 1980 MHz, memory ? of 3201 MHz"
    assert facts["driver"].value == "580.159.03" and facts["power limit"].value == "700 W"
    assert "triton" in facts["torch.compile"].value


def test_the_table_shows_the_threads_the_smoke_run_uses(capsys):
    import torch

    before = torch.get_num_threads()
    try:
        assert main(["doctor", "--device", "cpu", "--no-smoke", "--threads", "1"]) == 0
        assert "torch uses 1" in capsys.readouterr().out
    finally:
        torch.set_num_threads(before)
