"""What the engine asks of a device: the step-time model's one seam (`StepModel`), and what a step computes and takes.

Every step-time model (the datasheet's roofline, the calibrated forecast, a run's measured decoder, the engine's
own measured curve) gives the seconds of one step from what the step computes, and the KV blocks that fit; the
scheduler and the KV-cache manager never ask more of it.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class StepWork:
    """What one step computes, summed over its sequences.

    tokens: new tokens through the matrix products (1 per decoding sequence, a chunk's length per prefill);
    logits: sequences that sample a token this step (the output head runs only for them);
    attended: (query token, cached position) pairs, each 4·layers·heads·head_dim FLOPs;
    kv_positions: cached positions read or written, each κ bytes.
    """

    tokens: int
    logits: int
    attended: float
    kv_positions: float


@dataclass(frozen=True)
class StepTime:
    """The roofline of a step: max(compute, memory) for the matrix products, then for the attention."""

    matmul_s: float
    attention_s: float
    fixed_s: float
    efficiency: float
    matmul_bound: str
    attention_bound: str
    communication_s: float = 0.0  # tensor parallelism's all-reduces, on the link between the GPUs

    @property
    def seconds(self) -> float:
        return self.fixed_s + (self.matmul_s + self.attention_s + self.communication_s) / self.efficiency


@runtime_checkable
class StepModel(Protocol):
    """What the engine asks of a device, and all it asks: the seconds of one step and how many KV blocks fit. The
    datasheet's (RooflineStep), the calibrated forecast (forecast_step.ForecastStep) and a measured decoder's
    (measured_step.MeasuredStep) each give both."""

    def step_seconds(
        self, decoders: int, positions: float, prefill_tokens: int, prefill_attended: float, prefill_positions: float,
        logits: int,
    ) -> float:  # fmt: skip
        """A step of `decoders` decoding sequences over `positions` cached positions in all, and prompt pieces of
        `prefill_tokens` tokens (attending over `prefill_attended` pairs, touching `prefill_positions` positions);
        `logits` sequences sample a token."""
        ...

    def kv_blocks(self, memory_fraction: float = ..., block_tokens: int = ...) -> int:
        """The KV-cache blocks of `block_tokens` tokens that fit in `memory_fraction` of the device's memory."""
        ...

    def describe(self) -> str:
        """The step in words, for a result's provenance."""
        ...
