"""`python -m benchmarks serve llm:MODEL --gpu NAME ...`: serving a language model with continuous batching,
simulated on the roofline of a datasheet GPU. Nothing is measured.

For each load (closed loops of N clients, or Poisson rates) it prints time to first token, time per output token
and inter-token latency at p50/p90/p99, total and per-user tokens per second, requests per second, the
concurrency reached and the KV cache used; the front of total against per-user tokens per second; and, given a
budget on time per output token (and optionally time to first token), the largest concurrency, running-sequence
cap and Poisson rate that meet it, with what binds. Prefix caching (--prefix-tokens, --prefix-hit), CUDA-graph
padding of decode batches (on unless --no-cuda-graphs), disaggregated prefill and decode compared with aggregated
serving on the same GPUs (--disaggregate, --kv-link-gbps) and a search of the engine settings a tuned deployment
chooses (--tune, --gpus) are explained in --help.

Every refusal (an unknown model or GPU, a model that cannot fit, lengths beyond the model's context, a budget no
concurrency meets, a malformed number) is one line on stderr and exit status 2. Pure Python: nothing here imports
torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.roofline.forecast import DECODE, PREFILL, expected_words
from benchmarks.analysis.serving.llm.disaggregated import KVLink, Split, compare, explain_comparison, network, nvlink
from benchmarks.analysis.serving.llm.disaggregated import simulate_disaggregated as serve_disaggregated
from benchmarks.analysis.serving.llm.engine_config import BLOCK_TOKENS, MEMORY_FRACTION, Engine, Infeasible
from benchmarks.analysis.serving.llm.engine_tuning import Tuning, explain_tuning, tune
from benchmarks.analysis.serving.llm.engine_tuning import rows as tuning_rows
from benchmarks.analysis.serving.llm.forecast_step import ForecastStep
from benchmarks.analysis.serving.llm.measured_step import CONFIG_KEYS, MeasuredStep, NoMeasurement
from benchmarks.analysis.serving.llm.planning import FrontPoint, closed_loop_requests, kv_limit, pareto, plan
from benchmarks.analysis.serving.llm.prefix_cache import SharedPrefix
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.roofline_step import KERNELS_PER_LAYER, LAYER_KERNELS, RooflineStep
from benchmarks.analysis.serving.llm.run_result import Budget, Result
from benchmarks.analysis.serving.llm.simulation import simulate
from benchmarks.analysis.serving.llm.steady_state import (
    STEADY_EDGE,
    STEADY_GROWTH,
    STEADY_SERVED,
    lengthen_until_steady,
    simulate_steady,
    window_figures,
)
from benchmarks.commands.arguments import OneLineParser, number, share, whole
from benchmarks.commands.choices import Refused, check_rate, dtype_named, gpu_named
from benchmarks.commands.llm_choices import check_split, model_named
from benchmarks.contract.errors import run_command
from benchmarks.contract.results import ResultsError, read_run
from benchmarks.llm_models import MODELS, PublishedModel
from benchmarks.site.llm_serving_words import explain

DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
MAX_CLIENTS = 8192
MAX_REQUESTS = 20_000


PER_USER_WORDS = (
    "Per-user tokens/s: 'per user' is 1 ÷ the median time per output token, what a user sees while its answer "
    "streams, the wait for the first token left out; 'user e2e' counts that wait: the median over requests of output "
    "tokens ÷ the time from sending to the last token."
)


def parser() -> argparse.ArgumentParser:
    names = ", ".join(m.name for m in MODELS)
    p = OneLineParser(
        prog="python -m benchmarks serve",
        description="Simulate serving a language model with continuous batching on a datasheet GPU: per load, time "
        "to first token (TTFT), time per output token (TPOT), inter-token latency (ITL), total and per-user tokens "
        "per second, the concurrency reached and the KV cache used; the front of total against per-user tokens/s; "
        "and with --tpot-budget-ms the largest concurrency, running-sequence cap and rate that meet the budget. "
        "The step time is the roofline of the decoder's matrix products and attention plus a stated fixed cost per "
        "step. Nothing is measured. " + PER_USER_WORDS,
        epilog=f"SOURCE is llm:MODEL with MODEL one of {names}, or llm:custom with --param KEY=VALUE for layers, "
        "d_model, heads, kv_heads, d_ff, ffn (gelu or swiglu; default swiglu), vocab (default 32000) and context (the "
        "longest sequence, default 8192). Lengths: N (fixed), uniform:LOW-HIGH, lognormal:MEAN,SIGMA[,MAX] (σ of the "
        "logarithm; each length at most MAX, default the context; a request whose prompt and answer together pass "
        "the context is clipped to it, its answer first, as an engine's max_model_len does) or file:PATH (one length "
        "a line). Example: python -m benchmarks serve "
        "llm:Llama-3-8B --gpu H100 --prompt-tokens 1000 --output-tokens 200 --tpot-budget-ms 50",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("source", metavar="SOURCE", help="llm:MODEL (a published model), llm:custom, or llm:run with --run")
    device = p.add_mutually_exclusive_group(required=True)
    device.add_argument("--gpu", metavar="NAME", help='a datasheet GPU, e.g. "H100" or "H200" (any case)')
    device.add_argument("--run", metavar="PATH", help="a results file: step times from the decode and prefill points "
                        "it measured (SOURCE llm:run; --param KEY=VALUE picks one of its decoders)")  # fmt: skip
    p.add_argument("--dtype", help="weights and activations, e.g. bf16, fp8, int8, fp4 (default bfloat16; --gpu "
                   "only)")  # fmt: skip
    p.add_argument("--kv-dtype", metavar="DTYPE", help="the KV cache's dtype (default: --dtype's; --gpu only)")
    p.add_argument("--tp", type=str, metavar="N", help="tensor parallel over N GPUs: two ring all-reduces a layer "
                   "over the GPU's NVLink (PCIe where it has none) in every step (default 1)")  # fmt: skip
    p.add_argument("--disaggregate", metavar="P:D", help="disaggregated serving: P engines only compute prompts and "
                   "D only decode, each on --tp GPUs, a prompt's KV cache crossing --kv-link-gbps (default: the "
                   "GPU's NVLink, or PCIe) once per request; with --rate, those loads on it; with --tpot-budget-ms, "
                   "the largest Poisson rate it and aggregated serving on the same GPUs (replicas of --tp GPUs) each "
                   "meet, and which gives more tokens/s per GPU")  # fmt: skip
    p.add_argument("--gpus", metavar="N", help="GPUs in all (default: --tp, or (P + D) × --tp with --disaggregate, "
                   "which must use them all; with --tune, the GPUs its TP widths divide)")  # fmt: skip
    p.add_argument("--tune", action="store_true", help="with --tpot-budget-ms: search the settings a tuned "
                   "deployment chooses, chunked prefill off (whole prompts first, 8192 tokens a step) or on with 512, "
                   "2048 or 8192 tokens a step, each TP width that is a power of two dividing --gpus (replicas on "
                   "the rest), and for each the largest max_num_seqs that meets the budget; rank them by output "
                   "tokens/s per GPU at the largest Poisson rate that meets it, and name the one picked")  # fmt: skip
    p.add_argument("--kv-link-gbps", metavar="G", help="with --disaggregate: a network between the prefill and "
                   "decode GPUs at G Gb/s per GPU (e.g. 400 for InfiniBand NDR) instead of NVLink")  # fmt: skip
    p.add_argument("--routing-skew", metavar="S", help="a mixture of experts' router skew: expert i gets a share "
                   "∝ (i + 1)^-S (default 0, uniform; MoE models only)")  # fmt: skip
    p.add_argument("--expert-parallel", action="store_true", help="place whole experts on the --tp GPUs, in "
                   "order, instead of a slice of each (vLLM's --enable-expert-parallel): each step waits for the GPU "
                   "that reads the most touched experts (MoE models only, --tp 2 or more)")  # fmt: skip
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a decoder size for llm:custom")
    p.add_argument("--prompt-tokens", default="1000", metavar="N|DIST", help="prompt lengths (default 1000)")
    p.add_argument("--output-tokens", default="200", metavar="N|DIST", help="output lengths (default 200)")
    load = p.add_mutually_exclusive_group()
    load.add_argument("--concurrency", metavar="N,...", help="closed loops of N clients (default 1,2,4,...,512)")
    load.add_argument("--rate", metavar="R,...", help="Poisson arrivals at R requests/s, each run's throughput "
                      f"measured at steady state: the first and last {STEADY_EDGE * 100:g}%% of arrivals left out, and "
                      f"a run that is not steady there lengthened, doubling its requests up to {STEADY_GROWTH}x "
                      "--requests")  # fmt: skip
    p.add_argument("--requests", default="1000", metavar="N", help="requests per run (default 1000; a closed loop "
                   "serves at least four per client and leaves each client's first out of the latencies)")  # fmt: skip
    p.add_argument("--max-num-seqs", default="256", metavar="N", help="running-sequence cap (default 256; raised "
                   "to the concurrency of a closed loop that asks for more)")  # fmt: skip
    p.add_argument(
        "--max-batched-tokens", metavar="N", help="tokens per step (default 8192, 2048 with chunked prefill)"
    )
    p.add_argument("--chunked-prefill", action="store_true", help="split prompts into steps that also decode")
    p.add_argument("--no-cuda-graphs", action="store_true", help="run every step without CUDA graphs. By default "
                   "(--gpu) a step that only decodes runs on a captured graph, its batch padded up to the next of "
                   "vLLM V0's capture sizes (1, 2, 4, then every multiple of 8 up to max_num_seqs rounded up to one), "
                   "the padding rows costing their matrix products, as vLLM and TensorRT-LLM (enable_padding) pad; "
                   "with --run the measured times hold the device's behaviour, and nothing is padded")  # fmt: skip
    p.add_argument("--prefix-tokens", metavar="N", help="prefix caching: the first N tokens of a prompt are a "
                   "prefix shared by --prefix-hit of the requests (a system prompt); its whole blocks are computed "
                   "once, held once in the KV cache by every sequence that uses them, kept while memory allows and "
                   "evicted longest-unused first (a prefix's end before its start); at least a prompt's last token "
                   "is always computed (default: no prefix caching)")  # fmt: skip
    p.add_argument("--prefix-hit", metavar="P", help="share of requests whose prompt begins with the shared prefix, "
                   "0 to 1 (default 1; needs --prefix-tokens). The share of its blocks found cached is reported: "
                   "lower when the first copy is still being computed or was evicted")  # fmt: skip
    p.add_argument("--reserve-kv", action="store_true", help="admit a request only when blocks for its whole answer "
                   "are free, so nothing is ever preempted (TensorRT-LLM's GUARANTEED_NO_EVICT); default: admit on "
                   "the prompt's blocks and preempt the newest when the cache runs out (vLLM)")  # fmt: skip
    p.add_argument("--block-size", default=str(BLOCK_TOKENS), metavar="N", help="KV block, tokens (default 16)")
    p.add_argument("--memory-fraction", default=str(MEMORY_FRACTION), metavar="F", help="share of the GPU memory "
                   "for weights and KV cache (default 0.9)")  # fmt: skip
    p.add_argument("--step-overhead-ms", metavar="MS", help="fixed cost per step (default: 3 µs per kernel, "
                   f"{KERNELS_PER_LAYER} kernels a layer: {', '.join(LAYER_KERNELS)})")  # fmt: skip
    p.add_argument("--efficiency", metavar="F", help="share of the roofline reached, 0 < F ≤ 1, in place of the "
                   "forecast (default: the forecast, calibrated on published figures)")  # fmt: skip
    p.add_argument("--ceiling", action="store_true", help="simulate on the bare roofline step (the ceiling) instead "
                   "of the forecast calibrated on published figures")  # fmt: skip
    p.add_argument("--tpot-budget-ms", metavar="MS", help="budget on the time per output token at --percentile")
    p.add_argument("--ttft-budget-ms", metavar="MS", help="budget on the time to first token (needs --tpot-budget-ms)")
    p.add_argument("--percentile", default="99", metavar="P", help="percentile of the budgets (default 99)")
    p.add_argument("--seed", default="0", metavar="N", help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    return p


def main(argv: list[str] | None = None) -> int:
    """`serve llm:MODEL …`: its answer, or a refusal in one line and exit 2."""
    return run_command(_main, list(sys.argv[1:] if argv is None else argv))


def _main(argv: list[str]) -> int:
    if argv and argv[0] == "serve":
        argv = argv[1:]
    args = _parse(argv)
    if isinstance(args, int):
        return args
    request = read_request(args)  # a refusal here or in the answer is main's one line
    found = answer(request, progress=not args.json)
    print(json.dumps(found, indent=1, ensure_ascii=False) if args.json else "\n".join(text_lines(found)))
    return 0


def _parse(argv: list[str]) -> argparse.Namespace | int:
    try:
        return parser().parse_args(argv)
    except Refused as exc:
        raise Refused(f"{exc} (see --help)") from None
    except SystemExit as exc:  # --help
        return int(exc.code or 0)


# --------------------------------------------------------------------------- reading the request


def parse_lengths(text: str, what: str, longest: int) -> Lengths:
    t = text.strip()
    kind, sep, rest = t.partition(":")
    try:
        if not sep:
            return Lengths.fixed(whole(t, what, 1, longest))
        if kind == "uniform":
            low, dash, high = rest.partition("-")
            if not dash:
                raise Refused(f"{what} {text!r}: write uniform:LOW-HIGH")
            low_n, high_n = whole(low, what, 1, longest), whole(high, what, 1, longest)
            if low_n > high_n:
                raise Refused(f"{what} {text!r}: LOW must not exceed HIGH")
            return Lengths.uniform(low_n, high_n)
        if kind == "lognormal":
            parts = rest.split(",")
            if len(parts) not in (2, 3):
                raise Refused(f"{what} {text!r}: write lognormal:MEAN,SIGMA or lognormal:MEAN,SIGMA,MAX")
            high = whole(parts[2], what, 1, longest) if len(parts) == 3 else longest
            return Lengths.lognormal(
                number(parts[0], what, 0, high, above=True), number(parts[1], what, 0, 3.0, above=True), high
            )
        if kind == "file":
            try:
                found = Lengths.from_file(rest)
            except ValueError as exc:  # also a file that cannot be read, or is not a regular text file
                raise Refused(f"{what}: {exc}") from None
            return found
    except Refused as exc:
        if "give a whole number" in str(exc) and longest < 10**9:
            raise Refused(f"{exc} (the model's context is {longest:,} tokens)") from None
        raise
    raise Refused(f"{what} {text!r}: give N, uniform:LOW-HIGH, lognormal:MEAN,SIGMA or file:PATH")


def gpus_needed_words(step: RooflineStep, memory_fraction: float) -> str:
    """How many GPUs of the kind hold the weights with room for a cache: the smallest --tp that leaves some memory."""
    per_gpu = (step.gpu.memory_bytes or 0) * memory_fraction
    if per_gpu <= 0:
        return "use more GPUs (--tp) or fewer bytes (--dtype fp8)"
    needed = int(step.weight_bytes // per_gpu) + 1  # more memory than the weights: a cache needs room
    return f"it needs at least {needed} of them (--tp {needed}), or fewer bytes (--dtype fp8)"


@dataclass(frozen=True)
class Request:
    model: PublishedModel
    step: RooflineStep | MeasuredStep
    engine: Engine
    prompt: Lengths
    output: Lengths
    concurrency: tuple[int, ...] | None
    rates: tuple[float, ...] | None
    requests: int
    budget: Budget | None
    seed: int
    notes: tuple[str, ...]
    split: Split | None = None  # disaggregated prefill and decode
    link: KVLink | None = None
    tune_gpus: int | None = None  # --tune over this many GPUs


def measured_step(args: argparse.Namespace) -> MeasuredStep:
    """The step times a results file measured, for SOURCE llm:run."""
    if args.source.strip().lower() != "llm:run":
        raise Refused(f"with --run, SOURCE is llm:run (the decoder the run measured), not {args.source!r}")
    for flag, value in (("--dtype", args.dtype), ("--tp", args.tp), ("--efficiency", args.efficiency),
                        ("--step-overhead-ms", args.step_overhead_ms), ("--kv-dtype", args.kv_dtype),
                        ("--routing-skew", args.routing_skew),
                        ("--expert-parallel", args.expert_parallel or None)):  # fmt: skip
        if value is not None:
            raise Refused(f"{flag} is for --gpu: a run's measured times already hold its dtype, device and overheads")
    wanted: dict[str, Any] = {}
    for pair in args.param:
        key, eq, value = pair.partition("=")
        key = key.strip()
        if not eq or key not in CONFIG_KEYS:
            raise Refused(f"--param {pair!r}: write KEY=VALUE with KEY one of {', '.join(CONFIG_KEYS)}")
        wanted[key] = value.strip().lower() if key == "ffn" else whole(value, f"--param {key}", 1, 10**7)
    path = Path(args.run)
    if not args.run.strip() or path.is_dir():
        raise Refused(f"--run {args.run!r}: give one results file, e.g. benchmarks/results/<device>/<run>.json")
    try:
        return MeasuredStep(read_run(path, layout=False), wanted)
    except ResultsError as exc:
        raise Refused(str(exc)) from None
    except NoMeasurement as exc:
        raise Refused(f"{path}: {exc}") from None


def read_request(args: argparse.Namespace) -> Request:
    gpu_note = None
    if args.run is not None:
        step = measured_step(args)
        model, dtype, tp, where = step.model, step.dtype, 1, "the run's device"
    else:
        model = model_named(args.source, args.param)
        gpu, gpu_note = gpu_named(args.gpu)
        dtype = dtype_named(args.dtype or "bfloat16")
        check_rate(gpu, dtype)
        tp = whole(args.tp or "1", "--tp", 1, 64)
        if args.tune:  # the widest engine the search tries: the model must fit on it
            tp = whole(args.gpus or str(tp), "--gpus", 1, 64)
        else:
            check_split(model, tp)
        fixed = (
            number(args.step_overhead_ms, "--step-overhead-ms", 0, 10_000, above=True) / 1e3
            if args.step_overhead_ms
            else None
        )
        efficiency = number(args.efficiency or "1", "--efficiency", 0, 1.0, above=True)
        kv_dtype = dtype_named(args.kv_dtype) if args.kv_dtype else None
        skew = number(args.routing_skew, "--routing-skew", 0, 100, above=True) if args.routing_skew else 0.0
        if skew and model.experts is None:
            raise Refused(f"--routing-skew is for a mixture of experts; {model.name} is dense")
        if args.expert_parallel and (model.experts is None or tp < 2):
            raise Refused("--expert-parallel is for a mixture of experts on --tp 2 or more GPUs")
        try:
            step = RooflineStep(model, gpu, dtype, tensor_parallel=tp, fixed_s=fixed, efficiency=efficiency,
                                kv_dtype=kv_dtype, routing_skew=skew, expert_parallel=args.expert_parallel)  # fmt: skip
        except ValueError as exc:
            raise Refused(str(exc)) from None
        hand_set = args.efficiency is not None or args.step_overhead_ms is not None
        if args.ceiling and hand_set:
            raise Refused("--ceiling is the bare roofline; it takes no --efficiency or --step-overhead-ms")
        if not args.ceiling and not hand_set:
            step = ForecastStep.of(step, calibration_file.committed().efficiency("decode", dtype))
        where = f"{tp} × {gpu.name}"
    chunked = bool(args.chunked_prefill)
    default_tokens = 2048 if chunked else 8192
    engine = Engine(
        max_num_seqs=whole(args.max_num_seqs, "--max-num-seqs", 1, 65536),
        max_batched_tokens=whole(args.max_batched_tokens or default_tokens, "--max-batched-tokens", 1, 10**7),
        chunked_prefill=chunked,
        reserve=bool(args.reserve_kv),
        block_tokens=whole(args.block_size, "--block-size", 1, 1024),
        memory_fraction=number(args.memory_fraction, "--memory-fraction", 0, 1.0, above=True),
        cuda_graphs=args.run is None and not args.no_cuda_graphs,
    )
    if args.prefix_hit is not None and args.prefix_tokens is None:
        raise Refused("--prefix-hit needs --prefix-tokens")
    if args.prefix_tokens is not None:
        hit = 1.0 if args.prefix_hit is None else share(args.prefix_hit, "--prefix-hit")
        prefix = SharedPrefix(whole(args.prefix_tokens, "--prefix-tokens", 1, model.max_context), hit)
        engine = Engine(**{**engine.__dict__, "prefix": prefix})
    if engine.problems():
        raise Refused(engine.problems()[0])
    usable = step.memory_bytes * engine.memory_fraction
    if step.weight_bytes >= usable:
        raise Refused(
            f"{model.name} does not fit: its weights take {step.weight_bytes / 1e9:,.1f} GB in {dtype}, and "
            f"{where} offer{'s' * (tp == 1)} {usable / 1e9:,.1f} GB at --memory-fraction "
            f"{engine.memory_fraction:g}; {gpus_needed_words(step, engine.memory_fraction)}"
        )
    prompt = parse_lengths(args.prompt_tokens, "--prompt-tokens", model.max_context)
    output = parse_lengths(args.output_tokens, "--output-tokens", model.max_context)
    longest = prompt.high + output.high
    if "lognormal" in (prompt.kind, output.kind):  # a log-normal tail: each request clipped to the context
        engine = dataclasses.replace(engine, max_model_len=model.max_context)
        longest = min(longest, model.max_context)
    elif longest > model.max_context:
        raise Refused(
            f"prompt and output reach {longest:,} tokens, beyond {model.name}'s context of {model.max_context:,}"
        )
    held = step.kv_blocks(engine.memory_fraction, engine.block_tokens) * engine.block_tokens
    if held < longest:
        raise Refused(
            f"the KV cache left beside the weights holds {held:,} tokens, fewer than one request of {longest:,}"
        )
    if not chunked and longest > engine.max_batched_tokens:
        raise Refused(
            f"without --chunked-prefill every prompt (and one computed again after a preemption) must fit in "
            f"--max-batched-tokens ({engine.max_batched_tokens:,}); requests reach {longest:,} tokens"
        )
    concurrency = rates = None
    if args.rate:
        rates = tuple(number(part, "--rate", 0, 1e6, above=True) for part in args.rate.split(","))
    elif args.concurrency:
        concurrency = tuple(
            sorted({whole(part, "--concurrency", 1, MAX_CLIENTS) for part in args.concurrency.split(",")})
        )
    else:
        concurrency = DEFAULT_CONCURRENCY
    budget = None
    percentile = number(args.percentile, "--percentile", 0, 100, above=True)
    if args.ttft_budget_ms and not args.tpot_budget_ms:
        raise Refused("--ttft-budget-ms needs --tpot-budget-ms")
    if args.tpot_budget_ms:
        ttft = (
            number(args.ttft_budget_ms, "--ttft-budget-ms", 0, 1e7, above=True) / 1e3 if args.ttft_budget_ms else None
        )
        budget = Budget(number(args.tpot_budget_ms, "--tpot-budget-ms", 0, 1e6, above=True) / 1e3, ttft, percentile)
    notes = tuple(n for n in (gpu_note,) if n)
    split, link = read_deployment(args, step, tp)
    tune_gpus = None
    if args.tune:
        if budget is None or not isinstance(step, RooflineStep) or split is not None:
            raise Refused("--tune needs --gpu and --tpot-budget-ms, and is not for --disaggregate")
        if args.rate or args.concurrency:
            raise Refused("--tune answers the budget alone: drop --rate and --concurrency")
        tune_gpus = tp
    return Request(model, step, engine, prompt, output, concurrency, rates,
                   whole(args.requests, "--requests", 1, MAX_REQUESTS), budget, whole(args.seed, "--seed", 0, 2**32),
                   notes, split, link, tune_gpus)  # fmt: skip


def read_deployment(args: argparse.Namespace, step: RooflineStep | MeasuredStep, tp: int) -> tuple[Any, Any]:
    """--disaggregate, --gpus and --kv-link-gbps: the split and the link, or (None, None)."""
    if args.disaggregate is None:
        if args.kv_link_gbps is not None:
            raise Refused("--kv-link-gbps is for --disaggregate")
        if args.gpus is not None and not args.tune and whole(args.gpus, "--gpus", 1, 4096) != tp:
            raise Refused(f"--gpus {args.gpus} with --tp {tp}: one engine uses --tp GPUs; give --disaggregate P:D to "
                          "split more of them")  # fmt: skip
        return None, None
    if not isinstance(step, RooflineStep):
        raise Refused("--disaggregate is for --gpu: a run measured one engine")
    prefill, colon, decode = args.disaggregate.partition(":")
    if not colon:
        raise Refused(f"--disaggregate {args.disaggregate!r}: write P:D, e.g. 1:3")
    split = Split(whole(prefill, "--disaggregate P", 1, 512), whole(decode, "--disaggregate D", 1, 512), tp)
    if args.gpus is not None and whole(args.gpus, "--gpus", 1, 4096) != split.gpus:
        raise Refused(
            f"--disaggregate {args.disaggregate} with --tp {tp} uses {split.gpus} GPUs, not --gpus {args.gpus}"
        )
    if not (args.rate or args.tpot_budget_ms) or args.concurrency:
        raise Refused("--disaggregate serves Poisson arrivals: give --rate or --tpot-budget-ms, not --concurrency")
    try:
        if args.kv_link_gbps is not None:
            return split, network(number(args.kv_link_gbps, "--kv-link-gbps", 0, 1e6, above=True))
        return split, nvlink(step.gpu)
    except ValueError as exc:
        raise Refused(str(exc)) from None


# --------------------------------------------------------------------------- the answer


def _row(label: str, value: float, result: Result) -> dict[str, Any]:
    """One run's figures; an open loop's also over its steady window (`window_figures`)."""
    found = {**result.summary(), **(window_figures(result) or {})}
    return {label: value, **{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                             for k, v in found.items()}}  # fmt: skip


def answer(request: Request, progress: bool = True) -> dict[str, Any]:
    """The runs, the front and the budget's plan as one JSON-ready object."""
    step, engine = request.step, request.engine
    limit = kv_limit(step, engine, request.prompt, request.output)
    assumptions = {
        "model": request.model.name,
        "configuration": request.model.source,
        "step_time": step.describe(),
        "answer": answer_kind(step),
        "expected_error": {
            kind: expected_words(calibration_file.committed().expected_for(kind, step.tensor_parallel), kind)
            for kind in (DECODE, PREFILL)
        }
        if isinstance(step, ForecastStep)
        else None,
        "fixed_step_s": step.fixed_s,
        "efficiency": step.efficiency,
        "weights_bytes": step.weight_bytes,
        "kv_bytes_per_token": step.kv_bytes_per_token,
        "kv_blocks": step.kv_blocks(engine.memory_fraction, engine.block_tokens),
        "block_tokens": engine.block_tokens,
        "kv_limit_sequences": limit,
        "engine": {"max_num_seqs": engine.max_num_seqs, "max_batched_tokens": engine.max_batched_tokens,
                   "chunked_prefill": engine.chunked_prefill, "reserve_kv": engine.reserve,
                   "memory_fraction": engine.memory_fraction, "cuda_graphs": engine.cuda_graphs,
                   "prefix_tokens": engine.prefix.tokens if engine.prefix else None,
                   "prefix_share": engine.prefix.share if engine.prefix else None},
        "prompt_tokens": request.prompt.describe(),
        "output_tokens": request.output.describe(),
        "seed": request.seed,
        "notes": list(request.notes),
        "source": SOURCE_WORDS[answer_kind(step)],
    }  # fmt: skip
    runs: list[dict[str, Any]] = []
    results = []
    if request.split is not None:
        return disaggregated_answer(request, assumptions, progress)
    if request.tune_gpus is not None:
        return tuned_answer(request, assumptions, progress)
    try:
        found_plan = None
        if request.budget is not None:  # first, so that a budget nothing meets is refused before any other output
            found_plan = plan(step, engine, request.prompt, request.output, request.budget,
                              n_requests=request.requests, seed=request.seed)  # fmt: skip
            if found_plan is None:
                one = simulate(step, engine, request.prompt, request.output, n_requests=request.requests, clients=1,
                               seed=request.seed)  # fmt: skip
                raise Refused(
                    f"no concurrency meets {request.budget.describe()}: one client alone gets "
                    f"{one.percentile('tpot', request.budget.percentile) * 1e3:.1f} ms per output token and "
                    f"{one.percentile('ttft', request.budget.percentile) * 1e3:,.0f} ms to its first token"
                )
        if request.rates is not None:
            for index, rate in enumerate(request.rates):
                _progress(progress, f"rate {rate:g}/s", index, len(request.rates))
                result = simulate_steady(step, engine, request.prompt, request.output, rate_per_s=rate,
                                         n_requests=request.requests, seed=request.seed)  # fmt: skip
                runs.append({**_row("rate_per_s", rate, result), "requests": result.requests,
                             "requests_asked": request.requests})  # fmt: skip
        else:
            for index, clients in enumerate(request.concurrency):
                _progress(progress, f"{clients} clients", index, len(request.concurrency))
                settings = Engine(**{**engine.__dict__, "max_num_seqs": max(engine.max_num_seqs, clients)})
                if settings.chunked_prefill:
                    tokens = max(settings.max_batched_tokens, settings.max_num_seqs)
                    settings = Engine(**{**settings.__dict__, "max_batched_tokens": tokens})
                n = closed_loop_requests(request.requests, clients)
                result = simulate(step, settings, request.prompt, request.output, n_requests=n, clients=clients,
                                  seed=request.seed)  # fmt: skip
                results.append((clients, result))
                runs.append(_row("concurrency", clients, result))
    except Infeasible as exc:
        raise Refused(str(exc)) from None
    front = [p.concurrency for p in pareto([FrontPoint(c, r) for c, r in results])]
    found: dict[str, Any] = {"assumptions": assumptions, "runs": runs, "front": front}
    if found_plan is not None:
        found["budget"] = {
            "tpot_s": request.budget.tpot_s,
            "ttft_s": request.budget.ttft_s,
            "percentile": request.budget.percentile,
            "concurrency": found_plan.concurrency,
            "max_num_seqs": found_plan.max_num_seqs,
            "missed_at_concurrency": found_plan.beyond_concurrency,  # the fewest clients found to miss (None: none)
            "rate_per_s": found_plan.rate_per_s,  # the largest rate that passed the steady-state check
            "rate_searched_per_s": found_plan.searched_per_s,  # the short search's, before that check
            "rate_failed_per_s": [f.rate_per_s for f in found_plan.failed],
            "binds": found_plan.binds,
            "at": _row("concurrency", found_plan.concurrency, found_plan.result),
            "explanation": explain(found_plan),
        }
    return found


