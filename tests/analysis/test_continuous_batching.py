"""The continuous-batching simulator against hand-computed step times, its own one-step-at-a-time loop,
Little's law, the KV limit and the budget search."""

import numpy as np
import pytest

from benchmarks.analysis.roofline.decode import decode_terms
from benchmarks.analysis.roofline.forecast import Efficiency
from benchmarks.analysis.serving.llm.engine_config import Engine, Infeasible
from benchmarks.analysis.serving.llm.engine_loop import EngineLoop
from benchmarks.analysis.serving.llm.forecast_step import ForecastStep
from benchmarks.analysis.serving.llm.planning import CAP_RESOLUTION, front, largest_rate, pareto, plan
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.roofline_step import KERNELS_PER_LAYER, LAYER_KERNELS, RooflineStep
from benchmarks.analysis.serving.llm.run_result import Budget
from benchmarks.analysis.serving.llm.simulation import simulate
from benchmarks.analysis.serving.llm.steady_state import (
    STEADY_GROWTH,
    STEADY_SERVED,
    simulate_steady,
    steady,
    window_figures,
)
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import (
    LLAMA_2_70B,
    LLAMA_3_3_70B,
    LLAMA_3_8B,
    MISTRAL_7B,
    MIXTRAL_8X7B,
    find_model,
    model_weight_bytes,
)
from benchmarks.site.llm_serving_words import decode_step_words, explain

H100 = find_gpu("NVIDIA H100 SXM")


def step(**more):
    return RooflineStep(LLAMA_3_8B, H100, "bfloat16", **more)


def test_published_models_count_their_embedding_and_head():
    # billions of weights, from each published configuration (embedding and output head untied)
    assert model_weight_bytes(LLAMA_3_8B, 1) / 1e9 == pytest.approx(8.030, abs=0.001)
    assert model_weight_bytes(MISTRAL_7B, 1) / 1e9 == pytest.approx(7.242, abs=0.001)
    assert model_weight_bytes(LLAMA_2_70B, 1) / 1e9 == pytest.approx(68.977, abs=0.001)
    assert model_weight_bytes(LLAMA_3_3_70B, 1) / 1e9 == pytest.approx(70.554, abs=0.001)
    assert model_weight_bytes(find_model("Llama-3.1-405B-Instruct"), 1) / 1e9 == pytest.approx(405.853, abs=0.001)


def test_a_decode_step_is_the_decode_pages_per_operation_sum_plus_the_output_head():
    s = step(fixed_s=0.0)
    c = LLAMA_3_8B.config
    terms = decode_terms({"layers": c.layers, "d_model": c.d_model, "heads": c.heads, "kv_heads": c.kv_heads,
                          "d_ff": c.d_ff, "ffn": c.ffn}, 2)  # fmt: skip
    batch, context = 64, 1000
    flops, moved = terms.matmul_cost(batch)
    head = LLAMA_3_8B.vocab * c.d_model
    matmul = max((flops + 2 * head * batch) / H100.peak_flops["bfloat16"], (moved + 2 * head) / H100.bandwidth)
    attention = max(a / r for a, r in zip(terms.attention_cost(batch, context), (H100.peak_flops["bfloat16"],
                                                                                    H100.bandwidth)))  # fmt: skip
    detail = s.detail(s.decode_work(batch, context))
    assert detail.matmul_s == pytest.approx(matmul)
    assert detail.attention_s == pytest.approx(attention)
    assert detail.seconds == pytest.approx(matmul + attention)
    assert s.seconds(batch, batch, batch * (context + 1), batch * (context + 1)) == pytest.approx(detail.seconds)


def test_the_default_fixed_cost_is_a_published_launch_per_kernel_and_efficiency_divides_the_roofline():
    assert step().fixed_s == pytest.approx(3e-6 * 8 * 32)
    slow = step(fixed_s=0.001, efficiency=0.5)
    fast = step(fixed_s=0.001)
    work = fast.decode_work(8, 500)
    assert slow.detail(work).seconds - 0.001 == pytest.approx(2 * (fast.detail(work).seconds - 0.001))


def test_one_client_gets_the_prefill_then_one_decode_step_per_token():
    s = step()
    r = simulate(s, Engine(), Lengths.fixed(100), Lengths.fixed(5), n_requests=3, clients=1)
    prefill = s.detail(s.prefill_work(100)).seconds
    decodes = [s.detail(s.decode_work(1, 100 + k - 1)).seconds for k in range(1, 5)]
    # the first request is the warm-up of a closed loop; the next two are measured
    assert r.ttft_s == pytest.approx([prefill, prefill])
    assert r.tpot_s == pytest.approx([np.mean(decodes)] * 2)
    assert r.output_tokens == 15 and r.duration_s == pytest.approx(3 * (prefill + sum(decodes)))
    assert len(r.itl_s) == 3 * 4 and r.max_running == 1 and r.preemptions == 0


