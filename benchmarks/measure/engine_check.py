"""Measure a real LLM engine on this host: its step curve, its capacity, and its latencies under open and closed
loops, for the continuous-batching simulator to be held to (`python -m benchmarks.commands.engine_check`).

`run_check` starts one vLLM server per engine setting (`benchmarks.measure.engine_server`: 127.0.0.1, a free port,
a decoder of random weights), warms each, then in order:

1. the step curve, on the setting with the largest running-sequence cap: decode steps at several batches and
   contexts (the gaps between tokens while every sequence of the batch decodes, none prefilling and none done),
   single prompts of several lengths (time to first token, alone), and decode steps that share a prompt's prefill;
2. per setting and length mix, the capacity: a closed loop of max_num_seqs clients, its requests per second;
3. per setting and mix, Poisson rates (given, or fractions of that capacity) and closed loops of several clients,
   each a load of its own, every repeat of every load interleaved with the others (repeat 1 of all, then 2, ...).

Every request's lengths, send time and every token's arrival go to `<results>/<host>/<id>.json` (the engine-check
contract, `benchmarks.contract.engine_check`), with the engine's gauges from /metrics over each load; the file is
rewritten after every load and whenever the check stops, and the engines are always stopped. Measuring interprets
nothing: the command compares (`benchmarks.analysis.serving.llm.engine_comparison`).

Only the ceilings import torch (before any engine starts); vLLM runs in the servers' own processes.
"""

from __future__ import annotations

import contextlib
import os
import platform
import random
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.contract.results import write_atomic
from benchmarks.measure.engine_client import Gauges, Job, Streamed, closed_loop, open_loop, poisson_offsets
from benchmarks.measure.engine_server import HOST, EngineOptions, EngineServer, raise_priority, write_model
from benchmarks.measure.session import provenance

ROUND = 6  # decimals kept of every time (microseconds)
CAPACITY_ROUNDS = 6  # a capacity run serves this many requests per client at least
MIXED_TOKENS = 400  # a mixed probe's decoders each stream this many tokens, and
MIXED_AFTER_S = 0.3  # its prompt is sent this long after them, while they decode (a step here takes a few ms)
LengthsOf = Callable[[int, int], tuple[list[int], list[int]]]  # (requests, seed) → (prompt lengths, output lengths)


@dataclass(frozen=True)
class EngineSetting:
    name: str
    options: EngineOptions


@dataclass(frozen=True)
class LengthMix:
    name: str
    label: str  # the mix in words, e.g. "prompts 128, outputs 64"
    lengths: LengthsOf


@dataclass(frozen=True)
class StepProbes:
    """What the step curve measures: decode batches at contexts (prompt lengths), tokens each; prompt lengths alone;
    (decoders, prompt) pairs of a prefill sharing steps with decodes; repeats of each."""

    decode_batches: tuple[int, ...]
    contexts: tuple[int, ...]
    decode_tokens: int
    prompts: tuple[int, ...]
    mixed: tuple[tuple[int, int], ...]
    repeats: int


@dataclass(frozen=True)
class CheckPlan:
    model: str  # the registry's name
    config: dict[str, Any]  # the config.json the engine loads
    settings: tuple[EngineSetting, ...]
    mixes: tuple[LengthMix, ...]
    rates: tuple[float, ...] | None  # requests/s; None: rate_fractions of each measured capacity
    rate_fractions: tuple[float, ...]
    concurrencies: tuple[int, ...]
    requests: int  # per load
    repeats: int
    probes: StepProbes | None
    kv_space_gib: int = 1
    # The API server's and the client's nice value: on a host of two cores the engine core's busy-wait for its worker
    # shares their core, and at nice 0 starves them for seconds at a time (None: leave every process at its own).
    nice: int | None = -10
    seed: int = 0
    vocab: int = 1024

    def cases_per_repeat(self) -> int:
        rates = len(self.rates) if self.rates is not None else len(self.rate_fractions)
        return len(self.settings) * len(self.mixes) * (rates + len(self.concurrencies))


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, ROUND)


