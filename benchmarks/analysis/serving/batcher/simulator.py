"""A dynamic batcher under random arrivals, simulated from a measured batch curve.

Requests arrive (open loop: Poisson, bursty or a trace; closed loop: N clients that each wait for their
answer), wait in one first-in-first-out queue, are grouped into batches by a server's rule, and each batch
runs on one of k identical model instances for a time drawn from the measured curve of that batch size.
Each request's latency is split into queueing (waiting for a batcher or an instance), batch formation (in
a batch that was still filling) and service (the batch's run), plus a stated per-request overhead of the
server outside the batcher.

The servers' rules differ, and the rule decides the batch you get:

- ``triton``: a batch leaves when the queue holds max batch requests, or when the *oldest* request has
  waited max delay (Triton's ``max_queue_delay_microseconds``), and only when an instance is free; so under
  load, requests that waited for an instance leave at once.
- ``torchserve``: a free worker takes the first job, then keeps collecting until ``batch_size`` jobs or
  ``max_batch_delay`` after it took the first; one worker collects at a time.
- ``ray``: ``@serve.batch`` starts its wait (``batch_wait_timeout_s``) when it takes a batch's first request.
  With a handler that *awaits* (``handler="awaiting"``) the batcher goes on forming batches while the
  previous one runs: each batch closes max delay after its first request, so at low and medium load the
  batch holds about 1 + rate × delay requests whatever the service time, and formed batches queue for the
  replica. With a handler that *blocks* the event loop (``handler="blocking"``, as a synchronous forward
  pass does) nothing is taken while a batch runs, so the next batch fills meanwhile. Replicas have their
  own batchers; requests go to them in turn (round robin).
- ``none``: no batching; one request per call.

Deterministic under a seed: the same inputs give the same result, bit for bit.

Pure Python and numpy: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right, insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.analysis.serving.arrivals import TraceError, gamma_arrivals, poisson_arrivals, trace_arrivals
from benchmarks.analysis.serving.batcher.simulation_result import SimulationResult

__all__ = [
    "HANDLERS",
    "SERVERS",
    "Policy",
    "ServiceCurve",
    "TraceError",
    "full_batch_ceiling",
    "gamma_arrivals",
    "poisson_arrivals",
    "simulate",
    "trace_arrivals",
]

SERVERS = ("triton", "ray", "torchserve", "none")
HANDLERS = ("blocking", "awaiting")
SERVER_NAMES = {"triton": "Triton", "ray": "Ray Serve", "torchserve": "TorchServe", "none": "no batching"}
QUANTILES = 256  # points of the spread kept per measured batch
MAX_BATCH = 1 << 16
MAX_INSTANCES = 1024
MAX_REQUESTS = 5_000_000


# ---------------------------------------------------------------------------------------------------------
# Service time per batch


class ServiceCurve:
    """Seconds one batch takes on one instance, as a distribution for every batch size.

    Built from measured samples per batch size: between two measured sizes the median is interpolated
    linearly and so is the spread (each measured batch's samples are kept as quantiles relative to their
    median, so a noisy batch stays noisy); below the smallest measured batch the smallest one's times are
    used; above the largest, the median grows along the last measured slope (never downward) with the largest
    batch's spread. `exponential` and `deterministic` curves exist for the queueing theory checks."""

    def __init__(self, centers: Mapping[int, float], relative: Mapping[int, np.ndarray] | None, label: str):
        self._batches = sorted(centers)
        self._centers = np.array([float(centers[b]) for b in self._batches])
        self._relative = None if relative is None else np.array([relative[b] for b in self._batches])
        self.label = label

    # -- construction ------------------------------------------------------------------------------------
    @classmethod
    def from_samples(cls, samples: Mapping[int, Sequence[float]], label: str = "") -> ServiceCurve:
        """`samples`: {batch size: [seconds per call, ...]}, at least one sample per batch."""
        if not isinstance(samples, Mapping) or not samples:
            raise ValueError("a service curve needs samples for at least one batch size")
        centers: dict[int, float] = {}
        relative: dict[int, np.ndarray] = {}
        grid = (np.arange(QUANTILES) + 0.5) / QUANTILES
        for batch, values in samples.items():
            _check_batch(batch, "a batch size of the curve")
            data = np.asarray(list(values), dtype=float)
            if data.ndim != 1 or data.size == 0:
                raise ValueError(f"batch {batch}: needs at least one sample in seconds")
            if not np.all(np.isfinite(data)) or np.any(data <= 0):
                raise ValueError(f"batch {batch}: every sample must be a finite number of seconds above 0")
            median = float(np.median(data))
            centers[int(batch)] = median
            relative[int(batch)] = np.quantile(data, grid) / median
        return cls(centers, relative, label)

    @classmethod
    def from_percentiles(
        cls,
        medians: Mapping[int, float],
        tails: Mapping[int, Mapping[float, float]] | None = None,
        label: str = "",
    ) -> ServiceCurve:
        """A curve known only by its median per batch and, optionally, upper percentiles (`tails[batch]`:
        {90: seconds, 99: seconds}), as perf_analyzer and most harnesses report it. The spread is the quantile
        function through those points, linear between them: flat at the median below it (no faster call is
        assumed, since nothing below the median is known) and flat at the highest percentile above it."""
        if not isinstance(medians, Mapping) or not medians:
            raise ValueError("a service curve needs a median for at least one batch size")
        grid = (np.arange(QUANTILES) + 0.5) / QUANTILES
        centers: dict[int, float] = {}
        relative: dict[int, np.ndarray] = {}
        for batch, median in medians.items():
            _check_batch(batch, "a batch size of the curve")
            if not isinstance(median, (int, float)) or not math.isfinite(median) or median <= 0:
                raise ValueError(f"batch {batch}: the median must be a finite number of seconds above 0")
            levels, values = [0.5], [1.0]
            for p, seconds in sorted(((tails or {}).get(batch) or {}).items()):
                if not 50 < p < 100 or not math.isfinite(seconds) or seconds < median * values[-1]:
                    raise ValueError(f"batch {batch}: p{p:g} must be at least the median and the lower percentiles")
                levels.append(p / 100)
                values.append(seconds / median)
            centers[int(batch)] = float(median)
            relative[int(batch)] = np.interp(grid, levels, values)
        return cls(centers, relative, label)

    @classmethod
    def deterministic(cls, seconds: Mapping[int, float], label: str = "") -> ServiceCurve:
        """Exactly `seconds[batch]` per batch, no spread (M/D/1 and its kin)."""
        return cls.from_samples({b: [s] for b, s in seconds.items()}, label)

    @classmethod
    def exponential(cls, means: Mapping[int, float], label: str = "") -> ServiceCurve:
        """Exponentially distributed with mean `means[batch]` (M/M/1 and its kin)."""
        if not isinstance(means, Mapping) or not means:
            raise ValueError("a service curve needs a mean for at least one batch size")
        for batch, mean in means.items():
            _check_batch(batch, "a batch size of the curve")
            if not isinstance(mean, (int, float)) or not math.isfinite(mean) or mean <= 0:
                raise ValueError(f"batch {batch}: the mean must be a finite number of seconds above 0")
        curve = cls({int(b): float(m) for b, m in means.items()}, None, label)
        return curve

    # -- reading ------------------------------------------------------------------------------------------
    @property
    def batches(self) -> list[int]:
        """The batch sizes measured."""
        return list(self._batches)

    @property
    def largest(self) -> int:
        return self._batches[-1]

    def _center(self, batch: int) -> float:
        bs, cs = self._batches, self._centers
        if batch <= bs[0]:
            return float(cs[0])
        if batch >= bs[-1]:
            if len(bs) == 1:
                return float(cs[0]) * batch / bs[0]
            slope = max((cs[-1] - cs[-2]) / (bs[-1] - bs[-2]), 0.0)
            return float(cs[-1] + slope * (batch - bs[-1]))
        return float(np.interp(batch, bs, cs))

    def _relative_at(self, batch: int) -> np.ndarray | None:
        if self._relative is None:
            return None
        bs = self._batches
        if batch <= bs[0]:
            return self._relative[0]
        if batch >= bs[-1]:
            return self._relative[-1]
        hi = bisect_right(bs, batch)
        lo = hi - 1
        if bs[lo] == batch:
            return self._relative[lo]
        w = (batch - bs[lo]) / (bs[hi] - bs[lo])
        return (1 - w) * self._relative[lo] + w * self._relative[hi]

    def median(self, batch: int) -> float:
        """The median seconds of one call at `batch`."""
        _check_batch(batch, "the batch size")
        if self._relative is None:
            return self._center(batch) * math.log(2)
        return self._center(batch) * float(np.median(self._relative_at(batch)))

    def mean(self, batch: int) -> float:
        """The mean seconds of one call at `batch`."""
        _check_batch(batch, "the batch size")
        if self._relative is None:
            return self._center(batch)
        return self._center(batch) * float(np.mean(self._relative_at(batch)))

    def sample(self, batch: int, rng: np.random.Generator) -> float:
        """One call's seconds at `batch`, drawn from the curve's distribution there."""
        _check_batch(batch, "the batch size")
        if self._relative is None:
            return self._center(batch) * float(rng.standard_exponential())
        relative = self._relative_at(batch)
        return self._center(batch) * float(relative[rng.integers(len(relative))])

    def _drawer(self, rng: np.random.Generator, n: int):
        """A function (batch, j) -> seconds for the j-th batch of a run of at most n batches.

        Each batch size's seconds (its center, or its row of the quantile table) is worked out the first time a
        batch of that size forms, so a run costs what its batches need whatever the largest batch allowed: a table
        for every size up to 65,536 would hold 16.8 million numbers, rebuilt for every simulation."""
        if self._relative is None:
            draws = rng.standard_exponential(n).tolist()
            centers: dict[int, float] = {}

            def exponential(m: int, j: int) -> float:
                center = centers.get(m)
                if center is None:
                    center = centers[m] = self._center(m)
                return center * draws[j]

            return exponential
        picks = rng.integers(0, self._relative.shape[1], size=n).tolist()
        rows: dict[int, list[float]] = {}

        def empirical(m: int, j: int) -> float:
            row = rows.get(m)
            if row is None:
                row = rows[m] = (self._center(m) * self._relative_at(m)).tolist()
            return row[picks[j]]

        return empirical


