"""A timing's median is its samples' median, and a sweep point's median and percentile are its timing's: a file
claiming 100 s against samples of 0.01 s is refused, naming the field. SYNTHETIC fixtures with one number changed."""

from __future__ import annotations

import pytest

from benchmarks.contract.results import ResultsError, read_document
from tests.synthetic import make_run, make_sweep


def _refusal(write_doc, doc) -> str:
    with pytest.raises(ResultsError) as caught:
        read_document(write_doc(doc))
    return str(caught.value)


def _ok_point(doc: dict) -> dict:
    return next(p for p in doc["points"] if p["status"] == "ok")


def test_a_sweep_point_whose_median_disagrees_with_its_samples_is_refused(write_doc):
    doc = make_sweep()
    _ok_point(doc)["median_s"] = 100.0
    assert "points[0].median_s: must equal timing.median_s" in _refusal(write_doc, doc)


def test_a_sweep_point_whose_percentile_lies_outside_its_samples_is_refused(write_doc):
    doc = make_sweep()
    _ok_point(doc)["percentile_s"] = 100.0
    assert "points[0].percentile_s: must lie within the samples" in _refusal(write_doc, doc)


def test_a_timing_median_that_is_not_its_samples_median_is_refused(write_doc):
    doc = make_sweep()
    point = _ok_point(doc)
    timing = point["timing"]
    timing["median_s"] = point["median_s"] = timing["q3_s"]  # within the range and the quartiles, not the median
    assert "points[0].timing.median_s: must be the median of the samples" in _refusal(write_doc, doc)


def test_a_run_record_whose_timing_median_is_not_its_samples_median_is_refused(write_doc):
    doc = make_run(widths=(1024,), linear_batches=(1, 2), hardware=False)
    record = next(r for r in doc["records"] if r["status"] == "ok")
    record["timing"]["median_s"] = record["median_s"] = record["timing"]["q3_s"]
    assert "timing.median_s: must be the median of the samples" in _refusal(write_doc, doc)


def test_the_synthetic_fixtures_still_validate(write_doc):
    read_document(write_doc(make_sweep()))
    read_document(write_doc(make_run(widths=(1024,), linear_batches=(1, 2), hardware=False)))
