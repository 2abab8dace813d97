"""The build's notebook pages run side by side (benchmarks/site/page_pool.py): the same HTML as one after another,
every kernel on sockets of its own, and a failing page's error by name. The notebooks are SYNTHETIC fixtures."""

import json
import pickle

import pytest

from benchmarks.site.page_pool import PageFailed, PagePool, workers

# what mkdocs-jupyter passes for every page of this site (mkdocs.yml)
OPTIONS = dict(execute=True, kernel_name="", theme="", allow_errors=False, show_input=True, no_input=False,
               no_prompt=True, remove_tag_config={}, highlight_extra_classes="", include_requirejs=False,
               custom_mathjax_url="")  # fmt: skip


def test_the_pages_run_at_once_are_the_cores_unless_told():
    assert workers({}) >= 1
    assert workers({"BATCHING_PAGE_WORKERS": "3"}) == 3
    for bad in ("0", "-2", "two", "1.5", ""):
        assert workers({"BATCHING_PAGE_WORKERS": bad}) == workers({})


def test_a_failed_page_keeps_its_name_and_value_across_processes():
    again = pickle.loads(pickle.dumps(PageFailed("PageDataError", "results/x.json: field device")))
    assert (again.ename, again.evalue) == ("PageDataError", "results/x.json: field device")


@pytest.mark.slow
def test_pages_run_side_by_side_give_what_one_after_another_gives(tmp_path):
    pytest.importorskip("mkdocs_jupyter", reason="the docs dependency group is not installed")
    from mkdocs_jupyter import convert

    pages = []
    for name, code in (("one", "print('SYNTHETIC page one', 6 * 7)"), ("two", "print('SYNTHETIC page two')")):
        page = tmp_path / f"{name}.py"
        page.write_text(f"# %% [markdown]\n# A SYNTHETIC page\n\n# %%\n{code}\n", encoding="utf-8")
        pages.append(str(page))
    failing = tmp_path / "failing.py"
    failing.write_text("# %%\nraise ValueError('SYNTHETIC failure')\n", encoding="utf-8")
    sockets = tmp_path / "sockets"
    pool = PagePool([*pages, str(failing)], sockets, tmp_path / "times.json", count=2)
    try:
        first = pool.convert(convert.nb2html, pages[0], **OPTIONS)
        assert "SYNTHETIC page one 42" in first
        assert "SYNTHETIC page two" in pool.convert(convert.nb2html, pages[1], **OPTIONS)
        with pytest.raises(PageFailed) as failed:
            pool.convert(convert.nb2html, str(failing), **OPTIONS)
        assert failed.value.ename == "ValueError" and "SYNTHETIC failure" in failed.value.evalue
    finally:
        pool.close(keep_times=True)
    assert sorted(p.name for p in sockets.iterdir()) == ["page-0", "page-1", "page-2"]
    assert set(json.loads((tmp_path / "times.json").read_text())) == {"one.py", "two.py"}
    alone = PagePool(pages, tmp_path / "alone", count=1)  # one at a time: converted in the build's own process
    assert "SYNTHETIC page one 42" in alone.convert(convert.nb2html, pages[0], **OPTIONS)
    assert not (tmp_path / "alone").exists()
