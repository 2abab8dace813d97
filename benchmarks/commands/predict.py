"""`python -m benchmarks predict WORKLOAD`: the roofline of any workload the project knows, on a datasheet GPU
or on the ceilings a committed run measured. Nothing is measured.

Every refusal (an unknown name, a value out of range, a configuration that cannot exist) is one line on
stderr and exit status 2. Pure Python: nothing here imports torch.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.analysis.roofline import training
from benchmarks.analysis.roofline.cost_model import ALLREDUCE_LATENCY_S, FUSED, FUSION_WORDS, FUSIONS
from benchmarks.analysis.roofline.predict import (
    COMMUNICATION,
    PredictedPoint,
    RidgeCount,
    footprint_bytes,
    predict,
    ridge_counts,
)
from benchmarks.analysis.roofline.roofline_model import run_ceilings
from benchmarks.commands.arguments import whole_numbers
from benchmarks.commands.choices import Refused, check_rate, dtype_named, gpu_chosen, workload_named, workload_params
from benchmarks.contract.results import ResultsError, read_run
from benchmarks.gpus import BYTES_PER_ELEMENT, Ceilings, Interconnect
from benchmarks.site import text
from benchmarks.site.forecasts import CEILING_WORDS, efficiency_words, forecast_json, forecast_s
from benchmarks.workloads import WORKLOADS, Workload

MAX_BATCH = 2**24
MODEL = "time per call = max(FLOPs / peak FLOP/s, bytes / bandwidth): no fixed cost per call, perfect overlap"
MODEL_PER_OPERATION = (
    "time per call = the matmuls' max(FLOPs / peak FLOP/s, bytes / bandwidth) plus the attention's, run one after "
    "the other: no fixed cost per call, perfect overlap within each"
)


@dataclass(frozen=True)
class Device:
    name: str
    ceilings: Ceilings
    memory_bytes: float | None
    origin: str  # "datasheet" or "measured"
    source: str
    gpu: bool = True  # a GPU (a datasheet's, or a run measured on CUDA); False for a CPU run
    memory_from: str = "the run's device"  # where memory_bytes comes from: driver, datasheet or the run's device
    l2_bytes: float | None = None  # a datasheet GPU's L2, where fused activations may stay
    interconnect: Interconnect | None = None  # a datasheet GPU's link for tensor parallelism


@dataclass(frozen=True)
class Deployment:
    """How the call runs, beyond the registry's count: a CNN's fusion, a decoder's cache dtype and its GPUs."""

    fusion: str | None = None  # None: the registry's count (no per-kernel operations)
    kv_dtype: str | None = None
    tensor_parallel: int = 1

    @property
    def counted(self) -> bool:
        return self.fusion is not None or self.kv_dtype is not None or self.tensor_parallel > 1


def parameters_help() -> str:
    """Every workload's parameters with their defaults and allowed values, for --help."""
    lines = ["parameters (--param KEY=VALUE), with their defaults and allowed values:"]
    for spec in WORKLOADS.values():
        lines.append(f"  {spec.name}:")
        lines += [f"    {p.name}={p.default}  ({p.allowed()}) {p.description}" for p in spec.params]
    return "\n".join(lines)


