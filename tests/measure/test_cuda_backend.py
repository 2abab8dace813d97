"""The CUDA backend's control flow, against a stand-in for torch.cuda that records every call.

No GPU runs here: the stand-in proves the order of streams, pools and captures that a real
torch.cuda would see (warm-up and capture on one dedicated stream, a fresh pool per phase and after
a broken capture, the default stream current again whatever happens).
"""

from __future__ import annotations

import contextlib
from typing import ClassVar

import pytest

from benchmarks.measure import runner
from benchmarks.measure.backends import CpuBackend, CudaBackend


class FakeStream:
    def __init__(self, name: str, log: list):
        self.name, self.log = name, log

    def wait_stream(self, other: FakeStream) -> None:
        self.log.append(f"{self.name} waits for {other.name}")

    def __repr__(self) -> str:
        return self.name


class FakeCuda:
    """Just enough of torch.cuda for CudaBackend. `fail_capture` makes the next capture raise
    that message: at capture begin (`where="begin"`, as a pool left recording does) or inside it."""

    def __init__(self):
        self.log: list[str] = []
        self.default = FakeStream("default stream", self.log)
        self.current = self.default
        self.pools = 0
        self.fail_capture: tuple[str, str] | None = None
        self.allocator = FakeAllocator()
        self.capturing = False

    # devices, memory, events
    def is_available(self):
        return True

    def set_device(self, device):
        self.log.append("set device")

    def mem_get_info(self, device):
        self.log.append("free memory read")
        return 60 * 2**30, 141 * 2**30

    def empty_cache(self):
        self.log.append("empty cache")

    def Event(self, enable_timing=False):
        return _FakeEvent()

    # streams
    def Stream(self, device=None):
        return FakeStream("capture stream", self.log)

    def current_stream(self, device=None):
        return self.current

    def default_stream(self, device=None):
        return self.default

    def set_stream(self, stream):
        self.current = stream

    def is_current_stream_capturing(self):
        return self.capturing

    @contextlib.contextmanager
    def stream(self, stream):
        previous, self.current = self.current, stream
        try:
            yield
        finally:
            self.current, self.capturing = previous, False

    # graphs
    def graph_pool_handle(self):
        self.pools += 1
        return f"pool {self.pools}"

    def CUDAGraph(self):
        return _FakeGraph(self.log)

    @contextlib.contextmanager
    def graph(self, graph, pool=None, stream=None):
        previous, self.current = self.current, stream  # torch enters the stream, then begins the capture
        self.log.append(f"capture into {pool} on {stream}")
        self.allocator.recording.add(pool)  # capture_begin: the allocator allocates into the pool
        failure, self.fail_capture = self.fail_capture, None
        if failure and failure[1] == "begin":
            raise RuntimeError(failure[0])  # raised in __enter__: torch's __exit__ never restores the stream
        try:
            self.capturing = True
            yield
            self.capturing = False
            if failure:  # capture_end raises at cudaStreamEndCapture, before endAllocateToPool
                raise RuntimeError(failure[0])
            self.allocator.recording.discard(pool)
            self.log.append("capture ended")
        finally:
            self.current, self.capturing = previous, False


class FakeAllocator:
    """The caching allocator's pools being recorded into, and the pool bookkeeping calls made on it."""

    def __init__(self):
        self.recording: set[str] = set()
        self.ended: list[str] = []

    def end_allocation(self, pool) -> bool:
        if pool not in self.recording:
            return False
        self.recording.discard(pool)
        self.ended.append(pool)
        return True


class _FakeEvent:
    def record(self):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 1.0


class _FakeGraph:
    def __init__(self, log):
        self.log = log

    def replay(self):
        self.log.append("replay")


@pytest.fixture
def cuda():
    return FakeCuda()


def backend_on(cuda: FakeCuda, **kwargs) -> CudaBackend:
    return CudaBackend(cuda=cuda, allocator=cuda.allocator, **kwargs)


