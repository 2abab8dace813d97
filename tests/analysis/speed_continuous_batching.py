"""How long the continuous-batching simulator takes for N requests (default 1,000; give another count as the first
argument) of 200 output tokens (1,000-token prompts, Llama-3-8B on an H100 datasheet), at several loads, with and
without CUDA-graph padding and prefix caching, and disaggregated on 1 + 3 engines. A measurement to print, not a
test: run `python tests/analysis/speed_continuous_batching.py [N]`. The target is at most 5 s for each run of
1,000 requests."""

import sys
import time

from benchmarks.analysis.serving.llm.disaggregated import Split, nvlink, simulate_disaggregated
from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.prefix_cache import SharedPrefix
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.simulation import simulate
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import LLAMA_3_8B


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    gpu = find_gpu("NVIDIA H100 SXM")
    step = RooflineStep(LLAMA_3_8B, gpu, "bfloat16")
    loads = [{"clients": c} for c in (1, 16, 64, 256)] + [{"rate_per_s": r} for r in (5.0, 30.0)]
    engines = {
        "prompts first": Engine(),
        "chunked prefill": Engine(chunked_prefill=True, max_batched_tokens=2048),
        "CUDA graphs, 50 % prefix": Engine(cuda_graphs=True, prefix=SharedPrefix(800, 0.5)),
    }
    for label, engine in engines.items():
        for load in loads:
            start = time.process_time()
            result = simulate(step, engine, Lengths.fixed(1000), Lengths.fixed(200), n_requests=n, **load)
            spent = time.process_time() - start
            ((name, value),) = load.items()
            print(f"{label:<25} {name}={value:<6g} {result.steps:>8,} steps  {spent:6.2f} s CPU")
    start = time.process_time()
    run = simulate_disaggregated(step, Engine(), Lengths.fixed(1000), Lengths.fixed(200), Split(1, 3), nvlink(gpu),
                                 n_requests=n, rate_per_s=30.0)  # fmt: skip
    spent = time.process_time() - start
    print(f"{'disaggregated 1:3':<25} rate_per_s=30     {run.result.steps:>8,} steps  {spent:6.2f} s CPU")


if __name__ == "__main__":
    main()
