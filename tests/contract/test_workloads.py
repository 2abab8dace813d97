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


@pytest.mark.parametrize("spec", WORKLOADS.values(), ids=list(WORKLOADS))
def test_every_profile_configuration_counts_its_operators_and_says_which_bytes_it_counts(spec):
    configurations = [s.params for p in PROFILES.values() for s in p.sweeps if s.workload == spec.name]
    for params in [spec.defaults(), *configurations]:
        ops = spec.operators({**spec.defaults(), **params})
        assert isinstance(ops, int) and 1 <= ops < 100_000, (spec.name, params)
    assert len(spec.bytes_counted) > 40 and "read" in spec.bytes_counted


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


def test_readme_names_every_file_a_new_workload_touches():
    """Every module holding a per-workload registry (one entry per workload, looked up by name) is in
    README's list, and every file named there exists."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    sentence = readme[readme.index("Adding a workload touches:") :].split("\n\n")[0]
    named = set(re.findall(r"`([\w/.]+\.py)`", sentence))
    assert named and all((root / path).is_file() for path in named)
    registries = set()
    for path in [*root.glob("benchmarks/**/*.py"), *root.glob("snippets/*.py")]:
        source = path.read_text(encoding="utf-8")
        if all(f'"{name}"' in source or f"workloads.{name.upper().replace('-', '_')}" in source for name in WORKLOADS):
            registries.add(path.relative_to(root).as_posix())
    assert {"benchmarks/workloads.py", "benchmarks/measure/adapters.py", "benchmarks/profiles.py"} <= registries
    assert registries - named == set(), f"README's list misses {sorted(registries - named)}"
