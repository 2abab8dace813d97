"""The MoE analysis on SYNTHETIC records (labelled so; not measurements).

`synthetic_moe_run` adds to a synthetic run an MoE layer, its dense twin and expert choice whose
times follow the roofline of the run's made-up ceilings, with a made-up routing; the page tests
use it too.
"""

import math

import pytest

from benchmarks.analysis.roofline import curves as c
from benchmarks.analysis.roofline import moe
from benchmarks.contract.results import Run
from benchmarks.workloads import WORKLOADS
from snippets import costs
from tests.synthetic import make_run

SHAPE = {"experts": 8, "top_k": 2, "d_model": 256, "d_ff": 512}
BATCHES = tuple(2**i for i in range(13))  # 1 … 4096
SKEWS = (0.0, 1.0, 2.0)


def _routing(variant, skew, batch):
    """A made-up routing: skew makes the busiest expert's share (1+e)^-skew-weighted."""
    experts, top_k = SHAPE["experts"], SHAPE["top_k"]
    if variant == "expert-choice":
        capacity = math.ceil(batch * top_k / experts)
        return {"max_load": capacity, "mean_load": capacity, "touched_experts": experts, "dropped_tokens": batch // 64}
    weights = [(1 + e) ** -skew for e in range(experts)]
    shares = [batch * top_k * w / sum(weights) for w in weights]
    touched = min(experts, max(top_k, sum(share >= 0.5 for share in shares)))
    return {"max_load": min(batch, math.ceil(shares[0])), "mean_load": batch * top_k / touched,
            "touched_experts": touched}  # fmt: skip


def _record(params, batch, rates):
    """Recorded FLOPs and bytes are the expected ones; the time follows the made-up routing."""
    flops, moved = WORKLOADS["moe"].cost(params, 2, batch)
    routing = _routing(params["variant"], params.get("skew", 0.0), batch)
    read = moved
    if params["variant"] == "token-choice":
        d, f, experts, top_k = (SHAPE[n] for n in ("d_model", "d_ff", "experts", "top_k"))
        read = costs.moe_cost(batch, d, f, experts, top_k, routing["touched_experts"], batch * top_k, 2)[1]
    seconds = max(flops / rates[0], read / rates[1]) + 1e-6
    samples = [seconds * (1 + 0.001 * (i - 4)) for i in range(9)]
    timing = {"median_s": seconds, "q1_s": samples[2], "q3_s": samples[6], "samples_s": samples, "inner_loops": 1}
    record = {"workload": "moe", "params": params, "dtype": "bfloat16", "mode": "graph", "cache": "rotated",
              "weight_copies": 4, "batch": batch, "status": "ok", "message": None, "median_s": seconds,
              "timing": timing, "flops": flops, "bytes": moved}  # fmt: skip
    if params["variant"] != "dense":
        record["routing"] = routing
    return record


def synthetic_moe_run(**run) -> dict:
    """make_run(**run) with SYNTHETIC MoE records added: dense, expert choice, token choice at SKEWS."""
    doc = make_run(**run)
    rates = (doc["ceilings"]["matmul"]["bfloat16"]["flops_per_s"], doc["ceilings"]["copy"]["bytes_per_s"])
    variants = [{"variant": "dense"}, {"variant": "expert-choice", "capacity_factor": 1.0}]
    variants += [{"variant": "token-choice", "skew": skew} for skew in SKEWS]
    doc["records"] += [_record({**v, **SHAPE}, b, rates) for v in variants for b in BATCHES]
    return doc


def _run(doc=None) -> Run:
    doc = doc or synthetic_moe_run()
    return Run(path=f"/synthetic/{doc['device']['slug']}/{doc['run']['id']}.json", doc=doc)


def test_moe_records_are_the_ok_moe_ones():
    doc = synthetic_moe_run()
    doc["records"][-1]["status"] = "oom"
    records = moe.moe_records(_run(doc))
    assert len(records) == 5 * len(BATCHES) - 1
    assert all(r["workload"] == "moe" for r in records)


def test_skew_table_has_latency_and_load_per_skew_and_batch():
    (table,) = moe.skew_tables(moe.moe_records(_run()))
    assert (table.experts, table.top_k, table.dtype, table.mode) == (8, 2, "bfloat16", "graph")
    assert table.skews == list(SKEWS) and list(table.cells) == list(BATCHES)
    uniform, skewed = table.cells[4096][0.0], table.cells[4096][2.0]
    assert uniform.ratio is None and skewed.ratio == pytest.approx(skewed.median_s / uniform.median_s)
    assert skewed.max_load > uniform.max_load and skewed.touched <= uniform.touched
    batch, skew, high, low = table.largest_batch_contrast()
    assert (batch, skew, high, low) == (4096, 2.0, skewed, uniform)


def test_a_table_without_uniform_routing_has_no_ratio_and_no_contrast():
    records = [r for r in moe.moe_records(_run()) if r["params"].get("skew") != 0.0]
    (table,) = moe.skew_tables(records)
    assert table.skews == [1.0, 2.0] and table.cells[16][1.0].ratio is None
    assert table.largest_batch_contrast() is None


def test_load_points_and_dropped_tokens():
    records = moe.moe_records(_run())
    points = moe.load_points(records)
    assert len(points) == len(SKEWS) * len(BATCHES)
    assert [p.skew for p in points[:2]] == [0.0, 0.0] and points[0].batch == 1
    assert moe.dropped_tokens(records + records[:20]) == [(b, b // 64) for b in BATCHES]


def test_the_uniform_knee_moves_out_past_the_dense_one():
    run = _run()
    found = [curve for curve in c.curves(run, "moe") if len(curve.points) >= 2]
    (shaped,) = moe.by_shape(found).values()
    shift = moe.knee_shift(shaped)
    assert (shift.experts, shift.top_k, shift.mode, shift.expected) == (8, 2, "graph", 4)
    assert shift.uniform_knee > shift.dense_knee and shift.moved == shift.uniform_knee / shift.dense_knee
    assert moe.knee_shift([curve for curve in shaped if curve.params["variant"] != "dense"]) is None
