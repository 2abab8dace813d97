"""The real-server check, compared: what Ray Serve did against what the simulator says it would do.

For each case of a serving-check file (a service, a handler style, a policy and a rate, measured once per
repeat) the simulator gets what was measured and nothing else: the same arrivals (the client's send times
of that repeat), the per-batch times the server measured inside itself (pooled over every run of the same
service and handler style, per batch size), and the server's own cost per request, measured through a
replica that does no work (the median of its latencies). It then forms batches by Ray's rule for that
handler style, and the measured p50, mean batch and batch-size histogram are set against the simulated
ones. Each figure is the median over the repeats (each repeat simulated with several seeds, averaged), so
one repeat hit by the machine's other work does not decide a case; the repeats' range is kept. p99 is
reported beside them, not judged: on a small shared machine it follows the machine's other
work.

Each case is also simulated with the server's cost per request as CPU work on the host's own cores (`host.cpus`):
half before the batcher and half after the batch, in one queue (`dynamic_batching`'s host cores), the idle
replica's median latency taken as that work. That version's p50 and p99 are reported beside the fixed-overhead
ones, so the page shows at every rate which of the two the server follows.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.analysis.serving.arrivals import poisson_arrivals
from benchmarks.analysis.serving.batcher.simulator import Policy, ServiceCurve, simulate
from benchmarks.contract.serving_check import ServingCheck, read_serving_check

TOLERANCE = 0.20  # |measured / simulated − 1| within this agrees (p50 and mean batch)
SEEDS = 5  # simulations per repeat; their results are averaged


@dataclass(frozen=True)
class ComparedCase:
    service: str
    handler: str
    max_batch: int
    max_delay_s: float
    rate_per_s: float

    def describe(self) -> str:
        return f"max batch {self.max_batch}, wait {self.max_delay_s * 1e3:g} ms"


@dataclass
class Row:
    """One case: its repeats measured, and the simulation of each repeat's own arrivals."""

    case: ComparedCase
    repeats: int
    requests: int  # answered, over the repeats
    failed: int
    offered_per_s: float  # what the client actually sent, over the repeats
    p50_s: float  # measured: the median over repeats of each repeat's median latency (likewise p99 and batch)
    p50_range_s: tuple[float, float]  # the repeats' lowest and highest
    sim_p50_s: float
    p99_s: float
    sim_p99_s: float
    mean_s: float  # measured mean latency (median over repeats): steadier than p50 when latency is bimodal
    sim_mean_s: float
    mean_batch: float  # measured: the median over repeats of each repeat's mean batch
    mean_batch_range: tuple[float, float]
    sim_mean_batch: float
    histogram: dict[int, float]  # share of batches of each size, measured, over every repeat
    sim_histogram: dict[int, float]
    utilisation: float  # simulated share of the replica's time spent running batches
    outside_s: float  # measured: median per request of latency less its time inside the replica
    overloaded: bool  # the simulator's verdict on any repeat
    # the same simulation with the overhead as CPU work queued on the host's cores (nan where not simulated)
    host_p50_s: float = math.nan
    host_p99_s: float = math.nan
    host_overloaded: bool = False

    @property
    def p50_ratio(self) -> float:
        return self.p50_s / self.sim_p50_s

    @property
    def batch_ratio(self) -> float:
        return self.mean_batch / self.sim_mean_batch

    @property
    def mean_ratio(self) -> float:
        return self.mean_s / self.sim_mean_s

    @property
    def p99_ratio(self) -> float:
        return self.p99_s / self.sim_p99_s

    @property
    def host_p50_ratio(self) -> float:
        return self.p50_s / self.host_p50_s

    @property
    def host_p99_ratio(self) -> float:
        return self.p99_s / self.host_p99_s

    @property
    def histogram_distance(self) -> float:
        """Total variation distance between the measured and simulated shares of batch sizes (0 to 1)."""
        sizes = set(self.histogram) | set(self.sim_histogram)
        return 0.5 * sum(abs(self.histogram.get(s, 0.0) - self.sim_histogram.get(s, 0.0)) for s in sizes)

    @property
    def agrees(self) -> bool:
        return all(abs(r - 1) <= TOLERANCE for r in (self.p50_ratio, self.batch_ratio))


