"""`validate` and `summary` on every kind of file the project keeps: a mistyped kind is told as a kind, the
published-figure files are checked by their own readers, and `summary` on a sweep summarises it.

The files written here are SYNTHETIC fixtures or copies of the committed published-figure files with one field
changed."""

from __future__ import annotations

import json

from benchmarks.analysis.published.measurements_file import PUBLISHED_FILE
from benchmarks.analysis.published.serving_figures import SERVING_FILE
from benchmarks.commands.cli import main
from benchmarks.contract.results import DEFAULT_RESULTS_DIR
from tests.synthetic import make_sweep
from tests.synthetic_serving import synthetic_check, write_check


def test_a_serving_check_with_a_mistyped_kind_is_told_about_its_kind(tmp_path, capsys):
    doc = synthetic_check()
    doc["kind"] = "serving-chek"
    assert main(["validate", str(write_check(tmp_path, doc))]) == 1
    line = capsys.readouterr().out.strip()
    assert ": kind: must be one of 'profile', 'sweep', 'serving-check', got 'serving-chek'" in line
    assert "device" not in line


def test_a_serving_check_among_results_is_said_to_be_one(write_doc):
    from benchmarks.contract.results import ResultsError, read_document

    path = write_check(write_doc(make_sweep()).parent.parent, synthetic_check())
    try:
        read_document(path)
    except ResultsError as exc:
        assert exc.field == "kind" and "real-server check" in exc.message
    else:
        raise AssertionError("a serving check read as a results file")


def test_summary_on_a_sweep_summarises_it_and_names_no_function(write_doc, capsys):
    path = write_doc(make_sweep())
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "sweep 20260101T000000Z-sweep-000000 of SyntheticModel" in out and "read_" not in out


def test_validate_checks_the_published_figure_files_by_their_own_readers(capsys):
    assert main(["validate", str(PUBLISHED_FILE.parent)]) == 0  # the two figure files and the calibration
    assert "3 file(s) valid" in capsys.readouterr().err


def test_a_broken_calibration_file_is_one_line(tmp_path, capsys):
    doc = json.loads((PUBLISHED_FILE.parent / "calibration.json").read_text(encoding="utf-8"))
    doc["groups"] = "none"
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and str(path) in out and "groups" in out


def test_validate_on_the_whole_package_flags_nothing_committed(capsys):
    root = DEFAULT_RESULTS_DIR.parent
    assert main(["validate", str(root)]) == 0, capsys.readouterr().out


def test_a_bad_published_file_is_one_line_naming_its_field(tmp_path, capsys):
    for source, field in ((PUBLISHED_FILE, "measurements[0].source.url"), (SERVING_FILE, "measurements[0].source.url")):
        doc = json.loads(source.read_text(encoding="utf-8"))
        doc["measurements"][0]["source"]["url"] = "javascript:alert(1)"
        path = tmp_path / source.name
        path.write_text(json.dumps(doc), encoding="utf-8")
        assert main(["validate", str(path)]) == 1
        line = capsys.readouterr().out.strip()
        assert line.startswith(f"{path}: {field}: must be an https address") and "\n" not in line


def test_a_published_quote_may_span_lines_but_hide_nothing(tmp_path, capsys):
    doc = json.loads(PUBLISHED_FILE.read_text(encoding="utf-8"))
    doc["measurements"][0]["quote"] = "two\nlines"
    path = tmp_path / "measurements.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    doc["measurements"][0]["quote"] = "hidden \u202e text"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["validate", str(path)]) == 1
    assert "measurements[0].quote: must not hold control" in capsys.readouterr().out
