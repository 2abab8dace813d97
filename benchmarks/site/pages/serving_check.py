"""The parts of the section "Checked against a real server" on the serving page: the newest committed
serving check (`benchmarks/serving/`), compared with the simulator, as a summary, a chart and a table.

A notebook page shows them with `serving_check.build().show("summary")` (and "figure", "table", "method").
The site shows the newest committed measurement; a synthetic file (a test's) is shown only when a test
passes it in. Pure Python: nothing here imports torch.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from benchmarks.analysis.serving.batcher.ray_serve_comparison import (
    TOLERANCE,
    HostRow,
    RayServeComparison,
    Row,
    compare,
    host_rows,
)
from benchmarks.contract.serving_check import DEFAULT_SERVING_DIR, ServingCheck, read_serving_check
from benchmarks.site import charts, text
from benchmarks.site.charts.serving_check import serving_check_chart
from benchmarks.site.render import Page, Paragraph, Table, code, drawing_from

CHART_ID = "serving-real-server-check"
TABLE_HEADERS = [  # abbreviated so that sixteen columns fit the text column unbroken: ABBREVIATIONS says them in full
    "service",
    "handler",
    "policy",
    "req/s",
    "repeats",
    "p50 meas. (ms)",
    "p50 sim. (ms)",
    "meas. ÷ sim.",
    "mean batch meas.",
    "mean batch sim.",
    "meas. ÷ sim.",
    "batch sizes: share that differs",
    "mean latency: meas. ÷ sim.",
    "p99 meas. / sim. (ms)",
    "p50 / p99 sim., overhead on the host's cores (ms)",
    "replica busy (sim.)",
]
ABBREVIATIONS = "meas.: measured; sim.: simulated; req/s: requests per second; handler: the batch handler"


def newest_check(directory: Path | None = None) -> ServingCheck | None:
    """The check the site shows, read strictly: of the measurements (synthetic files are never shown), the newest
    complete one whose server answered requests; failing that, the newest that answered any. A check that was
    interrupted, or whose every request failed, never replaces a complete one. Newest by when it started, as a
    time, whatever offset it was written with."""
    found = [read_serving_check(p) for p in sorted((directory or DEFAULT_SERVING_DIR).rglob("*.json"))]
    found = [c for c in found if not c.synthetic and c.runs]
    return max(found, key=lambda c: (c.answered > 0, c.complete, c.started, c.id), default=None)


def build(check: ServingCheck | None = None, directory: Path | None = None) -> Page:
    """The section's parts for `check` (default: the newest measurement under `directory`, by default the
    committed ones)."""
    check = check if check is not None else newest_check(directory)
    if check is None:
        none = Paragraph(["No real-server check is committed yet: ", code("nox -s serving-check"), " measures one."])
        return Page({"summary": [none], "figure": [], "table": [], "method": []})
    with drawing_from(check.path):
        return _built(check)


def _built(check: ServingCheck) -> Page:
    found = compare(check)
    if not found.rows:
        return Page({"summary": [Paragraph(nothing_answered_words(check))], "figure": [], "table": [], "method": []})
    return Page(
        {
            "summary": [Paragraph(summary_words(found))],
            "figure": [comparison_figure(found)],
            "table": [comparison_table(found), *host_table(host_rows(check), check)],
            "method": [Paragraph(method_words(found))],
        },
        extra={"comparison": found},
    )


def nothing_answered_words(check: ServingCheck) -> str:
    """A check with nothing to compare: its server answered no request."""
    errors = sorted({error for run in check.runs for error in run["errors"]})
    said = f" ({'; '.join(errors[:3])})" if errors else ""
    return (
        f"Check {check.id} on {check.doc['host']['name']}: the server answered none of the requests of its "
        f"{len(check.runs)} runs{said}, so there is nothing to compare with the simulator."
    )


def shared(host: dict) -> bool:
    """Whether other work shared the machine when the check started: a 1-minute load average above its cores."""
    return host["load_average_start"][0] > host["cpus"]


def where(found: RayServeComparison) -> str:
    doc = found.check.doc
    host, server = doc["host"], doc["server"]
    load = host["load_average_start"][0]
    busy = ", more runnable work than cores: other work shared the machine" if shared(host) else ""
    return (
        f"{server['name']} {server['version']} on {host['name']} ({host['cpus']} CPUs, a 1-minute load average of "
        f"{text.sig(load, 2)} when the check started{busy}), check {found.check.id}"
    )


def _ratios(rows: list[Row], attribute: str) -> str:
    values = [getattr(r, attribute) for r in rows]
    low, high = f"{min(values):.2f}", f"{max(values):.2f}"
    return low if low == high else f"{low}–{high}"


def cases_words(rows: list[Row]) -> str:
    """The cases, per service: how many, which handler styles, how many policies, over what rates."""
    said = []
    for service in dict.fromkeys(r.case.service for r in rows):
        mine = [r for r in rows if r.case.service == service]
        handlers = list(dict.fromkeys(r.case.handler for r in mine))
        styles = f"{' and '.join(handlers)} handler{'s' * (len(handlers) > 1)}"
        policies = len({(r.case.max_batch, r.case.max_delay_s) for r in mine})
        said.append(
            f"{len(mine)} of the {service} service ({styles}, {policies} polic{'ies' if policies > 1 else 'y'}, "
            f"{text.sig_range([r.case.rate_per_s for r in mine])} requests/s)"
        )
    policies = len({(r.case.max_batch, r.case.max_delay_s) for r in rows})
    return f"{len(rows)} cases, {policies} policies in all: " + " and ".join(said)


def int_range(values: list[int]) -> str:
    low, high = min(values), max(values)
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def p99_words(found: RayServeComparison) -> str:
    """Why p99 is reported but not judged: the few requests it rests on in each case, and the machine's load."""
    counts = [r.requests for r in found.rows]
    slowest = [max(1, round(n / 100)) for n in counts]
    said = (
        f"p99, reported but not judged (each case answered {int_range(counts)} requests, so its p99 rests on "
        f"its {int_range(slowest)} slowest"
    )
    if shared(found.check.doc["host"]):
        said += ", and other work shared the machine"
    return said + f"), is {_ratios(found.rows, 'p99_ratio')} times the simulated one."


