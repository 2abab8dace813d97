"""`python -m benchmarks sweep TARGET`: the command line of a model sweep.

Parsing and checking arguments needs no torch; the sweep itself imports it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.analysis.roofline import recommend
from benchmarks.commands import sweep_watch
from benchmarks.commands.arguments import number, typed, whole
from benchmarks.commands.choices import Refused
from benchmarks.contract.errors import CommandFailed, UserError
from benchmarks.contract.results import DEFAULT_SWEEPS_DIR, ResultsError, load_json, write_atomic
from benchmarks.contract.sweep_options import DTYPES, options_problem, report_problem
from benchmarks.contract.text import printable, printable_lines
from benchmarks.site import sweep_words


def directory(text: str) -> Path:
    """A directory named on the command line; an empty name (which would mean the working directory) is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError("give a directory (an empty name would write into the current one)")
    return Path(text)


_positive_int = typed(whole, 1)
_positive_float = typed(number, 0, above=True)


def _batches(text: str) -> list[int] | None:
    if text == "auto":
        return None
    try:
        values = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give auto or batch sizes such as 1,8,32") from None
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: batch sizes are whole numbers from 1")
    return values


def _shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give one sample's shape, e.g. 3,224,224") from None
    if any(side < 1 for side in shape):
        raise argparse.ArgumentTypeError(f"{text!r}: every side must be at least 1")
    return shape


def add_parser(commands) -> None:
    sweep = commands.add_parser(
        "sweep",
        help="sweep your own model over batch sizes and recommend one",
        description="Time any PyTorch model at many batch sizes on this machine and say which batch size to use, "
        "and why: the largest within a latency budget, the highest throughput, the free range, the memory limit, "
        "and what bounds the curve (overhead, memory or compute) against this device's measured ceilings. TARGET is "
        "path/to/file.py:factory or package.module:factory; the factory returns the model, or (model, "
        "make_input) where make_input(batch) returns a tensor, a tuple of arguments or a dict of keyword arguments "
        "with the batch first. The results file is rewritten after every stage; the last line printed is its path.",
    )
    sweep.add_argument("target", metavar="TARGET", help="path/to/file.py:factory or package.module:factory")
    sweep.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto", help="default: CUDA if visible")
    sweep.add_argument(
        "--dtype", choices=DTYPES, help="model and input dtype (default: bfloat16 on CUDA, float32 on CPU)"
    )
    sweep.add_argument(
        "--mode",
        choices=["eager", "graph", "compile"],
        default="eager",
        help="eager calls (default); graph: replay a CUDA graph per batch (CUDA only, else eager, said so); "
        "compile: torch.compile (eager when it fails, said so)",
    )
    sweep.add_argument(
        "--batches",
        type=_batches,
        default=None,
        metavar="LIST|auto",
        help="batch sizes to measure, e.g. 1,8,32 (default auto: double from 1 until out of memory, --max-batch, the "
        "time limit or flat throughput, then refine the budget crossing and probe around multiples of 8, 64, 128)",
    )
    sweep.add_argument("--max-batch", type=_positive_int, metavar="N", help="largest batch the search may try")
    sweep.add_argument("--budget-ms", type=_positive_float, metavar="MS", help="latency budget per call, milliseconds")
    sweep.add_argument(
        "--percentile", type=int, choices=[50, 90, 99], default=50, help="latency percentile the budget applies to"
    )
    sweep.add_argument(
        "--input-shape", type=_shape, metavar="DIMS", help="one sample's shape without a maker, e.g. 3,224,224"
    )
    sweep.add_argument(
        "--input-dtype",
        choices=[*DTYPES, "int64"],
        help="dtype of inputs made from --input-shape (default: the model's; int64 needs --vocab)",
    )
    sweep.add_argument("--vocab", type=_positive_int, metavar="N", help="integer token inputs below N")
    sweep.add_argument(
        "--results-dir",
        type=directory,
        default=DEFAULT_SWEEPS_DIR,
        metavar="DIR",
        help="where to write <device-slug>/<sweep-id>.json (default: benchmarks/sweeps/)",
    )
    sweep.add_argument(
        "--report",
        type=Path,
        metavar="PATH.html",
        help="also write a single-file HTML report (a new file; see --force)",
    )
    sweep.add_argument("--force", action="store_true", help="replace the --report file if it exists")
    sweep.add_argument(
        "--allow-contended",
        action="store_true",
        help="measure even while another run or sweep measures this device (refused by default: two at once slow "
        "each other down); both files are then marked contended",
    )
    sweep.add_argument(
        "--time-limit",
        type=_positive_float,
        metavar="SECONDS",
        help="the whole command's wall time, import and ceilings included; a final pass it cuts short keeps the "
        "search's numbers and marks the file incomplete. The model runs in a process of its own: one still running "
        f"{sweep_watch.GRACE_S:g} s past the limit (a forward or factory that never returns) is ended, and the file "
        "keeps the batches already timed",
    )
    sweep.add_argument(
        "--train",
        action="store_true",
        help="time a training step (zero_grad, forward, loss, backward, AdamW update) instead of a forward pass; "
        "the factory may return (model, make_input, loss_fn) with loss_fn(output) or loss_fn(output, batch) a "
        "scalar, batch being what make_input returned (default: the output's mean square); also counts the "
        "activations autograd keeps per sample and recommends a batch",
    )
    sweep.add_argument(
        "--memory-gb", type=_positive_float, metavar="GB", help="with --train: the memory the step may use"
    )
    sweep.add_argument("--threads", type=_positive_int, metavar="N", help="CPU threads (default: all cores but one)")
    sweep.add_argument("--debug", action="store_true", help="print the traceback when the sweep fails")


