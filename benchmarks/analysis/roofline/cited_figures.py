"""Measurements published by others, each with its source: what the site uses where it has measured
nothing itself, always named as someone else's measurement.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Published:
    value: float
    what: str
    source: str


KERNEL_LAUNCH_S = Published(
    3e-6,
    "the launch overhead of an empty CUDA kernel with recent hardware and software, about 3 µs",
    "NVIDIA Developer Forums, “Too much time for kernel launch latency” "
    "(https://forums.developer.nvidia.com/t/too-much-time-for-kernel-launch-latency/233645/3)",
)
