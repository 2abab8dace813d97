"""Convolutions, one layer and a whole ResNet-50: why they batch differently from an MLP.

A Linear layer uses each weight once per row, so at batch 1 it is a weight read (2 FLOPs per
weight element) and extra rows are nearly free until it turns compute-bound. A k×k convolution
applies its k²·C_in·C_out weights at every output position: 2·H_out²·batch FLOPs per weight
element, already 6,272 for a 3×3 layer at 56² and batch 1, so the pixels act as a batch the layer
already has. Arithmetic intensity is high at batch 1 and the flat region, where more images cost
almost nothing, is short; only the deep layers at 7², whose weights dominate, keep some of it. Run
it on its own (`python snippets/cnn.py`): it checks one layer against float64 and ResNet-50's
parameter count, then prints latency and throughput against batch size for single conv layers
and ResNet-50.
"""

import statistics
import time
from functools import partial

import torch
from torch import nn

try:  # imported as part of the package (the harness, the tests)
    from snippets.costs import (
        RESNET50_EXPANSION,
        RESNET50_PARAMETERS,
        RESNET50_STAGES,
        conv_cost,
        resnet50_cost,
    )
except ImportError:  # run as a script: python snippets/<name>.py
    from costs import (
        RESNET50_EXPANSION,
        RESNET50_PARAMETERS,
        RESNET50_STAGES,
        conv_cost,
        resnet50_cost,
    )

ON_GPU = torch.cuda.is_available()
DTYPE = torch.bfloat16 if ON_GPU else torch.float32
DEVICE = "cuda" if ON_GPU else "cpu"
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256] if ON_GPU else [1, 2, 4, 8]
CONV_SHAPES = [  # (c_in, c_out, kernel, resolution): ResNet-50 layers from its first stage to its last
    (64, 64, 3, 56),
    (256, 256, 3, 14),
    (512, 512, 3, 7),
    (2048, 512, 1, 7),
]
RESOLUTION = 224  # ResNet-50 input side, as in ImageNet inference
REPEATS = 20 if ON_GPU else 5  # timed calls per batch size; the median is reported


CUDNN_BENCHMARK = True  # cuDNN times each shape's algorithms and keeps the fastest, as a deployed model would


def make_conv(c_in, c_out, kernel, dtype=torch.float32, device="cpu"):
    with torch.device(device):  # initialise the weights where they run, not on the CPU and copy
        conv = nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, bias=False)
    # NHWC is the layout cuDNN's tensor-core kernels and oneDNN work in; NCHW would add transposes.
    return conv.to(dtype=dtype, memory_format=torch.channels_last)


