"""A recurrent classifier with a loss that needs the labels, for `python -m benchmarks sweep
examples/train_recurrent.py:factory --train`.

The GRU returns (output, last hidden state), as every torch recurrent layer does; make_input(batch) returns the
sequences and their labels as keyword arguments, the model takes the sequences, and loss_fn(output, batch) reads the
labels from the batch, as a training loop's loss(input, target) would.
"""

import torch
import torch.nn.functional as F
from torch import nn

STEPS, FEATURES, HIDDEN, CLASSES = 32, 16, 128, 5  # a sequence's length, its features, the GRU's width, the labels


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(FEATURES, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, sequences: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        _, last = self.gru(sequences)  # last: (layers, batch, hidden)
        return self.head(last[-1])


def factory():
    def make_input(batch: int) -> dict:
        return {"sequences": torch.randn(batch, STEPS, FEATURES), "labels": torch.randint(0, CLASSES, (batch,))}

    def loss_fn(logits: torch.Tensor, batch: dict) -> torch.Tensor:
        return F.cross_entropy(logits.float(), batch["labels"])

    return Classifier(), make_input, loss_fn