def disaggregated_answer(request: Request, assumptions: dict[str, Any], progress: bool) -> dict[str, Any]:
    """--disaggregate: each --rate on the split, and with a budget its comparison with aggregated serving."""
    split, link = request.split, request.link
    assumptions = {**assumptions, "deployment": split.describe(), "kv_link": link.describe()}
    found: dict[str, Any] = {"assumptions": assumptions, "runs": [], "front": []}
    try:
        for index, rate in enumerate(request.rates or ()):
            _progress(progress, f"rate {rate:g}/s", index, len(request.rates))

            def at(n: int, rate: float = rate) -> Any:
                return serve_disaggregated(request.step, request.engine, request.prompt, request.output, split, link,
                                           n_requests=n, rate_per_s=rate, seed=request.seed)  # fmt: skip

            run = lengthen_until_steady(at, lambda r: r.result, request.requests)
            found["runs"].append({**_row("rate_per_s", rate, run.result), "requests": run.result.requests,
                                  "requests_asked": request.requests,
                                  "tokens_per_s_per_gpu": run.tokens_per_s_per_gpu})  # fmt: skip
        if request.budget is not None:
            _progress(progress, "aggregated and disaggregated serving", 0, 1)
            c = compare(request.step, request.engine, request.prompt, request.output, request.budget, split, link,
                        n_requests=request.requests, seed=request.seed)  # fmt: skip
            found["comparison"] = {
                "gpus": c.gpus,
                "aggregated": {"replicas": c.aggregated_replicas, "rate_per_s": c.aggregated_rate,
                               "tokens_per_s_per_gpu": c.aggregated_per_gpu},
                "disaggregated": {"prefill_engines": split.prefill, "decode_engines": split.decode,
                                  "rate_per_s": c.disaggregated_rate, "tokens_per_s_per_gpu": c.disaggregated_per_gpu},
                "more_tokens_per_gpu": c.winner,
                "explanation": explain_comparison(c, request.budget),
            }  # fmt: skip
    except Infeasible as exc:
        raise Refused(str(exc)) from None
    return found


