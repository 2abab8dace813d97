"""The documents the contract reads by their `kind` field, keyed by it (each kind's reader: contract/documents.py)."""

from __future__ import annotations

from typing import Any

from benchmarks.contract.documents import DocumentKind
from benchmarks.contract.engine_check import ENGINE_CHECK_KIND
from benchmarks.contract.noise_scale import NOISE_SCALE_KIND
from benchmarks.contract.serving_check import SERVING_CHECK_KIND


def document_kinds() -> dict[str, DocumentKind]:
    """Every kind of document the contract reads by its `kind` field, keyed by it."""
    return {found.kind: found for found in (SERVING_CHECK_KIND, NOISE_SCALE_KIND, ENGINE_CHECK_KIND)}


def kind_of(doc: Any) -> DocumentKind | None:
    """The kind a parsed document names, when the contract reads that kind by its name; else None."""
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
        return None
    return document_kinds().get(doc["kind"])
