"""The cost model as deployed: fusion and L2 for a CNN, tensor-parallel all-reduces, experts touched, a KV dtype."""

import pytest

from benchmarks.analysis.roofline.cost_model import (
    ALLREDUCE_LATENCY_S,
    busiest_gpu_experts,
    busiest_gpu_share,
    cnn_cost,
    cnn_operations,
    decoder_operations,
    expected_distinct_experts,
    expert_blocks,
    ring_allreduce_seconds,
    routing_shares,
    tensor_parallel_seconds,
)
from benchmarks.analysis.roofline.predict import COMMUNICATION, predict
from benchmarks.gpus import GIGA, Interconnect, find_gpu
from benchmarks.llm_models import ExpertConfig
from benchmarks.workloads import workload
from snippets.costs import resnet50_cost

R224 = {"resolution": 224}
NVLINK = Interconnect("NVLink (synthetic)", 900 * GIGA, "synthetic test link")


@pytest.mark.parametrize("batch", [1, 8, 64, 256])
def test_eager_kernels_sum_to_the_registry_count(batch):
    assert cnn_cost(R224, 2, batch, fusion="eager") == resnet50_cost(batch, 2, 224)


def test_eager_runs_every_elementwise_pass_as_a_kernel_of_its_own():
    names = [op.name for op in cnn_operations(R224, 2, 1, fusion="eager")]
    assert names[:4] == ["conv1", "conv1 BatchNorm", "conv1 ReLU", "max pool"]
    assert names.count("layer1.0 residual add") == 1 and names[-2:] == ["average pool", "fc"]
    assert names.index("layer1.0.downsample.0") < names.index("layer1.0 residual add")
    assert len(names) == 53 * 2 + 49 + 16 + 3  # conv and BatchNorm, ReLUs, adds, two pools and the fc


def test_fused_blocks_move_each_activation_once():
    """Without L2, a fused ResNet-50 moves the weights, each conv's input and output once, the residual read by
    each block's last conv, and the pools: less than the eager count by every elementwise pass."""
    ops = cnn_operations(R224, 2, 64, fusion="fused")
    assert len(ops) == 53 + 3  # one kernel per conv, the two pools and the fc
    assert ops[0].name == "conv1 + BatchNorm + ReLU" and "residual add" in ops[-3].name
    flops, moved = cnn_cost(R224, 2, 64, fusion="fused")
    eager_flops, eager_moved = resnet50_cost(64, 2, 224)
    assert flops == eager_flops
    convs_only = resnet50_cost(64, 2, 224, fused=True)[1]
    assert convs_only < moved < 0.4 * eager_moved  # the residual reads and pools on top of the convs' own traffic


def test_l2_keeps_activations_that_fit_and_says_so_per_layer():
    h200 = find_gpu("NVIDIA H200")
    small = cnn_operations(R224, 1, 1, fusion="fused", l2_bytes=h200.l2_bytes)
    assert "reads image from memory" in small[0].detail and "writes conv1 output to L2" in small[0].detail
    assert all("to memory" not in op.detail for op in small[:-1])  # every activation but the logits stays in L2
    weights_only = sum(op.bytes for op in small)
    assert weights_only < 1.1 * 25.6e6  # int8: about the 25.6 M parameters, once
    medium = cnn_operations(R224, 1, 64, fusion="fused", l2_bytes=h200.l2_bytes)
    assert "writes conv1 output to memory" in medium[0].detail  # 64 images' stem output is 51 MB
    assert "to L2" in medium[-4].detail  # the last stage's 7×7 maps of 64 images fit in 50 MiB
    large = cnn_operations(R224, 1, 512, fusion="fused", l2_bytes=h200.l2_bytes)
    assert all("to L2" not in op.detail for op in large if "conv" in op.name)  # no feature map fits at 512 images
    assert "writes average pool output to L2" in large[-2].detail  # but the pooled 512 × 2048 vector does
    assert cnn_cost(R224, 1, 512, fusion="fused", l2_bytes=1)[1] == cnn_cost(R224, 1, 512, fusion="fused")[1]