def _expert_parallel(step: RooflineStep, tp: int) -> bool:
    """Expert parallelism at a width --tune tries: where the step asked for it and the width splits the experts
    evenly (a width that cannot runs them tensor parallel, a slice of each on every GPU)."""
    e = step.model.experts
    return step.expert_parallel and tp > 1 and e is not None and e.experts % tp == 0


def tuned_answer(request: Request, assumptions: dict[str, Any], progress: bool) -> dict[str, Any]:
    """--tune: every setting tried, and the one picked."""
    base = request.step

    ceiling = base.ceiling_step if isinstance(base, ForecastStep) else base

    def step_for(tp: int) -> RooflineStep:
        step = RooflineStep(ceiling.model, ceiling.gpu, ceiling.dtype, tensor_parallel=tp, fixed_s=ceiling.fixed_s,
                            efficiency=ceiling.efficiency, kv_dtype=ceiling.kv_dtype, routing_skew=ceiling.routing_skew,
                            expert_parallel=_expert_parallel(ceiling, tp))  # fmt: skip
        return ForecastStep.of(step, base.forecast) if isinstance(base, ForecastStep) else step

    def planned(done: int, total: int) -> None:
        if progress:
            print(f"planned {done} of {total} settings over {request.tune_gpus} GPUs", file=sys.stderr, flush=True)

    try:
        found: Tuning = tune(step_for, request.engine, request.prompt, request.output, request.budget,
                             request.tune_gpus, n_requests=request.requests, seed=request.seed,
                             progress=planned)  # fmt: skip
    except Infeasible as exc:
        raise Refused(str(exc)) from None
    tuning = {"gpus": found.gpus, "tried": tuning_rows(found), "explanation": explain_tuning(found)}
    return {"assumptions": assumptions, "runs": [], "front": [], "tuning": tuning}


