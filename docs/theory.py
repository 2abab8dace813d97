# %% [markdown]
# # Theory: the roofline of a Linear layer
#
# Every number on this page that is not a measurement comes from the datasheet table in
# `benchmarks/analysis/datasheet.py`, computed when the site is built; the sources are listed at the end.

# %% tags=["hide-input"]
from IPython.display import HTML, Markdown, display

from benchmarks.analysis import curves as report
from benchmarks.analysis.datasheet import BYTES_PER_ELEMENT, GPUS, find_gpu
from benchmarks.site import charts
from benchmarks.site import text as txt

T4 = find_gpu("NVIDIA T4")
A100 = find_gpu("NVIDIA A100 SXM4 80GB")
H100 = find_gpu("NVIDIA H100 SXM")
H200 = find_gpu("NVIDIA H200")

# %% [markdown]
# ## Step 1: a call takes at least as long as its slowest resource
#
# A kernel has two jobs: do its arithmetic and move its operands between memory and the
# processors. A device with peak arithmetic rate *F* (FLOP/s) and memory bandwidth *BW*
# (bytes/s) cannot finish sooner than either job alone allows, and a well-written kernel
# overlaps the two, so
#
# $$t \;\ge\; \max\left(\frac{\mathrm{FLOPs}}{F},\ \frac{\mathrm{bytes}}{BW}\right)$$
#
# This is the *roofline*. The site's predictions use it with *F* and *BW* measured on the same
# device in the same run (a large matmul and a large copy), never with datasheet figures.
#
# ## Step 2: the arithmetic intensity of a Linear layer
#
# A Linear layer with an *m*×*n* weight applied to a batch of *b* rows multiplies a *b*×*m*
# matrix by an *m*×*n* one: *b·m·n* multiply-adds. At the least it reads the weight once, reads
# the input and writes the output; with *s* bytes per element:
#
# $$\mathrm{FLOPs} = 2\,m\,n\,b \qquad \mathrm{bytes} \approx s\,(m\,n + b\,m + b\,n)$$
#
# Their ratio, the *arithmetic intensity*, is the work done per byte moved:
#
# $$I(b) = \frac{2\,m\,n\,b}{s\,(m\,n + b\,m + b\,n)} \;\approx\; \frac{2\,b}{s} \quad\text{while } b \ll m, n$$
#
# The weight term *m·n* does not grow with the batch. While it dominates the bytes, doubling the
# batch doubles the FLOPs but barely changes the bytes: the call stays as long as reading the
# weights takes, and the extra rows are nearly free.
#
# ## Step 3: the ridge point
#
# Memory time and compute time are equal when the intensity reaches the device's own ratio
# *F*/*BW*, the *ridge point*. Setting 2*b*/*s* = *F*/*BW* gives the critical batch of a large
# layer:
#
# $$b^{*} \;\approx\; \frac{F}{BW}\cdot\frac{s}{2}$$
#
# Below *b*\* the layer is memory-bound and its time is flat in the batch; above it the layer is
# compute-bound and its time grows in proportion to the batch. For 2-byte weights (bf16, fp16)
# *b*\* = *F*/*BW*; for 4-byte fp32 weights it is 2·*F*/*BW*.
#
# ## Step 4: why bytes per element matter
#
# Bytes per element enter twice. Halving *s* halves the bytes of the weight read, so a bf16
# layer at small batch runs about twice as fast as the same layer in fp32. And the dtype picks the
# arithmetic units: tensor cores give bf16/fp16 many times the fp32 rate, so *F* and with it
# the ridge point move too. The table below computes *b*\* for each GPU and dtype in the datasheet
# table.

# %% tags=["hide-input"]
rows = []
for gpu in GPUS:
    for dtype in ("float8", "bfloat16", "float16", "tfloat32", "float32"):
        if dtype not in gpu.peak_flops:
            continue
        rows.append(
            [
                gpu.name,
                dtype,
                str(BYTES_PER_ELEMENT[dtype]),
                txt.sig(gpu.peak_flops[dtype] / 1e12, 3),
                txt.sig(gpu.bandwidth / 1e12, 3),
                txt.sig(gpu.ridge_intensity(dtype), 3),
                f"{gpu.ridge_batch(dtype):,.0f}",
            ]
        )