def add_parser(commands) -> None:
    names = ", ".join(WORKLOADS)
    predict_cmd = commands.add_parser(
        "predict",
        help="predict a workload's time against batch on a datasheet GPU or a run's measured ceilings",
        description="The roofline of one workload configuration at the batch sizes given: time, throughput, FLOPs, "
        "bytes, what bounds each call, whether the weights (and a decode's KV cache) fit in the device's memory, the "
        "ridge batch (where compute time overtakes memory time). On a GPU the answer is the forecast: the roofline's "
        "operations divided by the efficiencies fitted to published figures of the same kind of work, with the error "
        "those figures showed when each was forecast without its own source (benchmarks/published/calibration.json), "
        "the ceiling beside it; --ceiling gives the bare roofline. "
        f"WORKLOAD is one of {names}; each parameter not given keeps its default. WORKLOAD llm:MODEL (or llm:custom "
        "with --param sizes) gives a language model's decode step per batch, from the step model `serve llm:` "
        "schedules, with --context tokens cached per sequence. Nothing is measured.",
        epilog=parameters_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    predict_cmd.add_argument(
        "workload",
        metavar="WORKLOAD",
        help=f"one of {names}, or llm:MODEL (a language model named as for `serve llm:`)",
    )
    device = predict_cmd.add_mutually_exclusive_group(required=True)
    device.add_argument("--gpu", metavar="NAME", help='a datasheet GPU, e.g. "H100 SXM" (any case)')
    device.add_argument("--run", metavar="PATH", help="a results file: use the ceilings it measured")
    predict_cmd.add_argument("--dtype", required=True, metavar="DTYPE", help=f"one of {', '.join(BYTES_PER_ELEMENT)}")
    predict_cmd.add_argument("--batch", required=True, metavar="B[,B...]", help="batch sizes, e.g. 1,8,64")
    predict_cmd.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE", help="a workload parameter, e.g. width=4096"
    )
    predict_cmd.add_argument(
        "--fusion",
        metavar="HOW",
        help="resnet50: fused (conv, BatchNorm, ReLU and residual add in one pass, activations kept in L2 while they "
        "fit; the default with --gpu, as inference engines deploy it) or eager (every elementwise pass through "
        "memory, as eager PyTorch runs it; the default with --run)",
    )
    predict_cmd.add_argument("--kv-dtype", metavar="DTYPE", help="decode: the KV cache's dtype (default: --dtype's)")
    predict_cmd.add_argument(
        "--tp",
        metavar="N",
        help="decode with --gpu: tensor parallel over N GPUs, each doing 1/N of the work, plus two ring all-reduces "
        "a layer over the GPU's NVLink (PCIe where it has none), shown as the operation 'communication' (default 1)",
    )
    predict_cmd.add_argument(
        "--context",
        metavar="N",
        help="llm:MODEL: tokens cached per sequence before the step (default 2,048, below the model's context)",
    )
    predict_cmd.add_argument(
        "--ceiling", action="store_true", help="give the bare roofline (the ceiling), without the calibrated forecast"
    )
    predict_cmd.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def run(args: argparse.Namespace) -> int:
    if args.workload.strip().lower().startswith("llm:"):
        from benchmarks.commands import predict_llm  # numpy's simulator: not on the measuring verbs' import path

        step, batches, context = predict_llm.request(args)
        found = predict_llm.report(step, batches, context, ceiling_only=args.ceiling)
        print(
            json.dumps(found, indent=1, ensure_ascii=False) if args.json else "\n".join(predict_llm.table_lines(found))
        )
        return 0
    if args.context is not None:
        raise Refused("--context is for llm:MODEL; a workload takes --param context=N")
    spec = workload_named(args.workload)  # a refusal anywhere here is main's one line
    params = workload_params(spec, args.param)
    dtype = dtype_named(args.dtype)
    batches = parse_batches(args.batch)
    device = gpu_device(args.gpu, dtype) if args.gpu is not None else run_device(args.run, dtype)
    deployment = read_deployment(args, spec, device)
    found = report(spec, params, dtype, device, batches, deployment, ceiling_only=args.ceiling)
    print(json.dumps(found, indent=1, ensure_ascii=False) if args.json else "\n".join(table_lines(found)))
    return 0


# --------------------------------------------------------------------------- reading the request


def parse_batches(listed: str) -> list[int]:
    return whole_numbers(listed, "--batch", 1, MAX_BATCH)


def gpu_device(name: str, dtype: str) -> Device:
    gpu = gpu_chosen(name)
    check_rate(gpu, dtype)
    return Device(gpu.name, gpu.ceilings(dtype), gpu.memory_bytes, "datasheet", gpu.source, True, gpu.memory_from,
                  gpu.l2_bytes, gpu.interconnect)  # fmt: skip


