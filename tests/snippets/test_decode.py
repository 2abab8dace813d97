"""The decode snippet: prefill + KV-cache decode against a full-sequence float64 run, and the analytic cost."""

import pytest
import torch

from snippets import costs, decode
from snippets.decode import Config

# layers=2, d=8, heads=2, kv_heads=1 (GQA), d_ff=16, so hd = 4
TINY = Config(layers=2, d_model=8, heads=2, kv_heads=1, d_ff=16)
MHA = Config(layers=2, d_model=64, heads=4, kv_heads=4, d_ff=128)
GQA = Config(layers=2, d_model=64, heads=4, kv_heads=2, d_ff=128)


def test_tiny_weights_by_hand():
    # per layer: q 8·2·4 = 64, k and v 2·8·1·4 = 64, o 2·4·8 = 64, FFN 2·8·16 = 256: 448 Linear elements
    assert costs.matmul_weight_elements(TINY) == 2 * 448 == 896
    # + two RMSNorms per layer (2·2·8 = 32) + the final RMSNorm (8)
    assert costs.weight_elements(TINY) == 896 + 32 + 8 == 936


@pytest.mark.parametrize("config", [TINY, MHA, GQA, decode.CONFIG])
def test_weight_elements_match_the_parameter_count(config):
    with torch.device("meta"):  # no memory for the big config
        model = decode.Decoder(config)
    assert costs.weight_elements(config) == sum(p.numel() for p in model.parameters())


def test_kv_cache_bytes_by_hand():
    # K and V · 2 layers · 3 sequences · 1 KV head · hd 4 · 5 positions · 2 bytes
    assert costs.kv_cache_bytes(TINY, batch=3, context=5, bytes_per_element=2) == 2 * 2 * 3 * 1 * 4 * 5 * 2 == 480
    model = decode.make_decoder(TINY, torch.bfloat16)
    cache = model.new_cache(3, 5)
    assert cache.shape == (2, 2, 3, 1, 5, 4) and cache.dtype == torch.bfloat16
    assert cache.numel() * cache.element_size() == 480


def test_decode_cost_by_hand():
    # 3 sequences with 5 tokens cached each, bf16 (2 bytes); attention spans 6 positions
    cost = costs.decode_cost(batch=3, context=5, config=TINY, bytes_per_element=2)
    # 2·896·3 = 5376 matmul FLOPs + QKᵀ and PV 2·2·3·2 layers·2 heads·4·6 = 1152
    assert cost["flops"] == 5376 + 1152 == 6528
    assert cost["weight_bytes"] == 2 * 936 == 1872
    # K and V · 2 layers · 3 · 1 KV head · 4 · (5 read + 1 written) · 2 bytes
    assert cost["kv_bytes"] == 2 * 2 * 3 * 1 * 4 * 6 * 2 == 576
    # (8·8 + 2·16 = 96 elements per token per layer) · 3 tokens · 2 layers · 2 bytes
    assert cost["activation_bytes"] == 96 * 3 * 2 * 2 == 1152
    assert cost["bytes"] == 1872 + 576 + 1152 == 3600


def test_prefill_cost_by_hand():
    # 3 sequences of a 5-token prompt, bf16: 15 tokens
    cost = costs.prefill_cost(batch=3, prompt=5, config=TINY, bytes_per_element=2)
    # 2·896·15 = 26880 + causal attention 2·2·3·2·2·4·(5·6/2 = 15 query-key pairs) = 2880
    assert cost["flops"] == 26880 + 2880 == 29760
    assert cost["weight_bytes"] == 1872
    assert cost["kv_bytes"] == 2 * 2 * 3 * 1 * 4 * 5 * 2 == 480  # writes only
    assert cost["activation_bytes"] == 96 * 15 * 2 * 2 == 5760
    assert cost["bytes"] == 1872 + 480 + 5760 == 8112


