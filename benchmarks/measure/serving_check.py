"""Check the dynamic-batching simulator against a real server: Ray Serve's `@serve.batch` on 127.0.0.1.

`run_check` (called by `python -m benchmarks.commands.serving_check` and `nox -s serving-check`) starts a
one-node Ray cluster of its own, deploys one replica per (handler style, policy) and drives each with an
open-loop Poisson client at several rates, three times; then a real torch model at low rates. It writes every
request's timings and every batch the server formed (its size and how long it ran, measured inside the
server) to `benchmarks/serving/<host>/<id>.json`, a results file of its own kind
(`benchmarks.contract.serving_check`), which `benchmarks.analysis.serving.batcher.ray_serve_comparison` compares
with the simulator. The cluster is stopped on the way out, also on an error, Ctrl-C or SIGTERM.

The service that follows a curve sleeps for a time drawn from a committed sweep's measured samples at the
batch's size (interpolated between measured batches), so it follows a measured curve without using the
CPU: the server's own CPU cost per request is several milliseconds on a small machine and would swamp a
small model. What a request costs the server by itself is measured with a replica that does nothing.

Only this harness imports Ray (through `benchmarks.measure.serving_server`, loaded when the check runs).
"""

from __future__ import annotations

import os
import platform
import secrets
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.contract.results import ResultsError, load_json, read_sweep, write_atomic
from benchmarks.measure.serving_cleanup import marked_processes
from benchmarks.measure.serving_client import Load, drive, poisson_schedule
from benchmarks.measure.session import ROOT, provenance

MODEL_TARGET = "examples/resnet50_small.py:factory"


def default_curve() -> Path | None:
    """The newest committed sweep of the check's model (ResNet-50 on small images), whose times the service follows."""
    found = []
    for path in sorted((ROOT / "benchmarks" / "sweeps").glob("*/*.json")):
        try:
            if load_json(path)["model"].get("target") == MODEL_TARGET:
                found.append(path)
        except (ResultsError, KeyError, AttributeError, TypeError):
            continue
    return max(found, key=lambda p: p.name, default=None)


ECHO_RATE = 20.0  # requests/s to the replica that does nothing
ROUND = 6  # decimals kept of every time (microseconds)
SCALE = 2.0  # the curve's times are doubled: its capacity falls within what the server's own CPU cost allows here
SETTLE_S = 30.0  # at most this long waiting for a route to answer promptly again after a run with failures


@dataclass(frozen=True)
class MeasuredCase:
    service: str  # "curve" or "model"
    handler: str  # "awaiting" or "blocking"
    max_batch: int
    max_delay_s: float
    rate_per_s: float
    repeat: int

    @property
    def route(self) -> str:
        return f"/{self.service}-{self.handler}-b{self.max_batch}-d{round(self.max_delay_s * 1000)}ms"

    @property
    def name(self) -> str:
        return f"{self.route.strip('/')}-r{self.rate_per_s:g}-rep{self.repeat}"


@dataclass(frozen=True)
class ServingCheckPlan:
    policies: tuple[tuple[int, float], ...]
    rates: dict[str, tuple[float, ...]]  # per handler style
    model_policy: tuple[int, float] | None
    model_rates: tuple[float, ...]
    repeats: int
    duration_s: float
    max_requests: int
    echo_rates: tuple[float, ...] = ()  # besides ECHO_RATE: rates at which the idle replica is driven at the end

    def cases(self) -> list[MeasuredCase]:
        found = []
        for repeat in range(1, self.repeats + 1):  # repeats interleaved, so a burst of noise hits one of each
            for handler, rates in self.rates.items():
                for max_batch, delay in self.policies:
                    found += [MeasuredCase("curve", handler, max_batch, delay, rate, repeat) for rate in rates]
            if self.model_policy is not None:
                max_batch, delay = self.model_policy
                found += [
                    MeasuredCase("model", "blocking", max_batch, delay, rate, repeat) for rate in self.model_rates
                ]
        return found

    @property
    def max_batch(self) -> int:
        """The largest batch any of its policies forms: the curve must be measured up to it."""
        return max([b for b, _ in self.policies] + [self.model_policy[0] if self.model_policy else 1])


