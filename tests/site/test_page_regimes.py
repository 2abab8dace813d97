"""The three-regimes page module on SYNTHETIC runs (labelled so; never published)."""

from benchmarks.site import render
from benchmarks.site.pages import regimes
from tests.synthetic import make_run, site_data

HOSTILE = "<img src=x onerror=alert(1)> (test fixture)"


def test_every_chart_of_a_run_with_ceiling_curves_and_cache_twins():
    page = regimes.build(site_data())
    out = page.text()
    for chart in ("bandwidth", "matmul", "modes", "cache-bfloat16-graph", "cache-bfloat16-eager", "weight-bandwidth"):
        assert f'id="chart-regimes-synthetic-gpu-{chart}"' in out
    assert "Bandwidth plateaus on GPU: Synthetic GPU" in out and "<td>memory</td>" in out
    assert "Square-matmul rate on GPU: Synthetic GPU" in out
    assert "The smallest MLP at batch 1 on GPU: Synthetic GPU" in out and "<td>8×64</td>" in out
    assert "time per op bounds the launch cost" in out
    assert "torch.compile (default mode) runs the 8×64 MLP at batch 1" in out
    assert "At batch 1 the resident loop reports" in out
    assert page.extra["tiny"].params["width"] == 64 and page.extra["tiny"].mode == "eager"


def test_the_device_is_introduced_once_and_headed_in_later_sections():
    page = regimes.build(site_data())
    assert page.html("ceilings").count(">GPU: Synthetic GPU (test fixture, not a measurement)</h3>") == 1
    assert "<h3>GPU: Synthetic GPU (test fixture, not a measurement) (GPU run)</h3>" in page.html("overhead")
    assert "<h3>GPU: Synthetic GPU (test fixture, not a measurement) (GPU run)</h3>" in page.html("cache")


def test_the_three_question_table_and_the_takeaways():
    page = regimes.build(site_data())
    signals = page.html("signals")
    assert "The three-question test on measured curves" in signals
    assert "8×64 bfloat16, resident" in signals and "<td>overhead</td>" in signals
    box = render.render([render.Bullets(page.takeaway_items)])
    assert "read bandwidth by where the data sits" in box
    assert "a CUDA graph saves" in box and "the cache trap is largest at width" in box
    assert "GPU: Synthetic GPU (test fixture, not a measurement): torch.compile (default mode)" in box
    assert page.html("no_ceiling_curves") == "" and not page.extra["cpu_only"]


def test_a_datasheet_gpu_compares_its_matmul_with_the_datasheet():
    # a SYNTHETIC run named after a datasheet GPU, so the datasheet column fills in
    out = regimes.build(site_data(make_run(name="NVIDIA H100 SXM"))).text()
    assert "989 TFLOP/s" in out  # the H100's dense bf16 peak
    assert "36%" in out  # the fixture's best bf16 rate, 400 TFLOP/s × 8192 / (8192 + 1024), against it


def test_a_run_without_hardware_curves_says_what_it_lacks():
    page = regimes.build(site_data(make_run(hardware=False)))
    out = page.text()
    assert "This run predates the ceiling curves" in out
    assert "This run has no MLP with resident weights in several modes." in out
    assert "No measurement with ceiling curves is committed yet." in page.html("no_ceiling_curves")
    assert "8×1024 bfloat16, rotated" in page.html("signals")  # the rotated curves still answer the test
    assert page.extra["tiny"] is None


def test_a_cpu_only_site_says_so():
    page = regimes.build(site_data(make_run(kind="cpu", slug="synthetic-cpu")))
    assert "time per op bounds the framework dispatch cost" in page.text()
    assert page.extra["cpu_only"]  # the notebook's lesson adds that a CPU has no CUDA graphs; the notice the rest


def test_no_runs_says_how_to_measure():
    page = regimes.build(site_data(empty=True))
    assert "No results are committed yet" in page.html("ceilings")
    assert page.html("overhead") == "" and page.html("cache") == ""
    assert "No MLP measurement is committed yet." in page.html("signals")
    assert "No measurement with ceiling curves is committed yet." in page.html("no_ceiling_curves")
    assert page.extra["tiny"] is None


def test_a_hostile_device_name_is_escaped():
    out = regimes.build(site_data(make_run(name=HOSTILE))).text()
    assert "<img" not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out
