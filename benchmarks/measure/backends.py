"""Timers for each device kind: perf_counter on the CPU, CUDA events (eager or graph) on a GPU."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from typing import Any

import torch


class DeviceUnavailable(Exception):
    """The requested device cannot be used here; the message says why in one line."""


def is_out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, torch.OutOfMemoryError) or "out of memory" in str(exc).lower()


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

    def release(self) -> None:
        gc.collect()


class CudaBackend:
    """CUDA-event timing of eager calls or of a captured CUDA graph's replays."""

    kind = "cuda"
    modes = ("graph", "eager", "compile")

    def __init__(self, index: int = 0):
        if not torch.cuda.is_available():
            built = "without CUDA" if torch.version.cuda is None else f"with CUDA {torch.version.cuda}"
            raise DeviceUnavailable(f"CUDA is not available (torch {torch.__version__} built {built}, no GPU visible)")
        self.device = torch.device("cuda", index)
        torch.cuda.set_device(self.device)
        self.threads = torch.get_num_threads()
        # Every captured graph draws from one memory pool. Safe here because no graph's output
        # is ever read (each call's result is dead when its capture ends), so graphs may reuse
        # each other's scratch memory; without sharing, a sweep over a thousand batch sizes
        # would hold a thousand sets of activations.
        self.graph_pool = torch.cuda.graph_pool_handle()

    def time(self, fn: Callable[[], Any], inner: int) -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / inner

    def for_mode(self, fn: Callable[[], Any], mode: str) -> Callable[[], Any]:
        """Eager and compile: the call itself (a compiled model is compiled by the workload). Graph:
        capture the call once and return the replay."""
        if mode in ("eager", "compile"):
            return fn
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up off the capture stream, as capture requires
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.graph_pool):
            fn()
        return graph.replay

    is_oom = staticmethod(is_out_of_memory)

    def release(self) -> None:
        gc.collect()
        torch.cuda.empty_cache()


def select_backend(name: str, threads: int | None) -> CpuBackend | CudaBackend:
    """'auto' picks CUDA when a GPU is visible, else the CPU."""
    if name == "cuda" or (name == "auto" and torch.cuda.is_available()):
        return CudaBackend()
    if name not in ("auto", "cpu"):
        raise DeviceUnavailable(f"unknown device {name!r}; choose auto, cpu or cuda")
    return CpuBackend(threads or default_cpu_threads())


def default_cpu_threads() -> int:
    """All cores but one: the spare core keeps the OS and the timing loop off the measured ones.

    On a small shared machine this matters most: on 2 vCPUs, 2-thread medians of the same call
    moved by up to 28 % between 8-second windows, 1-thread medians by 4 %.
    """
    return max(1, (os.cpu_count() or 1) - 1)