def _progress(show: bool, what: str, index: int, total: int) -> None:
    if show:
        print(f"simulating {what} ({index + 1}/{total})", file=sys.stderr, flush=True)


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f}"


SOURCE_WORDS = {  # where a step's times come from, by `answer_kind`
    "forecast": "the forecast: the datasheet roofline divided by efficiencies fitted to published figures, nothing "
    "measured",
    "ceiling": "datasheet roofline, nothing measured",
    "hand-set": "datasheet roofline, nothing measured",
    "measured": "measured decode and prefill points of a committed run, interpolated",
}


def answer_kind(step) -> str:
    """What the step times are: the forecast, the bare roofline, a hand-set share of it, or measured."""
    if isinstance(step, ForecastStep):
        return "forecast"
    if isinstance(step, RooflineStep):
        return "ceiling" if step.efficiency == 1 else "hand-set"
    return "measured"


def _answer_lines(a: dict[str, Any]) -> list[str]:
    if a["answer"] == "forecast":
        return [f"Forecast: {a['expected_error']['decode']}; {a['expected_error']['prefill']}. "
                "--ceiling simulates on the bare roofline."]  # fmt: skip
    if a["answer"] == "ceiling":
        return ["Ceiling: the bare roofline step, no calibration (drop --ceiling for the forecast)."]
    return []


