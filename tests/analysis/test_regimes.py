"""Reading the three regimes off a run (SYNTHETIC fixtures: made-up numbers, never published)."""

import pytest

from benchmarks.analysis.roofline import regimes
from benchmarks.contract.results import read_run
from tests.synthetic import make_run

L2 = 40 * 2**20


@pytest.fixture
def run(write_doc):
    return read_run(write_doc(make_run()))


def test_plateaus_split_the_curve_at_each_cache_level():
    points = [(2**e, 300.0 if 2**e <= 2**20 else 100.0 if 2**e <= 2**24 else 30.0) for e in range(14, 30)]
    levels = [{"name": "L2", "bytes": 2**21}, {"name": "L3", "bytes": 2**25}]
    found = {p.name: p for p in regimes.plateaus(points, levels)}
    assert found["L2"].bytes_per_s == 300.0 and found["L2"].high_bytes == 2**20  # at most half of L2
    assert found["L3"].low_bytes == 2**21 and found["L3"].high_bytes == 2**24  # above half of L2: edges left out
    assert found["L3"].bytes_per_s == 100.0
    assert found["memory"].low_bytes == 2**27 and found["memory"].bytes_per_s == 30.0  # from 4× the last level


def test_plateaus_of_a_synthetic_run(run):
    levels = regimes.cache_levels(run)
    assert levels == [{"name": "L2", "bytes": L2}]  # no cache_levels in the fixture: L2 from l2_bytes
    found = {p.name: p.bytes_per_s for p in regimes.plateaus(regimes.bandwidth_points(run, "read"), levels)}
    assert found["L2"] / found["memory"] == pytest.approx(3, rel=0.1)  # the fixture reads L2 at 3× memory


def test_failed_matmul_points_are_left_out(run):
    found = regimes.matmul_points(run)
    assert set(found) == {"float32", "bfloat16"}  # float8 failed in the fixture
    assert [n for n, _ in found["bfloat16"]] == [256, 1024, 4096, 8192]


def test_overhead_per_op_and_the_launch_cost_graphs_save(run):
    rows = {r.mode: r for r in regimes.overhead_rows(run, 64)}
    assert set(rows) == {"graph", "eager", "compile"}
    assert rows["eager"].ops == 16
    assert rows["eager"].per_op_s == pytest.approx(rows["eager"].batch1_s / 16)
    # the fixture's launch cost: eager 80 µs, graph 20 µs in all, so about (80 − 20) / 16 µs per kernel
    assert regimes.launch_cost_saved(list(rows.values())) == pytest.approx(60e-6 / 16, rel=0.1)


def test_weight_bandwidth_drops_when_the_weights_outgrow_l2(write_doc):
    run = read_run(write_doc(make_run(overhead_s=1e-7)))  # launches too cheap to hide the bytes
    rows = {(r.cache, r.width): r for r in regimes.weight_bandwidth(run, "bfloat16", "graph")}
    small, large = rows[("resident", 1024)], rows[("resident", 8192)]
    assert small.weight_bytes == 8 * 2 * (1024**2 + 1024)  # the weights alone, not the activations
    assert small.weight_bytes < L2 < large.weight_bytes
    assert small.bytes_per_s > 2 * rows[("rotated", 1024)].bytes_per_s  # the cache trap
    assert large.bytes_per_s == pytest.approx(rows[("rotated", 8192)].bytes_per_s, rel=0.15)  # no trap past L2


def test_the_three_question_test():
    signals = regimes.RegimeSignals
    assert regimes.regime_of(signals("tiny", 1.05, 1.1, None, None)) == "overhead"  # flat in width
    assert regimes.regime_of(signals("graphs help", 1.0, 2.0, 0.3, None)) == "overhead"
    assert regimes.regime_of(signals("weights", 1.1, 3.9, 0.95, None)) == "memory"
    assert regimes.regime_of(signals("arithmetic", 3.8, 3.9, 1.0, None)) == "compute"


