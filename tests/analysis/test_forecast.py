"""The forecast's fit and its leave-one-source-out cross-validation, on synthetic figures (labelled so: they never
reach a page) and on the committed calibration file."""

import json
import math
import random

import pytest

from benchmarks.analysis.roofline import calibration_file, forecast
from benchmarks.analysis.roofline.forecast import (
    LLM,
    MATMUL,
    NARROW,
    WIDE,
    CalibrationError,
    Efficiency,
    Parts,
    PublishedFigure,
    expected,
    fit,
    leave_one_source_out,
)
from benchmarks.contract.percentiles import nearest_rank


def synthetic(truth: Efficiency, n: int, source: str = "synthetic", family: str = LLM, seed: int = 0, **kw):
    """Figures whose published value is exactly the forecast under `truth` (synthetic, for tests only)."""
    rng = random.Random(seed)
    found = []
    for i in range(n):
        parts = Parts(rng.uniform(0.001, 0.02), rng.uniform(0.0, 0.02) * (i % 2), rng.choice([1, 16, 128]))
        ceiling = 1000.0
        probe = PublishedFigure(f"{source}-{i}", source, "decode", family, WIDE, "GPU", parts, ceiling, 1.0, "tokens/s",
                       False, True, **kw)  # fmt: skip
        found.append(PublishedFigure(**{**probe.__dict__, "published": probe.forecast(truth)}))
    return found


def test_the_fit_recovers_known_efficiencies_from_synthetic_figures():
    truth = Efficiency(0.62, 0.71, 0.0021)
    found = fit(synthetic(truth, 24)).efficiency(LLM, WIDE)
    assert found.memory == pytest.approx(truth.memory, rel=1e-3)
    assert found.compute == pytest.approx(truth.compute, rel=1e-3)
    assert found.fixed_s == pytest.approx(truth.fixed_s, rel=1e-2)


def test_a_group_without_figures_borrows_and_says_so():
    calibration = fit(synthetic(Efficiency(0.5, 0.8, 0.0), 10))
    assert calibration.fitted[forecast.group_name(MATMUL, NARROW)] == ()
    borrowed = calibration.efficiency(MATMUL, NARROW)
    assert borrowed.memory == pytest.approx(0.5, rel=1e-3) and borrowed.fixed_s == 0.0


def test_leave_one_source_out_never_fits_on_the_held_out_source():
    figures = [*synthetic(Efficiency(0.8, 0.8, 0.0), 8, "a"), *synthetic(Efficiency(0.8, 0.8, 0.0), 8, "b", seed=1),
               *synthetic(Efficiency(0.2, 0.2, 0.0), 4, "odd", seed=2)]  # fmt: skip
    given = []

    def spy(chosen):
        given.append({f.source for f in chosen})
        return fit(chosen)

    outcomes = leave_one_source_out(figures, fitter=spy)
    assert [s for s in ("a", "b", "odd")] == [next(iter({"a", "b", "odd"} - g)) for g in given]
    # fitted without it, the odd source is forecast at the others' efficiency: about 4× too fast
    odd = [o.error for o in outcomes if o.figure.source == "odd"]
    assert all(e == pytest.approx(0.8 / 0.2 - 1, rel=1e-2) for e in odd)


def test_a_leaky_cross_validation_would_be_caught():
    figures = [*synthetic(Efficiency(0.8, 0.8, 0.0), 8, "a"), *synthetic(Efficiency(0.2, 0.2, 0.0), 4, "odd", seed=2)]

    def leaky(chosen):
        return fit(figures)  # ignores what it was given: the held-out source is in the fit

    honest = [o.error for o in leave_one_source_out(figures) if o.figure.source == "odd"]
    leaked = [o.error for o in leave_one_source_out(figures, fitter=leaky) if o.figure.source == "odd"]
    assert min(abs(e) for e in honest) > 2 and max(abs(e) for e in leaked) < 2