def calls_on_stream(cuda: FakeCuda):
    def call():
        cuda.log.append(f"call on {cuda.current}")

    return call


def test_warm_up_and_capture_run_on_one_dedicated_stream(cuda):
    backend = backend_on(cuda)
    replay = backend.for_mode(calls_on_stream(cuda), "graph")
    assert cuda.log[1:] == [
        "capture stream waits for default stream",
        *["call on capture stream"] * CudaBackend.WARMUP_CALLS,
        "capture into pool 1 on capture stream",
        "call on capture stream",
        "capture ended",
        "default stream waits for capture stream",
    ]
    assert cuda.current is cuda.default
    replay()
    assert cuda.log[-1] == "replay"


def test_every_phase_captures_into_a_fresh_pool(cuda):
    backend = backend_on(cuda)
    for _ in range(2):
        backend.capture(calls_on_stream(cuda))
    backend.new_phase()  # the ceilings' graphs are gone
    backend.capture(calls_on_stream(cuda))
    captures = [line for line in cuda.log if line.startswith("capture into")]
    assert captures == ["capture into pool 1 on capture stream"] * 2 + ["capture into pool 2 on capture stream"]


@pytest.mark.parametrize("where", ["begin", "inside"])
def test_a_broken_capture_restores_the_default_stream_and_renews_the_pool(cuda, where):
    backend = backend_on(cuda)
    cuda.fail_capture = ("CUDA error: operation not permitted when stream is capturing", where)
    with pytest.raises(RuntimeError, match="not permitted"):
        backend.capture(calls_on_stream(cuda))
    assert cuda.current is cuda.default
    backend.capture(calls_on_stream(cuda))
    captures = [line for line in cuda.log if line.startswith("capture into")]
    assert captures == ["capture into pool 1 on capture stream", "capture into pool 2 on capture stream"]
    assert cuda.current is cuda.default


def test_an_out_of_memory_capture_keeps_the_pool(cuda):
    backend = backend_on(cuda)
    cuda.fail_capture = ("CUDA out of memory. Tried to allocate 2.00 GiB", "inside")
    with pytest.raises(RuntimeError):
        backend.capture(calls_on_stream(cuda))
    backend.capture(calls_on_stream(cuda))
    captures = [line for line in cuda.log if line.startswith("capture into")]
    assert captures == ["capture into pool 1 on capture stream"] * 2
    assert cuda.current is cuda.default


def test_free_memory_is_what_the_device_reports_free_once_the_cache_is_emptied(cuda):
    backend = backend_on(cuda)
    cuda.log.clear()
    assert backend.free_memory() == 60 * 2**30
    assert cuda.log == ["empty cache", "free memory read"]  # cached blocks are free to the next allocation


@pytest.mark.parametrize("where", ["begin", "inside"])
def test_a_failed_capture_leaves_the_allocator_recording_into_no_pool(cuda, where):
    backend = backend_on(cuda)
    cuda.fail_capture = ("CUDA error: operation failed due to a previous error during capture", where)
    with pytest.raises(RuntimeError, match="previous error"):
        backend.capture(calls_on_stream(cuda))
    assert cuda.allocator.recording == set() and cuda.allocator.ended == ["pool 1"]
    backend.capture(calls_on_stream(cuda))  # a good capture ends its own allocation: nothing more to end
    assert cuda.allocator.recording == set() and cuda.allocator.ended == ["pool 1"]


