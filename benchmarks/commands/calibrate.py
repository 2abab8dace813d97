"""`python -m benchmarks calibrate`: fit the forecast's efficiencies to the published figures, cross-validate them
leaving one source out, and write benchmarks/published/calibration.json, the file every forecast reads.

Nothing is measured: the figures are the committed published ones (benchmarks/published/). The serving rows are
simulated, so this needs numpy; it says so in one line where there is none. Beside the published GPUs' errors it
prints the same forecast's error against the real engine measured on this project's CPU (the newest committed
engine check), which the fit never sees.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.roofline.forecast import TERM_WORDS, TERMS, percent
from benchmarks.commands.choices import Refused


def add_parser(commands) -> None:
    cmd = commands.add_parser(
        "calibrate",
        help="fit the forecast's efficiencies to the published figures and cross-validate them",
        description="Fit the few efficiencies a forecast needs (per family of work and precision) to the published "
        "figures of benchmarks/published/, forecast every figure without its own source, and write the "
        "efficiencies and each kind of work's expected error to benchmarks/published/calibration.json. "
        "Nothing is measured.",
    )
    cmd.add_argument(
        "--out",
        metavar="PATH",
        default=str(calibration_file.CALIBRATION_FILE),
        help="where to write (default: the above)",
    )
    cmd.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file differs from a fresh fit")


def run(args: argparse.Namespace) -> int:
    try:
        from benchmarks.analysis.published.calibration import committed_study
    except ImportError as exc:
        if getattr(exc, "name", "") == "numpy" or "numpy" in str(exc):
            raise Refused("calibrate needs numpy: pip install numpy") from None
        raise
    found = committed_study()
    text = json.dumps(found.to_json(), indent=1, ensure_ascii=False) + "\n"
    out = Path(args.out)
    if args.check:
        same = out.is_file() and out.read_text(encoding="utf-8") == text
        print(f"{out}: {'up to date' if same else 'differs from a fresh fit; run python -m benchmarks calibrate'}")
        return 0 if same else 1
    out.write_text(text, encoding="utf-8")
    for line in summary_lines(found):
        print(line)
    engine = engine_line(found.calibration)
    if engine:
        print(engine)
    print(out)
    return 0


def engine_line(calibration) -> str | None:
    """The same forecast against the real engine measured on this project's CPU (the newest committed engine check),
    beside the published GPUs' errors; None without such a check."""
    from benchmarks.analysis.serving.llm.engine_comparison import ENGINE_METRIC, forecast_against_engine
    from benchmarks.contract.engine_check import newest_engine_check

    check = newest_engine_check()
    found = None if check is None else forecast_against_engine(check, calibration)
    if found is None:
        return None
    return (
        f"decode on a real vLLM run on this project's CPU (engine check {found.check_id}, not fitted): {found.loads} "
        f"Poisson loads, median |error| {percent(found.median)}, p90 {percent(found.p90)}, "
        f"{percent(found.within_30)} within ±30 % ({ENGINE_METRIC}, the host's measured ceilings)"
    )


def summary_lines(found) -> list[str]:
    c = found.calibration
    lines = [f"{len(found.figures)} published figures from {found.sources} sources; {c.parameters} numbers fitted"]
    for name, e in c.efficiencies.items():
        terms = ", ".join(
            f"{t} {getattr(e, t) * (1e3 if t == 'fixed_s' else 1):.3g}{' ms' if t == 'fixed_s' else ''}"
            f"{'' if t in c.fitted[name] else ' (not fitted)' if t == 'fixed_s' else ' (borrowed)'}"
            for t in TERMS
        )
        lines.append(f"  {name} ({c.figures[name]} figures): {terms}")
    lines += [f"  {t}: {TERM_WORDS[t]}" for t in TERMS]
    for e in found.expected_table():
        name = e.kind if e.scope is None else f"  {e.kind}, {e.scope}"
        lines.append(f"{name}: {e.figures} figures, median |error| {percent(e.median)}, p90 {percent(e.p90)}, "
                     f"{percent(e.within_30)} within ±30 %")  # fmt: skip
    return lines
