"""What one call of an arbitrary model costs: FLOPs, a band of bytes moved, its operators, and peak memory.

FLOPs come from torch.utils.flop_counter (matrix products, convolutions and attention; elementwise work is
not counted), with formulas added for the attention kernels it does not know (the CPU's flash attention).
PyTorch's inference fast paths and fused kernels (the Transformer encoder layer, native multi-head
attention, oneDNN and cuDNN RNN layers) hide their work from the counter: when a call runs one, the call
is counted again with those fast paths off, and that count is used only when its outputs agree with the
fast path's. Any operator that does matrix work and is still not counted is named, with its share of the
call's operator time, so that no verdict rests on a count that missed it.

Bytes are a band. The low end: every weight read each time an operator uses it (an RNN reads its
recurrent weights at every time step; a gather such as an embedding reads only the rows it returns), the
call's inputs read once (a KV cache included) and its outputs written once: what a model moves when each
operator keeps everything but its weights on chip. The high end: every operator's inputs and outputs
read and written once each (nothing fused, nothing cached). Views move no data and are skipped.

The operators a call dispatches (views included) are counted too: times the per-operator cost of a tiny
probe, they are the call's fixed dispatch cost.
"""

from __future__ import annotations

import contextlib
import re
import resource
import sys
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode, flop_registry, sdpa_flop_count

aten = torch.ops.aten

# Kernels that do a whole layer's matrix work in one operator the counter cannot see into.
FAST_PATHS = frozenset(
    {
        "aten._transformer_encoder_layer_fwd",
        "aten._native_multi_head_attention",
        "aten.mkldnn_rnn_layer",
        "aten.mkldnn_rnn",
        "aten._cudnn_rnn",
        "aten.miopen_rnn",
        "aten._thnn_fused_lstm_cell",
        "aten._thnn_fused_gru_cell",
    }
)
# An operator whose name says it does matrix work (its FLOPs matter when the counter misses it).
MATRIX_WORK = re.compile(
    r"(?:^|[._])(?:add|b|badd|_int_|_scaled_)?mm$|conv|attention|rnn|lstm|gru|linear|matmul|einsum"
)
GATHERS = frozenset({"aten.embedding", "aten.index_select", "aten.gather", "aten.index", "aten.take"})


def _sdpa_cpu_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return sdpa_flop_count(query_shape, key_shape, value_shape)


EXTRA_FORMULAS = {
    op: _sdpa_cpu_flop
    for op in (
        getattr(aten, "_scaled_dot_product_flash_attention_for_cpu", None),
        getattr(aten, "_scaled_dot_product_fused_attention_overrideable", None),
    )
    if op is not None
}


def counted(op_name: str) -> bool:
    """Whether the FLOP counter (with this module's formulas) knows the operator."""
    packet = getattr(aten, op_name.removeprefix("aten."), None)
    return packet is not None and (packet in flop_registry or packet in EXTRA_FORMULAS)


@dataclass(frozen=True)
class CallCost:
    flops: float
    bytes_low: float  # weights at each use, inputs read and outputs written once
    bytes_high: float  # every operator's inputs and outputs
    ops: int = 0  # operators dispatched by one call, views included
    uncounted: tuple[tuple[str, float], ...] = ()  # (operator, share of the call's operator time)
    fast_paths: tuple[str, ...] = ()  # fast-path operators counted with the fast paths off
    fast_path_problem: str | None = None  # why the count with the fast paths off was not used


class _OperatorTimes(TorchDispatchMode):
    """Every operator a call dispatches, with the time spent in it (synchronised on CUDA)."""

    def __init__(self, device: torch.device):
        super().__init__()
        self.cuda = device.type == "cuda"
        self.seconds: dict[str, float] = defaultdict(float)
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        out = func(*args, **(kwargs or {}))
        if self.cuda:
            torch.cuda.synchronize()
        self.seconds[str(func.overloadpacket)] += time.perf_counter() - start
        self.ops += 1
        return out


class _OperatorBytes(TorchDispatchMode):
    """Sums the bytes of every non-view operator's tensor inputs and outputs (`total`), and the bytes of the
    weights each operator reads (`weights`: a gather counts the rows it returns)."""

    def __init__(self, weight_storages: set[int]):
        super().__init__()
        self.weight_storages = weight_storages
        self.total = 0
        self.weights = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if getattr(func, "is_view", False):
            return out
        inputs = [v for v in tree_leaves((args, kwargs or {})) if isinstance(v, torch.Tensor)]
        outputs = [v for v in tree_leaves(out) if isinstance(v, torch.Tensor)]
        self.total += sum(_nbytes(t) for t in inputs + outputs)
        read = {id(t): t for t in inputs if _storage(t) in self.weight_storages}
        if read:
            gather = str(func.overloadpacket) in GATHERS
            self.weights += sum(_nbytes(t) for t in outputs) if gather else sum(_nbytes(t) for t in read.values())
        return out


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _storage(t: torch.Tensor) -> int | None:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # tensors without storage (sparse, nested)
        return None


