"""The band beside a GPU prediction, in words: what share of the roofline published systems of the same kind of
work reached (`benchmarks.analysis.bands`), and the time to expect from it; or why there is no band.

Pure Python (no torch).
"""

from __future__ import annotations

from typing import Any

from benchmarks.analysis import bands
from benchmarks.analysis.bands import Band
from benchmarks.site import text

WHERE = "benchmarks/published/measurements.json"
NO_KIND = "no published figure is of this kind of work (published figures are decode steps, prefills and CNNs)"


def no_band_words(kind: str | None) -> str:
    """Why a prediction has no band."""
    if kind is None:
        return f"no band: {NO_KIND}, and no other kind's band is borrowed"
    n = len(bands.figures_for(kind))
    return (
        f"no band: {n} published {kind} figure{'' if n == 1 else 's'} that break{'s' if n == 1 else ''} no "
        f"assumption, fewer than the {bands.MIN_FIGURES} a band needs ({WHERE}); no other kind's band is borrowed"
    )


def band_words(found: Band) -> str:
    """'published decode steps reached 39–78 % of their roofline (median 58 %; 10 figures from 3 sources)'."""
    return (
        f"published {found.kind} figures reached {found.low * 100:.0f}–{found.high * 100:.0f} % of their roofline "
        f"(median {found.median * 100:.0f} %; {found.n} figures from {found.sources} sources that break none of its "
        f"assumptions, {WHERE})"
    )


def expected_words(seconds: float, found: Band) -> str:
    """'expect 1.2–2.5 ms, about 1.7 ms': the predicted time divided by the band's high, median and low share."""
    fast, typical, slow = found.expected_s(seconds)
    return f"expect {text.fmt_time(fast)}–{text.fmt_time(slow)}, about {text.fmt_time(typical)}"


def band_json(kind: str | None) -> dict[str, Any]:
    """The band of `kind` as a JSON-ready object: its shares and figures, or why there is none."""
    found = bands.band_for(kind)
    if found is None:
        return {"kind": kind, "band": None, "why": no_band_words(kind)}
    return {
        "kind": kind,
        "band": {"low": found.low, "median": found.median, "high": found.high, "n": found.n},
        "figures": [{"id": f.id, "source": f.source, "ratio": f.ratio} for f in found.figures],
        "from": WHERE,
    }


def chart_line(kind: str | None) -> str:
    """The band in a chart's subtitle: short enough for one line."""
    found = bands.band_for(kind)
    if found is not None:
        return (
            f"band: published {found.kind} figures reached {found.low * 100:.0f}–{found.high * 100:.0f} % of the "
            f"roofline ({found.n} figures)"
        )
    if kind is None:
        return "band: none (no published figure is of this kind of work; no other kind's band is borrowed)"
    n = len(bands.figures_for(kind))
    return f"band: none ({n} published {kind} figure{'' if n == 1 else 's'}, fewer than {bands.MIN_FIGURES})"