def _check_batch(batch, what: str) -> None:
    if not isinstance(batch, (int, np.integer)) or isinstance(batch, bool) or not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"{what} must be a whole number from 1 to {MAX_BATCH:,}, not {batch!r}")


# ---------------------------------------------------------------------------------------------------------
# Policy


@dataclass(frozen=True)
class Policy:
    """A server's batching settings: its rule, the largest batch, the longest wait for more requests,
    the number of model instances (replicas, workers) and, for Ray, whether the batch handler awaits or
    blocks the event loop."""

    server: str
    max_batch: int
    max_delay_s: float
    instances: int = 1
    handler: str = "blocking"
    per_device: int = 1  # instances that share one device (Triton's instance_group count); the rest on others

    @property
    def devices(self) -> int:
        """The devices (GPUs) the instances run on: each holds `per_device` of them."""
        return self.instances // self.per_device

    def __post_init__(self):
        if self.server not in SERVERS:
            raise ValueError(f"server must be one of {', '.join(SERVERS)}, not {self.server!r}")
        _check_batch(self.max_batch, "max batch")
        delay = self.max_delay_s
        if not isinstance(delay, (int, float)) or isinstance(delay, bool) or not math.isfinite(delay):
            raise ValueError(f"max delay must be a number of seconds, not {delay!r}")
        if not 0 <= delay <= 3600:
            raise ValueError(f"max delay must be from 0 to 3600 s, not {delay!r}")
        inst = self.instances
        if not isinstance(inst, (int, np.integer)) or isinstance(inst, bool) or not 1 <= inst <= MAX_INSTANCES:
            raise ValueError(f"instances must be a whole number from 1 to {MAX_INSTANCES}, not {inst!r}")
        if self.handler not in HANDLERS:
            raise ValueError(f"handler must be one of {', '.join(HANDLERS)}, not {self.handler!r}")
        if self.handler == "awaiting" and self.server != "ray":
            raise ValueError("an awaiting batch handler is Ray Serve's; other servers' handlers block")
        if self.server == "none" and (self.max_batch != 1 or self.max_delay_s != 0):
            raise ValueError("without batching, max batch is 1 and max delay 0")
        share = self.per_device
        if not isinstance(share, (int, np.integer)) or isinstance(share, bool) or not 1 <= share <= inst:
            raise ValueError(f"instances per device must be a whole number from 1 to the instances, not {share!r}")
        if inst % share:
            raise ValueError(f"{inst} instances do not divide into devices of {share} each")
        if share > 1 and self.server == "ray":
            raise ValueError(
                "Ray Serve replicas that share a GPU (fractional num_gpus) are not modelled; use one per GPU"
            )

    def to_json(self) -> dict[str, Any]:
        """The settings as the `--json` answers of `serve` give them, with their description."""
        return {
            "server": self.server,
            "max_batch": self.max_batch,
            "max_delay_s": self.max_delay_s,
            "instances": self.instances,
            "instances_per_device": self.per_device,
            "devices": self.devices,
            "handler": self.handler,
            "description": self.describe(),
        }

    def describe(self) -> str:
        """e.g. 'Triton, max batch 16, max delay 5 ms, 1 instance' or '…, 4 instances, 2 per device on 2 devices'."""
        many = f"{self.instances} instance{'s' if self.instances != 1 else ''}"
        if self.instances > 1:
            on = f"{self.devices} device{'s' * (self.devices != 1)}"
            many += f" on {on}" if self.per_device in (1, self.instances) else f", {self.per_device} per device on {on}"
        if self.server == "none":
            return f"no batching, {many}"
        text = f"{SERVER_NAMES[self.server]}, max batch {self.max_batch}, max delay {ms(self.max_delay_s)}, {many}"
        if self.server == "ray":
            text += f", {self.handler} handler"
        return text


