"""The reader's names for a dtype, a datasheet GPU, a workload and its --param values turned into the registry's, or
one line saying what to choose instead: one set of names and one wording for `predict`, `serve` and `serve llm:`."""

from __future__ import annotations

import math
import sys
from typing import Any

from benchmarks.contract.errors import UserError
from benchmarks.gpus import BYTES_PER_ELEMENT, GPU, GPUS, gpus_matching
from benchmarks.workloads import WORKLOADS, Param, Workload

DTYPE_NAMES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32",
               "tf32": "tfloat32", "fp8": "float8", "fp64": "float64", "double": "float64", "e4m3": "float8",
               "fp8_e4m3": "float8", "float8_e4m3fn": "float8", "int8": "int8", "w8a8": "int8", "fp4": "float4",
               "nvfp4": "float4", "mxfp4": "float4"}  # fmt: skip


class Refused(UserError):
    """Bad input: the message is the one line the reader sees (the command prints it and exits with 2)."""


def dtype_named(name: str) -> str:
    """'bf16', 'BFloat16 ' → 'bfloat16'."""
    wanted = name.strip().lower()
    dtype = DTYPE_NAMES.get(wanted, wanted)
    if dtype not in BYTES_PER_ELEMENT:
        raise Refused(f"unknown dtype {name!r}; choose from {', '.join(BYTES_PER_ELEMENT)}")
    return dtype


def gpu_named(name: str) -> tuple[GPU, str | None]:
    """The one datasheet GPU a name means, and a note when it was chosen among several: 'H100' is taken as the SXM
    part, the one engines and published figures are usually measured on, in every command alike."""
    found = gpus_matching(name)
    if len(found) > 1:
        sxm = [gpu for gpu in found if "sxm" in gpu.name.lower().split()]
        if len(sxm) == 1:
            return sxm[0], f"{name!r} taken as the {sxm[0].name} (name another part to choose it)"
    if len(found) != 1:
        which = "ambiguous" if found else "unknown"
        raise Refused(f"{which} GPU {name!r}; choose from {', '.join(gpu.name for gpu in (found or GPUS))}")
    return found[0], None


def gpu_chosen(name: str) -> GPU:
    """`gpu_named` for a command whose output has no place for notes: the note, if any, goes to stderr."""
    gpu, note = gpu_named(name)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return gpu


def check_rate(gpu: GPU, dtype: str) -> None:
    """Refuse a dtype the GPU's datasheet gives no rate for."""
    if dtype not in gpu.peak_flops:
        raise Refused(f"the {gpu.name} datasheet gives no {dtype} rate; it gives {', '.join(gpu.peak_flops)}")


def workload_named(name: str) -> Workload:
    """The registry's workload of that name (any case)."""
    spec = WORKLOADS.get(name.strip().lower())
    if spec is None:
        raise Refused(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")
    return spec


def workload_params(spec: Workload, pairs: list[str], *, complete: bool = True) -> dict[str, Any]:
    """The given --param KEY=VALUE pairs: with the workload's defaults and checked against the registry when
    `complete`, else only those given (to pick curves out of a run)."""
    params = spec.defaults() if complete else {}
    given: set[str] = set()
    for pair in pairs:
        key, sep, value = pair.partition("=")
        param = spec.param(key.strip())
        if not sep or param is None:
            raise Refused(f"--param {pair!r}: {spec.name} takes KEY=VALUE with KEY one of {spec.parameter_words()}")
        if param.name in given:
            raise Refused(f"--param {pair!r}: {param.name} is given twice")
        given.add(param.name)
        params[param.name] = param_value(pair, param, value.strip())
    problems = spec.problems(params) if complete else []
    if problems:
        field, message = problems[0]
        raise Refused(f"{spec.name}: {field} {message}" if field != "(params)" else f"{spec.name}: {message}")
    return params


def param_value(pair: str, param: Param, value: str) -> Any:
    if param.kind is str:
        return value.lower()
    kind = "a whole number" if param.kind is int else "a finite number"
    try:
        if not value.isascii():  # int() and float() also read other scripts' digits
            raise ValueError(value)
        number = param.kind(value)
    except ValueError:
        raise Refused(f"--param {pair!r}: {param.name} must be {kind}") from None
    if not math.isfinite(number):
        raise Refused(f"--param {pair!r}: {param.name} must be {kind}")
    return number
