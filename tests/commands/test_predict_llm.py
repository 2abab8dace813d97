"""`predict llm:MODEL`: a language model's decode step per batch from the step model `serve llm:` schedules, its
refusals in one line, and one reading of a GPU's short name in every command."""

from __future__ import annotations

import json

import pytest

from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.serving.llm.forecast_step import ForecastStep
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.commands.cli import main
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import LLAMA_3_8B

TAKEN = "note: 'H100' taken as the NVIDIA H100 SXM (name another part to choose it)"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_issue_s_command_answers_with_the_step_serve_llm_schedules(capsys):
    code, out, err = run(capsys, "predict", "llm:Llama-3-8B", "--gpu", "H100", "--dtype", "bf16", "--batch", "1,8",
                         "--json")  # fmt: skip
    assert code == 0, err
    found = json.loads(out)
    ceiling = RooflineStep(LLAMA_3_8B, find_gpu("NVIDIA H100 SXM"), "bfloat16")
    forecast = ForecastStep.of(ceiling, calibration_file.committed().efficiency("decode", "bfloat16"))
    context = found["assumptions"]["context"]
    assert context == 2048 and found["answer"] == "forecast"
    for point in found["points"]:
        b = point["batch"]
        # the simulator's own call for a decode-only step of b sequences with `context` tokens each before it
        positions = b * (context + 1)
        assert point["forecast_seconds"] == pytest.approx(forecast.step_seconds(b, positions, 0, 0.0, 0.0, b))
        assert point["ceiling_seconds"] == pytest.approx(ceiling.step_seconds(b, positions, 0, 0.0, 0.0, b))
        assert point["forecast_seconds"] > point["ceiling_seconds"] and point["fits"] is True
    assert found["forecast"]["expected_error"]["median"] > 0
    assert [p["batch"] for p in found["points"]] == [1, 8]


def test_the_table_states_the_expected_error_and_a_row_per_batch(capsys):
    code, out, err = run(capsys, "predict", "llm:llama-3-8b", "--gpu", "H100 SXM", "--dtype", "bf16", "--batch",
                         "1,256")  # fmt: skip
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert "expected error ±" in lines[2]
    rows = [line.split() for line in lines if line[:1].isdigit()]
    assert [r[0] for r in rows] == ["1", "256"]
    assert rows[0][-1] == "yes" and rows[1][-1] == "no"  # 256 × 2,049 cached tokens do not fit beside the weights


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["llm:Llama-3-8B", "--tp", "3"], "--tp 3: Llama-3-8B cannot be split so: its 32 attention heads"),
        (["llm:GPT-9"], "unknown model 'GPT-9'; choose from"),
        (["llm:Llama-3-8B", "--context", "9000"], "--context '9000': give a whole number from 0 to 8,191"),
        (["llm:Llama-3-8B", "--fusion", "fused"], "--fusion is for resnet50"),
        (["llm:Llama-3-8B", "--param", "layers=2"], "--param is for llm:custom"),
        (["llm:custom", "--param", "layers=2"], "llm:custom needs --param for d_model"),
        (["mlp", "--context", "64"], "--context is for llm:MODEL"),
    ],
)
def test_every_bad_llm_request_is_one_line_and_exit_2(capsys, args, said):
    code, out, err = run(capsys, "predict", *args, "--gpu", "H100 SXM", "--dtype", "bf16", "--batch", "1")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and said in err, err


def test_a_run_is_refused_for_a_language_model(capsys):
    code, _, err = run(capsys, "predict", "llm:Llama-3-8B", "--run", "x.json", "--dtype", "bf16", "--batch", "1")
    assert code == 2 and "serve llm:run --run PATH" in err


def test_a_short_gpu_name_means_the_same_part_in_every_command(capsys):
    code, out, err = run(capsys, "predict", "mlp", "--gpu", "H100", "--dtype", "fp16", "--batch", "8", "--json")
    assert code == 0 and json.loads(out)["assumptions"]["device"] == "NVIDIA H100 SXM" and err.strip() == TAKEN
    code, out, err = run(capsys, "serve", "resnet50", "--gpu", "H100", "--dtype", "fp16", "--rate", "50",
                         "--budget-ms", "50", "--json")  # fmt: skip
    assert code == 0, err
    assert TAKEN in err and "NVIDIA H100 SXM" in out and "PCIe" not in out
    code, out, err = run(capsys, "serve", "llm:Llama-3-8B", "--gpu", "H100", "--concurrency", "1", "--requests", "4",
                         "--json")  # fmt: skip
    assert code == 0, err
    assert "NVIDIA H100 SXM" in out and "PCIe" not in out
    for command in (["predict", "mlp", "--dtype", "fp16", "--batch", "8"], ["serve", "llm:Llama-3-8B"]):
        code, _, err = run(capsys, *command, "--gpu", "A100")
        assert code == 2 and "ambiguous GPU 'A100'; choose from NVIDIA A100 SXM4 80GB, NVIDIA A100 SXM4 40GB" in err