class Bottleneck(nn.Module):
    """1×1 reduce, 3×3, 1×1 expand, plus the shortcut. ResNet v1.5: the 3×3 carries the stride."""

    def __init__(self, c_in, width, stride):
        super().__init__()
        c_out = width * RESNET50_EXPANSION
        self.conv1 = nn.Conv2d(c_in, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, c_out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or c_in != c_out:  # the shortcut must match the block's output shape
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        # the shortcut runs last, so convs run in the order they are built (and resnet50_layers lists)
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet50(nn.Module):
    """The torchvision layout and module names, so its state_dict keys are torchvision's too."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        c_in = 64
        for index, (blocks, width, stride) in enumerate(RESNET50_STAGES, start=1):
            stage = []
            for block in range(blocks):
                stage.append(Bottleneck(c_in, width, stride if block == 0 else 1))
                c_in = width * RESNET50_EXPANSION
            setattr(self, f"layer{index}", nn.Sequential(*stage))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c_in, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def make_resnet50(dtype=torch.float32, device="cpu", num_classes=1000):
    with torch.device(device):  # initialise the weights where they run, not on the CPU and copy
        model = ResNet50(num_classes)
    model = model.to(dtype=dtype, memory_format=torch.channels_last)
    return model.eval()  # BatchNorm uses its running statistics, as in inference


# cuDNN runs float32 convolutions in TF32 by default (torch.backends.cudnn.allow_tf32), unlike matmuls.
TOLERANCE = {torch.float32: 5e-3, torch.float16: 5e-3, torch.bfloat16: 3e-2}


@torch.no_grad()
def check_correctness(dtype=DTYPE, device=DEVICE, c_in=8, c_out=16, kernel=3, resolution=12, batch=3):
    """Relative error of make_conv() in `dtype` against conv2d in float64 with the same weights."""
    conv = make_conv(c_in, c_out, kernel, dtype, device)
    x = torch.randn(batch, c_in, resolution, resolution, device=device, dtype=dtype)
    x = x.to(memory_format=torch.channels_last)
    expected = nn.functional.conv2d(x.double().cpu(), conv.weight.double().cpu(), padding=kernel // 2)
    error = ((conv(x).double().cpu() - expected).norm() / expected.norm()).item()
    if not error <= TOLERANCE[dtype]:  # also catches NaN
        raise AssertionError(f"Conv2d in {dtype} is off by {error:.2e} (tolerance {TOLERANCE[dtype]:.0e})")
    return error


@torch.no_grad()
def check_resnet50(dtype=torch.float32, device="cpu"):
    """Parameter count of make_resnet50(), after a forward pass of two small images."""
    model = make_resnet50(dtype, device)
    count = sum(p.numel() for p in model.parameters())
    assert count == RESNET50_PARAMETERS, f"ResNet-50 has {count:,} parameters, not {RESNET50_PARAMETERS:,}"
    x = torch.randn(2, 3, 64, 64, device=device, dtype=dtype).to(memory_format=torch.channels_last)
    out = model(x)
    assert out.shape == (2, 1000), f"ResNet-50 output has shape {tuple(out.shape)}"
    assert out.isfinite().all(), f"ResNet-50 in {dtype} gives non-finite outputs"
    return count


@torch.no_grad()
def median_seconds(model, x, repeats=REPEATS):
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    for _ in range(3):  # warm-up: allocator, algorithm selection, caches
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
    torch.backends.cudnn.benchmark = CUDNN_BENCHMARK
    print(f"relative error against float64: {check_correctness():.1e}")
    print(f"ResNet-50 parameters: {check_resnet50(DTYPE, DEVICE):,}")
    size = torch.finfo(DTYPE).bits // 8
    workloads = [
        (
            f"Conv2d {c_in}→{c_out}, {k}×{k}, {res}²",
            make_conv(c_in, c_out, k, DTYPE, DEVICE),
            (c_in, res),
            partial(conv_cost, c_in=c_in, c_out=c_out, kernel=k, resolution=res, bytes_per_element=size),
        )
        for c_in, c_out, k, res in CONV_SHAPES
    ]
    workloads.append(
        (
            f"ResNet-50, {RESOLUTION}²",
            make_resnet50(DTYPE, DEVICE),
            (3, RESOLUTION),
            partial(resnet50_cost, bytes_per_element=size, resolution=RESOLUTION),
        )
    )
    for title, model, (channels, side), cost in workloads:
        flops, bytes_moved = cost(1)
        print(f"\n{title}, {DTYPE}, {DEVICE}: {flops / 1e9:.2f} GFLOP, {flops / bytes_moved:.0f} FLOP/byte at batch 1")
        print(f"{'batch':>6} {'ms':>9} {'images/s':>10} {'GFLOP/s':>9} {'GB/s':>7}")
        for batch in BATCHES:
            x = torch.randn(batch, channels, side, side, device=DEVICE, dtype=DTYPE)
            seconds = median_seconds(model, x.to(memory_format=torch.channels_last))
            flops, bytes_moved = cost(batch)
            print(
                f"{batch:>6} {seconds * 1e3:>9.3f} {batch / seconds:>10.1f} "
                f"{flops / seconds / 1e9:>9.1f} {bytes_moved / seconds / 1e9:>7.1f}"
            )
