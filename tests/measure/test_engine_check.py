"""The engine check without vLLM: its client, its server handling, the whole check, the comparison and the command,
against a SYNTHETIC stand-in server (tests/measure/stand_in_vllm) that speaks vLLM's OpenAI API and its /metrics.

The stand-in's timings are made up and only ever written under a test's temporary directory.
"""

from __future__ import annotations

import json
import os
import random
import socket
import sys
from pathlib import Path

import pytest

from benchmarks.llm_models import TINY_LLAMA
from benchmarks.measure import engine_check
from benchmarks.measure.engine_check import CheckPlan, EngineSetting, LengthMix, StepProbes, run_check
from benchmarks.measure.engine_client import closed_loop, open_loop, parse_metrics, poisson_offsets
from benchmarks.measure.engine_server import (
    MARKER_PREFIX,
    EngineOptions,
    EngineRefused,
    EngineServer,
    model_config,
    write_model,
)

ROOT = Path(__file__).resolve().parents[2]
STAND_IN = Path(__file__).resolve().parent / "stand_in_vllm"
SYNTHETIC_CEILINGS = {  # SYNTHETIC: a made-up host, so that no test waits for the real ceilings
    "threads": 1,
    "copy": {"bytes_per_s": 1.0e10},
    "matmul": {"bfloat16": {"flops_per_s": 1.0e12}, "float32": {"flops_per_s": 1.0e11}},
}
CONFIG = model_config(TINY_LLAMA)