def test_gqa_shrinks_kv_bytes_by_the_group_size():
    half = Config(layers=2, d_model=64, heads=4, kv_heads=2, d_ff=128)
    quarter = Config(layers=2, d_model=64, heads=4, kv_heads=1, d_ff=128)
    full = costs.decode_cost(8, 100, MHA, 2)
    assert costs.decode_cost(8, 100, half, 2)["kv_bytes"] * 2 == full["kv_bytes"]
    assert costs.decode_cost(8, 100, quarter, 2)["kv_bytes"] * 4 == full["kv_bytes"]
    assert costs.kv_cache_bytes(half, 8, 100, 2) * 2 == costs.kv_cache_bytes(MHA, 8, 100, 2)
    assert costs.decode_cost(8, 100, half, 2)["flops"] < full["flops"]  # only the smaller k/v projections


def test_decode_bytes_grow_linearly_in_batch_and_context():
    config, s = decode.CONFIG, 2
    per_position = 2 * config.layers * config.kv_heads * config.head_dim * s  # K and V of one token, all layers
    base = costs.decode_cost(1, 0, config, s)
    for batch in (1, 3, 64):
        for context in (0, 7, 4096):
            cost = costs.decode_cost(batch, context, config, s)
            assert cost["kv_bytes"] == per_position * batch * (context + 1)
            assert cost["weight_bytes"] == base["weight_bytes"]  # read once, whatever the batch
            assert cost["activation_bytes"] == batch * base["activation_bytes"]
            step = costs.decode_cost(batch, context + 1, config, s)["bytes"] - cost["bytes"]
            assert step == per_position * batch  # one more cached token: its K and V for every sequence
    assert costs.decode_cost(1, 0, config, s)["kv_bytes"] == costs.kv_cache_bytes(config, 1, 1, s)


