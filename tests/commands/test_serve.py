"""`python -m benchmarks serve`: a policy planned from a committed sweep, a run's curve or a prediction, and its
one-line refusals."""

from __future__ import annotations

import json
import sys
import types

import pytest

from benchmarks.analysis.sweeps import load_sweeps
from benchmarks.commands.cli import main
from benchmarks.contract.results import DEFAULT_RESULTS_DIR, result_files

FAST = ["--requests", "2000"]


def serve(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["serve", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def resnet_sweep() -> str:
    found = [s for s in load_sweeps() if s.doc["model"]["name"] == "ResNet50"]
    assert found, "a committed ResNet-50 sweep"
    return str(found[0].path)


def test_a_sweep_gives_a_policy_and_its_reasons(capsys, resnet_sweep):
    code, out, err = serve(capsys, resnet_sweep, "--rate", "20", "--budget-ms", "300", *FAST)
    assert code == 0, err
    assert "Recommended: Triton, max batch" in out
    assert "p99" in out and "Without batching, 1 instance would sustain" in out
    assert "batch times from sweep" in out


def test_json_holds_the_policy_the_numbers_and_the_explanation(capsys, resnet_sweep):
    code, out, err = serve(capsys, resnet_sweep, "--rate", "10,30", "--budget-ms", "150", "--json", *FAST)
    assert code == 0, err
    found = json.loads(out)
    assert found["source"]["origin"] == "measured" and found["source"]["dtype"] == "float32"
    assert found["meets_budget"] and found["policy"]["server"] == "triton"
    assert [r["rate_per_s"] for r in found["at_rates"]] == [10, 30]
    for entry in found["at_rates"]:
        assert entry["percentiles_s"]["99"] <= 0.150 and entry["mean_batch"] >= 1
        assert set(entry["breakdown_s"]) == {"queue", "formation", "service", "overhead"}
    assert found["capacity_per_s"] > 30 and found["unbatched_capacity_per_s"] < found["capacity_per_s"]
    assert len(found["candidates"]) == found["candidates_tried"] > 1
    chosen = [c for c in found["candidates"] if c["description"] == found["policy"]["description"]]
    assert chosen[0]["meets_budget"] and chosen[0]["capacity_per_s"] == found["capacity_per_s"]


def test_a_run_curve_and_a_prediction(capsys):
    run = next(p for p in result_files([DEFAULT_RESULTS_DIR]) if "quick" in p.name)
    code, out, err = serve(
        capsys, f"{run}:mlp", "--param", "width=256", "--mode", "eager", "--cache", "rotated",
        "--max-batch", "32", "--rate", "200", "--budget-ms", "20", *FAST,
    )  # fmt: skip
    assert code == 0, err
    assert "8×256 MLP" in out and "(measured)" in out
    assert "Recommended: Triton, max batch" in out and "max batch 64" not in out
    code, out, err = serve(
        capsys, "resnet50", "--gpu", "H100 SXM", "--dtype", "fp16", "--max-batch", "64",
        "--rate", "5000", "--budget-ms", "20", "--server", "ray", "--json", *FAST,
    )  # fmt: skip
    assert code == 0, err
    found = json.loads(out)
    assert found["source"]["origin"] == "predicted" and found["source"]["largest_batch"] == 64
    assert found["policy"]["server"] == "ray" and found["policy"]["handler"] == "blocking"


def test_an_awaiting_ray_handler_is_planned_as_such(capsys, resnet_sweep):
    code, out, err = serve(
        capsys, resnet_sweep, "--rate", "5", "--budget-ms", "200", "--server", "ray", "--handler", "awaiting", *FAST
    )
    assert code == 0, err
    assert "awaiting handler" in out


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "required"),
        (["{sweep}"], "--budget-ms"),
        (["{sweep}", "--budget-ms", "50"], "give --rate"),
        (["{sweep}", "--rate", "x", "--budget-ms", "50"], "--rate 'x': must be a number"),
        (["{sweep}", "--rate", "-3", "--budget-ms", "50"], "--rate '-3'"),
        (["{sweep}", "--rate", "5", "--budget-ms", "0"], "--budget-ms '0'"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--server", "nginx"], "--server 'nginx'"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--handler", "awaiting"], "--handler awaiting is Ray"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--percentile", "97"], "--percentile '97'"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--instances", "0"], "--instances '0'"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--arrivals", "uniform"], "--arrivals 'uniform'"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--arrivals", "gamma:0"], "gamma:CV '0'"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--arrivals", "trace:/no/such"], "cannot be read"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--param", "width=8"], "choose a run's curve"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--bogus"], "unrecognized arguments: --bogus"),
        (["no/such.json", "--rate", "5", "--budget-ms", "50"], "no/such.json: (file): cannot be read"),
        (["{sweep}:mlp", "--rate", "5", "--budget-ms", "50"], "is a model sweep"),
        (["{run}", "--rate", "5", "--budget-ms", "50"], "is a profile run; name one of its curves"),
        (["{run}:mlp", "--rate", "5", "--budget-ms", "50"], "mlp curves match; choose one with"),
        (["{run}:mlp", "--param", "width=3", "--rate", "5", "--budget-ms", "50"], "no ok mlp record has width=3"),
        (["{run}:tpu", "--rate", "5", "--budget-ms", "50"], "unknown workload 'tpu'"),
        (["resnet50", "--gpu", "h100", "--dtype", "fp16", "--rate", "5", "--budget-ms", "50"], "ambiguous GPU"),
        (["resnet50", "--gpu", "H100 SXM", "--rate", "5", "--budget-ms", "50"], "give --dtype"),
        (["resnet50", "--gpu", "T4", "--dtype", "fp8", "--rate", "5", "--budget-ms", "50"], "gives no float8 rate"),
        (["gpt5", "--gpu", "T4", "--dtype", "fp16", "--rate", "5", "--budget-ms", "50"], "SOURCE is a workload"),
        (["mlp", "--gpu", "T4", "--dtype", "fp16", "--param", "width=0", "--rate", "5", "--budget-ms", "5"], "width"),
        (["model.onnx", "--rate", "5", "--budget-ms", "50"], "SOURCE 'model.onnx'"),
    ],
)
def test_every_bad_input_is_one_line_and_exit_2(capsys, resnet_sweep, args, message):
    run = next(p for p in result_files([DEFAULT_RESULTS_DIR]) if "quick" in p.name)
    args = [a.format(sweep=resnet_sweep, run=run) for a in args]
    code, out, err = serve(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert message in err


def test_llm_sources_go_to_the_llm_planner(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "benchmarks.commands.serve_llm", None)  # a build without it
    code, out, err = serve(capsys, "llm:Llama-3-8B", "--rate", "2")
    assert (code, out, err) == (2, "", "error: LLM serving is not available in this build\n")
    seen = []
    fake = types.ModuleType("benchmarks.commands.serve_llm")
    fake.main = lambda argv: seen.append(argv) or 0
    monkeypatch.setitem(sys.modules, "benchmarks.commands.serve_llm", fake)
    assert main(["serve", "llm:Llama-3-8B", "--rate", "2"]) == 0
    assert main(["serve", "--rate", "2", "llm:Llama-3-8B"]) == 0
    assert seen == [["llm:Llama-3-8B", "--rate", "2"], ["--rate", "2", "llm:Llama-3-8B"]]


def test_a_prediction_is_served_on_the_forecast_unless_ceiling_is_asked(capsys):
    args = ["resnet50", "--gpu", "H100 SXM", "--dtype", "fp16", "--max-batch", "16", "--rate", "500",
            "--budget-ms", "20", "--json", *FAST]  # fmt: skip
    code, out, err = serve(capsys, *args)
    assert code == 0, err
    forecast = json.loads(out)["source"]
    code, out, err = serve(capsys, *args, "--ceiling")
    ceiling = json.loads(out)["source"]
    assert forecast["mode"].startswith("forecast") and "expected error ±" in forecast["forecast"]
    assert ceiling["mode"].startswith("roofline") and ceiling["forecast"] is None and ceiling["ceiling_s"] is None
    code, out, _ = serve(capsys, *args[: -1 - len(FAST)], *FAST)
    assert "forecast batch times: batch 1:" in out and "(ceiling " in out
