"""Serving a language model with continuous batching: an iteration-level simulator of an LLM engine.

An engine such as vLLM, TensorRT-LLM or SGLang does not serve fixed batches: at every step it runs one forward
pass over the sequences it holds, adding new ones and retiring finished ones between steps. This module
simulates that loop, request by request and step by step, from a step time that comes from the roofline:

- **requests** have a prompt and an output length (fixed, uniform, log-normal or listed) and arrive as a
  Poisson process or from N clients that each send the next request when the last one ends (closed loop);
- **scheduling** is per step, with a cap on running sequences (`max_num_seqs`) and on tokens per step
  (`max_num_batched_tokens`). Without chunked prefill, waiting prompts get priority: a step either prefills
  whole prompts or decodes every running sequence (vLLM's default before chunked prefill). With chunked
  prefill, every step decodes all running sequences first and fills the rest of its token budget with
  pieces of prompts;
- **the KV cache** is held in blocks (16 tokens by default) in the memory the weights leave; a request is
  admitted only when blocks for its prompt are free, and when a running sequence needs a block that is not
  there, the most recently admitted sequence is preempted (its blocks freed, its prompt and the tokens it has
  emitted computed again later, as vLLM's recompute preemption does);
- **a step's time** is the decode page's per-operation sum: the matrix products (every weight read once for
  the whole step, 2 FLOPs per weight per token, plus the output head for each sequence that samples a token)
  then the attention (every sequence reads its own cache), each at max(FLOPs / peak rate, bytes / bandwidth),
  plus a stated fixed cost per step, all divided by a stated efficiency (1: the roofline itself).

Tensor parallelism over n GPUs is modelled as one device with n times the rate, the bandwidth and the memory,
plus the all-reduces between the GPUs: two a layer of tokens × d_model activations, by the ring algorithm over the
GPU's NVLink (PCIe where it has none) with a per-call latency (`benchmarks.analysis.roofline.cost_model`), as a part of
the step of their own. Imbalance between the GPUs is left out. A mixture of experts reads, each step, the weights
of the experts its tokens touch (their expected number under uniform or skewed routing), plus the shared parts.
The KV cache may have a dtype of its own. With a shared prompt prefix the engine caches its blocks
(`benchmarks.analysis.serving.llm.prefix_cache`): a prompt that begins with cached blocks is computed from after
them, and they are held once. Pipeline parallelism and speculative decoding are not modelled.

Pure Python and numpy, deterministic under a seed: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from array import array
from collections import deque

import numpy as np

from benchmarks.analysis.serving.llm.cuda_graphs import padded_batches, vllm_graph_sizes
from benchmarks.analysis.serving.llm.engine_config import Infeasible
from benchmarks.analysis.serving.llm.prefix_cache import PrefixCache
from benchmarks.analysis.serving.llm.run_result import Result

VECTOR_STEPS = 16  # from this many decode steps at once, a step model's decode_run_seconds times them in numpy


class EngineLoop:
    """The step loop. Sequences are request indices; every list below is indexed by request."""

    __slots__ = (  # the state every step reads: slots read a little faster than an instance's dictionary
        "_cursor",
        "arrivals",
        "blocks",
        "blocks_total",
        "busy",
        "cache",
        "carriers",
        "clients",
        "computed",
        "done",
        "emitted",
        "engine",
        "finish",
        "first",
        "free",
        "issued",
        "itl",
        "last",
        "max_running",
        "now",
        "output_cap",
        "outputs",
        "pad",
        "peak_blocks",
        "pending",
        "preemptions",
        "prefill_time",
        "prefilled",
        "prefilled_arrivals",
        "prefix_blocks",
        "prompts",
        "rate",
        "running",
        "running_area",
        "shared",
        "start",
        "step",
        "steps",
        "target",
        "waiting",
        "waiting_at_last_arrival",
    )  # fmt: skip

    def __init__(self, step, engine, prompts, outputs, arrivals, blocks_total, rate, clients, output_cap):
        self.step, self.engine = step, engine
        self.prompts, self.outputs, self.arrivals = prompts, outputs, arrivals
        self.blocks_total, self.rate, self.clients = blocks_total, rate, clients
        self.output_cap = output_cap  # the longest answer allowed (what `reserve` holds blocks for)
        n = len(prompts)
        self.target = list(prompts)  # tokens to prefill before decoding (after a preemption, with those emitted)
        self.computed = [0] * n  # positions in the cache
        self.emitted = [0] * n
        self.blocks = [0] * n
        self.first = [math.nan] * n
        self.last = [0.0] * n
        self.finish = [math.nan] * n
        self.itl = array("d")
        self.waiting_at_last_arrival = 0
        # the queues: requests released in `pending` order (arrival order; a closed loop's in index order)
        self.pending = sorted(range(n), key=lambda i: arrivals[i]) if rate is not None else list(range(n))
        self.issued = 0
        self.waiting: deque[int] = deque()
        self.running: list[int] = []  # in admission order
        self.free = blocks_total  # always the total less the blocks the running sequences hold
        self._cursor = 0
        # the clock and what the result reports
        self.start = self.now = min(arrivals)
        self.done, self.steps, self.preemptions = 0, 0, 0
        self.busy, self.prefill_time, self.running_area = 0.0, 0.0, 0.0
        self.peak_blocks, self.max_running = 0, 0
        self.prefilled = 0
        self.prefilled_arrivals = False  # requests come with their prompt's cache and first token (a decode engine)
        # a decode-only step of n sequences runs at the captured size pad[n] (the padding rows cost matrix products)
        cap = engine.max_num_seqs
        self.pad = padded_batches(vllm_graph_sizes(cap), cap) if engine.cuda_graphs else None
        # prefix caching (set by simulate when the engine has it): who carries the prefix, the cached blocks each
        # sequence references, and how many whole prefix blocks its prompt holds
        self.cache: PrefixCache | None = None
        self.carriers: list[bool] = []
        self.shared: list[list[int]] = [[] for _ in range(n)] if engine.prefix is not None else []
        self.prefix_blocks = [0] * n if engine.prefix is not None else []

    def run(self) -> Result:
        """Every step: queue the arrivals, schedule the step's tokens, run it (or several plain decode steps at
        once), record it, then retire the sequences that finished."""
        n = len(self.prompts)
        while self.done < n:
            self._release_arrivals()
            if not self.running and not self.waiting:
                self.now = self.arrivals[self.pending[self.issued]]
                continue
            decoders, chunks = self._schedule()
            if not decoders and not chunks:
                if not self.running:
                    raise Infeasible("a waiting request can never be admitted")  # simulate's checks rule it out
                self._preempt_newest()  # prompts part-way through hold every free block
                continue
            if not chunks and len(decoders) == len(self.running) and self._decode_in_bulk(decoders):
                continue
            dt = self._step_seconds(decoders, chunks)
            self._record(dt, len(self.running) * dt, 1)
            if chunks and not decoders:
                self.prefill_time += dt
            self._retire(self._advance(decoders, chunks))
        return self._result()

    def _release_arrivals(self) -> None:
        """Queue the requests that have arrived by now."""
        arrivals, pending, waiting, n = self.arrivals, self.pending, self.waiting, len(self.pending)
        while self.issued < n and arrivals[pending[self.issued]] <= self.now:
            waiting.append(pending[self.issued])
            self.issued += 1
            if self.issued == n:
                self.waiting_at_last_arrival = len(waiting)

    def _schedule(self) -> tuple[list[int], list[tuple[int, int]]]:
        """The step's tokens: the sequences that decode one, and the prompt pieces (sequence, tokens) it computes.
        Without chunked prefill, waiting prompts come first: a step that admits any prefills whole prompts only.
        Otherwise every sequence that holds its prompt decodes (preempting while blocks run short) and, with
        chunked prefill, pieces of prompts fill the rest of the token budget."""
        e, computed, target = self.engine, self.computed, self.target
        if self.prefilled_arrivals:
            self._admit_prefilled()
            return self._grow_caches([i for i in self.running if computed[i] >= target[i]]), []
        decoders = [i for i in self.running if computed[i] >= target[i]]
        chunks: list[tuple[int, int]] = []
        if not e.chunked_prefill and self.waiting:
            self._admit(e.max_batched_tokens, chunks, whole=True)
            if chunks:
                return [], chunks
        decoders = self._grow_caches(decoders)
        if e.chunked_prefill:
            budget = self._continue_prompts(e.max_batched_tokens - len(decoders), chunks)
            self._admit(budget, chunks, whole=False)
        return decoders, chunks

    def _admit(self, budget: int, chunks: list[tuple[int, int]], *, whole: bool) -> int:
        """Admit waiting requests, oldest first, while the running-sequence cap, the token budget and the free blocks
        allow, each with its whole prompt (`whole`) or the piece of it the budget leaves. Returns the budget left."""
        bt, cap, target = self.engine.block_tokens, self.engine.max_num_seqs, self.target
        waiting, running = self.waiting, self.running
        while waiting and budget > 0 and len(running) < cap:
            i = waiting[0]
            cached, pinned = self._cached_beginning(i)
            left = target[i] - cached * bt
            take = left if whole else min(left, budget)
            held = -(-self._held_at_admission(i, cached * bt + take) // bt)
            need = held - cached + pinned
            if take > budget or need > self.free:
                break
            waiting.popleft()
            running.append(i)
            self.free -= need
            self.blocks[i] = held
            if self.cache is not None and self.carriers[i]:
                self._take_cached(i)
            chunks.append((i, take))
            budget -= take
        return budget

    def _admit_prefilled(self) -> None:
        """A decode engine's admission: requests whose prompt's cache came from a prefill engine, oldest first, each
        once blocks for its prompt and the longest answer allowed are free. Its first token came with the cache."""
        bt, cap, waiting, running = self.engine.block_tokens, self.engine.max_num_seqs, self.waiting, self.running
        while waiting and len(running) < cap:
            i = waiting[0]
            need = -(-self._held_at_admission(i, self.target[i]) // bt)
            if need > self.free:
                break
            waiting.popleft()
            running.append(i)
            self.free -= need
            self.blocks[i] = need
            self.computed[i] = self.target[i]
            self.emitted[i] = 1
            self.first[i] = self.last[i] = self.now

    def _cached_beginning(self, i: int) -> tuple[int, int]:
        """Prefix caching: the blocks of sequence i's prompt found in the cache, and how many of them no sequence
        holds now (counted free until taken). (0, 0) without a prefix."""
        if self.cache is None or not self.carriers[i]:
            return 0, 0
        self.cache.evict_to(self.free)
        wanted = self.engine.prefix.blocks(self.engine.block_tokens, self.target[i])
        self.prefix_blocks[i] = wanted
        found = self.cache.resident(0, wanted)
        return found, sum(1 for b in range(found) if self.cache.references[(0, b)] == 0)

    def _take_cached(self, i: int) -> None:
        """Sequence i references the prefix's cached blocks (those `_cached_beginning` found): its prefill starts
        after them."""
        taken, _ = self.cache.acquire(0, self.prefix_blocks[i])
        self.shared[i] = list(range(taken))
        self.computed[i] = taken * self.engine.block_tokens
        self.cache.evict_to(self.free)

    def _release_blocks(self, i: int) -> None:
        """Sequence i's blocks go back: its own at once, the cached ones it shared when no other sequence holds them
        (they stay cached until evicted)."""
        if self.cache is not None and self.shared[i]:
            self.free += self.blocks[i] - len(self.shared[i]) + self.cache.release(0, self.shared[i])
            self.shared[i] = []
        else:
            self.free += self.blocks[i]
        self.blocks[i] = 0

    def _publish_prefix(self, i: int, before: int) -> None:
        """Once sequence i has computed the prefix's whole blocks, those it computed itself enter the cache."""
        end = self.prefix_blocks[i] * self.engine.block_tokens
        if self.carriers[i] and before < end <= self.computed[i]:
            self.shared[i] += self.cache.publish(0, len(self.shared[i]), self.prefix_blocks[i])

    def _held_at_admission(self, i: int, tokens: int) -> int:
        """Positions to hold blocks for when sequence i is admitted with `tokens` of its prompt this step: those
        tokens, or with `reserve` the longest sequence it may become (its prompt and the longest answer the output
        lengths allow, as an engine reserves a request's max_tokens: it cannot know the answer's length)."""
        if self.engine.reserve:
            longest = self.target[i] + self.output_cap - self.emitted[i]
            return longest if self.engine.max_model_len is None else min(longest, self.engine.max_model_len)
        return tokens

    def _continue_prompts(self, budget: int, chunks: list[tuple[int, int]]) -> int:
        """With chunked prefill: the next piece of each prompt part-way through, oldest first, while the budget
        lasts. Returns the budget left."""
        computed, target = self.computed, self.target
        for i in self.running:
            if budget <= 0:
                break
            if computed[i] < target[i]:
                take = self._chunk(i, budget)
                if take:
                    chunks.append((i, take))
                    budget -= take
        return budget

    def _chunk(self, i: int, budget: int) -> int:
        """The next piece of sequence i's prompt that fits the token budget and the free blocks (taken)."""
        bt = self.engine.block_tokens
        take = min(self.target[i] - self.computed[i], budget)
        while take > 0:
            need = max(0, -(-(self.computed[i] + take) // bt) - self.blocks[i])
            if need <= self.free:
                self.blocks[i] += need
                self.free -= need
                return take
            take = min(take - 1, (self.blocks[i] + self.free) * bt - self.computed[i])
        return 0

    def _grow_caches(self, decoders: list[int]) -> list[int]:
        """Give each decoding sequence the block its next token needs, preempting the newest sequences while blocks
        run short. Returns the decoders left."""
        bt, blocks, computed = self.engine.block_tokens, self.blocks, self.computed
        while True:
            growing = [i for i in decoders if -(-(computed[i] + 1) // bt) > blocks[i]]
            if len(growing) <= self.free or not self.running:
                break
            victim = self._preempt_newest()
            decoders = [i for i in decoders if i != victim]
        for i in growing:
            blocks[i] += 1
        self.free -= len(growing)
        return decoders

    def _preempt_newest(self) -> int:
        """Preempt the most recently admitted sequence by recompute: its blocks are freed, and it waits at the head
        of the queue to compute its prompt and the tokens it has emitted again. Returns it."""
        victim = self.running.pop()
        self._release_blocks(victim)
        self.target[victim] = self.prompts[victim] + self.emitted[victim]
        self.computed[victim] = 0
        self.waiting.appendleft(victim)
        self.preemptions += 1
        return victim

    def _step_seconds(self, decoders: list[int], chunks: list[tuple[int, int]]) -> float:
        """The step's time, from what it computes: each decoding sequence attends over its cache and its new token;
        a prompt piece attends causally over the positions before it and itself; a prompt it ends samples a token."""
        computed, target = self.computed, self.target
        positions = 0.0
        for i in decoders:
            positions += computed[i] + 1
        logits = len(decoders)
        pf_tokens, pf_attended, pf_positions = 0, 0.0, 0.0
        for i, take in chunks:
            c = computed[i]
            self.prefilled += take
            pf_tokens += take
            pf_attended += take * c + take * (take + 1) / 2
            pf_positions += c + take
            if c + take >= target[i]:
                logits += 1
        if not chunks and self.pad is not None and len(decoders) < len(self.pad):
            padding = self.pad[len(decoders)] - len(decoders)
            return self.step.step_seconds(len(decoders), positions, padding, 0.0, 0.0, logits + padding)
        return self.step.step_seconds(len(decoders), positions, pf_tokens, pf_attended, pf_positions, logits)

    def _record(self, seconds: float, area: float, steps: int) -> None:
        """Move the clock past `steps` steps that took `seconds`, and keep the run's totals and peaks (`area`: the
        running sequences integrated over the time)."""
        self.running_area += area
        if self.cache is not None:
            self.cache.evict_to(self.free)
        self.max_running = max(self.max_running, len(self.running))
        self.peak_blocks = max(self.peak_blocks, self.blocks_total - self.free)
        self.now += seconds
        self.busy += seconds
        self.steps += steps

    def _advance(self, decoders: list[int], chunks: list[tuple[int, int]]) -> list[int]:
        """After a step: each decoding sequence emits a token; each prompt piece is in the cache, and a prompt it
        ends emits its first token (after a preemption, its next). Returns the sequences that finished."""
        now, itl, last = self.now, self.itl, self.last
        computed, emitted, outputs, target = self.computed, self.emitted, self.outputs, self.target
        finished: list[int] = []
        for i in decoders:
            computed[i] += 1
            emitted[i] += 1
            itl.append(now - last[i])
            last[i] = now
            if emitted[i] >= outputs[i]:
                finished.append(i)
        for i, take in chunks:
            computed[i] += take
            if self.cache is not None:
                self._publish_prefix(i, computed[i] - take)
            if computed[i] >= target[i]:
                emitted[i] += 1
                if math.isnan(self.first[i]):
                    self.first[i] = now
                else:
                    itl.append(now - last[i])
                last[i] = now
                if emitted[i] >= outputs[i]:
                    finished.append(i)
        return finished

    def _retire(self, finished: list[int]) -> None:
        """Remove finished sequences, free their blocks; a closed loop's client sends its next request now."""
        if not finished:
            return
        gone = set(finished)
        self.running = [i for i in self.running if i not in gone]
        for i in finished:
            self._release_blocks(i)
            self.finish[i] = self.now
            self.done += 1
            if self.clients is not None:
                nxt = self._next_unscheduled()
                if nxt is not None:
                    self.arrivals[nxt] = self.now

    def _next_unscheduled(self) -> int | None:
        """For a closed loop: the lowest request index whose arrival is not yet set."""
        while self._cursor < len(self.arrivals) and self.arrivals[self._cursor] != math.inf:
            self._cursor += 1
        return self._cursor if self._cursor < len(self.arrivals) else None

    def _decode_in_bulk(self, decoders: list[int]) -> bool:
        """Run and record the decode steps `_bulk` finds can be taken at once; False when it finds none."""
        bulk = self._bulk(decoders)
        if bulk is None:
            return False
        steps, seconds, area, blocks_taken = bulk
        self.free -= blocks_taken
        self._record(seconds, area, steps)
        self._retire([i for i in decoders if self.emitted[i] >= self.outputs[i]])
        return True

    def _bulk(self, decoders: list[int]) -> tuple[int, float, float, int] | None:
        """Run several decode steps at once while nothing can change the batch: no sequence finishes before the
        last of them, the free blocks cover every block the batch needs meanwhile, and no request arrives that
        could be admitted (none can while the running-sequence cap is reached). Exactly the steps one at a time
        would give. Returns the steps taken, their seconds, the running sequences integrated over them and the
        blocks they took; None when fewer than two steps qualify."""
        outputs, emitted, computed, blocks = self.outputs, self.emitted, self.computed, self.blocks
        bt = self.engine.block_tokens
        k = min(outputs[i] - emitted[i] for i in decoders)
        if k < 2:
            return None
        need = sum(max(0, -(-(computed[i] + k) // bt) - blocks[i]) for i in decoders)
        if need > self.free:
            return None
        horizon = math.inf
        if len(self.running) < self.engine.max_num_seqs and self.issued < len(self.pending):
            horizon = self.arrivals[self.pending[self.issued]]
        d = len(decoders)
        base = sum(computed[i] + 1 for i in decoders)
        step, itl, now = self.step, self.itl, self.now
        padding = self.pad[d] - d if self.pad is not None and d < len(self.pad) else 0
        run_seconds = getattr(step, "decode_run_seconds", None)
        if run_seconds is not None and k >= VECTOR_STEPS:
            # the same sums in the same order as the loop below: accumulate adds left to right, one at a time
            gaps = run_seconds(d, (base + d * np.arange(k, dtype=np.int64)).astype(np.float64), padding)
            ends = np.add.accumulate(np.concatenate(([now], gaps)))[1:]
            crossed = np.flatnonzero(ends >= horizon)
            taken = int(crossed[0]) + 1 if crossed.size else k
            gaps = gaps[:taken]
            t, area = float(ends[taken - 1]), float(np.add.accumulate(d * gaps)[-1])
        else:
            t, area, taken, steps = now, 0.0, 0, []
            for j in range(k):
                dt = step.step_seconds(d, base + j * d, padding, 0.0, 0.0, d + padding)
                t += dt
                area += d * dt
                steps.append(dt)
                taken += 1
                if t >= horizon:
                    break
            gaps = np.array(steps)
        if taken < 2 and t < horizon:
            return None
        first = float(gaps[0])
        for i in decoders:
            itl.append(now + first - self.last[i])
        itl.frombytes(np.repeat(gaps[1:], d).tobytes())
        used = 0
        for i in decoders:
            computed[i] += taken
            emitted[i] += taken
            self.last[i] = t
            want = -(-computed[i] // bt)
            used += max(0, want - blocks[i])
            blocks[i] = max(blocks[i], want)
        return taken, t - now, area, used

    def _result(self) -> Result:
        """The run's figures, per request and in all."""
        n, clients, busy = len(self.prompts), self.clients, self.busy
        first = np.array(self.first)
        finish = np.array(self.finish)
        arr = np.array(self.arrivals)
        outs = np.array(self.outputs)
        duration = float(finish.max() - self.start)
        # A closed loop's first request from each client arrives with every other client's at once: a warm-up,
        # left out of the latencies (not of the throughput) when the run holds more than one round.
        kept = np.ones(n, dtype=bool)
        if clients is not None and n > clients:
            kept[:clients] = False
        many = kept & (outs > 1)
        tpot = (finish[many] - first[many]) / (outs[many] - 1)
        return Result(
            ttft_s=(first - arr)[kept],
            tpot_s=tpot,
            e2e_s=(finish - arr)[kept],
            itl_s=np.frombuffer(self.itl, dtype=np.float64).copy(),
            output_tokens=int(outs.sum()),
            requests=n,
            duration_s=duration,
            mean_running=self.running_area / duration if duration > 0 else math.nan,
            max_running=self.max_running,
            kv_blocks=self.blocks_total,
            kv_peak_blocks=self.peak_blocks,
            preemptions=self.preemptions,
            steps=self.steps,
            busy_s=busy,
            offered_rate=self.rate,
            clients=clients,
            step_share={"prefill-only steps": self.prefill_time / busy if busy else 0.0},
            prompt_mean=sum(self.prompts) / n,
            waiting_at_last_arrival=self.waiting_at_last_arrival,
            user_rate_s=outs[kept] / (finish - arr)[kept],
            arrival_s=arr,
            first_s=first,
            finish_s=finish,
            outputs=outs,
            prefilled_tokens=self.prefilled,
            prefix_hit_share=None if self.cache is None else self.cache.hit_share,
            prefix_evictions=0 if self.cache is None else self.cache.evicted,
        )
