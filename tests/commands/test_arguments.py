"""The shared readers of numbers and lists: what each accepts, and the one wording of a refusal."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.commands.arguments import number, numbers, share, typed, whole, whole_numbers
from benchmarks.commands.choices import Refused


def refusal(read, *args, **options) -> str:
    with pytest.raises(Refused) as caught:
        read(*args, **options)
    return str(caught.value)


def test_whole_numbers_are_ascii_digits_inside_their_bounds():
    assert whole(" 16 ", "--tp", 1, 64) == 16
    assert refusal(whole, "65", "--tp", 1, 64) == "--tp '65': give a whole number from 1 to 64"
    for bad in ("\u0664", "1_000", "2.0", "-1", "", "1e3"):
        assert refusal(whole, bad, "--tp", 1, 64).startswith(f"--tp {bad!r}: give a whole number"), bad


def test_numbers_refuse_nan_and_the_infinities_and_say_whether_the_bound_is_inside():
    assert number("2.5", "--rate", 0, 10) == 2.5
    assert number("0", "--overhead-ms", 0) == 0
    assert refusal(number, "0", "--rate", 0, above=True) == "--rate '0': give a number above 0"
    assert refusal(number, "11", "--p", 0, 10, above=True) == "--p '11': give a number above 0 and at most 10"
    assert refusal(number, "-1", "--p", 0, 10) == "--p '-1': give a number from 0 to 10"
    for bad in ("nan", "inf", "-inf", "\u0661", "fast"):
        assert "give a number" in refusal(number, bad, "--p", 0), bad


def test_shares_run_from_0_to_1():
    assert share("0.25", "--hit") == 0.25
    for bad in ("1.5", "nan", "-0.1", "half"):
        assert refusal(share, bad, "--hit") == f"--hit {bad!r}: give a share from 0 to 1"


def test_lists_come_back_sorted_once_each_and_within_their_count():
    assert whole_numbers("64, 1,8,8", "--batch", 1, 100) == [1, 8, 64]
    assert "separated by commas" in refusal(whole_numbers, "1,,8", "--batch")
    assert refusal(whole_numbers, "0,8", "--batch", 1, 100) == "--batch '0,8': give whole numbers from 1 to 100"
    assert refusal(whole_numbers, "1,2,3", "--batch", most=2) == "--batch '1,2,3': give at most 2 values"
    assert numbers("5,0.5,5", "--rate", 0, above=True) == [0.5, 5.0]
    assert refusal(numbers, "1,2,3", "--rate", most=2) == "--rate '1,2,3': give at most 2 values"


def test_as_an_argparse_type_the_flag_is_named_once(capsys):
    parser = argparse.ArgumentParser(prog="x")
    parser.add_argument("--budget-ms", type=typed(number, 0, above=True))
    assert parser.parse_args(["--budget-ms", "5"]).budget_ms == 5.0
    with pytest.raises(SystemExit):
        parser.parse_args(["--budget-ms", "0"])
    assert "argument --budget-ms: '0': give a number above 0" in capsys.readouterr().err
