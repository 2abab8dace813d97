"""The continuous-batching simulator's step on the forecast instead of the ceiling, and a step that records how
a simulated run's ceiling splits by bound (what the calibration fits a serving figure with).

A forecast step keeps the ceiling step's matrix products and attention, each with its bound, divides each by the
calibrated share of the resource that bounds it and adds the calibrated fixed cost per step in place of the
ceiling's own (`benchmarks.analysis.roofline.forecast`).

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import numpy as np

from benchmarks.analysis.roofline.forecast import Efficiency, Parts
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.step_model import StepTime, StepWork


def _copy(cls, step: RooflineStep):
    found = object.__new__(cls)
    found.__dict__.update(step.__dict__)
    return found


def _split(detail: StepTime) -> tuple[float, float]:
    """(memory-bound, compute-bound) seconds of a ceiling step."""
    memory = compute = 0.0
    for seconds, bound in ((detail.matmul_s, detail.matmul_bound), (detail.attention_s, detail.attention_bound)):
        if bound == "compute":
            compute += seconds
        else:
            memory += seconds
    return memory, compute


class ForecastStep(RooflineStep):
    """A ceiling step's operations divided by the calibrated efficiencies, plus the calibrated fixed cost."""

    forecast: Efficiency
    ceiling_step: RooflineStep
    timed_on = "in the forecast (the roofline's times divided by the calibrated efficiencies)"

    @classmethod
    def of(cls, step: RooflineStep, efficiency: Efficiency) -> ForecastStep:
        if isinstance(step, ForecastStep):  # it would divide by the efficiencies twice
            raise TypeError("ForecastStep.of needs a ceiling step; this one is a forecast already")
        found = _copy(cls, step)
        found.forecast, found.ceiling_step = efficiency, step
        found.fixed_s, found.efficiency = efficiency.fixed_s, 1.0
        return found

    def detail(self, work: StepWork) -> StepTime:
        d = self.ceiling_step.detail(work)
        e = self.forecast
        scale = {"memory": e.memory, "compute": e.compute}
        return StepTime(
            d.matmul_s / d.efficiency / scale[d.matmul_bound],
            d.attention_s / d.efficiency / scale[d.attention_bound],
            e.fixed_s,
            1.0,
            d.matmul_bound,
            d.attention_bound,
            d.communication_s / d.efficiency,  # the all-reduce model has its own latency: not rescaled
        )

    def seconds(self, tokens: int, logits: int, attended: float, kv_positions: float) -> float:
        """The simulator's hot path: `detail(...).seconds` without building objects (a test holds them equal)."""
        t, e = self.terms, self.forecast
        weights = self.step_weight_bytes + (self.expert_read_bytes(tokens) if self.expert_bytes else 0.0)
        mm_c = (2 * t.matmul_weights * tokens + 2 * self.head_elements * logits) / self.flops_per_s
        mm_m = (weights + t.activation_bytes_per_token * tokens) / self.bytes_per_s
        at_c = t.attention_flops_per_position * attended / self.flops_per_s
        at_m = t.kv_bytes_per_position * kv_positions / self.bytes_per_s
        mm = mm_c / e.compute if mm_c >= mm_m else mm_m / e.memory
        at = at_c / e.compute if at_c >= at_m else at_m / e.memory
        link = self.communication_s(tokens) if self.communication else 0.0
        return e.fixed_s + (mm + at + link) / self.ceiling_step.efficiency

    def decode_run_seconds(self, decoders: int, positions: np.ndarray, padding: int) -> np.ndarray:
        """`seconds` of decode-only steps over each of `positions`, to the last bit (as RooflineStep's)."""
        t, e, tokens = self.terms, self.forecast, decoders + padding
        weights = self.step_weight_bytes + (self.expert_read_bytes(tokens) if self.expert_bytes else 0.0)
        mm_c = (2 * t.matmul_weights * tokens + 2 * self.head_elements * tokens) / self.flops_per_s
        mm_m = (weights + t.activation_bytes_per_token * tokens) / self.bytes_per_s
        at_c = t.attention_flops_per_position * positions / self.flops_per_s
        at_m = t.kv_bytes_per_position * positions / self.bytes_per_s
        mm = mm_c / e.compute if mm_c >= mm_m else mm_m / e.memory
        at = np.where(at_c >= at_m, at_c / e.compute, at_m / e.memory)
        link = self.communication_s(tokens) if self.communication else 0.0
        return e.fixed_s + (mm + at + link) / self.ceiling_step.efficiency

    def describe(self) -> str:
        e = self.forecast
        return (
            f"{self.ceiling_step.describe()}; forecast: memory-bound work at {e.memory:.0%} of the bandwidth, "
            f"compute-bound at {e.compute:.0%} of the FLOP/s, {e.fixed_s * 1e3:.2f} ms fixed per step "
            "(fitted to published figures)"
        )


class RecordingStep(RooflineStep):
    """The ceiling step itself, adding up the memory-bound and compute-bound seconds of every step it times."""

    parts: Parts
    decode_run_seconds = None  # every step is recorded one at a time, up to where the simulator stops

    @classmethod
    def of(cls, step: RooflineStep) -> RecordingStep:
        found = _copy(cls, step)
        found.parts = Parts(0.0, 0.0, 0)
        return found

    def seconds(self, tokens: int, logits: int, attended: float, kv_positions: float) -> float:
        d = self.detail(StepWork(tokens, logits, attended, kv_positions))
        memory, compute = _split(d)
        self.parts = self.parts + Parts(
            memory / d.efficiency, compute / d.efficiency, 1, d.communication_s / d.efficiency
        )
        return d.seconds
