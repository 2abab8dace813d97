"""The training page module on SYNTHETIC runs and a SYNTHETIC noise-scale measurement (labelled so; never
published)."""

from __future__ import annotations

import json
import re

import pytest

from benchmarks.contract.noise_scale import NoiseScaleRun
from benchmarks.site.pages import training
from benchmarks.workloads import workload
from tests.analysis.test_noise_scale import synthetic_doc
from tests.synthetic import make_run, record, site_data

PARAMS = {"width": 64, "depth": 4, "optimizer": "adamw"}


@pytest.fixture(autouse=True)
def stage(tmp_path, monkeypatch):
    monkeypatch.setenv("BATCHING_CHART_DIR", str(tmp_path / "charts"))


def training_run(slowdown: float = 2.0) -> dict:
    """SYNTHETIC: a GPU run whose training steps take `slowdown` × their roofline and keep the hand count."""
    doc = make_run(widths=(), linear_batches=(), hardware=False)
    spec = workload("train-mlp")
    ceilings = {"flops": 400e12 / 4, "bytes": 2e12}  # make_run's float32 matmul rate is a quarter of bf16's
    records = []
    for batch in (1, 8, 64):
        parts = spec.operations(PARAMS, 4, batch)
        roofline = sum(max(f / ceilings["flops"], m / ceilings["bytes"]) for _, f, m in parts)
        flops, moved = spec.cost(PARAMS, 4, batch)
        records.append(record("train-mlp", PARAMS, batch, slowdown * roofline, flops, moved, dtype="float32",
                              cache="resident", saved_activation_bytes=4 * batch * 6 * 64))  # fmt: skip
    doc["records"] = records
    doc["run"].update(workloads_planned=["train-mlp"], workloads_done=["train-mlp"])
    return doc


def noise_run() -> NoiseScaleRun:
    return NoiseScaleRun(path=None, doc=synthetic_doc())


def test_every_section_is_built_and_the_step_is_read_against_its_roofline_by_phase():
    page = training.build(site_data(training_run()), [noise_run()])
    assert list(page.sections) == ["step_curves_by_device", "memory", "noise_scale", "tradeoff"]
    out = page.text()
    assert 'id="chart-training-synthetic-gpu-train-mlp-width-64-adamw-float32-eager"' in out
    ratios = re.findall(r"<td>(\d\.\d\d)</td>", page.html("step_curves_by_device"))
    assert len(ratios) == 3 and all(abs(float(r) - 2.0) < 0.02 for r in ratios)  # measured ÷ roofline, every batch
    assert "<td>1.50 KiB</td><td>1.50 KiB</td>" in out  # autograd's bytes per sample beside the hand count
    assert "float32 · eager" in out


def test_the_memory_and_noise_sections_say_what_is_predicted_and_what_measured():
    page = training.build(site_data(training_run()), [noise_run()])
    memory = page.html("memory")
    assert "Ceiling (roofline)" in memory and "not measured" in memory and "NVIDIA H100 SXM" in memory
    noise = page.html("noise_scale")
    assert "B_simple = 120 ± 28" in noise and "synthetic test data" in noise
    tradeoff = page.html("tradeoff")
    assert 'id="chart-training-steps-to-target-digits"' in tradeoff and "B_noise is 120" in tradeoff
    assert any("B_simple 120 ± 28" in item for item in page.takeaway_items)


def test_without_measurements_the_page_says_so():
    page = training.build(site_data(make_run(widths=(), linear_batches=(), hardware=False)), [])
    assert "No noise-scale measurement is committed yet" in page.html("noise_scale")
    assert "measured no training step" in page.html("step_curves_by_device")


def colours_in(node) -> set[str]:
    """Every hex colour a chart spec names, wherever it names it."""
    if isinstance(node, dict):
        return set().union(*(colours_in(v) for v in node.values()), set())
    if isinstance(node, list):
        return set().union(*(colours_in(v) for v in node), set())
    return {node.lower()} if isinstance(node, str) and re.fullmatch(r"#[0-9a-fA-F]{3,6}", node) else set()


def test_every_chart_draws_in_colours_that_read_on_both_palettes_and_names_its_series_whole(tmp_path):
    """The layout check in the browser measures the contrast; this names the cause: colours from the site's palette
    only (black, a default orange and a faded swatch fell under 3:1 on one of the two palettes)."""
    from benchmarks.site import charts

    training.build(site_data(training_run()), [noise_run()])
    specs = {path.stem: json.loads(path.read_text()) for path in (tmp_path / "charts").glob("*.json")}
    assert {"training-memory-llama-layer-h100", "training-steps-to-target-digits"} < set(specs)
    allowed = {colour.lower() for colour in (*charts.PALETTE, charts.LABEL_GREY)}
    for chart_id, spec in specs.items():
        assert colours_in(spec) <= allowed, (chart_id, colours_in(spec) - allowed)
        assert '"opacity": {"field"' not in json.dumps(spec) or '"legend": null' in json.dumps(spec), chart_id
    assert '"labelLimit": 0' in json.dumps(specs["training-steps-to-target-digits"])  # names carry values: never cut
