"""The CNN and decode pages' helpers: formulas by hand, tables and charts on SYNTHETIC records.

Every run here comes from tests/synthetic.py (labelled synthetic, never published) with conv,
resnet50 and decode records added whose FLOPs and bytes follow the workloads' formulas and whose
times follow the roofline of made-up ceilings.
"""

from __future__ import annotations

import json
import math
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.analysis import curves as report
from benchmarks.results import Run
from benchmarks.analysis.roofline import Ceilings, critical_batch
from snippets import costs
from benchmarks.workloads import IMAGES, SEQUENCES
from tests.synthetic import make_run

alt = pytest.importorskip("altair", reason="the docs dependency group is not installed")
cm = pytest.importorskip("benchmarks.site.charts_models")
charts = pytest.importorskip("benchmarks.site.charts")

ROOT = Path(__file__).resolve().parents[2]
QUICK_DECODE = {"layers": 2, "d_model": 512, "heads": 8, "d_ff": 2048}
CPU_LIKE = Ceilings(flops_per_s=90e9, bytes_per_s=24e9)  # made up, CPU-sized: ridge 3.75


def _timing(seconds):
    samples = [seconds * 0.98, seconds, seconds * 1.02]
    return {
        "median_s": seconds,
        "q1_s": samples[0],
        "q3_s": samples[2],
        "min_s": samples[0],
        "max_s": samples[2],
        "samples_s": samples,
        "inner_loops": 1,
    }


def _record(workload, params, batch, flops, moved, ceilings, overhead_s=0.0, **extra):
    seconds = max(flops / ceilings.flops_per_s, moved / ceilings.bytes_per_s) + overhead_s
    return {
        "workload": workload,
        "params": params,
        "dtype": "float32",
        "mode": "eager",
        "cache": "rotated",
        "weight_copies": 1,
        "batch": batch,
        "status": "ok",
        "message": None,
        "median_s": seconds,
        "timing": _timing(seconds),
        "flops": flops,
        "bytes": moved,
        **extra,
    }


def conv_records(ceilings=CPU_LIKE, batches=(1, 2, 4, 8, 16, 32)):
    records = []
    for c_in, c_out, kernel, resolution in ((64, 64, 3, 56), (2048, 512, 1, 7)):
        params = {"c_in": c_in, "c_out": c_out, "kernel": kernel, "resolution": resolution}
        for b in batches:
            flops, moved = costs.conv_cost(b, c_in, c_out, kernel, resolution, 4)
            records.append(_record("conv", params, b, flops, moved, ceilings))
    for b in batches[:-1]:  # a made-up whole network: 100 MB of weights, 0.7 GFLOP and 8 MB of activations an image
        records.append(_record("resnet50", {"resolution": 64}, b, 0.7e9 * b, 100e6 + 8e6 * b, ceilings, 5e-3))
    return records


def decode_records(ceilings=CPU_LIKE, batches=(1, 2, 4, 8, 16, 32), contexts=(128, 2048), skip_from=None):
    records = []
    for kv_heads in (8, 2):
        for context in contexts:
            params = {**QUICK_DECODE, "kv_heads": kv_heads, "context": context, "phase": "decode"}
            terms = cm.decode_terms(params, 4)
            for b in batches:
                kv = terms.kv_bytes_per_sequence(context) * b
                split = {
                    "weight_bytes": terms.weight_bytes,
                    "kv_bytes": kv,
                    "activation_bytes": terms.activation_bytes_per_token * b,
                }
                flops, moved = terms.flops(b, context), terms.bytes(b, context)
                assert moved == sum(split.values())
                if skip_from and b >= skip_from:
                    record = _record("decode", params, b, flops, moved, ceilings)
                    record.update(status="skipped", message="not run: KV cache over budget", median_s=None, timing=None)
                    records.append(record)
                    continue
                records.append(_record("decode", params, b, flops, moved, ceilings, 1e-4, bytes_split=split))
    params = {**QUICK_DECODE, "kv_heads": 2, "context": 128, "phase": "prefill"}
    terms = cm.decode_terms(params, 4)
    for b in batches:
        tokens = b * 128
        flops = tokens * 2 * terms.matmul_weights + 2 * b * 2 * 8 * 64 * 128 * 129
        kv = terms.kv_bytes_per_position * tokens
        split = {
            "weight_bytes": terms.weight_bytes,
            "kv_bytes": kv,
            "activation_bytes": terms.activation_bytes_per_token * tokens,
        }
        records.append(_record("decode", params, b, flops, sum(split.values()), ceilings, bytes_split=split))
    return records


