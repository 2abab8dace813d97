"""The dynamic-batching plan in words: the paragraph `serve` prints on the policy chosen (or on why none meets the
budget) and the plan as JSON with that paragraph in it, from the facts `analysis.serving.batcher.policy` finds.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import math

from benchmarks.analysis.serving.batcher.policy import PolicySearch
from benchmarks.analysis.serving.batcher.simulator import ms


def per_s(rate: float) -> str:
    return f"{rate:,.0f}/s" if rate >= 100 else f"{rate:.3g}/s"


def pct(p: float) -> str:
    return f"p{p:g}"


def _share(share: float) -> str:
    """'none', 'under 1 %' or e.g. '37 %' of the batches."""
    if share == 0:
        return "none"
    return "under 1 %" if share < 0.01 else f"{share:.0%}".replace("%", " %")


def _most_common(histogram: dict[int, int]) -> int:
    return max(histogram.items(), key=lambda item: (item[1], -item[0]))[0]


def explain(plan: PolicySearch) -> str:
    """One paragraph, with its numbers, on the policy chosen (or on why none meets the budget)."""
    p = pct(plan.percentile)
    budget = ms(plan.budget_s)
    unbatched = plan.unbatched
    k = unbatched.policy.instances
    inst = f"{k} instance{'s' * (k != 1)}"
    plain_words = (
        f"Without batching, {inst} would sustain {per_s(unbatched.rate_per_s)} within the budget"
        if unbatched.rate_per_s > 0
        else f"Without batching, {inst} would meet the budget at no rate tried"
    ) + f" (at most {per_s(unbatched.ceiling_per_s)}, busy all the time)."
    if plan.chosen is None:
        rates = ", ".join(per_s(r) for r in plan.rates)
        if plan.closest is None:
            return f"No policy was tried. {plain_words}"
        best = plan.closest.outcomes[-1]
        got = "overloaded" if best.overloaded else f"{p} {ms(best.latency_s)}"
        return (
            f"No policy tried keeps {p} within {budget} at {rates} with up to {inst}. The closest, "
            f"{best.policy.describe()}, gives {got} at {per_s(best.rate)}. {plain_words}"
        )
    policy = plan.chosen.policy
    worst = max(plan.checked, key=lambda o: o.latency_s)
    result = worst.result
    parts = result.breakdown(plan.percentile)
    overhead = f" and {ms(parts['overhead'])} of server overhead" if plan.overhead_s else ""
    hist = result.batch_histogram()
    top = policy.max_batch
    full_share = hist.get(top, 0) / max(sum(hist.values()), 1)
    text = (
        f"At {per_s(worst.rate)} ({plan.arrivals.describe()}), {policy.describe()} keeps {p} at "
        f"{ms(worst.latency_s)}, within the {budget} budget: the requests at {p} spend {ms(parts['queue'])} "
        f"queueing, {ms(parts['formation'])} waiting for their batch to fill and {ms(parts['service'])} in the "
        f"batch's run{overhead}. "
    )
    if policy.server != "none":
        arriving = worst.rate * (policy.max_delay_s + result.mean("service")) / policy.instances
        text += (
            f"The batches it forms hold {result.mean_batch:.1f} requests on average (most often "
            f"{_most_common(hist)}; {_share(full_share)} reach the max of {top}): about {arriving:.1f} requests "
            f"reach each instance during one max delay plus one batch's run. "
        )
    cap = plan.chosen.capacity
    if cap is not None and cap.rate_per_s > 0:
        why = (
            f"above it the backlog grows without end, as {inst} serve at most {per_s(cap.ceiling_per_s)} in full "
            f"batches"
            if cap.overloads_first
            else f"above it {p} passes {budget} before the instances are saturated (at most "
            f"{per_s(cap.ceiling_per_s)} in full batches)"
        )
        text += (
            f"It sustains up to {per_s(cap.rate_per_s)} within the budget, {cap.rate_per_s / max(plan.rates):.1f}× "
            f"{per_s(max(plan.rates))}; {why}. "
        )
    return text + plain_words + searched_words(plan)


def searched_words(plan: PolicySearch) -> str:
    """What the chosen max batch is, the max batches it was chosen among, and how it relates to a sweep's batch."""
    if plan.chosen is None or plan.chosen.policy.server == "none":
        return ""
    tried = sorted({c.policy.max_batch for c in plan.tried})
    if not tried:
        return ""
    largest = tried[-1]
    powers = all(b & (b - 1) == 0 for b in tried if b != largest)
    among = "the powers of two up to the curve's largest batch, and that batch" if powers else "the batches listed"
    return (
        f" Max batch {plan.chosen.policy.max_batch} is serve's max batch for the dynamic batcher, chosen among "
        f"{', '.join(map(str, tried))} ({among}); a sweep's largest batch within a budget answers another question, "
        "the latency of one call, where here each request also waits for its batch to form and for a free instance."
    )


def summary(plan: PolicySearch) -> dict:
    """The plan as plain numbers, for JSON (seconds and requests per second)."""
    chosen = plan.chosen
    out: dict = {
        "rates_per_s": plan.rates,
        "budget_s": plan.budget_s,
        "percentile": plan.percentile,
        "server": plan.server,
        "arrivals": plan.arrivals.describe(),
        "overhead_s": plan.overhead_s,
        "host_cores": plan.host_cores,
        "meets_budget": chosen is not None,
        "policy": None,
        "closest": None if plan.closest is None else plan.closest.policy.describe(),
        "at_rates": [],
        "capacity_per_s": None,
        "ceiling_per_s": None,
        "unbatched_capacity_per_s": plan.unbatched.rate_per_s,
        "unbatched_ceiling_per_s": plan.unbatched.ceiling_per_s,
        "explanation": explain(plan),
        "candidates_tried": len(plan.tried),
        "candidates": [
            {
                "description": c.policy.describe(),
                "max_batch": c.policy.max_batch,
                "max_delay_s": c.policy.max_delay_s,
                "instances": c.policy.instances,
                "meets_budget": c.meets,
                "worst_latency_s": None if math.isinf(c.worst_s) else c.worst_s,  # at the percentile, over the rates
                "capacity_per_s": c.capacity.rate_per_s if c.capacity else None,  # measured for the shortlist only
            }
            for c in plan.tried
        ],
    }
    if chosen is not None:
        out["policy"] = chosen.policy.to_json()
        out["capacity_per_s"] = chosen.capacity.rate_per_s if chosen.capacity else None
        out["ceiling_per_s"] = chosen.capacity.ceiling_per_s if chosen.capacity else None
        for found in plan.checked:
            entry = {"rate_per_s": found.rate, **found.result.summary()}
            entry["breakdown_s"] = found.result.breakdown(plan.percentile)
            out["at_rates"].append(entry)
    return out