def ms(seconds: float) -> str:
    """'2.5 ms', '12.5 ms', '1,250 ms': three significant figures below 100 ms, whole milliseconds above."""
    value = seconds * 1e3
    return f"{value:.3g} ms" if value < 100 else f"{value:,.0f} ms"


# ---------------------------------------------------------------------------------------------------------
# The simulator


def _shared(s, m, slot, start, share, free, running, center):
    """A batch's seconds on a device other instances share: at least the time the device needs for this batch and
    what is left of the ones its neighbours are running when it starts, as if they were one batch (the curve at this
    batch's size plus the rows still to run of theirs, each counted by the share of its run still ahead): copies
    overlap as far as the curve is flat, and not at all where it grows in proportion."""
    first = slot - slot % share
    others = 0.0
    for i in range(first, first + share):
        size, length = running[i]
        if i != slot and free[i] > start and length > 0:
            others += size * min((free[i] - start) / length, 1.0)
    if not others:
        return s
    return s * max(center(m + others) / center(m), 1.0)


def _engine(arr, n_total, policy, delay, draw, closed_overhead, center=None):
    """One shared queue in arrival order; returns per batch: size, open, close, start, service seconds.

    `arr` is a sorted list of arrival times: all of them (open loop) or the clients' first ones (closed
    loop: each answer adds its client's next arrival, `closed_overhead` after the batch's end). With instances
    sharing a device, `center(batch)` is the curve's typical seconds (see `_shared`)."""
    max_batch = 1 if policy.server == "none" else policy.max_batch
    anchor_oldest = policy.server in ("triton", "none")
    gate_by_instance = not (policy.server == "ray" and policy.handler == "awaiting")
    k = policy.instances if policy.server != "ray" else 1
    share = policy.per_device
    free = [0.0] * k
    running = [(0, 0.0)] * k  # with shared devices: the size and seconds of the batch each instance runs (or ran)
    inf = math.inf
    sizes, opens, closes, starts, services = [], [], [], [], []
    p = 0
    close_prev = -inf
    made = len(arr)
    j = 0
    while p < n_total:
        a_first = arr[p]
        slot = 0 if share == 1 else min(range(k), key=free.__getitem__)
        t_free = free[slot]
        opened = a_first if a_first > close_prev else close_prev
        if gate_by_instance and t_free > opened:
            opened = t_free
        close = (a_first if anchor_oldest else opened) + delay
        hi = p + max_batch
        known = len(arr)
        if hi <= known and arr[hi - 1] < close:
            close = arr[hi - 1]
        if close < opened:
            close = opened
        if hi > known:
            hi = known
        m = hi - p if arr[hi - 1] <= close else bisect_right(arr, close, p, hi) - p
        start = close if close >= t_free else t_free
        s = draw(m, j)
        if share > 1:
            s = _shared(s, m, slot, start, share, free, running, center)
            running[slot] = (m, s)
        finish = start + s
        if share > 1:
            free[slot] = finish
        elif k == 1:
            free[0] = finish
        else:
            heapq.heapreplace(free, finish)
        sizes.append(m)
        opens.append(opened)
        closes.append(close)
        starts.append(start)
        services.append(s)
        j += 1
        p += m
        close_prev = close
        if closed_overhead is not None:
            back = finish + closed_overhead
            for _ in range(min(m, n_total - made)):
                insort(arr, back, lo=p)
                made += 1
    return sizes, opens, closes, starts, services


