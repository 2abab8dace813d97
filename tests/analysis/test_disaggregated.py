"""Disaggregated prefill and decode against hand-computed times for a lone request, the link's share of the time to
first token, and the comparison with aggregated serving on the same GPUs."""

import pytest

from benchmarks.analysis.serving.llm.disaggregated import (
    KVLink,
    Split,
    compare,
    network,
    nvlink,
    simulate_disaggregated,
)
from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.run_result import Budget
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import LLAMA_3_8B

H100 = find_gpu("NVIDIA H100 SXM")
STEP = RooflineStep(LLAMA_3_8B, H100, "bfloat16")


def test_links_state_their_bandwidth_one_way_per_gpu():
    assert network(400).bytes_per_s == 50e9
    assert nvlink(H100).bytes_per_s == H100.interconnect.bidirectional_bytes_per_s / 2
    link = KVLink("test link", 1e9, latency_s=1e-3)
    assert link.seconds(2e9, 2) == pytest.approx(1.001)  # each of 2 GPUs sends its half


def test_a_lone_request_is_its_prefill_then_its_transfer_then_its_decode_steps():
    link = KVLink("test link", 10e9, latency_s=1e-4)
    run = simulate_disaggregated(STEP, Engine(), Lengths.fixed(1000), Lengths.fixed(5), Split(1, 1), link,
                                 n_requests=1, rate_per_s=1.0)  # fmt: skip
    prefill = STEP.step_seconds(0, 0.0, 1000, 1000 * 1001 / 2, 1000.0, 1)
    transfer = 1e-4 + 1000 * STEP.kv_bytes_per_token / 10e9
    assert run.transfer_s[0] == pytest.approx(transfer)
    assert run.result.ttft_s[0] == pytest.approx(prefill + transfer)
    decode = sum(STEP.step_seconds(1, 1001.0 + j, 0, 0.0, 0.0, 1) for j in range(4))  # tokens 2..5
    assert run.result.e2e_s[0] == pytest.approx(prefill + transfer + decode)
    assert run.result.tpot_s[0] == pytest.approx(decode / 4)


def test_a_slower_link_adds_its_transfer_to_the_first_token_only():
    args = dict(n_requests=50, rate_per_s=2.0, seed=4)
    fast = simulate_disaggregated(STEP, Engine(), Lengths.fixed(1000), Lengths.fixed(50), Split(1, 1),
                                  network(400), **args)  # fmt: skip
    slow = simulate_disaggregated(STEP, Engine(), Lengths.fixed(1000), Lengths.fixed(50), Split(1, 1),
                                  network(10), **args)  # fmt: skip
    extra = slow.transfer_s[0] - fast.transfer_s[0]
    assert extra == pytest.approx(1000 * STEP.kv_bytes_per_token * (1 / 1.25e9 - 1 / 50e9))
    assert (slow.result.ttft_s - fast.result.ttft_s).min() >= extra * 0.999
    assert slow.result.tpot_s.tolist() == pytest.approx(fast.result.tpot_s.tolist(), rel=0.05)


def test_the_same_seed_gives_the_same_run():
    def run():
        lengths = Lengths.uniform(100, 2000), Lengths.uniform(10, 300)
        split = Split(2, 3)
        return simulate_disaggregated(STEP, Engine(), *lengths, split, nvlink(H100), n_requests=300, rate_per_s=30.0,
                                      seed=7).result  # fmt: skip

    assert run().ttft_s.tolist() == run().ttft_s.tolist()


def test_a_tight_budget_per_token_favours_decode_engines_a_loose_one_aggregated_serving():
    # prompts of 2,000 tokens stall every aggregated decode step they share; decode engines never see them
    prompt, output = Lengths.fixed(2000), Lengths.fixed(100)
    tight = compare(STEP, Engine(), prompt, output, Budget(0.010), Split(1, 3), nvlink(H100), n_requests=300)
    assert tight.winner == "disaggregated"
    assert tight.disaggregated.result.percentile("tpot", 99) <= 0.010
    loose = compare(STEP, Engine(), prompt, output, Budget(0.100), Split(3, 1), nvlink(H100), n_requests=300)
    assert loose.winner == "aggregated"
    assert loose.aggregated_per_gpu > loose.disaggregated_per_gpu


def test_the_prefill_engines_cache_a_shared_prefix():
    from benchmarks.analysis.serving.llm.prefix_cache import SharedPrefix

    def run(engine):
        return simulate_disaggregated(STEP, engine, Lengths.fixed(1000), Lengths.fixed(20), Split(1, 1),
                                      nvlink(H100), n_requests=200, rate_per_s=20.0)  # fmt: skip

    plain, cached = run(Engine()), run(Engine(prefix=SharedPrefix(800, 0.9)))
    assert cached.result.percentile("ttft", 50) < 0.6 * plain.result.percentile("ttft", 50)
    assert cached.transfer_s.tolist() == plain.transfer_s.tolist()  # the whole prompt's cache still crosses
