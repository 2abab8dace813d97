"""The scheduling policy: which sequences a step decodes and which prompt pieces it computes.

A policy reads the engine loop's queues (`waiting` in arrival order, `running` in admission order) and each
sequence's progress, asks the KV-cache manager (`benchmarks.analysis.serving.llm.kv_cache`) for blocks, and preempts
through the loop (`EngineLoop.preempt_newest`: recompute, as vLLM does). It never moves the clock and never times a
step. One class per rule, so that a rule can be swapped without touching the KV cache or the loop:

- `PromptsFirst`, vLLM's scheduler before its V1 engine (V0): without chunked prefill, waiting prompts come first,
  and a step that admits any computes whole prompts only; otherwise, and with chunked prefill, every running
  sequence decodes first (preempting the newest while blocks run short) and pieces of prompts fill the rest of the
  token budget;
- `RunningFirst`, vLLM's V1 scheduler (`vllm/v1/core/sched/scheduler.py`), which has no prefill or decode phase:
  each step first gives every running sequence, in admission order, the tokens it lacks (one to decode, or the
  rest of its prompt up to the token budget), preempting the newest running sequence while blocks run short; then,
  if nothing was preempted, admits waiting requests, oldest first, into what the budget leaves (a whole prompt that
  does not fit stops admission without chunked prefill; with it, the prompt's first piece is taken), each only
  when blocks for its whole prompt are free (V1's scheduler_reserve_full_isl, on by default). Prompts and decodes
  therefore share steps, chunked prefill or not;
- `DecodeOnly`, a disaggregated deployment's decode engine: requests arrive with their prompt's cache and first
  token and are admitted once blocks for the prompt and the longest answer allowed are free.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.kv_cache import KVCacheManager

Chunks = list[tuple[int, int]]  # (sequence, prompt tokens computed this step)


class EngineState(Protocol):
    """What a policy reads of the engine loop (`benchmarks.analysis.serving.llm.engine_loop.EngineLoop`), and the
    one thing it asks of it: preempt the newest running sequence."""

    engine: Engine
    kv: KVCacheManager
    waiting: deque[int]  # arrived, not running, oldest first (a preempted sequence at the head)
    running: list[int]  # in admission order
    target: list[int]  # per sequence: positions to compute before it decodes (its prompt, after a preemption more)
    computed: list[int]  # positions in the cache
    emitted: list[int]
    first: list[float]
    last: list[float]
    now: float
    output_cap: int

    def preempt_newest(self) -> int: ...


class Scheduler(Protocol):
    def schedule(self, loop: EngineState) -> tuple[list[int], Chunks]:
        """The step's sequences that decode one token, and its prompt pieces; blocks for both are taken."""
        ...


class PromptsFirst:
    """vLLM V0's rule (see the module's docstring)."""

    def schedule(self, loop: EngineState) -> tuple[list[int], Chunks]:
        e, computed, target = loop.engine, loop.computed, loop.target
        decoders = [i for i in loop.running if computed[i] >= target[i]]
        chunks: Chunks = []
        if not e.chunked_prefill and loop.waiting:
            admit(loop, e.max_batched_tokens, chunks, whole=True)
            if chunks:
                return [], chunks
        decoders = grow_caches(loop, decoders)
        if e.chunked_prefill:
            budget = continue_prompts(loop, e.max_batched_tokens - len(decoders), chunks,
                                      len(loop.running) - len(decoders))  # fmt: skip
            admit(loop, budget, chunks, whole=False)
        return decoders, chunks


