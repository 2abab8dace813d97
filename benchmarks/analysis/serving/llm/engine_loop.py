"""Serving a language model with continuous batching: the step loop of an iteration-level simulator of an LLM engine.

An engine such as vLLM, TensorRT-LLM or SGLang does not serve fixed batches: at every step it runs one forward
pass over the sequences it holds, adding new ones and retiring finished ones between steps. The simulator has an
engine's parts, each in a module of its own (as vLLM's V1 engine has its Scheduler and KVCacheManager, and Vidur
its replica scheduler and execution-time predictor):

- the settings (`engine_config`: the running-sequence cap, tokens per step, chunked prefill, KV blocks);
- the requests (`request_lengths`: fixed, uniform, log-normal or listed lengths), arriving as a Poisson process
  or from N clients that each send the next request when the last one ends (`simulation`, the entry points);
- the scheduling policy (`scheduler`: admission, chunking, when to preempt), apart from the KV-cache manager's
  mechanics (`kv_cache`, with `prefix_cache`) and from the step-time model behind the one `step_model.StepModel`
  seam (`roofline_step`, `forecast_step`, `measured_step`), with CUDA-graph padding (`cuda_graphs`);
- this loop: the clock, the queues, each step scheduled, timed, recorded and retired, several plain decode steps
  at once where nothing can change the batch, and the run's figures (`run_result`);
- the planning on top (`planning`: the front, the budget, the largest rate; `steady_state`), and the engine
  settings search (`engine_tuning`) and disaggregated prefill (`disaggregated`).

A preempted sequence is recomputed: its blocks are freed, and its prompt and the tokens it has emitted are
computed again later, as vLLM's recompute preemption does. Pipeline parallelism and speculative decoding are not
modelled.

Pure Python and numpy, deterministic under a seed: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from array import array
from collections import deque

import numpy as np

from benchmarks.analysis.serving.llm.cuda_graphs import padded_batches, vllm_graph_sizes, vllm_v1_graph_sizes
from benchmarks.analysis.serving.llm.engine_config import Infeasible
from benchmarks.analysis.serving.llm.kv_cache import KVCacheManager
from benchmarks.analysis.serving.llm.run_result import Result
from benchmarks.analysis.serving.llm.scheduler import Scheduler

VECTOR_STEPS = 16  # from this many decode steps at once, a step model's decode_run_seconds times them in numpy


class EngineLoop:
    """The step loop: arrivals queued, each step scheduled by `policy` over the blocks `kv` manages, timed by
    `step`, then recorded. Sequences are request indices; every list below is indexed by request."""

    __slots__ = (  # the state every step reads: slots read a little faster than an instance's dictionary
        "_cursor", "arrivals", "busy", "clients", "computed", "done", "emitted", "engine", "finish", "first",
        "issued", "itl", "kv", "last", "max_running", "now", "output_cap", "outputs", "pad", "pending", "policy",
        "preemptions", "prefill_time", "prefilled", "prompts", "rate", "running", "running_area", "start", "step",
        "steps", "target", "timeline", "waiting", "waiting_at_last_arrival",
    )  # fmt: skip

    def __init__(self, step, engine, prompts, outputs, arrivals, kv: KVCacheManager, policy: Scheduler, rate, clients,
                 output_cap):  # fmt: skip
        self.step, self.engine, self.kv, self.policy = step, engine, kv, policy
        self.prompts, self.outputs, self.arrivals = prompts, outputs, arrivals
        self.rate, self.clients = rate, clients
        self.output_cap = output_cap  # the longest answer allowed (what `reserve` holds blocks for)
        n = len(prompts)
        self.target = list(prompts)  # tokens to prefill before decoding (after a preemption, with those emitted)
        self.computed = [0] * n  # positions in the cache
        self.emitted = [0] * n
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
        self._cursor = 0
        # the clock and what the result reports
        self.start = self.now = min(arrivals)
        self.done, self.steps, self.preemptions = 0, 0, 0
        self.busy, self.prefill_time, self.running_area = 0.0, 0.0, 0.0
        self.max_running = 0
        self.prefilled = 0
        # a decode-only step of n sequences runs at the captured size pad[n] (the padding rows cost matrix products)
        cap = engine.max_num_seqs
        sizes = vllm_v1_graph_sizes if engine.scheduler == "vllm-v1" else vllm_graph_sizes  # the engine's own list
        self.pad = padded_batches(sizes(cap), cap) if engine.cuda_graphs else None
        self.timeline: list[tuple[float, int, int, int]] | None = None  # when asked: (end, running, waiting, blocks)

    def run(self) -> Result:
        """Every step: queue the arrivals, schedule the step's tokens, run it (or several plain decode steps at
        once), record it, then retire the sequences that finished."""
        n = len(self.prompts)
        while self.done < n:
            self._release_arrivals()
            if not self.running and not self.waiting:
                self.now = self.arrivals[self.pending[self.issued]] + self.engine.request_overhead_s
                continue
            decoders, chunks = self.policy.schedule(self)
            if not decoders and not chunks:
                if not self.running:
                    raise Infeasible("a waiting request can never be admitted")  # simulate's checks rule it out
                self.preempt_newest()  # prompts part-way through hold every free block
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
        late = self.engine.request_overhead_s  # a request reaches the scheduler this long after it is sent
        while self.issued < n and arrivals[pending[self.issued]] + late <= self.now:
            waiting.append(pending[self.issued])
            self.issued += 1
            if self.issued == n:
                self.waiting_at_last_arrival = len(waiting)

    def preempt_newest(self) -> int:
        """Preempt the most recently admitted sequence by recompute: its blocks are freed, and it waits at the head
        of the queue to compute its prompt and the tokens it has emitted again. Returns it."""
        victim = self.running.pop()
        self.kv.release(victim)
        self.target[victim] = self.prompts[victim] + self.emitted[victim]
        self.computed[victim] = 0
        self.waiting.appendleft(victim)
        self.preemptions += 1
        return victim

    def _step_seconds(self, decoders: list[int], chunks: list[tuple[int, int]]) -> float:
        """The step's time, from what it computes: each decoding sequence attends over its cache and its new token;
        a prompt piece attends causally over the positions before it and itself; a prompt it ends samples a token."""
        computed, target = self.computed, self.target
        positions = float(sum(map(computed.__getitem__, decoders)) + len(decoders))  # exact: integers below 2**53
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
        self.max_running = max(self.max_running, len(self.running))
        self.kv.after_step()
        if self.timeline is not None:
            self.timeline.append(
                (self.now + seconds, len(self.running), len(self.waiting), self.kv.total - self.kv.free)
            )
        self.now += seconds
        self.busy += seconds
        self.steps += steps

    def _advance(self, decoders: list[int], chunks: list[tuple[int, int]]) -> list[int]:
        """After a step: each decoding sequence emits a token; each prompt piece is in the cache, and a prompt it
        ends emits its first token (after a preemption, its next). Returns the sequences that finished."""
        now, itl, last = self.now, self.itl, self.last
        computed, emitted, outputs, target = self.computed, self.emitted, self.outputs, self.target
        finished: list[int] = []
        itl.extend([now - last[i] for i in decoders])
        for i in decoders:
            computed[i] += 1
            last[i] = now
            emitted[i] = e = emitted[i] + 1
            if e >= outputs[i]:
                finished.append(i)
        for i, take in chunks:
            computed[i] += take
            if self.kv.cache is not None:
                self.kv.publish(i, computed[i] - take, computed[i])
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
            self.kv.release(i)
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
        self.kv.free -= blocks_taken
        self._record(seconds, area, steps)
        self._retire([i for i in decoders if self.emitted[i] >= self.outputs[i]])
        return True

    def _bulk(self, decoders: list[int]) -> tuple[int, float, float, int] | None:
        """Run several decode steps at once while nothing can change the batch: no sequence finishes before the
        last of them, the free blocks cover every block the batch needs meanwhile, and no request arrives that
        could be admitted (none can while the running-sequence cap is reached). Exactly the steps one at a time
        would give. Returns the steps taken, their seconds, the running sequences integrated over them and the
        blocks they took; None when fewer than two steps qualify."""
        outputs, emitted, computed, blocks = self.outputs, self.emitted, self.computed, self.kv.held
        bt = self.kv.block_tokens
        k = min(outputs[i] - emitted[i] for i in decoders)
        if k < 2:
            return None
        need = sum(max(0, -(-(computed[i] + k) // bt) - blocks[i]) for i in decoders)
        if need > self.kv.free:
            return None
        horizon = math.inf
        if len(self.running) < self.engine.max_num_seqs and self.issued < len(self.pending):
            horizon = self.arrivals[self.pending[self.issued]] + self.engine.request_overhead_s
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
            kv_blocks=self.kv.total,
            kv_peak_blocks=self.kv.peak,
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
            prefix_hit_share=None if self.kv.cache is None else self.kv.cache.hit_share,
            prefix_evictions=0 if self.kv.cache is None else self.kv.cache.evicted,
        )
