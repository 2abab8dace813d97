"""Adapters from the snippets to the harness: cost model, correctness check, prepared calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from snippets import linear, mlp

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def torch_dtype(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; choose from {', '.join(DTYPES)}") from None


def element_size(name: str) -> int:
    return torch.finfo(torch_dtype(name)).bits // 8


class Prepared:
    """Weight copies built once for a configuration; `call(batch)` runs every copy once.

    Inputs are row prefixes of one buffer sized for the largest batch, so a sweep over
    thousands of batch sizes holds one input, not thousands.
    """

    def __init__(self, copies: list[torch.nn.Module], features: int, max_batch: int, dtype, device):
        self.copies = copies
        self.inputs = torch.randn(max_batch, features, device=device, dtype=torch_dtype(dtype))

    def call(self, batch: int) -> Callable[[], Any]:
        x = self.inputs[:batch]
        copies = self.copies

        def forward_every_copy() -> None:
            for module in copies:
                module(x)

        return forward_every_copy


class MLP:
    """snippets/mlp.py: `depth` Linear+ReLU layers of `width` features."""

    name = "mlp"
    kernel_sample: frozenset[int] = frozenset()

    def cost(self, params: dict, dtype: str, batch: int) -> tuple[int, int]:
        return mlp.mlp_cost(batch, params["width"], params["depth"], element_size(dtype))

    def weight_bytes(self, params: dict, dtype: str) -> int:
        return self.cost(params, dtype, 0)[1]

    def check(self, dtype: str, device: torch.device) -> tuple[float, float]:
        """(relative error, tolerance) against float64; raises AssertionError when off."""
        return mlp.check_correctness(torch_dtype(dtype), device), mlp.TOLERANCE[torch_dtype(dtype)]

    def setup(self, params: dict, dtype: str, device: torch.device, copies: int, max_batch: int) -> Prepared:
        width, depth = params["width"], params["depth"]
        models = [mlp.make_mlp(width, depth, torch_dtype(dtype), device) for _ in range(copies)]
        return Prepared(models, width, max_batch, dtype, device)


class Linear:
    """snippets/linear.py: one Linear layer, the batch as the GEMM's M dimension."""

    name = "linear"

    def cost(self, params: dict, dtype: str, batch: int) -> tuple[int, int]:
        return linear.linear_cost(batch, params["in_features"], params["out_features"], element_size(dtype))

    def weight_bytes(self, params: dict, dtype: str) -> int:
        return self.cost(params, dtype, 0)[1]

    def check(self, dtype: str, device: torch.device) -> tuple[float, float]:
        return linear.check_correctness(torch_dtype(dtype), device), linear.TOLERANCE[torch_dtype(dtype)]

    def setup(self, params: dict, dtype: str, device: torch.device, copies: int, max_batch: int) -> Prepared:
        layers = [
            linear.make_linear(params["in_features"], params["out_features"], torch_dtype(dtype), device)
            for _ in range(copies)
        ]
        return Prepared(layers, params["in_features"], max_batch, dtype, device)

    def kernels(self, prepared: Prepared, batch: int) -> list[str]:
        """The kernels (CUDA) or ops (CPU) that one call runs at this batch size."""
        return linear.kernel_names(prepared.copies[0], prepared.inputs[:batch])


WORKLOADS = {workload.name: workload for workload in (MLP(), Linear())}
