"""Command line: `python -m benchmarks {run,sweep,doctor,predict,calibrate,serve,fleet,validate,summary,list,schema}`.

Only `run`, `sweep` and `doctor` import torch, and only once they have parsed their arguments, so `--help`,
`predict`, `validate`, `summary`, `list` and `schema` work on a machine without torch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from benchmarks.analysis.roofline import calibration_file
from benchmarks.commands import calibrate as calibrate_cli
from benchmarks.commands import doctor as doctor_cli
from benchmarks.commands import fleet
from benchmarks.commands import predict as predict_cli
from benchmarks.commands import sweep as sweep_cli
from benchmarks.commands.choices import Refused
from benchmarks.contract.errors import CommandFailed, run_command
from benchmarks.contract.kinds import kind_of
from benchmarks.contract.results import (
    DEFAULT_RESULTS_DIR,
    ResultsError,
    Run,
    load_json,
    read_document,
    result_files,
)
from benchmarks.contract.schema import SCHEMA
from benchmarks.contract.text import printable, printable_lines
from benchmarks.measure.estimate import MACHINES, describe, estimate_range
from benchmarks.profiles import PROFILES
from benchmarks.workloads import WORKLOADS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Measure latency against batch size and write versioned JSON results.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(commands)
    _add_validate(commands)
    _add_list(commands)
    _add_summary(commands)
    sweep_cli.add_parser(commands)
    doctor_cli.add_parser(commands)
    predict_cli.add_parser(commands)
    calibrate_cli.add_parser(commands)
    _add_serve(commands)
    fleet.add_parser(commands)
    _add_schema(commands)
    return parser


def _add_run(commands) -> None:
    run = commands.add_parser(
        "run",
        help="measure and write one results file",
        description="Measure the device's ceilings, then every workload of a profile at many batch "
        "sizes. The results file is rewritten atomically after each curve, so an interrupted run "
        "keeps what it measured. Progress goes to stderr on a terminal; the last line printed is "
        "the path of the results file.",
    )
    run.add_argument(
        "--profile",
        choices=["auto", *PROFILES],
        default="auto",
        help="what to measure: "
        + "; ".join(f"{p.name}: {p.description}" for p in PROFILES.values()).replace("%", "%%")
        + " (default auto: full on a GPU, quick on a CPU)",
    )
    run.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda"],
        default="auto",
        help="where to measure (default auto: CUDA when a GPU is visible, else the CPU)",
    )
    run.add_argument(
        "--only",
        nargs="+",
        metavar="WORKLOAD",
        choices=sorted(WORKLOADS),
        help=f"measure only these workloads ({', '.join(WORKLOADS)})",
    )
    run.add_argument(
        "--results-dir",
        type=sweep_cli.directory,
        metavar="DIR",
        help="where to write <device-slug>/<run-id>.json (default: benchmarks/results/; for the smoke profile a "
        "temporary directory, removed afterwards)",
    )
    run.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="CPU intra-op threads, fixed for the whole run and recorded (default: all cores but one)",
    )
    run.add_argument(
        "--cache",
        choices=["rotated", "resident"],
        default="rotated",
        help="rotated (default): cycle through weight copies totalling 3x the last-level cache, so "
        "every call reads its weights from memory; resident: one copy, reused (measures the cache)",
    )
    run.add_argument(
        "--allow-contended",
        action="store_true",
        help="measure even while another run measures this device (refused by default: two runs slow each other "
        "down); the results file then says contended",
    )
    run.add_argument(
        "--time-limit",
        type=float,
        metavar="SECONDS",
        help="end the run within this many seconds, with a complete file: after the ceilings, the cost model "
        "(see `list`) on this run's own ceilings plans fewer samples per point, then fewer batch sizes, and "
        "sampling stops when the time is up; the file records the limit and what was cut",
    )
    run.add_argument("--debug", action="store_true", help="print the traceback when the run fails")
    progress = run.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="show progress even when stderr is not a terminal",
    )
    progress.add_argument("--quiet", dest="progress", action="store_false", help="never show progress")


def _add_validate(commands) -> None:
    validate = commands.add_parser(
        "validate",
        help="check results files (profile runs, model sweeps, serving checks) and published-figure files",
        description="Exit 0 when every file is valid; otherwise print one line per bad file, naming "
        "the file and the offending field, and exit 1. Directories are searched for *.json.",
    )
    validate.add_argument("paths", nargs="+", type=Path, metavar="PATH")


def _add_list(commands) -> None:
    commands.add_parser(
        "list",
        help="show workloads, what each profile runs, and how long it should take",
        description="Show every workload with its parameters, what each profile measures, and each profile's "
        "estimated time on the machine it is written for, by part, from a stated cost model "
        "(benchmarks/measure/estimate.py).",
    )


def _add_summary(commands) -> None:
    summary = commands.add_parser(
        "summary",
        help="print a short table of results files",
        description="For each results file: device, run, wall time, ceilings, and per curve the number of ok "
        "points, the time at the smallest and largest batch, and the predicted and measured knee; for a model "
        "sweep, its table of batch sizes.",
    )
    summary.add_argument("paths", nargs="+", type=Path, metavar="PATH")


def _add_serve(commands) -> None:
    """`serve` parses its own arguments (benchmarks/commands/serve.py); this entry lists it in the help."""
    commands.add_parser(
        "serve",
        help="plan a dynamic-batching server (max batch, max delay, instances) from a batch curve",
        description="See `python -m benchmarks serve --help`.",
        add_help=False,
    )


def _add_schema(commands) -> None:
    schema = commands.add_parser(
        "schema",
        help="print the results-file JSON Schema",
        description="Print the JSON Schema that results files of that kind must satisfy (beyond it, "
        "`validate` checks the rules a schema cannot say).",
    )
    schema.add_argument(
        "--kind", choices=["profile", "sweep"], default="profile", help="a profile run (default) or a model sweep"
    )


def _run(args: argparse.Namespace) -> int:
    from benchmarks.measure.session import Terminated, sigterm_raises

    cores = os.cpu_count() or 1
    if args.time_limit is not None and not 0 < args.time_limit <= 7 * 24 * 3600:
        raise Refused(f"--time-limit {args.time_limit:g}: give a number of seconds above 0")
    if args.threads is not None and not 1 <= args.threads <= cores:
        raise Refused(f"--threads {args.threads}: choose 1 to {cores}, the cores of this machine")
    if args.profile == "smoke":
        return _smoke(args)
    with sigterm_raises():
        try:
            run, measure_all = _start(args)  # a refusal (device busy or absent) is main's one line
        except OSError as exc:
            raise CommandFailed(f"writing the results failed: {exc.strerror or exc}; no results file kept") from None
        except (KeyboardInterrupt, Terminated) as exc:
            print(f"\n{_stop_words(exc)} before any workload was measured; no results file kept", file=sys.stderr)
            return 130 if isinstance(exc, KeyboardInterrupt) else 143
        try:
            measure_all()
        except (KeyboardInterrupt, Terminated) as exc:
            return _stopped(run, _stop_words(exc), 130 if isinstance(exc, KeyboardInterrupt) else 143)
        except OSError as exc:
            return _stopped(run, f"writing the results failed: {exc.strerror or exc}", 1)
        except Exception as exc:
            if args.debug:
                traceback.print_exc()
            hint = "" if args.debug else " (run with --debug for the traceback)"
            return _stopped(run, f"{type(exc).__name__}: {str(exc)[:300]}", 1, f"crashed{hint}: ")
    timed = [r for r in run.doc["records"] if r["status"] == "ok"]
    if not timed:  # a run that measured nothing is not complete, so it never replaces a device's good run
        reasons = list(dict.fromkeys(r["message"] for r in run.doc["records"] if r["message"]))
        why = f"first: {reasons[0]}" if reasons else "no point was planned"
        return _stopped(run, f"measured nothing: none of {len(run.doc['records'])} points was timed ({why})", 1)
    error = run.finish(complete=True)
    if error is not None:
        return _stopped(run, f"writing the results failed: {error.strerror or error}", 1)
    bad = sum(r["status"] != "ok" for r in run.doc["records"])
    note = f", {bad} not ok (see their status and message)" if bad else ""
    print(f"measured {len(run.doc['records'])} points{note}", file=sys.stderr)
    print(run.path)
    return 0


def _start(args: argparse.Namespace):
    from benchmarks.measure.backends import DeviceUnavailable
    from benchmarks.measure.runner import start_run
    from benchmarks.measure.session import RunRefused

    profile = args.profile
    if profile == "auto":
        import torch

        profile = "full" if args.device != "cpu" and torch.cuda.is_available() else "quick"
    try:
        return start_run(
            profile_name=profile,
            device=args.device,
            only=args.only,
            results_dir=args.results_dir or DEFAULT_RESULTS_DIR,
            threads=args.threads,
            cache=args.cache,
            command=list(sys.argv),
            show_progress=sys.stderr.isatty() if args.progress is None else args.progress,
            allow_contended=args.allow_contended,
            time_limit_s=args.time_limit,
        )
    except DeviceUnavailable as exc:
        raise RunRefused(f"--device {args.device}: {exc}") from None


def _smoke(args: argparse.Namespace) -> int:
    """The smoke profile: PASS, FAIL or SKIP per code path; nothing written where results are published."""
    from benchmarks.measure.smoke import run_smoke

    published = DEFAULT_RESULTS_DIR.resolve()
    if args.results_dir is not None and args.results_dir.resolve().is_relative_to(published):
        raise Refused(f"--results-dir {args.results_dir}: the smoke profile's numbers are not measurements to "
                      f"publish; choose a directory outside {DEFAULT_RESULTS_DIR}")  # fmt: skip
    options = {
        "device": args.device,
        "only": args.only,
        "threads": args.threads,
        "cache": args.cache,
        "command": list(sys.argv),
        "show_progress": sys.stderr.isatty() if args.progress is None else args.progress,
        "allow_contended": args.allow_contended,
        "time_limit_s": args.time_limit,
    }
    try:
        return run_smoke(options, args.results_dir, DEFAULT_RESULTS_DIR)
    except KeyboardInterrupt:
        print("\nKeyboardInterrupt: smoke run stopped", file=sys.stderr)
        return 130


def _stop_words(exc: BaseException) -> str:
    return "SIGTERM: stopped by a signal" if type(exc).__name__ == "Terminated" else "KeyboardInterrupt: stopped"


def _stopped(run, why: str, code: int, prefix: str = "") -> int:
    """End an unfinished run: mark the file incomplete with the reason, say so in one line, print its path."""
    error = run.finish(complete=False, interrupted=why)
    kept = len(run.doc["records"])
    if error is None:
        print(f"\n{prefix}{why}; kept {kept} records, marked incomplete", file=sys.stderr)
    else:
        print(f"\n{prefix}{why}; the file keeps its last complete write ({error.strerror or error})", file=sys.stderr)
    print(run.path)
    return code


def _validate(args: argparse.Namespace) -> int:
    files = result_files(args.paths)
    if not files:
        raise CommandFailed("no .json files found under " + ", ".join(map(str, args.paths)))
    failures = 0
    for path in files:
        try:
            doc = load_json(path)
            named = kind_of(doc)
            if named is not None:  # a document that names its kind: a real-server check, a noise-scale measurement
                named.read(path)
            elif _published(doc):
                problem = _published_problem(path, doc)
                if problem:
                    failures += 1
                    print(printable(problem))
            elif _calibration(doc):
                problem = _calibration_problem(path)
                if problem:
                    failures += 1
                    print(printable(problem))
            else:
                read_document(path)
        except ResultsError as exc:
            failures += 1
            print(exc)
    if failures == 0:
        print(f"{len(files)} file(s) valid", file=sys.stderr)
    return 1 if failures else 0


def _published(doc: object) -> bool:
    """A published-figures file (benchmarks/published/): figures others published, not a results file."""
    return isinstance(doc, dict) and "measurements" in doc and "schema_version" not in doc


def _calibration(doc: object) -> bool:
    """The calibration fitted to the published figures (benchmarks/published/calibration.json)."""
    return isinstance(doc, dict) and {"groups", "expected_error"} <= set(doc) and "schema_version" not in doc


def _calibration_problem(path: Path) -> str | None:
    """What is wrong with a calibration file, checked by its own reader, in one line; None when it is valid."""
    from benchmarks.analysis.roofline.forecast import CalibrationError

    try:
        calibration_file.read_calibration(path)
    except CalibrationError as exc:
        return str(exc)
    return None


def _published_problem(path: Path, doc: dict) -> str | None:
    """What is wrong with a published-figures file, checked by its own reader (serving results, whose
    configuration states a load, or single measurements), in one line; None when it is valid."""
    from benchmarks.analysis.published.measurements_file import PublishedDataError, read_published

    rows = doc["measurements"] if isinstance(doc["measurements"], list) else []
    serving = any(isinstance(r, dict) and isinstance(r.get("configuration"), dict) and "load" in r["configuration"]
                  for r in rows)  # fmt: skip
    try:
        if not serving:
            read_published(path)
            return None
        from benchmarks.analysis.published.serving_figures import ServingDataError, read_serving
    except ImportError as exc:
        return f"{path}: (file): checking published serving results needs {exc.name or 'numpy'}"
    except PublishedDataError as exc:
        return str(exc)
    try:
        read_serving(path)
    except ServingDataError as exc:
        return str(exc)
    return None


def _list() -> int:
    print("Workloads:")
    for spec in WORKLOADS.values():
        print(f"  {spec.name:<8} {spec.description} ({spec.snippet})")
        for param in spec.params:
            print(f"           {param.name}: {param.description} (default {param.default}; {param.allowed()})")
    for profile in PROFILES.values():
        print(f"\nProfile {profile.name}: {profile.description}")
        for sweep in profile.sweeps:
            batches = sweep.batches
            settings = profile.settings(sweep)
            print(
                f"  {sweep.label():<44} dtypes {','.join(sweep.dtypes):<17} modes {','.join(sweep.modes):<12}"
                f" {len(batches)} batches from {batches[0]} to {batches[-1]};"
                f" {settings['rounds']} samples per point of at least {settings['min_sample_s'] * 1e3:g} ms"
                + (f"; cache {sweep.cache} whatever --cache says" if sweep.cache else "")
            )
        print("  (graph mode needs CUDA: a CPU run measures eager only)")
        machine = MACHINES[profile.name]
        print("\n".join(f"  {line}" for line in describe(estimate_range(profile, machine), machine)))
    return 0


def _summary(args: argparse.Namespace) -> int:
    from benchmarks.commands.summary import summary_lines, sweep_summary_lines

    failures = 0
    for path in result_files(args.paths):
        try:
            found = read_document(path)
        except ResultsError as exc:
            failures += 1
            print(exc)
            continue
        lines = summary_lines(found) if isinstance(found, Run) else sweep_summary_lines(found)
        print(printable_lines(lines) + "\n")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    """Run one command; bad input or a refusal (a UserError) that no command caught is one line and exit 2, and
    Ctrl-C anywhere one line and 130 (the measuring commands first keep what they measured)."""
    return run_command(_command, argv)


def _command(argv: list[str] | None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    if given and given[0] == "serve":  # its own parser: every refusal one line
        try:
            from benchmarks.commands import serve
        except ImportError as exc:  # numpy, which the serving simulators use; the measuring verbs need none
            raise Refused(f"serve needs {exc.name or 'a package'}: pip install {exc.name or 'numpy'}") from None

        return serve.main(given[1:])
    args = _parser().parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "validate":
        return _validate(args)
    if args.command == "list":
        return _list()
    if args.command == "summary":
        return _summary(args)
    if args.command == "sweep":
        return sweep_cli.run(args)
    if args.command == "doctor":
        return doctor_cli.run(args)
    if args.command == "predict":
        return predict_cli.run(args)
    if args.command == "fleet":
        return fleet.run(args)
    if args.command == "calibrate":
        return calibrate_cli.run(args)
    if args.kind == "sweep":
        from benchmarks.contract.schema_sweep import SWEEP_SCHEMA

        print(json.dumps(SWEEP_SCHEMA, indent=2, ensure_ascii=False))
        return 0
    print(json.dumps(SCHEMA, indent=2, ensure_ascii=False))
    return 0
