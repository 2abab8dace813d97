"""`serve WORKLOAD --gpu`: a ResNet-50 is served from its fused count by default, the eager one on request."""

import json

import pytest

from benchmarks.analysis.serving.batcher.service_curves import from_prediction
from benchmarks.commands.cli import main
from benchmarks.gpus import find_gpu

FAST = ["--requests", "2000"]


def test_a_fused_resnet50_serves_more_than_the_eager_count_says():
    l4 = find_gpu("NVIDIA L4")
    fused = from_prediction("resnet50", {}, l4, "int8", 16, forecast=False)
    eager = from_prediction("resnet50", {}, l4, "int8", 16, fusion="eager", forecast=False)
    assert fused.mode == "roofline, fused" and eager.mode == "roofline, eager"
    assert fused.curve.median(16) < eager.curve.median(16) / 3
    assert from_prediction("mlp", {}, l4, "int8", 4, forecast=False).mode == "roofline"  # nothing to fuse


@pytest.mark.slow
def test_the_command_says_which_count_it_serves(capsys):
    argv = ["serve", "resnet50", "--gpu", "L4", "--dtype", "int8", "--rate", "2000", "--budget-ms", "20", "--json"]
    assert main([*argv, *FAST]) == 0
    assert json.loads(capsys.readouterr().out)["source"]["mode"] == "forecast, fused"
    assert main([*argv, "--fusion", "eager", *FAST]) == 0
    assert json.loads(capsys.readouterr().out)["source"]["mode"] == "forecast, eager"
    assert main([*argv, "--ceiling", *FAST]) == 0
    assert json.loads(capsys.readouterr().out)["source"]["mode"] == "roofline, fused"
    assert main(["serve", "mlp", "--gpu", "L4", "--dtype", "int8", "--rate", "5", "--budget-ms", "9", "--fusion",
                 "fused"]) == 2  # fmt: skip
    assert "--fusion is for resnet50, not mlp" in capsys.readouterr().err
