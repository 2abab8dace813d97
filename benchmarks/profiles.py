"""What each profile measures. Pure Python, so `python -m benchmarks list` needs no torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmarks.workloads import WORKLOADS


@dataclass(frozen=True)
class CurvePlan:
    """One workload configuration measured at many batch sizes, per dtype and mode.

    `rounds`, `min_sample_s` and `warmup_s` override the profile's for this sweep's points.
    `kernel_batches` are the batch sizes at which the library's kernel choice is recorded.
    `cache`, when set, fixes the cache state for this sweep whatever `run --cache` says.
    """

    workload: str
    params: dict[str, Any]
    dtypes: tuple[str, ...]
    modes: tuple[str, ...]
    batches: tuple[int, ...]
    rounds: int | None = None
    min_sample_s: float | None = None
    warmup_s: float | None = None
    kernel_batches: frozenset[int] = field(default_factory=frozenset)
    cache: str | None = None

    def label(self) -> str:
        params = " ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.workload} {params}"


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    sweeps: tuple[CurvePlan, ...]
    rounds: int  # samples per point, taken in rounds that interleave every point of the run
    min_sample_s: float  # each sample repeats the call until it lasts at least this long
    warmup_s: float = 0.05  # per point, before calibration
    small_ceilings: bool = False  # the smoke profile's: every ceiling code path at sizes that take moments

    def settings(self, sweep: CurvePlan) -> dict[str, Any]:
        """Sampling settings for a sweep: its own where given, else the profile's."""
        return {
            "rounds": sweep.rounds or self.rounds,
            "min_sample_s": sweep.min_sample_s or self.min_sample_s,
            "warmup_s": self.warmup_s if sweep.warmup_s is None else sweep.warmup_s,
        }


def fine_batches(every_row_to: int, every: int, to: int, odd_near: tuple[int, ...] = ()) -> tuple[int, ...]:
    """Every batch size up to `every_row_to`, then every `every` rows up to `to`, plus the
    sizes one row either side of each multiple of `odd_near` beyond that."""
    batches = set(range(1, every_row_to + 1)) | set(range(every_row_to + every, to + 1, every))
    for multiple in odd_near:
        for m in range(multiple, to + 1, multiple):
            if m > every_row_to:
                batches |= {m - 1, m, m + 1}
    return tuple(sorted(b for b in batches if b <= to))


def kernel_sample(batches: tuple[int, ...]) -> frozenset[int]:
    """Batch sizes at which to record the kernel: the smallest, and either side of multiples of 32
    (to 512) and of 128 (beyond). Each needs one profiled call, so not every size gets one."""
    return frozenset(b for b in batches if b <= 8 or (b % 32 in (0, 1) and b <= 512) or b % 128 in (0, 1))


QUICK_BATCHES = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
FULL_BATCHES = (
    1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512,
    768, 1024, 1536, 2048, 3072, 4096,
)  # fmt: skip
QUICK_MOE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
QUICK_LINEAR_BATCHES = (1, *range(2, 129, 2), *range(136, 257, 8))
FULL_LINEAR_BATCHES = fine_batches(512, 8, 4096, odd_near=(64, 128))
FULL_FP32_BATCHES = tuple(b for b in FULL_BATCHES if b <= 1024)
# fp32 (no tensor cores) to 512: every size to 128, then every 4 plus either side of each multiple of 64
# (every size to 512 was 512 points, 40 s of the estimate's upper end in captures and samples)
FULL_FP32_LINEAR_BATCHES = fine_batches(128, 4, 512, odd_near=(64,))


def moe_sweeps(d_model, d_ff, shapes, skews, dtypes, batches, **settings) -> tuple[CurvePlan, ...]:
    """Token choice at each skew (eager only: its dispatch syncs with the host), expert choice and
    the dense baseline (graph and eager), for each (experts, top_k)."""
    sweeps = []
    for experts, top_k in shapes:
        base = {"experts": experts, "top_k": top_k, "d_model": d_model, "d_ff": d_ff}
        for skew in skews:
            params = {"variant": "token-choice", **base, "skew": skew}
            sweeps.append(CurvePlan("moe", params, dtypes, ("eager",), batches, **settings))
        params = {"variant": "expert-choice", **base, "capacity_factor": 1.0}
        sweeps.append(CurvePlan("moe", params, dtypes, ("graph", "eager"), batches, **settings))
        sweeps.append(CurvePlan("moe", {"variant": "dense", **base}, dtypes, ("graph", "eager"), batches, **settings))
    return tuple(sweeps)


