"""Property: every free-form string of a serving check or a published-figures file reaches its page as text.

As in tests/site/test_property_text.py: the free-form fields are found by putting text in every string field of
the document, one at a time, and reading it; then all of them at once get a payload of markup, formula
delimiters and the site's placeholders, and the page built from the file has nothing that would run in a browser,
no '$' and no placeholder from data (the hook would fill it in with the site's address), and the payload as text.
A hidden character (an escape, a bidirectional override) in any of those fields is refused, naming the field.
Documents: the SYNTHETIC serving check (tests/synthetic_serving.py) and copies of the committed published files
with some rows, in a temporary directory; never published.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.analysis.published.measurements_file import PUBLISHED_FILE, PublishedDataError, read_published
from benchmarks.contract.results import ResultsError
from benchmarks.contract.serving_check import read_serving_check
from benchmarks.site import charts
from benchmarks.site.charts import links
from tests.contract.test_fuzz import _Live, _set
from tests.synthetic_serving import synthetic_check, write_check

PAYLOAD = "<img src=x onerror=alert(1)> $$x$$ __PAGE_URL__ __SITE_URL__/"
HIDDEN = "a\x1b[2J\u202eb"


def _strings(node: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(node, str):
        return [path]
    if isinstance(node, dict):
        return [p for key, value in node.items() for p in _strings(value, (*path, key))]
    if isinstance(node, list):
        return [p for index, value in enumerate(node[:3]) for p in _strings(value, (*path, index))]
    return []


def _free_fields(doc: dict, accepts) -> list[tuple]:
    """The string fields that take the payload (one at a time, the rest of the document as it is)."""
    found = []
    for path in _strings(doc):
        trial = json.loads(json.dumps(doc))
        _set(trial, path, PAYLOAD)
        if accepts(trial):
            found.append(path)
    return found


def _page_is_safe(text: str) -> None:
    """No live markup, no formula from data, and the payload left as it is when the hook fills in the site's
    addresses (its placeholders in the payload are text, not the page's own)."""
    live = _Live()
    live.feed(text)
    assert not live.found, live.found
    assert "$$x$$" not in text
    shown = html.unescape(text).count(PAYLOAD)
    filled = links.absolute(text, "https://example.org/site/", "https://example.org/site/page/")
    filled = filled.replace(charts.SITE_ROOT, "../")
    assert shown > 0 and html.unescape(filled).count(PAYLOAD) == shown


def _serving_accepts(directory: Path):
    def accepts(doc: dict) -> bool:
        try:
            read_serving_check(write_check(directory, doc))
        except ResultsError:
            return False
        return True

    return accepts


@pytest.mark.slow
def test_every_free_string_of_a_serving_check_reaches_the_page_as_text(tmp_path, monkeypatch):
    from benchmarks.site.pages import serving_check

    monkeypatch.setenv("BATCHING_CHART_DIR", str(tmp_path / "charts"))
    doc = synthetic_check()
    accepts = _serving_accepts(tmp_path / "trial")
    fields = _free_fields(doc, accepts)
    assert ("host", "name") in fields and ("curve", "label") in fields
    for path in fields:
        _set(doc, path, PAYLOAD)
    check = read_serving_check(write_check(tmp_path / "all", doc))
    _page_is_safe(serving_check.build(check).text())
    for path in fields:
        hidden = json.loads(json.dumps(doc))
        _set(hidden, path, HIDDEN)
        assert not accepts(hidden), path


def _published_accepts(directory: Path):
    directory.mkdir(parents=True, exist_ok=True)

    def accepts(doc: dict) -> bool:
        path = directory / "measurements.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        try:
            read_published(path)
        except PublishedDataError:
            return False
        return True

    return accepts


@pytest.mark.parametrize("rows", [slice(0, 3), slice(12, 15)])
def test_every_free_string_of_the_published_figures_reaches_the_page_as_text(tmp_path, monkeypatch, rows):
    from benchmarks.site.pages import published

    monkeypatch.setenv("BATCHING_CHART_DIR", str(tmp_path / "charts"))
    doc = json.loads(PUBLISHED_FILE.read_text(encoding="utf-8"))
    doc["measurements"] = doc["measurements"][rows]
    accepts = _published_accepts(tmp_path / "trial")
    fields = [p for p in _free_fields(doc, accepts) if p[-1] != "id"]
    assert any(p[-1] == "quote" for p in fields)
    for path in fields:
        _set(doc, path, PAYLOAD)
    where = tmp_path / "all" / "measurements.json"
    where.parent.mkdir()
    where.write_text(json.dumps(doc), encoding="utf-8")
    _page_is_safe(published.build(read_published(where)).text())
    for path in fields:
        hidden = json.loads(json.dumps(doc))
        _set(hidden, path, HIDDEN)
        assert not accepts(hidden), path
