"""The committed data file of measurements others published, and its reader's one-line refusals."""

from __future__ import annotations

import copy
import json

import pytest

from benchmarks.analysis.published.measurements_file import PUBLISHED_FILE, PublishedDataError, read_published

REQUIRED = {
    "kipply-13b-a100-decode": (22.0, "ms/token"),
    "trtllm080-a100-llama7b-b256-128-128": (5353, "tokens/s"),
    "trtllm080-a100-llama7b-b16-2048-2048": (613, "tokens/s"),
    "mlperf40-dgxh100-resnet50-offline": (703770, "samples/s"),
    "mlperf40-dgxh100-resnet50-server": (584147.32, "samples/s"),
}


def spellings(value: float) -> set[str]:
    return {f"{value:g}", f"{value:,g}", f"{value:,.0f}", f"{value:.1f}", f"{value:.2f}", repr(value)}


def test_the_committed_file_holds_the_required_rows():
    rows = {row.id: row for row in read_published()}
    for name, (value, unit) in REQUIRED.items():
        assert (rows[name].value, rows[name].unit) == (value, unit), name
    assert rows["mlperf40-dgxh100-resnet50-server"].configuration["lengths"].startswith("p99 latency 13.92 ms")
    assert len(rows) >= 20


def test_every_figure_is_in_its_quote_and_every_row_cites_its_source():
    for row in read_published():
        assert any(spelling in row.quote for spelling in spellings(row.value)), row.id
        assert row.source.url.startswith("https://") and row.source.locator and row.source.date
        assert row.status in ("verified", "partly verified") and row.note
        assert (row.model is None) != (row.not_compared is None)


def test_rows_read_in_a_copy_say_so():
    partly = {row.source.short for row in read_published() if row.status == "partly verified"}
    assert {"Databricks", "the article"} <= partly


@pytest.fixture
def document() -> dict:
    return json.loads(PUBLISHED_FILE.read_text(encoding="utf-8"))


def refusal(tmp_path, doc) -> str:
    path = tmp_path / "measurements.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    with pytest.raises(PublishedDataError) as caught:
        read_published(path)
    said = str(caught.value)
    assert "\n" not in said and said.startswith(f"{path}: ")
    return said[len(f"{path}: ") :]


BREAKAGES = [
    (lambda r: r["source"].pop("url"), "measurements[0].source.url: is required but missing"),
    (lambda r: r["source"].update(url="http://kipp.ly/"), "measurements[0].source.url: must be an https address"),
    (lambda r: r["source"].update(url='https://x.org/"><script>'), "must be an https address"),
    (lambda r: r["source"].update(date="March 2022"), "measurements[0].source.date: must be a date"),
    (lambda r: r.update(value=-1), "measurements[0].value: must be a number above 0"),
    (lambda r: r.update(value="22"), "measurements[0].value: must be a number above 0"),
    (lambda r: r.update(unit="furlongs"), "measurements[0].unit: must be one of"),
    (lambda r: r.update(quote=""), "measurements[0].quote: must be non-empty text"),
    (lambda r: r.update(colour="red"), "measurements[0].colour: is not a field here"),
    (lambda r: r["verification"].update(status="trust me"), "measurements[0].verification.status: must be one of"),
    (lambda r: r.update(not_compared="both"), "measurements[0]: needs a model, or not_compared"),
    (lambda r: r.pop("model"), "measurements[0]: needs a model, or not_compared"),
    (lambda r: r["model"].update(kind="throughput"), "measurements[0].model.kind: throughput compares a figure in"),
    (lambda r: r["model"].update(gpu="TPU v5"), "measurements[0].model.gpu: 'TPU v5' is not in the datasheet"),
    (lambda r: r["model"].update(dtype="bfloat16", gpu="NVIDIA T4"), "measurements[0].model.dtype: must be one of"),
    (lambda r: r["model"]["params"].update(heads=7), "measurements[0].model.params.(params): heads (7) must divide"),
    (lambda r: r["model"]["params"].update(context=9), "measurements[0].model.params.context: is set from"),
    (lambda r: r["model"].pop("output_tokens"), "measurements[0].model.output_tokens: must be a whole number"),
    (lambda r: r["model"].update(departures=["gremlins"]), "measurements[0].model.departures[0]: must be one of"),
    (lambda r: r["model"].update(gpus=2), "measurements[0].model.parallelism: must be none for one GPU"),
    (lambda r: r["configuration"].pop("software"), "measurements[0].configuration.software: is required"),
    (lambda r: r.update(id="Kipply 13B"), "measurements[0].id: must be lower-case letters"),
]


@pytest.mark.parametrize(("breakage", "said"), BREAKAGES)
def test_a_malformed_row_fails_in_one_line_naming_file_and_field(tmp_path, document, breakage, said):
    broken = copy.deepcopy(document)
    breakage(broken["measurements"][0])
    assert said in refusal(tmp_path, broken)


def test_a_repeated_id_and_a_broken_file_are_refused(tmp_path, document):
    document["measurements"].append(copy.deepcopy(document["measurements"][0]))
    last = len(document["measurements"]) - 1
    assert refusal(tmp_path, document).startswith(f"measurements[{last}].id: 'kipply-13b-a100-decode' is the id of")
    assert refusal(tmp_path, "{not json").startswith("(json): is not JSON")
    assert refusal(tmp_path, "[]").startswith("(document): must be an object")
    assert refusal(tmp_path, {"about": "x", "measurements": []}) == "measurements: must be a non-empty list"
