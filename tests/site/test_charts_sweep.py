"""The model-sweep charts (Your model and the report) on SYNTHETIC sweeps (never published): whole-number batch
ticks, axes fitted to the data, the recommended batch and the budget marked on every chart, and a throughput line
that never turns back."""

import json
from itertools import pairwise

from benchmarks.site import sweep_words
from benchmarks.site.charts.sweep import frontier, sweep_charts
from tests.synthetic import make_sweep


def _walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def _specs(doc):
    return {name: chart.to_dict() for name, chart in sweep_charts(doc)}


def test_batch_axes_tick_whole_batch_sizes_and_fit_the_data():
    doc = make_sweep(batches=(1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64), budget_ms=5.0)  # SYNTHETIC
    for name, spec in _specs(doc).items():
        for node in _walk(spec):
            axis = node.get("axis") if node.get("field") == "batch" else None
            if isinstance(axis, dict) and "values" in axis:
                assert axis["values"] == [1, 2, 4, 8, 16, 32, 64] and axis["format"] == "d", name
                assert node["scale"]["domain"] == [1, 64], name
    latency = _specs(doc)["latency"]
    scales = [n["scale"] for n in _walk(latency) if n.get("field") == "latency_ms" and "scale" in n]
    low, high = scales[0]["domain"]
    measured = [p["percentile_s"] * 1e3 for p in doc["points"]] + [p["median_s"] * 1e3 for p in doc["points"]]
    assert low < min(measured) and high > max(measured) and high / low < 2 * max(measured) / min(measured)


def test_every_chart_marks_the_recommended_batch_and_the_budget():
    doc = make_sweep(batches=(1, 2, 4, 8, 16, 32, 64), budget_ms=5.0)  # SYNTHETIC, on a CUDA device: three charts
    run = sweep_words.from_document(doc).run.batch
    specs = _specs(doc)
    assert set(specs) == {"latency", "throughput", "memory"}
    for name, spec in specs.items():
        text = json.dumps(spec)
        assert f"ringed: batch {run}, the batch to run" in text, name
        assert any(words in text for words in ("budget 5 ms", "5 ms budget", "largest within 5 ms")), name


def test_the_throughput_line_never_turns_back():
    rows = [
        {"batch": 8, "percentile_ms": 60.0, "throughput": 140.0},
        {"batch": 15, "percentile_ms": 101.0, "throughput": 155.0},
        {"batch": 16, "percentile_ms": 74.0, "throughput": 226.0},
        {"batch": 32, "percentile_ms": 134.0, "throughput": 249.0},
        {"batch": 64, "percentile_ms": 306.0, "throughput": 216.0},
    ]
    kept = frontier(rows)
    assert [r["batch"] for r in kept] == [8, 16, 32]
    assert all(a["percentile_ms"] < b["percentile_ms"] and a["throughput"] < b["throughput"] for a, b in pairwise(kept))
