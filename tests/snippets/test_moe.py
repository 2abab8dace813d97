"""The MoE snippet: dispatch correctness, routing statistics and the analytic cost."""

import math

import pytest
import torch

from benchmarks.measure.adapters import MoE as MoEWorkload
from snippets import costs, moe


@pytest.mark.parametrize("variant", moe.VARIANTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dispatch_matches_a_per_token_loop(variant, dtype):
    assert moe.check_correctness(dtype, "cpu", variant) <= moe.TOLERANCE[dtype]


def test_a_broken_combine_is_caught(monkeypatch):
    original = moe.MoE.token_choice

    def drops_the_busiest_expert(self, x):
        out = original(self, x)
        _, experts = self.route(x)
        busiest = torch.bincount(experts.flatten()).argmax()
        return out * (experts != busiest).all(dim=-1, keepdim=True)

    monkeypatch.setattr(moe.MoE, "token_choice", drops_the_busiest_expert)
    with pytest.raises(AssertionError, match="off by"):
        moe.check_correctness(torch.float32, "cpu", "token-choice")


def uniform_layer(experts=8, top_k=2, d_model=64):
    torch.manual_seed(0)
    return moe.MoE(d_model, 16, experts, top_k, skew=0.0)


def test_every_token_gets_k_distinct_experts():
    layer = uniform_layer()
    _, experts = layer.route(torch.randn(100, 64))
    assert experts.shape == (100, 2)
    assert all(len(set(row)) == 2 for row in experts.tolist())


def test_touched_experts_under_uniform_routing_match_expectation():
    """E·(1 − (1 − k/E)^b) experts are touched on average; checked over 300 random batches."""
    experts, top_k = 8, 2
    for batch in (1, 2, 4, 8):
        touched = []
        for seed in range(300):
            torch.manual_seed(seed)
            layer = moe.MoE(64, 16, experts, top_k, skew=0.0)
            touched.append(moe.load(layer, torch.randn(batch, 64))[2])
        expected = experts * (1 - (1 - top_k / experts) ** batch)
        mean = sum(touched) / len(touched)
        spread = (sum((t - mean) ** 2 for t in touched) / len(touched)) ** 0.5
        assert abs(mean - expected) < 4 * spread / math.sqrt(len(touched)) + 0.05, (batch, mean, expected)


def test_uniform_load_is_balanced_and_skew_concentrates_it():
    torch.manual_seed(1)
    x = torch.randn(4096, 64)
    max_uniform, mean_uniform, touched = moe.load(uniform_layer(), x)
    assert mean_uniform == 4096 * 2 / 8 and touched == 8
    assert max_uniform < 1.6 * mean_uniform  # a random router spreads tokens roughly evenly
    torch.manual_seed(0)
    skewed = moe.MoE(64, 16, 8, 2, skew=2.0)
    max_skewed, _, _ = moe.load(skewed, x)
    assert max_skewed > 1.5 * max_uniform


def test_expert_choice_is_balanced_by_construction():
    layer = moe.MoE(64, 16, 8, 2, variant="expert-choice")
    assert moe.load(layer, torch.randn(100, 64)) == (25, 25, 8)  # C = ceil(100·2/8)


def test_costs_by_hand():
    # b=3 tokens, d=4, f=5, E=2, k=1, both experts touched, 3 rows in all, fp32
    flops, moved = costs.moe_cost(3, 4, 5, 2, 1, touched=2, rows=3, bytes_per_element=4)
    assert flops == 2 * 3 * 4 * 2 + 4 * 3 * 4 * 5
    assert moved == 4 * (4 * 2 + 2 * 2 * 4 * 5 + 2 * 3 * 4 + 3 * (2 * 4 + 2 * 5))
    # an untouched expert's weights are never read
    assert costs.moe_cost(3, 4, 5, 2, 1, 1, 3, 4)[1] == moved - 4 * 2 * 4 * 5
    assert costs.dense_cost(3, 4, 10, 4) == (4 * 3 * 4 * 10, 4 * (2 * 4 * 10 + 2 * 3 * 4 + 2 * 3 * 10))


def test_workload_records_routing_and_its_cost():
    workload = MoEWorkload()
    params = {"variant": "token-choice", "experts": 8, "top_k": 2, "d_model": 32, "d_ff": 16, "skew": 2.0}
    prepared = workload.setup(params, "float32", torch.device("cpu"), copies=3, max_batch=64)
    info = workload.point_info(prepared, 64)
    assert info["routing"]["mean_load"] == 64 * 2 / 8
    assert 1 <= info["routing"]["touched_experts"] <= 8
    touched, rows = info["routing"]["touched_experts"], 64 * 2
    assert (info["flops"], info["bytes"]) == costs.moe_cost(64, 32, 16, 8, 2, touched, rows, 4)
    routers = [copy.router.weight for copy in prepared.copies]
    assert all(torch.equal(routers[0], r) for r in routers[1:])  # every copy routes the same way


def test_expert_choice_reports_tokens_no_expert_took():
    torch.manual_seed(0)
    layer = moe.MoE(64, 16, 8, 2, skew=2.0, variant="expert-choice")
    x = torch.randn(64, 64)
    dropped = moe.dropped_tokens(layer, x)
    assert 0 <= dropped < 64
    taken = set(layer.router(x).softmax(-1).T.topk(layer.capacity(64), dim=-1)[1].flatten().tolist())
    assert dropped == 64 - len(taken)
