"""A streaming load client for an LLM engine's OpenAI-compatible server: open-loop Poisson arrivals or closed loops
of N clients, every token's arrival time kept, and the server's own gauges read from /metrics meanwhile.

Pure standard library (asyncio and raw HTTP/1.1 over 127.0.0.1, one connection per request), so that it runs beside
any engine build, costs the two-core host little (a chunk's tokens are counted without parsing its JSON) and can be
tested against a stand-in server. Prompts are lists of token ids (the engine runs without a tokenizer) and every
request asks for exactly its output length (`ignore_eos`), so the lengths the client sends are the lengths served.

Why not an existing client: vLLM's `vllm bench serve`, GuideLLM and AIPerf each need a tokenizer (or a model's
files) to make prompts and count tokens, and this check runs on random weights with no tokenizer; they also report
summaries, where the simulator's comparison needs every request's arrival, first token and last token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from benchmarks.contract.text import printable

TOKEN_IDS = re.compile(rb'"token_ids":\s*\[([0-9, ]*)\]')
METRIC = re.compile(r"^(vllm:[a-z_]+)(?:\{[^}]*\})?\s+([-+0-9.eE]+|NaN|nan)\s*$")
GAUGES = {  # /metrics name → what the record calls it
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:kv_cache_usage_perc": "kv_usage",
    "vllm:num_preemptions_total": "preemptions",
}


@dataclass(frozen=True)
class Job:
    """One request to send: its prompt (token ids) and how many tokens it asks for."""

    prompt: tuple[int, ...]
    max_tokens: int


@dataclass
class Streamed:
    """What happened to one request, in seconds from the start of the load."""

    prompt_tokens: int
    output_tokens: int  # asked for
    scheduled_s: float | None  # the open-loop schedule's time; None in a closed loop
    sent_s: float | None = None
    token_s: list[float] = field(default_factory=list)  # the arrival of every token (a chunk's tokens share one)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and len(self.token_s) == self.output_tokens


@dataclass
class Gauges:
    """The engine's gauges over the load, one sample a `period`."""

    t_s: list[float] = field(default_factory=list)
    running: list[float] = field(default_factory=list)
    waiting: list[float] = field(default_factory=list)
    kv_usage: list[float] = field(default_factory=list)
    preemptions: list[float] = field(default_factory=list)


class ServerError(RuntimeError):
    """The server answered a request with an error (the message names the status)."""


