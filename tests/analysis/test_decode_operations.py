"""A decode step read per operation: the matmuls and the attention each against its roofline (SYNTHETIC)."""

import pytest

from benchmarks.analysis.roofline import decode as d
from benchmarks.analysis.roofline.curves import curves
from benchmarks.gpus import Ceilings
from benchmarks.workloads import decoder_config
from snippets import costs
from tests.analysis.test_cnn_decode import decode_records, synthetic_run

GPU = Ceilings(flops_per_s=400e12 / 8, bytes_per_s=2e12)  # made up


def steps():
    run = synthetic_run(decode_records(GPU), GPU)
    return [c for c in curves(run, "decode") if d.is_decode(c)]


def test_the_two_operations_add_up_to_the_whole_cost():
    curve = steps()[0]
    terms = d.curve_terms(curve)
    context = curve.params["context"]
    for batch in (1, 8, 64):
        mm, att = terms.matmul_cost(batch), terms.attention_cost(batch, context)
        whole = costs.decode_cost(batch, context, decoder_config(curve.params), 4)  # float32: 4 bytes
        assert mm[0] + att[0] == pytest.approx(terms.flops(batch, context))
        assert mm[1] + att[1] == pytest.approx(terms.bytes(batch, context))
        assert mm[0] + att[0] == pytest.approx(whole["flops"]) and mm[1] + att[1] == pytest.approx(whole["bytes"])


def test_matmuls_turn_compute_bound_and_attention_never_does():
    for curve in steps():
        points = d.operation_points(curve)
        ridge = d.matmul_ridge_batch(curve)
        assert all(p.attention_bound == "memory" for p in points)  # 2·(H/H_kv)/s FLOP/B, far below the ridge
        assert all((p.matmul_bound == "compute") == (p.batch > ridge) for p in points)
        assert all(p.sum_s == pytest.approx(p.matmul_s + p.attention_s) for p in points)
        assert all(p.tokens_per_s == pytest.approx(p.batch * p.tokens_per_s_per_sequence) for p in points)
