"""The reader's numbers and lists as every verb reads them: one reader per kind of value and one wording for a bad
one (`FLAG 'TEXT': give …`), called on a value as given or used as an argparse `type=` through `typed`.

Digits of other scripts are refused (int() and float() would read them), and so are NaN and the infinities.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from benchmarks.commands.choices import Refused


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage error is one line (a Refused, printed once by `main` with exit status 2) instead of the
    usage text: for the verbs that parse their own arguments."""

    def error(self, message: str):
        raise Refused(message)


def whole(text: Any, flag: str, low: int = 1, high: int = 10**9) -> int:
    """A whole number from `low` to `high`: '16' → 16."""
    t = str(text).strip()
    if not (t.isascii() and t.isdigit()) or not low <= int(t) <= high:
        raise Refused(f"{flag} {text!r}: give a whole number from {low:,} to {high:,}")
    return int(t)


def _float(text: Any) -> float:
    """The number written, or NaN for anything else (NaN fails every bound)."""
    try:
        return float(text) if str(text).isascii() else math.nan
    except ValueError:
        return math.nan


def number(text: Any, flag: str, low: float = 0.0, high: float = math.inf, *, above: bool = False) -> float:
    """A finite number from `low` to `high` (above `low` when `above`): '2.5' → 2.5."""
    value = _float(text)
    inside = (value > low if above else value >= low) and value <= high  # NaN is never inside
    if not (math.isfinite(value) and inside):
        start = f"above {low:g}" if above else f"from {low:g}"
        end = "" if high == math.inf else (f" and at most {high:g}" if above else f" to {high:g}")
        raise Refused(f"{flag} {text!r}: give a number {start}{end}")
    return value


def share(text: Any, flag: str) -> float:
    """A share from 0 to 1."""
    value = _float(text)
    if not 0 <= value <= 1:
        raise Refused(f"{flag} {text!r}: give a share from 0 to 1")
    return value


def whole_numbers(text: str, flag: str, low: int = 1, high: int = 10**9, *, most: int | None = None) -> list[int]:
    """Whole numbers separated by commas, each from `low` to `high`, at most `most` of them: sorted, once each."""
    parts = [part.strip() for part in str(text).split(",")]
    if not all(part.isascii() and part.isdigit() for part in parts):
        raise Refused(f"{flag} {text!r}: give whole numbers separated by commas, e.g. 1,8,64")
    values = sorted({int(part) for part in parts})
    if values[0] < low or values[-1] > high:
        raise Refused(f"{flag} {text!r}: give whole numbers from {low:,} to {high:,}")
    if most is not None and len(values) > most:
        raise Refused(f"{flag} {text!r}: give at most {most} values")
    return values


def numbers(text: str, flag: str, low: float = 0.0, high: float = math.inf, *, above: bool = False,
            most: int | None = None) -> list[float]:  # fmt: skip
    """Numbers separated by commas, each as `number` reads it, at most `most` of them: sorted, once each."""
    parts = [part.strip() for part in str(text).split(",")]
    if most is not None and len(parts) > most:
        raise Refused(f"{flag} {text!r}: give at most {most} values")
    return sorted({number(part, flag, low, high, above=above) for part in parts})


def typed(read: Callable[..., Any], *bounds: Any, **options: Any) -> Callable[[str], Any]:
    """`read` as an argparse type, e.g. `type=typed(whole, 1, 1024)`; argparse puts the flag before the words."""

    def parse(text: str) -> Any:
        try:
            return read(text, "", *bounds, **options)
        except Refused as exc:
            raise argparse.ArgumentTypeError(str(exc).strip()) from None

    parse.__name__ = getattr(read, "__name__", "value")  # argparse's words for a bad value name the type
    return parse
