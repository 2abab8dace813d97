"""What a model sweep recommends, and why, from its measured points alone.

The same functions serve the terminal, the results file, the HTML report and the site:

- the largest batch whose latency (at the sweep's percentile) meets the budget, and what it buys
  against the smallest batch measured, and any smaller batch that breaks the budget; or, when even
  the fastest misses, by how much;
- the batch of highest throughput and the smallest batch within 5 % of it;
- the batch to run, by the guide's rule (snippets/choose.py): the smaller of those two, the fastest
  batch when none meets the budget, then a larger batch measured no slower if there is one;
- the free range: the batches whose median latency is within 10 % of the smallest batch's;
- the largest batch that ran, and the first that ran out of memory;
- the diagnosis of the curve: what bounds its points (the site's `diagnosis.verdict`, with the fixed
  cost being the intercept of time against batch less one read of the weights), the share of the measured
  ceiling reached, the ridge batch from the fused to the unfused bytes against the measured knee, and
  any step with its likely cause.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.analysis import diagnosis
from benchmarks.analysis.curves import Point
from benchmarks.analysis.roofline import Ceilings, Knee, affine_fit, crossing_batch, detect_knee, run_ceilings
from benchmarks.analysis.steps import CurvePoint, Step, find_steps, median_stderr, tile_boundary
from snippets.choose import FLAT_SHARE

NEAR_BEST = 1 - FLAT_SHARE  # "within 5 % of the highest throughput": the guide's rule
FREE = 0.10  # "latency within 10 % of the smallest batch's"
SAMPLES_NEEDED = {90: 10, 99: 100}  # fewer, and the nearest-rank percentile is the slowest sample
FAR_BELOW = 0.05  # a share of its ceiling under this is no evidence that the ceiling bounds the time


@dataclass(frozen=True)
class SweepPoint:
    batch: int
    median_s: float
    percentile_s: float
    samples: tuple[float, ...]
    q1_s: float
    q3_s: float
    peak_memory_bytes: int | None = None
    flops: float | None = None
    bytes_low: float | None = None
    bytes_high: float | None = None

    @property
    def throughput(self) -> float:
        """Samples per second."""
        return self.batch / self.median_s


def sweep_points(points: Sequence[dict]) -> tuple[list[SweepPoint], list[dict]]:
    """The ok points of a sweep document (sorted by batch) and the others."""
    ok = [_point(p) for p in points if p["status"] == "ok"]
    others = [p for p in points if p["status"] != "ok"]
    return sorted(ok, key=lambda p: p.batch), sorted(others, key=lambda p: p["batch"])


def _point(p: dict) -> SweepPoint:
    timing = p["timing"]
    return SweepPoint(
        p["batch"], p["median_s"], p["percentile_s"], tuple(timing["samples_s"]), timing["q1_s"], timing["q3_s"],
        p.get("peak_memory_bytes"), p.get("flops"), p.get("bytes_low"), p.get("bytes_high"),
    )  # fmt: skip


@dataclass(frozen=True)
class CurveDiagnosis:
    verdicts: tuple[diagnosis.PointVerdict, ...]
    segments: tuple[diagnosis.Segment, ...]
    knee_band: tuple[float | None, float | None]  # predicted from the fused and the unfused bytes
    knee: Knee | None  # measured
    steps: tuple[tuple[Step, list[str]], ...]  # each step with its likely causes
    weight_bytes: int | None = None
    cache_bytes: int | None = None  # the device's last-level cache


def fixed_cost(points: Sequence[SweepPoint], ceilings: Ceilings) -> float | None:
    """The sweep's fixed per-call cost: the intercept of time against batch over its smallest batches
    (up to four times the first), less one read of the weights at the measured copy bandwidth, the
    part of the intercept the roofline explains. What grows with the batch is work, however slow;
    what stays is a cost every call pays."""
    small = [p for p in points if p.batch <= 4 * points[0].batch][:4] if points else []
    if len(small) < 2 or small[0].bytes_low is None:
        return None
    intercept, _ = affine_fit([float(p.batch) for p in small], [p.median_s for p in small])
    return min(max(0.0, intercept - small[0].bytes_low / ceilings.bytes_per_s), small[0].median_s)


def diagnose_sweep(
    points: Sequence[SweepPoint],
    ceilings: Ceilings | None,
    weight_bytes: int | None = None,
    cache_bytes: int | None = None,
) -> CurveDiagnosis | None:
    counted = [p for p in points if p.flops is not None and p.bytes_low is not None]
    if not counted or ceilings is None:
        return None
    fixed = fixed_cost(counted, ceilings)
    cost = diagnosis.FixedCost(fixed, "intercept") if fixed is not None else None
    verdicts = tuple(
        diagnosis.verdict(Point(p.batch, p.median_s, p.q1_s, p.q3_s, p.flops, p.bytes_low, None), ceilings, cost)
        for p in counted
    )
    band: tuple[float | None, float | None] = (None, None)
    if len(counted) >= 2:
        band = (
            crossing_batch([(p.batch, p.flops, p.bytes_low) for p in counted], ceilings),
            crossing_batch([(p.batch, p.flops, p.bytes_high) for p in counted], ceilings),
        )
    knee = detect_knee([p.batch for p in points], [p.median_s for p in points]) if len(points) >= 4 else None
    curve = [CurvePoint(p.batch, p.median_s, median_stderr(p.samples)) for p in points]
    steps = tuple((step, tile_boundary(step, None)) for step in find_steps(curve) if _adjacent(step))
    return CurveDiagnosis(verdicts, diagnosis.segments(verdicts), band, knee, steps, weight_bytes, cache_bytes)


def _adjacent(step: Step) -> bool:
    """A step between neighbouring batch sizes: between far-apart ones a rise is the trend, not a step."""
    return step.after - step.before <= max(1, step.before // 8)


@dataclass(frozen=True)
class Recommendation:
    percentile: int
    budget_s: float | None
    base: SweepPoint | None  # the smallest batch measured: what the others are compared with
    within_budget: SweepPoint | None
    budget_missed_by: float | None  # the fastest batch's latency over the budget when even it misses
    best: SweepPoint | None  # highest throughput
    near_best: SweepPoint | None  # smallest batch within NEAR_BEST of it
    free_up_to: SweepPoint | None  # largest batch with median latency within FREE of the base's
    largest_ran: int | None
    first_oom: int | None
    run: SweepPoint | None  # the guide's rule: see `batch_to_run`
    diagnosis: CurveDiagnosis | None
    measured: tuple[SweepPoint, ...] = ()  # every batch that ran, by batch
    thin: tuple[SweepPoint, ...] = ()  # points with too few samples for the percentile to be one
    ruled: SweepPoint | None = None  # the rule's pick before a larger batch measured no slower replaced it
    breaks_budget: tuple[SweepPoint, ...] = ()  # smaller than within_budget, yet over the budget
    lines: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict:
        """The numbers and the verdict lines, as the results file keeps them."""

        def batch(point):
            return point.batch if point else None

        return {
            "percentile": self.percentile,
            "budget_ms": self.budget_s * 1e3 if self.budget_s else None,
            "within_budget": batch(self.within_budget),
            "budget_missed_by": self.budget_missed_by,
            "highest_throughput": batch(self.best),
            "within_5_percent_of_highest": batch(self.near_best),
            "free_up_to": batch(self.free_up_to),
            "largest_ran": self.largest_ran,
            "first_oom": self.first_oom,
            "run": batch(self.run),
            "before_no_slower_larger": batch(self.ruled),
            "smaller_over_budget": [p.batch for p in self.breaks_budget],
            "lines": list(self.lines),
        }


def recommend(
    points: Sequence[SweepPoint],
    failures: Sequence[dict],
    budget_ms: float | None,
    percentile: int,
    ceilings: Ceilings | None,
    unit: str = "samples",
    weight_bytes: int | None = None,
    cache_bytes: int | None = None,
) -> Recommendation:
    points = sorted(points, key=lambda p: p.batch)
    budget_s = budget_ms / 1e3 if budget_ms else None
    base = points[0] if points else None
    within = missed = None
    if budget_s is not None and points:
        meeting = [p for p in points if p.percentile_s <= budget_s]
        within = meeting[-1] if meeting else None
        missed = fastest(points).percentile_s / budget_s if within is None else None
    best = max(points, key=lambda p: p.throughput) if points else None
    near = next((p for p in points if p.throughput >= (1 - NEAR_BEST) * best.throughput), None) if best else None
    free = [p for p in points if p.median_s <= (1 + FREE) * base.median_s] if base else []
    ooms = [f["batch"] for f in failures if f["status"] == "oom"]
    ruled = rule_pick(points, within, near, budget_s)
    found = Recommendation(
        percentile, budget_s, base, within, missed, best, near, free[-1] if free else None,
        points[-1].batch if points else None, min(ooms) if ooms else None,
        no_slower_larger(points, ruled) if ruled else None,
        diagnose_sweep(points, ceilings, weight_bytes, cache_bytes), tuple(points),
        tuple(p for p in points if len(p.samples) < SAMPLES_NEEDED.get(percentile, 1)), ruled,
        tuple(p for p in points if within and p.batch < within.batch and p.percentile_s > budget_s),
    )  # fmt: skip
    return Recommendation(**{**found.__dict__, "lines": tuple(verdict_lines(found, failures, unit))})


def fastest(points: Sequence[SweepPoint]) -> SweepPoint:
    """The batch of lowest latency at the sweep's percentile (the smaller on a tie)."""
    return min(points, key=lambda p: (p.percentile_s, p.batch))