def synthetic_run(records, ceilings=CPU_LIKE, **kwargs) -> Run:
    doc = make_run(widths=(), linear_batches=(), dtypes=("float32",), modes=("eager",), **kwargs)
    doc["ceilings"]["copy"]["bytes_per_s"] = ceilings.bytes_per_s
    doc["ceilings"]["matmul"]["float32"]["flops_per_s"] = ceilings.flops_per_s
    doc["records"] = records
    assert doc["run"]["synthetic"]
    return Run(path=Path("synthetic.json"), doc=doc)


# --------------------------------------------------------------------------- formulas by hand


def test_conv_reuse_corrects_the_seed():
    reuse = cm.conv_reuse(64, 64, 3, 224)
    assert reuse.weights == 3 * 3 * 64 * 64 == 36_864
    assert reuse.positions == 224 * 224 == 50_176
    assert reuse.flops_per_weight == 2 * 50_176
    assert cm.conv_reuse(64, 64, 3, 224, stride=2).positions == 112 * 112


def test_conv_cost_by_hand():
    flops, moved = costs.conv_cost(1, 64, 64, 3, 56, 4)
    assert flops == 2 * 9 * 64 * 64 * 56 * 56 == 231_211_008
    assert moved == 4 * (9 * 64 * 64 + 64 * 56 * 56 + 64 * 56 * 56) == 1_753_088
    f2, m2 = costs.conv_cost(2, 64, 64, 3, 56, 4)
    assert f2 == 2 * flops and m2 - moved == 4 * 2 * 64 * 56 * 56


def test_decode_terms_by_hand():
    """The quick profile's 2-layer, 512-wide decoder with 2 KV heads, fp32, one sequence at context 128."""
    terms = cm.decode_terms({**QUICK_DECODE, "kv_heads": 2}, 4)
    per_layer = 512 * 512 + 2 * 512 * 2 * 64 + 512 * 512 + 2 * 512 * 2048
    assert terms.matmul_weights == 2 * per_layer == 5_505_024
    assert terms.weight_bytes == 4 * (2 * per_layer + 2 * 2 * 512 + 512) == 22_030_336
    assert terms.kv_bytes_per_position == 2 * 2 * 2 * 64 * 4 == 2048
    assert terms.kv_bytes_per_sequence(128) == 2048 * 129 == 264_192
    assert terms.activation_bytes_per_token == 4 * 2 * (8 * 512 + 2 * 2048) == 65_536
    assert terms.flops(1, 128) == 2 * 5_505_024 + 4 * 2 * 8 * 64 * 129 == 11_538_432
    assert terms.bytes(1, 128) == 22_030_336 + 264_192 + 65_536
    assert terms.attention_floor == pytest.approx(2 * (8 / 2) / 4)


def test_decode_terms_match_the_cost_model():
    """The page's closed forms give the same FLOPs and bytes as the cost model."""
    for kv_heads, context, size in ((8, 128, 4), (2, 2048, 4), (8, 777, 2)):
        params = {**QUICK_DECODE, "kv_heads": kv_heads}
        terms = cm.decode_terms(params, size)
        config = costs.DecoderConfig(**params)
        for batch in (1, 3, 64):
            cost = costs.decode_cost(batch, context, config, size)
            assert cost["flops"] == terms.flops(batch, context)
            assert cost["bytes"] == terms.bytes(batch, context)
            assert cost["weight_bytes"] == terms.weight_bytes
            assert cost["kv_bytes"] == batch * terms.kv_bytes_per_sequence(context)


def test_crossover_and_gqa():
    mha = cm.decode_terms({**QUICK_DECODE, "kv_heads": 8}, 4)
    gqa = cm.decode_terms({**QUICK_DECODE, "kv_heads": 2}, 4)
    for context in (128, 2048):
        b = mha.crossover_batch(context)
        assert b * mha.kv_bytes_per_sequence(context) == pytest.approx(mha.weight_bytes)
        # GQA divides the cache by heads / kv_heads = 4 (its weights shrink a little too)
        assert gqa.crossover_batch(context) / b == pytest.approx(4 * gqa.weight_bytes / mha.weight_bytes)
    assert mha.crossover_batch(2048) < mha.crossover_batch(128)


