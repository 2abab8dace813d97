"""The page "Serving with dynamic batching": a committed sweep's curve served under random arrivals by each
server's batching rule, simulated (benchmarks.analysis.serving.batcher.simulator): the batch formed against the rate,
what the latency at p99 is made of, the hockey stick, each committed sweep's capacity within its budget, what the
`serve` command recommends, the MLPerf v3.0 Server check, and the real-server check when one is committed.

Every number comes from a simulation of a committed results file, or of a curve scaled to a cited published
figure; the page says which."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

from benchmarks.analysis.published import mlperf_server as serving_mlperf
from benchmarks.analysis.published.measurements_file import read_published
from benchmarks.analysis.roofline import recommend
from benchmarks.analysis.roofline.predict import STATED_COUNT
from benchmarks.analysis.serving.batcher.policy import (
    LoadPoint,
    capacity,
    ceiling_per_s,
    load_curve,
    outcome,
    search,
)
from benchmarks.analysis.serving.batcher.ray_serve_comparison import TOLERANCE as CHECK_TOLERANCE
from benchmarks.analysis.serving.batcher.service_curves import ServiceSource, SourceError, from_sweep
from benchmarks.analysis.serving.batcher.simulator import MAX_BATCH, Policy, ms, simulate
from benchmarks.contract.results import ModelSweep
from benchmarks.site import sweep_words, text
from benchmarks.site.batcher_words import explain, per_s
from benchmarks.site.charts import distinct_ids, figure
from benchmarks.site.charts.serving import (
    batch_formed_chart,
    breakdown_chart,
    capacity_chart,
    hockey_chart,
    mlperf_chart,
)
from benchmarks.site.charts.sweep import SWEEP_CACHE
from benchmarks.site.model_sweeps import load_sweeps
from benchmarks.site.pages import serving_check
from benchmarks.site.render import Bullets, Details, Heading, Page, Paragraph, Table, code, drawing_from, tag

PERCENTILE = 99
SHARES = (0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)  # of the reference policy's ceiling
BREAKDOWN_SHARES = (0.1, 0.4, 0.7, 0.9)
REQUESTS = 10_000
CAPACITY_SHARES = (0.05, 0.2, 0.4, 0.6, 0.75, 0.85, 0.92, 0.97)
CAPACITY_BISECTIONS = 4
CAPACITY_BATCH_LIMIT = 256
SERVING_CHECKS_DIR = Path(__file__).resolve().parents[2] / "serving"
NO_SWEEP = Paragraph(
    [
        "No sweep with a measured batch size is committed yet: sweep a model with ",
        code("python -m benchmarks sweep FILE.py:factory --budget-ms MS"),
        " and commit its file under benchmarks/sweeps/.",
    ]
)


LESSON = (  # the takeaway's lesson, above the items the page measured
    "The batch a server forms is set by the arrivals and its batching rule, not by its max batch: at low load it "
    "holds what arrives within one max delay, under load what arrives during one batch's run. Simulate the policy "
    "from your measured curve before you set its knobs, and check a server's rule, not its settings."
)


def build(sweeps: list[ModelSweep] | None = None, mlperf: serving_mlperf.MLPerfCheck | None = None) -> Page:
    sweeps = [simulable(s) for s in (load_sweeps() if sweeps is None else sweeps)]
    example = pick_example(sweeps)
    sections: dict[str, list] = {}
    if example is None:
        for name in ("example", "batch_formed", "breakdown", "hockey", "recommend", "closed_loop"):
            sections[name] = [NO_SWEEP]
    else:
        with drawing_from(example.path):
            sections.update(example_sections(example))
    ids = capacity_chart_ids(sweeps)
    sections["capacity"] = []
    for sweep in sweeps:
        with drawing_from(sweep.path):
            sections["capacity"] += capacity_section(sweep, ids[sweep])
    sections["capacity"] = sections["capacity"] or [NO_SWEEP]
    check = committed_check()
    checked = serving_check.build(check) if check is not None else None
    comparison = checked.extra.get("comparison") if checked is not None else None
    sections["answer"] = answer_parts(example, comparison) if example is not None else [NO_SWEEP]
    sections["example"] = [Paragraph(provenance_words(check is not None)), *sections["example"]]
    sections["real_server"] = real_server_parts(check, checked)
    sections["mlperf"] = mlperf_parts(mlperf if mlperf is not None else serving_mlperf.check())
    return Page(sections, lesson=LESSON)


def provenance_words(has_real_server_check: bool) -> str:
    """Which numbers on the page were timed on a server and which were simulated."""
    simulated = (
        "every number is simulated from a committed results file or from a curve scaled to a cited published figure"
    )
    if not has_real_server_check:
        return f"Nothing on this page was timed on a server: {simulated}."
    return (
        "One section of this page was timed on a real server, the check against Ray Serve below, and its "
        f"measurements are labelled measured; apart from it, {simulated}."
    )


def simulable(sweep: ModelSweep) -> ModelSweep:
    """The sweep with only the batch sizes the simulators take (up to 65,536; a sweep may hold larger ones)."""
    points = [p for p in sweep.points if p["batch"] <= MAX_BATCH]
    return sweep if len(points) == len(sweep.points) else ModelSweep(sweep.path, {**sweep.doc, "points": points})


def capacity_chart_ids(sweeps: Sequence[ModelSweep]) -> dict[ModelSweep, str]:
    """Each sweep's capacity chart id: from its device and id, distinct even where two ids differ only in '.', '_'
    or case (see `distinct_ids`)."""
    named = [(s, f"serving-capacity-{s.device['slug']}-{s.id}", (s.started, s.id)) for s in sweeps]
    return distinct_ids(named)


ANSWER_SHARES = (0.1, 0.3, 0.6)  # the worked cases' arrival rates, as shares of the reference policy's ceiling
ANSWER_INSTANCES = 4  # the most instances a worked case may use
ANSWER_HEADERS = ["requests/s (Poisson)", "p99 budget", "max batch", "max delay", "instances", "p99 simulated",
                  "mean batch"]  # fmt: skip


def answer_parts(sweep: ModelSweep, comparison=None) -> list:
    """The answer box: for the example's measured curve, at a light, a middling and a heavy load, the settings the
    search picks (the fewest instances that keep the p99 within the sweep's budget, then the most capacity), the
    p99 they reach, and how far the simulator landed from a real server where a check is committed."""
    source = from_sweep(sweep)
    budget = budget_s(sweep, source)
    top = ceiling_per_s(example_policies(source, budget)[2], source.curve)
    rows = []
    for share in ANSWER_SHARES:
        rate = float(f"{top * share:.2g}")
        found = search(source.curve, [rate], budget, PERCENTILE, n=REQUESTS, check_n=3 * REQUESTS,
                       max_instances=ANSWER_INSTANCES)  # fmt: skip
        rows.append(answer_row(found, rate, budget))
    command = (
        f"python -m benchmarks serve benchmarks/sweeps/{sweep.device['slug']}/{sweep.id}.json --rate R "
        f"--budget-ms {budget * 1e3:g} --percentile {PERCENTILE} --gpus {ANSWER_INSTANCES}"
    )
    caption = (
        f"Triton's rule, simulated from {source.name} measured on {where(source)} (sweep {sweep.id}): at each rate "
        f"the fewest instances (up to {ANSWER_INSTANCES}) whose p{PERCENTILE} stays within the sweep's budget, then "
        "the settings of most capacity"
    )
    return [
        Table(ANSWER_HEADERS, rows, caption),
        Paragraph([code(command), " gives any other rate; ", trust_words(comparison)]),
    ]


def answer_row(found, rate: float, budget: float) -> list[str]:
    chosen = found.chosen
    if chosen is None:
        return [per_s(rate), ms(budget), "none meets it", "", f"more than {ANSWER_INSTANCES}", "", ""]
    policy, checked = chosen.policy, found.checked[0]
    return [
        per_s(rate),
        ms(budget),
        str(policy.max_batch),
        ms(policy.max_delay_s) if policy.max_delay_s else "none",
        str(policy.instances),
        ms(checked.latency_s),
        text.sig(checked.result.mean_batch, 2),
    ]


def trust_words(comparison) -> str:
    """How far the simulator's answers landed from a real server's, from the committed check, or that none is."""
    if comparison is None or not comparison.rows:
        return "no real-server check is committed yet to say how far a simulated answer lands from a real server."
    ratios = [r.p50_ratio for r in comparison.rows]
    within = sum(abs(r - 1) <= CHECK_TOLERANCE for r in ratios)
    return (
        f"how far to trust it: against a real Ray Serve (below), the simulated p50 was within "
        f"{CHECK_TOLERANCE:.0%} of the measured one in {within} of {len(ratios)} cases (measured ÷ simulated "
        f"{text.sig_range(ratios)}), a simulation of a measured curve, not a forecast of a GPU."
    )


def pick_example(sweeps: Sequence[ModelSweep]) -> ModelSweep | None:
    """The sweep the page works through: a ResNet when one is committed (a model every server example uses),
    else the newest."""
    usable = [s for s in sweeps if any(p["status"] == "ok" for p in s.points)]
    if not usable:
        return None
    resnets = [s for s in usable if "resnet" in s.doc["model"]["name"].lower()]
    return (resnets or usable)[0]


def budget_s(sweep: ModelSweep, source: ServiceSource) -> float:
    """The sweep's own latency budget, or ten times its smallest batch's median when it set none."""
    budget = sweep.doc["settings"].get("budget_ms")
    return budget / 1e3 if budget else 10 * source.curve.median(source.curve.batches[0])


def where(source: ServiceSource) -> str:
    return f"{source.device}, {source.dtype}, {source.mode}"


def cache_label() -> str:
    """The cache state of every sweep's samples, in a chart's words."""
    return f"cache: {SWEEP_CACHE} ({text.CACHE_WORDS[SWEEP_CACHE]})"


def subtitle(source: ServiceSource, sweep: ModelSweep) -> list[str]:
    return [
        f"simulated from {source.name}, measured on {where(source)} (sweep {sweep.id})",
        f"{cache_label()}; Poisson arrivals, {REQUESTS:,} requests per point",
    ]


def _reference(source: ServiceSource, budget: float) -> tuple[int, float, float]:
    batch = min(16, source.curve.largest)
    return batch, round_delay(budget / 20), round_delay(budget / 5)


def round_delay(seconds: float) -> float:
    """A delay a person would set: 1, 2 or 5 times a power of ten, at most `seconds`."""
    exponent = math.floor(math.log10(seconds))
    return max(m * 10.0**exponent for m in (1, 2, 5) if m * 10.0**exponent <= seconds * (1 + 1e-9))


def example_policies(source: ServiceSource, budget: float) -> list[Policy]:
    batch, short, long = _reference(source, budget)
    return [
        Policy("none", 1, 0.0),
        Policy("triton", batch, 0.0),
        Policy("triton", batch, short),
        Policy("triton", batch, long),
        Policy("ray", batch, short, handler="blocking"),
        Policy("ray", batch, short, handler="awaiting"),
    ]


def name(policy: Policy) -> str:
    return policy.describe().replace(", 1 instance", "")


def example_sections(sweep: ModelSweep) -> dict[str, list]:
    source = from_sweep(sweep)
    budget = budget_s(sweep, source)
    policies = example_policies(source, budget)
    reference = policies[2]
    top = ceiling_per_s(reference, source.curve)
    rates = [top * share for share in SHARES]
    loads = {policy: load_curve(policy, source.curve, rates, PERCENTILE, n=REQUESTS) for policy in policies}
    medians = load_curve(reference, source.curve, rates, 50, n=REQUESTS)
    sub = subtitle(source, sweep)
    model = sweep.doc["model"]["name"]
    intro = Paragraph(
        f"The examples below serve {source.name}, measured on {where(source)} in sweep {sweep.id} "
        f"({sweep.started_at[:10]}): its {len(source.curve.batches)} batch sizes from {source.curve.batches[0]} to "
        f"{source.curve.largest}, each call's time drawn from that batch's measured samples and interpolated between "
        f"them. The budget is the sweep's own, {ms(budget)}, taken here at p{PERCENTILE}. Every number on this part "
        "of the page is simulated from that file. " + noise_words(sweep)
    )
    return {
        "example": [intro],
        "batch_formed": batch_formed_parts(loads, reference, sub, model),
        "breakdown": breakdown_parts(loads[reference], medians, reference, top, sub),
        "hockey": hockey_parts(loads, budget, sub, source),
        "closed_loop": closed_loop_parts(reference, source),
        "recommend": recommend_parts(sweep, source, budget, rates),
    }


def noise_words(sweep: ModelSweep) -> str:
    """What the sweep's own noise check found, and what it means for the simulated tails drawn from its samples."""
    noise = recommend.from_document(sweep.doc).noise
    if noise is None:
        return "The sweep judged no noise, so how much the simulated tails inherit from the machine is not known."
    if not noise.high:
        return f"The sweep found its machine quiet (noise low: {noise_evidence(noise)})."
    return (
        f"The sweep found its machine noisy (noise high: {noise_evidence(noise)}): each simulated call draws its time "
        f"from those samples, so the simulated p{PERCENTILE}s carry that noise."
    )


def noise_evidence(noise) -> str:
    line = sweep_words.noise_line(noise)
    return line.split(" — ", 1)[1].split(". ", 1)[0].rstrip(".")


def _stable(points: Sequence[LoadPoint]) -> list[LoadPoint]:
    return [p for p in points if not p.overloaded]


def batch_formed_parts(loads: dict[Policy, list[LoadPoint]], reference: Policy, sub, model: str) -> list:
    rows = [
        {"policy": name(policy), "rate": p.rate, "mean_batch": p.mean_batch}
        for policy, points in loads.items()
        for p in _stable(points)
    ]
    names = [name(policy) for policy in loads]
    chart = batch_formed_chart(rows, reference.max_batch, "The batch formed against the offered rate", sub, names)
    parts: list = [
        figure(
            chart,
            "serving-batch-formed",
            "The batch formed against the offered rate",
            f"Mean batch size the batcher forms, for each policy, at rates up to 95 % of what the reference policy "
            f"serves in full batches; overloaded points left out. Simulated from the {model} sweep",
        )
    ]
    points = loads[reference]
    low, mid = points[2], points[len(points) // 2]
    parts.append(
        Paragraph(
            f"With {name(reference)}, the batches hold {low.mean_batch:.1f} requests on average at "
            f"{per_s(low.rate)} and {mid.mean_batch:.1f} at {per_s(mid.rate)}, against a max of "
            f"{reference.max_batch}. A batch leaves when its oldest request has waited the max delay, so at low "
            "load it holds what arrives within one delay; once batches queue for the instance, what arrives during "
            "one batch's run."
        )
    )
    parts.append(handler_parts(loads))
    return parts


def handler_parts(loads: dict[Policy, list[LoadPoint]]) -> Table:
    awaiting = next(p for p in loads if p.handler == "awaiting")
    blocking = next(p for p in loads if p.server == "ray" and p.handler == "blocking")
    rows = []
    for a, b in zip(loads[awaiting], loads[blocking]):
        rows.append(
            [
                per_s(a.rate),
                f"{a.mean_batch:.2f}",
                "overloaded" if a.overloaded else ms(a.latency_s),
                f"{b.mean_batch:.2f}",
                "overloaded" if b.overloaded else ms(b.latency_s),
            ]
        )
    return Table(
        [
            "offered rate",
            "awaiting: mean batch",
            f"awaiting: p{PERCENTILE}",
            "blocking: mean batch",
            f"blocking: p{PERCENTILE}",
        ],
        rows,
        caption=f"Ray Serve's @serve.batch, max batch {awaiting.max_batch}, wait {ms(awaiting.max_delay_s)}, one "
        "replica: a handler that awaits against one that blocks the event loop (simulated)",
    )


def breakdown_parts(points: list[LoadPoint], medians: list[LoadPoint], policy: Policy, top: float, sub) -> list:
    chosen = [i for i, p in enumerate(points) if any(math.isclose(p.rate, top * s) for s in BREAKDOWN_SHARES)]
    rows = []
    for i in chosen:
        if points[i].overloaded:
            continue
        for q, point in ((50, medians[i]), (PERCENTILE, points[i])):
            label = f"{per_s(point.rate)}, p{q}"
            for part, key in (("queue", "queue"), ("batch formation", "formation"), ("service", "service")):
                rows.append({"rate_label": label, "part": part, "ms": point.breakdown[key] * 1e3})
    chart = breakdown_chart(rows, f"What latency is made of: {name(policy)}", sub)
    stable = [i for i in chosen if not points[i].overloaded]
    first, last = stable[0], stable[-1]

    def parts(point: LoadPoint) -> str:
        b = point.breakdown
        return f"{ms(b['formation'])} filling their batch, {ms(b['queue'])} queueing and {ms(b['service'])} in its run"

    return [
        figure(
            chart,
            "serving-breakdown",
            "What latency is made of",
            f"The mean queueing, batch-formation and service time of the requests at p50 and at p{PERCENTILE}, at "
            f"four rates, for {name(policy)}",
        ),
        Paragraph(
            f"At {per_s(points[first].rate)} the requests at p50 spend {parts(medians[first])}; those at "
            f"p{PERCENTILE} spend {parts(points[first])}. At {per_s(points[last].rate)}: {parts(medians[last])} at "
            f"p50, {parts(points[last])} at p{PERCENTILE}. "
            + most_of_the_waiting(points[first], medians[first], points[last], medians[last])
        ),
    ]


def larger_wait(point: LoadPoint) -> str:
    b = point.breakdown
    if b["formation"] >= b["queue"]:
        return f"filling the batch ({ms(b['formation'])} against {ms(b['queue'])} queueing)"
    return f"queueing ({ms(b['queue'])} against {ms(b['formation'])} filling the batch)"


def most_of_the_waiting(low: LoadPoint, low_median: LoadPoint, high: LoadPoint, high_median: LoadPoint) -> str:
    """Which part of the waiting is the larger, at p50 and at the page's percentile, at the lowest and highest rate
    shown."""
    return (
        f"Most of the waiting at {per_s(low.rate)} is {larger_wait(low_median)} at p50 and {larger_wait(low)} at "
        f"p{PERCENTILE}; at {per_s(high.rate)}, {larger_wait(high_median)} at p50 and {larger_wait(high)} at "
        f"p{PERCENTILE}."
    )


FLAT = 1.1  # a p99 within 10 % of its value at the lowest rate tried counts as flat


def flat_until(points: Sequence[LoadPoint]) -> LoadPoint:
    """The highest rate up to which every p99 stays within FLAT times the one at the lowest rate tried."""
    stable = _stable(points)
    last = stable[0]
    for p in stable[1:]:
        if p.latency_s > FLAT * stable[0].latency_s:
            break
        last = p
    return last


def _p99_path(points: Sequence[LoadPoint], budget: float) -> str:
    """The p99s from the lowest rate to the first one past twice the budget."""
    shown = []
    for p in _stable(points):
        shown.append(p)
        if p.latency_s > 2 * budget:
            break
    values = " → ".join(f"{p.latency_s * 1e3:.0f}" for p in shown)
    return f"{values} ms from {per_s(shown[0].rate)} to {per_s(shown[-1].rate)}"


def rise_words(loads: dict[Policy, list[LoadPoint]], budget: float) -> str:
    """Whether each policy's p99 stays flat at low load, from the simulated points."""
    flat = {policy: flat_until(points) for policy, points in loads.items()}
    rising = [policy for policy, point in flat.items() if point is _stable(loads[policy])[0]]
    first = next(iter(loads))
    example = f"{name(first)}: {_p99_path(loads[first], budget)}"
    if len(rising) == len(loads):
        return (
            f"On this curve no policy's p{PERCENTILE} stays flat: each rises from the lowest rate tried (more than "
            f"{(FLAT - 1) * 100:.0f} % by the next one; {example}), and climbs steeply as the instance approaches what "
            "it can serve."
        )
    flats = "; ".join(f"{name(policy)} up to {per_s(point.rate)}" for policy, point in flat.items()
                      if policy not in rising)  # fmt: skip
    said = f"p{PERCENTILE} stays within {(FLAT - 1) * 100:.0f} % of its value at the lowest rate tried for {flats}"
    if rising:
        said += f"; {', '.join(name(p) for p in rising)} rise{'s' * (len(rising) == 1)} from the lowest rate tried"
    return said + f" ({example}), then climbs steeply as the instance approaches what it can serve."


def per_request_s(source: ServiceSource, batch: int) -> float:
    return source.curve.median(batch) / batch


def batching_words(loads: dict[Policy, list[LoadPoint]], budget: float, source: ServiceSource) -> str:
    """What batching does to the highest rate within the budget on this curve, and the measured times that say why."""

    def best(policy: Policy) -> float:
        within = [p.rate for p in loads[policy] if p.latency_s <= budget]
        return max(within, default=0.0)

    plain = [p for p in loads if p.server == "none"]
    batched = [p for p in loads if p.server != "none"]
    if not plain or not batched:
        return ""
    alone, top = best(plain[0]), max(best(p) for p in batched)
    c = source.curve
    one = c.median(c.batches[0])
    costly = next((b for b in c.batches[1:] if per_request_s(source, b) > one), None)
    largest = min(max(p.max_batch for p in batched), c.largest)
    saving = (
        f"a batch of {largest} takes {ms(c.median(largest))}, {ms(per_request_s(source, largest))} of instance time "
        f"per request against {ms(one)} for one alone"
    )
    if top > alone:
        return (
            f"Within {ms(budget)} at p{PERCENTILE}, batching raises the highest rate tried from {per_s(alone)} "
            f"without batching to {per_s(top)}: {saving}, at the price of a longer call."
        )
    why = (
        f"a batch of {costly} takes {ms(c.median(costly))}, more than {costly} calls of one ({ms(costly * one)}), so "
        "a request that joins a small batch waits longer for no saving"
        if costly is not None
        else f"{saving}, but every request in a batch waits for the whole batch's run"
    )
    share = f"{top / alone * 100:.0f} % of it" if top else "none at all"
    return (
        f"Within {ms(budget)} at p{PERCENTILE}, batching does not move the corner to the right on this curve: "
        f"without batching the instance sustains {per_s(alone)} of the rates tried and no batching policy more than "
        f"{per_s(top)} ({share}). Under load the queue forms batches, and {why}."
    )


def hockey_parts(loads: dict[Policy, list[LoadPoint]], budget: float, sub, source: ServiceSource | None = None) -> list:
    rows = [
        {"policy": name(policy), "throughput": p.throughput, "latency_ms": p.latency_s * 1e3}
        for policy, points in loads.items()
        for p in _stable(points)
    ]
    names = [name(policy) for policy in loads]
    chart = hockey_chart(rows, budget * 1e3, PERCENTILE, f"p{PERCENTILE} latency against throughput", sub, names)
    best = []
    for policy, points in loads.items():
        within = [p.rate for p in points if p.latency_s <= budget]
        best.append(f"{name(policy)}: {per_s(max(within))}" if within else f"{name(policy)}: none")
    return [
        figure(
            chart,
            "serving-hockey",
            f"p{PERCENTILE} latency against throughput",
            f"p{PERCENTILE} latency against the throughput served, for each policy, up to the rate where it "
            "overloads; the dashed line is the budget",
        ),
        Paragraph(f"The highest rate tried that keeps p{PERCENTILE} within {ms(budget)}, per policy:"),
        Bullets(best),
        Paragraph(rise_words(loads, budget) + (" " + batching_words(loads, budget, source) if source else "")),
    ]


CLIENTS = (1, 4, 16, 64)


def closed_loop_parts(policy: Policy, source: ServiceSource) -> list:
    """What a load-testing tool with N concurrent clients reports, against Poisson arrivals at the same rate."""
    rows = []
    for clients in CLIENTS:
        closed = simulate(policy, source.curve, clients=clients, n_requests=REQUESTS, seed=1)
        rate = closed.throughput_per_s
        opened = outcome(policy, source.curve, rate, math.inf, PERCENTILE, n=REQUESTS).result
        rows.append(
            [
                str(clients),
                per_s(rate),
                f"{closed.mean_batch:.1f}",
                ms(closed.percentile(PERCENTILE)),
                "overloaded" if opened.overloaded else ms(opened.percentile(PERCENTILE)),
                f"{opened.mean_batch:.1f}",
            ]
        )
    return [
        Table(
            [
                "clients",
                "throughput",
                "mean batch",
                f"p{PERCENTILE}, closed loop",
                f"p{PERCENTILE}, Poisson at that rate",
                "mean batch, Poisson",
            ],
            rows,
            caption=f"{name(policy)}: N clients that each wait for their answer, against open-loop Poisson arrivals "
            "at the throughput they reached (simulated)",
        )
    ]


def recommend_parts(sweep: ModelSweep, source: ServiceSource, budget: float, rates: list[float]) -> list:
    rate = float(f"{rates[4]:.2g}")  # 30 % of the reference policy's ceiling
    plan = search(source.curve, [rate], budget, PERCENTILE, n=REQUESTS, check_n=3 * REQUESTS)
    command = (
        f"python -m benchmarks serve benchmarks/sweeps/{sweep.device['slug']}/{sweep.id}.json "
        f"--rate {rate:g} --budget-ms {budget * 1e3:g} --percentile {PERCENTILE}"
    )
    return [Paragraph([code(command), " answers:"]), Paragraph(explain(plan))]


def capacity_section(sweep: ModelSweep, chart_id: str) -> list:
    model = sweep.doc["model"]["name"]
    heading = Heading(f"{model} on {sweep.doc['device']['name']}", level=3)
    try:
        source = from_sweep(sweep)
    except SourceError:
        return [heading, Paragraph(f"Sweep {sweep.id} measured no batch size, so it has no capacity to show.")]
    budget = budget_s(sweep, source)
    p = sweep.doc["settings"]["percentile"]
    largest = min(source.curve.largest, CAPACITY_BATCH_LIMIT)
    batches = sorted({2**i for i in range(largest.bit_length()) if 2**i <= min(largest, 64)} | {largest})
    _, short, _ = _reference(source, budget)
    rows = []
    for delay in (0.0, short):
        label = f"Triton, max delay {ms(delay)}"
        for batch in batches:
            if batch == 1 and delay:
                continue
            found = capacity(
                Policy("triton", batch, delay), source.curve, budget, p, n=REQUESTS // 2,
                shares=CAPACITY_SHARES, bisections=CAPACITY_BISECTIONS,
            )  # fmt: skip
            rows.append({"policy": label, "max_batch": batch, "capacity": found.rate_per_s})
    plain = capacity(
        Policy("none", 1, 0.0), source.curve, budget, p, n=REQUESTS // 2, shares=CAPACITY_SHARES,
        bisections=CAPACITY_BISECTIONS,
    ).rate_per_s  # fmt: skip
    sub = [f"simulated from {source.name}, measured on {where(source)} (sweep {sweep.id})",
           f"{cache_label()}; Poisson arrivals"]  # fmt: skip
    chart = capacity_chart(rows, plain, f"Capacity within {ms(budget)} at p{p:g}, by max batch", sub)
    best = max(rows, key=lambda r: r["capacity"])
    words = (
        f"Within its budget of {ms(budget)} at p{p:g}, one instance serving this curve sustains up to "
        f"{per_s(best['capacity'])} with max batch {best['max_batch']} ({best['policy']}), against "
        f"{per_s(plain)} without batching."
        if plain > 0
        else f"Within its budget of {ms(budget)} at p{p:g}, one instance sustains up to {per_s(best['capacity'])} "
        f"with max batch {best['max_batch']} ({best['policy']}); without batching no rate tried meets it."
    )
    return [
        heading,
        figure(
            chart,
            chart_id,
            f"Capacity of {model} within its budget",
            f"The highest Poisson rate one instance sustains with p{p:g} latency within {ms(budget)}, against the max "
            f"batch, for Triton's rule with and without a max delay; the dashed line is no batching. Simulated from "
            f"sweep {sweep.id}, measured on {where(source)}",
        ),
        Paragraph(words),
    ]


def committed_check():
    """The newest committed real-server check, or None."""
    return serving_check.newest_check(SERVING_CHECKS_DIR) if SERVING_CHECKS_DIR.is_dir() else None


def real_server_parts(check=None, checked: Page | None = None) -> list:
    """The newest committed real-server check against the simulator (`benchmarks.site.pages.serving_check`);
    `checked`: its section, built already."""
    check = committed_check() if check is None else check
    if check is None:
        return [Paragraph("No real-server check is committed yet: the comparison appears here once one is.")]
    parts = (checked or serving_check.build(check)).sections
    folded = Details("Every case, measured and simulated, and the method", [*parts["table"], *parts["method"]])
    return [*parts["summary"], *parts["figure"], folded]


def mlperf_parts(found: serving_mlperf.MLPerfCheck) -> list:
    server, offline = found.server, found.offline
    published_p99 = _published_p99_ms(server.quote)
    rows = [
        {"rate": rate, "latency_ms": latency * 1e3}
        for rate, latency in found.predicted.grid
        if math.isfinite(latency) and rate <= found.predicted.ceiling_per_s
    ]
    chart = mlperf_chart(
        rows,
        {"rate": found.published_per_s, "latency_ms": published_p99},
        serving_mlperf.BOUND_S * 1e3,
        "MLPerf v3.0 Server on a DGX H100: simulated against published",
        [
            "simulated: ResNet-50 roofline on the H100 SXM datasheet, scaled to the published Offline figure",
            f"the roofline's bytes: {STATED_COUNT['resnet50']}, nothing kept in cache",
            f"{serving_mlperf.GPUS} GPUs × {serving_mlperf.STREAMS} streams, max batch {serving_mlperf.SERVER_BATCH}, "
            f"max delay {ms(serving_mlperf.DEQUE_TIMEOUT_S)}, Poisson queries",
        ],
    )
    sim = found.at_published.result
    table = Table(
        ["", "queries/s", "p99", "source"],
        [
            ["Offline (published)", f"{float(offline.value):,.0f}", "–", summary_link(offline.source.url)],
            [
                "Server (published)",
                f"{found.published_per_s:,.2f}",
                f"{published_p99:.2f} ms",
                summary_link(server.source.url),
            ],
            [
                "Server (simulated)",
                f"{found.predicted_per_s:,.0f}",
                f"within {ms(serving_mlperf.BOUND_S)}",
                "this page",
            ],
            ["published ÷ simulated", f"{found.ratio:.2f}", "", ""],
        ],
        caption="MLPerf Inference v3.0, closed, NVIDIA DGX H100 (8 H100-SXM-80GB), ResNet-50",
    )
    return [
        table,
        figure(
            chart,
            "serving-mlperf-resnet50",
            "MLPerf v3.0 Server on a DGX H100: simulated against published",
            "Simulated p99 latency against the Poisson query rate for eight H100s, seven inference streams each, "
            "serving ResNet-50 in batches of up to 256 with a 2 ms deque timeout, from a roofline curve scaled to the "
            "published Offline figure; the diamond is the published Server result",
        ),
        Paragraph(
            f"Published, the Server scenario reached {found.published_share_of_offline * 100:.1f} % of the Offline "
            f"figure (its Server/Offline ratio); the simulation sustains {found.predicted_share_of_offline * 100:.1f} "
            "% of it within the 15 ms bound, so the "
            f"published figure is {found.ratio:.2f} of the prediction. At the published rate the simulation gives a "
            f"p99 of {ms(found.at_published.latency_s)} and a p50 of {ms(sim.raw_percentile(50))} with batches of "
            f"{sim.mean_batch:.0f} on average, where the submission logged {published_p99:.2f} ms and "
            f"{_published_p50_ms(server.quote):.2f} ms."
        ),
        Paragraph(precision_words(found)),
    ]


def summary_link(url: str):
    """A published LoadGen summary, linked under a short name rather than its whole address: the column stays narrow."""
    return tag("a", "LoadGen summary (MLCommons, on GitHub)", href=url)


def precision_words(found: serving_mlperf.MLPerfCheck) -> str:
    """The precision the curve's shape is computed in, against what the published file records for the
    submission's harness (a row of the same system and model whose precision names int8)."""
    same = [
        m for m in read_published()
        if m.configuration.get("hardware") == found.server.configuration.get("hardware")
        and m.configuration.get("model") == found.server.configuration.get("model")
        and "int8" in m.configuration.get("precision", "")
    ]  # fmt: skip
    ours = f"The curve's shape is the {serving_mlperf.DTYPE} roofline"
    if not same:
        return f"{ours}; the files read for this submission do not state its precision."
    row = same[0]
    return (
        f"{ours}, a stand-in: this project's published file records {row.configuration['precision'].split(' (')[0]} "
        f"for ResNet-50 in NVIDIA's harness configuration (row {row.id}, read in the v3.0 round's harness). The "
        "curve is scaled to the published Offline figure, so the precision changes its shape, not its level."
    )


def _published_ns(quote: str, label: str) -> float:
    match = re.search(rf"{re.escape(label)} percentile latency \(ns\)\s*:\s*(\d+)", quote)
    if match is None:
        raise ValueError(f"the MLPerf Server quote holds no {label} percentile latency")
    return int(match.group(1)) / 1e6


def _published_p99_ms(quote: str) -> float:
    return _published_ns(quote, "99.00")


def _published_p50_ms(quote: str) -> float:
    return _published_ns(quote, "50.00")
