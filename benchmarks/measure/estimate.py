"""How long a profile takes, from a stated cost model: `python -m benchmarks list` prints it.

The model follows what a run does, step by step, with the harness's own planning (ceiling points,
weight copies, KV-cache budgets, sampling rounds). A call's time is its roofline time on the
machine's reached rates, plus a per-operator cost (added on a CPU; on a GPU, eager launches overlap
the kernels and a graph replay pays per kernel). Each point then costs its warm-up, calibration,
samples and (graph mode) capture with the device sync and cache flush torch.cuda.graph does first;
each configuration its model build; each compiled curve a cold compile and a second one for batch 1
(dynamic shapes still specialise it); each new convolution shape on CUDA one cuDNN autotuning; each
saved sampling round one rewrite of the results file; each sampled batch one kernel-name profiler
session, within the run's budget for them.

Machines: the reference CPU's figures are measured (its committed quick runs); the H200's are the
datasheet's with stated assumptions, each assumed figure a range (`Machine.spans`), so an estimate is a
range too: `estimate_range` and `describe` give its low and high ends, with the assumption behind each
part. Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from benchmarks.gpus import BYTES_PER_ELEMENT, find_gpu
from benchmarks.measure import ceiling_plan, planning
from benchmarks.measure.planning import SAVE_EVERY_S
from benchmarks.profiles import CurvePlan, Profile
from benchmarks.workloads import WORKLOADS, decoder_config
from snippets import costs

GRAPH_WARMUP_CALLS = 3  # CudaBackend.WARMUP_CALLS: calls on the capture stream before each capture
CHECK_S = 0.05  # a configuration's correctness check at toy sizes


@dataclass(frozen=True)
class Machine:
    """The figures the estimate needs about a device, and where they come from."""

    name: str
    kind: str  # "cpu" or "cuda"
    flops_per_s: Mapping[str, float]  # reached matmul rate by dtype
    bytes_per_s: float  # reached memory bandwidth
    op_s: float  # host cost of one eager operator
    graph_op_s: float  # cost of one kernel in a replayed CUDA graph
    capture_s: float  # fixed cost of one graph capture
    compile_s: float  # one cold torch.compile of a curve's model
    profile_s: float  # one kernel-name profiler session
    build_bytes_per_s: float  # weights initialised per second when the models are built
    l2_bytes: int
    memory_bytes: int
    basis: str  # where these figures come from, in a sentence
    modes: tuple[str, ...] = ("eager", "compile")
    recompile_s: float = 0.0  # torch.compile's second compilation, for batch 1 (dynamic shapes specialise it)
    autotune_s: float = 0.0  # cuDNN benchmarking the algorithms of one new convolution shape (CUDA)
    capture_sync_s: float = 0.0  # torch.cuda.graph's device sync and cache flush before each capture
    json_bytes_per_s: float = 20e6  # the results file serialised and written per second
    spans: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # assumed figures: (low, high)

    @property
    def device(self) -> dict[str, int]:
        return {"l2_bytes": self.l2_bytes, "memory_bytes": self.memory_bytes}

    def at(self, end: str) -> Machine:
        """This machine with every assumed figure at the `end` ("low" or "high") of the time it costs."""
        slow = end == "high"
        values = {}
        for name, (a, b) in self.spans.items():
            faster_when_larger = name.endswith("per_s")  # rates: the high end of the time is the low rate
            values[name] = (min(a, b) if faster_when_larger else max(a, b)) if slow else (
                max(a, b) if faster_when_larger else min(a, b))  # fmt: skip
        return replace(self, **values, spans={})

    def rate(self, dtype: str) -> float:
        return self.flops_per_s.get(dtype) or min(self.flops_per_s.values())


REFERENCE_RUN = "benchmarks/results/cpu-amd-epyc/20261130T100333Z-quick-19a50f.json"
REFERENCE_CPU = Machine(
    name="the reference 2-core CPU (AMD EPYC, 1 thread)",
    kind="cpu",
    flops_per_s={"float32": 107.3e9},  # the run's fp32 matmul ceiling
    bytes_per_s=38.4e9,  # the run's copy ceiling
    op_s=3.0e-6,  # the run's 8×64 MLP, eager, batch 1: 48.8 µs for 16 operators
    graph_op_s=0.0,
    capture_s=0.0,
    compile_s=9.3,  # measured on the same machine: a cold compile of a small MLP with dynamic shapes
    profile_s=0.01,  # measured on the same machine: 8 ms per profiler session
    build_bytes_per_s=1.0e9,  # measured on the same machine: fp32 weights initialised at 1.0 GB/s
    l2_bytes=32 * 2**20,
    memory_bytes=25_276_059_648,
    basis=f"ceilings and the 8×64 MLP's eager cost measured in {REFERENCE_RUN}; compile, build and profiler "
    "costs measured on the same machine",
    # measured on the same machine (loaded): batch 1 recompiled in a fifth of the cold compile's time
    recompile_s=1.9,
    json_bytes_per_s=3e6,  # measured on the same machine: a 280 kB results file written in 0.08-0.27 s
    spans={"json_bytes_per_s": (1e6, 4e6)},
)

_H200 = find_gpu("NVIDIA H200")
REACHED_FLOPS = 0.7  # assumed share of the datasheet's dense peak that large GEMMs reach
REACHED_BANDWIDTH = 0.85  # assumed share of the datasheet bandwidth that large copies reach
H200 = Machine(
    name="NVIDIA H200 (datasheet, assumptions)",
    kind="cuda",
    flops_per_s={dtype: REACHED_FLOPS * rate for dtype, rate in _H200.peak_flops.items()},
    bytes_per_s=REACHED_BANDWIDTH * _H200.bandwidth,
    op_s=6e-6,  # assumed: PyTorch's eager cost per operator on a fast host
    graph_op_s=2e-6,  # assumed: one kernel node of a replayed graph
    capture_s=0.005,  # assumed
    compile_s=40.0,  # assumed: a cold torch.compile with Inductor's Triton kernels
    profile_s=0.05,  # assumed: one profiler session with CUPTI
    build_bytes_per_s=100e9,  # assumed: weights initialised on the device
    l2_bytes=_H200.l2_bytes,
    memory_bytes=_H200.memory_bytes,
    basis=f"{REACHED_FLOPS:.0%} of the datasheet's dense FLOP/s and {REACHED_BANDWIDTH:.0%} of its bandwidth; "
    "every other figure assumed, as a range; no H200 run is committed yet",
    modes=("graph", "eager", "compile"),
    recompile_s=10.0,  # assumed: a fifth to a third of the cold compile, as measured on the reference CPU
    autotune_s=0.03,  # assumed: cuDNN times several algorithms of one shape, a few ms each
    capture_sync_s=0.005,  # assumed: a device sync and emptying the allocator's cache (cudaFree of its blocks)
    json_bytes_per_s=15e6,  # assumed: Python's json with indentation (its pure-Python encoder) on a host core
    spans={
        "op_s": (4e-6, 10e-6),
        "graph_op_s": (1.5e-6, 3e-6),
        "capture_s": (0.002, 0.01),
        "compile_s": (25.0, 60.0),
        "recompile_s": (5.0, 20.0),
        "autotune_s": (0.01, 0.08),
        "capture_sync_s": (0.002, 0.015),
        "profile_s": (0.02, 0.1),
        "build_bytes_per_s": (50e9, 200e9),
        "json_bytes_per_s": (5e6, 30e6),
    },
)
MACHINES = {"quick": REFERENCE_CPU, "full": H200, "smoke": REFERENCE_CPU}  # the machine each profile is written for


class _Costs:
    """A workload spec with the adapters' interface (dtype names, not element sizes)."""

    def __init__(self, name: str):
        self.spec = WORKLOADS[name]

    def cost(self, params, dtype, batch):
        return self.spec.cost(params, BYTES_PER_ELEMENT[dtype], batch)

    def weight_bytes(self, params, dtype):
        return self.spec.weight_bytes(params, BYTES_PER_ELEMENT[dtype])