class RunningFirst:
    """vLLM V1's rule (see the module's docstring)."""

    def schedule(self, loop: EngineState) -> tuple[list[int], Chunks]:
        e, kv, computed, target, running = loop.engine, loop.kv, loop.computed, loop.target, loop.running
        bt, held = kv.block_tokens, kv.held
        budget = e.max_batched_tokens
        decoders: list[int] = []
        chunks: Chunks = []
        preempted = False
        index = 0
        while index < len(running) and budget > 0:
            i = running[index]
            decoding = computed[i] >= target[i]
            tokens = 1 if decoding else min(target[i] - computed[i], budget)
            need = max(0, -(-(computed[i] + tokens) // bt) - held[i])
            while need > kv.free and running[-1] != i:
                loop.preempt_newest()
                preempted = True
            if need > kv.free:  # only this one is left to give up: it waits, as vLLM preempts it too
                loop.preempt_newest()
                preempted = True
                break
            held[i] += need
            kv.free -= need
            if decoding:
                decoders.append(i)
            else:
                chunks.append((i, tokens))
            budget -= tokens
            index += 1
        if not preempted:
            self._admit(loop, budget, chunks)
        return decoders, chunks

    @staticmethod
    def _admit(loop: EngineState, budget: int, chunks: Chunks) -> None:
        kv, e, target, waiting, running = loop.kv, loop.engine, loop.target, loop.waiting, loop.running
        bt = kv.block_tokens
        while waiting and budget > 0 and len(running) < e.max_num_seqs:
            i = waiting[0]
            cached, pinned = kv.cached_beginning(i, target[i])
            left = target[i] - cached * bt
            if not e.chunked_prefill and left > budget:
                break
            take = min(left, budget)
            whole = -(-held_at_admission(loop, i, target[i]) // bt) - cached + pinned  # the prompt must fit
            if whole > kv.free:
                break
            held = -(-max(cached * bt + take, held_at_admission(loop, i, 0)) // bt)
            waiting.popleft()
            running.append(i)
            start = kv.admit(i, held, held - cached + pinned)
            if start:
                loop.computed[i] = start
            chunks.append((i, take))
            budget -= take


class DecodeOnly:
    """A decode engine's rule: admit requests that arrive prefilled, then decode every running sequence."""

    def schedule(self, loop: EngineState) -> tuple[list[int], Chunks]:
        admit_prefilled(loop)
        computed, target = loop.computed, loop.target
        return grow_caches(loop, [i for i in loop.running if computed[i] >= target[i]]), []


SCHEDULERS = {"vllm-v0": PromptsFirst, "vllm-v1": RunningFirst}  # EngineConfig.scheduler → its rule


def held_at_admission(loop: EngineState, i: int, tokens: int) -> int:
    """Positions to hold blocks for when sequence i is admitted with `tokens` of its prompt this step: those tokens,
    or with `reserve` the longest sequence it may become (its prompt and the longest answer the output lengths allow,
    as an engine reserves a request's max_tokens: it cannot know the answer's length)."""
    e = loop.engine
    if e.reserve:
        longest = loop.target[i] + loop.output_cap - loop.emitted[i]
        return longest if e.max_model_len is None else min(longest, e.max_model_len)
    return tokens


def admit(loop: EngineState, budget: int, chunks: Chunks, *, whole: bool) -> int:
    """Admit waiting requests, oldest first, while the running-sequence cap, the token budget and the free blocks
    allow, each with its whole prompt (`whole`) or the piece of it the budget leaves. Returns the budget left."""
    kv, cap, target = loop.kv, loop.engine.max_num_seqs, loop.target
    bt, waiting, running = kv.block_tokens, loop.waiting, loop.running
    while waiting and budget > 0 and len(running) < cap:
        i = waiting[0]
        cached, pinned = kv.cached_beginning(i, target[i])
        left = target[i] - cached * bt
        take = left if whole else min(left, budget)
        held = -(-held_at_admission(loop, i, cached * bt + take) // bt)
        need = held - cached + pinned
        if take > budget or need > kv.free:
            break
        waiting.popleft()
        running.append(i)
        start = kv.admit(i, held, need)
        if start:
            loop.computed[i] = start
        chunks.append((i, take))
        budget -= take
    return budget


def admit_prefilled(loop: EngineState) -> None:
    """A decode engine's admission: requests whose prompt's cache came from a prefill engine, oldest first, each once
    blocks for its prompt and the longest answer allowed are free. Its first token came with the cache."""
    kv, cap, waiting, running = loop.kv, loop.engine.max_num_seqs, loop.waiting, loop.running
    while waiting and len(running) < cap:
        i = waiting[0]
        need = kv.blocks_for(held_at_admission(loop, i, loop.target[i]))
        if need > kv.free:
            break
        waiting.popleft()
        running.append(i)
        kv.admit(i, need, need)
        loop.computed[i] = loop.target[i]
        loop.emitted[i] = 1
        loop.first[i] = loop.last[i] = loop.now


def continue_prompts(loop: EngineState, budget: int, chunks: Chunks, part_way: int) -> int:
    """With chunked prefill: the next piece of each of the `part_way` running prompts part-way through, oldest first,
    while the budget lasts. Returns the budget left."""
    computed, target, kv, running = loop.computed, loop.target, loop.kv, loop.running
    found: list[int] = []
    j = len(running)
    while len(found) < part_way:  # the newest sequences are the likeliest to be part-way: look from the end
        j -= 1
        if computed[running[j]] < target[running[j]]:
            found.append(running[j])
    for i in reversed(found):
        if budget <= 0:
            break
        take = kv.grow_for_chunk(i, computed[i], min(target[i] - computed[i], budget))
        if take:
            chunks.append((i, take))
            budget -= take
    return budget


def grow_caches(loop: EngineState, decoders: list[int]) -> list[int]:
    """Give each decoding sequence the block its next token needs, preempting the newest sequences while blocks run
    short. Returns the decoders left."""
    kv, computed = loop.kv, loop.computed
    bt, held = kv.block_tokens, kv.held
    while True:
        growing = [i for i in decoders if computed[i] >= held[i] * bt]  # the next token starts a block
        if len(growing) <= kv.free or not loop.running:
            break
        victim = loop.preempt_newest()
        decoders = [i for i in decoders if i != victim]
    for i in growing:
        held[i] += 1
    kv.free -= len(growing)
    return decoders
