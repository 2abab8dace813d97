"""Vendor datasheet figures for common GPUs, each with its source.

Rates are dense (no structured sparsity), in FLOP/s; bandwidth is HBM/GDDR bytes per second.
NVIDIA datasheets print tensor-core rates with 2:4 structured sparsity marked by an asterisk
(from Hopper on, often only those); the figures here are half of them. Each dtype key is a name from
BYTES_PER_ELEMENT, and a GPU lists only the dtypes its hardware runs: "float32" is the plain
(non-tensor) FP32 rate, "tfloat32" the TF32 tensor-core rate, "int8" the dense int8 tensor-core rate (TOPS, counted
as FLOP/s), "float4" Blackwell's dense FP4 rate.

Each GPU also names the link its tensor-parallel all-reduces cross (`Interconnect`): NVLink where the part has it,
else its PCIe slot, with the datasheet's figure (bidirectional, summed over both directions, as NVIDIA prints it).

These are leads for a reader without the hardware: the site's predictions for a measured
device always use that run's own measured ceilings, and show these beside them. Aliases are
the strings `torch.cuda.get_device_name()` returns; a name that already equals that string
needs no alias, since find_gpu matches names too.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TERA = 1e12
GIGA = 1e9
MB = 1_000_000
# Vendors' "MB" of cache and "GB" of GPU memory are binary: an A100 reports L2_cache_size = 40 MiB.
MIB = 2**20
GIB = 2**30

BYTES_PER_ELEMENT = {
    "float64": 8,
    "float32": 4,
    "tfloat32": 4,  # TF32 is a matmul mode: operands are stored as float32
    "bfloat16": 2,
    "float16": 2,
    "float8": 1,  # e4m3, weights and activations (W8A8)
    "int8": 1,  # int8 tensor cores, weights and activations (W8A8); rates in integer operations per second
    "float4": 0.5,  # Blackwell's 4-bit formats (NVFP4, MXFP4), weights and activations; block scales not counted
}


@dataclass(frozen=True)
class Ceilings:
    """A device's peak arithmetic rate (FLOP/s) and memory bandwidth (bytes/s) for one dtype: a run's measured
    ceilings or a datasheet's."""

    flops_per_s: float
    bytes_per_s: float

    @property
    def ridge_intensity(self) -> float:
        """FLOP per byte where compute time equals memory time."""
        return self.flops_per_s / self.bytes_per_s

    def large_layer_ridge_batch(self, bytes_per_element: int) -> float:
        """b* = (F / BW) · (s / 2): the critical batch once the weight term dominates the bytes."""
        return self.ridge_intensity * bytes_per_element / 2


@dataclass(frozen=True)
class Interconnect:
    """The link between GPUs of one server that tensor parallelism's all-reduces cross: its name and the datasheet's
    bandwidth per GPU, both directions summed (NVLink 900 GB/s on an H100 SXM is 450 GB/s each way)."""

    name: str  # e.g. "NVLink 4", "PCIe Gen4 x16"
    bidirectional_bytes_per_s: float
    source: str

    @property
    def bytes_per_s_each_way(self) -> float:
        """What one direction carries: a ring all-reduce sends and receives at once, each at this rate."""
        return self.bidirectional_bytes_per_s / 2


PCIE_GEN3_X16 = "PCIe Gen3 x16"
PCIE_GEN4_X16 = "PCIe Gen4 x16"
PCIE_GEN5_X16 = "PCIe Gen5 x16"


