"""The glossary page: every term of `benchmarks.site.glossary`, each with its anchor."""

from __future__ import annotations

from benchmarks.site.glossary import TERMS, Term
from benchmarks.site.render import Html, Page, link, tag


def build() -> Page:
    return Page({"terms": [Html(tag("dl", [entry(t) for t in TERMS], class_="glossary"))]})


def entry(term: Term) -> Html:
    see = [" See ", link(term.see.strip("/").capitalize() or "Home", term.see), "."] if term.see else []
    return Html(tag("dt", term.name, id=term.slug) + tag("dd", [term.definition, *see]))
