"""The section "Checked against a real engine": built from the committed engine check alone (no vLLM), every number
in its words from that file, and a synthetic or missing check never shown as a measurement."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("altair", reason="the docs dependency group is not installed")

from benchmarks.contract.engine_check import DEFAULT_ENGINE_DIR, newest_engine_check
from benchmarks.site.pages import engine_check


def committed():
    check = newest_engine_check()
    if check is None:
        pytest.skip("no engine check is committed")
    return check


def test_the_section_is_built_from_the_committed_check(tmp_path, monkeypatch):
    check = committed()
    page = engine_check.build(check)
    words = page.sections["summary"][0].content
    assert check.id in words and "vLLM" in words and check.doc["host"]["name"] in words
    found = page.extra["accuracy"]
    within, of = found.within["ttft_p50_ms"]
    assert f"in {within} of {of} loads" in words
    assert {"summary", "accuracy", "figure", "timeline", "table", "method"} == set(page.sections)
    assert len(page.sections["table"][0].rows) == len({(x.setting, x.mix, x.kind, x.rate_per_s, x.concurrency)
                                                       for x in page.extra["comparison"].loads})  # fmt: skip


def test_no_table_cell_breaks_at_a_hyphen():
    page = engine_check.build(committed())
    for table in (*page.sections["accuracy"], *page.sections["table"]):
        for row in table.rows:
            assert not any("-" in cell.replace("−", "") for cell in row[:3]), row


def test_a_synthetic_check_is_never_shown_and_none_says_how_to_measure(tmp_path):
    assert "nox -s engine-check" in str(engine_check.build(directory=tmp_path).sections["summary"][0].content)
    source = committed().path
    copy = tmp_path / source.parent.name / source.name
    copy.parent.mkdir()
    doc = json.loads(source.read_text())
    doc["run"]["synthetic"] = True
    copy.write_text(json.dumps(doc))
    assert newest_engine_check(tmp_path) is None
    assert tmp_path != DEFAULT_ENGINE_DIR
    shutil.rmtree(copy.parent)
