"""The glossary page: every term of `benchmarks.site.glossary`, each with its anchor."""

from __future__ import annotations

from benchmarks.site.glossary import TERMS, Term
from benchmarks.site.render import Html, Page, link, tag


def build() -> Page:
    return Page({"terms": [Html(tag("dl", [entry(t) for t in TERMS], class_="glossary"))]})


PAGE_TITLES = {  # a page's title in the navigation (mkdocs.yml), for "See ..." links
    "": "Home", "guide/": "Choosing your batch size", "theory/": "Theory", "mlp/": "MLP", "regimes/": "Three regimes",
    "steps/": "Batch-size steps", "moe/": "Mixture of experts", "cnn/": "CNNs", "decode/": "Transformer decode",
    "calculator/": "Calculator", "devices/": "Devices", "published/": "Against published results",
    "methodology/": "Methodology", "reproduce/": "Reproduce", "your_model/": "Your model",
}  # fmt: skip


def entry(term: Term) -> Html:
    see = [" See ", link(PAGE_TITLES[term.see], term.see), "."] if term.see else []
    return Html(tag("dt", term.name, id=term.slug) + tag("dd", [term.definition, *see]))
