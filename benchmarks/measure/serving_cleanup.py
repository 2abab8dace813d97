"""Stopping what a real-server check started, and nothing else: every process of its Ray cluster inherits a
marker of that cluster alone in its environment, and any that outlives Ray's own shutdown is stopped by its
process id. Standard library only (no Ray), so a test can check that none is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

MARKER = "BATCHING_SERVING_CHECK"  # in the environment of every process of our cluster


def marked_processes(marker: str) -> list[int]:
    """Process ids of this user's processes whose environment carries `marker` (this process excluded)."""
    found = []
    needle = f"{MARKER}={marker}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                carries = needle in environ.read().split(b"\0")
            if carries:
                found.append(int(entry))
        except OSError:
            continue
    return found


def stop_leftovers(marker: str, grace_s: float = 5.0) -> list[int]:
    """Stop the processes this cluster started that outlived Ray's shutdown: SIGTERM, then SIGKILL."""
    if not os.path.isdir("/proc"):
        return []
    left = marked_processes(marker)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = [pid for pid in left if _alive(pid)]
        if not left:
            break
    return left


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
