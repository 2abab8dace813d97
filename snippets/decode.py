"""One decode step of a decoder-only Transformer stack with a KV cache, against batch and context length.

Each layer is pre-norm (RMSNorm) self-attention with separate q/k/v/o projections, then a SwiGLU FFN
(as in Llama; a GELU FFN on request), each with a residual add; the embedding and LM head are left
out, so the stack maps hidden states to hidden states, and positions are ignored (rotary embeddings
would not change the cost). One decode
step reads every weight once for the whole batch, but each sequence reads its own KV cache, so the
bytes moved grow as batch × context and, at long context, the cache rather than the weights sets the
time. Grouped-query attention (kv_heads < heads) shares each K/V head among heads / kv_heads query
heads and shrinks that term by the same factor. Run it on its own (`python snippets/decode.py`): it
checks prefill + decode against a float64 full-sequence run, then prints decode latency against batch.
"""

import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

try:  # imported as part of the package (the harness, the tests)
    from snippets.costs import DecoderConfig, decode_cost, weight_elements
except ImportError:  # run as a script: python snippets/<name>.py
    from costs import DecoderConfig, decode_cost, weight_elements


Config = DecoderConfig  # the cost model's config is the model's

GPU = torch.cuda.is_available()
DEVICE = "cuda" if GPU else "cpu"
DTYPE = torch.bfloat16 if GPU else torch.float32
CONFIG = (
    Config(layers=4, d_model=4096, heads=32, kv_heads=8, d_ff=14336, ffn="swiglu")  # 4 of Llama-3-8B's 32 layers
    if GPU
    else Config(layers=2, d_model=512, heads=8, kv_heads=2, d_ff=2048, ffn="swiglu")  # small enough for a laptop
)
CONTEXTS = [512, 2048, 8192] if GPU else [128, 1024]  # tokens already in each sequence's cache
BATCHES = [1, 4, 16, 64, 256] if GPU else [1, 4, 16, 64]  # sequences decoded together
REPEATS = 20  # timed decode steps per point; the median is reported
TOLERANCE = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 3e-2}
CHECK_CONFIG = Config(2, 64, heads=4, kv_heads=2, d_ff=128, ffn="swiglu")  # GQA: 2 query heads per K/V head


class Layer(nn.Module):
    """Pre-norm decoder layer: x + attention(norm(x)), then x + FFN(norm(x)). No biases."""

    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        self.attn_norm = nn.RMSNorm(c.d_model, eps=1e-5)
        self.q = nn.Linear(c.d_model, c.heads * c.head_dim, bias=False)
        self.k = nn.Linear(c.d_model, c.kv_heads * c.head_dim, bias=False)
        self.v = nn.Linear(c.d_model, c.kv_heads * c.head_dim, bias=False)
        self.o = nn.Linear(c.heads * c.head_dim, c.d_model, bias=False)
        self.ffn_norm = nn.RMSNorm(c.d_model, eps=1e-5)
        self.up = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.gate = nn.Linear(c.d_model, c.d_ff, bias=False) if c.ffn == "swiglu" else None
        self.down = nn.Linear(c.d_ff, c.d_model, bias=False)

    def forward(self, x, cache, start):
        """x: [b, t, d] for positions start..start+t-1; cache: this layer's [2, B ≥ b, kv_heads, max_context, hd].

        Either a prefill (start = 0, causal over the t tokens) or a decode step (t = 1, sees 0..start).
        """
        b, t, _ = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(b, t, self.c.heads, self.c.head_dim).transpose(1, 2)  # [b, heads, t, hd]
        k = self.k(h).view(b, t, self.c.kv_heads, self.c.head_dim).transpose(1, 2)  # [b, kv_heads, t, hd]
        v = self.v(h).view(b, t, self.c.kv_heads, self.c.head_dim).transpose(1, 2)
        cache[0, :b, :, start : start + t] = k  # Python-int slices: static shapes, no host sync
        cache[1, :b, :, start : start + t] = v
        keys, values = cache[0, :b, :, : start + t], cache[1, :b, :, : start + t]
        # enable_gqa: each K/V head serves heads / kv_heads query heads without being copied
        a = F.scaled_dot_product_attention(q, keys, values, is_causal=t > 1, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, self.c.heads * self.c.head_dim))
        h = self.ffn_norm(x)
        hidden = F.silu(self.gate(h)) * self.up(h) if self.gate is not None else F.gelu(self.up(h))
        return x + self.down(hidden)


