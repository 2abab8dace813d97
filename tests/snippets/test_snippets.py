import subprocess
import sys
from pathlib import Path

import pytest
import torch

from snippets import costs, mlp

ROOT = Path(__file__).resolve().parents[2]


def test_mlp_cost_by_hand():
    # one layer of 4×4 at batch 2 in fp32: 2·4·4·2 FLOPs; 4 bytes × (16 + 4 + 2·2·4) bytes
    assert costs.mlp_cost(batch=2, width=4, depth=1, bytes_per_element=4) == (64, 4 * 36)
    flops, bytes_moved = costs.mlp_cost(batch=1, width=1024, depth=8, bytes_per_element=2)
    assert flops == 8 * 2 * 1024 * 1024
    assert bytes_moved == 8 * 2 * (1024 * 1024 + 1024 + 2 * 1024)  # ~16 MiB of bf16 weights


def test_mlp_shape_and_layers():
    model = mlp.make_mlp(width=32, depth=3)
    assert len(model) == 6 and model(torch.randn(5, 32)).shape == (5, 32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_mlp_matches_float64(dtype):
    assert mlp.check_correctness(dtype, "cpu") <= mlp.TOLERANCE[dtype]


def test_correctness_check_catches_a_wrong_model(monkeypatch):
    original = mlp.make_mlp

    def broken(width, depth, dtype=torch.float32, device="cpu"):
        model = original(width, depth, dtype, device)
        if dtype != torch.float64:
            model[1] = torch.nn.GELU()  # the wrong activation, in the timed model only
        return model

    monkeypatch.setattr(mlp, "make_mlp", broken)
    with pytest.raises(AssertionError, match="off by"):
        mlp.check_correctness(torch.float32, "cpu")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mlp", "linear"])
def test_snippet_runs_on_its_own(name):
    done = subprocess.run(
        [sys.executable, f"snippets/{name}.py"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("relative error against float64:")
    module = __import__(f"snippets.{name}", fromlist=["BATCHES"])
    assert len(lines) == 3 + len(module.BATCHES)


def test_linear_cost_by_hand():

    # 3 rows through a 4→5 layer in fp32: 2·3·4·5 FLOPs; 4 bytes × (20 + 5 + 3·(4 + 5)) bytes
    assert costs.linear_cost(3, 4, 5, 4) == (120, 4 * 52)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_linear_matches_float64(dtype):
    from snippets import linear

    assert linear.check_correctness(dtype, "cpu") <= linear.TOLERANCE[dtype]


def test_linear_kernel_names_on_cpu_name_the_matmul_op():
    from snippets import linear

    layer = linear.make_linear(16, 8)
    assert "aten::addmm" in linear.kernel_names(layer, torch.randn(4, 16))
