"""Words for the LLM-serving planner's answers: the budget's plan in one paragraph, the rate it sustains at
steady state, and a decode step's parts. The analysis gives the facts; these sentences are the site's and the
command line's."""

from __future__ import annotations

from benchmarks.analysis.serving.llm.planning import BudgetPlan
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.steady_state import STEADY_EDGE, STEADY_LENGTH


def explain(found: BudgetPlan, rate_check: bool = True) -> str:
    """One paragraph: the answer, then what binds and the numbers that show it. `rate_check=False` leaves out how
    the steady-state rate was checked (`rate_check_words`), for a page that folds it."""
    r, b = found.result, found.budget
    p = f"p{b.percentile:g}"
    more = found.beyond_concurrency
    short = more is not None and more > found.concurrency + 1  # the search stopped within 1/64 of the cap
    meet = (
        f"Up to about {found.concurrency:,} concurrent requests meet {b.describe()} ({more:,} miss it)"
        if short
        else f"Up to {found.concurrency} concurrent requests meet {b.describe()}"
    )
    head = (
        f"{meet}: set the running-sequence cap "
        f"(max_num_seqs) to {found.concurrency}. There the {p} time per output token is "
        f"{r.percentile('tpot', b.percentile) * 1e3:.1f} ms and the {p} time to first token "
        f"{r.percentile('ttft', b.percentile) * 1e3:,.0f} ms, for {r.tokens_per_s:,.0f} output tokens/s in all and "
        f"{r.tokens_per_s_per_user:,.0f} per user while an answer streams ({r.tokens_per_s_per_user_with_first:,.0f} "
        f"counting the wait for the first token), with {r.kv_peak_share * 100:.0f} % of the KV cache at its peak."
    )
    head += rate_words(found) if rate_check else rate_headline(found)
    x = found.beyond
    if found.binds == "kv-memory":
        why = (
            f" What binds is the KV memory: {found.kv_limit} sequences of this length fill the cache "
            f"({found.step.kv_blocks():,} blocks at the default memory share), so more clients would wait for blocks "
            "or be preempted, not run."
        )
    elif found.binds == "time-to-first-token":
        why = (
            f" What binds is the time to first token: with {more:,} clients it reaches "
            f"{x.percentile('ttft', b.percentile) * 1e3:,.0f} ms at {p}, as new prompts wait behind others."
        )
    else:
        tpot, itl = x.percentile("tpot", b.percentile) * 1e3, x.percentile("itl", 50) * 1e3
        why = (
            f" What binds is the time per output token: with {more:,} clients its {p} reaches "
            f"{tpot:.1f} ms, while the median gap between two tokens is {itl:.1f} ms"
        )
        if isinstance(found.step, RooflineStep):
            why += decode_step_words(found.step, x.mean_running, _mean_context(found))
        why += "."
        if found.binds == "prefills":
            why += (
                " Most of the difference is prefills: each new prompt takes a step of its own (or a share of one) "
                "in which the running sequences wait, so the more sequences run, the more often each one stalls."
            )
        else:
            why += " Each extra sequence adds its own cache read and its arithmetic to every step."
    return head + why


def rate_words(found: BudgetPlan) -> str:
    """The Poisson rate the cap sustains at steady state, how it was checked, and the rates that failed the check."""
    return rate_headline(found) + rate_check_words(found)


def rate_headline(found: BudgetPlan) -> str:
    """The Poisson rate the cap sustains at steady state, or that none passed the check."""
    ok = found.steady
    if found.searched_per_s is None:
        return ""
    if ok is None:
        return (
            f" Under random (Poisson) arrivals the short search's {found.searched_per_s:.2f} requests/s, and "
            f"{len(found.failed)} lower rates, failed the steady-state check; no rate is reported."
        )
    return (
        f" Under random (Poisson) arrivals the same cap meets the budget at steady state up to about "
        f"{ok.rate_per_s:.2f} requests/s ({ok.tokens_per_s:,.0f} output tokens/s over the measured window)."
    )


def rate_check_words(found: BudgetPlan) -> str:
    """How the steady-state rate was checked, and the rates that failed the check."""
    b, ok = found.budget, found.steady
    if found.searched_per_s is None or ok is None:
        return ""
    said = (
        f" It was checked with {ok.requests:,} requests, the first and last {STEADY_EDGE:.0%} of arrivals left out as "
        f"warm-up and drain: {ok.describe(b)}."
    )
    if found.failed:
        worst = found.failed[0]
        why = "it did not keep up" if not worst.stable else "it missed the budget"
        more = len(found.failed) - 1
        between = f", as {'does' if more == 1 else 'do'} {more} lower rate{'s' * (more > 1)} tried" if more else ""
        said += (
            f" The short search ({worst.requests // STEADY_LENGTH:,} requests a run) found "
            f"{found.searched_per_s:.2f}/s, which fails that check ({why}: {worst.describe(b)}){between}."
        )
    return said


def decode_step_words(step: RooflineStep, running: float, context: float) -> str:
    """A plain decode step of the run's mean running batch at its mean context, and the parts that sum to it."""
    batch = max(1, round(running))
    detail = step.detail(step.decode_work(batch, context))
    e = detail.efficiency
    scaled = "" if e == 1 else f"; each roofline time divided by the stated efficiency {e:g}"
    return (
        f"; a plain decode step of {batch} sequences (the run's mean batch) at the mean context of "
        f"{context:,.0f} tokens takes {detail.seconds * 1e3:.1f} ms {step.timed_on}: the matrix products "
        f"{detail.matmul_s / e * 1e3:.1f} ms, {detail.matmul_bound}-bound, the attention over every sequence's cache "
        f"{detail.attention_s / e * 1e3:.1f} ms, plus {detail.fixed_s * 1e3:.2f} ms fixed{scaled}"
    )


def _mean_context(found: BudgetPlan) -> float:
    """A sequence's mean context over its answer (prompt plus half the answer), from the run's lengths."""
    return found.result.output_tokens / found.result.requests / 2 + found.result.prompt_mean
