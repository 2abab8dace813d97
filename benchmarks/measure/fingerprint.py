"""What machine a run measured: the device fingerprint recorded in every results file."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

import torch


def device_slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "device"


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def cpu_last_level_cache_bytes() -> int | None:
    """Size of the largest CPU cache level that Linux reports, in bytes."""
    best: tuple[int, int] | None = None
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level = int((index / "level").read_text())
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        match = re.fullmatch(r"(\d+)([KMG]?)", size)
        if match:
            scale = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2)]
            if best is None or level > best[0]:
                best = (level, int(match.group(1)) * scale)
    return best[1] if best else None


def cpu_cache_levels() -> list[dict]:
    """Data and unified cache levels of cpu0 as Linux reports them (private levels are per core)."""
    levels = []
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        match = re.fullmatch(r"(\d+)([KMG]?)", size)
        if match and kind != "Instruction":
            scale = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2)]
            levels.append({"level": level, "type": kind, "bytes": int(match.group(1)) * scale})
    return sorted(levels, key=lambda entry: entry["level"])


def system_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _query(index: int, fields: list[str]) -> list[str] | None:
    """nvidia-smi's values of these fields for one GPU; None when it is missing or silent."""
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--id={index}", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=15,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    values = [v.strip() for v in out.split(",")]
    return values if len(values) == len(fields) else None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def nvidia_smi(index: int) -> dict:
    """Driver, clocks and power limit from nvidia-smi; empty when it is missing or silent."""
    fields = ["driver_version", "clocks.sm", "clocks.max.sm", "clocks.mem", "clocks.max.mem", "power.limit"]
    values = _query(index, fields)
    if values is None:
        return {}
    names = ("sm", "sm_max", "memory", "memory_max")
    clocks = {name: _number(v) for name, v in zip(names, values[1:5])}
    return {"driver": values[0], "clocks_mhz": clocks, "power_limit_w": _number(values[5])}


# What slows the clocks: nvidia-smi's current name (drivers of 2023 on) and the older one it replaced.
EVENT_REASONS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")


def device_state(backend) -> dict | None:
    """Clocks, temperature, power and throttle reasons now (CUDA, where nvidia-smi answers): a run
    records them at its end, so a reader can tell a throttled run from a slow device."""
    if backend.kind != "cuda":
        return None
    fields = ["clocks.sm", "clocks.mem", "temperature.gpu", "power.draw"]
    for reasons in EVENT_REASONS:  # an unknown field fails the whole query: try the older name next
        values = _query(backend.device.index or 0, [*fields, reasons])
        if values is not None:
            break
    else:
        return None
    sm, memory, temperature, power = (_number(v) for v in values[:4])
    return {
        "clocks_mhz": {"sm": sm, "memory": memory},
        "temperature_c": temperature,
        "power_w": power,
        "throttle_reasons": values[4][:100],
    }


def fingerprint(backend) -> dict:
    common = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "threads": torch.get_num_threads(),
        "cuda": torch.version.cuda,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "math_flags": {
            "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,  # fp32 convolutions run in TF32 when true
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
        },
    }
    if backend.kind == "cpu":
        name = common["cpu_model"] or "unknown CPU"
        return {
            "kind": "cpu",
            "name": name,
            "slug": "cpu-" + device_slug(name),
            "sm_count": None,
            "l2_bytes": cpu_last_level_cache_bytes(),
            "cache_levels": cpu_cache_levels(),
            "memory_bytes": system_memory_bytes(),
            "compute_capability": None,
            "driver": None,
            "clocks_mhz": None,
            "power_limit_w": None,
            **common,
        }
    index = backend.device.index or 0
    props = torch.cuda.get_device_properties(index)
    smi = nvidia_smi(index)
    return {
        "kind": "cuda",
        "name": props.name,
        "slug": device_slug(props.name),
        "sm_count": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "cache_levels": [{"level": 2, "type": "Unified", "bytes": props.L2_cache_size}]
        if getattr(props, "L2_cache_size", None)
        else [],
        "memory_bytes": props.total_memory,
        "compute_capability": f"{props.major}.{props.minor}",
        "driver": smi.get("driver"),
        "clocks_mhz": smi.get("clocks_mhz"),
        "power_limit_w": smi.get("power_limit_w"),
        **common,
    }
