"""Step times for the continuous-batching simulator read off a committed run: the decode and prefill points the
run measured for one decoder, interpolated over batch and context.

A decode step of b sequences at mean context c takes the measured median at (b, c): linear in the batch between
measured batches (and along the last two beyond the largest), then linear in the context between the two nearest
measured contexts (and along them beyond). A step's prompt pieces take the prefill curve's time for that many
tokens (the curve of the nearest prompt length, linear in its tokens, batch × prompt length). The two add. The
measured times already hold the run's launch overhead, so no fixed cost is added; the step knows nothing the run
did not measure (other widths, other dtypes, a GPU it was not run on).

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.analysis.roofline import curves as c
from benchmarks.analysis.roofline.curves import Curve, bytes_per_element
from benchmarks.analysis.roofline.decode import is_decode, is_prefill
from benchmarks.contract.errors import UserError
from benchmarks.contract.results import Run
from benchmarks.llm_models import PublishedModel, model_weight_bytes
from benchmarks.workloads import decoder_config
from snippets.costs import kv_cache_bytes

CONFIG_KEYS = ("layers", "d_model", "heads", "kv_heads", "d_ff", "ffn")


class NoMeasurement(ValueError, UserError):
    """The run has no decode and prefill curves to serve from (the message is one line)."""


def _linear(points: Sequence[tuple[float, float]], x: float) -> float:
    """Piecewise-linear through `points` (sorted by x), extended along the two end points beyond them."""
    if len(points) == 1:
        return points[0][1]
    for i in range(len(points) - 1):
        if x <= points[i + 1][0] or i == len(points) - 2:
            (x0, y0), (x1, y1) = points[i], points[i + 1]
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]  # not reached


def decoder_choices(run: Run) -> list[dict[str, Any]]:
    """The decoder configurations the run measured both a decode step and a prefill for."""
    found = []
    curves = c.curves(run, "decode")
    for curve in curves:
        config = {k: curve.params[k] for k in CONFIG_KEYS if k in curve.params}
        if is_decode(curve) and config not in found and any(_same(p, config) and is_prefill(p) for p in curves):
            found.append(config)
    return found


def _same(curve: Curve, config: Mapping[str, Any]) -> bool:
    return all(curve.params.get(k) == v for k, v in config.items())


class MeasuredStep:
    """Step times of the decoder a run measured, on the device it ran on (see the module's docstring)."""

    fixed_s = 0.0
    efficiency = 1.0
    tensor_parallel = 1

    def __init__(self, run: Run, wanted: Mapping[str, Any] | None = None, mode: str | None = None):
        wanted = dict(wanted or {})
        choices = [cfg for cfg in decoder_choices(run) if all(cfg.get(k) == v for k, v in wanted.items())]
        if not choices:
            raise NoMeasurement(
                f"run {run.id} measured no decode step and prefill of a decoder matching {wanted or 'any'}"
            )
        if len(choices) > 1:
            differ = sorted({k for cfg in choices for k in cfg if any(o.get(k) != cfg.get(k) for o in choices)})
            raise NoMeasurement(
                f"run {run.id} measured {len(choices)} decoders; choose one with --param ({', '.join(differ)})"
            )
        config = choices[0]
        curves = [cv for cv in c.curves(run, "decode") if _same(cv, config) and cv.points]
        modes = sorted({cv.mode for cv in curves})
        self.mode = mode or ("graph" if "graph" in modes else modes[0])
        curves = [cv for cv in curves if cv.mode == self.mode]
        if not any(is_decode(cv) for cv in curves) or not any(is_prefill(cv) for cv in curves):
            raise NoMeasurement(f"run {run.id} measured no decode step and prefill in mode {self.mode!r}")
        self.dtype = curves[0].dtype
        size = bytes_per_element(self.dtype) or 4
        self.bytes_per_element = size
        self.run = run
        self.decode = {
            cv.params["context"]: [(p.batch, p.median_s) for p in cv.points] for cv in curves if is_decode(cv)
        }
        self.prefill = {
            cv.params["context"]: [(p.batch * cv.params["context"], p.median_s) for p in cv.points]
            for cv in curves
            if is_prefill(cv)
        }
        params = {**config, "context": max(self.decode)}
        self.config = decoder_config(params)
        self.model = PublishedModel(
            f"decoder measured by run {run.id}", self.config, vocab=0, tied=True,
            source=f"the decoder of run {run.id}: " + ", ".join(f"{k} {v}" for k, v in config.items()),
            max_context=10 * max(max(self.decode), max(self.prefill)),
        )  # fmt: skip
        self.memory_bytes = float(run.device.get("memory_bytes") or 0)
        if not self.memory_bytes:
            raise NoMeasurement(f"run {run.id} does not record its device's memory, so the KV cache cannot be sized")
        self.weight_bytes = model_weight_bytes(self.model, size)
        self.kv_bytes_per_token = kv_cache_bytes(self.config, 1, 1, size)

    def decode_s(self, batch: float, context: float) -> float:
        by_context = sorted((ctx, _linear(points, batch)) for ctx, points in self.decode.items())
        floor = min(t for points in self.decode.values() for _, t in points)
        return max(floor, _linear(by_context, context))

    def prefill_s(self, tokens: float) -> float:
        length = min(self.prefill, key=lambda ctx: abs(ctx - tokens))
        points = self.prefill[length]
        return max(min(t for _, t in points), _linear(points, tokens))

    def step_seconds(
        self, decoders: int, positions: float, prefill_tokens: int, prefill_attended: float, prefill_positions: float,
        logits: int,
    ) -> float:  # fmt: skip
        seconds = 0.0
        if decoders:
            seconds += self.decode_s(decoders, positions / decoders - 1)
        if prefill_tokens:
            seconds += self.prefill_s(prefill_tokens)
        return seconds

    def kv_blocks(self, memory_fraction: float = 0.9, block_tokens: int = 16) -> int:
        free = self.memory_bytes * memory_fraction - self.weight_bytes
        return max(0, int(free // (self.kv_bytes_per_token * block_tokens)))

    def describe(self) -> str:
        contexts = ", ".join(f"{ctx:,}" for ctx in sorted(self.decode))
        batches = sorted({b for points in self.decode.values() for b, _ in points})
        return (
            f"{self.model.source} in {self.dtype} ({self.mode}), measured on {run_device(self.run)}: decode steps at "
            f"batches {batches[0]}–{batches[-1]} and contexts {contexts}, prefills of "
            f"{', '.join(f'{ctx:,}' for ctx in sorted(self.prefill))}-token prompts, interpolated linearly in batch "
            "and context (extended along the last two points beyond them); no fixed cost added"
        )


def run_device(run: Run) -> str:
    return f"{run.device.get('name', 'a device')} ({run.device.get('kind', '?')}, run {run.id})"