class Decoder(nn.Module):
    """A stack of `layers` decoder layers and a final RMSNorm, on hidden states (no embedding, no LM head)."""

    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(Layer(config) for _ in range(config.layers))
        self.norm = nn.RMSNorm(config.d_model, eps=1e-5)

    def new_cache(self, batch, max_context, dtype=None, device=None):
        """Zeroed KV cache [layers, 2 (K, V), batch, kv_heads, max_context, head_dim], dtype/device of the weights."""
        c, weight = self.config, self.norm.weight
        shape = (c.layers, 2, batch, c.kv_heads, max_context, c.head_dim)
        return torch.zeros(shape, dtype=dtype or weight.dtype, device=device or weight.device)

    def _run(self, x, cache, start):
        if x.shape[0] > cache.shape[2] or start + x.shape[1] > cache.shape[4]:
            raise ValueError(
                f"cache {tuple(cache.shape)} too small for {x.shape[0]} sequences up to {start + x.shape[1]}"
            )
        for layer, layer_cache in zip(self.layers, cache):
            x = layer(x, layer_cache, start)
        return self.norm(x)

    def prefill(self, x, cache):
        """x: [batch, prompt, d_model]. Causal self-attention over the prompt; writes K/V of positions
        0..prompt-1 into cache[:, :, :batch]. Returns [batch, prompt, d_model]."""
        return self._run(x, cache, 0)

    def decode_step(self, x, cache, position: int):
        """x: [batch, 1, d_model], the token at `position`. Writes its K/V at cache[..., :batch, :, position]
        and attends over positions 0..position inclusive. Returns [batch, 1, d_model].

        `position` is a Python int, so every shape is static and the call can be captured in a CUDA graph.
        The cache may hold more sequences than x; only its first `batch` are read and written.
        """
        if x.dim() != 3 or x.shape[1] != 1:
            raise ValueError(f"decode_step takes x of shape [batch, 1, d_model], got {tuple(x.shape)}")
        return self._run(x, cache, position)


def make_decoder(config, dtype=torch.float32, device="cpu"):
    with torch.device(device):  # initialise the weights where they run, not on the CPU and copy
        model = Decoder(config)
    return model.to(dtype=dtype).eval()


@torch.no_grad()
def check_correctness(dtype=DTYPE, device=DEVICE, config=CHECK_CONFIG, batch=3, prompt=5):
    """Relative error of prefill(prompt) + decode_step in `dtype` against a float64 prefill of prompt + 1 tokens."""
    model = make_decoder(config, dtype, device)
    reference = make_decoder(config, torch.float64, "cpu")
    reference.load_state_dict({k: v.double().cpu() for k, v in model.state_dict().items()})
    x = torch.randn(batch, prompt + 1, config.d_model, device=device, dtype=dtype)
    cache = model.new_cache(batch, prompt + 1)
    model.prefill(x[:, :prompt], cache)
    out = model.decode_step(x[:, prompt:], cache, prompt).double().cpu()
    expected = reference.prefill(x.double().cpu(), reference.new_cache(batch, prompt + 1))[:, prompt:]
    error = ((out - expected).norm() / expected.norm()).item()
    if not error <= TOLERANCE[dtype]:  # also catches NaN
        raise AssertionError(f"decode step in {dtype} is off by {error:.2e} (tolerance {TOLERANCE[dtype]:.0e})")
    return error


@torch.no_grad()
def median_seconds(step, cuda, repeats=REPEATS):
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(3):  # warm-up: allocator, kernel selection, caches
        step()
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        step()
        sync()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


if __name__ == "__main__":
    print(f"relative error against float64: {check_correctness():.1e}")
    model = make_decoder(CONFIG, DTYPE, DEVICE)
    size = torch.finfo(DTYPE).bits // 8
    print(f"{CONFIG}, {DTYPE}, {DEVICE}; weights {weight_elements(CONFIG) * size / 1e9:.2f} GB")
    print(f"{'batch':>6} {'context':>8} {'ms':>9} {'tokens/s':>10} {'GB/s':>7} {'weights':>8} {'KV cache':>9}")
    for context in CONTEXTS:
        cache = model.new_cache(max(BATCHES), context + 1)  # one cache for the largest batch; smaller ones use a prefix
        cache.normal_()  # stands in for a prefill: the values do not change the cost
        for batch in BATCHES:
            x = torch.randn(batch, 1, CONFIG.d_model, device=DEVICE, dtype=DTYPE)
            seconds = median_seconds(lambda: model.decode_step(x, cache, context), x.is_cuda)  # noqa: B023
            cost = decode_cost(batch, context, CONFIG, size)
            print(
                f"{batch:>6} {context:>8} {seconds * 1e3:>9.3f} {batch / seconds:>10.0f} "
                f"{cost['bytes'] / seconds / 1e9:>7.1f} {cost['weight_bytes'] / cost['bytes']:>8.0%} "
                f"{cost['kv_bytes'] / cost['bytes']:>9.0%}"
            )
        del cache