def _one_queue(policy, service, arrivals, clients, n_requests, overhead_s, rng):
    """Arrays of one shared queue: arrivals, per-request queue/formation/service, per-batch size/start/service."""
    if clients is None:
        arr = arrivals.tolist()
        n = len(arr)
        closed = None
    else:
        n = n_requests
        arr = [0.0] * min(clients, n)
        closed = overhead_s
    draw = service._drawer(rng, n)
    sizes, opens, closes, starts, services = _engine(
        arr, n, policy, policy.max_delay_s, draw, closed, service._center if policy.per_device > 1 else None
    )
    sizes = np.array(sizes, dtype=np.int64)
    batch_of = np.repeat(np.arange(sizes.size), sizes)
    a = np.array(arr[:n])
    opens, closes, starts, services = (np.array(x) for x in (opens, closes, starts, services))
    entered = np.maximum(a, opens[batch_of])
    formation = closes[batch_of] - entered
    queue = starts[batch_of] - a - formation
    return a, queue, formation, services[batch_of], sizes, starts, services


def simulate(
    policy: Policy,
    service: ServiceCurve,
    arrivals: np.ndarray | Sequence[float] | None = None,
    *,
    clients: int | None = None,
    n_requests: int | None = None,
    overhead_s: float = 0.0,
    host_cores: int | None = None,
    seed: int = 0,
) -> SimulationResult:
    """Serve `arrivals` (sorted seconds; open loop) or `n_requests` from `clients` closed-loop clients (each
    sends its next request as soon as its answer is back) under `policy`, with batch times drawn from
    `service`, and `overhead_s` per request outside the batcher: a fixed delay, or, with `host_cores`, CPU work
    done on that many cores, half before the batcher and half after the batch (each request waits for a free core
    both times, so the overhead grows with the load). Deterministic in `seed`."""
    arrivals, n = _checked(policy, service, arrivals, clients, n_requests, overhead_s)
    host = None
    if host_cores is not None and overhead_s > 0:
        if clients is not None:
            raise ValueError("host cores are modelled for open-loop arrivals only")
        if not isinstance(host_cores, (int, np.integer)) or isinstance(host_cores, bool) or not 1 <= host_cores <= 1024:
            raise ValueError(f"host cores must be a whole number from 1 to 1,024, not {host_cores!r}")
        a, queue, formation, serv, sizes, starts, services, host = _with_host_cores(
            policy, service, arrivals, overhead_s, int(host_cores), seed
        )
        latency = queue + formation + serv + host
    else:
        a, queue, formation, serv, sizes, starts, services = _batches(
            policy, service, arrivals, clients, n, overhead_s, np.random.default_rng(seed)
        )
        latency = queue + formation + serv + overhead_s
    bound = full_batch_ceiling(policy, service)
    if host is not None:
        bound = min(bound, host_cores / overhead_s)  # the cores do at most this many requests' work a second
    return SimulationResult(
        policy, a, latency, queue, formation, serv, sizes, starts, services, float(overhead_s), bound, clients, host
    )


