"""What surrounds a run: a results directory it can write, one run per device at a time, honest
provenance, and a stop signal that ends in a valid file.

Pure Python (no torch): the command line checks these before it measures anything.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.contract.errors import UserError

ROOT = Path(__file__).resolve().parents[2]  # the project: benchmarks/ and snippets/ live here
MEASURED_CODE = ("benchmarks", "snippets")


class RunRefused(UserError):
    """The run cannot start; the message says why in one line."""


class Terminated(BaseException):
    """SIGTERM arrived. A BaseException, so no point's error handling swallows it."""


def check_writable(directory: Path, flag: str = "--results-dir") -> None:
    """Create the results directory if needed and prove a file can be written in it (a refusal names `flag`)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".write-check-", suffix=".tmp"):
            pass
    except OSError as exc:
        raise RunRefused(f"{flag} {directory}: cannot write there ({exc.strerror or exc})") from None


def remove_temporaries(directory: Path) -> list[Path]:
    """Delete what an interrupted atomic write left in a device's directory. Only one run measures a
    device at a time (DeviceLock), so no other writer can own these."""
    removed = []
    for path in directory.glob(".*.tmp") if directory.is_dir() else []:
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed


JOINED = "joined by another measurement:"


class DeviceLock:
    """One measurement per device at a time (a profile run or a model sweep): two on one device slow each
    other down (2–3× here). One started anyway (--allow-contended) is marked contended, and it leaves a line
    in the lock file so that the one holding the lock is marked contended too.

    The lock file lives in the system's temporary directory, or in BATCHING_LOCK_DIR when set (the
    tests give each test session its own, so that they never wait on a real run).
    """

    def __init__(self, slug: str):
        directory = os.environ.get("BATCHING_LOCK_DIR") or tempfile.gettempdir()
        self.path = Path(directory) / f"batching-{slug}.lock"
        self._file = None

    def acquire(self, allow_contended: bool) -> bool:
        """Take the lock; True when another run holds it and `allow_contended` let this one start anyway."""
        import fcntl

        self._file = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (held for the run's life)
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.seek(0)
            holder = self._file.read().split(JOINED)[0].strip() or "another process"
            if not allow_contended:
                self.release()
                raise RunRefused(
                    f"another measurement is using this device ({holder}); two at once slow each other down. Wait "
                    "for it, or pass --allow-contended to measure anyway (both are then marked contended)"
                ) from None
            self._file.write(f"{JOINED} pid {os.getpid()}\n")  # the holder reads this when it finishes
            self._file.flush()
            return True
        self._file.seek(0)
        self._file.truncate()
        self._file.write(f"pid {os.getpid()}, since {time.strftime('%Y-%m-%d %H:%M:%S')}")
        self._file.flush()
        return False

    def joined(self) -> bool:
        """Whether another measurement started on this device (with --allow-contended) while this one held it."""
        if self._file is None:
            return False
        self._file.seek(0)
        return JOINED in self._file.read()

    def release(self) -> None:
        """Let the next run start (closing the file drops the lock; so does the process ending)."""
        if self._file is not None:
            self._file.close()
            self._file = None


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=10, check=True, cwd=ROOT
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def provenance() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the measured code: the commit only when the repository around the project
    tracks its code (a copy inside another repository is not that repository's commit); dirty when the
    measured code has uncommitted or untracked changes (results files do not count)."""
    tracked = _git("ls-files", "--", "benchmarks/measure/runner.py", "snippets/costs.py")
    if not tracked:
        return None, None
    status = _git(
        "status", "--porcelain", "--untracked-files=all", "--", *MEASURED_CODE, ":(exclude)benchmarks/results"
    )
    return _git("rev-parse", "HEAD"), None if status is None else bool(status)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises Terminated (so the run can end with a valid file)."""

    def handler(signum, frame):
        raise Terminated("SIGTERM")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
