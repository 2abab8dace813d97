"""The home, theory, methodology and reproduce page modules on SYNTHETIC runs (never published)."""

import re
from pathlib import Path

import pytest

from benchmarks.analysis.roofline import calibration_file
from benchmarks.site.forecasts import forecast_rows
from benchmarks.site.pages import home, methodology, reproduce, theory
from benchmarks.site.placeholders import SITE_ROOT
from tests.synthetic import make_run, site_data

EVIL = "<img src=x onerror=alert(1)>"
HOME_NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "index.py"


def test_a_committed_gpu_run_replaces_the_prediction_with_its_measured_curve():
    gpu, cpu = make_run(), make_run(name=f"{EVIL} (test fixture)", slug="synthetic-cpu", kind="cpu", run_id="r2")
    page = home.build(site_data(gpu, cpu))
    out = page.text()
    assert 'id="chart-home-headline"' in out and "measured on a GPU" in out
    assert "home-predicted" not in out and "not measured" not in out
    assert out.count("<tr>") == 3 and f'href="{SITE_ROOT}results/synthetic-cpu/r2.json"' in out
    assert EVIL not in out and "&lt;img src=x onerror=alert(1)&gt;" in out
    assert page.extra["curve"].run.device["kind"] == "cuda"
    answer = page.html("gpu_curve_measured_or_predicted")
    assert "Chart data: run 20260101T000000Z-synthetic" in answer and "× the rows for" in answer


def test_until_a_gpu_run_is_committed_home_answers_with_a_labelled_h100_prediction():
    for data in (site_data(make_run(kind="cpu")), site_data(empty=True)):
        page = home.build(data)
        answer = page.html("gpu_curve_measured_or_predicted")
        assert 'id="chart-home-predicted"' in answer and "home-headline" not in answer
        assert "Predicted from the datasheet, not measured: NVIDIA H100 SXM, bf16" in answer
        assert "A prediction, not a measurement" in answer and "ridge batch ≈ 345" in answer
        # one stated count of the bytes, the other bound beside it
        assert "with every layer&#x27;s activations through memory, as the harness counts them (≈ 301 with" in answer
        # the eager crossover as a range: the ReLUs' own traffic counted, or fused as the chart draws it
        assert "from about 2,197 rows" in answer and "to 2,831 (the ReLUs&#x27; bytes counted as fused" in answer
        assert "the floor of an empty kernel&#x27;s launch" in answer
        # the chart draws the ceiling dashed and the forecast solid within the matrix products' cross-validated error
        error = calibration_file.committed().expected_for("GEMM", 1)
        assert "forecast solid, shaded within its median error" in answer and "ceiling dashed" in answer
        assert "That is the ceiling; the forecast beside it" in answer
        assert f"expected error ±{error.median * 100:.0f} % median, ±{error.p90 * 100:.0f} % at p90" in answer
        assert "launch overhead" in answer and "memory (weight read)" in answer and "compute" in answer
        assert "forums.developer.nvidia.com" in answer  # the launch cost is someone else's measurement, cited
        assert page.extra["curve"] is None


def test_home_without_results_says_how_to_get_them():
    out = home.build(site_data(empty=True)).text()
    assert "No results yet" in out


def test_theory_tables_come_from_the_datasheet():
    page = theory.build(site_data(empty=True))
    ridges = page.html("ridges")
    assert "NVIDIA T4" in ridges and "<td>203</td>" in ridges  # the T4's fp16 ridge, (65 T / 320 G)·(2/2)
    assert 'id="chart-theory-intensity"' in page.html("intensity")
    corrections = page.html("corrections")
    assert "is 216." in corrections and "near 75" in corrections  # a T4 sustains about 24 TFLOP/s in fp16
    assert "Measured here" not in page.html("cpu")