@dataclass
class RayServeComparison:
    check: ServingCheck
    overhead_s: float  # median latency through the replica that does no work
    overhead_p90_s: float
    overhead_requests: int
    late_close_s: float | None = None  # see late_close()
    late_close_batches: int = 0
    rows: list[Row] = field(default_factory=list)

    @property
    def label(self) -> str:
        host = self.check.doc["host"]
        server = self.check.doc["server"]
        return f"{server['name']} {server['version']} on {host['name']} ({host['cpus']} CPUs), check {self.check.id}"

    def agreeing(self) -> list[Row]:
        return [r for r in self.rows if r.agrees]

    def table(self) -> list[dict[str, object]]:
        """The comparison as plain rows (times in milliseconds), one per case."""
        return [
            {
                "service": r.case.service,
                "handler": r.case.handler,
                "policy": r.case.describe(),
                "max_batch": r.case.max_batch,
                "max_delay_ms": r.case.max_delay_s * 1e3,
                "rate_per_s": r.case.rate_per_s,
                "offered_per_s": r.offered_per_s,
                "repeats": r.repeats,
                "requests": r.requests,
                "failed": r.failed,
                "p50_ms": r.p50_s * 1e3,
                "p50_low_ms": r.p50_range_s[0] * 1e3,
                "p50_high_ms": r.p50_range_s[1] * 1e3,
                "sim_p50_ms": r.sim_p50_s * 1e3,
                "p50_ratio": r.p50_ratio,
                "mean_batch": r.mean_batch,
                "sim_mean_batch": r.sim_mean_batch,
                "batch_ratio": r.batch_ratio,
                "histogram_distance": r.histogram_distance,
                "mean_ms": r.mean_s * 1e3,
                "sim_mean_ms": r.sim_mean_s * 1e3,
                "mean_ratio": r.mean_ratio,
                "p99_ms": r.p99_s * 1e3,
                "sim_p99_ms": r.sim_p99_s * 1e3,
                "p99_ratio": r.p99_ratio,
                "utilisation": r.utilisation,
                "outside_ms": r.outside_s * 1e3,
                "host_p50_ms": r.host_p50_s * 1e3,
                "host_p99_ms": r.host_p99_s * 1e3,
                "host_p50_ratio": r.host_p50_ratio,
                "agrees": r.agrees,
                "overloaded": r.overloaded,
            }
            for r in self.rows
        ]


def late_close(check: ServingCheck) -> tuple[float | None, int]:
    """(median seconds, batches): how long after its wait ran out an awaiting handler's batch started,
    counting only batches that did not queue behind the previous one (it had ended before the wait ran
    out), so what is left is the batcher's own lateness. The simulator starts such a batch exactly when
    the wait runs out."""
    late = []
    for run in check.runs:
        if run["handler"] != "awaiting":
            continue
        req, batches = run["requests"], run["batches"]
        first: dict[int, float] = {}
        for arrived, batch in zip(req["arrived_s"], req["batch"]):
            if batch is not None:
                first[batch] = min(first.get(batch, math.inf), arrived)
        order = sorted(first, key=lambda b: batches["start_s"][b])
        previous_end = -math.inf
        for b in order:
            closes = first[b] + run["max_delay_s"]
            if previous_end < closes and batches["size"][b] < run["max_batch"]:
                late.append(batches["start_s"][b] - closes)
            previous_end = batches["start_s"][b] + batches["service_s"][b]
    return (float(np.median(late)), len(late)) if late else (None, 0)


def overhead(check: ServingCheck) -> tuple[float, float, int]:
    """(median, p90, count) of the latencies through the replica that does no work, over every measurement at the
    lowest rate it was driven at (the server's cost by itself, with the host nearly idle)."""
    lowest = min(entry["rate_per_s"] for entry in check.doc["overhead"])
    latencies = np.array(
        [x for entry in check.doc["overhead"] if entry["rate_per_s"] == lowest for x in entry["latency_s"]]
    )
    return float(np.median(latencies)), float(np.percentile(latencies, 90)), int(latencies.size)


@dataclass(frozen=True)
class HostRow:
    """The replica that does no work at one rate: measured latency against the simulator's, with the server's cost
    per request as a fixed delay and as CPU work queued on the host's cores."""

    rate_per_s: float
    requests: int
    failed: int
    p50_s: float
    p99_s: float
    host_p50_s: float
    host_p99_s: float
    fixed_s: float  # the fixed-delay simulation: every request takes the idle-rate median
    host_overloaded: bool


