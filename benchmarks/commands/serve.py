"""`python -m benchmarks serve SOURCE`: plan a dynamic-batching server from a batch curve.

SOURCE is where the batch times come from:

- a model sweep file (`python -m benchmarks sweep` wrote it): every batch it measured, with its samples;
- `RUN.json:WORKLOAD`: one curve of a profile run (narrowed with --param, --dtype, --mode when several match);
- `WORKLOAD` with `--gpu NAME`: the roofline of a workload on a datasheet GPU (`predict`'s machinery), no spread;
- `llm:MODEL`: an LLM engine's continuous batching, planned by `benchmarks.commands.serve_llm` when this build has it.

Given the rate(s) and a latency budget at a percentile, it simulates every candidate policy (max batch, max delay,
instances) under the chosen server's batching rule and recommends the one that meets the budget with the fewest
instances and the most headroom, then explains it in one paragraph. Nothing is measured; pure Python.

Every refusal is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from benchmarks.analysis.arrivals import TraceError, trace_arrivals
from benchmarks.analysis.dynamic_batching import HANDLERS, SERVERS
from benchmarks.analysis.service_curves import ServiceSource, SourceError, from_prediction, from_run, from_sweep
from benchmarks.analysis.serving_policy import (
    MIN_BATCHES,
    SEARCH_REQUESTS,
    Arrivals,
    Plan,
    explain,
    ms,
    pct,
    per_s,
    search,
    summary,
)
from benchmarks.commands.choices import Refused, dtype_named, gpu_named, workload_params
from benchmarks.contract.results import ResultsError, Run, read_document
from benchmarks.contract.text import printable, printable_lines
from benchmarks.workloads import WORKLOADS

PERCENTILES = (50, 90, 95, 99, 99.9)
MAX_RATES = 20
MAX_INSTANCES = 64
EPILOG = """examples:
  python -m benchmarks serve benchmarks/sweeps/DEVICE/SWEEP.json --rate 20,60 --budget-ms 100
  python -m benchmarks serve benchmarks/results/cpu-amd-epyc/RUN.json:mlp --param width=1024 --rate 100 --budget-ms 50
  python -m benchmarks serve resnet50 --gpu "H100 SXM" --dtype fp16 --rate 20000 --budget-ms 15 --instances 2
  python -m benchmarks serve SWEEP.json --rate 30 --budget-ms 200 --server ray --handler awaiting --arrivals gamma:2

servers and their batching rules:
  triton      a batch leaves when it holds max batch requests or its oldest request has waited max delay
              (max_queue_delay_microseconds), and only when an instance is free
  torchserve  a free worker takes the first request, then collects until batch_size or max_batch_delay
  ray         @serve.batch: the wait (batch_wait_timeout_s) starts when the batcher takes the first request;
              --handler blocking (a synchronous forward pass) lets the next batch fill while one runs;
              --handler awaiting (an async handler) closes each batch max delay after its first request
  none        no batching"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        raise Refused(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m benchmarks serve",
        description="Plan a dynamic-batching server from a batch curve: the max batch, max delay and instances that "
        "keep a latency percentile within a budget at the rates given, how much more traffic each sustains, and why. "
        "Simulated from the curve's measured (or predicted) times under the server's own batching rule; nothing is "
        "measured.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("source", metavar="SOURCE", help="SWEEP.json, RUN.json:WORKLOAD, WORKLOAD (with --gpu) or llm:MODEL")
    p.add_argument("--rate", metavar="R[,R...]", help="requests per second (a trace's own rate when left out)")
    p.add_argument("--budget-ms", metavar="MS", required=True, help="latency budget in milliseconds")
    p.add_argument("--percentile", metavar="P", default="99", help="which latency percentile the budget bounds "
                   f"({', '.join(f'{q:g}' for q in PERCENTILES)}; default 99)")  # fmt: skip
    p.add_argument("--server", default="triton", metavar="NAME", help=f"{', '.join(SERVERS)} (default triton)")
    p.add_argument("--handler", default="blocking", metavar="KIND", help="Ray only: blocking (default) or awaiting")
    p.add_argument("--instances", default="1", metavar="N", help="most model instances (replicas, workers) to use")
    p.add_argument("--arrivals", default="poisson", metavar="KIND", help="poisson (default), gamma:CV or trace:FILE")
    p.add_argument("--overhead-ms", default="0", metavar="MS", help="the server's fixed cost per request, outside "
                   "the batcher (default 0)")  # fmt: skip
    p.add_argument("--gpu", metavar="NAME", help='with a WORKLOAD source: a datasheet GPU, e.g. "H100 SXM"')
    p.add_argument("--dtype", metavar="DTYPE", help="with --gpu (required) or a run's curve: the dtype")
    p.add_argument("--mode", metavar="MODE", help="with a run's curve: the mode measured (eager, graph, compile)")
    p.add_argument("--cache", metavar="STATE", help="with a run's curve: the cache state (rotated, resident)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a workload parameter")
    p.add_argument("--max-batch", metavar="B", help="the largest max batch to try (default: the curve's largest "
                   "measured batch; with --gpu, 256)")  # fmt: skip
    p.add_argument("--requests", default=str(SEARCH_REQUESTS), metavar="N", help="requests per simulation while "
                   f"searching (default {SEARCH_REQUESTS:,}, and at least {MIN_BATCHES} times the max batch; the "
                   "policy chosen is checked with five times as many)")  # fmt: skip
    p.add_argument("--seed", default="0", metavar="N", help="random seed (default 0): same seed, same answer")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return p


