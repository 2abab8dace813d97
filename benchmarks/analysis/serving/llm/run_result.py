"""What one simulated run gave (per request and per token, in seconds) and the latency budget it is held to.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Result:
    """Per-request and per-token figures of one simulated run (seconds)."""

    ttft_s: np.ndarray  # time to first token, per request
    tpot_s: np.ndarray  # time per output token after the first, per request with more than one
    e2e_s: np.ndarray  # arrival to last token
    itl_s: np.ndarray  # every gap between two tokens of a sequence
    output_tokens: int
    requests: int
    duration_s: float  # first arrival to last token
    mean_running: float  # sequences held, averaged over time
    max_running: int
    kv_blocks: int
    kv_peak_blocks: int
    preemptions: int
    steps: int
    busy_s: float  # time spent in steps
    offered_rate: float | None = None  # requests/s offered (Poisson); None for a closed loop
    clients: int | None = None
    step_share: dict[str, float] = field(default_factory=dict)  # prefill and decode shares of the busy time
    prompt_mean: float = 0.0  # tokens, over the requests served
    waiting_at_last_arrival: int = 0  # of an open loop
    user_rate_s: np.ndarray = field(default_factory=lambda: np.array([]))  # per request: output tokens ÷ e2e
    # per request, in request order (every request, warm-up included): arrival, first token, last token, outputs
    arrival_s: np.ndarray = field(default_factory=lambda: np.array([]))
    first_s: np.ndarray = field(default_factory=lambda: np.array([]))
    finish_s: np.ndarray = field(default_factory=lambda: np.array([]))
    outputs: np.ndarray = field(default_factory=lambda: np.array([]))
    prefilled_tokens: int = 0  # prompt tokens computed (after preemptions too), not taken from the prefix cache
    prefix_hit_share: float | None = None  # blocks of the shared prefix found cached, of those asked for
    prefix_evictions: int = 0

    def percentile(self, metric: str, p: float) -> float:
        values = getattr(self, f"{metric}_s")
        return float(np.percentile(values, p)) if len(values) else math.nan

    @property
    def tokens_per_s(self) -> float:
        """Output tokens over the whole run, first arrival to last token (as benchmark clients report it)."""
        return self.output_tokens / self.duration_s

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.duration_s

    @property
    def tokens_per_s_per_user(self) -> float:
        """What one user sees while its answer streams, the first token's wait left out: 1 / the median time per
        output token after the first."""
        return 1 / float(np.median(self.tpot_s)) if len(self.tpot_s) else math.nan

    @property
    def tokens_per_s_per_user_with_first(self) -> float:
        """What one user gets from sending its request to its last token, the first token's wait included: the
        median over requests of output tokens ÷ end-to-end time."""
        return float(np.median(self.user_rate_s)) if len(self.user_rate_s) else math.nan

    @property
    def kv_peak_share(self) -> float:
        return self.kv_peak_blocks / self.kv_blocks if self.kv_blocks else math.nan

    @property
    def overloaded(self) -> bool:
        """An open loop that could not keep up: when the last request arrived, more than 5 % of all requests were
        still waiting to be admitted (a queue that grows with time)."""
        return self.offered_rate is not None and self.waiting_at_last_arrival > 0.05 * self.requests

    def summary(self) -> dict[str, float | int | bool | None]:
        found: dict[str, float | int | bool | None] = {}
        for metric in ("ttft", "tpot", "itl"):
            for p in (50, 90, 99):
                found[f"{metric}_p{p}_ms"] = self.percentile(metric, p) * 1e3
        found.update(
            tokens_per_s=self.tokens_per_s,
            tokens_per_s_per_user=self.tokens_per_s_per_user,
            tokens_per_s_per_user_with_first=self.tokens_per_s_per_user_with_first,
            requests_per_s=self.requests_per_s,
            mean_running=self.mean_running,
            max_running=self.max_running,
            kv_blocks=self.kv_blocks,
            kv_peak_share=self.kv_peak_share,
            preemptions=self.preemptions,
            steps=self.steps,
            overloaded=self.overloaded,
            prefilled_tokens=self.prefilled_tokens,
        )
        if self.prefix_hit_share is not None:
            found.update(prefix_hit_share=self.prefix_hit_share, prefix_evictions=self.prefix_evictions)
        return found


@dataclass(frozen=True)
class Budget:
    """Limits at a percentile of the per-request time per output token and, optionally, time to first token."""

    tpot_s: float
    ttft_s: float | None = None
    percentile: float = 99

    def misses(self, result: Result) -> list[str]:
        """What the run misses: 'tpot', 'ttft', 'overload' (an open loop that fell behind)."""
        found = []
        if result.percentile("tpot", self.percentile) > self.tpot_s:
            found.append("tpot")
        if self.ttft_s is not None and result.percentile("ttft", self.percentile) > self.ttft_s:
            found.append("ttft")
        if result.overloaded:
            found.append("overload")
        return found

    def describe(self) -> str:
        said = f"p{self.percentile:g} time per output token ≤ {self.tpot_s * 1e3:g} ms"
        if self.ttft_s is not None:
            said += f" and p{self.percentile:g} time to first token ≤ {self.ttft_s * 1e3:g} ms"
        return said
