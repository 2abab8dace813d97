"""The dynamic-batching simulator: exact where queueing theory is exact, each server's rule on hand-made
arrivals, and the properties a batcher must have.

Service curves here are SYNTHETIC (exponential, constant, or made-up lines), not measurements."""

import math
from itertools import pairwise

import numpy as np
import pytest

from benchmarks.analysis.serving.batcher.simulator import (
    Policy,
    ServiceCurve,
    TraceError,
    gamma_arrivals,
    poisson_arrivals,
    simulate,
    trace_arrivals,
)


def waiting(result) -> float:
    """Mean time from arrival to the start of service."""
    return result.mean("queue") + result.mean("formation")


def test_mm1_mean_wait():
    lam, mu = 0.5, 1.0
    arrivals = poisson_arrivals(lam, 200_000, np.random.default_rng(1))
    result = simulate(Policy("none", 1, 0.0), ServiceCurve.exponential({1: 1 / mu}), arrivals, seed=2)
    theory = (lam / mu) / (mu - lam)  # M/M/1: Wq = ρ / (μ − λ)
    assert waiting(result) == pytest.approx(theory, rel=0.04)
    assert result.utilisation == pytest.approx(lam / mu, rel=0.02)
    assert not result.overloaded


def test_md1_mean_wait():
    lam, mu = 0.7, 1.0
    arrivals = poisson_arrivals(lam, 200_000, np.random.default_rng(3))
    result = simulate(Policy("none", 1, 0.0), ServiceCurve.deterministic({1: 1 / mu}), arrivals, seed=4)
    theory = lam / (2 * mu * (mu - lam))  # M/D/1, Pollaczek–Khinchine: Wq = ρ / (2μ(1 − ρ))
    assert waiting(result) == pytest.approx(theory, rel=0.04)
    assert np.all(result.service_s == 1.0)


def test_mm2_mean_wait_erlang_c():
    lam, mu, c = 1.5, 1.0, 2
    a = lam / mu
    rho = a / c
    tail = a**c / math.factorial(c) / (1 - rho)
    erlang_c = tail / (sum(a**k / math.factorial(k) for k in range(c)) + tail)
    theory = erlang_c / (c * mu - lam)
    arrivals = poisson_arrivals(lam, 200_000, np.random.default_rng(5))
    result = simulate(Policy("none", 1, 0.0, instances=c), ServiceCurve.exponential({1: 1 / mu}), arrivals, seed=6)
    assert waiting(result) == pytest.approx(theory, rel=0.05)


def bulk_service_wait(lam: float, mu: float, size: int) -> float:
    """M/M^[K]/1 (Bailey): a free server takes everyone waiting, up to K, for an exponential time of rate μ
    whatever the batch. Busy states with n waiting have probability C·r^n, r the root in (0, 1) of
    μr^(K+1) − (λ+μ)r + λ = 0, the idle state μC/λ; Wq = Lq/λ with Lq = C·r/(1 − r)²."""
    f = lambda r: mu * r ** (size + 1) - (lam + mu) * r + lam  # noqa: E731
    grid = np.linspace(0, 1, 100_001)[:-1]
    values = f(grid)
    i = int(np.nonzero(np.sign(values[:-1]) != np.sign(values[1:]))[0][0])
    lo, hi = grid[i], grid[i + 1]
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.sign(f(mid)) == np.sign(f(lo)) else (lo, mid)
    r = lo
    c = 1 / (1 / (1 - r) + mu / lam)
    return c * r / (1 - r) ** 2 / lam


