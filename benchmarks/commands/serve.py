"""`python -m benchmarks serve SOURCE`: plan a dynamic-batching server from a batch curve.

SOURCE is where the batch times come from:

- a model sweep file (`python -m benchmarks sweep` wrote it): every batch it measured, with its samples;
- `RUN.json:WORKLOAD`: one curve of a profile run (narrowed with --param, --dtype, --mode when several match);
- `WORKLOAD` with `--gpu NAME`: the roofline of a workload on a datasheet GPU (`predict`'s machinery), no spread;
- `CURVE.csv`: batch times measured anywhere (perf_analyzer, Model Analyzer, your own harness): columns `batch` and
  `ms` (or `seconds`), optionally `p90_ms` and `p99_ms` for the spread;
- `llm:MODEL`: an LLM engine's continuous batching, planned by `benchmarks.commands.serve_llm` when this build has it.

Given the rate(s) and a latency budget at a percentile, it simulates every candidate policy (max batch, max delay,
instances) under the chosen server's batching rule and recommends the one that meets the budget with the fewest
instances and the most headroom, then explains it in one paragraph. `--policy MAX_BATCH/DELAY_MS[/INSTANCES]`
evaluates one policy (yours) at every rate instead of searching. Nothing is measured; pure Python.

Every refusal is one line on stderr and exit status 2; when no policy meets the budget, the closest is printed and
the exit status is 3.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from benchmarks.analysis.roofline.cost_model import FUSED, FUSIONS
from benchmarks.analysis.serving.arrivals import TraceError, trace_arrivals
from benchmarks.analysis.serving.batcher.policy import (
    MIN_BATCHES,
    SEARCH_REQUESTS,
    Arrivals,
    Evaluation,
    PolicySearch,
    evaluate,
    search,
)
from benchmarks.analysis.serving.batcher.service_curves import (
    ServiceSource,
    SourceError,
    from_csv,
    from_prediction,
    from_run,
    from_sweep,
)
from benchmarks.analysis.serving.batcher.simulator import HANDLERS, SERVERS, Policy, ms
from benchmarks.commands.arguments import OneLineParser, number, numbers, whole
from benchmarks.commands.choices import Refused, dtype_named, gpu_chosen, workload_params
from benchmarks.contract.errors import run_command
from benchmarks.contract.inputs import CURVE_LIMIT, InputError, read_text_bounded
from benchmarks.contract.results import ResultsError, Run, read_document
from benchmarks.contract.text import printable_lines
from benchmarks.site.batcher_words import explain, pct, per_s, summary
from benchmarks.workloads import WORKLOADS

PERCENTILES = (50, 90, 95, 99, 99.9)
MAX_RATES = 20
MAX_INSTANCES = 64
NO_POLICY_MEETS = 3  # exit status when nothing meets the budget (the closest policy is printed)
EPILOG = """examples:
  python -m benchmarks serve benchmarks/sweeps/DEVICE/SWEEP.json --rate 20,60 --budget-ms 100
  python -m benchmarks serve benchmarks/results/cpu-amd-epyc/RUN.json:mlp --param width=1024 --rate 100 --budget-ms 50
  python -m benchmarks serve resnet50 --gpu "H100 SXM" --dtype fp16 --rate 20000 --budget-ms 15 --instances 2
  python -m benchmarks serve SWEEP.json --rate 30 --budget-ms 200 --server ray --handler awaiting --arrivals gamma:2
  python -m benchmarks serve my_curve.csv --rate 50,100 --budget-ms 40          # batch,ms[,p90_ms,p99_ms] rows
  python -m benchmarks serve my_curve.csv --rate 50,100,200 --policy 16/5/2     # what your current settings do

