"""The settings search: what it tries, that it picks the setting serving the most tokens/s per GPU within the budget,
and that a width whose weights leave no room is refused, not picked."""

import pytest

from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.engine_tuning import explain_tuning, rows, settings, tune, widths
from benchmarks.analysis.serving.llm.planning import plan
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.run_result import Budget
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import LLAMA_3_3_70B, LLAMA_3_8B

H100 = find_gpu("NVIDIA H100 SXM")


def test_it_tries_every_power_of_two_width_dividing_the_gpus_and_four_batching_settings():
    assert widths(8) == [1, 2, 4, 8] and widths(6) == [1, 2] and widths(1) == [1]
    tried = settings(2, 1200)
    assert len(tried) == 8
    assert {(s.chunked_prefill, s.max_batched_tokens) for s in tried} == {(False, 8192), (True, 512), (True, 2048),
                                                                          (True, 8192)}  # fmt: skip
    assert settings(1, 10_000)[0].max_batched_tokens == 10_000  # whole prompts need room for the longest


@pytest.fixture(scope="module")
def tuned():
    def step_for(tp):
        return RooflineStep(LLAMA_3_8B, H100, "bfloat16", tensor_parallel=tp)

    return tune(step_for, Engine(cuda_graphs=True), Lengths.fixed(1000), Lengths.fixed(100), Budget(0.03), 2,
                n_requests=200)  # fmt: skip


@pytest.mark.slow
def test_the_pick_serves_the_most_tokens_per_gpu_within_the_budget(tuned):
    best = tuned.best
    assert best is not None
    assert best.tokens_per_s_per_gpu == max(t.tokens_per_s_per_gpu for t in tuned.tried if t.tokens_per_s_per_gpu)
    assert best.found.rate_result.percentile("tpot", 99) <= 0.03
    r = best.found.rate_result
    assert best.tokens_per_s_per_gpu == pytest.approx(
        best.found.rate_per_s * r.output_tokens / r.requests / best.setting.tensor_parallel
    )
    assert best.setting.describe() in explain_tuning(tuned)
    assert f"max_num_seqs {best.found.max_num_seqs}" in explain_tuning(tuned)


def test_each_setting_is_the_planners_own_answer(tuned):
    t = next(x for x in tuned.tried if x.setting.tensor_parallel == 1 and x.setting.max_batched_tokens == 512)
    alone = plan(RooflineStep(LLAMA_3_8B, H100, "bfloat16"),
                 Engine(cuda_graphs=True, chunked_prefill=True, max_batched_tokens=512), Lengths.fixed(1000),
                 Lengths.fixed(100), Budget(0.03), n_requests=200)  # fmt: skip
    assert t.found.max_num_seqs == alone.max_num_seqs and t.found.rate_per_s == alone.rate_per_s


def test_a_width_too_narrow_for_the_weights_is_refused():
    def step_for(tp):
        return RooflineStep(LLAMA_3_3_70B, H100, "bfloat16", tensor_parallel=tp)

    found = tune(step_for, Engine(), Lengths.fixed(500), Lengths.fixed(50), Budget(0.05), 2, n_requests=100)
    narrow = [t for t in found.tried if t.setting.tensor_parallel == 1]
    assert narrow and all(t.refused and t.found is None for t in narrow)
    assert found.best is not None and found.best.setting.tensor_parallel == 2


def test_the_answer_is_the_same_on_one_process_and_on_several():
    def step_for(tp):
        return RooflineStep(LLAMA_3_8B, H100, "bfloat16", tensor_parallel=tp)

    ends = []

    def on(workers):
        return tune(step_for, Engine(), Lengths.fixed(500), Lengths.fixed(50), Budget(0.05), 2, n_requests=100,
                    workers=workers, progress=lambda done, total: ends.append((done, total)))  # fmt: skip

    one, several = on(1), on(2)
    assert rows(one) == rows(several) and len(one.tried) == 8
    assert ends[:8] == [(k, 8) for k in range(1, 9)] and ends[8:] == ends[:8]