@pytest.mark.parametrize(("chunked", "reserve"), [(False, False), (True, False), (False, True), (True, True)])
def test_running_several_decode_steps_at_once_gives_exactly_the_one_at_a_time_answer(monkeypatch, chunked, reserve):
    engine = Engine(chunked_prefill=chunked, max_batched_tokens=1024, reserve=reserve)
    args = (step(), engine, Lengths.uniform(50, 400), Lengths.lognormal(80, 0.7, 500))
    bulk = simulate(*args, n_requests=300, rate_per_s=40, seed=3)
    monkeypatch.setattr(EngineLoop, "_bulk", lambda *a, **k: None)
    single = simulate(*args, n_requests=300, rate_per_s=40, seed=3)
    for metric in ("ttft_s", "tpot_s", "e2e_s", "itl_s"):
        assert np.allclose(getattr(bulk, metric), getattr(single, metric), rtol=1e-9, atol=1e-12)
    assert (bulk.steps, bulk.kv_peak_blocks) == (single.steps, single.kv_peak_blocks)


@pytest.mark.parametrize("forecast", [False, True], ids=["ceiling", "forecast"])
def test_decode_steps_timed_in_numpy_give_the_loops_answer_to_the_last_bit(monkeypatch, forecast):
    ceiling = RooflineStep(MIXTRAL_8X7B, H100, "bfloat16", tensor_parallel=2)
    s = ForecastStep.of(ceiling, Efficiency(0.6, 0.7, 0.004)) if forecast else ceiling
    args = (s, Engine(chunked_prefill=True), Lengths.uniform(50, 400), Lengths.lognormal(200, 0.7, 900))
    vector = simulate(*args, n_requests=300, rate_per_s=40, seed=5)
    monkeypatch.setattr("benchmarks.analysis.serving.llm.engine_loop.VECTOR_STEPS", 10**9)
    loop = simulate(*args, n_requests=300, rate_per_s=40, seed=5)
    for metric in ("ttft_s", "tpot_s", "e2e_s", "itl_s"):
        assert np.array_equal(getattr(vector, metric), getattr(loop, metric))
    assert (vector.steps, vector.duration_s, vector.mean_running) == (loop.steps, loop.duration_s, loop.mean_running)


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    args = (step(), Engine(), Lengths.lognormal(300, 0.8, 2000), Lengths.lognormal(100, 0.8, 1000))
    one, two = (simulate(*args, n_requests=200, rate_per_s=20, seed=7) for _ in range(2))
    other = simulate(*args, n_requests=200, rate_per_s=20, seed=8)
    assert np.array_equal(one.e2e_s, two.e2e_s) and not np.array_equal(one.e2e_s, other.e2e_s)


def test_littles_law_holds_for_a_poisson_load():
    r = simulate(step(), Engine(), Lengths.fixed(500), Lengths.fixed(100), n_requests=2000, rate_per_s=30, seed=1)
    assert not r.overloaded
    assert r.mean_running == pytest.approx(r.requests_per_s * r.e2e_s.mean(), rel=0.05)


def test_an_offered_rate_beyond_capacity_is_overloaded():
    r = simulate(step(), Engine(max_num_seqs=8), Lengths.fixed(500), Lengths.fixed(100), n_requests=500,
                 rate_per_s=200, seed=1)  # fmt: skip
    assert r.overloaded and r.max_running == 8


def test_the_kv_cache_caps_the_batch_and_preempts_when_sequences_grow():
    # 40 blocks of 16 tokens: four sequences of 100 + 60 tokens (10 blocks each) at most
    r = simulate(step(), Engine(), Lengths.fixed(100), Lengths.fixed(60), n_requests=40, clients=12, kv_blocks=40)
    assert r.max_running <= 6 and r.kv_peak_blocks <= 40
    assert r.preemptions > 0  # admitted on their prompts' blocks (7 each), they outgrow the cache
    assert len(r.tpot_s) == 40 - 12


