"""The shared chart builders: labels that never print on top of each other, one ridge per distinct rate."""

from __future__ import annotations

import itertools

from benchmarks.gpus import find_gpu
from benchmarks.site import charts


def test_ridges_once_per_distinct_rate():
    ridges = dict(charts.gpu_ridges([find_gpu("NVIDIA H100 SXM"), find_gpu("NVIDIA T4")]))
    assert set(ridges) == {"H100 SXM bf16/fp16", "H100 SXM fp32", "T4 fp16", "T4 fp32"}
    assert round(ridges["H100 SXM bf16/fp16"]) == 295  # 989.4 TFLOP/s ÷ 3.35 TB/s


def test_labels_on_one_side_keep_their_distance_and_close_values_share_one():
    values = [("a", 10.0), ("b", 10.5), ("c", 12.0), ("d", 14.0), ("e", 30.0), ("f", 31.0), ("g", 100.0)]
    min_ratio = 1.4
    marks = charts.spaced_labels(values, min_ratio)
    labels = " ".join(m["label"] for m in marks)
    assert all(name in labels for name, _ in values), "every value is named"
    assert "a 10.0 · b 10.5" in labels and "e 30.0 · f 31.0" in labels
    for side in ("left", "right"):
        placed = [m["value"] for m in marks if m["side"] == side]
        assert all(high / low >= min_ratio for low, high in itertools.pairwise(placed))


def test_intensity_chart_is_vega_lite_with_labels_on_both_sides():
    gpus = [find_gpu(n) for n in ("NVIDIA T4", "NVIDIA A100 SXM4 80GB", "NVIDIA H100 SXM", "NVIDIA H200")]
    spec = charts.gpu_intensity_chart(gpus, 4096, "intensity").to_dict()
    aligns = {layer["mark"].get("align") for layer in spec["layer"] if layer["mark"].get("type") == "text"}
    assert aligns == {"left", "right"}


def _grid_lines(svg: str) -> list[bool]:
    """Each drawn grid line of the y axis in an SVG from vl-convert: whether it shows (opacity above zero)."""
    import re

    grids = [part.split("</g>", 1)[0] for part in svg.split('class="mark-rule role-axis-grid"')[1:]]
    lines = [line for grid in grids for line in re.findall(r"<line[^>]*>", grid) if 'y2="0"' in line]  # horizontal
    return [not re.search(r'(stroke-)?opacity="0"', line) for line in lines]


def test_a_log_axis_draws_grid_lines_at_powers_of_ten_only():
    vl_convert = __import__("pytest").importorskip("vl_convert")
    import altair as alt

    rows = [{"x": x, "y": y} for x, y in ((1, 1.5), (2, 40), (3, 900))]  # SYNTHETIC: spans three decades
    chart = alt.Chart(alt.Data(values=rows)).mark_line().encode(x="x:Q", y=alt.Y("y:Q", scale=alt.Scale(type="log")))
    spec = charts.legible(chart.to_dict())
    svg = vl_convert.vegalite_to_svg(spec)
    shown = _grid_lines(svg)
    assert sum(shown) == 4  # 1, 10, 100 and 1000 (the domain, made nice, ends there)
    assert len(shown) > sum(shown), "the 2…9 ticks between the decades keep no grid line"
    listed = alt.Y("y:Q", scale=alt.Scale(type="log"), axis=alt.Axis(values=[2, 20, 200]))
    kept = charts.legible(alt.Chart(alt.Data(values=rows)).mark_line().encode(x="x:Q", y=listed).to_dict())
    assert "gridOpacity" not in kept["encoding"]["y"]["axis"], "an axis that lists its values keeps its grid"


def test_point_labels_on_the_llm_front_never_print_on_top_of_each_other():
    from benchmarks.site.charts import llm_serving

    # SYNTHETIC: two GPUs whose fronts coincide, so each point's label would print twice
    rows = [
        {"gpu": gpu, "concurrency": c, "per_user": 100 / c**0.5, "total": 100 * c**0.5}
        for gpu in ("A", "B")
        for c in (1, 2, 4, 8, 16, 32, 64, 128, 256)
    ]
    kept = llm_serving.labelled_points(rows, 340)
    assert len({(r["per_user"], r["total"]) for r in kept}) == len(kept), "one label per place"
    assert {r["concurrency"] for r in kept} >= {1, 256}, "each line's ends are labelled"
    spec = llm_serving.front_chart(rows, "t", ["s"]).to_dict()
    texts = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert len(texts[0]["data"]["values"]) == len(kept) < len(rows)


def test_no_ridge_rule_runs_through_the_label_above_another():
    import math

    gpus = [find_gpu(n) for n in ("NVIDIA T4", "NVIDIA A100 SXM4 80GB", "NVIDIA H100 SXM", "NVIDIA H200")]
    spec = charts.gpu_intensity_chart(gpus, 4096, "intensity").to_dict()
    rules = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "rule")
    low, high = rules["encoding"]["y"]["scale"]["domain"]
    px = sorted(charts.HEIGHT * math.log(r["value"] / low) / math.log(high / low) for r in rules["data"]["values"])
    assert all(b - a >= charts.NOTE_PX for a, b in itertools.pairwise(px)), px


def test_a_plateaus_label_sits_between_the_cache_rules_that_cross_the_plot():
    from benchmarks.site.charts import hardware

    label = hardware.labelled_hline([{"gb_per_s": 40.0, "label": "read"}], "gb_per_s", crossing=[0.3, 0.85])[1]
    assert label.to_dict()["encoding"]["x"]["value"] == {"expr": "width * 0.8500"}  # the widest stretch: 0.3–0.85
    alone = hardware.labelled_hline([{"gb_per_s": 40.0, "label": "read"}], "gb_per_s")[1]
    assert alone.to_dict()["encoding"]["x"]["value"] == "width"
