"""The page "Serving LLMs with continuous batching": the front of total against per-user tokens per second for
Llama-3-8B on three datasheet GPUs, latencies against concurrency with the KV limit, chunked prefill's effect, a
budget's answer, the published serving checks and the lesson; the notebook writes the rest (the engines' settings).

Every number here is a simulation (`benchmarks.analysis.serving.llm.engine_loop`) on the forecast step (a datasheet
roofline slowed by efficiencies fitted to published figures) or on the bare roofline, the ceiling, or a figure others
published (benchmarks/published/serving.json), and the page says which.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cache

from benchmarks.analysis.published.serving_figures import ServingRowCheck, serving_checks
from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.roofline.cited_figures import KERNEL_LAUNCH_S
from benchmarks.analysis.roofline.cost_model import ALLREDUCE_LATENCY_S
from benchmarks.analysis.roofline.forecast import percent
from benchmarks.analysis.serving.llm.disaggregated import DeploymentComparison, Split, compare, nvlink
from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.forecast_step import ForecastStep
from benchmarks.analysis.serving.llm.planning import FrontPoint, front, kv_limit, plan
from benchmarks.analysis.serving.llm.prefix_cache import SharedPrefix
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.roofline_step import KERNELS_PER_LAYER, LAYER_KERNELS, RooflineStep
from benchmarks.analysis.serving.llm.run_result import Budget, Result
from benchmarks.analysis.serving.llm.steady_state import simulate_steady
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import LLAMA_3_3_70B, LLAMA_3_8B
from benchmarks.site import text
from benchmarks.site.charts import figure
from benchmarks.site.charts.llm_serving import front_chart, token_latency_chart
from benchmarks.site.forecasts import short_error
from benchmarks.site.llm_serving_words import explain, rate_check_words
from benchmarks.site.pages import engine_check
from benchmarks.site.render import Details, Page, Paragraph, Table, autolink, code, strong

MODEL = LLAMA_3_8B
DTYPE = "bfloat16"
GPUS = ("NVIDIA L4", "NVIDIA H100 SXM", "NVIDIA H200")
FOCUS = "NVIDIA H100 SXM"
PROMPT, OUTPUT = 1000, 200
CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
REQUESTS = 400  # per closed loop (at least four per client)
CHUNK = 2048  # tokens a step with chunked prefill (vLLM's default for it)
BUDGET = Budget(0.050)
PROMPTS_FIRST, CHUNKED = "prompts first", f"chunked prefill ({CHUNK:,} tokens a step)"
PREFIX_TOKENS, PREFIX_SHARES, PREFIX_RATE = 800, (0.0, 0.5, 0.9), 20.0  # a shared system prompt, Poisson req/s
SPLIT_GPU, SPLIT_TP, SPLIT = "NVIDIA H200", 2, Split(2, 2, 2)
SPLIT_MODEL, SPLIT_LENGTHS = LLAMA_3_3_70B, (2000, 200)
SPLIT_BUDGET = Budget(0.030, 1.0)  # a little above the forecast's plain decode step there (about 25 ms)
CHECK_HEADERS = ["published by", "configuration", "published figure", "predicted (ratio)", "forecast (error)",
                 "what differs"]  # fmt: skip


@dataclass(frozen=True)
class ChartedSetting:
    gpu: str
    step: RooflineStep
    prompt: Lengths
    output: Lengths
    engine: Engine

    @property
    def limit(self) -> int:
        return kv_limit(self.step, self.engine, self.prompt, self.output)


def setting(gpu: str, engine: Engine | None = None, forecast: bool = True) -> ChartedSetting:
    """One GPU's setting, on the forecast step (the roofline slowed by the decode efficiencies calibrated on
    published figures, as `serve llm` answers) or on the ceiling's (`forecast=False`)."""
    step = RooflineStep(MODEL, find_gpu(gpu), DTYPE)
    if forecast:
        step = ForecastStep.of(step, calibration_file.committed().efficiency("decode", DTYPE))
    return ChartedSetting(gpu, step, Lengths.fixed(PROMPT), Lengths.fixed(OUTPUT), engine or Engine(cuda_graphs=True))


@cache
def fronts(forecast: bool = True) -> dict[str, list[FrontPoint]]:
    """Closed loops of each concurrency, prompts first, on each GPU (the forecast's, or the ceiling's)."""
    found = {}
    for gpu in GPUS:
        s = setting(gpu, forecast=forecast)
        wanted = [c for c in CONCURRENCY if c <= 2 * s.limit] or [1]
        found[gpu] = front(s.step, s.engine, s.prompt, s.output, wanted, n_requests=REQUESTS)
    return found


@cache
def chunked_front(forecast: bool = True) -> list[FrontPoint]:
    s = setting(FOCUS, Engine(chunked_prefill=True, max_batched_tokens=CHUNK, cuda_graphs=True), forecast)
    return front(s.step, s.engine, s.prompt, s.output, [c for c in CONCURRENCY if c <= 2 * s.limit],
                 n_requests=REQUESTS)  # fmt: skip


