"""One strict reader for the results documents that name their kind (`"kind": ...`): a real-server check, a
noise-scale measurement. Each kind gives its schema, its rules and the class of a validated document; reading one is
the same everywhere: parse, check the kind and its schema version, the schema, the rules, then where the file sits
(`<host slug>/<id>.json`). A bad file is refused with one ResultsError naming the file and the field.

Profile runs and model sweeps, which predate the `kind` field, are read by `benchmarks.contract.results`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from benchmarks.contract.results import ResultsError, load_json
from benchmarks.contract.schema import schema_problems

Document = TypeVar("Document")
Problems = list[tuple[str, str]]


@dataclass(frozen=True)
class DocumentKind(Generic[Document]):
    """What one kind of document is: its name, version, schema and rules, and the class a valid one is read into."""

    kind: str
    version: int
    schema: dict[str, Any]
    rules: Callable[[dict[str, Any]], Problems]  # what the schema cannot say
    holds: str  # "real-server checks": what the reader reads, in its refusal of another kind
    document: Callable[[Path, dict[str, Any]], Document]

    def problems(self, doc: Any) -> Problems:
        """Every problem of a parsed document as (field path, message); [] when it is valid."""
        if not isinstance(doc, dict):
            return [("(document)", f"must be a JSON object, got {type(doc).__name__}")]
        if doc.get("kind") != self.kind:
            return [("kind", f"must be {self.kind!r}: this reader reads {self.holds} only")]
        if doc.get("schema_version") != self.version or type(doc.get("schema_version")) is not int:
            return [("schema_version", f"must be {self.version} for a {self.kind} file")]
        return schema_problems(doc, self.schema, "") or self.rules(doc)

    def read(self, path: Path | str, *, layout: bool = True) -> Document:
        """Parse and validate one file, or raise ResultsError naming the file and the field. With `layout`, the file
        must also sit where its directory keeps it: `<host slug>/<run id>.json`."""
        path = Path(path)
        doc = load_json(path)
        problems = self.problems(doc)
        if problems:
            where, message = problems[0]
            raise ResultsError(path, where, message, more=len(problems) - 1)
        run_id, slug = doc["run"]["id"], doc["host"]["slug"]
        if layout and path.name != f"{run_id}.json":
            raise ResultsError(path, "run.id", f"must name the file: {run_id!r} is not the file's name")
        if layout and path.parent.name != slug:
            raise ResultsError(path, "host.slug", f"must name the file's directory: {slug!r} is not it")
        return self.document(path, doc)