servers and their batching rules:
  triton      a batch leaves when it holds max batch requests or its oldest request has waited max delay
              (max_queue_delay_microseconds), and only when an instance is free
  torchserve  a free worker takes the first request, then collects until batch_size or max_batch_delay
  ray         @serve.batch: the wait (batch_wait_timeout_s) starts when the batcher takes the first request;
              --handler blocking (a synchronous forward pass) lets the next batch fill while one runs;
              --handler awaiting (an async handler) closes each batch max delay after its first request
  none        no batching"""


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="python -m benchmarks serve",
        description="Plan a dynamic-batching server from a batch curve: the max batch, max delay and instances that "
        "keep a latency percentile within a budget at the rates given, how much more traffic each sustains, and why. "
        "Simulated from the curve's measured (or predicted) times under the server's own batching rule; nothing is "
        "measured.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "source", metavar="SOURCE", help="SWEEP.json, RUN.json:WORKLOAD, CURVE.csv, WORKLOAD (with --gpu) or llm:MODEL"
    )
    p.add_argument("--rate", metavar="R[,R...]", help="requests per second (a trace's own rate when left out)")
    p.add_argument("--budget-ms", metavar="MS", help="latency budget in milliseconds (required unless --policy)")
    p.add_argument("--policy", metavar="B/MS[/N]", help="evaluate these settings instead of searching: max batch, "
                   "max delay in ms and devices (default 1; with --instances-per-gpu K, K instances on each), "
                   "e.g. 16/5/2; every rate gets its percentiles, batch formed, utilisation and whether it "
                   "overloads")  # fmt: skip
    p.add_argument("--percentile", metavar="P", default="99", help="which latency percentile the budget bounds "
                   f"({', '.join(f'{q:g}' for q in PERCENTILES)}; default 99)")  # fmt: skip
    p.add_argument("--server", default="triton", metavar="NAME", help=f"{', '.join(SERVERS)} (default triton)")
    p.add_argument("--handler", default="blocking", metavar="KIND", help="Ray only: blocking (default) or awaiting")
    p.add_argument("--gpus", "--instances", dest="instances", default="1", metavar="N", help="most devices (GPUs) "
                   "to use, one model instance (replica) on each: N devices serve N times what one does. --instances "
                   "is the old name, with the same meaning")  # fmt: skip
    p.add_argument("--instances-per-gpu", default="1", metavar="K", help="most model instances that share one "
                   "device (Triton's instance_group count, TorchServe's workers per GPU): they overlap their batches "
                   "but share the device's FLOP/s and bandwidth, so together they run no faster than the curve at "
                   "their summed batch (default 1)")  # fmt: skip
    p.add_argument("--arrivals", default="poisson", metavar="KIND", help="poisson (default), gamma:CV or trace:FILE")
    p.add_argument("--overhead-ms", default="0", metavar="MS", help="the server's cost per request outside the "
                   "batcher (default 0): a fixed delay, or with --host-cores the CPU time each request "
                   "needs")  # fmt: skip
    p.add_argument("--host-cores", metavar="N", help="the server host's cores that do the --overhead-ms work: half "
                   "before the batcher, half after the batch, each request waiting for a free core, so the overhead "
                   "grows with the rate and caps it at N / overhead (default: a fixed delay, no queue)")  # fmt: skip
    p.add_argument("--gpu", metavar="NAME", help='with a WORKLOAD source: a datasheet GPU, e.g. "H100 SXM"')
    p.add_argument("--dtype", metavar="DTYPE", help="with --gpu (required) or a run's curve: the dtype")
    p.add_argument(
        "--ceiling",
        action="store_true",
        help="with --gpu: simulate on the bare roofline (the ceiling) "
        "instead of the forecast calibrated on published figures",
    )
    p.add_argument("--mode", metavar="MODE", help="with a run's curve: the mode measured (eager, graph, compile)")
    p.add_argument("--cache", metavar="STATE", help="with a run's curve: the cache state (rotated, resident)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a workload parameter")
    p.add_argument("--fusion", metavar="HOW", help="with --gpu and resnet50: fused (default: conv, BatchNorm, ReLU "
                   "and residual add in one pass, activations in L2 while they fit) or eager (every elementwise "
                   "pass through memory)")  # fmt: skip
    p.add_argument("--max-batch", metavar="B", help="the largest max batch to try (default: the curve's largest "
                   "measured batch; with --gpu, 256)")  # fmt: skip
    p.add_argument("--requests", default=str(SEARCH_REQUESTS), metavar="N", help="requests per simulation while "
                   f"searching (default {SEARCH_REQUESTS:,}, and at least {MIN_BATCHES} times the max batch; the "
                   "policy chosen is checked with five times as many)")  # fmt: skip
    p.add_argument("--seed", default="0", metavar="N", help="random seed (default 0): same seed, same answer")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return p


# --------------------------------------------------------------------------- reading the request


def parse_rates(text: str | None) -> list[float] | None:
    if text is None:
        return None
    return numbers(text, "--rate", 0, 1e9, above=True, most=MAX_RATES)


def parse_arrivals(text: str) -> Arrivals:
    kind, _, value = text.partition(":")
    kind = kind.strip().lower()
    if kind == "poisson" and not value:
        return Arrivals()
    if kind == "gamma":
        cv = number(value.strip(), "--arrivals gamma:CV", 0.05, 20)
        return Arrivals("gamma", cv=cv)
    if kind == "trace" and value.strip():
        try:
            times = trace_arrivals(value.strip())
            return Arrivals.from_trace(times, value.strip())
        except (TraceError, ValueError) as exc:
            raise Refused(str(exc)) from None
    raise Refused(f"--arrivals {text!r}: give poisson, gamma:CV (e.g. gamma:2) or trace:FILE")


def fusion_named(args: argparse.Namespace, workload: str) -> str:
    """--fusion for a predicted ResNet-50 (fused unless told otherwise)."""
    if args.fusion is None:
        return FUSED
    fusion = args.fusion.strip().lower()
    if workload != "resnet50":
        raise Refused(f"--fusion is for resnet50, not {workload}")
    if fusion not in FUSIONS:
        raise Refused(f"--fusion {args.fusion!r}: choose from {', '.join(FUSIONS)}")
    return fusion


def load_source(args: argparse.Namespace) -> ServiceSource:
    source = args.source.strip()
    try:
        if args.gpu is not None:
            workload = source.lower()
            if workload not in WORKLOADS:
                raise Refused(f"with --gpu, SOURCE is a workload: one of {', '.join(WORKLOADS)}, not {source!r}")
            gpu = gpu_chosen(args.gpu)
            if args.dtype is None:
                raise Refused("with --gpu, give --dtype (e.g. fp16)")
            params = workload_params(WORKLOADS[workload], args.param)
            top = int(whole(args.max_batch or "256", "--max-batch", 1, 4096))
            fusion = fusion_named(args, workload)
            return from_prediction(
                workload, params, gpu, dtype_named(args.dtype), top, fusion, forecast=not args.ceiling
            )
        if source.lower().endswith(".csv"):
            if args.param or args.dtype or args.mode or args.cache:
                raise Refused("--param, --dtype, --mode and --cache choose a run's curve or a prediction, not a CSV's")
            return from_csv(_read_csv(Path(source)), source)
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
        f"SOURCE {source!r}: give a sweep file (.json), RUN.json:WORKLOAD, CURVE.csv, a workload with --gpu NAME, "
        "or llm:MODEL"
    )


def _read_csv(path: Path) -> str:
    """A curve's CSV text: a regular file of at most CURVE_LIMIT, read once (a byte-order mark is dropped)."""
    try:
        return read_text_bounded(path, kind="batch curve", limit_bytes=CURVE_LIMIT).removeprefix("\ufeff")
    except InputError as exc:
        raise Refused(str(exc)) from None


