"""The sampler's logic, driven by a fake backend whose clock is a counter (no real timing)."""

import torch

from benchmarks.measure.backends import CpuBackend, is_out_of_memory
from benchmarks.measure.sampler import TimedPoint, calibrate, measure_points


class FakeClockBackend:
    """Each call of a point's function 'takes' a fixed number of seconds."""

    def __init__(self):
        self.released = 0

    def time(self, fn, inner):
        return sum(fn() for _ in range(inner)) / inner

    is_oom = staticmethod(is_out_of_memory)

    def release(self):
        self.released += 1


def constant(seconds):
    return lambda: lambda: seconds


def test_calibrate_makes_each_sample_last_long_enough():
    inner = calibrate(FakeClockBackend(), lambda: 0.001, min_sample_s=0.02, warmup_s=0.0)
    assert inner == 20
    assert calibrate(FakeClockBackend(), lambda: 0.5, min_sample_s=0.02, warmup_s=0.0) == 1


def test_every_point_gets_every_round_and_per_unit_time():
    points = [TimedPoint("a", b, constant(0.004 * b), calls_per_unit=4) for b in (1, 2, 3)]
    rounds_seen = []
    outcomes = measure_points(
        FakeClockBackend(), points, rounds=5, min_sample_s=0.01, warmup_s=0.0,
        after_round=lambda partial: rounds_seen.append({k: len(o.timing["samples_s"]) for k, o in partial.items()}),
    )  # fmt: skip
    assert [o.status for o in outcomes.values()] == ["ok"] * 3
    assert outcomes[("a", 2)].timing["median_s"] == 0.002  # 0.008 s per call over 4 units
    assert len(outcomes[("a", 3)].timing["samples_s"]) == 5
    assert rounds_seen[0] == {("a", 1): 1, ("a", 2): 1, ("a", 3): 1}
    assert rounds_seen[-1] == {("a", 1): 5, ("a", 2): 5, ("a", 3): 5}


def oom_at(limit, message="CUDA out of memory. Tried to allocate 2.00 GiB"):
    def prepare_for(batch):
        def prepare():
            if batch >= limit:
                raise torch.OutOfMemoryError(message)
            return lambda: 0.001

        return prepare

    return prepare_for


def test_oom_is_recorded_and_larger_batches_of_that_curve_skipped():
    prepare = oom_at(8)
    points = [TimedPoint("big", b, prepare(b)) for b in (1, 4, 8, 16, 32)]
    points += [TimedPoint("small", b, constant(0.001)) for b in (1, 4, 8, 16, 32)]
    backend = FakeClockBackend()
    outcomes = measure_points(backend, points, rounds=3, min_sample_s=0.005, warmup_s=0.0)
    status = {key: o.status for key, o in outcomes.items()}
    assert [status[("big", b)] for b in (1, 4, 8, 16, 32)] == ["ok", "ok", "oom", "skipped", "skipped"]
    assert all(status[("small", b)] == "ok" for b in (1, 4, 8, 16, 32))
    assert "out of memory at batch 8" in outcomes[("big", 8)].message
    assert "batch 8 ran out of memory" in outcomes[("big", 32)].message
    assert backend.released >= 1


def test_oom_during_sampling_keeps_other_points():
    calls = {"n": 0}

    def flaky():
        def run():
            calls["n"] += 1
            if calls["n"] > 3:  # after two warm-up calls and one calibration call, the first sample fails
                raise torch.OutOfMemoryError("CUDA out of memory.")
            return 0.001

        return run

    points = [TimedPoint("c", 1, constant(0.001)), TimedPoint("c", 2, flaky), TimedPoint("c", 3, constant(0.001))]
    outcomes = measure_points(FakeClockBackend(), points, rounds=4, min_sample_s=0.0005, warmup_s=0.0)
    assert outcomes[("c", 1)].status == "ok"
    assert outcomes[("c", 2)].status == "oom"
    assert outcomes[("c", 3)].status == "ok"  # a larger batch already prepared is not dropped
    assert len(outcomes[("c", 3)].timing["samples_s"]) == 4