def test_a_request_larger_than_the_cache_or_than_a_prefill_step_is_infeasible():
    with pytest.raises(Infeasible, match="KV cache holds"):
        simulate(step(), Engine(), Lengths.fixed(1000), Lengths.fixed(10), n_requests=2, clients=1, kv_blocks=10)
    with pytest.raises(Infeasible, match="max_batched_tokens"):
        simulate(step(), Engine(max_batched_tokens=512), Lengths.fixed(1000), Lengths.fixed(10), n_requests=2,
                 clients=1)  # fmt: skip


def test_chunked_prefill_shortens_the_stalls_prompts_cause():
    args = (Lengths.fixed(4000), Lengths.fixed(200))
    whole = simulate(step(), Engine(), *args, n_requests=300, rate_per_s=8, seed=2)
    chunked = simulate(step(), Engine(chunked_prefill=True, max_batched_tokens=512), *args, n_requests=300,
                       rate_per_s=8, seed=2)  # fmt: skip
    assert chunked.itl_s.max() < 0.5 * whole.itl_s.max()
    assert chunked.percentile("tpot", 99) < whole.percentile("tpot", 99)


def test_more_clients_raise_total_tokens_per_second_and_lower_each_users():
    points = front(step(), Engine(), Lengths.fixed(1000), Lengths.fixed(200), [1, 8, 64], n_requests=200)
    totals = [p.result.tokens_per_s for p in points]
    users = [p.result.tokens_per_s_per_user for p in points]
    assert totals == sorted(totals) and users == sorted(users, reverse=True)
    assert [p.concurrency for p in pareto(points)] == [1, 8, 64]


def test_a_budget_is_met_at_the_largest_concurrency_found_and_missed_one_above():
    lengths = (Lengths.fixed(1000), Lengths.fixed(200))
    budget = Budget(0.012)
    found = plan(step(), Engine(), *lengths, budget, n_requests=200, find_rate=False)
    assert found is not None and 1 < found.concurrency < found.kv_limit
    assert not budget.misses(found.result) and "tpot" in budget.misses(found.beyond)
    assert found.binds in ("step-time", "prefills")
    assert str(found.concurrency) in explain(found)


def test_a_large_cap_is_searched_to_within_its_resolution_and_the_answer_says_so():
    lengths = (Lengths.fixed(1000), Lengths.fixed(200))
    budget = Budget(0.05)
    found = plan(step(), Engine(), *lengths, budget, n_requests=100, find_rate=False)
    assert found.concurrency >= 2 * CAP_RESOLUTION  # where the search may stop short of one client
    more = found.beyond_concurrency
    assert found.concurrency < more <= found.concurrency + found.concurrency // CAP_RESOLUTION
    assert not budget.misses(found.result) and "tpot" in budget.misses(found.beyond)
    said = explain(found)
    if more > found.concurrency + 1:  # so it is here (378, then 382): the words say it is not one client short
        assert f"Up to about {found.concurrency:,} concurrent requests" in said and f"({more:,} miss it)" in said
    assert f"with {more:,} clients" in said


def test_a_loose_budget_is_bound_by_the_kv_memory_and_an_impossible_one_by_nothing():
    lengths = (Lengths.fixed(1000), Lengths.fixed(200))
    small = step()
    loose = plan(small, Engine(memory_fraction=0.3), *lengths, Budget(10.0), n_requests=100, find_rate=False)
    assert loose.binds == "kv-memory" and loose.concurrency == loose.kv_limit
    assert "KV memory" in explain(loose)
    assert plan(small, Engine(), *lengths, Budget(0.001), n_requests=50, find_rate=False) is None


def test_the_largest_rate_meets_the_budget_and_keeps_up():
    lengths = (Lengths.fixed(500), Lengths.fixed(100))
    budget = Budget(0.020, 1.0)
    rate, result = largest_rate(step(), Engine(max_num_seqs=64), *lengths, budget, 5.0, n_requests=300)
    assert rate is not None and rate > 5 and not budget.misses(result)
    faster = simulate(step(), Engine(max_num_seqs=64), *lengths, n_requests=300, rate_per_s=rate * 1.2)
    assert budget.misses(faster)


@pytest.mark.parametrize("chunked", [False, True])
def test_reserving_each_answers_blocks_admits_fewer_and_never_preempts(chunked):
    # 40 blocks of 16 tokens; a request of 100 + 60 tokens needs 10 when it ends, 7 for its prompt
    engine = Engine(chunked_prefill=chunked, max_batched_tokens=512, reserve=True)
    r = simulate(step(), engine, Lengths.fixed(100), Lengths.fixed(60), n_requests=40, clients=12, kv_blocks=40)
    assert r.preemptions == 0 and r.max_running == 4 and r.kv_peak_blocks == 40
    greedy = simulate(step(), Engine(chunked_prefill=chunked, max_batched_tokens=512), Lengths.fixed(100),
                      Lengths.fixed(60), n_requests=40, clients=12, kv_blocks=40)  # fmt: skip
    assert greedy.max_running > 4