def test_fusion_is_checked():
    with pytest.raises(ValueError, match="fusion must be one of eager, fused"):
        cnn_operations(R224, 2, 1, fusion="compiled")


def test_predict_per_kernel_with_fusion_and_l2():
    l4 = find_gpu("NVIDIA L4")
    old = predict("resnet50", R224, l4.ceilings("int8"), "int8", [32])[0]
    eager = predict("resnet50", R224, l4.ceilings("int8"), "int8", [32], fusion="eager")[0]
    fused = predict("resnet50", R224, l4.ceilings("int8"), "int8", [32], fusion="fused", l2_bytes=l4.l2_bytes)[0]
    assert eager.bytes == old.bytes and eager.seconds >= old.seconds  # a sum of per-kernel rooflines: never less
    assert fused.seconds < eager.seconds / 2
    assert len(fused.operations) == 56 and all(op.detail for op in fused.operations)
    with pytest.raises(ValueError, match="fusion is counted for resnet50"):
        predict("mlp", {"width": 64, "depth": 2}, l4.ceilings("int8"), "int8", [1], fusion="fused")


# --------------------------------------------------------------------------- tensor parallelism


def test_ring_allreduce_by_hand():
    # 8 MB over 4 GPUs: 2·3/4 · 8e6 B / 450e9 B/s = 26.67 µs, plus the latency
    assert ring_allreduce_seconds(8e6, 4, NVLINK) == pytest.approx(ALLREDUCE_LATENCY_S.value + 26.667e-6, rel=1e-3)
    assert ring_allreduce_seconds(8e6, 1, NVLINK) == 0.0
    assert "assumed" in ALLREDUCE_LATENCY_S.source


def test_two_allreduces_per_layer_of_tokens_by_d_model():
    one = ring_allreduce_seconds(64 * 8192 * 2, 2, NVLINK)
    assert tensor_parallel_seconds(80, 64, 8192, 2, NVLINK, 2) == pytest.approx(160 * one)
    # fp8 activations are all-reduced in 16 bits: the same time as bf16
    assert tensor_parallel_seconds(80, 64, 8192, 2, NVLINK, 1) == tensor_parallel_seconds(80, 64, 8192, 2, NVLINK, 2)


LLAMA_70B = {"layers": 80, "d_model": 8192, "heads": 64, "kv_heads": 8, "d_ff": 28672, "ffn": "swiglu",
             "context": 2048, "phase": "decode"}  # fmt: skip


def test_predict_counts_communication_in_every_tensor_parallel_step():
    h200 = find_gpu("NVIDIA H200")
    c = h200.ceilings("bfloat16")
    alone = predict("decode", LLAMA_70B, c, "bfloat16", [64])[0]
    split = predict("decode", LLAMA_70B, c, "bfloat16", [64], tensor_parallel=2, interconnect=h200.interconnect)[0]
    comm = split.operations[-1]
    assert comm.name == COMMUNICATION and comm.bound == COMMUNICATION and comm.compute_s == comm.memory_s == 0
    assert comm.link_s == pytest.approx(tensor_parallel_seconds(80, 64, 8192, 2, h200.interconnect, 2))
    assert split.seconds == pytest.approx(alone.seconds / 2 + comm.link_s)
    prefill = {**LLAMA_70B, "phase": "prefill", "context": 1000}
    p = predict("decode", prefill, c, "bfloat16", [4], tensor_parallel=2, interconnect=h200.interconnect)[0]
    assert p.operations[-1].link_s == pytest.approx(tensor_parallel_seconds(80, 4000, 8192, 2, h200.interconnect, 2))
    with pytest.raises(ValueError, match="needs the interconnect"):
        predict("decode", LLAMA_70B, c, "bfloat16", [1], tensor_parallel=2)


# --------------------------------------------------------------------------- experts