def _prompt(length: int, rng: random.Random, vocab: int) -> tuple[int, ...]:
    """Random token ids (none special: ids 0–2 are a Llama's bos, eos and pad), so no two prompts share a block."""
    return tuple(rng.randrange(3, vocab) for _ in range(length))


def _jobs(prompts: Sequence[int], outputs: Sequence[int], rng: random.Random, vocab: int) -> list[Job]:
    return [Job(_prompt(p, rng, vocab), o) for p, o in zip(prompts, outputs)]


def record_requests(records: list[Streamed]) -> dict[str, list]:
    """The requests of one load as parallel arrays: lengths, times (seconds from the load's start) and every token's
    arrival after the request was sent."""
    found: dict[str, list] = {k: [] for k in ("prompt_tokens", "output_tokens", "scheduled_s", "sent_s", "token_s",
                                              "error")}  # fmt: skip
    for r in records:
        found["prompt_tokens"].append(r.prompt_tokens)
        found["output_tokens"].append(r.output_tokens)
        found["scheduled_s"].append(_r(r.scheduled_s))
        found["sent_s"].append(_r(r.sent_s if r.sent_s is not None else r.scheduled_s or 0.0))
        sent = r.sent_s or 0.0
        found["token_s"].append([_r(max(t - sent, 0.0)) for t in r.token_s] if r.ok else [])
        found["error"].append(None if r.ok else (r.error or f"{len(r.token_s)} of {r.output_tokens} tokens"))
    return found


def record_gauges(g: Gauges) -> dict[str, list]:
    def clean(values: list[float]) -> list[float | None]:
        return [None if v != v else round(v, 6) for v in values]  # NaN (a gauge missing) as null

    return {"t_s": [_r(t) for t in g.t_s], "running": clean(g.running), "waiting": clean(g.waiting),
            "kv_usage": clean(g.kv_usage), "preemptions": clean(g.preemptions)}  # fmt: skip


def _served_per_s(records: list[Streamed], clients: int) -> float:
    """Requests served per second by a closed loop of `clients`, the check's own estimate to place its Poisson rates:
    past the first round (every client starts at once) each send follows a finish, so the sends from the first
    round's end to the last send, before the loop drains, count the requests served over that time."""
    sends = sorted(r.sent_s for r in records if r.ok and r.sent_s is not None)
    window = sends[clients:]
    if len(window) < 4 or window[-1] <= window[0]:
        return 0.0
    return (len(window) - 1) / (window[-1] - window[0])


