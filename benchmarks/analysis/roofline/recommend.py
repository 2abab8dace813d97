"""What a model sweep recommends, and why, from its measured points alone: the facts, which
`site/sweep_words.py` puts into the words the terminal, the results file, the HTML report and the site print:

- the largest batch whose latency (at the sweep's percentile) meets the budget, and what it buys
  against the smallest batch measured, and any smaller batch that breaks the budget; or, when even
  the fastest misses, by how much;
- the batch of highest throughput and the smallest batch within 5 % of it;
- the batch to run, by the guide's rule (snippets/choose.py): the smaller of those two, the fastest
  batch when none meets the budget, then a larger batch measured no slower if there is one;
- the free range: the batches whose median latency is within 10 % of the smallest batch's;
- the largest batch that ran, and the first that ran out of memory;
- how sure it is: the machine's noise (the p90 against the median, the ceilings' spread between their
  samples), the spread of each answer's percentile (an order-statistic interval), a budget verdict or a
  threshold that falls within it said so, with the other option named;
- why the search stopped, and any gap between measured batches that a claim would span;
- the diagnosis of the curve, per stretch: what bounds its points (the site's `diagnosis.verdict`, with the
  fixed cost being the call's operators times the per-operator cost of the sweep's dispatch probe), the
  achieved bytes per second against the measured copy bandwidth and against the rate this device's small
  matrix products stream weights at (the sweep's second probe), the FLOP rate against the measured matmul
  rate (a stretch that beats a ceiling is said not to be bounded by it, never "over 100 %"), no verdict
  where operators no count covers hold a share of the time, the predicted knee band (fused to unfused
  bytes) against the measured knee, and any step beyond the noise with its likely cause.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.analysis.roofline import diagnosis
from benchmarks.analysis.roofline.curves import MeasuredPoint
from benchmarks.analysis.roofline.roofline_model import Knee, crossing_batch, detect_knee, run_ceilings
from benchmarks.analysis.roofline.tile_steps import CurvePoint, TileJump, find_steps, median_stderr, tile_boundary
from benchmarks.contract.percentiles import nearest_rank
from benchmarks.gpus import Ceilings
from snippets.choose import FLAT_SHARE

NEAR_BEST = 1 - FLAT_SHARE  # "within 5 % of the highest throughput": the guide's rule
FREE = 0.10  # "latency within 10 % of the smallest batch's"
SAMPLES_NEEDED = {90: 10, 99: 100}  # fewer, and the nearest-rank percentile is the slowest sample
FAR_BELOW = 0.05  # a share of its ceiling under this is no evidence that the ceiling bounds the time
MISSING = 0.05  # operators no count covers holding this share of the time: no verdict that needs the count
NOISY_TAIL = 1.5  # p90 over this many medians: a noisy machine (an idle one stays near 1.1)
NOISY_CEILING = 1.10  # a ceiling's samples spanning more than this (max over min): a noisy machine
Z95 = 1.96
UNKNOWN = "unknown"  # a point whose regime would rest on a count that missed part of its work


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
    ops: int | None = None  # operators one call dispatches
    uncounted: tuple[tuple[str, float], ...] = ()  # (operator, share of the time) no FLOP count covers

    @property
    def throughput(self) -> float:
        """Samples per second."""
        return self.batch / self.median_s

    @property
    def missing_share(self) -> float:
        return sum(share for _, share in self.uncounted)

    def interval(self, q: int) -> tuple[float, float]:
        """A 95 % interval of the q-th percentile from the samples (order statistics)."""
        return percentile_interval(self.samples, q)

    def throughput_interval(self) -> tuple[float, float]:
        low, high = self.interval(50)
        return self.batch / high, self.batch / low


def percentile_interval(samples: Sequence[float], q: int) -> tuple[float, float]:
    """The samples whose ranks bound a 95 % confidence interval of the q-th percentile (order statistics,
    normal approximation to the binomial); the extremes when the samples are few."""
    ordered = sorted(samples)
    n = len(ordered)
    if n == 0:
        return math.nan, math.nan
    share = q / 100
    half = Z95 * math.sqrt(n * share * (1 - share))
    low = max(1, math.floor(n * share - half))
    high = min(n, math.ceil(n * share + half) + 1)
    return ordered[low - 1], ordered[high - 1]


def sweep_points(points: Sequence[dict]) -> tuple[list[SweepPoint], list[dict]]:
    """The ok points of a sweep document (sorted by batch) and the others."""
    ok = [_point(p) for p in points if p["status"] == "ok"]
    others = [p for p in points if p["status"] != "ok"]
    return sorted(ok, key=lambda p: p.batch), sorted(others, key=lambda p: p["batch"])


def _point(p: dict) -> SweepPoint:
    timing = p["timing"]
    uncounted = tuple((u["op"], u["time_share"]) for u in p.get("uncounted") or ())
    return SweepPoint(
        p["batch"], p["median_s"], p["percentile_s"], tuple(timing["samples_s"]), timing["q1_s"], timing["q3_s"],
        p.get("peak_memory_bytes"), p.get("flops"), p.get("bytes_low"), p.get("bytes_high"), p.get("ops"), uncounted,
    )  # fmt: skip


@dataclass(frozen=True)
class Probes:
    """The sweep's two probes: one operator's dispatch cost, and the rate small matrix products stream at."""

    per_op_s: float | None = None
    dispatch_model: str = ""
    stream_bytes_per_s: float | None = None
    stream_model: str = ""


def probes_of(doc: dict) -> Probes:
    found = doc.get("probes") or {}
    dispatch, stream = found.get("dispatch") or {}, found.get("small_matmul") or {}
    return Probes(
        dispatch.get("per_op_s"), dispatch.get("model", ""), stream.get("bytes_per_s"), stream.get("model", "")
    )


@dataclass(frozen=True)
class Noise:
    """How noisy the machine was: the p90 against the median over the batches, and each ceiling's spread."""

    tail: float | None  # median over batches of p90 / median
    batches: int
    ceilings: tuple[tuple[str, float], ...]  # (name, max / min of its samples)

    @property
    def high(self) -> bool:
        return (self.tail is not None and self.tail > NOISY_TAIL) or any(s > NOISY_CEILING for _, s in self.ceilings)


