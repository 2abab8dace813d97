"""The step detector on SYNTHETIC curves with known steps and noise (labelled; not measurements)."""

import random

import pytest

from benchmarks.analysis.roofline.tile_steps import CurvePoint, find_steps, free_batch_up_to, median_stderr


def synthetic_curve(batches, time_of, noise, seed=0, samples=15):
    """Points whose samples scatter by `noise` (relative) around time_of(batch)."""
    rng = random.Random(seed)
    points = []
    for b in batches:
        draws = sorted(time_of(b) * (1 + rng.gauss(0, noise)) for _ in range(samples))
        points.append(CurvePoint(b, draws[samples // 2], median_stderr(draws)))
    return points


def staircase(tile, per_tile, base=10e-6):
    return lambda b: base + per_tile * -(-b // tile)  # ceil(b / tile) tiles


def test_median_stderr():
    assert median_stderr([1.0]) == float("inf")
    assert median_stderr([1.0] * 10) == 0.0
    assert 0 < median_stderr([1.0, 1.1, 0.9, 1.05, 0.95]) < 0.1


def test_staircase_steps_are_found_at_tile_boundaries():
    points = synthetic_curve(range(1, 513), staircase(tile=128, per_tile=5e-6), noise=0.01)
    steps = find_steps(points)
    assert [(s.before, s.after) for s in steps] == [(128, 129), (256, 257), (384, 385)]
    assert all(s.sigmas > 4 for s in steps)


def test_a_smooth_rising_curve_has_no_steps():
    points = synthetic_curve(range(1, 513), lambda b: 10e-6 + 0.2e-6 * b, noise=0.02)
    assert find_steps(points) == []


def test_a_flat_noisy_curve_has_no_steps():
    points = synthetic_curve(range(8, 1025, 8), lambda b: 50e-6, noise=0.05, seed=3)
    assert find_steps(points) == []


def test_a_noisy_curve_with_one_step():
    def one_step(b):
        return 40e-6 + 0.05e-6 * b + (8e-6 if b > 200 else 0)

    points = synthetic_curve(range(1, 400), one_step, noise=0.04, seed=7)
    steps = find_steps(points)
    assert len(steps) == 1
    assert steps[0].before == 200 and steps[0].after == 201
    assert steps[0].relative == pytest.approx(8 / 50, rel=0.3)


def test_a_single_slow_point_is_not_a_step():
    def spike(b):
        return 30e-6 * (1.5 if b == 100 else 1)

    points = synthetic_curve(range(1, 200), spike, noise=0.01)
    assert find_steps(points) == []


def test_mixed_spacing_sweep():
    batches = sorted(set(range(1, 257)) | set(range(264, 1025, 8)) | {383, 385, 511, 513, 639, 641})
    points = synthetic_curve(batches, staircase(tile=256, per_tile=20e-6), noise=0.01)
    assert [(s.before, s.after) for s in find_steps(points)] == [(256, 264), (512, 513), (768, 776)]


def test_free_batch_up_to_is_the_end_of_each_plateau():
    points = synthetic_curve(range(1, 513), staircase(tile=128, per_tile=5e-6), noise=0.0)
    free = free_batch_up_to(points, slack=0.001)
    assert free[1] == 128 and free[100] == 128 and free[129] == 256 and free[512] == 512
    noisy = synthetic_curve(range(1, 513), staircase(tile=128, per_tile=5e-6), noise=0.01)
    free = free_batch_up_to(noisy)
    assert 120 <= free[1] <= 128 and 250 <= free[200] <= 256


def test_tile_shape_from_kernel_names():
    from benchmarks.analysis.roofline.tile_steps import tile_shape

    sm90 = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_kernel"
    assert tile_shape(sm90) == (128, 256)
    assert tile_shape("ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_tn") == (64, 64)
    assert tile_shape("aten::addmm") is None
    # cuBLAS's Hopper and Blackwell kernels (nvjet) name their output tile first
    assert tile_shape("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNT") == (128, 256)
    assert tile_shape("nvjet_hsh_64x8_64x16_4x1_v_bz_TNN") == (64, 8)
    assert tile_shape("nvjet_sm100_tst_64x16_64x16_2x4_2cta_h_bz_splitK_TNT") == (64, 16)
    assert tile_shape("nvjet_sm120_tst_mma_64x64x128_3_32x32x128_tmaAB_alignCD4_bz_TNNN") == (64, 64)


def test_the_gemm_is_found_among_other_kernels():
    from benchmarks.analysis.roofline.tile_steps import _gemm

    assert _gemm(["void at::native::elementwise_kernel", "nvjet_tst_64x8_64x16_4x1_v_bz_TNN"]).startswith("nvjet")


def test_explain_step_names_kernel_switch_tile_and_wave():
    from benchmarks.analysis.roofline.tile_steps import TileJump, explain_step

    kernel_a = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1_kernel"
    kernel_b = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_kernel"
    kernels = {128: [kernel_a], 129: [kernel_b], 256: [kernel_b], 257: [kernel_b]}
    causes = explain_step(TileJump(128, 129, 1e-6, 0.1, 5), kernels, out_features=8192, sm_count=132)
    assert causes[0] == f"kernel switch: {kernel_a} → {kernel_b}"
    assert causes[1] == "tile boundary: batch crosses 128 (a multiple of 128, a side of the kernel's 128×128 tile)"
    # 8192 / 128 = 64 tiles per 128 rows: 256 rows → 128 tiles (1 wave), 257 rows → 192 tiles (2 waves)
    causes = explain_step(TileJump(256, 257, 1e-6, 0.1, 5), kernels, out_features=8192, sm_count=132)
    assert causes[0].startswith("tile boundary: batch crosses 256")
    assert causes[1] == "wave boundary: 128×128 tiles, 192 tiles need 2 waves on 132 SMs (was 1)"
    assert explain_step(TileJump(100, 101, 1e-6, 0.1, 5), {}, out_features=8192, sm_count=132) == []


def _synthetic_run(**fixture):
    from pathlib import Path

    from benchmarks.contract.results import Run
    from tests.synthetic import make_run

    doc = make_run(**fixture)
    return Run(path=Path(f"/synthetic/{doc['device']['slug']}/{doc['run']['id']}.json"), doc=doc)


def test_linear_groups_collect_one_configuration_per_key():
    from benchmarks.analysis.roofline.tile_steps import linear_groups

    groups = linear_groups(_synthetic_run())
    assert list(groups) == [("bfloat16", "graph", "rotated", (("in_features", 4096), ("out_features", 4096)))]
    (records,) = groups.values()
    assert len(records) == 300 and all(r["workload"] == "linear" for r in records)
    assert linear_groups(_synthetic_run(linear_batches=())) == {}


def test_plateaus_run_from_each_start_to_its_free_end():
    from benchmarks.analysis.roofline.tile_steps import plateaus

    points = synthetic_curve(range(1, 513), staircase(tile=128, per_tile=5e-6), noise=0.0)
    spans = plateaus(points, free_batch_up_to(points, slack=0.001))
    assert spans == [(1, 128), (129, 256), (257, 384), (385, 512)]


def test_a_smooth_curve_has_no_free_range_and_a_staircase_one_per_step():
    from benchmarks.analysis.roofline.tile_steps import free_ranges

    smooth = synthetic_curve(range(1, 257), lambda b: 1e-3 + 1e-5 * b, noise=0.02)
    assert free_ranges(smooth, find_steps(smooth)) == []
    stairs = synthetic_curve(range(1, 513), staircase(tile=128, per_tile=5e-6), noise=0.0)
    assert free_ranges(stairs, find_steps(stairs)) == [(1, 128), (129, 256), (257, 384)]


def test_sweeps_summarise_each_curve():
    """The SYNTHETIC fixture steps every 64 rows once compute-bound; its kernels announce 64×128 tiles."""
    from benchmarks.analysis.roofline.tile_steps import sweeps

    (sweep,) = sweeps(_synthetic_run())
    assert (sweep.dtype, sweep.mode, sweep.cache) == ("bfloat16", "graph", "rotated")
    assert sweep.params == {"in_features": 4096, "out_features": 4096} and len(sweep.points) == 300
    assert [(s.before, s.after) for s in sweep.steps][-2:] == [(192, 193), (256, 257)]
    assert len(sweep.causes) == len(sweep.steps) and sweep.explained == len(sweep.steps)
    assert (
        sweep.causes[-1][0]
        == "tile boundary: batch crosses 256 (a multiple of 128, a side of the kernel's 64×128 tile)"
    )
    assert all(end > start for start, end in sweep.free_ranges) and 0 < sweep.noise < 0.1
    assert {end for _, end in sweep.free_ranges} <= {s.before for s in sweep.steps}  # each ends at a step
    assert sweeps(_synthetic_run(linear_batches=(1, 2, 3))) == []


def test_tiles_and_waves_of_an_h200_layer():
    """8192 output features in 128×256 tiles on 132 SMs: 32 tiles per 128 rows, 4 rows of tiles per wave."""
    from benchmarks.analysis.roofline.tile_steps import tiles_and_waves

    assert tiles_and_waves(385, 8192, (128, 256), 132) == (128, 1)
    assert tiles_and_waves(512, 8192, (128, 256), 132) == (128, 1)
    assert tiles_and_waves(513, 8192, (128, 256), 132) == (160, 2)


def test_a_tile_boundary_must_fit_the_tile_the_kernel_names():
    """A step at 64 rows is not explained by a kernel that announces 128×256 tiles; without a name, it is."""
    from benchmarks.analysis.roofline.tile_steps import TileJump, explain_step

    kernel = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize1x1x1_kernel"
    step = TileJump(64, 65, 1e-6, 0.1, 5)
    assert explain_step(step, {64: [kernel], 65: [kernel]}, out_features=8192, sm_count=None) == []
    assert explain_step(step, {}, out_features=8192, sm_count=None) == [
        "tile boundary: batch crosses 64 (a multiple of 64, a common tile size)"
    ]
