"""The workloads, one spec each: the single registry that every layer reads.

A spec names a workload, says what it is and which snippet holds it, declares its parameters
(types, ranges, the snippet's defaults), says what one element of its batch is, names a
configuration for charts, and counts its FLOPs and bytes with `snippets.costs`. The harness
measures the names listed here, the results reader checks records against these parameters, and
the site labels curves with them. Adding a workload means: its snippet, its cost in
`snippets.costs`, its spec here, its adapter in `benchmarks/measure/adapters.py`, its sweeps in
`benchmarks/profiles.py` and its page.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from snippets import costs


@dataclass(frozen=True)
class Param:
    """One workload parameter: its type, allowed values and the snippet's default."""

    name: str
    kind: type  # int, float or str
    description: str
    default: Any
    low: float | None = None  # inclusive bounds for numbers
    high: float | None = None
    choices: tuple[str, ...] = ()
    optional: bool = False

    def problem(self, value: Any) -> str | None:
        """Why `value` is not allowed for this parameter, or None when it is."""
        if self.kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        else:
            ok = isinstance(value, self.kind) and not isinstance(value, bool)
        if not ok:
            return f"must be {'a number' if self.kind is float else self.kind.__name__}, got {type(value).__name__}"
        if self.choices and value not in self.choices:
            return f"must be one of {', '.join(self.choices)}"
        if self.low is not None and not value >= self.low:
            return f"must be at least {self.low:g}"
        if self.high is not None and not value <= self.high:
            return f"must be at most {self.high:g}"
        return None

    def allowed(self) -> str:
        """The values it takes, in words: "one of a, b" or "1 to 1,048,576"."""
        if self.choices:
            return "one of " + ", ".join(self.choices)

        def number(value: float) -> str:
            return f"{value:,.0f}" if self.kind is int else f"{value:g}"

        if self.low is not None and self.high is not None:
            return f"{number(self.low)} to {number(self.high)}"
        if self.low is not None:
            return f"at least {number(self.low)}"
        return f"at most {number(self.high)}" if self.high is not None else "any"


@dataclass(frozen=True)
class BatchUnit:
    """What one element of the batch is, in the words of axes and tooltips."""

    axis: str
    throughput: str
    rate: str
    item: str  # a batch element in the plural: rows, images, sequences