FULL = ServingCheckPlan(  # rates up to about 70 % of what each handler style sustains with the curve at SCALE
    policies=((16, 0.005), (8, 0.020)),
    rates={"awaiting": (6.0, 14.0, 22.0), "blocking": (10.0, 25.0, 40.0)},
    model_policy=(8, 0.010),
    model_rates=(3.0, 8.0),
    repeats=3,
    duration_s=6.0,
    max_requests=600,
    echo_rates=(80.0, 160.0, 240.0),  # up to about 85 % of what the host's two cores do at 7 ms a request
)
QUICK = ServingCheckPlan(  # the test's check: one policy, one rate per style, no model
    policies=((16, 0.005),),
    rates={"awaiting": (10.0,), "blocking": (20.0,)},
    model_policy=None,
    model_rates=(),
    repeats=1,
    duration_s=3.0,
    max_requests=200,
)


def curve_table(path: Path, max_batch: int, scale: float = SCALE) -> tuple[dict[int, list[float]], str]:
    """Per batch 1..max_batch, the sweep's measured samples (seconds) times `scale`; between two measured
    batches each sample is interpolated rank by rank, so the spread is the measured one, not a constant."""
    sweep = read_sweep(path)
    measured = {
        p["batch"]: sorted(p["timing"]["samples_s"]) for p in sweep.points if p["status"] == "ok" and p["timing"]
    }
    batches = sorted(measured)
    if not batches or batches[0] != 1 or batches[-1] < max_batch:
        raise ResultsError(path, "points", f"needs measured batches from 1 to at least {max_batch}")
    table = {}
    for b in range(1, max_batch + 1):
        low = max(x for x in batches if x <= b)
        high = min(x for x in batches if x >= b)
        if low == high:
            table[b] = measured[b]
            continue
        w = (b - low) / (high - low)
        n = min(len(measured[low]), len(measured[high]))
        lo, hi = (_ranks(measured[x], n) for x in (low, high))
        table[b] = [(1 - w) * a + w * c for a, c in zip(lo, hi)]
    table = {b: [scale * x for x in samples] for b, samples in table.items()}
    model = sweep.doc["model"]
    label = (
        f"{scale:g} × the times of {model['name']} ({model['target']}), {model['dtype']} {model['mode']}, "
        f"{sweep.device['name']} with {sweep.device['threads']} thread(s): sweep {sweep.id}"
    )
    return table, label


def _ranks(ordered: list[float], n: int) -> list[float]:
    """n samples of a sorted list, evenly by rank (all of it when it holds n)."""
    return [ordered[round(i * (len(ordered) - 1) / max(n - 1, 1))] for i in range(n)]


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, ROUND)


def record_load(load: Load) -> tuple[dict[str, list], dict[str, list], int, list[str]]:
    """(requests, batches, failed, the distinct errors) of one drive, times as offsets from the start of sending."""
    batch_index: dict[str, int] = {}
    batches: dict[str, list] = {"size": [], "start_s": [], "service_s": []}
    requests: dict[str, list] = {"scheduled_s": [], "sent_s": [], "latency_s": [], "arrived_s": [], "batch": []}
    failed = 0
    for item in load.requests:
        answer = item.answer
        requests["scheduled_s"].append(_r(item.scheduled_s))
        requests["sent_s"].append(_r(item.sent_s if item.sent_s is not None else item.scheduled_s))
        if answer is None or item.latency_s is None:
            failed += 1
            requests["latency_s"].append(None)
            requests["arrived_s"].append(None)
            requests["batch"].append(None)
            continue
        key = str(answer["batch"])
        if key not in batch_index:
            batch_index[key] = len(batches["size"])
            batches["size"].append(int(answer["size"]))
            batches["start_s"].append(_r(answer["start"] - load.started))
            batches["service_s"].append(_r(max(answer["end"] - answer["start"], 1e-6)))
        requests["latency_s"].append(_r(max(item.latency_s, 1e-6)))
        requests["arrived_s"].append(_r(answer["arrived"] - load.started))
        requests["batch"].append(batch_index[key])
    errors = list(dict.fromkeys(item.error for item in load.requests if item.error))[:10]
    return requests, batches, failed, errors


