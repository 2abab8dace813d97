"""The knee check on SYNTHETIC curves whose cause is known (made-up ceilings; never published)."""

import pytest

from benchmarks.analysis.roofline import knees
from tests.analysis.test_diagnosis import BW, F, _diagnose, _mlp, _roofline, _run


def test_a_roofline_curve_at_reduced_rates_holds_at_the_rates_reached():
    d = _diagnose(_run(_mlp(4096, "eager", _roofline(share_of_bandwidth=0.4, share_of_compute=0.8))), 4096)
    check = knees.check(d)
    assert d.reached.bytes_per_s == pytest.approx(0.4 * BW) and d.reached.flops_per_s == pytest.approx(0.8 * F)
    assert check.holds and check.ratio == pytest.approx(1, abs=0.25)
    assert not knees.within(check.measured / d.predicted_knee)  # the run's ceilings put it 2× too early
    assert not check.serial_explains


def test_a_slow_batch_one_kernel_does_not_set_the_streaming_rate():
    def seconds(b, flops, moved):  # batch 1 streams at the full bandwidth, larger batches at half of it
        return max(flops / F, moved / (BW if b == 1 else 0.5 * BW))

    d = _diagnose(_run(_mlp(4096, "eager", seconds)), 4096)
    assert d.reached.bytes_per_s == pytest.approx(0.5 * BW, rel=0.05)  # the median of the flat part
    assert knees.check(d).holds


def test_a_fixed_cost_that_adds_to_the_arithmetic_is_told_apart():
    fixed, rate = 50e-6, F / 5000  # the arithmetic overtakes the fixed cost near batch 64
    d = _diagnose(_run(_mlp(64, "eager", lambda b, flops, moved: fixed + flops / rate, cache="resident")), 64,
                  cache="resident")  # fmt: skip
    check = knees.check(d)
    assert not check.holds and check.serial_explains
    assert check.serial_error < 0.05 < 0.3 < check.roofline_error
    assert check.serial_ratio == pytest.approx(1, abs=0.1)


def test_within_is_symmetric():
    assert knees.within(1.49) and knees.within(1 / 1.49) and not knees.within(1.51) and not knees.within(None)