ROWS = BatchUnit("batch size (rows)", "throughput (rows per second)", "rows/s", "rows")
IMAGES = BatchUnit("batch size (images)", "throughput (images per second)", "images/s", "images")
SEQUENCES = BatchUnit(
    "batch size (sequences, one new token each)", "throughput (tokens per second)", "tokens/s", "sequences"
)


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    snippet: str
    params: tuple[Param, ...]
    unit: BatchUnit
    label: Callable[[Mapping[str, Any]], str]  # a configuration among its siblings, e.g. "width 1024"
    shape: Callable[[Mapping[str, Any]], str]  # the configuration on its own, e.g. "8×1024 MLP"
    cost: Callable[[Mapping[str, Any], int, float], tuple[float, float]]  # (params, bytes/element, batch)
    weight_bytes: Callable[[Mapping[str, Any], int], float]  # (params, bytes/element)
    operators: Callable[[Mapping[str, Any]], int]  # operators one call runs (about; kernels on a GPU)
    bytes_counted: str  # in words: which traffic the cost counts, for `predict` and the pages
    consistency: Callable[[Mapping[str, Any]], str | None] = lambda params: None
    # Where one call runs kinds of work one after the other, each with its own roofline, (name, FLOPs, bytes) of
    # each: the roofline of the call is then the sum of theirs, not the maximum of the totals (None: one kind).
    operations: Callable[[Mapping[str, Any], int, float], tuple[tuple[str, float, float], ...]] | None = None

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def problems(self, params: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(parameter, message) for every way `params` breaks this spec; [] when valid."""
        found = []
        for p in self.params:
            if p.name not in params:
                if not p.optional:
                    found.append((p.name, "is required but missing"))
            elif (problem := p.problem(params[p.name])) is not None:
                found.append((p.name, problem))
        known = {p.name for p in self.params}
        found += [(name, "is not a parameter of this workload") for name in params if name not in known]
        if not found and (problem := self.consistency(params)) is not None:
            found.append(("(params)", problem))
        return found

    def parameter_words(self) -> str:
        return ", ".join(p.name for p in self.params)


def _int(name, description, default, low=1, high=2**20, **more) -> Param:
    return Param(name, int, description, default, low, high, **more)


def _get(params: Mapping[str, Any], name: str) -> Any:
    return params.get(name, "?")


# --------------------------------------------------------------------------- Linear layers


def _mlp_cost(p, s, batch):
    return costs.mlp_cost(batch, p["width"], p["depth"], s)


def _linear_cost(p, s, batch):
    return costs.linear_cost(batch, p["in_features"], p["out_features"], s)


MLP = Workload(
    name="mlp",
    description="depth × width stack of Linear+ReLU layers",
    snippet="snippets/mlp.py",
    params=(
        _int("width", "features in and out of every layer", 1024, high=2**17),
        _int("depth", "Linear+ReLU layers", 8, high=1024),
    ),
    unit=ROWS,
    label=lambda p: f"width {_get(p, 'width')}",
    shape=lambda p: f"{_get(p, 'depth')}×{_get(p, 'width')} MLP",
    cost=_mlp_cost,
    weight_bytes=lambda p, s: _mlp_cost(p, s, 0)[1],
    operators=lambda p: 2 * p["depth"],  # Linear and ReLU per layer
    bytes_counted=(
        "each layer reads its weight and bias once, reads its input and writes its output (activations go to "
        "memory between layers); the ReLU is fused"
    ),
)

LINEAR = Workload(
    name="linear",
    description="one Linear layer swept one batch size at a time",
    snippet="snippets/linear.py",
    params=(
        _int("in_features", "features of each input row", 8192, high=2**18),
        _int("out_features", "features of each output row", 8192, high=2**18),
    ),
    unit=ROWS,
    label=lambda p: f"{_get(p, 'in_features')}→{_get(p, 'out_features')}",
    shape=lambda p: f"Linear {_get(p, 'in_features')}→{_get(p, 'out_features')}",
    cost=_linear_cost,
    weight_bytes=lambda p, s: _linear_cost(p, s, 0)[1],
    operators=lambda p: 1,
    bytes_counted=("the weight and bias read once, the input read once and the output written once"),
)

# --------------------------------------------------------------------------- convolutions


def _conv_label(p) -> str:
    k = _get(p, "kernel")
    return f"{k}×{k}, {_get(p, 'c_in')}→{_get(p, 'c_out')} @{_get(p, 'resolution')}²"


def _conv_cost(p, s, batch):
    return costs.conv_cost(batch, p["c_in"], p["c_out"], p["kernel"], p["resolution"], s)


CONV = Workload(
    name="conv",
    description="one same-padded k×k Conv2d over square images, channels-last",
    snippet="snippets/cnn.py",
    params=(
        _int("c_in", "input channels", 64, high=2**16),
        _int("c_out", "output channels", 64, high=2**16),
        _int("kernel", "filter side k", 3, high=31),
        _int("resolution", "image side in pixels", 56, high=8192),
    ),
    unit=IMAGES,
    label=_conv_label,
    shape=lambda p: f"Conv2d {_conv_label(p)}",
    cost=_conv_cost,
    weight_bytes=lambda p, s: _conv_cost(p, s, 0)[1],
    operators=lambda p: 1,
    bytes_counted=("the filter read once, the input images read once and the output written once"),
)

RESNET50 = Workload(
    name="resnet50",
    description="ResNet-50 v1.5 in eval mode, channels-last",
    snippet="snippets/cnn.py",
    params=(_int("resolution", "image side in pixels", 224, low=32, high=4096),),
    unit=IMAGES,
    label=lambda p: f"ResNet-50 @{_get(p, 'resolution')}²",
    shape=lambda p: f"ResNet-50 @{_get(p, 'resolution')}²",
    cost=lambda p, s, batch: costs.resnet50_cost(batch, s, p["resolution"]),
    weight_bytes=lambda p, s: costs.resnet50_weight_bytes(s),
    operators=lambda p: 175,  # 53 convolutions, 53 batch norms, 49 ReLUs, 16 adds, pools,  the classifier
    bytes_counted=(
        "every conv and fc weight read once, each conv's input read and output written once, and every "
        "BatchNorm, ReLU, residual add and pooling as a pass of its own over memory (no fusion)"
    ),
)

# --------------------------------------------------------------------------- Transformer decode


def decoder_config(p: Mapping[str, Any]) -> costs.DecoderConfig:
    sizes = (p[k] for k in ("layers", "d_model", "heads", "kv_heads", "d_ff"))
    return costs.DecoderConfig(*sizes, ffn=p.get("ffn", "gelu"))  # runs before the ffn parameter had GELU


def attention_name(p: Mapping[str, Any]) -> str:
    """'MHA' when every query head has its own K/V head, else 'GQA (n KV heads)'."""
    heads, kv_heads = p.get("heads"), p.get("kv_heads")
    if kv_heads == heads:
        return "MHA"
    return f"GQA ({kv_heads} KV head{'s' * (kv_heads != 1)})"


def _decode_label(p) -> str:
    if p.get("phase") == "prefill":
        return f"prefill, {_get(p, 'context')}-token prompts"
    return f"context {_get(p, 'context')}, {attention_name(p)}"


def decoder_cost(p: Mapping[str, Any], s: int, batch: float) -> dict[str, float]:
    """FLOPs and bytes (split into weights, KV cache and activations) of one call."""
    cost = costs.prefill_cost if p.get("phase") == "prefill" else costs.decode_cost
    return cost(batch, p["context"], decoder_config(p), s)


def decoder_operations(p: Mapping[str, Any], s: int, batch: float) -> tuple[tuple[str, float, float], ...]:
    """(name, FLOPs, bytes) of the two kinds of work of one call, run one after the other: the matmuls (every
    weight read once for the batch, each token's activations in and out) and the attention (QKᵀ and PV over each
    sequence's own KV cache)."""
    cost = decoder_cost(p, s, batch)
    tokens = batch * (p["context"] if p.get("phase") == "prefill" else 1)
    matmul_flops = 2 * costs.matmul_weight_elements(decoder_config(p)) * tokens
    return (
        ("matmuls", matmul_flops, cost["weight_bytes"] + cost["activation_bytes"]),
        ("attention", cost["flops"] - matmul_flops, cost["kv_bytes"]),
    )


def _decoder_consistency(p) -> str | None:
    try:
        decoder_config(p)
    except ValueError as exc:
        return str(exc)
    if p.get("phase") == "prefill" and p.get("context", 1) < 1:
        return "a prefill needs a prompt: context must be at least 1"
    return None


PHASES = ("decode", "prefill")

DECODE = Workload(
    name="decode",
    description="decoder-only Transformer stack with a KV cache: one decode step of `batch` sequences holding "
    "`context` tokens each, or a prefill of `batch` prompts of `context` tokens",
    snippet="snippets/decode.py",
    params=(
        _int("layers", "decoder layers", 4, high=1024),
        _int("d_model", "width of the hidden state", 4096, high=2**17),
        _int("heads", "query heads", 32, high=1024),
        _int("kv_heads", "key/value heads (fewer than heads: grouped-query attention)", 8, high=1024),
        _int("d_ff", "hidden width of the FFN", 14336, high=2**19),
        Param(
            "ffn",
            str,
            "swiglu: SiLU(gate)·up then down, as Llama; gelu: up, GELU, down",
            "swiglu",
            choices=costs.FFN_KINDS,
            optional=True,
        ),
        _int("context", "tokens in each sequence's cache (decode) or prompt (prefill)", 2048, low=0, high=2**24),
        Param("phase", str, "decode: a new token per sequence; prefill: whole prompts", "decode", choices=PHASES),
    ),
    unit=SEQUENCES,
    label=_decode_label,
    shape=lambda p: (
        f"{_get(p, 'layers')}-layer decoder (d={_get(p, 'd_model')}, {_get(p, 'heads')} heads, "
        f"{'SwiGLU' if p.get('ffn') == 'swiglu' else 'GELU'} FFN {_get(p, 'd_ff')})"
    ),
    cost=lambda p, s, batch: (lambda c: (c["flops"], c["bytes"]))(decoder_cost(p, s, batch)),
    weight_bytes=lambda p, s: s * costs.weight_elements(decoder_config(p)),
    consistency=_decoder_consistency,
    operators=lambda p: 18 * p["layers"],  # norms, 7 projections, cache writes, attention, activation,  adds
    bytes_counted=(
        "the weights read once per call, every sequence's KV cache read and its new K and V written, and each"
        " projection's input and output once (norms, activation, residual adds and attention scores fused); "
        "embeddings and the output head are not counted"
    ),
    operations=decoder_operations,
)

# --------------------------------------------------------------------------- mixture of experts

MOE_VARIANTS = ("token-choice", "expert-choice", "dense")


def _moe_label(p) -> str:
    variant = p.get("variant", "?")
    if variant == "token-choice":
        skew = p.get("skew", 0)
        return f"skew {skew:g}" if isinstance(skew, (int, float)) else f"skew {skew}"
    return str(variant).replace("-", " ")


def _moe_ops(p: Mapping[str, Any]) -> int:
    if p["variant"] == "dense":
        return 3
    if p["variant"] == "expert-choice":
        return 12
    return 10 + 6 * p["experts"]  # routing, sort and count, then gather, two matmuls, scale, scatter per expert


def _moe_cost(p, s, batch):
    if p["variant"] == "dense":
        return costs.dense_cost(batch, p["d_model"], p["top_k"] * p["d_ff"], s)
    touched, rows = costs.expected_routing(p["variant"], batch, p["experts"], p["top_k"], p.get("capacity_factor", 1.0))
    return costs.moe_cost(batch, p["d_model"], p["d_ff"], p["experts"], p["top_k"], touched, rows, s)


def _moe_weight_bytes(p, s):
    d, f = p["d_model"], p["d_ff"]
    if p["variant"] == "dense":
        return s * 2 * d * p["top_k"] * f
    return s * (p["experts"] * 2 * d * f + d * p["experts"])


def _moe_consistency(p) -> str | None:
    if p["top_k"] > p["experts"]:
        return f"top_k ({p['top_k']}) must not exceed experts ({p['experts']})"
    return None


MOE = Workload(
    name="moe",
    description="mixture-of-experts FFN with top-k routing, and the dense FFN with its active parameters",
    snippet="snippets/moe.py",
    params=(
        Param("variant", str, "token-choice, expert-choice, or the dense twin", "token-choice", choices=MOE_VARIANTS),
        _int("experts", "experts E", 8, high=4096),
        _int("top_k", "experts per token k", 2, high=4096),
        _int("d_model", "token width", 256, high=2**17),
        _int("d_ff", "hidden width of each expert", 512, high=2**19),
        Param("skew", float, "router bias −skew·ln(1 + expert index); 0 is uniform", 0.0, 0, 100, optional=True),
        Param("capacity_factor", float, "expert choice: tokens per expert ÷ (b·k/E)", 1.0, 0.01, 64, optional=True),
    ),
    unit=ROWS,
    label=_moe_label,
    shape=lambda p: f"MoE layer (d={p.get('d_model')}, f={p.get('d_ff')} per expert)",
    cost=_moe_cost,
    weight_bytes=_moe_weight_bytes,
    consistency=_moe_consistency,
    operators=_moe_ops,
    bytes_counted=(
        "the router and every expert the batch touches read once, the input and output once, and each expert "
        "row's input, hidden activation and output"
    ),
)

# --------------------------------------------------------------------------- Transformer encoders

ENCODED = BatchUnit("batch size (sequences)", "throughput (sequences per second)", "sequences/s", "sequences")
POOLER_CHOICES = ("yes", "no")


def encoder_config(p: Mapping[str, Any]) -> costs.DecoderConfig:
    """The encoder's sizes in the decoder's config (every head its own K and V, a GELU FFN)."""
    return costs.DecoderConfig(p["layers"], p["d_model"], p["heads"], p["heads"], p["d_ff"], ffn="gelu")


def encoder_cost(p: Mapping[str, Any], s: float, batch: float) -> dict[str, float]:
    return costs.encoder_cost(batch, p["seq_len"], encoder_config(p), s, p.get("pooler", "yes") == "yes")


def encoder_operations(p: Mapping[str, Any], s: float, batch: float) -> tuple[tuple[str, float, float], ...]:
    """(name, FLOPs, bytes) of the matmuls (every weight once, each token's activations) and the bidirectional
    attention (QKᵀ and PV over the whole sequence, its reads and writes counted with the activations)."""
    cost = encoder_cost(p, s, batch)
    attention_bytes = s * batch * p["seq_len"] * p["layers"] * 4 * p["d_model"]  # q, k, v in, the context out
    return (
        ("matmuls", cost["matmul_flops"], cost["bytes"] - attention_bytes),
        ("attention", cost["attention_flops"], attention_bytes),
    )


def _encoder_consistency(p) -> str | None:
    try:
        encoder_config(p)
    except ValueError as exc:
        return str(exc)
    return None


ENCODER = Workload(
    name="encoder",
    description="BERT-shaped Transformer encoder: bidirectional attention over `seq_len`-token sequences, a GELU "
    "FFN, post-norm LayerNorms, and a pooler on each sequence's first token",
    snippet="snippets/encoder.py",
    params=(
        _int("layers", "encoder layers (BERT-base 12, BERT-large 24)", 12, high=1024),
        _int("d_model", "width of the hidden state (BERT-base 768, BERT-large 1024)", 768, high=2**17),
        _int("heads", "attention heads (BERT-base 12, BERT-large 16)", 12, high=1024),
        _int("d_ff", "hidden width of the FFN (BERT-base 3072, BERT-large 4096)", 3072, high=2**19),
        _int("seq_len", "tokens in each sequence", 128, high=2**17),
        Param("pooler", str, "yes: tanh(Linear) on the first token, as BERT; no: none", "yes", choices=POOLER_CHOICES),
    ),
    unit=ENCODED,
    label=lambda p: f"{_get(p, 'seq_len')}-token sequences",
    shape=lambda p: (
        f"{_get(p, 'layers')}-layer encoder (d={_get(p, 'd_model')}, {_get(p, 'heads')} heads, FFN {_get(p, 'd_ff')})"
    ),
    cost=lambda p, s, batch: (lambda c: (c["flops"], c["bytes"]))(encoder_cost(p, s, batch)),
    weight_bytes=lambda p, s: s * costs.encoder_weight_elements(encoder_config(p), p.get("pooler", "yes") == "yes"),
    consistency=_encoder_consistency,
    operators=lambda p: 14 * p["layers"] + 3,  # 4 projections, attention, 2 adds, 2 norms, 2 FFN matmuls, GELU, …
    bytes_counted=(
        "every weight read once per call, each token's activations in and out of every projection and of a fused "
        "attention (LayerNorms, GELU and residual adds fused); the embeddings are not counted"
    ),
    operations=encoder_operations,
)

# --------------------------------------------------------------------------- training steps

TRAIN_SEQUENCES = BatchUnit(
    "batch size (sequences of seq tokens)", "throughput (tokens per second)", "tokens/s", "sequences"
)


def optimizer_name(p: Mapping[str, Any]) -> str:
    return {"adamw": "AdamW", "sgd": "SGD"}.get(p.get("optimizer"), "?")


def _optimizer_param() -> Param:
    return Param("optimizer", str, "adamw, or sgd with momentum 0.9", "adamw", choices=costs.OPTIMIZERS)


def _precision_param() -> Param:
    return Param(
        "precision",
        str,
        "pure: weights, gradients and optimizer state in the dtype (what the harness measures); mixed: fp32 master "
        "weights and optimizer state beside low-precision weights (predicted only)",
        "pure",
        choices=costs.PRECISIONS,
        optional=True,
    )


def train_mlp_phases(p: Mapping[str, Any], s: int, batch: float) -> tuple[tuple[str, float, float], ...]:
    """(phase, FLOPs, bytes) of one training step of the MLP: forward, input gradient, weight gradient, optimizer."""
    return costs.train_mlp_phases(batch, p["width"], p["depth"], s, p["optimizer"], p.get("precision", "pure"))


def train_decoder_phases(p: Mapping[str, Any], s: int, batch: float) -> tuple[tuple[str, float, float], ...]:
    """(phase, FLOPs, bytes) of one training step of the decoder stack on `batch` sequences of `seq` tokens."""
    config = decoder_config(p)
    return costs.train_decoder_phases(batch, p["seq"], config, s, p["optimizer"], p.get("precision", "pure"))


def _summed(phases) -> Callable[[Mapping[str, Any], int, float], tuple[float, float]]:
    def cost(p, s, batch):
        parts = phases(p, s, batch)
        return sum(part[1] for part in parts), sum(part[2] for part in parts)

    return cost


def training_parameters(p: Mapping[str, Any]) -> int:
    """Parameters a training workload updates."""
    if "width" in p:
        return costs.mlp_parameters(p["width"], p["depth"])
    return costs.weight_elements(decoder_config(p))


def saved_bytes_per_sample(p: Mapping[str, Any], s: int, checkpointed: bool = False) -> float:
    """Bytes autograd keeps per sample (a row, or a sequence of seq tokens) by the hand count of `snippets.costs`.
    The MLP keeps only each layer's input, so checkpointing saves it nothing."""
    if "width" in p:
        return s * costs.mlp_saved_elements_per_sample(p["width"], p["depth"])
    return s * costs.decoder_saved_elements_per_sample(decoder_config(p), p["seq"], checkpointed)


def _train_decoder_consistency(p) -> str | None:
    try:
        decoder_config(p)
    except ValueError as exc:
        return str(exc)
    return None


TRAIN_BYTES = (
    "forward: as inference; input gradient: each weight and output gradient read and the input gradient written; "
    "weight gradient: each layer's input and output gradient read and the weight gradient written; optimizer: "
    "every parameter, its gradient and its state read and written once (AdamW 7 accesses a parameter, SGD 5); "
    "elementwise operations fused"
)

TRAIN_MLP = Workload(
    name="train-mlp",
    description="one training step (forward, mean-squared-error loss, backward, optimizer update) of the MLP",
    snippet="snippets/train.py",
    params=(
        _int("width", "features in and out of every layer", 1024, high=2**17),
        _int("depth", "Linear+ReLU layers", 8, high=1024),
        _optimizer_param(),
        _precision_param(),
    ),
    unit=ROWS,
    label=lambda p: f"width {_get(p, 'width')}, {optimizer_name(p)}",
    shape=lambda p: f"training step of the {_get(p, 'depth')}×{_get(p, 'width')} MLP",
    cost=_summed(train_mlp_phases),
    weight_bytes=lambda p, s: s * costs.mlp_parameters(p["width"], p["depth"]),
    operators=lambda p: 2 * p["depth"] + 2 + 4 * p["depth"] + 8 * 2 * p["depth"],  # forward, loss, backward, update
    bytes_counted=TRAIN_BYTES,
    operations=train_mlp_phases,
)

TRAIN_DECODER = Workload(
    name="train-decoder",
    description="one training step of a stack of pre-norm decoder layers (causal attention, no KV cache) on whole "
    "sequences of `seq` tokens",
    snippet="snippets/train.py",
    params=(
        _int("layers", "decoder layers", 1, high=1024),
        _int("d_model", "width of the hidden state", 4096, high=2**17),
        _int("heads", "query heads", 32, high=1024),
        _int("kv_heads", "key/value heads (fewer than heads: grouped-query attention)", 8, high=1024),
        _int("d_ff", "hidden width of the FFN", 14336, high=2**19),
        Param(
            "ffn",
            str,
            "swiglu: SiLU(gate)·up then down, as Llama; gelu: up, GELU, down",
            "swiglu",
            choices=costs.FFN_KINDS,
        ),
        _int("seq", "tokens in each training sequence", 2048, high=2**20),
        _optimizer_param(),
        _precision_param(),
    ),
    unit=TRAIN_SEQUENCES,
    label=lambda p: f"seq {_get(p, 'seq')}, {optimizer_name(p)}",
    shape=lambda p: (
        f"training step of a {_get(p, 'layers')}-layer decoder (d={_get(p, 'd_model')}, {_get(p, 'heads')} heads, "
        f"{'SwiGLU' if p.get('ffn') == 'swiglu' else 'GELU'} FFN {_get(p, 'd_ff')})"
    ),
    cost=_summed(train_decoder_phases),
    weight_bytes=lambda p, s: s * costs.weight_elements(decoder_config(p)),
    consistency=_train_decoder_consistency,
    operators=lambda p: 60 * p["layers"] + 4,  # about 18 forward, 30 backward and 12 update operators a layer
    bytes_counted=TRAIN_BYTES,
    operations=train_decoder_phases,
)

WORKLOADS: dict[str, Workload] = {
    w.name: w for w in (MLP, LINEAR, MOE, CONV, RESNET50, DECODE, ENCODER, TRAIN_MLP, TRAIN_DECODER)
}


def workload(name: str) -> Workload:
    """The spec of a workload; ValueError naming the known ones for any other name."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}") from None
