"""The calculator page: roofline predictions for an MLP on any GPU of the datasheet table, run in
the reader's browser, with worked examples, the table itself and its sources."""

from __future__ import annotations

from typing import Any

from benchmarks.analysis.roofline import calculator
from benchmarks.analysis.roofline.predict import deployed_keywords, knee, predict
from benchmarks.contract.results import Run
from benchmarks.gpus import GPU, GPUS, find_gpu
from benchmarks.site import charts, text
from benchmarks.site import data as site_data
from benchmarks.site.charts import hardware as charts_hardware
from benchmarks.site.data import SiteData
from benchmarks.site.forecasts import efficiency_words, error_words, forecast_s
from benchmarks.site.render import Bullets, Details, Page, Paragraph, Table, code, strong, tag
from benchmarks.workloads import workload

EXAMPLES = (
    ("NVIDIA H100 SXM", "bfloat16", 4096),
    ("NVIDIA H200", "bfloat16", 4096),
    ("NVIDIA T4", "float16", 4096),
    ("NVIDIA T4", "float32", 4096),
    ("NVIDIA L4", "bfloat16", 4096),
    ("AMD Instinct MI300X", "bfloat16", 8192),
)
EXAMPLE_HEADERS = [
    "GPU",
    "dtype",
    "MLP",
    "batch 1",
    "ridge b*, activations to memory",
    "ridge b*, activations in cache",
    "ridge, wide-layer limit",
    "batch 4096",
    "rows/s at 4096",
]
DATASHEET_HEADERS = ["GPU", "dense TFLOP/s per dtype", "TB/s", "L2", "SMs", "memory", "ridge b*"]
FP32_EXAMPLES = ("NVIDIA T4", "NVIDIA H100 SXM")
LLAMA_CLASS = {"layers": 32, "d_model": 4096, "heads": 32, "kv_heads": 8, "d_ff": 14336, "ffn": "swiglu"}  # Llama-3-8B
PRESETS = (  # (title, workload, parameters besides its defaults, GPU, dtype, batches): `predict` gives the same
    ("ResNet-50 inference", "resnet50", {}, "NVIDIA H100 SXM", "bfloat16", (1, 8, 64, 256)),
    (
        "A Llama-class decode step (Llama-3-8B's shape, context 2048)",
        "decode",
        {**LLAMA_CLASS, "context": 2048},
        "NVIDIA H100 SXM",
        "bfloat16",
        (1, 8, 32, 128),
    ),
)
PRESET_HEADERS = ["batch", "forecast per call", "ceiling per call", "throughput (forecast)", "bound"]


def build(data: SiteData | None = None) -> Page:
    data = data or site_data.load_site_data()
    default = calculator.default_gpu(data.gpus)
    ridge = ridge_batches()
    return Page(
        {
            "chart": [calculator_figure(data, default), Paragraph(band_sentence())],
            "examples": [examples_table()],
            "presets": [part for preset in PRESETS for part in preset_parts(*preset)],
            "datasheet": [datasheet_table(), sources()],
        },
        data,
        {"default": default, "ridge_batches": ridge},
        lesson=lesson(ridge),
    )


def band_sentence() -> list:
    """What the calculator draws, and the forecast beside it: the efficiencies fitted to published matrix products
    and the error they showed, cross-validated."""
    return [
        strong("The solid line is the forecast, the dashed one the ceiling: "),
        "the dashed line is the ceiling (the datasheet roofline); the solid line is the forecast, its memory-bound "
        "work at the share of the bandwidth and its compute-bound work at the share of the FLOP/s that published "
        f"matrix products reached ({efficiency_words('mlp', 'bfloat16')} in bfloat16), shaded within its median "
        f"error; {error_words('mlp', {})}.",
    ]


def option(run: Run) -> str:
    """The name of a measured device among the calculator's choices."""
    return f"measured: {text.device_label(run)}"


def measured_rows(run: Run) -> list[dict[str, Any]]:
    """The run's measured MLP points, as the calculator chart draws them (dots)."""
    sheet = calculator.datasheet_of(run)
    return [
        {
            "option": option(run),
            "datasheet": sheet.name if sheet else "",
            "series": f"{text.device_label(run)} ({curve.mode}, weights rotated)",
            "run": run.id,
            "dtype": curve.dtype,
            "width": curve.params["width"],
            "batch": point.batch,
            "ms": point.median_s * 1e3,
            "cache": curve.cache,
        }
        for curve in calculator.measured_curves(run)
        for point in curve.points
    ]


def calculator_figure(data: SiteData, default: str):
    devices = [{"name": option(run), "rates": calculator.measured_rates(run)} for run in data.shown]
    rows = [row for run in data.shown_for("mlp") for row in measured_rows(run)]
    chart = charts_hardware.calculator_chart(
        GPUS, devices, rows, default, "Predicted MLP latency and throughput against batch"
    )
    return charts.figure(
        chart,
        "calculator",
        "Roofline calculator: pick a device, dtype, width and depth",
        "Interactive log-log charts of the roofline-predicted latency per call and throughput of an MLP against "
        "batch size, for the device, dtype, layer width and depth chosen in the controls above the chart, with the "
        f"ridge batch marked. The exported image shows the default choice: {default}, bfloat16, width 4096, depth 8. "
        "Measured points of committed runs appear as dots where they match the choice.",
        "Predicted latency and throughput of an MLP against batch for the device, dtype, width and depth you choose "
        "above the chart; dots are measured points of committed runs that match the choice.",
    )


