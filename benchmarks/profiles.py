"""What each profile measures. Pure Python, so `python -m benchmarks list` needs no torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

WORKLOADS: dict[str, str] = {
    "mlp": "depth × width stack of Linear+ReLU layers (snippets/mlp.py); params: width, depth",
}


@dataclass(frozen=True)
class Sweep:
    """One workload configuration measured at many batch sizes, per dtype and mode."""

    workload: str
    params: dict[str, Any]
    dtypes: tuple[str, ...]
    modes: tuple[str, ...]
    batches: tuple[int, ...]

    def label(self) -> str:
        params = " ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.workload} {params}"


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    sweeps: tuple[Sweep, ...]
    rounds: int  # samples per point, taken in interleaved rounds over the batch sizes
    min_sample_s: float  # each sample repeats the call until it lasts at least this long
    warmup_s: float = 0.05  # per point, before calibration
    extra: dict[str, Any] = field(default_factory=dict)

    def dtypes(self) -> list[str]:
        return sorted({d for s in self.sweeps for d in s.dtypes})


QUICK_BATCHES = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
FULL_BATCHES = (
    1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512,
    768, 1024, 1536, 2048, 3072, 4096,
)  # fmt: skip

QUICK = Profile(
    name="quick",
    description="Any CPU in about a minute on 2 cores: fp32 MLPs of width 256 to 2048, batch 1 to 512.",
    sweeps=tuple(
        Sweep("mlp", {"width": width, "depth": 8}, ("float32",), ("graph", "eager"), QUICK_BATCHES)
        for width in (256, 512, 1024, 2048)
    ),
    rounds=15,
    min_sample_s=0.02,
)

FULL = Profile(
    name="full",
    description="A GPU in about 5 minutes on an H200: bf16 and fp32 MLPs of width 1024 to 8192, "
    "batch 1 to 4096, CUDA-graph replay and eager.",
    sweeps=tuple(
        Sweep("mlp", {"width": width, "depth": 8}, ("bfloat16", "float32"), ("graph", "eager"), FULL_BATCHES)
        for width in (1024, 2048, 4096, 8192)
    ),
    rounds=20,
    min_sample_s=0.002,
)

PROFILES: dict[str, Profile] = {p.name: p for p in (QUICK, FULL)}


def select_sweeps(profile: Profile, only: list[str] | None) -> list[Sweep]:
    """The profile's sweeps, restricted to the named workloads; unknown names raise ValueError."""
    if not only:
        return list(profile.sweeps)
    unknown = sorted(set(only) - set(WORKLOADS))
    if unknown:
        raise ValueError(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    return [s for s in profile.sweeps if s.workload in only]
