"""Policy search, capacity and the MLPerf check. Curves here are SYNTHETIC unless read from committed files."""

import math

import numpy as np
import pytest

from benchmarks.analysis.published import mlperf_server
from benchmarks.analysis.published.measurements_file import read_published
from benchmarks.analysis.roofline.predict import predict
from benchmarks.analysis.serving.batcher.policy import Arrivals, candidates, capacity, outcome, search
from benchmarks.analysis.serving.batcher.simulator import Policy, ServiceCurve
from benchmarks.gpus import find_gpu
from benchmarks.site.batcher_words import explain, summary

# A made-up curve: 10 ms + 2 ms per request, ±10 % spread (a fixture, not a measurement)
CURVE = ServiceCurve.from_samples(
    {b: [(0.010 + 0.002 * b) * f for f in (0.9, 1.0, 1.1)] for b in (1, 2, 4, 8, 16, 32)}, "synthetic"
)


def test_capacity_is_the_edge_of_the_budget():
    policy = Policy("triton", 16, 0.002)
    found = capacity(policy, CURVE, 0.100, 99, n=5_000)
    assert 0 < found.rate_per_s < found.ceiling_per_s == pytest.approx(16 / CURVE.mean(16))
    inside = outcome(policy, CURVE, found.rate_per_s, 0.100, 99, n=5_000)
    beyond = outcome(policy, CURVE, found.rate_per_s * 1.1, 0.100, 99, n=5_000)
    assert inside.meets and not beyond.meets


def test_batching_sustains_more_than_one_request_at_a_time():
    batched = capacity(Policy("triton", 16, 0.002), CURVE, 0.100, 99, n=5_000).rate_per_s
    plain = capacity(Policy("none", 1, 0.0), CURVE, 0.100, 99, n=5_000)
    assert plain.rate_per_s < plain.ceiling_per_s == pytest.approx(1 / CURVE.mean(1))
    assert batched > 3 * plain.rate_per_s


def test_a_budget_below_one_batch_is_met_at_no_rate():
    assert capacity(Policy("triton", 8, 0.0), CURVE, 0.005, 99, n=2_000).rate_per_s == 0


def test_candidates_cover_powers_of_two_and_delays_within_the_budget():
    found = candidates(CURVE, "triton", 2, 0.004, "blocking")
    assert {p.max_batch for p in found} == {1, 2, 4, 8, 16, 32}
    assert all(p.max_delay_s < 0.004 and p.instances == 2 for p in found)
    assert [p for p in found if p.max_batch == 1] == [Policy("triton", 1, 0.0, 2)]
    assert candidates(CURVE, "none", 3, 0.1, "blocking") == [Policy("none", 1, 0.0, 3)]


def test_search_meets_the_budget_and_explains_itself():
    plan = search(CURVE, [50, 150], 0.100, 99, n=3_000, check_n=5_000)
    assert plan.chosen is not None and plan.chosen.policy.instances == 1
    assert all(o.meets for o in plan.checked)
    words = explain(plan)
    assert "p99" in words and "within the 100 ms budget" in words and "Without batching" in words
    assert f"max batch {plan.chosen.policy.max_batch}" in words
    data = summary(plan)
    assert data["meets_budget"] and data["policy"]["max_batch"] == plan.chosen.policy.max_batch
    assert [entry["rate_per_s"] for entry in data["at_rates"]] == [50, 150]


def test_the_search_keeps_each_tried_policys_verdict_not_its_simulation():
    """A curve up to batch 65,536 simulates a million requests per policy and rate: kept for 161 policies, their
    arrays took 3.5 GB. Only the simulations of the chosen policy's check are kept whole."""
    plan = search(CURVE, [50, 150], 0.100, 99, n=3_000, check_n=5_000)
    verdicts = [o for c in plan.tried for o in c.outcomes]
    assert len(verdicts) > 10 and all(o.result is None for o in verdicts)
    again = {(o.policy, o.rate): outcome(o.policy, CURVE, o.rate, 0.100, 99, n=3_000) for o in verdicts}
    assert all(o.latency_s == again[o.policy, o.rate].latency_s and o.meets == again[o.policy, o.rate].meets
               for o in verdicts)  # fmt: skip
    assert all(o.result is not None for o in plan.checked)


