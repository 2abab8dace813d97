"""The calculator's formulas, by hand and as the Vega expressions the browser runs."""

import math
import re

import pytest

from benchmarks.analysis.roofline import calculator
from benchmarks.gpus import GPUS, find_gpu

H100 = find_gpu("NVIDIA H100 SXM")
T4 = find_gpu("NVIDIA T4")


@pytest.mark.parametrize(
    ("gpu", "dtype", "ridge"),
    [
        (H100, "bfloat16", 295),  # 989.4e12 / 3.35e12 = 295.3 FLOP/B, × 2 bytes / 2
        (T4, "float16", 203),  # 65e12 / 320e9 = 203.1
        (T4, "float32", 51),  # 8.1e12 / 320e9 = 25.3, × 4 bytes / 2 = 50.6
    ],
)
def test_wide_layer_ridge_matches_the_hand_computed_datasheet_ridge(gpu, dtype, ridge):
    assert gpu.ridge_batch(dtype) == pytest.approx(ridge, abs=1)
    # the exact ridge of a finite layer tends to the same value as the layer widens
    assert calculator.gpu_ridge_batch(gpu, dtype, 2**20) == pytest.approx(gpu.ridge_batch(dtype), rel=0.01)


def test_finite_width_ridge_by_hand():
    # F = 100, BW = 10, s = 2, w = 100: b* = 2·(10⁴ + 100)/10 ÷ (2·10⁴/100 − 2·2·100/10) = 2020 / 160
    assert calculator.mlp_ridge_batch(100, 10, 2, 100) == pytest.approx(2020 / 160)
    assert calculator.mlp_ridge_batch(100, 10, 2, 10) is None  # 2·100/100 − 2·2·10/10 < 0: never compute-bound


def test_prediction_by_hand_h100_bf16():
    # 8 layers of 4096² in bf16 at batch 1: bytes 8·2·(4096² + 4096 + 2·4096) = 268,632,064
    one = calculator.predict_mlp(H100, "bfloat16", 4096, 8, 1)
    assert one.bytes == 8 * 2 * (4096**2 + 4096 + 2 * 4096)
    assert one.bound == "memory" and one.seconds == pytest.approx(one.bytes / 3.35e12)
    big = calculator.predict_mlp(H100, "bfloat16", 4096, 8, 4096)
    assert big.bound == "compute" and big.seconds == pytest.approx(8 * 2 * 4096**2 * 4096 / 989.4e12)
    ridge = calculator.gpu_ridge_batch(H100, "bfloat16", 4096)
    at_ridge = calculator.predict_mlp(H100, "bfloat16", 4096, 8, ridge)
    assert at_ridge.flops / 989.4e12 == pytest.approx(at_ridge.bytes / 3.35e12)


def _evaluate_vega(expression: str, **names) -> float | None:
    """Evaluate the subset of Vega's expression language the calculator uses, in Python."""
    python = expression.replace("datum.", "datum_")
    forecast = re.fullmatch(r"(.+?) / \(\((.+?)\) > \((.+)\) \? (\S+) : (\S+)\)", python)
    if forecast:
        seconds, compute, memory, if_compute, if_memory = forecast.groups()
        python = f"({seconds}) / (({if_compute}) if ({compute}) > ({memory}) else ({if_memory}))"
    python = re.sub(r"(.+?) \? (.+) : null$", r"(\2) if (\1) else None", python)
    return eval(python, {"max": max}, names)  # a test-only evaluator of our own strings


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.name)
def test_vega_expressions_agree_with_python(gpu):
    expressions = calculator.vega_expressions("layer_width", "layers")
    for dtype, peak in gpu.peak_flops.items():
        size = {"float32": 4, "tfloat32": 4, "bfloat16": 2, "float16": 2, "float8": 1, "int8": 1, "float4": 0.5}[dtype]
        for width, depth, batch in ((256, 1, 1), (4096, 8, 64), (16384, 32, 4096)):
            names = {"datum_peak": peak, "datum_bandwidth": gpu.bandwidth, "datum_size": size, "datum_batch": batch,
                     "datum_eta_memory": 0.6, "datum_eta_compute": 0.7}  # fmt: skip
            names |= {"layer_width": width, "layers": depth}
            seconds = _evaluate_vega(expressions["seconds"], **names)
            assert seconds == pytest.approx(calculator.predict_mlp(gpu, dtype, width, depth, batch).seconds)
            forecast = _evaluate_vega(expressions["forecast"], **names)
            assert forecast == pytest.approx(calculator.forecast_mlp(gpu, dtype, width, depth, batch, 0.6, 0.7))
            assert forecast > seconds
            ridge = _evaluate_vega(expressions["ridge"], **names)
            expected = calculator.gpu_ridge_batch(gpu, dtype, width)
            assert (ridge is None) == (expected is None)
            if expected is not None:
                assert math.isclose(ridge, expected, rel_tol=1e-9)
            cached = _evaluate_vega(expressions["ridge_cached"], **names)
            expected = calculator.gpu_ridge_batch(gpu, dtype, width, depth, "cache")
            assert (cached is None) == (expected is None)
            if expected is not None:
                assert math.isclose(cached, expected, rel_tol=1e-9)


def test_the_article_s_t4_example_has_one_answer_between_two_bounds():
    """8×1024 in fp16 on a T4: 337 when every activation crosses memory, 214 when they stay in cache; the
    wide-layer limit is 203."""
    t4 = find_gpu("NVIDIA T4")
    assert calculator.gpu_ridge_batch(t4, "float16", 1024) == pytest.approx(337, abs=0.5)
    assert calculator.gpu_ridge_batch(t4, "float16", 1024, 8, "cache") == pytest.approx(214, abs=0.5)
    assert t4.ridge_batch("float16") == pytest.approx(203, abs=0.5)
    cached = calculator.predict_mlp(t4, "float16", 1024, 8, 1, "cache")
    assert cached.bytes == 8 * 2 * (1024 * 1024 + 1024) + 2 * 2 * 1024


def test_measured_devices_predict_from_their_own_ceilings(write_doc):
    from benchmarks.contract.results import read_run
    from tests.synthetic import make_run

    gpu = read_run(write_doc(make_run(name="NVIDIA H200")))  # SYNTHETIC, named after a datasheet GPU
    rates = calculator.measured_rates(gpu)
    assert rates["bfloat16"] == (400e12, gpu.ceilings["copy"]["bytes_per_s"])
    assert calculator.datasheet_of(gpu).name == "NVIDIA H200"
    assert {c.mode for c in calculator.measured_curves(gpu)} == {"graph"}  # the hardware's curve
    assert calculator.default_gpu([gpu]) == "NVIDIA H200"
    cpu = read_run(write_doc(make_run(kind="cpu", slug="synthetic-cpu"), slug="synthetic-cpu"))
    assert calculator.datasheet_of(cpu) is None
    assert {c.mode for c in calculator.measured_curves(cpu)} == {"eager"}
    assert calculator.default_gpu([]) == calculator.DEFAULT_GPU


def test_ridge_range_is_sorted_over_the_gpus_that_run_the_dtype():
    found = calculator.ridge_range(GPUS, "bfloat16")
    assert [b for b, _ in found] == sorted(b for b, _ in found)
    assert "NVIDIA T4" not in {name for _, name in found}  # Turing has no bf16
    assert (H100.ridge_batch("bfloat16"), H100.name) in found
