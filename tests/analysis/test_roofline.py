import math
import random

import pytest

from benchmarks.analysis.roofline.roofline_model import (
    Ceilings,
    bound_by,
    critical_batch,
    crossing_batch,
    detect_knee,
    predicted_time,
    run_ceilings,
)


def test_predicted_time_is_the_larger_term():
    ceilings = Ceilings(flops_per_s=100e12, bytes_per_s=1e12)
    assert predicted_time(1e12, 1e9, ceilings) == pytest.approx(0.01)  # compute: 10 ms vs 1 ms
    assert predicted_time(1e9, 1e10, ceilings) == pytest.approx(0.01)  # memory: 0.01 ms vs 10 ms
    assert bound_by(1e12, 1e9, ceilings) == "compute" and bound_by(1e9, 1e10, ceilings) == "memory"


def mlp_points(width, depth, size, batches):
    return [(b, depth * 2 * width * width * b, depth * size * (width * width + width + 2 * b * width)) for b in batches]


def test_critical_batch_matches_the_closed_form():
    ceilings = Ceilings(flops_per_s=989.4e12, bytes_per_s=4.8e12)
    width, depth, size = 8192, 8, 2
    b = critical_batch(mlp_points(width, depth, size, [1, 64, 4096]), ceilings)
    # 2·w²·b / F = s·(w² + w + 2·b·w) / BW, solved for b by hand:
    r = ceilings.flops_per_s / ceilings.bytes_per_s
    expected = size * (width * width + width) * r / (2 * width * width - 2 * size * width * r)
    assert b == pytest.approx(expected)
    assert b == pytest.approx(ceilings.large_layer_ridge_batch(size), rel=0.1)


def test_critical_batch_is_none_when_never_compute_bound():
    ceilings = Ceilings(flops_per_s=1e15, bytes_per_s=1e9)  # absurdly high ridge
    assert critical_batch(mlp_points(64, 2, 4, [1, 8]), ceilings) is None
    with pytest.raises(ValueError):
        critical_batch(mlp_points(64, 2, 4, [8]), ceilings)


def test_run_ceilings_reads_the_measured_section(synthetic_doc):
    ceilings = run_ceilings(synthetic_doc["ceilings"], "bfloat16")
    assert ceilings.flops_per_s == synthetic_doc["ceilings"]["matmul"]["bfloat16"]["flops_per_s"]
    assert run_ceilings(synthetic_doc["ceilings"], "float8") is None


BATCHES = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024]


@pytest.mark.parametrize("knee", [8, 40, 200])
@pytest.mark.parametrize("noise", [0.0, 0.03])
def test_knee_of_a_roofline_shaped_curve(knee, noise):
    """SYNTHETIC curve: flat at 1 ms up to the knee, then proportional to batch."""
    rng = random.Random(knee)
    times = [1e-3 * max(1, b / knee) * (1 + rng.gauss(0, noise)) for b in BATCHES]
    found = detect_knee(BATCHES, times)
    assert found is not None
    assert found.batch == pytest.approx(knee, rel=0.25)
    assert found.slope_above == pytest.approx(1, abs=0.15)
    assert abs(found.slope_below) < 0.15


def test_knee_of_overhead_plus_linear_curve():
    """SYNTHETIC: t = overhead + b·cost has its knee where the two terms are equal."""
    times = [50e-6 + 1e-6 * b for b in BATCHES]
    assert detect_knee(BATCHES, times).batch == pytest.approx(50, rel=0.5)


@pytest.mark.parametrize(
    "times",
    [
        [1e-3] * len(BATCHES),  # flat: launch-bound, no knee in range
        [1e-6 * b for b in BATCHES],  # linear from the start: no flat region
        [1e-3 * (1 + 0.05 * math.sin(b)) for b in BATCHES],  # noisy flat
    ],
    ids=["flat", "linear", "noisy-flat"],
)
def test_curves_without_a_knee(times):
    assert detect_knee(BATCHES, times) is None


def test_knee_needs_enough_points():
    assert detect_knee([1, 2, 4], [1, 1, 2]) is None


def _affine(batches, flops0, flops_per_row, bytes0, bytes_per_row):
    return [(b, flops0 + flops_per_row * b, bytes0 + bytes_per_row * b) for b in batches]


@pytest.mark.parametrize(
    "points",
    [
        _affine((1, 2, 4, 8, 16, 32, 64), 0, 2e6, 1e6, 4e3),  # an MLP-like layer, knee inside the range
        _affine((1, 2, 4), 0, 2e6, 1e6, 4e3),  # knee beyond the range: the last segment extends
        _affine((4, 8, 16), 0, 2e6, 1e3, 1e3),  # compute-bound from the start
        _affine((1, 2, 4, 8), 0, 1e3, 1e6, 1e3),  # never compute-bound
    ],
)
def test_crossing_batch_is_the_closed_form_for_affine_workloads(points):
    ceilings = Ceilings(flops_per_s=100e12, bytes_per_s=2e12)
    expected = critical_batch(points, ceilings)
    found = crossing_batch(points, ceilings)
    assert (found is None) == (expected is None)
    if expected is not None:
        assert found == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_crossing_batch_sits_where_saturating_bytes_bend_the_roofline():
    """An MoE-like layer: weights grow with the experts touched until all are, then stop."""
    ceilings = Ceilings(flops_per_s=1e12, bytes_per_s=1e11)  # ridge: 10 FLOP/B
    points = [(b, 4e6 * b, min(b, 8) * 1e6 + 1e3 * b) for b in (1, 2, 4, 8, 16, 32, 64)]
    found = crossing_batch(points, ceilings)
    # compute 4e6·b / 1e12 = memory (8e6 + 1e3·b) / 1e11 past b = 8: b = 8e6 / (4e5 − 1e3) ≈ 20.05
    assert found == pytest.approx(8e6 / (4e5 - 1e3), rel=1e-6)
    assert critical_batch(points, ceilings) != pytest.approx(found, rel=0.05)  # one line misses the bend
