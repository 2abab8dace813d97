"""The committed calibration is what a fresh fit of the committed published figures gives, and its figures meet
the issue's coverage: at least 40 figures over at least 4 GPUs and the four kinds of work."""

import json

import pytest

from benchmarks.analysis.published.calibration import committed_study
from benchmarks.analysis.roofline import calibration_file, forecast


@pytest.mark.slow
def test_the_committed_calibration_file_is_a_fresh_fit_of_the_published_figures():
    fresh = json.dumps(committed_study().to_json(), indent=1, ensure_ascii=False) + "\n"
    assert calibration_file.CALIBRATION_FILE.read_text(encoding="utf-8") == fresh, "run python -m benchmarks calibrate"


@pytest.mark.slow  # the whole study, 9 s on 2 cores
def test_the_figures_cover_forty_figures_four_gpus_and_every_kind():
    found = committed_study()
    assert len(found.figures) >= 40
    gpus = {f.gpu.split(" × ")[-1] for f in found.figures}
    assert len(gpus) >= 4 and {f.kind for f in found.figures} == set(forecast.KINDS)


def test_every_figure_is_forecast_without_its_own_source():
    found = committed_study()
    assert [o.figure.id for o in found.outcomes] == [f.id for f in found.figures]
    for o in found.outcomes:
        assert o.forecast > 0 and o.error == o.forecast / o.figure.published - 1
