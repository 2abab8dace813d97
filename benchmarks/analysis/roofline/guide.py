"""The arithmetic of the batch-size guide: how many sequences a GPU's memory holds once a published model's
weights are loaded (the real ceiling of a decode batch), and where weight-only quantization puts the ridge batch.

Model dimensions come from the model's published configuration, device figures from the datasheet table;
nothing here is measured.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.gpus import GPU
from benchmarks.llm_models import PublishedModel, model_weight_bytes
from snippets.costs import kv_cache_bytes


@dataclass(frozen=True)
class KVBudget:
    weight_bytes: float
    kv_bytes_per_token: float  # K and V of one position of one sequence, every layer
    kv_bytes_per_sequence: float  # at `context` positions
    free_bytes: float  # the device's memory less the weights
    sequences: int  # whole sequences of `context` tokens whose caches fit in the free memory


def kv_budget(
    model: PublishedModel, gpu: GPU, context: int, bytes_per_element: float, kv_bytes_per_element: float | None = None
) -> KVBudget:
    """The decode batch a GPU's memory allows: what is left after the weights, over one sequence's cache (in
    `kv_bytes_per_element`, default the weights'). Activations, workspace and fragmentation take some more, so it is
    an upper bound."""
    weights = model_weight_bytes(model, bytes_per_element)
    kv_size = bytes_per_element if kv_bytes_per_element is None else kv_bytes_per_element
    per_token = kv_cache_bytes(model.config, 1, 1, kv_size)
    per_sequence = per_token * context
    free = gpu.memory_bytes - weights
    return KVBudget(weights, per_token, per_sequence, free, max(0, int(free // per_sequence)))


def weight_only_ridge_batch(gpu: GPU, compute_dtype: str, weight_bits: int) -> float:
    """The ridge batch of a large layer whose weights are stored in `weight_bits` bits and computed in
    `compute_dtype` (W4A16: 4 bits, bf16): b* = (F/BW)·(bytes per weight / 2), so 16 ÷ bits times lower
    than with 16-bit weights."""
    return gpu.ridge_intensity(compute_dtype) * (weight_bits / 8) / 2
