"""One training step against batch size: forward, loss, backward and an optimizer update.

Two models: the MLP of `snippets/mlp.py` and a stack of pre-norm decoder layers (causal self-attention and a
SwiGLU FFN, as in `snippets/decode.py` but without a KV cache: training sees whole sequences). The loss is the mean
squared error against a random target of the output's shape (the loss itself costs next to nothing). The step runs
`zero_grad(set_to_none=True)`, the forward, the loss, `backward()` and `optimizer.step()` (AdamW or SGD with
momentum); on CUDA AdamW is made `capturable`, so the whole step can be captured in one CUDA graph.

Run it on its own (`python snippets/train.py`): it checks the gradients and one update of each optimizer against
float64, then prints step time against batch and the activation memory autograd keeps per sample.
"""

import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

try:  # imported as part of the package (the harness, the tests)
    from snippets import mlp
    from snippets.costs import DecoderConfig, mlp_parameters, train_mlp_phases
except ImportError:  # run as a script: python snippets/<name>.py
    import mlp
    from costs import DecoderConfig, mlp_parameters, train_mlp_phases

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPE = torch.float32
WIDTH, DEPTH = 512, 8
BATCHES = [1, 4, 16, 64, 256]
REPEATS = 10  # timed steps per batch size; the median is reported
LEARNING_RATE = {"adamw": 1e-3, "sgd": 1e-2}
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}
CHECK_CONFIG = DecoderConfig(2, 32, heads=4, kv_heads=2, d_ff=64, ffn="swiglu")


class Block(nn.Module):
    """Pre-norm decoder layer over whole sequences: x + attention(norm(x)), then x + FFN(norm(x)). No biases."""

    def __init__(self, c: DecoderConfig):
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

    def forward(self, x):
        """x: [b, t, d] -> [b, t, d], causal over the t positions."""
        b, t, _ = x.shape
        c = self.c
        h = self.attn_norm(x)
        q = self.q(h).view(b, t, c.heads, c.head_dim).transpose(1, 2)
        k = self.k(h).view(b, t, c.kv_heads, c.head_dim).transpose(1, 2)
        v = self.v(h).view(b, t, c.kv_heads, c.head_dim).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, c.heads * c.head_dim))
        h = self.ffn_norm(x)
        hidden = F.silu(self.gate(h)) * self.up(h) if self.gate is not None else F.gelu(self.up(h))
        return x + self.down(hidden)


def make_decoder(config: DecoderConfig, dtype=torch.float32, device="cpu") -> nn.Module:
    """`config.layers` blocks and a final RMSNorm: the stack whose weights `costs.weight_elements` counts."""
    with torch.device(device):  # initialise the weights where they run
        layers = [Block(config) for _ in range(config.layers)]
        model = nn.Sequential(*layers, nn.RMSNorm(config.d_model, eps=1e-5))
    return model.to(dtype=dtype)


def make_optimizer(model: nn.Module, name: str) -> torch.optim.Optimizer:
    """AdamW (capturable on CUDA: its step count stays on the device, so a CUDA graph can hold the update) or SGD
    with momentum 0.9."""
    parameters = list(model.parameters())
    if name == "adamw":
        cuda = parameters[0].is_cuda
        return torch.optim.AdamW(parameters, lr=LEARNING_RATE[name], weight_decay=0.01, capturable=cuda)
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=LEARNING_RATE[name], momentum=0.9)
    raise ValueError(f"optimizer must be adamw or sgd, got {name!r}")


class TrainStep:
    """One training step of a model: zero the gradients, forward, loss, backward, update."""

    def __init__(self, model: nn.Module, optimizer_name: str):
        self.model = model
        self.optimizer = make_optimizer(model, optimizer_name)

    @torch.enable_grad()  # a caller's no_grad (the harness runs every call under one) must not turn it off
    def __call__(self, x: torch.Tensor, target: torch.Tensor) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(self.model(x), target)
        loss.backward()
        self.optimizer.step()


