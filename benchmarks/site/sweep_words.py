"""A model sweep's verdict in words, from the facts `analysis.roofline.recommend` finds: the lines the terminal, the
results file, the HTML report and the site print, one per finding (the budget, the throughput, the batch to run,
the free range, memory, how sure it is, the diagnosis of the curve per stretch).

`recommend` and `from_document` are the analysis's, with the lines filled in; `SweepPoint` is re-exported so
that this module is what the sweep command hands the measuring loop as its advice.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from benchmarks.analysis.roofline import diagnosis
from benchmarks.analysis.roofline import recommend as facts
from benchmarks.analysis.roofline.recommend import (
    FAR_BELOW,
    NEAR_BEST,
    SAMPLES_NEEDED,
    UNKNOWN,
    CurveDiagnosis,
    Noise,
    Recommendation,
    SweepPoint,
    fastest,
    margin_batch,
)

__all__ = ["SweepPoint", "from_document", "recommend", "with_lines"]


def with_lines(rec: Recommendation) -> Recommendation:
    """The recommendation with its verdict in words."""
    return dataclasses.replace(rec, lines=tuple(verdict_lines(rec, rec.failures, rec.unit)))


def recommend(*args, **kwargs) -> Recommendation:
    """`analysis.roofline.recommend.recommend`, with the verdict in words."""
    return with_lines(facts.recommend(*args, **kwargs))


def from_document(doc: dict) -> Recommendation:
    """`analysis.roofline.recommend.from_document`, with the verdict in words."""
    return with_lines(facts.from_document(doc))


def _compare(point: SweepPoint, base: SweepPoint, percentile: int) -> str:
    latency = point.percentile_s / base.percentile_s
    return (
        f"{point.throughput / base.throughput:.1f}× the throughput of batch {base.batch} at "
        f"{latency:.1f}× the p{percentile} latency"
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def verdict_lines(rec: Recommendation, failures: Sequence[dict], unit: str = "samples") -> list[str]:
    """The recommendation in sentences, each from the numbers above it."""
    lines = []
    if rec.base is None:
        return ["no batch size ran: " + "; ".join(f"batch {f['batch']}: {f['message']}" for f in failures[:3])]
    base, p = rec.base, rec.percentile
    if rec.noise is not None:
        lines.append(noise_line(rec.noise))
    if rec.stopped:
        lines.append(f"Search stopped: {rec.stopped}.")
    if rec.budget_s is not None:
        if rec.within_budget is not None:
            w = rec.within_budget
            lines.append(
                f"Largest batch within the {_ms(rec.budget_s)} p{p} budget: batch {w.batch} ({_ms(w.percentile_s)}), "
                + _compare(w, base, p)
                + "."
                + _gap_words(rec)
            )
            margin = budget_margin_line(rec)
            if margin:
                lines.append(margin)
            if rec.breaks_budget:
                lines.append(breaks_budget_line(rec))
        else:
            quickest = fastest(rec.measured)
            lines.append(
                f"No batch meets the {_ms(rec.budget_s)} p{p} budget: batch {quickest.batch}, the fastest, takes "
                f"{_ms(quickest.percentile_s)}, {rec.budget_missed_by:.1f}× the budget."
            )
    if rec.thin:
        lines.append(thin_line(rec))
    if rec.best is not None:
        lines.append(
            f"Highest throughput: batch {rec.best.batch}, {rec.best.throughput:,.0f} {unit}/s; batch "
            f"{rec.near_best.batch} is within 5 % of it ({rec.near_best.throughput:,.0f} {unit}/s)."
            + _cutoff_words(rec, unit)
        )
    if rec.run is not None:
        lines.append(run_line(rec))
        relation = answers_line(rec)
        if relation:
            lines.append(relation)
    if rec.free_up_to is not None and rec.free_up_to.batch > base.batch:
        f = rec.free_up_to
        lines.append(
            f"Free range: up to batch {f.batch} the median latency stays within 10 % of batch {base.batch}'s "
            f"({_ms(f.median_s)} against {_ms(base.median_s)})."
        )
    elif rec.free_up_to is not None and len(rec.measured) > 1:
        after = rec.measured[1]
        lines.append(
            f"Free range: none; batch {after.batch} already takes {_ms(after.median_s)}, "
            f"{after.median_s / base.median_s:.2f}× batch {base.batch}'s {_ms(base.median_s)}."
        )
    if rec.first_oom is not None:
        lines.append(
            f"Memory: batch {rec.largest_ran} is the largest that ran; batch {rec.first_oom} ran out of memory."
        )
    lines += diagnosis_lines(rec.diagnosis)
    errors = [f for f in failures if f["status"] == "error"]
    if errors:
        shown = ", ".join(str(f["batch"]) for f in errors[:6])
        lines.append(f"Failed at batch {shown}: {errors[0]['message']}")
    return lines


def noise_line(noise: Noise) -> str:
    """The machine's noise during the sweep, first, with what to do when it is high."""
    tail = f"the p90 is {noise.tail:.2f}× the median (median over {noise.batches} batch sizes)" if noise.tail else ""
    spreads = ", ".join(f"{name} {_spread(value)}" for name, value in noise.ceilings)
    ceilings = f"the ceilings' samples span {spreads}" if spreads else ""
    evidence = "; ".join(part for part in (tail, ceilings) if part) or "no repeated samples to judge it by"
    if not noise.high:
        return f"Noise: low — {evidence}."
    return (
        f"Noise: high — {evidence}. Other work shared this machine: the answers below carry that noise. Rerun on "
        "an idle machine (or with --threads below the core count), and compare two runs before acting on them."
    )


