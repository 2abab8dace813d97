"""The tile and wave model of one Linear layer, on datasheet figures (a model: nothing here is measured)."""

from __future__ import annotations

import math

import pytest

from benchmarks.analysis.roofline import tile_model as tm
from benchmarks.gpus import GPU, find_gpu

H200 = find_gpu("NVIDIA H200")
SMALL = GPU("Toy GPU (test fixture)", {"bfloat16": 4e12}, 1e12, "synthetic", sm_count=4)


def test_a_wave_is_one_whole_tile_at_one_sms_share_of_the_peak():
    assert tm.wave_seconds(SMALL, "bfloat16", 64, (16, 32)) == pytest.approx(2 * 16 * 32 * 64 / 1e12)


def test_the_time_is_a_staircase_that_jumps_where_the_tiles_overflow_a_wave():
    # 128 output columns in 32-wide tiles: 4 tiles a row of 16 batch rows, so one wave of 4 SMs holds one row
    points = tm.tiled_linear(SMALL, "bfloat16", 4096, 128, range(1, 65), tile=(16, 32))
    assert [p.batch for p in tm.wave_starts(points)] == [17, 33, 49]
    wave = tm.wave_seconds(SMALL, "bfloat16", 4096, (16, 32))
    for p in points:
        assert p.waves == math.ceil(p.batch / 16)
        assert p.model_s == pytest.approx(max(p.waves * wave, p.roofline_s))
        assert p.model_s >= p.roofline_s * (1 - 1e-12)  # partial tiles and waves only cost more
    full = {p.batch: p for p in points}
    assert full[16].share_of_roofline > 0.9 > 0.6 > full[17].share_of_roofline


def test_a_memory_bound_layer_is_flat_at_its_weight_read_whatever_the_tiles():
    slow_memory = GPU("Toy GPU (test fixture)", {"bfloat16": 4e12}, 1e6, "synthetic", sm_count=4)
    points = tm.tiled_linear(slow_memory, "bfloat16", 64, 64, [1, 17, 33], tile=(16, 32))
    assert all(p.model_s == p.roofline_s for p in points)


def test_the_h200_layer_on_the_steps_page_gains_a_wave_every_four_rows_of_tiles():
    points = tm.tiled_linear(H200, "bfloat16", 8192, 8192, range(1, 2049))
    jumps = tm.wave_starts(points)
    assert [p.batch for p in jumps] == [513, 1025, 1537]
    by_batch = {p.batch: p for p in points}
    assert by_batch[512].tiles == 128 and by_batch[513].tiles == 160
    assert by_batch[513].model_s == pytest.approx(2 * by_batch[512].model_s)


@pytest.mark.parametrize(
    "gpu, dtype, batches, message",
    [
        (GPU("No SMs (test fixture)", {"bfloat16": 1e12}, 1e12, "synthetic"), "bfloat16", [1], "no SM count"),
        (SMALL, "float8", [1], "no float8 rate"),
        (SMALL, "bfloat16", [0], "at least 1"),
    ],
)
def test_impossible_configurations_are_refused(gpu, dtype, batches, message):
    with pytest.raises(ValueError, match=message):
        tm.tiled_linear(gpu, dtype, 64, 64, batches)
