"""What a run decides before it measures: the weight copies each point rotates through, the
memory each KV-cache-hungry curve may hold, and the time spent naming kernels.

Pure Python, so that the time estimate plans exactly as the run does: `workload` is anything with
the adapters' `cost(params, dtype, batch) -> (flops, bytes)` and `weight_bytes(params, dtype)`.
"""

from __future__ import annotations

import math

ROTATE_FACTOR = 3  # rotated weight copies together span at least this many cache sizes
MAX_COPIES = 64
FALLBACK_CACHE_BYTES = 256 * 2**20  # when the device does not report its cache size
KV_MEMORY_SHARE = 0.7  # the KV caches may take this share of the memory left free once the rest is set up
KERNEL_NAMES_BUDGET_S = 30.0  # at most this long spent recording kernel names per run
SAVE_EVERY_S = 10.0  # the results file is rewritten after a sampling round at most this often (and on any stop)


def weight_copies(weight_bytes: int, cache_bytes: int | None, cache: str, memory_bytes: int | None) -> int:
    """How many weight copies to rotate through so that no call finds its weights cached."""
    if cache == "resident":
        return 1
    wanted = math.ceil(ROTATE_FACTOR * (cache_bytes or FALLBACK_CACHE_BYTES) / max(weight_bytes, 1))
    if memory_bytes:
        wanted = min(wanted, max(1, memory_bytes // 4 // max(weight_bytes, 1)))
    return max(1, min(MAX_COPIES, wanted))


def copies_by_batch(workload, sweep, dtype: str, cache: str, device: dict, batches) -> dict[int, int]:
    """Weight copies per batch: enough that one pass over the copies, each with that batch's
    activations, spans ROTATE_FACTOR cache sizes. Large batches need fewer: their activations
    push the weights out of the cache on their own, so rotating more copies would only repeat work."""
    return {
        batch: weight_copies(footprint, device.get("l2_bytes"), cache, device.get("memory_bytes"))
        for batch, footprint in _footprints(workload, sweep, dtype, batches).items()
    }


def _footprints(workload, sweep, dtype: str, batches) -> dict[int, float]:
    """Bytes one copy touches per call at each batch: its weights and that batch's activations."""
    weights = workload.weight_bytes(sweep.params, dtype)
    return {b: weights + max(0.0, workload.cost(sweep.params, dtype, b)[1] - weights) for b in batches}


def unrotatable(workload, sweep, dtype: str, device: dict, copies: dict[int, int]) -> list[int]:
    """Batches whose rotated copies cannot together span ROTATE_FACTOR cache sizes (copies are
    capped at MAX_COPIES and by memory): their weights would stay cached, so they are resident."""
    cache_bytes = device.get("l2_bytes") or FALLBACK_CACHE_BYTES
    footprints = _footprints(workload, sweep, dtype, copies)
    return [b for b, n in copies.items() if n * footprints[b] < ROTATE_FACTOR * cache_bytes]


def share_memory(wants: dict, total: float) -> dict:
    """Split `total` bytes between curves that each want some, by water-filling: those that want
    little get all they want, the rest split what is left equally."""
    left, shares = total, {}
    pending = sorted(wants, key=wants.get)
    while pending:
        key = pending.pop(0)
        shares[key] = min(wants[key], left / (len(pending) + 1))
        left -= shares[key]
    return shares
