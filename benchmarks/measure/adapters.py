"""Adapters from the snippets to the harness: cost model, correctness check, prepared calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from benchmarks import workloads
from benchmarks.workloads import Workload
from snippets import cnn, costs, decode, encoder, linear, mlp, moe, train

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def torch_dtype(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; choose from {', '.join(DTYPES)}") from None


def element_size(name: str) -> int:
    return torch.finfo(torch_dtype(name)).bits // 8


class Prepared:
    """Weight copies built once for a configuration; `call(batch, mode)` runs every copy once.

    Inputs are row prefixes of one buffer sized for the largest batch, so a sweep over
    thousands of batch sizes holds one input, not thousands. In mode "compile" the copies are
    wrapped in torch.compile (default mode, dynamic shapes, so one compilation serves every
    batch size, and the whole model as one graph); the first call compiles, inside the point's warm-up.
    """

    def __init__(self, copies: list[torch.nn.Module], features: int | tuple[int, ...], max_batch: int, dtype, device):
        self.copies = copies
        shape = (features,) if isinstance(features, int) else tuple(features)
        self.inputs = torch.randn(max_batch, *shape, device=device, dtype=torch_dtype(dtype))
        if len(shape) == 3:  # images: NHWC, the layout the convolutions are in
            self.inputs = self.inputs.contiguous(memory_format=torch.channels_last)
        self._compiled: list[Callable] | None = None
        self._compile_error: Exception | None = None

    def modules(self, mode: str) -> list[Callable]:
        if mode != "compile":
            return self.copies
        if self._compiled is None:
            # fullgraph: a graph break would time Python between compiled pieces, not the compiled model
            self._compiled = [torch.compile(module, dynamic=True, fullgraph=True) for module in self.copies]
        return self._compiled

    def call(self, batch: int, mode: str = "eager", copies: int | None = None) -> Callable[[], Any]:
        """One timed call: every copy (or the first `copies`) runs once on the batch's rows."""
        x = self.inputs[:batch]
        modules = self.modules(mode)[:copies]

        def forward_every_copy() -> None:
            for module in modules:
                module(x)

        if mode != "compile":
            return forward_every_copy

        def compiled_forward() -> None:
            if self._compile_error is not None:  # fail every batch at once, not one slow compile each
                raise self._compile_error
            try:
                forward_every_copy()
            except Exception as exc:
                self._compile_error = RuntimeError(f"torch.compile failed: {type(exc).__name__}: {exc}"[:400])
                raise self._compile_error from exc

        return compiled_forward


class Adapter:
    """What the harness needs of a workload beyond its spec: a correctness check, the prepared
    calls, and (optionally) what to record per point. FLOPs and bytes come from the spec."""

    spec: Workload

    @property
    def name(self) -> str:
        return self.spec.name

    def cost(self, params: dict, dtype: str, batch: int) -> tuple[float, float]:
        return self.spec.cost(params, element_size(dtype), batch)

    def weight_bytes(self, params: dict, dtype: str) -> float:
        return self.spec.weight_bytes(params, element_size(dtype))


class MLP(Adapter):
    """snippets/mlp.py: `depth` Linear+ReLU layers of `width` features."""

    spec = workloads.MLP
    kernel_sample: frozenset[int] = frozenset()

    def check(self, dtype: str, device: torch.device) -> tuple[float, float]:
        """(relative error, tolerance) against float64; raises AssertionError when off."""
        return mlp.check_correctness(torch_dtype(dtype), device), mlp.TOLERANCE[torch_dtype(dtype)]

    def setup(self, params: dict, dtype: str, device: torch.device, copies: int, max_batch: int) -> Prepared:
        width, depth = params["width"], params["depth"]
        models = [mlp.make_mlp(width, depth, torch_dtype(dtype), device) for _ in range(copies)]
        return Prepared(models, width, max_batch, dtype, device)


class Linear(Adapter):
    """snippets/linear.py: one Linear layer, the batch as the GEMM's M dimension."""

    spec = workloads.LINEAR

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