@dataclass(frozen=True)
class GPU:
    name: str
    peak_flops: dict[str, float]  # dtype -> dense FLOP/s
    bandwidth: float  # bytes/s
    source: str  # document and where to find it
    sm_count: int | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    # Where memory_bytes comes from: "driver" (what nvidia-smi reports as the total, used wherever it is known: what
    # a program can allocate against) or "datasheet" (the vendor's GB, read as GiB, where the driver's is not known).
    memory_from: str = "datasheet"
    notes: str = ""
    aliases: tuple[str, ...] = field(default=())
    # A rate others measured where the datasheet's peak is not sustained: dtype -> (FLOP/s, source).
    sustained_flops: dict[str, tuple[float, str]] = field(default_factory=dict)
    interconnect: Interconnect | None = None  # the link tensor parallelism crosses (NVLink, else PCIe)

    def ceilings(self, dtype: str) -> Ceilings:
        return Ceilings(flops_per_s=self.peak_flops[dtype], bytes_per_s=self.bandwidth)

    def ridge_intensity(self, dtype: str) -> float:
        """FLOP per byte at which compute time equals memory time."""
        return self.ceilings(dtype).ridge_intensity

    def ridge_batch(self, dtype: str) -> float:
        """Critical batch of a large Linear layer: b* = (F / BW) · (s / 2)."""
        return self.ceilings(dtype).large_layer_ridge_batch(BYTES_PER_ELEMENT[dtype])


