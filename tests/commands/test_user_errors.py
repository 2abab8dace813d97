"""One kind of user error, caught once: whatever bad input or refusal a command lets through is one line, exit 2."""

from pathlib import Path

import pytest

from benchmarks.commands import cli
from benchmarks.contract.errors import UserError

ERRORS = [
    ("benchmarks.commands.choices", "Refused"),
    ("benchmarks.commands.fleet", "FleetError"),
    ("benchmarks.contract.inputs", "InputError"),
    ("benchmarks.contract.results", "ResultsError"),
    ("benchmarks.site.render", "PageDataError"),
    ("benchmarks.analysis.roofline.forecast", "CalibrationError"),
    ("benchmarks.site.data", "SiteDataError"),
    ("benchmarks.analysis.published.measurements_file", "PublishedDataError"),
    ("benchmarks.analysis.published.serving_figures", "ServingDataError"),
    ("benchmarks.analysis.serving.arrivals", "TraceError"),
    ("benchmarks.analysis.serving.batcher.service_curves", "SourceError"),
    ("benchmarks.analysis.serving.llm.measured_step", "NoMeasurement"),
    ("benchmarks.measure.session", "RunRefused"),
    ("benchmarks.measure.target", "TargetError"),
    ("benchmarks.measure.backends", "DeviceUnavailable"),
]


@pytest.mark.parametrize(("module", "name"), ERRORS)
def test_every_error_of_bad_input_is_a_user_error(module, name):
    import importlib

    assert issubclass(getattr(importlib.import_module(module), name), UserError)


def test_a_user_error_no_command_caught_is_one_line_and_exit_2(monkeypatch, capsys):
    from benchmarks.contract.results import ResultsError

    def broken() -> int:
        raise ResultsError(Path("/synthetic/x.json"), "run.id", "must name the file\x1b[31m")

    monkeypatch.setattr(cli, "_list", broken)
    assert cli.main(["list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: /synthetic/x.json") and "\x1b" not in err


def test_running_out_of_memory_is_one_line_and_exit_1(monkeypatch, capsys):
    def greedy() -> int:
        raise MemoryError

    monkeypatch.setattr(cli, "_list", greedy)
    assert cli.main(["list"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: out of memory")


def test_a_bad_time_limit_is_refused_by_main_in_one_line(capsys):
    assert cli.main(["run", "--time-limit", "0"]) == 2
    assert capsys.readouterr().err == "error: --time-limit 0: give a number of seconds above 0\n"