def test_oom_during_sampling_keeps_the_samples_already_taken():
    calls = {"n": 0}

    def fails_late():
        def run():
            calls["n"] += 1
            if calls["n"] > 12:  # warm-up and calibration, then a few samples, then eager allocations fail
                raise torch.OutOfMemoryError("CUDA out of memory.")
            return 0.001

        return run

    points = [TimedPoint("c", 1, constant(0.001)), TimedPoint("c", 2, fails_late), TimedPoint("c", 4, constant(0.001))]
    backend = FakeClockBackend()
    outcomes = measure_points(backend, points, rounds=8, min_sample_s=0.002, warmup_s=0.0)
    kept = outcomes[("c", 2)]
    assert kept.status == "ok" and 1 <= len(kept.timing["samples_s"]) < 8
    assert [len(outcomes[("c", b)].timing["samples_s"]) for b in (1, 4)] == [8, 8]
    assert backend.released == 1


def test_other_errors_stay_local_to_their_point():
    def broken():
        raise ValueError("shapes do not match")

    points = [TimedPoint("c", 1, constant(0.001)), TimedPoint("c", 2, broken), TimedPoint("c", 3, constant(0.001))]
    outcomes = measure_points(FakeClockBackend(), points, rounds=2, min_sample_s=0.001, warmup_s=0.0)
    assert [outcomes[("c", b)].status for b in (1, 2, 3)] == ["ok", "error", "ok"]
    assert outcomes[("c", 2)].message == "ValueError: shapes do not match"


def test_cpu_backend_times_real_calls():
    backend = CpuBackend(threads=1)
    x = torch.randn(64, 64)
    seconds = backend.time(lambda: x @ x, inner=10)
    assert 0 < seconds < 1
    assert torch.get_num_threads() == 1


def test_points_wanting_fewer_samples_spread_them_over_the_rounds():
    from benchmarks.measure.sampler import takes_sample

    assert [r for r in range(10) if takes_sample(r, 5, 10)] == [1, 3, 5, 7, 9]
    assert all(takes_sample(r, 10, 10) for r in range(10))
    assert sum(takes_sample(r, 7, 15) for r in range(15)) == 7
    points = [TimedPoint("few", 1, constant(0.001), rounds=3), TimedPoint("many", 1, constant(0.001))]
    outcomes = measure_points(FakeClockBackend(), points, rounds=6, min_sample_s=0.001, warmup_s=0.0)
    assert len(outcomes[("few", 1)].timing["samples_s"]) == 3
    assert len(outcomes[("many", 1)].timing["samples_s"]) == 6


class QueueingBackend(FakeClockBackend):
    """Like a GPU: calling fn() only queues work; `time` waits for everything queued so far."""

    def __init__(self):
        super().__init__()
        self.queued = 0

    def time(self, fn, inner):
        for _ in range(inner):
            fn()
        self.queued = 0  # synchronised
        return 0.01


def test_warm_up_waits_for_the_device():
    backend = QueueingBackend()
    most_queued = []

    def enqueue():
        backend.queued += 1
        most_queued.append(backend.queued)

    calibrate(backend, enqueue, min_sample_s=0.01, warmup_s=0.05)
    assert max(most_queued) == 1  # never more than one call in flight during warm-up


