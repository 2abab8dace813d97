"""Reference tables that more than one page shows, built once from the datasheet table.

Pure Python (no torch).
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.gpus import GPU, GPUS
from benchmarks.site.render import Table

RIDGE_COLUMNS = (
    ("float32", "fp32"),
    ("tfloat32", "TF32"),
    ("bfloat16", "bf16"),
    ("float16", "fp16"),
    ("float8", "fp8"),
)


def ridge_table(gpus: Sequence[GPU] = GPUS) -> Table:
    """The datasheet ridge batch of a large layer, b* = (F/BW)·(s/2), GPUs as rows and dtypes as columns."""
    rows = [
        [
            gpu.name,
            *(f"{gpu.ridge_batch(dtype):,.0f}" if dtype in gpu.peak_flops else "–" for dtype, _ in RIDGE_COLUMNS),
        ]
        for gpu in gpus
    ]
    return Table(
        ["GPU", *(f"{name} (rows)" for _, name in RIDGE_COLUMNS)],
        rows,
        "Ridge batch b* = (F/BW)·(s/2) from datasheet peaks (dense) and bandwidth; – where the GPU has no such "
        "units. TF32 stores fp32 operands (s = 4).",
    )