def host_info() -> dict[str, Any]:
    import ray

    try:
        import torch

        torch_version = torch.__version__
    except ImportError:
        torch_version = None
    from benchmarks.measure.fingerprint import (
        cpu_model,  # imports torch: only when the check runs
        device_slug,
    )

    cpu = cpu_model()
    return {
        "name": cpu or platform.machine(),
        "slug": "cpu-" + device_slug(cpu or platform.machine()),
        "cpu_model": cpu,
        "cpus": os.cpu_count() or 1,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "ray": ray.__version__,
        "torch": torch_version,
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_check(plan: ServingCheckPlan, curve_path: Path, out_dir: Path, command: list[str]) -> Path:
    """Start a local Ray cluster, deploy one route per case, drive each with its Poisson schedule and record what
    the server did; the file is rewritten after every case and on any stop."""
    from benchmarks.measure import serving_server as server

    wall = time.perf_counter()
    max_batch = plan.max_batch
    table, label = curve_table(curve_path, max_batch)
    doc = _new_document(curve_path, table, label, max_batch, command)
    path = out_dir / doc["host"]["slug"] / f"{doc['run']['id']}.json"
    cases = plan.cases()
    say(f"serving check: {len(cases)} runs of up to {plan.duration_s:g} s, writing {path}")
    marker = "(not started)"
    try:
        with server.local_cluster() as url:
            marker = os.environ[server.MARKER]
            routes = len({case.route for case in cases})
            say(f"  cluster {marker} up ({time.perf_counter() - wall:.0f} s); deploying {routes + 1} replicas")
            _deploy(cases, table)
            say(f"  deployed ({time.perf_counter() - wall:.0f} s)")
            for index, case in enumerate(cases, 1):
                if index == 1 or case.repeat != cases[index - 2].repeat:
                    _echo(doc, url, plan, seed=case.repeat)  # once per round of repeats: the load drifts
                failed = _drive_case(doc, url, plan, case, index, len(cases), wall)
                write_atomic(path, doc)
                if failed:
                    settle(url + case.route)
            _echo(doc, url, plan, seed=plan.repeats + 1)
            for index, rate in enumerate(plan.echo_rates):  # the server's own cost as the host fills up
                _echo(doc, url, plan, seed=plan.repeats + 2 + index, rate=rate)
                write_atomic(path, doc)
        doc["run"]["complete"] = True
    except BaseException as exc:
        doc["run"]["interrupted"] = f"{type(exc).__name__}: {exc}"[:500]
        raise
    finally:
        doc["run"]["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        doc["run"]["wall_s"] = round(time.perf_counter() - wall, 3)
        doc["host"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        if doc["runs"] or doc["overhead"]:
            write_atomic(path, doc)
    say(f"  cluster {marker} stopped; {len(marked_processes(marker))} of its processes left")
    say(f"serving check done in {doc['run']['wall_s']:.0f} s: {path}")
    return path


def _new_document(curve_path: Path, table: dict, label: str, max_batch: int, command: list[str]) -> dict[str, Any]:
    """The file before any case: its provenance, the host, the server's settings and the curve the sleepers follow."""
    from benchmarks.measure import serving_server as server

    started = datetime.now(timezone.utc)
    commit, dirty = provenance()
    host = host_info()
    return {
        "schema_version": 1,
        "kind": "serving-check",
        "run": {
            "id": f"{started:%Y%m%dT%H%M%SZ}-serving-{secrets.token_hex(3)}",
            "started_at": started.isoformat(timespec="seconds"),
            "finished_at": None,
            "complete": False,
            "interrupted": None,
            "command": command,
            "git_commit": commit,
            "git_dirty": dirty,
        },
        "host": host,
        "server": {
            "name": "Ray Serve",
            "version": host["ray"],
            "replicas": 1,
            "max_ongoing_requests": max(256, 4 * max_batch),
            "max_concurrent_batches": 1,
            "transport": f"HTTP/1.1 through Serve's proxy on {server.HOST}:{server.HTTP_PORT}, one connection each",
            "auth_mode": server.AUTH_MODE,
        },
        "curve": {
            "scale": SCALE,
            "source": str(curve_path.relative_to(ROOT)) if curve_path.is_relative_to(ROOT) else curve_path.name,
            "label": label,
            "batches": [{"batch": b, "samples_s": [_r(s) for s in table[b]]} for b in sorted(table)],
        },
        "overhead": [],
        "runs": [],
    }


def _deploy(cases: list[MeasuredCase], table: dict) -> None:
    """The echo route, then one route per distinct case: the real model's or a sleeper following the curve."""
    from benchmarks.measure import serving_server as server

    server.deploy(server.echo_deployment("echo"), "/echo")
    for route, case in {c.route: c for c in cases}.items():
        if case.service == "model":
            app = server.model_deployment(route.strip("/"), case.max_batch, case.max_delay_s, MODEL_TARGET, 1)
        else:
            app = server.sleeper_deployment(route.strip("/"), case.max_batch, case.max_delay_s, case.handler, table)
        server.deploy(app, route)


def _drive_case(
    doc: dict[str, Any], url: str, plan: ServingCheckPlan, case: MeasuredCase, index: int, total: int, wall: float
) -> int:
    """Warm the case's route, drive it with its Poisson schedule and add what the server did to the file; the
    number of requests that failed."""
    drive(url + case.route, [0.02 * i for i in range(3)])  # warm the route; not recorded
    time.sleep(0.3)
    seed = 1000 + index
    schedule = poisson_schedule(case.rate_per_s, plan.max_requests, plan.duration_s, seed)
    load = drive(url + case.route, schedule)
    requests, batches, failed, errors = record_load(load)
    doc["runs"].append(
        {
            "name": case.name,
            "service": case.service,
            "model": MODEL_TARGET if case.service == "model" else None,
            "handler": case.handler,
            "max_batch": case.max_batch,
            "max_delay_s": case.max_delay_s,
            "rate_per_s": case.rate_per_s,
            "repeat": case.repeat,
            "seed": seed,
            "started_at": datetime.fromtimestamp(load.started, timezone.utc).isoformat(timespec="milliseconds"),
            "failed": failed,
            "errors": errors,
            "requests": requests,
            "batches": batches,
        }
    )
    sizes = batches["size"]
    mean = sum(sizes) / len(sizes) if sizes else float("nan")
    say(
        f"  [{index}/{total}] {case.name}: {len(schedule)} requests, {failed} failed, "
        f"{len(sizes)} batches (mean {mean:.2f}), {time.perf_counter() - wall:.0f} s"
    )
    return failed


def settle(url: str) -> None:
    """After a run that timed requests out (the server still works on them), wait until the route answers
    one request within a second again, for at most SETTLE_S."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        answer = drive(url, [0.0], timeout_s=5.0).requests[0]
        if answer.latency_s is not None and answer.latency_s < 1.0:
            return
        time.sleep(0.5)
    say(f"  {url} still slow after {SETTLE_S:g} s")


def _echo(doc: dict[str, Any], url: str, plan: ServingCheckPlan, seed: int, rate: float = ECHO_RATE) -> None:
    """What a request costs the server by itself: latencies through a replica that does nothing, at `rate`."""
    drive(url + "/echo", [0.02 * i for i in range(3)])
    schedule = poisson_schedule(rate, plan.max_requests, max(plan.duration_s * 0.75, 3.0), seed)
    load = drive(url + "/echo", schedule)
    latencies = [_r(max(r.latency_s, 1e-6)) for r in load.requests if r.latency_s is not None]
    doc["overhead"].append({"rate_per_s": rate, "latency_s": latencies, "failed": len(load.requests) - len(latencies)})
    median = sorted(latencies)[len(latencies) // 2] if latencies else float("nan")
    say(f"  server overhead (no work, {rate:g}/s): median {median * 1000:.1f} ms over {len(latencies)} requests")