def test_the_pool_bookkeeping_ends_and_releases_only_an_allocation_still_running(monkeypatch):
    import torch

    from benchmarks.measure.backends import PoolBookkeeping

    running, calls = {("pool", 1)}, []

    def end(index, pool):
        if pool not in running:
            raise RuntimeError("endAllocatePool: not currently recording to mempool_id")
        running.discard(pool)
        calls.append(("end", index, pool))

    monkeypatch.setattr(torch._C, "_cuda_endAllocateToPool", end, raising=False)
    monkeypatch.setattr(torch._C, "_cuda_releasePool", lambda i, p: calls.append(("release", i, p)), raising=False)
    bookkeeping = PoolBookkeeping(0)
    assert bookkeeping.end_allocation(("pool", 1)) is True
    assert calls == [("end", 0, ("pool", 1)), ("release", 0, ("pool", 1))]
    assert bookkeeping.end_allocation(("pool", 1)) is False  # capture_end ended it: no second release
    assert len(calls) == 2


def test_threads_are_fixed_on_cuda_too(cuda, monkeypatch):
    import torch

    from benchmarks.measure import backends

    monkeypatch.setattr(torch, "set_num_threads", lambda n: calls.append(n))
    monkeypatch.setattr(torch, "get_num_threads", lambda: calls[-1] if calls else 16)
    calls: list[int] = []
    assert backend_on(cuda, threads=3).threads == 3 and calls == [3]
    seen = {}
    monkeypatch.setattr(backends, "CudaBackend", lambda **kwargs: seen.update(kwargs))
    backends.select_backend("cuda", 5)
    assert seen == {"threads": 5}


class PhaseRecorder(CpuBackend):
    """The CPU backend, logging the calls whose order the runner must get right."""

    log: ClassVar[list[str]] = []

    def new_phase(self):
        self.log.append("new phase")

    def free_memory(self):
        self.log.append("free memory asked")
        return super().free_memory()

    def for_mode(self, fn, mode):
        self.log.append("prepare")
        return super().for_mode(fn, mode)


@pytest.mark.slow  # a whole tiny run with its ceilings: 25–32 s on 2 cores
def test_the_workloads_start_a_new_phase_after_the_ceilings(tiny, capsys, monkeypatch):
    PhaseRecorder.log = []
    monkeypatch.setattr(runner, "select_backend", lambda name, threads: PhaseRecorder(threads or 1))
    assert tiny() == 0
    log = PhaseRecorder.log
    assert log.count("new phase") == 1
    ceilings, workloads = log[: log.index("new phase")], log[log.index("new phase") + 1 :]
    assert ceilings and set(ceilings) == {"prepare"}  # the ceilings' own captures
    assert workloads[0] == "free memory asked"  # budgets come after every other setup, before any point
    assert workloads.count("prepare") == 2 * 4  # each point of the tiny profile


def test_the_harness_and_the_snippet_agree_on_cudnn_benchmark(cuda, monkeypatch):
    import inspect

    import torch

    from snippets import cnn

    monkeypatch.setattr(torch.backends.cudnn, "benchmark", not cnn.CUDNN_BENCHMARK)
    backend_on(cuda)
    assert torch.backends.cudnn.benchmark == cnn.CUDNN_BENCHMARK
    assert "torch.backends.cudnn.benchmark = CUDNN_BENCHMARK" in inspect.getsource(cnn)


def test_the_fp8_ceiling_uses_fast_accumulation(monkeypatch):
    import torch

    from benchmarks.measure import ceilings

    seen = {}
    monkeypatch.setattr(torch, "_scaled_mm", lambda *args, **kwargs: seen.update(kwargs))
    ceilings._matmul_call("float8", 16, "cpu")()
    assert seen["use_fast_accum"] is ceilings.FP8_FAST_ACCUM is True


def test_on_cuda_the_copy_curve_starts_where_copies_outlast_their_launch():
    from benchmarks.measure.ceiling_plan import COPY_CURVE_MIN_WORKING_SET, plan_ceilings

    plan = plan_ceilings("cuda", ["bfloat16"], 100 * 2**30)
    assert min(plan.copy_sizes) * 2 >= COPY_CURVE_MIN_WORKING_SET["cuda"] == 64 * 2**20
    assert min(plan.working_sets) < 2**20  # the read curve still starts inside the cache
    assert min(plan_ceilings("cpu", ["float32"], None).copy_sizes) == 2**13