def decode_error() -> float:
    """The median |forecast ÷ published − 1| of the published decode figures on one GPU, cross-validated: the
    half-width of the band the charts draw around the forecast."""
    return calibration_file.committed().expected_for("decode", 1).median


def published_span(error: float) -> tuple[float, float]:
    """Where a published figure falls for a forecast rate of 1 when |forecast ÷ published − 1| ≤ `error`."""
    return 1 / (1 + error), 1 / (1 - error)


@cache
def budget_plan():
    return answer_plan(FOCUS, False, forecast=False)


@cache
def checks() -> list[ServingRowCheck]:
    return serving_checks()


def build() -> Page:
    budget, share = budget_answer(), text.h(ratios_by_rows())
    return Page(
        {
            "answer": answer_parts(),
            "predicted_memory_and_step_time_by_gpu": memory_and_step_time_by_gpu(),
            "predicted_front_by_gpu": predicted_front(),
            "predicted_latencies_and_chunked_prefill": predicted_latencies(),
            "largest_concurrency_within_budget": largest_concurrency_within_budget(),
            "published_results_against_predictions": published_against_predicted(),
            "prefix_caching_and_disaggregation": prefix_caching_and_disaggregation(),
            "checked_against_a_real_engine": real_engine_parts(),
        },
        extra={"budget_answer": budget, "published_share_of_roofline": share},
        lesson=lesson(budget, share),
    )


# --------------------------------------------------------------------------- the answer box

ANSWER_HEADERS = ["GPU", "max_num_seqs", "chunked prefill", "TP", "Poisson rate within it",
                  "output tokens/s (forecast)", "what binds"]  # fmt: skip


def answer_cases() -> list[tuple[str, Engine | None]]:
    """The worked cases: every GPU of the page prompts first, and the focus GPU with chunked prefill."""
    return [(gpu, None) for gpu in GPUS] + [(FOCUS, Engine(chunked_prefill=True, max_batched_tokens=CHUNK))]


@cache
def answer_plan(gpu: str, chunked: bool, forecast: bool = True):
    """The budget's plan for one case: on the forecast step (the roofline slowed by the decode efficiencies
    calibrated on published figures, as `serve llm` answers), or on the bare roofline (`forecast=False`)."""
    s, step = answer_setting(gpu, chunked, forecast)
    return plan(step, s.engine, s.prompt, s.output, BUDGET, n_requests=1000)


def answer_setting(gpu: str, chunked: bool, forecast: bool = True):
    """One case's setting and the step it is planned on: the forecast's, or the bare roofline's."""
    s = setting(gpu, Engine(chunked_prefill=True, max_batched_tokens=CHUNK) if chunked else None, forecast)
    return s, s.step


def one_sequence_step_s(gpu: str, chunked: bool) -> float:
    """A decode step of one sequence alone at its mean context (prompt and half the answer), in the forecast: what
    a request that misses the budget on its own takes per token."""
    step = answer_setting(gpu, chunked)[1]
    return step.detail(step.decode_work(1, PROMPT + OUTPUT / 2)).seconds


def answer_row(gpu: str, engine: Engine | None) -> list[str]:
    chunked = engine is not None
    found = answer_plan(gpu, chunked)
    prefill = f"on, {CHUNK:,} tokens a step" if chunked else "off (prompts first)"
    tp = str(setting(gpu, engine).step.tensor_parallel)
    if found is None:
        alone = one_sequence_step_s(gpu, chunked)
        why = f"one sequence's decode step takes {alone * 1e3:.0f} ms"
        return [gpu, "none: one request misses it", prefill, tp, "none", "–", why]
    rate = f"{found.rate_per_s:.2g}/s" if found.rate_per_s else "none found"
    return [gpu, str(found.max_num_seqs), prefill, tp, rate, f"{found.result.tokens_per_s:,.0f}", BINDS[found.binds]]


def answer_parts() -> list:
    """The answer box: the engine settings that keep the time per output token within the budget for each worked
    case and the load they carry, on the calibrated forecast, with its expected error."""
    caption = (
        f"Forecast (nothing measured): {MODEL.name} in {DTYPE}, {PROMPT:,}-token prompts and {OUTPUT}-token answers, "
        f"{BUDGET.describe()}; each step the datasheet roofline slowed by the decode efficiencies calibrated on "
        f"published figures, expected error {short_error('decode', {})}; max_num_seqs: vLLM's running-sequence cap "
        "(TensorRT-LLM's max_batch_size), TP: tensor-parallel GPUs"
    )
    return [
        Table(ANSWER_HEADERS, [answer_row(gpu, engine) for gpu, engine in answer_cases()], caption),
        Paragraph(
            [
                code(
                    f"python -m benchmarks serve llm:{MODEL.name} --gpu H100 --prompt-tokens {PROMPT} "
                    f"--output-tokens {OUTPUT} --tpot-budget-ms {BUDGET.tpot_s * 1e3:g}"
                ),
                " gives the same forecast for other lengths, GPUs and budgets (",
                code("--ceiling"),
                " the bare roofline, which the charts below draw dashed beside the forecast).",
            ]
        ),
    ]


