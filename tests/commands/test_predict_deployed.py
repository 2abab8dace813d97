"""`predict` as deployed: fused ResNet-50 by default on a datasheet GPU (eager on a run's ceilings), int8 and fp4,
a KV cache of its own dtype, and tensor parallelism's communication as an operation of its own."""

import json

import pytest

from benchmarks.analysis.roofline.cost_model import cnn_cost
from benchmarks.commands.cli import main
from benchmarks.contract.results import DEFAULT_RESULTS_DIR, load_results
from benchmarks.gpus import find_gpu
from snippets.costs import resnet50_cost

LLAMA_70B = ["--param", "layers=80", "--param", "d_model=8192", "--param", "heads=64", "--param", "kv_heads=8",
             "--param", "d_ff=28672"]  # fmt: skip


def as_json(capsys, *args: str) -> dict:
    code = main(["predict", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_resnet50_on_a_gpu_is_fused_and_in_l2_by_default(capsys):
    found = as_json(capsys, "resnet50", "--gpu", "L4", "--dtype", "int8", "--batch", "8")
    a, point = found["assumptions"], found["points"][0]
    assert a["deployment"] == {"fusion": "fused", "kv_dtype": "int8", "tensor_parallel": 1, "l2_bytes": 48 * 2**20}
    assert "one pass" in a["bytes_counted"] and a["flops_per_s"] == 242.5e12
    assert point["bytes"] == cnn_cost({"resolution": 224}, 1, 8, fusion="fused", l2_bytes=48 * 2**20)[1]
    assert len(point["operations"]) == 56 and "writes conv1 output to L2" in point["operations"][0]["detail"]
    eager = as_json(capsys, "resnet50", "--gpu", "L4", "--dtype", "int8", "--batch", "8", "--fusion", "eager")
    assert eager["points"][0]["bytes"] == resnet50_cost(8, 1, 224)[1]
    assert eager["points"][0]["seconds"] > 3 * point["seconds"]


def test_a_runs_ceilings_keep_the_eager_count_its_runs_measured(capsys):
    run = max(load_results(DEFAULT_RESULTS_DIR).runs, key=lambda r: r.started_at)
    found = as_json(capsys, "resnet50", "--run", str(run.path), "--dtype", "float32", "--batch", "2")
    assert "deployment" not in found["assumptions"] and "operations" not in found["points"][0]
    assert found["points"][0]["bytes"] == resnet50_cost(2, 4, 224)[1]


def test_the_table_says_how_many_kernels_keep_their_output_in_l2(capsys):
    assert main(["predict", "resnet50", "--gpu", "H200", "--dtype", "int8", "--batch", "1,512"]) == 0
    out = capsys.readouterr().out
    assert "at batch 1: 55 of 56 kernels keep their output in L2 (50.0 MiB)" in out
    assert "at batch 512: 1 of 56 kernels keep their output in L2" in out


def test_tensor_parallel_decode_shows_its_communication(capsys):
    found = as_json(capsys, "decode", "--gpu", "H200", "--dtype", "bf16", "--batch", "1,64", "--tp", "2", *LLAMA_70B)
    d = found["assumptions"]["deployment"]
    assert d["tensor_parallel"] == 2 and d["interconnect"]["name"] == "NVLink 4"
    assert "assumed" in d["allreduce_latency_s"]["source"]
    assert found["forecast"]["scope"] == "tensor parallel"  # the error of forecasts split over GPUs, not one GPU's
    assert "split over GPUs (tensor parallel)" in found["forecast"]["words"]
    for point in found["points"]:
        names = [op["name"] for op in point["operations"]]
        assert names == ["matmuls", "attention", "communication"]
        assert point["operations"][2]["bound"] == "communication"
        assert point["seconds"] == pytest.approx(sum(op["seconds"] for op in point["operations"]))
    assert found["points"][0]["fits"] is True  # 141 GB of weights in 2 × 141 GB
    assert main(["predict", "decode", "--gpu", "H200", "--dtype", "bf16", "--batch", "1", "--tp", "2", *LLAMA_70B]) == 0
    assert "at batch 1: communication" in capsys.readouterr().out


def test_an_fp8_cache_beside_bf16_weights(capsys):
    plain = as_json(capsys, "decode", "--gpu", "H100 SXM", "--dtype", "bf16", "--batch", "256")
    fp8 = as_json(capsys, "decode", "--gpu", "H100 SXM", "--dtype", "bf16", "--batch", "256", "--kv-dtype", "fp8")
    assert fp8["points"][0]["bytes"] < plain["points"][0]["bytes"] and fp8["assumptions"]["deployment"]["kv_dtype"]


def test_fp4_runs_on_blackwell_only(capsys):
    found = as_json(capsys, "decode", "--gpu", "B200", "--dtype", "nvfp4", "--batch", "1")
    assert found["assumptions"]["bytes_per_element"] == 0.5
    assert found["assumptions"]["flops_per_s"] == find_gpu("NVIDIA B200").peak_flops["float4"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["decode", "--gpu", "H100 SXM", "--dtype", "fp4"], "the NVIDIA H100 SXM datasheet gives no float4 rate"),
        (["mlp", "--gpu", "H100 SXM", "--fusion", "fused"], "--fusion is for resnet50, not mlp"),
        (["resnet50", "--gpu", "L4", "--fusion", "compiled"], "--fusion 'compiled': choose from eager, fused"),
        (["mlp", "--gpu", "L4", "--kv-dtype", "fp8"], "--kv-dtype is for decode"),
        (["decode", "--gpu", "L4", "--kv-dtype", "fp7"], "unknown dtype 'fp7'"),
        (["mlp", "--gpu", "L4", "--tp", "2"], "--tp is for decode"),
        (["decode", "--gpu", "L4", "--tp", "two"], "--tp 'two': give a whole number from 1 to 64"),
    ],
)
def test_a_deployment_refusal_is_one_line(capsys, args, said):
    extra = [] if "--dtype" in args else ["--dtype", "bf16"]
    code = main(["predict", *args, *extra, "--batch", "1"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and said in err, err
