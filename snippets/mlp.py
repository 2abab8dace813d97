"""A stack of Linear+ReLU layers, all equally wide: the MLP of the original batching article.

Run it on its own (`python snippets/mlp.py`): it checks the model against a float64
reference, then prints latency and throughput against batch size.
"""

import statistics
import time

import torch
from torch import nn

try:  # imported as part of the package (the harness, the tests)
    from snippets.costs import mlp_cost
except ImportError:  # run as a script: python snippets/<name>.py
    from costs import mlp_cost

DEPTH = 8  # Linear+ReLU layers, as in the article
WIDTH = 1024  # features in and out of every layer
DTYPE = torch.float32  # torch.bfloat16 on a GPU to use its tensor cores
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
REPEATS = 20  # timed calls per batch size; the median is reported


def make_mlp(width, depth, dtype=torch.float32, device="cpu"):
    with torch.device(device):  # initialise the weights where they run, not on the CPU and copy
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers).to(dtype=dtype)


TOLERANCE = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 3e-2}


@torch.no_grad()
def check_correctness(dtype=DTYPE, device=DEVICE, width=64, depth=4, batch=7):
    """Relative error of the model in `dtype` against the same weights in float64."""
    model = make_mlp(width, depth, dtype, device)
    reference = make_mlp(width, depth, torch.float64, "cpu")
    reference.load_state_dict({k: v.double().cpu() for k, v in model.state_dict().items()})
    x = torch.randn(batch, width, device=device, dtype=dtype)
    out = model(x).double().cpu()
    expected = reference(x.double().cpu())
    error = ((out - expected).norm() / expected.norm()).item()
    if not error <= TOLERANCE[dtype]:  # also catches NaN
        raise AssertionError(f"MLP in {dtype} is off by {error:.2e} (tolerance {TOLERANCE[dtype]:.0e})")
    return error


@torch.no_grad()
def median_seconds(model, x, repeats=REPEATS):
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    for _ in range(3):  # warm-up: allocator, kernel selection, caches
        model(x)
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        model(x)
        sync()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


if __name__ == "__main__":
    print(f"relative error against float64: {check_correctness():.1e}")
    model = make_mlp(WIDTH, DEPTH, DTYPE, DEVICE)
    size = torch.finfo(DTYPE).bits // 8
    print(f"{DEPTH}×{WIDTH} MLP, {DTYPE}, {DEVICE}")
    print(f"{'batch':>6} {'ms':>9} {'rows/s':>10} {'GFLOP/s':>9} {'GB/s':>7}")
    for batch in BATCHES:
        x = torch.randn(batch, WIDTH, device=DEVICE, dtype=DTYPE)
        seconds = median_seconds(model, x)
        flops, bytes_moved = mlp_cost(batch, WIDTH, DEPTH, size)
        print(
            f"{batch:>6} {seconds * 1e3:>9.3f} {batch / seconds:>10.0f} "
            f"{flops / seconds / 1e9:>9.1f} {bytes_moved / seconds / 1e9:>7.1f}"
        )
