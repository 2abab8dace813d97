"""The one reader of every file the project takes as input: results, sweeps, serving checks, published figures,
arrival traces, token-length lists.

A file is read only if it is a regular file (a symlink is followed only to one), no larger than the cap of its
kind, and it is read once, at most one byte past the cap: a FIFO, a device such as /dev/zero, a directory or a
file that grows while it is read is refused in one line naming it, never waited on or read without end.

Pure standard library: nothing on this module's import path may import torch or numpy.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from benchmarks.contract.errors import UserError

MiB = 2**20
RESULTS_LIMIT = 256 * MiB  # a full GPU profile writes a few MiB
TRACE_LIMIT = 64_000_000  # five million arrival times, one a line
LENGTHS_LIMIT = 64_000_000
PUBLISHED_LIMIT = 16 * MiB
CURVE_LIMIT = 1 * MiB  # a batch curve (CSV): one short row per batch size

_READ_CHUNK = MiB


class InputError(UserError):
    """An input file that cannot be read: its path and one line saying why."""

    def __init__(self, path: Path | str, message: str):
        self.path = Path(path)
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def _what(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _size_words(limit_bytes: int) -> str:
    return f"{limit_bytes // MiB:,} MiB" if limit_bytes >= MiB and limit_bytes % MiB == 0 else f"{limit_bytes:,} bytes"


def _check_regular(path: Path, mode: int, kind: str) -> None:
    if not stat.S_ISREG(mode):
        shown = _what(mode)
        raise InputError(path, f"is {shown}, not a regular file; a {kind} must be a regular file")


def read_bytes_bounded(path: Path | str, *, kind: str, limit_bytes: int) -> bytes:
    """The bytes of a regular file of at most `limit_bytes`, or InputError naming the file (and the cap of its
    `kind`, e.g. "results file"). A FIFO or device is refused without blocking on it."""
    path = Path(path)
    try:
        info = os.stat(path)  # follows a symlink: what it points at must be a regular file
    except OSError as exc:
        raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
    _check_regular(path, info.st_mode, kind)
    too_large = f"is larger than the {_size_words(limit_bytes)} a {kind} may be"
    if info.st_size > limit_bytes:
        raise InputError(path, too_large)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        handle = os.open(path, flags)
    except OSError as exc:
        raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        _check_regular(path, os.fstat(handle).st_mode, kind)  # the file opened is the file checked
        chunks, total = [], 0
        while total <= limit_bytes:
            chunk = os.read(handle, min(_READ_CHUNK, limit_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(handle)
    if total > limit_bytes:
        raise InputError(path, too_large)
    return b"".join(chunks)


def read_text_bounded(path: Path | str, *, kind: str, limit_bytes: int) -> str:
    """The UTF-8 text of a regular file (see read_bytes_bounded); a file that is not UTF-8 text is refused,
    saying at which byte."""
    data = read_bytes_bounded(path, kind=kind, limit_bytes=limit_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"is not UTF-8 text (byte {exc.start:,}); a {kind} is text") from None
