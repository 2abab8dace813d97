"""Fuzzing the other readers the same way as the results reader (tests/contract/test_fuzz.py): mutations of the
committed serving check and of the two published-figure files.

Each case changes one thing (a field's type, an out-of-range value, a payload string with markup, a terminal
escape or a bidirectional override, something huge, a field removed). The reader must then refuse the file in one
line naming the file and the field, or accept it; a serving check it accepts must build the serving page's
"Checked against a real server" section, and a published-figures file the published page, with nothing that would
run in a browser and no hidden character. The number of cases is bounded: BATCHING_FUZZ_CASES (fast loop: small).
The mutated files are test fixtures in a temporary directory, never published.
"""

from __future__ import annotations

import copy
import json
import os
import random
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.analysis.published.measurements_file import PUBLISHED_FILE, PublishedDataError, read_published
from benchmarks.analysis.published.serving_figures import SERVING_FILE, ServingDataError, read_serving
from benchmarks.contract.results import ResultsError
from benchmarks.contract.serving_check import DEFAULT_SERVING_DIR, read_serving_check
from benchmarks.contract.text import HIDDEN
from tests.contract.test_fuzz import PAYLOAD, _get, _leaves, _Live, _set

CASES = int(os.environ.get("BATCHING_FUZZ_CASES", "120")) // 2 or 1
SEED = 20261201
VALUES = {
    "wrong type": [None, True, "1", [], {}, 1, 1.5],
    "out of range": [-1, 0, -1e-300, 1e300, 2**63, 10**30],
    "payload": [PAYLOAD, "javascript:alert(1)", "x\n", "", "\x1b]0;owned\x07", "H200\u202e001", "a\u200bb"],
    "huge": ["x" * 100_000, list(range(20_000))],
}


def _committed_check() -> dict[str, Any]:
    files = sorted(DEFAULT_SERVING_DIR.rglob("*.json"))
    doc = json.loads(files[-1].read_text(encoding="utf-8"))
    doc["runs"] = doc["runs"][:4]  # a few runs keep each case's page quick; the rules hold per run
    doc["run"]["complete"] = False
    doc["run"]["interrupted"] = "thinned for a fuzz test (fixture)"
    return doc


def _cases(base: dict[str, Any], count: int) -> Iterator[tuple[str, str, dict[str, Any]]]:
    rng = random.Random(SEED)
    paths = [p for p in _leaves(base) if p]
    for index in range(count):
        doc = copy.deepcopy(base)
        path = rng.choice(paths)
        if index % 9 == 0:
            del _get(doc, path[:-1])[path[-1]]
            yield "removed", ".".join(map(str, path)), doc
            continue
        kind = rng.choice(list(VALUES))
        _set(doc, path, rng.choice(VALUES[kind]))
        yield kind, ".".join(map(str, path)), doc


def _safe(html_text: str, kind: str, where: str) -> None:
    live = _Live()
    live.feed(html_text)
    assert not live.found, (kind, where, live.found)
    assert not HIDDEN.search(html_text.replace("\n", "")), (kind, where)


def _fuzz(tmp_path: Path, base: dict, place: Callable[[Path, dict], Path], read, errors, build) -> Counter:
    ended: Counter[tuple[str, str]] = Counter()
    for number, (kind, where, doc) in enumerate(_cases(base, CASES)):
        path = place(tmp_path / str(number), doc)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc), encoding="utf-8")
        try:
            found = read(path)
        except errors as exc:
            message = str(exc)
            assert message.startswith(f"{path}: ") and "\n" not in message, (kind, where, message)
            assert message.isprintable(), (kind, where, message)
            ended[(kind, "rejected")] += 1
            continue
        _safe(build(found), kind, where)
        ended[(kind, "built")] += 1
    print(", ".join(f"{kind} {how}: {n}" for (kind, how), n in sorted(ended.items())))
    assert sum(ended.values()) == CASES
    return ended


@pytest.fixture
def stage(tmp_path, monkeypatch):
    monkeypatch.setenv("BATCHING_CHART_DIR", str(tmp_path / "charts"))
    from benchmarks.site import charts

    monkeypatch.setattr(charts, "stage_dir", lambda: tmp_path / "charts")
    monkeypatch.setattr(charts, "STAGE_ENV", "BATCHING_FUZZ_NO_STAGE")  # a chart id redrawn per case is fine here


def test_serving_check_mutations_are_refused_in_one_line_or_build_a_safe_section(tmp_path, stage):
    from benchmarks.site.pages import serving_check

    base = _committed_check()

    def place(directory: Path, doc: dict) -> Path:
        return directory / base["host"]["slug"] / f"{base['run']['id']}.json"

    def build(check) -> str:
        return serving_check.build(check).text()

    _fuzz(tmp_path, base, place, read_serving_check, ResultsError, build)


def test_published_figure_mutations_are_refused_in_one_line_or_build_a_safe_page(tmp_path, stage):
    from benchmarks.site.pages import published

    base = json.loads(PUBLISHED_FILE.read_text(encoding="utf-8"))
    base["measurements"] = base["measurements"][:6]

    def build(rows) -> str:
        return published.build(rows).text()

    _fuzz(tmp_path, base, lambda d, _: d / "measurements.json", read_published, PublishedDataError, build)


def test_published_serving_mutations_are_refused_in_one_line(tmp_path):
    base = json.loads(SERVING_FILE.read_text(encoding="utf-8"))
    base["measurements"] = base["measurements"][:4]
    ended = _fuzz(tmp_path, base, lambda d, _: d / "serving.json", read_serving, ServingDataError, lambda rows: "")
    assert ended[("payload", "rejected")] > 0 or ended[("payload", "built")] > 0 or CASES < 10
