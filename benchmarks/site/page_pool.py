"""The site build runs its notebook pages' code side by side, one page per core, instead of one after another.

mkdocs renders pages in turn, and each notebook page waits for a kernel to run its code (1-26 s on the committed
data). At a build's first page, `PagePool.convert` hands every notebook page to a pool of worker processes with the
options mkdocs-jupyter gave for that page, then answers each page's render from its result. Each page's kernel gets
sockets of its own (`BATCHING_KERNEL_IPC`, read by docs/hooks/jupyter/): two kernels started at once never share
one. A page whose code fails fails as before: its error's name and value reach the build's one line.

The site layer's only module that imports the notebook converter, and only inside a worker.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

WORKERS_ENV = "BATCHING_PAGE_WORKERS"  # how many pages run at once (default: the machine's cores; 1 runs in turn)
KERNEL_IPC_ENV = "BATCHING_KERNEL_IPC"


class PageFailed(Exception):
    """A page's code raised: the notebook error's name and value, as nbconvert gives them."""

    def __init__(self, ename: str, evalue: str):
        super().__init__(f"{ename}: {evalue}")
        self.ename = ename
        self.evalue = evalue

    def __reduce__(self):
        return PageFailed, (self.ename, self.evalue)


def workers(environ: dict[str, str] | None = None) -> int:
    """The pages run at once: $BATCHING_PAGE_WORKERS when it is a whole number of at least 1, else the cores."""
    given = (os.environ if environ is None else environ).get(WORKERS_ENV, "").strip()
    if given.isdigit() and int(given) >= 1:
        return int(given)
    return max(1, os.cpu_count() or 1)


def convert_page(path: str, options: dict[str, Any], sockets: str) -> tuple[str, float]:
    """In a worker: one notebook page converted (its code run) with sockets of its own; its HTML and seconds."""
    os.environ[KERNEL_IPC_ENV] = sockets
    from mkdocs_jupyter import convert

    started = time.perf_counter()
    try:
        body = convert.nb2html(path, **options)
    except Exception as exc:  # nbclient's CellExecutionError does not survive pickling; its name and value do
        raise PageFailed(getattr(exc, "ename", None) or type(exc).__name__, str(getattr(exc, "evalue", exc))) from None
    return body, time.perf_counter() - started


class PagePool:
    """Every notebook page of a build, converted `workers()` at a time, longest first by the last build's times."""

    def __init__(self, paths: list[str], sockets: Path, times_file: Path | None = None, count: int | None = None):
        self.paths = list(dict.fromkeys(paths))
        self.sockets = sockets
        self.times_file = times_file
        self.count = workers() if count is None else count
        self.seconds: dict[str, float] = {}
        self._pool: ProcessPoolExecutor | None = None
        self._futures: dict[str, Future] = {}
        self._options: dict[str, Any] | None = None

    def convert(self, original: Callable[..., str], path: str, **options: Any) -> str:
        """A page's HTML: from the pool when it ran there with these options, else converted here and now."""
        if self.count > 1 and path in self.paths and self._options is None:
            self._start(options)
        future = self._futures.get(path) if options == self._options else None
        if future is None:
            started = time.perf_counter()
            try:
                return original(path, **options)
            finally:
                self.seconds[path] = time.perf_counter() - started
        body, seconds = future.result()
        self.seconds[path] = seconds
        return body

    def _start(self, options: dict[str, Any]) -> None:
        self._options = dict(options)
        context = multiprocessing.get_context("spawn")  # the build may hold threads; a fork would copy their locks
        self._pool = ProcessPoolExecutor(max_workers=min(self.count, len(self.paths)), mp_context=context)
        last = self._last_times()
        for index, path in enumerate(sorted(self.paths, key=lambda p: -last.get(Path(p).name, 0.0))):
            sockets = self.sockets / f"page-{index}" / "kernel"
            sockets.parent.mkdir(parents=True, exist_ok=True)
            self._futures[path] = self._pool.submit(convert_page, path, self._options, str(sockets))

    def _last_times(self) -> dict[str, float]:
        try:
            found = json.loads(self.times_file.read_text(encoding="utf-8")) if self.times_file else {}
        except (OSError, ValueError):
            return {}
        if not isinstance(found, dict):
            return {}
        return {str(k): float(v) for k, v in found.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}

    def close(self, *, keep_times: bool = False) -> None:
        """Stop the workers (pages not started are dropped); with `keep_times`, save each page's seconds."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if keep_times and self.times_file and self.seconds:
            try:
                self.times_file.parent.mkdir(parents=True, exist_ok=True)
                times = {Path(p).name: round(s, 2) for p, s in self.seconds.items()}
                self.times_file.write_text(json.dumps(times, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            except OSError:
                pass  # the next build only orders its pages less well
