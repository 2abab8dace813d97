"""A file that validates always builds: the site's pages on files that once stopped the build, and a page that
fails all the same ends in one line naming the results file.

Every document here is a SYNTHETIC fixture (tests/synthetic.py, tests/synthetic_serving.py) with one thing
changed; the ones the site must show are relabelled as measurements only inside a temporary directory.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import altair as alt
import pytest

from benchmarks.contract.results import ModelSweep, newest_complete_runs, read_document
from benchmarks.contract.serving_check import ServingCheck, validate_serving_check
from benchmarks.site import charts
from benchmarks.site.pages import serving, serving_check, your_model
from benchmarks.site.render import PageDataError
from tests.synthetic import make_run, make_sweep
from tests.synthetic_serving import synthetic_check, write_check

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("site_hook_faults", ROOT / "docs" / "hooks" / "site.py")
hook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hook)


@pytest.fixture
def stage(tmp_path, monkeypatch):
    """A fresh chart stage, as in a site build (where a chart id used twice is an error)."""
    directory = tmp_path / "stage"
    monkeypatch.setenv(charts.STAGE_ENV, str(directory))
    return directory


def _sweep(run_id: str, started: str = "2026-01-01T00:00:00+00:00", **options) -> ModelSweep:
    doc = make_sweep(**options)
    doc["run"].update(id=run_id, started_at=started, finished_at=None, complete=False, interrupted="fixture")
    return ModelSweep(Path(f"/synthetic/{doc['device']['slug']}/{run_id}.json"), doc)


# ------------------------------------------------------------------------------------------------ item: ESC in names


def test_a_chart_stages_no_control_character_whatever_its_data(stage):
    rows = [{"device": "GPU\x1b[31m\u202e", "batch": 1, "seconds": 1e-3}]
    chart = alt.Chart(alt.Data(values=rows)).mark_point().encode(x="batch:Q", y="seconds:Q", color="device:N")
    charts.figure(chart.properties(title="from GPU\x1b]0;x\x07"), "test-control-characters", "A chart", "Fixture")
    staged = (stage / "test-control-characters.json").read_text(encoding="utf-8")
    spec = json.loads(staged)
    text = json.dumps(spec, ensure_ascii=False)
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert "GPU\\x1b[31m\\u202e" in json.dumps(spec["data"]["values"], ensure_ascii=False).replace("\\\\", "\\")


# ------------------------------------------------------------------------------------ item: every request failed


def _all_failed(doc: dict) -> dict:
    for run in doc["runs"]:
        n = len(run["requests"]["scheduled_s"])
        run["requests"].update(latency_s=[None] * n, arrived_s=[None] * n, batch=[None] * n)
        run["batches"] = {"size": [], "start_s": [], "service_s": []}
        run.update(failed=n, errors=["ConnectionRefusedError: refused (fixture)"])
    return doc


def test_a_serving_check_whose_every_request_failed_builds_and_says_so():
    doc = _all_failed(synthetic_check())
    assert validate_serving_check(doc) == []
    page = serving_check.build(ServingCheck(Path("/synthetic/synthetic-host/x.json"), doc))
    said = page.html("summary")
    assert "answered none of the requests" in said and "ConnectionRefusedError" in said
    assert page.sections["figure"] == [] and page.sections["table"] == []


# --------------------------------------------------------------------------- items: the newest serving check


def _measured(doc: dict, check_id: str, started: str, complete: bool = True) -> dict:
    finished = "2026-02-01T00:00:00+00:00" if complete else None
    doc["run"].update(id=check_id, started_at=started, finished_at=finished, complete=complete, synthetic=False)
    doc["run"]["interrupted"] = None if complete else "stopped after 1 of 42 runs (fixture)"
    return doc


def test_an_interrupted_check_never_replaces_a_complete_one(tmp_path):
    complete = _measured(synthetic_check(), "20260101T000000Z-serving-aaaaaa", "2026-01-01T00:00:00+00:00")
    cut = synthetic_check()
    cut["runs"] = cut["runs"][:1]
    write_check(tmp_path, complete)
    write_check(tmp_path, _measured(cut, "20260105T000000Z-serving-bbbbbb", "2026-01-05T00:00:00+00:00", False))
    assert serving_check.newest_check(tmp_path).id == "20260101T000000Z-serving-aaaaaa"


def test_a_check_that_answered_nothing_never_replaces_one_that_did(tmp_path):
    write_check(tmp_path, _measured(synthetic_check(), "20260101T000000Z-serving-aaaaaa", "2026-01-01T00:00:00Z"))
    failed = _all_failed(synthetic_check())
    write_check(tmp_path, _measured(failed, "20260105T000000Z-serving-bbbbbb", "2026-01-05T00:00:00+00:00"))
    assert serving_check.newest_check(tmp_path).id == "20260101T000000Z-serving-aaaaaa"


def test_the_newest_check_is_the_latest_instant_not_the_largest_string(tmp_path):
    # 09:00+09:00 is 00:00 UTC: three hours before 03:00 UTC, though its text sorts after it
    write_check(tmp_path, _measured(synthetic_check(), "20260102T000000Z-serving-aaaaaa", "2026-01-02T09:00:00+09:00"))
    write_check(tmp_path, _measured(synthetic_check(), "20260102T030000Z-serving-bbbbbb", "2026-01-02T03:00:00+00:00"))
    assert serving_check.newest_check(tmp_path).id == "20260102T030000Z-serving-bbbbbb"


def test_the_newest_run_of_a_device_is_the_latest_instant(write_doc):
    tokyo = make_run(run_id="tokyo", started_at="2026-01-02T09:00:00+09:00", widths=(1024,), hardware=False)
    utc = make_run(run_id="utc", started_at="2026-01-02T03:00:00+00:00", widths=(1024,), hardware=False)
    for doc in (tokyo, utc):
        doc["run"]["finished_at"] = "2026-01-03T00:00:00+00:00"
    runs = [read_document(write_doc(doc)) for doc in (tokyo, utc)]
    assert newest_complete_runs(runs, include_synthetic=True)["synthetic-gpu"].id == "utc"


# ------------------------------------------------------------------------------ item: ids differing in '.', '_', case


def test_sweeps_whose_ids_differ_only_in_dot_underscore_or_case_get_distinct_chart_ids(stage):
    sweeps = [
        _sweep("Run.A", "2026-01-03T00:00:00+00:00"),
        _sweep("run_a", "2026-01-02T00:00:00+00:00", seed=1),
        _sweep("run-a", "2026-01-01T00:00:00+00:00", seed=2),
    ]
    your_model.build(sweeps).text()  # raised "chart id ... is used twice"
    staged = sorted(p.stem for p in stage.glob("*-latency.json"))
    assert len(staged) == 3
    assert "sweep-synthetic-gpu-run-a-latency" in staged  # the oldest keeps the id it always had
    again = your_model.chart_bases(list(reversed(sweeps)))
    assert again == your_model.chart_bases(sweeps)  # the same ids whatever the order files were read in
    assert serving.capacity_chart_ids(sweeps)[sweeps[2]] == "serving-capacity-synthetic-gpu-run-a"


def test_a_committed_sweeps_chart_ids_do_not_change():
    sweep = _sweep("20260101T000000Z-sweep-000000")
    assert your_model.chart_bases([sweep]) == {sweep: "sweep-synthetic-gpu-20260101t000000z-sweep-000000"}


# ------------------------------------------------------------------------------------ item: batch above 65,536


@pytest.mark.slow  # the serving search tries every power of two up to 65,536 as max batch: about 100 s on 2 cores
def test_a_sweep_with_a_batch_above_65536_builds_the_serving_page(stage):
    sweep = _sweep("big", batches=(1, 2, 4, 1024, 65536, 131072), per_row_s=1e-7)
    page = serving.build([sweep], mlperf=None)
    assert page.sections["capacity"]


# ------------------------------------------------------------------------------------- item: one line per failure


def test_a_page_that_fails_on_a_file_names_it_in_one_line(monkeypatch, stage):
    sweep = _sweep("fails")

    def broken(doc):
        raise ValueError("min() arg is an empty sequence\n  and a second line")

    monkeypatch.setattr(your_model, "sweep_charts", broken)
    with pytest.raises(PageDataError) as caught:
        your_model.build([sweep])
    line = str(caught.value)
    assert line.startswith(f"{sweep.path}: ") and "\n" not in line and "ValueError: min() arg" in line


def test_a_device_section_that_fails_names_its_run(monkeypatch):
    from benchmarks.site.pages import mlp
    from tests.synthetic import site_data

    data = site_data(make_run())

    def broken(*_args, **_kwargs):
        raise ValueError("Invalid value (fixture)")

    monkeypatch.setattr(mlp, "measured_figure", broken)
    with pytest.raises(PageDataError) as caught:
        mlp.build(data)
    assert str(data.shown[0].path) in str(caught.value)


class _CellFailed(Exception):
    """What a notebook's failed cell raises: its error's name and value, and a long traceback."""

    def __init__(self, ename: str, evalue: str):
        super().__init__("\n".join(["-" * 70, *(f"frame {i}" for i in range(200)), f"{ename}: {evalue}"]))
        self.ename, self.evalue = ename, evalue


def test_the_build_stops_on_a_failed_page_in_one_line():
    class Page:
        file = type("File", (), {"src_uri": "devices.py"})()

        def render(self, config, files):
            raise _CellFailed("PageDataError", "/r/gpu/run.json: the file validates, but ...: ValueError: x")

    page = hook.on_pre_page(Page(), {}, None)
    with pytest.raises(hook.PluginError) as caught:
        page.render({}, None)
    assert str(caught.value) == "devices.py: /r/gpu/run.json: the file validates, but ...: ValueError: x"
    other = hook.failure_line("mlp.py", _CellFailed("KeyError", "'x'"))
    assert other == "mlp.py: the page's code failed: KeyError: 'x'"


def test_every_page_names_the_file_it_failed_on(monkeypatch, stage):
    doc = copy.deepcopy(synthetic_check())
    check = ServingCheck(Path("/synthetic/synthetic-host/broken.json"), doc)

    def broken(*_args, **_kwargs):
        raise IndexError("list index out of range")

    monkeypatch.setattr(serving_check, "compare", broken)
    with pytest.raises(PageDataError, match=r"^/synthetic/synthetic-host/broken.json: .*IndexError"):
        serving_check.build(check)


# -------------------------------------------------------------------------------- item: placeholders in data


def test_data_spelling_the_sites_placeholders_is_never_rewritten(stage):
    import html

    from benchmarks.site.charts import links
    from benchmarks.site.render import Paragraph, render

    spoof = "see __PAGE_URL__ or __SITE_URL__/evil or __SITE_ROOT__/x"
    rows = [{"device": spoof, "batch": 1, "seconds": 1e-3}]
    chart = alt.Chart(alt.Data(values=rows)).mark_point().encode(x="batch:Q", y="seconds:Q")
    built = render([Paragraph(spoof)]) + charts.figure(chart, "test-placeholders", spoof, spoof)._repr_html_()
    filled = links.absolute(built, "https://example.org/site/", "https://example.org/site/page/")
    filled = filled.replace(charts.SITE_ROOT, "../")
    assert "example.org/site/evil" not in filled and "https://example.org/site/page/ or" not in filled
    assert html.unescape(filled).count(spoof) >= 3  # the paragraph, the caption and its text alternative
    template = filled.split('<template class="bchart-spec" data-search-exclude>')[1].split("</template>")[0]
    assert spoof in json.loads(template)["data"]["values"][0]["device"]
    assert "https://example.org/site/page/" in filled  # the site's own placeholders are still filled in


@pytest.mark.slow
def test_the_serving_page_without_any_sweep_has_every_section_its_notebook_shows():
    import re as regex

    page = serving.build([], mlperf=None)
    shown = set(regex.findall(r'page\.show\("([a-z_]+)"\)', (ROOT / "docs" / "serving.py").read_text(encoding="utf-8")))
    assert shown <= set(page.sections), shown - set(page.sections)