display(
    HTML(
        txt.html_table(
            ["GPU", "dtype", "s (bytes)", "peak TFLOP/s (dense)", "bandwidth TB/s", "F/BW (FLOP/B)", "b* (rows)"],
            rows,
            caption="Datasheet ridge points: b* = (F/BW)·(s/2). TF32 stores fp32 operands (s = 4).",
        )
    )
)

# %% tags=["hide-input"]
chart = charts.intensity_chart(
    [T4, A100, H100, H200], ["bfloat16", "float16", "float32"], 4096, "Arithmetic intensity of a Linear layer"
)
ridge_words = "; ".join(
    f"{g.name} {d}: {txt.sig(g.ridge_intensity(d), 3)} FLOP/B"
    for g in (T4, A100, H100, H200)
    for d in ("bfloat16", "float16", "float32")
    if d in g.peak_flops
)
display(
    charts.figure(
        chart,
        "theory-intensity",
        "Intensity against batch, with datasheet ridge points",
        "Log-log chart of the arithmetic intensity (FLOP per byte) of a 4096×4096 Linear layer against batch size, "
        "for 2-byte and 4-byte weights. Intensity grows in proportion to the batch until the activations' bytes "
        "catch up with the weight's. Dashed horizontal lines are datasheet ridge points: " + ridge_words + ".",
    )
)

# %% [markdown]
# Where a line crosses a ridge, that GPU turns from memory-bound to compute-bound. The 4-byte
# line crosses each fp32 ridge at twice the batch of the 2-byte line: the same ridge needs twice
# the rows when every weight costs twice the bytes.
#
# ## Step 5: three regimes, not two
#
# The roofline has two terms, but a measured curve has a third cause of flatness. Every call
# also pays fixed costs: the framework's Python dispatch and one kernel launch per operation
# (an 8-layer MLP of Linear+ReLU launches 16 kernels in eager PyTorch). For a small model those
# costs exceed both roofline terms, and the curve is flat because of *overhead*, not memory. That
# flat region looks like free batching, but its knee is false: it says nothing about the
# hardware. Replaying a captured CUDA graph removes most of the launch cost, so the site times
# both (`graph` and `eager`) wherever a GPU is measured. The [three-regimes page](../regimes/)
# measures the cost of one launch and gives a three-question test for telling the regimes apart.
#
# ## Step 6: caches can hide the memory term
#
# If the weights fit in the last-level cache, a benchmark that calls the same layer in a loop
# reads them from cache, not from memory, and measures a much higher bandwidth than the device's
# memory has. The [three-regimes page](../regimes/) measures bandwidth at every working-set size
# and shows the same MLP timed both ways.

# %% tags=["hide-input"]
mib = 8 * 1024 * 1024 * BYTES_PER_ELEMENT["bfloat16"] / 2**20
caches = ", ".join(f"{g.name} {txt.fmt_bytes(g.l2_bytes)}" for g in (A100, H100) if g.l2_bytes)
display(
    Markdown(
        f"An 8-layer MLP of width 1024 holds 8·1024² weights: **{mib:.0f} MiB in bf16**, which fits in the L2 "
        f"cache of an A100 or H100 ({caches}, datasheet). The harness therefore rotates through several copies of "
        "the weights, together larger than the cache, so every call reads memory; each chart says which cache "
        "state it measured."
    )
)

# %% [markdown]
# ## Step 7: why some batch sizes are suddenly slower
#
# A GPU matmul library cuts the output into tiles (for example 64, 128 or 256 rows at a time) and
# hands tiles to the streaming multiprocessors (SMs) in waves. One row past a tile boundary
# adds a whole, mostly empty tile (*tile quantization*); one tile past a multiple of the SM count
# adds a mostly idle extra wave (*wave quantization*). At small batches the library may also
# switch to a different kernel altogether (a matrix-vector kernel, or split-K). Each of these
# makes a step or a sawtooth along a fine sweep of batch sizes. A sweep that only doubles the batch
# lands on powers of two, where tiles divide evenly, and misses them.
#
# ## Corrections to the original article
#
# The batching article this site started from has the right intuition but several wrong figures.