def kv_cache_bytes(params: Mapping[str, Any], dtype: str, batch: int) -> int:
    """The KV cache a decode sweep holds at this batch (what the harness budgets)."""
    positions = params["context"] + (0 if params.get("phase") == "prefill" else 1)
    return costs.kv_cache_bytes(decoder_config(params), batch, positions, BYTES_PER_ELEMENT[dtype])


def call_seconds(machine: Machine, workload: str, params, dtype: str, batch: int, mode: str, copies: int) -> float:
    """One timed call: every weight copy once, at its roofline time plus the operators' cost."""
    flops, bytes_moved = _Costs(workload).cost(params, dtype, batch)
    work = max(flops / machine.rate(dtype), bytes_moved / machine.bytes_per_s)
    ops = WORKLOADS[workload].operators(params)
    if mode == "compile":
        ops = math.ceil(ops / 2)  # fused elementwise operators
    if mode == "graph":
        per_copy = work + ops * machine.graph_op_s
    elif machine.kind == "cuda":
        per_copy = max(work, ops * machine.op_s)  # launches run ahead of the kernels
    else:
        per_copy = work + ops * machine.op_s
    return copies * per_copy


def point_seconds(call: float, samples: int, min_sample_s: float, warmup_s: float) -> float:
    """Warm-up, calibration and samples of one point, as the sampler takes them."""
    warmup = max(warmup_s, 2 * call) + call / 2
    calibration, inner = 0.0, 1
    while True:
        calibration += call * inner
        if call * inner >= min_sample_s / 4 or inner >= 100_000:
            break
        inner *= 8
    sample = max(min_sample_s, call)
    return warmup + calibration + samples * sample