def read_deployment(args: argparse.Namespace, spec: Workload, device: Device) -> Deployment:
    """--fusion, --kv-dtype and --tp, checked against the workload and the device."""
    fusion = None
    if args.fusion is not None:
        fusion = args.fusion.strip().lower()
        if spec.name != "resnet50":
            raise Refused(f"--fusion is for resnet50, not {spec.name}")
        if fusion not in FUSIONS:
            raise Refused(f"--fusion {args.fusion!r}: choose from {', '.join(FUSIONS)}")
    elif spec.name == "resnet50" and device.origin == "datasheet":
        fusion = FUSED  # a GPU prediction: as deployed; a run's own ceilings keep the eager count its runs measure
    kv_dtype = None
    if args.kv_dtype is not None:
        if spec.name != "decode":
            raise Refused(f"--kv-dtype is for decode, not {spec.name}")
        kv_dtype = dtype_named(args.kv_dtype)
    tp = 1
    if args.tp is not None:
        text = args.tp.strip()
        if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 64:
            raise Refused(f"--tp {args.tp!r}: give a whole number from 1 to 64")
        tp = int(text)
        if tp > 1 and spec.name != "decode":
            raise Refused(f"--tp is for decode, not {spec.name}")
        if tp > 1 and device.interconnect is None:
            raise Refused("--tp needs a datasheet GPU (--gpu), whose entry names the link its all-reduces cross")
    return Deployment(fusion, kv_dtype, tp)


def run_device(given: str, dtype: str) -> Device:
    path = Path(given)
    if not given.strip() or path.is_dir():
        raise Refused(f"--run {given!r}: give one results file, e.g. benchmarks/results/<device>/<run>.json")
    try:
        measured = read_run(path, layout=False)
    except ResultsError as exc:
        raise Refused(str(exc)) from None
    ceilings = run_ceilings(measured.ceilings, dtype)
    if ceilings is None:
        have = ", ".join(measured.ceilings.get("matmul", {})) or "no dtype"
        raise Refused(f"{path}: run {measured.id} measured no {dtype} matmul rate (it measured {have})")
    name = text.device_label(measured)
    origin = f"run {measured.id} ({path})"
    gpu = measured.device.get("kind") == "cuda"
    return Device(name, ceilings, measured.device.get("memory_bytes"), "measured", origin, gpu)


# --------------------------------------------------------------------------- the answer


def _point(
    name: str,
    params: dict[str, Any],
    dtype: str,
    device: Device,
    point: PredictedPoint,
    forecast: bool,
    deployment: Deployment = Deployment(),
) -> dict[str, Any]:
    if training.is_training(name):
        return _training_point(name, params, dtype, device, point)
    held = footprint_bytes(name, params, dtype, point.batch, deployment.kv_dtype)
    memory = None if device.memory_bytes is None else device.memory_bytes * deployment.tensor_parallel
    seconds = forecast_s(point, name, dtype) if forecast else None
    found = {
        "batch": point.batch,
        "seconds": point.seconds,
        "forecast_seconds": seconds,
        "throughput": point.batch / point.seconds,
        "forecast_throughput": point.batch / seconds if seconds else None,
        "flops": point.flops,
        "bytes": point.bytes,
        "bound": point.bound,
        "fits": None if memory is None else held <= memory,
    }
    if deployment.counted:
        found["operations"] = [
            {"name": op.name, "seconds": op.seconds, "bound": op.bound, "detail": op.detail} for op in point.operations
        ]
    return found


def _training_point(name: str, params: dict[str, Any], dtype: str, device: Device, point: PredictedPoint) -> dict:
    """A training step's point: its time by phase, with checkpointing, the memory it holds and whether it fits."""
    step = training.PredictedStep(point, params.get("seq", 1), name == "train-decoder")
    held = training.memory(name, params, dtype)
    memory_bytes = {"full": held.total(point.batch), "checkpointed": held.total(point.batch, checkpointed=True)}
    fits = {k: None if device.memory_bytes is None else v <= device.memory_bytes for k, v in memory_bytes.items()}
    return {
        "batch": point.batch,
        "seconds": step.seconds,
        "label": training.LABEL,
        "phases_seconds": step.phases,
        "checkpointed_seconds": step.checkpointed_seconds,
        "expected_seconds": None,
        "throughput": step.throughput,
        "flops": point.flops,
        "bytes": point.bytes,
        "bound": point.bound,
        "memory_bytes": memory_bytes,
        "fits": fits["full"],
        "fits_checkpointed": fits["checkpointed"],
    }


