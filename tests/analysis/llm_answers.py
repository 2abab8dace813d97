"""Recorded answers of the LLM-serving simulator, to hold them fixed while its code is reorganised.

Each case runs the simulator (and its planner) on a datasheet GPU's forecast step and keeps the figures a user
reads. These are simulated, not measured: nothing here reaches a page. `python -m tests.analysis.llm_answers
--write` records them anew into llm_answers.json, for a change that means to move them (say why in its commit).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.serving.llm.disaggregated import Split, nvlink, simulate_disaggregated
from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.engine_tuning import rows, tune
from benchmarks.analysis.serving.llm.forecast_step import ForecastStep
from benchmarks.analysis.serving.llm.planning import plan
from benchmarks.analysis.serving.llm.prefix_cache import SharedPrefix
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.run_result import Budget
from benchmarks.analysis.serving.llm.simulation import simulate
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import find_model

RECORDED = Path(__file__).with_name("llm_answers.json")
H100 = find_gpu("NVIDIA H100 SXM")


def _step(model: str = "Llama-3-8B", tp: int = 1, **options) -> ForecastStep:
    base = RooflineStep(find_model(model), H100, "bfloat16", tensor_parallel=tp, **options)
    return ForecastStep.of(base, calibration_file.committed().efficiency("decode", "bfloat16"))


def _summary(result) -> dict:
    keep = ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "itl_p50_ms", "tokens_per_s", "mean_running",
            "max_running", "kv_peak_share", "preemptions", "steps", "prefilled_tokens")  # fmt: skip
    found = result.summary()
    return {k: found[k] for k in keep} | {k: v for k, v in found.items() if k.startswith("prefix_")}


def simulations() -> dict:
    fixed, short = Lengths.fixed(1000), Lengths.fixed(200)
    graphs = Engine(cuda_graphs=True)
    cases = {
        "poisson, whole prompts, graphs": (_step(), graphs, fixed, short, {"rate_per_s": 20.0}),
        "closed loop, chunked 512": (
            _step(), Engine(chunked_prefill=True, max_batched_tokens=512), fixed, short, {"clients": 32}
        ),
        "prefix cache half the requests": (
            _step(), Engine(cuda_graphs=True, prefix=SharedPrefix(800, 0.5)), fixed, short, {"rate_per_s": 20.0}
        ),
        "reserve, log-normal lengths": (
            _step(), Engine(reserve=True, max_model_len=8192), Lengths.lognormal(800, 1.0, 6000),
            Lengths.lognormal(150, 0.8, 2000), {"rate_per_s": 10.0},
        ),
        "preemption in a small cache": (
            _step(), Engine(memory_fraction=0.25, chunked_prefill=True), Lengths.uniform(200, 3000),
            Lengths.uniform(50, 1500), {"clients": 200},
        ),
        "MoE, TP2, expert parallel, skewed": (
            _step("Mixtral-8x7B", 2, routing_skew=1.0, expert_parallel=True), graphs, fixed, short, {"clients": 16}
        ),
    }  # fmt: skip
    found = {}
    for name, (step, engine, prompt, output, load) in cases.items():
        found[name] = _summary(simulate(step, engine, prompt, output, n_requests=400, seed=3, **load))
    d = simulate_disaggregated(_step(), Engine(), fixed, short, Split(1, 1), nvlink(H100), rate_per_s=15.0,
                               n_requests=400, seed=3)  # fmt: skip
    found["disaggregated 1:1"] = _summary(d.result)
    return found


def plans() -> dict:
    found = plan(_step(), Engine(cuda_graphs=True), Lengths.fixed(1000), Lengths.fixed(200), Budget(0.05),
                 n_requests=300)  # fmt: skip
    planned = {"concurrency": found.concurrency, "binds": found.binds, "rate_per_s": found.rate_per_s,
               "searched_per_s": found.searched_per_s, "failed": len(found.failed)}  # fmt: skip

    def step_for(tp: int) -> ForecastStep:
        return _step("Llama-3.1-8B", tp)

    tuned = tune(step_for, Engine(cuda_graphs=True), Lengths.fixed(1000), Lengths.fixed(200), Budget(0.03), 2,
                 n_requests=200)  # fmt: skip
    return {"plan, 50 ms": planned, "tune over 2 GPUs, 30 ms": rows(tuned)}


def answers() -> dict:
    return {"simulations": simulations(), "plans": plans()}


def close(a, b, rel: float = 1e-9) -> bool:
    """Equal, floats to a relative `rel` (NaN equal to NaN), through dicts and lists."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)
    return a == b


if __name__ == "__main__":
    if "--write" not in sys.argv[1:]:
        sys.exit("python -m tests.analysis.llm_answers --write records the simulator's answers anew")
    RECORDED.write_text(json.dumps(answers(), indent=1, sort_keys=True) + "\n")
    print(RECORDED)
