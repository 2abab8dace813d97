"""The tile and wave model of one Linear layer on a datasheet GPU: what its time looks like against the batch
when the matrix library runs one kernel with one tile shape at every batch.

The output (batch × out_features) is cut into T_M × T_N tiles; every SM computes one tile at a time, a
whole tile even where its rows run past the batch, so a wave of tiles takes as long as one tile's FLOPs at
one SM's share of the peak rate, however few tiles it holds:

    t(b) = max(bytes(b) ÷ bandwidth, waves(b) × t_wave),   t_wave = 2 · T_M · T_N · in_features ÷ (peak ÷ SMs)

The roofline beside it is max(bytes ÷ bandwidth, FLOPs ÷ peak): the same layer with no tile or wave left
partly empty. Both are predictions from datasheet figures; neither is a measurement.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.analysis.roofline.tile_steps import tiles_and_waves
from benchmarks.gpus import BYTES_PER_ELEMENT, GPU
from snippets.costs import linear_cost

TILE = (128, 256)  # batch rows × output columns: a common tile of bf16 GEMM kernels on Hopper-class GPUs


@dataclass(frozen=True)
class TiledPoint:
    batch: int
    roofline_s: float
    model_s: float  # the tile and wave model
    tiles: int
    waves: int

    @property
    def share_of_roofline(self) -> float:
        """The roofline's time ÷ the model's: the share of the layer's peak the tiles leave usable."""
        return self.roofline_s / self.model_s


def wave_seconds(gpu: GPU, dtype: str, in_features: int, tile: tuple[int, int] = TILE) -> float:
    """The time of one wave: every SM computes one whole tile at its share of the datasheet's peak."""
    return 2 * tile[0] * tile[1] * in_features / (gpu.peak_flops[dtype] / gpu.sm_count)


def tiled_linear(
    gpu: GPU,
    dtype: str,
    in_features: int,
    out_features: int,
    batches: Sequence[int],
    tile: tuple[int, int] = TILE,
) -> list[TiledPoint]:
    """The model and the roofline of an in_features → out_features Linear layer at each batch."""
    if not gpu.sm_count:
        raise ValueError(f"{gpu.name}: the datasheet gives no SM count, so waves cannot be counted")
    if dtype not in gpu.peak_flops:
        raise ValueError(f"{gpu.name}: the datasheet gives no {dtype} rate")
    if min(in_features, out_features, *batches, *tile) < 1:
        raise ValueError("features, batches and tile sides must be at least 1")
    peak, wave_s = gpu.peak_flops[dtype], wave_seconds(gpu, dtype, in_features, tile)
    found = []
    for batch in batches:
        flops, bytes_ = linear_cost(batch, in_features, out_features, BYTES_PER_ELEMENT[dtype])
        memory_s = bytes_ / gpu.bandwidth
        tiles, waves = tiles_and_waves(batch, out_features, tile, gpu.sm_count)
        found.append(TiledPoint(batch, max(memory_s, flops / peak), max(memory_s, waves * wave_s), tiles, waves))
    return found


def wave_starts(points: Sequence[TiledPoint]) -> list[TiledPoint]:
    """The first batch of every wave count after the first: where the model's time jumps."""
    return [now for before, now in itertools.pairwise(points) if now.waves > before.waves]
