"""One name per idea: every glossary link on the site points at a term, and every term has its anchor."""

import re
from pathlib import Path

from benchmarks.site.glossary import BY_SLUG, TERMS
from benchmarks.site.pages import glossary

ROOT = Path(__file__).resolve().parents[2]


def test_every_term_has_an_anchor_on_the_glossary_page():
    out = glossary.build().html("terms")
    for term in TERMS:
        assert f'<dt id="{term.slug}">' in out
    assert len(BY_SLUG) == len(TERMS), "two terms share a name"


def test_every_glossary_link_in_the_pages_names_a_term():
    linked = set()
    for page in (ROOT / "docs").glob("*.py"):
        linked |= set(re.findall(r"glossary/#([a-z0-9-]+)", page.read_text(encoding="utf-8")))
    assert linked and linked <= set(BY_SLUG), linked - set(BY_SLUG)


def test_see_links_are_named_as_the_navigation_names_their_pages():
    from benchmarks.site.glossary import TERMS
    from benchmarks.site.pages.glossary import page_titles

    titles = page_titles()
    assert titles["mlp/"] == "The MLP: latency against batch"
    assert len(titles) == len(list((ROOT / "docs").glob("*.py")))  # every page in the nav
    assert all(term.see in titles for term in TERMS if term.see)


def test_every_navigation_label_is_its_pages_title():
    from benchmarks.site.pages.glossary import page_titles

    for address, label in page_titles().items():
        source = ROOT / "docs" / f"{address.rstrip('/') or 'index'}.py"
        title = re.search(r"^# # (.+)$", source.read_text(encoding="utf-8"), re.M).group(1)
        assert label == title, f"{source.name}: the navigation says {label!r}, the page {title!r}"
