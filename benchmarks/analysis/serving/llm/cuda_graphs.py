"""CUDA-graph padding of decode steps: the batch sizes an engine captures graphs for, and the size each decode batch
runs at (the smallest captured size that holds it, or itself beyond the largest).

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from collections.abc import Sequence

# The decode batch sizes vLLM's V0 engine captured CUDA graphs for, up to max_num_seqs rounded up to a multiple of 8
# (vllm/worker/model_runner.py, https://github.com/vllm-project/vllm/pull/7894, merged 2024-08-29: “Capture graphs
# for token size 1, 2, 4, 8, 16, 24, 32, 40, ..., 256.”, `_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [_BATCH_SIZE_ALIGNMENT
# * i for i in range(1, 1025)]`, `_BATCH_SIZE_ALIGNMENT = 8`). TensorRT-LLM pads the same way with its own list when
# asked (https://nvidia.github.io/TensorRT-LLM/llm-api/reference/DecodeCudaGraphConfig.html, enable_padding: “If
# true, batches are rounded up to the nearest cuda_graph_batch_size.”).
GRAPH_ALIGNMENT = 8


def vllm_graph_sizes(max_num_seqs: int) -> tuple[int, ...]:
    """The batch sizes vLLM's V0 engine captured for a running-sequence cap: 1, 2, 4, then every multiple of 8 up to
    the cap rounded up to one."""
    if max_num_seqs <= 4:
        top = min(n for n in (1, 2, 4) if n >= max_num_seqs)
        return tuple(n for n in (1, 2, 4) if n <= top)
    top = -(-max_num_seqs // GRAPH_ALIGNMENT) * GRAPH_ALIGNMENT
    return (1, 2, 4, *range(GRAPH_ALIGNMENT, top + 1, GRAPH_ALIGNMENT))


# The sizes vLLM's V1 engine (the only one since 0.11) captures by default: 1, 2, 4, every multiple of 8 below 256,
# then every multiple of 16, up to max_cudagraph_capture_size, which is min(2 × max_num_seqs, 512) unless set; a
# larger batch runs without a graph (https://docs.vllm.ai/en/latest/configuration/engine_args/,
# --max-cudagraph-capture-size: "[1, 2, 4] + list(range(8, 256, 8)) + list(range(256, max_cudagraph_capture_size + 1,
# 16)) ... If not specified, max_cudagraph_capture_size is set to min(max_num_seqs*2, 512) by default").
V1_LARGEST_GRAPH = 512


def vllm_v1_graph_sizes(max_num_seqs: int) -> tuple[int, ...]:
    """The batch sizes vLLM's V1 engine captures for a running-sequence cap, by default."""
    top = min(2 * max_num_seqs, V1_LARGEST_GRAPH)
    return (*(n for n in (1, 2, 4) if n <= top), *range(8, min(top + 1, 256), 8), *range(256, top + 1, 16))


def padded_batches(sizes: Sequence[int], largest: int) -> list[int]:
    """For every decode batch 0..largest, the captured size it runs at: the smallest size that holds it, or itself
    beyond the largest size (run without a graph)."""
    ordered = sorted(set(sizes))
    table, k = [], 0
    for n in range(largest + 1):
        while k < len(ordered) and ordered[k] < n:
            k += 1
        table.append(ordered[k] if k < len(ordered) and n > 0 else n)
    return table
