"""The CNN and decode arithmetic: formulas by hand, and tables on SYNTHETIC records.

Every run here comes from tests/synthetic.py (labelled synthetic, never published) with conv,
resnet50 and decode records added whose FLOPs and bytes follow the workloads' formulas and whose
times follow the roofline of made-up ceilings. The record builders are shared with the site tests.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchmarks.analysis.roofline import cnn
from benchmarks.analysis.roofline import decode as d
from benchmarks.analysis.roofline.curves import curves as curves_of
from benchmarks.analysis.roofline.roofline_model import critical_batch
from benchmarks.contract.results import Run
from benchmarks.gpus import Ceilings
from benchmarks.workloads import attention_name
from snippets import costs
from tests.synthetic import make_run

QUICK_DECODE = {"layers": 2, "d_model": 512, "heads": 8, "d_ff": 2048}
CPU_LIKE = Ceilings(flops_per_s=90e9, bytes_per_s=24e9)  # made up, CPU-sized: ridge 3.75


# --------------------------------------------------------------------------- SYNTHETIC records


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
    """SYNTHETIC conv records (two layers) and a made-up whole network."""
    records = []
    for c_in, c_out, kernel, resolution in ((64, 64, 3, 56), (2048, 512, 1, 7)):
        params = {"c_in": c_in, "c_out": c_out, "kernel": kernel, "resolution": resolution}
        for b in batches:
            flops, moved = costs.conv_cost(b, c_in, c_out, kernel, resolution, 4)
            records.append(_record("conv", params, b, flops, moved, ceilings))
    for b in batches[:-1]:  # a made-up whole network: 100 MB of weights, 0.7 GFLOP and 8 MB of activations an image
        records.append(_record("resnet50", {"resolution": 64}, b, 0.7e9 * b, 100e6 + 8e6 * b, ceilings, 5e-3))
    return records


def _decode_step(params, b, context, ceilings, skipped):
    terms = d.decode_terms(params, 4)
    split = {
        "weight_bytes": terms.weight_bytes,
        "kv_bytes": terms.kv_bytes_per_sequence(context) * b,
        "activation_bytes": terms.activation_bytes_per_token * b,
    }
    flops, moved = terms.flops(b, context), terms.bytes(b, context)
    assert moved == sum(split.values())
    if skipped:
        record = _record("decode", params, b, flops, moved, ceilings)
        record.update(status="skipped", message="not run: KV cache over budget", median_s=None, timing=None)
        return record
    return _record("decode", params, b, flops, moved, ceilings, 1e-4, bytes_split=split)


def decode_records(ceilings=CPU_LIKE, batches=(1, 2, 4, 8, 16, 32), contexts=(128, 2048), skip_from=None):
    """SYNTHETIC decode steps (MHA and GQA at each context) and a prefill of 128-token prompts."""
    records = []
    for kv_heads in (8, 2):
        for context in contexts:
            params = {**QUICK_DECODE, "kv_heads": kv_heads, "context": context, "phase": "decode"}
            records += [_decode_step(params, b, context, ceilings, bool(skip_from and b >= skip_from)) for b in batches]
    params = {**QUICK_DECODE, "kv_heads": 2, "context": 128, "phase": "prefill"}
    terms = d.decode_terms(params, 4)
    for b in batches:
        tokens = b * 128
        flops = tokens * 2 * terms.matmul_weights + 2 * b * 2 * 8 * 64 * 128 * 129
        split = {
            "weight_bytes": terms.weight_bytes,
            "kv_bytes": terms.kv_bytes_per_position * tokens,
            "activation_bytes": terms.activation_bytes_per_token * tokens,
        }
        records.append(_record("decode", params, b, flops, sum(split.values()), ceilings, bytes_split=split))
    return records


def synthetic_doc(records, ceilings=CPU_LIKE, **kwargs) -> dict:
    """A SYNTHETIC results document whose only records are `records`, with these ceilings (float32)."""
    doc = make_run(widths=(), linear_batches=(), dtypes=("float32",), modes=("eager",), **kwargs)
    doc["ceilings"]["copy"]["bytes_per_s"] = ceilings.bytes_per_s
    doc["ceilings"]["matmul"]["float32"]["flops_per_s"] = ceilings.flops_per_s
    doc["records"] = records
    assert doc["run"]["synthetic"]
    return doc


def synthetic_run(records, ceilings=CPU_LIKE, **kwargs) -> Run:
    return Run(path=Path("synthetic.json"), doc=synthetic_doc(records, ceilings, **kwargs))


# --------------------------------------------------------------------------- formulas by hand


def test_conv_reuse_corrects_the_seed():
    reuse = cnn.conv_reuse(64, 64, 3, 224)
    assert reuse.weights == 3 * 3 * 64 * 64 == 36_864
    assert reuse.positions == 224 * 224 == 50_176
    assert reuse.flops_per_weight == 2 * 50_176
    assert cnn.conv_reuse(64, 64, 3, 224, stride=2).positions == 112 * 112


def test_conv_cost_by_hand():
    flops, moved = costs.conv_cost(1, 64, 64, 3, 56, 4)
    assert flops == 2 * 9 * 64 * 64 * 56 * 56 == 231_211_008
    assert moved == 4 * (9 * 64 * 64 + 64 * 56 * 56 + 64 * 56 * 56) == 1_753_088
    f2, m2 = costs.conv_cost(2, 64, 64, 3, 56, 4)
    assert f2 == 2 * flops and m2 - moved == 4 * 2 * 64 * 56 * 56


def test_decode_terms_by_hand():
    """The quick profile's 2-layer, 512-wide decoder with 2 KV heads, fp32, one sequence at context 128."""
    terms = d.decode_terms({**QUICK_DECODE, "kv_heads": 2}, 4)
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
        terms = d.decode_terms(params, size)
        config = costs.DecoderConfig(**params)
        for batch in (1, 3, 64):
            cost = costs.decode_cost(batch, context, config, size)
            assert cost["flops"] == terms.flops(batch, context)
            assert cost["bytes"] == terms.bytes(batch, context)
            assert cost["weight_bytes"] == terms.weight_bytes
            assert cost["kv_bytes"] == batch * terms.kv_bytes_per_sequence(context)