def _spread(ratio: float) -> str:
    return f"{ratio:.1f}×" if ratio >= 1.5 else f"{100 * (ratio - 1):.0f} %"


def _gap_words(rec: Recommendation) -> str:
    """Nothing measured between the budget's answer and the next batch, when that leaves a gap."""
    w = rec.within_budget
    above = next((p for p in rec.measured if p.batch > w.batch), None)
    if above is None or above.batch - w.batch <= 1:
        return ""
    return f" Nothing was measured between batch {w.batch + 1} and {above.batch - 1}: a larger batch may meet it too."


def budget_margin_line(rec: Recommendation) -> str | None:
    """When the budget falls within the spread of the answer's percentile, or of the next batch's, say so and
    name the other option."""
    w, p, budget = rec.within_budget, rec.percentile, rec.budget_s
    parts = []
    high = w.interval(p)[1]
    if high > budget:
        safe = margin_batch(rec)
        choice = (
            f"batch {safe.batch} is the largest whose whole p{p} spread stays within it (the choice with a margin)"
            if safe
            else "no smaller batch is clearly within it"
        )
        parts.append(
            f"Batch {w.batch} meets the {_ms(budget)} p{p} budget by {_ms(budget - w.percentile_s)}, within the spread "
            f"of its p{p} ({_ms(w.interval(p)[0])}–{_ms(high)}): {choice}."
        )
    above = next((q for q in rec.measured if q.batch > w.batch), None)
    if above is not None and above.interval(p)[0] <= budget:
        parts.append(
            f"Batch {above.batch} misses it by {_ms(above.percentile_s - budget)}, within the spread of its p{p} "
            f"({_ms(above.interval(p)[0])}–{_ms(above.interval(p)[1])}): it may meet the budget on another run."
        )
    return " ".join(parts) or None


def _cutoff_words(rec: Recommendation, unit: str) -> str:
    """When the 5 % cut-off falls within the noise of the batch it picks, the first batch beyond that noise."""
    near, sure = rec.near_best, rec.near_sure
    if sure is None or sure.batch == near.batch:
        return ""
    low, high = near.throughput_interval()
    cutoff = (1 - NEAR_BEST) * rec.best.throughput
    return (
        f" The cut-off ({cutoff:,.0f} {unit}/s) lies within the noise of batch {near.batch} ({low:,.0f}–{high:,.0f} "
        f"{unit}/s): batch {sure.batch} is the first beyond it, and either is a fair reading of this run."
    )