class MoE(Adapter):
    """snippets/moe.py: token-choice or expert-choice MoE FFN, or the dense FFN it matches.

    params: variant (token-choice, expert-choice or dense), experts, top_k, d_model, d_ff (per
    expert), skew (router bias), capacity_factor (expert choice). The dense baseline has hidden
    width top_k·d_ff: the parameters one token uses in the MoE.
    """

    spec = workloads.MOE

    def check(self, dtype: str, device: torch.device) -> tuple[float, float]:
        error = max(moe.check_correctness(torch_dtype(dtype), device, variant) for variant in moe.VARIANTS)
        return error, moe.TOLERANCE[torch_dtype(dtype)]

    def _module(self, params: dict, dtype: str, device: torch.device) -> torch.nn.Module:
        with torch.device(device):  # initialise the weights where they run, not on the CPU and copy
            if params["variant"] == "dense":
                module = moe.ffn(params["d_model"], params["top_k"] * params["d_ff"])
            else:
                module = moe.MoE(
                    params["d_model"], params["d_ff"], params["experts"], params["top_k"],
                    skew=params.get("skew", 0.0), variant=params["variant"],
                    capacity_factor=params.get("capacity_factor", 1.0),
                )  # fmt: skip
        return module.to(dtype=torch_dtype(dtype))

    def setup(self, params: dict, dtype: str, device: torch.device, copies: int, max_batch: int) -> Prepared:
        layers = [self._module(params, dtype, device) for _ in range(copies)]
        if params["variant"] != "dense":
            for layer in layers[1:]:  # one router for all copies: the same input routes the same way
                layer.router.load_state_dict(layers[0].router.state_dict())
        return Prepared(layers, params["d_model"], max_batch, dtype, device)

    @torch.no_grad()
    def point_info(self, prepared: Prepared, batch: int) -> dict:
        """The routing of this batch's input and the FLOPs and bytes it implies."""
        layer = prepared.copies[0]
        if not isinstance(layer, moe.MoE):
            return {}
        params = {"experts": layer.w_in.shape[0], "top_k": layer.top_k}
        max_load, mean_load, touched = moe.load(layer, prepared.inputs[:batch])
        rows = mean_load * params["experts"]
        d_model, d_ff = layer.w_in.shape[1], layer.w_in.shape[2]
        flops, moved = costs.moe_cost(
            batch, d_model, d_ff, params["experts"], layer.top_k, touched, rows, prepared.inputs.element_size()
        )
        routing = {"max_load": max_load, "mean_load": mean_load, "touched_experts": touched}
        if layer.variant == "expert-choice":
            routing["dropped_tokens"] = moe.dropped_tokens(layer, prepared.inputs[:batch])
        return {"flops": flops, "bytes": moved, "routing": routing}


class Conv(Adapter):
    """snippets/cnn.py: one same-padded k×k Conv2d over square images, channels-last."""

    spec = workloads.CONV

    def check(self, dtype: str, device: torch.device) -> tuple[float, float]:
        return cnn.check_correctness(torch_dtype(dtype), device), cnn.TOLERANCE[torch_dtype(dtype)]

    def setup(self, params: dict, dtype: str, device: torch.device, copies: int, max_batch: int) -> Prepared:
        p = params
        layers = [cnn.make_conv(p["c_in"], p["c_out"], p["kernel"], torch_dtype(dtype), device) for _ in range(copies)]
        return Prepared(layers, (p["c_in"], p["resolution"], p["resolution"]), max_batch, dtype, device)


class ResNet50(Adapter):
    """snippets/cnn.py: ResNet-50 (v1.5) in eval mode, channels-last, at a square input resolution."""

    spec = workloads.RESNET50

    def check(self, dtype: str, device: torch.device) -> tuple[float, float]:
        """The convolution against float64, then the model's parameter count against 25,557,032."""
        error = cnn.check_correctness(torch_dtype(dtype), device)
        cnn.check_resnet50(torch_dtype(dtype), device)
        return error, cnn.TOLERANCE[torch_dtype(dtype)]

    def setup(self, params: dict, dtype: str, device: torch.device, copies: int, max_batch: int) -> Prepared:
        models = [cnn.make_resnet50(torch_dtype(dtype), device) for _ in range(copies)]
        side = params["resolution"]
        return Prepared(models, (3, side, side), max_batch, dtype, device)


