"""The diagnosis on SYNTHETIC curves of each kind (made-up ceilings; never published).

Every curve below is built so that its cause is known, and the diagnosis must find that cause and
no other: no synthetic memory-bound curve may be called overhead-bound, and so on.
"""

import pytest

from benchmarks.analysis.roofline import diagnosis as dg
from benchmarks.analysis.roofline.curves import curves
from snippets.costs import mlp_cost
from tests.synthetic import record, run_of

F, BW = 400e12, 2e12  # made-up ceilings: bf16 matmul FLOP/s and copy bytes/s
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _run(records):
    run = run_of(records, flops_per_s=F, bytes_per_s=BW)
    run.doc["ceilings"]["copy"]["bytes_per_s"] = BW  # exact, so shares are exact
    return run


def _mlp(width, mode, seconds_of, batches=BATCHES, cache="rotated"):
    found = []
    for b in batches:
        flops, moved = mlp_cost(b, width, 8, 2)
        found.append(record("mlp", {"width": width, "depth": 8}, b, seconds_of(b, flops, moved), flops, moved,
                            mode=mode, cache=cache))  # fmt: skip
    return found


def _roofline(share_of_bandwidth=1.0, share_of_compute=1.0):
    return lambda b, flops, moved: max(flops / (share_of_compute * F), moved / (share_of_bandwidth * BW))


def _diagnose(run, width, mode="eager", cache="rotated"):
    curve = next(c for c in curves(run, "mlp") if (c.params["width"], c.mode, c.cache) == (width, mode, cache))
    return dg.diagnose(curve)


def test_memory_bound_at_the_full_ceiling_then_compute_bound():
    d = _diagnose(_run(_mlp(4096, "eager", _roofline())), 4096)
    assert d.regimes == [dg.MEMORY, dg.COMPUTE]
    assert d.first.bandwidth_share == pytest.approx(1.0) and d.first.fixed is None
    assert d.points[-1].compute_share == pytest.approx(1.0)
    assert d.predicted_knee == pytest.approx(d.reached_knee, rel=1e-6)


def test_memory_bound_at_half_the_ceiling_is_not_overhead():
    """The home page's old mistake: a batch-1 time twice the roofline's is not evidence of overhead."""
    records = _mlp(4096, "eager", _roofline(share_of_bandwidth=0.5))
    tiny = _mlp(64, "eager", lambda b, f, m: 16 * 1e-6 + m / BW, cache="resident")  # 1 µs per op
    d = _diagnose(_run(records + tiny), 4096)
    first = d.first
    assert first.regime == dg.MEMORY and first.bandwidth_share == pytest.approx(0.5)
    assert first.fixed.source == "per-op" and first.fixed_share == pytest.approx(16e-6 / first.seconds, rel=0.01)
    assert d.reached.bytes_per_s == pytest.approx(0.5 * BW)
    assert d.reached_knee > d.predicted_knee  # half the bandwidth: the flat part lasts longer


def test_pure_overhead_from_graph_replay():
    launch = 50e-6
    eager = _mlp(64, "eager", lambda b, f, m: launch + m / BW, cache="resident")
    graph = _mlp(64, "graph", lambda b, f, m: m / BW, cache="resident")
    d = _diagnose(_run(eager + graph), 64, cache="resident")
    assert d.regimes[0] == dg.OVERHEAD and d.first.fixed.source == "graph"
    assert d.first.fixed.seconds == pytest.approx(launch, rel=1e-6)
    graph_d = _diagnose(_run(eager + graph), 64, mode="graph", cache="resident")
    assert dg.OVERHEAD not in graph_d.regimes  # replay has no launch gap to measure against


def test_overhead_from_the_width_intercept():
    fixed = 200e-6
    slow = [*_mlp(256, "eager", lambda b, f, m: fixed + m / BW), *_mlp(512, "eager", lambda b, f, m: fixed + m / BW)]
    d = _diagnose(_run(slow), 256)
    assert d.first.regime == dg.OVERHEAD and d.first.fixed.source == "widths"
    assert d.first.fixed.seconds == pytest.approx(fixed, rel=1e-6)


def test_compute_bound_from_the_start():
    records = []
    for b in (1, 2, 4, 8):
        flops, moved = 1e12 * b, 1e6 * b  # intensity 1e6 FLOP/B, far above the ridge of 200
        records.append(record("conv", {"c_in": 64, "c_out": 64, "kernel": 3, "resolution": 56}, b, flops / F,
                              flops, moved))  # fmt: skip
    curve = curves(_run(records), "conv")[0]
    d = dg.diagnose(curve)
    assert d.regimes == [dg.COMPUTE] and d.predicted_knee == 0.0
    assert all(p.compute_share == pytest.approx(1.0) for p in d.points)


def test_moe_whose_bytes_saturate():
    """Token choice: bytes grow with the experts touched until every one is, then stop growing."""
    params = {"variant": "token-choice", "experts": 8, "top_k": 2, "d_model": 2048, "d_ff": 2048, "skew": 0.0}
    expert = 2 * 2 * 2048 * 2048  # bytes of one expert's two matrices in bf16
    records = []
    for b in BATCHES:
        touched = min(8, 2 * b)
        flops, moved = 4 * 2 * b * 2048 * 2048, touched * expert + 2 * 2 * b * 2048 * 4
        records.append(record("moe", params, b, max(flops / F, moved / BW), flops, moved))
    d = dg.diagnose(curves(_run(records), "moe")[0])
    assert d.regimes == [dg.MEMORY, dg.COMPUTE]
    memory_end = d.segments[0].last
    assert memory_end < d.predicted_knee < d.segments[1].first  # the knee sits where the roofline bends
    times = {p.batch: p.seconds for p in d.points}
    assert times[memory_end] >= times[1]


def test_shares_need_ceilings():
    records = _mlp(1024, "eager", _roofline())
    run = _run(records)
    del run.doc["ceilings"]["matmul"]["bfloat16"]
    d = _diagnose(run, 1024)
    assert d.first.bandwidth_share is None and d.predicted_knee is None
    assert d.first.regime == dg.MEMORY  # 1 FLOP per byte of weights read: below any ridge
