"""The calculator page module, without runs and on SYNTHETIC runs (labelled so; never published)."""

import html
import json
import re

from benchmarks.analysis.roofline import calibration_file
from benchmarks.gpus import GPUS
from benchmarks.site.pages import calculator
from tests.synthetic import make_run, site_data

HOSTILE = "<img src=x onerror=alert(1)> (test fixture)"


def _params(page):
    return {param["name"]: param for param in page.sections["chart"][0].spec["params"]}


def test_without_runs_the_page_is_the_datasheet_alone():
    page = calculator.build(site_data(empty=True))
    out = page.text()
    assert 'id="chart-calculator"' in out
    assert page.extra["default"] == "NVIDIA H100 SXM"
    assert "The exported image shows the default choice: NVIDIA H100 SXM, bfloat16" in out
    assert page.html("examples").count("<tr>") == 1 + len(calculator.EXAMPLES)
    assert page.html("datasheet").count("<tr>") == 1 + len(GPUS)
    assert "Sources and notes for every entry" in out and "<strong>NVIDIA T4</strong>" in out
    ridge = page.extra["ridge_batches"]  # the figures the notebook's lesson states
    assert (
        "rows on the NVIDIA T4" in ridge["fp32, examples"] and "rows on the NVIDIA H100 SXM" in ridge["fp32, examples"]
    )
    lowest, highest = (float(ridge[key].split()[0].replace(",", "")) for key in ("bf16, lowest", "bf16, highest"))
    assert 0 < lowest < highest


def test_the_controls_the_browser_test_reads():
    params = _params(calculator.build(site_data(empty=True)))
    assert {"gpu", "dtype", "layer_width", "layers"} <= set(params)
    assert params["gpu"]["value"] == "NVIDIA H100 SXM" and params["layer_width"]["value"] == 4096


def test_a_measured_device_becomes_a_choice_with_its_points():
    page = calculator.build(site_data())
    options = _params(page)["gpu"]["bind"]["options"]
    assert "measured: GPU: Synthetic GPU (test fixture, not a measurement)" in options
    rows = calculator.measured_rows(page.data.shown[0])
    assert rows and {row["dtype"] for row in rows} == {"bfloat16", "float32"}
    assert {row["width"] for row in rows} == {1024, 4096}  # rotated, graph replay, two batches or more


def test_a_datasheet_gpu_run_becomes_the_default():
    # a SYNTHETIC run named after a datasheet GPU
    page = calculator.build(site_data(make_run(name="NVIDIA H200")))
    assert page.extra["default"] == "NVIDIA H200"
    assert all(row["datasheet"] == "NVIDIA H200" for row in calculator.measured_rows(page.data.shown[0]))


def test_a_cpu_run_has_no_datasheet_twin():
    page = calculator.build(site_data(make_run(kind="cpu", slug="synthetic-cpu")))
    assert all(row["datasheet"] == "" for row in calculator.measured_rows(page.data.shown[0]))


def test_a_hostile_device_name_is_escaped():
    out = calculator.build(site_data(make_run(name=HOSTILE))).text()
    assert "<img" not in out


def test_a_dtype_the_device_lacks_says_so_instead_of_empty_axes():
    spec = calculator.build(site_data(empty=True)).sections["chart"][0].spec
    layers = [layer for panel in spec["vconcat"] for layer in panel["layer"]]
    notes = [row for layer in layers for row in layer.get("data", {}).get("values", []) if "words" in row]
    said = {(row["gpu"], row["dtype"]): row["words"] for row in notes}
    assert said[("NVIDIA T4", "bfloat16")] == "No bfloat16 rate for the NVIDIA T4: choose another dtype"
    assert ("NVIDIA A100 SXM4 80GB", "float8") in said  # an A100 has no FP8 tensor cores
    assert ("NVIDIA H100 SXM", "bfloat16") not in said


def test_each_preset_gives_the_numbers_predict_prints():
    """The presets' tables against `python -m benchmarks predict --json`, run as a reader would, from the command line
    each preset shows."""
    import json
    import shlex
    import subprocess
    import sys

    from benchmarks.site.pages import calculator as page_module
    from benchmarks.site.text import fmt_time, sig

    page = page_module.build(site_data(empty=True))
    shown = page.html("presets")
    commands = re.findall(r"<code>(python -m benchmarks predict [^<]+)</code>", shown)
    assert len(commands) == len(page_module.PRESETS) == 2
    for command in commands:
        argv = shlex.split(html.unescape(command))
        done = subprocess.run([sys.executable, *argv[1:], "--json"], capture_output=True, text=True, check=True)
        found = json.loads(done.stdout)
        unit = found["assumptions"]["throughput_unit"]
        for point in found["points"]:
            row = (
                f"<tr><td>{point['batch']:,}</td><td>{fmt_time(point['forecast_seconds'])}</td>"
                f"<td>{fmt_time(point['seconds'])}</td><td>{sig(point['forecast_throughput'])} {unit}</td>"
                f"<td>{point['bound']}</td></tr>"
            )
            assert row in shown, (command, row)
    assert "ResNet-50" in shown and "Llama-class decode step" in shown and "Predicted, not measured" in shown


def test_the_calculator_draws_the_ceiling_and_the_forecast_with_its_expected_error():
    page = calculator.build(site_data(empty=True))
    said = page.html("chart")
    error = calibration_file.committed().expected_for("GEMM", 1)
    assert "The solid line is the forecast, the dashed one the ceiling: " in said
    assert f"expected error ±{error.median * 100:.0f} % median, ±{error.p90 * 100:.0f} % at p90" in said
    spec = json.dumps(page.sections["chart"][0].spec)
    assert (
        "forecast_ms" in spec
        and "solid red: the forecast" in spec
        and "dashed blue:" in spec
        and "the ceiling, max(FLOPs" in spec
    )
    assert f'"error": {error.median}' in spec and "forecast_ms_low" in spec and '"type": "area"' in spec


def test_the_title_names_the_chosen_device_dtype_and_mlp():
    vl_convert = __import__("pytest").importorskip("vl_convert")
    spec = calculator.build(site_data(empty=True)).sections["chart"][0].spec
    assert all(name in spec["title"]["text"]["expr"] for name in ("gpu", "dtype", "layers", "layer_width"))
    svg = vl_convert.vegalite_to_svg(spec)  # what the exported PNG and SVG show: the default choice, named
    assert "NVIDIA H100 SXM" in svg and "bfloat16 · MLP of 8 layers, width 4096" in svg