def host_rows(check: ServingCheck, seeds: int = SEEDS) -> list[HostRow]:
    """Every rate the idle replica was driven at, measured and simulated (Poisson arrivals at the rate, as sent)."""
    median, _, _ = overhead(check)
    cores = int(check.doc["host"]["cpus"])
    instant = ServiceCurve.deterministic({1: 1e-9}, "no work")
    rows = []
    for rate in sorted({entry["rate_per_s"] for entry in check.doc["overhead"]}):
        entries = [e for e in check.doc["overhead"] if e["rate_per_s"] == rate]
        latencies = np.array([x for e in entries for x in e["latency_s"]])
        if latencies.size == 0:
            continue
        n = max(latencies.size, 200)
        results = [
            simulate(
                Policy("none", 1, 0.0), instant, poisson_arrivals(rate, n, np.random.default_rng(seed)),
                overhead_s=median, host_cores=cores, seed=seed,
            )
            for seed in range(seeds)
        ]  # fmt: skip
        rows.append(
            HostRow(
                rate, int(latencies.size), sum(e["failed"] for e in entries),
                float(np.median(latencies)), float(np.percentile(latencies, 99)),
                float(np.mean([np.median(r.latency_s) for r in results])),
                float(np.mean([np.percentile(r.latency_s, 99) for r in results])),
                median, any(r.overloaded for r in results),
            )
        )  # fmt: skip
    return rows


def service_curves(check: ServingCheck) -> dict[tuple[str, str], ServiceCurve]:
    """Per (service, handler style), the per-batch times the server measured inside itself, by batch size."""
    pools: dict[tuple[str, str], dict[int, list[float]]] = {}
    for run in check.runs:
        pool = pools.setdefault((run["service"], run["handler"]), {})
        for size, seconds in zip(run["batches"]["size"], run["batches"]["service_s"]):
            pool.setdefault(size, []).append(seconds)
    return {
        key: ServiceCurve.from_samples(pool, label=f"{key[0]} service, {key[1]} handler, measured in the server")
        for key, pool in pools.items()
        if pool
    }


