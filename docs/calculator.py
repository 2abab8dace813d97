# %% [markdown]
# # Calculator: predict your own GPU
#
# The roofline needs only two numbers per device and dtype, a peak arithmetic rate *F* and a
# memory bandwidth *BW*, so a reader without a GPU at hand can still predict where batching stops
# being free. Pick a device, a dtype, a layer width and a depth below: the chart draws the
# predicted latency and throughput of that MLP against batch, and marks the ridge batch where
# arithmetic starts to cost more than reading the weights. The formulas run in your browser;
# nothing is sent anywhere.
#
# For an MLP of *depth* Linear layers of *w* × *w* at batch *b*, with *s*-byte elements:
#
# $$\text{time} = \text{depth} \cdot \max\left(\frac{2 w^2 b}{F},\ \frac{s\,(w^2 + w + 2 b w)}{BW}\right)$$
#
# $$b^* = \frac{s\,(w^2 + w) / BW}{2 w^2 / F - 2 s w / BW} \;\longrightarrow\; \frac{F}{BW}\cdot\frac{s}{2}
# \text{ for wide layers}$$
#
# Three cautions. Datasheet peaks are upper bounds that real kernels do not reach (the
# [three-regimes page](../regimes/) measures how far short they fall); the roofline ignores launch
# overhead, which dominates small models in eager mode; and a model whose weights fit in L2
# runs faster than this predicts when it is timed in a hot loop. Devices listed as "measured"
# use the ceilings their committed run measured instead of a datasheet, and their measured
# points appear as dots when the dtype and width match a run (depth 8 only).

# %% tags=["hide-input"]
from IPython.display import HTML, display

from benchmarks.analysis import calculator, regimes
from benchmarks.analysis import curves as report
from benchmarks.analysis.datasheet import GPUS, find_gpu
from benchmarks.site import charts, charts_hardware
from benchmarks.site import text as txt

data = report.load_site_data()

measured_devices, measured_rows = [], []
for run in data.shown:
    option = f"measured: {txt.device_label(run)}"
    rates = {
        dtype: (entry["flops_per_s"], run.ceilings["copy"]["bytes_per_s"])
        for dtype, entry in run.ceilings.get("matmul", {}).items()
    }
    measured_devices.append({"name": option, "rates": rates})
    sheet = find_gpu(run.device.get("name", "")) if run.device.get("kind") == "cuda" else None
    preferred_mode = "graph" if run.device.get("kind") == "cuda" else "eager"
    for curve in regimes.mlp_curves(run, cache="rotated"):
        if curve.mode != preferred_mode or len(curve.points) < 2:
            continue
        for p in curve.points:
            measured_rows.append(
                {
                    "option": option,
                    "datasheet": sheet.name if sheet else "",
                    "series": f"{txt.device_label(run)} ({curve.mode}, weights rotated)",
                    "run": run.id,
                    "dtype": curve.dtype,
                    "width": curve.params["width"],
                    "batch": p.batch,
                    "ms": p.median_s * 1e3,
                    "cache": curve.cache,
                }
            )

gpu_runs = [run for run in data.gpus if find_gpu(run.device.get("name", ""))]
default = find_gpu(gpu_runs[0].device["name"]).name if gpu_runs else "NVIDIA H100 SXM"
chart = charts_hardware.calculator_chart(
    GPUS, measured_devices, measured_rows, default, "Predicted MLP latency and throughput against batch"
)
display(
    charts.figure(
        chart,
        "calculator",
        "Roofline calculator: pick a device, dtype, width and depth",
        "Interactive log-log charts of the roofline-predicted latency per call and throughput of an MLP against "
        "batch size, for the device, dtype, layer width and depth chosen in the controls above the chart, with the "
        "ridge batch marked. The exported image shows the default choice: "
        f"{default}, bfloat16, width 4096, depth 8. Measured points of committed runs appear as dots where they "
        "match the choice.",
    )
)

# %% [markdown]
# ## Worked examples
#
# The table computes the same formulas for a few choices, so the chart can be checked by hand.