def _ms(seconds: float) -> str:
    return text.fmt_time(seconds)


BINDS = {"kv-memory": "the KV memory binds", "step-time": "the step time binds", "prefills": "prefill stalls bind",
         "time-to-first-token": "the time to first token binds"}  # fmt: skip


# --------------------------------------------------------------------------- the setup


def memory_cell(gpu) -> str:
    """A GPU's memory in GiB with where it comes from: the driver's total where known, else the datasheet's."""
    where = "as its driver reports it" if gpu.memory_from == "driver" else "the datasheet's GB read as GiB"
    return f"{text.fmt_bytes(gpu.memory_bytes)} ({where})"


def fixed_cost_words(step: RooflineStep) -> list:
    """Where the fixed cost per step comes from: one published launch time for each kernel the model counts."""
    source, url = KERNEL_LAUNCH_S.source.rsplit(" (", 1)
    return [
        f"The fixed cost per step is {_ms(step.fixed_s)}: one published kernel-launch time "
        f"({KERNEL_LAUNCH_S.value * 1e6:g} µs, {source}, ",
        autolink(url.rstrip(")")),
        f") for each of the {KERNELS_PER_LAYER} kernels this model counts in a layer ({', '.join(LAYER_KERNELS)}), "
        f"times {step.model.config.layers} layers. It is a count of operations, not of any engine's kernels: engines "
        "fuse some and split others.",
    ]


def memory_and_step_time_by_gpu() -> list:
    """The model's weights and KV cache per token, and per GPU its memory, KV blocks, the sequences that fit and the
    decode step's time for one sequence and for a full cache."""
    rows = []
    for gpu in GPUS:
        s = setting(gpu, forecast=False)
        step = s.step
        one = step.detail(step.decode_work(1, PROMPT + OUTPUT / 2)).seconds
        full = step.detail(step.decode_work(max(1, s.limit), PROMPT + OUTPUT / 2)).seconds
        rows.append([
            gpu, memory_cell(s.step.gpu), text.fmt_bytes(step.weight_bytes),
            f"{step.kv_blocks():,}", f"{s.limit:,}", _ms(one), _ms(full), _ms(step.fixed_s),
        ])  # fmt: skip
    step = setting(FOCUS, forecast=False).step
    return [
        Paragraph(
            [
                strong("Predicted from the datasheet: "),
                f"{MODEL.name} in {DTYPE} holds {text.fmt_bytes(step.weight_bytes)} of weights (its embedding and "
                f"its output head counted) and {text.fmt_bytes(step.kv_bytes_per_token)} of K and V per cached "
                f"token. Requests have {PROMPT:,}-token prompts and {OUTPUT:,}-token answers, so a sequence ends "
                f"holding {PROMPT + OUTPUT:,} tokens ({-(-(PROMPT + OUTPUT) // 16)} blocks of 16). The step time at "
                f"the mean context ({PROMPT + OUTPUT // 2:,} tokens) is shown for one sequence and for as many as "
                "the KV cache holds:",
            ]
        ),
        Table(
            [
                "GPU",
                "memory (GiB)",
                "weights",
                "KV blocks (90 % of memory)",
                "sequences that fit",
                "decode step, 1 sequence",
                "decode step, cache full",
                "fixed cost per step",
            ],
            rows,
            "Datasheet roofline (the ceiling, not the forecast); nothing measured. Model dimensions: " + MODEL.source,
        ),
        Details("Where the fixed cost per step comes from", [Paragraph(fixed_cost_words(step))]),
    ]


# --------------------------------------------------------------------------- the front


def front_rows(forecast: bool = True) -> list[dict]:
    return [
        {
            "gpu": gpu,
            "concurrency": p.concurrency,
            "total": p.result.tokens_per_s,
            "per_user": p.result.tokens_per_s_per_user,
            "kv_peak": p.result.kv_peak_share,
            "kv": "full" if p.result.kv_peak_share >= 0.99 else "room left",
        }
        for gpu, points in fronts(forecast).items()
        for p in points
    ]


def one_user_and_best_total_by_gpu() -> str:
    """Per GPU: the rate one user gets, and the most tokens per second in all, at what concurrency, in the forecast;
    and the ceiling's most."""
    said = []
    ceilings = fronts(False)
    for gpu, points in fronts().items():
        best = max(points, key=lambda p: p.result.tokens_per_s)
        alone = points[0].result
        top = max(p.result.tokens_per_s for p in ceilings[gpu])
        said.append(
            f"on the {gpu} one user gets {alone.tokens_per_s_per_user:,.0f} tokens/s, and the most in all is "
            f"{best.result.tokens_per_s:,.0f} tokens/s at {best.concurrency} clients, "
            f"{best.result.tokens_per_s_per_user:,.0f} each while an answer streams and "
            f"{best.result.tokens_per_s_per_user_with_first:,.0f} each counting the wait for the first token "
            f"(the ceiling: {top:,.0f} in all)"
        )
    return (
        f"Forecast (±{percent(decode_error())} median; prompts first): "
        + "; ".join(said)
        + f". {PER_USER} Past the KV limit the total stops rising: more clients only wait for blocks."
    )