def rule_pick(
    points: Sequence[SweepPoint], within: SweepPoint | None, near: SweepPoint | None, budget_s: float | None
) -> SweepPoint | None:
    """The guide's rule before its last step: the smaller of the batch within the budget and the batch near
    the best throughput (or the first, if the second misses the budget); the fastest batch when none meets the
    budget; the batch near the best throughput when no budget is given."""
    if not points:
        return None
    if within is not None:
        picked = min(within, near, key=lambda p: p.batch)
        # An uneven curve: the batch near the best throughput can miss a budget that a larger batch meets.
        return within if picked.percentile_s > budget_s else picked
    return fastest(points) if budget_s is not None else near


def no_slower_larger(points: Sequence[SweepPoint], point: SweepPoint) -> SweepPoint:
    """Of `point` and the larger batches measured no slower (median and percentile), the one of highest
    throughput: the guide's last step, which no larger batch can then beat on both counts."""
    candidates = [
        p for p in points
        if p.batch >= point.batch and p.median_s <= point.median_s and p.percentile_s <= point.percentile_s
    ]  # fmt: skip
    return max(candidates, key=lambda p: (p.throughput, p.batch))


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
    if rec.budget_s is not None:
        if rec.within_budget is not None:
            w = rec.within_budget
            lines.append(
                f"Within the {_ms(rec.budget_s)} p{p} budget: batch {w.batch} ({_ms(w.percentile_s)}), "
                + _compare(w, base, p)
                + "."
            )
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
        )
    if rec.run is not None:
        lines.append(run_line(rec))
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