def breaks_budget_line(rec: Recommendation) -> str:
    """The measured batches below the budget's answer that break the budget. Beyond the noise (their median
    slower than the larger batch's, past both intervals): avoid them. Within it: their slowest samples."""
    over, w, p = rec.breaks_budget, rec.within_budget, rec.percentile
    slower = tuple(q for q in over if q.interval(50)[0] > w.interval(50)[1])
    times = ", ".join(_ms(q.percentile_s) for q in over)
    verb = "breaks" if len(over) == 1 else "break"
    if slower == over:
        pronoun = "it" if len(over) == 1 else "them"
        return (
            f"{_batch_list(over).capitalize()} {verb} the budget ({times} p{p}) although the larger batch {w.batch} "
            f"meets it, and {'its' if len(over) == 1 else 'their'} median is slower than batch {w.batch}'s beyond the "
            f"noise: latency did not grow steadily with the batch here, so avoid {pronoun}."
        )
    return (
        f"{_batch_list(over).capitalize()} {verb} the budget ({times} p{p}) although the larger batch {w.batch} meets "
        f"it; {'its median is' if len(over) == 1 else 'their medians are'} not slower than batch {w.batch}'s beyond "
        f"the noise, so the p{p} reflects a few slow samples, not a slower batch."
    )


def answers_line(rec: Recommendation) -> str | None:
    """How the batches named above relate, when they differ, and how `serve`'s max batch differs from them all."""
    named = {rec.run.batch}
    said = []
    if rec.within_budget is not None:
        named.add(rec.within_budget.batch)
        said.append(f"batch {rec.within_budget.batch} is the largest whose p{rec.percentile} fits the budget")
    safe = margin_batch(rec)
    if safe is not None:
        named.add(safe.batch)
        said.append(f"batch {safe.batch} fits it with a margin for the noise")
    said.append(f"batch {rec.run.batch} is the recommended one, the guide's rule")
    if len(named) < 2:
        return None
    return (
        "How these answers relate: " + "; ".join(said) + ". `serve` answers another question from this sweep: the max "
        "batch for a dynamic batcher under an arrival rate, where each request also waits for its batch to form and "
        "for a free instance, so its max batch may be none of these."
    )


def run_line(rec: Recommendation) -> str:
    """The batch to run, and which step of the guide's rule chose it."""
    if rec.within_budget is not None:
        near = f"batch {rec.near_best.batch}, the first within 5 % of the highest throughput" if rec.near_best else ""
        why = f"the smaller of batch {rec.within_budget.batch}, the largest within the budget, and {near}"
        which = "the smaller of the two"
    elif rec.budget_s is not None:
        why, which = "no batch meets the budget, so the fastest", "the fastest, as no batch meets the budget"
    else:
        why, which = "no budget given", "the smallest near the highest throughput, as no budget is given"
    run, ruled = rec.run, rec.ruled
    if ruled is None or ruled.batch == run.batch:
        return f"Recommended batch: run batch {run.batch} ({why}: the rule of the batch-size guide)."
    return (
        f"Recommended batch: run batch {run.batch} (the rule of the batch-size guide: batch {ruled.batch} is "
        f"{which}, but the larger batch {run.batch} measured no slower, {_ms(run.median_s)} median against "
        f"{_ms(ruled.median_s)}, at {run.throughput / ruled.throughput:.2f}× the throughput)."
    )


