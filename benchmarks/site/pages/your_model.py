"""The "Your model" page: how to sweep a model of your own, and every committed sweep, explained."""

from __future__ import annotations

from benchmarks.contract.results import ModelSweep
from benchmarks.site import sweep_words, text
from benchmarks.site.charts import distinct_ids, figure
from benchmarks.site.charts.sweep import memory_note, sweep_charts, where
from benchmarks.site.model_sweeps import load_sweeps
from benchmarks.site.render import Bullets, Details, Heading, Html, Page, Paragraph, SourceBox, code, drawing_from, tag
from benchmarks.site.sweep_table import table_lines

EXAMPLES = ("examples/resnet50_small.py", "examples/decode_step.py")
CAPTIONS = {
    "latency": "Latency against batch size",
    "throughput": "Throughput against latency",
    "memory": "Peak memory against batch size",
}
SUMMARIES = {
    "latency": "Median latency per call (and the budget's percentile, when it is not the median) against batch size, "
    "with the latency budget",
    "throughput": "Samples per second against the latency of one call; the doubling search's batch sizes are labelled",
    "memory": "Peak memory against batch size: the allocator's peak during one call",
}


LESSON = (  # the takeaway's lesson, above the items the page measured
    "A sweep of your own model answers the question this site explains on its own workloads: which batch size to "
    "run, and what bounds it there."
)


def build(sweeps: list[ModelSweep] | None = None) -> Page:
    sweeps = load_sweeps() if sweeps is None else sweeps
    return Page(
        {
            "examples": [SourceBox(path) for path in EXAMPLES],
            "sweeps": committed(sweeps),
        },
        lesson=LESSON,
    )


def chart_bases(sweeps: list[ModelSweep]) -> dict[ModelSweep, str]:
    """Each sweep's chart ids' common start, from its device and id; distinct even where two ids differ only in
    '.', '_' or case (see `distinct_ids`)."""
    return distinct_ids([(s, f"sweep-{s.device['slug']}-{s.id}", (s.started, s.id)) for s in sweeps])


def command_words(sweep: ModelSweep) -> Html:
    return code(" ".join(sweep.doc["run"].get("command") or ["(command not recorded)"]))


def provenance_words(run: dict) -> str:
    """Which code measured a sweep: its commit, and whether the tree had uncommitted changes."""
    commit = f"commit {run['git_commit'][:7]}" if run.get("git_commit") else "an unrecorded commit"
    return f"from a tree with uncommitted changes on {commit}" if run.get("git_dirty") else f"at {commit}"


def section(sweep: ModelSweep, chart_base: str) -> list:
    doc, model = sweep.doc, sweep.doc["model"]
    rec = sweep_words.from_document(doc)
    state = "" if doc["run"]["complete"] else f" The sweep is incomplete ({doc['run'].get('interrupted')})."
    notes = model.get("notes") or []
    parts: list = [
        Heading(f"{model['name']} on {doc['device']['name']}", level=3),
        Paragraph(
            [
                f"{model['target']}, {model['dtype']}, {model['mode']}; inputs: {model['input']}. Swept with ",
                command_words(sweep),
                f" {provenance_words(doc['run'])}, started {doc['run']['started_at']}.{state}",
                f" Notes: {'; '.join(notes)}." if notes else "",
            ]
        ),
        Bullets([_marked(sweep, line, segment) for line, segment in sweep_words.marked_lines(rec)]),
    ]
    for name, chart in sweep_charts(doc):
        summary = f"{SUMMARIES[name]}. Measured on {where(doc)}; sweep {sweep.id}"
        parts.append(figure(chart, f"{chart_base}-{name}", CAPTIONS[name], summary))
    if memory_note(doc):
        parts.append(Paragraph(memory_note(doc)))
    table = text.h("\n".join(table_lines(doc)))
    parts.append(Details("Every batch size measured", [Html(f"<pre>{table}</pre>")]))
    return parts


def _marked(sweep: ModelSweep, line: str, segment) -> Html | str:
    """A line that says what bounds a stretch of the curve, marked for the claims test like every verdict."""
    if segment is None:
        return line
    return tag("span", line, class_="verdict", data_curve=f"sweep|{sweep.id}", data_regime=segment.regime,
               data_batches=f"{segment.first}-{segment.last}")  # fmt: skip


def committed(sweeps: list[ModelSweep]) -> list:
    if not sweeps:
        return [Paragraph(["No sweep is committed yet: run ", code("nox -s sweep -- TARGET"), " to add one."])]
    bases = chart_bases(sweeps)
    parts: list = []
    for sweep in sweeps:
        with drawing_from(sweep.path):
            parts += section(sweep, bases[sweep])
    return parts
