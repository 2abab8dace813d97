"""What to expect beside a roofline: the share of it that published systems reached, by kind of work.

A roofline is a bound. The comparisons on the published page (`benchmarks.analysis.published_check`) say how far
below it real systems ran: published ÷ predicted, per figure. This module groups the figures whose configuration
breaks none of the model's assumptions by the kind of work that takes most of their predicted time, a decode
step, a prefill or a CNN, and gives each kind its band: the lowest, median and highest share. Nothing here is typed
in: the band is recomputed from `benchmarks/published/measurements.json` every time. A kind with fewer than
MIN_FIGURES figures has no band (`band_for` returns None), and no kind borrows another's.

A prediction of t seconds with a band (low, median, high) is then expected to take from t / high to t / low,
about t / median.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from benchmarks.analysis.published_check import Check, checks

DECODE, PREFILL, CNN = "decode step", "prefill", "CNN"
KINDS = (DECODE, PREFILL, CNN)
MIN_FIGURES = 3  # fewer published figures of a kind than this give it no band


@dataclass(frozen=True)
class Figure:
    """One published figure behind a band: its row, its source and the share of the roofline it reached."""

    id: str
    source: str
    ratio: float


@dataclass(frozen=True)
class Band:
    """The share of the roofline published systems reached for one kind of work."""

    kind: str
    low: float
    median: float
    high: float
    figures: tuple[Figure, ...]

    @property
    def n(self) -> int:
        return len(self.figures)

    @property
    def sources(self) -> int:
        return len({f.source for f in self.figures})

    def expected_s(self, predicted_s: float) -> tuple[float, float, float]:
        """(fastest, typical, slowest) time to expect for a predicted roofline time."""
        return predicted_s / self.high, predicted_s / self.median, predicted_s / self.low


def kind_of_check(found: Check) -> str | None:
    """The kind of work a published comparison is about: a generation counts as decode steps or as a prefill by
    which takes most of its predicted time. None for a kind no band covers."""
    m = found.row.model
    if m.kind == "decode-step":
        return DECODE
    if m.kind == "prefill":
        return PREFILL
    if m.kind == "generation":
        return PREFILL if found.prediction.prefill_s > found.prediction.seconds / 2 else DECODE
    if m.kind == "throughput" and m.workload in ("resnet50", "conv"):
        return CNN
    return None


def kind_of(workload: str, params: Mapping[str, Any]) -> str | None:
    """The kind of a prediction: a decode step or a prefill of the decoder, a CNN; None for the other
    workloads (an MLP, one Linear layer, a mixture of experts), which no published figure covers."""
    if workload == "decode":
        return PREFILL if params.get("phase") == "prefill" else DECODE
    if workload in ("resnet50", "conv"):
        return CNN
    return None


def figures(found: Sequence[Check], kind: str) -> list[Figure]:
    """The figures of `kind` whose configuration breaks none of the model's assumptions."""
    return [Figure(c.row.id, c.row.source.short, c.ratio) for c in found if not c.breaks and kind_of_check(c) == kind]


def band(found: Sequence[Check], kind: str) -> Band | None:
    """The band of `kind` over the comparisons `found`; None with fewer than MIN_FIGURES figures."""
    chosen = figures(found, kind)
    if len(chosen) < MIN_FIGURES:
        return None
    ratios = [f.ratio for f in chosen]
    return Band(kind, min(ratios), statistics.median(ratios), max(ratios), tuple(chosen))


@lru_cache(maxsize=1)
def _published() -> tuple[Check, ...]:
    return tuple(checks())


def figures_for(kind: str) -> list[Figure]:
    """The published figures of `kind` (benchmarks/published/measurements.json) that a band is drawn from."""
    return figures(_published(), kind)


def band_for(kind: str | None) -> Band | None:
    """The band of `kind` from the committed published figures; None for no kind or too few figures."""
    return band(_published(), kind) if kind in KINDS else None
