"""Causal sentences, built only from a diagnosis (`benchmarks.analysis.roofline.diagnosis`), each naming its
evidence. No page writes its own "because": it calls these.

Every verdict is wrapped in `<span class="verdict" data-curve=... data-regime=...>` so that a test can
read, on the built site, which regime each sentence gives each curve and check it against the
diagnosis.
"""

from __future__ import annotations

from benchmarks.analysis.roofline import diagnosis as dg
from benchmarks.analysis.roofline.diagnosis import Diagnosis, FixedCost, PointVerdict, Segment
from benchmarks.analysis.roofline.knees import KneeCheck
from benchmarks.site import text
from benchmarks.site.render import Html, tag

CEILING = {dg.MEMORY: "copy bandwidth", dg.COMPUTE: "matmul rate"}


def curve_key(diagnosis: Diagnosis) -> str:
    """The curve a verdict is about, as the claims test names it: run, workload, label, dtype, mode, cache."""
    c = diagnosis.curve
    return f"{c.run.id}|{c.workload}|{c.label}|{c.dtype}|{c.mode}|{c.cache}"


def mark(diagnosis: Diagnosis, regime: str, words: str, batch: int | None = None) -> Html:
    extra = {"data_batch": str(batch)} if batch is not None else {}
    return tag("span", words, class_="verdict", data_curve=curve_key(diagnosis), data_regime=regime, **extra)


def fixed_words(fixed: FixedCost) -> str:
    """Where the estimate of the fixed per-call cost comes from."""
    if fixed.source == "graph":
        return "the gap between eager calls and CUDA-graph replay at this batch"
    if fixed.source == "per-op":
        return f"{fixed.ops} ops × {text.fmt_time(fixed.per_op_s)} per op, measured on the {fixed.reference} at batch 1"
    return "the intercept of time against bytes across this MLP's widths at the same batch"


def regime_words(point: PointVerdict, diagnosis: Diagnosis) -> str:
    """'memory-bound: it moves 13.2 GB/s, 49 % of the run's 26.7 GB/s copy bandwidth' and the like."""
    ceilings = diagnosis.curve.ceilings
    if point.regime == dg.OVERHEAD:
        return (
            f"overhead-bound: a fixed per-call cost of {text.fmt_time(point.fixed.seconds)} "
            f"({fixed_words(point.fixed)}) is {dg.share_words(point.fixed_share)} of its {text.fmt_time(point.seconds)}"
        )
    if point.regime == dg.MEMORY:
        rate, share = text.fmt_rate(point.bytes_per_s, "B/s"), point.bandwidth_share
        ceiling = f" of the run's {text.fmt_rate(ceilings.bytes_per_s, 'B/s')} copy bandwidth" if ceilings else ""
        return f"memory-bound: it moves {rate} of counted bytes" + (
            f", {dg.share_words(share)}{ceiling}" if share else ""
        )
    rate, share = text.fmt_rate(point.flops_per_s, "FLOP/s"), point.compute_share
    ceiling = f" of the run's {text.fmt_rate(ceilings.flops_per_s, 'FLOP/s')} matmul rate" if ceilings else ""
    shared = f", {dg.share_words(share)}{ceiling}" if share else ""
    return f"compute-bound: it runs {rate}{shared}"


def point_sentence(diagnosis: Diagnosis, batch: int) -> Html | None:
    """'At batch 1 the call is memory-bound: ...', with the fixed cost when it is measured and small."""
    point = diagnosis.at(batch)
    if point is None:
        return None
    words = f"At batch {batch} the call is {regime_words(point, diagnosis)}."
    if point.regime != dg.OVERHEAD and point.fixed is not None:
        words += (
            f" Its fixed per-call cost, {text.fmt_time(point.fixed.seconds)} ({fixed_words(point.fixed)}), is "
            f"{dg.share_words(point.fixed_share)} of its {text.fmt_time(point.seconds)}."
        )
    return mark(diagnosis, point.regime, words, batch)


def segment_words(segment: Segment) -> str:
    span = f"batch {segment.first}" if segment.first == segment.last else f"batches {segment.first}–{segment.last}"
    if segment.regime == dg.OVERHEAD:
        return f"overhead-bound at {span}"
    share = f" at {dg.share_words(segment.share)} of the {CEILING[segment.regime]}" if segment.share else ""
    return f"{segment.regime}-bound at {span}{share}"