TINY_WIDTH = 64  # an MLP this narrow does almost no work: its time is the framework's per-op cost


def overhead_sweeps(widths, dtypes, modes, batches) -> tuple[CurvePlan, ...]:
    """MLPs with resident weights in every execution mode: eager, CUDA graph, torch.compile.
    Resident so that all modes run the same weights; one of the widths is tiny."""
    return tuple(
        CurvePlan("mlp", {"width": width, "depth": 8}, dtypes, modes, batches, cache="resident") for width in widths
    )


def cache_sweeps(widths, dtypes, modes, covered: dict[str, set[int]], batches=(1,)) -> tuple[CurvePlan, ...]:
    """The same MLP at one small batch across widths, with its weights resident and rotated: the
    weight bandwidth drops where the weights stop fitting in the last cache level. Widths that
    another sweep already measures in that cache state are left to it (one curve per config)."""
    return tuple(
        CurvePlan("mlp", {"width": width, "depth": 8}, dtypes, modes, batches, cache=cache)
        for cache in ("resident", "rotated")
        for width in widths
        if width not in covered.get(cache, set())
    )


def decode_sweeps(
    model: dict, contexts, gqa_kv_heads: int, dtypes, modes, batches, prefill_context, prefill_max_batch, **settings
):
    """Decode steps at each context with full multi-head attention (kv_heads = heads) and with
    grouped-query attention, and a prefill at one prompt length for comparison."""
    sweeps = []
    for kv_heads in (model["heads"], gqa_kv_heads):
        for context in contexts:
            params = {**model, "kv_heads": kv_heads, "context": context, "phase": "decode"}
            sweeps.append(CurvePlan("decode", params, dtypes, modes, batches, **settings))
    # Prefill is compute-bound from the first prompt on, so its weights need no rotation (copies
    # would only multiply its long calls); it runs to `prefill_max_batch` prompts.
    params = {**model, "kv_heads": gqa_kv_heads, "context": prefill_context, "phase": "prefill"}
    prefill_batches = tuple(b for b in batches if b <= prefill_max_batch)
    sweeps.append(CurvePlan("decode", params, dtypes, modes, prefill_batches, cache="resident", **settings))
    return tuple(sweeps)


def train_sweeps(mlp: dict, decoder: dict, dtypes, modes, mlp_batches, decoder_batches, **settings):
    """Training steps of the MLP with AdamW and with SGD, and of the decoder stack with AdamW. Resident: a step's
    working set (weights, gradients, optimizer state) is several times the weights, larger than any cache here,
    and copies would multiply the optimizer state."""
    sweeps = [
        CurvePlan(
            "train-mlp", {**mlp, "optimizer": optimizer}, dtypes, modes, mlp_batches, cache="resident", **settings
        )
        for optimizer in ("adamw", "sgd")
    ]
    params = {**decoder, "optimizer": "adamw"}
    sweeps.append(CurvePlan("train-decoder", params, dtypes, modes, decoder_batches, cache="resident", **settings))
    return tuple(sweeps)


QUICK_TRAIN_MLP = {"width": 512, "depth": 8}
QUICK_TRAIN_DECODER = {"layers": 2, "d_model": 256, "heads": 4, "kv_heads": 2, "d_ff": 768, "ffn": "swiglu", "seq": 64}
QUICK_MLP_WIDTHS = (256, 512, 1024)
BERT_BASE = {"layers": 12, "d_model": 768, "heads": 12, "d_ff": 3072, "seq_len": 128, "pooler": "yes"}
FULL_MLP_WIDTHS = (1024, 2048, 4096, 8192)

