"""Every hand-counted FLOP and byte formula of the workloads, once, without torch.

The snippets time their models with these counts, the harness records them with every point, and
the site's explanations and predictions read them too, so a formula is written here and nowhere
else. Byte counts are the minimum traffic to memory: every weight read once, every input read once
and every output written once; what a fused kernel keeps on chip is not counted twice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

# --------------------------------------------------------------------------- Linear layers and MLPs


def linear_cost(batch, in_features, out_features, bytes_per_element):
    """(FLOPs, bytes) of one Linear layer y = x·Wᵀ + b on `batch` rows.

    2·batch·in·out FLOPs (a multiply and an add per weight per row); it must at least read W and
    the bias once, read x once and write y once.
    """
    flops = 2 * batch * in_features * out_features
    elements = in_features * out_features + out_features + batch * (in_features + out_features)
    return flops, bytes_per_element * elements


def mlp_cost(batch, width, depth, bytes_per_element, activations="memory"):
    """(FLOPs, bytes) of one forward pass of `depth` Linear+ReLU layers of `width` features.

    Each layer is a `linear_cost` of width→width: 2·width²·batch FLOPs, and it reads its weight and
    bias once (the ReLU is counted as fused into it). `activations` says where the activations between
    layers go: "memory" (the default, what the harness counts) has every layer read its input from
    memory and write its output back; "cache" keeps them on chip or in L2 between layers, as a GPU
    does when they fit, so only the network's input and output cross memory. The two bound the bytes
    from above and below.
    """
    flops, moved = linear_cost(batch, width, width, bytes_per_element)
    if activations == "memory":
        return depth * flops, depth * moved
    if activations != "cache":
        raise ValueError(f"activations must be 'memory' or 'cache', got {activations!r}")
    weights = linear_cost(0, width, width, bytes_per_element)[1]
    return depth * flops, depth * weights + bytes_per_element * 2 * batch * width


# --------------------------------------------------------------------------- convolutions


def conv_cost(batch, c_in, c_out, kernel, resolution, bytes_per_element, stride=1):
    """(FLOPs, bytes) of one same-padded k×k convolution over square images.

    Every output position multiplies a k²·C_in patch by the k²·C_in×C_out weight; the layer must at
    least read the weight once, read its input once and write its output once.
    """
    side = -(-resolution // stride)  # ceil(resolution / stride): same padding
    flops = 2 * kernel * kernel * c_in * c_out * side * side * batch
    elements = kernel * kernel * c_in * c_out + batch * c_in * resolution**2 + batch * c_out * side**2
    return flops, bytes_per_element * elements


RESNET50_STAGES = [(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)]  # (blocks, width, stride of the first)
RESNET50_EXPANSION = 4  # a bottleneck's output is 4× its width
RESNET50_PARAMETERS = 25_557_032  # torchvision's resnet50(): conv, BatchNorm and fc weights and biases
RESNET50_CLASSES = 1000


class ConvLayer(NamedTuple):
    name: str  # the module's name in snippets.cnn.make_resnet50()
    c_in: int
    c_out: int
    kernel: int
    stride: int
    resolution: int  # side of the layer's input; 1 for the fc


def resnet50_layers(resolution=224):
    """Every conv and the fc of ResNet-50 v1.5, in the model's order."""
    layers = [ConvLayer("conv1", 3, 64, 7, 2, resolution)]
    side = -(-resolution // 4)  # ceil(ceil(r/2)/2): the stride-2 stem conv, then the stride-2 max pool
    c_in = 64
    for index, (blocks, width, first_stride) in enumerate(RESNET50_STAGES, start=1):
        for block in range(blocks):
            name, stride = f"layer{index}.{block}", first_stride if block == 0 else 1
            c_out = width * RESNET50_EXPANSION
            out = -(-side // stride)
            layers += [
                ConvLayer(f"{name}.conv1", c_in, width, 1, 1, side),
                ConvLayer(f"{name}.conv2", width, width, 3, stride, side),
                ConvLayer(f"{name}.conv3", width, c_out, 1, 1, out),
            ]
            if stride != 1 or c_in != c_out:
                layers.append(ConvLayer(f"{name}.downsample.0", c_in, c_out, 1, stride, side))
            side, c_in = out, c_out
    layers.append(ConvLayer("fc", c_in, RESNET50_CLASSES, 1, 1, 1))
    return layers


def resnet50_cost(batch, bytes_per_element, resolution=224, fused=False):
    """(FLOPs, bytes) of one ResNet-50 forward pass as the timed model runs it.

    FLOPs: the 53 convs and the fc (BatchNorm, ReLU, pooling and the residual adds are about half a
    percent of them and are left out). Bytes: every conv and fc weight (and the fc bias) read once and
    each conv's input read and output written once; then, because the timed model runs every
    BatchNorm, ReLU, residual add and pooling as its own pass over memory, `resnet50_elementwise_bytes`
    of them. `fused=True` leaves those passes out: what an inference engine that folds BatchNorm into the
    conv and fuses the rest would move.
    """
    flops = moved = 0
    for _, c_in, c_out, kernel, stride, side in resnet50_layers(resolution):  # the fc: a 1×1 conv on a 1×1 image
        f, b = conv_cost(batch, c_in, c_out, kernel, side, bytes_per_element, stride)
        flops, moved = flops + f, moved + b
    moved += bytes_per_element * RESNET50_CLASSES  # the fc's bias
    if not fused:
        moved += resnet50_elementwise_bytes(batch, bytes_per_element, resolution)
    return flops, moved


def resnet50_elementwise_bytes(batch, bytes_per_element, resolution=224):
    """Bytes of the passes between the convs of an unfused ResNet-50: each BatchNorm and each ReLU reads
    and writes its activation (the ReLUs work in place, which still reads and writes it), each residual
    add reads two activations and writes one, the max pool reads the stem's output and writes a quarter
    of it, and the average pool reads the last feature map. BatchNorm's four per-channel vectors are read
    too."""
    elements = 0
    for name, _, c_out, _, stride, side in resnet50_layers(resolution):
        if name == "fc":
            continue
        out = c_out * (-(-side // stride)) ** 2  # the conv's output, which its BatchNorm reads and writes
        elements += 2 * out + 4 * c_out  # BatchNorm
        if name == "conv1" or name.endswith((".conv1", ".conv2")):
            elements += 2 * out  # the ReLU after it
        if name.endswith(".conv3"):
            elements += 3 * out + 2 * out  # the residual add, then the block's ReLU
    stem = 64 * (-(-resolution // 2)) ** 2
    elements += stem + stem // 4 + 2048 * (-(-resolution // 32)) ** 2 + 2048  # max pool, then average pool
    return bytes_per_element * batch * elements


def resnet50_weight_bytes(bytes_per_element):
    return bytes_per_element * RESNET50_PARAMETERS


# --------------------------------------------------------------------------- Transformer decode


FFN_KINDS = ("gelu", "swiglu")
FFN_MATRICES = {"gelu": 2, "swiglu": 3}


@dataclass(frozen=True)
class DecoderConfig:
    layers: int  # decoder layers
    d_model: int  # width of the hidden state
    heads: int  # query heads; head_dim = d_model / heads
    kv_heads: int  # key/value heads: heads for multi-head attention, fewer for grouped-query attention
    d_ff: int  # hidden width of the FFN
    ffn: str = "gelu"  # gelu: up, GELU, down (two matrices); swiglu: SiLU(gate)·up, then down (three, as Llama)

    def __post_init__(self):
        if min(self.layers, self.d_model, self.heads, self.kv_heads, self.d_ff) < 1:
            raise ValueError(f"every size must be positive: {self}")
        if self.ffn not in FFN_KINDS:
            raise ValueError(f"ffn must be one of {', '.join(FFN_KINDS)}, got {self.ffn!r}")
        if self.d_model % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide d_model ({self.d_model})")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads ({self.kv_heads}) must divide heads ({self.heads})")

    @property
    def head_dim(self):
        return self.d_model // self.heads


def matmul_weight_elements(config):
    """Elements of the Linear weights of the whole stack: q, k, v, o and the FFN's two (GELU: up, down) or
    three (SwiGLU: gate, up, down) matrices, in every layer."""
    c = config
    attention = (
        c.d_model * c.heads * c.head_dim + 2 * c.d_model * c.kv_heads * c.head_dim + c.heads * c.head_dim * c.d_model
    )
    return c.layers * (attention + FFN_MATRICES[c.ffn] * c.d_model * c.d_ff)


def weight_elements(config):
    """Every weight element: the Linear weights, two RMSNorm weights per layer and the final RMSNorm."""
    return matmul_weight_elements(config) + 2 * config.layers * config.d_model + config.d_model


def kv_cache_bytes(config, batch, context, bytes_per_element):
    """Size of a cache holding `context` positions of `batch` sequences: K and V in every layer."""
    return 2 * config.layers * batch * config.kv_heads * config.head_dim * context * bytes_per_element


def activation_elements_per_token(config):
    """Activations one token moves per layer: every projection's input and output once, except the K and V
    outputs (those are the cache writes, counted as KV bytes); the norms, the activation function, the
    SwiGLU product, the residual adds and the attention's scores are assumed fused and not counted.
    Attention: q, k, v read d each, o reads heads·hd = d, q and o write d each: 6·d. GELU FFN: up reads d
    and writes d_ff, down reads d_ff and writes d: 2·d + 2·d_ff. SwiGLU FFN: gate and up read d and write
    d_ff each, down reads d_ff and writes d: 3·d + 3·d_ff."""
    ffn = 3 * (config.d_model + config.d_ff) if config.ffn == "swiglu" else 2 * (config.d_model + config.d_ff)
    return 6 * config.d_model + ffn


def attention_flops_per_position(config):
    """FLOPs of QKᵀ and PV for one query token against one cached position: 4·layers·heads·head_dim."""
    return 4 * config.layers * config.heads * config.head_dim


def _decoder_cost(tokens, attention_flops, kv_elements, config, s):
    cost = {
        "flops": 2 * matmul_weight_elements(config) * tokens + attention_flops,
        "weight_bytes": s * weight_elements(config),
        "kv_bytes": s * kv_elements,
        "activation_bytes": s * tokens * config.layers * activation_elements_per_token(config),
    }
    cost["bytes"] = cost["weight_bytes"] + cost["kv_bytes"] + cost["activation_bytes"]
    return cost


def decode_cost(batch, context, config, bytes_per_element):
    """FLOPs and bytes of one decode step of `batch` sequences that hold `context` tokens in cache each.

    FLOPs: 2 per weight element per sequence, plus QKᵀ and PV over context + 1 positions:
    2·2·batch·layers·heads·hd·(context + 1). Bytes: the weights once for the whole batch; every sequence's
    K and V at `context` positions read and the new token's written: 2·layers·batch·kv_heads·hd·(context + 1)
    elements; activations per `activation_elements_per_token` for `batch` tokens.
    """
    attention = batch * attention_flops_per_position(config) * (context + 1)
    kv = kv_cache_bytes(config, batch, context + 1, 1)
    return _decoder_cost(batch, attention, kv, config, bytes_per_element)


def prefill_cost(batch, prompt, config, bytes_per_element):
    """FLOPs and bytes of a prefill of `prompt` tokens in each of `batch` sequences.

    FLOPs: 2 per weight element per token, plus causal QKᵀ and PV, where position i sees i + 1 positions:
    2·2·batch·layers·heads·hd·prompt·(prompt + 1)/2. Bytes: the weights once; K and V of every token written
    once (2·layers·batch·kv_heads·hd·prompt elements; a fused attention reads them on chip); activations
    per `activation_elements_per_token` for batch·prompt tokens.
    """
    attention = batch * attention_flops_per_position(config) * prompt * (prompt + 1) // 2
    kv = kv_cache_bytes(config, batch, prompt, 1)
    return _decoder_cost(batch * prompt, attention, kv, config, bytes_per_element)


# --------------------------------------------------------------------------- mixture of experts


def moe_cost(batch, d_model, d_ff, experts, top_k, touched, rows, bytes_per_element):
    """(FLOPs, bytes) of one MoE call with `rows` expert rows in all and `touched` experts used.

    Router: 2·b·d·E FLOPs. Experts: 2·2·d·f FLOPs per row. Bytes: the router, the weights of
    every touched expert (an untouched one is never read), the input and output once, and each
    expert row's input, hidden activation and output.
    """
    flops = 2 * batch * d_model * experts + 4 * rows * d_model * d_ff
    elements = d_model * experts + touched * 2 * d_model * d_ff + 2 * batch * d_model + rows * (2 * d_model + 2 * d_ff)
    return flops, bytes_per_element * elements


def dense_cost(batch, d_model, d_ff, bytes_per_element):
    """(FLOPs, bytes) of the dense FFN of hidden width d_ff: the MoE's active parameters."""
    flops = 4 * batch * d_model * d_ff
    return flops, bytes_per_element * (2 * d_model * d_ff + 2 * batch * d_model + 2 * batch * d_ff)


def expert_capacity(batch, experts, top_k, capacity_factor=1.0):
    """Expert choice: the tokens each expert takes, ⌈capacity_factor·b·k/E⌉ (at least 1, at most b)."""
    return max(1, min(batch, math.ceil(capacity_factor * batch * top_k / experts)))


def expected_routing(variant, batch, experts, top_k, capacity_factor=1.0):
    """(touched experts, expert rows) of a batch: exact for expert choice, the expectation under
    uniform routing for token choice (each expert is missed by a token with chance 1 − k/E)."""
    if variant == "expert-choice":
        return experts, experts * expert_capacity(batch, experts, top_k, capacity_factor)
    return experts * (1 - (1 - top_k / experts) ** batch), batch * top_k


# --------------------------------------------------------------------------- Transformer encoders (BERT-shaped)


def encoder_weight_elements(config, pooler=True):
    """Every weight of a BERT-shaped encoder stack (no embeddings): per layer q, k, v, o with biases, the GELU FFN's
    up and down with biases, two LayerNorms (weight and bias); then the pooler's d_model² Linear and bias."""
    d, f = config.d_model, config.d_ff
    per_layer = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d
    return config.layers * per_layer + (d * d + d if pooler else 0)


def encoder_activation_elements_per_token(config):
    """Activations one token moves per encoder layer: q, k, v and o each read d and write d (8·d); the fused
    attention reads q, k, v and writes its output (4·d); the FFN's up reads d and writes d_ff, its down reads d_ff
    and writes d. LayerNorms, GELU and residual adds are fused: 12·d + 2·d_ff."""
    return 12 * config.d_model + 2 * config.d_ff


def encoder_cost(batch, seq_len, config, bytes_per_element, pooler=True):
    """FLOPs and bytes of one forward pass of a BERT-shaped encoder over `batch` sequences of `seq_len` tokens.

    Bidirectional attention: every token attends to all `seq_len` positions of its sequence, so QKᵀ and PV take
    4·layers·d_model·seq_len² FLOPs per sequence (not the half a causal mask leaves). Matmuls: 2 FLOPs per weight
    per token. The pooler (tanh of a Linear on each sequence's first token) adds 2·d_model² per sequence. Bytes:
    every weight once, each token's activations per `encoder_activation_elements_per_token`, and the pooler's input
    and output."""
    d, tokens = config.d_model, batch * seq_len
    matmul_elements = config.layers * (4 * d * d + 2 * d * config.d_ff)
    cost = {
        "matmul_flops": 2 * matmul_elements * tokens + (2 * d * d * batch if pooler else 0),
        "attention_flops": 4 * config.layers * d * seq_len * seq_len * batch,
        "weight_bytes": bytes_per_element * encoder_weight_elements(config, pooler),
        "activation_bytes": bytes_per_element
        * (tokens * config.layers * encoder_activation_elements_per_token(config) + (2 * batch * d if pooler else 0)),
    }
    cost["flops"] = cost["matmul_flops"] + cost["attention_flops"]
    cost["bytes"] = cost["weight_bytes"] + cost["activation_bytes"]
    return cost


# --------------------------------------------------------------------------- training steps
#
# A training step is the forward pass, the backward pass (the gradient with respect to each layer's input, passed
# down, and the gradient with respect to its weight, kept) and one optimizer update. Each matrix product of the
# forward has two twins in the backward with the same FLOPs, so a step is about three forwards; the update reads and
# writes every parameter and its optimizer state once, whatever the batch.

TRAIN_PHASES = ("forward", "input gradient", "weight gradient", "optimizer")
OPTIMIZERS = ("adamw", "sgd")
# Tensors of one parameter's size the update reads or writes: AdamW reads the parameter, its gradient and both
# moments and writes the parameter and both moments (7); SGD with momentum reads the parameter, the gradient and the
# momentum buffer and writes the parameter and the buffer (5).
OPTIMIZER_ACCESSES = {"adamw": 7, "sgd": 5}
OPTIMIZER_FLOPS = {"adamw": 12, "sgd": 3}  # elementwise FLOPs per parameter (decay, moments, the division, the step)
OPTIMIZER_STATES = {"adamw": 2, "sgd": 1}  # state tensors of a parameter's size: two moments, one momentum buffer
PRECISIONS = ("pure", "mixed")
FP32_BYTES = 4


def optimizer_cost(parameters, optimizer, bytes_per_element, precision="pure"):
    """(FLOPs, bytes) of one optimizer update of `parameters` parameters.

    pure: the parameters, gradients and state all in the training dtype (what the harness measures): each access
    is `bytes_per_element`. mixed: the matmuls run on low-precision weights whose fp32 master copy the update
    keeps: it reads the low-precision gradient, reads and writes the fp32 master and each fp32 state tensor, and
    writes the new low-precision weights (AdamW in bf16: 2 + 8 + 16 + 2 = 28 bytes per parameter; SGD: 20).
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    flops = OPTIMIZER_FLOPS[optimizer] * parameters
    if precision == "pure":
        return flops, OPTIMIZER_ACCESSES[optimizer] * bytes_per_element * parameters
    if precision != "mixed":
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    per_parameter = 2 * bytes_per_element + FP32_BYTES * 2 * (1 + OPTIMIZER_STATES[optimizer])
    return flops, per_parameter * parameters


def state_bytes(parameters, optimizer, bytes_per_element, precision="pure"):
    """Memory held between steps, by part: weights, gradients, optimizer state (and the fp32 master weights in
    mixed precision, counted with the optimizer state)."""
    states = OPTIMIZER_STATES[optimizer]
    if precision == "mixed":
        optimizer_state = FP32_BYTES * (states + 1) * parameters
    else:
        optimizer_state = bytes_per_element * states * parameters
    return {
        "weights": bytes_per_element * parameters,
        "gradients": bytes_per_element * parameters,
        "optimizer state": optimizer_state,
    }


def mlp_parameters(width, depth):
    return depth * (width * width + width)


def train_mlp_phases(batch, width, depth, bytes_per_element, optimizer, precision="pure"):
    """(phase, FLOPs, bytes) of one training step of the `mlp_cost` MLP with a mean-squared-error loss.

    forward: `mlp_cost`. input gradient: every layer but the first (the network's input needs none) multiplies the
    output gradient by its weight: 2·b·w² FLOPs; it reads the weight and the output gradient and writes the input
    gradient (the ReLU's mask is fused). weight gradient: every layer multiplies the output gradient by its input,
    2·b·w² FLOPs, and sums it over the batch for the bias; it reads both and writes the weight and bias gradients.
    optimizer: `optimizer_cost` over every weight and bias.
    """
    s, w, b = bytes_per_element, width, batch
    forward = mlp_cost(b, w, depth, s)
    input_grad = ((depth - 1) * 2 * b * w * w, (depth - 1) * s * (w * w + 2 * b * w))
    weight_grad = (depth * (2 * b * w * w + b * w), depth * s * (2 * b * w + w * w + w))
    update = optimizer_cost(mlp_parameters(w, depth), optimizer, s, precision)
    return tuple(zip(TRAIN_PHASES, *zip(forward, input_grad, weight_grad, update)))


def mlp_saved_elements_per_sample(width, depth):
    """Elements autograd keeps per sample for the MLP's backward: each Linear's input (the first is the network's
    input; each later one is the ReLU output before it, the same tensor the ReLU keeps for its mask), the last
    ReLU's output (kept by it and by the loss) and the loss target: (depth + 2)·width."""
    return (depth + 2) * width


def decoder_saved_elements_per_token(config):
    """Elements autograd keeps per token in each layer of the training block (`snippets/train.py`), counted by
    hand: the layer input and the first norm's output (2·d), q, k and v and the attention output (2·d + 2·kv·hd),
    the attention's log-sum-exp (heads), the output projection's input (d, a copy: the heads are transposed back),
    the residual sum, the second norm's output and what a norm keeps of an input that needs a gradient (3·d), the
    norms' reciprocal RMS (2), and in the FFN the gate, its SiLU, up and their product (4·d_ff; GELU: up and its
    GELU, 2·d_ff). Checked against the tensors autograd saves (saved_tensors_hooks) within a few per cent."""
    c = config
    ffn = 4 * c.d_ff if c.ffn == "swiglu" else 2 * c.d_ff
    return 8 * c.d_model + 2 * c.kv_heads * c.head_dim + c.heads + 2 + ffn


def decoder_saved_elements_per_sample(config, seq, checkpointed=False):
    """Elements kept per sequence of `seq` tokens: every layer's (`decoder_saved_elements_per_token`) plus the
    final norm's and the loss's (4·d per token). With activation checkpointing each layer keeps only its input
    (d per token) and one layer's activations exist at a time, rebuilt during the backward."""
    per_layer = decoder_saved_elements_per_token(config)
    layers = config.layers * config.d_model + per_layer if checkpointed else config.layers * per_layer
    return seq * (layers + 4 * config.d_model)


def train_decoder_phases(batch, seq, config, bytes_per_element, optimizer, precision="pure"):
    """(phase, FLOPs, bytes) of one training step of `batch` sequences of `seq` tokens through the decoder stack.

    forward: `prefill_cost` (causal attention over `seq` positions). input gradient: each projection's input
    gradient, 2 FLOPs per weight element per token, reading the weights and each projection's output gradient and
    writing its input gradient; and the attention's backward, twice its forward FLOPs (the gradients of Q, K, V and
    of the scores), reading q, k, v, the output and its gradient and writing dq, dk, dv. weight gradient: 2 FLOPs
    per weight element per token, reading each projection's input and output gradient and writing the weight
    gradients. optimizer: `optimizer_cost` over every weight. Norms, activations and residual adds are fused.
    """
    s, c = bytes_per_element, config
    tokens = batch * seq
    forward = prefill_cost(batch, seq, c, s)
    matmul = 2 * matmul_weight_elements(c) * tokens
    attention = forward["flops"] - matmul
    moved = s * tokens * c.layers * activation_elements_per_token(c)  # every projection's input and output
    attention_bytes = s * tokens * c.layers * 2 * (2 * c.d_model + 2 * c.kv_heads * c.head_dim)
    weights = s * matmul_weight_elements(c)
    input_grad = (matmul + 2 * attention, weights + moved + attention_bytes)
    weight_grad = (matmul, weights + moved)
    update = optimizer_cost(weight_elements(c), optimizer, s, precision)
    phases = (forward["flops"], forward["bytes"]), input_grad, weight_grad, update
    return tuple((name, flops, moved_bytes) for name, (flops, moved_bytes) in zip(TRAIN_PHASES, phases))


def largest_batch(memory_bytes, fixed_bytes, per_sample_bytes):
    """The largest batch whose activations fit beside the fixed state: 0 when even one does not."""
    if per_sample_bytes <= 0:
        raise ValueError("per-sample memory must be positive")
    return max(0, int((memory_bytes - fixed_bytes) // per_sample_bytes))
