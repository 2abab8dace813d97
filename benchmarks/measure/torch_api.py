"""Every torch name the measuring path uses, with the torch release that introduced it.

The GPU machine this project is measured on has torch 2.11 and no package index, so nothing newer may
slip in: tests/measure/test_torch_api.py finds every torch name that benchmarks/measure/, snippets/
and examples/ use (attributes, imports, `getattr(torch._C, "...")`) and fails on one missing here or
introduced after TARGET; `python -m benchmarks doctor` resolves each in the torch it runs on.

"2.0" stands for "2.0 or earlier". Versions of the newer names are torch's release notes': `sdpa_kernel`
and `torch.nn.attention` 2.3, cuDNN attention and `nn.RMSNorm` 2.4, the allocator's pool calls under
these names 2.8 (`_cuda_endAllocateCurrentStreamToPool` before).
"""

from __future__ import annotations

import importlib

TARGET = (2, 11)  # the GPU machine's torch

_OLD = """
torch torch.OutOfMemoryError torch.Tensor torch._C torch.__version__ torch._dynamo.utils.counters torch.arange
torch.backends torch.backends.cuda torch.backends.cuda.matmul torch.backends.cuda.matmul.allow_tf32
torch.backends.cudnn torch.backends.cudnn.allow_tf32 torch.backends.cudnn.benchmark torch.backends.cudnn.is_available
torch.backends.cudnn.version torch.bfloat16 torch.bincount torch.bmm torch.channels_last torch.compile torch.cuda
torch.cuda.CUDAGraph torch.cuda.Event torch.cuda.Stream torch.cuda.current_device torch.cuda.current_stream
torch.cuda.default_stream torch.cuda.device_count torch.cuda.empty_cache torch.cuda.get_device_capability
torch.cuda.get_device_properties torch.cuda.graph torch.cuda.graph_pool_handle torch.cuda.is_available
torch.cuda.is_current_stream_capturing torch.cuda.max_memory_allocated torch.cuda.mem_get_info
torch.cuda.reset_peak_memory_stats torch.cuda.set_device torch.cuda.set_stream torch.cuda.stream torch.cuda.synchronize
torch.device torch.dtype torch.empty torch.empty_like torch.finfo torch.flatten torch.float16 torch.float32
torch.float64 torch.get_float32_matmul_precision torch.get_num_threads torch.log1p torch.manual_seed torch.matmul
torch.nn torch.nn.AdaptiveAvgPool2d torch.nn.BatchNorm2d torch.nn.Conv2d torch.nn.Linear torch.nn.MaxPool2d
torch.nn.Module torch.nn.ModuleList torch.nn.Parameter torch.nn.ReLU torch.nn.Sequential torch.nn.functional
torch.nn.functional.conv2d torch.nn.functional.gelu torch.nn.functional.scaled_dot_product_attention
torch.nn.functional.silu torch.no_grad torch.ones torch.profiler torch.profiler.ProfilerActivity
torch.profiler.ProfilerActivity.CPU torch.profiler.ProfilerActivity.CUDA torch.profiler.profile torch.randint
torch.backends.cudnn.flags torch.backends.mkldnn torch.backends.mkldnn.flags torch.equal torch.ops torch.ops.aten
torch.inference_mode torch.isfinite torch.randn torch.relu torch.set_num_threads torch.sum torch.uint8 torch.unique
torch.utils._python_dispatch.TorchDispatchMode torch.zeros torch.zeros_like torch.version torch.version.cuda
torch.Generator torch.__version__.split torch.autograd torch.autograd.graph torch.autograd.graph.saved_tensors_hooks
torch.cat torch.enable_grad torch.int64 torch.nn.LayerNorm torch.nn.functional.cross_entropy
torch.nn.functional.mse_loss torch.optim torch.optim.AdamW torch.optim.Optimizer torch.optim.SGD torch.randn_like
torch.randperm torch.stack torch.tanh torch.tensor torch.nn.GRU
"""
SINCE: dict[str, str] = {
    **dict.fromkeys(_OLD.split(), "2.0"),
    "torch._scaled_mm": "2.1",  # with scale_a, scale_b and use_fast_accum as keywords since 2.4
    "torch.float8_e4m3fn": "2.1",
    "torch.utils.flop_counter.FlopCounterMode": "2.1",
    "torch.utils._pytree.tree_leaves": "2.1",
    "torch.nn.attention.SDPBackend": "2.3",
    "torch.nn.attention.SDPBackend.FLASH_ATTENTION": "2.3",
    "torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION": "2.3",
    "torch.nn.attention.SDPBackend.MATH": "2.3",
    "torch.nn.attention.sdpa_kernel": "2.3",
    "torch.nn.attention.SDPBackend.CUDNN_ATTENTION": "2.4",
    # the encoder-layer fast-path switch (pytorch/pytorch#112212, merged January 2024, so in 2.3)
    "torch.backends.mha": "2.3",
    "torch.backends.mha.get_fastpath_enabled": "2.3",
    "torch.backends.mha.set_fastpath_enabled": "2.3",
    # the SDPA formula came with the counter (pytorch/pytorch#95854, March 2023); the formula table by 2.3 at the
    # latest: both dated conservatively, and `doctor` resolves them in the torch it runs on
    "torch.utils.flop_counter.sdpa_flop_count": "2.1",
    "torch.utils.flop_counter.flop_registry": "2.3",
    "torch.nn.RMSNorm": "2.4",
    "torch._C._cuda_endAllocateToPool": "2.8",
    "torch._C._cuda_releasePool": "2.8",
}


def version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def resolve(name: str) -> bool:
    """Whether `name` (e.g. torch.nn.attention.sdpa_kernel) exists in the torch imported here."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):  # the longest importable module, then attributes
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for attribute in parts[split:]:
                found = getattr(found, attribute)
        except AttributeError:
            return False
        return True
    return False


def missing() -> list[str]:
    """The names the measuring path uses that this torch lacks."""
    return sorted(name for name in SINCE if not resolve(name))
