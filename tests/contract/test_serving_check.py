"""The real-server check's results files: the committed ones read, and a bad file is refused in one line naming
the file and the field."""

from __future__ import annotations

import copy
import json

import pytest

from benchmarks.contract.results import ResultsError
from benchmarks.contract.serving_check import DEFAULT_SERVING_DIR, read_serving_check, validate_serving_check
from tests.synthetic_serving import synthetic_check, write_check


@pytest.fixture(scope="module")
def good() -> dict:
    return synthetic_check()


def test_a_synthetic_file_reads_and_says_it_is_synthetic(tmp_path, good):
    check = read_serving_check(write_check(tmp_path, good))
    assert check.synthetic and len(check.runs) == 8 and check.id == good["run"]["id"]


def test_every_committed_file_reads_and_is_a_measurement():
    files = sorted(DEFAULT_SERVING_DIR.rglob("*.json"))
    assert files, "a real-server check is committed"
    for path in files:
        check = read_serving_check(path)
        assert not check.synthetic
        assert check.doc["server"]["max_ongoing_requests"] >= max(r["max_batch"] for r in check.runs)
        assert {r["handler"] for r in check.runs} == {"awaiting", "blocking"}
        assert len({r["repeat"] for r in check.runs}) >= 2


def refusal(tmp_path, doc, *, text: str | None = None) -> str:
    path = tmp_path / "synthetic-host" / "20260101T000000Z-serving-000000.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else json.dumps(doc), encoding="utf-8")
    with pytest.raises(ResultsError) as caught:
        read_serving_check(path)
    said = str(caught.value)
    assert "\n" not in said and said.startswith(f"{path}: ")
    return said[len(f"{path}: ") :]


def broken(good: dict, change) -> dict:
    doc = copy.deepcopy(good)
    change(doc)
    return doc


def _set(path: str, value):
    def change(doc):
        *parents, last = path.split(".")
        node = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value

    return change


CASES = {
    "runs.0.requests.latency_s.3": (-1.0, "runs[0].requests.latency_s[3]: must be > 0"),
    "runs.0.handler": ("sleeping", "runs[0].handler: must be one of"),
    "runs.1.max_batch": (0, "runs[1].max_batch: must be >= 1"),
    "runs.0.rate_per_s": ("fast", "runs[0].rate_per_s: must be number"),
    "server.auth_mode": ("open", "server.auth_mode: must be one of"),
    "server.name": ("Triton", "server.name: must be 'Ray Serve'"),
    "host.slug": ("../up", "host.slug: must match"),
    "run.id": ("../../etc", "run.id: must match"),
    "overhead.0.latency_s.0": (float("nan"), "overhead[0].latency_s[0]: must be a finite number"),
    "run.extra": ("x", "run.extra: is not an allowed field"),
    "kind": ("sweep", "kind: must be 'serving-check'"),
    "schema_version": (2, "schema_version: must be 1"),
}


@pytest.mark.parametrize("field", list(CASES))
def test_a_bad_field_is_named(tmp_path, good, field):
    value, expected = CASES[field]
    doc = broken(good, _set(field, value))
    text = json.dumps(doc, allow_nan=True)
    said = refusal(tmp_path, doc, text=text)
    assert expected in said, said