def test_crossover_and_gqa():
    mha = d.decode_terms({**QUICK_DECODE, "kv_heads": 8}, 4)
    gqa = d.decode_terms({**QUICK_DECODE, "kv_heads": 2}, 4)
    for context in (128, 2048):
        b = mha.crossover_batch(context)
        assert b * mha.kv_bytes_per_sequence(context) == pytest.approx(mha.weight_bytes)
        # GQA divides the cache by heads / kv_heads = 4 (its weights shrink a little too)
        assert gqa.crossover_batch(context) / b == pytest.approx(4 * gqa.weight_bytes / mha.weight_bytes)
    assert mha.crossover_batch(2048) < mha.crossover_batch(128)


def test_knee_limit_and_longest_context():
    mha = d.decode_terms({**QUICK_DECODE, "kv_heads": 8}, 4)
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
    gpu_like = Ceilings(flops_per_s=1030e12, bytes_per_s=5e12)  # made up: ridge 206
    shapes = [(64, 64, 3, 56), (512, 512, 3, 7), (1024, 256, 1, 14)]
    rows = {f.label: f for f in cnn.formula_convs(shapes, "bfloat16", gpu_like)}
    early, deep, pointwise = rows["3×3, 64→64 @56²"], rows["3×3, 512→512 @7²"], rows["1×1, 1024→256 @14²"]
    assert early.intensity > 206 and early.knee < 1  # compute-bound from the first image
    assert deep.intensity < 206 and deep.knee > 1  # weights dominate: a short flat region
    assert deep.weight_share > 0.9 > 0.1 > early.weight_share
    assert pointwise.knee is None and pointwise.on_ridge  # 205 FLOP/byte per extra image against 206
    verdicts = cnn.formula_verdicts(list(rows.values()))
    assert verdicts.from_start == [early] and verdicts.short == [deep] and verdicts.on_ridge == [pointwise]
    assert verdicts.never == [] and verdicts.longest == deep.knee


def test_formula_rows_follow_the_terms():
    sweeps = [
        type("Sweep", (), {"params": {**QUICK_DECODE, "kv_heads": kv, "context": ctx}})()
        for kv, ctx in ((2, 128), (8, 2048), (8, 128))
    ]
    rows = d.formula_rows(sweeps, CPU_LIKE.ridge_intensity, 4)
    assert [(r.params["kv_heads"], r.context) for r in rows] == [(8, 128), (8, 2048), (2, 128)]
    first = rows[0]
    assert first.crossover == pytest.approx(first.terms.crossover_batch(128))
    assert first.knee == first.terms.knee(128, CPU_LIKE.ridge_intensity) and first.largest_batch is None


# --------------------------------------------------------------------------- tables on synthetic runs


