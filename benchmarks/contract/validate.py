"""Validate a parsed results or sweep document: the JSON Schema of its kind first, then the rules a
schema cannot say. The one entry point the strict reader (`benchmarks.contract.results`) uses.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from typing import Any

from benchmarks.contract.rules import document_rules
from benchmarks.contract.schema import KINDS, READABLE_VERSIONS, SCHEMA, describe_value, migrate, schema_problems
from benchmarks.contract.schema_sweep import SWEEP_SCHEMA, sweep_rules


def validate_document(doc: Any) -> list[tuple[str, str]]:
    """Every problem in a parsed results document, as (field path, message); [] if valid. The schema
    first, then the rules it cannot say (`benchmarks.contract.rules`): each workload's parameters, timing
    statistics that agree with their samples, dates in order, no duplicated points."""
    if not isinstance(doc, dict):
        return [("(document)", f"must be a JSON object, got {type(doc).__name__}")]
    version = doc.get("schema_version")
    if type(version) is not int or version not in READABLE_VERSIONS:
        shown = "missing" if "schema_version" not in doc else f"got {describe_value(version)}"
        readable = " or ".join(map(str, READABLE_VERSIONS))
        newer = type(version) is int and version > max(READABLE_VERSIONS)
        why = "a newer file needs a newer copy of this code" if newer else "is this a results file?"
        return [("schema_version", f"must be {readable} ({shown}); {why}")]
    doc = migrate(doc)
    kind = doc.get("kind")
    if "kind" in doc and kind not in KINDS:
        return [("kind", kind_problem(kind))]
    if kind == "sweep":
        return schema_problems(doc, SWEEP_SCHEMA, "") or sweep_rules(doc)
    problems = schema_problems(doc, SCHEMA, "")
    return problems or document_rules(doc)


SERVING_CHECK = "serving-check"  # a real-server check: its own contract (benchmarks.contract.serving_check)


def kind_problem(kind: object) -> str:
    """Why a document of `kind` is not a results file: a serving check belongs to its own reader, anything else
    is no kind this contract knows (told before any field, so a mistyped kind is not judged as another kind)."""
    if kind == SERVING_CHECK:
        return "is a real-server check (the kind kept under benchmarks/serving/), not a profile run or a sweep"
    known = ", ".join(repr(k) for k in (*KINDS, SERVING_CHECK))
    return f"must be one of {known}, got {describe_value(kind)}"
