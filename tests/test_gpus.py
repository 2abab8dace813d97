"""The datasheet table: hand-checked ridge points, complete and sourced entries, name lookup."""

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.gpus import BYTES_PER_ELEMENT, GPUS, find_gpu, gpus_matching

ROOT = Path(__file__).resolve().parents[1]

REQUIRED = [
    "NVIDIA T4",
    "NVIDIA V100 SXM2 32GB",
    "NVIDIA A10",
    "NVIDIA A10G",
    "NVIDIA L4",
    "NVIDIA L40S",
    "NVIDIA A100 SXM4 40GB",
    "NVIDIA A100 SXM4 80GB",
    "NVIDIA H100 SXM",
    "NVIDIA H100 PCIe",
    "NVIDIA H200",
    "NVIDIA B200",
    "AMD Instinct MI300X",
]

# What torch.cuda.get_device_name() returns on each device, and the entry it must find.
TORCH_NAMES = {
    "Tesla T4": "NVIDIA T4",
    "Tesla V100-SXM2-32GB": "NVIDIA V100 SXM2 32GB",
    "NVIDIA A10": "NVIDIA A10",
    "NVIDIA A10G": "NVIDIA A10G",
    "NVIDIA L4": "NVIDIA L4",
    "NVIDIA L40S": "NVIDIA L40S",
    "NVIDIA A100-SXM4-40GB": "NVIDIA A100 SXM4 40GB",
    "NVIDIA A100-SXM4-80GB": "NVIDIA A100 SXM4 80GB",
    "NVIDIA H100 80GB HBM3": "NVIDIA H100 SXM",
    "NVIDIA H100 PCIe": "NVIDIA H100 PCIe",
    "NVIDIA H200": "NVIDIA H200",
    "NVIDIA B200": "NVIDIA B200",
    "AMD Instinct MI300X": "AMD Instinct MI300X",
}


@pytest.mark.parametrize(
    ("gpu", "dtype", "ridge"),
    [
        # b* = (F / BW) · (s / 2), worked by hand from the datasheet figures:
        ("NVIDIA T4", "float16", 203),  # 65e12 / 320e9 = 203.1 FLOP/B; s = 2, so b* = 203
        ("NVIDIA T4", "float32", 51),  # 8.1e12 / 320e9 = 25.3 FLOP/B; s = 4, so b* = 2 · 25.3 = 50.6
        ("NVIDIA H100 SXM", "bfloat16", 295),  # 989.4e12 / 3.35e12 = 295.3
        ("NVIDIA H200", "bfloat16", 206),  # 989.4e12 / 4.8e12 = 206.1
        ("NVIDIA A100 SXM4 80GB", "bfloat16", 153),  # 312e12 / 2039e9 = 153.0
        ("NVIDIA V100 SXM2 32GB", "float16", 139),  # 125e12 / 900e9 = 138.9
        ("NVIDIA L4", "bfloat16", 403),  # 121e12 / 300e9 = 403.3
        ("NVIDIA H100 PCIe", "bfloat16", 378),  # 756e12 / 2.0e12 = 378.0
        ("AMD Instinct MI300X", "bfloat16", 247),  # 1307.4e12 / 5.3e12 = 246.7
        ("AMD Instinct MI300X", "float32", 62),  # 163.4e12 / 5.3e12 = 30.8 FLOP/B; s = 4, so b* = 61.7
    ],
)
def test_datasheet_ridge_batches(gpu, dtype, ridge):
    assert find_gpu(gpu).ridge_batch(dtype) == pytest.approx(ridge, abs=1)


def test_ridge_intensity_is_flops_over_bandwidth():
    l4 = find_gpu("NVIDIA L4")
    assert l4.ridge_intensity("float8") == pytest.approx(242.5e12 / 300e9)
    # One-byte fp8 weights halve b* relative to F/BW: 808.3 FLOP/B gives b* = 404.2.
    assert l4.ridge_batch("float8") == pytest.approx(404.2, abs=0.1)


