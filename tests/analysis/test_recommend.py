"""The sweep's recommendation, on SYNTHETIC sweeps whose answers are known by construction."""

import pytest

from benchmarks.analysis import recommend
from tests.synthetic import make_sweep


def rec_of(doc):
    return recommend.from_document(doc)


def test_the_largest_batch_within_the_budget_and_what_it_buys():
    # latency ≈ 1 ms + 0.1 ms per row: 3 ms holds 16 rows (2.6 ms), not 32 (4.2 ms)
    rec = rec_of(make_sweep(budget_ms=3.0))
    assert rec.within_budget.batch == 16 and rec.budget_missed_by is None
    line = rec.lines[0]
    assert line.startswith("Within the 3 ms p90 budget: batch 16 (")
    ratio = rec.within_budget.throughput / rec.base.throughput
    assert f"{ratio:.1f}× the throughput of batch 1" in line


def test_a_budget_even_batch_one_misses():
    rec = rec_of(make_sweep(budget_ms=0.5))
    assert rec.within_budget is None and rec.budget_missed_by == pytest.approx(rec.base.percentile_s / 0.5e-3)
    assert rec.lines[0].startswith("No batch meets the 0.5 ms p90 budget: batch 1, the fastest, takes ")


def test_highest_throughput_and_the_smallest_batch_near_it():
    # throughput b/(1 ms + 0.1 ms·b) grows toward 10,000/s: batch 64 is highest; within 5 % of it needs b ≥ 52
    rec = rec_of(make_sweep(budget_ms=None))
    assert rec.best.batch == 64 and rec.near_best.batch == 64
    rec = rec_of(make_sweep(budget_ms=None, batches=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512)))
    assert rec.best.batch == 512 and rec.near_best.batch == 256


def test_the_free_range_and_the_memory_limit():
    rec = rec_of(make_sweep(fixed_s=1e-3, per_row_s=1e-6, batches=(1, 8, 64, 512), oom_from=512))
    assert rec.free_up_to.batch == 64  # 1.064 ms against 1.001 ms: within 10 %
    assert (rec.largest_ran, rec.first_oom) == (64, 512)
    assert "Memory: batch 64 is the largest that ran; batch 512 ran out of memory." in rec.lines


def test_the_diagnosis_uses_the_sweep_ceilings():
    # a 4096² bf16 layer on 1 TB/s and 500 TFLOP/s: the ridge is at 500 rows, so these batches are memory-
    # bound on the roofline. Time = 1 ms + 0.1 ms per row: the intercept over batches 1-4 is the 1 ms fixed
    # cost (less the 34 µs weight read): most of each call to batch 8 (1.8 ms), less than half from 16
    # (2.6 ms), where the 0.1 ms per row, which grows with the batch and so is no fixed cost, takes over
    rec = rec_of(make_sweep(budget_ms=None))
    assert [(s.regime, s.first, s.last) for s in rec.diagnosis.segments] == [("overhead", 1, 8), ("memory", 16, 64)]
    assert rec.diagnosis.verdicts[0].fixed.seconds == pytest.approx(1e-3 - 2 * 4096**2 / 1e12, rel=0.05)
    assert any(line.startswith("batches 1–8: overhead-bound — a fixed cost of 0.95") for line in rec.lines)
    low, high = rec.diagnosis.knee_band
    assert low == pytest.approx(500, rel=0.01) and high == pytest.approx(1500, rel=0.01)
    assert any(line.startswith("Ridge batch: 500–1500") for line in rec.lines)


def test_the_recommendation_is_kept_as_numbers_and_lines():
    kept = rec_of(make_sweep()).as_dict()
    assert kept["within_budget"] == 16 and kept["highest_throughput"] == 64 and kept["lines"]


def test_the_batch_to_run_is_the_guides_rule():
    """The smaller of the budget's batch and the flat-throughput batch (snippets/choose.py), the same rule."""
    from snippets.choose import choose

    doc = make_sweep(budget_ms=3.0)
    rec = rec_of(doc)
    points = [(p["batch"], p["percentile_s"]) for p in doc["points"]]
    assert rec.run.batch == 16 == min(rec.within_budget.batch, rec.near_best.batch)
    assert "Run batch 16 (the smaller of the two: the rule of the batch-size guide)." in rec.lines
    medians = [(p["batch"], p["median_s"]) for p in doc["points"]]
    assert choose(medians, 3e-3) == 16 and choose(points, 3e-3) == 16
    assert rec_of(make_sweep(budget_ms=None)).run.batch == 64


