"""Models the sweep was not written for, at test-friendly sizes (hold-out tests of tests/measure/test_sweep.py).

Each factory returns (model, make_input). Hand counts of their FLOPs per sample (matrix products and
attention; elementwise work is not counted) are beside them.
"""

import torch
from torch import nn

VOCAB, TOKENS, D_MODEL, HEADS, D_FF, LAYERS, CLASSES = 1000, 64, 128, 4, 512, 2, 10
STEPS, INPUTS, HIDDEN = 32, 64, 128


class Classifier(nn.Module):
    """A 2-layer Transformer encoder over TOKENS token ids, mean-pooled into a linear head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, D_FF, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, CLASSES)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


def transformer_flops_per_sample() -> int:
    """Per layer and token: Q, K, V and output projections 2·4·d², the feed-forward 2·2·d·d_ff; per layer the
    attention's two products 2·2·s²·d; the head 2·d·classes."""
    projections = TOKENS * (2 * 4 * D_MODEL**2 + 2 * 2 * D_MODEL * D_FF)
    attention = 2 * 2 * TOKENS**2 * D_MODEL
    return LAYERS * (projections + attention) + 2 * D_MODEL * CLASSES


def transformer():
    return Classifier(), lambda batch: torch.randint(0, VOCAB, (batch, TOKENS))


class Recurrent(nn.Module):
    """A 2-layer LSTM over STEPS time steps, returning its last hidden and cell states."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUTS, HIDDEN, num_layers=2, batch_first=True)

    def forward(self, x):
        _, (hidden, cell) = self.lstm(x)
        return hidden.transpose(0, 1), cell.transpose(0, 1)


def lstm_flops_per_sample() -> int:
    """Per step and layer the four gates' products 2·4·h·(inputs + h)."""
    return STEPS * (2 * 4 * HIDDEN * (INPUTS + HIDDEN) + 2 * 4 * HIDDEN * (HIDDEN + HIDDEN))


def lstm_weight_reads_per_call() -> int:
    """Bytes of fp32 weights each call reads at least: the input weights once per layer, the recurrent weights
    (and their bias) at every step."""
    gates = 4 * HIDDEN
    input_weights = gates * INPUTS + gates * HIDDEN + 2 * 2 * gates  # both layers' W_ih, both biases
    recurrent = 2 * gates * HIDDEN
    return 4 * (input_weights + STEPS * recurrent)


def lstm():
    return Recurrent(), lambda batch: torch.randn(batch, STEPS, INPUTS)