def noise_of(points: Sequence[SweepPoint], ceilings_doc: dict | None, dtype: str | None) -> Noise:
    tails = sorted(nearest_rank(p.samples, 0.9) / p.median_s for p in points if len(p.samples) >= 10)
    spreads = []
    ceilings_doc = ceilings_doc or {}
    for name, entry in (("copy", ceilings_doc.get("copy")), ("matmul", (ceilings_doc.get("matmul") or {}).get(dtype))):
        samples = ((entry or {}).get("timing") or {}).get("samples_s") or []
        if len(samples) >= 2 and min(samples) > 0:
            spreads.append((name, max(samples) / min(samples)))
    return Noise(tails[len(tails) // 2] if tails else None, len(tails), tuple(spreads))


@dataclass(frozen=True)
class CurveDiagnosis:
    verdicts: tuple[diagnosis.PointVerdict, ...]
    segments: tuple[diagnosis.Segment, ...]
    knee_band: tuple[float | None, float | None]  # predicted from the fused and the unfused bytes
    knee: Knee | None  # measured
    steps: tuple[tuple[TileJump, list[str]], ...]  # each step with its likely causes
    weight_bytes: int | None = None
    cache_bytes: int | None = None  # the device's last-level cache
    probes: Probes = Probes()
    missing: tuple[tuple[int, float, tuple[str, ...]], ...] = ()  # (batch, share of time, operators) uncounted
    counted_bytes: dict[int, float] = field(default_factory=dict)  # bytes_low by batch


def fixed_cost(point: SweepPoint, probes: Probes) -> diagnosis.FixedCost | None:
    """A call's fixed cost: its operators times the cost of one operator from the sweep's dispatch probe."""
    if point.ops is None or probes.per_op_s is None:
        return None
    seconds = min(point.ops * probes.per_op_s, point.median_s)
    return diagnosis.FixedCost(seconds, "per-op", point.ops, probes.per_op_s, probes.dispatch_model)


def _verdict(p: SweepPoint, ceilings: Ceilings, probes: Probes) -> diagnosis.PointVerdict:
    found = diagnosis.verdict(
        MeasuredPoint(p.batch, p.median_s, p.q1_s, p.q3_s, p.flops, p.bytes_low, None), ceilings, fixed_cost(p, probes)
    )
    if p.missing_share >= MISSING and found.regime != diagnosis.OVERHEAD:
        return diagnosis.PointVerdict(**{**found.__dict__, "regime": UNKNOWN})
    return found


def diagnose_sweep(
    points: Sequence[SweepPoint],
    ceilings: Ceilings | None,
    weight_bytes: int | None = None,
    cache_bytes: int | None = None,
    probes: Probes | None = None,
) -> CurveDiagnosis | None:
    counted = [p for p in points if p.flops is not None and p.bytes_low is not None]
    if not counted or ceilings is None:
        return None
    probes = probes or Probes()
    verdicts = tuple(_verdict(p, ceilings, probes) for p in counted)
    missing = tuple(
        (p.batch, p.missing_share, tuple(op for op, _ in p.uncounted)) for p in counted if p.missing_share >= MISSING
    )
    band: tuple[float | None, float | None] = (None, None)
    if len(counted) >= 2 and not missing:
        band = (
            crossing_batch([(p.batch, p.flops, p.bytes_low) for p in counted], ceilings),
            crossing_batch([(p.batch, p.flops, p.bytes_high) for p in counted], ceilings),
        )
    knee = detect_knee([p.batch for p in points], [p.median_s for p in points]) if len(points) >= 4 else None
    curve = [CurvePoint(p.batch, p.median_s, median_stderr(p.samples)) for p in points]
    by_batch = {p.batch: p for p in points}
    steps = tuple(
        (step, tile_boundary(step, None))
        for step in find_steps(curve)
        if _adjacent(step) and _beyond_noise(by_batch[step.before], by_batch[step.after])
    )
    return CurveDiagnosis(
        verdicts, diagnosis.segments(verdicts), band, knee, steps, weight_bytes, cache_bytes, probes, missing,
        {p.batch: p.bytes_low for p in counted},
    )  # fmt: skip


def _adjacent(step: TileJump) -> bool:
    """A step between neighbouring batch sizes: between far-apart ones a rise is the trend, not a step."""
    return step.after - step.before <= max(1, step.before // 8)


def _beyond_noise(before: SweepPoint, after: SweepPoint) -> bool:
    """The later median above the earlier one beyond both medians' 95 % intervals (the site's rule: a step
    must stand out from the noise of the points it joins)."""
    return after.interval(50)[0] > before.interval(50)[1]


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
    noise: Noise | None = None
    stopped: str | None = None  # why the search stopped
    near_sure: SweepPoint | None = None  # smallest batch whose throughput clears the 5 % cut-off beyond its noise
    failures: tuple[dict, ...] = ()  # the batches that did not run, and why, as the document keeps them
    unit: str = "samples"  # what a row of the batch is, for the verdict's words
    lines: tuple[str, ...] = field(default=())  # the verdict in words: `site.sweep_words.with_lines` fills them

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
            "within_5_percent_beyond_noise": batch(self.near_sure),
            "noisy": self.noise.high if self.noise else None,
            "search_stopped": self.stopped,
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
    probes: Probes | None = None,
    noise: Noise | None = None,
    stopped: str | None = None,
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
    sure = (
        next((p for p in points if p.throughput_interval()[0] >= (1 - NEAR_BEST) * best.throughput), None)
        if best
        else None
    )
    free = [p for p in points if p.median_s <= (1 + FREE) * base.median_s] if base else []
    ooms = [f["batch"] for f in failures if f["status"] == "oom"]
    ruled = rule_pick(points, within, near, budget_s)
    found = Recommendation(
        percentile, budget_s, base, within, missed, best, near, free[-1] if free else None,
        points[-1].batch if points else None, min(ooms) if ooms else None,
        no_slower_larger(points, ruled) if ruled else None,
        diagnose_sweep(points, ceilings, weight_bytes, cache_bytes, probes), tuple(points),
        tuple(p for p in points if len(p.samples) < SAMPLES_NEEDED.get(percentile, 1)), ruled,
        tuple(p for p in points if within and p.batch < within.batch and p.percentile_s > budget_s),
        noise, stopped, sure,
    )  # fmt: skip
    return dataclasses.replace(found, failures=tuple(failures), unit=unit)


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


def margin_batch(rec: Recommendation) -> SweepPoint | None:
    """The largest batch below the one within the budget whose whole spread at the percentile is within it."""
    w, p = rec.within_budget, rec.percentile
    if w is None or w.interval(p)[1] <= rec.budget_s:
        return None
    safe = [q for q in rec.measured if q.batch < w.batch and q.interval(p)[1] <= rec.budget_s]
    return safe[-1] if safe else None


def from_document(doc: dict) -> Recommendation:
    """The recommendation a sweep document's points support."""
    ok, failures = sweep_points(doc["points"])
    settings = doc["settings"]
    dtype = doc["model"]["dtype"]
    ceilings = run_ceilings(doc["ceilings"], dtype)
    return recommend(
        ok, failures, settings.get("budget_ms"), settings["percentile"], ceilings,
        weight_bytes=doc["model"].get("weight_bytes"), cache_bytes=doc["device"].get("l2_bytes"),
        probes=probes_of(doc), noise=noise_of(ok, doc.get("ceilings"), dtype), stopped=doc["run"].get("search_stopped"),
    )  # fmt: skip
