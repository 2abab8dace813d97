"""The measuring process of `sweep`, watched from outside it.

The sweep runs the reader's model, and a model's forward (or its factory) may never return, or may end the
process itself (`os._exit`, `sys.exit`). So the command forks: the child measures and writes the results file
after every stage, as before, and sends what it prints, and the file's path, up a pipe; the parent prints it,
and ends the child once the time limit has passed by GRACE_S. Either way the parent then knows what the child
kept: the file on disk.

Pure standard library; the parent never imports torch.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.contract.errors import run_command

GRACE_S = 5.0  # past the time limit, the measuring process gets this long to finish on its own
POLL_S = 0.5  # how often the parent checks on the child between messages

Announce = Callable[[Path], None]


@dataclass
class Ending:
    """How the measuring process ended: its own exit code when it finished the command, else why not."""

    code: int | None  # the command's exit code, when the child finished it
    path: Path | None  # the results file it announced
    why: str | None = None  # when it did not finish: what ended it
    timed_out: bool = False  # the parent ended it at the time limit


class _Channel:
    """The child's end of the pipe: one JSON message a line."""

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, kind: str, value) -> None:
        data = (json.dumps([kind, value]) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data) :]


class _Forward(io.TextIOBase):
    """sys.stdout or sys.stderr of the child: every write goes up the pipe, to be printed by the parent."""

    encoding = "utf-8"

    def __init__(self, channel: _Channel, stream: str):
        self.channel, self.stream = channel, stream

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            self.channel.send(self.stream, text)
        return len(text)


def can_watch() -> bool:
    """Forking is what makes the watch possible (Linux and other POSIX systems)."""
    return hasattr(os, "fork") and sys.platform != "win32"


def watch(measure: Callable[[Announce], int], deadline: float | None) -> Ending:
    """Run `measure(announce)` in a child process and print what it prints; end it once `deadline` (a
    time.perf_counter() value) has passed. The child calls `announce(path)` once its results file exists."""
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():  # Python 3.12+ warns of fork() beside threads; the command's process runs
        warnings.simplefilter("ignore", DeprecationWarning)  # none (torch is imported in the child alone)
        pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(measure, write_end)  # never returns
    os.close(write_end)
    try:
        return _parent(pid, read_end, deadline)
    finally:
        os.close(read_end)


def _child(measure: Callable[[Announce], int], fd: int) -> None:
    code = 1
    try:
        os.setpgid(0, 0)  # Ctrl-C reaches the parent alone, which hands it on once
        signal.signal(signal.SIGINT, signal.default_int_handler)  # also where the parent's was ignored
        _die_with_parent()
        channel = _Channel(fd)
        sys.stdout, sys.stderr = _Forward(channel, "out"), _Forward(channel, "err")
        code = run_command(measure, lambda path: channel.send("file", str(path)))  # a UserError: one line, 2
        channel.send("done", code)
    except SystemExit as exc:  # the model's own sys.exit(): the parent reports it, with what was kept
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException as exc:
        code = 1
        words = f"error: the measuring process failed: {type(exc).__name__}: {str(exc)[:300]}\n"
        try:
            sys.stderr.write(words)  # up the pipe, when it is still there
        except Exception:
            os.write(2, words.encode())
    finally:
        os._exit(code)


def _die_with_parent() -> None:
    """A SIGKILL for the child when the parent dies, so that no measuring process outlives the command."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _parent(pid: int, fd: int, deadline: float | None) -> Ending:
    messages = _Messages()
    interrupts = []

    def hand_on(signum, frame):  # Ctrl-C: the child stops and keeps its file; a second one ends it
        interrupts.append(signum)
        _signal(pid, signal.SIGINT if len(interrupts) == 1 else signal.SIGKILL)

    previous = {sig: signal.signal(sig, hand_on) for sig in (signal.SIGINT, signal.SIGTERM)}
    status, timed_out = None, False
    try:
        while status is None:
            if deadline is not None and time.perf_counter() >= deadline:
                _signal(pid, signal.SIGKILL)
                timed_out = True
                status = os.waitpid(pid, 0)[1]
                break
            wait = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.perf_counter()))
            if select.select([fd], [], [], wait)[0]:
                chunk = os.read(fd, 65536)
                messages.take(chunk)
            done, found = os.waitpid(pid, os.WNOHANG)
            if done:
                status = found
        os.set_blocking(fd, False)
        messages.take(_drain(fd))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if messages.code is not None and not timed_out:
        return Ending(messages.code, messages.path)
    return Ending(None, messages.path, _why(status, timed_out), timed_out)


def _drain(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _why(status: int, timed_out: bool) -> str:
    if timed_out:
        return f"the model's process was still running {GRACE_S:g} s past the time limit and was ended"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"the model's process was ended by {name}"
    return f"the model's process exited with status {os.waitstatus_to_exitcode(status)}"


class _Messages:
    """What the child sent: printed as it comes; the results file's path and the exit code kept."""

    def __init__(self):
        self.pending = b""
        self.path: Path | None = None
        self.code: int | None = None

    def take(self, chunk: bytes) -> None:
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        for line in lines:
            try:
                kind, value = json.loads(line)
            except ValueError:
                continue
            if kind == "out":
                sys.stdout.write(value)
                sys.stdout.flush()
            elif kind == "err":
                sys.stderr.write(value)
                sys.stderr.flush()
            elif kind == "file":
                self.path = Path(value)
            elif kind == "done" and isinstance(value, int):
                self.code = value