PER_USER = (
    "Per user here means 1 ÷ the median time per output token, what a user sees while its answer streams, the wait "
    "for the first token left out; counting that wait, a user gets its output tokens ÷ the time from sending its "
    "request to the last token (the median over requests), which times the clients gives the total."
)


def forecast_label() -> str:
    """What the charts draw: the forecast with its band, the ceiling dashed, and the error behind the band."""
    error = short_error("decode", {})
    return f"forecast solid, its band the median error ({error}, published decode figures), ceiling dashed"


def predicted_front() -> list:
    """The chart of total against per-user tokens per second on every GPU, and what it reaches on each."""
    chart = front_chart(
        front_rows(),
        f"Tokens per second in all against per user: {MODEL.name}, {DTYPE}",
        [
            "Forecast: the datasheet roofline slowed by efficiencies fitted to published figures; nothing measured.",
            f"Closed loops of 1–512 clients (up to twice the KV limit), {PROMPT:,}-token prompts, {OUTPUT}-token "
            "answers, prompts first;",
            forecast_label(),
        ],
        published_span(decode_error()),
        front_rows(False),
    )
    return [
        figure(
            chart,
            "llm-serving-front",
            f"Forecast front of {MODEL.name} on the L4, H100 SXM and H200",
            "Log-log chart, one line per GPU: output tokens per second of all users against tokens per second per "
            "user, one point per number of concurrent clients, crosses where the KV cache is full; a faint segment "
            "through each point spans the forecast's median error, and a dashed line per GPU is the datasheet "
            "ceiling. Forecasts from the continuous-batching simulator; nothing measured.",
        ),
        Paragraph(one_user_and_best_total_by_gpu()),
    ]


# --------------------------------------------------------------------------- latencies


def latency_rows(forecast: bool = True, percentiles: tuple[int, ...] = (50, 99)) -> list[dict]:
    rows = []
    for series, points in ((PROMPTS_FIRST, fronts(forecast)[FOCUS]), (CHUNKED, chunked_front(forecast))):
        for p in points:
            for metric, name in (("ttft_ms", "ttft"), ("tpot_ms", "tpot")):
                for q in percentiles:
                    rows.append({"series": series, "concurrency": p.concurrency, "metric": metric,
                                 "percentile": f"p{q}", "ms": p.result.percentile(name, q) * 1e3})  # fmt: skip
    return rows


def latency_band_rows() -> list[dict]:
    """The span the decode error gives the prompts-first p50 time per output token of the forecast."""
    fast, slow = published_span(decode_error())
    return [
        {"concurrency": r["concurrency"], "fast_ms": r["ms"] / slow, "slow_ms": r["ms"] / fast}
        for r in latency_rows(percentiles=(50,))
        if r["series"] == PROMPTS_FIRST and r["metric"] == "tpot_ms"
    ]


def why_time_per_token_rises() -> str:
    """Why the per-token time rises: the decode step's two parts at small and large batch."""
    s = setting(FOCUS)
    context = PROMPT + OUTPUT / 2
    small, large = (s.step.detail(s.step.decode_work(b, context)) for b in (1, s.limit))
    return (
        f"Why more running sequences raise the time per token (forecast, {FOCUS}): a decode step reads every "
        f"weight once whatever the batch, and each sequence's own cache. With one sequence the matrix products take "
        f"{_ms(small.matmul_s)} ({small.matmul_bound}-bound) and the attention {_ms(small.attention_s)}; with "
        f"{s.limit} sequences the matrix products take {_ms(large.matmul_s)} ({large.matmul_bound}-bound) and the "
        f"attention over their caches {_ms(large.attention_s)} ({large.attention_bound}-bound). The weights are "
        "shared by the batch; the caches are not, so from the first sequence each one adds its cache read to every "
        "step, and once the matrix products turn compute-bound each adds its arithmetic too. On top of that, every "
        "new prompt is a prefill: with prompts first it takes a step of its own while every running sequence waits."
    )


def what_chunked_prefill_changes() -> str:
    """The longest gap between tokens, the p99 time per output token and the p50 time to first token, prompts first
    against chunked prefill, at the largest concurrency up to 64."""
    whole = {p.concurrency: p.result for p in fronts()[FOCUS]}
    cut = {p.concurrency: p.result for p in chunked_front()}
    c = max(k for k in cut if k in whole and k <= 64)
    w, k = whole[c], cut[c]
    return (
        f"Chunked prefill (forecast, {FOCUS}, {c} clients): the longest gap between two tokens falls from "
        f"{_ms(float(w.itl_s.max()))} with prompts first to {_ms(float(k.itl_s.max()))} when prompts are cut into "
        f"pieces of at most {CHUNK:,} tokens that share steps with decoding, and the p99 time per output token "
        f"moves from {_ms(w.percentile('tpot', 99))} to {_ms(k.percentile('tpot', 99))}; the p50 time to first "
        f"token moves from {_ms(w.percentile('ttft', 50))} to {_ms(k.percentile('ttft', 50))}. The work is the "
        "same; chunking spreads each prompt's cost over several steps instead of stopping every stream for one."
    )