@pytest.mark.parametrize("config", [MHA, GQA], ids=["mha", "gqa"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_decode_matches_a_float64_full_sequence_run(config, dtype):
    torch.manual_seed(0)
    assert decode.check_correctness(dtype, "cpu", config) <= decode.TOLERANCE[dtype]


def test_the_default_check_exercises_gqa():
    assert decode.CHECK_CONFIG.kv_heads < decode.CHECK_CONFIG.heads
    torch.manual_seed(0)
    assert decode.check_correctness(torch.float32, "cpu") <= decode.TOLERANCE[torch.float32]


def one_position_short(original):
    # writes the new K/V over the last prompt token's and attends over 0..position-1
    return lambda self, x, cache, position: original(self, x, cache, position - 1)


def ignores_the_cache(original):
    # attends over a fresh, empty cache instead of the prompt's K/V
    return lambda self, x, cache, position: original(self, x, torch.zeros_like(cache), position)


@pytest.mark.parametrize("breakage", [one_position_short, ignores_the_cache])
def test_a_broken_decode_is_caught(monkeypatch, breakage):
    monkeypatch.setattr(decode.Decoder, "decode_step", breakage(decode.Decoder.decode_step))
    torch.manual_seed(0)
    with pytest.raises(AssertionError, match="off by"):
        decode.check_correctness(torch.float32, "cpu")


def test_a_nan_fails_the_check(monkeypatch):
    original = decode.Decoder.decode_step
    monkeypatch.setattr(decode.Decoder, "decode_step", lambda *args: original(*args) * float("nan"))
    with pytest.raises(AssertionError, match="off by nan"):
        decode.check_correctness(torch.float32, "cpu")


@torch.no_grad()
def test_gqa_is_mha_with_shared_kv_heads():
    """Query head h reads K/V head h // (heads / kv_heads): the GQA model equals an MHA one with copied K/V weights."""
    torch.manual_seed(0)
    gqa = decode.make_decoder(GQA, torch.float64)
    mha = decode.make_decoder(MHA, torch.float64)
    state = gqa.state_dict()
    for name, weight in state.items():
        if name.endswith((".k.weight", ".v.weight")):  # [kv_heads·hd, d] -> [heads·hd, d]
            group = GQA.heads // GQA.kv_heads
            weight = weight.view(GQA.kv_heads, GQA.head_dim, -1).repeat_interleave(group, 0).reshape(-1, GQA.d_model)
        mha.get_submodule(name.rsplit(".", 1)[0]).weight.copy_(weight)
    x = torch.randn(2, 6, GQA.d_model, dtype=torch.float64)
    gqa_cache, mha_cache = gqa.new_cache(2, 6), mha.new_cache(2, 6)
    torch.testing.assert_close(gqa.prefill(x[:, :5], gqa_cache), mha.prefill(x[:, :5], mha_cache))
    torch.testing.assert_close(gqa.decode_step(x[:, 5:], gqa_cache, 5), mha.decode_step(x[:, 5:], mha_cache, 5))


@torch.no_grad()
def test_decode_with_a_cache_for_a_larger_batch():
    torch.manual_seed(0)
    model = decode.make_decoder(GQA)
    x = torch.randn(5, 7, GQA.d_model)
    big = model.new_cache(5, 10)  # allocated once for the largest batch
    model.prefill(x[:, :6], big)
    exact = model.new_cache(3, 7)
    model.prefill(x[:3, :6], exact)
    before = big[:, :, 3:].clone()
    out = model.decode_step(x[:3, 6:], big, 6)  # the first 3 sequences only
    assert out.shape == (3, 1, GQA.d_model)
    torch.testing.assert_close(out, model.decode_step(x[:3, 6:], exact, 6))
    torch.testing.assert_close(big[:, :, :3, :, :7], exact)  # the new K/V landed at position 6
    assert big[:, :, :3, :, 7:].abs().sum() == 0  # nothing past it
    assert torch.equal(big[:, :, 3:], before)  # the other sequences are untouched
    full = model.prefill(x[:3], model.new_cache(3, 7))[:, 6:]
    torch.testing.assert_close(out, full)


def test_decode_step_rejects_more_than_one_token_and_a_small_cache():
    model = decode.make_decoder(TINY)
    with pytest.raises(ValueError, match=r"\[batch, 1, d_model\]"):
        model.decode_step(torch.randn(2, 3, 8), model.new_cache(2, 8), 3)
    with pytest.raises(ValueError, match="too small"):
        model.decode_step(torch.randn(4, 1, 8), model.new_cache(2, 8), 3)
    with pytest.raises(ValueError, match="too small"):
        model.decode_step(torch.randn(2, 1, 8), model.new_cache(2, 8), 8)


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        (dict(d_model=10, heads=4, kv_heads=2), r"heads \(4\) must divide d_model \(10\)"),
        (dict(d_model=64, heads=4, kv_heads=3), r"kv_heads \(3\) must divide heads \(4\)"),
        (dict(d_model=64, heads=4, kv_heads=8), r"kv_heads \(8\) must divide heads \(4\)"),
        (dict(d_model=64, heads=4, kv_heads=0), "positive"),
    ],
)
def test_config_validation(sizes, message):
    with pytest.raises(ValueError, match=message):
        Config(layers=2, d_ff=16, **sizes)
    assert Config(layers=2, d_model=64, heads=4, kv_heads=2, d_ff=16).head_dim == 16


def test_swiglu_has_three_ffn_matrices_and_the_cost_counts_them():
    gelu = costs.DecoderConfig(layers=2, d_model=64, heads=4, kv_heads=2, d_ff=128)
    swiglu = costs.DecoderConfig(layers=2, d_model=64, heads=4, kv_heads=2, d_ff=128, ffn="swiglu")
    assert costs.matmul_weight_elements(swiglu) - costs.matmul_weight_elements(gelu) == 2 * 64 * 128
    model = decode.make_decoder(swiglu)
    assert costs.weight_elements(swiglu) == sum(p.numel() for p in model.parameters())
    assert costs.activation_elements_per_token(swiglu) == 9 * 64 + 3 * 128
    assert decode.check_correctness(torch.float32, "cpu", config=swiglu) <= decode.TOLERANCE[torch.float32]
    with pytest.raises(ValueError, match="ffn must be one of gelu, swiglu"):
        costs.DecoderConfig(layers=2, d_model=64, heads=4, kv_heads=2, d_ff=128, ffn="relu")