def thin_line(rec: Recommendation) -> str:
    """The warning that a percentile rests on too few samples to be more than the slowest of them."""
    p, counts = rec.percentile, sorted(len(point.samples) for point in rec.thin)
    which = "every batch" if len(rec.thin) == len(rec.measured) else _batch_list(rec.thin)
    taken = f"{counts[0]}" if counts[0] == counts[-1] else f"{counts[0]} to {counts[-1]}"
    return (
        f"Few samples: the p{p} of {which} rests on {taken} samples, and a p{p} needs at least "
        f"{SAMPLES_NEEDED[p]} to be more than the slowest of them."
    )


def _batch_list(points: Sequence[SweepPoint]) -> str:
    batches = [str(point.batch) for point in points]
    shown = ", ".join(batches[:8]) + (f" and {len(batches) - 8} more" if len(batches) > 8 else "")
    return f"batch {shown}" if len(batches) == 1 else f"batches {shown}"


def segment_line(found: CurveDiagnosis, segment: diagnosis.Segment) -> str:
    """The sentence that says what bounds one stretch of the curve, with its evidence, per point where the
    evidence varies along it."""
    span = f"batch {segment.first}" if segment.first == segment.last else f"batches {segment.first}–{segment.last}"
    points = segment.points
    if segment.regime == diagnosis.OVERHEAD:
        return f"{span}: overhead-bound — {_dispatch_words(points)}."
    if segment.regime == UNKNOWN:
        return _unknown_line(found, span, points)
    if segment.regime == diagnosis.MEMORY:
        streams = [_stream_share(found, v) or 0 for v in points]
        if max(v.bandwidth_share or 0 for v in points) < FAR_BELOW and max(streams) < FAR_BELOW:
            return _far_below_line(span, segment)
        return f"{span}: memory-bound — " + _memory_words(found, points) + _dispatch_tail(points) + "."
    if max(v.compute_share or 0 for v in points) < FAR_BELOW:
        return _far_below_line(span, segment)
    return (
        f"{span}: compute-bound — the counted FLOPs run at "
        + _shares_words(points, lambda v: v.compute_share, "the measured matmul rate", _rate_words(points, "FLOP/s"))
        + _dispatch_tail(points)
        + "."
    )


def _dispatch_words(points: Sequence[diagnosis.PointVerdict]) -> str:
    """'its 129 operators at 3.1 µs each (the dispatch probe: …) take 0.40 ms, 16 % of the time'."""
    first = points[0].fixed
    ops = sorted({v.fixed.ops for v in points})
    op_words = f"{ops[0]}" if len(ops) == 1 else f"{ops[0]}–{ops[-1]}"
    seconds = sorted(v.fixed.seconds for v in points)
    took = _ms(seconds[0]) if _ms(seconds[0]) == _ms(seconds[-1]) else f"{_ms(seconds[0])}–{_ms(seconds[-1])}"
    shares = [v.fixed_share for v in points]
    probe = f" (the dispatch probe, {first.reference})" if first.reference else ""
    return (
        f"dispatching its {op_words} operators at {first.per_op_s * 1e6:.2g} µs each{probe} takes {took}, "
        f"{_share_range(shares)} of the time"
    )


def _dispatch_tail(points: Sequence[diagnosis.PointVerdict]) -> str:
    if points[0].fixed is None:
        return "; no dispatch probe to weigh the fixed cost"
    return "; " + _dispatch_words(points)


def _stream_share(found: CurveDiagnosis, v: diagnosis.PointVerdict) -> float | None:
    rate = found.probes.stream_bytes_per_s
    return v.bytes_per_s / rate if rate else None


def _memory_words(found: CurveDiagnosis, points: Sequence[diagnosis.PointVerdict]) -> str:
    moved = sorted(found.counted_bytes.get(v.batch, 0.0) for v in points)
    size = _size(moved[0]) if _size(moved[0]) == _size(moved[-1]) else f"{_size(moved[0])}–{_size(moved[-1])}"
    words = (
        f"its {size} (weights at each use, inputs and outputs) move at {_rate_words(points, 'B/s')}: "
        + _shares_words(points, lambda v: v.bandwidth_share, "the measured copy bandwidth")
    )
    if found.probes.stream_bytes_per_s:
        rate = f"{found.probes.stream_bytes_per_s / 1e9:.3g} GB/s"
        model = f", {found.probes.stream_model}" if found.probes.stream_model else ""
        words += ", and " + _shares_words(
            points,
            lambda v: _stream_share(found, v),
            f"the rate this device's small matrix products stream weights at ({rate}{model})",
        )
    return words + _from_cache(found, points)


