"""One reader for the documents that name their kind: each kind read the same way, by the same code."""

import json

import pytest

from benchmarks.contract.documents import DocumentKind
from benchmarks.contract.engine_check import KIND as ENGINE_CHECK
from benchmarks.contract.kinds import document_kinds, kind_of
from benchmarks.contract.noise_scale import KIND as NOISE_SCALE
from benchmarks.contract.results import ResultsError
from benchmarks.contract.serving_check import KIND as SERVING_CHECK


def test_every_kind_is_keyed_by_the_name_its_documents_carry():
    kinds = document_kinds()
    assert set(kinds) == {SERVING_CHECK, NOISE_SCALE, ENGINE_CHECK}
    assert all(isinstance(k, DocumentKind) and k.kind == name for name, k in kinds.items())
    assert kind_of({"kind": NOISE_SCALE}) is kinds[NOISE_SCALE]
    assert kind_of({"kind": "profile"}) is None and kind_of({"kind": ["noise-scale"]}) is None and kind_of([]) is None


@pytest.mark.parametrize("name", [SERVING_CHECK, NOISE_SCALE])
def test_each_kind_refuses_another_kind_and_a_wrong_version_in_one_line(tmp_path, name):
    reader = document_kinds()[name]
    other = next(k for k in document_kinds() if k != name)
    path = tmp_path / "x.json"  # SYNTHETIC documents, refused before anything else is read
    path.write_text(json.dumps({"kind": other, "schema_version": 1}), encoding="utf-8")
    with pytest.raises(ResultsError) as refused:
        reader.read(path)
    assert f"kind: must be {name!r}: this reader reads {reader.holds} only" in str(refused.value)
    path.write_text(json.dumps({"kind": name, "schema_version": True}), encoding="utf-8")
    with pytest.raises(ResultsError) as refused:
        reader.read(path)
    assert f"schema_version: must be {reader.version} for a {name} file" in str(refused.value)
    assert "\n" not in str(refused.value)