def test_rules_the_schema_cannot_say(tmp_path, good):
    run = good["runs"][0]
    first_batch = run["requests"]["batch"][0]

    def shorter(doc):
        doc["runs"][0]["requests"]["sent_s"].pop()

    assert "runs[0].requests.sent_s: has" in refusal(tmp_path, broken(good, shorter))

    def out_of_range(doc):
        doc["runs"][0]["requests"]["batch"][0] = len(run["batches"]["size"]) + 5

    assert "runs[0].requests.batch[0]: must index a batch" in refusal(tmp_path, broken(good, out_of_range))

    def too_big(doc):
        doc["runs"][0]["batches"]["size"][first_batch] = 17

    assert f"runs[0].batches.size[{first_batch}]: must not exceed max_batch" in refusal(tmp_path, broken(good, too_big))

    def half_answered(doc):
        doc["runs"][0]["requests"]["latency_s"][0] = None

    assert "runs[0].requests.batch[0]: latency_s, arrived_s and batch" in refusal(tmp_path, broken(good, half_answered))

    def miscounted(doc):
        doc["runs"][0]["failed"] = 3

    assert "runs[0].failed: must count" in refusal(tmp_path, broken(good, miscounted))

    def out_of_order(doc):
        scheduled = doc["runs"][0]["requests"]["scheduled_s"]
        scheduled[2] = scheduled[1] - 0.01

    assert "runs[0].requests.scheduled_s[2]" in refusal(tmp_path, broken(good, out_of_order))

    def twice(doc):
        doc["runs"][1]["name"] = doc["runs"][0]["name"]

    assert "runs[1].name: is also runs[0]'s" in refusal(tmp_path, broken(good, twice))

    def no_overhead(doc):
        doc["overhead"] = []

    assert refusal(tmp_path, broken(good, no_overhead)).startswith("overhead: must hold")

    def backwards(doc):
        doc["run"]["finished_at"] = "2025-01-01T00:00:00+00:00"

    assert refusal(tmp_path, broken(good, backwards)).startswith("run.finished_at: must not be before")


def test_a_file_that_is_not_json_or_not_there(tmp_path, good):
    assert refusal(tmp_path, good, text="{").startswith("(json): invalid JSON")
    assert refusal(tmp_path, good, text="").startswith("(file): is empty")
    assert refusal(tmp_path, good, text="[1]").startswith("(document): must be a JSON object")
    with pytest.raises(ResultsError, match="cannot be read"):
        read_serving_check(tmp_path / "missing.json")


def test_the_layout_is_checked(tmp_path, good):
    path = tmp_path / "elsewhere" / f"{good['run']['id']}.json"
    path.parent.mkdir()
    path.write_text(json.dumps(good))
    with pytest.raises(ResultsError, match=r"host\.slug: must name the file.s directory"):
        read_serving_check(path)
    assert read_serving_check(path, layout=False).id == good["run"]["id"]


def test_the_validator_lists_every_problem_of_a_file(good):
    doc = broken(good, _set("runs.0.max_batch", -1))
    doc["runs"][1]["handler"] = "x"
    assert len(validate_serving_check(doc)) >= 2


def _leaves(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:3]):
            yield from _leaves(value, (*path, index))
    else:
        yield path


@pytest.mark.slow
def test_mutated_files_are_read_or_refused_in_one_line_never_crash(tmp_path, good):
    """Any one field replaced by a value of another type or range: the reader accepts the file or raises
    ResultsError naming it, and what it accepts compares without error."""
    import random

    from benchmarks.analysis.serving.batcher.ray_serve_comparison import compare

    rng = random.Random(25)
    leaves = list(_leaves(good))
    strange = [None, -1, 0, 1e308, "x" * 2000, [], {}, True, 2**70, "2026-13-45T99:00:00", 17, 0.5]
    for _ in range(40):
        doc = copy.deepcopy(good)
        path = rng.choice(leaves)
        node = doc
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = rng.choice(strange)
        target = tmp_path / "synthetic-host" / "20260101T000000Z-serving-000000.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(doc))
        try:
            check = read_serving_check(target)
        except ResultsError as exc:
            assert "\n" not in str(exc)
            continue
        compare(check, seeds=1)


def test_the_validate_command_reads_serving_checks_with_their_own_reader(tmp_path, good, capsys):
    from benchmarks.commands.cli import main

    path = write_check(tmp_path, good)
    assert main(["validate", str(path)]) == 0
    bad = copy.deepcopy(good)
    bad["runs"][0]["max_batch"] = 0
    path.write_text(json.dumps(bad), encoding="utf-8")
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: runs[0].max_batch: ") and "device" not in out
