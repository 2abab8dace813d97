"""Every causal sentence on the built site agrees with the diagnosis of the data it speaks of.

The pages mark each verdict (`span.verdict`, with the curve, the regime and, for one point, the batch);
this test reads them back from the built HTML of the committed site and of the SYNTHETIC site (whose
curves cover all three regimes), diagnoses the same curves again, and compares. It also checks that no
page output outside those marked sentences calls anything overhead-bound on its own authority.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from benchmarks.analysis import recommend
from benchmarks.analysis.curves import curves
from benchmarks.analysis.diagnosis import diagnose
from benchmarks.contract.results import load_results
from tests.end_to_end.test_site_build import ROOT, _tmp, built_site, write_synthetic_results, write_synthetic_sweeps

pytestmark = pytest.mark.build
# a diagnosis in words: only verdict spans may say it (the roofline's predictions say "memory-bound at every
# batch" or "compute-bound from the start", and prose explains the regimes in general)
CLAIM = re.compile(r"overhead-bound|bound by (?:fixed )?per-call|(?:is|was) overhead\b")


class _Verdicts(HTMLParser):
    """The verdict spans of a page, and the text of its notebook outputs outside them (prose cells,
    code, and the charts' inert specs left out)."""

    VOID = frozenset({"br", "img", "input", "meta", "link", "hr", "source", "col", "wbr"})

    def __init__(self):
        super().__init__()
        self.verdicts: list[dict[str, str]] = []
        self.loose: list[str] = []
        self._stack: list[str] = []  # per open tag: "output", "verdict", "skip" or ""

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        attrs = dict(attrs)
        kind = ""
        if tag == "div" and "jp-OutputArea-output" in (attrs.get("class") or "").split():
            kind = "output"
        elif tag == "span" and attrs.get("class") == "verdict":
            self.verdicts.append(attrs)
            kind = "verdict"
        elif tag in ("template", "pre", "code", "script", "style"):
            kind = "skip"
        elif tag == "dl" and "glossary" in (attrs.get("class") or "").split():
            kind = "skip"  # the glossary defines the words; it diagnoses nothing
        self._stack.append(kind)

    def handle_endtag(self, tag):
        if tag not in self.VOID and self._stack:
            self._stack.pop()

    def handle_data(self, data):
        if "output" in self._stack and "verdict" not in self._stack and "skip" not in self._stack:
            self.loose.append(data)


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("index.html") if "results" not in p.relative_to(site).parts)


def _diagnoses(results: Path) -> dict[str, object]:
    found = {}
    for run in load_results(results).runs:
        for workload in {r["workload"] for r in run.records}:
            for curve in curves(run, workload):
                key = f"{run.id}|{workload}|{curve.label}|{curve.dtype}|{curve.mode}|{curve.cache}"
                found[key] = diagnose(curve)
    return found


def _sweep_segments(sweeps: Path) -> dict[str, set[tuple[str, str]]]:
    """Per model sweep, the (regime, 'first-last') stretches its diagnosis finds."""
    found = {}
    for sweep in load_results(sweeps).sweeps if sweeps.exists() else []:
        diagnosis = recommend.from_document(sweep.doc).diagnosis
        segments = diagnosis.segments if diagnosis else ()
        found[f"sweep|{sweep.id}"] = {(s.regime, f"{s.first}-{s.last}") for s in segments}
    return found


def _check(site: Path, results: Path, sweeps: Path) -> set[str]:
    diagnoses, sweep_segments = _diagnoses(results), _sweep_segments(sweeps)
    regimes, problems = set(), []
    for page in _pages(site):
        parser = _Verdicts()
        parser.feed(page.read_text(encoding="utf-8"))
        for verdict in parser.verdicts:
            if verdict["data-curve"].startswith("sweep|"):
                stated = (verdict["data-regime"], verdict.get("data-batches"))
                if stated not in sweep_segments.get(verdict["data-curve"], set()):
                    problems.append(f"{page}: {verdict['data-curve']} says {stated}, not found by its diagnosis")
                regimes.add(verdict["data-regime"])
                continue
            d = diagnoses.get(verdict["data-curve"])
            if d is None:
                problems.append(f"{page}: a verdict about an unknown curve {verdict['data-curve']}")
                continue
            batch = verdict.get("data-batch")
            expected = d.at(int(batch)).regime if batch else ",".join(dict.fromkeys(d.regimes))
            if verdict["data-regime"] != expected:
                problems.append(f"{page}: {verdict['data-curve']} at {batch}: says {verdict['data-regime']}, "
                                f"the diagnosis {expected}")  # fmt: skip
            regimes |= set(verdict["data-regime"].split(","))
        text = " ".join(parser.loose)
        for match in CLAIM.finditer(text):
            problems.append(f"{page}: an unmarked causal claim: …{text[max(0, match.start() - 80) : match.end()]}")
    assert not problems, "\n".join(problems)
    return regimes


def test_committed_site_claims_agree_with_the_diagnosis():
    regimes = _check(built_site("committed"), ROOT / "benchmarks" / "results", ROOT / "benchmarks" / "sweeps")
    assert regimes, "the committed site states no verdict"


def test_synthetic_site_claims_cover_every_regime_and_agree():
    results, sweeps = _tmp("claims-results-"), _tmp("claims-sweeps-")
    write_synthetic_results(results)
    write_synthetic_sweeps(sweeps)
    assert _check(built_site("synthetic"), results, sweeps) == {"overhead", "memory", "compute"}
