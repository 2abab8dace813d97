"""The guide's serving arithmetic, against hand counts from the model's published configuration."""

import pytest

from benchmarks.analysis.roofline.guide import kv_budget, weight_only_ridge_batch
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import LLAMA_3_8B, model_weight_bytes

H100 = find_gpu("NVIDIA H100 SXM")


def test_llama_3_8b_has_eight_billion_weights():
    assert model_weight_bytes(LLAMA_3_8B, 1) == pytest.approx(8.03e9, rel=0.001)


def test_its_kv_cache_is_128_kib_per_token_in_bf16_and_an_h100_holds_64_sequences_of_8k():
    budget = kv_budget(LLAMA_3_8B, H100, 8192, 2)
    assert budget.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2 == 128 * 1024  # K and V, 32 layers, 8 heads of 128
    assert budget.kv_bytes_per_sequence == 2**30  # 1 GiB at 8,192 tokens
    # the driver's 81,559 MiB, not the datasheet's 80 GB read as 80 GiB (which gave 65)
    assert H100.memory_from == "driver"
    assert budget.free_bytes == 81_559 * 2**20 - model_weight_bytes(LLAMA_3_8B, 2)
    assert budget.sequences == 64


def test_weight_only_quantization_divides_the_ridge_by_16_over_bits():
    full = H100.ridge_batch("bfloat16")
    assert weight_only_ridge_batch(H100, "bfloat16", 16) == pytest.approx(full)
    assert weight_only_ridge_batch(H100, "bfloat16", 4) == pytest.approx(full / 4)
    assert weight_only_ridge_batch(H100, "bfloat16", 8) == pytest.approx(full / 2)
