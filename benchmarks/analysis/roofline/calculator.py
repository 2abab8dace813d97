"""The batch-size calculator: roofline predictions for an MLP on any GPU in the datasheet.

An MLP of `depth` Linear layers of `width`×`width` at batch b, with s-byte elements, on a GPU
with peak rate F (FLOP/s) and bandwidth BW (bytes/s) costs `snippets.costs.mlp_cost`:

    FLOPs  = depth · 2·w²·b
    bytes  = depth · s·(w² + w + 2·b·w)           (weights and bias once, activations in and out)
    time   = max(FLOPs / F, bytes / BW)

The layer turns compute-bound where the two terms meet:

    b* = s·(w² + w) / BW  ÷  (2·w² / F − 2·s·w / BW)

which tends to (F / BW)·(s / 2) for wide layers (the datasheet ridge batch). The same formulas
are written once more as Vega expressions for the interactive chart, which runs them in the
reader's browser; `vega_expressions` builds those from the names here and the tests evaluate
them against the Python.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.analysis.roofline.curves import Curve
from benchmarks.analysis.roofline.regimes import mlp_curves
from benchmarks.contract.results import Run
from benchmarks.gpus import BYTES_PER_ELEMENT, GPU, find_gpu
from snippets.costs import mlp_cost

DEFAULT_GPU = "NVIDIA H100 SXM"


@dataclass(frozen=True)
class CalculatorPrediction:
    batch: float
    seconds: float
    flops: float
    bytes: float
    bound: str  # "memory" or "compute"

    @property
    def rows_per_s(self) -> float:
        return self.batch / self.seconds


def predict_mlp(
    gpu: GPU, dtype: str, width: int, depth: int, batch: float, activations: str = "memory"
) -> CalculatorPrediction:
    """Roofline time of one forward pass from the GPU's datasheet rate for `dtype`; `activations` as in
    `snippets.costs.mlp_cost` ("memory": every layer's activations cross memory; "cache": they stay on chip)."""
    flops, moved = mlp_cost(batch, width, depth, BYTES_PER_ELEMENT[dtype], activations)
    compute, memory = flops / gpu.peak_flops[dtype], moved / gpu.bandwidth
    return CalculatorPrediction(batch, max(compute, memory), flops, moved, "compute" if compute > memory else "memory")


def forecast_mlp(gpu: GPU, dtype: str, width: int, depth: int, batch: float, memory: float, compute: float) -> float:
    """The forecast time of one forward pass: the roofline's time divided by the share of the resource that bounds
    it (`memory` of the bandwidth, `compute` of the FLOP/s; `benchmarks.analysis.roofline.forecast`)."""
    found = predict_mlp(gpu, dtype, width, depth, batch)
    return found.seconds / (compute if found.bound == "compute" else memory)


def mlp_ridge_batch(
    peak_flops: float, bandwidth: float, bytes_per_element: int, width: int, depth: int = 1, activations="memory"
) -> float | None:
    """Batch where a depth × (width×width) MLP's compute time equals its memory time (None: never).

    activations "memory": each layer reads its input and writes its output, s·(w² + w + 2·b·w) a layer,
    so the depth cancels; "cache": only the weights and the network's own input and output cross memory.
    """
    s = bytes_per_element
    weights = s * (width * width + width) / bandwidth
    per_row = 2 * s * width / bandwidth  # one row's activations in and out
    if activations == "memory":
        denominator = 2 * width * width / peak_flops - per_row
        return weights / denominator if denominator > 0 else None
    denominator = depth * 2 * width * width / peak_flops - per_row
    return depth * weights / denominator if denominator > 0 else None


def gpu_ridge_batch(gpu: GPU, dtype: str, width: int, depth: int = 1, activations: str = "memory") -> float | None:
    return mlp_ridge_batch(gpu.peak_flops[dtype], gpu.bandwidth, BYTES_PER_ELEMENT[dtype], width, depth, activations)


def vega_expressions(width: str, depth: str) -> dict[str, str]:
    """Vega expressions over a datum with fields peak, bandwidth, size, batch, eta_memory and eta_compute, and
    the parameters named `width` and `depth`: the same formulas as `predict_mlp`, `forecast_mlp` and
    `mlp_ridge_batch`."""
    w, d = width, depth
    flops = f"{d} * 2 * {w} * {w} * datum.batch"
    moved = f"{d} * datum.size * ({w} * {w} + {w} + 2 * datum.batch * {w})"
    compute, memory = f"({flops}) / datum.peak", f"({moved}) / datum.bandwidth"
    seconds = f"max({compute}, {memory})"
    forecast = f"{seconds} / (({compute}) > ({memory}) ? datum.eta_compute : datum.eta_memory)"
    denominator = f"(2 * {w} * {w} / datum.peak - 2 * datum.size * {w} / datum.bandwidth)"
    ridge = f"{denominator} > 0 ? datum.size * ({w} * {w} + {w}) / datum.bandwidth / {denominator} : null"
    cached = f"({d} * 2 * {w} * {w} / datum.peak - 2 * datum.size * {w} / datum.bandwidth)"
    ridge_cached = f"{cached} > 0 ? {d} * datum.size * ({w} * {w} + {w}) / datum.bandwidth / {cached} : null"
    return {"seconds": seconds, "forecast": forecast, "ridge": ridge, "ridge_cached": ridge_cached}


# --------------------------------------------------------------------------- measured devices


def measured_rates(run: Run) -> dict[str, tuple[float, float]]:
    """dtype -> (FLOP/s, bytes/s): the run's measured matmul rate and copy bandwidth, the
    ceilings the calculator predicts a measured device from."""
    bandwidth = run.ceilings["copy"]["bytes_per_s"]
    return {dtype: (entry["flops_per_s"], bandwidth) for dtype, entry in run.ceilings.get("matmul", {}).items()}


def datasheet_of(run: Run) -> GPU | None:
    """The datasheet entry of a run's GPU (None for a CPU or a GPU not in the table)."""
    return find_gpu(run.device.get("name", "")) if run.device.get("kind") == "cuda" else None


def measured_curves(run: Run) -> list[Curve]:
    """The run's depth-8 MLPs with rotated weights, in the mode that shows the hardware (CUDA-graph
    replay on a GPU, eager calls on a CPU), measured at two batch sizes or more."""
    mode = "graph" if run.device.get("kind") == "cuda" else "eager"
    return [c for c in mlp_curves(run, cache="rotated") if c.mode == mode and len(c.points) >= 2]


def default_gpu(gpu_runs: Sequence[Run]) -> str:
    """The calculator's first choice: the datasheet entry of the first measured GPU that has one."""
    sheets = [sheet for sheet in map(datasheet_of, gpu_runs) if sheet is not None]
    return sheets[0].name if sheets else DEFAULT_GPU


def ridge_range(gpus: Sequence[GPU], dtype: str) -> list[tuple[float, str]]:
    """(wide-layer ridge batch, GPU name) in `dtype`, smallest first, for every GPU that runs it."""
    return sorted((gpu.ridge_batch(dtype), gpu.name) for gpu in gpus if dtype in gpu.peak_flops)