class Clock:
    """A clock that the fake backend's calls move forward."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


class TimedFakeBackend(FakeClockBackend):
    def __init__(self, clock):
        super().__init__()
        self.clock = clock

    def time(self, fn, inner):
        per_call = super().time(fn, inner)
        self.clock.now += per_call * inner
        return per_call


def test_a_deadline_ends_the_measurement_with_fewer_rounds(monkeypatch):
    """Each round of 3 points × 10 ms samples takes about 30 ms; a deadline 100 ms after the start
    leaves time for the warm-up and calibration and a few rounds, never one that would end too late."""
    from types import SimpleNamespace

    from benchmarks.measure import sampler

    clock = Clock()
    monkeypatch.setattr(sampler, "time", SimpleNamespace(perf_counter=clock.perf_counter))
    points = [TimedPoint("a", b, constant(0.001)) for b in (1, 2, 3)]
    sparse = TimedPoint("b", 1, constant(0.001), rounds=2)  # wants 2 of 20 rounds: its first comes in round 9
    outcomes = measure_points(
        TimedFakeBackend(clock), [*points, sparse], rounds=20, min_sample_s=0.01, warmup_s=0.0, deadline=0.1
    )
    # 20 samples of 10 ms are 0.2 s, over the deadline already: one point is prepared, the rest are not
    assert outcomes[("a", 1)].status == "ok" and 1 <= len(outcomes[("a", 1)].timing["samples_s"]) < 20
    assert clock.now <= 0.1 + 1e-9
    for key in (("a", 2), ("a", 3), ("b", 1)):
        assert outcomes[key].status == "skipped" and "time limit" in outcomes[key].message


def test_a_deadline_keeps_some_points_of_every_curve(monkeypatch):
    """Preparing a point costs 30 ms (a capture, a compile), sampling it 4 × 10 ms. Curves are prepared in
    turn and preparation stops once the prepared points' sampling would reach the deadline: every curve
    keeps its smallest batches, each with samples, instead of the first curves keeping all of theirs."""
    from types import SimpleNamespace

    from benchmarks.measure import sampler

    clock = Clock()
    monkeypatch.setattr(sampler, "time", SimpleNamespace(perf_counter=clock.perf_counter))

    def costly():
        clock.now += 0.03
        return lambda: 0.001

    points = [TimedPoint(curve, b, costly) for curve in ("a", "b", "c") for b in (1, 2, 4, 8)]
    outcomes = measure_points(TimedFakeBackend(clock), points, rounds=4, min_sample_s=0.01, warmup_s=0.0, deadline=0.4)
    ok = {key for key, o in outcomes.items() if o.status == "ok"}
    assert {curve for curve, _ in ok} == {"a", "b", "c"} and {batch for _, batch in ok} >= {1}
    assert len(ok) < len(points) and clock.now <= 0.4 + 1e-9
    assert all(outcomes[key].status == "skipped" and "time limit" in outcomes[key].message
               for key in outcomes.keys() - ok)  # fmt: skip


def test_graph_curves_are_prepared_largest_first_and_curves_in_turn():
    from benchmarks.measure.sampler import preparation_order

    points = [
        TimedPoint(c, b, constant(0.001), largest_first=c == "graph") for c in ("graph", "eager") for b in (1, 8, 64)
    ]
    assert [(p.curve, p.batch) for p in preparation_order(points)] == [
        ("eager", 1), ("graph", 64), ("eager", 8), ("graph", 8), ("eager", 64), ("graph", 1),
    ]  # fmt: skip


class GraphPool:
    """A recording stand-in for one CUDA graph pool of torch's caching allocator: a capture's
    allocations split the smallest free block that is large enough, else add a new segment; the
    capture's temporaries are freed into the pool when it ends, and the pool never returns a segment
    while its graphs live."""

    def __init__(self):
        self.free: list[int] = []
        self.segments: list[int] = []

    def capture(self, activation_bytes: int) -> None:
        fits = [block for block in self.free if block >= activation_bytes]
        if fits:
            block = min(fits)
            self.free.remove(block)
            self.free.append(block)  # split, used and freed again: the block stays whole for the next capture
        else:
            self.segments.append(activation_bytes)
            self.free.append(activation_bytes)


def test_descending_captures_keep_one_graph_pool_near_the_largest_batchs_size():
    from benchmarks.measure.sampler import preparation_order

    batches = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
    activation = 2 * 8192 * 2  # bytes per row of a bf16 8192-wide layer's input and output
    pool = GraphPool()

    def captured(batch):
        def prepare():
            pool.capture(batch * activation)
            return lambda: 0.001

        return prepare

    points = [TimedPoint("graph", b, captured(b), largest_first=True) for b in batches]
    order = preparation_order(points)
    for point in order:
        point.prepare()
    assert sum(pool.segments) == max(batches) * activation
    ascending = GraphPool()
    for batch in batches:
        ascending.capture(batch * activation)
    assert sum(ascending.segments) > 1.9 * max(batches) * activation  # what ascending captures would hold


def test_a_deadline_already_passed_prepares_nothing(monkeypatch):
    from types import SimpleNamespace

    from benchmarks.measure import sampler

    clock = Clock()
    clock.now = 5.0
    monkeypatch.setattr(sampler, "time", SimpleNamespace(perf_counter=clock.perf_counter))
    prepared = []
    points = [TimedPoint("a", 1, lambda: prepared.append(1) or (lambda: 0.001))]
    outcomes = measure_points(TimedFakeBackend(clock), points, rounds=3, min_sample_s=0.01, warmup_s=0.0, deadline=1)
    assert prepared == [] and outcomes[("a", 1)].status == "skipped"
