"""A larger batch that is faster than a smaller one beyond the spread of both (SYNTHETIC points)."""

from __future__ import annotations

from benchmarks.analysis.roofline.curves import Curve, MeasuredPoint
from benchmarks.site.pages import theory
from tests.synthetic import site_data


def point(batch: int, median_ms: float, spread_ms: float) -> MeasuredPoint:
    ms = 1e-3
    return MeasuredPoint(
        batch, median_ms * ms, (median_ms - spread_ms) * ms, (median_ms + spread_ms) * ms, 1.0, 1.0, None
    )


def curve_of(points: list[MeasuredPoint]) -> Curve:
    run = site_data().shown[0]
    return Curve(run, "mlp", {"width": 1024, "depth": 8}, "float32", "eager", "rotated", 1, points)


def test_a_dip_is_only_a_faster_larger_batch_beyond_both_spreads():
    clear = curve_of([point(1, 2.0, 0.05), point(2, 3.2, 0.05), point(4, 2.9, 0.05), point(8, 3.5, 0.05)])
    assert [(a.batch, b.batch) for a, b in clear.dips()] == [(2, 4)]
    noisy = curve_of([point(1, 2.0, 0.05), point(2, 3.2, 0.3), point(4, 2.9, 0.3), point(8, 3.5, 0.05)])
    assert noisy.dips() == []  # the quartile bands overlap: within the noise


def test_the_theory_page_states_a_dip_as_measured_without_naming_a_cause():
    clear = curve_of([point(1, 2.0, 0.05), point(2, 3.2, 0.05), point(4, 2.9, 0.05)])
    said = "".join(theory.dip_words(clear))
    assert "batch 2 takes 3.20 ms and batch 4 2.90 ms, beyond the spread of either" in said
    assert "this page does not say which" in said
    assert theory.dip_words(curve_of([point(1, 2.0, 0.05), point(2, 2.1, 0.05)])) == []