def _graph_words(engine: dict[str, Any]) -> str:
    if not engine.get("cuda_graphs"):
        return "no CUDA graphs"
    return "decode batches padded to vLLM's CUDA-graph sizes (1, 2, 4, 8, 16, 24, …)"


def _prefix_words(engine: dict[str, Any]) -> str:
    if engine.get("prefix_tokens") is None:
        return ""
    return (
        f", prefix caching on: {engine['prefix_share'] * 100:g} % of prompts begin with a shared prefix of "
        f"{engine['prefix_tokens']:,} tokens"
    )


def _run_lines(found: dict[str, Any]) -> list[str]:
    key = "rate_per_s" if "rate_per_s" in found["runs"][0] else "concurrency"
    head = "rate/s" if key == "rate_per_s" else "clients"
    lines = [
        f"{head:>8}  {'TTFT ms p50/p90/p99':>25}  {'TPOT ms p50/p90/p99':>19}  {'ITL ms p50/p99':>14}  {'tok/s':>7}  "
        f"{'per user':>8}  {'user e2e':>8}  {'req/s':>7}  {'running':>7}  {'KV peak':>7}"
    ]
    windowed = any("steady_tokens_per_s" in r for r in found["runs"])
    for r in found["runs"]:
        mark = "*" if key == "concurrency" and r[key] in found["front"] else " "
        steady = windowed and "steady_tokens_per_s" in r and not r["overloaded"]
        tokens, requests = (r["steady_tokens_per_s"], r["steady_requests_per_s"]) if steady else (
            r["tokens_per_s"], r["requests_per_s"])  # fmt: skip
        ttft = "/".join(_ms(r[f"ttft_p{q}_ms"]) for q in (50, 90, 99))
        tpot = "/".join(_ms(r[f"tpot_p{q}_ms"]) for q in (50, 90, 99))
        itl = "/".join(_ms(r[f"itl_p{q}_ms"]) for q in (50, 99))
        lines.append(
            f"{r[key]:>7g}{mark}  {ttft:>25}  {tpot:>19}  {itl:>14}  {tokens:>7,.0f}  "
            f"{r['tokens_per_s_per_user']:>8,.1f}  {r['tokens_per_s_per_user_with_first']:>8,.1f}  "
            f"{requests:>7,.2f}  {r['mean_running']:>7,.1f}  "
            f"{r['kv_peak_share'] * 100:>6.0f} %{'  overloaded' if r['overloaded'] else ''}"
            + ("  not steady" if steady and not r["steady"] else "")
            + (f"  prefix cached {r['prefix_hit_share'] * 100:.0f} %" if "prefix_hit_share" in r else "")
        )
    if key == "concurrency":
        lines.append("* on the front: no other concurrency gives more tokens/s in all and per user")
    if windowed:
        lines.append(
            f"tok/s and req/s: finished per second over the steady window, the arrivals after the first and before "
            f"the last {STEADY_EDGE:.0%} (warm-up and drain left out); a run that is not steady there is lengthened, "
            f"doubling its requests up to {STEADY_GROWTH}× --requests ({_lengthened(found['runs'])}); 'not steady': "
            f"still fewer than {STEADY_SERVED:.0%} of the window's arrivals were served in it, or the queue for a "
            "first token grew. An overloaded run's (its queue grows all along) are over the whole run, drain "
            "included. Latencies are over every request of the run. --json has the whole run's figures too."
        )
    return lines