def training_summary(spec: Workload, params: dict[str, Any], dtype: str, device: Device) -> dict[str, Any]:
    """What a training step holds whatever the batch, the activations per sample and the largest batch that fits."""
    held = training.memory(spec.name, params, dtype)
    largest = {
        kind: None if device.memory_bytes is None else held.largest_batch(device.memory_bytes, kind == "checkpointed")
        for kind in ("full", "checkpointed")
    }
    return {
        "label": training.LABEL,
        "held_bytes": dict(held.held),
        "activation_bytes_per_sample": {"full": held.per_sample, "checkpointed": held.per_sample_checkpointed},
        "activations_counted": "the tensors autograd keeps for the backward, counted by hand per layer (checked "
        "against saved_tensors_hooks on small models); workspace and the framework's own memory are not counted",
        "largest_batch": largest,
        "ridge_batch": training.ridge_batch(spec.name, params, device.ceilings, dtype),
        "checkpointing": "every layer checkpointed: the backward reruns each layer's forward (one more forward)"
        if spec.name == "train-decoder"
        else "the MLP keeps only each layer's input: checkpointing drops nothing",
    }


def throughput_unit(spec: Workload, params: dict[str, Any]) -> str:
    return "prompts/s" if params.get("phase") == "prefill" else spec.unit.rate


def report(
    spec: Workload,
    params: dict[str, Any],
    dtype: str,
    device: Device,
    batches: list[int],
    deployment: Deployment = Deployment(),
    ceiling_only: bool = False,
) -> dict[str, Any]:
    """The prediction as one JSON-ready object: the assumptions once, a point per batch (the ceiling's time and,
    on a GPU, the forecast's), the ridge batch under the stated count of bytes (and the other bound of them where
    there is one), and the forecast's efficiencies and expected error, or why there is no forecast."""
    points = predict(
        spec.name,
        params,
        device.ceilings,
        dtype,
        batches,
        fusion=deployment.fusion,
        l2_bytes=device.l2_bytes,
        kv_dtype=deployment.kv_dtype,
        tensor_parallel=deployment.tensor_parallel,
        interconnect=device.interconnect,
    )
    forecast = device.gpu and not ceiling_only and not training.is_training(spec.name)
    held = "the weights plus the KV cache" if spec.name == "decode" else "the weights"
    assumptions = {
        "workload": spec.name,
        "configuration": spec.shape(params),
        "params": params,
        "dtype": dtype,
        "bytes_per_element": BYTES_PER_ELEMENT[dtype],
        "device": device.name,
        "ceilings_from": device.origin,
        "flops_per_s": device.ceilings.flops_per_s,
        "bytes_per_s": device.ceilings.bytes_per_s,
        "memory_bytes": device.memory_bytes,
        "memory_from": device.memory_from,
        "source": device.source,
        "model": model_words(spec, deployment),
        "bytes_counted": FUSION_WORDS[deployment.fusion] if deployment.fusion else spec.bytes_counted,
        "throughput_unit": throughput_unit(spec, params),
        "fits_counts": f"{held}, against the device's memory",
    }
    if deployment.counted:
        assumptions["deployment"] = deployment_json(deployment, dtype, device)
    counts = ridge_counts(spec.name, params, device.ceilings, dtype)
    if forecast:
        calibrated = {**forecast_json(spec.name, params, dtype, deployment.tensor_parallel),
                      "efficiency_words": efficiency_words(spec.name, dtype)}  # fmt: skip
    else:
        why = CEILING_WORDS if ceiling_only else "the published figures are GPU systems, this is a CPU run"
        if training.is_training(spec.name) and not ceiling_only:
            why = "no published training figure calibrates a training step; this is its ceiling"
        calibrated = {"kind": None, "efficiency": None, "expected_error": None, "words": f"no forecast: {why}"}
    found = {
        "answer": "forecast" if forecast else "ceiling",
        "assumptions": assumptions,
        "points": [_point(spec.name, params, dtype, device, p, forecast, deployment) for p in points],
        "ridge_batch": [{"count": c.count, "batch": c.batch, "on_ridge": c.on_ridge} for c in counts],
        "forecast": calibrated,
    }
    if training.is_training(spec.name):
        assumptions["label"] = training.LABEL
        assumptions["model"] = (
            "time per step = the sum over its phases (forward, input gradient, weight gradient, optimizer) of each "
            "phase's max(FLOPs / peak FLOP/s, bytes / bandwidth): no fixed cost per call, perfect overlap within a "
            "phase; a ceiling, not a forecast"
        )
        assumptions["fits_counts"] = (
            "weights, gradients, optimizer state and the activations of the batch, against the device's memory"
        )
        found["training"] = training_summary(spec, params, dtype, device)
    return found