def _options(args: argparse.Namespace) -> dict:
    """The sweep's settings from the command line, by SweepSettings' field names."""
    return {
        "device": args.device,
        "dtype": args.dtype,
        "mode": args.mode,
        "batches": args.batches,
        "max_batch": args.max_batch,
        "budget_ms": args.budget_ms,
        "percentile": args.percentile,
        "time_limit_s": args.time_limit,
        "threads": args.threads,
        "input_shape": args.input_shape,
        "input_dtype": args.input_dtype,
        "vocab": args.vocab,
        "results_dir": args.results_dir,
        "allow_contended": args.allow_contended,
        "train": args.train,
        "memory_gb": args.memory_gb,
    }


def _problem(args: argparse.Namespace) -> str | None:
    if args.memory_gb is not None and not args.train:
        return "--memory-gb is a training sweep's budget: give --train too"
    problem = options_problem(_options(args)) or report_problem(args.report, force=args.force)
    if problem or args.report is None:
        return problem
    from benchmarks.site.report import report_available

    missing = report_available()
    return f"--report needs {missing}" if missing else None


def process_started() -> float:
    """The time.perf_counter() value at which this process started (Linux: from /proc), else now."""
    now = time.perf_counter()
    try:
        fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: start time, in clock ticks
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - min(max(0.0, age), 3600.0)


def command_started() -> float:
    """When this command started: the process's start when it is `python -m benchmarks`, else now (a call of
    main() from other code, such as a test)."""
    marked = getattr(sys.modules.get("__main__"), "BENCHMARKS_STARTED", None)
    return time.perf_counter() if marked is None else min(marked, process_started())


def run(args: argparse.Namespace) -> int:
    started = command_started()  # --time-limit counts from the command's start: imports and ceilings included
    problem = _problem(args)
    if problem:
        raise Refused(problem)
    if not sweep_watch.can_watch():
        return _measure(args, started, lambda path: None)
    limit = args.time_limit
    deadline = None if limit is None else started + limit + sweep_watch.GRACE_S
    ending = sweep_watch.watch(lambda announce: _measure(args, started, announce), deadline)
    if ending.code is not None:
        return ending.code
    return _abandoned(ending, args, started)


def _measure(args: argparse.Namespace, started: float, announce: sweep_watch.Announce) -> int:
    """The sweep itself, in the measuring process: its table, recommendation and path printed; its exit code."""
    from benchmarks.measure.sweep import SweepSettings, SweepStopped, run_sweep

    options = _options(args)
    options["input_dtype"] = None if args.input_dtype == "int64" else args.input_dtype  # tokens: the vocabulary's
    settings = SweepSettings(**options, command=["python", "-m", "benchmarks", *sys.argv[1:]])  # not this machine's
    try:  # a bad target or a refused device is one line (the watcher's child runs this under run_command)
        sweep, rec = run_sweep(args.target, settings, sweep_words, started=started, on_file=announce)
    except SweepStopped as stopped:
        kept = len(stopped.sweep.points)
        problem = _show(stopped.sweep.doc, stopped.recommendation, args.report)
        if problem:
            print(printable(problem), file=sys.stderr)
        print(f"\nKeyboardInterrupt: stopped; kept {kept} batch sizes, marked incomplete", file=sys.stderr)
        print(stopped.sweep.path)
        return 130
    except KeyboardInterrupt:
        print("\nKeyboardInterrupt: stopped before any batch was measured; no results file kept", file=sys.stderr)
        return 130
    except UserError:
        raise
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        hint = "" if args.debug else " (run with --debug for the traceback)"
        raise CommandFailed(f"the sweep crashed{hint}: {type(exc).__name__}: {str(exc)[:300]}") from None
    if not any(p["status"] == "ok" for p in sweep.doc["points"]):  # nothing to show, recommend or report
        print(sweep.path)
        raise CommandFailed(f"{sweep.doc['run']['interrupted']}; the file is marked incomplete")
    report_problem = _show(sweep.doc, rec, args.report, args.memory_gb)
    print(sweep.path)
    if report_problem:
        raise CommandFailed(report_problem, status=2)
    return 0


