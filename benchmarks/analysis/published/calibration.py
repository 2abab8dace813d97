"""The calibration from the committed published figures: every figure as the fit sees it, the fit on all of them,
and each figure forecast without its own source (`benchmarks.analysis.roofline.forecast` says how).

Two files feed it. benchmarks/published/measurements.json: each compared row's calls, predicted by
`benchmarks.analysis.published.roofline_check`, give its ceiling split by bound. benchmarks/published/serving.json:
each row is simulated on the ceiling step with a step that records how the run's time splits by bound
(`benchmarks.analysis.serving.llm.forecast_step.RecordingStep`); the fit scales the simulated figure by the forecast
time over the ceiling time, and the cross-validation simulates the row again on the forecast step, so that what a
slower step does to the batches and the queue is simulated, not assumed.

The fit leaves out figures whose configuration breaks an assumption of the model (`published_check.BREAKS`), and
serving figures that the queue sets rather than the step time: a time to first token under load, and any figure
of a run at a fixed Poisson rate (its throughput is the offered rate while it keeps up). Every figure is still
forecast and shown.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from benchmarks.analysis.published.roofline_check import RooflineRowCheck, calls, checks
from benchmarks.analysis.published.serving_figures import ServingRow, predict_row, read_serving
from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.roofline.forecast import CNN as CNN_KIND
from benchmarks.analysis.roofline.forecast import (
    DECODE,
    GEMM,
    KINDS,
    LLM,
    PREFILL,
    SCOPES,
    Calibration,
    Expected,
    HeldOutForecast,
    PublishedFigure,
    expected,
    family_of,
    fit,
    leave_one_source_out,
    precision_of,
    total_parts,
)
from benchmarks.analysis.serving.llm.forecast_step import ForecastStep, RecordingStep

SCALES_WITH_STEP = ("tokens_per_s", "itl_mean", "tpot_mean")  # serving figures a step-time change scales


def measurement_kind(found: RooflineRowCheck) -> str:
    m = found.row.model
    if m.kind == "gemm":
        return GEMM
    if m.kind == "throughput":
        return CNN_KIND
    if m.kind == "prefill":
        return PREFILL
    if m.kind == "generation":
        return PREFILL if found.prediction.prefill_s > found.prediction.seconds / 2 else DECODE
    return DECODE


def measurement_figure(found: RooflineRowCheck) -> PublishedFigure:
    m = found.row.model
    breaks = found.breaks
    return PublishedFigure(
        id=found.row.id,
        source=found.row.source.short,
        kind=measurement_kind(found),
        family=family_of(m.workload),
        precision=precision_of(m.dtype),
        gpu=f"{m.gpus} × {m.gpu}" if m.gpus > 1 else m.gpu,
        parts=total_parts(calls(m, found.row.unit).points),
        ceiling=found.predicted,
        published=found.published,
        unit=f"{found.per}/s",
        time_like=False,
        fit=not breaks,
        note=f"not fitted: breaks {', '.join(breaks)}" if breaks else "",
        tensor_parallel=m.gpus if m.parallelism == "tensor" else 1,
    )


def serving_figure(row: ServingRow) -> PublishedFigure:
    s = row.setup
    recorder = RecordingStep.of(s.step())
    ceiling = predict_row(row, step=recorder).predicted
    queued = s.figure not in SCALES_WITH_STEP or s.clients is None
    why = "a Poisson rate's run (its throughput and latency are the queue's)" if s.clients is None else (
        "a time set by the queue under load"
    )  # fmt: skip
    gpus = s.tensor_parallel * s.copies
    return PublishedFigure(
        id=row.id,
        source=row.source["short"],
        kind=PREFILL if s.figure == "ttft_mean" else DECODE,
        family=LLM,
        precision=precision_of(s.dtype),
        gpu=f"{gpus} × {s.gpu}" if gpus > 1 else s.gpu,
        parts=recorder.parts,
        ceiling=ceiling,
        published=row.value,
        unit=row.unit,
        time_like=row.unit == "ms",
        fit=not queued,
        note=f"not fitted: {why}" if queued else "",
        ceiling_extra_s=recorder.parts.calls * recorder.fixed_s,
        tensor_parallel=s.tensor_parallel,
    )


@dataclass(frozen=True)
class Study:
    """The figures, the calibration fitted on all of them, and each one's leave-one-source-out forecast."""

    figures: tuple[PublishedFigure, ...]
    calibration: Calibration
    outcomes: tuple[HeldOutForecast, ...]

    @property
    def sources(self) -> int:
        return len({f.source for f in self.figures})

    def expected(self, kind: str | None = None, fitted_only: bool = True, scope: str | None = None) -> Expected | None:
        chosen = [o for o in self.outcomes if o.figure.fit or not fitted_only]
        return expected(chosen, kind, scope)

    def ceiling_reached(self, kind: str | None = None, fitted_only: bool = True) -> list[float]:
        """The share of its ceiling each figure of `kind` (every kind for None) reached, sorted: the published rate
        over the ceiling's, or the ceiling's time over the published one, so that 1 is the ceiling itself."""
        return sorted(
            1 / o.figure.slowdown
            for o in self.outcomes
            if (o.figure.fit or not fitted_only) and (kind is None or o.figure.kind == kind)
        )

    def expected_table(self) -> list[Expected]:
        """Each kind's error, then every kind's together: each over both scopes, then on one GPU and split over GPUs
        apart, where there are figures (the rows the calibrate command and the published page give)."""
        return [
            found
            for kind in (*KINDS, None)
            for scope in (None, *SCOPES)
            if (found := self.expected(kind, scope=scope)) is not None
        ]

    def to_json(self) -> dict:
        return calibration_file.to_json(self.calibration, self.outcomes, len(self.figures), self.sources)


def _evaluator(rows: dict[str, ServingRow]):
    def evaluate(figure: PublishedFigure, calibration: Calibration) -> float:
        efficiency = calibration.efficiency(figure.family, figure.precision)
        row = rows.get(figure.id)
        if row is None:
            return figure.forecast(efficiency)
        return predict_row(row, step=ForecastStep.of(row.setup.step(), efficiency)).predicted

    return evaluate


def study(checked: list[RooflineRowCheck] | None = None, serving: list[ServingRow] | None = None) -> Study:
    """Fit and cross-validate on the committed published figures (or the ones given)."""
    checked = checks() if checked is None else checked
    serving = read_serving() if serving is None else serving
    figures = [measurement_figure(c) for c in checked] + [serving_figure(r) for r in serving]
    outcomes = leave_one_source_out(figures, _evaluator({r.id: r for r in serving}))
    return Study(tuple(figures), fit(figures), tuple(outcomes))


@lru_cache(maxsize=1)
def committed_study() -> Study:
    """The study of the committed published files (several seconds: every serving row is simulated twice)."""
    return study()