# --------------------------------------------------------------------------- reading the request


def _number(flag: str, text: str, low: float, high: float, *, whole: bool = False) -> float:
    kind = "a whole number" if whole else "a number"
    try:
        if not text.isascii():
            raise ValueError(text)
        value = int(text) if whole else float(text)
    except ValueError:
        raise Refused(f"{flag} {text!r}: must be {kind}") from None
    if not (math.isfinite(value) and low <= value <= high):
        raise Refused(f"{flag} {text!r}: must be {kind} from {low:g} to {high:g}")
    return value


def parse_rates(text: str | None) -> list[float] | None:
    if text is None:
        return None
    parts = [part.strip() for part in text.split(",")]
    if len(parts) > MAX_RATES:
        raise Refused(f"--rate: at most {MAX_RATES} rates")
    rates = sorted({_number("--rate", part, 1e-6, 1e9) for part in parts})
    if any(r <= 0 for r in rates):
        raise Refused(f"--rate {text!r}: rates must be above 0 requests per second")
    return rates


def parse_arrivals(text: str) -> Arrivals:
    kind, _, value = text.partition(":")
    kind = kind.strip().lower()
    if kind == "poisson" and not value:
        return Arrivals()
    if kind == "gamma":
        cv = _number("--arrivals gamma:CV", value.strip(), 0.05, 20)
        return Arrivals("gamma", cv=cv)
    if kind == "trace" and value.strip():
        try:
            times = trace_arrivals(value.strip())
            return Arrivals.from_trace(times, value.strip())
        except (TraceError, ValueError) as exc:
            raise Refused(str(exc)) from None
    raise Refused(f"--arrivals {text!r}: give poisson, gamma:CV (e.g. gamma:2) or trace:FILE")


def load_source(args: argparse.Namespace) -> ServiceSource:
    source = args.source.strip()
    try:
        if args.gpu is not None:
            workload = source.lower()
            if workload not in WORKLOADS:
                raise Refused(f"with --gpu, SOURCE is a workload: one of {', '.join(WORKLOADS)}, not {source!r}")
            gpu, _ = gpu_named(args.gpu)
            if args.dtype is None:
                raise Refused("with --gpu, give --dtype (e.g. fp16)")
            params = workload_params(WORKLOADS[workload], args.param)
            top = int(_number("--max-batch", args.max_batch or "256", 1, 4096, whole=True))
            return from_prediction(workload, params, gpu, dtype_named(args.dtype), top)
        path_text, colon, workload = source.rpartition(":")
        if colon and path_text.lower().endswith(".json"):
            document = read_document(Path(path_text), layout=False)
            if not isinstance(document, Run):
                raise Refused(f"{path_text}: is a model sweep; give it without :{workload}")
            if workload not in WORKLOADS:
                raise Refused(f"{source}: unknown workload {workload!r}; choose from {', '.join(WORKLOADS)}")
            dtype = dtype_named(args.dtype) if args.dtype else None
            params = workload_params(WORKLOADS[workload], args.param, complete=False)
            return from_run(document, workload, params, dtype, args.mode, args.cache)
        if source.lower().endswith(".json"):
            if args.param or args.dtype or args.mode or args.cache:
                raise Refused(
                    "--param, --dtype, --mode and --cache choose a run's curve (RUN.json:WORKLOAD) or a prediction"
                )
            document = read_document(Path(source), layout=False)
            if isinstance(document, Run):
                have = ", ".join(sorted({r["workload"] for r in document.records})) or "nothing"
                raise Refused(f"{source}: is a profile run; name one of its curves as {source}:WORKLOAD ({have})")
            return from_sweep(document)
    except (ResultsError, SourceError) as exc:
        raise Refused(str(exc)) from None
    raise Refused(
        f"SOURCE {source!r}: give a sweep file (.json), RUN.json:WORKLOAD, a workload with --gpu NAME, or llm:MODEL"
    )


# --------------------------------------------------------------------------- the answer


