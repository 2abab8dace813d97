"""`python -m benchmarks.commands.serving_check`: check the dynamic-batching simulator against a real server.

Without `--compare`, it measures: a Ray Serve cluster of its own on 127.0.0.1 (`benchmarks.measure.serving_check`;
about six minutes on two cores, `--quick` about one), written to `benchmarks/serving/<host>/<id>.json`; then it
compares. With `--compare FILE` it only reads a serving-check file (strictly) and prints measured against
simulated. Every bad input is one line on stderr and exit status 2.

Ray and torch are imported only when measuring (`nox -s serving-check` installs them); comparing needs numpy.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.commands.choices import Refused
from benchmarks.contract.errors import run_command
from benchmarks.contract.results import ResultsError
from benchmarks.contract.serving_check import DEFAULT_SERVING_DIR


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.commands.serving_check",
        description=(
            "Measure Ray Serve's dynamic batching (@serve.batch, both handler styles, several policies and rates, "
            "an open-loop Poisson client on 127.0.0.1), write a serving-check results file and compare it with "
            "the simulator; or, with --compare, compare a file already written."
        ),
    )
    parser.add_argument("--compare", type=Path, metavar="FILE", help="only compare this serving-check file")
    parser.add_argument("--quick", action="store_true", help="one policy and one rate per handler style (~1 minute)")
    parser.add_argument("--out", type=Path, default=DEFAULT_SERVING_DIR, help="results directory (%(default)s)")
    parser.add_argument("--curve", type=Path, help="sweep file whose measured curve the service follows")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    return parser


def _measuring_problem(args: argparse.Namespace) -> str | None:
    """Why measuring cannot start, in one line, checked before any cluster starts: the curve the service follows,
    the results directory, Ray and its Serve library."""
    from benchmarks.measure import serving_check as check
    from benchmarks.measure.session import RunRefused, check_writable

    curve = args.curve or check.default_curve()
    if curve is None:
        return f"--curve: no committed sweep of {check.MODEL_TARGET} to follow; give one"
    try:
        check.curve_table(curve, (check.QUICK if args.quick else check.FULL).max_batch)
    except ResultsError as exc:
        return f"--curve {exc}"
    try:
        check_writable(args.out, flag="--out")
    except RunRefused as exc:
        return str(exc)
    try:
        import ray  # noqa: F401
    except ImportError:
        return "measuring needs Ray: run `nox -s serving-check` (or install the serving-check group)"
    try:
        from ray import serve  # noqa: F401
    except ImportError as exc:
        return f"measuring needs Ray Serve, which this Ray lacks ({exc}): pip install 'ray[serve]'"
    return None


def main(argv: list[str] | None = None) -> int:
    return run_command(_main, sys.argv[1:] if argv is None else argv)


def _main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    path = args.compare
    if path is None:
        problem = _measuring_problem(args)
        if problem:
            raise Refused(problem)
        from benchmarks.measure import serving_check as check

        try:
            path = check.run_check(
                check.QUICK if args.quick else check.FULL,
                (args.curve or check.default_curve()).resolve(),
                args.out,
                ["python", "-m", "benchmarks.commands.serving_check", *argv],
            )
        except KeyboardInterrupt:
            print("serving check interrupted; the cluster is stopped", file=sys.stderr)
            return 130
    from benchmarks.analysis.serving.batcher.ray_serve_comparison import compare_file, format_table

    found = compare_file(path)  # a ResultsError is main's one line
    if args.json:
        print(json.dumps({"check": found.check.id, "overhead_s": found.overhead_s, "rows": found.table()}, indent=1))
    else:
        print(format_table(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
