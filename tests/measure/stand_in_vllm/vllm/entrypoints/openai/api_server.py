"""SYNTHETIC: a stand-in for vLLM's OpenAI server, for the engine check's tests (never measured, never published).

It takes the real server's arguments, answers /health and /metrics as vLLM does and streams /v1/completions one token
a step, every running request advancing together: a step takes STEP_S + PER_SEQUENCE_S × running. What it does
wrong on purpose is set by STAND_IN_MODE: `exit` (a configuration error before listening), `never-healthy` (listens
to nothing), `die-after:N` (the process ends once N requests have finished).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time

STEP_S, PER_SEQUENCE_S, REQUEST_S = 0.002, 0.0002, 0.003
state = {"running": 0, "waiting": 0, "finished": 0, "kv": 0.0}


def arguments() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--max-num-seqs", type=int, default=8)
    p.add_argument("--served-model-name")
    args, _ = p.parse_known_args()
    return args


def metrics(args) -> str:
    return (
        f'vllm:cache_config_info{{block_size="16",num_gpu_blocks="512",engine="0"}} 1.0\n'
        f'vllm:num_requests_running{{engine="0"}} {state["running"]}\n'
        f'vllm:num_requests_waiting{{engine="0"}} {state["waiting"]}\n'
        f'vllm:kv_cache_usage_perc{{engine="0"}} {state["kv"]}\n'
        f'vllm:num_preemptions_total{{engine="0"}} 0.0\n'
    )


async def respond(writer, status: int, body: bytes, content_type: str = "text/plain") -> None:
    writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + body)  # fmt: skip
    await writer.drain()


async def stream(writer, request: dict, slots: asyncio.Semaphore, die_after: int | None) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                 b"Connection: close\r\n\r\n")  # fmt: skip
    state["waiting"] += 1
    async with slots:
        state["waiting"] -= 1
        state["running"] += 1
        await asyncio.sleep(REQUEST_S + STEP_S * max(1, len(request["prompt"]) / 256))
        for i in range(request["max_tokens"]):
            if i:
                await asyncio.sleep(STEP_S + PER_SEQUENCE_S * state["running"])
            event = json.dumps({"choices": [{"index": 0, "text": "", "token_ids": [7]}]}, separators=(",", ":"))
            data = f"data: {event}\n\n".encode()
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
        state["running"] -= 1
    done = b"data: [DONE]\n\n"
    writer.write(f"{len(done):x}\r\n".encode() + done + b"\r\n0\r\n\r\n")
    await writer.drain()
    state["finished"] += 1
    if die_after is not None and state["finished"] >= die_after:
        os._exit(3)


async def main() -> None:
    args = arguments()
    mode = os.environ.get("STAND_IN_MODE", "")
    print(f"stand-in vLLM server on {args.host}:{args.port}, mode {mode or 'healthy'}", flush=True)
    if mode == "exit":
        print("ValueError: Value error, max_num_batched_tokens is smaller than max_model_len", flush=True)
        print("    For further information visit https://errors.pydantic.dev/2.14/v/value_error", flush=True)
        sys.exit(1)
    if mode == "never-healthy":
        await asyncio.sleep(3600)
    die_after = int(mode.split(":")[1]) if mode.startswith("die-after:") else None
    slots = asyncio.Semaphore(args.max_num_seqs)

    async def handle(reader, writer) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            method, path = head.split(" ")[:2]
            length = int(m.group(1)) if (m := re.search(r"Content-Length: (\d+)", head, re.I)) else 0
            body = await reader.readexactly(length) if length else b""
            if path == "/health":
                await respond(writer, 200, b"")
            elif path == "/metrics":
                await respond(writer, 200, metrics(args).encode())
            elif path == "/v1/completions" and method == "POST":
                await stream(writer, json.loads(body), slots, die_after)
            else:
                await respond(writer, 404, b"not found")
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, args.host, args.port)
    started = time.monotonic()
    async with server:
        while time.monotonic() - started < 3600:
            await asyncio.sleep(1)


if __name__ == "__main__":
    asyncio.run(main())
