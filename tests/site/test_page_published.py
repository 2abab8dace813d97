"""The page that checks the roofline against measurements others published."""

from __future__ import annotations

import html
import json
import re
import statistics
from pathlib import Path

import pytest

from benchmarks.analysis.published import roofline_check as pc
from benchmarks.analysis.published.measurements_file import PUBLISHED_FILE, read_published
from benchmarks.site import text
from benchmarks.site.pages import published
from tests.synthetic import PAYLOAD


@pytest.fixture(scope="module")
def page():
    return published.build()


def plain(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_chart_says_whose_figures_it_shows(page):
    figure = page.sections["comparison"][0]
    assert figure.chart_id == "published-against-predicted"
    title = figure.spec["title"]
    assert title["text"].startswith("Published by others, not measured here")
    gpus = "A100 SXM4 40GB, A100 SXM4 80GB, H100 SXM, A10, B200, AMD Instinct MI300X, H200, L4"
    shown = f"datasheets of: {gpus} · float16, bfloat16, float8, int8"
    assert shown in title["subtitle"][0]
    assert "modes: as each source ran them" in title["subtitle"][1]
    drawn = figure.spec["layer"][-1]["data"]["values"]
    assert len(drawn) == len(pc.checks())


def test_the_median_and_range_are_computed(page):
    found = pc.checks()
    median, low, high = pc.ratio_summary(found)
    said = plain(page.html("comparison"))
    overall = f"Published ÷ ceiling over all {len(found)}: median {text.sig(median, 2)} , from {text.sig(low, 2)} ("
    assert overall in said
    assert f" to {text.sig(high, 2)} (" in said
    clean = [c for c in found if not c.breaks]
    m, lo, hi = pc.ratio_summary(clean)
    assert f"Over the {len(clean)} whose configuration breaks none" in said
    above = sum(c.ratio > 1 for c in clean)
    verdict = "every one" if not above else f"{above} of them above it, which a bound should never be"
    assert f"the median is {text.sig(m, 2)}, from {text.sig(lo, 2)} to {text.sig(hi, 2)}: {verdict}" in said
    # each source's spread, since one source's table of six batch sizes would otherwise set the median
    databricks = [c.ratio for c in clean if c.row.source.short == "Databricks"]
    assert len(databricks) > 1
    spread = f"{text.sig(min(databricks), 2)}–{text.sig(max(databricks), 2)} ({len(databricks)} figures)"
    assert f"Databricks: {spread}" in said
    # the figures the notebook's lesson states: the share of the roofline that the clean ones reached
    share = page.extra["share_of_roofline_reached"]
    assert (share["figures kept"], share["figures"]) == (str(len(clean)), str(len(found)))
    assert (share["lowest %"], share["highest %"]) == (f"{lo * 100:.0f}", f"{hi * 100:.0f}")
    assert share["median %"] == f"{m * 100:.0f}" and share["median ratio, all figures"] == text.sig(median, 2)


def test_an_unstated_variant_is_predicted_on_the_faster_one(page):
    unstated = [c for c in pc.checks() if "variant-unstated" in c.row.model.departures]
    assert unstated and {c.row.model.gpu for c in unstated} == {"NVIDIA A100 SXM4 80GB"}
    assert "the faster variant, so that the prediction bounds either" in plain(page.html("details"))


def test_every_figure_has_a_row_with_its_ratio_and_reading(page):
    fold = page.sections["table"][0]
    assert f"The table of all {len(pc.checks())} figures" in fold.summary  # folded: the page's first screens answer
    table = fold.body[0]
    assert len(table.rows) == len(pc.checks())
    said = plain(page.html("table"))
    assert "13B decoder · A100 SXM4 40GB inferred · fp16 · batch 1 · 512→10 tokens" in said
    # NVIDIA's harness runs ResNet-50 in int8: the fused roofline, activations in L2 while they fit
    assert "ResNet-50 v1.5 · 8 × H100 SXM · int8 · batch 256 assumed" in said
    h100 = next(c for c in pc.checks() if c.row.id == "mlperf40-dgxh100-resnet50-offline")
    assert f"703,770 samples/s {h100.predicted:,.0f} images/s {h100.ratio:.2f} none" in said
    above = [c for c in pc.checks() if c.ratio > 1]
    assert said.count("above the roofline") == len(above)
    assert "22.0 ms/token = 45.5 tokens/s" in said and " 0.75 " in said
    # the per-operation sum: the matmuls' roofline plus the attention's
    assert "5,353 tokens/s 7,579 tokens/s 0.71 none" in said and "20,241 tokens/s 35,683 tokens/s 0.57 FP8" in said
    assert "584,147.32 samples/s" in said and "latency bound" in said


def test_each_gap_is_explained_with_its_source_quote_and_method(page):
    said = plain(page.html("details"))
    assert "Our empirical result for 1 GPU is 22.0ms" in said
    assert "Predicted as the mean of 10 decode steps of 1 sequence(s) at contexts 512–521" in said
    assert "then 127 decode steps at contexts 128–254; the prefill is" in said
    assert "split over 2 GPUs by tensor parallelism" in said
    assert "predicted kernel by kernel as deployed, each activation kept in the GPU" in said
    h100 = next(c for c in pc.checks() if c.row.id == "mlperf40-dgxh100-resnet50-offline")
    eager = pc.unfused_per_second(h100.row.model)
    assert f"the roofline gives {text.sig(eager, 3)} images/s, and the published figure is " in said
    assert "Partly verified: read in a verbatim clipping" in said


def test_the_articles_knees_and_the_uncompared_row(page):
    knees = html.unescape(plain(page.html("knees")))
    assert "≈ 128" in knees and "≈ 56" in knees and "2.3 (against float32)" in knees
    assert "≈ 337 (every layer's activations through memory); ≈ 214 (activations kept in cache)" in knees
    # ResNet-50 in fp32 sits 0.3 % from the ridge unfused: the site's 5 % rule says undecided, not memory-bound
    assert (
        "undecided: each extra image within 5 % of the ridge (every elementwise pass through memory); "
        "compute-bound from batch 1 (elementwise passes fused)" in knees
    )
    assert "none: memory-bound at every batch" in knees  # fp16, under both counts
    assert "critical batch" not in knees and "predicted knee" not in knees
    assert "Not compared: its prompts and answers vary in length" in plain(page.html("not_compared"))


def test_text_from_the_data_file_is_escaped(tmp_path):
    doc = json.loads(PUBLISHED_FILE.read_text(encoding="utf-8"))
    first = doc["measurements"][0]
    for field in ("quote", "metric"):
        first[field] = PAYLOAD
    first["source"]["title"] = first["source"]["short"] = first["verification"]["note"] = PAYLOAD
    first["configuration"]["model"] = PAYLOAD
    path = tmp_path / "measurements.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    out = published.build(read_published(path)).text()
    assert "<script>" not in out and "<img src=x" not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out


def test_the_bound_is_split_per_operation_not_named_for_most_of_a_mixed_call():
    """A generation at batch 256 sums compute-bound matrix products and memory-bound attention: the page gives the
    split per operation (63 % compute-bound here), not 'most of the predicted time is memory-bound'."""
    found = {c.row.id: c for c in pc.checks()}["trtllm080-a100-llama7b-b256-128-128"]
    points = [pc._call(found.row.model, "prefill", found.row.model.input_tokens)] + [
        pc._call(found.row.model, "decode", found.row.model.input_tokens + k)
        for k in range(found.row.model.output_tokens - 1)
    ]
    compute = sum(op.seconds for p in points for op in p.operations if op.bound == "compute")
    share = compute / sum(p.seconds for p in points)
    said = published.method_words(found)
    assert "most of the predicted time" not in said
    assert f"{text.sig(100 * share, 2)} % in operations bound by compute" in said
    assert share > 0.5


def test_the_cross_validation_gives_each_sources_own_error():
    from benchmarks.analysis.published.calibration import committed_study
    from benchmarks.analysis.roofline.forecast import expected, percent
    from benchmarks.site.pages.published import SOURCE_HEADERS, cross_validation_parts

    study = committed_study()
    table = next(part for part in cross_validation_parts(study) if getattr(part, "headers", None) == SOURCE_HEADERS)
    fitted = [o for o in study.outcomes if o.figure.fit]
    assert sum(int(row[1]) for row in table.rows) == len(fitted)
    databricks = next(row for row in table.rows if row[0] == "Databricks")
    mine = expected([o for o in fitted if o.figure.source == "Databricks"])
    assert databricks[1:3] == [f"{mine.figures}", percent(mine.median)]


def test_the_cross_validation_gives_the_error_on_one_gpu_and_split_over_gpus_apart():
    from benchmarks.analysis.published.calibration import committed_study
    from benchmarks.analysis.roofline.forecast import ONE_GPU, TENSOR_PARALLEL, percent
    from benchmarks.site.pages.published import EXPECTED_HEADERS, cross_validation_parts
    from benchmarks.site.render import render

    study = committed_study()
    parts = cross_validation_parts(study)
    one, split = study.expected(scope=ONE_GPU), study.expected(scope=TENSOR_PARALLEL)
    assert one.figures + split.figures == study.expected().figures
    lead = plain(render([parts[0]]))
    assert f"On one GPU ({one.figures} figures) the median is {percent(one.median)}" in lead
    assert f"in tensor parallel ({split.figures} figures), {percent(split.median)}" in lead
    table = next(part for part in parts if getattr(part, "headers", None) == EXPECTED_HEADERS)
    decode = {row[1]: row[2] for row in table.rows if row[0] == "decode"}
    assert set(decode) == {"either", ONE_GPU, TENSOR_PARALLEL}
    assert int(decode[ONE_GPU]) + int(decode[TENSOR_PARALLEL]) == int(decode["either"])


def test_the_page_answers_how_accurate_first(page):
    """The first section is the forecast's error by kind and the share of the ceiling reached; the method follows."""
    from benchmarks.analysis.published.calibration import committed_study
    from benchmarks.analysis.roofline.forecast import PREFILL, percent
    from benchmarks.site.pages.published import ACCURACY_HEADERS, accuracy_parts

    assert next(iter(page.sections)) == "accuracy"
    notebook = (Path(__file__).resolve().parents[2] / "docs" / "published.py").read_text(encoding="utf-8")
    assert notebook.index('page.show("accuracy")') < notebook.index("## How it is checked")
    study = committed_study()
    table = next(part for part in accuracy_parts(study) if getattr(part, "headers", None) == ACCURACY_HEADERS)
    prefill, every = study.expected(PREFILL), study.expected()
    rows = {str(row[0]): row for row in table.rows}
    assert rows[PREFILL][1:4] == [f"{prefill.figures}", percent(prefill.median), percent(prefill.p90)]
    assert sum(int(row[1]) for name, row in rows.items() if "every kind" not in name) == every.figures
    reached = study.ceiling_reached(PREFILL)
    assert rows[PREFILL][5] == f"{percent(statistics.median(reached))} ({percent(reached[0])}–{percent(reached[-1])})"
    assert len(study.ceiling_reached()) == every.figures and all(share > 0 for share in study.ceiling_reached())


def test_the_accuracy_table_ends_with_the_forecast_against_the_real_engine_measured_here(page):
    """Beside the GPU kinds: the same forecast on this project's CPU, from the committed engine check's loads."""
    from benchmarks.analysis.roofline.forecast import percent
    from benchmarks.analysis.serving.llm.engine_comparison import (
        ENGINE_METRIC,
        compare,
        forecast_errors,
        forecast_steps,
    )
    from benchmarks.contract.engine_check import newest_engine_check

    assert published.engine_row(None) is None
    check = newest_engine_check()
    if check is None:
        pytest.skip("no real-engine check is committed")
    errors = forecast_errors(compare(check, forecast_steps(check)), ENGINE_METRIC)
    row = published.engine_row(check)
    assert row[1] == f"{len(errors)} loads" and row[2] == percent(statistics.median(errors))
    said = plain(page.html("accuracy"))
    assert "a real vLLM run on this CPU (not fitted)" in said and check.id in said
    assert said.index("every kind") < said.index("a real vLLM")