def _abandoned(ending: sweep_watch.Ending, args: argparse.Namespace, started: float) -> int:
    """The measuring process ended without finishing the command (it hung past the time limit, or exited on its
    own): say so in one line, and finish the file it kept, marked incomplete, with what its points support."""
    why = ending.why or "the model's process ended"
    if args.time_limit is not None and ending.timed_out:
        why = f"--time-limit {args.time_limit:g}: {why}"
    path = ending.path
    if path is None or not path.is_file():
        raise CommandFailed(f"{why} before timing any batch; no results file kept")
    _remove_partial_writes(path)
    try:
        doc = load_json(path)
        timed = sum(p.get("status") == "ok" for p in doc["points"])
        why = f"{why} after timing {timed} batch size{'s' * (timed != 1)}"
        rec = sweep_words.from_document(doc)
        doc["recommendation"] = rec.as_dict()
        doc["run"].update(complete=False, interrupted=why, wall_s=max(time.perf_counter() - started, 1e-6),
                          finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))  # fmt: skip
        write_atomic(path, doc)
    except (ResultsError, KeyError, TypeError, AttributeError, OSError) as exc:
        raise CommandFailed(f"{why}; its file {path} cannot be finished: {exc}") from None
    problem = _show(doc, rec, args.report) if timed else None
    print(path)
    report = f"; {problem}" if problem else ""
    raise CommandFailed(f"{why}; the file keeps {'them' if timed else 'nothing timed'}, marked incomplete{report}",
                        status=0 if timed and ending.timed_out and not problem else 1)  # fmt: skip


def _remove_partial_writes(path: Path) -> None:
    """The temporary file of a write the ended process did not finish (the results file itself is whole)."""
    for partial in path.parent.glob(f".{path.name}.*.tmp"):
        partial.unlink(missing_ok=True)


def _show(doc: dict, rec, report: Path | None, memory_gb: float | None = None) -> str | None:
    """Print the table and the recommendation; write the report if one is asked for. Why it could not be written
    (one line), or None."""
    from benchmarks.site.sweep_table import table_lines

    print(printable_lines(table_lines(doc)))
    print()
    print(printable_lines(rec.lines))
    if "training" in doc:
        from benchmarks.analysis.roofline.training import sweep_training_lines

        print("\n".join(["", *sweep_training_lines(doc, memory_gb)]))
    if report is None:
        return None
    from benchmarks.site.report import write_report

    try:
        write_report(doc, report)
    except OSError as exc:
        return f"--report {report}: {exc.strerror or exc}"
    print(f"report: {report}", file=sys.stderr)
    return None


# ---------------------------------------------------------------------------------------------- notebook API


@dataclass
class SweepResult:
    """What `benchmarks.sweep` returns: the document, its recommendation, where it was written."""

    doc: dict
    recommendation: recommend.Recommendation
    path: Path | None

    @property
    def table(self) -> list[dict]:
        """One row per batch size: its stage, status and numbers."""
        return [{k: v for k, v in p.items() if k != "timing"} for p in self.doc["points"]]

    def charts(self) -> dict:
        """The sweep's Altair charts by name (latency, throughput, memory); needs altair."""
        from benchmarks.site.charts.sweep import sweep_charts

        return dict(sweep_charts(self.doc))

    def report(self, path: Path | str) -> Path:
        """Write the single-file HTML report; needs altair and vl-convert-python."""
        from benchmarks.site.report import write_report

        return write_report(self.doc, path)

    def __str__(self) -> str:
        from benchmarks.site.sweep_table import table_lines

        return "\n".join([*table_lines(self.doc), "", *self.recommendation.lines])


def sweep_model(model, make_input=None, *, quiet: bool = False, **options) -> SweepResult:
    """The Python API behind `benchmarks.sweep`: a model object instead of a TARGET. Options are checked
    as the command line checks them (ValueError, before any work); torch's thread count is restored.
    The caller's model is left as it was: a model not already on the sweep's device in its dtype is swept as
    a copy, and the train/eval mode of every submodule is restored afterwards."""
    import dataclasses

    import torch

    from benchmarks.measure.sweep import SweepSettings, run_sweep

    started = time.perf_counter()
    if "results_dir" in options and options["results_dir"] is not None:
        options["results_dir"] = Path(options["results_dir"])
    unknown = set(options) - {f.name for f in dataclasses.fields(SweepSettings)} - {"command"}
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(sorted(unknown))}")
    settings = SweepSettings(command=["benchmarks.sweep()"], **options)
    problem = options_problem(dataclasses.asdict(settings), name=str)
    if problem:
        raise ValueError(problem)
    if settings.input_dtype == "int64":
        settings.input_dtype = None  # token ids below the vocabulary
    say = (lambda text: None) if quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    spec = "a model object"
    threads = torch.get_num_threads()
    modes = [(module, module.training) for module in model.modules()]
    try:
        done, rec = run_sweep(spec, settings, sweep_words, say, model=model, make_input=make_input, started=started)
    finally:
        torch.set_num_threads(threads)
        for module, training in modes:
            module.training = training
    return SweepResult(done.doc, rec, done.path)