# --------------------------------------------------------------------------- the answer


def text_lines(source: ServiceSource, plan: PolicySearch) -> list[str]:
    lines = [
        f"Serving {source.label}",
        f"  batch times from {source.provenance}",
        *_forecast_lines(source),
        f"  {plan.arrivals.describe()}; {pct(plan.percentile)} budget {ms(plan.budget_s)}; "
        f"{len(plan.tried)} policies simulated" + _host_words(plan.overhead_s, plan.host_cores),
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
    elif plan.closest is not None:
        closest = plan.closest
        worst = "overloaded" if math.isinf(closest.worst_s) else f"{pct(plan.percentile)} {ms(closest.worst_s)}"
        lines.append(f"No policy tried meets the budget. Closest: {closest.policy.describe()} ({worst} at worst)")
    lines.append(
        f"  without batching: {per_s(plan.unbatched.rate_per_s)} within the budget "
        f"(ceiling {per_s(plan.unbatched.ceiling_per_s)})"
    )
    lines += ["", explain(plan)]
    return lines


def _forecast_lines(source: ServiceSource) -> list[str]:
    """Of a prediction: the forecast's terms and expected error, and the ceiling's batch times beside its own."""
    if source.ceiling is None:
        return ["  the ceiling: the bare roofline (--ceiling)"] if source.mode == "roofline" else []
    batches = sorted({1, source.curve.largest})
    beside = ", ".join(f"batch {b}: {ms(source.curve.mean(b))} (ceiling {ms(source.ceiling.mean(b))})" for b in batches)
    return [f"  forecast: {source.forecast_words}", f"  forecast batch times: {beside}"]


def main(argv: list[str]) -> int:
    """`serve SOURCE …`: its plan, or a refusal in one line and exit 2."""
    return run_command(_main, list(argv))


def _main(argv: list[str]) -> int:
    source = source_argument(argv)
    if source is not None and source.strip().lower().startswith("llm:"):  # SOURCE, wherever it stands
        return _llm(argv)
    args = parser().parse_args(argv)
    if args.budget_ms is None and args.policy is None:
        raise Refused("give --budget-ms (the latency budget), or --policy B/MS[/N] to evaluate your settings")
    budget_s = None if args.budget_ms is None else number(args.budget_ms, "--budget-ms", 1e-6, 3.6e6) / 1e3
    percentile = number(args.percentile, "--percentile", 1, 99.99)
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
    instances = int(whole(args.instances, "--gpus (--instances)", 1, MAX_INSTANCES))
    per_gpu = int(whole(args.instances_per_gpu, "--instances-per-gpu", 1, 16))
    if per_gpu > 1 and server in ("ray", "none"):
        raise Refused(f"--instances-per-gpu is for triton and torchserve; --server {server} runs one per device")
    overhead_s = number(args.overhead_ms, "--overhead-ms", 0, 3.6e6) / 1e3
    host_cores = None if args.host_cores is None else int(whole(args.host_cores, "--host-cores", 1, 1024))
    if host_cores is not None and overhead_s == 0:
        raise Refused("--host-cores says where the --overhead-ms work runs; give --overhead-ms too")
    requests = int(whole(args.requests, "--requests", 1_000, 1_000_000))
    seed = int(whole(args.seed, "--seed", 0, 2**32 - 1))
    largest = int(whole(args.max_batch, "--max-batch", 1, 65536)) if args.max_batch else None
    arrivals = parse_arrivals(args.arrivals)
    rates = parse_rates(args.rate)
    if rates is None:
        if arrivals.own_rate is None:
            raise Refused("give --rate (requests per second), or --arrivals trace:FILE to use the trace's own rate")
        rates = [arrivals.own_rate]
    source = load_source(args)
    policy = None
    if args.policy is not None:
        policy = parse_policy(args.policy, server, handler, source.curve.largest, per_gpu)
    if largest is not None and largest > source.curve.largest:
        print(f"note: --max-batch {largest:,} is above the curve's largest batch, {source.curve.largest:,}: "
              f"policies are planned up to {source.curve.largest:,}", file=sys.stderr)  # fmt: skip
    if policy is not None:
        found = evaluate(
            policy, source.curve, rates, percentile, budget_s, arrivals=arrivals, overhead_s=overhead_s,
            n=5 * requests, seed=seed, host_cores=host_cores,
        )  # fmt: skip
        if args.json:
            print(json.dumps({"source": _source_json(source), **evaluation_json(found)}, indent=1, allow_nan=False))
        else:
            print(printable_lines(evaluation_lines(source, found, arrivals)))
        return NO_POLICY_MEETS if found.meets is False else 0
    progress = _progress if sys.stderr.isatty() else None  # Ctrl-C in the simulations: one line, from cli.main
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
        batches=source.suggested,
        max_per_device=per_gpu,
        host_cores=host_cores,
    )
    if progress:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    if args.json:
        found = {"source": {**_source_json(source)}, **summary(plan)}
        print(json.dumps(found, indent=1, ensure_ascii=False, allow_nan=False))
    else:
        print(printable_lines(text_lines(source, plan)))
    return 0 if plan.chosen is not None else NO_POLICY_MEETS


