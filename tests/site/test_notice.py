"""The site-wide CPU notice: there while every committed run is a CPU's, gone once a GPU run is committed."""

from benchmarks.site.charts import SITE_ROOT
from benchmarks.site.notice import cpu_line, cpu_notice
from tests.synthetic import make_run, site_data


def test_a_cpu_only_site_carries_the_notice_naming_the_cpu():
    out = cpu_notice(site_data(make_run(kind="cpu")))
    assert "These results come from a CPU" in out and "CPU: Synthetic GPU (test fixture, not a measurement)" in out
    # the ridge batches compared in the same dtype: the CPU's from its ceilings, the H100's from its datasheet
    assert "float32 from its measured ceilings, against ≈ 40 in float32 and ≈ 295 in bfloat16 on an NVIDIA H100" in out


def test_a_committed_gpu_run_removes_it_and_so_does_having_no_results():
    cpu = make_run(kind="cpu", slug="synthetic-cpu", run_id="r2")
    assert cpu_notice(site_data(make_run(), cpu)) == ""
    assert cpu_notice(site_data(empty=True)) == ""


def test_device_names_are_escaped():
    out = cpu_notice(site_data(make_run(kind="cpu", name="<b>x</b> (test fixture)")))
    assert "<b>x</b>" not in out and "&lt;b&gt;x&lt;/b&gt;" in out


def test_every_other_page_carries_one_line_linking_to_it():
    line = cpu_line(site_data(make_run(kind="cpu")))
    assert line.startswith('<p class="cpu-line">These results come from a CPU') and line.count("</p>") == 1
    assert f'href="{SITE_ROOT}reproduce/#cpu-results"' in line  # the hook resolves SITE_ROOT per page
    assert 'id="cpu-results"' in cpu_notice(site_data(make_run(kind="cpu")))
    assert cpu_line(site_data(make_run(), make_run(kind="cpu", slug="synthetic-cpu", run_id="r2"))) == ""
