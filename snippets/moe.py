"""A mixture-of-experts feed-forward layer, beside the dense layer with the same active parameters.

A router scores every token against E experts and each token goes to its top k (token choice);
each expert is a two-layer FFN run on the rows it received, and the outputs are combined with
the router's weights. A fixed router bias, -skew·ln(1 + expert index), makes some experts more
popular (Zipf-like), as an untrained or drifting router does. Expert choice is the balanced
variant: each expert takes its top C tokens, so every expert gets exactly C rows. Run it on its
own (`python snippets/moe.py`) to check the dispatch against a per-token loop and print
latency and expert load against batch size.
"""

import math
import statistics
import time

import torch
from torch import nn

try:  # imported as part of the package (the harness, the tests)
    from snippets.costs import expert_capacity
except ImportError:  # run as a script: python snippets/<name>.py
    from costs import expert_capacity

EXPERTS = 8  # E
TOP_K = 2  # k experts per token
D_MODEL = 256  # token width
D_FF = 512  # hidden width of each expert
SKEWS = [0.0, 1.0, 2.0]  # 0 is uniform routing
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BATCHES = [1, 4, 16, 64, 256, 1024]
VARIANTS = ("token-choice", "expert-choice")
TOLERANCE = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 3e-2}


def ffn(d_model, d_ff):
    return nn.Sequential(nn.Linear(d_model, d_ff, bias=False), nn.ReLU(), nn.Linear(d_ff, d_model, bias=False))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, experts, top_k, skew=0.0, variant="token-choice", capacity_factor=1.0):
        super().__init__()
        self.top_k, self.variant, self.capacity_factor = top_k, variant, capacity_factor
        self.router = nn.Linear(d_model, experts, bias=True)
        with torch.no_grad():
            self.router.bias.copy_(-skew * torch.log1p(torch.arange(experts, dtype=torch.float32)))
        self.w_in = nn.Parameter(torch.randn(experts, d_model, d_ff) / math.sqrt(d_model))
        self.w_out = nn.Parameter(torch.randn(experts, d_ff, d_model) / math.sqrt(d_ff))

    def route(self, x):
        """(weights, experts): each token's top-k experts and their renormalised router weights."""
        scores = self.router(x).float().softmax(dim=-1)
        weights, experts = scores.topk(self.top_k, dim=-1)
        return (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype), experts

    def forward(self, x):
        return self.expert_choice(x) if self.variant == "expert-choice" else self.token_choice(x)

    def token_choice(self, x):
        weights, experts = self.route(x)
        flat = experts.flatten()
        order = flat.argsort()  # assignments grouped by expert
        counts = torch.bincount(flat, minlength=self.w_in.shape[0]).tolist()  # host sync
        tokens = order // self.top_k
        out = torch.zeros_like(x)
        start = 0
        for e, n in enumerate(counts):
            if n:  # an expert with no tokens costs nothing
                rows = tokens[start : start + n]
                h = torch.relu(x[rows] @ self.w_in[e]) @ self.w_out[e]
                out.index_add_(0, rows, h * weights.flatten()[order[start : start + n], None])
            start += n
        return out

    def capacity(self, batch):
        return expert_capacity(batch, self.w_in.shape[0], self.top_k, self.capacity_factor)

    def expert_choice(self, x):
        scores = self.router(x).float().softmax(dim=-1)  # b×E
        weights, rows = scores.T.topk(self.capacity(x.shape[0]), dim=-1)  # E×C: each expert's tokens
        h = torch.relu(torch.bmm(x[rows], self.w_in)) @ self.w_out  # E×C×d, static shapes
        out = torch.zeros_like(x)
        out.index_add_(0, rows.flatten(), (h * weights.to(x.dtype)[..., None]).flatten(0, 1))
        return out


def load(model, x):
    """Rows per expert for this input: (max, mean over all experts, experts touched)."""
    if model.variant == "expert-choice":
        c = model.capacity(x.shape[0])
        return c, c, model.w_in.shape[0]
    counts = torch.bincount(model.route(x)[1].flatten(), minlength=model.w_in.shape[0])
    return int(counts.max()), float(counts.float().mean()), int((counts > 0).sum())


def dropped_tokens(model, x):
    """Expert choice only: tokens that no expert picked (their output is zero)."""
    rows = model.router(x).float().softmax(dim=-1).T.topk(model.capacity(x.shape[0]), dim=-1)[1]
    return x.shape[0] - int(torch.unique(rows).numel())


@torch.no_grad()
def check_correctness(dtype=DTYPE, device=DEVICE, variant="token-choice", batch=37):
    """Relative error of the batched dispatch against a per-token float64 loop."""
    model = MoE(32, 48, experts=6, top_k=2, skew=1.0, variant=variant).to(device=device, dtype=dtype)
    x = torch.randn(batch, 32, device=device, dtype=dtype)
    out = model(x).double().cpu()
    w_in, w_out = model.w_in.double().cpu(), model.w_out.double().cpu()
    xs = x.double().cpu()
    expected = torch.zeros_like(xs)
    if variant == "expert-choice":
        weights, rows = model.router(x).float().softmax(-1).T.topk(model.capacity(batch), dim=-1)
        for e in range(w_in.shape[0]):
            for w, t in zip(weights[e].tolist(), rows[e].tolist()):
                expected[t] += w * (torch.relu(xs[t] @ w_in[e]) @ w_out[e])
    else:
        weights, experts = model.route(x)
        for t in range(batch):
            for w, e in zip(weights[t].double().tolist(), experts[t].tolist()):
                expected[t] += w * (torch.relu(xs[t] @ w_in[e]) @ w_out[e])
    error = ((out - expected).norm() / expected.norm()).item()
    if not error <= TOLERANCE[dtype]:
        raise AssertionError(f"MoE ({variant}) in {dtype} is off by {error:.2e} (tolerance {TOLERANCE[dtype]:.0e})")
    return error


@torch.no_grad()
def median_seconds(model, x, repeats=20):
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    for _ in range(3):
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
    for variant in VARIANTS:
        print(f"{variant}: relative error against a per-token loop: {check_correctness(variant=variant):.1e}")
    dense = ffn(D_MODEL, TOP_K * D_FF).to(DEVICE, DTYPE)
    print(f"E={EXPERTS}, k={TOP_K}, d={D_MODEL}, f={D_FF}, {DTYPE}, {DEVICE}; dense FFN of width {TOP_K * D_FF}")
    print(f"{'batch':>6} {'dense ms':>9} " + " ".join(f"{'skew ' + str(s) + ' ms (max load)':>24}" for s in SKEWS))
    models = [MoE(D_MODEL, D_FF, EXPERTS, TOP_K, skew=s).to(DEVICE, DTYPE) for s in SKEWS]
    for batch in BATCHES:
        x = torch.randn(batch, D_MODEL, device=DEVICE, dtype=DTYPE)
        cells = [f"{median_seconds(m, x) * 1e3:>14.3f} ({load(m, x)[0]:>6})" for m in models]
        print(f"{batch:>6} {median_seconds(dense, x) * 1e3:>9.3f} " + " ".join(f"{c:>24}" for c in cells))
