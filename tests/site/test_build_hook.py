"""The build's chart exports and its line of where the time went (docs/hooks/site.py), on a SYNTHETIC chart."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("site_hook_exports", ROOT / "docs" / "hooks" / "site.py")
hook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hook)

pytest.importorskip("vl_convert", reason="the docs dependency group is not installed")

from benchmarks.site import chart_export  # noqa: E402

SPEC = {
    "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
    "data": {"values": [{"batch": 1, "ms": 2.0}, {"batch": 8, "ms": 3.0}]},
    "mark": "line",
    "encoding": {"x": {"field": "batch", "type": "quantitative"}, "y": {"field": "ms", "type": "quantitative"}},
    "title": "SYNTHETIC test fixture",
}


def _fixture(tmp_path: Path, spec: dict = SPEC, name: str = "fixture-chart") -> Path:
    path = tmp_path / "specs" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def test_an_export_drawn_once_is_taken_from_the_cache_the_next_time(tmp_path):
    cache = tmp_path / "cache"
    spec = _fixture(tmp_path)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    assert chart_export.export_all([spec], first, cache, workers=2) == 1
    assert chart_export.export_all([spec], second, cache, workers=2) == 0
    for ext in ("svg", "png"):
        assert (first / f"fixture-chart.{ext}").read_bytes() == (second / f"fixture-chart.{ext}").read_bytes()
    assert "<svg" in (second / "fixture-chart.svg").read_text(encoding="utf-8")
    spec = _fixture(tmp_path, dict(SPEC, title="SYNTHETIC test fixture, another title"))
    assert chart_export.export_all([spec], second, cache, workers=2) == 1  # another spec is drawn again
    assert len(list(cache.glob("*.svg"))) == 2


def test_a_cache_that_cannot_be_written_only_costs_time(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would be", encoding="utf-8")
    assert chart_export.export_all([_fixture(tmp_path)], tmp_path, blocked / "exports", workers=1) == 1
    assert (tmp_path / "fixture-chart.png").stat().st_size > 0


def test_many_charts_are_drawn_in_worker_processes_the_same_as_in_turn(tmp_path):
    """Past a few charts the drawing moves to spawned workers: the same files, byte for byte, as drawn here."""
    names = [f"fixture-chart-{n}" for n in range(10)]
    specs = [_fixture(tmp_path, dict(SPEC, title=f"SYNTHETIC test fixture {name}"), name) for name in names]
    for where, workers in (("here", 1), ("workers", 2)):
        (tmp_path / where).mkdir()
        assert chart_export.export_all(specs, tmp_path / where, tmp_path / f"cache-{where}", workers) == 10
    for name in names:
        for ext in ("svg", "png"):
            here, there = (tmp_path / where / f"{name}.{ext}" for where in ("here", "workers"))
            assert here.stat().st_size > 0 and here.read_bytes() == there.read_bytes(), (name, ext)
    assert len(list((tmp_path / "cache-workers").glob("*.png"))) == 10


def test_a_chart_that_cannot_be_drawn_is_named(tmp_path):
    broken = _fixture(tmp_path, {"mark": "line", "encoding": {"x": {"field": "a", "type": "nonsense"}}})
    with pytest.raises(chart_export.ExportFailed, match=r"^chart fixture-chart: cannot be exported: "):
        chart_export.export_all([broken], tmp_path, tmp_path / "cache", workers=1)


def test_the_time_line_names_the_slowest_pages_and_the_exports():
    times = {"(start)": 0.0, "serving.py": 33.6, "index.py": 1.2, "llm_serving.py": 56.9, "published.py": 19.3}
    line = hook.time_spent(times, 140.4, 20.2, 50, 4)
    assert line == (
        "site built in 140 s: 4 pages 111 s (slowest llm_serving.py 57 s, serving.py 34 s, published.py 19 s); "
        "54 charts exported in 20 s (50 drawn, 4 from .cache/exports/)"
    )
    side_by_side = hook.time_spent(times, 70.2, 20.2, 50, 4, workers=2)
    assert side_by_side.startswith("site built in 70 s: 4 pages 111 s, 2 at a time (slowest llm_serving.py 57 s")


def test_the_kernels_sockets_lie_in_the_directory_the_build_names(monkeypatch):
    """Not kernel-ipc-N in the working directory, where a second build of the checkout collides with this one."""
    from traitlets.config import Config

    source = (ROOT / "docs" / "hooks" / "jupyter" / "jupyter_nbconvert_config.py").read_text(encoding="utf-8")
    for named in ("/tmp/batching-kernels-test/kernel", None):
        config = Config()
        if named:
            monkeypatch.setenv(hook.KERNEL_IPC_ENV, named)
        else:
            monkeypatch.delenv(hook.KERNEL_IPC_ENV, raising=False)
        exec(compile(source, "jupyter_nbconvert_config.py", "exec"), {"get_config": lambda: config})  # noqa: B023
        assert config.KernelManager.transport == "ipc"
        assert config.KernelManager.get("ip") == named if named else "ip" not in config.KernelManager