def test_signals_of_the_synthetic_tiny_mlp(run):
    tiny = next(c for c in regimes.mlp_curves(run, 64, "resident") if c.mode == "eager")
    s = regimes.signals(run, tiny, None)
    assert s.graph_ratio == pytest.approx(0.25, rel=0.2) and s.compile_ratio == pytest.approx(0.5, rel=0.2)
    assert regimes.regime_of(s) == "overhead"


def test_cache_floor_reads_at_the_plateau_of_the_level_that_holds_the_bytes(run):
    plateau = {p.name: p.bytes_per_s for p in regimes.plateaus(regimes.bandwidth_points(run, "read"), [
        {"name": "L2", "bytes": L2}
    ])}  # fmt: skip
    assert regimes.cache_floor(run, 2**20) == ("L2", pytest.approx(2**20 / plateau["L2"]))
    assert regimes.cache_floor(run, 2 * L2) is None  # bigger than every cache: no cache-speed floor


def test_plateau_rows_put_read_and_copy_side_by_side(run):
    rows = {row.name: row for row in regimes.plateau_rows(run)}
    assert list(rows) == ["L2", "memory"]
    assert rows["L2"].read.points == rows["L2"].copy.points  # the fixture measures both kernels at every size
    assert regimes.memory_read(run) == rows["memory"].read.bytes_per_s


def test_best_matmul_is_the_fastest_size_per_dtype(run):
    best = regimes.best_matmul(run)
    assert best["bfloat16"][0] == 8192  # the fixture's rate rises with n
    assert best["bfloat16"][1] == pytest.approx(400e12 * 8192 / (8192 + 1024))


def test_the_tiny_mlp_and_compile_against_eager(run):
    assert regimes.smallest_resident_width(run) == 64
    tiny = regimes.tiny_eager_curve(run)
    assert tiny.params["width"] == 64 and tiny.mode == "eager" and tiny.cache == "resident"
    rows = regimes.overhead_rows(run, 64)
    assert regimes.mode_ratio(rows, "compile") == pytest.approx(0.5, rel=0.2)  # launches: compile 40, eager 80 µs
    assert regimes.mode_ratio(rows, "graph", base="missing") is None


def test_cache_pairs_and_the_widest_sweep(run):
    assert set(regimes.cache_pairs(run, 1024)) == {("bfloat16", "graph"), ("bfloat16", "eager")}
    dtype, mode, rows = regimes.widest_weight_sweep(run)
    assert (dtype, mode) == ("bfloat16", "graph")
    assert {r.cache for r in rows} == {"resident", "rotated"}


def test_cache_trap_by_hand():
    def row(cache, width, per_s):
        return regimes.WeightBandwidth(width, cache, width * 10.0, 1.0, per_s)

    rows = [row("resident", 256, 300), row("rotated", 256, 100), row("resident", 512, 500), row("rotated", 512, 100)]
    rows += [row("resident", 1024, 110), row("rotated", 1024, 100), row("resident", 2048, 90)]  # 2048: no twin
    trap = regimes.cache_trap(rows)
    assert (trap.width, trap.weight_bytes, trap.ratio) == (512, 5120.0, 5.0)
    assert (trap.widest, trap.widest_bytes, trap.widest_ratio) == (1024, 10240.0, pytest.approx(1.1))
    assert regimes.cache_trap(rows[-1:]) is None


def test_signal_rows_cover_every_eager_mlp(run):
    found = {(c.params["width"], c.cache): s for c, s in regimes.signal_rows(run)}
    assert {(64, "resident"), (1024, "resident"), (1024, "rotated"), (4096, "rotated")} <= set(found)
    assert regimes.regime_of(found[(64, "resident")]) == "overhead"
    assert found[(1024, "rotated")].width_ratio is None  # the fixture has no 2048-wide eager curve


def test_compile_that_cuts_the_time_points_to_overhead():
    from benchmarks.analysis.roofline.regimes import RegimeSignals, regime_of

    assert regime_of(RegimeSignals("x", batch_ratio=1.1, width_ratio=3.5, graph_ratio=None, compile_ratio=0.4)) == (
        "overhead"
    )
    assert regime_of(RegimeSignals("x", batch_ratio=1.1, width_ratio=3.5, graph_ratio=None, compile_ratio=0.9)) == (
        "memory"
    )
