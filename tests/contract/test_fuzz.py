"""Fuzzing the reader with mutations of a real results file.

Each case changes one thing in the newest committed run (a field's type, an out-of-range value, a payload
string, something huge or deeply nested, a duplicated record) and writes it where a results directory
keeps it. It must then either be rejected by the reader with one line naming the file and the field, or
be accepted and build every page of the site without an error and without anything that would run in a
browser. The number of cases is bounded: BATCHING_FUZZ_CASES (the fast loop's default is small; CI runs
more).
"""

from __future__ import annotations

import copy
import json
import os
import random
from collections import Counter
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest

from benchmarks.contract.results import DEFAULT_RESULTS_DIR, ResultsError, read_run
from tests.synthetic import PAYLOAD, site_data

CASES = int(os.environ.get("BATCHING_FUZZ_CASES", "120"))
SEED = 20261130
Path_ = tuple[Any, ...]


def _newest_committed() -> dict[str, Any]:
    files = sorted(DEFAULT_RESULTS_DIR.rglob("*.json"), key=lambda p: p.name)
    return json.loads(files[-1].read_text(encoding="utf-8"))


def _leaves(node: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Every path into the document, long lists sampled at their ends (records: a few of each workload)."""
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        indices = range(len(node)) if len(node) <= 6 else [0, 1, len(node) // 2, len(node) - 1]
        for index in indices:
            yield from _leaves(node[index], (*path, index))


def _get(doc: Any, path: Path_) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _set(doc: Any, path: Path_, value: Any) -> None:
    _get(doc, path[:-1])[path[-1]] = value


def _nested(depth: int) -> Any:
    value: Any = PAYLOAD
    for _ in range(depth):
        value = {"x": [value]}
    return value


VALUES = {
    "wrong type": [None, True, "1", [], {}, 1, 1.5],
    "out of range": [-1, 0, -1e-300, 1e300, 2**63, 10**30, float("nan")],
    "payload": [PAYLOAD, "javascript:alert(1)", "x\n", "", "<b>" * 50],
    "huge": ["x" * 100_000, list(range(50_000))],
    "deep": [_nested(40), _nested(200)],  # 400 levels of JSON; 200,000 levels: test_deep_nesting_anywhere
}


def _cases(base: dict[str, Any], count: int) -> Iterator[tuple[str, str, dict[str, Any]]]:
    rng = random.Random(SEED)
    paths = [p for p in _leaves(base) if p]
    for index in range(count):
        doc = copy.deepcopy(base) if index % 10 == 0 else json.loads(BASE_TEXT)  # both are fresh copies
        if index % 17 == 0:  # structural: a duplicated record, or one field less
            records = doc["records"]
            if index % 34 == 0:
                records.append(copy.deepcopy(records[rng.randrange(len(records))]))
                yield "duplicated", "records", doc
            else:
                path = rng.choice(paths)
                del _get(doc, path[:-1])[path[-1]]
                yield "removed", ".".join(map(str, path)), doc
            continue
        kind = rng.choice(list(VALUES))
        path = rng.choice(paths)
        _set(doc, path, rng.choice(VALUES[kind]))  # the values are never changed: no copy needed
        yield kind, ".".join(map(str, path)), doc


BASE = _newest_committed()
BASE_TEXT = json.dumps(BASE)


class _Live(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img" and dict(attrs).get("src") == "x":
            self.found.append("<img src=x>")
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}>")


def _build_every_page(run) -> str:
    from benchmarks.site.pages import calculator, cnn, decode, home, mlp, moe, regimes, steps, theory

    data = site_data(run.doc)
    return "".join(
        page.build(data).text() for page in (home, theory, mlp, regimes, steps, moe, cnn, decode, calculator)
    )


@pytest.mark.slow
def test_mutations_are_rejected_in_one_line_or_build_a_safe_site(tmp_path, monkeypatch):
    monkeypatch.setenv("BATCHING_CHART_DIR", str(tmp_path / "charts"))
    from benchmarks.site import charts

    monkeypatch.setattr(charts, "stage_dir", lambda: tmp_path / "charts")
    ended: Counter[tuple[str, str]] = Counter()
    for number, (kind, where, doc) in enumerate(_cases(BASE, CASES)):
        path = tmp_path / str(number) / BASE["device"]["slug"] / f"{BASE['run']['id']}.json"
        path.parent.mkdir(parents=True)
        try:
            path.write_text(json.dumps(doc), encoding="utf-8")
        except ValueError:  # NaN cannot be written as JSON: json.dumps refuses, so nothing to read
            ended[(kind, "unwritable")] += 1
            continue
        try:
            run = read_run(path)
        except ResultsError as exc:
            message = str(exc)
            assert message.startswith(f"{path}: ") and "\n" not in message, (kind, where, message)
            ended[(kind, "rejected")] += 1
            continue
        for chart in (tmp_path / "charts").glob("*"):
            chart.unlink()
        text = _build_every_page(run)  # anything the reader accepts must build
        live = _Live()
        live.feed(text)
        assert not live.found, (kind, where, live.found)
        ended[(kind, "built")] += 1
    summary = ", ".join(f"{kind} {how}: {n}" for (kind, how), n in sorted(ended.items()))
    print(f"{CASES} fuzz cases: {summary}")
    assert sum(ended.values()) == CASES
    assert ended[("payload", "built")] + ended[("payload", "rejected")] > 0


@pytest.mark.parametrize("depth", [100, 200_000])
def test_deep_nesting_anywhere_is_one_line(tmp_path, depth):
    text = BASE_TEXT.replace('"records": [', '"records": [' + "[" * depth + "]" * depth + ",", 1)
    path = tmp_path / BASE["device"]["slug"] / f"{BASE['run']['id']}.json"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ResultsError) as caught:
        read_run(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)