def test_knee_limit_and_longest_context():
    mha = cm.decode_terms({**QUICK_DECODE, "kv_heads": 8}, 4)
    ridge = CPU_LIKE.ridge_intensity
    longest = mha.longest_context_with_knee(ridge)
    assert 100 < longest < 2048
    assert mha.intensity_limit(math.floor(longest)) > ridge > mha.intensity_limit(math.ceil(longest))
    assert mha.knee(math.floor(longest), ridge) is not None
    assert mha.knee(2048, ridge) is None
    # the knee is where the roofline's compute and memory times meet, as roofline.critical_batch says
    for context in (16, 128):
        points = [(b, mha.flops(b, context), mha.bytes(b, context)) for b in (1, 2, 64)]
        assert mha.knee(context, ridge) == pytest.approx(critical_batch(points, CPU_LIKE))
    # the limit falls towards attention's own intensity, 2·(H/H_kv)/s
    assert mha.intensity_limit(10**9) == pytest.approx(mha.attention_floor, rel=1e-3)
    assert mha.longest_context_with_knee(0.1) == math.inf  # below attention's floor: every context has a knee
    assert mha.longest_context_with_knee(1e6) is None


def test_formula_convs_with_made_up_ceilings():
    gpu_like = Ceilings(flops_per_s=1000e12, bytes_per_s=5e12)  # made up: ridge 200
    rows = {f.label: f for f in cm.formula_convs([(64, 64, 3, 56), (512, 512, 3, 7)], "bfloat16", gpu_like)}
    early, deep = rows["3×3, 64→64 @56²"], rows["3×3, 512→512 @7²"]
    assert early.intensity > 200 and early.knee < 1  # compute-bound from the first image
    assert deep.intensity < 200 and deep.knee > 1  # weights dominate: a short flat region
    assert deep.weight_share > 0.9 > 0.1 > early.weight_share
    assert len(early.cells()) == len(cm.FORMULA_CONV_HEADERS)


# --------------------------------------------------------------------------- tables on synthetic runs


def test_intensity_rows_from_records():
    run = synthetic_run(conv_records())
    curves = report.curves(run, "conv") + report.curves(run, "resnet50")
    rows = {r.curve.label: r for r in cm.intensity_rows(curves)}
    early = rows["3×3, 64→64 @56²"]
    flops, moved = costs.conv_cost(1, 64, 64, 3, 56, 4)
    assert early.intensity == pytest.approx(flops / moved)
    assert early.weight_share == pytest.approx(4 * 9 * 64 * 64 / moved)
    assert early.ridge == pytest.approx(CPU_LIKE.ridge_intensity)
    assert early.above_ridge and early.reuse.positions == 56 * 56
    assert "below 1" in cm.predicted_knee_text(early.curve)
    net = rows["ResNet-50 @64²"]
    assert net.intensity == pytest.approx(0.7e9 / 108e6)
    assert net.weight_share == pytest.approx(100 / 108)
    assert len(net.cells()) == len(cm.INTENSITY_HEADERS)


def test_intensity_at_interpolates_without_batch_one():
    run = synthetic_run([r for r in conv_records() if r["batch"] > 1])
    curve = report.curves(run, "conv")[0]
    flops, moved = costs.conv_cost(
        1, **{k: curve.params[k] for k in ("c_in", "c_out", "kernel", "resolution")}, bytes_per_element=4
    )
    assert cm.intensity_at(curve, 1) == pytest.approx(flops / moved)


def test_decode_rows_and_recorded_crossover():
    run = synthetic_run(decode_records(skip_from=16))
    curves = report.curves(run, "decode")
    rows = cm.decode_rows(curves)
    assert [(cm.attention_name(r.curve.params), r.context) for r in rows] == [
        ("MHA", 128),
        ("MHA", 2048),
        ("GQA (2 KV heads)", 128),
        ("GQA (2 KV heads)", 2048),
    ]
    for r in rows:
        terms = cm.decode_terms(r.curve.params, 4)
        assert r.crossover == pytest.approx(terms.crossover_batch(r.context))
        assert r.first[0] == 1 and r.last[0] == 8  # 16 and 32 were skipped
        assert 0 < r.first[1] < r.last[1] < 1
        assert len(r.cells()) == len(cm.DECODE_HEADERS)
    assert all(len(c.not_ok) == 2 for c in curves if cm.is_decode(c))
    assert not any(cm.is_decode(c) for c in curves if cm.is_prefill(c))


def test_split_and_tokens_rows():
    run = synthetic_run(decode_records())
    curves = report.curves(run, "decode")
    step = next(c for c in curves if cm.is_decode(c))
    rows = cm.split_rows(step)
    assert {r["part"] for r in rows} == set(cm.PARTS)
    weights = {r["mib"] for r in rows if r["part"] == "weights"}
    assert len(weights) == 1  # the weight read does not grow with the batch
    prefill = next(c for c in curves if cm.is_prefill(c))
    tokens = {r["batch"]: r["tokens"] for r in cm.tokens_rows([prefill]) if r["kind"] == "measured"}
    assert tokens == {b: 128 * b for b in (1, 2, 4, 8, 16, 32)}