def test_theory_shows_and_quotes_the_measured_cpu_curve():
    out = theory.build(site_data(make_run(kind="cpu", widths=(1024,)))).html("cpu")
    assert 'id="chart-theory-cpu"' in out and "8×1024 MLP on a CPU" in out
    assert "On its roofline, the time grows slowly" in out and "Measured here (bfloat16, graph, cache rotated)" in out
    assert f'href="{SITE_ROOT}mlp/"' in out


def test_methodology_lists_every_sweep_of_every_profile():
    out = methodology.build().text()
    assert "quick" in out and "full" in out and "mlp width=1024 depth=8" in out


def test_reproduce_lists_schema_fields_and_committed_runs():
    out = reproduce.build(site_data(make_run(run_id="run-1"))).text()
    assert "<code>records[].median_s</code>" in out
    assert f'href="{SITE_ROOT}results/synthetic-gpu/run-1.json"' in out


def test_runs_of_one_device_fold_into_one_line():
    older = make_run(kind="cpu", slug="synthetic-cpu", run_id="r1", started_at="2026-01-01T00:00:00+00:00")
    newer = make_run(kind="cpu", slug="synthetic-cpu", run_id="r2", started_at="2026-01-03T00:00:00+00:00")
    runs = home.build(site_data(older, newer)).html("committed_runs_by_device")
    line = runs[runs.index("<li>") : runs.index("</li>")]
    assert "2 runs, 2026-01-01 to 2026-01-03; charted from" in line
    assert f'href="{SITE_ROOT}results/synthetic-cpu/r2.json">r2</a> (' in line and ">r1<" not in line
    assert "Every committed run (2)" in runs  # each run still listed, folded


def test_the_home_notebook_shows_every_section_once_in_order_and_writes_the_fixed_words():
    """docs/index.py holds the page's fixed prose (the guide's pointer); the page module builds the measured and
    computed parts and the takeaway's lesson, and each section is shown once, where the module builds it."""
    notebook = HOME_NOTEBOOK.read_text(encoding="utf-8")
    page = home.build(site_data(empty=True))
    assert re.findall(r'page\.show\("(\w+)"\)', notebook) == list(page.sections)
    assert "[Choosing your batch size](guide/)" in notebook
    assert "Choosing your batch size" not in page.text() and "Batching is free only while" not in page.text()
    last_cell = notebook.split("# %%")[-1]
    assert last_cell == ' tags=["hide-input"]\npage.show_takeaway()\n'
    box = page.takeaway_html()
    assert page.takeaway_items == () and ">Takeaway<" in box and "Batching is free only while" in box


def test_the_first_screen_says_what_the_site_covers():
    first = HOME_NOTEBOOK.read_text(encoding="utf-8").split("**The question.**", 1)[0]
    assert "**What this site covers.** Inference" in first and "Training:" in first
    assert all(f"]({page}/)" in first for page in ("serving", "llm_serving", "training"))


def test_the_predicted_chart_draws_each_forecast_within_its_band_and_never_under_its_launches():
    """Both panels: a forecast per ceiling point, inside its band, slower than the ceiling's operations and never
    faster than the launches the ceiling counts; no band where those launches set the time."""
    _, _, large, small = home.predicted_h100_curves()
    m = calibration_file.committed().expected_for("GEMM", 1).median
    for points, params in ((large, home.LARGE), (small, home.SMALL)):
        rows = forecast_rows(points, "mlp", params, home.ANSWER_DTYPE)
        assert [r["batch"] for r in rows] == [p.batch for p in points]
        for row, point in zip(rows, points, strict=True):
            launches = point.fixed_s * 1e6 >= row["us"] * (1 - 1e-12)  # the cited launch cost sets the time
            assert row["us"] / row["low_us"] == pytest.approx(1 if launches else 1 + m)
            assert row["us"] / row["high_us"] == pytest.approx(1 if launches else 1 - m)
            assert row["us"] >= point.seconds * 1e6 * (1 - 1e-9)  # no efficiency above 1: never under the ceiling
            assert row["us"] >= point.fixed_s * 1e6
        assert any(r["low_us"] == r["us"] for r in rows) == (params is home.SMALL)  # only the eager MLP is launch-bound
