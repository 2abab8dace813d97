"""The gradient noise scale and the steps-to-target it predicts, from a noise-scale measurement's raw numbers.

Estimates (McCandlish et al. 2018, appendix A.1): with mean squared gradient norms g_s and g_l of batches of B_s
and B_l examples, |G|² ≈ (B_l·g_l − B_s·g_s)/(B_l − B_s) and tr(Σ) ≈ (g_s − g_l)/(1/B_s − 1/B_l), and the
simple noise scale B_simple = tr(Σ)/|G|². Each seed's reference run gives one estimate per checkpoint; a seed's
noise scale is the mean of its checkpoints' (the noise scale of a run changes as it trains), and the spread is
over seeds.

Prediction (their equation 2.11): steps to a target S = S_min·(1 + B_noise/B) at batch B, with the tuned learning
rate at every batch. B_noise is taken as the measured B_simple; S_min, the only number fitted to the steps, is
the geometric mean of S_i / (1 + B_noise/B_i) over the batch sizes measured. For comparison, both S_min and
B_noise are also fitted to the steps alone. Pure Python.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class NoiseScaleEstimate:
    seed: int
    step: int
    train_loss: float
    gradient_sq: float  # |G|²
    trace: float  # tr(Σ)

    @property
    def b_simple(self) -> float | None:
        """tr(Σ)/|G|², or None when the estimate of |G|² is not positive (the norms were too noisy)."""
        return self.trace / self.gradient_sq if self.gradient_sq > 0 else None


def estimate(small_batch: int, large_batch: int, small: Sequence[float], large: Sequence[float]) -> tuple[float, float]:
    """(|G|², tr(Σ)) from the squared norms of batches at two batch sizes."""
    g_small, g_large = statistics.fmean(small), statistics.fmean(large)
    gradient_sq = (large_batch * g_large - small_batch * g_small) / (large_batch - small_batch)
    trace = (g_small - g_large) / (1 / small_batch - 1 / large_batch)
    return gradient_sq, trace


def estimates(doc: Mapping[str, Any]) -> list[NoiseScaleEstimate]:
    """One estimate per seed and checkpoint of a noise-scale document."""
    noise = doc["noise"]
    found = []
    for m in noise["measurements"]:
        g, trace = estimate(noise["small_batch"], noise["large_batch"], m["small_sq_norms"], m["large_sq_norms"])
        found.append(NoiseScaleEstimate(m["seed"], m["step"], m["train_loss"], g, trace))
    return found


@dataclass(frozen=True)
class NoiseScale:
    per_seed: dict[int, float]  # each seed's B_simple, the mean over its checkpoints

    @property
    def mean(self) -> float:
        return statistics.fmean(self.per_seed.values())

    @property
    def spread(self) -> float:
        """The standard deviation over seeds (0 for one seed)."""
        values = list(self.per_seed.values())
        return statistics.stdev(values) if len(values) > 1 else 0.0


def noise_scale(doc: Mapping[str, Any]) -> NoiseScale:
    """B_simple per seed (checkpoints whose |G|² came out non-positive are left out) and over seeds."""
    by_seed: dict[int, list[float]] = {}
    for e in estimates(doc):
        if e.b_simple is not None:
            by_seed.setdefault(e.seed, []).append(e.b_simple)
    if not by_seed:
        raise ValueError("no checkpoint gave a positive |G|²: the gradient norms are too noisy to estimate from")
    return NoiseScale({seed: statistics.fmean(values) for seed, values in sorted(by_seed.items())})


@dataclass(frozen=True)
class BatchSteps:
    batch: int
    learning_rate: float  # the rate of the grid that reached the target in the fewest steps (median over seeds)
    steps: float  # that median
    per_seed: tuple[int, ...]


def steps_by_batch(doc: Mapping[str, Any]) -> list[BatchSteps]:
    """Per batch size: the learning rate whose runs reached the target in every seed with the fewest median
    steps, and those steps. A batch size none of whose rates reached it in every seed is left out."""
    runs: dict[tuple[int, float], list[int | None]] = {}
    for run in doc["training"]["runs"]:
        runs.setdefault((run["batch"], run["learning_rate"]), []).append(run["steps"])
    best: dict[int, BatchSteps] = {}
    for (batch, rate), steps in sorted(runs.items()):
        if any(s is None for s in steps):
            continue
        median = statistics.median(steps)
        if batch not in best or median < best[batch].steps:
            best[batch] = BatchSteps(batch, rate, median, tuple(steps))
    return [best[b] for b in sorted(best)]


def predicted_steps(s_min: float, b_noise: float, batch: float) -> float:
    return s_min * (1 + b_noise / batch)


def fit_s_min(points: Sequence[BatchSteps], b_noise: float) -> float:
    """The S_min that makes S_min·(1 + B_noise/B) closest to the steps in log space (their geometric mean)."""
    if not points:
        raise ValueError("no batch size reached the target: nothing to fit")
    return math.exp(statistics.fmean(math.log(p.steps / (1 + b_noise / p.batch)) for p in points))


def fit_both(points: Sequence[BatchSteps]) -> tuple[float, float]:
    """(S_min, B_noise) fitted to the steps alone, B_noise searched on a fine logarithmic grid from 0.01 to 10⁶."""

    def misfit(b_noise: float) -> float:
        s_min = fit_s_min(points, b_noise)
        return sum(math.log(p.steps / predicted_steps(s_min, b_noise, p.batch)) ** 2 for p in points)

    grid = [10 ** (k / 100) for k in range(-200, 601)]
    b_noise = min(grid, key=misfit)
    return fit_s_min(points, b_noise), b_noise


@dataclass(frozen=True)
class NoiseScaleCheck:
    """The steps against batch that the measured noise scale predicts, beside the steps measured."""

    noise: NoiseScale
    s_min: float
    points: tuple[BatchSteps, ...]
    fitted_s_min: float
    fitted_b_noise: float

    def predicted(self, batch: float) -> float:
        return predicted_steps(self.s_min, self.noise.mean, batch)

    def ratios(self) -> dict[int, float]:
        """Measured ÷ predicted steps at each batch size."""
        return {p.batch: p.steps / self.predicted(p.batch) for p in self.points}

    def examples(self, batch: float) -> float:
        """Examples processed to reach the target: E = B·S = E_min·(1 + B/B_noise), with E_min = S_min·B_noise."""
        return batch * self.predicted(batch)


def check(doc: Mapping[str, Any]) -> NoiseScaleCheck:
    points = steps_by_batch(doc)
    found = noise_scale(doc)
    fitted_s_min, fitted_b_noise = fit_both(points)
    return NoiseScaleCheck(found, fit_s_min(points, found.mean), tuple(points), fitted_s_min, fitted_b_noise)