def test_intensity_rows_from_records():
    run = synthetic_run(conv_records())
    curves = curves_of(run, "conv") + curves_of(run, "resnet50")
    rows = {r.curve.label: r for r in cnn.intensity_rows(curves)}
    early = rows["3×3, 64→64 @56²"]
    flops, moved = costs.conv_cost(1, 64, 64, 3, 56, 4)
    assert early.intensity == pytest.approx(flops / moved)
    assert early.weight_share == pytest.approx(4 * 9 * 64 * 64 / moved)
    assert early.ridge == pytest.approx(CPU_LIKE.ridge_intensity)
    assert early.above_ridge and early.reuse.positions == 56 * 56
    net = rows["ResNet-50 @64²"]
    assert net.intensity == pytest.approx(0.7e9 / 108e6)
    assert net.weight_share == pytest.approx(100 / 108)
    assert net.reuse is None
    assert [r.curve.label for r in cnn.single_layers(list(rows.values()))] == ["3×3, 64→64 @56²", "1×1, 2048→512 @7²"]


def test_intensity_at_interpolates_without_batch_one():
    run = synthetic_run([r for r in conv_records() if r["batch"] > 1])
    curve = curves_of(run, "conv")[0]
    flops, moved = costs.conv_cost(
        1, **{k: curve.params[k] for k in ("c_in", "c_out", "kernel", "resolution")}, bytes_per_element=4
    )
    assert cnn.intensity_at(curve, 1) == pytest.approx(flops / moved)
    assert cnn.intensity_limit(curve) > 0


def test_throughput_gain_and_beyond_ceiling():
    run = synthetic_run(conv_records())
    net = curves_of(run, "resnet50")[0]
    gain, predicted = cnn.throughput_gain(net)
    assert gain > predicted  # the made-up 5 ms per call is amortised, which the roofline does not know
    assert cnn.beyond_ceiling([net]) == []
    fast = synthetic_run(conv_records(Ceilings(flops_per_s=CPU_LIKE.flops_per_s * 2, bytes_per_s=1e15)), CPU_LIKE)
    assert {c.label for c, _, _ in cnn.beyond_ceiling(curves_of(fast, "conv"))} == {
        "3×3, 64→64 @56²",
        "1×1, 2048→512 @7²",
    }


def test_decode_rows_and_recorded_crossover():
    run = synthetic_run(decode_records(skip_from=16))
    curves = curves_of(run, "decode")
    rows = d.decode_rows(curves)
    assert [(attention_name(r.curve.params), r.context) for r in rows] == [
        ("MHA", 128),
        ("MHA", 2048),
        ("GQA (2 KV heads)", 128),
        ("GQA (2 KV heads)", 2048),
    ]
    for r in rows:
        terms = d.decode_terms(r.curve.params, 4)
        assert r.crossover == pytest.approx(terms.crossover_batch(r.context))
        assert not r.disagrees
        assert r.first[0] == 1 and r.last[0] == 8  # 16 and 32 were skipped
        assert 0 < r.first[1] < r.last[1] < 1
    assert all(len(c.not_ok) == 2 for c in curves if d.is_decode(c))
    assert not any(d.is_decode(c) for c in curves if d.is_prefill(c))


def test_condition_rows_pairs_and_prefill():
    run = synthetic_run(decode_records())
    curves = curves_of(run, "decode")
    steps = [c for c in curves if d.is_decode(c)]
    rows = d.condition_rows(steps, CPU_LIKE.ridge_intensity)
    assert [(r.params["kv_heads"], r.context) for r in rows] == [(8, 128), (8, 2048), (2, 128), (2, 2048)]
    assert rows[1].knee is None and rows[1].largest_batch == 32  # MHA at 2048: below the ridge at every batch
    pairs = d.attention_pairs(steps)
    assert [(p.context, p.group_size, p.same_last_batch) for p in pairs] == [(128, 4, True), (2048, 4, True)]
    before, after = pairs[0].crossovers
    assert after / before == pytest.approx(rows[2].crossover / rows[0].crossover)
    prefill = next(c for c in curves if d.is_prefill(c))
    top, rate = d.prefill_tokens_per_s(prefill)
    assert top.batch == 32 and rate == pytest.approx(32 * 128 / top.median_s)
    _, point = d.fastest_step(steps)
    assert all(p.batch / p.median_s <= point.batch / point.median_s for c in steps for p in c.points)
    assert d.run_ridges(run, ["float32", "bfloat16"]) == {"float32": pytest.approx(CPU_LIKE.ridge_intensity)}
    assert d.first_mode(steps) == "eager"
