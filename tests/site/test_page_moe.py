"""The MoE page module on SYNTHETIC runs (labelled so; never published)."""

from benchmarks.site.pages import moe
from tests.analysis.test_moe_analysis import synthetic_moe_run
from tests.synthetic import make_run, site_data

HOSTILE = "<img src=x onerror=alert(1)> (test fixture)"


def test_every_part_of_a_run_with_moe_records():
    out = moe.build(site_data(synthetic_moe_run(hardware=False))).text()
    assert 'id="chart-moe-synthetic-gpu-e8-k2-bfloat16-graph-rotated-latency"' in out
    assert 'id="chart-moe-synthetic-gpu-load"' in out
    assert "E=8, k=2: bfloat16, graph, cache rotated" in out
    assert "The cost of skew, E=8, k=2" in out
    assert "<th>skew 0 (uniform)</th><th>skew 1</th><th>skew 2</th>" in out
    assert "<caption>Token choice, E=8, k=2, bfloat16, graph, on GPU: Synthetic GPU" in out
    assert "busiest expert 1 rows, 2 experts" in out and "(1.00×)" in out
    assert "<strong>What expert choice drops.</strong>" in out and "64 of 4096" in out


def test_the_takeaway_items_state_the_knee_and_the_cost_of_skew():
    page = moe.build(site_data(synthetic_moe_run(hardware=False)))
    summary = page.takeaway_html("the lesson")  # a lesson passed in wins; the items are the page's
    assert "Takeaways" in summary and "for an expected E/k = 4×." in summary
    assert "(uniform token choice) against" in summary
    assert "at batch 4096, skew 2 takes" in summary


def test_a_run_without_moe_records_says_so():
    page = moe.build(site_data(make_run(hardware=False)))
    assert "This run has no MoE measurement." in page.text()
    assert "No MoE measurement is committed yet." in page.html("no_moe_measurement") and not page.takeaway_items


def test_a_cpu_run_is_introduced_as_one():
    doc = synthetic_moe_run(kind="cpu", slug="synthetic-cpu", name="Synthetic CPU (test fixture)", hardware=False)
    page = moe.build(site_data(doc))
    assert "A CPU runs one expert after another on the same cores" in page.text()


def test_no_runs_says_how_to_measure():
    out = moe.build(site_data(empty=True)).text()
    assert "No results are committed yet" in out and "No MoE measurement is committed yet." in out


def test_results_text_is_escaped():
    out = moe.build(site_data(synthetic_moe_run(name=HOSTILE, slug="synthetic-evil", hardware=False))).text()
    assert HOSTILE not in out and "&lt;img src=x onerror=alert(1)&gt;" in out