def test_the_device_state_at_the_end_of_a_run(monkeypatch):
    import subprocess
    from types import SimpleNamespace

    import torch

    from benchmarks.measure import fingerprint

    known = "clocks_event_reasons.active"
    asked = []

    def nvidia_smi(command, **kwargs):
        query = next(arg for arg in command if arg.startswith("--query-gpu="))
        asked.append(query.split(",")[-1])
        if not query.endswith(known):  # nvidia-smi refuses a query with a field it does not know
            raise subprocess.CalledProcessError(2, command, output='Field "..." is not a valid field to query.')
        assert query == f"--query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,{known}"
        return SimpleNamespace(stdout="1980, 2619, 61, 512.25, 0x0000000000000000\n")

    monkeypatch.setattr(subprocess, "run", nvidia_smi)
    backend = SimpleNamespace(kind="cuda", device=torch.device("cuda", 0))
    assert fingerprint.device_state(backend) == {
        "clocks_mhz": {"sm": 1980.0, "memory": 2619.0},
        "temperature_c": 61.0,
        "power_w": 512.25,
        "throttle_reasons": "0x0000000000000000",
    }
    assert asked == ["clocks_event_reasons.active"]  # today's name first
    known, asked[:] = "clocks_throttle_reasons.active", []  # a driver from before the rename
    assert fingerprint.device_state(backend)["throttle_reasons"] == "0x0000000000000000"
    assert asked == ["clocks_event_reasons.active", "clocks_throttle_reasons.active"]
    assert fingerprint.device_state(SimpleNamespace(kind="cpu")) is None


def test_the_fingerprint_records_the_flags_that_change_kernels():
    from benchmarks.measure.fingerprint import fingerprint

    found = fingerprint(CpuBackend(1))
    assert set(found["math_flags"]) == {"matmul_allow_tf32", "cudnn_allow_tf32", "cudnn_benchmark"}
    assert "cudnn" in found


def test_the_smokes_out_of_memory_happens_inside_a_capture(cuda):
    import torch

    from benchmarks.measure.smoke import IMPOSSIBLE_BYTES, impossible_call

    asked = []

    def allocate(size):
        asked.append((size, cuda.capturing))
        if size >= IMPOSSIBLE_BYTES:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4194304.00 TiB")

    backend = backend_on(cuda)
    call = impossible_call(backend, allocate)
    with pytest.raises(torch.OutOfMemoryError):
        backend.for_mode(call, "graph")
    assert call.reached
    assert asked == [(1, False)] * CudaBackend.WARMUP_CALLS + [(IMPOSSIBLE_BYTES, True)]
    assert cuda.current is cuda.default and cuda.allocator.recording == set()


def test_an_out_of_memory_that_invalidates_its_capture_is_still_an_out_of_memory(cuda):
    """torch's capture_end raises its own error when the capture was invalidated, with the OOM as its context."""
    import torch

    from benchmarks.measure.sampler import TimedPoint, measure_points

    backend = backend_on(cuda)

    def allocate_too_much():
        if cuda.capturing:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 EiB")

    original = cuda.graph

    @contextlib.contextmanager
    def invalidating(graph, pool=None, stream=None):
        with original(graph, pool=pool, stream=stream):
            try:
                yield
            except torch.OutOfMemoryError:
                raise RuntimeError("CUDA error: operation failed due to a previous error during capture") from None

    cuda.graph = invalidating
    points = [TimedPoint("c", 1, lambda: backend.for_mode(allocate_too_much, "graph")),
              TimedPoint("c", 2, lambda: backend.for_mode(allocate_too_much, "graph"))]  # fmt: skip
    outcomes = measure_points(backend, points, rounds=1, min_sample_s=0.0, warmup_s=0.0)
    assert [outcomes[("c", b)].status for b in (1, 2)] == ["oom", "skipped"]
