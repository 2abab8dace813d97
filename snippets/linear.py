"""One Linear layer, y = x·Wᵀ + b: a single matrix multiply whose M dimension is the batch.

Step through every batch size and the time is not a smooth line: the matmul library cuts the
output into tiles of rows and runs the tiles in waves over the GPU's multiprocessors, so one row
past a tile or wave boundary costs a whole extra tile or wave. Run it on its own
(`python snippets/linear.py`): it checks the layer against float64, then prints the time of
every batch size in a fine sweep next to the matmul kernel the library chose.
"""

import statistics
import time

import torch
from torch import nn

try:  # imported as part of the package (the harness, the tests)
    from snippets.costs import linear_cost
except ImportError:  # run as a script: python snippets/<name>.py
    from costs import linear_cost

ON_GPU = torch.cuda.is_available()
FEATURES = 8192 if ON_GPU else 1024  # in = out features; big enough that the GEMM is compute-bound
DTYPE = torch.bfloat16 if ON_GPU else torch.float32
DEVICE = "cuda" if ON_GPU else "cpu"
BATCHES = range(1, 513) if ON_GPU else range(8, 257, 8)  # every batch size, not powers of two
REPEATS = 30  # timed calls per batch size; the median is reported


def make_linear(in_features, out_features, dtype=torch.float32, device="cpu"):
    with torch.device(device):  # initialise the weights where they run, not on the CPU and copy
        layer = nn.Linear(in_features, out_features)
    return layer.to(dtype=dtype)


TOLERANCE = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 2e-2}


@torch.no_grad()
def check_correctness(dtype=DTYPE, device=DEVICE, in_features=96, out_features=80, batch=13):
    """Relative error of the layer in `dtype` against the same weights in float64."""
    layer = make_linear(in_features, out_features, dtype, device)
    x = torch.randn(batch, in_features, device=device, dtype=dtype)
    expected = x.double().cpu() @ layer.weight.double().cpu().T + layer.bias.double().cpu()
    error = ((layer(x).double().cpu() - expected).norm() / expected.norm()).item()
    if not error <= TOLERANCE[dtype]:  # also catches NaN
        raise AssertionError(f"Linear in {dtype} is off by {error:.2e} (tolerance {TOLERANCE[dtype]:.0e})")
    return error


def kernel_names(layer, x):
    """Names of the device kernels (or CPU ops) one call runs, from torch.profiler."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if x.is_cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.no_grad(), torch.profiler.profile(activities=activities) as prof:
        layer(x)
        if x.is_cuda:
            torch.cuda.synchronize()
    wanted = "cuda" if x.is_cuda else "cpu"
    names = [e.name for e in prof.events() if str(e.device_type).lower().endswith(wanted)]
    if not x.is_cuda:
        names = [n for n in names if n.startswith(("aten::addmm", "aten::mm", "aten::linear", "mkldnn"))]
    return sorted(set(names))


@torch.no_grad()
def median_seconds(layer, x, repeats=REPEATS):
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    for _ in range(3):
        layer(x)
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        layer(x)
        sync()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


if __name__ == "__main__":
    print(f"relative error against float64: {check_correctness():.1e}")
    layer = make_linear(FEATURES, FEATURES, DTYPE, DEVICE)
    print(f"Linear {FEATURES}→{FEATURES}, {DTYPE}, {DEVICE}")
    size = torch.finfo(DTYPE).bits // 8
    print(f"{'batch':>6} {'µs':>9} {'µs/row':>8} {'TFLOP/s':>8}  kernel")
    for batch in BATCHES:
        x = torch.randn(batch, FEATURES, device=DEVICE, dtype=DTYPE)
        seconds = median_seconds(layer, x)
        flops, _ = linear_cost(batch, FEATURES, FEATURES, size)
        print(
            f"{batch:>6} {seconds * 1e6:>9.1f} {seconds * 1e6 / batch:>8.2f} {flops / seconds / 1e12:>8.3f}  "
            f"{', '.join(kernel_names(layer, x))}"
        )
