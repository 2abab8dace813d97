"""`python -m benchmarks predict llm:MODEL --gpu NAME --dtype DTYPE --batch B[,B...]`: one decode step of a language
model at each batch, from the same step model `serve llm:` schedules (the matrix products, the attention over the
KV cache, the output head and, over --tp GPUs, the all-reduces): the calibrated forecast with its expected error,
the datasheet's ceiling beside it. Nothing is measured; pure Python, nothing here imports torch.
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.serving.llm.engine_config import MEMORY_FRACTION
from benchmarks.analysis.serving.llm.forecast_step import ForecastStep
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.commands.arguments import whole, whole_numbers
from benchmarks.commands.choices import Refused, check_rate, dtype_named, gpu_chosen
from benchmarks.commands.llm_choices import check_split, model_named
from benchmarks.site import text
from benchmarks.site.forecasts import CEILING_WORDS, forecast_json

DEFAULT_CONTEXT = 2048  # predict --help says so
MAX_BATCH = 2**20


def request(args: argparse.Namespace) -> tuple[RooflineStep, list[int], int]:
    """The ceiling's step, the batches and the context, or the one line that refuses them."""
    if args.run is not None:
        raise Refused("predict llm: takes --gpu; a decoder a run measured is `serve llm:run --run PATH`")
    if args.fusion is not None:
        raise Refused("--fusion is for resnet50, not a language model")
    model = model_named(args.workload, args.param)
    gpu = gpu_chosen(args.gpu)
    dtype = dtype_named(args.dtype)
    check_rate(gpu, dtype)
    tp = whole(args.tp or "1", "--tp", 1, 64)
    check_split(model, tp)
    kv_dtype = dtype_named(args.kv_dtype) if args.kv_dtype else None
    batches = whole_numbers(args.batch, "--batch", 1, MAX_BATCH)
    context = whole(args.context or str(min(DEFAULT_CONTEXT, model.max_context - 1)), "--context", 0,
                    model.max_context - 1)  # fmt: skip
    try:
        step = RooflineStep(model, gpu, dtype, tensor_parallel=tp, kv_dtype=kv_dtype)
    except ValueError as exc:
        raise Refused(str(exc)) from None
    return step, batches, context


def report(step: RooflineStep, batches: list[int], context: int, ceiling_only: bool = False) -> dict[str, Any]:
    """Each batch's decode step as one JSON-ready object: the ceiling's time and, unless `ceiling_only`, the
    forecast's, the tokens a second, what bounds the step and whether the weights and the batch's cache fit."""
    calibrated = forecast_json("decode", {"phase": "decode"}, step.dtype, step.tensor_parallel)
    forecast = None
    if not ceiling_only:
        forecast = ForecastStep.of(step, calibration_file.committed().efficiency("decode", step.dtype))
    usable = step.memory_bytes * MEMORY_FRACTION
    points = []
    for batch in batches:
        work = step.decode_work(batch, context)
        ceiling = step.detail(work)
        seconds = forecast.detail(work).seconds if forecast else None
        held = step.weight_bytes + batch * (context + 1) * step.kv_bytes_per_token
        points.append({
            "batch": batch,
            "ceiling_seconds": ceiling.seconds,
            "forecast_seconds": seconds,
            "tokens_per_s": batch / (seconds or ceiling.seconds),
            "ceiling_tokens_per_s": batch / ceiling.seconds,
            "matmul_bound": ceiling.matmul_bound,
            "attention_bound": ceiling.attention_bound,
            "communication_seconds": ceiling.communication_s,
            "held_bytes": held,
            "fits": held <= usable,
        })  # fmt: skip
    model = step.model
    return {
        "answer": "ceiling" if ceiling_only else "forecast",
        "assumptions": {
            "workload": f"llm:{model.name}",
            "model": model.name,
            "model_source": model.source,
            "dtype": step.dtype,
            "kv_dtype": step.kv_dtype,
            "device": step.gpu.name,
            "tensor_parallel": step.tensor_parallel,
            "context": context,
            "step": (forecast or step).describe(),
            "memory_bytes": step.memory_bytes,
            "fits_counts": f"the weights plus each batch's KV cache, against {MEMORY_FRACTION:.0%} of the memory of "
            f"{step.tensor_parallel} × {step.gpu.name} (an engine's default share)",
        },
        "points": points,
        "forecast": {**calibrated, "words": CEILING_WORDS} if ceiling_only else calibrated,
    }


def table_lines(found: dict[str, Any]) -> list[str]:
    """The assumptions once, then one row per batch: the forecast beside the ceiling."""
    a = found["assumptions"]
    lines = [
        f"{a['model']} decode step, {a['context']:,} tokens cached per sequence: {a['step']}",
        f"weights and KV cache fit: {a['fits_counts']}",
        f"forecast: {found['forecast']['words']}" if found["answer"] == "forecast" else found["forecast"]["words"],
        "",
    ]
    header = ("batch", "forecast", "ceiling", "tokens/s", "bound (matmuls, attention)", "fits")
    rows = [header]
    for p in found["points"]:
        forecast = text.fmt_time(p["forecast_seconds"]) if p["forecast_seconds"] else "-"
        rows.append((f"{p['batch']:,}", forecast, text.fmt_time(p["ceiling_seconds"]), f"{p['tokens_per_s']:,.0f}",
                     f"{p['matmul_bound']}, {p['attention_bound']}", "yes" if p["fits"] else "no"))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines += ["  ".join(cell.rjust(w) if i in (1, 2, 3) else cell.ljust(w) for i, (cell, w) in
                        enumerate(zip(row, widths, strict=True))).rstrip() for row in rows]  # fmt: skip
    return lines
