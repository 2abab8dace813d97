"""Which ceiling points a run measures: buffer sizes, working sets and matmul sizes per device kind.

Pure Python, so that the time estimate plans the ceilings exactly as the run measures them.
"""

from __future__ import annotations

from dataclasses import dataclass

COPY_BYTES = {"cpu": 256 * 2**20, "cuda": 2**30}  # the ceiling's buffer: far larger than any last-level cache
MATMUL_N = {"cpu": 2048, "cuda": 8192}  # the ceiling's matmul size
CPU_LOW_PRECISION_MATMUL_N = 1024  # bf16/fp16 matmul is slow on most CPUs
WARMUP_S = 0.05

# Working sets from well inside L1/L2 to far beyond the last-level cache, in bytes.
WORKING_SETS = {
    "cpu": [2**e for e in range(14, 30)],  # 16 KiB .. 512 MiB
    "cuda": [round(2 ** (e / 2)) // 256 * 256 for e in range(34, 67)],  # 128 KiB .. 8 GiB, steps of √2
}
# The copy curve starts here. On a GPU a copy of a cache-sized buffer lasts about as long as
# launching it, so a call of many small copies (one graph node each) times the nodes, not the cache:
# the read curve (one kernel re-reading its buffer) is the instrument below this size.
COPY_CURVE_MIN_WORKING_SET = {"cpu": 0, "cuda": 64 * 2**20}
# Bytes each timed call moves, so that small working sets are not timed as launch overhead.
BYTES_PER_CALL = {"cpu": 64 * 2**20, "cuda": 512 * 2**20}
MAX_REPEATS = {"cpu": 4096, "cuda": 256}  # copies per call (a CUDA graph of that many nodes)
MATMUL_SIZES = {"cpu": [64, 128, 256, 512, 1024, 2048], "cuda": [256, 512, 1024, 2048, 4096, 8192, 16384]}
SLOW_MATMUL_MAX_N = {"cpu": 1024, "cuda": 8192}  # fp32, TF32 and CPU bf16 stop here: the next size costs seconds
# The matmul dtypes a CUDA device of compute capability 8.9 or later is measured in (earlier ones
# lack some). float32 runs with TF32 off (torch's default); tfloat32 is the same fp32 tensors with
# TF32 allowed; float8 is e4m3 through torch._scaled_mm.
CUDA_MATMUL_DTYPES = ("float32", "tfloat32", "bfloat16", "float16", "float8")


@dataclass(frozen=True)
class CeilingPlan:
    kind: str  # "cpu" or "cuda"
    copy_sizes: list[int]  # bytes per buffer (working set: twice that)
    ceiling_copy: int  # the copy size whose bandwidth is the run's ceiling
    working_sets: list[int]  # read curve
    matmul_sizes: dict[str, list[int]]  # dtype -> n
    matmul_ceilings: dict[str, int]  # dtype -> the n whose rate is the run's ceiling

    def points(self) -> list[tuple[object, int, bool]]:
        """(curve, size, is the ceiling itself) for every point, in the order they are set up."""
        found = [("copy", size, size == self.ceiling_copy) for size in self.copy_sizes]
        found += [("read", size, False) for size in self.working_sets]
        for dtype, sizes in self.matmul_sizes.items():
            found += [(("matmul", dtype), n, n == self.matmul_ceilings[dtype]) for n in sizes]
        return found


# The smoke profile's ceilings: every code path at sizes that take moments (not measurements to use).
SMALL_COPY_BYTES = 4 * 2**20
SMALL_WORKING_SETS = [2**14, 2**20, 2**26]
SMALL_MATMUL_SIZES = [64, 256]


def matmul_ceiling_n(kind: str, dtype: str) -> int:
    return CPU_LOW_PRECISION_MATMUL_N if kind == "cpu" and dtype != "float32" else MATMUL_N[kind]


def plan_ceilings(
    kind: str, matmul_dtypes: list[str], free_bytes: int | None, small: bool = False, ceilings_only: bool = False
) -> CeilingPlan:
    """The ceiling points of a device of this kind with `free_bytes` free (None: no limit); `small`
    for the smoke profile; `ceilings_only` for the ceilings without their curves (a model sweep)."""
    if ceilings_only:
        full = plan_ceilings(kind, matmul_dtypes, free_bytes)
        sizes = {dtype: [n] for dtype, n in full.matmul_ceilings.items()}
        return CeilingPlan(kind, [full.ceiling_copy], full.ceiling_copy, [], sizes, full.matmul_ceilings)
    if small:
        matmuls = {dtype: SMALL_MATMUL_SIZES for dtype in matmul_dtypes}
        copies = sorted({w // 2 for w in SMALL_WORKING_SETS} | {SMALL_COPY_BYTES})
        ceilings = {dtype: SMALL_MATMUL_SIZES[-1] for dtype in matmul_dtypes}
        return CeilingPlan(kind, copies, SMALL_COPY_BYTES, SMALL_WORKING_SETS, matmuls, ceilings)
    ceiling_copy = COPY_BYTES[kind] if free_bytes is None else min(COPY_BYTES[kind], free_bytes // 8)
    # Every point is prepared before sampling starts, so all buffers are held at once (`held_bytes`):
    # about 6.8 times the largest working set for the copy and read curves together, each copy point
    # holding its source and destination; with working sets capped at 1/16 of the free memory and the
    # ceiling's buffer at 1/8, at most 56 % of it with 12 GiB or more free (39 % of an H200's).
    working_sets = [w for w in WORKING_SETS[kind] if free_bytes is None or w <= free_bytes // 16]
    curve_sizes = {w // 2 for w in working_sets if w >= COPY_CURVE_MIN_WORKING_SET[kind]}
    matmuls = {}
    for dtype in matmul_dtypes:
        ceiling_n = matmul_ceiling_n(kind, dtype)
        slow = dtype in ("float32", "tfloat32") or kind == "cpu"
        sizes = [n for n in MATMUL_SIZES[kind] if not slow or n <= max(SLOW_MATMUL_MAX_N[kind], ceiling_n)]
        sizes = [n for n in sizes if kind != "cpu" or dtype == "float32" or n <= ceiling_n]
        matmuls[dtype] = sorted(set(sizes) | {ceiling_n})
    ceilings = {dtype: matmul_ceiling_n(kind, dtype) for dtype in matmul_dtypes}
    return CeilingPlan(kind, sorted(curve_sizes | {ceiling_copy}), ceiling_copy, working_sets, matmuls, ceilings)


def held_bytes(plan: CeilingPlan) -> int:
    """Bytes the ceiling curves hold at once: every copy point's source and destination, every read buffer."""
    return sum(2 * size for size in plan.copy_sizes) + sum(plan.working_sets)


def copy_repeats(size: int, kind: str) -> int:
    """Copies of a `size`-byte buffer per timed call."""
    return max(1, min(MAX_REPEATS[kind], BYTES_PER_CALL[kind] // (2 * size)))


def read_repeats(size: int, kind: str) -> int:
    """Reads of a `size`-byte buffer per timed call (one kernel)."""
    return max(1, BYTES_PER_CALL[kind] // size)
