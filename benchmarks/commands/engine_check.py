"""`python -m benchmarks.commands.engine_check`: hold the LLM-serving simulator to a real vLLM engine.

Without `--compare`, it measures (`benchmarks.measure.engine_check`): one vLLM OpenAI server per engine setting on
127.0.0.1, each on a decoder of the registry with random weights, its step curve, its capacity and its latencies
under Poisson rates and closed loops, written to `benchmarks/engine/<host>/<id>.json`; then it replays every load in
the simulator and prints measured against simulated (and writes the simulated side into the file). With
`--compare FILE` it only reads an engine-check file (strictly) and compares. Every bad input is one line on stderr
and exit status 2; an engine that fails is one line and status 1; every engine started is stopped.

`nox -s engine-check` runs it in an environment of its own with vLLM's CPU build (or the vLLM a GPU host has).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

from benchmarks.commands.arguments import numbers, whole, whole_numbers
from benchmarks.commands.choices import Refused
from benchmarks.contract.engine_check import DEFAULT_ENGINE_DIR
from benchmarks.contract.errors import run_command

DEFAULT_MODEL = "Tiny-Llama"
MAX_MODEL_LEN = 2048  # every setting's --max-model-len: whole-prompt steps need max-num-batched-tokens ≥ it
FULL_SEQS, QUICK_SEQS = (32, 8), (8,)
RATE_FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.9, 1.2)  # of each setting's measured capacity, for --rate's default
QUICK_FRACTIONS = (0.3, 0.9)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.commands.engine_check",
        description="Measure a real vLLM engine on this host (its OpenAI server on 127.0.0.1, a registry decoder on "
        "random weights, nothing downloaded): its step curve, its capacity, Poisson rates and closed loops, for "
        "several engine settings and length mixes; write an engine-check file and compare it with the "
        "continuous-batching simulator replaying the same requests on the engine's measured step curve. By default "
        "three settings (max_num_seqs 32 and 8 with chunked prefill, 32 without), two length mixes and two repeats "
        "(about 20 minutes on two cores); --quick is one setting, one mix, two rates (about 2 minutes).",
        epilog="Examples: `nox -s engine-check -- --quick`; `nox -s engine-check -- --max-num-seqs 16 "
        "--chunked-prefill off --rate 5,10,20`; `python -m benchmarks.commands.engine_check --compare FILE --json`.",
    )
    p.add_argument("--compare", type=Path, metavar="FILE", help="only compare this engine-check file")
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"a decoder of the registry (default {DEFAULT_MODEL}, "
                   "which a CPU serves quickly; on a GPU host e.g. Llama-3.1-8B)")  # fmt: skip
    p.add_argument("--max-num-seqs", metavar="N,...", help="running-sequence caps, one engine each (default 32,8)")
    p.add_argument("--max-batched-tokens", default="2048", metavar="N", help="tokens a step at most (default 2048)")
    p.add_argument("--chunked-prefill", choices=("on", "off", "both"), help="split prompts into steps "
                   "that also decode (default: on for each cap, plus the largest cap with it off)")  # fmt: skip
    p.add_argument("--prompt-tokens", metavar="N|DIST", help="prompt lengths, as serve llm: takes them (default: two "
                   "mixes, 128 prompt and 64 output tokens, and log-normal ones of mean 256 and 64)")  # fmt: skip
    p.add_argument("--output-tokens", metavar="N|DIST", help="output lengths (default: see --prompt-tokens)")
    p.add_argument("--rate", metavar="R,...", help="Poisson rates, requests/s (default: 10 %%, 30 %%, 50 %%, 70 %%, "
                   "90 %% and 120 %% of each setting's measured capacity)")  # fmt: skip
    p.add_argument("--concurrency", metavar="N,...", help="closed loops of N clients (default 2,8)")
    p.add_argument("--requests", metavar="N", help="requests per load (default 150; --quick 40)")
    p.add_argument("--repeats", metavar="N", help="repeats of every load, interleaved (default 2; --quick 1)")
    p.add_argument("--quick", action="store_true", help="one engine (max_num_seqs 8), one mix, two rates, a short "
                   "step curve: about two minutes")  # fmt: skip
    p.add_argument("--results-dir", type=Path, default=DEFAULT_ENGINE_DIR, help="where the file goes (%(default)s)")
    p.add_argument("--python", default=sys.executable, help="the Python that has vLLM (default: this one)")
    p.add_argument("--port", metavar="N", help="the first engine's port (default: a free one each)")
    p.add_argument("--kv-space-gib", default="1", metavar="G", help="VLLM_CPU_KVCACHE_SPACE, GiB (default 1)")
    p.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    return p


def _settings(args: argparse.Namespace, longest: int):
    from benchmarks.measure.engine_check import EngineSetting
    from benchmarks.measure.engine_server import EngineOptions

    tokens = whole(args.max_batched_tokens, "--max-batched-tokens", 16, 1_000_000)
    given = args.max_num_seqs is not None or args.chunked_prefill is not None
    seqs = whole_numbers(args.max_num_seqs, "--max-num-seqs", 1, 4096, most=8) if args.max_num_seqs else None
    if not given:
        seqs = list(QUICK_SEQS if args.quick else FULL_SEQS)
        pairs = [(n, True) for n in seqs] + ([] if args.quick else [(max(seqs), False)])
    else:
        seqs = seqs or list(QUICK_SEQS if args.quick else FULL_SEQS)
        chunked = {"on": (True,), "off": (False,), "both": (True, False), None: (True,)}[args.chunked_prefill]
        pairs = [(n, c) for n in seqs for c in chunked]
    model_len = min(MAX_MODEL_LEN, longest)
    found = []
    for n, c in pairs:
        if not c and tokens < model_len:
            raise Refused(f"--chunked-prefill off needs --max-batched-tokens of at least the model length "
                          f"({model_len:,}), as vLLM does; got {tokens:,}")  # fmt: skip
        found.append(
            EngineSetting(f"s{n}-{'chunked' if c else 'whole'}", EngineOptions(n, tokens, c, max_model_len=model_len))
        )
    return tuple(found), model_len


def _mixes(args: argparse.Namespace, model_len: int):
    import numpy as np

    from benchmarks.analysis.serving.llm.request_lengths import Lengths, clip_pairs
    from benchmarks.commands.serve_llm import parse_lengths
    from benchmarks.measure.engine_check import LengthMix

    def mix(name: str, prompts: Lengths, outputs: Lengths) -> LengthMix:
        def lengths(n: int, seed: int) -> tuple[list[int], list[int]]:
            rng = np.random.default_rng(seed)
            p, o = prompts.sample(n, rng), outputs.sample(n, rng)
            return clip_pairs([int(x) for x in p], [int(x) for x in o], model_len)

        return LengthMix(name, f"prompts {prompts.describe()}, outputs {outputs.describe()}", lengths)

    if args.prompt_tokens is not None or args.output_tokens is not None:
        prompts = parse_lengths(args.prompt_tokens or "128", "--prompt-tokens", model_len - 1)
        outputs = parse_lengths(args.output_tokens or "64", "--output-tokens", model_len - 1)
        return (mix("given", prompts, outputs),)
    fixed = mix("fixed", Lengths.fixed(128), Lengths.fixed(64))
    if args.quick:
        return (fixed,)
    return fixed, mix("lognormal", Lengths.lognormal(256, 0.8, 1536), Lengths.lognormal(64, 0.6, 400))


def _probes(quick: bool, model_len: int):
    from benchmarks.measure.engine_check import StepProbes

    top = model_len - 48
    if quick:
        return StepProbes((1, 4, 8), (32,), 24, (16, 256, 1024), (), 1)
    return StepProbes((1, 2, 4, 8, 16, 32), (32, 512, 1536), 48, (16, 64, 256, 512, 1024, top),
                      ((8, 512), (8, top), (32, 1024)), 2)  # fmt: skip


def plan_from(args: argparse.Namespace):
    """The check the options ask for; Refused (one line) for a bad option, before any engine starts."""
    from benchmarks.llm_models import find_model
    from benchmarks.measure.engine_check import CheckPlan
    from benchmarks.measure.engine_server import EngineRefused, model_config

    model = find_model(args.model)
    if model is None:
        from benchmarks.llm_models import MODELS

        raise Refused(f"--model {args.model!r}: not in the registry; choose from {', '.join(m.name for m in MODELS)}")
    try:
        config = model_config(model)
    except EngineRefused as exc:
        raise Refused(f"--model {exc}") from None
    settings, model_len = _settings(args, model.max_context)
    rates = tuple(numbers(args.rate, "--rate", 0, 10_000, above=True)) if args.rate else None
    clients = whole_numbers(args.concurrency, "--concurrency", 1, 4096, most=16) if args.concurrency else None
    return CheckPlan(
        model=model.name,
        config=config,
        settings=settings,
        mixes=_mixes(args, model_len),
        rates=rates,
        rate_fractions=QUICK_FRACTIONS if args.quick else RATE_FRACTIONS,
        concurrencies=tuple(clients) if clients else ((2,) if args.quick else (2, 8)),
        requests=whole(args.requests, "--requests", 4, 50_000) if args.requests else (40 if args.quick else 150),
        repeats=whole(args.repeats, "--repeats", 1, 20) if args.repeats else (1 if args.quick else 2),
        probes=_probes(args.quick, model_len),
        kv_space_gib=whole(args.kv_space_gib, "--kv-space-gib", 1, 4096),
    )


def main(argv: list[str] | None = None) -> int:
    return run_command(_main, sys.argv[1:] if argv is None else argv)


def _main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    path = args.compare
    if path is None:
        from benchmarks.measure.engine_check import engine_version, run_check
        from benchmarks.measure.session import check_writable

        plan = plan_from(args)
        port = whole(args.port, "--port", 1024, 65535 - len(plan.settings)) if args.port else None
        check_writable(args.results_dir, flag="--results-dir")
        engine_version(args.python)  # one line now when vLLM does not import, before the ceilings are measured
        with tempfile.TemporaryDirectory(prefix="engine-check-") as work:
            try:
                path = run_check(
                    plan,
                    args.python,
                    args.results_dir,
                    ["python", "-m", "benchmarks.commands.engine_check", *argv],
                    Path(work),
                    port,
                )
            except KeyboardInterrupt:
                print("engine check interrupted; every engine is stopped and the loads measured so far are kept",
                      file=sys.stderr)  # fmt: skip
                return 130
    from benchmarks.analysis.serving.llm.engine_comparison import compare_file, record_simulated

    found = compare_file(path)  # a ResultsError is main's one line
    if args.compare is None:
        record_simulated(path, found)
    if args.json:
        from benchmarks.analysis.serving.llm.engine_comparison import summary

        print(json.dumps(summary(found), indent=1, allow_nan=False))
    else:
        print(format_table(found))
    return 0 if all(math.isfinite(x.measured.ttft_p50_ms) for x in found.loads) else 1


def _cell(measured: float, simulated: float) -> str:
    ratio = simulated / measured if measured > 0 and math.isfinite(simulated) else math.nan
    return f"{measured:8.1f} {simulated:8.1f} {ratio:5.2f}"


def format_table(found) -> str:
    """The comparison as plain text: every load measured against simulated (the engine's curve), then the accuracy
    against the targets below 80 % of capacity."""
    from benchmarks.analysis.serving.llm.engine_comparison import BELOW, Accuracy, accuracy

    doc = found.check.doc
    e = doc["engine"]
    lines = [
        f"{e['name']} {e['version']} on {doc['host']['name']} ({e['device']}), {e['model']}, check {found.check.id}",
        f"simulated on {found.step_description}",
        f"{'load':44} {'TTFT p50 ms  sim  ratio':>23} {'TTFT p99 ms  sim  ratio':>23} {'TPOT p50 ms  sim  ratio':>23} "
        f"{'TPOT p99 ms  sim  ratio':>23} {'tokens/s   sim  ratio':>23}",
    ]
    for x in found.loads:
        m, s = x.measured, x.simulated
        lines.append(f"{x.name:44} " + " ".join(_cell(getattr(m, k), getattr(s, k)) for k in (
            "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "output_tokens_per_s")))  # fmt: skip
    a = accuracy(found)
    lines.append(f"below {BELOW:.0%} of capacity, simulated within its band of measured:")
    for metric, (within, of) in a.within.items():
        error = a.median_error[metric]
        lines.append(f"  {metric:20} {within}/{of} loads within ±{Accuracy.band(metric):.0%}, median error "
                     f"{error:.0%}" if of else f"  {metric:20} no load compared")  # fmt: skip
    for setting, mix, measured, simulated in a.capacity:
        lines.append(f"  capacity {setting} {mix}: measured {measured:.1f}/s, simulated {simulated:.1f}/s")
    for setting, mix, measured, simulated in a.preemptions_start:
        lines.append(f"  preemptions {setting} {mix}: measured from {measured or 'none'}, simulated from "
                     f"{simulated or 'none'}")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
