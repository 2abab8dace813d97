"""Requests' token lengths: fixed, uniform, log-normal or listed, and clipping a request to a model's length.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.contract.inputs import LENGTHS_LIMIT, InputError, read_text_bounded

MAX_LENGTH = 10_000_000


@dataclass(frozen=True)
class Lengths:
    """Token lengths of requests: fixed, uniform (low..high), log-normal (a mean and σ of log) or listed."""

    kind: str  # fixed, uniform, lognormal, listed
    low: int = 0
    high: int = 0
    mean: float = 0.0
    sigma: float = 0.0
    values: tuple[int, ...] = ()

    @classmethod
    def fixed(cls, n: int) -> Lengths:
        return cls("fixed", low=n, high=n, mean=n)

    @classmethod
    def uniform(cls, low: int, high: int) -> Lengths:
        return cls("uniform", low=low, high=high, mean=(low + high) / 2)

    @classmethod
    def lognormal(cls, mean: float, sigma: float, high: int) -> Lengths:
        """Log-normal with this mean (in tokens) and σ of the logarithm, clipped to 1..high."""
        return cls("lognormal", low=1, high=high, mean=mean, sigma=sigma)

    @classmethod
    def listed(cls, values: Sequence[int]) -> Lengths:
        found = tuple(int(v) for v in values)
        return cls("listed", low=min(found), high=max(found), mean=sum(found) / len(found), values=found)

    @classmethod
    def from_file(cls, path: Path | str) -> Lengths:
        """One whole number a line (blank lines and lines starting with # skipped). ValueError otherwise (also for
        a file that is not a regular text file of at most LENGTHS_LIMIT bytes)."""
        path = Path(path)
        values = []
        try:
            text = read_text_bounded(path, kind="token-length file", limit_bytes=LENGTHS_LIMIT)
        except InputError as exc:
            raise ValueError(str(exc)) from None
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if not (line.isascii() and line.isdigit()) or not 1 <= int(line) <= MAX_LENGTH:
                raise ValueError(f"{path}: line {number}: must be a whole number of tokens from 1 to {MAX_LENGTH:,}")
            values.append(int(line))
        if not values:
            raise ValueError(f"{path}: holds no lengths")
        return cls.listed(values)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "fixed":
            return np.full(n, self.low, dtype=np.int64)
        if self.kind == "uniform":
            return rng.integers(self.low, self.high + 1, size=n)
        if self.kind == "lognormal":
            mu = math.log(self.mean) - self.sigma**2 / 2
            return np.clip(np.rint(rng.lognormal(mu, self.sigma, size=n)), 1, self.high).astype(np.int64)
        return rng.choice(np.array(self.values, dtype=np.int64), size=n)

    def describe(self) -> str:
        if self.kind == "fixed":
            return f"{self.low:,}"
        if self.kind == "uniform":
            return f"uniform {self.low:,}–{self.high:,}"
        if self.kind == "lognormal":
            return f"log-normal, mean {self.mean:,.0f}, σ {self.sigma:g} (at most {self.high:,})"
        return f"{len(self.values):,} listed lengths, mean {self.mean:,.0f}"


def clip_pairs(prompts: list[int], outputs: list[int], longest: int) -> tuple[list[int], list[int]]:
    """Each request clipped to `longest` tokens in all, as an engine's max_model_len bounds it: a prompt to
    `longest` - 1 (one token of answer at least), then its answer to what is left."""
    clipped = [min(p, longest - 1) for p in prompts]
    return clipped, [min(o, longest - p) for p, o in zip(clipped, outputs)]