@contextlib.contextmanager
def fast_paths_off():
    """PyTorch's inference fast paths off: the encoder layer and native attention, oneDNN and cuDNN."""
    mha = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.backends.mkldnn.flags(enabled=False), torch.backends.cudnn.flags(enabled=False):
                yield
    finally:
        torch.backends.mha.set_fastpath_enabled(mha)


def _count(model, args, kwargs, weight_storages: set[int]):
    counter = FlopCounterMode(display=False, custom_mapping=EXTRA_FORMULAS)
    with counter as flops, _OperatorBytes(weight_storages) as moved:
        out = model(*args, **kwargs)
    return float(flops.get_total_flops()), moved, out


def outputs_agree(a, b) -> str | None:
    """None when two outputs hold the same tensors within the dtype's rounding, else what differs."""
    left = [t for t in tree_leaves(a) if isinstance(t, torch.Tensor)]
    right = [t for t in tree_leaves(b) if isinstance(t, torch.Tensor)]
    if len(left) != len(right):
        return f"{len(left)} output tensors against {len(right)}"
    for x, y in zip(left, right):
        if x.shape != y.shape:
            return f"output shapes {tuple(x.shape)} and {tuple(y.shape)}"
        if not x.is_floating_point():
            if not torch.equal(x, y):
                return "integer outputs differ"
            continue
        tolerance = 1e-3 if x.dtype in (torch.float32, torch.float64) else 5e-2
        x, y = x.float(), y.float()
        scale = max(float(x.abs().max()) if x.numel() else 0.0, 1e-6)
        worst = float((x - y).abs().max()) if x.numel() else 0.0
        if not worst <= tolerance * scale:
            return f"outputs differ by up to {worst:.3g} (largest value {scale:.3g})"
    return None


def call_cost(model: torch.nn.Module, args, kwargs, device: torch.device | None = None) -> CallCost:
    """Run the model under the counters: once as it runs (its operators and their times), once counted, and
    once more counted with the fast paths off when it ran one."""
    device = device or next((t.device for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)), None)
    weight_storages = {_storage(t) for t in (*model.parameters(), *model.buffers())} - {None}
    boundary = sum(_nbytes(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor))
    with torch.no_grad():
        with _OperatorTimes(device or torch.device("cpu")) as timed:
            model(*args, **kwargs)
        flops, moved, out = _count(model, args, kwargs, weight_storages)
        seen = sorted(op for op in timed.seconds if op in FAST_PATHS)
        problem = None
        if seen:
            try:
                with fast_paths_off():
                    slow_flops, slow_moved, slow_out = _count(model, args, kwargs, weight_storages)
                problem = outputs_agree(out, slow_out)
            except Exception as exc:  # a model that cannot run without its fast path keeps the fast count
                problem = f"{type(exc).__name__}: {exc}"[:160]
            if problem is None:
                flops, moved, out = slow_flops, slow_moved, slow_out
    boundary += sum(_nbytes(t) for t in tree_leaves(out) if isinstance(t, torch.Tensor))
    total_time = sum(timed.seconds.values()) or 1.0
    missed = [op for op in timed.seconds if MATRIX_WORK.search(op) and not counted(op)]
    if problem is None:
        missed = [op for op in missed if op not in FAST_PATHS]
    uncounted = tuple(sorted(((op, timed.seconds[op] / total_time) for op in missed), key=lambda x: -x[1]))
    low = float(moved.weights + boundary)
    return CallCost(
        flops, low, float(max(moved.total, low)), timed.ops, uncounted, tuple(seen) if problem is None else (), problem
    )


def peak_memory(model: torch.nn.Module, args, kwargs, device: torch.device) -> int:
    """CUDA: the allocator's peak during one call. CPU: the process's peak resident memory so far
    (a high-water mark: it never goes down, so it bounds this batch from above)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        with torch.no_grad():
            model(*args, **kwargs)
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device))
    with torch.no_grad():
        model(*args, **kwargs)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # bytes on macOS, KiB on Linux


def count_operators(fn) -> int:
    """The operators one call of `fn()` dispatches, views included."""
    with torch.no_grad(), _OperatorTimes(torch.device("cpu")) as timed:
        fn()
    return timed.ops