def curve_summary(diagnosis: Diagnosis) -> Html:
    """'memory-bound at batches 1–4 at 35 % of the copy bandwidth, compute-bound at 8–512 at 80 % ...'"""
    words = "; ".join(segment_words(s) for s in diagnosis.segments) or "no measured point"
    regimes = ",".join(dict.fromkeys(diagnosis.regimes))
    return mark(diagnosis, regimes, words)


def knee_sentence(diagnosis: Diagnosis) -> Html | None:
    """Where the roofline of the rates the kernels reached puts the ridge batch, beside the measured knee."""
    curve, reached = diagnosis.curve, diagnosis.reached
    knee, predicted = curve.knee, diagnosis.predicted_knee
    if knee is None or not predicted or reached is None or diagnosis.reached_knee is None or curve.ceilings is None:
        return None
    ceilings = curve.ceilings
    bandwidth, rate = reached.bytes_per_s, reached.flops_per_s
    first = diagnosis.first
    alone = (
        f" (batch 1 alone: {text.fmt_rate(first.bytes_per_s, 'B/s')})"
        if first is not None and abs(first.bytes_per_s / bandwidth - 1) > 0.2
        else ""
    )
    words = (
        f"Its small batches stream the weights at {text.fmt_rate(bandwidth, 'B/s')}{alone}, "
        f"{dg.share_words(bandwidth / ceilings.bytes_per_s)} of the copy bandwidth, and its large batches multiply "
        f"at {text.fmt_rate(rate, 'FLOP/s')}, {dg.share_words(rate / ceilings.flops_per_s)} of the matmul rate; "
        f"at these rates the ridge batch is ≈ {text.fmt_batch(diagnosis.reached_knee)} (measured knee "
        f"≈ {text.fmt_batch(knee.batch)}; ridge batch from the run's ceilings ≈ {text.fmt_batch(predicted)})."
    )
    return mark(diagnosis, ",".join(dict.fromkeys(diagnosis.regimes)), words)


def serial_sentence(check: KneeCheck) -> Html | None:
    """Why the ridge batch at the rates reached misses a curve whose fixed cost adds to its arithmetic."""
    if not check.serial_explains:
        return None
    d, curve = check.diagnosis, check.diagnosis.curve
    share = d.reached.bytes_per_s / curve.ceilings.bytes_per_s if curve.ceilings else None
    missed = (
        f"The ridge batch at the rates reached (≈ {text.fmt_batch(check.reached)}) misses the measured knee"
        if check.reached
        else "At the rates reached the roofline never turns compute-bound"
    )
    words = (
        f"{missed}: the flat part streams only {text.fmt_rate(d.reached.bytes_per_s, 'B/s')}"
        f"{f' ({dg.share_words(share)} of the copy bandwidth)' if share else ''}, and its flat time, "
        f"{text.fmt_time(check.flat_s)}, behaves as a fixed cost that adds to the arithmetic instead of overlapping "
        f"it: the flat time plus FLOPs at {text.fmt_rate(d.reached.flops_per_s, 'FLOP/s')} fits the measured points "
        f"{check.serial_error:.2f} off in log time (the roofline {check.roofline_error:.2f}) and bends at "
        f"≈ {text.fmt_batch(check.serial)}, where the measurement bends at ≈ {text.fmt_batch(check.measured)}."
    )
    return mark(d, ",".join(dict.fromkeys(d.regimes)), words)


def point_brief(diagnosis: Diagnosis, batch: int) -> Html | str:
    """'memory-bound, 50 % of the copy bandwidth' for a table cell ('–' when not measured)."""
    point = diagnosis.at(batch)
    if point is None:
        return "–"
    if point.regime == dg.OVERHEAD:
        words = f"overhead-bound: a fixed cost {dg.share_words(point.fixed_share)} of the time"
    elif point.share is not None:
        words = f"{point.regime}-bound at {dg.share_words(point.share)} of the {CEILING[point.regime]}"
    else:
        words = f"{point.regime}-bound"
    return mark(diagnosis, point.regime, words, batch)