def parse_policy(text: str, server: str, handler: str, largest: int, per_gpu: int = 1) -> Policy:
    """'16/5' or '16/5/2': max batch, max delay in milliseconds, devices (with `per_gpu` instances on each)."""
    parts = text.strip().split("/")
    if len(parts) not in (2, 3):
        raise Refused(f"--policy {text!r}: give MAX_BATCH/DELAY_MS or MAX_BATCH/DELAY_MS/INSTANCES, e.g. 16/5/2")
    batch = int(whole(parts[0].strip(), "--policy max batch", 1, 65536))
    delay_s = number(parts[1].strip(), "--policy max delay (ms)", 0, 3.6e6) / 1e3
    devices = int(whole(parts[2].strip(), "--policy devices", 1, MAX_INSTANCES)) if parts[2:] else 1
    if server == "none" and (batch != 1 or delay_s != 0):
        raise Refused(f"--policy {text!r}: --server none does not batch; its policy is 1/0[/N]")
    if batch > largest:
        print(
            f"note: --policy's max batch {batch} is above the curve's largest batch {largest}; its times there "
            "are extrapolated along the curve's last slope",
            file=sys.stderr,
        )
    return Policy(server, batch, delay_s, devices * per_gpu, handler if server == "ray" else "blocking", per_gpu)


