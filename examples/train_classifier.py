"""A small classifier to train, for `python -m benchmarks sweep examples/train_classifier.py:factory --train`.

A training factory returns the model, an input maker and a loss: make_input(batch) gives a batch of inputs, and
loss_fn(output) the scalar the step differentiates. Here the labels are drawn once, for the largest batch, and the
loss takes as many as the output has rows (the labels do not change the cost).
"""

import torch
import torch.nn.functional as F
from torch import nn

FEATURES, HIDDEN, CLASSES = 784, 1024, 10
MAX_BATCH = 8192


def factory():
    model = nn.Sequential(
        nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES)
    )
    labels = torch.randint(0, CLASSES, (MAX_BATCH,))

    def make_input(batch: int) -> torch.Tensor:
        return torch.randn(batch, FEATURES)

    def loss_fn(logits: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), labels[: len(logits)].to(logits.device))

    return model, make_input, loss_fn