GPUS: tuple[GPU, ...] = (
    GPU(
        name="NVIDIA T4",
        peak_flops={"float32": 8.1 * TERA, "float16": 65 * TERA, "int8": 130 * TERA},
        bandwidth=320 * GIGA,
        sm_count=40,
        l2_bytes=4 * MIB,
        memory_bytes=15_360 * MIB,  # 16 GB on the datasheet; nvidia-smi reports 15,360 MiB for a Tesla T4
        memory_from="driver",
        interconnect=Interconnect(
            PCIE_GEN3_X16,
            32 * GIGA,
            "NVIDIA T4 datasheet (https://www.nvidia.com/en-us/data-center/tesla-t4/): “Interconnect Bandwidth 32 "
            "GB/sec”",
        ),
        source="NVIDIA T4 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/tesla-t4/); "
        "SM count and L2 from the NVIDIA Turing GPU Architecture whitepaper",
        notes="INT8 130 TOPS on the datasheet (Turing has no sparsity: dense). Memory: 16 GB on the datasheet; "
        "nvidia-smi reports 15,360 MiB (15.0 GiB) for a Tesla T4, the figure "
        "used here. 65 TFLOP/s is the fp16 tensor-core rate (mixed precision) at the 1,590 MHz boost clock; plain fp32 "
        "is 8.1. Turing has no bf16. A 70 W card does not hold its boost clock under a long matmul: about 24 TFLOP/s "
        "has been measured for a 4096³ HGEMM, where power capping lowers the clock.",
        aliases=("Tesla T4",),
        sustained_flops={
            "float16": (
                24 * TERA,
                "a 4096³ cuBLAS HGEMM measured on a T4, reported on the NVIDIA Developer Forums, “About GPU peak "
                "performance” (2023, https://forums.developer.nvidia.com/t/about-gpu-peak-performance/264462), "
                "with NVIDIA's answer there that the 70 W power cap lowers the clock",
            )
        },
    ),
    GPU(
        name="NVIDIA V100 SXM2 32GB",
        peak_flops={"float32": 15.7 * TERA, "float16": 125 * TERA},
        bandwidth=900 * GIGA,
        sm_count=80,
        l2_bytes=6 * MIB,
        memory_bytes=32 * GIB,
        interconnect=Interconnect(
            "NVLink 2",
            300 * GIGA,
            "NVIDIA V100 datasheet (https://www.nvidia.com/en-us/data-center/v100/), SXM2 column: “Interconnect "
            "Bandwidth NVLink 300 GB/s”",
        ),
        source="NVIDIA Tesla V100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/v100/), "
        "SXM2 column; 80 SMs and 6 MB (6144 KB) of L2 from the NVIDIA Tesla V100 GPU Architecture whitepaper "
        "(https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-whitepaper.pdf)",
        notes="Volta's tensor cores run no int8: no int8 rate. 125 TFLOP/s is the fp16 tensor-core rate (mixed "
        "precision, no sparsity on Volta); plain fp32 is "
        "15.7. Volta has no bf16 and no TF32, so fp32 matmuls run at the plain fp32 rate.",
        aliases=("Tesla V100-SXM2-32GB",),
    ),
    GPU(
        name="NVIDIA A10",
        peak_flops={
            "float32": 31.2 * TERA,
            "tfloat32": 62.5 * TERA,
            "bfloat16": 125 * TERA,
            "float16": 125 * TERA,
            "int8": 250 * TERA,
        },
        bandwidth=600 * GIGA,
        sm_count=72,
        l2_bytes=6 * MIB,
        memory_bytes=24 * GIB,
        interconnect=Interconnect(
            PCIE_GEN4_X16,
            64 * GIGA,
            "NVIDIA A10 datasheet (https://www.nvidia.com/en-us/data-center/products/a10-gpu/): “Interconnect PCIe "
            "Gen4 64 GB/s”",
        ),
        source="NVIDIA A10 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/products/a10-gpu/), "
        "dense rates (the datasheet prints 125 TF32 and 250 bf16/fp16 with sparsity); 72 SMs (the datasheet's "
        "9,216 CUDA cores at 128 per SM); 6 MB of L2, the GA102's, from the NVIDIA Ampere GA102 GPU "
        "Architecture whitepaper (https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-"
        "whitepaper-v2.pdf)",
        notes="INT8 250 TOPS dense (500 with sparsity). GDDR6, PCIe. No fp8 (Ampere). AWS's A10G is a different part "
        "with other tensor rates: not this entry.",
    ),
    GPU(
        name="NVIDIA A10G",
        peak_flops={
            "float32": 35 * TERA,
            "tfloat32": 35 * TERA,
            "bfloat16": 70 * TERA,
            "float16": 70 * TERA,
            "int8": 140 * TERA,
        },
        bandwidth=600 * GIGA,
        sm_count=80,
        l2_bytes=6 * MIB,
        memory_bytes=24 * GIB,
        interconnect=Interconnect(
            PCIE_GEN4_X16,
            64 * GIGA,
            "assumed: the PCIe Gen4 x16 slot of the GA102 boards (64 GB/s both directions, as the A10 datasheet gives "
            "for the A10); AWS states no figure",
        ),
        source="NVIDIA publishes no A10G datasheet (AWS's part for its G5 instances, https://aws.amazon.com/ec2/"
        "instance-types/g5/); dense rates as Baseten's A10 vs A10G spec table lists them (https://www.baseten.co/blog/"
        "nvidia-a10-vs-a10g-for-ml-model-inference/): 35 TFLOP/s fp32 and TF32, 70 bf16/fp16, 140 TOPS int8, with "
        "24 GB GDDR6 at 600 GB/s; 80 SMs is the multiprocessor count the CUDA driver reports for an A10G; 6 MB L2, "
        "the GA102's, from the NVIDIA Ampere GA102 GPU Architecture whitepaper (https://www.nvidia.com/content/PDF/"
        "nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf)",
        notes="Same GA102 die, memory and bandwidth as the A10, with 80 SMs enabled and the tensor cores at half the "
        "A10's per-SM rate (as GeForce GA102 parts run fp16 with fp32 accumulation): 70 TFLOP/s is 80 SMs × 256 FMA a "
        "clock × 2 × 1.71 GHz (at the A10's 512 a clock it would be 140). Contested: no vendor datasheet prints these; "
        "they are a third party's table. No fp8.",
        aliases=("A10G",),
    ),
    GPU(
        name="NVIDIA A100 SXM4 80GB",
        peak_flops={
            "float32": 19.5 * TERA,
            "tfloat32": 156 * TERA,
            "bfloat16": 312 * TERA,
            "float16": 312 * TERA,
            "int8": 624 * TERA,
        },
        bandwidth=2039 * GIGA,
        sm_count=108,
        l2_bytes=40 * MIB,
        memory_bytes=80 * GIB,
        interconnect=Interconnect(
            "NVLink 3",
            600 * GIGA,
            "NVIDIA A100 datasheet (https://www.nvidia.com/en-us/data-center/a100/), SXM column: “NVIDIA NVLink: 600 "
            "GB/s”",
        ),
        source="NVIDIA A100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/a100/); "
        "SM count, 40 MB L2 and 192 KB of L1/shared memory per SM from the NVIDIA A100 Tensor Core "
        "GPU Architecture whitepaper",
        notes="INT8 624 TOPS dense (1,248 with sparsity).",
        aliases=("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"),
    ),
    GPU(
        name="NVIDIA A100 SXM4 40GB",
        peak_flops={
            "float32": 19.5 * TERA,
            "tfloat32": 156 * TERA,
            "bfloat16": 312 * TERA,
            "float16": 312 * TERA,
            "int8": 624 * TERA,
        },
        bandwidth=1555 * GIGA,
        sm_count=108,
        l2_bytes=40 * MIB,
        memory_bytes=40 * GIB,
        interconnect=Interconnect(
            "NVLink 3",
            600 * GIGA,
            "NVIDIA A100 datasheet (https://www.nvidia.com/en-us/data-center/a100/), SXM column: “NVIDIA NVLink: 600 "
            "GB/s”",
        ),
        source="NVIDIA A100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/a100/); "
        "SM count and L2 from the NVIDIA A100 Tensor Core GPU Architecture whitepaper",
        notes="INT8 624 TOPS dense (1,248 with sparsity). Same GA100 compute as the 80 GB part, with HBM2 instead of "
        "HBM2e: same rates, lower bandwidth.",
        aliases=("A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB"),
    ),
    GPU(
        name="NVIDIA L4",
        peak_flops={
            "float32": 30.3 * TERA,
            "tfloat32": 60 * TERA,
            "bfloat16": 121 * TERA,
            "float16": 121 * TERA,
            "float8": 242.5 * TERA,
            "int8": 242.5 * TERA,
        },
        bandwidth=300 * GIGA,
        sm_count=58,
        l2_bytes=48 * MIB,
        memory_bytes=23_034 * MIB,  # 24 GB on the datasheet; nvidia-smi reports 23,034 MiB for an L4
        memory_from="driver",
        interconnect=Interconnect(
            PCIE_GEN4_X16,
            64 * GIGA,
            "NVIDIA L4 datasheet (https://resources.nvidia.com/en-us-gpu-resources/l4-tensor-datasheet): “Interconnect "
            "PCIe Gen4 x16 64GB/s”",
        ),
        source="NVIDIA L4 Tensor Core GPU datasheet (https://resources.nvidia.com/en-us-gpu-resources/l4-tensor-"
        "datasheet), dense rates: half the datasheet's 120 TF32, 242 bf16/fp16 and 485 fp8 figures, which are "
        "with sparsity; 48 MB of L2, the AD104's, from the NVIDIA Ada GPU Architecture whitepaper "
        "(https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf)",
        notes="INT8 242.5 TOPS dense: half the datasheet's 485 with sparsity. 72 W, GDDR6, PCIe. NVIDIA's datasheet "
        "gives no SM count: 58 is the multiprocessor count the CUDA "
        "driver reports for an L4 (7,424 CUDA cores at 128 per SM, of the AD104's 60 SMs). Its low bandwidth gives "
        "it one of the highest ridges here. Memory: 24 GB on the datasheet; nvidia-smi reports 23,034 MiB (22.5 GiB) "
        "for an L4 (driver 550.90.07: https://github.com/SakkarinKt/gpu-warmup/blob/main/HARDWARE.md, “GPU memory: "
        "23034 MiB”), the figure used here.",
    ),
    GPU(
        name="NVIDIA L40S",
        peak_flops={
            "float32": 91.6 * TERA,
            "tfloat32": 183 * TERA,
            "bfloat16": 362.05 * TERA,
            "float16": 362.05 * TERA,
            "float8": 733 * TERA,
            "int8": 733 * TERA,
        },
        bandwidth=864 * GIGA,
        sm_count=142,
        l2_bytes=96 * MIB,
        memory_bytes=48 * GIB,
        interconnect=Interconnect(
            PCIE_GEN4_X16,
            64 * GIGA,
            "NVIDIA L40S datasheet (https://www.nvidia.com/en-us/data-center/l40s/): “Interconnect Interface PCIe Gen4 "
            "x16: 64GB/s bidirectional”",
        ),
        source="NVIDIA L40S GPU datasheet (https://www.nvidia.com/en-us/data-center/l40s/), dense rates: the "
        "datasheet prints 183 | 366* TF32, 362.05 | 733* bf16/fp16 and 733 | 1,466* fp8 (* with sparsity); "
        "142 SMs (the datasheet's 18,176 CUDA cores at 128 per SM); 96 MB of L2, the AD102's, from the NVIDIA "
        "Ada GPU Architecture whitepaper (https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-"
        "gpu-architecture.pdf)",
        notes="INT8 733 TOPS dense (the datasheet's 733 | 1,466*). GDDR6 with ECC, PCIe. Contested L2: some "
        "third-party spec listings give the L40S 48 MB; a study "
        "of the L40, the same 142-SM AD102 configuration, measures a 96 MiB L2 (https://arxiv.org/abs/2606.22588).",
    ),
    GPU(
        name="NVIDIA H100 SXM",
        peak_flops={
            "float32": 67 * TERA,
            "tfloat32": 494.7 * TERA,
            "bfloat16": 989.4 * TERA,
            "float16": 989.4 * TERA,
            "float8": 1978.9 * TERA,
            "int8": 1978.9 * TERA,
        },
        bandwidth=3.35 * TERA,
        sm_count=132,
        l2_bytes=50 * MIB,
        memory_bytes=81_559 * MIB,  # 80 GB on the datasheet; nvidia-smi reports 81,559 MiB for an H100 80GB HBM3
        memory_from="driver",
        interconnect=Interconnect(
            "NVLink 4",
            900 * GIGA,
            "NVIDIA H100 datasheet (https://www.nvidia.com/en-us/data-center/h100/), H100 SXM column: “Interconnect "
            "NVIDIA NVLink: 900GB/s, PCIe Gen5: 128GB/s”",
        ),
        source="NVIDIA H100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h100/), "
        "dense rates (the datasheet's headline tensor figures are with sparsity, twice these); "
        "SM count and L2 from the NVIDIA H100 Tensor Core GPU Architecture whitepaper",
        notes="INT8 1,978.9 TOPS dense: half the datasheet's 3,958 with sparsity. Memory: 80 GB on the datasheet; "
        "nvidia-smi reports 81,559 MiB (79.6 GiB) for an H100 80GB HBM3, the "
        "figure used here.",
        aliases=("NVIDIA H100 80GB HBM3", "H100 SXM5"),
    ),
    GPU(
        name="NVIDIA H100 PCIe",
        peak_flops={
            "float32": 51 * TERA,
            "tfloat32": 378 * TERA,
            "bfloat16": 756 * TERA,
            "float16": 756 * TERA,
            "float8": 1513 * TERA,
            "int8": 1513 * TERA,
        },
        bandwidth=2.0 * TERA,
        sm_count=114,
        l2_bytes=50 * MIB,
        memory_bytes=80 * GIB,
        interconnect=Interconnect(
            PCIE_GEN5_X16,
            128 * GIGA,
            "NVIDIA H100 datasheet (https://www.nvidia.com/en-us/data-center/h100/), PCIe column of its 2022-23 "
            "editions: “NVLink: 600GB/s PCIe Gen5: 128GB/s” (the NVLink figure is a bridge joining two cards)",
        ),
        source="NVIDIA H100 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h100/), PCIe "
        "column of its 2022-23 editions, dense rates: half the datasheet's 756 TF32, 1,513 bf16/fp16 and "
        "3,026 fp8 figures, which are with sparsity; 114 SMs, 50 MB L2 and 80 GB HBM2e from the NVIDIA H100 "
        "Tensor Core GPU Architecture whitepaper (https://resources.nvidia.com/en-us-tensor-core/gtc22-"
        "whitepaper-hopper) and the H100 PCIe product brief PB-11133-001",
        notes="INT8 1,513 TOPS dense: half the 3,026 with sparsity. Its NVLink bridge joins pairs only: tensor "
        "parallelism is counted over PCIe. Same GH100 die as the SXM part with fewer SMs enabled (114 of 144), "
        "lower clocks and HBM2e. "
        "NVIDIA's current H100 datasheet shows the H100 NVL (94 GB, 3.9 TB/s) in place of this card: not this entry.",
    ),
    GPU(
        name="NVIDIA H200",
        peak_flops={
            "float32": 67 * TERA,
            "tfloat32": 494.7 * TERA,
            "bfloat16": 989.4 * TERA,
            "float16": 989.4 * TERA,
            "float8": 1978.9 * TERA,
            "int8": 1978.9 * TERA,
        },
        bandwidth=4.8 * TERA,
        sm_count=132,
        l2_bytes=50 * MIB,
        memory_bytes=143_771 * MIB,  # 141 GB on the datasheet; the driver reports 143,771 MiB
        memory_from="driver",
        interconnect=Interconnect(
            "NVLink 4",
            900 * GIGA,
            "NVIDIA H200 datasheet (https://www.nvidia.com/en-us/data-center/h200/), H200 SXM column: “Interconnect "
            "NVIDIA NVLink: 900GB/s PCIe Gen5: 128GB/s”",
        ),
        source="NVIDIA H200 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h200/), "
        "SXM form factor, dense rates (the headline tensor figures are with sparsity, twice these); "
        "the datasheet gives no L2 size: 50 MB is the GH100's, from the NVIDIA H100 Tensor Core GPU "
        "Architecture whitepaper (https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper)",
        notes="INT8 1,978.9 TOPS dense: half the datasheet's 3,958 with sparsity. Same GH100 compute as the H100 SXM "
        "with faster, larger HBM3e, so its ridge point is lower. Memory: "
        "141 GB on the datasheet; nvidia-smi reports 143,771 MiB (140 GiB), the figure used here. "
        "L2 is inferred from the shared die (50 MB, as on the H100), not printed on the H200 datasheet.",
        aliases=("H200 SXM", "NVIDIA H200 SXM"),
    ),
    GPU(
        name="NVIDIA B200",
        peak_flops={
            "float32": 75 * TERA,
            "tfloat32": 1100 * TERA,
            "bfloat16": 2250 * TERA,
            "float16": 2250 * TERA,
            "float8": 4500 * TERA,
            "int8": 4500 * TERA,
            "float4": 9000 * TERA,
        },
        bandwidth=7.7 * TERA,
        sm_count=148,
        l2_bytes=126 * MIB,
        memory_bytes=180 * GIB,
        interconnect=Interconnect(
            "NVLink 5",
            1800 * GIGA,
            "NVIDIA HGX B200 specifications (https://www.nvidia.com/en-us/data-center/hgx/): “NVIDIA NVLink "
            "(Fifth-generation) 1.8TB/s” per GPU",
        ),
        source="NVIDIA HGX B200 specifications (https://www.nvidia.com/en-us/data-center/hgx/), per-GPU "
        "column, dense rates: half the 2.2 PFLOP/s TF32, 4.5 bf16/fp16 and 9 fp8 figures, which are with "
        "sparsity; 180 GB HBM3e and 7.7 TB/s from the same table, and 1,440 GB and 64 TB/s for eight GPUs "
        "from the NVIDIA DGX B200 datasheet (https://www.nvidia.com/en-us/data-center/dgx-b200/); NVIDIA's "
        "datasheets give no SM count or L2 size: 148 SMs (74 of 80 on each of two dies) and 126 MB of L2 "
        "from Chips and Cheese (https://chipsandcheese.com/p/nvidias-b200-keeping-the-cuda-juggernaut)",
        notes="INT8 4,500 TOPS and FP4 9,000 TFLOP/s dense: half the HGX table's 9 POPS and 18 PFLOP/s per GPU, with "
        "sparsity (also listed dense by https://glennklockwood.com/garden/processors/B200). HGX B200 at up to "
        "1,000 W. Contested figures: NVIDIA's per-GPU table gives 7.7 TB/s and 75 "
        "TFLOP/s fp32, while the DGX B200 datasheet's 64 TB/s over eight GPUs and earlier launch material "
        "give 8 TB/s and 80 TFLOP/s fp32 (the current table's fp32 rate for a GB200 GPU, at up to 1,200 W); "
        "at 8 TB/s the bf16 ridge is 281, not 292. "
        "Two dies appear to software as one GPU; the L2 is split between them. Its fp6 rate has no dtype key here.",
    ),
    GPU(
        name="AMD Instinct MI300X",
        peak_flops={
            "float32": 163.4 * TERA,
            "tfloat32": 653.7 * TERA,
            "bfloat16": 1307.4 * TERA,
            "float16": 1307.4 * TERA,
            "float8": 2614.9 * TERA,
            "int8": 2614.9 * TERA,
        },
        bandwidth=5.3 * TERA,
        sm_count=304,
        l2_bytes=32 * MIB,
        memory_bytes=192 * GIB,
        interconnect=Interconnect(
            "Infinity Fabric",
            896 * GIGA,
            "AMD Instinct MI300X datasheet "
            "(https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/amd-instinct-mi300x-data-s"
            "heet.pdf): 7 Infinity Fabric links of 128 GB/s each (peak, bidirectional), 896 GB/s in all",
        ),
        source="AMD Instinct MI300X GPU datasheet (https://www.amd.com/content/dam/amd/en/documents/instinct-"
        "tech-docs/data-sheets/amd-instinct-mi300x-data-sheet.pdf), dense rates (AMD prints the sparse "
        "figures separately, twice these); compute units and caches from the AMD CDNA 3 architecture "
        "whitepaper (https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/amd-cdna-3-"
        "white-paper.pdf) and the ROCm GPU specifications table "
        "(https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html)",
        notes="INT8 2,614.9 TOPS dense. sm_count is compute units (CUs), AMD's counterpart of an SM: 304 = 8 XCDs × "
        "38. l2_bytes is the "
        "total L2, 4 MB on each of the 8 XCDs; behind it sits a 256 MB Infinity Cache (last-level cache) in "
        "front of the HBM3, which this table does not count. fp32 163.4 is the datasheet's vector rate, which "
        "counts packed FP32 (two FMAs per lane per clock: 19,456 lanes × 4 FLOP × 2.1 GHz); unpacked FP32 runs "
        "at half that, 81.7, the same figure as the FP64 vector rate, and the fp32 matrix rate is 163.4 too. "
        "float8 is the CDNA 3 FNUZ formats (e4m3fnuz, e5m2fnuz). ROCm builds of PyTorch sometimes report a generic "
        "'AMD Radeon Graphics' name, which cannot be told apart and is not an alias.",
    ),
)


def find_gpu(name: str) -> GPU | None:
    """The datasheet entry whose name or alias matches a device name, if any."""
    wanted = name.strip().lower()
    for gpu in GPUS:
        if wanted in (gpu.name.lower(), *(alias.lower() for alias in gpu.aliases)):
            return gpu
    return None


def gpus_matching(name: str) -> list[GPU]:
    """The entries a reader's name for a GPU may mean: the one whose name or alias it is (any case), else every
    entry whose name has each of its words as a word ("h100" means both H100s, "a100 40gb" one A100, "a10" the
    A10 and not the A100s), else every entry with a word that each of its words begins ("mi300" the MI300X)."""
    exact = find_gpu(name)
    if exact is not None:
        return [exact]
    words = name.lower().split()
    if not words:
        return []
    named = [(gpu, gpu.name.lower().split()) for gpu in GPUS]
    whole = [gpu for gpu, own in named if all(word in own for word in words)]
    if whole:
        return whole
    return [gpu for gpu, own in named if all(any(w.startswith(word) for w in own) for word in words)]
