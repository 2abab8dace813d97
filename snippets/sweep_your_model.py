"""Time your own model against batch size and pick a batch: latency, throughput and the rule of the
batch-size guide, in one file.

Replace make_model() and make_input() with your own, set the latency budget, and run it from the
repository's root: python snippets/sweep_your_model.py
"""

import statistics
import time

import torch

try:  # imported as part of the package (the tests)
    from snippets.choose import FLAT_SHARE, choose, largest_within, throughput_flattens
except ImportError:  # run as a script: python snippets/<name>.py
    from choose import FLAT_SHARE, choose, largest_within, throughput_flattens

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPE = torch.bfloat16 if DEVICE == "cuda" else torch.float32
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
LATENCY_BUDGET_S = 0.010  # the longest one call may take in your service
REPEATS = 20  # timed calls per batch; the median is kept


def make_model():
    """Your model, in eval mode on DEVICE and DTYPE (here the article's 8×1024 MLP)."""
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).eval().to(DEVICE, DTYPE)


def make_input(batch):
    """One batch of `batch` inputs, as your service would send it."""
    return torch.randn(batch, 1024, device=DEVICE, dtype=DTYPE)


@torch.no_grad()
def seconds_per_call(model, x, repeats=REPEATS):
    """Median time of one call, each call waited for (what a request pays), after a warm-up."""
    sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)
    for _ in range(3):  # allocator, kernel choice, caches
        model(x)
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        model(x)
        sync()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def sweep(model, batches=BATCHES):
    return [(batch, seconds_per_call(model, make_input(batch))) for batch in batches]


if __name__ == "__main__":
    points = sweep(make_model())
    print(f"{'batch':>6} {'ms per call':>12} {'items/s':>10}")
    for batch, seconds in points:
        print(f"{batch:>6} {seconds * 1e3:>12.3f} {batch / seconds:>10.0f}")
    print(f"largest batch within {LATENCY_BUDGET_S * 1e3:g} ms: {largest_within(points, LATENCY_BUDGET_S)}")
    print(f"throughput within {100 - 100 * FLAT_SHARE:.0f} % of its best from batch {throughput_flattens(points)}")
    print(f"run batch {choose(points, LATENCY_BUDGET_S)}")
