"""Each notebook shows every section its page module builds and no other, reads only objects the module passes,
and ends with the lesson it writes itself: checked on the committed data without building the site."""

import importlib
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = (
    "calculator", "devices", "guide", "llm_serving", "methodology", "mlp", "moe", "published", "regimes", "reproduce",
    "serving", "steps", "theory", "your_model",
)  # fmt: skip
SHOWN = re.compile(r"""page\.show\(\s*["']([^"']+)["']""")
READ = re.compile(r"""page\.extra\[\s*["']([^"']+)["']\s*\]""")


@pytest.mark.parametrize("name", PAGES)
def test_the_notebook_shows_what_its_page_module_builds(name):
    notebook = (DOCS / f"{name}.py").read_text(encoding="utf-8")
    page = importlib.import_module(f"benchmarks.site.pages.{name}").build()
    shown, read = SHOWN.findall(notebook), READ.findall(notebook)
    assert shown and set(shown) == set(page.sections), set(shown) ^ set(page.sections)  # none missing, none unshown
    assert set(read) <= set(page.extra), set(read) - set(page.extra)
    assert "takeaway" not in page.sections  # the lesson is the notebook's: it ends the page with show_takeaway
    assert notebook.count("page.show_takeaway(") == 1
    assert notebook.rindex("page.show_takeaway(") > max(notebook.rindex(f'page.show("{key}")') for key in shown)
