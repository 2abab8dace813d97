"""The LLM-serving page: every section built from predictions and cited published figures, each labelled."""

import html as html_lib
import re
from pathlib import Path
from statistics import median

import pytest

from benchmarks.analysis.published.calibration import committed_study
from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.roofline.forecast import percent
from benchmarks.commands import serve_llm
from benchmarks.site.pages import llm_serving

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "llm_serving.py"


@pytest.fixture(scope="module")
def page():
    return llm_serving.build()


def _plain(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


def test_the_charts_say_they_are_predictions_and_name_model_dtype_and_gpus(page):
    out = page.text()
    assert 'id="chart-llm-serving-front"' in out and 'id="chart-llm-serving-latency"' in out
    for name in ("predicted_front_by_gpu", "predicted_latencies_and_chunked_prefill"):
        words = _plain(page.html(name))
        assert "nothing measured" in words and "Llama-3-8B" in words and "bfloat16" in words
    assert all(gpu in page.html("predicted_front_by_gpu") for gpu in llm_serving.GPUS)


def test_the_front_rises_in_total_and_falls_per_user_on_every_gpu():
    for points in llm_serving.fronts().values():
        below = [p for p in points if p.result.kv_peak_share < 0.99]
        totals = [p.result.tokens_per_s for p in below]
        users = [p.result.tokens_per_s_per_user for p in below]
        assert totals == sorted(totals) and users == sorted(users, reverse=True)


def test_the_budget_paragraph_gives_the_concurrency_and_what_binds(page):
    found = llm_serving.budget_plan()
    words = _plain(page.html("largest_concurrency_within_budget"))
    more = found.beyond_concurrency
    if more > found.concurrency + 1:  # the search stopped within 1/64 of the cap, and says so
        said = f"Up to about {found.concurrency:,} concurrent requests meet p99 time per output token ≤ 50 ms ({more:,}"
    else:
        said = f"Up to {found.concurrency} concurrent requests meet p99 time per output token ≤ 50 ms"
    assert said in words and f"with {more:,} clients" in words
    assert "What binds is" in words and "--tpot-budget-ms 50" in words


def test_the_published_table_has_every_check_with_its_ratio(page):
    html = page.html("published_results_against_predictions")
    checks = llm_serving.checks()
    assert html.count("<tr>") == 1 + len(checks)
    for check in checks:
        assert f"{check.ratio:.2f}" in html
    assert "mlperf_log_summary.txt" in html and "in-flight batching" in html


def test_each_published_row_shows_its_forecast_without_its_source_and_the_error(page):
    html = html_lib.unescape(_plain(page.html("published_results_against_predictions")))
    outcomes = {o.figure.id: o for o in committed_study().outcomes}
    fitted = []
    for check in llm_serving.checks():
        o = outcomes[check.row.id]
        assert o.figure.published == check.row.value and o.forecast != check.predicted
        assert f" ({o.error * 100:+.0f} %)" in html, check.row.id
        assert o.figure.fit or f"forecast {o.figure.note}" in html, check.row.id
        if o.figure.fit:
            fitted.append(abs(o.error))
    # the rows the step time sets are the ones the fit may use, and the median the page states is theirs
    said = f"the {len(fitted)} rows whose figure the step time sets land within a median {percent(median(fitted))}"
    assert len(fitted) >= 5 and said in html


def test_the_lesson_states_the_budgets_answer_and_the_published_share(page):
    found, said = llm_serving.budget_plan(), page.extra["budget_answer"]
    assert said["concurrency"] == str(found.concurrency) and said["what binds"] == llm_serving.BINDS[found.binds]
    assert said["budget"] == "50 ms p99" and said["lengths"] == "1,000/200"
    ratios = llm_serving.throughput_ratios()
    said = page.extra["published_share_of_roofline"]
    assert (
        f"on the {len(ratios)} rows that compare a throughput or the mean gap between tokens, {min(ratios):.2f}" in said
    )
    others = [c.ratio for c in llm_serving.checks() if c.ratio not in ratios]
    assert f"on the other {len(others)}" in said and f"{min(others):.2f}–{max(others):.2f}" in said


def test_every_range_over_the_published_table_covers_it_or_names_its_rows(page):
    said = _plain(page.html("published_results_against_predictions"))
    every = [c.ratio for c in llm_serving.checks()]
    assert "none fell below" not in said
    assert f"Over all {len(every)} rows it runs from {min(every):.2f} to {max(every):.2f}" in said
    for check in llm_serving.other_checks():
        assert f"{check.row.metric.split(' at ')[0]}: {check.ratio:.2f}" in said


def test_the_memory_column_says_where_each_figure_comes_from(page):
    table = next(part for part in page.sections["predicted_memory_and_step_time_by_gpu"] if hasattr(part, "rows"))
    by_gpu = {row[0]: row[1] for row in table.rows}
    assert by_gpu["NVIDIA L4"] == "22.5 GiB (as its driver reports it)"  # 23,034 MiB, not the datasheet's 24 GB
    assert by_gpu["NVIDIA H100 SXM"] == "79.6 GiB (as its driver reports it)"
    assert "24.0 GiB" not in page.html("predicted_memory_and_step_time_by_gpu")


def test_per_user_is_defined_and_given_with_and_without_the_first_token(page):
    said = _plain(page.html("predicted_front_by_gpu"))
    best = max(llm_serving.fronts()["NVIDIA H100 SXM"], key=lambda p: p.result.tokens_per_s).result
    assert f"{best.tokens_per_s_per_user:,.0f} each while an answer streams and" in said
    assert f"{best.tokens_per_s_per_user_with_first:,.0f} each counting the wait for the first token" in said
    assert "the wait for the first token left out" in said


def test_the_fixed_cost_names_the_kernels_it_counts(page):
    said = _plain(page.html("predicted_memory_and_step_time_by_gpu"))
    assert "for each of the 8 kernels this model counts in a layer (attention norm, QKV projection" in said
    assert "eight kernels per layer" not in NOTEBOOK.read_text(encoding="utf-8")


def test_the_budget_rate_is_the_steady_state_answer(page):
    said = _plain(page.html("largest_concurrency_within_budget"))
    found = llm_serving.budget_plan()
    assert f"meets the budget at steady state up to about {found.rate_per_s:.2f} requests/s" in said
    assert "meets the budget up to about 40.16" not in said


def _layers(spec: dict) -> list[dict]:
    found = []
    for part in spec.get("layer", []) + spec.get("hconcat", []):
        found += [part, *_layers(part)]
    return found


def test_the_llm_charts_draw_the_forecast_with_its_band_and_the_ceiling_dashed():
    error = calibration_file.committed().expected_for("decode", 1)
    front, latency = llm_serving.predicted_front()[0], llm_serving.predicted_latencies()[0]
    for figure in (front, latency):
        subtitle = " ".join(figure.spec["title"]["subtitle"])
        assert "Forecast" in subtitle and "ceiling" in subtitle and "nothing measured" in subtitle
        assert f"±{error.median * 100:.0f} % median" in subtitle
        assert all(len(line) <= 120 for line in figure.spec["title"]["subtitle"])
    front_layers = _layers(front.spec)
    lines = [layer for layer in front_layers if layer.get("mark", {}).get("type") == "line"]
    drawn = {row["drawn"] for layer in lines for row in layer["data"]["values"]}
    assert drawn == {"forecast", "ceiling"}
    assert any(
        layer.get("mark", {}).get("type") == "rule" and "x2" in layer.get("encoding", {}) for layer in front_layers
    )
    latency_layers = _layers(latency.spec)
    assert any(layer.get("mark", {}).get("type") == "area" for layer in latency_layers)
    assert any(layer.get("mark", {}).get("strokeDash") == [1, 3] for layer in latency_layers)


def test_the_forecast_front_is_below_its_ceiling_and_its_band_spans_the_median_error():
    forecast, ceiling = llm_serving.fronts(), llm_serving.fronts(False)
    for gpu, points in forecast.items():
        top = {p.concurrency: p.result.tokens_per_s for p in ceiling[gpu]}
        for p in points:
            if p.concurrency in top:
                assert p.result.tokens_per_s < top[p.concurrency], (gpu, p.concurrency)
    low, high = llm_serving.published_span(llm_serving.decode_error())
    m = llm_serving.decode_error()
    assert low < 1 < high and 1 / low - 1 == pytest.approx(m) and 1 - 1 / high == pytest.approx(m)
    for band in llm_serving.latency_band_rows():
        assert band["fast_ms"] < band["slow_ms"]


def test_the_notebooks_settings_table_names_options_the_command_takes():
    """The notebook writes the engines' settings table; its first column must be options of `serve llm`."""
    notebook = NOTEBOOK.read_text(encoding="utf-8")
    rows = re.findall(r"^# <tr><td><code>(--[a-z-]+)</code></td>", notebook, re.MULTILINE)
    options = {option for action in serve_llm.parser()._actions for option in action.option_strings}
    assert len(rows) == 7 and set(rows) <= options, set(rows) - options
    assert "--max-num-seqs" in notebook and "max_num_tokens" in notebook and "--mem-fraction-static" in notebook


def test_prefix_caching_and_disaggregation_are_labelled_forecasts_and_show_their_effect(page):
    words = _plain(page.html("prefix_caching_and_disaggregation"))
    assert words.count("Forecast (") == 2 and "nothing measured" in words and "bfloat16" in words
    assert llm_serving.forecast_error_words(1) in words and llm_serving.forecast_error_words(2) in words
    assert llm_serving.FOCUS in words and llm_serving.SPLIT_GPU in words
    runs = dict(llm_serving.prefix_runs())
    assert runs[0.9].prefilled_tokens < runs[0.5].prefilled_tokens < runs[0.0].prefilled_tokens
    assert runs[0.9].percentile("ttft", 50) < runs[0.0].percentile("ttft", 50)
    c = llm_serving.split_comparison()
    assert f"{c.aggregated_rate:.2f}" in words and f"{c.disaggregated_rate:.2f}" in words
    assert ("disaggregated serving gives more tokens/s per GPU" in words) == (c.winner == "disaggregated")


def test_the_reason_disaggregation_wins_is_said_only_when_the_streams_show_it():
    c = llm_serving.split_comparison()
    said = llm_serving.why_split_wins(c)
    stalls = llm_serving.longest_gap_ratio(c.aggregated) > 2
    smooth = llm_serving.longest_gap_ratio(c.disaggregated.result) < 1.25
    assert bool(said) == (c.winner == "disaggregated" and stalls and smooth)


def test_the_disaggregation_table_is_what_the_command_it_quotes_answers(page, capsys):
    """The page prints the command beside the table: run as written (the forecast, as the page), it gives its rates."""
    quoted = re.search(r"python -m benchmarks serve (llm:\S+ --gpu H200 [^<]*--disaggregate[^<]*?)</code>",
                       page.html("prefix_caching_and_disaggregation"))  # fmt: skip
    assert quoted, "the disaggregation command is not on the page"
    assert serve_llm.main([*html_lib.unescape(quoted.group(1)).split(), "--json"]) == 0
    import json

    said = json.loads(capsys.readouterr().out)["comparison"]
    c = llm_serving.split_comparison()
    assert said["aggregated"]["rate_per_s"] == c.aggregated_rate
    assert said["disaggregated"]["rate_per_s"] == c.disaggregated_rate


@pytest.mark.slow
def test_the_budget_answer_is_the_commands_answer_on_the_ceiling_the_page_draws(capsys):
    found = llm_serving.budget_plan()
    args = ["llm:Llama-3-8B", "--gpu", "H100", "--prompt-tokens", str(llm_serving.PROMPT), "--output-tokens",
            str(llm_serving.OUTPUT), "--tpot-budget-ms", "50", "--concurrency", "1", "--ceiling", "--json"]  # fmt: skip
    assert serve_llm.main(args) == 0
    import json

    said = json.loads(capsys.readouterr().out)["budget"]
    assert said["concurrency"] == found.concurrency and said["rate_per_s"] == found.rate_per_s


def test_the_answer_box_gives_each_cases_engine_settings():
    table = llm_serving.answer_parts()[0]
    assert [row[0] for row in table.rows] == [*llm_serving.GPUS, llm_serving.FOCUS]
    assert {row[2].split(",")[0] for row in table.rows} == {"off (prompts first)", "on"}
    focus = next(row for row in table.rows if row[0] == llm_serving.FOCUS)
    assert focus[1] == str(llm_serving.answer_plan(llm_serving.FOCUS, False).max_num_seqs) and focus[3] == "1"
    assert "Forecast (nothing measured)" in table.caption and "expected error ±" in table.caption
    for row in table.rows:  # a case no load meets says why in its last cell: one request alone is over the budget
        if row[1].startswith("none"):
            alone = float(row[6].split(" takes ")[1].split(" ms")[0])
            assert alone > llm_serving.BUDGET.tpot_s * 1e3 and row[4] == "none"
    ceiling = llm_serving.budget_plan()
    assert int(focus[1]) <= ceiling.max_num_seqs, "a slower forecast step fits no more sequences than the ceiling"