class DecodePrepared(Prepared):
    """Decoder copies sharing one KV cache, filled with random keys and values for `context`
    positions (the values do not change the cost; zeros are never timed)."""

    def __init__(self, copies, params: dict, max_batch: int, dtype, device):
        d_model, context = params["d_model"], params["context"]
        self.phase = params.get("phase", "decode")
        tokens = context if self.phase == "prefill" else 1
        super().__init__(copies, (tokens, d_model), max_batch, dtype, device)
        positions = context if self.phase == "prefill" else context + 1
        self.cache = copies[0].new_cache(max_batch, positions)
        self.cache.normal_()
        self.context = context
        self.params, self.dtype = dict(params), dtype
        self.backend = attention_backend(self, device)

    def step(self, batch: int, copies: int | None = None) -> Callable[[], Any]:
        """One unpinned call: every copy (or the first `copies`) runs the phase on the batch's sequences."""
        x, cache, context, models = self.inputs[:batch], self.cache, self.context, self.copies[:copies]
        if self.phase == "prefill":
            return lambda: [model.prefill(x, cache) for model in models]
        return lambda: [model.decode_step(x, cache, context) for model in models]

    def call(self, batch: int, mode: str = "eager", copies: int | None = None) -> Callable[[], Any]:
        if mode == "compile":
            raise ValueError("the decode workload has no compile mode")
        run, backend = self.step(batch, copies), self.backend

        def pinned() -> None:
            with sdpa_kernel([backend]):
                run()

        return pinned


# Attention backends in order of preference. On CUDA the math backend is never used: with grouped-query
# attention it copies each K/V head to every query head it serves (its reference implementation is
# `repeat_interleave`), which would erase the effect the decode curves measure.
ATTENTION_BACKENDS = {
    "cuda": (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION),
    "cpu": (SDPBackend.FLASH_ATTENTION, SDPBackend.MATH),
}


def attention_backend(prepared: DecodePrepared, device: torch.device) -> SDPBackend:
    """The first backend, in order of preference, that runs this decoder's calls here."""
    errors = []
    for backend in ATTENTION_BACKENDS[torch.device(device).type]:
        try:
            with torch.no_grad(), sdpa_kernel([backend]):
                prepared.step(1, copies=1)()
            return backend
        except RuntimeError as exc:  # "No available kernel", "No viable backend": try the next
            errors.append(f"{backend.name}: {str(exc).splitlines()[0][:120]}")
    raise RuntimeError("no attention backend runs this decoder: " + "; ".join(errors))


class Decode(Adapter):
    """snippets/decode.py: a decoder-only Transformer stack with a KV cache.

    params: layers, d_model, heads, kv_heads, d_ff, context, phase. decode: one step of `batch`
    sequences that each hold `context` tokens in the cache. prefill: `batch` prompts of `context`
    tokens. The batch is the number of sequences either way.
    """

    spec = workloads.DECODE

    def memory_needed(self, params: dict, dtype: str, batch: int) -> int:
        """Bytes the KV cache of this batch takes (the harness skips a batch that cannot fit)."""
        positions = params["context"] + (0 if params.get("phase") == "prefill" else 1)
        return costs.kv_cache_bytes(workloads.decoder_config(params), batch, positions, element_size(dtype))

    def check(self, dtype: str, device: torch.device) -> tuple[float, float]:
        return decode.check_correctness(torch_dtype(dtype), device), decode.TOLERANCE[torch_dtype(dtype)]

    def setup(self, params: dict, dtype: str, device: torch.device, copies: int, max_batch: int) -> Prepared:
        config = workloads.decoder_config(params)
        models = [decode.make_decoder(config, torch_dtype(dtype), device) for _ in range(copies)]
        return DecodePrepared(models, params, max_batch, dtype, device)

    def point_info(self, prepared: DecodePrepared, batch: int) -> dict:
        split = workloads.decoder_cost(prepared.params, element_size(prepared.dtype), batch)
        return {
            "bytes_split": {k: split[k] for k in ("weight_bytes", "kv_bytes", "activation_bytes")},
            "attention_backend": prepared.backend.name.lower(),
        }


