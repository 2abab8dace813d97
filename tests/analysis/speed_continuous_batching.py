"""How long the continuous-batching simulator takes for 1,000 requests of 200 output tokens (1,000-token prompts,
Llama-3-8B on an H100 datasheet), at several loads. A measurement to print, not a test: run
`python tests/analysis/speed_continuous_batching.py`. The target is at most 5 s for each run."""

import time

from benchmarks.analysis.continuous_batching import Engine, Lengths, RooflineStep, simulate
from benchmarks.analysis.serving import LLAMA_3_8B
from benchmarks.gpus import find_gpu


def main() -> None:
    step = RooflineStep(LLAMA_3_8B, find_gpu("NVIDIA H100 SXM"), "bfloat16")
    loads = [{"clients": c} for c in (1, 16, 64, 256)] + [{"rate_per_s": r} for r in (5.0, 30.0)]
    for chunked in (False, True):
        engine = Engine(chunked_prefill=chunked, max_batched_tokens=2048 if chunked else 8192)
        for load in loads:
            start = time.process_time()
            result = simulate(step, engine, Lengths.fixed(1000), Lengths.fixed(200), n_requests=1000, **load)
            spent = time.process_time() - start
            ((name, value),) = load.items()
            print(f"chunked={chunked!s:5} {name}={value:<6g} {result.steps:>7,} steps  {spent:5.2f} s CPU")


if __name__ == "__main__":
    main()
