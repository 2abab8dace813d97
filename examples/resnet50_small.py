"""ResNet-50 on 64×64 images, for `python -m benchmarks sweep examples/resnet50_small.py:factory`.

A factory returns the model and an input maker: make_input(batch) gives one batch of images with
the batch first (NHWC in memory, the layout the convolutions run in). Small images keep a CPU
sweep to a minute; on a GPU use 224 (IMAGE = 224).
"""

import torch

from snippets.cnn import make_resnet50

IMAGE = 64  # pixels per side


def factory():
    model = make_resnet50()

    def make_input(batch: int) -> torch.Tensor:
        return torch.randn(batch, 3, IMAGE, IMAGE).contiguous(memory_format=torch.channels_last)

    return model, make_input