def model_words(spec: Workload, deployment: Deployment) -> str:
    if deployment.fusion is not None:
        return (
            "time per call = the sum over its kernels of max(FLOPs / peak FLOP/s, bytes / bandwidth), one after the "
            "other: no fixed cost per call, perfect overlap within each"
        )
    words = MODEL_PER_OPERATION if spec.operations else MODEL
    if deployment.tensor_parallel > 1:
        words += (
            f"; over {deployment.tensor_parallel} GPUs, each doing 1/{deployment.tensor_parallel} of the work, plus "
            "the all-reduces (communication)"
        )
    return words


def deployment_json(deployment: Deployment, dtype: str, device: Device) -> dict[str, Any]:
    found: dict[str, Any] = {"fusion": deployment.fusion, "kv_dtype": deployment.kv_dtype or dtype,
                             "tensor_parallel": deployment.tensor_parallel}  # fmt: skip
    if deployment.fusion is not None:
        found["l2_bytes"] = device.l2_bytes
    if deployment.tensor_parallel > 1 and device.interconnect is not None:
        link = device.interconnect
        found["interconnect"] = {"name": link.name, "bidirectional_bytes_per_s": link.bidirectional_bytes_per_s,
                                 "source": link.source}  # fmt: skip
        found["allreduce_latency_s"] = {"value": ALLREDUCE_LATENCY_S.value, "what": ALLREDUCE_LATENCY_S.what,
                                        "source": ALLREDUCE_LATENCY_S.source}  # fmt: skip
    return found


def deployment_lines(found: dict[str, Any]) -> list[str]:
    """What the deployed count adds to the table: the share of the step on the link, and which kernels keep their
    activations in L2."""
    a = found["assumptions"]
    d = a.get("deployment")
    if not d:
        return []
    lines = []
    if d["tensor_parallel"] > 1:
        link = d["interconnect"]
        lines.append(
            f"communication: 2 ring all-reduces a layer over {link['name']} "
            f"({text.fmt_rate(link['bidirectional_bytes_per_s'], 'B/s')} both ways; {link['source']}), each with "
            f"{d['allreduce_latency_s']['value'] * 1e6:g} µs of latency ({d['allreduce_latency_s']['source']})"
        )
        for p in found["points"]:
            link_s = sum(op["seconds"] for op in p["operations"] if op["name"] == COMMUNICATION)
            lines.append(
                f"  at batch {p['batch']:,}: communication {text.fmt_time(link_s)}, {link_s / p['seconds']:.0%} of it"
            )
    if d["fusion"] == FUSED:
        for p in found["points"]:
            kept = [op for op in p["operations"] if "to L2" in op["detail"]]
            lines.append(
                f"  at batch {p['batch']:,}: {len(kept)} of {len(p['operations'])} kernels keep their output in L2 "
                f"({text.fmt_bytes(d['l2_bytes'])}); --json says where each kernel's tensors live"
            )
    return lines