@pytest.mark.parametrize("server", ["triton", "torchserve", "ray"])
def test_bulk_service_mean_wait(server):
    lam, mu, size = 3.0, 1.0, 4
    curve = ServiceCurve.exponential({1: 1 / mu, size: 1 / mu})
    # with no delay every rule is the same greedy bulk server: take what waits, up to K
    runs = [
        simulate(Policy(server, size, 0.0), curve, poisson_arrivals(lam, 200_000, np.random.default_rng(s)), seed=s)
        for s in (100, 101, 102, 103)
    ]  # at ρ = 0.75 one run's mean wait varies by about 2 %: four of them
    assert np.mean([waiting(r) for r in runs]) == pytest.approx(bulk_service_wait(lam, mu, size), rel=0.03)
    assert all(r.formation_s.max() == 0 for r in runs)


# -- each server's rule on hand-made arrivals ------------------------------------------------------------

ARRIVALS = np.array([0.000, 0.001, 0.002, 0.010])
FLAT = ServiceCurve.deterministic({1: 0.020, 3: 0.020})


def test_triton_counts_the_delay_from_the_oldest_request():
    result = simulate(Policy("triton", 3, 0.005), FLAT, ARRIVALS)
    assert result.batch_sizes.tolist() == [3, 1]
    # the first batch is full at 2 ms; the fourth request has waited longer than the delay when the instance
    # frees at 22 ms, so it leaves at once
    assert result.batch_start_s.tolist() == pytest.approx([0.002, 0.022])
    assert result.formation_s.tolist() == pytest.approx([0.002, 0.001, 0.0, 0.0])
    assert result.queue_s[3] == pytest.approx(0.012)


@pytest.mark.parametrize("policy", [Policy("torchserve", 3, 0.005), Policy("ray", 3, 0.005)])
def test_a_free_worker_starts_the_wait_when_it_takes_the_first_request(policy):
    result = simulate(policy, FLAT, ARRIVALS)
    assert result.batch_sizes.tolist() == [3, 1]
    assert result.batch_start_s.tolist() == pytest.approx([0.002, 0.027])
    assert result.formation_s[3] == pytest.approx(0.005)
    assert result.queue_s[3] == pytest.approx(0.012)


def test_an_awaiting_ray_handler_closes_batches_while_the_previous_one_runs():
    result = simulate(Policy("ray", 3, 0.005, handler="awaiting"), FLAT, ARRIVALS)
    # the second batch closed at 10 + 5 ms while the first ran, then waited for the replica
    assert result.batch_start_s.tolist() == pytest.approx([0.002, 0.022])
    assert result.formation_s[3] == pytest.approx(0.005)
    assert result.queue_s[3] == pytest.approx(0.007)


def test_latency_is_the_sum_of_its_parts_plus_the_overhead():
    arrivals = poisson_arrivals(200, 5_000, np.random.default_rng(9))
    curve = ServiceCurve.from_samples({1: [0.004, 0.005, 0.006], 8: [0.010, 0.012, 0.011]})
    result = simulate(Policy("triton", 8, 0.002, instances=2), curve, arrivals, overhead_s=0.001)
    total = result.queue_s + result.formation_s + result.service_s + 0.001
    assert np.allclose(result.latency_s, total)
    assert (result.queue_s >= -1e-12).all() and (result.formation_s >= -1e-12).all()
    assert result.batch_sizes.sum() == 5_000 and result.batch_sizes.max() <= 8


# -- Ray Serve as measured with Ray 2.60: one replica, max batch 16, wait 5 ms, 33 ms + 3 ms per request ------

RAY_CURVE = ServiceCurve.deterministic({b: 0.033 + 0.003 * b for b in (1, 16)}, "33 ms + 3 ms per request")


def ray(rate: float, handler: str, n: int = 20_000):
    arrivals = poisson_arrivals(rate, n, np.random.default_rng(11))
    return simulate(Policy("ray", 16, 0.005, handler=handler), RAY_CURVE, arrivals, seed=12)


def test_an_awaiting_handler_forms_one_plus_rate_times_wait_and_saturates_near_30_per_s():
    low = ray(20, "awaiting")
    assert low.mean_batch == pytest.approx(1 + 20 * 0.005, abs=0.03)
    assert not low.overloaded
    assert ray(40, "awaiting").overloaded


