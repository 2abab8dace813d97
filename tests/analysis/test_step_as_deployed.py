"""Step times of `serve llm:` as deployed: tensor parallelism's all-reduces, a mixture of experts' touched experts,
a KV cache in a dtype of its own, and the published MoE configurations."""

import pytest

from benchmarks.analysis.roofline.cost_model import expected_distinct_experts, tensor_parallel_seconds
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import (
    LLAMA_3_3_70B,
    LLAMA_3_8B,
    MIXTRAL_8X7B,
    QWEN1_5_MOE_A2_7B,
    find_model,
    model_weight_bytes,
)

H100, H200 = find_gpu("NVIDIA H100 SXM"), find_gpu("NVIDIA H200")


def test_published_moe_sizes():
    assert model_weight_bytes(MIXTRAL_8X7B, 1) == pytest.approx(46.7e9, rel=0.002)  # "46.7B total parameters"
    assert model_weight_bytes(QWEN1_5_MOE_A2_7B, 1) == pytest.approx(14.3e9, rel=0.005)  # "14.3B parameters in total"
    assert find_model("mixtral-8x7b-instruct-v0.1") is MIXTRAL_8X7B


def test_a_tensor_parallel_step_pays_its_all_reduces_in_decode_and_prefill():
    quiet = RooflineStep(LLAMA_3_3_70B, H200, "bfloat16", tensor_parallel=2, fixed_s=0, communication=False)
    loud = RooflineStep(LLAMA_3_3_70B, H200, "bfloat16", tensor_parallel=2, fixed_s=0)
    for work in (loud.decode_work(64, 2048), loud.prefill_work(1000)):
        link = tensor_parallel_seconds(80, work.tokens, 8192, 2, H200.interconnect, 2)
        assert loud.detail(work).communication_s == pytest.approx(link)
        assert loud.detail(work).seconds == pytest.approx(quiet.detail(work).seconds + link)
        hot = loud.seconds(work.tokens, work.logits, work.attended, work.kv_positions)  # the simulator's path
        assert hot == pytest.approx(loud.detail(work).seconds)
    assert RooflineStep(LLAMA_3_8B, H100, "bfloat16").detail(loud.decode_work(8, 100)).communication_s == 0


def test_a_moe_step_reads_only_the_experts_its_tokens_touch():
    step = RooflineStep(MIXTRAL_8X7B, H100, "bfloat16", tensor_parallel=2, fixed_s=0, communication=False)
    expert = 2 * 3 * 4096 * 14336
    one = step.expert_read_bytes(1)
    assert one == pytest.approx(32 * 2 * expert)  # one token: its top-2 in each of 32 layers
    assert step.expert_read_bytes(64) == pytest.approx(32 * expected_distinct_experts(64, 8, 2) * expert)
    assert step.expert_read_bytes(64) == pytest.approx(32 * 8 * expert, rel=1e-6)  # 64 tokens touch all 8
    one_token = step.detail(step.decode_work(1, 100))
    all_experts = RooflineStep(MIXTRAL_8X7B, H100, "bfloat16", tensor_parallel=2, fixed_s=0, communication=False)
    assert one_token.matmul_s < all_experts.detail(all_experts.decode_work(64, 100)).matmul_s
    # FLOPs a token: the attention and the two experts it uses, about 12.9 B parameters' worth
    assert 2 * step.terms.matmul_weights == pytest.approx(2 * 12.6e9, rel=0.02)


def test_skewed_routing_reads_fewer_experts():
    uniform = RooflineStep(QWEN1_5_MOE_A2_7B, H100, "bfloat16")
    skewed = RooflineStep(QWEN1_5_MOE_A2_7B, H100, "bfloat16", routing_skew=1.5)
    assert skewed.expert_read_bytes(16) < uniform.expert_read_bytes(16)
    assert "routing skew 1.5" in skewed.describe() and "uniform routing" in uniform.describe()


def test_the_kv_dtype_halves_the_cache_and_its_reads():
    bf16 = RooflineStep(LLAMA_3_8B, H100, "bfloat16", fixed_s=0)
    fp8_cache = RooflineStep(LLAMA_3_8B, H100, "bfloat16", fixed_s=0, kv_dtype="float8")
    assert fp8_cache.kv_bytes_per_token == bf16.kv_bytes_per_token / 2
    work = bf16.decode_work(256, 2048)
    assert fp8_cache.detail(work).attention_s == pytest.approx(bf16.detail(work).attention_s / 2)
    assert fp8_cache.detail(work).matmul_s == bf16.detail(work).matmul_s
    with pytest.raises(ValueError, match="unknown KV-cache dtype"):
        RooflineStep(LLAMA_3_8B, H100, "bfloat16", kv_dtype="fp7")
