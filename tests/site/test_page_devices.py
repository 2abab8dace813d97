"""The devices page on SYNTHETIC runs of several devices (labelled so; never published)."""

from __future__ import annotations

import html
import re

from benchmarks.site.pages import devices
from tests.synthetic import PAYLOAD, hostile, make_run, site_data

CPU = dict(kind="cpu", slug="synthetic-cpu", name="Synthetic CPU (test fixture)", dtypes=("float32",),
           modes=("eager",), hardware=False, linear_batches=())  # fmt: skip


def three_devices():
    return site_data(
        make_run(),
        make_run(name="NVIDIA H100 80GB HBM3", slug="synthetic-h100", flops_per_s=800e12, bytes_per_s=3e12),
        make_run(**CPU),
    )


def plain(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_every_device_is_read_the_same_way():
    data = three_devices()
    page = devices.build(data)
    for name in ("ceilings", "knees", "software"):
        said = plain(page.html(name))
        for run in data.shown:
            assert devices.label(run) in said, (name, devices.label(run))
    ceilings = page.html("ceilings")
    assert "matmul, bfloat16</th>" in ceilings and "matmul, float32</th>" in ceilings
    assert '<em class="estimate">3.35 TB/s datasheet; measured' in ceilings  # the H100's datasheet, set apart
    assert ceilings.count("no datasheet figure") >= 2  # the synthetic GPU and the CPU are in no datasheet
    knees = page.html("knees")
    assert '<em class="estimate">≈' in knees  # the ridge batch is a prediction
    assert knees.index("predicted from the run&#x27;s ceilings</th>") < knees.index("rates reached (fitted)</th>")
    said = html.unescape(plain(page.text()))
    assert "× the ridge batch predicted from the run's ceilings" in said
    assert "× the one at the rates its kernels reached (fitted to the same curves)" in said


def test_the_small_multiples_share_axes_one_panel_per_device():
    data = three_devices()
    figure = devices.build(data).sections["curves"][0]
    assert figure.chart_id == "devices-normalised"
    spec = figure.spec
    assert spec["columns"] == 3
    panels = spec["concat"]
    assert [panel["title"]["text"] for panel in panels] == [devices.label(run) for run in data.shown]
    for panel in panels:  # every panel on the same domains: the axes are shared
        assert panel["layer"][0]["encoding"]["x"]["scale"] == panels[0]["layer"][0]["encoding"]["x"]["scale"]
        assert (
            panel["layer"][0]["encoding"]["y"]["scale"]["domain"]
            == panels[0]["layer"][0]["encoding"]["y"]["scale"]["domain"]
        )
        drawn = panel["data"]["values"]
        assert {row["kind"] for row in drawn} == {"measured", "roofline (predicted)"}
        assert {row["device"] for row in drawn} == {panel["title"]["text"]}
    assert "graph replay on a GPU, eager calls on a CPU" in " ".join(spec["title"]["subtitle"])


def test_one_device_is_enough_and_none_says_how_to_measure():
    page = devices.build(site_data(make_run(**CPU)))
    assert page.extra["devices_measured"] == 1  # the notebook's lesson says that only one device has a run so far
    assert "devices-normalised" in page.html("curves")
    assert "No results are committed yet" in devices.build(site_data(empty=True)).text()


def test_fixtures_are_labelled_and_device_text_is_escaped():
    doc = hostile(make_run(name="x", slug="synthetic-evil", kind="cpu", dtypes=("float32",), modes=("eager",),
                           hardware=False))  # fmt: skip
    out = devices.build(site_data(doc)).text()
    assert "SYNTHETIC test fixture" in out
    assert PAYLOAD not in out and "<script>" not in out and "&lt;img src=x onerror=alert(1)&gt;" in out


def test_the_measured_device_stands_beside_datasheet_gpus_predicted_and_dashed():
    from benchmarks.site.pages import devices as page_module

    page = page_module.build(site_data(make_run(kind="cpu")))
    figure = page.sections["beside"][0]
    assert figure.chart_id == "devices-beside-datasheets"
    rows = figure.spec["data"]["values"]
    kinds = {(row["device"], row["kind"]) for row in rows}
    assert ("NVIDIA H100 SXM", "predicted (datasheet)") in kinds and ("NVIDIA H200", "predicted (datasheet)") in kinds
    assert any(kind == "measured" and device.startswith("CPU: ") for device, kind in kinds)
    dash = figure.spec["layer"][0]["encoding"]["strokeDash"]["scale"]["range"]
    assert dash[1] != dash[0]  # the datasheet's predictions are dashed, the measurement solid
    assert "predicted dashed" in figure.visible
    assert "No results" in page_module.build(site_data(empty=True)).html("beside")


def test_the_datasheet_lines_name_their_cache_state_and_that_they_draw_the_ceiling():
    from benchmarks.site.pages import devices as page_module

    lines = page_module.datasheet_line_words()
    assert "none kept in cache" in lines[0]
    assert "the ceiling: the datasheet roofline" in lines[1]
    assert all(len(line) <= 110 for line in lines)
    figure = page_module.build(site_data(make_run(kind="cpu"))).sections["beside"][0]
    subtitle = figure.spec["title"]["subtitle"]
    assert lines[0] in subtitle and lines[1] in subtitle and "cache " in subtitle[0]
