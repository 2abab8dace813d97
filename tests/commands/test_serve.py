"""`python -m benchmarks serve`: a policy planned from a committed sweep, a run's curve or a prediction, and its
one-line refusals."""

from __future__ import annotations

import json
import sys
import types

import pytest

from benchmarks.commands.cli import main
from benchmarks.commands.serve import source_argument
from benchmarks.contract.results import DEFAULT_RESULTS_DIR, result_files, write_atomic
from benchmarks.site.model_sweeps import load_sweeps

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


@pytest.mark.slow
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
        (["{sweep}", "--rate", "x", "--budget-ms", "50"], "--rate 'x': give a number above 0"),
        (["{sweep}", "--rate", "-3", "--budget-ms", "50"], "--rate '-3'"),
        (["{sweep}", "--rate", "5", "--budget-ms", "0"], "--budget-ms '0'"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--server", "nginx"], "--server 'nginx'"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--handler", "awaiting"], "--handler awaiting is Ray"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--percentile", "97"], "--percentile '97'"),
        (["{sweep}", "--rate", "5", "--budget-ms", "50", "--instances", "0"], "--gpus (--instances) '0'"),
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
        (["resnet50", "--gpu", "a100", "--dtype", "fp16", "--rate", "5", "--budget-ms", "50"], "ambiguous GPU"),
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


CURVE_CSV = "batch,ms,p90_ms,p99_ms\n1,2.0,2.2,3.0\n2,2.1,2.3,3.1\n4,2.3,2.6,3.5\n8,3.0,3.4,4.4\n16,5.2,5.8,7.0\n"


@pytest.fixture
def curve_csv(tmp_path):
    path = tmp_path / "curve.csv"  # synthetic: a made-up curve, for the reader and the planner only
    path.write_text(CURVE_CSV)
    return str(path)


