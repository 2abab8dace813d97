"""An open-loop Poisson client for the real-server check: requests leave on a schedule, whatever the server does.

Pure standard library (asyncio and raw HTTP/1.1 over 127.0.0.1, one connection per request, so a slow
answer never holds back the next request). It stops by itself: after `count` requests or `duration_s`
seconds of sending, and it waits at most `timeout_s` for each answer.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from benchmarks.contract.text import printable


@dataclass
class Sent:
    scheduled_s: float  # offset from the start of sending
    sent_s: float | None = None  # when the connection was opened (offset)
    latency_s: float | None = None  # sent to the last byte of the answer; None if it failed
    answer: dict[str, Any] | None = None
    error: str | None = None


@dataclass
class Load:
    started: float  # host clock (time.time()) at offset 0
    requests: list[Sent] = field(default_factory=list)


def poisson_schedule(rate_per_s: float, count: int, duration_s: float, seed: int) -> list[float]:
    """Offsets of Poisson arrivals at `rate_per_s`, at most `count` of them and none after `duration_s`."""
    rng = random.Random(seed)
    offsets, now = [], 0.0
    while len(offsets) < count:
        now += rng.expovariate(rate_per_s)
        if now > duration_s:
            break
        offsets.append(now)
    return offsets


async def _get(host: str, port: int, path: str, timeout_s: float) -> dict[str, Any]:
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout_s)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].decode("latin-1")
    if " 200 " not in f"{status} ":
        raise RuntimeError(f"answered {status!r}")
    if b"transfer-encoding: chunked" in head.lower():
        body = _unchunk(body)
    return json.loads(body)


def _unchunk(body: bytes) -> bytes:
    """The payload of a chunked HTTP/1.1 body."""
    out, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


async def _drive(url: str, schedule: list[float], timeout_s: float) -> Load:
    parts = urlsplit(url)
    host, port, path = parts.hostname, parts.port, parts.path or "/"
    load = Load(started=time.time() + 0.05)
    load.requests = [Sent(offset) for offset in schedule]

    async def one(item: Sent) -> None:
        delay = load.started + item.scheduled_s - time.time()
        if delay > 0:
            await asyncio.sleep(delay)
        sent = time.time()
        item.sent_s = sent - load.started
        try:
            item.answer = await _get(host, port, path, timeout_s)
            item.latency_s = time.time() - sent
        except (OSError, RuntimeError, ValueError, asyncio.TimeoutError) as exc:
            item.error = printable(f"{type(exc).__name__}: {exc}")[:200]

    await asyncio.gather(*(one(item) for item in load.requests))
    return load


def drive(url: str, schedule: list[float], timeout_s: float = 10.0) -> Load:
    """Send one GET to `url` at each offset of `schedule` (seconds) and collect the answers."""
    return asyncio.run(_drive(url, schedule, timeout_s))