# %% tags=["hide-input"]
examples = []
for name, dtype, width in (
    ("NVIDIA H100 SXM", "bfloat16", 4096),
    ("NVIDIA H200", "bfloat16", 4096),
    ("NVIDIA T4", "float16", 4096),
    ("NVIDIA T4", "float32", 4096),
    ("NVIDIA L4", "bfloat16", 4096),
    ("AMD Instinct MI300X", "bfloat16", 8192),
):
    gpu = find_gpu(name)
    one, ridge = calculator.predict(gpu, dtype, width, 8, 1), calculator.gpu_ridge_batch(gpu, dtype, width)
    big = calculator.predict(gpu, dtype, width, 8, 4096)
    examples.append(
        [
            name,
            dtype,
            f"8×{width}",
            txt.fmt_time(one.seconds),
            f"{ridge:,.0f}" if ridge else "never",
            f"{gpu.ridge_batch(dtype):,.0f}",
            txt.fmt_time(big.seconds),
            f"{big.rows_per_s:,.0f}",
        ]
    )
display(
    HTML(
        txt.html_table(
            [
                "GPU",
                "dtype",
                "MLP",
                "batch 1",
                "ridge b* (this width)",
                "ridge, wide-layer limit",
                "batch 4096",
                "rows/s at 4096",
            ],
            examples,
            caption="Roofline predictions from the datasheet table below (no measurement)",
        )
    )
)

# %% [markdown]
# ## The datasheet table
#
# Dense rates (without structured sparsity) per dtype, memory bandwidth, L2 size, SM count and
# memory, with the source of each entry. "float32" is the plain FP32 rate and "tfloat32" the
# TF32 tensor-core rate on the same fp32 tensors.

# %% tags=["hide-input"]
rows = []
for gpu in GPUS:
    rates = ", ".join(f"{dtype} {txt.sig(rate / 1e12, 3)}" for dtype, rate in gpu.peak_flops.items())
    ridge_dtype = "bfloat16" if "bfloat16" in gpu.peak_flops else "float16"
    rows.append(
        [
            gpu.name,
            rates,
            txt.sig(gpu.bandwidth / 1e12, 3),
            txt.fmt_bytes(gpu.l2_bytes) if gpu.l2_bytes else "–",
            str(gpu.sm_count or "–"),
            txt.fmt_bytes(gpu.memory_bytes) if gpu.memory_bytes else "–",
            f"{gpu.ridge_batch(ridge_dtype):,.0f} ({ridge_dtype})",
        ]
    )
display(
    HTML(
        txt.html_table(
            ["GPU", "dense TFLOP/s per dtype", "TB/s", "L2", "SMs", "memory", "ridge b*"],
            rows,
            caption="Datasheet figures (benchmarks/analysis/datasheet.py); ridge b* = (F/BW)·(s/2)",
        )
    )
)
sources = "".join(
    f"<li><strong>{txt.h(g.name)}</strong>: {txt.h(g.source)}"
    + (f" <em>{txt.h(g.notes)}</em>" if g.notes else "")
    + "</li>"
    for g in GPUS
)
display(HTML(f"<details><summary>Sources and notes for every entry</summary><ul>{sources}</ul></details>"))

# %% tags=["hide-input"]
bf16 = sorted((g.ridge_batch("bfloat16"), g.name) for g in GPUS if "bfloat16" in g.peak_flops)
fp32 = [(g.name, g.ridge_batch("float32")) for g in GPUS if g.name in ("NVIDIA T4", "NVIDIA H100 SXM")]
display(
    HTML(
        '<div class="admonition success"><p class="admonition-title">Takeaway</p><p>The ridge batch of a wide '
        "layer is (F/BW)·(s/2). In bf16 it is "
        f"{bf16[0][0]:,.0f} ({txt.h(bf16[0][1])}) to {bf16[-1][0]:,.0f} ({txt.h(bf16[-1][1])}) rows across "
        "the datasheet table; in plain fp32, with 4-byte weights and a far lower rate, it is 2·F/BW: "
        + ", ".join(f"{b:,.0f} rows on the {txt.h(n)}" for n, b in fp32)
        + ". Below it, a batch costs about the same as a single row; above it, time grows with the batch. Use the "
        "prediction to choose where to measure, then measure: the measured pages of this site show how far real "
        "kernels fall short of the datasheet.</p></div>"
    )
)
