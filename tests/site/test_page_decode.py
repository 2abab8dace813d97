"""The Transformer-decode page module and the words it shares with the CNN page, on SYNTHETIC runs
(labelled so; never published)."""

from __future__ import annotations

import pytest

from benchmarks.analysis.roofline.curves import curves
from benchmarks.gpus import Ceilings
from benchmarks.site import model_words as words
from benchmarks.site.pages import decode
from tests.analysis.test_cnn_decode import decode_records, synthetic_doc, synthetic_run
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


def gpu_page(**kwargs):
    return decode.build(site_data(synthetic_doc(decode_records(GPU, skip_from=32), GPU, **kwargs)))


def test_a_gpu_run_has_every_figure_and_table():
    page = gpu_page()
    assert figure_ids(page) == [
        "decode-synthetic-gpu-mha-float32-eager-rotated-latency",
        "decode-synthetic-gpu-gqa2-float32-eager-rotated-latency",
        "decode-synthetic-gpu-float32-intensity",
        "decode-synthetic-gpu-float32-bytes",
        "decode-synthetic-gpu-float32-eager-rotated-prefill",
        "decode-synthetic-gpu-float32-eager-rotated-operations",
        "decode-synthetic-gpu-float32-eager-rotated-sequences",
    ]
    out = page.text()
    assert "The decoder: 2-layer decoder (d_model 512, 8 query heads of 64, GELU FFN 2048) in float32." in out
    assert "Reference table: knees and KV share (GPU)</summary>" in out  # folded: the page reads past it
    assert "The MLP condition on this run (float32, ridge 25.0)" in out
    assert "shares each K/V head among 4 query heads" in out
    assert "A prefill of 128-token prompts processes" in out
    assert "batch 32 skipped (not run: KV cache over budget)" in out  # the skipped points are listed
    assert "disagree with this page" not in out
    assert page.sections["h200_formulas_until_a_gpu_run"] == []  # a GPU measured decode steps: no formula preview


def test_each_step_is_read_per_operation_and_per_sequence():
    page = gpu_page()
    operations = page.html("step_time_per_operation_by_device")
    tokens = page.html("tokens_per_second_by_device")
    assert (
        "the matmuls turn compute-bound at batch ≈" in operations and "the attention stays memory-bound" in operations
    )
    assert "Batching still pays" in operations and "measured time per token falls from" in operations
    assert "each sequence&#x27;s own rate falls from" in tokens and "quote both" in tokens


def test_takeaways_state_the_measured_facts():
    page = gpu_page()
    items = " ".join(page.takeaway_items)
    assert "the KV cache read equals the weight read at" in items
    assert "moves the ridge batch" in items or "gives no ridge batch" in items
    assert "the tokens per second of the fastest measured decode step" in items
    box = page.takeaway_html("A lesson divided by H/H<sub>kv</sub> (test fixture).")
    assert "Takeaways" in box and "the KV cache read equals the weight read at" in box  # under the lesson
    assert "H/H<sub>kv</sub>" in box  # the notebook's own markup passes through


def test_a_run_without_decode_curves_says_so_and_the_formulas_stand_in():
    page = decode.build(site_data(make_run(widths=(512,), linear_batches=())))
    assert "This run has no Transformer decode measurement (no decode workload)." in page.text()
    preview = page.html("h200_formulas_until_a_gpu_run")
    assert "What a GPU run will show" in preview and "NVIDIA H200, bf16" in preview
    assert "4-layer decoder (d_model 4096, 32 query heads of 128, SwiGLU FFN 14336) in bf16" in preview
    assert list(page.takeaway_items) == ["No decode measurement is committed yet."]


def test_a_cpu_run_says_what_it_cannot_show():
    doc = synthetic_doc(decode_records(), kind="cpu", name="Synthetic CPU (test fixture)", slug="synthetic-cpu")
    page = decode.build(site_data(doc))
    assert "CPU: Synthetic CPU (test fixture)" in page.text()  # the site-wide notice says the rest


def test_no_runs_says_how_to_measure():
    assert "No results are committed yet" in decode.build(site_data(empty=True)).text()


def test_a_hostile_device_name_is_escaped():
    out = gpu_page(name=HOSTILE).text()
    assert HOSTILE not in out and "<img" not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out


# --------------------------------------------------------------------------- shared words


def test_knee_texts():
    assert words.measured_knee_text(None) == "none detected"
    run = synthetic_run(decode_records())
    long_mha = next(c for c in curves(run, "decode") if c.label == "context 2048, MHA")
    assert long_mha.predicted_knee is None
    assert words.predicted_knee_text(long_mha).startswith("none")
    assert words.knees_text(long_mha).startswith("ridge batch none")
    assert words.ridge_intensity_note({"float32": 3.666}) == "Ridge: float32 3.67 FLOP/byte."
    assert words.ridge_intensity_note({}) == ""


def test_not_measured_lists_batches_once_per_configuration():
    records = decode_records(skip_from=16)
    records += [dict(r, mode="graph") for r in records]
    run = synthetic_run(records)
    lines = words.not_measured(curves(run, "decode"))
    assert len(lines) == 4  # two contexts × two attention types, both modes on one line
    assert all("batches 16, 32 skipped (not run: KV cache over budget)" in line for line in lines)
    assert all("eager, graph" in line or "graph, eager" in line for line in lines)


def test_the_articles_claim_about_attention_is_quoted_in_its_words_with_a_translation():
    from pathlib import Path

    notebook = (Path(__file__).resolve().parents[2] / "docs" / "decode.py").read_text(encoding="utf-8")
    prose = " ".join(line.lstrip("# ") for line in notebook.splitlines()[:12])
    assert "attention costs little" not in prose
    assert (
        "注意力機制所消耗的時間被大幅減少" in prose
        and "the time the attention mechanism takes is greatly reduced" in prose
    )
    assert "Transformers 本質上就是多層感知機（MLPs）" in prose and "Transformers are in essence multilayer" in prose
