"""The workload registry: one spec per workload, read by the profiles, the harness and the site."""

import pytest

from benchmarks.profiles import PROFILES
from benchmarks.workloads import WORKLOADS, workload


def test_every_profile_sweep_names_a_workload_with_valid_params():
    for profile in PROFILES.values():
        for sweep in profile.sweeps:
            assert workload(sweep.workload).problems(sweep.params) == [], (profile.name, sweep.label())


@pytest.mark.parametrize("spec", WORKLOADS.values(), ids=list(WORKLOADS))
def test_defaults_are_valid_and_cost_something(spec):
    params = spec.defaults()
    assert spec.problems(params) == []
    flops, moved = spec.cost(params, 2, 4)
    assert flops > 0 and moved > 0
    weights = spec.weight_bytes(params, 2)
    assert weights > 0 and (weights < moved or spec.name == "moe")  # a small MoE batch leaves experts unread
    assert spec.label(params) and spec.shape(params) and spec.unit.item in ("rows", "images", "sequences")


def test_parameter_problems_name_the_parameter():
    mlp = workload("mlp")
    assert mlp.problems({"width": "1024", "depth": 8}) == [("width", "must be int, got str")]
    assert mlp.problems({"width": True, "depth": 8}) == [("width", "must be int, got bool")]
    assert mlp.problems({"width": 0, "depth": 8}) == [("width", "must be at least 1")]
    assert mlp.problems({"width": 64}) == [("depth", "is required but missing")]
    assert mlp.problems({"width": 64, "depth": 8, "x": 1}) == [("x", "is not a parameter of this workload")]
    moe = workload("moe")
    assert moe.problems({**moe.defaults(), "variant": "random"})[0][0] == "variant"
    assert moe.problems({**moe.defaults(), "top_k": 9}) == [("(params)", "top_k (9) must not exceed experts (8)")]
    decode = workload("decode")
    assert decode.problems({**decode.defaults(), "heads": 30})[0][0] == "(params)"  # 30 does not divide 4096


def test_unknown_workload_lists_the_known_ones():
    with pytest.raises(ValueError, match="choose from mlp, linear"):
        workload("gpt")


def test_labels_name_the_configuration():
    assert workload("mlp").label({"width": 1024, "depth": 8}) == "width 1024"
    assert workload("mlp").shape({"width": 1024, "depth": 8}) == "8×1024 MLP"
    assert workload("conv").label({"c_in": 64, "c_out": 128, "kernel": 3, "resolution": 56}) == "3×3, 64→128 @56²"
    decode = workload("decode").defaults()
    assert workload("decode").label(decode) == "context 2048, GQA (8 KV heads)"
    assert workload("decode").label({**decode, "kv_heads": 32}) == "context 2048, MHA"
    assert workload("moe").label({"variant": "token-choice", "skew": 1.0}) == "skew 1"
