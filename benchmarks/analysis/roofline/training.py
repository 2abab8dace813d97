"""A training step on any ceilings: its time by phase, what it holds in memory and the largest batch that fits,
with and without activation checkpointing. A ceiling (roofline), not a forecast: every phase at its own roofline,
no fixed cost per call, perfect overlap within a phase. Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from benchmarks.analysis.roofline.predict import PredictedPoint, predict
from benchmarks.gpus import BYTES_PER_ELEMENT, Ceilings
from benchmarks.workloads import optimizer_name, saved_bytes_per_sample, training_parameters, workload
from snippets import choose, costs

TRAINING_WORKLOADS = ("train-mlp", "train-decoder")
LABEL = "ceiling (roofline)"


def is_training(name: str) -> bool:
    return name in TRAINING_WORKLOADS


@dataclass(frozen=True)
class Memory:
    """What a training step holds: the state kept between steps, by part, and the activations of one sample."""

    held: Mapping[str, float]  # weights, gradients, optimizer state (with fp32 master weights in mixed precision)
    per_sample: float  # activations autograd keeps for one sample (a row, or a sequence of seq tokens)
    per_sample_checkpointed: float  # the same with every layer checkpointed

    @property
    def held_bytes(self) -> float:
        return sum(self.held.values())

    def total(self, batch: int, checkpointed: bool = False) -> float:
        return self.held_bytes + batch * (self.per_sample_checkpointed if checkpointed else self.per_sample)

    def largest_batch(self, memory_bytes: float, checkpointed: bool = False) -> int:
        per_sample = self.per_sample_checkpointed if checkpointed else self.per_sample
        return costs.largest_batch(memory_bytes, self.held_bytes, per_sample)


def memory(name: str, params: Mapping[str, Any], dtype: str) -> Memory:
    s = BYTES_PER_ELEMENT[dtype]
    held = costs.state_bytes(training_parameters(params), params["optimizer"], s, params.get("precision", "pure"))
    return Memory(held, saved_bytes_per_sample(params, s), saved_bytes_per_sample(params, s, checkpointed=True))


@dataclass(frozen=True)
class PredictedStep:
    """One predicted training step at one batch."""

    point: PredictedPoint
    samples: int  # tokens per sample for a decoder (seq), 1 for an MLP row
    checkpointing_recomputes: bool  # checkpointing reruns the forward (the decoder); the MLP has nothing to drop

    @property
    def batch(self) -> int:
        return self.point.batch

    @property
    def phases(self) -> dict[str, float]:
        return {op.name: op.seconds for op in self.point.operations}

    @property
    def seconds(self) -> float:
        return self.point.seconds

    @property
    def checkpointed_seconds(self) -> float:
        """With every layer checkpointed the backward reruns each layer's forward first: one more forward."""
        return self.seconds + (self.phases["forward"] if self.checkpointing_recomputes else 0.0)

    @property
    def throughput(self) -> float:
        """Rows per second (MLP) or tokens per second (decoder)."""
        return self.batch * self.samples / self.seconds

    @property
    def update_share(self) -> float:
        return self.phases["optimizer"] / self.seconds


def steps(
    name: str, params: Mapping[str, Any], ceilings: Ceilings, dtype: str, batches: Iterable[int]
) -> list[PredictedStep]:
    """The roofline of a training step at each batch, by phase."""
    if not is_training(name):
        raise ValueError(f"{name!r} is not a training workload; choose from {', '.join(TRAINING_WORKLOADS)}")
    samples = params.get("seq", 1)
    recomputes = name == "train-decoder"
    return [PredictedStep(p, samples, recomputes) for p in predict(name, params, ceilings, dtype, batches)]


def ridge_batch(name: str, params: Mapping[str, Any], ceilings: Ceilings, dtype: str) -> float | None:
    """The batch from which the step's compute time exceeds its memory time (summed over its phases), found on
    powers of two and interpolated between them; None when it never does up to 2²⁴."""
    grid = [2**i for i in range(25)]
    previous = None
    for step in steps(name, params, ceilings, dtype, grid):
        compute = sum(op.compute_s for op in step.point.operations)
        memory_s = sum(op.memory_s for op in step.point.operations)
        if compute >= memory_s:
            if previous is None:
                return float(step.batch)
            (b0, gap0), b1, gap1 = previous, step.batch, compute - memory_s
            return b0 + (b1 - b0) * (-gap0) / (gap1 - gap0)
        previous = (step.batch, compute - memory_s)
    return None


def describe(name: str, params: Mapping[str, Any]) -> str:
    return f"{workload(name).shape(params)} with {optimizer_name(params)}, {params.get('precision', 'pure')} precision"


def sweep_training_lines(doc: Mapping[str, Any], memory_gb: float | None) -> list[str]:
    """What a training sweep supports: where the time per sample stops falling (the smallest batch within 5 % of
    the best throughput measured, `snippets.choose`), the largest batch whose held state and activations fit
    `memory_gb`, and the smaller of the two to run."""
    found = doc.get("training")
    points = [(p["batch"], p["median_s"]) for p in doc["points"] if p["status"] == "ok"]
    if not found or not points:
        return []
    held, per_sample = sum(found["held_bytes"].values()), found["saved_bytes_per_sample"]
    flat = choose.throughput_flattens(points)
    seconds = dict(points)
    lines = [
        "Training step (" + found["optimizer"] + "; loss: " + found["loss"] + "):",
        f"  held whatever the batch: {_bytes(held)} (weights, gradients, optimizer state); autograd keeps "
        f"{_bytes(per_sample)} per sample ({found['counted']})",
        f"  time per sample stops falling at batch {flat}: {seconds[flat] / flat * 1e3:.3g} ms a sample, within "
        f"{100 - choose.FLAT_SHARE * 100:.0f} % of the best throughput measured",
    ]
    if memory_gb is None:
        lines.append(f"  run batch {flat} (give --memory-gb for the largest batch that fits)")
        return lines
    budget = memory_gb * 1e9
    largest = costs.largest_batch(budget, held, per_sample) if per_sample > 0 else None
    if largest is None:
        lines.append("  autograd kept nothing that grows with the batch: memory sets no largest batch")
        pick = flat
    elif largest == 0:
        lines.append(f"  not even one sample fits {memory_gb:g} GB beside the held state ({_bytes(held)})")
        return lines
    else:
        lines.append(
            f"  largest batch whose held state and activations fit {memory_gb:g} GB: {largest:,} (workspace and the "
            "allocator's own memory not counted)"
        )
        pick = min(flat, largest)
    why = "where time per sample stops falling" if pick == flat else f"the largest that fits {memory_gb:g} GB"
    lines.append(f"  run batch {pick:,}: {why}")
    return lines


def _bytes(value: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"
