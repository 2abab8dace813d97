"""Adapters from the snippets to the harness: cost model, correctness check, prepared calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from snippets import mlp

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def torch_dtype(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; choose from {', '.join(DTYPES)}") from None


def element_size(name: str) -> int:
    return torch.finfo(torch_dtype(name)).bits // 8


class MLP:
    """snippets/mlp.py: `depth` Linear+ReLU layers of `width` features."""

    name = "mlp"

    def cost(self, params: dict, dtype: str, batch: int) -> tuple[int, int]:
        return mlp.mlp_cost(batch, params["width"], params["depth"], element_size(dtype))

    def weight_bytes(self, params: dict, dtype: str) -> int:
        return self.cost(params, dtype, 0)[1]

    def check(self, dtype: str, device: torch.device) -> tuple[float, float]:
        """(relative error, tolerance) against float64; raises AssertionError when off."""
        error = mlp.check_correctness(torch_dtype(dtype), device)
        return error, mlp.TOLERANCE[torch_dtype(dtype)]

    def setup(self, params: dict, dtype: str, device: torch.device, copies: int) -> Callable[[int], Callable[[], Any]]:
        """Build `copies` independent models; return batch -> a call that runs each once."""
        models = [mlp.make_mlp(params["width"], params["depth"], torch_dtype(dtype), device) for _ in range(copies)]

        def call_for(batch: int) -> Callable[[], Any]:
            x = torch.randn(batch, params["width"], device=device, dtype=torch_dtype(dtype))

            def forward_every_copy() -> None:
                for model in models:
                    model(x)

            return forward_every_copy

        return call_for


WORKLOADS = {workload.name: workload for workload in (MLP(),)}