@dataclass
class Estimate:
    machine: Machine
    parts: dict[str, float] = field(default_factory=dict)  # what each part of the run costs, seconds
    points: int = 0

    @property
    def total_s(self) -> float:
        return sum(self.parts.values())

    def add(self, part: str, seconds: float) -> None:
        self.parts[part] = self.parts.get(part, 0.0) + seconds


def estimate_ceilings(
    machine: Machine, profile: Profile, dtypes: list[str], ceilings_only: bool = False, rounds: int | None = None
) -> float:
    """The ceilings' time: their curves and the points predictions use, or (`ceilings_only`) those points
    alone in the run's own dtypes; `rounds` samples each (default: the profile's)."""
    kind, rounds, min_sample_s = machine.kind, rounds or profile.rounds, profile.min_sample_s
    matmul_dtypes = list(ceiling_plan.CUDA_MATMUL_DTYPES) if kind == "cuda" else sorted({"float32", *dtypes})
    if ceilings_only:
        matmul_dtypes = sorted(set(dtypes))
    free = machine.memory_bytes if kind == "cuda" else None
    plan = ceiling_plan.plan_ceilings(kind, matmul_dtypes, free, profile.small_ceilings, ceilings_only)
    total = 0.0
    for curve, size, is_ceiling in plan.points():
        if curve == "copy":
            repeats = ceiling_plan.copy_repeats(size, kind)
            call = 2 * size * repeats / machine.bytes_per_s + repeats * machine.graph_op_s
        elif curve == "read":
            call = size * ceiling_plan.read_repeats(size, kind) / machine.bytes_per_s
        else:
            call = 2 * size**3 / machine.rate(curve[1])
        samples, sample_s = (rounds, min_sample_s) if is_ceiling else (max(5, rounds // 2), min_sample_s / 2)
        total += point_seconds(call, samples, sample_s, ceiling_plan.WARMUP_S)
        if kind == "cuda":
            total += (GRAPH_WARMUP_CALLS + 1) * call + machine.capture_s
    return total


def _kv_budgets(sweeps: list[CurvePlan], machine: Machine) -> dict[tuple[int, str], float]:
    wants = {
        (i, dtype): kv_cache_bytes(s.params, dtype, max(s.batches))
        for i, s in enumerate(sweeps)
        if s.workload == "decode"
        for dtype in s.dtypes
    }
    free = 0.8 * machine.memory_bytes  # assumed: what is left once every other configuration is set up
    return planning.share_memory(wants, planning.KV_MEMORY_SHARE * free)


def estimate(
    profile: Profile,
    machine: Machine,
    sweeps: list[CurvePlan] | None = None,
    cache: str = "rotated",
    ceilings: bool = True,
) -> Estimate:
    """The estimated wall time of `profile` (or of these of its sweeps) on `machine`, by part;
    without the ceilings when they are already measured."""
    sweeps = list(profile.sweeps if sweeps is None else sweeps)
    found = Estimate(machine)
    dtypes = sorted({d for s in sweeps for d in s.dtypes})
    if ceilings:
        found.add("ceilings", estimate_ceilings(machine, profile, dtypes))
    budgets = _kv_budgets(sweeps, machine)
    kernel_sessions, tuned, samples, sampling_s = 0, 0, 0, 0.0
    for index, sweep in enumerate(sweeps):
        settings = profile.settings(sweep)
        workload = _Costs(sweep.workload)
        modes = [m for m in sweep.modes if m in machine.modes]
        for dtype in sweep.dtypes:
            copies = planning.copies_by_batch(
                workload, sweep, dtype, sweep.cache or cache, machine.device, sweep.batches
            )
            budget = budgets.get((index, dtype))
            if budget is not None:
                copies = {b: n for b, n in copies.items() if kv_cache_bytes(sweep.params, dtype, b) <= budget}
            if not copies:
                continue
            weights = workload.weight_bytes(sweep.params, dtype)
            found.add("building models", CHECK_S + weights * max(copies.values()) / machine.build_bytes_per_s)
            for mode in modes:
                if mode == "compile":
                    found.add("torch.compile", machine.compile_s + (machine.recompile_s if 1 in copies else 0.0))
                for batch, n in copies.items():
                    call = call_seconds(machine, sweep.workload, sweep.params, dtype, batch, mode, n)
                    seconds = point_seconds(call, settings["rounds"], settings["min_sample_s"], settings["warmup_s"])
                    found.add(sweep.workload, seconds)
                    found.points += 1
                    samples += settings["rounds"]
                    sampling_s += settings["rounds"] * max(settings["min_sample_s"], call)
                    if mode == "graph":
                        capture = (GRAPH_WARMUP_CALLS + 1) * call + machine.capture_s + machine.capture_sync_s
                        found.add("graph captures", capture)
            if machine.kind == "cuda" and sweep.workload in CONV_SHAPES:
                tuned += CONV_SHAPES[sweep.workload] * len(copies)
            kernel_sessions += len(sweep.kernel_batches & set(copies))
    if kernel_sessions:
        found.add("kernel names", min(planning.KERNEL_NAMES_BUDGET_S, kernel_sessions * machine.profile_s))
    if tuned:
        found.add("cuDNN autotuning", tuned * machine.autotune_s)
    if found.points:
        found.add("results file", results_file_seconds(machine, found.points, samples, sampling_s))
    return found


# Distinct convolution shapes one call of a configuration runs at one batch size: cuDNN benchmarks
# each new one once (snippets/cnn.py's cudnn.benchmark). ResNet-50 v1.5: the stem, 4 in its first
# stage and 6 in each later one (the strided 3×3 and the strided projection among them).
CONV_SHAPES = {"conv": 1, "resnet50": 23}
RECORD_BYTES = 800  # a record without its samples, indented as the file is written (the reference run: 800)
SAMPLE_BYTES = 26  # one sample in the file


def results_file_seconds(machine: Machine, points: int, samples: int, sampling_s: float) -> float:
    """Rewrites of the results file while sampling: the first round, then one every SAVE_EVERY_S of
    sampling, then the final writes (after sampling and after the kernel names), each of the whole file."""
    size = points * RECORD_BYTES + samples * SAMPLE_BYTES
    writes = 1 + sampling_s // SAVE_EVERY_S + 3
    return writes * size / machine.json_bytes_per_s


def estimate_range(profile: Profile, machine: Machine, **options) -> tuple[Estimate, Estimate]:
    """The estimate at the low and the high end of every assumed figure of `machine`."""
    return estimate(profile, machine.at("low"), **options), estimate(profile, machine.at("high"), **options)


def _span(machine: Machine, name: str, unit: str, scale: float = 1.0) -> str:
    low, high = machine.spans.get(name, (getattr(machine, name),) * 2)
    low, high = sorted((low * scale, high * scale))
    text = f"{low:g}" if low == high else f"{low:g}–{high:g}"
    return f"{text} {unit}" + (" assumed" if name in machine.spans else "")


def assumptions(machine: Machine) -> dict[str, str]:
    """The assumption behind each part of an estimate, in a phrase."""
    m = machine
    per_point = (
        f"warm-up, calibration and samples; a call at its roofline time on the reached rates plus "
        f"{_span(m, 'op_s', 'µs', 1e6)} per eager operator"
        + (f" or {_span(m, 'graph_op_s', 'µs', 1e6)} per graph node" if "graph" in m.modes else "")
    )
    parts = {name: per_point for name in WORKLOADS}
    parts.update({
        "ceilings": "the ceiling plan's points at the reached rates, each warmed up, calibrated, sampled"
        + (" and captured" if "graph" in m.modes else ""),
        "graph captures": f"per capture: {GRAPH_WARMUP_CALLS} warm-up calls and the captured one, "
        f"{_span(m, 'capture_s', 'ms', 1e3)} to capture, {_span(m, 'capture_sync_s', 'ms', 1e3)} for the device "
        "sync and cache flush torch.cuda.graph does first",
        "torch.compile": f"per compiled configuration: a cold compile, {_span(m, 'compile_s', 's')}, and batch 1's "
        f"own, {_span(m, 'recompile_s', 's')}",
        "cuDNN autotuning": f"per new convolution shape (layer × batch): {_span(m, 'autotune_s', 'ms', 1e3)}",
        "kernel names": f"one profiler session per sampled batch, {_span(m, 'profile_s', 'ms', 1e3)}, at most "
        f"{planning.KERNEL_NAMES_BUDGET_S:.0f} s",
        "building models": f"weights initialised at {_span(m, 'build_bytes_per_s', 'GB/s', 1e-9)}, and a "
        f"correctness check of {CHECK_S * 1e3:.0f} ms per configuration",
        "results file": f"rewritten after the first round, every {SAVE_EVERY_S:.0f} s of sampling and at the "
        f"end; {RECORD_BYTES} bytes a record and {SAMPLE_BYTES} a sample, written at "
        f"{_span(m, 'json_bytes_per_s', 'MB/s', 1e-6)}",
    })  # fmt: skip
    return parts


def describe(found: Estimate | tuple[Estimate, Estimate], machine: Machine | None = None) -> list[str]:
    """Lines for a terminal: the total, then each part with the assumption behind it. Given a (low, high)
    pair from `estimate_range`, each figure is a range."""
    low, high = found if isinstance(found, tuple) else (found, found)
    machine = machine or low.machine

    def span(a: float, b: float, unit: str, digits: int = 0) -> str:
        a_text, b_text = f"{a:.{digits}f}", f"{b:.{digits}f}"
        return f"{b_text} {unit}" if a_text == b_text else f"{a_text}–{b_text} {unit}"

    lines = [f"estimated {span(low.total_s / 60, high.total_s / 60, 'min', 1)} on {machine.name} "
             f"({low.points} points)"]  # fmt: skip
    why = assumptions(machine)
    for part in sorted(high.parts, key=lambda p: -high.parts[p]):
        sampling = part in WORKLOADS
        lines.append(f"  {part:<17} {span(low.parts.get(part, 0.0), high.parts[part], 's'):>9}  "
                     + ("sampling its points (see below)" if sampling else why[part]))  # fmt: skip
    lines.append(f"  (each point: {why['mlp']})")
    lines.append(f"  (cost model: {machine.basis})")
    return lines


MIN_SAMPLES = 3  # per point: fewer and a median says little


def machine_from_ceilings(kind: str, ceilings: Mapping[str, Any], device: Mapping[str, Any]) -> Machine:
    """The machine a run just measured: its own ceilings, the other costs of its kind's reference."""
    base = REFERENCE_CPU if kind == "cpu" else H200
    rates = {dtype: entry["flops_per_s"] for dtype, entry in ceilings["matmul"].items()}
    return replace(
        base,
        name=f"this {kind.upper() if kind == 'cuda' else kind} (its measured ceilings)",
        flops_per_s=rates or base.flops_per_s,
        bytes_per_s=ceilings["copy"]["bytes_per_s"],
        l2_bytes=device.get("l2_bytes") or base.l2_bytes,
        memory_bytes=device.get("memory_bytes") or base.memory_bytes,
        basis=f"the run's measured ceilings; other costs as for {base.name}",
    )


def _thinned(batches: tuple[int, ...]) -> tuple[int, ...]:
    """Every second batch size, keeping the first and the last."""
    if len(batches) <= 3:
        return batches
    kept = batches[::2]
    return kept if kept[-1] == batches[-1] else (*kept, batches[-1])


def fit_to_time(
    profile: Profile, sweeps: list[CurvePlan], machine: Machine, seconds: float, cache: str = "rotated"
) -> tuple[list[CurvePlan], str | None]:
    """Sweeps whose estimated time (ceilings excluded) fits in `seconds`: fewer samples per point
    first (down to MIN_SAMPLES), then fewer points (every second batch size, as often as needed).
    Returns them with a sentence saying what was cut (None when nothing was)."""

    def cost(candidate):
        return estimate(profile, machine, candidate, cache, ceilings=False).total_s

    planned = cost(sweeps)
    if planned <= seconds:
        return sweeps, None
    rounds = {id(s): profile.settings(s)["rounds"] for s in sweeps}
    current, scale = sweeps, 1.0
    while cost(current) > seconds and any(profile.settings(s)["rounds"] > MIN_SAMPLES for s in current):
        scale *= 0.8
        current = [replace(s, rounds=max(MIN_SAMPLES, math.floor(rounds[id(s)] * scale))) for s in sweeps]
    thinned = 0
    while cost(current) > seconds and any(len(s.batches) > 3 for s in current):
        current = [replace(s, batches=_thinned(s.batches)) for s in current]
        thinned += 1
    left = cost(current)
    before = max(rounds.values())
    after = max(profile.settings(s)["rounds"] for s in current)
    note = f"to fit {seconds:.0f} s (estimated {planned:.0f} s): at most {after} samples per point instead of {before}"
    if thinned:
        note += f", every second batch size dropped {thinned} time(s)"
    if left > seconds:
        note += f"; still estimated at {left:.0f} s, so sampling stops when the time is up"
    return current, note


def least_sweeps(sweeps: list[CurvePlan]) -> list[CurvePlan]:
    """The least a run can measure of these sweeps: MIN_SAMPLES per point, at most 3 batch sizes per curve."""
    least = []
    for sweep in sweeps:
        batches = sweep.batches
        while len(batches) > 3:
            batches = _thinned(batches)
        least.append(replace(sweep, rounds=MIN_SAMPLES, batches=batches))
    return least


@dataclass(frozen=True)
class TimeBudget:
    """How a time limit is spent, planned before any work by the cost model of the device's kind."""

    least_s: float  # the smallest useful limit: the ceilings' own points and the least of the cheapest curve
    every_s: float  # the least of every curve: below it, sampling stops when the time is up and later points wait
    least_ceilings_s: float  # the ceilings' own points, MIN_SAMPLES each
    full_ceilings_s: float  # the ceilings with their curves, as the profile takes them
    machine: Machine

    def curves_fit(self, limit_s: float) -> bool:
        """Whether the ceilings' curves fit: they may take at most CEILING_CURVES_SHARE of the limit."""
        return self.full_ceilings_s <= CEILING_CURVES_SHARE * limit_s


CEILING_CURVES_SHARE = 0.5  # of a time limit, the most the ceilings with their curves may take
LEAST_MARGIN = 1.25  # the smallest useful limit: the cost model's least run, with this much to spare


def time_budget(profile: Profile, sweeps: list[CurvePlan], kind: str, cache: str = "rotated") -> TimeBudget:
    """The least time a run of these sweeps on a device of this kind can usefully have, by the cost model
    of the machine that kind is written for (the reference CPU, or the H200's datasheet)."""
    machine = REFERENCE_CPU if kind == "cpu" else H200
    dtypes = sorted({d for s in sweeps for d in s.dtypes})
    least_ceilings = estimate_ceilings(machine, profile, dtypes, ceilings_only=True, rounds=MIN_SAMPLES)
    each = [estimate(profile, machine, [sweep], cache, ceilings=False).total_s for sweep in least_sweeps(sweeps)]
    every = estimate(profile, machine, least_sweeps(sweeps), cache, ceilings=False).total_s
    return TimeBudget(
        LEAST_MARGIN * (least_ceilings + min(each, default=0.0)),
        LEAST_MARGIN * (least_ceilings + every),
        least_ceilings,
        estimate_ceilings(machine, profile, dtypes),
        machine,
    )


SWEEP_CEILINGS = Profile(name="sweep", description="a model sweep's ceilings", sweeps=(), rounds=5, min_sample_s=0.02)


def least_sweep_s(kind: str, dtype: str) -> float:
    """The smallest useful time limit of a model sweep: its ceilings (one copy, one matmul in its dtype, as
    `sweep` measures them) by the cost model of the machine that kind is written for, with margin, and as
    long again for the model's first batches (a model's own cost is unknown before it runs)."""
    machine = REFERENCE_CPU if kind == "cpu" else H200
    return 2 * LEAST_MARGIN * estimate_ceilings(machine, SWEEP_CEILINGS, [dtype], ceilings_only=True)