def test_search_adds_instances_only_when_one_is_not_enough():
    plan = search(CURVE, [1_000], 0.150, 99, server="triton", max_instances=4, n=3_000, check_n=3_000)
    assert plan.chosen is not None and plan.chosen.policy.instances > 1
    assert not any(c.meets for c in plan.tried if c.policy.instances < plan.chosen.policy.instances)


def test_search_says_when_nothing_meets_the_budget():
    plan = search(CURVE, [2_000], 0.050, 99, n=2_000, check_n=2_000)
    assert plan.chosen is None
    assert explain(plan).startswith("No policy tried keeps p99 within 50 ms at 2,000/s")
    assert summary(plan)["policy"] is None


def test_arrivals_scale_one_sequence_to_any_rate():
    poisson = Arrivals()
    assert np.allclose(poisson.times(10, 100, seed=3) * 10, poisson.times(20, 100, seed=3) * 20)
    bursty = Arrivals("gamma", cv=4.0).times(100, 50_000)
    gaps = np.diff(bursty)
    assert gaps.std() / gaps.mean() == pytest.approx(4.0, rel=0.1)
    trace = Arrivals.from_trace([0.0, 1.0, 1.5, 4.0], "t.txt")
    assert trace.own_rate == pytest.approx(0.75)
    assert trace.times(3.0, 4).tolist() == pytest.approx([0, 0.25, 0.375, 1.0])  # gaps 1, ½, 2½ (mean 4/3) at 3/s
    with pytest.raises(ValueError, match="two distinct"):
        Arrivals.from_trace([1.0], "one.txt")


# -- MLPerf v3.0 DGX H100 ResNet-50 -------------------------------------------------------------------------


def test_the_simulated_settings_are_the_ones_quoted():
    rows = {row.id: row for row in read_published()}
    server = rows[mlperf_server.SERVER_ID]
    batch = server.configuration["batch"]
    assert f"gpu_batch_size = {mlperf_server.SERVER_BATCH}" in batch
    assert f"deque_timeout_usec = {mlperf_server.DEQUE_TIMEOUT_S * 1e6:.0f}" in batch
    assert f"gpu_inference_streams = {mlperf_server.STREAMS}" in batch
    assert f"target_latency (ns): {mlperf_server.BOUND_S * 1e9:.0f}" in server.quote
    offline = rows[mlperf_server.OFFLINE_ID]
    assert f"gpu_batch_size = {mlperf_server.OFFLINE_BATCH}" in offline.configuration["batch"]
    assert (server.value, offline.value) == (600179.00, 727437)


def test_the_curve_is_scaled_to_the_offline_figure():
    curve, scale = mlperf_server.scaled_curve(727437)
    gpu = find_gpu("NVIDIA H100 SXM")
    (roofline,) = predict("resnet50", {"resolution": 224}, gpu.ceilings("float16"), "float16", [2048])
    assert roofline.seconds * scale == pytest.approx(2048 / (727437 / 8))
    assert scale < 1  # the published system beats an fp16 roofline with unfused elementwise passes
    per_gpu = 256 / curve.median(256)
    assert per_gpu <= 727437 / 8 * 1.001  # a batch of 256 does no better than the Offline batch of 2048


def test_mlperf_server_prediction():
    found = mlperf_server.check()
    assert found.policy.per_device == mlperf_server.STREAMS and found.policy.devices == mlperf_server.GPUS
    assert found.predicted_per_s <= 727437 * 1.001  # never above what the same GPUs did offline
    assert 0.5 < found.ratio < 1.2
    assert not found.at_published.result.overloaded
    assert found.at_published.latency_s < mlperf_server.BOUND_S
    assert math.isclose(found.published_share_of_offline, 600179 / 727437)


def test_the_answer_names_itself_and_the_max_batches_it_was_chosen_among():
    plan = search(CURVE, [50.0], 0.100, 99, n=2_000, check_n=4_000)
    said = explain(plan)
    tried = sorted({c.policy.max_batch for c in plan.tried})
    assert (
        f"Max batch {plan.chosen.policy.max_batch} is serve's max batch for the dynamic batcher, chosen among " in said
    )
    assert f"{', '.join(map(str, tried))} (the powers of two up to the curve's largest batch, and that batch)" in said
    assert "a sweep's largest batch within a budget answers another question" in said
