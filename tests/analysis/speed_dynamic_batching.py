"""How long the simulator takes for 100,000 requests under each server's rule (run it: it is not a test).

    python -m tests.analysis.speed_dynamic_batching

The service curve is SYNTHETIC (33 ms + 3 ms per request, ±10 %); the rate keeps each policy at about 70 % of
what it serves at full batches, so queues and batches are of the size a loaded server has. A last line times a
policy of max batch 65,536 on a SYNTHETIC curve measured up to there (1 ms + 0.1 µs per request), where a batch's
seconds are worked out only for the sizes that form (a table of every size took 3.6 s and 814 MB per simulation).
"""

import time

import numpy as np

from benchmarks.analysis.serving.batcher.simulator import Policy, ServiceCurve, poisson_arrivals, simulate

N = 100_000
LARGE = ServiceCurve.from_samples({b: [(1e-3 + 1e-7 * b) * f for f in (0.9, 1.0, 1.1)] for b in (1, 1024, 65536)})
CURVE = ServiceCurve.from_samples({b: [(0.033 + 0.003 * b) * f for f in (0.9, 1.0, 1.1)] for b in (1, 16)})
POLICIES = [
    Policy("none", 1, 0.0, 4),
    Policy("triton", 16, 0.005, 2),
    Policy("torchserve", 16, 0.005, 2),
    Policy("ray", 16, 0.005, 2, "blocking"),
    Policy("ray", 16, 0.005, 1, "awaiting"),
]


def main() -> None:
    for policy, curve in [*((p, CURVE) for p in POLICIES), (Policy("triton", 65536, 0.002), LARGE)]:
        top = policy.instances * policy.max_batch / curve.mean(policy.max_batch)
        rate = 0.7 * top if policy.handler == "blocking" else 25.0
        arrivals = poisson_arrivals(rate, N, np.random.default_rng(1))
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            result = simulate(policy, curve, arrivals, seed=2)
            best = min(best, time.perf_counter() - start)
        print(
            f"{policy.describe():58s} {rate:7.1f}/s  {N:,} requests in {best:.2f} s "
            f"(mean batch {result.mean_batch:.2f}, p99 {result.raw_percentile(99) * 1e3:.0f} ms)"
        )


if __name__ == "__main__":
    main()
