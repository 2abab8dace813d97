"""The batch-size guide's page module: every number computed, and labelled as datasheet or measured."""

import re

from benchmarks.analysis.roofline import calibration_file
from benchmarks.gpus import GPUS
from benchmarks.site.pages import guide
from tests.synthetic import make_run, site_data


def test_the_ridge_table_has_gpus_as_rows_and_dtypes_as_columns():
    table = guide.build(site_data(empty=True)).html("ridges")
    assert "<th>bf16 (rows)</th>" in table and "<td>NVIDIA H100 SXM</td><td>40</td><td>295</td>" in table
    assert table.count("<tr>") == 1 + len(GPUS) == 1 + 13  # the header and one row per datasheet GPU


def test_the_rule_is_applied_to_a_measured_curve_and_says_which():
    out = guide.build(site_data(make_run(kind="cpu"))).html("pick")
    assert "Measured example" in out and "CPU: Synthetic GPU" in out and "The rule picks" in out
    assert "No measured curve" in guide.build(site_data(empty=True)).html("pick")


def test_the_worked_examples_come_from_the_cited_config_and_the_datasheet():
    page = guide.build(site_data(empty=True))
    kv = page.html("kv")
    # the driver's 81,559 MiB (79.6 GiB), not the datasheet's 80 GB read as 80 GiB: 258 and 64 sequences
    assert "128 KiB per token" in kv and "<td>8,192</td><td>1.00 GiB</td><td>64</td>" in kv
    assert "<td>2,048</td><td>256 MiB</td><td>258</td>" in kv and "79.6 GiB as its driver reports it" in kv
    # the worked decode step has its forecast beside the ceiling, with the cross-validated error of decode figures
    error = calibration_file.committed().expected_for("decode", 1)
    assert "The ceiling (the roofline) of one decode step" in kv and "The forecast, calibrated on published" in kv
    assert f"expected error ±{error.median * 100:.0f} % median, ±{error.p90 * 100:.0f} % at p90" in kv
    assert "huggingface.co/meta-llama/Meta-Llama-3-8B" in kv
    assert "<td>4</td><td>4×</td><td>74</td>" in page.html("quantization")
    assert "513: 160 tiles in 2 waves" in page.html("waves")
    assert "snippets/sweep_your_model.py" in page.html("snippet")
    assert '<details class="example">' in page.html("snippet")  # folded: the checklist reads on past it


def test_step_four_is_drawn_with_the_budget_the_flat_share_and_the_pick():
    import json

    page = guide.build(site_data(make_run(kind="cpu")))
    figure = page.sections["pick"][0]
    assert figure.chart_id == "guide-pick"
    spec = json.dumps(figure.spec)
    picked = re.findall(r'"batch": (\d+), "ms": [^}]*"picked": true', spec)
    assert len(set(picked)) == 1 and f"batch {picked[0]}, the rule's pick" in figure.visible
    assert "budget 10 ms" in spec and "of the best throughput" in spec


def test_the_kv_table_stops_at_the_models_context():
    kv = guide.build(site_data(empty=True)).html("kv")
    assert "<td>32,768</td>" not in kv and "Its context is at most 8,192 tokens" in kv
    assert all(context <= guide.LLAMA_3_8B.max_context for context in guide.CONTEXTS)