def table_lines(found: dict[str, Any]) -> list[str]:
    """The assumptions stated once, then one row per batch: the forecast beside the ceiling on a GPU."""
    a = found["assumptions"]
    memory = text.fmt_bytes(a["memory_bytes"]) if a["memory_bytes"] else "unknown"
    ceilings = (
        f"{text.fmt_rate(a['flops_per_s'], 'FLOP/s')} {a['dtype']}, {text.fmt_rate(a['bytes_per_s'], 'B/s')}, "
        f"{memory} of memory ({a['memory_from']})"
    )
    forecast = found["answer"] == "forecast"
    if a.get("label") == training.LABEL:
        what = "Ceiling (roofline), not measured"
    else:
        what = "Forecast, not measured" if forecast else "Ceiling (the roofline), not measured"
    lines = [
        f"{what}: {a['configuration']} in {a['dtype']} on {a['device']} ({a['ceilings_from']})",
        f"  ceilings: {ceilings} ({a['source']})",
        f"  model: {a['model']}",
        f"  bytes counted ({a['bytes_per_element']:g} per element): {a['bytes_counted']}",
        f"  fits: {a['fits_counts']}",
        "  params: " + ", ".join(f"{k}={v}" for k, v in a["params"].items()),
    ]
    if forecast:
        lines.append(f"  forecast: {found['forecast']['efficiency_words']}")
    lines.append(f"  {found['forecast']['words']}")
    lines += ["", f"{'batch':>10} {'forecast':>10} {'ceiling':>10} {'throughput':>16} {'FLOPs':>10} {'bytes':>10}  "
              f"{'bound':<8} fits"]  # fmt: skip
    for p in found["points"]:
        fits = {True: "yes", False: "no", None: "?"}[p["fits"]]
        seconds = p["forecast_seconds"] if forecast else p["seconds"]
        rate = f"{text.sig(p['batch'] / seconds)} {a['throughput_unit']}"
        told = text.fmt_time(p["forecast_seconds"]) if forecast else "–"
        lines.append(
            f"{p['batch']:>10,} {told:>10} {text.fmt_time(p['seconds']):>10} {rate:>16} {p['flops']:>10.3g} "
            f"{text.fmt_bytes(p['bytes']):>10}  {p['bound']:<8} {fits}"
        )
    if "training" in found:  # the first seven lines: what is predicted, on what, how; then the step's own rows
        return lines[:7] + training_lines(found)
    lines += deployment_lines(found)
    stated, *others = [RidgeCount(c["count"], c["batch"], c["on_ridge"]) for c in found["ridge_batch"]]
    lines.append(f"ridge batch ({stated.count}): {text.ridge_count_words(stated, explained=True)}")
    lines += [f"  with {other.count}: {text.ridge_count_words(other, explained=True)}" for other in others]
    return lines


def training_lines(found: dict[str, Any]) -> list[str]:
    """A training step's rows: the time by phase, with checkpointing, the memory, then the largest batch."""
    a, t = found["assumptions"], found["training"]
    held = ", ".join(f"{part} {text.fmt_bytes(size)}" for part, size in t["held_bytes"].items())
    per_sample = t["activation_bytes_per_sample"]
    lines = [
        f"held whatever the batch: {held}",
        f"activations per sample: {text.fmt_bytes(per_sample['full'])}, "
        f"{text.fmt_bytes(per_sample['checkpointed'])} checkpointed ({t['checkpointing']})",
        f"  counted: {t['activations_counted']}",
        "",
        f"{'batch':>8} {'step':>9} {'forward':>9} {'input gr.':>9} {'weight gr.':>10} {'optimizer':>9} "
        f"{'checkpt.':>9} {'throughput':>16} {'memory':>10} {'checkpt.':>10}  bound",
    ]
    for p in found["points"]:
        phase = p["phases_seconds"]
        fits = {True: "", False: " (no fit)", None: ""}
        rate = f"{text.sig(p['throughput'])} {a['throughput_unit']}"
        lines.append(
            f"{p['batch']:>8,} {text.fmt_time(p['seconds']):>9} {text.fmt_time(phase['forward']):>9} "
            f"{text.fmt_time(phase['input gradient']):>9} {text.fmt_time(phase['weight gradient']):>10} "
            f"{text.fmt_time(phase['optimizer']):>9} {text.fmt_time(p['checkpointed_seconds']):>9} {rate:>16} "
            f"{text.fmt_bytes(p['memory_bytes']['full']) + fits[p['fits']]:>10} "
            f"{text.fmt_bytes(p['memory_bytes']['checkpointed']) + fits[p['fits_checkpointed']]:>10}  {p['bound']}"
        )
    largest = t["largest_batch"]
    if largest["full"] is None:
        lines.append("largest batch that fits: unknown (the device's memory is not known)")
    else:
        lines.append(f"largest batch that fits: {largest['full']:,}; with checkpointing {largest['checkpointed']:,}")
    ridge = t["ridge_batch"]
    lines.append(
        "ridge batch of the step (compute time overtakes memory time, summed over the phases): "
        + (
            "never up to 16,777,216"
            if ridge is None
            else "compute-bound from one sample"
            if ridge <= 1
            else text.sig(ridge)
        )
    )
    return lines