def _answered(run: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sent times in order, latencies, time inside the replica) of the answered requests of a run."""
    req, batches = run["requests"], run["batches"]
    keep = [i for i, latency in enumerate(req["latency_s"]) if latency is not None]
    sent = np.array([req["sent_s"][i] for i in keep])
    latency = np.array([req["latency_s"][i] for i in keep])
    ends = [batches["start_s"][req["batch"][i]] + batches["service_s"][req["batch"][i]] for i in keep]
    inside = np.array(ends) - np.array([req["arrived_s"][i] for i in keep])
    order = np.argsort(sent, kind="stable")
    return sent[order], latency[order], inside[order]


def _shares(sizes: Sequence[int]) -> dict[int, float]:
    values, counts = np.unique(np.asarray(sizes), return_counts=True)
    total = counts.sum()
    return {int(v): float(c / total) for v, c in zip(values, counts)}


def compare(check: ServingCheck, seeds: int = SEEDS) -> RayServeComparison:
    """Simulate every run of `check` from its own measurements and set the results beside it, one row per case."""
    median, p90, count = overhead(check)
    curves = service_curves(check)
    found = RayServeComparison(check, median, p90, count, *late_close(check))
    cases: dict[ComparedCase, list[dict]] = {}
    for run in check.runs:
        key = ComparedCase(run["service"], run["handler"], run["max_batch"], run["max_delay_s"], run["rate_per_s"])
        cases.setdefault(key, []).append(run)
    for case, runs in cases.items():
        runs = [r for r in runs if any(x is not None for x in r["requests"]["latency_s"])]
        curve = curves.get((case.service, case.handler))
        if not runs or curve is None:
            continue  # nothing was answered: there is nothing to compare
        policy = Policy("ray", case.max_batch, case.max_delay_s, 1, case.handler)
        p50s, p99s, means, batch_means, sizes, outside = [], [], [], [], [], []
        sim_p50, sim_p99, sim_means, sim_batch, sim_sizes, utilisation = [], [], [], [], [], []
        host_p50, host_p99, host_overloaded = [], [], False
        cores = int(check.doc["host"]["cpus"])
        overloaded, sent_total, span_total = False, 0, 0.0
        for run in runs:
            sent, latency, inside = _answered(run)
            p50s.append(float(np.median(latency)))
            p99s.append(float(np.percentile(latency, 99)))
            means.append(float(np.mean(latency)))
            batch_means.append(float(np.mean(run["batches"]["size"])))
            sizes += run["batches"]["size"]
            outside += list(latency - inside)
            offered = run["requests"]["sent_s"]
            sent_total += len(offered)
            span_total += max(max(offered) - min(offered), 1e-9)
            results = [simulate(policy, curve, sent, overhead_s=median, seed=seed) for seed in range(seeds)]
            sim_p50.append(float(np.mean([np.median(r.latency_s) for r in results])))
            sim_p99.append(float(np.mean([np.percentile(r.latency_s, 99) for r in results])))
            sim_means.append(float(np.mean([np.mean(r.latency_s) for r in results])))
            sim_batch.append(float(np.mean([r.mean_batch for r in results])))
            for result in results:
                sim_sizes += result.batch_sizes.tolist()
            utilisation.append(float(np.mean([r.utilisation for r in results])))
            overloaded = overloaded or any(r.overloaded for r in results)
            on_host = [
                simulate(policy, curve, sent, overhead_s=median, host_cores=cores, seed=seed) for seed in range(seeds)
            ]
            host_p50.append(float(np.mean([np.median(r.latency_s) for r in on_host])))
            host_p99.append(float(np.mean([np.percentile(r.latency_s, 99) for r in on_host])))
            host_overloaded = host_overloaded or any(r.overloaded for r in on_host)
        found.rows.append(
            Row(
                case=case,
                repeats=len(runs),
                requests=sum(len(_answered(r)[0]) for r in runs),
                failed=sum(r["failed"] for r in runs),
                offered_per_s=(sent_total - len(runs)) / span_total if span_total > 0 else math.nan,
                p50_s=float(np.median(p50s)),
                p50_range_s=(min(p50s), max(p50s)),
                sim_p50_s=float(np.median(sim_p50)),
                p99_s=float(np.median(p99s)),
                sim_p99_s=float(np.median(sim_p99)),
                mean_s=float(np.median(means)),
                sim_mean_s=float(np.median(sim_means)),
                mean_batch=float(np.median(batch_means)),
                mean_batch_range=(min(batch_means), max(batch_means)),
                sim_mean_batch=float(np.median(sim_batch)),
                histogram=_shares(sizes),
                sim_histogram=_shares(sim_sizes),
                utilisation=float(np.mean(utilisation)),
                outside_s=float(np.median(outside)),
                overloaded=overloaded,
                host_p50_s=float(np.median(host_p50)),
                host_p99_s=float(np.median(host_p99)),
                host_overloaded=host_overloaded,
            )
        )
    found.rows.sort(
        key=lambda r: (r.case.service, r.case.handler, r.case.max_batch, r.case.max_delay_s, r.case.rate_per_s)
    )
    return found


def compare_file(path: Path | str, seeds: int = SEEDS) -> RayServeComparison:
    """Read a serving-check file strictly (ResultsError names the file and field) and compare it."""
    return compare(read_serving_check(path), seeds)


def format_table(found: RayServeComparison) -> str:
    """The comparison as a plain-text table, for the command line."""
    lines = [
        found.label,
        f"server overhead per request (no work, no batching): median {found.overhead_s * 1e3:.1f} ms, "
        f"p90 {found.overhead_p90_s * 1e3:.1f} ms over {found.overhead_requests} requests",
        f"{'service':8} {'handler':9} {'policy':24} {'rate/s':>6} {'rep':>3} {'p50 ms':>7} {'sim':>6} {'ratio':>5}  "
        f"{'batch':>5} {'sim':>5} {'ratio':>5} {'TV':>5}  {'mean':>5}  {'p99 ms':>7} {'sim':>6} "
        f"{'util':>4} {'out ms':>6} agrees",
    ]
    for r in found.rows:
        lines.append(
            f"{r.case.service:8} {r.case.handler:9} {r.case.describe():24} {r.case.rate_per_s:6g} {r.repeats:3d} "
            f"{r.p50_s * 1e3:7.1f} {r.sim_p50_s * 1e3:6.1f} {r.p50_ratio:5.2f}  {r.mean_batch:5.2f} "
            f"{r.sim_mean_batch:5.2f} {r.batch_ratio:5.2f} {r.histogram_distance:5.2f}  {r.mean_ratio:5.2f}  "
            f"{r.p99_s * 1e3:7.1f} "
            f"{r.sim_p99_s * 1e3:6.1f} {r.utilisation:4.2f} {r.outside_s * 1e3:6.1f} {'yes' if r.agrees else 'NO'}"
        )
    if found.late_close_s is not None:
        lines.insert(
            2,
            f"awaiting handler: a batch started a median of {found.late_close_s * 1e3:.1f} ms after its wait ran out "
            f"({found.late_close_batches} batches that queued behind none); the simulator starts it on time",
        )
    agreeing = found.agreeing()
    lines.append(
        f"{len(agreeing)} of {len(found.rows)} cases within {TOLERANCE:.0%} on both p50 and mean batch; "
        "p99 is reported, not judged"
    )
    return "\n".join(lines)
