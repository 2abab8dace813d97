"""The CNN and decode charts and the rows they draw, on SYNTHETIC records (labelled so; never published).

The records come from tests/analysis/test_cnn_decode.py: FLOPs and bytes follow the workloads'
formulas and times follow the roofline of made-up ceilings.
"""

from __future__ import annotations

import json

import pytest

from benchmarks.analysis.roofline import decode as d
from benchmarks.analysis.roofline.curves import curves as curves_of
from benchmarks.workloads import IMAGES, SEQUENCES
from tests.analysis.test_cnn_decode import conv_records, decode_records, synthetic_run

alt = pytest.importorskip("altair", reason="the docs dependency group is not installed")
cm = pytest.importorskip("benchmarks.site.charts.models")
charts = pytest.importorskip("benchmarks.site.charts")


def test_split_and_tokens_rows():
    run = synthetic_run(decode_records())
    curves = curves_of(run, "decode")
    step = next(c for c in curves if d.is_decode(c))
    rows = cm.split_rows(step)
    assert {r["part"] for r in rows} == set(cm.PARTS)
    weights = {r["mib"] for r in rows if r["part"] == "weights"}
    assert len(weights) == 1  # the weight read does not grow with the batch
    prefill = next(c for c in curves if d.is_prefill(c))
    tokens = {r["batch"]: r["tokens"] for r in cm.tokens_rows([prefill]) if r["kind"] == "measured"}
    assert tokens == {b: 128 * b for b in (1, 2, 4, 8, 16, 32)}
    kinds = [r["kind"] for r in cm.tokens_rows([prefill])]
    assert kinds[:2] == ["measured", "roofline"]  # each point measured, then its roofline


def _titles(node, found):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                found.add(value)
            else:
                _titles(value, found)
    elif isinstance(node, list):
        for item in node:
            _titles(item, found)
    return found


def test_cnn_charts_are_valid_vega_lite():
    run = synthetic_run(conv_records())
    convs = curves_of(run, "conv")
    net = curves_of(run, "resnet50")[0]
    for chart in (
        charts.latency_chart(convs, "latency", IMAGES),
        charts.throughput_chart(convs, "throughput", IMAGES),
        charts.headline_chart(net, "ResNet-50", IMAGES),
        cm.intensity_chart([*convs, net], "intensity", "batch size (images)"),
    ):
        spec = chart.to_dict()  # validates against the Vega-Lite schema
        titles = _titles(spec, set())
        assert "batch size (images)" in titles
        assert not any("rows" in t for t in titles), titles
        assert "SYNTHETIC" in json.dumps(spec, ensure_ascii=False)  # the provenance says so
    ridge = json.dumps(cm.intensity_chart(convs, "intensity", "batch size (images)").to_dict(), ensure_ascii=False)
    assert "ridge, float32: 3.75 FLOP/byte" in ridge


def test_decode_charts_are_valid_vega_lite():
    run = synthetic_run(decode_records())
    curves = curves_of(run, "decode")
    steps = [c for c in curves if d.is_decode(c)]
    prefill = [c for c in curves if d.is_prefill(c)]
    specs = [
        charts.latency_chart(steps[:2], "latency", SEQUENCES).to_dict(),
        cm.intensity_chart(steps, "intensity", "batch size (sequences)").to_dict(),
        cm.bytes_split_chart(steps, "bytes").to_dict(),
        cm.tokens_chart([*steps, *prefill], "tokens").to_dict(),
    ]
    assert "batch size (sequences, one new token each)" in _titles(specs[0], set())
    text = json.dumps(specs[2], ensure_ascii=False)
    assert "KV = weights at" in text  # the crossover is inside the measured range at context 2048
    assert len(specs[2]["concat"]) == len(steps)  # one panel per curve
    for spec in specs:
        assert "float32" in json.dumps(spec) and "eager" in json.dumps(spec) and "cache" in json.dumps(spec)
    with pytest.raises(ValueError):
        cm.bytes_split_chart(prefill[:0], "nothing")
