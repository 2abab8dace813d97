"""Chart ids (and so their exported files' URLs) stay when a results file lands.

Draws every page's charts the way the docs build does (each docs/*.py notebook's page module, with the
figures staged as for the site) twice: from the committed results, then from the committed results
plus two more files, a newer run of a committed device and a new GPU device. Every chart of the first
build is in the second under the same id, on the same page, with the same caption, or its id is in
`links.MOVED` and the chart that replaced it is drawn. The added files are SYNTHETIC fixtures (a copy of
a committed run relabelled as a fixture, and tests.synthetic's GPU), written to a temporary directory.
"""

from __future__ import annotations

import inspect
import json
import re
import shutil
from pathlib import Path

import pytest

from benchmarks.site.charts import STAGE_ENV, links
from benchmarks.site.data import load_site_data, results_dir
from tests.synthetic import make_run

ROOT = Path(__file__).resolve().parents[2]
PAGE_IMPORT = re.compile(r"^from benchmarks\.site\.pages import (\w+)", re.M)
CAPTION = re.compile(r'<figure class="bchart" id="chart-([a-z0-9-]+)".*?<figcaption>.*?<strong>(.*?)</strong>', re.S)

pytest.importorskip("altair", reason="the docs dependency group is not installed")


def page_modules() -> dict[str, object]:
    """docs/<page>.py -> the page module its notebook builds."""
    import importlib

    found = {}
    for notebook in sorted((ROOT / "docs").glob("*.py")):
        match = PAGE_IMPORT.search(notebook.read_text(encoding="utf-8"))
        if match:
            found[notebook.stem] = importlib.import_module(f"benchmarks.site.pages.{match.group(1)}")
    return found


def charts_drawn(directory: Path, stage: Path, monkeypatch) -> dict[str, tuple[str, str]]:
    """chart id -> (page, caption) of every chart the site's pages draw from `directory`."""
    monkeypatch.setenv(STAGE_ENV, str(stage))  # as in a build: an id used twice fails
    data = load_site_data(directory, synthetic=True)
    drawn: dict[str, tuple[str, str]] = {}
    for page, module in page_modules().items():
        takes_data = "data" in inspect.signature(module.build).parameters
        out = (module.build(data) if takes_data else module.build()).text()
        for chart_id, caption in CAPTION.findall(out):
            assert chart_id not in drawn, f"chart id {chart_id} is drawn on {drawn[chart_id][0]} and {page}"
            drawn[chart_id] = (page, caption)
    return drawn


def newer_run_of(path: Path) -> dict:
    """A later run of the same device measuring the same things (a SYNTHETIC copy: labelled a fixture)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["run"]["id"] = "20991231T000000Z-fixture-rerun"
    doc["run"]["started_at"] = "2099-12-31T00:00:00+00:00"
    doc["run"]["finished_at"] = "2099-12-31T01:00:00+00:00"
    doc["run"]["synthetic"] = True
    return doc


@pytest.mark.slow
def test_chart_ids_stay_when_a_run_and_a_device_are_added(tmp_path, monkeypatch):
    committed = results_dir()
    before_data = load_site_data(committed)
    if not before_data.shown:
        pytest.skip("no results are committed")
    before = charts_drawn(committed, tmp_path / "stage-before", monkeypatch)

    after_dir = tmp_path / "results"
    shutil.copytree(committed, after_dir)
    newest = before_data.shown[0]
    rerun = newer_run_of(newest.path)
    gpu = make_run()
    for doc in (rerun, gpu):
        target = after_dir / doc["device"]["slug"] / f"{doc['run']['id']}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(doc), encoding="utf-8")
    after = charts_drawn(after_dir, tmp_path / "stage-after", monkeypatch)

    stayed = sorted(set(before) & set(after))
    gone = sorted(set(before) - set(after))
    print(f"\n{len(stayed)} chart ids stayed: {', '.join(stayed)}")
    print(f"moved: {', '.join(f'{old} -> {links.MOVED.get(old)}' for old in gone) or 'none'}")
    print(f"new with the added GPU: {', '.join(sorted(set(after) - set(before)))}")
    for chart_id in stayed:
        assert before[chart_id] == after[chart_id], f"{chart_id} now shows another chart: {after[chart_id]}"
    for chart_id in gone:
        assert chart_id in links.MOVED, f"chart {chart_id} ({before[chart_id]}) lost its id and has no redirect"
        assert links.MOVED[chart_id] in after, f"{chart_id} moves to {links.MOVED[chart_id]}, which is not drawn"
    assert any(chart_id.startswith("mlp-synthetic-gpu-") for chart_id in after), "the added GPU has its own charts"
