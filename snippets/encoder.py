"""A BERT-shaped Transformer encoder: bidirectional attention over whole sequences, then a pooler.

Each layer is post-norm (as BERT): x = LayerNorm(x + attention(x)), then x = LayerNorm(x + FFN(x)), with biases
everywhere and a GELU FFN; attention is bidirectional, so every token attends to every position of its own
sequence (no causal mask, no KV cache: a whole sequence is one call). The pooler is tanh of a Linear on each
sequence's first token ([CLS]). The embeddings are left out: the stack maps hidden states to a pooled vector per
sequence. Every weight is read once per call for the whole batch, while the work grows as batch × sequence length
(and the attention as batch × length²), so an encoder turns compute-bound at a small batch of long sequences. Run
it on its own (`python snippets/encoder.py`): it checks the model against a float64 reference with attention
written out, then prints latency against batch.
"""

import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

try:  # imported as part of the package (the harness, the tests)
    from snippets.costs import DecoderConfig, encoder_cost
except ImportError:  # run as a script: python snippets/<name>.py
    from costs import DecoderConfig, encoder_cost

GPU = torch.cuda.is_available()
DEVICE = "cuda" if GPU else "cpu"
DTYPE = torch.bfloat16 if GPU else torch.float32
# BERT-base on a GPU; a 2-layer, 256-wide encoder on a laptop. kv_heads = heads: every head has its own K and V.
CONFIG = (
    DecoderConfig(layers=12, d_model=768, heads=12, kv_heads=12, d_ff=3072, ffn="gelu")
    if GPU
    else DecoderConfig(layers=2, d_model=256, heads=4, kv_heads=4, d_ff=1024, ffn="gelu")
)
SEQ_LEN = 128 if GPU else 64  # tokens in each sequence
BATCHES = [1, 4, 16, 64, 256] if GPU else [1, 4, 16]
REPEATS = 20
TOLERANCE = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 3e-2}
CHECK_CONFIG = DecoderConfig(2, 64, heads=4, kv_heads=4, d_ff=128, ffn="gelu")


class Layer(nn.Module):
    """Post-norm encoder layer: LayerNorm(x + attention(x)), then LayerNorm(x + FFN(x))."""

    def __init__(self, c: DecoderConfig):
        super().__init__()
        self.heads = c.heads
        self.q, self.k, self.v, self.o = (nn.Linear(c.d_model, c.d_model) for _ in range(4))
        self.attn_norm = nn.LayerNorm(c.d_model, eps=1e-12)
        self.up = nn.Linear(c.d_model, c.d_ff)
        self.down = nn.Linear(c.d_ff, c.d_model)
        self.ffn_norm = nn.LayerNorm(c.d_model, eps=1e-12)

    def split(self, x):
        batch, length, width = x.shape
        return x.view(batch, length, self.heads, width // self.heads).transpose(1, 2)

    def attend(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)  # bidirectional: no mask

    def forward(self, x):
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        context = self.attend(q, k, v).transpose(1, 2).reshape(x.shape)
        x = self.attn_norm(x + self.o(context))
        return self.ffn_norm(x + self.down(F.gelu(self.up(x))))


class ReferenceLayer(Layer):
    """The same layer with attention written out, softmax(QKᵀ/√d)·V: what the check compares against."""

    def attend(self, q, k, v):
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        return scores.softmax(dim=-1) @ v


class Encoder(nn.Module):
    """`layers` encoder layers, then the pooler, tanh(Linear(first token)); without it, the last hidden states."""

    def __init__(self, c: DecoderConfig, layer=Layer, pooler=True):
        super().__init__()
        self.layers = nn.ModuleList(layer(c) for _ in range(c.layers))
        self.pooler = nn.Linear(c.d_model, c.d_model) if pooler else None

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x if self.pooler is None else torch.tanh(self.pooler(x[:, 0]))


def make_encoder(config, dtype=torch.float32, device="cpu", layer=Layer, pooler=True):
    with torch.device(device):  # initialise the weights where they run, not on the CPU and copy
        model = Encoder(config, layer, pooler)
    return model.to(dtype=dtype).eval()


@torch.no_grad()
def check_correctness(dtype=DTYPE, device=DEVICE, config=CHECK_CONFIG, batch=3, seq_len=9):
    """Relative error of the encoder in `dtype` against the same weights in float64 with attention written out."""
    model = make_encoder(config, dtype, device)
    reference = make_encoder(config, torch.float64, "cpu", ReferenceLayer)
    reference.load_state_dict({k: v.double().cpu() for k, v in model.state_dict().items()})
    x = torch.randn(batch, seq_len, config.d_model, device=device, dtype=dtype)
    out = model(x).double().cpu()
    expected = reference(x.double().cpu())
    error = ((out - expected).norm() / expected.norm()).item()
    if not error <= TOLERANCE[dtype]:  # also catches NaN
        raise AssertionError(f"encoder in {dtype} is off by {error:.2e} (tolerance {TOLERANCE[dtype]:.0e})")
    return error


@torch.no_grad()
def median_seconds(model, x, repeats=REPEATS):
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    for _ in range(3):  # warm-up: allocator, kernel selection, caches
        model(x)
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        model(x)
        sync()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


if __name__ == "__main__":
    print(f"relative error against float64: {check_correctness():.1e}")
    model = make_encoder(CONFIG, DTYPE, DEVICE)
    size = torch.finfo(DTYPE).bits // 8
    print(f"{CONFIG.layers}-layer encoder (d={CONFIG.d_model}), {SEQ_LEN}-token sequences, {DTYPE}, {DEVICE}")
    print(f"{'batch':>6} {'ms':>9} {'seqs/s':>10} {'GFLOP/s':>9} {'GB/s':>7}")
    for batch in BATCHES:
        x = torch.randn(batch, SEQ_LEN, CONFIG.d_model, device=DEVICE, dtype=DTYPE)
        seconds = median_seconds(model, x)
        cost = encoder_cost(batch, SEQ_LEN, CONFIG, size)
        print(
            f"{batch:>6} {seconds * 1e3:>9.3f} {batch / seconds:>10.0f} "
            f"{cost['flops'] / seconds / 1e9:>9.1f} {cost['bytes'] / seconds / 1e9:>7.1f}"
        )