def one_at_a_time_seconds(s: RooflineStep, prompt: int, output: int) -> float:
    """A request served alone: its prefill step, then a decode step per further token (an M/D/1 server's time)."""
    prefill = s.detail(s.prefill_work(prompt)).seconds
    return prefill + sum(s.detail(s.decode_work(1, prompt + k)).seconds for k in range(1, output))


@pytest.mark.parametrize("load, stable", [(0.5, True), (1.3, False)])
def test_one_sequence_at_a_time_is_steady_below_its_capacity_and_not_above(load, stable):
    s, engine = step(), Engine(max_num_seqs=1)
    capacity = 1 / one_at_a_time_seconds(s, 200, 20)
    run = simulate(s, engine, Lengths.fixed(200), Lengths.fixed(20), n_requests=3000, rate_per_s=load * capacity)
    found = steady(run, Budget(1.0))
    assert found.stable is stable
    if stable:  # a queue that keeps up serves what is offered, and its wait does not grow over the window
        assert found.served_share == pytest.approx(1, abs=0.05) and abs(found.backlog_growth) < 10
    else:  # above capacity it serves at most its capacity, and the queue and the wait for a first token grow
        assert found.served_per_s <= capacity * 1.02 and found.backlog_growth > 0.2 * found.window
        assert found.ttft_second_half_s > 2 * found.ttft_first_half_s


def test_a_steady_runs_own_throughput_is_what_it_serves_one_sequence_at_a_time():
    # an M/D/1-like engine (one sequence, fixed lengths) at half its capacity: the window serves the rate it is
    # offered, and its tokens per second are that rate times the output length
    s, engine = step(), Engine(max_num_seqs=1)
    capacity = 1 / one_at_a_time_seconds(s, 200, 20)
    run = simulate_steady(s, engine, Lengths.fixed(200), Lengths.fixed(20), rate_per_s=0.5 * capacity,
                             n_requests=3000)  # fmt: skip
    found = window_figures(run)
    assert run.requests == 3000 and found["steady"]
    assert found["steady_requests_per_s"] == pytest.approx(found["steady_arrived_per_s"], rel=0.05)
    assert found["steady_tokens_per_s"] == pytest.approx(20 * found["steady_requests_per_s"], rel=0.02)
    closed = simulate(s, engine, Lengths.fixed(200), Lengths.fixed(20), n_requests=30, clients=2)
    assert window_figures(closed) is None  # a closed loop has no offered rate to be steady at


def test_a_run_too_short_for_its_latency_is_lengthened_until_steady():
    # 20 requests/s of 1,000 + 200 tokens on one H100: a request takes seconds, so 400 requests' first 10 % arrive
    # before the engine has filled; doubling the run reaches a steady window, and more sequences share each step
    s, prompt, output = step(), Lengths.fixed(1000), Lengths.fixed(200)
    short = simulate(s, Engine(), prompt, output, n_requests=400, rate_per_s=20)
    assert not short.overloaded and not window_figures(short)["steady"]
    run = simulate_steady(s, Engine(), prompt, output, rate_per_s=20, n_requests=400)
    found = window_figures(run)
    assert 400 < run.requests <= STEADY_GROWTH * 400 and found["steady"]
    assert run.mean_running > short.mean_running and run.percentile("tpot", 50) > short.percentile("tpot", 50)


@pytest.mark.parametrize("load", [1.1, 1.5])
def test_a_load_above_capacity_ends_overloaded_and_never_steady(load):
    # just above capacity the first run may still look as if it keeps up: lengthening it shows the queue growing;
    # well above, the first run is overloaded already and is not lengthened
    s, engine = step(), Engine(max_num_seqs=1)
    capacity = 1 / one_at_a_time_seconds(s, 200, 20)
    run = simulate_steady(s, engine, Lengths.fixed(200), Lengths.fixed(20), rate_per_s=load * capacity,
                             n_requests=500)  # fmt: skip
    found = window_figures(run)
    assert run.overloaded and not found["steady"] and found["steady_requests_per_s"] <= capacity * 1.02
    assert run.requests == 500 if load == 1.5 else 500 < run.requests <= STEADY_GROWTH * 500


