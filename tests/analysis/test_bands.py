"""The band beside a GPU prediction: the share of the roofline published systems reached, by kind of work,
computed from the published data file and never typed in."""

from __future__ import annotations

import json
import statistics

import pytest

from benchmarks.analysis import bands
from benchmarks.analysis.published_check import BREAKS, checks
from benchmarks.analysis.published_file import PUBLISHED_FILE, read_published


def test_each_band_is_the_spread_of_its_kinds_figures_that_break_no_assumption():
    found = checks()
    for kind in bands.KINDS:
        chosen = [c for c in found if not set(c.row.model.departures) & BREAKS and bands.kind_of_check(c) == kind]
        band = bands.band_for(kind)
        if len(chosen) < bands.MIN_FIGURES:
            assert band is None  # too few figures: no band, and none borrowed
            continue
        ratios = [c.ratio for c in chosen]
        assert (band.low, band.median, band.high) == (min(ratios), statistics.median(ratios), max(ratios))
        assert [f.id for f in band.figures] == [c.row.id for c in chosen] and band.n == len(chosen)
        assert 0 < band.low <= band.median <= band.high < 1  # every one of them under its roofline


def test_the_committed_figures_give_decode_and_prefill_bands_and_no_cnn_band():
    decode, prefill = bands.band_for(bands.DECODE), bands.band_for(bands.PREFILL)
    assert decode.n >= 10 and decode.sources == 3 and 0.38 < decode.low < decode.high < 0.8
    assert prefill.n >= 3 and "kipply-13b-a100-prefill" in [f.id for f in prefill.figures]
    cnn = bands.figures_for(bands.CNN)
    assert [f.id for f in cnn] == ["mlperf40-dgxh100-resnet50-offline"]  # the Server figure is latency-bound
    assert bands.band_for(bands.CNN) is None


def test_a_generation_counts_under_the_phase_that_takes_most_of_its_predicted_time():
    by_id = {c.row.id: c for c in checks()}
    assert bands.kind_of_check(by_id["trtllm080-a100-llama7b-b32-128-2048"]) == bands.DECODE
    heavy = by_id["databricks-mpt7b-a100-static-b64"]
    assert heavy.prediction.prefill_s > heavy.prediction.seconds / 2
    assert bands.kind_of_check(heavy) == bands.PREFILL


def test_a_prediction_knows_its_kind_and_an_mlp_has_none():
    assert bands.kind_of("decode", {"phase": "decode"}) == bands.DECODE
    assert bands.kind_of("decode", {"phase": "prefill"}) == bands.PREFILL
    assert bands.kind_of("resnet50", {}) == bands.CNN and bands.kind_of("conv", {}) == bands.CNN
    for name in ("mlp", "linear", "moe"):
        assert bands.kind_of(name, {}) is None and bands.band_for(None) is None


def test_the_expected_time_divides_the_roofline_by_the_shares():
    band = bands.Band("decode step", 0.4, 0.5, 0.8, (bands.Figure("a", "s", 0.4),))
    assert band.expected_s(1.0) == pytest.approx((1.25, 2.0, 2.5))


def test_a_changed_data_file_changes_the_band(tmp_path):
    """Never typed in: drop a source's figures from the file and the decode band follows."""
    doc = json.loads(PUBLISHED_FILE.read_text(encoding="utf-8"))
    doc["measurements"] = [m for m in doc["measurements"] if not m["id"].startswith("databricks-")]
    path = tmp_path / "measurements.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    found = checks(read_published(path))
    without = bands.band(found, bands.DECODE)
    assert without.n == bands.band_for(bands.DECODE).n - 5 and without.low > bands.band_for(bands.DECODE).low
    assert bands.band(found, bands.PREFILL).n == bands.band_for(bands.PREFILL).n - 1