def _batches(policy, service, arrivals, clients, n, overhead_s, rng):
    if policy.server == "ray" and policy.instances > 1:
        return _per_replica(policy, service, arrivals, clients, n, overhead_s, rng)
    return _one_queue(policy, service, arrivals, clients, n if clients is not None else None, overhead_s, rng)


HOST_ROUNDS = 6  # rounds of the host's and the batcher's fixed point (they agree to a nanosecond within 2–4)


def _with_host_cores(policy, service, arrivals, overhead_s, cores, seed):
    """The batcher fed by a host whose cores do each request's work before it (parsing, preprocessing) and after its
    batch (postprocessing, the reply), in one first-come-first-served queue. The two depend on each other (replies
    compete with new requests for the cores), so they are solved as a fixed point: each round runs the batcher on the
    requests as the host hands them over, then the host on both kinds of work, until the hand-over times stop moving."""
    work = overhead_s / 2
    handed = _host_queue(arrivals, None, work, cores)[0]
    for _ in range(HOST_ROUNDS):
        a, queue, formation, serv, sizes, starts, services = _batches(
            policy, service, handed, None, arrivals.size, 0.0, np.random.default_rng(seed)
        )
        done = a + queue + formation + serv
        again, replied = _host_queue(arrivals, done, work, cores)
        settled = bool(np.max(np.abs(again - handed)) < 1e-9)
        handed = again
        if settled:
            break
    host = (a - arrivals) + (replied - done)
    return arrivals, queue, formation, serv, sizes, starts, services, host


