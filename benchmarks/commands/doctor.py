"""`python -m benchmarks doctor`: the first thing to run on a new machine.

One table of what a run needs to know about the machine (read, not measured), then the smoke profile
with PASS, FAIL or SKIP per code path, and with `--json PATH` one JSON file of both. Needs only the
standard library and torch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.commands.choices import Refused
from benchmarks.contract.errors import CommandFailed
from benchmarks.contract.results import DEFAULT_RESULTS_DIR

DOCTOR_VERSION = 1


def add_parser(commands) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="check this machine: what a run needs to know, then the smoke profile path by path",
        description="Print one table of what a first run on this machine needs to know (Python, torch, CUDA, "
        "cuDNN, driver, device, SMs, L2, memory free and total, clocks and power limit, a compiler for "
        "torch.compile, the attention backends that run here), then run the smoke profile (every code path of a "
        "full run at tiny sizes; nothing is published) and print PASS, FAIL or SKIP per path. Exit status 0 when "
        "nothing failed, 1 otherwise. Run it first on a new machine: a minute or so.",
    )
    doctor.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="where to check (default auto: CUDA when a GPU is visible, else the CPU)")  # fmt: skip
    doctor.add_argument("--threads", type=int, metavar="N", help="CPU intra-op threads (default: all cores but one)")
    doctor.add_argument("--json", type=Path, metavar="PATH", help="also write everything found to this JSON file")
    doctor.add_argument("--no-smoke", action="store_true", help="print the table only; run nothing")


def _problem(args: argparse.Namespace) -> str | None:
    cores = os.cpu_count() or 1
    if args.threads is not None and not 1 <= args.threads <= cores:
        return f"--threads {args.threads}: choose 1 to {cores}, the cores of this machine"
    if args.json is not None and (args.json.is_dir() or not args.json.parent.is_dir()):
        return f"--json {args.json}: give a file in an existing directory"
    return None


def table(rows: list[tuple[str, str, str]]) -> list[str]:
    """Aligned lines: name, value, and what a problem stops (when there is one)."""
    width = max(len(name) for name, _, _ in rows)
    return [f"{name:<{width}}  {value}" + (f"  ← {problem}" if problem else "") for name, value, problem in rows]


def run(args: argparse.Namespace) -> int:
    problem = _problem(args)
    if problem:
        raise Refused(problem)
    from benchmarks.measure.doctor import environment
    from benchmarks.measure.smoke import smoke_verdicts, summary_line

    facts = environment(args.device, args.threads)
    print("\n".join(table([(f.name, f.value, f.problem or "") for f in facts])))
    report = {
        "doctor_version": DOCTOR_VERSION,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": ["python", "-m", "benchmarks", *sys.argv[1:]],
        "environment": [{"name": f.name, "value": f.value, "problem": f.problem} for f in facts],
        "smoke": None,
    }
    failed = any(f.problem for f in facts)
    if not args.no_smoke:
        print("\nsmoke profile (every code path at tiny sizes; nothing is published):", flush=True)
        options = {
            "device": args.device,
            "only": None,
            "threads": args.threads,
            "cache": "rotated",
            "command": report["command"],
            "show_progress": sys.stderr.isatty(),
            "allow_contended": False,
            "time_limit_s": None,
        }
        try:
            verdicts, seconds = smoke_verdicts(options, None, DEFAULT_RESULTS_DIR)
        except KeyboardInterrupt:  # a refusal (device busy or absent) is main's one line
            print("\nKeyboardInterrupt: doctor stopped", file=sys.stderr)
            return 130
        for verdict in verdicts:
            print(verdict.line())
        print(summary_line(verdicts, seconds))
        report["smoke"] = {
            "seconds": round(seconds, 1),
            "paths": [{"path": v.path, "status": v.status, "detail": v.detail} for v in verdicts],
        }
        failed = failed or any(v.status == "FAIL" for v in verdicts)
    report["passed"] = not failed
    if args.json is not None:
        try:
            args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        except OSError as exc:
            raise CommandFailed(f"--json {args.json}: {exc.strerror or exc}") from None
        print(f"report: {args.json}", file=sys.stderr)
    return 1 if failed else 0
