"""The glossary page: every term of `benchmarks.site.glossary`, each with its anchor."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.site.glossary import TERMS, Term
from benchmarks.site.render import Html, Page, link, tag

MKDOCS_YML = Path(__file__).resolve().parents[3] / "mkdocs.yml"


def build() -> Page:
    titles = page_titles()
    return Page({"terms": [Html(tag("dl", [entry(t, titles) for t in TERMS], class_="glossary"))]})


def page_titles(config: Path = MKDOCS_YML) -> dict[str, str]:
    """Each page's address ("" for home, "mlp/") -> its title in the navigation, read from mkdocs.yml's
    `- "Title": page.py` lines (at any depth of its sections), so that a "See ..." link names a page as the
    navigation does."""
    entries = re.findall(r'^\s+- "?(.+?)"?: (\w+)\.py$', config.read_text(encoding="utf-8"), re.M)
    return {("" if page == "index" else f"{page}/"): title for title, page in entries}


def entry(term: Term, titles: dict[str, str]) -> Html:
    see = [" See ", link(titles[term.see], term.see), "."] if term.see else []
    return Html(tag("dt", term.name, id=term.slug) + tag("dd", [term.definition, *see]))