def predicted_latencies() -> list:
    """The chart of time to first token and per output token against concurrency, why the time per token rises,
    and what chunked prefill changes."""
    s = setting(FOCUS)
    chart = token_latency_chart(
        latency_rows(),
        s.limit,
        f"Time to first token and per output token against concurrency: {MODEL.name}, {DTYPE}, {FOCUS}",
        [
            "Forecast: the datasheet roofline slowed by efficiencies fitted to published figures; nothing measured.",
            f"Closed loops, {PROMPT:,}-token prompts, {OUTPUT}-token answers; solid p50, dashed p99; dotted rule: "
            "the KV cache full;",
            f"shaded: the p50 time per token's median error ({short_error('decode', {})}); thin dotted: the "
            "ceiling's p50",
        ],
        latency_band_rows(),
        latency_rows(False, (50,)),
    )
    return [
        figure(
            chart,
            "llm-serving-latency",
            f"Forecast latencies of {MODEL.name} on the {FOCUS} against concurrency",
            "Two log-log panels against the number of concurrent clients: time to first token and time per output "
            "token, at p50 and p99, for prompts first and for chunked prefill, with a rule where the KV cache is "
            "full, a shaded span of the forecast's median error around the p50 time per token, and the ceiling's "
            "p50 as thin dotted lines. Forecasts from the continuous-batching simulator; nothing measured.",
        ),
        Paragraph(why_time_per_token_rises()),
        Paragraph(what_chunked_prefill_changes()),
    ]


# --------------------------------------------------------------------------- the budget


def largest_concurrency_within_budget() -> list:
    """The budget's answer on the focus GPU (the concurrency, the arrival rate and what binds), and the command that
    gives it."""
    found = budget_plan()
    if found is None:
        return [Paragraph(f"No concurrency meets {BUDGET.describe()} on the {FOCUS} in this model.")]
    checked = rate_check_words(found).strip()
    return [
        Paragraph(
            [
                strong(
                    f"Predicted, {MODEL.name} in {DTYPE} on the {FOCUS}, prompts first, {PROMPT:,}/{OUTPUT} tokens: "
                ),
                explain(found, rate_check=False),
            ]
        ),
        *([Details("How that rate was checked", [Paragraph(checked)])] if checked else []),
        Paragraph(
            [
                "The same answer from the command line: ",
                code(
                    f"python -m benchmarks serve llm:{MODEL.name} --gpu H100 --prompt-tokens {PROMPT} "
                    f"--output-tokens {OUTPUT} --tpot-budget-ms {BUDGET.tpot_s * 1e3:g} --ceiling"
                ),
                ". The roofline is an upper bound on speed; the share of it the published checks below reach is, "
                f"{ratios_by_rows()}. Without ",
                code("--ceiling"),
                " the command answers with the forecast: each step's operations divided by the efficiencies fitted "
                "to published figures, with the error those figures showed (the page Checked against published "
                "measurements).",
            ]
        ),
    ]


# --------------------------------------------------------------------------- prefix caching, disaggregation


@cache
def prefix_runs() -> list[tuple[float, Result]]:
    """Poisson arrivals on the focus GPU with a share of prompts beginning with one shared prefix, each run long
    enough to be steady (`simulate_steady`)."""
    s = setting(FOCUS, Engine(cuda_graphs=True))
    found = []
    for share in PREFIX_SHARES:
        engine = Engine(cuda_graphs=True, prefix=SharedPrefix(PREFIX_TOKENS, share))
        run = simulate_steady(s.step, engine, s.prompt, s.output, rate_per_s=PREFIX_RATE, n_requests=1000)
        found.append((share, run))
    return found


@cache
def split_comparison() -> DeploymentComparison:
    """Aggregated against disaggregated serving on the forecast step (as `serve llm --disaggregate` answers)."""
    ceiling = RooflineStep(SPLIT_MODEL, find_gpu(SPLIT_GPU), DTYPE, tensor_parallel=SPLIT_TP)
    step = ForecastStep.of(ceiling, calibration_file.committed().efficiency("decode", DTYPE))
    prompt, output = (Lengths.fixed(n) for n in SPLIT_LENGTHS)
    return compare(step, Engine(cuda_graphs=True), prompt, output, SPLIT_BUDGET, SPLIT, nvlink(step.gpu))


def prefix_rows() -> list[list[str]]:
    rows = []
    for share, r in prefix_runs():
        cached = "–" if share == 0 else f"{r.prefix_hit_share * 100:.1f} %"
        rows.append([
            f"{share * 100:.0f} %", cached, f"{r.prefilled_tokens / (r.requests * PROMPT) * 100:.0f} %",
            _ms(r.percentile("ttft", 50)), _ms(r.percentile("ttft", 99)), _ms(r.percentile("tpot", 99)),
            f"{r.kv_peak_share * 100:.1f} %",
        ])  # fmt: skip
    return rows


