"""Text from files is text: control, bidirectional and zero-width characters are refused in every text field
of a results file, a sweep and a serving check, in one line naming the file and the field; and what the
commands print from data reaches the terminal printable.

Every document here is a SYNTHETIC fixture with one string changed.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from benchmarks.commands import cli, serve
from benchmarks.commands import sweep as sweep_cli
from benchmarks.contract.results import ResultsError, read_document
from benchmarks.contract.serving_check import read_serving_check
from benchmarks.contract.text import printable, text_problem
from tests.synthetic import make_run, make_sweep
from tests.synthetic_serving import synthetic_check, write_check

HIDDEN = {
    "ESC": "\x1b[2J",
    "a C1 CSI": "\x9b31m",
    "a newline": "two\nlines",
    "a tab": "a\tb",
    "DEL": "a\x7fb",
    "NUL": "a\x00b",
    "a right-to-left override": "gpu\u202e100H",
    "a left-to-right embedding": "gpu\u202a",
    "a first-strong isolate": "gpu\u2068x\u2069",
    "a right-to-left mark": "gpu\u200f",
    "an Arabic letter mark": "gpu\u061c",
    "a zero-width space": "H\u200b200",
    "a zero-width joiner": "H\u200d200",
    "a word joiner": "H\u2060200",
    "a byte order mark": "\ufeffH200",
}


def _one_line(exc: ResultsError) -> str:
    line = str(exc)
    assert "\n" not in line and line.isprintable()
    return line


@pytest.mark.parametrize("what", sorted(HIDDEN))
def test_a_device_name_with_hidden_characters_is_refused(write_doc, what):
    doc = make_run(widths=(1024,), linear_batches=(1, 2), hardware=False)
    doc["device"]["name"] = f"Synthetic {HIDDEN[what]} (fixture)"
    path = write_doc(doc)
    with pytest.raises(ResultsError) as caught:
        read_document(path)
    line = _one_line(caught.value)
    assert str(path) in line and "device.name" in line and "control, bidirectional or zero-width" in line


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("run.command[0]", lambda d: d["run"].update(command=["python\x1b]0;owned\x07"])),
        ("records[0].message", lambda d: d["records"][0].update(status="error", message="bad\u202e", timing=None)),
        ("device.cpu_model", lambda d: d["device"].update(cpu_model="Xeon\u200b")),
        ("device.clocks_mhz.sm\\x1b", lambda d: d["device"].update(clocks_mhz={"sm\x1b": 1.0})),
    ],
)
def test_every_text_field_of_a_run_obeys_the_rule(write_doc, field, change):
    doc = make_run(widths=(1024,), linear_batches=(1, 2), hardware=False)
    change(doc)
    with pytest.raises(ResultsError) as caught:
        read_document(write_doc(doc))
    assert f": {field}: " in _one_line(caught.value)


@pytest.mark.parametrize("field", ["model.name", "model.target", "device.name"])
def test_a_sweep_with_hidden_characters_in_a_name_is_refused(write_doc, field):
    doc = make_sweep()
    part, name = field.split(".")
    doc[part][name] = "Model\u202e\x1b[31m"
    with pytest.raises(ResultsError) as caught:
        read_document(write_doc(doc))
    assert f": {field}: must not hold control" in _one_line(caught.value)


@pytest.mark.parametrize("field", ["host.name", "server.transport", "curve.label", "runs[0].errors[0]"])
def test_a_serving_check_with_hidden_characters_is_refused(tmp_path, field):
    doc = synthetic_check()
    if field == "runs[0].errors[0]":
        doc["runs"][0]["errors"] = ["timeout\x1b[8m"]
    else:
        part, name = field.split(".")
        doc[part][name] = "Ray\u2066 Serve\x9b"
    with pytest.raises(ResultsError) as caught:
        read_serving_check(write_check(tmp_path, doc))
    assert f": {field}: must not hold control" in _one_line(caught.value)


def test_ordinary_text_passes_and_lines_are_allowed_only_when_asked():
    assert text_problem("NVIDIA H200 · 141 GB µs ≥ 10 Å – 中文") is None
    assert text_problem("a\nb") and text_problem("a\nb", lines=True) is None
    assert text_problem("a\n\x1b", lines=True)


def test_printable_escapes_what_a_terminal_would_obey():
    assert printable("H200\x1b[2J\u202e\u200b\x9b") == "H200\\x1b[2J\\u202e\\u200b\\x9b"
    assert printable("plain · µs") == "plain · µs"


def _loud(*_args, **_kwargs) -> list[str]:
    return ["\x1b]0;title\x07 device \u202eevil"]


def test_summary_prints_what_it_read_printable(monkeypatch, write_doc, capsys):
    path = write_doc(make_run(widths=(1024,), linear_batches=(1, 2), hardware=False))
    monkeypatch.setattr("benchmarks.commands.summary.summary_lines", _loud)
    assert cli.main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\\x1b]0;title" in out


def test_sweep_prints_its_table_and_recommendation_printable(monkeypatch, capsys):
    monkeypatch.setattr("benchmarks.site.sweep_table.table_lines", _loud)
    assert sweep_cli._show(make_sweep(), SimpleNamespace(lines=_loud()), None) is None  # printed, nothing failed
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and out.count("\\u202eevil") == 2


def test_serve_prints_its_plan_printable(monkeypatch, tmp_path, capsys):
    doc = make_sweep()
    path = tmp_path / doc["device"]["slug"] / f"{doc['run']['id']}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    monkeypatch.setattr(serve, "text_lines", _loud)
    assert serve.main([str(path), "--rate", "100", "--budget-ms", "50", "--requests", "1000"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\\u202eevil" in out