def summary_words(found: RayServeComparison) -> str:
    rows = found.rows
    p50_ok = sum(abs(r.p50_ratio - 1) <= TOLERANCE for r in rows)
    batch_ok = sum(abs(r.batch_ratio - 1) <= TOLERANCE for r in rows)
    requests = sum(r.requests for r in rows)
    return (
        f"Measured: {where(found)}. One replica per policy took requests from an open-loop Poisson client on "
        f"127.0.0.1: {cases_words(rows)}, each repeated {min(r.repeats for r in rows)} times or more; "
        f"{requests:,} requests answered. A request cost the server {text.sig(found.overhead_s * 1e3, 2)} ms by "
        f"itself (the median through a replica that does no work; p90 {text.sig(found.overhead_p90_s * 1e3, 2)} "
        f"ms). Given that overhead, the batch times the server measured inside itself and each repeat's own "
        f"arrival times, the simulator's p50 is within {TOLERANCE:.0%} of the measured one in {p50_ok} of "
        f"{len(rows)} cases (measured ÷ simulated {_ratios(rows, 'p50_ratio')}) and its mean batch in {batch_ok} "
        f"of {len(rows)} ({_ratios(rows, 'batch_ratio')}). {p99_words(found)}"
    )


def method_words(found: RayServeComparison) -> str:
    doc = found.check.doc
    curve = doc["curve"]
    return (
        f"The service that follows a curve sleeps, for each batch, a time drawn from {curve['label']} "
        f"({curve['source']}), so the server's own CPU cost does not mix with the model's; the model service runs "
        f"a real torch model. The batch handler either awaits (the replica keeps taking requests and closing "
        f"batches while one runs) or blocks the event loop (as a synchronous forward pass does). "
        f"max_ongoing_requests is {doc['server']['max_ongoing_requests']}, set explicitly: its default, 5, would "
        f"cap every batch at 5. Outside the replica (latency less the time from the replica taking a request to "
        f"its batch ending) a request spent a median of {text.sig_range([r.outside_s * 1e3 for r in found.rows])} "
        f"ms across the cases, against {text.sig(found.overhead_s * 1e3, 2)} ms through the idle replica; the "
        f"simulator adds the idle figure to every request.{late_words(found)} {host_words(found)}"
    )


def host_words(found: RayServeComparison) -> str:
    """How the simulation with the overhead queued on the host's cores compares, at p50, over the cases."""
    rows = [r for r in found.rows if not r.host_overloaded]
    cores = found.check.doc["host"]["cpus"]
    if not rows:
        return f"Simulated with that overhead as CPU work on the host's {cores} cores, every case overloads."
    closer = sum(abs(r.host_p50_ratio - 1) < abs(r.p50_ratio - 1) for r in rows)
    return (
        f"Simulated instead with that overhead as CPU work on the host's {cores} cores (half before the batcher, "
        f"half after the batch, waiting for a free core), the p50 is measured ÷ simulated "
        f"{_ratios(rows, 'host_p50_ratio')} and comes closer to the measured one in {closer} of {len(rows)} cases."
    )