def split_rows(c: DeploymentComparison) -> list[list[str]]:
    def row(name: str, rate: float | None, run: Result | None, per_gpu: float | None) -> list[str]:
        if rate is None or run is None:
            return [name, "no rate meets it", "–", "–", "–"]
        return [name, f"{rate:.2f}", f"{per_gpu:,.0f}", _ms(run.percentile("ttft", 99)),
                _ms(run.percentile("tpot", 99))]  # fmt: skip

    d = None if c.disaggregated is None else c.disaggregated.result
    return [
        row(f"aggregated: {c.aggregated_replicas} engines of {SPLIT_TP} GPUs", c.aggregated_rate, c.aggregated,
            c.aggregated_per_gpu),
        row(f"disaggregated: {SPLIT.describe()}", c.disaggregated_rate, d, c.disaggregated_per_gpu),
    ]  # fmt: skip


def longest_gap_ratio(run: Result) -> float:
    """The longest gap between two tokens of a stream over the median gap: a prefill that stops the streams shows
    as a gap several plain steps long."""
    return float(run.itl_s.max()) / run.percentile("itl", 50)


def why_split_wins(c: DeploymentComparison) -> str:
    """Why disaggregation wins, said only when the runs show it: the aggregated streams stop for prefills (their
    longest gap between tokens over twice the median) and the decode engines' do not (within 1.25 times)."""
    if c.winner != "disaggregated" or c.aggregated is None or c.disaggregated is None:
        return ""
    a, d = c.aggregated, c.disaggregated.result
    if not (longest_gap_ratio(a) > 2 and longest_gap_ratio(d) < 1.25):
        return ""
    return (
        f" In the aggregated engines a prompt stops every stream for a step of its own: their longest gap between "
        f"tokens is {_ms(float(a.itl_s.max()))} against a median of {_ms(a.percentile('itl', 50))}, so a budget this "
        f"close to the plain decode step leaves room for few such stops and they meet it only with "
        f"{a.mean_running:.1f} sequences running on average; the decode engines never compute a prompt (longest gap "
        f"{_ms(float(d.itl_s.max()))}) and run {d.mean_running / SPLIT.decode:.1f} each."
    )


def forecast_error_words(tensor_parallel: int) -> str:
    """'median error ±14 % decode, ±24 % prefill': what the forecast misses published figures by, on one GPU or split
    over `tensor_parallel` > 1."""
    c = calibration_file.committed()
    decode, prefill = c.expected_for("decode", tensor_parallel), c.expected_for("prefill", tensor_parallel)
    return f"median error ±{percent(decode.median)} decode, ±{percent(prefill.median)} prefill"


def prefix_caching_and_disaggregation() -> list:
    """Prefix caching at three shares of prompts with a shared prefix, and aggregated against disaggregated serving
    for one case: both simulated on the forecast step, with the error the forecast carries there."""
    c = split_comparison()
    verdict = {None: "neither meets the budget", "aggregated": "aggregated serving gives more tokens/s per GPU",
               "disaggregated": "disaggregated serving gives more tokens/s per GPU"}[c.winner]  # fmt: skip
    link = c.link.describe()
    return [
        Paragraph(
            [
                strong(f"Forecast ({MODEL.name}, {DTYPE}, {FOCUS}; {forecast_error_words(1)}): "),
                f"{PROMPT:,}-token prompts and {OUTPUT}-token answers arriving at random at {PREFIX_RATE:g} "
                f"requests/s, a share of them beginning with the same {PREFIX_TOKENS}-token prefix (a system prompt) "
                "whose whole KV blocks the engine caches: a prompt that finds them is computed from after them, "
                "and every sequence holds the one copy.",
            ]
        ),
        Table(
            [
                "prompts with the prefix",
                "its blocks found cached",
                "prompt tokens computed",
                "TTFT p50",
                "TTFT p99",
                "TPOT p99",
                "KV cache at peak",
            ],
            prefix_rows(),
            f"Forecast for the {FOCUS}, {DTYPE}; nothing measured",
        ),
        Paragraph(
            [
                strong(
                    f"Forecast ({SPLIT_MODEL.name}, {DTYPE}, {SPLIT.gpus} × {SPLIT_GPU}; "
                    f"{forecast_error_words(SPLIT_TP)}): "
                ),
                f"{SPLIT_LENGTHS[0]:,}-token prompts and {SPLIT_LENGTHS[1]}-token answers, the budget "
                f"{SPLIT_BUDGET.describe()}. Each deployment is run at the largest random arrival rate that meets it; "
                f"tokens/s per GPU is that rate times the answer's length over the {SPLIT.gpus} GPUs. In the "
                f"disaggregated one each prompt's KV cache crosses {link}. Here {verdict}.{why_split_wins(c)}",
            ]
        ),
        Table(
            ["deployment", "largest rate, requests/s", "output tokens/s per GPU", "TTFT p99", "TPOT p99"],
            split_rows(c),
            f"Forecast for the {SPLIT_GPU}, {DTYPE}, tensor parallel {SPLIT_TP}; nothing measured",
        ),
        Paragraph(
            [
                "From the command line: ",
                code(
                    f"python -m benchmarks serve llm:{MODEL.name} --gpu H100 --rate {PREFIX_RATE:g} --prefix-tokens "
                    f"{PREFIX_TOKENS} --prefix-hit 0.5"
                ),
                " and ",
                code(
                    f"python -m benchmarks serve llm:{SPLIT_MODEL.name} --gpu H200 --tp {SPLIT_TP} --disaggregate "
                    f"{SPLIT.prefill}:{SPLIT.decode} --prompt-tokens {SPLIT_LENGTHS[0]} --output-tokens "
                    f"{SPLIT_LENGTHS[1]} --tpot-budget-ms {SPLIT_BUDGET.tpot_s * 1e3:g} --ttft-budget-ms "
                    f"{SPLIT_BUDGET.ttft_s * 1e3:g}"
                ),
                ".",
            ]
        ),
    ]


