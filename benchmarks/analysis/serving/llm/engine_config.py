"""The settings an engine's users tune (vLLM's names), and the one error for a workload they can never serve.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.analysis.serving.llm.prefix_cache import SharedPrefix

BLOCK_TOKENS = 16  # vLLM's default block size
MEMORY_FRACTION = 0.9  # vLLM's default gpu_memory_utilization

SCHEDULER_NAMES = ("vllm-v0", "vllm-v1")  # the keys of scheduler.SCHEDULERS (a test holds them equal)


@dataclass(frozen=True)
class Engine:
    """The settings an engine's users tune (vLLM's names)."""

    max_num_seqs: int = 256
    max_batched_tokens: int = 8192
    chunked_prefill: bool = False
    reserve: bool = False  # admit only when blocks for the longest answer allowed are free (no preemption ever)
    block_tokens: int = BLOCK_TOKENS
    memory_fraction: float = MEMORY_FRACTION
    max_model_len: int | None = None  # the longest a request (prompt and answer) may be; longer ones are clipped
    prefix: SharedPrefix | None = None  # prefix caching on, for the prompt beginning the workload shares
    cuda_graphs: bool = False  # decode-only steps run on CUDA graphs of vLLM's sizes for the cap, padded up to one
    scheduler: str = "vllm-v0"  # the scheduling rule (benchmarks.analysis.serving.llm.scheduler.SCHEDULERS)
    # A request reaches the scheduler this long after it is sent (HTTP, the API server, the engine's queues, and its
    # first token's way back): the host's own cost of a request, which a real server's check measures.
    request_overhead_s: float = 0.0

    def problems(self) -> list[str]:
        found = [] if self.prefix is None else self.prefix.problems()
        if self.max_num_seqs < 1:
            found.append("max_num_seqs must be at least 1")
        if self.max_batched_tokens < 1:
            found.append("max_batched_tokens must be at least 1")
        if self.max_model_len is not None and self.max_model_len < 2:
            found.append("max_model_len must be at least 2 (a prompt token and an answer token)")
        if self.chunked_prefill and self.max_batched_tokens < self.max_num_seqs:
            found.append("with chunked prefill, max_batched_tokens must be at least max_num_seqs")
        if self.block_tokens < 1:
            found.append("block_tokens must be at least 1")
        if not 0 < self.memory_fraction <= 1:
            found.append("memory_fraction must be above 0 and at most 1")
        if not 0 <= self.request_overhead_s < 3600:
            found.append("request_overhead_s must be from 0 to an hour")
        if self.scheduler not in SCHEDULER_NAMES:
            found.append(f"scheduler must be one of {', '.join(SCHEDULER_NAMES)}, got {self.scheduler!r}")
        return found


class Infeasible(ValueError):
    """A workload the engine can never serve (one line, for the command line)."""
