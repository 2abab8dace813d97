"""The CNN page module on SYNTHETIC runs (labelled so; never published)."""

from __future__ import annotations

import pytest

from benchmarks.gpus import Ceilings
from benchmarks.site.pages import cnn
from tests.analysis.test_cnn_decode import conv_records, synthetic_doc
from tests.synthetic import make_run, site_data

GPU = Ceilings(flops_per_s=400e12 / 8, bytes_per_s=2e12)  # made up: the synthetic GPU's float32 ceilings
HOSTILE = "<img src=x onerror=alert(1)> (test fixture)"


@pytest.fixture(autouse=True)
def stage(tmp_path, monkeypatch):
    """Stage chart exports in a fresh folder, where an id used twice is an error."""
    monkeypatch.setenv("BATCHING_CHART_DIR", str(tmp_path / "charts"))


def figure_ids(page) -> list[str]:
    out = page.text()
    return [chunk.split('"', 1)[0] for chunk in out.split('<figure class="bchart" id="chart-')[1:]]


def test_a_gpu_run_has_every_figure_and_table():
    page = cnn.build(site_data(synthetic_doc(conv_records(GPU), GPU)))
    assert figure_ids(page) == [
        "cnn-synthetic-gpu-conv-float32-eager-rotated-latency",
        "cnn-synthetic-gpu-conv-float32-eager-rotated-throughput",
        "cnn-synthetic-gpu-resnet50-64-float32-eager-rotated",
        "cnn-synthetic-gpu-float32-intensity",
    ]
    out = page.text()
    assert "Intensity at batch 1 against the ridge (GPU)" in out
    assert "What batching buys." in out and "1 → 32" in out
    assert "Ridge: float32 25.0 FLOP/byte." in out  # 50 TFLOP/s over 2 TB/s, in the device's introduction
    assert "At batch 1 the single layers do" in out
    assert (
        page.sections["h200_formula_preview_while_no_gpu_measured"] == []
    )  # a GPU measured the layers: no formula preview
    assert "SYNTHETIC test fixture" in out


def test_takeaways_state_the_measured_facts():
    page = cnn.build(site_data(synthetic_doc(conv_records(GPU), GPU)))
    box = page.takeaway_html("the notebook's lesson")
    assert "Takeaways" in box and "the notebook's lesson" in box
    assert "single Conv2d layers: " in box and "ResNet-50 @64²" in box
    assert "takeaway" not in " ".join(page.sections)  # the lesson and the items are the takeaway's, no section


def test_the_article_bullets_are_the_formula():
    out = cnn.build(site_data(empty=True)).html("article_counts_corrected_by_the_formulas")
    assert "<strong>36,864</strong>" in out and "<strong>50,176</strong>" in out
    assert "100,352 FLOPs per image" in out and "286 FLOP per byte at batch 1" in out


def test_a_run_without_cnn_curves_says_so_and_the_formulas_stand_in():
    page = cnn.build(site_data(make_run(widths=(512,), linear_batches=())))
    out = page.text()
    assert "This run has no CNN measurement (no conv or resnet50 workload)." in out
    preview = page.html("h200_formula_preview_while_no_gpu_measured")
    assert "What a GPU run will show" in preview and "NVIDIA H200, bf16" in preview
    assert "3×3, 64→64 @56²" in preview and "These are formulas, not measurements." in preview
    assert list(page.takeaway_items) == ["No CNN measurement is committed yet."]


def test_a_cpu_run_says_what_it_cannot_show():
    doc = synthetic_doc(conv_records(), kind="cpu", name="Synthetic CPU (test fixture)", slug="synthetic-cpu")
    page = cnn.build(site_data(doc))
    out = page.text()
    assert "CPU: Synthetic CPU (test fixture)" in out  # introduced once; the site-wide notice says the rest
    assert "What a GPU run will show" in page.html("h200_formula_preview_while_no_gpu_measured")


def test_no_runs_says_how_to_measure():
    out = cnn.build(site_data(empty=True)).text()
    assert "No results are committed yet" in out


def test_a_hostile_device_name_is_escaped():
    doc = synthetic_doc(conv_records(GPU), GPU, name=HOSTILE)
    out = cnn.build(site_data(doc)).text()
    assert HOSTILE not in out and "<img" not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out


def test_a_1x1_convolution_above_the_ceiling_shows_the_ceiling_is_not_the_peak():
    from benchmarks.analysis.roofline import curves as c
    from tests.analysis.test_cnn_decode import CPU_LIKE, synthetic_run

    fast = synthetic_run(conv_records(Ceilings(flops_per_s=CPU_LIKE.flops_per_s * 2, bytes_per_s=1e15)), CPU_LIKE)
    said = " ".join(str(part) for part in cnn.faster_than_roofline(c.curves(fast, "conv"))[0].content)
    assert "Winograd or FFT for 3×3 filters" in said
    assert "That cannot explain 1×1, 2048→512 @7²: a 1×1 convolution is a plain matrix multiply" in said