class EngineCheckRun:
    """One check's state: its plan, its engines, its document and where it is written."""

    def __init__(self, plan: CheckPlan, python: str, out_dir: Path, command: list[str], work_dir: Path,
                 port: int | None = None):  # fmt: skip
        self.plan, self.python, self.work_dir, self.port = plan, python, work_dir, port
        self.doc = new_document(plan, python, command)
        host_dir = out_dir / self.doc["host"]["slug"]
        self.path = host_dir / f"{self.doc['run']['id']}.json"
        self.log_dir = host_dir / f"{self.doc['run']['id']}.logs"
        self.servers: dict[str, EngineServer] = {}
        self.wall = time.perf_counter()

    def elapsed(self) -> str:
        return f"{time.perf_counter() - self.wall:.0f} s"

    def start_engines(self) -> None:
        model_dir = write_model(self.work_dir / "model", self.plan.config)
        env = {"VLLM_CPU_KVCACHE_SPACE": str(self.plan.kv_space_gib)}
        for index, setting in enumerate(self.plan.settings):
            port = self.port + index if self.port is not None else None
            server = EngineServer(self.python, model_dir, self.plan.model, setting.options,
                                  self.log_dir / f"{setting.name}.log", port=port, env=env,
                                  api_nice=self.plan.nice)  # fmt: skip
            self.servers[setting.name] = server
            say(f"  starting engine {setting.name} ({' '.join(setting.options.arguments())})")
            server.start()
            entry = {"name": setting.name, **setting.options.__dict__, "port": server.port,
                     "startup_s": round(server.started_s, 3), "cache": cache_info(server.metrics()),
                     "api_nice": server.api_nice,
                     "log": str(server.log_path.relative_to(self.path.parent))}  # fmt: skip
            self.doc["settings"].append(entry)
            say(f"  engine {setting.name} healthy on {HOST}:{server.port} after {server.started_s:.0f} s "
                f"({entry['cache']['blocks']} KV blocks of {entry['cache']['block_size']})")  # fmt: skip
            self._warm(setting)

    def _warm(self, setting: EngineSetting) -> None:
        """A few requests of every mix at full concurrency, and every probe's prompt length: the engine compiles
        each new shape on first use. Not recorded."""
        server, rng = self.servers[setting.name], random.Random(7)
        cap = setting.options.max_num_seqs
        for mix in self.plan.mixes:
            prompts, outputs = mix.lengths(2 * cap, 99)
            closed_loop(HOST, server.port, self.plan.model, _jobs(prompts, [min(o, 8) for o in outputs], rng,
                                                                  self.plan.vocab), cap)  # fmt: skip
        for length in self.plan.probes.prompts if self.plan.probes else ():
            closed_loop(HOST, server.port, self.plan.model, _jobs([length], [2], rng, self.plan.vocab), 1)

    def write(self) -> None:
        write_atomic(self.path, self.doc)

    def check_alive(self, setting: EngineSetting) -> None:
        server = self.servers[setting.name]
        if not server.alive():
            from benchmarks.measure.engine_server import EngineRefused

            raise EngineRefused(f"engine {setting.name} stopped during the check: {server.last_log_line()}")

    def probe_steps(self) -> None:
        """The step curve, on the setting with the largest cap (chunked prefill on where one has it)."""
        probes = self.plan.probes
        setting = max(self.plan.settings, key=lambda s: (s.options.max_num_seqs, s.options.chunked_prefill))
        server, model, vocab = self.servers[setting.name], self.plan.model, self.plan.vocab
        rng = random.Random(self.plan.seed + 11)
        curve: dict[str, Any] = {"setting": setting.name, "decode": [], "prefill": [], "mixed": []}
        for repeat in range(1, probes.repeats + 1):
            for context in probes.contexts:
                for batch in (b for b in probes.decode_batches if b <= setting.options.max_num_seqs):
                    jobs = _jobs([context] * batch, [probes.decode_tokens] * batch, rng, vocab)
                    records, _ = closed_loop(HOST, server.port, model, jobs, batch)
                    curve["decode"].append({"batch": batch, "prompt_tokens": context, "repeat": repeat,
                                            "requests": record_requests(records)})  # fmt: skip
            for length in probes.prompts:
                records, _ = closed_loop(HOST, server.port, model, _jobs([length], [2], rng, vocab), 1)
                curve["prefill"].append({"prompt_tokens": length, "repeat": repeat,
                                         "requests": record_requests(records)})  # fmt: skip
            for decoders, length in probes.mixed:
                jobs = _jobs([16] * decoders, [MIXED_TOKENS] * decoders, rng, vocab)
                late = _jobs([length], [2], rng, vocab)
                offsets = [0.0] * decoders + [MIXED_AFTER_S]  # the prompt lands while the others decode
                records, _ = open_loop(HOST, server.port, model, jobs + late, offsets)
                curve["mixed"].append({"decoders": decoders, "prompt_tokens": length, "repeat": repeat,
                                       "requests": record_requests(records)})  # fmt: skip
            self.check_alive(setting)
            say(f"  step curve, repeat {repeat}/{probes.repeats} ({self.elapsed()})")
        self.doc["step_curve"] = curve
        self.write()

    def measure_capacity(self, setting: EngineSetting, mix: LengthMix) -> float:
        cap = setting.options.max_num_seqs
        n = max(self.plan.requests, CAPACITY_ROUNDS * cap)
        seed = self.plan.seed + 1000 + len(self.doc["loads"])
        prompts, outputs = mix.lengths(n, seed)
        rng = random.Random(seed)
        records, gauges = closed_loop(HOST, self.servers[setting.name].port, self.plan.model,
                                      _jobs(prompts, outputs, rng, self.plan.vocab), cap)  # fmt: skip
        self._add_load(setting, mix, "capacity", None, cap, 0, seed, records, gauges)
        return _served_per_s(records, cap)

    def measure_load(self, setting, mix, kind, rate, clients, repeat) -> None:
        seed = self.plan.seed + 1000 + len(self.doc["loads"])
        n = self.plan.requests if kind == "poisson" else max(self.plan.requests, 4 * clients)
        prompts, outputs = mix.lengths(n, seed)
        rng = random.Random(seed)
        jobs = _jobs(prompts, outputs, rng, self.plan.vocab)
        port = self.servers[setting.name].port
        if kind == "poisson":
            records, gauges = open_loop(HOST, port, self.plan.model, jobs, poisson_offsets(rate, n, rng))
        else:
            records, gauges = closed_loop(HOST, port, self.plan.model, jobs, clients)
        self._add_load(setting, mix, kind, rate, clients, repeat, seed, records, gauges)

    def _add_load(self, setting, mix, kind, rate, clients, repeat, seed, records, gauges) -> None:
        what = f"{rate:.4g}/s" if rate is not None else f"{clients} clients"
        name = f"{setting.name}.{mix.name}.{kind}-{what.replace('/s', 'ps').replace(' clients', 'c')}.rep{repeat}"
        requests = record_requests(records)
        failed = sum(e is not None for e in requests["error"])
        self.doc["loads"].append({
            "name": name, "setting": setting.name, "mix": mix.name, "load": kind,
            "rate_per_s": None if rate is None else round(rate, 6), "concurrency": clients, "repeat": repeat,
            "seed": seed, "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "failed": failed,
            "errors": list(dict.fromkeys(e for e in requests["error"] if e))[:10],
            "requests": requests, "gauges": record_gauges(gauges),
        })  # fmt: skip
        self.check_alive(setting)
        self.write()
        say(f"  {name}: {len(records)} requests, {failed} failed ({self.elapsed()})")

    def stop_engines(self) -> list[int]:
        left = []
        for server in self.servers.values():
            left += server.stop()
        return left


