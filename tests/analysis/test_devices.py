"""Every device read the same way, on SYNTHETIC runs (labelled so; never published)."""

from __future__ import annotations

import pytest

from benchmarks.analysis.roofline import devices as dv
from benchmarks.analysis.roofline.calculator import measured_curves
from benchmarks.analysis.roofline.diagnosis import diagnose
from tests.synthetic import make_run, run_of, site_data


def h100_like():
    """A SYNTHETIC run under a datasheet GPU's driver name, so that its datasheet figures apply."""
    doc = make_run(name="NVIDIA H100 80GB HBM3", slug="synthetic-h100", flops_per_s=800e12, bytes_per_s=3e12)
    return site_data(doc).shown[0]


def test_measured_ceilings_stand_beside_the_datasheet():
    run = h100_like()
    found = {c.name: c for c in dv.ceilings(run)}
    assert list(found) == ["copy", "bfloat16", "float32"]
    assert found["copy"].datasheet == 3.35e12
    assert found["copy"].fraction == pytest.approx(run.ceilings["copy"]["bytes_per_s"] / 3.35e12)
    assert found["bfloat16"].fraction == pytest.approx(800e12 / 989.4e12)
    assert found["float32"].datasheet == 67e12


def test_a_device_outside_the_datasheet_has_no_fraction():
    run = site_data().shown[0]  # the synthetic GPU, not in the datasheet
    assert all(c.datasheet is None and c.fraction is None for c in dv.ceilings(run))


def test_knees_are_the_hardware_curves_ridge_batches_against_the_measured_knee():
    run = site_data().shown[0]
    rows = dv.knee_rows(run)
    assert rows and [r.curve for r in rows] == measured_curves(run)
    assert all(r.curve.mode == "graph" and r.curve.cache == "rotated" for r in rows)
    for row in rows:
        assert row.ridge == row.curve.predicted_knee
        assert row.reached == diagnose(row.curve, run).reached_knee
        assert row.ratio == pytest.approx(row.curve.knee.batch / row.curve.predicted_knee)  # against the prediction
        assert row.reached and row.fitted_ratio == pytest.approx(row.curve.knee.batch / row.reached)


def test_normalised_curves_divide_by_the_rooflines_batch_1_latency():
    run = site_data().shown[0]
    points = dv.normalised(run)
    assert points
    for curve in {id(p.curve): p.curve for p in points}.values():
        mine = [p for p in points if p.curve is curve]
        bound = curve.points[0].predicted_s
        assert mine[0].predicted == 1  # every roofline starts at 1
        assert [p.predicted for p in mine] == pytest.approx([p.predicted_s / bound for p in curve.points])
        assert [p.measured for p in mine] == pytest.approx([p.median_s / bound for p in curve.points])
        assert [p.x for p in mine] == pytest.approx([b / curve.predicted_knee for b in curve.batches])


def test_a_curve_without_a_ridge_batch_is_left_out():
    run = run_of([])
    assert dv.normalised(run) == [] and dv.knee_rows(run) == []


def test_a_curve_without_batch_1_is_not_normalised_by_another_batch():
    doc = make_run()
    doc["records"] = [r for r in doc["records"] if not (r["workload"] == "mlp" and r["batch"] == 1)]
    run = site_data(doc).shown[0]
    assert dv.knee_rows(run) and all(row.curve.batches[0] == 2 for row in dv.knee_rows(run))
    assert dv.normalised(run) == []


def test_the_software_is_read_from_the_run():
    stack = dv.software(site_data().shown[0])
    assert stack == {"torch": "synthetic", "cuda": None, "driver": None, "python": "3.11", "threads": 1}
