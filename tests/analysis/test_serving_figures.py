"""The published serving results file: read strictly, each quote holds its figure, and each row is predicted."""

import json
import math
import re

import pytest

from benchmarks.analysis.published.serving_figures import SERVING_FILE, ServingDataError, read_serving, serving_checks


def test_every_row_reads_and_quotes_its_own_figure():
    rows = read_serving()
    assert len(rows) >= 14
    for row in rows:
        if row.status == "verified":
            digits = f"{row.value:g}" if row.unit == "tokens/s" else None
            shown = [f"{row.value:,.0f}", f"{row.value:g}", f"{row.value:.2f}", digits,
                     str(round(row.value * 1e6))]  # fmt: skip
            assert any(s and s in row.quote for s in shown), row.id


def test_the_three_published_serving_checks_are_there():
    ids = {row.id for row in read_serving()}
    assert {"nim18-llama33-70b-2xh100-fp8-c100-itl", "trtllm-llama31-8b-fp8-h100-128-2048",
            "mlperf41-8xh200-llama2-70b-server-tokens"} <= ids  # fmt: skip


def _write(tmp_path, change):
    doc = json.loads(SERVING_FILE.read_text(encoding="utf-8"))
    change(doc["measurements"][0])
    path = tmp_path / "serving.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r.update(extra=1), "measurements[0].extra"),
        (lambda r: r["model"].update(model="GPT-9"), "measurements[0].model.model"),
        (lambda r: r["model"].update(figure="tokens_per_s"), "measurements[0].model.figure"),
        (lambda r: r["model"]["load"].update(rate_per_s=3), "measurements[0].model.load"),
        (lambda r: r["model"].update(prompt={"fixed": 10**6}), "measurements[0].model.prompt.fixed"),
        (lambda r: r["source"].update(url="http://x"), "measurements[0].source.url"),
        (lambda r: r.update(value=float("nan")), "measurements[0].value"),
    ],
)
def test_a_bad_row_is_refused_with_its_field(tmp_path, change, field):
    with pytest.raises(ServingDataError, match="serving.json: " + re.escape(field)):
        read_serving(_write(tmp_path, change))


@pytest.mark.slow
def test_every_row_is_predicted_and_the_model_is_not_slower_than_any_published_system():
    found = serving_checks()
    assert len(found) == len(read_serving())
    for check in found:
        assert math.isfinite(check.predicted) and check.predicted > 0
        # the roofline is an upper bound on speed: no published system beats it
        assert check.ratio < 1.0, check.row.id