def test_existing_datasheet_figures_are_kept():
    t4, h100, h200 = find_gpu("NVIDIA T4"), find_gpu("NVIDIA H100 SXM"), find_gpu("NVIDIA H200")
    assert t4.peak_flops["float32"] == 8.1e12 and t4.peak_flops["float16"] == 65e12 and t4.bandwidth == 320e9
    assert h100.peak_flops["bfloat16"] == 989.4e12 and h100.bandwidth == 3.35e12
    assert h200.bandwidth == 4.8e12 and h200.l2_bytes == h100.l2_bytes  # same GH100 die


def test_datasheet_covers_the_required_gpus():
    names = {gpu.name for gpu in GPUS}
    assert not set(REQUIRED) - names


@pytest.mark.parametrize("gpu", GPUS, ids=lambda gpu: gpu.name)
def test_datasheet_entry_is_complete_and_sourced(gpu):
    assert gpu.sm_count and gpu.sm_count > 0
    assert gpu.l2_bytes and gpu.l2_bytes > 0
    assert gpu.memory_bytes and gpu.memory_bytes > gpu.l2_bytes
    assert gpu.bandwidth > 0
    assert gpu.peak_flops and all(rate > 0 for rate in gpu.peak_flops.values())
    assert set(gpu.peak_flops) <= set(BYTES_PER_ELEMENT)
    assert "datasheet" in gpu.source.lower() and "https://" in gpu.source
    for dtype in gpu.peak_flops:
        assert gpu.ridge_batch(dtype) > 0


@pytest.mark.parametrize("gpu", GPUS, ids=lambda gpu: gpu.name)
def test_tensor_rates_are_dense_and_consistent(gpu):
    """Catches a sparse figure left unhalved: fp8 is 2× bf16, TF32 ½×, on every GPU that has them."""
    rates = gpu.peak_flops
    half = rates.get("bfloat16", rates["float16"])
    if "bfloat16" in rates:
        assert rates["bfloat16"] == rates["float16"]
    if "float8" in rates:
        assert rates["float8"] / half == pytest.approx(2, rel=0.03)
    if "tfloat32" in rates:
        assert rates["tfloat32"] / half == pytest.approx(0.5, rel=0.03)
    assert rates["float32"] <= rates.get("tfloat32", rates["float32"]) <= half


def test_dtypes_follow_what_the_hardware_supports():
    t4, v100, a10 = find_gpu("NVIDIA T4"), find_gpu("Tesla V100-SXM2-32GB"), find_gpu("NVIDIA A10")
    assert "bfloat16" not in t4.peak_flops and "bfloat16" not in v100.peak_flops  # before Ampere
    assert "tfloat32" not in v100.peak_flops and "tfloat32" not in t4.peak_flops
    assert v100.peak_flops == {"float32": 15.7e12, "float16": 125e12} and v100.bandwidth == 900e9
    for gpu in (t4, v100, a10, find_gpu("NVIDIA A100 SXM4 80GB"), find_gpu("NVIDIA A100 SXM4 40GB")):
        assert "float8" not in gpu.peak_flops  # fp8 tensor cores arrived with Ada and Hopper


def test_names_and_aliases_are_unique():
    keys = [key.lower() for gpu in GPUS for key in (gpu.name, *gpu.aliases)]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("gpu", GPUS, ids=lambda gpu: gpu.name)
def test_find_gpu_matches_names_and_aliases_in_any_case(gpu):
    for key in (gpu.name, *gpu.aliases):
        assert find_gpu(key) is gpu
        assert find_gpu(key.upper()) is gpu
        assert find_gpu(f"  {key.lower()}\n") is gpu


@pytest.mark.parametrize(("device_name", "entry"), TORCH_NAMES.items())
def test_find_gpu_knows_torch_device_names(device_name, entry):
    assert find_gpu(device_name).name == entry


def test_find_gpu_misses_unknown_devices():
    assert find_gpu("Synthetic GPU") is None
    assert find_gpu("AMD Radeon Graphics") is None  # ROCm's generic name: ambiguous


