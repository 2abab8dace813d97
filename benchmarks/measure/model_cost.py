"""What one call of an arbitrary model costs: FLOPs, a band of bytes moved, and peak memory.

FLOPs come from torch.utils.flop_counter (matmuls and convolutions; elementwise work is not
counted). Bytes are a band: at least every weight read once (a perfectly fused model), at most every
operator's inputs and outputs read and written once each (nothing fused, nothing cached), counted
by a dispatch mode that sees every operator the call runs; views move no data and are skipped.
"""

from __future__ import annotations

import resource
import sys
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode


@dataclass(frozen=True)
class CallCost:
    flops: float
    bytes_low: float  # weights (parameters and buffers) read once
    bytes_high: float  # every operator's inputs and outputs


class _OperatorBytes(TorchDispatchMode):
    """Sums the bytes of every non-view operator's tensor inputs and outputs."""

    def __init__(self):
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not getattr(func, "is_view", False):
            for value in tree_leaves((args, kwargs or {}, out)):
                if isinstance(value, torch.Tensor):
                    self.total += value.numel() * value.element_size()
        return out


def call_cost(model: torch.nn.Module, args, kwargs, weight_bytes: int) -> CallCost:
    """Run the model once under the counters."""
    with torch.no_grad(), FlopCounterMode(display=False) as flops, _OperatorBytes() as moved:
        model(*args, **kwargs)
    return CallCost(float(flops.get_total_flops()), float(weight_bytes), float(max(moved.total, weight_bytes)))


def peak_memory(model: torch.nn.Module, args, kwargs, device: torch.device) -> int:
    """CUDA: the allocator's peak during one call. CPU: the process's peak resident memory so far
    (a high-water mark: it never goes down, so it bounds this batch from above)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        with torch.no_grad():
            model(*args, **kwargs)
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device))
    with torch.no_grad():
        model(*args, **kwargs)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # bytes on macOS, KiB on Linux