@pytest.mark.slow
def test_a_rate_found_by_a_short_search_above_capacity_is_not_reported():
    """Llama-3-8B on an H100 at 50 ms p99: the 1,000-request search finds a rate the engine cannot sustain; the
    answer is the largest rate that passes a run five times as long at steady state, the same under the seed."""
    s, lengths, budget = step(), (Lengths.fixed(1000), Lengths.fixed(200)), Budget(0.050)
    found = plan(s, Engine(), *lengths, budget, n_requests=1000)
    assert found.searched_per_s is not None and found.failed and found.failed[0].rate_per_s == found.searched_per_s
    assert not found.failed[0].stable and found.failed[0].served_share < STEADY_SERVED
    ok = found.steady
    assert ok.requests == 5000 and ok.meets(budget) and found.rate_per_s == ok.rate_per_s < found.searched_per_s
    said = explain(found)
    assert f"meets the budget at steady state up to about {ok.rate_per_s:.2f} requests/s" in said
    assert f"meets the budget up to about {found.searched_per_s:.2f}" not in said
    assert f"found {found.searched_per_s:.2f}/s, which fails that check (it did not keep up" in said
    again = plan(s, Engine(), *lengths, budget, n_requests=1000)
    assert again.rate_per_s == found.rate_per_s


def test_per_user_tokens_per_second_is_given_with_and_without_the_first_token():
    run = simulate(step(), Engine(), Lengths.fixed(1000), Lengths.fixed(200), n_requests=64, clients=16)
    streaming, whole = run.tokens_per_s_per_user, run.tokens_per_s_per_user_with_first
    assert whole < streaming
    assert whole * 16 == pytest.approx(run.tokens_per_s, rel=0.1)  # the clients' share of the total


def test_the_step_words_add_up_to_the_step_they_state():
    import re

    said = decode_step_words(step(), 279.4, 1100)
    total, *parts = (float(x) for x in re.findall(r"([\d.]+) ms", said))
    assert total == pytest.approx(sum(parts), abs=0.11)
    assert "279 sequences" in said and "1,100 tokens" in said


def test_the_step_words_say_whether_the_step_is_the_roofline_or_the_forecast():
    ceiling = decode_step_words(step(), 100, 1100)
    forecast = decode_step_words(ForecastStep.of(step(), Efficiency(0.9, 0.6, 0.005)), 100, 1100)
    assert "on the roofline:" in ceiling and "in the forecast" not in ceiling
    assert "in the forecast" in forecast and "on the roofline:" not in forecast
    assert "5.00 ms fixed" in forecast


def test_the_fixed_cost_counts_the_kernels_it_names():
    assert KERNELS_PER_LAYER == len(LAYER_KERNELS) == 8
    assert step().fixed_s == pytest.approx(3e-6 * len(LAYER_KERNELS) * LLAMA_3_8B.config.layers)


def test_expert_parallel_steps_wait_for_the_busiest_gpu():
    from benchmarks.llm_models import find_model

    mixtral = find_model("Mixtral-8x7B")
    tp = RooflineStep(mixtral, H100, "bfloat16", tensor_parallel=2)
    ep = RooflineStep(mixtral, H100, "bfloat16", tensor_parallel=2, expert_parallel=True)
    # one sequence touches 2 experts a layer: a slice of each on both GPUs, or whole ones where the busier holds more
    assert ep.expert_read_bytes(1) / tp.expert_read_bytes(1) == pytest.approx(1.46, abs=0.01)
    assert ep.seconds(1, 1, 1000, 1000) > tp.seconds(1, 1, 1000, 1000)
    # a large batch touches every expert: the same bytes, and under uniform routing the same work
    assert ep.seconds(4096, 0, 0, 0) == pytest.approx(tp.seconds(4096, 0, 0, 0))
    # a skewed router loads the first block of experts: the busiest GPU's routed work sets a compute-bound step
    skewed = RooflineStep(mixtral, H100, "bfloat16", tensor_parallel=2, expert_parallel=True, routing_skew=1.0)
    assert skewed.matmul_weights > ep.matmul_weights == tp.matmul_weights
    assert "expert parallel: 4 whole experts on each of the 2 GPUs" in ep.describe()
    with pytest.raises(ValueError, match="needs a mixture of experts on at least 2 GPUs"):
        RooflineStep(mixtral, H100, "bfloat16", expert_parallel=True)


def test_a_forecast_step_is_made_from_a_ceiling_step_only():
    forecast = ForecastStep.of(step(), Efficiency(0.9, 0.6, 0.005))
    with pytest.raises(TypeError, match="needs a ceiling step"):
        ForecastStep.of(forecast, Efficiency(0.9, 0.6, 0.005))