def test_expected_error_is_the_median_and_nearest_rank_p90_of_absolute_errors():
    assert nearest_rank([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9) == 9
    assert nearest_rank([5], 0.9) == 5
    figures = synthetic(Efficiency(1, 1, 0), 5)
    outcomes = [
        forecast.HeldOutForecast(f, f.published * (1 + e)) for f, e in zip(figures, (0.1, -0.2, 0.3, -0.05, 0.5))
    ]
    found = expected(outcomes)
    assert found.median == pytest.approx(0.2) and found.p90 == pytest.approx(0.5)
    assert found.within_30 == pytest.approx(0.8) and expected([], "decode") is None


def test_the_error_by_source_keeps_each_sources_figures_apart():
    many = synthetic(Efficiency(1, 1, 0), 4, source="a table")  # four rows that one source published
    one = synthetic(Efficiency(1, 1, 0), 1, source="a post")
    errors = (0.05, -0.1, 0.1, 0.0, 0.8)
    outcomes = [forecast.HeldOutForecast(f, f.published * (1 + e)) for f, e in zip(many + one, errors)]
    (table, table_found, table_largest), (post, post_found, post_largest) = forecast.expected_by_source(outcomes)
    assert (table, table_found.figures, post, post_found.figures) == ("a table", 4, "a post", 1)
    assert table_found.median == pytest.approx(0.075) and table_largest == pytest.approx(0.1)
    assert post_found.median == pytest.approx(0.8) == post_largest and post_found.within_30 == 0
    assert expected(outcomes).median == pytest.approx(0.1)  # pooled, the table's four rows set the median


def test_the_error_is_also_given_apart_for_a_model_split_over_gpus():
    one = synthetic(Efficiency(1, 1, 0), 3, source="one")
    split = [
        PublishedFigure(**{**f.__dict__, "tensor_parallel": 4}) for f in synthetic(Efficiency(1, 1, 0), 2, source="tp")
    ]
    errors = (0.1, -0.1, 0.2, 0.9, -0.5)
    outcomes = [forecast.HeldOutForecast(f, f.published * (1 + e)) for f, e in zip(one + split, errors)]
    alone, apart = (
        expected(outcomes, "decode", forecast.ONE_GPU),
        expected(outcomes, "decode", forecast.TENSOR_PARALLEL),
    )
    assert (alone.figures, alone.scope, apart.figures, apart.scope) == (3, "one GPU", 2, "tensor parallel")
    assert alone.median == pytest.approx(0.1) and apart.median == pytest.approx(0.7) and apart.within_30 == 0
    assert expected(outcomes, "decode").figures == 5 and expected(outcomes, "decode").scope is None
    assert expected(outcomes, "prefill", forecast.ONE_GPU) is None


def test_a_tool_takes_the_error_of_its_own_case_and_falls_back_to_the_kinds():
    committed = calibration_file.read_calibration()
    pooled = committed.expected_for("decode")
    assert pooled.scope is None
    assert committed.expected_for("decode", 1).scope == "one GPU"
    assert committed.expected_for("decode", 8).scope == "tensor parallel"
    assert committed.expected_for("decode", 8).figures + committed.expected_for("decode", 1).figures == pooled.figures
    assert committed.expected_for("CNN", 2) == committed.expected_for("CNN")  # no CNN is split over GPUs: the kind's
    assert "decode figures split over GPUs (tensor parallel)" in forecast.expected_words(
        committed.expected_for("decode", 2), "decode"
    )


def test_a_forecast_never_beats_its_ceiling():
    committed = calibration_file.read_calibration()
    for e in committed.calibration.efficiencies.values():
        assert 0 < e.memory <= 1 and 0 < e.compute <= 1 and e.fixed_s >= 0


def test_a_bad_calibration_file_is_one_line_naming_the_field(tmp_path):
    doc = json.loads(calibration_file.CALIBRATION_FILE.read_text(encoding="utf-8"))
    name = next(iter(doc["groups"]))
    doc["groups"][name]["memory"] = 3
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(CalibrationError, match=rf"groups\.{name}\.memory: must be a number") as found:
        calibration_file.read_calibration(path)
    assert "\n" not in str(found.value)
    path.write_text("{", encoding="utf-8")
    with pytest.raises(CalibrationError, match="is not JSON"):
        calibration_file.read_calibration(path)
    doc = json.loads(calibration_file.CALIBRATION_FILE.read_text(encoding="utf-8"))
    doc["expected_error_by_scope"]["tensor parallel"]["decode"]["median"] = -1
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(CalibrationError, match=r"expected_error_by_scope\.tensor parallel\.decode\.median: must be"):
        calibration_file.read_calibration(path)
    doc["expected_error_by_scope"] = {"two GPUs": {}}
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(CalibrationError, match=r"expected_error_by_scope\.two GPUs: is not a field here"):
        calibration_file.read_calibration(path)


@pytest.mark.parametrize(
    "field, value, said",
    [("fitted", "yes", "fitted: must be true or false"), ("note", 7, "note: must be a string"),
     ("forecast", -1, "forecast: must be a number"), ("extra", 1, "extra: is not a field here")],
)  # fmt: skip
def test_a_bad_forecast_of_one_figure_is_one_line_naming_it(tmp_path, field, value, said):
    doc = json.loads(calibration_file.CALIBRATION_FILE.read_text(encoding="utf-8"))
    figure_id = next(iter(doc["forecasts"]))
    doc["forecasts"][figure_id][field] = value
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(CalibrationError, match=rf"forecasts\.{figure_id}\.{said}") as found:
        calibration_file.read_calibration(path)
    assert "\n" not in str(found.value)


def test_every_published_figure_has_its_committed_forecast_without_its_source():
    from benchmarks.analysis.published.calibration import committed_study

    forecasts = calibration_file.read_calibration().forecasts
    outcomes = committed_study().outcomes
    assert set(forecasts) == {o.figure.id for o in outcomes}
    for o in outcomes:
        f = forecasts[o.figure.id]
        assert (f.forecast, f.error, f.fitted, f.note) == (o.forecast, o.error, o.figure.fit, o.figure.note)


def test_time_figures_scale_up_and_rates_down():
    parts = Parts(0.01, 0.0, 1)
    rate = PublishedFigure("r", "s", "decode", LLM, WIDE, "GPU", parts, 100.0, 50.0, "tokens/s", False, True)
    time = PublishedFigure("t", "s", "decode", LLM, WIDE, "GPU", parts, 10.0, 20.0, "ms", True, True)
    half = Efficiency(0.5, 1, 0)
    assert rate.forecast(half) == pytest.approx(50) and time.forecast(half) == pytest.approx(20)
    assert math.isclose(rate.target_seconds(), 0.02) and math.isclose(time.target_seconds(), 0.02)
