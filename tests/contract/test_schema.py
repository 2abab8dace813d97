import copy
import json
import math

import jsonschema
import pytest

from benchmarks.commands.cli import main
from benchmarks.contract.results import ResultsError, read_run
from benchmarks.contract.schema import SCHEMA, describe_fields
from benchmarks.contract.validate import validate_document


def test_synthetic_document_is_valid(synthetic_doc):
    assert validate_document(synthetic_doc) == []
    jsonschema.validate(synthetic_doc, SCHEMA)


def test_schema_itself_is_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def _broken(doc, mutate):
    doc = copy.deepcopy(doc)
    mutate(doc)
    return doc


def _set(path, value):
    def mutate(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _delete(path):
    def mutate(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


BAD_DOCUMENTS = [
    ("wrong schema_version", _set(["schema_version"], 99), "schema_version"),
    ("schema_version as text", _set(["schema_version"], "1"), "schema_version"),
    ("missing schema_version", _delete(["schema_version"]), "schema_version"),
    ("missing device", _delete(["device"]), "device"),
    ("missing device kind", _delete(["device", "kind"]), "device.kind"),
    ("unknown device kind", _set(["device", "kind"], "tpu"), "device.kind"),
    ("missing records", _delete(["records"]), "records"),
    ("missing record field", _delete(["records", 3, "flops"]), "records[3].flops"),
    ("zero median", _set(["records", 2, "median_s"], 0.0), "records[2].median_s"),
    ("negative median", _set(["records", 2, "median_s"], -1e-3), "records[2].median_s"),
    ("NaN median", _set(["records", 2, "median_s"], math.nan), "records[2].median_s"),
    (
        "infinite sample",
        _set(["records", 1, "timing", "samples_s"], [1e-3, math.inf]),
        "records[1].timing.samples_s[1]",
    ),
    ("zero batch", _set(["records", 0, "batch"], 0), "records[0].batch"),
    ("fractional batch", _set(["records", 0, "batch"], 1.5), "records[0].batch"),
    ("text batch", _set(["records", 0, "batch"], "4"), "records[0].batch"),
    ("boolean batch", _set(["records", 0, "batch"], True), "records[0].batch"),
    ("unknown status", _set(["records", 5, "status"], "fine"), "records[5].status"),
    ("ok without median", _set(["records", 4, "median_s"], None), "records[4].median_s"),
    ("oom without message", _set(["records", 4, "status"], "oom"), "records[4].message"),
    ("unknown mode", _set(["records", 4, "mode"], "compiled"), "records[4].mode"),
    ("negative bandwidth", _set(["ceilings", "copy", "bytes_per_s"], -5.0), "ceilings.copy.bytes_per_s"),
]


@pytest.mark.parametrize(("case", "mutate", "field"), BAD_DOCUMENTS, ids=[c[0] for c in BAD_DOCUMENTS])
def test_validator_names_the_offending_field(synthetic_doc, case, mutate, field):
    problems = validate_document(_broken(synthetic_doc, mutate))
    assert problems, case
    assert problems[0][0] == field


@pytest.mark.parametrize(("case", "mutate", "field"), BAD_DOCUMENTS, ids=[c[0] for c in BAD_DOCUMENTS])
def test_validate_command_rejects_bad_files(synthetic_doc, write_doc, capsys, case, mutate, field):
    doc = _broken(synthetic_doc, mutate)
    path = write_doc(json.dumps(doc, allow_nan=True))
    assert main(["validate", str(path)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{path}: {field}: ")


@pytest.mark.parametrize(
    ("content", "field", "words"),
    [
        ("", "(file)", "empty"),
        ("   \n", "(file)", "empty"),
        ("{not json", "(json)", "invalid JSON"),
        ("[1, 2, 3]", "(document)", "object"),
        ('"a string"', "(document)", "object"),
    ],
)
def test_unreadable_documents_are_named(write_doc, content, field, words):
    path = write_doc(content)
    with pytest.raises(ResultsError) as caught:
        read_run(path)
    assert str(caught.value).startswith(f"{path}: {field}: ")
    assert words in str(caught.value)


def test_validate_reports_every_bad_file_and_passes_good_ones(synthetic_doc, write_doc, capsys):
    good = write_doc(synthetic_doc)
    bad_a = write_doc("", name="empty.json")
    broken = _broken(synthetic_doc, _set(["records", 0, "batch"], -3))
    broken["run"]["id"] = "batch"
    bad_b = write_doc(broken)
    assert main(["validate", str(good)]) == 0
    assert main(["validate", str(good.parent)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert sorted(out) == sorted([f"{bad_a}: (file): is empty", f"{bad_b}: records[0].batch: must be >= 1, got -3"])


def test_field_reference_covers_the_required_names():
    paths = {row[0] for row in describe_fields()}
    for name in ["schema_version", "device", "device.kind", "device.name", "ceilings", "records"]:
        assert name in paths
    for name in ["workload", "params", "dtype", "mode", "batch", "status", "median_s", "flops", "bytes"]:
        assert f"records[].{name}" in paths
