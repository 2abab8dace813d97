"""The BERT-shaped encoder: its counts by hand, its model against float64, the adapter, predict and serve."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks.analysis.roofline.predict import predict
from benchmarks.commands.cli import main
from benchmarks.gpus import find_gpu
from benchmarks.workloads import workload
from snippets import encoder
from snippets.costs import DecoderConfig, encoder_cost, encoder_weight_elements

ROOT = Path(__file__).resolve().parents[2]
BERT_BASE = DecoderConfig(12, 768, heads=12, kv_heads=12, d_ff=3072, ffn="gelu")
BERT_PARAMS = {"layers": 12, "d_model": 768, "heads": 12, "d_ff": 3072, "seq_len": 128, "pooler": "yes"}


def test_bert_base_weights_by_hand():
    # 12 × (4·768² + 4·768 + 2·768·3072 + 3072 + 768 + 4·768) + 768² + 768 = 85,645,056: bert-base-uncased's
    # 109,482,240 parameters less its 23,837,184 embedding weights (30,522 words, 512 positions and 2 types of 768,
    # and their LayerNorm's 1,536)
    assert encoder_weight_elements(BERT_BASE) == 85_645_056 == 109_482_240 - 23_837_184
    assert encoder_weight_elements(BERT_BASE, pooler=False) == 85_645_056 - 768 * 768 - 768


def test_bidirectional_attention_and_matmul_flops_by_hand():
    cost = encoder_cost(2, 128, BERT_BASE, 2)
    matmuls = 2 * 12 * (4 * 768**2 + 2 * 768 * 3072) * 2 * 128 + 2 * 768**2 * 2
    assert cost["matmul_flops"] == matmuls
    assert cost["attention_flops"] == 4 * 12 * 768 * 128 * 128 * 2  # every token against all 128 positions
    assert cost["bytes"] == 2 * 85_645_056 + 2 * (2 * 128 * 12 * (12 * 768 + 2 * 3072) + 2 * 2 * 768)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_encoder_matches_float64_with_attention_written_out(dtype):
    assert encoder.check_correctness(dtype, "cpu") <= encoder.TOLERANCE[dtype]


def test_the_check_catches_a_causal_mask():
    class Causal(encoder.Layer):
        def attend(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    def broken(config, dtype=torch.float32, device="cpu", layer=encoder.Layer, pooler=True):
        layer = Causal if layer is encoder.Layer else layer
        return encoder.Encoder(config, layer, pooler).to(device=device, dtype=dtype).eval()

    original = encoder.make_encoder
    encoder.make_encoder = broken
    try:
        with pytest.raises(AssertionError, match="off by"):
            encoder.check_correctness(torch.float32, "cpu")
    finally:
        encoder.make_encoder = original


@pytest.mark.slow
def test_the_snippet_runs_on_its_own():
    done = subprocess.run(
        [sys.executable, "snippets/encoder.py"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("relative error against float64:") and len(lines) == 3 + len(encoder.BATCHES)


def test_the_adapter_runs_a_small_encoder():
    from benchmarks.measure.adapters import ADAPTERS

    adapter = ADAPTERS["encoder"]
    params = {"layers": 1, "d_model": 32, "heads": 2, "d_ff": 64, "seq_len": 8, "pooler": "no"}
    prepared = adapter.setup(params, "float32", torch.device("cpu"), copies=1, max_batch=4)
    prepared.call(3)()
    assert prepared.inputs.shape == (4, 8, 32)
    assert adapter.check("float32", torch.device("cpu"))[0] <= encoder.TOLERANCE[torch.float32]


def test_predict_and_serve_take_an_encoder(capsys):
    h100 = find_gpu("NVIDIA H100 SXM")
    small, large = predict("encoder", BERT_PARAMS, h100.ceilings("float16"), "float16", [1, 64])
    assert small.bound == "memory" and large.bound == "compute"
    assert [op.name for op in large.operations] == ["matmuls", "attention"]
    assert workload("encoder").problems({**BERT_PARAMS, "heads": 7}) == [
        ("(params)", "heads (7) must divide d_model (768)")
    ]
    assert main(["predict", "encoder", "--gpu", "L4", "--dtype", "int8", "--batch", "1,32", "--param",
                 "seq_len=384", "--param", "layers=24", "--param", "d_model=1024", "--param", "heads=16",
                 "--param", "d_ff=4096"]) == 0  # fmt: skip
    assert "24-layer encoder (d=1024, 16 heads, FFN 4096)" in capsys.readouterr().out
    argv = ["serve", "encoder", "--gpu", "L4", "--dtype", "fp16", "--rate", "100", "--budget-ms", "50"]
    assert main([*argv, "--requests", "2000"]) == 0
    assert "12-layer encoder" in capsys.readouterr().out
