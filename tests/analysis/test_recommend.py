"""The sweep's recommendation, on SYNTHETIC sweeps whose answers are known by construction."""

import dataclasses
import math
import re

import pytest

from benchmarks.analysis.roofline import recommend
from benchmarks.site import sweep_words
from tests.synthetic import make_sweep


def rec_of(doc):
    return sweep_words.from_document(doc)


def line_of(rec, start):
    return next(line for line in rec.lines if line.startswith(start))


def test_the_largest_batch_within_the_budget_and_what_it_buys():
    # latency ≈ 1 ms + 0.1 ms per row: 3 ms holds 16 rows (2.6 ms), not 32 (4.2 ms)
    rec = rec_of(make_sweep(budget_ms=3.0))
    assert rec.within_budget.batch == 16 and rec.budget_missed_by is None
    line = line_of(rec, "Largest batch within the 3 ms p90 budget: batch 16 (")
    ratio = rec.within_budget.throughput / rec.base.throughput
    assert f"{ratio:.1f}× the throughput of batch 1" in line


def test_a_budget_even_batch_one_misses():
    rec = rec_of(make_sweep(budget_ms=0.5))
    assert rec.within_budget is None and rec.budget_missed_by == pytest.approx(rec.base.percentile_s / 0.5e-3)
    assert line_of(rec, "No batch meets the 0.5 ms p90 budget: batch 1, the fastest, takes ")


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
    # bound on the roofline. Time = 1 ms + 0.1 ms per row, the 1 ms being 100 operators at the dispatch probe's
    # 10 µs: most of each call to batch 8 (1.8 ms), less than half from 16 (2.6 ms), where the 0.1 ms per row,
    # which grows with the batch and so is no fixed cost, takes over
    rec = rec_of(make_sweep(budget_ms=None))
    assert [(s.regime, s.first, s.last) for s in rec.diagnosis.segments] == [("overhead", 1, 8), ("memory", 16, 64)]
    assert rec.diagnosis.verdicts[0].fixed.seconds == pytest.approx(1e-3)
    line_of(rec, "batches 1–8: overhead-bound — dispatching its 100 operators at 10 µs each (the dispatch probe, ")
    low, high = rec.diagnosis.knee_band
    assert low == pytest.approx(500, rel=0.01) and high == pytest.approx(1500, rel=0.01)
    line_of(rec, "Ridge batch: 500–1500")


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
    assert (
        f"Recommended batch: run batch 16 (the smaller of batch 16, the largest within the budget, and batch "
        f"{rec.near_best.batch}, the first within 5 % of the highest throughput: the rule of the batch-size guide)."
        in rec.lines
    )
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
    rec = sweep_words.recommend(measured(*pairs), [], None, 50, None)
    assert (rec.near_best.batch, rec.ruled.batch, rec.run.batch) == (63, 63, 64)
    assert (
        "Recommended batch: run batch 64 (the rule of the batch-size guide: batch 63 is the smallest near the highest "
        "throughput, as no budget is given, but the larger batch 64 measured no slower, 0.00911 ms median against "
        "0.0093 ms, at 1.04× the throughput)."
    ) in rec.lines
    from snippets.choose import choose

    assert choose([(b, ms / 1e3) for b, ms in pairs], 1.0) == 64


def test_a_budget_no_batch_meets_runs_the_fastest_batch():
    pairs = [(1, 0.0046), (2, 0.0048), (32, 0.006), (63, 0.0093), (64, 0.011)]
    rec = sweep_words.recommend(measured(*pairs), [], 0.001, 99, None)
    assert rec.within_budget is None and rec.run.batch == 1
    assert (
        rec.lines[0]
        == "No batch meets the 0.001 ms p99 budget: batch 1, the fastest, takes 0.0046 ms, 4.6× the budget."
    )
    assert (
        "Recommended batch: run batch 1 (no batch meets the budget, so the fastest: the rule of the batch-size guide)."
        in rec.lines
    )
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
    rec = sweep_words.recommend(points, [], 100.0, 90, None)
    assert (rec.within_budget.batch, rec.near_best.batch) == (23, 22)
    assert rec.ruled.batch == 23 and rec.run.batch == 23


def test_no_free_range_is_said_as_none_with_the_next_batch():
    rec = sweep_words.recommend(measured((1, 10.0), (2, 17.0), (4, 30.0)), [], None, 50, None)
    assert "Free range: none; batch 2 already takes 17 ms, 1.70× batch 1's 10 ms." in rec.lines
    assert not any(line.startswith("Free range: up to batch 1 ") for line in rec.lines)
    flat = sweep_words.recommend(measured((1, 10.0), (2, 10.5), (4, 30.0)), [], None, 50, None)
    assert "Free range: up to batch 2 the median latency stays within 10 % of batch 1's (10.5 ms against 10 ms)." in (
        flat.lines
    )