def text_lines(source: ServiceSource, plan: Plan) -> list[str]:
    lines = [
        f"Serving {source.label}",
        f"  batch times from {source.provenance}",
        f"  {plan.arrivals.describe()}; {pct(plan.percentile)} budget {ms(plan.budget_s)}; "
        f"{len(plan.tried)} policies simulated",
        "",
    ]
    if plan.chosen is not None:
        policy = plan.chosen.policy
        lines.append(f"Recommended: {policy.describe()}")
        header = f"  {'rate':>10}  {'p50':>9}  {'p90':>9}  {'p99':>9}  {'p99.9':>9}  {'batch':>6}  {'busy':>5}"
        lines.append(header)
        for found in plan.checked:
            r = found.result
            cells = [f"{ms(r.percentile(q)):>9}" for q in (50, 90, 99, 99.9)]
            lines.append(f"  {per_s(found.rate):>10}  {'  '.join(cells)}  {r.mean_batch:>6.1f}  {r.utilisation:>5.0%}")
        for found in plan.checked:
            hist = found.result.batch_histogram()
            total = sum(hist.values())
            shares = ", ".join(f"{size}: {count / total:.0%}" for size, count in sorted(hist.items())[:12])
            lines.append(f"  batches formed at {per_s(found.rate)}: {shares}{' …' if len(hist) > 12 else ''}")
        shortlist = [c for c in plan.tried if c.capacity is not None]
        if len(shortlist) > 1:
            lines.append("  shortlist (within the budget, lowest latency first), capacity within the budget:")
            for c in sorted(shortlist, key=lambda c: c.worst_s):
                lines.append(f"    {c.policy.describe()}: {per_s(c.capacity.rate_per_s)}")
        cap = plan.chosen.capacity
        if cap is not None:
            lines.append(
                f"  capacity within the budget: {per_s(cap.rate_per_s)} (ceiling {per_s(cap.ceiling_per_s)} "
                "in full batches)"
            )
    lines.append(
        f"  without batching: {per_s(plan.unbatched.rate_per_s)} within the budget "
        f"(ceiling {per_s(plan.unbatched.ceiling_per_s)})"
    )
    lines += ["", explain(plan)]
    return lines


def main(argv: list[str]) -> int:
    argv = list(argv)
    if any(arg.strip().lower().startswith("llm:") for arg in argv):  # SOURCE, wherever it stands
        return _llm(argv)
    try:
        args = parser().parse_args(argv)
        budget_s = _number("--budget-ms", args.budget_ms, 1e-6, 3.6e6) / 1e3
        percentile = _number("--percentile", args.percentile, 1, 99.99)
        if percentile not in PERCENTILES:
            raise Refused(f"--percentile {args.percentile!r}: choose from {', '.join(f'{q:g}' for q in PERCENTILES)}")
        server = args.server.strip().lower()
        if server not in SERVERS:
            raise Refused(f"--server {args.server!r}: choose from {', '.join(SERVERS)}")
        handler = args.handler.strip().lower()
        if handler not in HANDLERS:
            raise Refused(f"--handler {args.handler!r}: choose from {', '.join(HANDLERS)}")
        if handler == "awaiting" and server != "ray":
            raise Refused("--handler awaiting is Ray Serve's (--server ray); the other servers' handlers block")
        instances = int(_number("--instances", args.instances, 1, MAX_INSTANCES, whole=True))
        overhead_s = _number("--overhead-ms", args.overhead_ms, 0, 3.6e6) / 1e3
        requests = int(_number("--requests", args.requests, 1_000, 1_000_000, whole=True))
        seed = int(_number("--seed", args.seed, 0, 2**32 - 1, whole=True))
        largest = int(_number("--max-batch", args.max_batch, 1, 65536, whole=True)) if args.max_batch else None
        arrivals = parse_arrivals(args.arrivals)
        rates = parse_rates(args.rate)
        if rates is None:
            if arrivals.own_rate is None:
                raise Refused("give --rate (requests per second), or --arrivals trace:FILE to use the trace's own rate")
            rates = [arrivals.own_rate]
        source = load_source(args)
    except Refused as exc:
        print(f"error: {printable(exc)}", file=sys.stderr)
        return 2
    progress = _progress if sys.stderr.isatty() else None
    plan = search(
        source.curve,
        rates,
        budget_s,
        percentile,
        server=server,
        max_instances=instances,
        max_batch=largest,
        handler=handler,
        arrivals=arrivals,
        overhead_s=overhead_s,
        n=requests,
        check_n=5 * requests,
        seed=seed,
        progress=progress,
    )
    if progress:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    if args.json:
        found = {"source": {**_source_json(source)}, **summary(plan)}
        print(json.dumps(found, indent=1, ensure_ascii=False, allow_nan=False))
    else:
        print(printable_lines(text_lines(source, plan)))
    return 0


def _source_json(source: ServiceSource) -> dict[str, Any]:
    return {
        "name": source.name,
        "device": source.device,
        "dtype": source.dtype,
        "mode": source.mode,
        "origin": source.origin,
        "provenance": source.provenance,
        "batches_measured": source.curve.batches if source.origin == "measured" else None,
        "largest_batch": source.curve.largest,
    }


def _progress(message: str) -> None:
    print(f"\r\033[Kplanning: {message}", end="", file=sys.stderr, flush=True)


def _llm(argv: list[str]) -> int:
    try:
        serve_llm = importlib.import_module("benchmarks.commands.serve_llm")
    except ModuleNotFoundError as exc:
        if exc.name != "benchmarks.commands.serve_llm":
            raise
        print("error: LLM serving is not available in this build", file=sys.stderr)
        return 2
    return serve_llm.main(argv)
