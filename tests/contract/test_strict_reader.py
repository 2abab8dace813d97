"""The strict reader: every case a hostile or broken results file tried, each one line naming file and field.

Every document here is a SYNTHETIC fixture (tests/synthetic.py) with one thing changed.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.analysis.roofline.tile_steps import CurvePoint, find_steps, median_stderr
from benchmarks.commands.cli import main
from benchmarks.contract.results import ResultsError, load_results, read_run
from tests.synthetic import make_run

XSS = "<img src=x onerror=alert(2)>[x](javascript:alert(3))"


def _record(doc, workload="mlp"):
    return next(r for r in doc["records"] if r["workload"] == workload)


CASES = [
    ("xss in a parameter", lambda d: _record(d)["params"].update(depth=XSS), "records[0].params.depth", "must be int"),
    ("a string width", lambda d: _record(d)["params"].update(width="1024"), "records[0].params.width", "must be int"),
    ("an unknown parameter", lambda d: _record(d)["params"].update(x=1), "records[0].params.x", "not a parameter"),
    ("an unknown workload", lambda d: _record(d).update(workload="gpt"), "records[0].workload", "must be one of"),
    ("a dtype in capitals", lambda d: _record(d).update(dtype="BFloat16"), "records[0].dtype", "must be one of"),
    ("a batch of 10^30", lambda d: _record(d).update(batch=10**30), "records[0].batch", "must be <="),
    ("a run id ending in a newline", lambda d: d["run"].update(id="run\n"), "run.id", "must not hold control"),
    ("a slug ending in a newline", lambda d: d["device"].update(slug="synthetic-gpu\n"), "device.slug", "must not"),
    ("a start that is no date", lambda d: d["run"].update(started_at="yesterday"), "run.started_at", "ISO 8601"),
    ("a date without its offset", lambda d: d["run"].update(started_at="2026-01-01T00:00:00"), "run.started_at", "ISO"),
    (
        "a finish before the start",
        lambda d: d["run"].update(finished_at="2025-01-01T00:00:00+00:00"),
        "run.finished_at",
        "before",
    ),
    (
        "a median outside its quartiles",
        lambda d: _record(d)["timing"].update(q1_s=1.0),
        "records[0].timing.median_s",
        "must not be below q1_s",
    ),
    (
        "a median that disagrees with its timing",
        lambda d: _record(d).update(median_s=_record(d)["median_s"] * 2),
        "records[0].median_s",
        "must equal",
    ),
    ("a duplicated point", lambda d: d["records"].append(dict(d["records"][0])), "records[", "same point"),
    (
        "a huge message",
        lambda d: _record(d).update(status="error", message="x" * 5000, median_s=None, timing=None),
        "records[0].message",
        "at most 1000 characters",
    ),
    (
        "a matmul ceiling for an unknown dtype",
        lambda d: d["ceilings"]["matmul"].update(fp4={}),
        "ceilings.matmul.fp4",
        "not a known key",
    ),
]


@pytest.mark.parametrize(("case", "mutate", "field", "words"), CASES, ids=[c[0] for c in CASES])
def test_each_bad_field_is_named(write_doc, case, mutate, field, words):
    doc = make_run()
    mutate(doc)
    path = write_doc(doc, name=f"{make_run()['run']['id']}.json", slug="synthetic-gpu")
    with pytest.raises(ResultsError) as caught:
        read_run(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {field}") and words in message, message
    assert "\n" not in message


def test_equal_samples_are_valid_and_steps_do_not_divide_by_zero(write_doc):
    doc = make_run()
    for record in doc["records"]:
        if record["workload"] == "linear" and record["timing"]:
            t = record["median_s"]
            record["timing"].update(samples_s=[t] * 5, q1_s=t, q3_s=t, min_s=t, max_s=t, median_s=t)
    read_run(write_doc(doc))
    points = [CurvePoint(b, 1e-3 * (1 + (b > 10)), median_stderr([1e-3] * 5)) for b in range(1, 21)]
    assert [(s.before, s.after) for s in find_steps(points)] == [(10, 11)]


def test_the_file_must_sit_where_a_results_directory_keeps_it(write_doc):
    doc = make_run()
    with pytest.raises(ResultsError, match=r"run\.id: must name the file"):
        read_run(write_doc(doc, name="renamed.json"))
    with pytest.raises(ResultsError, match=r"device\.slug: must name the file.s directory"):
        read_run(write_doc(doc, slug="elsewhere"))


def test_two_files_with_one_run_id_on_one_device(tmp_path, write_doc):
    first = write_doc(make_run())
    copy = tmp_path / "copy" / first.parent.name / first.name
    copy.parent.mkdir(parents=True)
    copy.write_text(first.read_text())
    report = load_results(tmp_path)
    assert len(report.runs) == 1 and len(report.errors) == 1
    assert "run.id: '20260101T000000Z-synthetic' of this device is also" in str(report.errors[0])


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[" * 200_000 + "]" * 200_000, "(json): is nested too deeply"),
        ('{"schema_version": 1, "n": ' + "9" * 5000 + "}", "(json): holds a value no results file has"),
    ],
    ids=["nested 200,000 deep", "an integer of 5,000 digits"],
)
def test_pathological_json_is_one_line_and_the_next_file_is_still_read(write_doc, capsys, text, words):
    bad = write_doc(text, name="bad.json")
    good = write_doc(make_run())
    assert main(["validate", str(bad.parent)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"{bad}: {words}" + out[0].split(words, 1)[1]] and str(good) not in out[0]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "validate", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr + done.stdout


def test_the_committed_results_pass_the_strict_reader():
    report = load_results()
    assert report.runs and not report.errors, [str(e) for e in report.errors]


def test_the_json_schema_still_describes_every_check_it_can():
    from benchmarks.contract.schema import SCHEMA

    text = json.dumps(SCHEMA)
    for word in ('"maxLength"', '"maximum"', '"format": "date-time"', '"propertyNames"'):
        assert word in text