def test_a_blocking_handler_fills_the_next_batch_while_one_runs():
    busy = ray(100, "blocking")
    assert 5 <= busy.mean_batch <= 6
    assert not ray(150, "blocking").overloaded


# -- properties ---------------------------------------------------------------------------------------------

CURVE = ServiceCurve.from_samples(
    {b: [0.010 + 0.002 * b * f for f in (0.9, 1.0, 1.1, 1.3)] for b in (1, 2, 4, 8, 16, 32)}, "synthetic"
)


@pytest.mark.parametrize("policy", [Policy("none", 1, 0.0), Policy("triton", 16, 0.0, instances=2)])
def test_p99_never_falls_as_the_rate_rises_without_a_delay(policy):
    unit = np.cumsum(np.random.default_rng(13).standard_exponential(20_000))  # the same arrivals, scaled
    capacity = policy.instances * policy.max_batch / CURVE.mean(policy.max_batch)
    rates = capacity * np.linspace(0.1, 0.9, 9)
    p99 = [simulate(policy, CURVE, unit / rate, seed=14).raw_percentile(99) for rate in rates]
    assert all(later >= earlier * 0.99 for earlier, later in pairwise(p99)), p99


def test_with_a_long_delay_p99_falls_as_batches_fill_before_it():
    """Not a monotonic property: a max delay long against the gap between requests is paid in full at low
    load, and less once a busier stream fills the batch before it ends."""
    unit = np.cumsum(np.random.default_rng(15).standard_exponential(5_000))
    policy = Policy("triton", 4, 0.050)
    quiet, busy = (simulate(policy, CURVE, unit / rate, seed=16).raw_percentile(99) for rate in (5, 150))
    assert busy < quiet


@pytest.mark.parametrize("server", ["triton", "torchserve", "ray"])
def test_a_longer_delay_never_lowers_the_mean_batch(server):
    arrivals = poisson_arrivals(300, 10_000, np.random.default_rng(17))
    means = [simulate(Policy(server, 32, d), CURVE, arrivals, seed=18).mean_batch for d in (0, 0.001, 0.004, 0.016)]
    assert all(later >= earlier * 0.99 for earlier, later in pairwise(means)), means


def test_overload_is_a_verdict_not_a_percentile():
    curve = ServiceCurve.deterministic({1: 0.010})
    over = simulate(Policy("none", 1, 0.0), curve, poisson_arrivals(120, 10_000, np.random.default_rng(19)))
    assert over.overloaded and over.percentile(99) == math.inf
    assert over.summary()["percentiles_s"]["99"] is None
    under = simulate(Policy("none", 1, 0.0), curve, poisson_arrivals(80, 10_000, np.random.default_rng(19)))
    assert not under.overloaded and under.percentile(99) < 0.2


def test_same_seed_same_result():
    arrivals = gamma_arrivals(300, 2.0, 5_000, np.random.default_rng(21))
    one, two = (simulate(Policy("torchserve", 8, 0.003, 2), CURVE, arrivals, seed=5) for _ in range(2))
    assert np.array_equal(one.latency_s, two.latency_s) and np.array_equal(one.batch_sizes, two.batch_sizes)
    other = simulate(Policy("torchserve", 8, 0.003, 2), CURVE, arrivals, seed=6)
    assert not np.array_equal(one.latency_s, other.latency_s)


# -- closed loop -------------------------------------------------------------------------------------------


def test_closed_loop_clients_queue_behind_each_other():
    curve = ServiceCurve.deterministic({1: 0.010})
    result = simulate(Policy("none", 1, 0.0), curve, clients=4, n_requests=4_000)
    assert result.throughput_per_s == pytest.approx(100, rel=0.01)
    assert result.raw_percentile(50) == pytest.approx(0.040)  # each waits for the other three