def marked_processes() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if MARKER_PREFIX.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture
def stand_in(monkeypatch):
    """Children find the stand-in as `vllm`; this process does not."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(STAND_IN), str(ROOT)]))
    monkeypatch.setattr(engine_check, "measure_ceilings_here", lambda: SYNTHETIC_CEILINGS)
    before = set(marked_processes())  # another check may be running on this host
    yield
    assert set(marked_processes()) <= before, "a stand-in engine outlived its test"


def server(tmp_path: Path, mode: str = "", **kwargs) -> EngineServer:
    env = {"STAND_IN_MODE": mode} if mode else {}
    return EngineServer(sys.executable, write_model(tmp_path / "model", CONFIG), "tiny", EngineOptions(4, 2048, True),
                        tmp_path / "engine.log", env=env, **kwargs)  # fmt: skip


def jobs(n: int, prompt: int = 16, output: int = 6):
    rng = random.Random(0)
    return engine_check._jobs([prompt] * n, [output] * n, rng, 1024)


def test_the_client_streams_every_token_and_reads_the_gauges(tmp_path, stand_in):
    with server(tmp_path) as s:
        records, gauges = closed_loop("127.0.0.1", s.port, "tiny", jobs(6), 3, period_s=0.01)
        assert [r.ok for r in records] == [True] * 6
        assert all(len(r.token_s) == 6 and r.token_s == sorted(r.token_s) for r in records)
        assert all(r.token_s[0] > r.sent_s for r in records)
        assert gauges.t_s and max(gauges.running) <= 4
        offsets = poisson_offsets(50.0, 5, random.Random(1))
        records, _ = open_loop("127.0.0.1", s.port, "tiny", jobs(5), offsets)
        assert all(r.ok for r in records)
        assert all(r.sent_s >= r.scheduled_s for r in records)
    assert not s.alive()


def test_a_request_asking_too_much_is_an_error_of_its_own_not_a_crash(tmp_path, stand_in):
    with server(tmp_path) as s:
        records, _ = closed_loop("127.0.0.1", s.port + 0, "tiny", jobs(1), 1, timeout_s=5)
        free = socket.socket()
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
        free.close()
        failed, _ = closed_loop("127.0.0.1", port, "tiny", jobs(2), 1, timeout_s=2)
    assert records[0].ok
    assert all(r.error and "Error" in r.error for r in failed)


def test_metrics_are_summed_over_label_sets_and_nan_kept_out():
    text = 'vllm:num_requests_running{engine="0"} 3.0\nvllm:num_requests_running{engine="1"} 2.0\n# HELP x\nother 1\n'
    assert parse_metrics(text) == {"running": 5.0}


def test_a_port_in_use_is_refused_in_one_line_before_any_engine_starts(tmp_path, stand_in):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        s = server(tmp_path, port=taken.getsockname()[1])
        with pytest.raises(EngineRefused, match="is in use"):
            s.start()
    assert s.process is None


def test_an_engine_that_never_answers_is_stopped_at_its_deadline(tmp_path, stand_in):
    s = server(tmp_path, "never-healthy")
    with pytest.raises(EngineRefused, match="did not answer /health in time"):
        s.start(deadline_s=4)
    assert not s.alive()


def test_an_engine_that_exits_is_refused_with_its_log_s_reason(tmp_path, stand_in):
    s = server(tmp_path, "exit")
    with pytest.raises(EngineRefused) as refused:
        s.start(deadline_s=30)
    message = str(refused.value)
    assert "exited with status 1" in message and "max_num_batched_tokens is smaller" in message
    assert "\n" not in message and "pydantic" not in message


def fixed(n: int, seed: int):
    return [32] * n, [8] * n


def tiny_plan(**changes) -> CheckPlan:
    plan = CheckPlan(
        model="Tiny-Llama",
        config=CONFIG,
        settings=(EngineSetting("s4-chunked", EngineOptions(4, 2048, True)),),
        mixes=(LengthMix("fixed", "prompts 32, outputs 8", fixed),),
        rates=(30.0,),
        rate_fractions=(),
        concurrencies=(2,),
        requests=10,
        repeats=1,
        probes=StepProbes((1, 2, 4), (32,), 8, (16, 256), ((2, 256),), 1),
    )
    return CheckPlan(**{**plan.__dict__, **changes})


def test_a_whole_check_is_written_read_back_and_replayed(tmp_path, stand_in):
    from benchmarks.analysis.serving.llm.engine_comparison import accuracy, compare_file, summary
    from benchmarks.contract.engine_check import read_engine_check

    path = run_check(tiny_plan(), sys.executable, tmp_path / "out", ["test"], tmp_path / "work")
    check = read_engine_check(path)
    assert check.complete and check.doc["engine"]["version"] == "0.0.0+stand-in"
    assert [load["load"] for load in check.loads] == ["capacity", "poisson", "closed"]
    assert (path.parent / check.doc["settings"][0]["log"]).is_file()
    found = compare_file(path)
    assert {x.kind for x in found.loads} == {"capacity", "poisson", "closed"}
    for x in found.loads:
        assert x.measured.ttft_p50_ms > 0 and x.simulated.ttft_p50_ms > 0 and x.forecast is not None
    out = summary(found)
    assert out["model_config"] == CONFIG
    assert set(out["capacity_per_s"]) >= {"measured", "simulated"}
    assert out["loads"][1]["rate_per_s"] == 30.0 and out["loads"][2]["concurrency"] == 2
    json.dumps(out, allow_nan=False)
    within, of = accuracy(found).within["ttft_p50_ms"]
    assert 0 <= within <= of <= 1  # one Poisson load, counted where it is below 80 % of the measured capacity
    refused_when_changed(path, check.doc)


def refused_when_changed(path: Path, doc: dict) -> None:
    """The strict reader names the field of every broken copy of a good file, in one line."""
    from benchmarks.contract.results import ResultsError

    def broken(change) -> str:
        bad = json.loads(json.dumps(doc))
        change(bad)
        path.write_text(json.dumps(bad))
        with pytest.raises(ResultsError) as refused:
            read_engine_check(path)
        assert "\n" not in str(refused.value)
        return str(refused.value)

    from benchmarks.contract.engine_check import read_engine_check

    assert "token_s[0]" in broken(lambda d: d["loads"][1]["requests"]["token_s"][0].reverse())
    assert "loads[1].setting" in broken(lambda d: d["loads"][1].update(setting="nowhere"))
    assert "loads[2].failed" in broken(lambda d: d["loads"][2].update(failed=3))
    assert "settings[1].name" in broken(lambda d: d["settings"].append(d["settings"][0]))
    assert "rate_per_s" in broken(lambda d: d["loads"][1].update(rate_per_s=None))
    assert "kind" in broken(lambda d: d.update(kind="serving-check"))
    path.write_text(json.dumps(doc)[:-40])
    with pytest.raises(ResultsError):
        read_engine_check(path)


def test_an_engine_killed_mid_check_stops_it_with_one_line_and_keeps_what_was_measured(tmp_path, stand_in, monkeypatch):
    from benchmarks.contract.engine_check import read_engine_check

    monkeypatch.setenv("STAND_IN_MODE", "die-after:25")
    with pytest.raises(EngineRefused, match="stopped during the check"):
        run_check(tiny_plan(probes=None), sys.executable, tmp_path / "out", ["test"], tmp_path / "work")
    (path,) = (tmp_path / "out").rglob("*.json")
    check = read_engine_check(path)
    assert not check.complete and "EngineRefused" in check.doc["run"]["interrupted"]


def run_command(*argv: str) -> tuple[int, str]:
    import contextlib
    import io

    from benchmarks.commands.engine_check import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, err.getvalue()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--max-num-seqs", "0"], "--max-num-seqs"),
        (["--model", "GPT-9"], "not in the registry"),
        (["--model", "Qwen1.5-MoE-A2.7B"], "Llama- and Mixtral-shaped"),
        (["--chunked-prefill", "off", "--max-batched-tokens", "512"], "at least the model length"),
        (["--rate", "-1"], "--rate"),
        (["--prompt-tokens", "lognormal:5"], "--prompt-tokens"),
        (["--compare", "/nonexistent/check.json"], "check.json"),
    ],
)
def test_a_bad_option_is_one_line_and_status_2_before_any_engine_starts(argv, said, tmp_path):
    code, err = run_command(*argv, "--results-dir", str(tmp_path))
    assert code == 2
    assert err.count("\n") == 1 and said in err, err
    assert not any(tmp_path.iterdir())


def test_a_python_without_vllm_is_refused_in_one_line(tmp_path):
    code, err = run_command("--quick", "--python", sys.executable, "--results-dir", str(tmp_path))
    assert code == 2 and "vLLM does not import" in err and err.count("\n") == 1
