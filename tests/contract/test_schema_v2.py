"""Schema version 2: documents say their kind; version 1 files read as profile runs; model sweeps."""

import copy

import pytest

from benchmarks.commands.cli import main
from benchmarks.contract.results import ResultsError, load_results, read_run, read_sweep
from benchmarks.contract.schema import SCHEMA_VERSION
from benchmarks.contract.validate import validate_document
from tests.synthetic import make_sweep


def test_a_version_1_file_reads_as_a_profile_run(synthetic_doc, write_doc):
    old = copy.deepcopy(synthetic_doc)
    old["schema_version"] = 1
    del old["kind"]
    run = read_run(write_doc(old))
    assert run.doc["schema_version"] == SCHEMA_VERSION == 2 and run.doc["kind"] == "profile"


def test_a_newer_file_is_refused_in_one_line(synthetic_doc, write_doc):
    newer = {**synthetic_doc, "schema_version": 3}
    with pytest.raises(ResultsError, match=r"schema_version: must be 1 or 2 \(got 3\); a newer file needs a newer"):
        read_run(write_doc(newer))
    assert validate_document({**synthetic_doc, "schema_version": 2.0})[0][0] == "schema_version"


def test_a_sweep_validates_and_is_read_as_a_sweep(write_doc):
    path = write_doc(make_sweep())
    sweep = read_sweep(path)
    assert sweep.doc["kind"] == "sweep" and len(sweep.points) == 7
    with pytest.raises(ResultsError, match="is a model sweep, not a profile run"):
        read_run(path)
    assert main(["validate", str(path)]) == 0


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        (lambda d: d["points"].append(copy.deepcopy(d["points"][0])), "points[7].batch", "is also points[0]"),
        (lambda d: d["points"][0].update(percentile_s=None), "points[0].percentile_s", "must be set when status is ok"),
        (lambda d: d["points"][1].update(status="error"), "points[1].message", "must explain a 'error' status"),
        (lambda d: d["points"][0].update(bytes_low=1e30), "points[0].bytes_low", "must be <="),
        (lambda d: d["points"][0].update(stage="guess"), "points[0].stage", "must be one of"),
        (lambda d: d["settings"].update(percentile=75), "settings.percentile", "must be one of"),
        (lambda d: d["model"].pop("target"), "model.target", "is required but missing"),
    ],
)
def test_a_broken_sweep_is_refused_naming_the_field(write_doc, change, where, message):
    doc = make_sweep()
    change(doc)
    with pytest.raises(ResultsError) as caught:
        read_sweep(write_doc(doc))
    assert caught.value.field == where and message in caught.value.message


def test_loading_results_puts_sweeps_aside(synthetic_doc, write_doc, tmp_path):
    write_doc(synthetic_doc)
    write_doc(make_sweep())
    report = load_results(tmp_path)
    assert len(report.runs) == 1 and len(report.sweeps) == 1 and not report.errors