def test_closed_loop_batches_hold_every_client():
    curve = ServiceCurve.deterministic({1: 0.010, 8: 0.020})
    result = simulate(Policy("triton", 16, 0.0), curve, clients=8, n_requests=8_000, overhead_s=0.001)
    assert set(result.batch_sizes.tolist()) == {8}
    assert result.raw_percentile(50) == pytest.approx(0.021)
    assert not result.overloaded  # a closed loop runs at what the server serves, and never queues more than 8


# -- service curves and arrivals ---------------------------------------------------------------------------


def test_service_curve_interpolates_between_measured_batches_and_keeps_their_spread():
    curve = ServiceCurve.from_samples({1: [1.0, 2.0, 3.0], 5: [5.0, 10.0, 15.0]})
    assert curve.median(1) == pytest.approx(2.0) and curve.median(5) == pytest.approx(10.0)
    assert curve.median(3) == pytest.approx(6.0)
    draws = [curve.sample(3, np.random.default_rng(s)) for s in range(200)]
    assert min(draws) < 4.0 and max(draws) > 8.0  # ±50 % around the median, as measured at both ends
    assert curve.median(9) == pytest.approx(18.0)  # the last slope carried on
    assert curve.median(1) == curve.median(1)


@pytest.mark.parametrize(
    "samples, message",
    [({}, "at least one"), ({0: [1.0]}, "batch size"), ({2: []}, "at least one sample"), ({2: [0.0]}, "above 0")],
)
def test_service_curve_refuses_bad_samples(samples, message):
    with pytest.raises(ValueError, match=message):
        ServiceCurve.from_samples(samples)


def test_gamma_arrivals_have_the_rate_and_variation_asked_for():
    times = gamma_arrivals(50, 3.0, 100_000, np.random.default_rng(23))
    gaps = np.diff(times)
    assert 1 / gaps.mean() == pytest.approx(50, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.05)