def test_expected_distinct_experts():
    assert expected_distinct_experts(1, 8, 2) == pytest.approx(2)
    assert expected_distinct_experts(2, 8, 2) == pytest.approx(8 * (1 - 0.75**2))  # 3.5
    assert expected_distinct_experts(1000, 8, 2) == pytest.approx(8)
    assert expected_distinct_experts(0, 8, 2) == 0
    uniform, skewed = expected_distinct_experts(16, 64, 4), expected_distinct_experts(16, 64, 4, skew=1.5)
    assert skewed < uniform < 64
    assert expected_distinct_experts(16, 64, 4, skew=1e-9) == pytest.approx(uniform, rel=1e-6)


def test_routing_shares_sum_to_one_and_fall():
    shares = routing_shares(8, 1.0)
    assert sum(shares) == pytest.approx(1) and shares == sorted(shares, reverse=True)
    assert routing_shares(4) == [0.25] * 4
    with pytest.raises(ValueError, match="skew"):
        routing_shares(4, -1)


def test_expert_config_checks_itself():
    with pytest.raises(ValueError, match="top_k"):
        ExpertConfig(experts=4, top_k=5, expert_d_ff=10)
    layout = ExpertConfig(experts=8, top_k=2, expert_d_ff=14336)
    assert layout.expert_elements(4096) == 3 * 4096 * 14336 and layout.shared_elements(4096) == 0


# --------------------------------------------------------------------------- KV dtype


def test_kv_dtype_changes_only_the_cache_bytes():
    llama8 = {**workload("decode").defaults(), "layers": 32}
    bf16 = decoder_operations(llama8, 2, 64)
    fp8_cache = decoder_operations(llama8, 2, 64, kv_bytes_per_element=1)
    assert bf16[0] == fp8_cache[0] and fp8_cache[1][2] == bf16[1][2] / 2 and fp8_cache[1][1] == bf16[1][1]
    h100 = find_gpu("NVIDIA H100 SXM").ceilings("bfloat16")
    full = predict("decode", llama8, h100, "bfloat16", [256])[0]
    half = predict("decode", llama8, h100, "bfloat16", [256], kv_dtype="float8")[0]
    assert half.bytes < full.bytes and half.seconds < full.seconds
    with pytest.raises(ValueError, match="KV-cache dtype"):
        predict("mlp", {"width": 64, "depth": 2}, h100, "bfloat16", [1], kv_dtype="float8")


@pytest.mark.parametrize("tokens, skew", [(1, 0.0), (3, 0.0), (16, 0.0), (5, 1.2)])
def test_on_one_gpu_the_busiest_holds_every_touched_expert(tokens, skew):
    assert busiest_gpu_experts(tokens, 8, 2, 1, skew) == pytest.approx(expected_distinct_experts(tokens, 8, 2, skew))


def test_expert_parallelism_waits_for_the_gpu_with_the_most_touched_experts():
    # one token choosing 2 of 8 experts on two GPUs: exactly, the busier holds 10/7 on average (both on one GPU
    # 3 times in 7); the model, treating each expert's chance as independent, is within 3 % of that
    assert busiest_gpu_experts(1, 8, 2, 2) == pytest.approx(10 / 7, rel=0.03)
    for tokens in (1, 4, 16, 64):
        mean = expected_distinct_experts(tokens, 60, 4) / 4
        assert mean <= busiest_gpu_experts(tokens, 60, 4, 4) <= 15 + 1e-9
    assert busiest_gpu_experts(10_000, 8, 2, 2) == pytest.approx(4)  # every expert touched: balanced again
    assert busiest_gpu_share(8, 2) == pytest.approx(0.5) and busiest_gpu_share(8, 2, 1.0) > 0.7
    assert [list(b) for b in expert_blocks(8, 4)] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    with pytest.raises(ValueError, match="60 experts do not split evenly over 8 GPUs"):
        expert_blocks(60, 8)
