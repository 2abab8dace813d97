"""CUDA-graph padding: vLLM's capture sizes, the size each decode batch runs at, and its cost in the simulator."""

import pytest

from benchmarks.analysis.serving.llm.cuda_graphs import padded_batches, vllm_graph_sizes
from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.simulation import simulate
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import LLAMA_3_8B

STEP = RooflineStep(LLAMA_3_8B, find_gpu("NVIDIA H100 SXM"), "bfloat16", fixed_s=0.0)


def test_vllms_sizes_are_1_2_4_then_multiples_of_8_up_to_the_cap_rounded_up():
    assert vllm_graph_sizes(256) == (1, 2, 4, *range(8, 257, 8))
    assert vllm_graph_sizes(37)[-1] == 40
    assert vllm_graph_sizes(3) == (1, 2, 4)
    assert vllm_graph_sizes(1) == (1,)


def test_a_batch_runs_at_the_smallest_size_that_holds_it():
    table = padded_batches((1, 2, 4, 8, 16), 20)
    assert table[:10] == [0, 1, 2, 4, 4, 8, 8, 8, 8, 16]
    assert table[17:] == [17, 18, 19, 20]  # beyond the largest graph: run as it is


def test_a_padded_decode_step_pays_the_padding_rows_matrix_products():
    # 3 clients decode in batches of 3, padded to 4: compute-bound work rises by a third, memory-bound barely
    engine = Engine(max_num_seqs=3)
    plain = simulate(STEP, engine, Lengths.fixed(100), Lengths.fixed(50), n_requests=3, clients=3)
    padded = simulate(STEP, Engine(max_num_seqs=3, cuda_graphs=True), Lengths.fixed(100), Lengths.fixed(50),
                      n_requests=3, clients=3)  # fmt: skip
    expected = STEP.step_seconds(3, 3 * 120.0, 1, 0.0, 0.0, 4)
    assert padded.percentile("itl", 50) == pytest.approx(expected, rel=1e-3)
    assert padded.percentile("itl", 50) > plain.percentile("itl", 50)
    assert padded.percentile("ttft", 50) == plain.percentile("ttft", 50)  # prefills are not padded


def test_a_batch_already_at_a_captured_size_is_not_padded():
    engine = Engine(max_num_seqs=8)
    args = dict(n_requests=8, clients=8)
    plain = simulate(STEP, engine, Lengths.fixed(100), Lengths.fixed(50), **args)
    padded = simulate(STEP, Engine(max_num_seqs=8, cuda_graphs=True), Lengths.fixed(100), Lengths.fixed(50), **args)
    assert padded.itl_s.tolist() == plain.itl_s.tolist()