# %% tags=["hide-input"]
t4_fp16, t4_fp32 = T4.peak_flops["float16"], T4.peak_flops["float32"]
seed_bw = 300e9  # the article's bandwidth figure
seed_ratio = t4_fp16 / seed_bw
a100_l1_per_sm = 192 * 1024  # bytes of L1/shared memory per SM (A100 architecture whitepaper)
conv_k, conv_hw = 3, 224
corrections = [
    [
        "The T4 does 65 TFLOP/s in 32-bit floats.",
        f"65 TFLOP/s is the T4's fp16 tensor-core rate; plain fp32 is {txt.sig(t4_fp32 / 1e12, 2)} TFLOP/s, "
        f"{txt.sig(t4_fp16 / t4_fp32, 2)}× less.",
        T4.source,
    ],
    [
        "The T4's memory bandwidth is 300 GB/s.",
        f"It is {txt.sig(T4.bandwidth / 1e9, 3)} GB/s.",
        T4.source,
    ],
    [
        f"So the critical batch (“magic ratio”) is {seed_ratio:.0f}.",
        f"With the right figures b* = (F/BW)·(s/2) is ≈ {T4.ridge_batch('float16'):.0f} in fp16 and "
        f"≈ {T4.ridge_batch('float32'):.0f} in fp32; the article also divided an fp16 rate by a wrong bandwidth "
        "and ignored bytes per element.",
        "computed from the two rows above",
    ],
    [
        "An A100's “device memory” is only 192 KB.",
        f"192 KB is the L1/shared memory of one SM. An A100 has {A100.sm_count} SMs "
        f"({txt.fmt_bytes(A100.sm_count * a100_l1_per_sm)} of L1/shared memory in all) and a "
        f"{A100.l2_bytes / 1e6:.0f} MB L2 cache, in front of 40 or 80 GB of HBM.",
        A100.source,
    ],
    [
        "A Conv2d layer holds kernel_size² × out_channels weights.",
        "It holds kernel_size² × in_channels × out_channels weights (plus a bias per output channel).",
        "PyTorch torch.nn.Conv2d documentation (weight shape)",
    ],
    [
        f"A {conv_k}×{conv_k}, stride-1 filter on a {conv_hw}×{conv_hw} image is reused {conv_hw} times.",
        f"It is applied at every output position: about {conv_hw}² = {conv_hw**2:,} times per image, which is why "
        "a convolution has high arithmetic intensity even at batch 1.",
        "arithmetic on the layer's output shape",
    ],
]
display(HTML(txt.html_table(["the article says", "correct", "source"], corrections)))

# %% tags=["hide-input"]
data = report.load_site_data()
cpu_lines = []
for run in data.cpus:
    for curve in report.curves(run):
        if curve.width == 1024 and len(curve.points) >= 4:
            first, last = curve.points[0], curve.points[-1]
            cpu_lines.append(
                f"{txt.esc(txt.device_label(run))}, {curve.shape} in {curve.dtype}: "
                f"{txt.fmt_time(first.median_s)} at batch {first.batch}, {txt.fmt_time(last.median_s)} at "
                f"batch {last.batch} ({txt.knee_verdict(curve)}; {txt.esc(txt.provenance(run))})"
            )
text = (
    "The article also says a CPU scales linearly with the batch. A CPU has a roofline too: its time grows slowly "
    "while reading the weights dominates, and in proportion to the batch beyond its own, much smaller, ridge point."
)
if cpu_lines:
    text += (
        " Measured here: " + "; ".join(cpu_lines) + f". The [MLP page]({charts.SITE_ROOT}mlp/) shows the whole curve."
    )
display(Markdown(text))

# %% [markdown]
# Finally, “transformers are just MLPs” holds only at short context. In decoding, the weights are
# read once per step for the whole batch, but every sequence reads its own key/value cache, so the
# bytes grow with batch × context from the first row. Long contexts push the knee out or remove
# it; grouped-query attention, which shares keys and values between heads, moves it back.
#
# ## Sources

# %% tags=["hide-input"]
display(
    Markdown(
        "\n".join(f"- **{txt.esc(g.name)}**: {txt.esc(g.source)}." for g in GPUS)
        + "\n\nRates are dense (without structured sparsity); bandwidth is the memory's, in bytes per second."
    )
)
display(
    HTML(
        '<div class="admonition success"><p class="admonition-title">Takeaway</p><p>'
        f"The critical batch of a large layer is the device's FLOP/s over its bandwidth, times half the bytes per "
        f"element: from the datasheets, about {H200.ridge_batch('bfloat16'):.0f} rows for an H200 in bf16 and "
        f"{T4.ridge_batch('float32'):.0f} for a T4 in fp32. Below it, extra rows are nearly free; measure your "
        "own device, because launch overhead and caches move the knee you actually see.</p></div>"
    )
)