def _rate_words(points: Sequence[diagnosis.PointVerdict], unit: str) -> str:
    values = sorted(v.bytes_per_s if unit == "B/s" else v.flops_per_s for v in points)
    low, high = _si(values[0], unit), _si(values[-1], unit)
    if low == high:
        return low
    low_number, _, low_unit = low.partition(" ")
    return f"{low_number}–{high}" if low_unit == high.partition(" ")[2] else f"{low}–{high}"


def _si(value: float, unit: str) -> str:
    for prefix, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _size(count: float) -> str:
    return _si(count, "B")


def _shares_words(points, share, ceiling: str, rates: str | None = None) -> str:
    """The share of a ceiling along a stretch, per point at its ends ('43 % at batch 1 to 94 % at batch 8'),
    never above 100 %: the points that beat the ceiling are said not to be bounded by it."""
    below = [(v.batch, share(v)) for v in points if share(v) is not None and share(v) <= 1]
    above = [v.batch for v in points if share(v) is not None and share(v) > 1]
    prefix = f"{rates}, " if rates else ""
    parts = []
    if below:
        low, high = min(below, key=lambda x: x[1]), max(below, key=lambda x: x[1])
        if len(below) == 1 or _share(low[1]) == _share(high[1]):
            parts.append(f"{_share(high[1])} of {ceiling}" + _at(below, len(points)))
        else:
            parts.append(f"{_share(low[1])} (batch {low[0]}) to {_share(high[1])} (batch {high[0]}) of {ceiling}")
    if above:
        who = f"batch {above[0]}" if len(above) == 1 else f"batches {_runs(above)}"
        one = len(above) == 1
        parts.append(f"{who} beat{'s' * one} {ceiling}, so it does not bound {'it' if one else 'them'}")
    return prefix + "; ".join(parts)


def _at(below: list[tuple[int, float]], total: int) -> str:
    if len(below) == total:
        return ""
    return f" (batch {below[0][0]})" if len(below) == 1 else f" (batches {_runs([b for b, _ in below])})"


def _runs(batches: list[int]) -> str:
    return f"{batches[0]}–{batches[-1]}" if len(batches) > 2 else ", ".join(map(str, batches))


def _unknown_line(found: CurveDiagnosis, span: str, points: Sequence[diagnosis.PointVerdict]) -> str:
    missing = [m for m in found.missing if points[0].batch <= m[0] <= points[-1].batch]
    ops = sorted({op for _, _, names in missing for op in names})
    shares = [share for _, share, _ in missing]
    fixed = "" if points[0].fixed is None else "; " + _dispatch_words(points)
    return (
        f"{span}: no verdict — operators no FLOP count covers ({', '.join(ops[:4])}) take {_share_range(shares)} of "
        f"the time, so neither the FLOP rate nor the roofline's larger term is known{fixed}."
    )


def _far_below_line(span: str, segment: diagnosis.Segment) -> str:
    """A stretch whose larger roofline term is memory or compute, at a share of that ceiling too small for the
    ceiling to explain its time: the verdict's regime, said as what it is."""
    bandwidth = _median([v.bandwidth_share for v in segment.points if v.bandwidth_share is not None])
    compute = _median([v.compute_share for v in segment.points if v.compute_share is not None])
    fixed = (
        "dispatch (the operators times the probe's cost) is under half of each call"
        if segment.points[0].fixed
        else "no fixed cost could be estimated (no dispatch probe)"
    )
    return (
        f"{span}: far below both ceilings — {_small_share(bandwidth)} of the measured copy bandwidth and "
        f"{_small_share(compute)} of the matmul rate — and {fixed}: {segment.regime} is the larger roofline term, "
        "but neither it nor a fixed cost explains the time."
    )