class Encoder(Adapter):
    """snippets/encoder.py: a BERT-shaped encoder over `batch` sequences of `seq_len` tokens (hidden states in, one
    pooled vector per sequence out)."""

    spec = workloads.ENCODER

    def check(self, dtype: str, device: torch.device) -> tuple[float, float]:
        return encoder.check_correctness(torch_dtype(dtype), device), encoder.TOLERANCE[torch_dtype(dtype)]

    def setup(self, params: dict, dtype: str, device: torch.device, copies: int, max_batch: int) -> Prepared:
        config, pooler = workloads.encoder_config(params), params.get("pooler", "yes") == "yes"
        models = [encoder.make_encoder(config, torch_dtype(dtype), device, pooler=pooler) for _ in range(copies)]
        return Prepared(models, (params["seq_len"], params["d_model"]), max_batch, dtype, device)


class TrainPrepared(Prepared):
    """Training steps of model copies, each with its own optimizer; inputs and targets are row prefixes of one
    buffer each, sized for the largest batch. A timed call is one whole step of every copy (or the first `copies`)."""

    def __init__(self, steps: list[train.TrainStep], features: tuple[int, ...], max_batch: int, dtype, device):
        super().__init__([step.model for step in steps], features, max_batch, dtype, device)
        self.steps = steps
        self.targets = torch.randn_like(self.inputs)

    def call(self, batch: int, mode: str = "eager", copies: int | None = None) -> Callable[[], Any]:
        if mode == "compile":
            raise ValueError("the training workloads have no compile mode")
        x, target, steps = self.inputs[:batch], self.targets[:batch], self.steps[:copies]

        def step_every_copy() -> None:
            for step in steps:
                step(x, target)

        return step_every_copy


class Training(Adapter):
    """snippets/train.py: forward, loss, backward and optimizer step; records what autograd saves per point."""

    kind = ""

    def check(self, dtype: str, device: torch.device) -> tuple[float, float]:
        """Gradients and one update of each optimizer against float64."""
        return train.check_correctness(torch_dtype(dtype), device, self.kind), train.TOLERANCE[torch_dtype(dtype)]

    def build(self, params: dict, dtype: str, device: torch.device) -> torch.nn.Module:
        raise NotImplementedError

    def features(self, params: dict) -> tuple[int, ...]:
        raise NotImplementedError

    def setup(self, params: dict, dtype: str, device: torch.device, copies: int, max_batch: int) -> Prepared:
        if params.get("precision", "pure") != "pure":
            raise ValueError("the harness measures pure precision only (mixed precision is predicted, not measured)")
        steps = [train.TrainStep(self.build(params, dtype, device), params["optimizer"]) for _ in range(copies)]
        return TrainPrepared(steps, self.features(params), max_batch, dtype, device)

    def point_info(self, prepared: TrainPrepared, batch: int) -> dict:
        """The bytes autograd keeps for this batch's backward (the first copy's, parameters left out)."""
        x, target = prepared.inputs[:batch], prepared.targets[:batch]
        return {"saved_activation_bytes": train.saved_tensor_bytes(prepared.copies[0], x, target)}


class TrainMLP(Training):
    spec = workloads.TRAIN_MLP
    kind = "mlp"

    def build(self, params, dtype, device):
        return mlp.make_mlp(params["width"], params["depth"], torch_dtype(dtype), device)

    def features(self, params):
        return (params["width"],)


class TrainDecoder(Training):
    spec = workloads.TRAIN_DECODER
    kind = "decoder"

    def build(self, params, dtype, device):
        return train.make_decoder(workloads.decoder_config(params), torch_dtype(dtype), device)

    def features(self, params):
        return (params["seq"], params["d_model"])


ADAPTERS = {
    adapter.name: adapter
    for adapter in (MLP(), Linear(), MoE(), Conv(), ResNet50(), Decode(), Encoder(), TrainMLP(), TrainDecoder())
}