# --------------------------------------------------------------------------- published checks


STEADY_FIGURES = ("tokens_per_s", "itl_mean", "tokens_per_s_at_budget")


def throughput_ratios() -> list[float]:
    """Ratios of the rows that compare a throughput or the mean gap between tokens under a stated load."""
    return [c.ratio for c in checks() if c.row.setup.figure in STEADY_FIGURES]


def other_checks() -> list[ServingRowCheck]:
    """The rows that compare a time to first token or a time per output token at a published rate."""
    return [c for c in checks() if c.row.setup.figure not in STEADY_FIGURES]


def ratio_range(values: list[float]) -> str:
    low, high = f"{min(values):.2f}", f"{max(values):.2f}"
    return low if low == high else f"{low}–{high}"


def ratios_by_rows() -> str:
    """The published ÷ predicted ratios over every row of the table, each range naming the rows it covers."""
    steady, others = throughput_ratios(), other_checks()
    said = f"on the {len(steady)} rows that compare a throughput or the mean gap between tokens, {ratio_range(steady)}"
    if others:
        names = "; ".join(f"{c.row.source['short']}, {c.row.metric.split(' at ')[0]}: {c.ratio:.2f}" for c in others)
        said += (
            f"; on the other {len(others)}, which compare a time to first token or a time per output token "
            f"({names}), {ratio_range([c.ratio for c in others])}"
        )
    return said


def what_differs(check: ServingRowCheck) -> str:
    s, r = check.row.setup, check.result
    said = [s.assumptions]
    if s.tensor_parallel > 1:
        said.append(
            f"the all-reduces between the {s.tensor_parallel} GPUs are counted at the datasheet's link bandwidth with "
            f"an assumed {ALLREDUCE_LATENCY_S.value * 1e6:g} µs a call"
        )
    if r.preemptions:
        said.append(f"the model preempted {r.preemptions:,} times (recompute) where an engine may reserve caches")
    if s.figure == "ttft_mean" and s.clients is not None:
        said.append("the model leaves each client's first request (all sent at once) out of its latencies")
    if s.figure in ("tpot_mean", "tpot_p99"):
        said.append(
            f"at this rate the modelled engine holds {r.mean_running:,.0f} sequences on average; the published run "
            "held about 450 per GPU (Little's law on the summary: 100.35 ÷ 8 requests/s × a 35.85 s mean "
            "latency), so its steps were several times longer, and a slower step keeps more requests in flight"
        )
    return "; ".join(said)


def cross_validated() -> dict[str, calibration_file.CommittedForecast]:
    """Each published serving row as the calibration forecast it without its source (the committed file's
    leave-one-source-out study, the published page's)."""
    forecasts = calibration_file.committed().forecasts
    return {c.row.id: forecasts[c.row.id] for c in checks()}


def error_cell(forecast: calibration_file.CommittedForecast) -> str:
    return f"{forecast.error * 100:+.0f} %"


def check_row(check: ServingRowCheck, outcome: calibration_file.CommittedForecast) -> list:
    row = check.row
    unit = row.unit
    fmt = (lambda v: f"{v:,.1f} {unit}") if unit == "ms" else (lambda v: f"{v:,.0f} {unit}")
    return [
        f"{row.source['short']} ({row.status})",
        f"{row.configuration['hardware']}; {row.configuration['model']}; {row.configuration['lengths']}; "
        f"{row.configuration['load']}",
        f"{row.metric}: {fmt(row.value)}",
        f"{fmt(check.predicted)} ({check.ratio:.2f})",
        f"{fmt(outcome.forecast)} ({error_cell(outcome)})",
        what_differs(check) + ("" if outcome.fitted else f"; forecast {outcome.note}"),
    ]


