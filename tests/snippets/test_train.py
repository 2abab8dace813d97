"""The training-step snippet: its cost by phase, what autograd keeps, its correctness check and its adapter."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import workloads
from benchmarks.measure.adapters import ADAPTERS
from snippets import costs, mlp, train

ROOT = Path(__file__).resolve().parents[2]


def test_mlp_step_phases_by_hand():
    # 2 layers of 4×4 at batch 3 in fp32 with SGD (5 accesses a parameter)
    phases = dict((name, (f, b)) for name, f, b in costs.train_mlp_phases(3, 4, 2, 4, "sgd"))
    assert phases["forward"] == costs.mlp_cost(3, 4, 2, 4)
    assert phases["input gradient"] == (2 * 3 * 16, 4 * (16 + 2 * 3 * 4))  # the first layer's input needs none
    assert phases["weight gradient"] == (2 * (2 * 3 * 16 + 3 * 4), 2 * 4 * (2 * 3 * 4 + 16 + 4))
    assert phases["optimizer"] == (3 * 40, 5 * 4 * 40)  # 2·(16 + 4) parameters


def test_a_deep_step_is_about_three_forwards_and_its_update_does_not_grow_with_the_batch():
    phases = costs.train_mlp_phases(4096, 1024, 64, 2, "adamw")
    forward = phases[0][1]
    assert 2.9 < sum(p[1] for p in phases[:3]) / forward < 3.1
    assert costs.train_mlp_phases(1, 1024, 64, 2, "adamw")[3] == phases[3]


def test_mixed_precision_adamw_moves_28_bytes_and_holds_16_a_parameter():
    assert costs.optimizer_cost(10, "adamw", 2, "mixed")[1] == 280
    held = costs.state_bytes(10, "adamw", 2, "mixed")
    assert sum(held.values()) == 160  # bf16 weights and gradients, fp32 master weights and two moments
    with pytest.raises(ValueError, match="precision"):
        costs.optimizer_cost(10, "adamw", 2, "half")


def test_largest_batch():
    assert costs.largest_batch(100, 40, 7) == 8
    assert costs.largest_batch(30, 40, 7) == 0


def test_mlp_saved_tensors_match_the_hand_count_exactly():
    model = mlp.make_mlp(48, 3)
    for batch in (1, 5):
        x = torch.randn(batch, 48)
        assert train.saved_tensor_bytes(model, x, torch.randn_like(x)) == 4 * batch * (3 + 2) * 48


@pytest.mark.parametrize(("kv_heads", "ffn"), [(2, "swiglu"), (4, "gelu")])
def test_decoder_saved_tensors_match_the_hand_count_within_five_percent(kv_heads, ffn):
    config = costs.DecoderConfig(2, 64, heads=4, kv_heads=kv_heads, d_ff=128, ffn=ffn)
    model = train.make_decoder(config)
    x = torch.randn(3, 16, 64)
    measured = train.saved_tensor_bytes(model, x, torch.randn_like(x)) / 4 / 3
    assert measured == pytest.approx(costs.decoder_saved_elements_per_sample(config, 16), rel=0.05)


def test_checkpointing_keeps_less_and_the_decoder_counts_its_parameters():
    config = costs.DecoderConfig(4, 64, heads=4, kv_heads=2, d_ff=128)
    full = costs.decoder_saved_elements_per_sample(config, 16)
    assert costs.decoder_saved_elements_per_sample(config, 16, checkpointed=True) < full / 2
    model = train.make_decoder(config)
    assert sum(p.numel() for p in model.parameters()) == costs.weight_elements(config)


@pytest.mark.parametrize("kind", ["mlp", "decoder"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_step_matches_float64(kind, dtype):
    assert train.check_correctness(dtype, "cpu", kind) <= train.TOLERANCE[dtype]


def test_correctness_check_catches_a_wrong_update(monkeypatch):
    original = train.make_optimizer

    def too_fast(model, name):
        optimizer = original(model, name)
        if next(model.parameters()).dtype != torch.float64:
            for group in optimizer.param_groups:
                group["lr"] *= 1.5
        return optimizer

    monkeypatch.setattr(train, "make_optimizer", too_fast)
    with pytest.raises(AssertionError, match="off by"):
        train.check_correctness(torch.float32, "cpu", "mlp")


@pytest.mark.parametrize("name", ["train-mlp", "train-decoder"])
def test_adapter_steps_change_the_weights_and_count_what_autograd_keeps(name):
    adapter = ADAPTERS[name]
    params = {"width": 32, "depth": 2, "optimizer": "adamw"}
    if name == "train-decoder":
        params = {"layers": 1, "d_model": 32, "heads": 4, "kv_heads": 2, "d_ff": 64, "ffn": "swiglu", "seq": 8,
                  "optimizer": "sgd"}  # fmt: skip
    prepared = adapter.setup(params, "float32", torch.device("cpu"), copies=1, max_batch=8)
    before = [p.detach().clone() for p in prepared.copies[0].parameters()]
    with torch.no_grad():  # as the harness calls it
        prepared.call(4)()
    assert any(not torch.equal(a, p) for a, p in zip(before, prepared.copies[0].parameters()))
    saved = [adapter.point_info(prepared, batch)["saved_activation_bytes"] for batch in (2, 4)]
    per_sample = workloads.saved_bytes_per_sample(params, 4)
    assert (saved[1] - saved[0]) / 2 == pytest.approx(per_sample, rel=0.05)
    with pytest.raises(ValueError, match="compile"):
        prepared.call(4, "compile")
    with pytest.raises(ValueError, match="pure precision"):
        adapter.setup({**params, "precision": "mixed"}, "float32", torch.device("cpu"), 1, 8)


@pytest.mark.slow
def test_snippet_runs_on_its_own():
    done = subprocess.run([sys.executable, "snippets/train.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("relative error against float64:") and len(lines) == 3 + len(train.BATCHES)
