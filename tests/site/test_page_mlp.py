"""The MLP page module on SYNTHETIC runs (labelled so; never published)."""

from benchmarks.site.pages import mlp
from tests.synthetic import make_run, site_data


def test_every_curve_group_has_figures_and_the_knee_table():
    page = mlp.build(site_data())
    out = page.text()
    assert out.count('id="chart-mlp-synthetic-gpu-') >= 4
    assert "Measured knees against ridge batches (GPU)" in out and "ridge batch, rates reached" in out
    assert "width 4096" in out and "width 1024" in out
    assert "Execution modes, bfloat16: graph against eager" in out
    assert page.extra["curve"].params["width"] == 1024


def test_a_run_without_mlp_curves_says_so():
    doc = make_run(widths=(), hardware=False)
    out = mlp.build(site_data(doc)).text()
    assert "This run has no measured MLP curve." in out


def test_no_runs_says_how_to_measure():
    out = mlp.build(site_data(empty=True)).text()
    assert "No results are committed yet" in out


def test_points_not_measured_are_listed_once_per_configuration():
    doc = make_run(hardware=False, linear_batches=())
    for record in doc["records"]:
        if record["workload"] == "mlp" and record["batch"] == 2048 and record["params"]["width"] == 4096:
            record.update(status="oom", message="out of memory (fixture)", median_s=None, timing=None)
    out = mlp.build(site_data(doc)).text()
    assert "Points not measured: " in out
    assert "batch 2048 oom (out of memory (fixture))" in out and out.count("batch 2048 oom") == 2  # one per dtype
