"""The steps page module on SYNTHETIC runs (labelled so; never published)."""

import re

from benchmarks.site.pages import steps
from tests.synthetic import make_run, site_data

HOSTILE = "<img src=x onerror=alert(1)> (test fixture)"


def test_the_synthetic_staircase_has_its_figure_steps_and_causes():
    out = steps.build(site_data()).text()
    assert out.count('id="chart-steps-synthetic-gpu-bfloat16-graph-rotated"') == 1
    assert "Linear 4096→4096, bfloat16, graph, cache rotated" in out
    assert "This GPU has 100 SMs." in out
    assert "192 → 193" in out and "256 → 257" in out
    assert "tile boundary: batch crosses 256 (a multiple of 128, a side of the kernel&#x27;s 64×128 tile)" in out
    assert "wave boundary: 64×128 tiles" in out
    assert "<caption>Detected steps: Linear 4096→4096, bfloat16, graph, on GPU: Synthetic GPU" in out
    assert "<strong>Free batch sizes.</strong>" in out


def test_the_takeaway_items_state_each_curve():
    page = steps.build(site_data())
    summary = page.takeaway_html("the lesson")  # a lesson passed in wins; the items are the page's
    assert "Takeaways" in summary and "2 step(s) above a typical noise of" in summary
    assert "2 explained, 0 not." in summary


def test_a_cpu_run_says_what_it_cannot_check():
    doc = make_run(kind="cpu", slug="synthetic-cpu", name="Synthetic CPU (test fixture)", hardware=False)
    page = steps.build(site_data(doc))
    out = page.text()
    assert "it sees only <code>aten::addmm</code>" in out
    assert 'id="chart-steps-synthetic-cpu-bfloat16-graph-rotated"' in out
    assert page.extra["cpu_only"]  # the notebook's lesson adds that the tile and wave steps are a GPU's


def test_a_run_without_a_sweep_says_so():
    out = steps.build(site_data(make_run(linear_batches=(), hardware=False))).text()
    assert "This run has no Linear-layer sweep." in out
    assert "No Linear-layer sweep is committed yet." in out


def test_no_runs_says_how_to_measure():
    out = steps.build(site_data(empty=True)).text()
    assert "No results are committed yet" in out and "No Linear-layer sweep is committed yet." in out


def test_results_text_is_escaped():
    doc = make_run(name=HOSTILE, slug="synthetic-evil", hardware=False)
    for record in doc["records"]:
        if record.get("kernels"):
            record["kernels"] = ["<script>gemm_tilesize64x128</script>"]
    out = steps.build(site_data(doc)).text()
    assert HOSTILE not in out and "<script>" not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out


def test_the_model_is_drawn_before_any_run_and_labelled_a_model():
    page = steps.build(site_data(empty=True))
    figure = page.sections["model"][0]
    assert figure.chart_id == "steps-model"
    title = figure.spec["title"]
    assert title["text"].startswith("A model, not a measurement:") and "(datasheet)" in title["subtitle"][0]
    drawn = figure.spec["data"]["values"]
    assert {row["line"] for row in drawn} == {"tile and wave model", "roofline, no partial waves"}
    assert {512, 513, 1024, 1025, 1536, 1537} <= {row["batch"] for row in drawn}
    said = page.html("model_words")
    assert "Batch 512 fills 128 of the 132 SMs" in said and "batch 513 adds a row of 32 tiles" in said
    assert "2.0 times as long for one more row" in said


def test_the_page_leads_with_the_staircase_and_one_line_on_what_was_measured():
    from benchmarks.site.pages import steps as page_module

    page = page_module.build(site_data(make_run(kind="cpu")))
    model = page.html("model")  # the chart alone: no paragraph outside its figure (its embed control has some)
    assert 'id="chart-steps-model"' in model and "<p>" not in re.sub(r"<figure.*?</figure>", "", model, flags=re.S)
    lead = page.html("lead")
    assert lead.count("<p>") == 1 and lead.startswith("<p><strong>Measured so far: </strong>CPU: ")
    assert "stood out from its noise" in lead
    assert page_module.build(site_data(empty=True)).html("lead") == ""