def breaks_budget_line(rec: Recommendation) -> str:
    """The measured batches below the budget's answer that break the budget: latency is not monotonic there."""
    over = rec.breaks_budget
    times = ", ".join(_ms(p.percentile_s) for p in over)
    verb, pronoun = ("breaks", "it") if len(over) == 1 else ("break", "them")
    return (
        f"{_batch_list(over).capitalize()} {verb} the budget ({times} p{rec.percentile}) although the larger batch "
        f"{rec.within_budget.batch} meets it: latency did not grow steadily with the batch here, so avoid {pronoun}."
    )


def run_line(rec: Recommendation) -> str:
    """The batch to run, and which step of the guide's rule chose it."""
    if rec.within_budget is not None:
        why, which = "the smaller of the two", "the smaller of the two"
    elif rec.budget_s is not None:
        why, which = "no batch meets the budget, so the fastest", "the fastest, as no batch meets the budget"
    else:
        why, which = "no budget given", "the smallest near the highest throughput, as no budget is given"
    run, ruled = rec.run, rec.ruled
    if ruled is None or ruled.batch == run.batch:
        return f"Run batch {run.batch} ({why}: the rule of the batch-size guide)."
    return (
        f"Run batch {run.batch} (the rule of the batch-size guide: batch {ruled.batch} is {which}, but the larger "
        f"batch {run.batch} measured no slower, {_ms(run.median_s)} median against {_ms(ruled.median_s)}, at "
        f"{run.throughput / ruled.throughput:.2f}× the throughput)."
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
    """The sentence that says what bounds one stretch of the curve, with its evidence."""
    span = f"batch {segment.first}" if segment.first == segment.last else f"batches {segment.first}–{segment.last}"
    if segment.regime == diagnosis.OVERHEAD:
        shares = [v.fixed_share for v in segment.points if v.fixed_share is not None]
        fixed = segment.points[0].fixed.seconds
        first = found.verdicts[0].batch
        return (
            f"{span}: overhead-bound — a fixed cost of {_ms(fixed)} per call (time against batch from batch {first}, "
            f"less one read of the weights) is {_share_range(shares)} of the time."
        )
    if segment.share is not None and segment.share < FAR_BELOW:
        return _far_below_line(span, segment)
    if segment.regime == diagnosis.MEMORY:
        return (
            f"{span}: memory-bound — at least {diagnosis.share_words(segment.share)} of the measured copy "
            "bandwidth (weights read once; more if activations are not fused)." + _from_cache(found, segment)
        )
    above = (
        " Above 100 %: these kernels ran faster than the one large matmul the ceiling measured."
        if segment.share and segment.share > 1
        else ""
    )
    return f"{span}: compute-bound — {diagnosis.share_words(segment.share)} of the measured matmul rate." + above


def _far_below_line(span: str, segment: diagnosis.Segment) -> str:
    """A stretch whose larger roofline term is memory or compute, at a share of that ceiling too small for the
    ceiling to explain its time: the verdict's regime, said as what it is."""
    bandwidth = _median([v.bandwidth_share for v in segment.points if v.bandwidth_share is not None])
    compute = _median([v.compute_share for v in segment.points if v.compute_share is not None])
    fixed = "the fixed cost (the intercept) is under half of each call" if segment.points[0].fixed else (
        "no fixed cost could be estimated"
    )  # fmt: skip
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
    low, high = min(shares), max(shares)
    if high - low < 0.01:
        return diagnosis.share_words(low)
    return f"{diagnosis.share_words(low)} to {diagnosis.share_words(high)}"


def marked_lines(rec: Recommendation) -> list[tuple[str, diagnosis.Segment | None]]:
    """Each line of the recommendation with the segment of the diagnosis it states, if it states one."""
    found = rec.diagnosis
    segments = {segment_line(found, segment): segment for segment in found.segments} if found else {}
    return [(line, segments.get(line)) for line in rec.lines]


def diagnosis_lines(found: CurveDiagnosis | None) -> list[str]:
    if found is None:
        return ["No diagnosis: the sweep has no ceilings or no counted FLOPs and bytes."]
    lines = [segment_line(found, segment) for segment in found.segments]
    low, high = found.knee_band
    measured = f"measured knee at batch {found.knee.batch:.0f}" if found.knee else "no measured knee"
    if len(found.verdicts) < 2:
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
        lines.append(f"Step: batch {step.before} → {step.after}, +{100 * step.relative:.0f} % ({cause}).")
    return lines


def _from_cache(found: CurveDiagnosis, segment: diagnosis.Segment) -> str:
    """Why a memory-bound share can pass 100 %: weights that fit the last-level cache stay in it."""
    if not segment.share or segment.share <= 1:
        return ""
    if found.weight_bytes and found.cache_bytes and found.weight_bytes < found.cache_bytes:
        return (
            f" Above 100 %: the {found.weight_bytes / 2**20:.1f} MiB of weights fit in the "
            f"{found.cache_bytes / 2**20:.0f} MiB last-level cache and stay there between calls; the copy ceiling "
            "streams a buffer far larger than the cache."
        )
    return " Above 100 %: part of the traffic is served from cache."


def _close(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= 0.05 * max(a, b, 1)


def _knee_words(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.0f}"


def from_document(doc: dict) -> Recommendation:
    """The recommendation a sweep document's points support."""
    ok, failures = sweep_points(doc["points"])
    settings = doc["settings"]
    ceilings = run_ceilings(doc["ceilings"], doc["model"]["dtype"])
    return recommend(
        ok, failures, settings.get("budget_ms"), settings["percentile"], ceilings,
        weight_bytes=doc["model"].get("weight_bytes"), cache_bytes=doc["device"].get("l2_bytes"),
    )  # fmt: skip
