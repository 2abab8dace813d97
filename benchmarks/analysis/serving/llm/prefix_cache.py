"""Prefix caching: KV blocks of a prompt's shared beginning, computed once and held once for every sequence.

An engine such as vLLM (automatic prefix caching) or SGLang (RadixAttention) keys each full KV block by the tokens
it holds and everything before it. A new request whose prompt begins with blocks already in the cache takes them
as they are: they are not computed again in its prefill, and every sequence that uses a block shares the one copy.
A block no running sequence uses stays cached in memory the engine counts as free; when a sequence needs a block
and only such blocks are left, the one used longest ago is evicted (the last block of a prefix before its first,
so that what stays is still a prefix some prompt can begin with).

Here a workload shares one prefix of `tokens` tokens: each request begins with it with probability `share`, and
only its whole blocks can be cached (a partly filled block is the request's own, as in vLLM). Blocks are named
(prefix, index); the cache below serves any number of prefixes.

The engine holds the accounting of free blocks; this module holds which cached blocks are resident, how many
sequences reference each, and the order of eviction. Pure Python.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

Block = tuple[int, int]  # (prefix, index of the block within it)


@dataclass(frozen=True)
class SharedPrefix:
    """A prefix of `tokens` tokens that a share of the requests begins with."""

    tokens: int
    share: float

    def problems(self) -> list[str]:
        found = []
        if self.tokens < 1:
            found.append("the shared prefix holds at least one token")
        if not 0 <= self.share <= 1:
            found.append("the share of requests with the prefix is from 0 to 1")
        return found

    def blocks(self, block_tokens: int, prompt: int) -> int:
        """Whole blocks of the prefix a prompt of `prompt` tokens can take from the cache: at least its last token
        is always computed, since the prefill must sample the first output token from it."""
        return min(self.tokens, prompt - 1) // block_tokens


class PrefixCache:
    """Resident cached blocks, their reference counts, and the unreferenced ones in eviction order."""

    __slots__ = ("evictable", "evicted", "hits", "looked_up", "references")

    def __init__(self) -> None:
        self.references: dict[Block, int] = {}  # every resident cached block → sequences that use it
        self.evictable: OrderedDict[Block, None] = OrderedDict()  # unreferenced ones, longest unused first
        self.evicted = 0
        self.hits = 0  # blocks found resident, over every lookup
        self.looked_up = 0  # blocks asked for

    def resident(self, prefix: int, blocks: int) -> int:
        """How many of the prefix's first `blocks` blocks are resident, counted from its start."""
        found = 0
        while found < blocks and (prefix, found) in self.references:
            found += 1
        return found

    def acquire(self, prefix: int, blocks: int) -> tuple[int, int]:
        """Reference the resident beginning of a prefix for a new sequence that asks for `blocks` blocks. Returns
        (blocks taken, of them those that were unreferenced: memory the engine counted as free and no longer is)."""
        taken = self.resident(prefix, blocks)
        pinned = 0
        for index in range(taken):
            key = (prefix, index)
            if self.references[key] == 0:
                del self.evictable[key]
                pinned += 1
            self.references[key] += 1
        self.looked_up += blocks
        self.hits += taken
        return taken, pinned

    def publish(self, prefix: int, start: int, stop: int) -> list[int]:
        """Blocks start..stop−1 of a prefix, just computed by one sequence, enter the cache referenced by it,
        except those another sequence put there meanwhile (its copy of those stays its own). Returns the indices
        that entered."""
        entered = []
        for index in range(start, stop):
            key = (prefix, index)
            if key not in self.references:
                self.references[key] = 1
                entered.append(index)
        return entered

    def release(self, prefix: int, indices: list[int]) -> int:
        """A sequence no longer uses these blocks. Returns how many became unreferenced (free to the engine, yet
        kept until evicted). Released last block first, so that a prefix's end is evicted before its start."""
        freed = 0
        for index in reversed(indices):
            key = (prefix, index)
            self.references[key] -= 1
            if self.references[key] == 0:
                self.evictable[key] = None
                freed += 1
        return freed

    def evict_to(self, free_blocks: int) -> None:
        """Evict unreferenced blocks, longest unused first, until no more of them are kept than the engine has free
        blocks: any block allocated beyond that took one of theirs."""
        while len(self.evictable) > free_blocks:
            key, _ = self.evictable.popitem(last=False)
            del self.references[key]
            self.evicted += 1

    @property
    def hit_share(self) -> float:
        return self.hits / self.looked_up if self.looked_up else 0.0