# --------------------------------------------------------------------------- noise, margins, stretches (SYNTHETIC)


def spread(batch: int, ms: float, width: float, n: int = 30) -> recommend.SweepPoint:
    """A point whose n samples spread evenly over ±width around ms (milliseconds)."""
    samples = tuple((ms + width * (2 * i / (n - 1) - 1)) / 1e3 for i in range(n))
    ordered = sorted(samples)
    p90 = ordered[math.ceil(0.9 * n) - 1]
    return recommend.SweepPoint(batch, ms / 1e3, p90, samples, ordered[n // 4], ordered[3 * n // 4])


def test_a_noisy_machine_is_said_first_with_what_to_do():
    tail = [recommend.SweepPoint(b, 1e-3, 3e-3, (1e-3,) * 8 + (3e-3,) * 2, 1e-3, 1e-3) for b in (1, 2, 4)]
    noise = recommend.noise_of(tail, None, None)
    assert noise.tail == pytest.approx(3.0) and noise.high
    rec = sweep_words.recommend(tail, [], None, 50, None, noise=noise)
    assert rec.lines[0].startswith("Noise: high — the p90 is 3.00× the median (median over 3 batch sizes).")
    assert "Rerun on an idle machine" in rec.lines[0]
    quiet = recommend.noise_of(measured((1, 1.0), (2, 1.5)), {"copy": {"timing": {"samples_s": [1.0, 1.04]}}}, None)
    assert not quiet.high
    assert sweep_words.noise_line(quiet) == (
        "Noise: low — the p90 is 1.00× the median (median over 2 batch sizes); the ceilings' samples span copy 4 %."
    )
    moving = {"matmul": {"float32": {"timing": {"samples_s": [1.0, 3.0, 1.2]}}}}
    assert recommend.noise_of(measured((1, 1.0)), moving, "float32").high  # a ceiling that moved 3×


def test_a_budget_met_within_the_spread_names_the_safe_choice():
    points = [spread(16, 40.0, 1.0), spread(23, 55.0, 1.0), spread(24, 58.0, 2.5), spread(32, 75.0, 1.0)]
    rec = sweep_words.recommend(points, [], 60.0, 90, None)
    assert rec.within_budget.batch == 24
    line = line_of(rec, "Batch 24 meets the 60 ms p90 budget by ")
    assert "within the spread of its p90" in line and line.endswith(
        "batch 23 is the largest whose whole p90 spread stays within it (the choice with a margin)."
    )
    far = sweep_words.recommend(
        [spread(16, 40.0, 1.0), spread(24, 50.0, 1.0), spread(32, 75.0, 1.0)], [], 60.0, 90, None
    )
    assert not any("within the spread" in line for line in far.lines)


def test_a_cut_off_within_the_noise_names_both_batches():
    points = [spread(8, 8.0, 0.1), spread(16, 12.6, 1.5), spread(33, 25.0, 0.05), spread(64, 48.0, 0.05)]
    rec = sweep_words.recommend(points, [], None, 50, None)
    assert (rec.near_best.batch, rec.near_sure.batch) == (16, 33)
    assert "lies within the noise of batch 16 (" in line_of(rec, "Highest throughput: ")
    assert "batch 33 is the first beyond it" in line_of(rec, "Highest throughput: ")


def test_a_smaller_batch_over_the_budget_is_avoided_only_beyond_the_noise():
    noisy = [spread(16, 40.0, 1.0), spread(23, 56.0, 8.0), spread(24, 57.0, 1.0), spread(32, 75.0, 1.0)]
    rec = sweep_words.recommend(noisy, [], 60.0, 90, None)
    line = line_of(rec, "Batch 23 breaks the budget")
    assert "avoid" not in line and "a few slow samples, not a slower batch" in line
    slower = [spread(16, 40.0, 1.0), spread(23, 59.5, 0.5), spread(24, 50.0, 1.0), spread(32, 75.0, 1.0)]
    assert "so avoid it" in line_of(sweep_words.recommend(slower, [], 55.0, 90, None), "Batch 23 breaks the budget")


def test_a_step_is_named_only_beyond_the_noise_with_the_measured_medians():
    base = [(b, 10.0 + 0.1 * b) for b in range(32, 41)]
    calm = [spread(b, ms, 0.01) for b, ms in base] + [spread(b, 10.0 + 0.1 * b + 3.0, 0.01) for b in range(41, 49)]
    found = recommend.diagnose_sweep(_counted(calm), recommend.Ceilings(1e12, 1e12))
    (step, _), *_ = found.steps
    assert (step.before, step.after) == (40, 41)
    lines = sweep_words.diagnosis_lines(found)
    assert any(
        line.startswith("Step: batch 40 → 41 (14 ms → 17.1 ms, +22 % median, beyond the noise") for line in lines
    )
    noisy = [spread(b, ms, 6.0) for b, ms in base] + [spread(b, 10.0 + 0.1 * b + 0.4, 6.0) for b in range(41, 49)]
    assert not recommend.diagnose_sweep(_counted(noisy), recommend.Ceilings(1e12, 1e12)).steps


def _counted(points, flops=1e6, moved=1e6, ops=None, gaps=()):
    return [
        dataclasses.replace(p, flops=flops * p.batch, bytes_low=moved, bytes_high=3 * moved, ops=ops, uncounted=gaps)
        for p in points
    ]


def test_no_verdict_rests_on_a_count_that_missed_part_of_the_work():
    points = _counted(measured((1, 1.0), (2, 1.5), (4, 2.5)), ops=10, gaps=(("aten.mkldnn_rnn_layer", 0.6),))
    probes = recommend.Probes(per_op_s=1e-6, dispatch_model="8×64 MLP at batch 1")
    rec = sweep_words.recommend(points, [], None, 50, recommend.Ceilings(1e9, 1e9), probes=probes)
    assert [s.regime for s in rec.diagnosis.segments] == [recommend.UNKNOWN]
    line = line_of(rec, "batches 1–4: no verdict — operators no FLOP count covers (aten.mkldnn_rnn_layer) take 60 %")
    assert "bound" not in line.split("—")[0]
    assert any(line.startswith("No ridge batch predicted: the FLOP count misses operators") for line in rec.lines)
    assert all(segment is None for _, segment in sweep_words.marked_lines(rec))  # no verdict span to mark


def test_a_stretch_is_reported_per_point_and_never_over_a_ceiling():
    # FLOP rates of 0.4, 0.9 and 1.6 × the matmul ceiling: the stretch is compute-bound on the roofline
    points = _counted(measured((1, 2.5), (8, 8.9), (32, 20.0)), flops=1e9, moved=1e3)
    rec = sweep_words.recommend(points, [], None, 50, recommend.Ceilings(1e12, 1e15))
    line = line_of(rec, "batches 1–32: compute-bound — ")
    assert "40 % (batch 1) to 90 % (batch 8) of the measured matmul rate" in line
    assert "batch 32 beats the measured matmul rate, so it does not bound it" in line
    assert not re.search(r"\b([1-9]\d{2,}) %", "\n".join(rec.lines))


def test_a_memory_stretch_is_weighed_against_the_small_matmul_probe_and_dispatch():
    # 30 MB in 2.5 ms is 12 GB/s: 30 % of a 40 GB/s copy, 89 % of a 13.5 GB/s small-matmul stream; 50 operators
    # at 3 µs are 0.15 ms
    points = _counted(measured((1, 2.5)), flops=1.5e7, moved=3e7, ops=50)
    probes = recommend.Probes(3e-6, "8×64 MLP at batch 1", 13.5e9, "8×1024 MLP at batch 1")
    rec = sweep_words.recommend(points, [], None, 50, recommend.Ceilings(1e11, 4e10), probes=probes)
    line = line_of(rec, "batch 1: memory-bound — its 30 MB (weights at each use, inputs and outputs) move at 12 GB/s: ")
    assert "30 % of the measured copy bandwidth, and 89 % of the rate this device's small matrix products" in line
    assert line.endswith("dispatching its 50 operators at 3 µs each (the dispatch probe, 8×64 MLP at batch 1) takes "
                         "0.15 ms, 6 % of the time.")  # fmt: skip


def test_each_batch_answer_is_named_for_what_it_is_and_how_they_relate():
    rec = rec_of(make_sweep(budget_ms=3.0))
    assert line_of(rec, "Largest batch within the 3 ms p90 budget: batch ")
    assert line_of(rec, f"Recommended batch: run batch {rec.run.batch} (")
    relation = sweep_words.answers_line(rec)
    if {rec.run.batch, rec.within_budget.batch} != {rec.run.batch}:
        assert relation in rec.lines
        assert f"batch {rec.within_budget.batch} is the largest whose p90 fits the budget" in relation
        assert "`serve` answers another question" in relation
    safe = recommend.margin_batch(rec)
    if safe is not None:
        assert f"batch {safe.batch} fits it with a margin for the noise" in relation


def test_a_sweep_with_a_margin_answer_says_how_its_answers_relate():
    """The committed ResNet-50 sweep: batch 5 within the budget, batch 4 with a margin, batch 5 recommended."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks/sweeps/cpu-amd-epyc/20261201T144540Z-sweep-ecf4be.json"
    rec = sweep_words.from_document(json.loads(path.read_text(encoding="utf-8")))
    safe = recommend.margin_batch(rec)
    assert safe is not None and safe.batch < rec.within_budget.batch
    relation = sweep_words.answers_line(rec)
    assert relation in rec.lines and "safe choice" not in " ".join(rec.lines)
    assert f"batch {safe.batch} fits it with a margin for the noise" in relation
    assert f"batch {rec.run.batch} is the recommended one, the guide's rule" in relation