def test_a_readers_name_matches_by_its_words():
    assert [g.name for g in gpus_matching("h100 sxm")] == ["NVIDIA H100 SXM"]
    assert [g.name for g in gpus_matching("Tesla T4")] == ["NVIDIA T4"]  # an alias
    assert [g.name for g in gpus_matching("H100")] == ["NVIDIA H100 SXM", "NVIDIA H100 PCIe"]
    assert [g.name for g in gpus_matching("40gb a100")] == ["NVIDIA A100 SXM4 40GB"]
    assert gpus_matching("tpu") == [] and gpus_matching("  ") == []
    assert [g.name for g in gpus_matching("A10")] == ["NVIDIA A10"]  # a whole word, not the start of "A100"
    assert [g.name for g in gpus_matching("l4")] == ["NVIDIA L4"]  # not the L40S
    assert [g.name for g in gpus_matching("mi300")] == ["AMD Instinct MI300X"]  # the start of a word
    assert gpus_matching("100") == []  # words are matched from their start


def test_the_gpu_table_never_imports_torch():
    code = "import sys; import benchmarks.gpus; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_a10g_is_its_own_part_not_the_a10():
    a10, a10g = find_gpu("NVIDIA A10"), find_gpu("NVIDIA A10G")
    assert a10g is not a10 and a10g.bandwidth == a10.bandwidth == 600e9 and a10g.memory_bytes == a10.memory_bytes
    assert a10g.peak_flops["bfloat16"] == 70e12 and a10.peak_flops["bfloat16"] == 125e12
    assert [g.name for g in gpus_matching("a10g")] == ["NVIDIA A10G"]


@pytest.mark.parametrize("gpu", GPUS, ids=lambda gpu: gpu.name)
def test_int8_runs_at_the_fp8_rate_where_both_exist(gpu):
    """Dense int8 TOPS equal dense fp8 TFLOP/s on Ada, Hopper, Blackwell and CDNA 3, and 2× fp16 on Turing and
    Ampere: a sparse figure left unhalved would break either."""
    rates = gpu.peak_flops
    if "int8" not in rates:
        return
    if "float8" in rates:
        assert rates["int8"] == rates["float8"]
    else:
        assert rates["int8"] / rates["float16"] == pytest.approx(2, rel=0.03)


def test_fp4_is_blackwell_only_and_twice_fp8():
    have = [gpu.name for gpu in GPUS if "float4" in gpu.peak_flops]
    assert have == ["NVIDIA B200"]
    b200 = find_gpu("NVIDIA B200")
    assert b200.peak_flops["float4"] == 2 * b200.peak_flops["float8"] == 9000e12
    assert BYTES_PER_ELEMENT["float4"] == 0.5 and BYTES_PER_ELEMENT["int8"] == 1


def test_volta_has_no_int8_tensor_rate():
    assert "int8" not in find_gpu("NVIDIA V100 SXM2 32GB").peak_flops


@pytest.mark.parametrize("gpu", GPUS, ids=lambda gpu: gpu.name)
def test_every_gpu_names_its_interconnect_with_a_source(gpu):
    link = gpu.interconnect
    assert link is not None and link.bidirectional_bytes_per_s > 0
    assert link.bytes_per_s_each_way == link.bidirectional_bytes_per_s / 2
    assert "https://" in link.source or link.source.startswith("assumed")


def test_nvlink_parts_and_pcie_parts():
    assert find_gpu("NVIDIA H100 SXM").interconnect.bidirectional_bytes_per_s == 900e9
    assert find_gpu("NVIDIA H200").interconnect.name.startswith("NVLink")
    assert find_gpu("NVIDIA B200").interconnect.bidirectional_bytes_per_s == 1800e9
    assert find_gpu("NVIDIA L4").interconnect.name == "PCIe Gen4 x16"
    assert find_gpu("NVIDIA H100 PCIe").interconnect.bidirectional_bytes_per_s == 128e9