def run_check(plan: CheckPlan, python: str, out_dir: Path, command: list[str], work_dir: Path,
              port: int | None = None) -> Path:  # fmt: skip
    """Measure everything the plan names (see the module's docstring); the path of the file written."""
    check = EngineCheckRun(plan, python, out_dir, command, work_dir, port)
    doc = check.doc
    say(f"engine check: {len(plan.settings)} engine settings, {plan.repeats} × {plan.cases_per_repeat()} loads, "
        f"writing {check.path}")  # fmt: skip
    try:
        doc["ceilings"] = measure_ceilings_here()
        check.start_engines()
        if plan.nice is not None:
            doc["engine"]["client_nice"] = raise_priority(os.getpid(), plan.nice)
        if plan.probes is not None:
            check.probe_steps()
        capacity = {}
        for setting in plan.settings:
            for mix in plan.mixes:
                capacity[setting.name, mix.name] = check.measure_capacity(setting, mix)
                say(f"  capacity of {setting.name} on {mix.name}: {capacity[setting.name, mix.name]:.2f} requests/s")
        for repeat in range(1, plan.repeats + 1):
            for setting in plan.settings:
                for mix in plan.mixes:
                    rates = plan.rates or tuple(f * capacity[setting.name, mix.name] for f in plan.rate_fractions)
                    for rate in rates:
                        check.measure_load(setting, mix, "poisson", rate, None, repeat)
                    for clients in plan.concurrencies:
                        check.measure_load(setting, mix, "closed", None, clients, repeat)
        doc["run"]["complete"] = True
    except BaseException as exc:
        doc["run"]["interrupted"] = f"{type(exc).__name__}: {exc}"[:500]
        raise
    finally:
        left = check.stop_engines()
        doc["run"]["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        doc["run"]["wall_s"] = round(time.perf_counter() - check.wall, 3)
        doc["host"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        if doc["settings"]:
            check.write()
        say(f"  engines stopped{f'; {len(left)} processes could not be' if left else ''}")
    say(f"engine check done in {doc['run']['wall_s']:.0f} s: {check.path}")
    return check.path


def cache_info(metrics_text: str) -> dict[str, int | None]:
    """The KV pool the engine made, from its /metrics page (vllm:cache_config_info's labels)."""
    found: dict[str, int | None] = {"blocks": None, "block_size": None}
    for line in metrics_text.splitlines():
        if line.startswith("vllm:cache_config_info{"):
            labels = dict(part.split("=", 1) for part in line[line.index("{") + 1 : line.rindex("}")].split('",'))
            for key, label in (("blocks", "num_gpu_blocks"), ("block_size", "block_size")):
                value = labels.get(label, "").strip('"')
                found[key] = int(value) if value.isdigit() else None
    return found


def engine_version(python: str) -> str:
    """vLLM's version in the engine's Python, or one line on why there is none."""
    done = subprocess.run([python, "-c", "import vllm; print(vllm.__version__)"], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        from benchmarks.measure.engine_server import EngineRefused

        raise EngineRefused(f"vLLM does not import in {python}: {last[:200]}")
    return done.stdout.strip().splitlines()[-1]


def measure_ceilings_here() -> dict[str, Any]:
    """This CPU's copy bandwidth and bfloat16 and float32 matmul rates on one thread (the engine's worker runs one),
    measured before any engine starts, for the forecast of the engine's steps."""
    from benchmarks.measure.backends import CpuBackend
    from benchmarks.measure.ceilings import measure_ceilings

    backend = CpuBackend(threads=1)
    found = measure_ceilings(backend, ["bfloat16", "float32"], rounds=5, min_sample_s=0.02, ceilings_only=True)
    return {"threads": backend.threads, "copy": found["copy"], "matmul": found["matmul"]}


def host_info() -> dict[str, Any]:
    from benchmarks.measure.fingerprint import cpu_model, device_slug

    cpu = cpu_model()
    torch_version = None
    with contextlib.suppress(ImportError):
        import torch

        torch_version = torch.__version__
    return {
        "name": cpu or platform.machine(),
        "slug": "cpu-" + device_slug(cpu or platform.machine()),
        "cpu_model": cpu,
        "cpus": os.cpu_count() or 1,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch_version,
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


def new_document(plan: CheckPlan, python: str, command: list[str]) -> dict[str, Any]:
    started = datetime.now(timezone.utc)
    commit, dirty = provenance()
    return {
        "schema_version": 1,
        "kind": "engine-check",
        "run": {
            "id": f"{started:%Y%m%dT%H%M%SZ}-engine-{secrets.token_hex(3)}",
            "started_at": started.isoformat(timespec="seconds"),
            "finished_at": None,
            "complete": False,
            "interrupted": None,
            "command": command,
            "git_commit": commit,
            "git_dirty": dirty,
        },
        "host": host_info(),
        "engine": {
            "name": "vLLM",
            "version": engine_version(python),
            "device": "cpu",
            "api": f"OpenAI-compatible /v1/completions, streamed, on {HOST}",
            "model": plan.model,
            "model_config": plan.config,
            "kv_space_gib": plan.kv_space_gib,
            "prefix_caching": False,
        },
        "mixes": [{"name": m.name, "label": m.label} for m in plan.mixes],
        "ceilings": None,
        "settings": [],
        "step_curve": None,
        "loads": [],
    }
