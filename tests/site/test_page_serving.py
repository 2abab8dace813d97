"""The "Serving with dynamic batching" page, from SYNTHETIC sweeps: what it says, and that a file's free text is
escaped. The MLPerf section uses the committed published rows."""

import re

import pytest

from benchmarks.analysis.published import mlperf_server
from benchmarks.analysis.serving.batcher.policy import LoadPoint
from benchmarks.analysis.serving.batcher.service_curves import ServiceSource
from benchmarks.analysis.serving.batcher.simulator import Policy, ServiceCurve
from benchmarks.contract.results import ModelSweep
from benchmarks.site import sweep_words
from benchmarks.site.pages import serving
from tests.synthetic import PAYLOAD, hostile_sweep, make_sweep


def sweep_of(doc) -> ModelSweep:
    return ModelSweep(path=f"/synthetic/{doc['device']['slug']}/{doc['run']['id']}.json", doc=doc)


@pytest.fixture(scope="module")
def mlperf():
    return mlperf_server.check(n=20_000)


@pytest.fixture(scope="module")
def page(mlperf):
    return serving.build([sweep_of(make_sweep(budget_ms=20.0))], mlperf)


@pytest.mark.slow
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


@pytest.mark.slow
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


# --------------------------------------------------------------------------- sentences computed from the data


def point(rate: float, p99_ms: float, formation_ms: float = 0.0, queue_ms: float = 0.0) -> LoadPoint:
    """A SYNTHETIC load point: only what the sentences read."""
    breakdown = {"formation": formation_ms / 1e3, "queue": queue_ms / 1e3, "service": 0.01}
    return LoadPoint(rate, rate, p99_ms / 1e3, 1.0, False, 0.5, breakdown)


def test_the_page_says_which_section_was_measured_on_a_server(page):
    said = page.html("example")
    assert "nothing below was timed on a server" not in said.lower()
    assert "One section of this page was timed on a real server" in said
    assert serving.provenance_words(False).startswith("Nothing on this page was timed on a server")


def test_a_p99_that_rises_from_the_lowest_rate_is_not_called_flat():
    rising = [point(r, ms) for r, ms in ((1, 45), (2, 53), (4, 67), (8, 100), (16, 217))]
    flat = [point(r, ms) for r, ms in ((1, 45), (2, 46), (4, 48), (8, 90), (16, 300))]
    plain, batched = Policy("none", 1, 0.0), Policy("triton", 16, 0.005)
    said = serving.rise_words({plain: rising, batched: rising}, 0.1)
    assert "no policy's p99 stays flat" in said and "45 → 53 → 67 → 100 → 217 ms from 1/s to 16/s" in said
    said = serving.rise_words({plain: rising, batched: flat}, 0.1)
    assert "max delay 5 ms up to 4/s" in said and "no batching rise" in said


def test_batching_that_lowers_capacity_is_said_so_with_the_measured_times_that_show_why(page):
    said = page.html("hockey")
    assert "Batching moves the corner to the right" not in said
    plain = [point(r, ms) for r, ms in ((5, 40), (10, 60), (20, 90), (40, 300))]
    batched = [point(r, ms) for r, ms in ((5, 50), (10, 95), (20, 200), (40, 400))]
    curve = ServiceCurve.deterministic({1: 0.02, 2: 0.05, 16: 0.2}, "SYNTHETIC")
    source = ServiceSource(curve, "SYNTHETIC", "CPU: test, 1 thread", "float32", "eager", "measured", "test")
    loads = {Policy("none", 1, 0.0): plain, Policy("triton", 16, 0.0): batched}
    words = serving.batching_words(loads, 0.1, source)
    assert "batching does not move the corner to the right" in words
    assert "sustains 20/s of the rates tried and no batching policy more than 10/s (50 % of it)" in words
    assert "a batch of 2 takes 50 ms, more than 2 calls of one (40 ms)" in words
    loads = {Policy("none", 1, 0.0): batched, Policy("triton", 16, 0.0): plain}
    assert "batching raises the highest rate tried from 10/s without batching to 20/s" in serving.batching_words(
        loads, 0.1, source
    )


def test_what_most_of_the_waiting_is_depends_on_the_percentile():
    p50, p99 = point(9, 30, formation_ms=4.4, queue_ms=0.9), point(9, 80, formation_ms=0.08, queue_ms=24.7)
    said = serving.most_of_the_waiting(p99, p50, p99, p50)
    assert "is filling the batch (4.4 ms against 0.9 ms queueing) at p50" in said
    assert "queueing (24.7 ms against 0.08 ms filling the batch) at p99" in said


def test_the_simulated_tails_say_they_carry_the_sweeps_noise(page):
    said = page.html("example")
    assert "noise low" in said or "noise high" in said
    noisy = make_sweep(budget_ms=20.0)
    if sweep_words.from_document(noisy).noise is not None and sweep_words.from_document(noisy).noise.high:
        assert "carry that noise" in serving.noise_words(sweep_of(noisy))


def test_the_mlperf_precision_is_what_the_published_file_records(page):
    said = page.html("mlperf")
    assert "a precision the files read do not state" not in said
    assert "records int8 weights and input for ResNet-50 in NVIDIA&#x27;s harness configuration" in said
    assert "float16 roofline, a stand-in" in said


def test_every_serving_chart_names_its_cache_state_and_threads(page):
    specs = page.text()
    for chart_id in ("serving-batch-formed", "serving-breakdown", "serving-hockey"):
        assert chart_id in specs
    assert specs.count("cache: resident") >= 4  # the example's three charts and one capacity chart
    assert "1 thread" in specs or "threads" in specs


def test_the_mlperf_chart_names_the_byte_count_its_roofline_uses(page):
    figure = next(
        part for part in page.sections["mlperf"] if getattr(part, "chart_id", "") == "serving-mlperf-resnet50"
    )
    assert "every elementwise pass through memory, nothing kept in cache" in " ".join(figure.spec["title"]["subtitle"])


def test_the_answer_box_gives_settings_that_meet_the_budget_at_each_load(page):
    table = page.sections["answer"][0]
    assert list(table.headers[2:5]) == ["max batch", "max delay", "instances"] and len(table.rows) == 3
    rates = [float(row[0].removesuffix("/s").replace(",", "")) for row in table.rows]
    assert rates == sorted(rates) and len(set(rates)) == 3
    for row in table.rows:
        if row[2] != "none meets it":
            assert float(row[5].removesuffix(" ms")) <= float(row[1].removesuffix(" ms")), row
    assert "python -m benchmarks serve" in page.html("answer")
