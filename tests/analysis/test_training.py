"""A training step's ceiling on any GPU: its phases, its memory, the largest batch that fits, and `predict`."""

from __future__ import annotations

import json

import pytest

from benchmarks.analysis.roofline import training
from benchmarks.analysis.roofline.predict import knee
from benchmarks.commands.choices import gpu_named
from benchmarks.commands.cli import main

H100 = gpu_named("H100 SXM")[0]
LLAMA_BLOCK = {"layers": 1, "d_model": 4096, "heads": 32, "kv_heads": 8, "d_ff": 14336, "ffn": "swiglu",
               "seq": 2048, "optimizer": "adamw", "precision": "mixed"}  # fmt: skip
MLP = {"width": 1024, "depth": 8, "optimizer": "adamw", "precision": "mixed"}


def test_a_step_is_the_sum_of_its_phases_and_checkpointing_adds_a_forward_to_the_decoder_only():
    ceilings = H100.ceilings("bfloat16")
    (block,) = training.steps("train-decoder", LLAMA_BLOCK, ceilings, "bfloat16", [4])
    assert list(block.phases) == ["forward", "input gradient", "weight gradient", "optimizer"]
    assert block.seconds == pytest.approx(sum(block.phases.values()))
    assert block.checkpointed_seconds == pytest.approx(block.seconds + block.phases["forward"])
    assert block.throughput == pytest.approx(4 * 2048 / block.seconds)  # tokens per second
    (mlp,) = training.steps("train-mlp", MLP, ceilings, "bfloat16", [4])
    assert mlp.checkpointed_seconds == mlp.seconds and mlp.throughput == pytest.approx(4 / mlp.seconds)
    with pytest.raises(ValueError, match="not a training workload"):
        training.steps("mlp", {"width": 8, "depth": 1}, ceilings, "bfloat16", [1])


def test_the_update_costs_the_same_at_every_batch_so_the_steps_ridge_batch_is_past_inferences():
    ceilings = H100.ceilings("bfloat16")
    small, large = training.steps("train-mlp", MLP, ceilings, "bfloat16", [1, 4096])
    assert small.phases["optimizer"] == large.phases["optimizer"] and small.update_share > 0.8
    step_ridge = training.ridge_batch("train-mlp", MLP, ceilings, "bfloat16")
    assert step_ridge > 4 * knee("mlp", {"width": 1024, "depth": 8}, ceilings, "bfloat16")


def test_mixed_precision_adamw_holds_16_bytes_a_parameter_and_the_largest_batch_is_the_last_that_fits():
    held = training.memory("train-decoder", LLAMA_BLOCK, "bfloat16")
    parameters = held.held["weights"] / 2
    assert held.held_bytes == pytest.approx(16 * parameters)
    largest = held.largest_batch(H100.memory_bytes)
    assert held.total(largest) <= H100.memory_bytes < held.total(largest + 1)
    full_model = training.memory("train-decoder", {**LLAMA_BLOCK, "layers": 32}, "bfloat16")
    assert full_model.largest_batch(H100.memory_bytes) == 0  # 7 billion parameters × 16 bytes: over 80 GB
    assert full_model.per_sample_checkpointed < full_model.per_sample / 10


def test_predict_labels_a_training_step_a_ceiling_and_gives_its_phases_memory_and_largest_batch(capsys):
    args = ["predict", "train-decoder", "--gpu", "H100 SXM", "--dtype", "bf16", "--batch", "1,8"]
    params = [arg for key, value in LLAMA_BLOCK.items() for arg in ("--param", f"{key}={value}")]
    assert main([*args, *params, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert (
        found["assumptions"]["label"] == "ceiling (roofline)"
        and "a ceiling, not a forecast" in (found["assumptions"]["model"])
    )
    point = found["points"][1]
    assert set(point["phases_seconds"]) == {"forward", "input gradient", "weight gradient", "optimizer"}
    assert point["fits"] is True and point["memory_bytes"]["full"] > point["memory_bytes"]["checkpointed"] * 0.9
    summary = found["training"]
    assert summary["largest_batch"]["full"] > 8 and set(summary["held_bytes"]) == {
        "weights", "gradients", "optimizer state"}  # fmt: skip
    assert main([*args, *params]) == 0
    table = capsys.readouterr().out
    assert table.startswith("Ceiling (roofline), not measured: training step of a 1-layer decoder")
    assert "largest batch that fits:" in table and "tokens/s" in table
