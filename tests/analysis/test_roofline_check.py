"""The roofline against published measurements: each configuration predicted with `predict`, in work per second."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from benchmarks.analysis.published.measurements_file import RowModel, read_published
from benchmarks.analysis.published.roofline_check import (
    BREAKS,
    check,
    checks,
    knee_comparisons,
    predicted,
    published_per_second,
    ratio_summary,
    unfused_per_second,
)
from benchmarks.analysis.roofline.predict import knee, predict
from benchmarks.gpus import find_gpu

SMALL = {"layers": 2, "d_model": 512, "heads": 8, "kv_heads": 8, "d_ff": 2048, "ffn": "gelu"}
A100 = find_gpu("NVIDIA A100 SXM4 40GB")


def model(**changes) -> RowModel:
    base = RowModel("generation", "decode", SMALL, "test", A100.name, "float16", 4, 1, "none", (), 16, 8)
    return dataclasses.replace(base, **changes)


def call(phase: str, context: int, batch: int = 4, ceilings=None) -> float:
    params = {**SMALL, "context": context, "phase": phase}
    return predict("decode", params, ceilings or A100.ceilings("float16"), "float16", [batch])[0].seconds


def test_a_decoder_call_is_the_sum_of_its_matmuls_and_its_attention_rooflines():
    """One model on the published page and the decode page: each operation's own roofline, summed."""
    from benchmarks.analysis.roofline.decode import decode_terms

    c = A100.ceilings("float16")
    terms = decode_terms(SMALL, 2)
    for batch, context in ((1, 16), (64, 16), (512, 4096)):
        (mf, mb), (af, ab) = terms.matmul_cost(batch), terms.attention_cost(batch, context)
        expected = max(mf / c.flops_per_s, mb / c.bytes_per_s) + max(af / c.flops_per_s, ab / c.bytes_per_s)
        assert call("decode", context, batch) == pytest.approx(expected)
        total = max((mf + af) / c.flops_per_s, (mb + ab) / c.bytes_per_s)
        assert call("decode", context, batch) >= total * (1 - 1e-12)  # never below the bound of the totals


def rows() -> dict:
    return {row.id: row for row in read_published()}


def test_a_static_batch_is_a_prefill_then_one_decode_step_per_further_token():
    total = call("prefill", 16) + sum(call("decode", 16 + k) for k in range(7))
    tokens, requests = predicted(model(), "tokens/s"), predicted(model(), "requests/s")
    assert tokens.per_second == pytest.approx(4 * 8 / total)
    assert requests.per_second == pytest.approx(4 / total)
    assert tokens.prefill_s == pytest.approx(call("prefill", 16)) and tokens.seconds == pytest.approx(total)


def test_a_time_per_token_is_the_mean_decode_step():
    found = predicted(model(kind="decode-step", batch=1, output_tokens=10), "ms/token")
    mean = statistics.mean(call("decode", 16 + k, batch=1) for k in range(10))
    assert found.per_second == pytest.approx(1 / mean) and found.bound == "memory"


def test_tensor_parallelism_pays_its_all_reduces_and_data_parallelism_is_n_copies():
    one = predicted(model(kind="prefill", output_tokens=None), "ms").per_second
    tensor = predicted(model(kind="prefill", output_tokens=None, gpus=2, parallelism="tensor"), "ms").per_second
    data = predicted(model(kind="prefill", output_tokens=None, gpus=2, parallelism="data"), "ms").per_second
    params = {**SMALL, "context": 16, "phase": "prefill"}
    deployed = predict("decode", params, A100.ceilings("float16"), "float16", [4], tensor_parallel=2,
                       interconnect=A100.interconnect)[0]  # fmt: skip
    assert tensor == pytest.approx(4 / deployed.seconds) and tensor < 2 * one  # the all-reduces cost time
    assert any(op.name == "communication" for op in deployed.operations)
    assert data == pytest.approx(2 * one)


def test_kipply_one_gpu_reaches_three_quarters_of_the_roofline():
    found = check(rows()["kipply-13b-a100-decode"])
    assert found.published == pytest.approx(1 / 0.022)  # 22.0 ms per token at batch 1
    assert 1 / found.predicted == pytest.approx(0.0165, rel=0.01)  # the post's own weights-only figure: 16.8 ms
    assert 0.7 < found.ratio < 0.8 and found.per == "tokens"


def test_published_figures_become_work_per_second():
    by_id = rows()
    assert published_per_second(by_id["trtllm080-a100-llama7b-ttft-128"]) == pytest.approx(1 / 0.0161)
    assert published_per_second(by_id["mlperf40-dgxh100-resnet50-offline"]) == 703770
    assert published_per_second(by_id["databricks-mpt7b-a100-static-b64"]) == 12.5
    # a table of tokens/s per GPU: a tensor-parallel group of four serves four times the cell
    assert by_id["trtllm080-a100-llama70b-b256-128-128"].unit == "tokens/s per GPU"
    assert published_per_second(by_id["trtllm080-a100-llama70b-b256-128-128"]) == 565 * 4


def test_every_row_with_a_model_is_compared_and_the_summary_is_computed():
    found = checks()
    compared = [row for row in read_published() if row.model is not None and row.model.kind != "knee"]
    assert [c.row.id for c in found] == [row.id for row in compared]
    median, low, high = ratio_summary(found)
    ratios = sorted(c.ratio for c in found)
    assert (median, low, high) == (statistics.median(ratios), ratios[0], ratios[-1])
    # the roofline is a bound: above it only where a configuration breaks an assumption, or where the model had to
    # choose the batch the source leaves unstated (a fused ResNet-50 keeps more in L2 at a smaller batch)
    above = [c for c in found if c.ratio >= 1 and not set(c.row.model.departures) & BREAKS]
    assert all("batch-unstated" in c.row.model.departures for c in above)


def test_mlperf_resnet50_is_predicted_in_int8_with_fused_passes_and_the_unfused_count_beside():
    row = rows()["mlperf40-dgxh100-resnet50-offline"]
    assert row.model.dtype == "int8" and "fused-elementwise" in row.model.departures  # NVIDIA's harness: int8
    fused = predicted(row.model, row.unit).per_second
    assert unfused_per_second(row.model) < fused / 2  # eager: every elementwise pass its own trip through memory
    assert unfused_per_second(rows()["kipply-13b-a100-decode"].model) is None
    assert check(row).ratio < 1  # the fused int8 roofline, activations in L2 while they fit, bounds the figure


def test_a_published_knee_is_set_against_the_ridge_batch_under_both_counts_in_each_dtype():
    by_id = {k.row.id: k for k in knee_comparisons()}
    mlp, resnet = by_id["article-t4-mlp-8x1024-knee"], by_id["article-t4-resnet50-knee"]
    t4 = find_gpu("NVIDIA T4")
    params = {"width": 1024, "depth": 8}
    for dtype in ("float32", "float16"):
        assert mlp.predicted[dtype][0].batch == pytest.approx(knee("mlp", params, t4.ceilings(dtype), dtype))
        assert mlp.predicted[dtype][1].batch < mlp.predicted[dtype][0].batch  # activations kept in cache
    assert round(mlp.predicted["float16"][0].batch) == 337 and round(mlp.predicted["float16"][1].batch) == 214
    assert mlp.ratio == pytest.approx(128 / mlp.predicted["float32"][0].batch)
    unfused, fused = resnet.predicted["float32"]
    assert unfused.batch is None and unfused.on_ridge  # 0.3 % from the ridge: undecided, not memory-bound
    assert fused.batch < 1 and not fused.on_ridge  # compute-bound from batch 1
    assert resnet.ratio is None