def parse_metrics(text: str) -> dict[str, float]:
    """The gauges of GAUGES from a Prometheus text page (summed over label sets)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        m = METRIC.match(line)
        if m and m.group(1) in GAUGES:
            key = GAUGES[m.group(1)]
            found[key] = found.get(key, 0.0) + float(m.group(2))
    return found


async def _request(host: str, port: int, method: str, path: str, body: bytes, timeout_s: float):
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    head = (f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")  # fmt: skip
    writer.write(head.encode() + body)
    await writer.drain()
    raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout_s)
    status_line, *headers = raw.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    chunked = any(h.lower().replace(" ", "") == "transfer-encoding:chunked" for h in headers)
    return reader, writer, status, chunked


async def _body_pieces(reader: asyncio.StreamReader, chunked: bool, timeout_s: float):
    """The body as it arrives, de-chunked."""
    if not chunked:
        while piece := await asyncio.wait_for(reader.read(65536), timeout_s):
            yield piece
        return
    while True:
        size_line = await asyncio.wait_for(reader.readuntil(b"\r\n"), timeout_s)
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            return
        data = await asyncio.wait_for(reader.readexactly(size + 2), timeout_s)
        yield data[:-2]


async def fetch_text(host: str, port: int, path: str, timeout_s: float = 5.0) -> tuple[int, str]:
    """GET `path`: (status, body)."""
    reader, writer, status, chunked = await _request(host, port, "GET", path, b"", timeout_s)
    try:
        body = b"".join([p async for p in _body_pieces(reader, chunked, timeout_s)])
    finally:
        writer.close()
    return status, body.decode("utf-8", "replace")


async def stream_one(host: str, port: int, model: str, job: Job, record: Streamed, start: float,
                     timeout_s: float) -> None:  # fmt: skip
    """Send one streaming completion and note every token's arrival in `record` (offsets from `start`, a
    time.perf_counter() reading)."""
    body = json.dumps({
        "model": model, "prompt": list(job.prompt), "max_tokens": job.max_tokens, "stream": True,
        "ignore_eos": True, "detokenize": False, "return_token_ids": True, "temperature": 0.0,
    }).encode()  # fmt: skip
    record.sent_s = time.perf_counter() - start
    try:
        reader, writer, status, chunked = await _request(host, port, "POST", "/v1/completions", body, timeout_s)
        try:
            if status != 200:
                text = b"".join([p async for p in _body_pieces(reader, chunked, timeout_s)])
                raise ServerError(f"HTTP {status}: {text[:160].decode('utf-8', 'replace')}")
            pending = b""
            async for piece in _body_pieces(reader, chunked, timeout_s):
                now = time.perf_counter() - start
                pending += piece
                *events, pending = pending.split(b"\n\n")
                for event in events:
                    if b'"error"' in event and b'"choices"' not in event:
                        raise ServerError(event[:200].decode("utf-8", "replace"))
                    for m in TOKEN_IDS.finditer(event):
                        ids = m.group(1).strip()
                        if ids:  # (the prompt's echo is "prompt_token_ids", which the pattern's quote rules out)
                            record.token_s.extend([now] * (ids.count(b",") + 1))
        finally:
            writer.close()
        if len(record.token_s) != job.max_tokens:
            raise ServerError(f"streamed {len(record.token_s)} tokens, asked for {job.max_tokens}")
    except (OSError, ValueError, ServerError, asyncio.TimeoutError, asyncio.IncompleteReadError) as exc:
        record.error = printable(f"{type(exc).__name__}: {exc}")[:200]


async def _watch(host: str, port: int, start: float, period_s: float, gauges: Gauges, stop: asyncio.Event) -> None:
    await asyncio.sleep(max(0.0, start - time.perf_counter()))  # no sample before the load's start
    while not stop.is_set():
        try:
            status, text = await fetch_text(host, port, "/metrics", timeout_s=2.0)
            found = parse_metrics(text) if status == 200 else {}
        except (OSError, ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            found = {}
        if found:
            gauges.t_s.append(time.perf_counter() - start)
            for key in ("running", "waiting", "kv_usage", "preemptions"):
                getattr(gauges, key).append(found.get(key, float("nan")))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), period_s)


async def _open_loop(host, port, model, jobs, offsets, timeout_s, period_s):
    start = time.perf_counter() + 0.05
    records = [Streamed(len(j.prompt), j.max_tokens, t) for j, t in zip(jobs, offsets)]
    gauges, stop = Gauges(), asyncio.Event()
    watcher = asyncio.create_task(_watch(host, port, start, period_s, gauges, stop))

    async def one(job: Job, record: Streamed) -> None:
        delay = start + record.scheduled_s - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await stream_one(host, port, model, job, record, start, timeout_s)

    try:
        await asyncio.gather(*(one(j, r) for j, r in zip(jobs, records)))
    finally:
        stop.set()
        await watcher
    return records, gauges


async def _closed_loop(host, port, model, jobs, clients, timeout_s, period_s):
    start = time.perf_counter()
    records: list[Streamed] = []
    queue = iter(jobs)
    gauges, stop = Gauges(), asyncio.Event()
    watcher = asyncio.create_task(_watch(host, port, start, period_s, gauges, stop))

    async def client() -> None:
        for job in queue:
            record = Streamed(len(job.prompt), job.max_tokens, None)
            records.append(record)
            await stream_one(host, port, model, job, record, start, timeout_s)

    try:
        await asyncio.gather(*(client() for _ in range(clients)))
    finally:
        stop.set()
        await watcher
    return records, gauges


def open_loop(host: str, port: int, model: str, jobs: Sequence[Job], offsets: Sequence[float], *,
              timeout_s: float = 120.0, period_s: float = 0.25) -> tuple[list[Streamed], Gauges]:  # fmt: skip
    """Send `jobs[i]` at `offsets[i]` seconds, whatever the server does (open loop), streaming every answer."""
    if len(jobs) != len(offsets):
        raise ValueError("one offset per job")
    return asyncio.run(_open_loop(host, port, model, list(jobs), list(offsets), timeout_s, period_s))


def closed_loop(host: str, port: int, model: str, jobs: Iterable[Job], clients: int, *, timeout_s: float = 120.0,
                period_s: float = 0.25) -> tuple[list[Streamed], Gauges]:  # fmt: skip
    """`clients` clients, each sending the next of `jobs` as soon as its last answer ended, until none are left.
    Records are in the order requests were sent."""
    if clients < 1:
        raise ValueError("at least one client")
    return asyncio.run(_closed_loop(host, port, model, list(jobs), clients, timeout_s, period_s))


def poisson_offsets(rate_per_s: float, count: int, rng) -> list[float]:
    """`count` Poisson arrival times at `rate_per_s` (`rng`: a random.Random)."""
    offsets, now = [], 0.0
    for _ in range(count):
        now += rng.expovariate(rate_per_s)
        offsets.append(now)
    return offsets
