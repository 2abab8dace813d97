"""The engine's KV-cache manager: blocks of `block_tokens` positions, how many are free, how many each sequence
holds, and (with prefix caching) the cached blocks of a shared prefix that sequences reference.

It decides nothing: the scheduler (`benchmarks.analysis.serving.llm.scheduler`) asks it whether blocks are there and
takes them; the loop gives them back when a sequence finishes or is preempted. As in vLLM's KVCacheManager, a block
no running sequence uses but the prefix cache still holds counts as free until it is taken; it is evicted, longest
unused first, as soon as the free blocks could not otherwise cover it (`benchmarks.analysis.serving.llm.prefix_cache`).

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from benchmarks.analysis.serving.llm.prefix_cache import PrefixCache, SharedPrefix


class KVCacheManager:
    """Block accounting for `n` sequences (request indices) over `total` blocks."""

    __slots__ = ("block_tokens", "cache", "carriers", "free", "held", "peak", "prefix", "prefix_blocks", "shared",
                 "total")  # fmt: skip

    def __init__(self, total: int, block_tokens: int, n: int, prefix: SharedPrefix | None = None):
        self.total, self.block_tokens = total, block_tokens
        self.free = total  # always the total less the blocks the running sequences hold
        self.held = [0] * n  # blocks each sequence holds, cached ones it shares included
        self.peak = 0
        self.prefix = prefix
        # prefix caching: who carries the prefix (set by the simulation), the cached blocks each sequence references,
        # and how many whole prefix blocks its prompt holds
        self.cache: PrefixCache | None = PrefixCache() if prefix is not None else None
        self.carriers: list[bool] = [False] * n if prefix is not None else []
        self.shared: list[list[int]] = [[] for _ in range(n)] if prefix is not None else []
        self.prefix_blocks = [0] * n if prefix is not None else []

    def blocks_for(self, positions: int) -> int:
        return -(-positions // self.block_tokens)

    def cached_beginning(self, i: int, prompt_tokens: int) -> tuple[int, int]:
        """The blocks of sequence i's prompt found in the prefix cache, and how many of them no sequence holds now
        (counted free until taken). (0, 0) without a prefix or for a sequence that does not carry it."""
        if self.cache is None or not self.carriers[i]:
            return 0, 0
        self.cache.evict_to(self.free)
        wanted = self.prefix.blocks(self.block_tokens, prompt_tokens)
        self.prefix_blocks[i] = wanted
        found = self.cache.resident(0, wanted)
        return found, sum(1 for b in range(found) if self.cache.references[(0, b)] == 0)

    def admit(self, i: int, blocks: int, taken_free: int) -> int:
        """Sequence i joins holding `blocks` blocks, of which `taken_free` come out of the free ones (the caller
        checked they are there). With the prefix, it references the cached blocks found: returns the positions they
        hold, where its prefill starts (0 without them)."""
        self.free -= taken_free
        self.held[i] = blocks
        if self.cache is None or not self.carriers[i]:
            return 0
        taken, _ = self.cache.acquire(0, self.prefix_blocks[i])
        self.shared[i] = list(range(taken))
        self.cache.evict_to(self.free)
        return taken * self.block_tokens

    def grow_for_chunk(self, i: int, computed: int, take: int) -> int:
        """The longest piece, up to `take` tokens after sequence i's `computed` positions, that the free blocks can
        hold; its blocks are taken. 0 when not one token fits."""
        bt, held = self.block_tokens, self.held
        while take > 0:
            need = max(0, -(-(computed + take) // bt) - held[i])
            if need <= self.free:
                held[i] += need
                self.free -= need
                return take
            take = min(take - 1, (held[i] + self.free) * bt - computed)
        return 0

    def release(self, i: int) -> None:
        """Sequence i's blocks go back: its own at once, the cached ones it shared when no other sequence holds them
        (they stay cached until evicted)."""
        if self.cache is not None and self.shared[i]:
            self.free += self.held[i] - len(self.shared[i]) + self.cache.release(0, self.shared[i])
            self.shared[i] = []
        else:
            self.free += self.held[i]
        self.held[i] = 0

    def publish(self, i: int, before: int, computed: int) -> None:
        """Once sequence i has computed the prefix's whole blocks (`before` → `computed` positions this step), those
        it computed itself enter the cache."""
        end = self.prefix_blocks[i] * self.block_tokens
        if self.carriers[i] and before < end <= computed:
            self.shared[i] += self.cache.publish(0, len(self.shared[i]), self.prefix_blocks[i])

    def after_step(self) -> None:
        """Evict what the blocks taken this step displaced, and keep the peak of blocks in use."""
        if self.cache is not None:
            self.cache.evict_to(self.free)
        self.peak = max(self.peak, self.total - self.free)
