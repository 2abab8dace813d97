"""Prefix caching: the cache's reference counts and eviction order, and the simulator with a shared prefix (fewer
prompt tokens computed, the prefix's blocks held once, evicted under pressure before anything is preempted)."""

import pytest

from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.prefix_cache import PrefixCache, SharedPrefix
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.simulation import simulate
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import LLAMA_3_8B

STEP = RooflineStep(LLAMA_3_8B, find_gpu("NVIDIA H100 SXM"), "bfloat16")


def test_a_published_prefix_is_found_from_its_start_and_shared():
    cache = PrefixCache()
    assert cache.acquire(0, 4) == (0, 0)
    assert cache.publish(0, 0, 4) == [0, 1, 2, 3]
    assert cache.acquire(0, 4) == (4, 0)  # held by the first sequence: nothing newly pinned
    assert cache.release(0, [0, 1, 2, 3]) == 0  # the second still holds them
    assert cache.release(0, [0, 1, 2, 3]) == 4
    assert cache.acquire(0, 6) == (4, 4)  # unreferenced but resident: taken back, and now pinned
    assert cache.hit_share == pytest.approx(8 / 14)


def test_the_longest_unused_block_goes_first_and_a_prefix_loses_its_end_first():
    cache = PrefixCache()
    cache.publish(0, 0, 3)
    cache.publish(1, 0, 3)
    cache.release(0, [0, 1, 2])  # prefix 0 unused first
    cache.release(1, [0, 1, 2])
    cache.evict_to(4)
    assert cache.resident(0, 3) == 1 and cache.resident(1, 3) == 3  # prefix 0's blocks 2 and 1 went
    cache.acquire(1, 3)
    cache.evict_to(0)
    assert cache.resident(0, 3) == 0 and cache.resident(1, 3) == 3  # referenced blocks are never evicted
    assert cache.evicted == 3


def test_at_least_the_last_prompt_token_is_computed():
    assert SharedPrefix(800, 1.0).blocks(16, 1000) == 50
    assert SharedPrefix(800, 1.0).blocks(16, 800) == 49  # 799 tokens: 49 whole blocks
    assert SharedPrefix(5, 1.0).blocks(16, 1000) == 0  # not one whole block


def run(share, **more):
    engine = Engine(prefix=None if share is None else SharedPrefix(800, share), **more)
    return simulate(STEP, engine, Lengths.fixed(1000), Lengths.fixed(200), n_requests=400, rate_per_s=20.0, seed=3)


def test_no_request_with_the_prefix_is_the_run_without_prefix_caching():
    a, b = run(None), run(0.0)
    assert a.tpot_s.tolist() == b.tpot_s.tolist() and a.ttft_s.tolist() == b.ttft_s.tolist()
    assert b.prefilled_tokens == 400 * 1000


@pytest.mark.parametrize("chunked", [False, True])
def test_cached_blocks_are_not_computed_again(chunked):
    found = run(0.9, chunked_prefill=chunked, max_batched_tokens=2048 if chunked else 8192)
    plain = run(None, chunked_prefill=chunked, max_batched_tokens=2048 if chunked else 8192)
    carriers = round((400 * 1000 - found.prefilled_tokens) / 800)  # requests that took all 50 blocks from the cache
    assert 0.85 * 400 < carriers < 0.95 * 400
    assert found.prefix_hit_share > 0.99  # only the first carrier computes the prefix
    assert found.percentile("ttft", 50) < 0.6 * plain.percentile("ttft", 50)
    assert run(0.9, chunked_prefill=chunked, max_batched_tokens=2048 if chunked else 8192).ttft_s.tolist() == (
        found.ttft_s.tolist()
    )  # deterministic under the seed


def test_the_prefix_occupies_its_blocks_once():
    # every prompt carries the prefix: a sequence holds 63 blocks of prompt (75 at its end) without sharing, 13 of
    # its own (25 at its end) with it, beside one shared copy of the prefix's 50
    engine = Engine(prefix=SharedPrefix(800, 1.0))
    shared = simulate(STEP, engine, Lengths.fixed(1000), Lengths.fixed(200), n_requests=400, rate_per_s=20.0)
    plain = simulate(STEP, Engine(), Lengths.fixed(1000), Lengths.fixed(200), n_requests=400, rate_per_s=20.0)
    assert plain.kv_peak_blocks >= 63 * plain.max_running
    assert shared.kv_peak_blocks <= 2 * 50 + 25 * shared.max_running  # at most one copy more, computed meanwhile


def test_under_pressure_the_unused_prefix_is_evicted_and_computed_again():
    # a cache of 160 blocks: two requests of 75 blocks fit; half the prompts carry the prefix, so between two
    # carriers an unrelated pair of requests takes the prefix's blocks once no sequence holds them
    engine = Engine(prefix=SharedPrefix(800, 0.5))
    found = simulate(STEP, engine, Lengths.fixed(1000), Lengths.fixed(200), n_requests=300, clients=2,
                     kv_blocks=160, seed=1)  # fmt: skip
    assert found.prefix_evictions > 0
    assert 0 < found.prefix_hit_share < 1
    assert found.preemptions == 0  # cached blocks no sequence holds are taken before any sequence is preempted
    roomy = simulate(STEP, engine, Lengths.fixed(1000), Lengths.fixed(200), n_requests=300, clients=2, seed=1)
    assert roomy.prefix_evictions == 0 and roomy.prefix_hit_share > found.prefix_hit_share