def test_trace_arrivals(tmp_path):
    good = tmp_path / "trace.txt"
    good.write_text("# seconds\n10.0\n10.5\n\n12\n")
    assert trace_arrivals(good).tolist() == [0.0, 0.5, 2.0]
    (tmp_path / "t.json").write_text("[1, 2, 4]")
    assert trace_arrivals(tmp_path / "t.json").tolist() == [0.0, 1.0, 3.0]
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n3\n2\n")
    with pytest.raises(TraceError, match=r"bad.txt: line 3: 2 s comes before"):
        trace_arrivals(bad)
    bad.write_text("1\nsoon\n")
    with pytest.raises(TraceError, match="line 2"):
        trace_arrivals(bad)
    with pytest.raises(TraceError, match="cannot be read"):
        trace_arrivals(tmp_path / "missing.txt")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(server="nginx", max_batch=4, max_delay_s=0.0), "server must be"),
        (dict(server="triton", max_batch=0, max_delay_s=0.0), "max batch"),
        (dict(server="triton", max_batch=4, max_delay_s=-1.0), "max delay"),
        (dict(server="triton", max_batch=4, max_delay_s=0.0, handler="awaiting"), "Ray Serve"),
        (dict(server="none", max_batch=4, max_delay_s=0.0), "without batching"),
        (dict(server="ray", max_batch=4, max_delay_s=0.0, instances=0), "instances"),
    ],
)
def test_policy_refuses_what_no_server_has(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Policy(**kwargs)


# Instances that share one device (synthetic curves: a flat one, where the device is mostly idle, and one that grows
# in proportion to the batch, where it is saturated)
FLAT_CURVE = ServiceCurve.deterministic({1: 0.010, 2: 0.010, 4: 0.010, 8: 0.010, 16: 0.010})
PROPORTIONAL_CURVE = ServiceCurve.deterministic({1: 0.001, 2: 0.002, 4: 0.004, 8: 0.008, 16: 0.016})


def _served(curve, policy, rate):
    arrivals = poisson_arrivals(rate, 20_000, np.random.default_rng(1))
    return simulate(policy, curve, arrivals, seed=2)


def test_copies_on_one_device_overlap_where_the_curve_is_flat():
    alone = Policy("triton", 8, 0.0, 1)
    shared = Policy("triton", 8, 0.0, 2, per_device=2)
    assert shared.devices == 1 and "2 instances on 1 device" in shared.describe()
    # 1,400/s is over what one instance serves in full batches of 8 at 10 ms (800/s); two overlapping ones serve it
    assert _served(FLAT_CURVE, alone, 1400).overloaded
    assert not _served(FLAT_CURVE, shared, 1400).overloaded


def test_copies_on_one_device_do_not_add_capacity_where_the_curve_grows_in_proportion():
    shared = Policy("triton", 8, 0.0, 2, per_device=2)
    separate = Policy("triton", 8, 0.0, 2)
    assert separate.devices == 2 and "2 instances on 2 devices" in separate.describe()
    # one device serves 1,000/s in any batch; at 1,300/s two devices keep up, two copies on one device do not
    assert not _served(PROPORTIONAL_CURVE, separate, 1300).overloaded
    assert _served(PROPORTIONAL_CURVE, shared, 1300).overloaded
    from benchmarks.analysis.serving.batcher.simulator import full_batch_ceiling

    assert full_batch_ceiling(shared, PROPORTIONAL_CURVE) == pytest.approx(1000)
    assert full_batch_ceiling(separate, PROPORTIONAL_CURVE) == pytest.approx(2000)


@pytest.mark.parametrize(
    "kwargs, message",
    [(dict(instances=3, per_device=2), "do not divide"), (dict(instances=2, per_device=3), "instances per device"),
     (dict(server="ray", instances=2, per_device=2), "fractional num_gpus")],
)  # fmt: skip
def test_instances_per_device_are_checked(kwargs, message):
    settings = dict(server="triton", max_batch=4, max_delay_s=0.0) | kwargs
    with pytest.raises(ValueError, match=message):
        Policy(**settings)


# The host's cores: the overhead as CPU work queued on them (synthetic curve, for the queueing only)
FAST_CURVE = ServiceCurve.deterministic({1: 0.0001, 8: 0.0002})


def _with_host(rate, cores, overhead_s=0.004, n=20_000):
    arrivals = poisson_arrivals(rate, n, np.random.default_rng(3))
    return simulate(Policy("triton", 8, 0.0), FAST_CURVE, arrivals, overhead_s=overhead_s, host_cores=cores, seed=4)


def test_many_host_cores_add_only_the_work_itself():
    fixed = simulate(
        Policy("triton", 8, 0.0), FAST_CURVE, poisson_arrivals(100, 20_000, np.random.default_rng(3)),
        overhead_s=0.004, seed=4,
    )  # fmt: skip
    many = _with_host(100, cores=64)
    assert many.mean("host") == pytest.approx(0.004, rel=1e-9)
    assert many.percentile(99) == pytest.approx(fixed.percentile(99), rel=1e-6)


def test_the_host_queue_grows_with_the_load_and_overloads_past_its_cores():
    light, heavy = _with_host(50, cores=1), _with_host(225, cores=1)  # 20 % and 90 % of one core's 250/s
    assert light.mean("host") < 1.3 * 0.004 < 2 * 0.004 < heavy.mean("host")
    assert not heavy.overloaded
    assert _with_host(300, cores=1).overloaded  # 1.2 cores of work on one core
    assert not _with_host(300, cores=2).overloaded


def test_one_core_with_replies_waiting_behind_requests_is_slower_than_a_fixed_overhead():
    # M/D/1 on the pre-work alone would wait rho·w/(2(1-rho)); the replies share the core, so the wait is larger
    heavy = _with_host(200, cores=1)
    rho, w = 200 * 0.004, 0.002
    assert heavy.mean("host") - 0.004 > rho * w / (2 * (1 - rho))