def test_knee_texts():
    assert cm.measured_knee_text(None) == "none detected"
    run = synthetic_run(decode_records())
    long_mha = next(c for c in report.curves(run, "decode") if c.label == "context 2048, MHA")
    assert long_mha.predicted_knee is None
    assert cm.predicted_knee_text(long_mha).startswith("none")


# --------------------------------------------------------------------------- charts


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
    convs = report.curves(run, "conv")
    net = report.curves(run, "resnet50")[0]
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


def test_decode_charts_are_valid_vega_lite():
    run = synthetic_run(decode_records())
    curves = report.curves(run, "decode")
    steps = [c for c in curves if cm.is_decode(c)]
    prefill = [c for c in curves if cm.is_prefill(c)]
    specs = [
        charts.latency_chart(steps[:2], "latency", SEQUENCES).to_dict(),
        cm.intensity_chart(steps, "intensity", "batch size (sequences)").to_dict(),
        cm.bytes_split_chart(steps, "bytes").to_dict(),
        cm.tokens_chart([*steps, *prefill], "tokens").to_dict(),
    ]
    assert "batch size (sequences, one new token each)" in _titles(specs[0], set())
    text = json.dumps(specs[2], ensure_ascii=False)
    assert "KV = weights at" in text  # the crossover is inside the measured range at context 2048
    for spec in specs:
        assert "float32" in json.dumps(spec) and "eager" in json.dumps(spec) and "cache" in json.dumps(spec)
    with pytest.raises(ValueError):
        cm.bytes_split_chart(prefill[:0], "nothing")


# --------------------------------------------------------------------------- the pages


def _run_page(page, results, monkeypatch, tmp_path):
    """Execute a page as the docs build does and return the text of everything it displays."""
    display_module = pytest.importorskip("IPython.display")
    shown = []

    def display(*objects, **_):
        for obj in objects:
            if hasattr(obj, "chart_id"):
                shown.append(f"[chart {obj.chart_id}] {obj.caption}. {obj.description}")
            else:
                shown.append(str(getattr(obj, "data", obj)))

    monkeypatch.setattr(display_module, "display", display)
    monkeypatch.setenv("BATCHING_RESULTS_DIR", str(results))
    monkeypatch.setenv("BATCHING_INCLUDE_SYNTHETIC", "1")
    monkeypatch.setenv("BATCHING_CHART_DIR", str(tmp_path / f"charts-{page}"))
    runpy.run_path(str(ROOT / "docs" / f"{page}.py"))
    return "\n".join(shown)


def _write(directory, doc):
    path = directory / doc["device"]["slug"] / f"{doc['run']['id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")


@pytest.mark.parametrize("page", ["cnn", "decode"])
def test_pages_say_when_a_run_lacks_the_workload(page, monkeypatch, tmp_path):
    results = tmp_path / "results"
    _write(results, make_run(widths=(512,), linear_batches=()))
    out = _run_page(page, results, monkeypatch, tmp_path)
    assert "This run has no" in out
    assert "What a GPU run will show" in out  # only formulas, clearly labelled, until a GPU run exists


@pytest.mark.parametrize("page", ["cnn", "decode"])
def test_pages_draw_a_synthetic_gpu_run(page, monkeypatch, tmp_path):
    gpu = Ceilings(flops_per_s=400e12 / 8, bytes_per_s=2e12)
    records = conv_records(gpu) if page == "cnn" else decode_records(gpu, skip_from=32)
    doc = synthetic_run(records, gpu).doc
    results = tmp_path / "results"
    _write(results, doc)
    out = _run_page(page, results, monkeypatch, tmp_path)
    assert "This run has no" not in out and "What a GPU run will show" not in out
    staged = sorted(p.stem for p in (tmp_path / f"charts-{page}").glob("*.json"))
    assert staged and all(name.startswith(f"{page}-synthetic-gpu-") for name in staged)
    if page == "decode":
        assert "skipped" in out  # the skipped points are listed



def test_not_measured_lists_batches_once_per_configuration():
    records = decode_records(skip_from=16)
    records += [dict(r, mode="graph") for r in records]
    run = synthetic_run(records)
    lines = cm.not_measured(report.curves(run, "decode"))
    assert len(lines) == 4  # two contexts × two attention types, both modes on one line
    assert all("batches 16, 32 skipped (not run: KV cache over budget)" in line for line in lines)
    assert all("eager, graph" in line or "graph, eager" in line for line in lines)
