"""Timers for each device kind: perf_counter on the CPU, CUDA events (eager or graph) on a GPU."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from typing import Any

import torch

from benchmarks.contract.errors import UserError
from snippets import cnn


class DeviceUnavailable(UserError):
    """The requested device cannot be used here; the message says why in one line."""


def is_out_of_memory(exc: BaseException) -> bool:
    """An out-of-memory, or an error raised while one was handled: an allocation that fails inside a graph
    capture can invalidate it, and then torch's capture_end raises its own error in place of the OOM."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        text = str(exc).lower()
        if isinstance(exc, torch.OutOfMemoryError) or "out of memory" in text or "can't allocate memory" in text:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def available_memory_bytes() -> int | None:
    """The memory the system could still give this process (Linux's MemAvailable), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class CpuBackend:
    """Wall-clock timing with a fixed intra-op thread count; eager calls (of a model that may be compiled)."""

    kind = "cpu"
    modes = ("eager", "compile")

    def __init__(self, threads: int):
        torch.set_num_threads(threads)
        self.device = torch.device("cpu")
        self.threads = torch.get_num_threads()

    def time(self, fn: Callable[[], Any], inner: int) -> float:
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        return (time.perf_counter() - start) / inner

    def for_mode(self, fn: Callable[[], Any], mode: str) -> Callable[[], Any]:
        if mode not in self.modes:
            raise ValueError(f"mode {mode!r} needs CUDA")
        return fn

    is_oom = staticmethod(is_out_of_memory)

    def new_phase(self) -> None:
        """Nothing to reset between the ceilings and the workloads on a CPU."""

    def free_memory(self) -> int | None:
        return available_memory_bytes()

    def release(self) -> None:
        gc.collect()


class CudaBackend:
    """CUDA-event timing of eager calls or of a captured CUDA graph's replays.

    Graphs are captured on one dedicated stream (warm-up and capture on the same stream, so cuBLAS
    makes its workspace for that stream once, outside any capture) from one memory pool per phase:
    graphs may share scratch memory because no graph's output is ever read, and a sweep over a
    thousand batch sizes must not hold a thousand sets of activations. A new phase (the workloads,
    after the ceilings' graphs are gone) and any capture that fails for a reason other than memory
    get a fresh pool: a pool whose every graph died, or one a broken capture left recording, must not
    be captured into again. Whatever happens, the default stream is current after a capture.

    A capture that fails leaves torch's caching allocator recording into the pool when torch raises in
    `capture_end` before it ends the allocation (a capture the CUDA driver invalidated): from then on
    `empty_cache()` frees nothing and the allocator's retry before out-of-memory is skipped. So after
    any failed capture the allocation to the pool is ended here, if it is still running.

    `cuda` is the torch.cuda module and `allocator` the caching allocator's pool bookkeeping; tests
    pass stand-ins that record the calls. `threads` fixes the host's intra-op threads (CPU-side ops).
    """

    kind = "cuda"
    modes = ("graph", "eager", "compile")
    WARMUP_CALLS = 3

    def __init__(self, index: int = 0, cuda=None, allocator=None, threads: int | None = None):
        self.cuda = cuda or torch.cuda
        if not self.cuda.is_available():
            built = "without CUDA" if torch.version.cuda is None else f"with CUDA {torch.version.cuda}"
            raise DeviceUnavailable(f"CUDA is not available (torch {torch.__version__} built {built}, no GPU visible)")
        self.device = torch.device("cuda", index)
        self.allocator = allocator or PoolBookkeeping(index)
        self.cuda.set_device(self.device)
        torch.backends.cudnn.benchmark = cnn.CUDNN_BENCHMARK  # as snippets/cnn.py runs on its own
        if threads:
            torch.set_num_threads(threads)
        self.threads = torch.get_num_threads()
        self.capture_stream = self.cuda.Stream(self.device)
        self.graph_pool = self.cuda.graph_pool_handle()

    def time(self, fn: Callable[[], Any], inner: int) -> float:
        start = self.cuda.Event(enable_timing=True)
        end = self.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / inner

    def new_phase(self) -> None:
        """A fresh graph pool for the next phase of the run."""
        self.graph_pool = self.cuda.graph_pool_handle()

    def for_mode(self, fn: Callable[[], Any], mode: str) -> Callable[[], Any]:
        """Eager and compile: the call itself (a compiled model is compiled by the workload). Graph:
        capture the call once and return the replay."""
        if mode in ("eager", "compile"):
            return fn
        return self.capture(fn)

    def capture(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        stream = self.capture_stream
        stream.wait_stream(self.cuda.current_stream(self.device))
        try:
            with self.cuda.stream(stream):  # warm up where the capture runs
                for _ in range(self.WARMUP_CALLS):
                    fn()
            graph = self.cuda.CUDAGraph()
            with self.cuda.graph(graph, pool=self.graph_pool, stream=stream):
                fn()
        except Exception as exc:
            self.allocator.end_allocation(self.graph_pool)  # when torch's capture_end raised before it did
            if not is_out_of_memory(exc):
                self.new_phase()
            raise
        finally:
            self.cuda.set_stream(self.cuda.default_stream(self.device))
        self.cuda.current_stream(self.device).wait_stream(stream)
        return graph.replay

    is_oom = staticmethod(is_out_of_memory)

    def free_memory(self) -> int | None:
        """Free device memory, counting what the caching allocator holds unused (emptied first)."""
        self.release()
        free, _total = self.cuda.mem_get_info(self.device)
        return free

    def release(self) -> None:
        gc.collect()
        self.cuda.empty_cache()


class PoolBookkeeping:
    """The caching allocator's record of which graph pool a capture allocates into (torch >= 2.8)."""

    def __init__(self, index: int):
        self.index = index

    def end_allocation(self, pool) -> bool:
        """End the allocation to `pool` if a failed capture left it running, and drop the failed graph's
        use of the pool (its reset will not, having never ended its capture). False when nothing was
        running: capture_end had ended it, or the capture never began."""
        end = getattr(torch._C, "_cuda_endAllocateToPool", None)
        release = getattr(torch._C, "_cuda_releasePool", None)
        if end is None:
            return False
        try:
            end(self.index, pool)
        except RuntimeError:  # "endAllocatePool: not currently recording to mempool_id"
            return False
        if release is not None:
            release(self.index, pool)
        return True


def select_backend(name: str, threads: int | None) -> CpuBackend | CudaBackend:
    """'auto' picks CUDA when a GPU is visible, else the CPU. `threads`: the host's intra-op threads."""
    if name == "cuda" or (name == "auto" and torch.cuda.is_available()):
        return CudaBackend(threads=threads)
    if name not in ("auto", "cpu"):
        raise DeviceUnavailable(f"unknown device {name!r}; choose auto, cpu or cuda")
    return CpuBackend(threads or default_cpu_threads())


def default_cpu_threads() -> int:
    """All cores but one: the spare core keeps the OS and the timing loop off the measured ones.

    On a small shared machine this matters most: on 2 vCPUs, 2-thread medians of the same call
    moved by up to 28 % between 8-second windows, 1-thread medians by 4 %.
    """
    return max(1, (os.cpu_count() or 1) - 1)