@torch.enable_grad()
def saved_tensor_bytes(model: nn.Module, x: torch.Tensor, target: torch.Tensor) -> int:
    """Bytes of the tensors autograd keeps for the backward of one forward and loss, the parameters left out
    (they are held whatever the batch). Views of one storage count once, as the largest of them: a batch that is
    a row prefix of a larger buffer counts its own rows, not the buffer."""
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(tensor):
        key = tensor.untyped_storage().data_ptr()
        if key not in parameters:
            storages[key] = max(storages.get(key, 0), tensor.numel() * tensor.element_size())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        F.mse_loss(model(x), target)  # the graph and what it keeps are freed on return
    return sum(storages.values())


@torch.enable_grad()
def _one_step_state(model, optimizer_name, x, target):
    """(gradients, parameters after one step) of `model` on (x, target), flattened in float64 on the CPU."""
    step = TrainStep(model, optimizer_name)
    step.optimizer.zero_grad(set_to_none=True)
    F.mse_loss(model(x), target).backward()
    grads = torch.cat([p.grad.double().cpu().flatten() for p in model.parameters()])
    step.optimizer.step()
    weights = torch.cat([p.detach().double().cpu().flatten() for p in model.parameters()])
    return grads, weights


def relative_error(got, expected) -> float:
    return ((got - expected).norm() / expected.norm()).item()


def check_correctness(dtype=DTYPE, device=DEVICE, kind="mlp"):
    """Largest relative error, against float64, of the gradients and of the parameters after one update with each
    optimizer, for the MLP (`kind="mlp"`) or the decoder stack (`kind="decoder"`)."""
    errors = []
    for optimizer_name in ("adamw", "sgd"):
        torch.manual_seed(0)
        if kind == "mlp":
            model, shape = mlp.make_mlp(64, 3, dtype, device), (7, 64)
        else:
            model, shape = make_decoder(CHECK_CONFIG, dtype, device), (3, 5, CHECK_CONFIG.d_model)
        reference = make_decoder(CHECK_CONFIG, torch.float64) if kind != "mlp" else mlp.make_mlp(64, 3, torch.float64)
        reference.load_state_dict({k: v.double().cpu() for k, v in model.state_dict().items()})
        x, target = torch.randn(*shape, dtype=torch.float64), torch.randn(*shape, dtype=torch.float64)
        got = _one_step_state(model, optimizer_name, x.to(device, dtype), target.to(device, dtype))
        expected = _one_step_state(reference, optimizer_name, x, target)
        errors += [relative_error(g, e) for g, e in zip(got, expected)]
    error = max(errors)
    if not error <= TOLERANCE[dtype]:  # also catches NaN
        raise AssertionError(
            f"training step ({kind}) in {dtype} is off by {error:.2e} (tolerance {TOLERANCE[dtype]:.0e})"
        )
    return error


def median_seconds(step, x, target, repeats=REPEATS):
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    for _ in range(3):  # warm-up: the optimizer's state is made on the first step
        step(x, target)
    samples = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        step(x, target)
        sync()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


if __name__ == "__main__":
    print(f"relative error against float64: {max(check_correctness(), check_correctness(kind='decoder')):.1e}")
    size = torch.finfo(DTYPE).bits // 8
    print(f"{DEPTH}×{WIDTH} MLP ({mlp_parameters(WIDTH, DEPTH):,} parameters), AdamW, {DTYPE}, {DEVICE}")
    print(f"{'batch':>6} {'ms':>9} {'rows/s':>10} {'GFLOP/s':>9} {'saved KiB':>10}")
    model = mlp.make_mlp(WIDTH, DEPTH, DTYPE, DEVICE)
    step = TrainStep(model, "adamw")
    for batch in BATCHES:
        x = torch.randn(batch, WIDTH, device=DEVICE, dtype=DTYPE)
        target = torch.randn_like(x)
        seconds = median_seconds(step, x, target)
        flops = sum(phase[1] for phase in train_mlp_phases(batch, WIDTH, DEPTH, size, "adamw"))
        saved = saved_tensor_bytes(model, x, target)
        print(
            f"{batch:>6} {seconds * 1e3:>9.3f} {batch / seconds:>10.0f} {flops / seconds / 1e9:>9.1f} "
            f"{saved / 1024:>10.0f}"
        )