def test_a_csv_curve_is_served_with_its_spread(capsys, curve_csv):
    code, out, err = serve(capsys, curve_csv, "--rate", "200", "--budget-ms", "20", "--json", *FAST)
    assert code == 0, err
    found = json.loads(out)
    assert found["source"]["origin"] == "measured" and found["source"]["batches_measured"] == [1, 2, 4, 8, 16]
    assert "p90_ms, p99_ms" in found["source"]["provenance"]
    assert found["meets_budget"] and found["policy"]["max_batch"] in {1, 2, 4, 8, 16}


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("batch,msec\n1,2\n", "unknown column 'msec'"),
        ("batch,ms,seconds\n1,2,0.002\n", "one of ms or seconds"),
        ("batch,ms\n", "no rows"),
        ("batch,ms\n1,2\n1,3\n", "line 3: batch 1 is given twice"),
        ("batch,ms\n0,2\n", "line 2: batch '0'"),
        ("batch,ms\nx,2\n", "line 2: batch 'x' is not a whole number"),
        ("batch,ms\n1,nan\n", "line 2: ms 'nan' must be a time"),
        ("batch,ms\n1,2,3\n", "line 2: 3 cells under 2 columns"),
        ("batch,ms,p99_ms\n1,2,1\n", "p99 must be at least the median"),
    ],
)
def test_a_bad_csv_is_one_line_naming_its_line(capsys, tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    code, out, err = serve(capsys, str(path), "--rate", "5", "--budget-ms", "50")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert message in err


def test_a_csv_that_is_not_a_regular_file_is_refused(capsys, tmp_path):
    (tmp_path / "dir.csv").mkdir()
    code, _, err = serve(capsys, str(tmp_path / "dir.csv"), "--rate", "5", "--budget-ms", "50")
    assert code == 2 and "not a regular file" in err


def test_a_csv_spread_sets_the_tail_not_the_median():
    from benchmarks.analysis.serving.batcher.simulator import ServiceCurve

    curve = ServiceCurve.from_percentiles({4: 0.002}, {4: {90: 0.003, 99: 0.006}})
    assert curve.median(4) == pytest.approx(0.002, rel=0.01)
    assert curve.mean(4) > 0.002  # the tail above the median lifts the mean
    no_tail = ServiceCurve.from_percentiles({4: 0.002})
    assert no_tail.mean(4) == pytest.approx(0.002)


def test_your_policy_is_evaluated_at_every_rate(capsys, curve_csv):
    code, out, err = serve(capsys, curve_csv, "--rate", "200,800,4000", "--policy", "16/5/1", "--json", *FAST)
    assert code == 0, err  # no budget: nothing to miss
    found = json.loads(out)
    assert found["policy"]["max_batch"] == 16 and found["policy"]["max_delay_s"] == pytest.approx(0.005)
    assert [r["rate_per_s"] for r in found["at_rates"]] == [200, 800, 4000]
    assert [r["overloaded"] for r in found["at_rates"]] == [False, False, True]  # 16 in 5.2 ms: ~3,000/s at most
    assert found["meets_budget"] is None and found["capacity_per_s"] is None


def test_your_policy_over_its_budget_exits_3(capsys, curve_csv):
    code, out, _ = serve(capsys, curve_csv, "--rate", "200,4000", "--policy", "16/5", "--budget-ms", "20", *FAST)
    assert code == 3
    assert "Your policy: Triton, max batch 16, max delay 5 ms, 1 instance" in out
    assert "overloaded" in out and "capacity within the budget" in out


def test_no_policy_meeting_the_budget_exits_3_with_the_closest(capsys, curve_csv):
    code, out, _ = serve(capsys, curve_csv, "--rate", "200", "--budget-ms", "1.5", *FAST)
    assert code == 3
    assert "No policy tried meets the budget. Closest: Triton, max batch" in out


@pytest.mark.parametrize(
    "policy, message",
    [("16", "give MAX_BATCH/DELAY_MS"), ("0/5", "--policy max batch '0'"), ("8/x", "max delay (ms) 'x'"),
     ("8/1/0", "--policy devices '0'")],
)  # fmt: skip
def test_a_bad_policy_is_one_line(capsys, curve_csv, policy, message):
    code, out, err = serve(capsys, curve_csv, "--rate", "5", "--policy", policy)
    assert code == 2 and out == "" and message in err, err


def test_the_batches_tried_include_every_measured_batch_and_the_sweeps_answer():
    from benchmarks.analysis.serving.batcher.policy import candidates
    from benchmarks.analysis.serving.batcher.simulator import ServiceCurve

    curve = ServiceCurve.deterministic({1: 0.001, 6: 0.002, 19: 0.004, 40: 0.008})
    tried = {p.max_batch for p in candidates(curve, "triton", 1, 0.1, "blocking", batches=(1, 6, 19, 40, 23))}
    assert tried == {1, 2, 4, 8, 16, 32, 40, 6, 19, 23}


def test_instances_on_one_gpu_are_told_apart_from_separate_gpus(capsys, curve_csv):
    # synthetic curve: 16 take 5.2 ms against 2 ms for one, so two copies on one GPU overlap only in part
    code, out, err = serve(
        capsys, curve_csv, "--rate", "4000", "--policy", "16/2/1", "--instances-per-gpu", "2", "--json", *FAST
    )
    assert code == 0, err
    shared = json.loads(out)
    assert shared["policy"]["instances"] == 2 and shared["policy"]["devices"] == 1
    code, out, _ = serve(capsys, curve_csv, "--rate", "4000", "--policy", "16/2/2", "--json", *FAST)
    separate = json.loads(out)
    assert separate["policy"]["devices"] == 2
    assert shared["at_rates"][0]["utilisation"] > separate["at_rates"][0]["utilisation"]
    code, _, err = serve(
        capsys, curve_csv, "--rate", "5", "--budget-ms", "9", "--server", "ray", "--instances-per-gpu", "2"
    )
    assert code == 2 and "--instances-per-gpu is for triton and torchserve" in err


def test_host_cores_queue_the_overhead_and_cap_the_rate(capsys, curve_csv):
    args = [curve_csv, "--rate", "100,400", "--policy", "8/1", "--overhead-ms", "4", "--json", *FAST]
    code, out, err = serve(capsys, *args)
    assert code == 0, err
    fixed = json.loads(out)
    code, out, err = serve(capsys, *args, "--host-cores", "2")
    queued = json.loads(out)
    assert queued["host_cores"] == 2 and fixed["host_cores"] is None
    at_400 = [r["mean_s"]["host"] for r in (fixed["at_rates"][1], queued["at_rates"][1])]
    assert at_400[0] == pytest.approx(0.004) and at_400[1] > 0.004  # 400/s of 4 ms is 80 % of two cores
    code, out, _ = serve(capsys, curve_csv, "--rate", "600", "--policy", "8/1", "--overhead-ms", "4",
                         "--host-cores", "2", "--json", *FAST)  # fmt: skip
    assert json.loads(out)["at_rates"][0]["overloaded"]  # 2.4 cores of work on 2
    code, _, err = serve(capsys, curve_csv, "--rate", "5", "--policy", "8/1", "--host-cores", "2")
    assert code == 2 and "give --overhead-ms too" in err


def test_only_the_source_chooses_the_llm_planner(capsys, resnet_sweep):
    code, _, err = serve(capsys, resnet_sweep, "--rate", "2", "--budget-ms", "100", "--server", "llm:x", *FAST)
    assert code == 2 and err.strip() == "error: --server 'llm:x': choose from triton, ray, torchserve, none"
    assert source_argument(["--rate", "2", "--server=llm:x", "--json", "llm:Llama-3-8B"]) == "llm:Llama-3-8B"
    assert source_argument(["--budget-ms", "5", "--", "--odd.json"]) == "--odd.json"


@pytest.mark.parametrize(
    ("times", "message"),
    [
        ("0\n1e308\n", "its own rate, 1e-308 requests/s, is outside 1e-06 to 1e+09 requests/s"),
        ("0\n1e-320\n", "its own rate, inf requests/s, is outside"),
        ("0\n1e-300\n", "its own rate, 1e+300 requests/s, is outside"),
    ],
)
def test_a_trace_whose_own_rate_is_out_of_bounds_is_one_line(capsys, resnet_sweep, tmp_path, times, message):
    trace = tmp_path / "trace.txt"
    trace.write_text(times)
    code, out, err = serve(capsys, resnet_sweep, "--budget-ms", "100", "--arrivals", f"trace:{trace}", "--json", *FAST)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {trace}: ") and message in err


@pytest.mark.slow
def test_batches_above_the_simulators_largest_are_left_out(capsys, tmp_path):
    from tests.synthetic import make_sweep

    path = tmp_path / "big.json"
    write_atomic(path, make_sweep(batches=(1, 1024, 70000), per_row_s=1e-7))
    code, out, err = serve(capsys, str(path), "--rate", "100", "--budget-ms", "100", "--json", *FAST)
    assert code == 0, err
    found = json.loads(out)["source"]
    assert found["largest_batch"] == 1024 and found["provenance"].endswith("; 1 batch size above 65,536 left out")
    write_atomic(path, make_sweep(batches=(70000,), per_row_s=1e-7))
    code, _, err = serve(capsys, str(path), "--rate", "100", "--budget-ms", "100", *FAST)
    assert code == 2 and err.strip() == (
        f"error: {path}: every batch measured is above 65,536, the largest a served batch may be"
    )


def test_a_max_batch_above_the_curve_is_said(capsys, resnet_sweep):
    code, _, err = serve(capsys, resnet_sweep, "--rate", "5", "--budget-ms", "300", "--max-batch", "4096", *FAST)
    assert code == 0
    assert "note: --max-batch 4,096 is above the curve's largest batch, " in err


def test_ctrl_c_during_the_simulations_is_one_line_and_exit_130(capsys, resnet_sweep, monkeypatch):
    from benchmarks.commands import serve as serve_command

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(serve_command, "search", interrupted)
    code, out, err = serve(capsys, resnet_sweep, "--rate", "5", "--budget-ms", "300", *FAST)
    assert code == 130 and out == ""
    assert err.strip() == "interrupted"


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
