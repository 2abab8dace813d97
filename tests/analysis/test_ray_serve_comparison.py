"""The real-server comparison, on SYNTHETIC checks whose "server" is the simulator itself: it agrees with
itself, it notices a server that batches by another rule, and the committed check is compared in full."""

from __future__ import annotations

import copy

import pytest

from benchmarks.analysis.serving.batcher.ray_serve_comparison import (
    TOLERANCE,
    compare,
    compare_file,
    format_table,
    late_close,
)
from benchmarks.contract.serving_check import DEFAULT_SERVING_DIR, read_serving_check
from tests.synthetic_serving import OVERHEAD_S, synthetic_check, synthetic_run, write_check


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return read_serving_check(write_check(tmp_path_factory.mktemp("serving"), synthetic_check()))


def test_a_server_that_follows_the_simulator_agrees_with_it(synthetic):
    found = compare(synthetic)
    assert len(found.rows) == 4 and all(r.repeats == 2 for r in found.rows)
    for row in found.rows:
        assert row.agrees, (row.case, row.p50_ratio, row.batch_ratio)
        assert abs(row.p50_ratio - 1) < 0.1 and abs(row.batch_ratio - 1) < 0.1
        assert row.histogram_distance < 0.15
        assert 0 < row.utilisation < 1 and not row.overloaded
    assert found.overhead_s == pytest.approx(0.004, rel=0.05)


def test_a_server_that_batches_by_the_other_rule_disagrees(tmp_path):
    """A file that says its handler awaited, from a server that blocked: at 60 requests/s the blocking rule
    fills batches while one runs, which the awaiting rule cannot explain."""
    runs = [synthetic_run("awaiting", 16, 0.005, 60.0, repeat, server_handler="blocking") for repeat in (1, 2)]
    runs += [synthetic_run("blocking", 16, 0.005, 60.0, repeat) for repeat in (1, 2)]
    found = compare(read_serving_check(write_check(tmp_path, synthetic_check(runs))))
    claimed = next(r for r in found.rows if r.case.handler == "awaiting")
    honest = next(r for r in found.rows if r.case.handler == "blocking")
    assert honest.agrees
    assert not claimed.agrees and claimed.batch_ratio > 1 + TOLERANCE
    assert claimed.histogram_distance > 0.2


def test_failed_requests_are_left_out_and_counted(tmp_path):
    doc = synthetic_check([synthetic_run("blocking", 16, 0.005, 20.0, 1)])
    run = doc["runs"][0]
    lonely = [b for b, size in enumerate(run["batches"]["size"]) if size == 1]
    index = run["requests"]["batch"].index(lonely[0])
    gone = copy.deepcopy(doc)
    gone_run = gone["runs"][0]
    for name in ("latency_s", "arrived_s", "batch"):
        gone_run["requests"][name][index] = None
    gone_run["failed"] = 1
    # a batch none of whose requests answered is not known to the client: leave it out as the harness does
    gone_run["batches"] = {k: [v for b, v in enumerate(vs) if b != lonely[0]] for k, vs in run["batches"].items()}
    gone_run["requests"]["batch"] = [b if b is None or b < lonely[0] else b - 1 for b in gone_run["requests"]["batch"]]
    found = compare(read_serving_check(write_check(tmp_path, gone)))
    assert found.rows[0].failed == 1 and found.rows[0].requests == len(run["requests"]["batch"]) - 1


def test_the_comparison_is_deterministic_and_prints_one_line_per_case(synthetic):
    first, second = compare(synthetic), compare(synthetic)
    assert first.table() == second.table()
    text = format_table(first)
    assert text.count("\n") == len(first.rows) + 4  # label, overhead, late close, header, rows, verdict
    assert "4 of 4 cases within 20%" in text and "p99 is reported, not judged" in text


def test_the_committed_check_covers_the_plan():
    files = sorted(DEFAULT_SERVING_DIR.rglob("*.json"))
    assert files
    found = compare_file(files[-1])
    handlers = {r.case.handler for r in found.rows if r.case.service == "curve"}
    policies = {(r.case.max_batch, r.case.max_delay_s) for r in found.rows if r.case.service == "curve"}
    rates = {r.case.rate_per_s for r in found.rows if r.case.handler == "awaiting" and r.case.service == "curve"}
    assert handlers == {"awaiting", "blocking"} and len(policies) >= 2 and len(rates) >= 3
    assert all(r.repeats >= 2 for r in found.rows)
    assert any(r.case.service == "model" for r in found.rows)
    assert 0.001 < found.overhead_s < 0.1


def test_a_batch_started_on_time_is_not_late(synthetic):
    """The fixture's server starts each batch when its wait runs out, and says each request reached the replica
    half its overhead after it was sent: so the batcher looks early by exactly that much."""
    seconds, batches = late_close(synthetic)
    assert batches > 50
    assert seconds == pytest.approx(-OVERHEAD_S / 2, abs=1e-4)


def test_the_idle_replica_at_higher_rates_is_compared_and_the_overhead_is_the_lowest_rates(tmp_path):
    """SYNTHETIC: the idle replica also driven at 400/s with latencies twice as long; the server's cost stays the
    lowest rate's median, and each rate gets a row, measured against the simulator on the host's cores."""
    from benchmarks.analysis.serving.batcher.ray_serve_comparison import host_rows

    doc = synthetic_check()
    doc["overhead"].append({"rate_per_s": 400.0, "latency_s": [2 * OVERHEAD_S] * 100, "failed": 3})
    check = read_serving_check(write_check(tmp_path, doc))
    assert compare(check).overhead_s == pytest.approx(OVERHEAD_S, rel=0.05)
    rows = host_rows(check, seeds=2)
    assert [r.rate_per_s for r in rows] == [20.0, 400.0]
    slow = rows[1]
    assert slow.p50_s == pytest.approx(2 * OVERHEAD_S) and slow.failed == 3
    assert slow.host_p50_s > slow.fixed_s  # 400/s × 4 ms is 80 % of the host's two cores: requests wait for one
    assert rows[0].host_p50_s == pytest.approx(rows[0].fixed_s, rel=0.1)
