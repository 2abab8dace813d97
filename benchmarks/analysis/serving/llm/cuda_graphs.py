"""CUDA-graph padding of decode steps: the batch sizes an engine captures graphs for, and the size each decode batch
runs at (the smallest captured size that holds it, or itself beyond the largest).

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from collections.abc import Sequence

# The decode batch sizes vLLM captures CUDA graphs for, up to max_num_seqs rounded up to a multiple of 8
# (vllm/worker/model_runner.py, https://github.com/vllm-project/vllm/pull/7894, merged 2024-08-29: “Capture graphs
# for token size 1, 2, 4, 8, 16, 24, 32, 40, ..., 256.”, `_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [_BATCH_SIZE_ALIGNMENT
# * i for i in range(1, 1025)]`, `_BATCH_SIZE_ALIGNMENT = 8`). TensorRT-LLM pads the same way with its own list when
# asked (https://nvidia.github.io/TensorRT-LLM/llm-api/reference/DecodeCudaGraphConfig.html, enable_padding: “If
# true, batches are rounded up to the nearest cuda_graph_batch_size.”).
GRAPH_ALIGNMENT = 8


def vllm_graph_sizes(max_num_seqs: int) -> tuple[int, ...]:
    """The batch sizes vLLM captures for a running-sequence cap: 1, 2, 4, then every multiple of 8 up to the cap
    rounded up to one."""
    if max_num_seqs <= 4:
        top = min(n for n in (1, 2, 4) if n >= max_num_seqs)
        return tuple(n for n in (1, 2, 4) if n <= top)
    top = -(-max_num_seqs // GRAPH_ALIGNMENT) * GRAPH_ALIGNMENT
    return (1, 2, 4, *range(GRAPH_ALIGNMENT, top + 1, GRAPH_ALIGNMENT))


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
