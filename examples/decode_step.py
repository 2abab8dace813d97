"""One decode step of a small decoder at a fixed context, for
`python -m benchmarks sweep examples/decode_step.py:factory`.

The input maker builds what a serving engine holds for `batch` sequences: each one's newest token
(its hidden state) and a KV cache of CONTEXT earlier positions, so that the sweep times the step a
server runs for every new token. The model is the project's decoder (snippets/decode.py) with the
quick profile's small configuration; the cache comes pre-filled with noise, which costs the same to
read as real keys and values.
"""

import torch
from torch import nn

from snippets.decode import Config, make_decoder

CONFIG = Config(layers=2, d_model=512, heads=8, kv_heads=2, d_ff=2048, ffn="swiglu")
CONTEXT = 1024  # tokens already in every sequence's cache


class DecodeStep(nn.Module):
    """model(x, cache): the decode step at position CONTEXT."""

    def __init__(self):
        super().__init__()
        self.decoder = make_decoder(CONFIG)

    def forward(self, x: torch.Tensor, cache: torch.Tensor) -> torch.Tensor:
        return self.decoder.decode_step(x, cache, CONTEXT)


def factory():
    step = DecodeStep()

    def make_input(batch: int) -> dict:
        cache = torch.randn(CONFIG.layers, 2, batch, CONFIG.kv_heads, CONTEXT + 1, CONFIG.head_dim)
        return {"x": torch.randn(batch, 1, CONFIG.d_model), "cache": cache}

    return step, make_input