def _lengthened(runs: list[dict[str, Any]]) -> str:
    longer = [f"{r['rate_per_s']:g}/s: {r['requests']:,}" for r in runs if r["requests"] > r["requests_asked"]]
    return "requests run: " + ", ".join(longer) if longer else "none needed it"


def text_lines(found: dict[str, Any]) -> list[str]:
    a = found["assumptions"]
    e = a["engine"]
    lines = [
        f"{a['step_time']}.",
        *_answer_lines(a),
        f"Weights {a['weights_bytes'] / 1e9:,.1f} GB; KV cache {a['kv_bytes_per_token'] / 1024:,.0f} KiB a token, "
        f"{a['kv_blocks']:,} blocks of {a['block_tokens']} ({a['kv_limit_sequences']:,} sequences of mean length).",
        f"Engine: max_num_seqs {e['max_num_seqs']}, max_batched_tokens {e['max_batched_tokens']:,}, chunked prefill "
        f"{'on' if e['chunked_prefill'] else 'off (prompts first)'}, memory fraction {e['memory_fraction']:g}, "
        f"{_graph_words(e)}"
        f"{_prefix_words(e)}. "
        f"Prompts {a['prompt_tokens']} tokens, outputs {a['output_tokens']}. Step times: {a['source']}.",
        *[f"Note: {note}." for note in a["notes"]],
        *([f"Deployment: {a['deployment']}; KV cache over {a['kv_link']}."] if "deployment" in a else []),
        "",
    ]
    if found["runs"]:
        lines += _run_lines(found)
    lines.append(PER_USER_WORDS)
    if "budget" in found:
        lines += ["", found["budget"]["explanation"]]
    if "comparison" in found:
        lines += ["", found["comparison"]["explanation"]]
    if "tuning" in found:
        lines += ["", f"{'TP':>3}  {'prefill':>8}  {'tokens/step':>11}  {'max_num_seqs':>12}  {'rate/s':>7}  "
                  f"{'tok/s/GPU':>9}"]  # fmt: skip
        for r in found["tuning"]["tried"]:
            rate = "–" if r["rate_per_s"] is None else f"{r['rate_per_s']:.2f}"
            per_gpu = "–" if r["tokens_per_s_per_gpu"] is None else f"{r['tokens_per_s_per_gpu']:,.0f}"
            lines.append(
                f"{r['tensor_parallel']:>3}  {'chunked' if r['chunked_prefill'] else 'whole':>8}  "
                f"{r['max_batched_tokens']:>11,}  {r['max_num_seqs'] or '–':>12}  {rate:>7}  {per_gpu:>9}"
                f"{'  picked' if r['picked'] else ''}{'  (' + r['refused'] + ')' if r['refused'] else ''}"
            )
        lines += ["", found["tuning"]["explanation"]]
    return lines