def forecast_errors_words(outcomes: list[calibration_file.CommittedForecast]) -> str:
    """The median |error| of the rows' forecasts, over the rows the step time sets and over all of them."""
    fitted = sorted(abs(o.error) for o in outcomes if o.fitted)
    every = sorted(abs(o.error) for o in outcomes)
    said = "Forecast instead, by the efficiencies fitted to the other sources' figures (the calibration of the page "
    said += "“Checked against published measurements”), "
    if fitted:
        said += (
            f"the {len(fitted)} rows whose figure the step time sets land within a median "
            f"{percent(statistics.median(fitted))} of the published figure (largest {percent(fitted[-1])}; the "
            "error, in brackets after the forecast, is forecast ÷ published − 1); "
        )
    return (
        f"{said}over all {len(every)} rows the median is {percent(statistics.median(every))}. The rows the queue "
        "sets (a time to first token under load, a run at a fixed Poisson rate) are forecast but not fitted: their "
        "errors are the simulated queue's as much as the step's."
    )


def sources_paragraph(sources: list[tuple[str, str, str]]) -> Paragraph:
    return Paragraph(
        [
            "Sources: ",
            *[
                part
                for short, url, locator in sources
                for part in (strong(short), ", ", locator, ": ", autolink(url), ". ")
            ],
            "The MLPerf run mixes each prompt into the batches of the sequences decoding (in-flight batching), so its "
            "model must put every prefill's work into those steps: chunked prefill does, and the prompts' lengths "
            "then change each step's time.",
        ]
    )


def published_against_predicted() -> list:
    """The published serving figures beside the simulator's predictions for the same setups, with their sources."""
    found, outcomes = checks(), cross_validated()
    sources = list(dict.fromkeys((c.row.source["short"], c.row.source["url"], c.row.source["locator"]) for c in found))
    return [
        Paragraph(
            f"Each row is a figure others published (quoted, with its source, in benchmarks/published/serving.json) "
            f"beside the simulator's prediction for the same model, GPUs, lengths and load on the datasheet "
            f"roofline. The ratio, in brackets after the prediction, is the share of the prediction the published "
            f"system reached: published ÷ predicted for a throughput, predicted ÷ published for a time. Over all "
            f"{len(found)} rows it runs from "
            f"{min(c.ratio for c in found):.2f} to {max(c.ratio for c in found):.2f}, so no published engine reached "
            f"the roofline: {ratios_by_rows()}."
        ),
        Paragraph(forecast_errors_words([outcomes[c.row.id] for c in found])),
        Details(
            f"Every row: its configuration, the published figure, the prediction, the forecast and what differs "
            f"({len(found)} rows, {len(sources)} sources)",
            [
                Table(
                    CHECK_HEADERS,
                    [check_row(c, outcomes[c.row.id]) for c in found],
                    "Published (cited) against predicted (datasheet) and forecast (calibrated, without the row's "
                    "source)",
                ),
                sources_paragraph(sources),
            ],
        ),
    ]


# --------------------------------------------------------------------------- the takeaway's figures


def budget_answer() -> dict[str, str] | None:
    """What the lesson states of the budget: the model, GPU, request lengths and budget, the concurrency the model
    allows and what binds there (escaped, for the lesson's inline HTML); None when no concurrency meets it."""
    found = budget_plan()
    if found is None:
        return None
    said = {
        "model": MODEL.name,
        "gpu": FOCUS,
        "lengths": f"{PROMPT:,}/{OUTPUT}",
        "budget": f"{BUDGET.tpot_s * 1e3:g} ms p99",
        "concurrency": f"{found.concurrency}",
        "what binds": BINDS[found.binds],
    }
    return {key: text.h(value) for key, value in said.items()}


def lesson(budget: dict[str, str] | None, published_share_of_roofline: str) -> str:
    """The takeaway's lesson, with the budget's answer (`budget_answer()`, None when no concurrency meets it) and the
    share of the roofline the published engines reach (escaped)."""
    words = (
        "An LLM engine's batch is however many sequences it holds: each step reads the weights once for all of them "
        "and each one's own cache, so total tokens per second rises with concurrency while each user's falls, until "
        "the KV cache is full. "
    )
    if budget:
        words += (
            f"For {budget['model']} on an {budget['gpu']} with {budget['lengths']}-token requests and a "
            f"{budget['budget']} per-token budget, the model allows about {budget['concurrency']} concurrent requests "
            f"({budget['what binds']}). "
        )
    return (
        words + "Predictions here are upper bounds from the datasheet; the share of them the published engines checked "
        f"here reach is, {published_share_of_roofline}."
    )


# --------------------------------------------------------------------------- checked against a real engine


def real_engine_parts(check=None) -> list:
    """The newest committed real-engine check against the simulator (`benchmarks.site.pages.engine_check`)."""
    parts = engine_check.build(check).sections
    folded = [Details("Every load, measured and simulated, and the method", [*parts["table"], *parts["method"]])]
    return [*parts["summary"], *parts["accuracy"], *parts["figure"], *parts["timeline"],
            *(folded if parts["table"] else [])]  # fmt: skip
