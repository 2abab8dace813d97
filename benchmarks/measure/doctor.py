"""What a first run on a new machine needs to know about it, read without measuring anything.

Python, torch and its CUDA and cuDNN, the driver, the device (SMs, L2, memory free and total, clocks and
power limit), a compiler for torch.compile, and which attention backends run here. Only the standard
library and torch; every fact that cannot be read says why instead of failing.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from dataclasses import dataclass

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from benchmarks.measure import torch_api
from benchmarks.measure.fingerprint import nvidia_smi

ATTENTION = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "math": SDPBackend.MATH,
}


@dataclass
class Fact:
    name: str
    value: str
    problem: str | None = None  # what this fact stops from working, if anything


def _mhz(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def _compiler(kind: str) -> Fact:
    """torch.compile's needs: a C++ compiler for Inductor on a CPU; Triton and a C compiler (for its
    launcher) on CUDA."""
    cc = os.environ.get("CC") or next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    cxx = os.environ.get("CXX") or next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    parts = [f"C compiler {cc or 'none'}", f"C++ compiler {cxx or 'none'}"]
    problem = None
    if kind == "cuda":
        try:
            import triton

            parts.append(f"triton {triton.__version__}")
        except ImportError:
            parts.append("no triton")
            problem = "torch.compile on CUDA needs triton"
        if cc is None:
            problem = problem or "triton needs a C compiler to build its kernel launchers"
    elif cxx is None:
        problem = "torch.compile on a CPU needs a C++ compiler"
    return Fact("torch.compile", ", ".join(parts), problem)


def _api() -> Fact:
    """Whether this torch has every name the measuring path uses (torch_api.SINCE)."""
    lacking = torch_api.missing()
    value = f"all {len(torch_api.SINCE)} names the measuring path uses are here"
    if lacking:
        value = f"{len(lacking)} of {len(torch_api.SINCE)} names missing: {', '.join(lacking[:5])}"
    return Fact("torch API", value, "this torch is too old for the measuring path" if lacking else None)


def attention_backends(device: torch.device) -> Fact:
    """Which scaled-dot-product-attention backends run a tiny grouped-query call here."""
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    q = torch.randn(1, 4, 8, 64, device=device, dtype=dtype)
    kv = torch.randn(1, 2, 8, 64, device=device, dtype=dtype).repeat_interleave(2, dim=1)
    runs, refused = [], []
    for name, backend in ATTENTION.items():
        try:
            with torch.no_grad(), sdpa_kernel([backend]):
                torch.nn.functional.scaled_dot_product_attention(q, kv, kv)
            runs.append(name)
        except RuntimeError:
            refused.append(name)
    problem = None
    if device.type == "cuda" and not {"flash", "cudnn", "efficient"} & set(runs):
        problem = "no fused attention backend: the decode workload refuses the math backend on CUDA"
    return Fact("attention backends", ", ".join(runs) + (f" (not: {', '.join(refused)})" if refused else ""), problem)


def environment(device: str = "auto", threads: int | None = None) -> list[Fact]:
    """The facts, in the order a reader checks them. `device`: auto, cpu or cuda; `threads`: torch's
    intra-op threads, as the smoke run will use them."""
    if threads:
        torch.set_num_threads(threads)
    facts = [
        Fact("python", f"{platform.python_version()} ({sys.executable})"),
        Fact(
            "torch",
            f"{torch.__version__}, built "
            + (f"with CUDA {torch.version.cuda}" if torch.version.cuda else "without CUDA"),
        ),
        Fact("cuDNN", str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else "not available"),
        Fact("host", f"{platform.platform()}; {os.cpu_count()} CPU cores, torch uses {torch.get_num_threads()}"),
        _api(),
    ]
    available = torch.cuda.is_available()
    use_cuda = device == "cuda" or (device == "auto" and available)
    if not available:
        problem = "--device cuda cannot run" if device == "cuda" else None
        facts.append(Fact("CUDA", "no GPU visible to torch", problem))
    if not (use_cuda and available):
        facts.append(_compiler("cpu"))
        facts.append(attention_backends(torch.device("cpu")))
        return facts
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    free, total = torch.cuda.mem_get_info(index)
    smi = nvidia_smi(index)
    clocks = smi.get("clocks_mhz") or {}
    facts += [
        Fact("CUDA", f"{torch.cuda.device_count()} GPU(s) visible; using {index}"),
        Fact("driver", smi.get("driver") or "unknown (nvidia-smi did not answer)"),
        Fact("device", f"{props.name}, compute capability {props.major}.{props.minor}"),
        Fact("SMs", str(props.multi_processor_count)),
        Fact("L2", f"{getattr(props, 'L2_cache_size', 0) / 2**20:.0f} MiB"),
        Fact("memory", f"{_gib(free)} free of {_gib(total)}",
             "under 8 GiB free: the full profile's large curves will be skipped" if free < 8 * 2**30 else None),
        Fact("clocks", "unknown (nvidia-smi did not answer)" if not clocks else
             f"SM {_mhz(clocks.get('sm'))} of {_mhz(clocks.get('sm_max'))} MHz, memory "
             f"{_mhz(clocks.get('memory'))} of {_mhz(clocks.get('memory_max'))} MHz"),
        Fact("power limit", "unknown" if smi.get("power_limit_w") is None else f"{smi['power_limit_w']:g} W"),
    ]  # fmt: skip
    facts.append(_compiler("cuda"))
    facts.append(attention_backends(torch.device("cuda", index)))
    return facts