def _median(values: list[float]) -> float | None:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else None


def _small_share(share: float | None) -> str:
    return "–" if share is None else f"{100 * share:.2g} %"


def _share_range(shares: list[float]) -> str:
    low, high = _share(min(shares)), _share(max(shares))
    return low if low == high else f"{low} to {high}"


def _share(share: float) -> str:
    return f"{100 * share:.1g} %" if 0 < share < 0.01 else diagnosis.share_words(share)


def marked_lines(rec: Recommendation) -> list[tuple[str, diagnosis.Segment | None]]:
    """Each line of the recommendation with the segment of the diagnosis it states, if it states a regime."""
    found = rec.diagnosis
    segments = {
        segment_line(found, segment): segment for segment in found.segments if segment.regime in diagnosis.REGIMES
    } if found else {}  # fmt: skip
    return [(line, segments.get(line)) for line in rec.lines]


def diagnosis_lines(found: CurveDiagnosis | None) -> list[str]:
    if found is None:
        return ["No diagnosis: the sweep has no ceilings or no counted FLOPs and bytes."]
    lines = [segment_line(found, segment) for segment in found.segments]
    low, high = found.knee_band
    measured = f"measured knee at batch {found.knee.batch:.0f}" if found.knee else "no measured knee"
    if found.missing:
        lines.append(f"No ridge batch predicted: the FLOP count misses operators that take time; {measured}.")
    elif len(found.verdicts) < 2:
        lines.append(f"One batch size: no ridge batch to predict; {measured}.")
    elif not any(v.flops_per_s > 0 for v in found.verdicts):
        lines.append(f"The FLOP counter saw no matmul or convolution: no ridge batch to predict; {measured}.")
    elif low is None and high is None:
        lines.append(f"The roofline gives no ridge batch in this range (memory-bound throughout); {measured}.")
    elif high is not None and high <= found.verdicts[0].batch:
        lines.append(f"The roofline puts every batch here past its ridge batch, even at the unfused bytes; {measured}.")
    else:
        band = _knee_words(low) if high is None or _close(low, high) else f"{_knee_words(low)}–{_knee_words(high)}"
        lines.append(f"Ridge batch: {band} (fused to unfused bytes); {measured}.")
    for step, causes in found.steps:
        cause = causes[0] if causes else "no tile boundary inside it: a kernel switch, or noise"
        before = next(v for v in found.verdicts if v.batch == step.before) if found.verdicts else None
        after = next((v for v in found.verdicts if v.batch == step.after), None)
        times = f"{_ms(before.seconds)} → {_ms(after.seconds)}, " if before and after else ""
        rise = f"+{100 * (after.seconds / before.seconds - 1):.0f} %" if before and after else ""
        lines.append(f"Step: batch {step.before} → {step.after} ({times}{rise} median, beyond the noise; {cause}).")
    return lines


def _from_cache(found: CurveDiagnosis, points: Sequence[diagnosis.PointVerdict]) -> str:
    """Why bytes can move faster than the copy ceiling: weights that fit the last-level cache stay in it."""
    if not any((v.bandwidth_share or 0) > 1 for v in points):
        return ""
    if found.weight_bytes and found.cache_bytes and found.weight_bytes < found.cache_bytes:
        return (
            f" (the {found.weight_bytes / 2**20:.1f} MiB of weights fit in the {found.cache_bytes / 2**20:.0f} MiB "
            "last-level cache and stay there between calls; the copy ceiling streams a buffer far larger than it)"
        )
    return " (part of the traffic is served from cache)"


def _close(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= 0.05 * max(a, b, 1)


def _knee_words(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.0f}"