def _host_queue(arrivals, done, work, cores):
    """First come, first served on `cores` cores, every job `work` seconds: each request's work at its arrival and,
    when `done` is given, its reply's at its batch's end. Returns when each request's work ends and each reply's."""
    ready = arrivals if done is None else np.concatenate([arrivals, done])
    order = np.argsort(ready, kind="stable")
    ends = np.empty(ready.size)
    free = [0.0] * cores  # equal jobs in order: the k-th takes the core the (k - cores)-th freed
    times = ready[order].tolist()
    out = [0.0] * len(times)
    for k, t in enumerate(times):
        slot = k % cores
        start = t if t > free[slot] else free[slot]
        free[slot] = out[k] = start + work
    ends[order] = out
    n = arrivals.size
    return ends[:n], (ends[n:] if done is not None else None)


def full_batch_ceiling(policy: Policy, service: ServiceCurve) -> float:
    """Requests per second the policy serves at most: every batch full, at its mean time, every instance busy; the
    instances sharing a device together at most what the device serves in one batch of their summed size."""
    top = 1 if policy.server == "none" else policy.max_batch
    together = min(policy.per_device * top, MAX_BATCH)
    per_device = together / max(service.mean(together), service.mean(top))
    return policy.devices * per_device


def _checked(policy, service, arrivals, clients, n_requests, overhead_s) -> tuple[np.ndarray | None, int]:
    """The arrivals as an array (None for a closed loop) and the number of requests; TypeError or ValueError, in
    one line, for inputs that make no sense."""
    if not isinstance(policy, Policy):
        raise TypeError("policy must be a Policy")
    if not isinstance(service, ServiceCurve):
        raise TypeError("service must be a ServiceCurve")
    if not isinstance(overhead_s, (int, float)) or not math.isfinite(overhead_s) or not 0 <= overhead_s <= 3600:
        raise ValueError(f"the overhead must be from 0 to 3600 s, not {overhead_s!r}")
    if (arrivals is None) == (clients is None):
        raise ValueError("give either arrivals (open loop) or clients with n_requests (closed loop)")
    if clients is not None:
        if not isinstance(clients, (int, np.integer)) or isinstance(clients, bool) or not 1 <= clients <= 1_000_000:
            raise ValueError(f"clients must be a whole number from 1 to 1,000,000, not {clients!r}")
        if not isinstance(n_requests, (int, np.integer)) or not 1 <= n_requests <= MAX_REQUESTS:
            raise ValueError(f"a closed loop needs n_requests, a whole number from 1 to {MAX_REQUESTS:,}")
        return None, int(n_requests)
    arrivals = np.asarray(arrivals, dtype=float)
    if arrivals.ndim != 1 or arrivals.size == 0 or arrivals.size > MAX_REQUESTS:
        raise ValueError(f"arrivals must be a list of 1 to {MAX_REQUESTS:,} times in seconds")
    if not np.all(np.isfinite(arrivals)) or np.any(np.diff(arrivals) < 0):
        raise ValueError("arrivals must be finite times in seconds, in order")
    return arrivals, arrivals.size


def _per_replica(policy, service, arrivals, clients, n, overhead_s, rng):
    """Ray Serve's replicas each have a batcher of their own: requests (or clients) go to them in turn. The
    requests' arrays are merged back into arrival order; the batches' are kept replica by replica."""
    k = policy.instances
    streams = rng.spawn(k)
    parts = []
    for r in range(k):
        if clients is None:
            index = np.arange(r, n, k)
            if index.size == 0:
                continue
            got = _one_queue(policy, service, arrivals[index], None, None, overhead_s, streams[r])
        else:
            mine = clients // k + (1 if r < clients % k else 0)
            count = n // k + (1 if r < n % k else 0)
            if mine == 0 or count == 0:
                continue
            got = _one_queue(policy, service, None, mine, count, overhead_s, streams[r])
        parts.append(got)
    a = np.concatenate([p[0] for p in parts])
    order = np.argsort(a, kind="stable")
    queue, formation, serv = (np.concatenate([p[i] for p in parts])[order] for i in (1, 2, 3))
    sizes, starts, services = (np.concatenate([p[i] for p in parts]) for i in (4, 5, 6))
    return a[order], queue, formation, serv, sizes, starts, services