QUICK = Profile(
    name="quick",
    description="Any CPU, in under two minutes on 2 cores (1 thread; `list` gives the estimate): bandwidth and "
    "matmul curves; fp32 MLPs of width 256 to 1024 at batch 1 to 512 with rotated weights, a 64-wide and a "
    "1024-wide one with resident weights (eager and torch.compile), widths 128 to 2048 at batch 1 resident and "
    "rotated, one 1024-wide Linear layer (cache-resident) at every second batch size to 128, then every 8 to 256, an "
    "8-expert top-2 MoE layer (three routing skews, expert choice, dense baseline) at batch 1 to 256, three Conv2d "
    "layers and ResNet-50 at 64×64 pixels to batch 32 and 16, and decode steps of a 2-layer, 512-wide Transformer "
    "at contexts 128 and 2048 (MHA and GQA) with a prefill, to batch 32; training steps (forward, backward, "
    "update) of an 8×512 MLP with AdamW and with SGD to batch 256 and of a 2-layer, 256-wide decoder on 64-token "
    "sequences with AdamW to batch 16.",
    sweeps=(
        *(
            CurvePlan("mlp", {"width": width, "depth": 8}, ("float32",), ("graph", "eager"), QUICK_BATCHES)
            for width in QUICK_MLP_WIDTHS
        ),
        *overhead_sweeps((TINY_WIDTH,), ("float32",), ("eager", "compile"), QUICK_BATCHES),
        *overhead_sweeps((1024,), ("float32",), ("eager",), QUICK_BATCHES),
        *cache_sweeps(
            (128, 256, 384, 512, 768, 1024, 1536, 2048),
            ("float32",),
            ("eager",),
            covered={"rotated": set(QUICK_MLP_WIDTHS), "resident": {TINY_WIDTH, 1024}},
        ),
        CurvePlan(
            "linear",
            {"in_features": 1024, "out_features": 1024},
            ("float32",),
            ("graph", "eager"),
            QUICK_LINEAR_BATCHES,
            rounds=9,
            min_sample_s=0.003,
            warmup_s=0.005,
            # A 4 MiB layer is compute-bound past a few rows on a CPU, where tiling steps would
            # show; rotating 24 copies through the cache would multiply the sweep's time by 24.
            cache="resident",
        ),  # no kernel names on a CPU: the profiler sees only aten::addmm, not the BLAS kernel
        *moe_sweeps(256, 512, [(8, 2)], (0.0, 1.0, 2.0), ("float32",), QUICK_MOE_BATCHES, rounds=7, min_sample_s=0.01),
        *(
            # resident: 64 rotated copies of a 0.1–4 MiB filter would make each call 64 layers long on a CPU
            CurvePlan(
                "conv",
                dict(zip(("c_in", "c_out", "kernel", "resolution"), shape)),
                ("float32",),
                ("eager",),
                (1, 2, 4, 8, 16, 32),
                rounds=7,
                min_sample_s=0.01,
                cache="resident",
            )
            for shape in ((64, 64, 3, 56), (256, 256, 3, 14), (2048, 512, 1, 7))
        ),
        CurvePlan(
            "resnet50", {"resolution": 64}, ("float32",), ("eager",), (1, 2, 4, 8, 16), rounds=5, min_sample_s=0.01
        ),
        *decode_sweeps(
            {"layers": 2, "d_model": 512, "heads": 8, "d_ff": 2048, "ffn": "swiglu"},
            (128, 2048),
            2,
            ("float32",),
            ("eager",),
            (1, 2, 4, 8, 16, 32),
            prefill_context=128,
            prefill_max_batch=8,
            rounds=7,
            min_sample_s=0.01,
        ),
        *train_sweeps(
            QUICK_TRAIN_MLP,
            QUICK_TRAIN_DECODER,
            ("float32",),
            ("eager",),
            (1, 2, 4, 8, 16, 32, 64, 128, 256),
            (1, 2, 4, 8, 16),
            rounds=7,
            min_sample_s=0.02,
        ),
    ),
    rounds=13,
    min_sample_s=0.02,
    warmup_s=0.02,
)

