"""The step time a real engine showed: its decode and prefill steps read off an engine check's probes, as a step model
for the simulator (`benchmarks.analysis.serving.llm.step_model.StepModel`).

An engine check (`benchmarks.contract.engine_check`) streams tokens from the engine under three kinds of probe, and
each gives a piece of the step curve:

- **decode**: b sequences started together with equal prompts and equal answers. Once every one of them has its
  first token and before any has its last, every step decodes all b and nothing else: the gaps between their tokens
  there are decode steps of b sequences, at a context of the prompt plus the tokens already made;
- **prefill**: one prompt of P tokens alone. Its time to first token is the request's own cost on the way in and
  out (HTTP, the API server, the engine's queues) plus one step that computes P prompt tokens. The request's cost is
  the shortest prompt's time to first token less a decode step of one sequence (both run one step over a handful of
  tokens), and a step of P prompt tokens is the rest of each prompt's time to first token;
- **mixed**: a prompt sent while other sequences decode; their gap that ends with its first token is one step that
  decodes them and computes the prompt. It is not fitted: it checks the rule below.

Between measured points the step is interpolated linearly (decode: in the batch, then in the context; prefill: in
the tokens), and extended along the last two points beyond them. A step that decodes b sequences and computes c prompt
tokens takes decode(b) + prefill(c) − decode(1): the part of a step that does not grow with its tokens (launching
the model, sampling, handing the tokens out) is paid once, not twice. Times are what a client saw, so they hold the
host's own work per step; the request's cost is returned apart, for the engine's setting `request_overhead_s`.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.serving.llm.engine_config import BLOCK_TOKENS, MEMORY_FRACTION


class NoStepCurve(ValueError):
    """The check holds no step curve this model can be built from (the message is one line)."""


def _linear(points: Sequence[tuple[float, float]], x: float) -> float:
    """Piecewise-linear through `points` (sorted by x), extended along the two end points beyond them."""
    if len(points) == 1:
        return points[0][1]
    for i in range(len(points) - 1):
        if x <= points[i + 1][0] or i == len(points) - 2:
            (x0, y0), (x1, y1) = points[i], points[i + 1]
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]  # not reached


def _never_falling(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A decode row with each point held to at most the next larger batch's: one more sequence never makes a step
    shorter, so a point above a larger batch's was slowed by something else on the host (a stall during its probe)."""
    found, lowest = [], float("inf")
    for x, y in reversed(points):
        lowest = min(lowest, y)
        found.append((x, lowest))
    return found[::-1]


def request_times(requests: Mapping[str, Any]) -> list[tuple[float, list[float]]]:
    """(sent, every token's arrival) per answered request, in seconds from the load's start."""
    found = []
    for sent, tokens, error in zip(requests["sent_s"], requests["token_s"], requests["error"]):
        if error is None and tokens:
            found.append((sent, [sent + t for t in tokens]))
    return found


def decode_gaps(requests: Mapping[str, Any]) -> list[tuple[float, float]]:
    """(step, context) per sequence of a probe, over the window where each of its sequences decodes (after the last
    first token, before the first last token): the time from its first token in the window to its last, over the
    steps between. A mean over the window, not a median of gaps: the API server hands tokens out in bursts when it
    falls behind (several in one chunk, then a long gap), which leaves the span between tokens whole. Context: the
    prompt and the tokens made by the window's middle."""
    answered = request_times(requests)
    if len(answered) != len(requests["sent_s"]) or not answered:
        return []
    opened = max(times[0] for _, times in answered)
    closed = min(times[-1] for _, times in answered)
    found = []
    for (_, times), prompt in zip(answered, requests["prompt_tokens"]):
        inside = [k for k, t in enumerate(times) if opened <= t <= closed]
        if len(inside) >= 2 and inside[-1] > inside[0] and times[inside[-1]] > times[inside[0]]:
            first, last = inside[0], inside[-1]
            found.append(((times[last] - times[first]) / (last - first), prompt + (first + last) / 2))
    return found


@dataclass(frozen=True)
class ProbePoint:
    """One measured point of the step curve: its median and its samples (seconds)."""

    x: float  # a decode point's batch, a prefill point's prompt tokens
    context: float  # a decode point's mean context; 0 for a prefill point
    median_s: float
    samples_s: tuple[float, ...]
    prompt: int = 0  # a decode point's probe prompt length (its context row)


def decode_points(curve: Mapping[str, Any]) -> list[ProbePoint]:
    """Per (batch, prompt length) of the decode probes, over their repeats: the decode steps' median and mean
    context."""
    grouped: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for probe in curve["decode"]:
        grouped.setdefault((probe["batch"], probe["prompt_tokens"]), []).extend(decode_gaps(probe["requests"]))
    found = []
    for (batch, prompt), gaps in sorted(grouped.items()):
        if gaps:
            samples = tuple(g for g, _ in gaps)
            context = statistics.fmean(c for _, c in gaps)
            found.append(ProbePoint(batch, context, statistics.median(samples), samples, prompt))
    return found


