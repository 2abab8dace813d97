"""The language models this project serves and forecasts by name: each one's published configuration (layers,
widths, heads, vocabulary, experts) with its source, looked up by name or alias, and its weight count.

Model dimensions come from the model's published configuration; nothing here is measured or computed on a device.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from snippets.costs import FFN_MATRICES, DecoderConfig, weight_elements


@dataclass(frozen=True)
class ExpertConfig:
    """The routed FFN of a mixture-of-experts decoder: E experts of hidden width `expert_d_ff` (SwiGLU, three
    matrices each), k per token, and an always-active shared expert of hidden width `shared_d_ff` (0: none)."""

    experts: int
    top_k: int
    expert_d_ff: int
    shared_d_ff: int = 0

    def __post_init__(self):
        if not 1 <= self.top_k <= self.experts or self.expert_d_ff < 1 or self.shared_d_ff < 0:
            raise ValueError(f"an expert layout needs 1 ≤ top_k ≤ experts and positive widths: {self}")

    def expert_elements(self, d_model: int) -> int:
        return 3 * d_model * self.expert_d_ff

    def shared_elements(self, d_model: int) -> int:
        return 3 * d_model * self.shared_d_ff + (d_model if self.shared_d_ff else 0)  # with its sigmoid gate

    def router_elements(self, d_model: int) -> int:
        return d_model * self.experts


@dataclass(frozen=True)
class PublishedModel:
    name: str
    config: DecoderConfig
    vocab: int  # tokens; the input embedding and the output head are vocab × d_model each
    tied: bool  # one matrix serves as both
    source: str
    max_context: int = 8192  # positions the model was trained for (max_position_embeddings)
    aliases: tuple[str, ...] = ()
    # A mixture of experts: every layer's FFN is `experts` routed experts of hidden width config.d_ff (and a shared
    # expert where it has one); None for a dense model.
    experts: ExpertConfig | None = None


LLAMA_3_8B = PublishedModel(
    "Llama-3-8B",
    DecoderConfig(layers=32, d_model=4096, heads=32, kv_heads=8, d_ff=14336, ffn="swiglu"),
    vocab=128256,
    tied=False,
    source="Meta's published configuration of Meta-Llama-3-8B (hidden_size 4096, num_hidden_layers 32, "
    "num_attention_heads 32, num_key_value_heads 8, intermediate_size 14336, vocab_size 128256, untied "
    "embeddings, max_position_embeddings 8192; https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json)",
    max_context=8192,
)

LLAMA_3_1_8B = PublishedModel(
    "Llama-3.1-8B",
    LLAMA_3_8B.config,
    vocab=128256,
    tied=False,
    source="Meta's published configuration of Llama-3.1-8B (the dimensions of Llama-3-8B: hidden_size 4096, "
    "num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, intermediate_size 14336, vocab_size "
    "128256, untied embeddings; max_position_embeddings 131072; "
    "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json)",
    max_context=131072,
    aliases=("Llama-3.1-8B-Instruct",),
)

LLAMA_3_3_70B = PublishedModel(
    "Llama-3.3-70B",
    DecoderConfig(layers=80, d_model=8192, heads=64, kv_heads=8, d_ff=28672, ffn="swiglu"),
    vocab=128256,
    tied=False,
    source="Meta's published configuration of Llama-3.3-70B-Instruct (hidden_size 8192, num_hidden_layers 80, "
    "num_attention_heads 64, num_key_value_heads 8, intermediate_size 28672, vocab_size 128256, untied "
    "embeddings, max_position_embeddings 131072; the same dimensions as Llama-3.1-70B; "
    "https://huggingface.co/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json)",
    max_context=131072,
    aliases=("Llama-3.3-70B-Instruct", "Llama-3.1-70B", "Llama-3.1-70B-Instruct"),
)

LLAMA_2_70B = PublishedModel(
    "Llama-2-70B",
    DecoderConfig(layers=80, d_model=8192, heads=64, kv_heads=8, d_ff=28672, ffn="swiglu"),
    vocab=32000,
    tied=False,
    source="Meta's published configuration of Llama-2-70b-hf (hidden_size 8192, num_hidden_layers 80, "
    "num_attention_heads 64, num_key_value_heads 8, intermediate_size 28672, vocab_size 32000, untied "
    "embeddings, max_position_embeddings 4096; https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json)",
    max_context=4096,
    aliases=("Llama-2-70B-Chat", "Llama-2-70b-chat-hf"),
)

LLAMA_3_1_405B = PublishedModel(
    "Llama-3.1-405B",
    DecoderConfig(layers=126, d_model=16384, heads=128, kv_heads=8, d_ff=53248, ffn="swiglu"),
    vocab=128256,
    tied=False,
    source="Meta's published configuration of Llama-3.1-405B (hidden_size 16384, num_hidden_layers 126, "
    "num_attention_heads 128, num_key_value_heads 8, intermediate_size 53248, vocab_size 128256, untied "
    "embeddings, max_position_embeddings 131072; https://huggingface.co/meta-llama/Llama-3.1-405B/blob/main/config.json)",
    max_context=131072,
    aliases=("Llama-3.1-405B-Instruct",),
)

MISTRAL_7B = PublishedModel(
    "Mistral-7B",
    DecoderConfig(layers=32, d_model=4096, heads=32, kv_heads=8, d_ff=14336, ffn="swiglu"),
    vocab=32000,
    tied=False,
    source="Mistral AI's published configuration of Mistral-7B-v0.1 (hidden_size 4096, num_hidden_layers 32, "
    "num_attention_heads 32, num_key_value_heads 8, intermediate_size 14336, vocab_size 32000, untied "
    "embeddings, max_position_embeddings 32768, sliding_window 4096, which this project does not model: the "
    "whole cache is counted; https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json)",
    max_context=32768,
    aliases=("Mistral-7B-v0.1",),
)

MIXTRAL_8X7B = PublishedModel(
    "Mixtral-8x7B",
    DecoderConfig(layers=32, d_model=4096, heads=32, kv_heads=8, d_ff=14336, ffn="swiglu"),
    vocab=32000,
    tied=False,
    source="Mistral AI's published configuration of Mixtral-8x7B-v0.1 (hidden_size 4096, num_hidden_layers 32, "
    "num_attention_heads 32, num_key_value_heads 8, intermediate_size 14336 per expert, num_local_experts 8, "
    "num_experts_per_tok 2, vocab_size 32000, untied embeddings, max_position_embeddings 32768; "
    "https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json)",
    max_context=32768,
    aliases=("Mixtral-8x7B-v0.1", "Mixtral-8x7B-Instruct", "Mixtral-8x7B-Instruct-v0.1"),
    experts=ExpertConfig(experts=8, top_k=2, expert_d_ff=14336),
)

QWEN1_5_MOE_A2_7B = PublishedModel(
    "Qwen1.5-MoE-A2.7B",
    DecoderConfig(layers=24, d_model=2048, heads=16, kv_heads=16, d_ff=1408, ffn="swiglu"),
    vocab=151936,
    tied=False,
    source="Qwen's published configuration of Qwen1.5-MoE-A2.7B (hidden_size 2048, num_hidden_layers 24, "
    "num_attention_heads 16, num_key_value_heads 16, num_experts 60, num_experts_per_tok 4, moe_intermediate_size "
    "1408, shared_expert_intermediate_size 5632, vocab_size 151936, tie_word_embeddings false, "
    "max_position_embeddings 8192; https://huggingface.co/Qwen/Qwen1.5-MoE-A2.7B/blob/main/config.json); the "
    "q, k and v biases are not counted. The Chat model's own config.json gives max_position_embeddings 32768 "
    "(https://huggingface.co/Qwen/Qwen1.5-MoE-A2.7B-Chat/blob/main/config.json), so the Chat name is not an alias "
    "of this entry: it would be given the base model's 8,192-token context",
    max_context=8192,
    aliases=("qwen1.5-moe",),
    experts=ExpertConfig(experts=60, top_k=4, expert_d_ff=1408, shared_d_ff=5632),
)

TINY_LLAMA = PublishedModel(
    "Tiny-Llama",
    DecoderConfig(layers=4, d_model=256, heads=4, kv_heads=2, d_ff=688, ffn="swiglu"),
    vocab=1024,
    tied=False,
    source="this project's test-sized decoder of Llama's shape (4 layers, hidden_size 256, 4 attention heads, 2 KV "
    "heads, intermediate_size 688, vocab_size 1024, untied embeddings, max_position_embeddings 4096): not a "
    "published model; a real engine serves it on random weights on a CPU (`nox -s engine-check`)",
    max_context=4096,
    aliases=("tiny",),
)

MODELS: tuple[PublishedModel, ...] = (
    LLAMA_3_8B,
    LLAMA_3_1_8B,
    MISTRAL_7B,
    LLAMA_2_70B,
    LLAMA_3_3_70B,
    LLAMA_3_1_405B,
    MIXTRAL_8X7B,
    QWEN1_5_MOE_A2_7B,
    TINY_LLAMA,
)


def find_model(name: str) -> PublishedModel | None:
    """The published model whose name or alias is `name` (any case)."""
    wanted = name.strip().lower()
    for model in MODELS:
        if wanted in (model.name.lower(), *(alias.lower() for alias in model.aliases)):
            return model
    return None


def stack_weight_elements(model: PublishedModel) -> int:
    """Every weight element of the decoder stack (no embeddings): for a mixture of experts, every expert's, the
    shared expert's and the router's in place of the one FFN of `weight_elements`."""
    c, e = model.config, model.experts
    dense = weight_elements(c)
    if e is None:
        return dense
    one_ffn = FFN_MATRICES[c.ffn] * c.d_model * c.d_ff
    routed = e.experts * e.expert_elements(c.d_model) + e.shared_elements(c.d_model) + e.router_elements(c.d_model)
    return dense + c.layers * (routed - one_ffn)


def model_weight_bytes(model: PublishedModel, bytes_per_element: float) -> float:
    embeddings = (1 if model.tied else 2) * model.vocab * model.config.d_model
    return bytes_per_element * (stack_weight_elements(model) + embeddings)


def tensor_parallel_split(model: PublishedModel, tp: int) -> str | None:
    """Why `model` cannot be split over `tp` GPUs as vLLM splits it, or None: the attention heads divide evenly, and
    the KV heads divide evenly or, when fewer than the GPUs, each is replicated over a whole number of them."""
    heads, kv = model.config.heads, model.config.kv_heads
    if heads % tp:
        return f"its {heads} attention heads do not divide over {tp} GPUs"
    if kv >= tp and kv % tp:
        return f"its {kv} KV heads do not divide over {tp} GPUs"
    if kv < tp and tp % kv:
        return f"its {kv} KV heads cannot be replicated evenly over {tp} GPUs"
    return None