def late_words(found: RayServeComparison) -> str:
    if found.late_close_s is None:
        return ""
    return (
        f" With the awaiting handler a batch that queued behind none started a median of "
        f"{text.sig(found.late_close_s * 1e3, 2)} ms after its wait had run out ({found.late_close_batches:,} "
        f"batches); the simulator starts it when the wait runs out."
    )


def comparison_figure(found: RayServeComparison):
    doc = found.check.doc
    host = doc["host"]
    chart = serving_check_chart(
        found.table(),
        "A real Ray Serve against the simulator, per case",
        [
            f"{host['name']}, {host['cpus']} CPUs{' (shared)' if shared(host) else ''} · Ray Serve "
            f"{doc['server']['version']}, one replica per policy · check {found.check.id}",
            *textwrap.wrap(f"service: {doc['curve']['label']}", 100)[:3],
            f"dashed: measured = simulated · band: ±{TOLERANCE:.0%}",
        ],
        TOLERANCE,
    )
    p50 = _ratios(found.rows, "p50_ratio")
    batch = _ratios(found.rows, "batch_ratio")
    return charts.figure(
        chart,
        CHART_ID,
        "A real Ray Serve against the simulator",
        f"Two scatter plots, one point per case ({len(found.rows)} cases: handler style, policy and rate): "
        f"measured against simulated p50 latency (measured ÷ simulated {p50}) and mean batch formed ({batch}), "
        f"with the line where they are equal and a ±{TOLERANCE:.0%} band. Measured on {where(found)}.",
        f"Each point is one case, measured by a real Ray Serve and simulated from its own measurements; inside the "
        f"band the two agree within {TOLERANCE:.0%}.",
    )


def comparison_table(found: RayServeComparison) -> Table:
    rows = []
    for r in found.rows:
        low, high = r.p50_range_s
        rows.append(
            [
                r.case.service,
                r.case.handler,
                r.case.describe() + ("; the simulator found a repeat overloaded" if r.overloaded else ""),
                text.sig(r.case.rate_per_s, 2),
                str(r.repeats),
                f"{text.sig(r.p50_s * 1e3, 3)} ({text.sig_range([low * 1e3, high * 1e3])})",
                text.sig(r.sim_p50_s * 1e3, 3),
                f"{r.p50_ratio:.2f}",
                text.sig(r.mean_batch, 3),
                text.sig(r.sim_mean_batch, 3),
                f"{r.batch_ratio:.2f}",
                f"{r.histogram_distance:.0%}",
                f"{r.mean_ratio:.2f}",
                f"{text.sig(r.p99_s * 1e3, 3)} / {text.sig(r.sim_p99_s * 1e3, 3)}",
                "overloaded"
                if r.host_overloaded
                else f"{text.sig(r.host_p50_s * 1e3, 3)} / {text.sig(r.host_p99_s * 1e3, 3)}",
                f"{r.utilisation:.0%}",
            ]
        )
    caption = (
        f"Measured on {where(found)}; simulated from its overhead, per-batch times and arrivals. Every figure is "
        "the median over the repeats (p50 measured: the repeats' range in brackets); batch sizes: the share of "
        f"batches whose size the simulation would have to change to match (total variation distance). {ABBREVIATIONS}"
    )
    return Table(TABLE_HEADERS, rows, caption)


def host_table(rows: list[HostRow], check: ServingCheck) -> list:
    """The idle replica at every rate it was driven at, against the simulator with the server's cost per request as
    a fixed delay and as CPU work on the host's cores; nothing when it was driven at one rate only."""
    if len(rows) < 2:
        return []
    cores = check.doc["host"]["cpus"]
    table = Table(
        ["requests/s", "answered (failed)", "p50 measured (ms)", "p99 measured (ms)", "fixed delay (ms)",
         f"p50 / p99 simulated on {cores} host cores (ms)"],
        [
            [
                text.sig(r.rate_per_s, 3), f"{r.requests:,} ({r.failed:,})", text.sig(r.p50_s * 1e3, 3),
                text.sig(r.p99_s * 1e3, 3), text.sig(r.fixed_s * 1e3, 3),
                "overloaded" if r.host_overloaded else f"{text.sig(r.host_p50_s * 1e3, 3)} / "
                f"{text.sig(r.host_p99_s * 1e3, 3)}",
            ]
            for r in rows
        ],
        f"The replica that does no work, driven by the same Poisson client at each rate, on {where_words(check)}: "
        f"measured latency against the simulator's, which takes the lowest rate's median as the server's cost per "
        f"request, once as a fixed delay and once as CPU work queued on the host's {cores} cores (half before the "
        "batcher, half after)",
    )  # fmt: skip
    return [table]


def where_words(check: ServingCheck) -> str:
    host = check.doc["host"]
    return (
        f"{host['name']} ({host['cpus']} CPUs, load average {text.sig(host['load_average_start'][0], 2)} at the start)"
    )
