"""The section "Checked against a real server": the committed check as words, a chart and a table, escaped."""

from __future__ import annotations

import json
import re

import pytest

from benchmarks.analysis.serving.batcher.ray_serve_comparison import compare
from benchmarks.contract.serving_check import read_serving_check
from benchmarks.site import text
from benchmarks.site.pages import serving_check
from tests.synthetic import PAYLOAD
from tests.synthetic_serving import synthetic_check, write_check


def plain(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture(scope="module")
def committed():
    check = serving_check.newest_check()
    assert check is not None and not check.synthetic
    return check, serving_check.build(check)


def test_the_site_shows_the_newest_measurement_never_a_synthetic_file(tmp_path):
    write_check(tmp_path, synthetic_check())
    assert serving_check.newest_check(tmp_path) is None
    page = serving_check.build(directory=tmp_path / "nothing-here")
    assert "nox -s serving-check" in plain(page.html("summary")) and page.sections["figure"] == []


def test_the_words_carry_the_committed_numbers(committed):
    check, page = committed
    found = compare(check)
    said = plain(page.html("summary"))
    assert check.id in said and "Ray Serve 2.60.0" in said
    assert f"{len(found.rows)} cases" in said
    assert f"cost the server {text.sig(found.overhead_s * 1e3, 2)} ms by itself" in said
    table = page.sections["table"][0]
    assert len(table.rows) == len(found.rows)
    assert {row[1] for row in table.rows} == {"awaiting", "blocking"}


def test_the_chart_says_its_device_and_what_it_compares(committed):
    check, page = committed
    figure = page.sections["figure"][0]
    assert figure.chart_id == "serving-real-server-check"
    title = figure.spec["title"]
    assert check.doc["host"]["name"] in title["subtitle"][0]
    assert "float32 eager" in " ".join(title["subtitle"][1:]) and "±20%" in title["subtitle"][-1]
    assert all(len(line) <= 110 for line in title["subtitle"])
    drawn = [layer["layer"][-1]["data"]["values"] for layer in figure.spec["hconcat"]]
    assert all(len(values) == len(compare(check).rows) for values in drawn)


def test_text_from_the_file_is_escaped(tmp_path):
    doc = synthetic_check()
    doc["host"]["name"] = PAYLOAD
    doc["curve"]["label"] = PAYLOAD
    doc["curve"]["source"] = PAYLOAD
    page = serving_check.build(read_serving_check(write_check(tmp_path, doc)))
    html = page.text()
    assert "<script>" not in html and "<img" not in html
    spec = json.dumps(page.sections["figure"][0].spec)
    assert "onerror" in spec  # the spec holds the text as data; the figure embeds it as inert JSON
    assert "<script>" not in page.sections["figure"][0]._repr_html_()


@pytest.mark.parametrize(("load", "said"), [(0.7, False), (2.0, False), (12.0, True)])
def test_the_machine_is_called_shared_only_when_its_load_exceeded_its_cores(tmp_path, load, said):
    doc = synthetic_check()
    doc["host"]["load_average_start"] = [load, load, load]
    words = serving_check.where(compare(read_serving_check(write_check(tmp_path, doc))))
    assert f"a 1-minute load average of {text.sig(load, 2)} when the check started" in words
    assert ("other work shared the machine" in words) is said
    page = serving_check.build(read_serving_check(write_check(tmp_path, doc)))
    assert ("2 CPUs (shared)" in page.text()) is said and "not judged on a shared machine" not in page.text()


def test_the_cases_are_counted_per_service_with_every_policy_and_rate(committed):
    check, page = committed
    rows = compare(check).rows
    said = plain(page.html("summary"))
    assert "both batch handler styles" not in said
    for service in {r.case.service for r in rows}:
        mine = [r for r in rows if r.case.service == service]
        rates = text.sig_range([r.case.rate_per_s for r in mine])
        assert f"{len(mine)} of the {service} service (" in said and f"{rates} requests/s)" in said
    policies = len({(r.case.max_batch, r.case.max_delay_s) for r in rows})
    assert f"{policies} policies in all" in said


def test_p99_is_left_unjudged_for_the_reason_the_file_gives(committed):
    check, page = committed
    said = plain(page.html("summary"))
    counts = [r.requests for r in compare(check).rows]
    assert f"each case answered {min(counts):,}–{max(counts):,} requests, so its p99 rests on its" in said
    assert ("other work shared the machine" in said) == serving_check.shared(check.doc["host"])
