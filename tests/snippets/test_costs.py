"""The cost models: torch-free, and the same counts the snippets and the pages use."""

import subprocess
import sys
from pathlib import Path

import pytest

from snippets import costs

ROOT = Path(__file__).resolve().parents[2]


def test_costs_import_without_torch():
    code = "import sys; import snippets.costs; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_an_mlp_is_depth_linear_layers():
    layer = costs.linear_cost(5, 64, 64, 2)
    assert costs.mlp_cost(5, 64, 3, 2) == (3 * layer[0], 3 * layer[1])
    assert costs.mlp_cost(0, 1024, 8, 2)[1] == 8 * 2 * (1024 * 1024 + 1024)  # the weights alone


def test_prefill_attention_is_the_causal_triangle():
    config = costs.DecoderConfig(layers=2, d_model=64, heads=4, kv_heads=2, d_ff=128)
    for prompt in (1, 5, 6):
        cost = costs.prefill_cost(3, prompt, config, 2)
        attention = cost["flops"] - 2 * costs.matmul_weight_elements(config) * 3 * prompt
        assert attention == 2 * 3 * 2 * 4 * 16 * prompt * (prompt + 1)  # 2·b·L·H·hd·p·(p+1)


@pytest.mark.parametrize(("batch", "expected"), [(1, 1), (4, 1), (5, 2), (1000, 250)])
def test_expert_capacity(batch, expected):
    assert costs.expert_capacity(batch, experts=8, top_k=2) == expected


def test_expected_routing():
    assert costs.expected_routing("expert-choice", 12, 8, 2) == (8, 8 * 3)
    touched, rows = costs.expected_routing("token-choice", 1, 8, 2)
    assert touched == pytest.approx(2) and rows == 2  # one token touches exactly k experts
    assert costs.expected_routing("token-choice", 10_000, 8, 2)[0] == pytest.approx(8)
