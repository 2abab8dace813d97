"""Vendor datasheet figures for common GPUs, each with its source.

Rates are dense (no structured sparsity), in FLOP/s; bandwidth is HBM/GDDR bytes per second.
These are leads for a reader without the hardware: the site's predictions for a measured
device always use that run's own measured ceilings, and show these beside them.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.roofline import Ceilings, large_layer_ridge_batch

TERA = 1e12
GIGA = 1e9
MB = 1_000_000

BYTES_PER_ELEMENT = {
    "float64": 8,
    "float32": 4,
    "tfloat32": 4,  # TF32 is a matmul mode: operands are stored as float32
    "bfloat16": 2,
    "float16": 2,
    "float8": 1,
}


@dataclass(frozen=True)
class GPU:
    name: str
    peak_flops: dict[str, float]  # dtype -> dense FLOP/s
    bandwidth: float  # bytes/s
    source: str  # document and where to find it
    sm_count: int | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    notes: str = ""
    aliases: tuple[str, ...] = field(default=())

    def ceilings(self, dtype: str) -> Ceilings:
        return Ceilings(flops_per_s=self.peak_flops[dtype], bytes_per_s=self.bandwidth)

    def ridge_intensity(self, dtype: str) -> float:
        """FLOP per byte at which compute time equals memory time."""
        return self.ceilings(dtype).ridge_intensity

    def ridge_batch(self, dtype: str) -> float:
        """Critical batch of a large Linear layer: b* = (F / BW) · (s / 2)."""
        return large_layer_ridge_batch(self.ceilings(dtype), BYTES_PER_ELEMENT[dtype])


GPUS: tuple[GPU, ...] = (
    GPU(
        name="NVIDIA T4",
        peak_flops={"float32": 8.1 * TERA, "float16": 65 * TERA},
        bandwidth=320 * GIGA,
        sm_count=40,
        l2_bytes=4 * 2**20,
        memory_bytes=16 * 2**30,
        source="NVIDIA T4 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/tesla-t4/); "
        "SM count and L2 from the NVIDIA Turing GPU Architecture whitepaper",
        notes="65 TFLOP/s is the fp16 tensor-core rate (mixed precision); plain fp32 is 8.1. Turing has no bf16.",
        aliases=("Tesla T4",),
    ),
    GPU(
        name="NVIDIA A100 SXM4 80GB",
        peak_flops={
            "float32": 19.5 * TERA,
            "tfloat32": 156 * TERA,
            "bfloat16": 312 * TERA,
            "float16": 312 * TERA,
        },
        bandwidth=2039 * GIGA,
        sm_count=108,
        l2_bytes=40 * MB,
        memory_bytes=80 * 2**30,
        source="NVIDIA A100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/a100/); "
        "SM count, 40 MB L2 and 192 KB of L1/shared memory per SM from the NVIDIA A100 Tensor Core "
        "GPU Architecture whitepaper",
        aliases=("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"),
    ),
    GPU(
        name="NVIDIA A100 SXM4 40GB",
        peak_flops={
            "float32": 19.5 * TERA,
            "tfloat32": 156 * TERA,
            "bfloat16": 312 * TERA,
            "float16": 312 * TERA,
        },
        bandwidth=1555 * GIGA,
        sm_count=108,
        l2_bytes=40 * MB,
        memory_bytes=40 * 2**30,
        source="NVIDIA A100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/a100/)",
        aliases=("A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB"),
    ),
    GPU(
        name="NVIDIA H100 SXM",
        peak_flops={
            "float32": 67 * TERA,
            "tfloat32": 494.7 * TERA,
            "bfloat16": 989.4 * TERA,
            "float16": 989.4 * TERA,
            "float8": 1978.9 * TERA,
        },
        bandwidth=3.35 * TERA,
        sm_count=132,
        l2_bytes=50 * MB,
        memory_bytes=80 * 2**30,
        source="NVIDIA H100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h100/), "
        "dense rates (the datasheet's headline tensor figures are with sparsity, twice these); "
        "SM count and L2 from the NVIDIA H100 Tensor Core GPU Architecture whitepaper",
        aliases=("NVIDIA H100 80GB HBM3", "H100 SXM5"),
    ),
    GPU(
        name="NVIDIA H200",
        peak_flops={
            "float32": 67 * TERA,
            "tfloat32": 494.7 * TERA,
            "bfloat16": 989.4 * TERA,
            "float16": 989.4 * TERA,
            "float8": 1978.9 * TERA,
        },
        bandwidth=4.8 * TERA,
        sm_count=132,
        memory_bytes=141 * 10**9,
        source="NVIDIA H200 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h200/), "
        "SXM form factor, dense rates (the headline tensor figures are with sparsity, twice these)",
        notes="Same GH100 compute as the H100 SXM with faster, larger HBM3e, so its ridge point is lower.",
        aliases=("H200 SXM", "NVIDIA H200 SXM"),
    ),
)


def find_gpu(name: str) -> GPU | None:
    """The datasheet entry whose name or alias matches a device name, if any."""
    wanted = name.strip().lower()
    for gpu in GPUS:
        if wanted in (gpu.name.lower(), *(alias.lower() for alias in gpu.aliases)):
            return gpu
    return None
