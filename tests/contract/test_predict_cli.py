"""`python -m benchmarks predict`: the roofline of a workload from a datasheet or a run's ceilings, and its
one-line refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.roofline.forecast import point_parts
from benchmarks.analysis.roofline.predict import PredictedPoint
from benchmarks.commands.cli import main
from benchmarks.contract.results import DEFAULT_RESULTS_DIR, load_results
from snippets.costs import DecoderConfig, decode_cost

PUBLISHED = Path(__file__).resolve().parents[2] / "benchmarks" / "published" / "measurements.json"

ROOT = Path(__file__).resolve().parents[2]
KIPPLY = ["layers=40", "d_model=5120", "heads=40", "kv_heads=40", "d_ff=20480", "ffn=gelu", "context=512"]


def predict(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["predict", *args])
    out, err = capsys.readouterr()
    return code, out, err


def as_json(capsys, *args: str) -> dict:
    code, out, err = predict(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_the_json_has_the_assumptions_a_point_per_batch_the_ridge_batch_and_the_forecast(capsys):
    params = [arg for pair in KIPPLY for arg in ("--param", pair)]
    found = as_json(capsys, "decode", "--gpu", "a100 sxm4 40gb", "--dtype", "fp16", "--batch", "8,1", *params)
    assert (
        set(found) == {"answer", "assumptions", "points", "ridge_batch", "forecast"} and found["answer"] == "forecast"
    )
    a = found["assumptions"]
    assert a["device"] == "NVIDIA A100 SXM4 40GB" and a["ceilings_from"] == "datasheet"
    assert a["flops_per_s"] == 312e12 and a["bytes_per_s"] == 1555e9 and a["dtype"] == "float16"
    assert a["params"]["phase"] == "decode" and "datasheet" in a["source"]
    first, second = found["points"]
    assert [first["batch"], second["batch"]] == [1, 8]
    assert set(first) == {"batch", "seconds", "forecast_seconds", "throughput", "forecast_throughput", "flops",
                          "bytes", "bound", "fits"}  # fmt: skip
    cost = decode_cost(1, 512, DecoderConfig(40, 5120, 40, 40, 20480, "gelu"), 2)
    assert first["flops"] == cost["flops"] and first["bytes"] == cost["bytes"]
    assert first["seconds"] == pytest.approx(cost["bytes"] / 1555e9)  # 16.5 ms: kipply's post predicts 16.8
    assert first["throughput"] == pytest.approx(1 / first["seconds"])
    assert first["bound"] == "memory" and first["fits"] is True
    assert found["ridge_batch"] == [{"count": "bytes as counted", "batch": None, "on_ridge": False}]  # MHA, 512
    # the forecast: the committed calibration's efficiencies applied to the ceiling, with the error of decode on one GPU
    e = calibration_file.committed().efficiency("decode", "float16")
    assert found["forecast"]["efficiency"] == {"memory": e.memory, "compute": e.compute, "fixed_s": e.fixed_s}
    ceiling = PredictedPoint(1, first["flops"], first["bytes"], first["flops"] / 312e12, first["seconds"], 0.0)
    assert first["forecast_seconds"] == pytest.approx(e.seconds(point_parts(ceiling)), rel=1e-3)
    assert first["forecast_seconds"] >= first["seconds"]  # never faster than the ceiling
    error = calibration_file.committed().expected_for("decode", 1)
    assert found["forecast"]["kind"] == "decode" and found["forecast"]["expected_error"]["median"] == error.median


def test_ceiling_gives_the_bare_roofline(capsys):
    found = as_json(capsys, "decode", "--gpu", "h100 sxm", "--dtype", "bf16", "--batch", "1", "--ceiling")
    assert found["answer"] == "ceiling" and found["points"][0]["forecast_seconds"] is None
    code, out, _ = predict(capsys, "decode", "--gpu", "h100 sxm", "--dtype", "bf16", "--batch", "1", "--ceiling")
    assert code == 0 and out.startswith("Ceiling (the roofline), not measured") and "no forecast" in out


def test_every_parameter_defaults_to_the_snippets(capsys):
    found = as_json(capsys, "MLP", "--gpu", "NVIDIA H100 80GB HBM3", "--dtype", "BF16", "--batch", "1,4096")
    assert found["assumptions"]["params"] == {"width": 1024, "depth": 8}
    assert found["assumptions"]["device"] == "NVIDIA H100 SXM"  # an alias, in any case
    assert [p["bound"] for p in found["points"]] == ["memory", "compute"]
    stated, cached = found["ridge_batch"]
    assert stated["count"] == "every layer's activations through memory" and 295 < stated["batch"] < 700
    assert cached["count"] == "activations kept in cache" and cached["batch"] < stated["batch"]
    # an MLP is matrix products: the GEMM figures' efficiencies and error
    assert found["forecast"]["kind"] == "GEMM" and found["forecast"]["family"] == "matrix product"
    assert all(p["forecast_seconds"] >= p["seconds"] for p in found["points"])  # never faster than the ceiling


def test_the_fit_counts_the_kv_cache(capsys):
    found = as_json(capsys, "decode", "--gpu", "t4", "--dtype", "fp16", "--batch", "1,1024", "--param", "context=8192")
    assert [p["fits"] for p in found["points"]] == [True, False]  # 1.6 GiB of weights; 1,024 caches of 128 MiB


def test_a_run_lends_its_measured_ceilings(capsys):
    run = max(load_results(DEFAULT_RESULTS_DIR).runs, key=lambda r: r.started_at)
    found = as_json(capsys, "linear", "--run", str(run.path), "--dtype", "float32", "--batch", "1")
    a = found["assumptions"]
    assert a["ceilings_from"] == "measured" and run.id in a["source"]
    assert a["flops_per_s"] == run.ceilings["matmul"]["float32"]["flops_per_s"]
    assert a["bytes_per_s"] == run.ceilings["copy"]["bytes_per_s"]


def test_the_table_states_the_assumptions_once(capsys):
    code, out, _ = predict(capsys, "resnet50", "--gpu", "h100 sxm", "--dtype", "float16", "--batch", "1,64")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("Forecast, not measured: ResNet-50 @224² in float16 on NVIDIA H100 SXM")
    assert out.count("ceilings:") == 1 and "989 TFLOP/s float16" in out and "nvidia.com" in out
    assert sum(line.split()[0] in ("1", "64") for line in lines if line.strip()) == 2
    assert "ridge batch (every elementwise pass through memory): " in out
    assert "  with elementwise passes fused: " in out
    assert "expected error ±" in out and "published CNN figures" in out
    assert "critical batch" not in out and "knee" not in out


def test_a_decode_table_gives_the_forecast_beside_the_ceiling(capsys):
    params = [arg for pair in KIPPLY for arg in ("--param", pair)]
    code, out, _ = predict(capsys, "decode", "--gpu", "a100 sxm4 40gb", "--dtype", "fp16", "--batch", "1", *params)
    error = calibration_file.committed().expected_for("decode", 1)
    assert code == 0 and f"expected error ±{error.median * 100:.0f} % median, ±{error.p90 * 100:.0f} % at p90" in out
    assert out.splitlines()[-2].split()[0] == "1" and "forecast    ceiling" in out
    assert "the matmuls' max(FLOPs / peak FLOP/s, bytes / bandwidth) plus the attention's" in out


def test_a_cpu_run_gets_no_forecast(capsys):
    run = max(load_results(DEFAULT_RESULTS_DIR).runs, key=lambda r: r.started_at)
    found = as_json(capsys, "decode", "--run", str(run.path), "--dtype", "float32", "--batch", "1")
    assert found["answer"] == "ceiling" and "this is a CPU run" in found["forecast"]["words"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["foo", "--gpu", "t4"], "unknown workload 'foo'; choose from mlp, linear, moe, conv, resnet50, decode"),
        (["mlp", "--gpu", "tpu"], "unknown GPU 'tpu'; choose from NVIDIA T4,"),
        (["mlp", "--gpu", "a100"], "ambiguous GPU 'a100'; choose from NVIDIA A100 SXM4 80GB, NVIDIA A100 SXM4 40GB"),
        (["mlp", "--gpu", "t4", "--dtype", "bf16"], "the NVIDIA T4 datasheet gives no bfloat16 rate"),
        (["mlp", "--gpu", "t4", "--dtype", "int3"], "unknown dtype 'int3'"),
        (["mlp", "--gpu", "t4", "--batch", "0"], "give whole numbers from 1 to 16,777,216"),
        (["mlp", "--gpu", "t4", "--batch", "two"], "give whole numbers separated by commas"),
        (["mlp", "--gpu", "t4", "--param", "width=0"], "mlp: width must be at least 1"),
        (["mlp", "--gpu", "t4", "--param", "height=3"], "KEY one of width, depth"),
        (["mlp", "--gpu", "t4", "--param", "width=wide"], "width must be a whole number"),
        (["decode", "--gpu", "t4", "--param", "heads=7"], "decode: heads (7) must divide d_model (4096)"),
        (["decode", "--gpu", "t4", "--param", "ffn=relu"], "ffn must be one of gelu, swiglu"),
        (["moe", "--gpu", "t4", "--param", "top_k=9"], "moe: top_k (9) must not exceed experts (8)"),
        (["mlp", "--run", "/nonexistent/run.json"], "/nonexistent/run.json: (file): cannot be read"),
        (["mlp", "--run", ""], "--run '': give one results file"),
        (["mlp", "--run", str(DEFAULT_RESULTS_DIR)], "': give one results file"),  # a directory
        (["mlp", "--run", str(PUBLISHED)], "schema_version: must be 1 or 2 (missing); is this a results file?"),
        (["mlp", "--gpu", "t4", "--batch", "1,,2"], "give whole numbers separated by commas"),
        (["mlp", "--gpu", "t4", "--batch", "\u0661\u0662"], "give whole numbers separated by commas"),  # Arabic-Indic
        (["mlp", "--gpu", "t4", "--param", "width=\u0661\u0660"], "width must be a whole number"),
        (["mlp", "--gpu", "t4", "--param", "width=8", "--param", "width=9"], "width is given twice"),
        (["moe", "--gpu", "t4", "--param", "skew=nan"], "skew must be a finite number"),
        (["moe", "--gpu", "t4", "--param", "skew=inf"], "skew must be a finite number"),
        (["decode", "--gpu", "t4", "--param", "phase=prefill", "--param", "context=0"], "a prefill needs a prompt"),
    ],
)
def test_a_refusal_is_one_line_and_exit_2(capsys, args, said):
    defaults = {"--dtype": "fp16", "--batch": "1"}
    extra = [item for flag, value in defaults.items() if flag not in args for item in (flag, value)]
    code, out, err = predict(capsys, *args, *extra)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and said in err, err


def test_a_run_without_the_dtype_says_what_it_measured(capsys):
    run = max(load_results(DEFAULT_RESULTS_DIR).runs, key=lambda r: r.started_at)
    code, _, err = predict(capsys, "mlp", "--run", str(run.path), "--dtype", "bf16", "--batch", "1")
    assert code == 2 and "measured no bfloat16 matmul rate (it measured float32)" in err


def test_the_command_runs_without_torch():
    code = (
        "import sys; sys.modules['torch'] = None\n"  # any import of torch now fails
        "from benchmarks.commands.cli import main\n"
        "sys.exit(main(['predict', 'mlp', '--gpu', 'h200', '--dtype', 'bf16', '--batch', '1', '--json']))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["assumptions"]["device"] == "NVIDIA H200"


def test_a_gpu_is_found_by_its_own_short_name(capsys):
    for name, full in (("A10", "NVIDIA A10"), ("l4", "NVIDIA L4")):  # not the A100s, not the L40S
        assert (
            as_json(capsys, "linear", "--gpu", name, "--dtype", "fp32", "--batch", "1")["assumptions"]["device"] == full
        )


def test_help_lists_every_workloads_parameters_with_defaults_and_ranges(capsys):
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    out = capsys.readouterr().out
    assert "width=1024  (1 to 131,072)" in out and "ffn=swiglu  (one of gelu, swiglu)" in out
    assert "context=2048  (0 to 16,777,216)" in out
