"""Two small probes a model sweep runs beside the ceilings, so that its diagnosis rests on evidence:

- **dispatch**: a tiny MLP (8 Linear+ReLU layers of width 64) at batch 1, in the sweep's dtype and mode;
  its time over the operators it dispatches is the cost of one operator (an upper bound: it includes
  each operator's tiny work). A model's operators times that cost is its fixed dispatch cost per call.
- **small matmul**: the same depth at a width whose weights are far larger than the last-level cache,
  at batch 1: the rate at which this device's small matrix products stream weights, which is what a
  model's small batches can reach (usually well under the large copy's bandwidth).
"""

from __future__ import annotations

import torch
from torch import nn

from benchmarks.measure.adapters import DTYPES
from benchmarks.measure.model_cost import count_operators
from benchmarks.measure.sampler import TimedPoint, measure_points

DEPTH = 8
TINY_WIDTH = 64
STREAM_WIDTH = {"cpu": 1024, "cuda": 4096}  # fp32 32 MiB on a CPU; bf16 256 MiB on a GPU: past the cache


def _mlp(width: int, dtype: torch.dtype, device: torch.device, bias: bool) -> nn.Module:
    layers = []
    for _ in range(DEPTH):
        layers += [nn.Linear(width, width, bias=bias), nn.ReLU()]
    return nn.Sequential(*layers).to(device=device, dtype=dtype).eval()


def measure_probes(backend, dtype: str, mode: str, rounds: int = 7, deadline: float | None = None) -> dict:
    """{"dispatch": {...}, "small_matmul": {...}} with each probe's timing; a probe that fails is left out."""
    device, torch_dtype = backend.device, DTYPES[dtype]
    tiny = _mlp(TINY_WIDTH, torch_dtype, device, bias=True)
    width = STREAM_WIDTH.get(backend.kind, 1024)
    wide = _mlp(width, torch_dtype, device, bias=False)
    x_tiny = torch.randn(1, TINY_WIDTH, device=device, dtype=torch_dtype)
    x_wide = torch.randn(1, width, device=device, dtype=torch_dtype)
    calls = {"dispatch": lambda: tiny(x_tiny), "small_matmul": lambda: wide(x_wide)}
    points = [
        TimedPoint(name, 1, lambda fn=fn: backend.for_mode(fn, mode if mode != "compile" else "eager"))
        for name, fn in calls.items()
    ]
    with torch.no_grad():
        outcomes = measure_points(backend, points, rounds=rounds, min_sample_s=0.005, warmup_s=0.02, deadline=deadline)
    found = {}
    dispatch, stream = outcomes[("dispatch", 1)], outcomes[("small_matmul", 1)]
    if dispatch.status == "ok":
        ops = count_operators(calls["dispatch"])
        found["dispatch"] = {
            "per_op_s": dispatch.timing["median_s"] / ops,
            "ops": ops,
            "model": f"{DEPTH}×{TINY_WIDTH} MLP at batch 1",
            "timing": dispatch.timing,
        }
    if stream.status == "ok":
        weights = sum(p.numel() * p.element_size() for p in wide.parameters())
        found["small_matmul"] = {
            "bytes_per_s": weights / stream.timing["median_s"],
            "weight_bytes": weights,
            "model": f"{DEPTH}×{width} MLP at batch 1",
            "timing": stream.timing,
        }
    return found