def first_token_points(curve: Mapping[str, Any]) -> list[ProbePoint]:
    """Per prompt length of the prefill probes: the times to first token of a prompt alone."""
    grouped: dict[int, list[float]] = {}
    for probe in curve["prefill"]:
        for sent, times in request_times(probe["requests"]):
            grouped.setdefault(probe["prompt_tokens"], []).append(times[0] - sent)
    return [ProbePoint(p, 0.0, statistics.median(v), tuple(v)) for p, v in sorted(grouped.items())]


def mixed_points(curve: Mapping[str, Any]) -> list[tuple[int, int, float]]:
    """(decoders, prompt tokens, the step that computed the prompt) of every mixed probe: per decoder, its gap that
    ends nearest the late prompt's first token (that step's tokens reach the client within a millisecond of each
    other, in no set order), their median."""
    found = []
    for probe in curve["mixed"]:
        answered = request_times(probe["requests"])
        if len(answered) != len(probe["requests"]["sent_s"]) or len(answered) < 2:
            continue
        first = answered[-1][1][0]  # the prompt is the last request
        spans = []
        for _, times in answered[:-1]:
            gaps = [(abs(b - first), b - a) for a, b in itertools.pairwise(times)]
            if gaps:
                spans.append(min(gaps)[1])
        if spans:
            found.append((probe["decoders"], probe["prompt_tokens"], statistics.median(spans)))
    return found


class EngineCurveStep:
    """Step times of a real engine, from an engine check's step curve (see the module's docstring)."""

    efficiency = 1.0
    tensor_parallel = 1
    timed_on = "on the engine's measured step curve"

    def __init__(self, curve: Mapping[str, Any], *, kv_blocks: int, block_tokens: int, label: str = "the engine"):
        decode = decode_points(curve)
        first = first_token_points(curve)
        if not decode or not first:
            raise NoStepCurve("the check's step curve holds no decode step of a whole batch or no lone prompt")
        self.label, self.kv_pool, self.block_tokens = label, kv_blocks, block_tokens
        self.decode_points, self.first_token_points = decode, first
        by_prompt: dict[int, list[ProbePoint]] = {}
        for p in decode:  # a prompt length's points share one context row, at their mean context
            by_prompt.setdefault(p.prompt, []).append(p)
        rows = {statistics.fmean(p.context for p in pts): sorted((p.x, p.median_s) for p in pts)
                for pts in by_prompt.values()}  # fmt: skip
        self.decode_rows = {ctx: _never_falling(pts) for ctx, pts in sorted(rows.items())}
        self.one_s = self.decode_s(1, min(self.decode_rows))
        shortest = first[0]
        self.request_overhead_s = max(0.0, shortest.median_s - self.one_s)
        self.prefill_curve = [(p.x, max(p.median_s - self.request_overhead_s, 1e-6)) for p in first]
        self.fixed_s = self.one_s

    def decode_s(self, batch: float, context: float) -> float:
        rows = [(ctx, _linear(points, batch)) for ctx, points in self.decode_rows.items()]
        floor = min(p.median_s for p in self.decode_points)
        return max(floor, _linear(rows, context))

    def prefill_s(self, tokens: float) -> float:
        return max(min(t for _, t in self.prefill_curve), _linear(self.prefill_curve, tokens))

    def step_seconds(
        self, decoders: int, positions: float, prefill_tokens: int, prefill_attended: float, prefill_positions: float,
        logits: int,
    ) -> float:  # fmt: skip
        if decoders and prefill_tokens:
            return self.decode_s(decoders, positions / decoders - 1) + self.prefill_s(prefill_tokens) - self.one_s
        if decoders:
            return self.decode_s(decoders, positions / decoders - 1)
        return self.prefill_s(prefill_tokens)

    def kv_blocks(self, memory_fraction: float = MEMORY_FRACTION, block_tokens: int = BLOCK_TOKENS) -> int:
        """The engine's own pool, whatever is asked: it was measured, not derived from a memory size."""
        return self.kv_pool

    def describe(self) -> str:
        batches = sorted({int(p.x) for p in self.decode_points})
        prompts = ", ".join(f"{int(p.x):,}" for p in self.first_token_points)
        return (
            f"{self.label}'s measured step curve: decode steps at batches {batches[0]}–{batches[-1]} and contexts "
            f"{', '.join(f'{c:,.0f}' for c in self.decode_rows)}, prompts of {prompts} tokens alone; a request's own "
            f"cost {self.request_overhead_s * 1e3:.1f} ms"
        )
