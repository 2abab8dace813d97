"""Which run a page charts: per device and workload, the newest that finished it (SYNTHETIC runs)."""

import pytest

from benchmarks.site.pages import cnn, home, mlp
from tests.synthetic import make_run, record, site_data


def _partial(run_id, started_at, workload="resnet50"):
    """A newer run that measured one workload only, as `run --only` writes it: complete, but partial."""
    doc = make_run(run_id=run_id, started_at=started_at, widths=(), linear_batches=(), hardware=False)
    doc["records"] = [record(workload, {"resolution": 64}, b, 1e-3 * b, 1e9 * b, 1e8 + 1e7 * b) for b in (1, 2, 4)]
    doc["run"].update(workloads_planned=[workload], workloads_done=[workload])
    return doc


@pytest.mark.slow
def test_a_partial_run_never_hides_a_fuller_one():
    full = make_run()
    partial = _partial("20260301T000000Z-only", "2026-03-01T00:00:00+00:00")
    data = site_data(full, partial)
    assert [r.id for r in data.shown] == ["20260301T000000Z-only"]  # the newest complete run of the device
    (mlp_run,) = data.shown_for("mlp")
    assert mlp_run.id == full["run"]["id"] and {r["workload"] for r in mlp_run.records} == {"mlp"}
    (resnet,) = data.shown_for("resnet50", "conv")  # no run of the device measured conv
    assert resnet.id == "20260301T000000Z-only" and {r["workload"] for r in resnet.records} == {"resnet50"}
    assert data.charted(data.runs[0]) == ["mlp", "linear"] and data.charted(data.runs[1]) == ["resnet50"]
    assert "measured on a GPU" in home.build(data).html("gpu_curve_measured_or_predicted")
    assert 'id="chart-mlp-synthetic-gpu-bfloat16-graph-rotated-latency"' in mlp.build(data).text()
    assert "ResNet-50 @64²" in cnn.build(data).text()


def test_an_unfinished_workload_is_charted_only_when_no_run_finished_it():
    finished = _partial("20260201T000000Z-done", "2026-02-01T00:00:00+00:00")
    cut = _partial("20260301T000000Z-cut", "2026-03-01T00:00:00+00:00")
    cut["run"].update(complete=False, workloads_done=[], finished_at=None, interrupted="SIGTERM")
    data = site_data(finished, cut)
    assert data.source("synthetic-gpu", "resnet50").id == "20260201T000000Z-done"
    data = site_data(cut)
    assert data.source("synthetic-gpu", "resnet50").id == "20260301T000000Z-cut"


def test_the_runs_table_says_what_each_run_covers():
    data = site_data(make_run(), _partial("20260301T000000Z-only", "2026-03-01T00:00:00+00:00"))
    table = home.build(data).html("committed_runs_by_device")
    resnet, linear, mlp = "<code>resnet50</code>", "<code>linear</code>", "<code>mlp</code>"
    assert f"<td>{resnet}</td><td>{resnet}</td>" in table  # covers, charted here
    assert f"<td>{linear}, {mlp}</td><td>{mlp}, {linear}</td>" in table


def test_a_newer_run_of_other_workloads_keeps_the_devices_pages_mlp_knees():
    from benchmarks.site.pages import devices

    full = make_run()
    alone = devices.knee_table(site_data(full)).rows
    partial = _partial("20260301T000000Z-only", "2026-03-01T00:00:00+00:00")
    with_partial = devices.knee_table(site_data(full, partial)).rows
    assert with_partial == alone and "no depth-8 MLP measured" not in str(with_partial)