def evaluation_lines(source: ServiceSource, found: Evaluation, arrivals: Arrivals) -> list[str]:
    policy = found.policy
    budget = "" if found.budget_s is None else f"; {pct(found.percentile)} budget {ms(found.budget_s)}"
    lines = [
        f"Serving {source.label}",
        f"  batch times from {source.provenance}",
        f"  {arrivals.describe()}{budget}" + _host_words(found.outcomes[0].result.overhead_s, found.host_cores),
        "",
        f"Your policy: {policy.describe()}",
        f"  {'rate':>10}  {'p50':>9}  {'p90':>9}  {'p99':>9}  {'p99.9':>9}  {'batch':>6}  {'busy':>5}  verdict",
    ]
    for o in found.outcomes:
        r = o.result
        if r.overloaded:
            cells = [f"{'—':>9}"] * 4
            verdict = f"overloaded: serves {per_s(r.throughput_per_s)} of {per_s(o.rate)}, the backlog grows"
        else:
            cells = [f"{ms(r.percentile(q)):>9}" for q in (50, 90, 99, 99.9)]
            verdict = "" if found.budget_s is None else ("within budget" if o.meets else "over budget")
        lines.append(
            f"  {per_s(o.rate):>10}  {'  '.join(cells)}  {r.mean_batch:>6.1f}  {r.utilisation:>5.0%}  {verdict}"
        )
    if found.capacity is not None:
        cap = found.capacity
        lines.append(
            f"  capacity within the budget: {per_s(cap.rate_per_s)} (ceiling {per_s(cap.ceiling_per_s)} in full "
            "batches)"
        )
    if found.meets is False:
        lines += ["", "It does not meet the budget at every rate: `serve` without --policy searches for one that does."]
    return lines


def _host_words(overhead_s: float, host_cores: int | None) -> str:
    if not overhead_s:
        return ""
    if host_cores is None:
        return f"; {ms(overhead_s)} of server overhead per request, a fixed delay"
    return f"; {ms(overhead_s)} of CPU work per request on {host_cores} host core{'s' * (host_cores != 1)}"


def evaluation_json(found: Evaluation) -> dict[str, Any]:
    return {
        "policy": found.policy.to_json(),
        "percentile": found.percentile,
        "budget_s": found.budget_s,
        "host_cores": found.host_cores,
        "meets_budget": found.meets,
        "capacity_per_s": found.capacity.rate_per_s if found.capacity else None,
        "at_rates": [{"rate_per_s": o.rate, **o.result.summary()} for o in found.outcomes],
    }


FLAGS = {"--json", "--chunked-prefill", "--reserve-kv", "-h", "--help"}  # the options of serve (and serve llm:)
# that take no value


def source_argument(argv: list[str]) -> str | None:
    """The SOURCE positional of a serve command line: the first argument that is neither an option nor an
    option's value (None when there is none)."""
    skip = positional = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--" and not positional:
            positional = True
        elif not positional and arg.startswith("-") and len(arg) > 1:
            skip = "=" not in arg and arg not in FLAGS
        else:
            return arg
    return None


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
        "forecast": source.forecast_words or None,
        "ceiling_s": None if source.ceiling is None else {b: source.ceiling.mean(b) for b in source.ceiling.batches},
    }


def _progress(message: str) -> None:
    print(f"\r\033[Kplanning: {message}", end="", file=sys.stderr, flush=True)


def _llm(argv: list[str]) -> int:
    try:
        serve_llm = importlib.import_module("benchmarks.commands.serve_llm")
    except ModuleNotFoundError as exc:
        if exc.name != "benchmarks.commands.serve_llm":
            raise
        raise Refused("LLM serving is not available in this build") from None
    return serve_llm.main(argv)
