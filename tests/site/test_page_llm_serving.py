"""The LLM-serving page: every section built from predictions and cited published figures, each labelled."""

import re

import pytest

from benchmarks.site.pages import llm_serving


@pytest.fixture(scope="module")
def page():
    return llm_serving.build()


def _plain(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


def test_the_charts_say_they_are_predictions_and_name_model_dtype_and_gpus(page):
    out = page.text()
    assert 'id="chart-llm-serving-front"' in out and 'id="chart-llm-serving-latency"' in out
    for name in ("front", "latency"):
        words = _plain(page.html(name))
        assert "nothing measured" in words and "Llama-3-8B" in words and "bfloat16" in words
    assert all(gpu in page.html("front") for gpu in llm_serving.GPUS)


def test_the_front_rises_in_total_and_falls_per_user_on_every_gpu():
    for points in llm_serving.fronts().values():
        below = [p for p in points if p.result.kv_peak_share < 0.99]
        totals = [p.result.tokens_per_s for p in below]
        users = [p.result.tokens_per_s_per_user for p in below]
        assert totals == sorted(totals) and users == sorted(users, reverse=True)


def test_the_budget_paragraph_gives_the_concurrency_and_what_binds(page):
    found = llm_serving.budget_plan()
    words = _plain(page.html("budget"))
    assert f"Up to {found.concurrency} concurrent requests meet p99 time per output token ≤ 50 ms" in words
    assert "What binds is" in words and "--tpot-budget-ms 50" in words


def test_the_published_table_has_every_check_with_its_ratio(page):
    html = page.html("published")
    checks = llm_serving.checks()
    assert html.count("<tr>") == 1 + len(checks)
    for check in checks:
        assert f"{check.ratio:.2f}" in html
    assert "mlperf_log_summary.txt" in html and "in-flight batching" in html


def test_the_settings_table_names_each_engines_setting(page):
    html = page.html("settings")
    assert "--max-num-seqs" in html and "max_num_tokens" in html and "--mem-fraction-static" in html
