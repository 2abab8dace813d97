"""The "Serving with dynamic batching" page, from SYNTHETIC sweeps: what it says, and that a file's free text is
escaped. The MLPerf section uses the committed published rows."""

import re

import pytest

from benchmarks.analysis import serving_mlperf
from benchmarks.contract.results import ModelSweep
from benchmarks.site.pages import serving
from tests.synthetic import PAYLOAD, hostile_sweep, make_sweep


def sweep_of(doc) -> ModelSweep:
    return ModelSweep(path=f"/synthetic/{doc['device']['slug']}/{doc['run']['id']}.json", doc=doc)


@pytest.fixture(scope="module")
def mlperf():
    return serving_mlperf.check(n=20_000)


@pytest.fixture(scope="module")
def page(mlperf):
    return serving.build([sweep_of(make_sweep(budget_ms=20.0))], mlperf)


def test_every_section_of_a_sweep_is_drawn_and_stated(page):
    text = page.text()
    for chart_id in ("serving-batch-formed", "serving-breakdown", "serving-hockey", "serving-mlperf-resnet50"):
        assert f'id="{chart_id}"' in text or chart_id in text
    # the four above, one capacity chart per sweep, and the committed real-server check's
    assert text.count('<figure class="bchart"') == 6
    assert 'id="chart-serving-real-server-check"' in page.html("real_server")
    assert "The budget is the sweep&#x27;s own, 20 ms, taken here at p99" in page.html("example")
    assert "against a max of 16" in page.html("batch_formed")
    assert "awaiting: mean batch" in page.html("batch_formed")
    assert "python -m benchmarks serve benchmarks/sweeps/" in page.html("recommend")
    assert "p99, closed loop" in page.html("closed_loop") and "p99, Poisson at that rate" in page.html("closed_loop")
    assert "Within its budget of 20 ms at p90, one instance" in page.html("capacity")


def test_the_batch_formed_grows_with_the_rate(page):
    words = page.html("batch_formed")
    low, high = (float(x) for x in re.findall(r"hold ([\d.]+) requests on average at .*? and ([\d.]+)", words)[0])
    assert low < high <= 16


def test_without_sweeps_the_page_says_how_to_add_one(mlperf):
    empty = serving.build([], mlperf)
    assert "No sweep with a measured batch size is committed yet" in empty.html("batch_formed")
    assert "No sweep with a measured batch size is committed yet" in empty.html("capacity")
    assert "MLPerf Inference v3.0" in empty.html("mlperf")


def test_no_real_server_check_is_claimed_without_a_file(tmp_path, monkeypatch):
    monkeypatch.setattr(serving, "SERVING_CHECKS_DIR", tmp_path / "serving")
    assert "No real-server check is committed yet" in str(serving.real_server_parts()[0].content)


def test_the_mlperf_section_quotes_the_published_figures_and_the_ratio(page, mlperf):
    words = page.html("mlperf")
    assert "600,179.00" in words and "727,437" in words and "13.27 ms" in words
    assert f"{mlperf.ratio:.2f}" in words
    assert "inference_results_v3.0" in words


def test_free_text_from_a_sweep_file_is_escaped(mlperf):
    text = serving.build([sweep_of(hostile_sweep(make_sweep(budget_ms=20.0)))], mlperf).text()
    assert PAYLOAD not in text and "<img src=x" not in text and "<script>alert" not in text


def test_a_sweep_that_measured_nothing_is_named_not_drawn(mlperf):
    doc = make_sweep(budget_ms=20.0)
    for point in doc["points"]:
        point.update(status="oom", message="out of memory (test fixture)", median_s=None, percentile_s=None)
    empty = serving.build([sweep_of(doc)], mlperf)
    assert "measured no batch size, so it has no capacity to show" in empty.html("capacity")
    assert "No sweep with a measured batch size is committed yet" in empty.html("batch_formed")
