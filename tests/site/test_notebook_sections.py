"""Each notebook shows every section its page module builds and no other, reads only objects the module passes,
and ends with the takeaway its page module writes: checked on the committed data without building the site."""

import importlib
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
MODULE = {"index": "home"}  # a notebook's page module, where the names differ
NO_TAKEAWAY = {"glossary"}  # a reference page: no lesson
HEAVY = {"llm_serving", "serving"}  # their pages simulate for 13–18 s on 2 cores: the full suite checks them
PAGES = [
    pytest.param(p, marks=pytest.mark.slow) if p in HEAVY else p for p in sorted(f.stem for f in DOCS.glob("*.py"))
]
SHOWN = re.compile(r"""\.show\(\s*["']([^"']+)["']""")
READ = re.compile(r"""page\.extra\[\s*["']([^"']+)["']\s*\]""")


@pytest.mark.parametrize("name", PAGES)
def test_the_notebook_shows_what_its_page_module_builds(name):
    notebook = (DOCS / f"{name}.py").read_text(encoding="utf-8")
    page = importlib.import_module(f"benchmarks.site.pages.{MODULE.get(name, name)}").build()
    shown, read = SHOWN.findall(notebook), READ.findall(notebook)
    assert sorted(shown) == sorted(page.sections), (shown, list(page.sections))  # each shown once, none unshown
    assert set(read) <= set(page.extra), set(read) - set(page.extra)
    if name in NO_TAKEAWAY:
        return
    assert "takeaway" not in page.sections  # the takeaway ends the page, with show_takeaway
    assert page.lesson.strip(), "the page module writes the takeaway's lesson"
    assert notebook.count("page.show_takeaway(") == 1 and "page.show_takeaway()" in notebook
    assert notebook.rindex("page.show_takeaway(") > max(notebook.rindex(f'page.show("{key}")') for key in shown)