def example_row(gpu: GPU, dtype: str, width: int) -> list[str]:
    one, big = calculator.predict_mlp(gpu, dtype, width, 8, 1), calculator.predict_mlp(gpu, dtype, width, 8, 4096)
    ridge = calculator.gpu_ridge_batch(gpu, dtype, width)
    cached = calculator.gpu_ridge_batch(gpu, dtype, width, 8, "cache")
    return [
        gpu.name,
        dtype,
        f"8×{width}",
        text.fmt_time(one.seconds),
        f"{ridge:,.0f}" if ridge else "never",
        f"{cached:,.0f}" if cached else "never",
        f"{gpu.ridge_batch(dtype):,.0f}",
        text.fmt_time(big.seconds),
        f"{big.rows_per_s:,.0f}",
    ]


def examples_table() -> Table:
    rows = [example_row(find_gpu(name), dtype, width) for name, dtype, width in EXAMPLES]
    return Table(EXAMPLE_HEADERS, rows, "Roofline predictions from the datasheet table below (no measurement)")


def preset_command(name: str, params: dict[str, Any], gpu: GPU, dtype: str, batches) -> str:
    given = "".join(f" --param {key}={value}" for key, value in params.items())
    listed = ",".join(map(str, batches))
    return f'python -m benchmarks predict {name} --gpu "{gpu.name}" --dtype {dtype} --batch {listed}{given}'


def preset_parts(title: str, name: str, given: dict[str, Any], gpu_name: str, dtype: str, batches) -> list:
    """A whole model as `python -m benchmarks predict` sees it: the same function, parameters and datasheet, so the
    table below and that command print the same numbers (tests/site/test_page_calculator.py runs both)."""
    spec, gpu = workload(name), find_gpu(gpu_name)
    params = {**spec.defaults(), **given}
    points = predict(name, params, gpu.ceilings(dtype), dtype, batches, **deployed_keywords(name, gpu.l2_bytes))
    found = knee(name, params, gpu.ceilings(dtype), dtype)
    unit = "prompts/s" if params.get("phase") == "prefill" else spec.unit.rate
    told = {p.batch: forecast_s(p, name, dtype) for p in points}
    rows = [
        [f"{p.batch:,}", text.fmt_time(told[p.batch]), text.fmt_time(p.seconds),
         f"{text.sig(p.batch / told[p.batch])} {unit}", p.bound]
        for p in points
    ]  # fmt: skip
    ridge = f"≈ {text.fmt_batch(found)}" if found and found >= 1 else "none: memory-bound at every batch"
    caption = (
        f"Predicted, not measured: {spec.shape(params)}, {gpu.name}, {dtype}; the forecast's "
        f"{error_words(name, params)}"
    )
    counted = (
        " Counted fused, as deployed (its activations in L2 while they fit); the ridge batch counts every "
        "elementwise pass."
        if name == "resnet50"
        else ""
    )
    return [
        Paragraph(
            [
                strong(f"{title}: "),
                f"{spec.shape(params)} in {dtype} on an {gpu.name} (datasheet); ridge batch {ridge}.{counted}",
            ]
        ),
        Table(PRESET_HEADERS, rows, caption),
        Paragraph(["The same from the command line: ", code(preset_command(name, given, gpu, dtype, batches))]),
    ]


def datasheet_row(gpu: GPU) -> list[str]:
    rates = ", ".join(f"{dtype} {text.sig(rate / 1e12, 3)}" for dtype, rate in gpu.peak_flops.items())
    ridge_dtype = "bfloat16" if "bfloat16" in gpu.peak_flops else "float16"
    return [
        gpu.name,
        rates,
        text.sig(gpu.bandwidth / 1e12, 3),
        text.fmt_bytes(gpu.l2_bytes) if gpu.l2_bytes else "–",
        str(gpu.sm_count or "–"),
        text.fmt_bytes(gpu.memory_bytes) if gpu.memory_bytes else "–",
        f"{gpu.ridge_batch(ridge_dtype):,.0f} ({ridge_dtype})",
    ]


def datasheet_table() -> Table:
    caption = "Datasheet figures (benchmarks/gpus.py); ridge b* = (F/BW)·(s/2)"
    return Table(DATASHEET_HEADERS, [datasheet_row(gpu) for gpu in GPUS], caption)


def sources() -> Details:
    items = [[strong(gpu.name), f": {gpu.source}", *([" ", tag("em", gpu.notes)] if gpu.notes else [])] for gpu in GPUS]
    return Details("Sources and notes for every entry", [Bullets(items)])


def ridge_batches() -> dict[str, str]:
    """The wide-layer ridge batches the lesson states, from the datasheet table (escaped, for the lesson's inline
    HTML): the lowest and the highest in bf16, each with its GPU, and those of FP32_EXAMPLES in plain fp32."""
    bf16 = calculator.ridge_range(GPUS, "bfloat16")
    fp32 = [(name, find_gpu(name).ridge_batch("float32")) for name in FP32_EXAMPLES]
    return {
        "bf16, lowest": text.h(f"{bf16[0][0]:,.0f} ({bf16[0][1]})"),
        "bf16, highest": text.h(f"{bf16[-1][0]:,.0f} ({bf16[-1][1]})"),
        "fp32, examples": text.h(", ".join(f"{b:,.0f} rows on the {n}" for n, b in fp32)),
    }


def lesson(ridge: dict[str, str]) -> str:
    """The takeaway's lesson, with the ridge batches of `ridge_batches()`."""
    return (
        f"The ridge batch of a wide layer is (F/BW)·(s/2). In bf16 it is {ridge['bf16, lowest']} to "
        f"{ridge['bf16, highest']} rows across the datasheet table; in plain fp32, with 4-byte weights and a far lower "
        f"rate, it is 2·F/BW: {ridge['fp32, examples']}. Below it, a batch costs about the same as a single row; above "
        "it, time grows with the batch. Use the prediction to choose where to measure, then measure: the measured "
        "pages of this site show how far real kernels fall short of the datasheet."
    )
