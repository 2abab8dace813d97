"""Every committed model sweep (benchmarks/sweeps/), read as the site reads it: its stored words are what its
numbers support today, its diagnosis rests on the evidence a sweep has (the dispatch probe and the operators of
each call, achieved bytes per second against the small-matmul probe), and no stated share passes 100 % of a
ceiling. The site's verdict spans for these sweeps are checked against the same diagnosis by
tests/end_to_end/test_claims.py."""

import re

import pytest

from benchmarks.analysis.roofline import diagnosis
from benchmarks.contract.results import DEFAULT_SWEEPS_DIR
from benchmarks.site import sweep_words
from benchmarks.site.model_sweeps import load_sweeps

SWEEPS = load_sweeps(DEFAULT_SWEEPS_DIR, synthetic=False)
OVER = re.compile(r"\b(?:[1-9]\d{2,}|\d{4,}) % of")


@pytest.fixture(params=SWEEPS, ids=[s.id for s in SWEEPS])
def sweep(request):
    return request.param


def test_sweeps_are_committed():
    assert SWEEPS, "no committed sweep under benchmarks/sweeps/"


def test_the_stored_recommendation_is_what_the_numbers_support(sweep):
    rec = sweep_words.from_document(sweep.doc)
    assert sweep.doc["recommendation"]["lines"] == list(rec.lines)


def test_the_diagnosis_rests_on_the_probes_and_every_point_is_counted(sweep):
    doc = sweep.doc
    assert doc["probes"]["dispatch"]["per_op_s"] > 0 and doc["probes"]["small_matmul"]["bytes_per_s"] > 0
    ok = [p for p in doc["points"] if p["status"] == "ok"]
    assert all(p.get("ops") and p.get("flops") and p.get("bytes_low") for p in ok)
    found = sweep_words.from_document(doc).diagnosis
    assert len(found.verdicts) == len(ok)
    for verdict in found.verdicts:
        assert verdict.fixed is not None and verdict.fixed.source == "per-op"  # never an intercept
        if verdict.regime == diagnosis.OVERHEAD:
            assert verdict.fixed_share >= 0.5


def test_each_stretch_is_stated_per_point_and_never_over_a_ceiling(sweep):
    rec = sweep_words.from_document(sweep.doc)
    for line in rec.lines:
        assert not OVER.search(line), line
    for segment in rec.diagnosis.segments:
        line = sweep_words.segment_line(rec.diagnosis, segment)
        assert line in rec.lines
        if segment.regime == diagnosis.MEMORY:
            assert "small matrix products" in line and "dispatching its" in line
        if segment.regime == diagnosis.COMPUTE and any(v.compute_share > 1 for v in segment.points):
            assert "does not bound" in line


def test_the_noise_is_said_first_and_the_search_says_why_it_stopped(sweep):
    rec = sweep_words.from_document(sweep.doc)
    assert rec.lines[0].startswith("Noise: ")
    assert rec.lines[1] == f"Search stopped: {sweep.doc['run']['search_stopped']}."