FULL = Profile(
    name="full",
    description="A GPU, in an estimated 2 to 4½ minutes on an H200 (`list` gives the estimate by part and its "
    "assumptions; no H200 run is committed yet): bandwidth and matmul curves (every dtype the GPU has); MLPs of "
    "width 1024 to 8192, bf16 at batch 1 to 4096 and fp32 to 1024, CUDA-graph replay and eager; 64- and "
    "1024-wide bf16 MLPs with resident weights in graph and eager (the 64-wide one also through torch.compile); "
    "widths 256 to 8192 at batch 1 resident and rotated; one 8192-wide Linear layer in bf16 at every batch size "
    "to 512, then every 8 to 4096 plus the sizes around each multiple of 64 (fp32: every size to 128, then every "
    "4 to 512 and the sizes around each multiple of 64), graph replay; MoE layers with 8 and 32 experts "
    "(top-2, top-4) at three routing skews, expert choice and the dense baseline; five Conv2d layers to batch "
    "1024 and ResNet-50 at 224×224 to batch 512; decode steps of a 4-layer, 4096-wide Transformer (d_ff 14336) "
    "at contexts 128 to 32768, MHA and 8 KV heads, to batch 512 (skipping batches whose KV cache exceeds its "
    "share of 70 % of the memory left free), and a 512-token prefill; a BERT-base encoder over 128-token sequences "
    "to batch 256; training steps (forward, backward, update) "
    "of the 8×1024 MLP with AdamW and SGD to batch 4096 and of one such decoder layer on 512-token sequences with "
    "AdamW to batch 32, bf16, graph replay and eager.",
    sweeps=(
        *(
            CurvePlan("mlp", {"width": width, "depth": 8}, dtypes, ("graph", "eager"), batches)
            for width in FULL_MLP_WIDTHS
            # fp32 runs without tensor cores: past batch 1024 it only repeats its slope, slowly
            for dtypes, batches in ((("bfloat16",), FULL_BATCHES), (("float32",), FULL_FP32_BATCHES))
        ),
        # one torch.compile (tens of seconds of the budget): the tiny MLP, where overhead is everything
        *overhead_sweeps((TINY_WIDTH,), ("bfloat16",), ("graph", "eager", "compile"), FULL_BATCHES),
        *overhead_sweeps((1024,), ("bfloat16",), ("graph", "eager"), FULL_BATCHES),
        *cache_sweeps(
            (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192),
            ("bfloat16",),
            ("graph",),
            covered={"rotated": set(FULL_MLP_WIDTHS), "resident": {TINY_WIDTH, 1024}},
        ),
        *(
            CurvePlan(
                "linear",
                {"in_features": 8192, "out_features": 8192},
                (dtype,),
                ("graph",),
                batches,
                rounds=10,
                min_sample_s=0.0005,
                warmup_s=0.002,
                kernel_batches=kernel_sample(batches),
            )
            # fp32 (no tensor cores) is ~15× slower per row: its steps are charted to batch 512
            for dtype, batches in (("bfloat16", FULL_LINEAR_BATCHES), ("float32", FULL_FP32_LINEAR_BATCHES))
        ),
        *moe_sweeps(2048, 2048, [(8, 2), (32, 4)], (0.0, 1.0, 2.0), ("bfloat16",), FULL_BATCHES, rounds=15),
        *(
            CurvePlan(
                "conv",
                dict(zip(("c_in", "c_out", "kernel", "resolution"), shape)),
                ("bfloat16",),
                ("graph",),
                tuple(b for b in FULL_BATCHES if b <= 1024),
                rounds=15,
            )
            for shape in ((64, 64, 3, 56), (128, 128, 3, 28), (256, 256, 3, 14), (512, 512, 3, 7), (1024, 256, 1, 14))
        ),
        CurvePlan(
            "resnet50",
            {"resolution": 224},
            ("bfloat16",),
            ("graph", "eager"),
            tuple(b for b in FULL_BATCHES if b <= 512),
            rounds=15,
        ),
        *decode_sweeps(
            {"layers": 4, "d_model": 4096, "heads": 32, "d_ff": 14336, "ffn": "swiglu"},
            (128, 2048, 8192, 32768),
            8,
            ("bfloat16",),
            ("graph",),
            (1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
            prefill_context=512,
            prefill_max_batch=64,
            rounds=15,
        ),
        CurvePlan("encoder", BERT_BASE, ("bfloat16",), ("graph", "eager"), (1, 2, 4, 8, 16, 32, 64, 128, 256)),
        *train_sweeps(
            {"width": 1024, "depth": 8},
            {"layers": 1, "d_model": 4096, "heads": 32, "kv_heads": 8, "d_ff": 14336, "ffn": "swiglu", "seq": 512},
            ("bfloat16",),
            ("graph", "eager"),
            (1, 4, 16, 64, 256, 1024, 4096),
            (1, 2, 4, 8, 16, 32),
            rounds=10,
        ),
    ),
    rounds=20,
    min_sample_s=0.002,
    warmup_s=0.01,  # graph replays need no more: the capture already ran the call four times
)

SMOKE_DECODER = {"layers": 1, "d_model": 64, "heads": 4, "d_ff": 128, "ffn": "swiglu"}
SMOKE_MOE = {"experts": 4, "top_k": 2, "d_model": 32, "d_ff": 32}
SMOKE = Profile(
    name="smoke",
    description="Every code path the full profile uses, at tiny sizes, in seconds (not measurements to publish: "
    "its file goes to a temporary directory): small ceiling curves, every workload, graph, eager and "
    "torch.compile, rotated and resident weights, kernel names, the attention backend, and one deliberate "
    "out-of-memory; prints PASS or FAIL per path.",
    sweeps=(
        CurvePlan("mlp", {"width": 32, "depth": 2}, ("bfloat16",), ("graph", "eager"), (1, 4, 16)),
        CurvePlan("mlp", {"width": 32, "depth": 2}, ("float32",), ("graph", "eager", "compile"), (1, 4, 16)),
        CurvePlan("mlp", {"width": 48, "depth": 2}, ("float32",), ("graph", "eager"), (1, 4), cache="resident"),
        CurvePlan(
            "linear",
            {"in_features": 64, "out_features": 64},
            ("float32",),
            ("graph", "eager"),
            (1, 2, 3, 8),
            kernel_batches=frozenset({1, 8}),
        ),
        # 4 MiB of weights: rotated through 2-64 copies under any last-level cache from 1.4 to 85 MiB, where the
        # tiny sweeps above stay resident (64 copies cannot span 3 caches) and ResNet-50's 51 MB needs one copy
        CurvePlan("linear", {"in_features": 1024, "out_features": 1024}, ("float32",), ("eager",), (1, 8)),
        CurvePlan("moe", {"variant": "token-choice", **SMOKE_MOE, "skew": 1.0}, ("float32",), ("eager",), (1, 8)),
        CurvePlan(
            "moe",
            {"variant": "expert-choice", **SMOKE_MOE, "capacity_factor": 1.0},
            ("float32",),
            ("graph", "eager"),
            (1, 8),
        ),
        CurvePlan("moe", {"variant": "dense", **SMOKE_MOE}, ("float32",), ("graph", "eager"), (1, 8)),
        CurvePlan(
            "conv", {"c_in": 8, "c_out": 8, "kernel": 3, "resolution": 8}, ("bfloat16",), ("graph", "eager"), (1, 4)
        ),
        CurvePlan("resnet50", {"resolution": 32}, ("bfloat16",), ("graph", "eager"), (1, 2)),
        *decode_sweeps(
            SMOKE_DECODER, (16,), 2, ("bfloat16",), ("graph", "eager"), (1, 4), prefill_context=8, prefill_max_batch=2
        ),
        *train_sweeps(
            {"width": 32, "depth": 2},
            {**SMOKE_DECODER, "kv_heads": 2, "seq": 8},
            ("float32",),
            ("graph", "eager"),
            (1, 4),
            (1, 2),
        ),
    ),
    rounds=2,
    min_sample_s=0.0005,
    warmup_s=0.0,
    small_ceilings=True,
)

PROFILES: dict[str, Profile] = {p.name: p for p in (QUICK, FULL, SMOKE)}


def select_sweeps(profile: Profile, only: list[str] | None) -> list[CurvePlan]:
    """The profile's sweeps, restricted to the named workloads; unknown names raise ValueError."""
    if not only:
        return list(profile.sweeps)
    unknown = sorted(set(only) - set(WORKLOADS))
    if unknown:
        raise ValueError(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    return [s for s in profile.sweeps if s.workload in only]
