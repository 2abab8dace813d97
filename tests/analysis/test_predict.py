"""Predicted curves from datasheet ceilings: the roofline of a workload at any batch, with a fixed cost."""

from __future__ import annotations

import math

import pytest

from benchmarks.analysis.roofline.predict import (
    COMPUTE,
    MEMORY,
    OVERHEAD,
    footprint_bytes,
    knee,
    overhead_ends,
    predict,
    regions,
    ridge_batch,
    spans,
)
from benchmarks.gpus import find_gpu
from benchmarks.workloads import workload
from snippets.costs import mlp_cost

H100 = find_gpu("NVIDIA H100 SXM")
BATCHES = [2**i for i in range(15)]


def test_an_mlp_is_memory_bound_until_its_ridge_batch_then_compute_bound():
    ceilings = H100.ceilings("bfloat16")
    points = predict("mlp", {"width": 4096, "depth": 8}, ceilings, "bfloat16", BATCHES)
    flops, moved = mlp_cost(1, 4096, 8, 2)
    assert points[0].flops == flops and points[0].bytes == moved
    assert points[0].seconds == pytest.approx(moved / 3.35e12)  # reading 268 MB of weights: about 80 µs
    ridge = ridge_batch(points, ceilings)
    assert 295 < ridge < 400  # past F/BW = 295: the activations add bytes as the batch grows
    assert spans(points)[0].bound == MEMORY and spans(points)[-1].bound == COMPUTE
    assert spans(points)[0].last < ridge < spans(points)[1].first
    cut = [(r.bound, r.start, r.end) for r in regions(points)]
    assert cut[0][:2] == (MEMORY, 1) and cut[1][0] == COMPUTE and cut[1][2] == BATCHES[-1]
    assert cut[0][2] == cut[1][1] == pytest.approx(ridge)  # the shading changes where the roofline bends
    late = points[-1]
    assert late.seconds == pytest.approx(late.flops / 989.4e12)


def test_a_fixed_cost_above_both_terms_is_overhead_until_the_arithmetic_overtakes_it():
    ceilings = H100.ceilings("bfloat16")
    fixed = 48e-6
    points = predict("mlp", {"width": 1024, "depth": 8}, ceilings, "bfloat16", BATCHES, fixed_s=fixed)
    assert [s.bound for s in spans(points)] == [OVERHEAD, COMPUTE]
    end = overhead_ends(points)
    per_row = 2 * 8 * 1024**2 / 989.4e12
    assert end == pytest.approx(fixed / per_row, rel=0.01)  # compute is linear in the batch
    assert all(math.isclose(p.seconds, fixed) for p in points if p.batch < end)
    assert overhead_ends(predict("mlp", {"width": 1024, "depth": 8}, ceilings, "bfloat16", BATCHES)) is None


def test_any_registered_workload_predicts():
    params = {"layers": 4, "d_model": 4096, "heads": 32, "kv_heads": 8, "d_ff": 14336, "ffn": "swiglu",
              "context": 2048, "phase": "decode"}  # fmt: skip
    points = predict("decode", params, H100.ceilings("bfloat16"), "bfloat16", [1, 8, 64])
    assert [p.batch for p in points] == [1, 8, 64] and all(p.seconds > 0 for p in points)


def test_bad_input_is_refused_with_its_reason():
    with pytest.raises(ValueError, match="width"):
        predict("mlp", {"width": -1, "depth": 8}, H100.ceilings("bfloat16"), "bfloat16", [1])
    with pytest.raises(ValueError, match="dtype"):
        predict("mlp", {"width": 64, "depth": 8}, H100.ceilings("bfloat16"), "int3", [1])
    with pytest.raises(ValueError, match="unknown workload"):
        predict("nope", {}, H100.ceilings("bfloat16"), "bfloat16", [1])


def test_the_knee_does_not_depend_on_the_batches_asked_for():
    ceilings = H100.ceilings("bfloat16")
    params = {"width": 4096, "depth": 8}
    assert knee("mlp", params, ceilings, "bfloat16") == pytest.approx(
        ridge_batch(predict("mlp", params, ceilings, "bfloat16", BATCHES), ceilings)
    )
    resnet = knee("resnet50", {"resolution": 224}, ceilings, "float16")
    assert resnet is None  # every unfused pass over memory: below the ridge at any batch on an H100
    prefill = {"layers": 4, "d_model": 4096, "heads": 32, "kv_heads": 8, "d_ff": 14336, "ffn": "swiglu",
               "context": 2048, "phase": "prefill"}  # fmt: skip
    assert knee("decode", prefill, ceilings, "bfloat16") < 1  # 2,048 tokens a prompt: compute-bound from one


def test_the_footprint_is_the_weights_plus_a_decode_steps_cache():
    params = {"layers": 2, "d_model": 1024, "heads": 8, "kv_heads": 2, "d_ff": 4096, "ffn": "swiglu",
              "context": 100, "phase": "decode"}  # fmt: skip
    weights = workload("decode").weight_bytes(params, 2)
    per_position = 2 * 2 * 2 * (1024 // 8) * 2  # K and V, 2 layers, 2 KV heads of 128, 2 bytes
    assert footprint_bytes("decode", params, "bfloat16", 3) == weights + 3 * 101 * per_position
    prefill = {**params, "phase": "prefill"}
    assert footprint_bytes("decode", prefill, "bfloat16", 3) == weights + 3 * 100 * per_position
    assert footprint_bytes("mlp", {"width": 1024, "depth": 8}, "float32", 512) == mlp_cost(0, 1024, 8, 4)[1]
