"""The Ray Serve side of the real-server check: deployments as users write them, and a cluster that always stops.

Imports Ray, so only the check's harness (`benchmarks.measure.serving_check`) imports this module; nothing the
site or the other commands load may. Each deployment batches with `@serve.batch(max_batch_size=...,
batch_wait_timeout_s=...)`, sets `max_ongoing_requests` explicitly (its default, 5, would cap every batch
at 5), and answers each request with what happened to it inside the server: when the replica took the
request, and the batch it ran in (its id, size, start and end on the host's clock).

Handler styles:
- "awaiting": the batch handler awaits (`await asyncio.sleep(t)`), so the replica's event loop keeps taking
  requests and closing batches while a batch runs; Ray runs one batch at a time (`max_concurrent_batches=1`),
  so the next batch waits for the previous one.
- "blocking": the batch handler blocks the event loop (`time.sleep(t)`, as a synchronous torch forward does),
  so requests that arrive meanwhile are taken only when the batch ends.
- "model": a real torch model's forward pass, inside the handler, blocking.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import ray
from ray import serve

from benchmarks.measure.serving_cleanup import MARKER, stop_leftovers

GCS_PORT = 6391  # unusual ports of our own, on 127.0.0.1 only
HTTP_PORT = 8391
HOST = "127.0.0.1"
AUTH_MODE = "disabled"  # Ray 2.52+ reads RAY_AUTH_MODE: "disabled" or "token"; every port here is on 127.0.0.1


def _answer(arrived: float, batch_id: str, size: int, start: float, end: float) -> dict[str, Any]:
    return {"arrived": arrived, "batch": batch_id, "size": size, "start": start, "end": end}


def sleeper_deployment(name: str, max_batch: int, max_delay_s: float, handler: str, table: dict[int, list[float]]):
    """A replica whose batch of b requests takes one of `table[b]` seconds (drawn at random), without using CPU."""
    if handler not in ("awaiting", "blocking"):
        raise ValueError(f"handler must be awaiting or blocking, got {handler!r}")

    @serve.deployment(
        name=name,
        num_replicas=1,
        max_ongoing_requests=max(256, 4 * max_batch),
        ray_actor_options={"num_cpus": 0},
    )
    class Sleeper:
        def __init__(self) -> None:
            self.table = {int(k): list(v) for k, v in table.items()}
            self.random = random.Random(f"{name}-{os.getpid()}")
            self.ids = itertools.count()

        @serve.batch(max_batch_size=max_batch, batch_wait_timeout_s=max_delay_s)
        async def run(self, arrived: list[float]) -> list[dict[str, Any]]:
            start = time.time()
            seconds = self.random.choice(self.table[len(arrived)])
            if handler == "awaiting":
                await asyncio.sleep(seconds)
            else:
                time.sleep(seconds)  # blocks the event loop, as a synchronous forward pass does
            end = time.time()
            batch_id = f"{os.getpid()}-{next(self.ids)}"
            return [_answer(t, batch_id, len(arrived), start, end) for t in arrived]

        async def __call__(self, request) -> dict[str, Any]:
            return await self.run(time.time())

    return Sleeper


def model_deployment(name: str, max_batch: int, max_delay_s: float, factory: str, threads: int):
    """A replica that runs a real torch model (a `path.py:factory` of the sweep's kind) on each batch."""

    @serve.deployment(
        name=name,
        num_replicas=1,
        max_ongoing_requests=max(256, 4 * max_batch),
        ray_actor_options={"num_cpus": 0},
    )
    class ServedModel:
        def __init__(self) -> None:
            import importlib.util

            import torch

            torch.set_num_threads(threads)
            path, function = factory.split(":")
            spec = importlib.util.spec_from_file_location("served_model", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self.torch = torch
            self.model, self.make_input = getattr(module, function)()
            self.model.eval()
            self.inputs = {b: self.make_input(b) for b in range(1, max_batch + 1)}
            with torch.inference_mode():
                for b in (1, max_batch):
                    self.model(self.inputs[b])
            self.ids = itertools.count()

        @serve.batch(max_batch_size=max_batch, batch_wait_timeout_s=max_delay_s)
        async def run(self, arrived: list[float]) -> list[dict[str, Any]]:
            start = time.time()
            with self.torch.inference_mode():
                out = self.model(self.inputs[len(arrived)])
            float(out.sum())  # the forward pass has finished
            end = time.time()
            batch_id = f"{os.getpid()}-{next(self.ids)}"
            return [_answer(t, batch_id, len(arrived), start, end) for t in arrived]

        async def __call__(self, request) -> dict[str, Any]:
            return await self.run(time.time())

    return ServedModel


def echo_deployment(name: str):
    """No batching and no work: what a request costs the server by itself (proxy, routing, replica)."""

    @serve.deployment(name=name, num_replicas=1, max_ongoing_requests=256, ray_actor_options={"num_cpus": 0})
    class Echo:
        async def __call__(self, request) -> dict[str, Any]:
            now = time.time()
            return _answer(now, "echo", 1, now, now)

    return Echo


@contextlib.contextmanager
def local_cluster(num_cpus: int = 2) -> Iterator[str]:
    """A one-node Ray cluster of our own (own temp dir, own ports, 127.0.0.1, no dashboard) with Serve's HTTP
    proxy on 127.0.0.1:HTTP_PORT; stopped on the way out, also on an error or a signal. Every process the
    cluster starts inherits a marker of this cluster alone, and any of them still alive after Ray's own
    shutdown is stopped by its process id; no other process is touched."""
    marker = secrets.token_hex(8)
    os.environ[MARKER] = marker
    os.environ["RAY_AUTH_MODE"] = AUTH_MODE
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["RAY_GCS_SERVER_PORT"] = str(GCS_PORT)
    os.environ["RAY_SERVE_ENABLE_HA_PROXY"] = "0"
    os.environ["RAY_SERVE_ENABLE_DIRECT_INGRESS"] = "0"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    temp_dir = tempfile.mkdtemp(prefix="raycheck-", dir="/tmp")
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}

    def stop_on_signal(signum, frame):
        raise SystemExit(128 + signum)  # unwinds through the finally below

    try:
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            _node_ip_address=HOST,
            _temp_dir=temp_dir,
            log_to_driver=False,
            configure_logging=False,
        )
        # after ray.init, which installs handlers of its own (a SIGTERM would otherwise abort the driver
        # without stopping the cluster)
        for sig in previous:
            signal.signal(sig, stop_on_signal)
        serve.start(http_options={"host": HOST, "port": HTTP_PORT}, logging_config={"log_level": "WARNING"})
        yield f"http://{HOST}:{HTTP_PORT}"
    finally:
        with contextlib.suppress(Exception):
            serve.shutdown()
        with contextlib.suppress(Exception):
            ray.shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stop_leftovers(marker)
        shutil.rmtree(temp_dir, ignore_errors=True)
        os.environ.pop(MARKER, None)


def deploy(app, route: str) -> None:
    serve.run(app.bind(), name=route.strip("/"), route_prefix=route, blocking=False)