def test_a_percentile_on_too_few_samples_is_called_so():
    rec = rec_of(make_sweep(percentile=90))  # nine samples a point: the p90 is the slowest of them
    assert len(rec.thin) == 7
    assert (
        "Few samples: the p90 of every batch rests on 9 samples, and a p90 needs at least 10 to be more than the "
        "slowest of them."
    ) in rec.lines
    assert not rec_of(make_sweep(percentile=50)).thin


def measured(*pairs: tuple[int, float]) -> list[recommend.SweepPoint]:
    """Points of (batch, milliseconds), every sample the same."""
    return [recommend.SweepPoint(b, ms / 1e3, ms / 1e3, (ms / 1e3,) * 15, ms / 1e3, ms / 1e3) for b, ms in pairs]


def test_a_larger_batch_measured_no_slower_is_run_instead():
    """Batch 63 is the smallest within 5 % of the best throughput, but batch 64 is faster: run 64."""
    pairs = [(1, 0.005), (32, 0.006), (63, 0.0093), (64, 0.00911)]
    rec = recommend.recommend(measured(*pairs), [], None, 50, None)
    assert (rec.near_best.batch, rec.ruled.batch, rec.run.batch) == (63, 63, 64)
    assert (
        "Run batch 64 (the rule of the batch-size guide: batch 63 is the smallest near the highest throughput, as "
        "no budget is given, but the larger batch 64 measured no slower, 0.00911 ms median against 0.0093 ms, at "
        "1.04× the throughput)."
    ) in rec.lines
    from snippets.choose import choose

    assert choose([(b, ms / 1e3) for b, ms in pairs], 1.0) == 64


def test_a_budget_no_batch_meets_runs_the_fastest_batch():
    pairs = [(1, 0.0046), (2, 0.0048), (32, 0.006), (63, 0.0093), (64, 0.011)]
    rec = recommend.recommend(measured(*pairs), [], 0.001, 99, None)
    assert rec.within_budget is None and rec.run.batch == 1
    assert (
        rec.lines[0]
        == "No batch meets the 0.001 ms p99 budget: batch 1, the fastest, takes 0.0046 ms, 4.6× the budget."
    )
    assert "Run batch 1 (no batch meets the budget, so the fastest: the rule of the batch-size guide)." in rec.lines
    from snippets.choose import choose

    assert choose([(b, ms / 1e3) for b, ms in pairs], 1e-6) == 1


def test_a_tiny_share_of_a_ceiling_is_not_called_bound_by_it():
    # 0.1 ms a row for a 4096² layer is about 1 % of 1 TB/s: memory is the larger roofline term, no more
    rec = rec_of(make_sweep(budget_ms=None))
    line = next(line for line in rec.lines if line.startswith("batches 16–64: "))
    assert line.startswith("batches 16–64: far below both ceilings — 0.79 % of the measured copy bandwidth and ")
    assert "memory-bound" not in line and "at least" not in line
    assert line.endswith("memory is the larger roofline term, but neither it nor a fixed cost explains the time.")


def test_the_rule_never_runs_a_batch_over_a_budget_a_larger_batch_meets():
    """Batch 22 has the best throughput (by its median) but misses the p90 budget that batch 23 meets; 23's median
    is slower, so the last step would not move from 22 to it: the rule must not stop at 22."""

    def point(batch, median_ms, p90_ms):
        median, p90 = median_ms / 1e3, p90_ms / 1e3
        return recommend.SweepPoint(batch, median, p90, (median,) * 15, median, p90)

    points = [point(1, 20, 21), point(8, 70, 75), point(16, 80, 85), point(22, 80, 100.5), point(23, 85, 99),
              point(32, 200, 210)]  # fmt: skip
    rec = recommend.recommend(points, [], 100.0, 90, None)
    assert (rec.within_budget.batch, rec.near_best.batch) == (23, 22)
    assert rec.ruled.batch == 23 and rec.run.batch == 23


def test_no_free_range_is_said_as_none_with_the_next_batch():
    rec = recommend.recommend(measured((1, 10.0), (2, 17.0), (4, 30.0)), [], None, 50, None)
    assert "Free range: none; batch 2 already takes 17 ms, 1.70× batch 1's 10 ms." in rec.lines
    assert not any(line.startswith("Free range: up to batch 1 ") for line in rec.lines)
    flat = recommend.recommend(measured((1, 10.0), (2, 10.5), (4, 30.0)), [], None, 50, None)
    assert "Free range: up to batch 2 the median latency stays within 10 % of batch 1's (10.5 ms against 10 ms)." in (
        flat.lines
    )
