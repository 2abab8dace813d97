"""The CNN snippet: hand-counted conv costs, the analytic ResNet-50 against the model, correctness checks."""

import pytest
import torch

from snippets import cnn, costs


def test_conv_cost_by_hand():
    # 3×3, 64→64, 56², batch 1, fp32: 2·9·64·64·56·56 FLOPs;
    # 4 bytes × (9·64·64 weights + 64·56·56 input + 64·56·56 output) = 4 × (36,864 + 2·200,704)
    flops, bytes_moved = costs.conv_cost(1, 64, 64, 3, 56, 4)
    assert flops == 2 * 9 * 64 * 64 * 56 * 56 == 231_211_008
    assert bytes_moved == 4 * (9 * 64 * 64 + 64 * 56 * 56 * 2) == 1_753_088


def test_conv_cost_with_stride_two():
    # 3×3, 128→128, 56² in, stride 2 → 28² out, batch 2, bf16: 2·9·128·128·28·28·2 FLOPs;
    # 2 bytes × (9·128·128 + 2·128·56·56 + 2·128·28·28)
    assert costs.conv_cost(2, 128, 128, 3, 56, 2, stride=2) == (
        2 * 9 * 128 * 128 * 28 * 28 * 2,
        2 * (9 * 128 * 128 + 2 * 128 * 56 * 56 + 2 * 128 * 28 * 28),
    )
    # an odd side rounds up, as same padding does: 7² → 4²
    assert costs.conv_cost(1, 1, 1, 1, 7, 1, stride=2) == (2 * 16, 1 + 49 + 16)


def test_conv_cost_of_a_1x1_conv():
    # 1×1, 2048→512, 7², batch 3, fp32: 2·2048·512·49·3 FLOPs; 4 × (2048·512 + 3·2048·49 + 3·512·49) bytes
    assert costs.conv_cost(3, 2048, 512, 1, 7, 4) == (
        2 * 2048 * 512 * 49 * 3,
        4 * (2048 * 512 + 3 * 2048 * 49 + 3 * 512 * 49),
    )


@pytest.mark.parametrize(
    ("batch", "c_in", "c_out", "kernel", "resolution", "stride"),
    [(1, 64, 64, 3, 56, 1), (4, 256, 256, 3, 14, 1), (1, 512, 512, 3, 14, 2), (8, 2048, 512, 1, 7, 1)],
)
def test_every_weight_is_used_at_every_output_position(batch, c_in, c_out, kernel, resolution, stride):
    flops, _ = costs.conv_cost(batch, c_in, c_out, kernel, resolution, 4, stride)
    side = -(-resolution // stride)
    assert flops / (kernel * kernel * c_in * c_out) == 2 * side * side * batch  # a Linear layer: 2·batch


def test_make_conv_keeps_the_shape_and_is_channels_last():
    conv = cnn.make_conv(8, 16, 3, torch.bfloat16)
    assert conv.weight.dtype == torch.bfloat16 and conv.bias is None
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    assert conv(torch.randn(2, 8, 10, 10, dtype=torch.bfloat16)).shape == (2, 16, 10, 10)


def test_resnet50_cost_is_8_2_gflops_per_image_and_linear_in_batch():
    # resnet50_cost(1, 4) == (8_178_368_512, 189_133_376): 4.09 GMACs, 43 FLOP/byte in fp32
    flops, bytes_moved = costs.resnet50_cost(1, 4, fused=True)
    assert (flops, bytes_moved) == (8_178_368_512, 189_133_376)
    assert abs(flops / 8.2e9 - 1) < 0.01
    found = [costs.resnet50_cost(batch, 2) for batch in (1, 2, 3)]
    for i in range(2):
        assert found[2][i] - found[1][i] == found[1][i] - found[0][i]
    assert found[1][0] == 2 * found[0][0]  # FLOPs have no per-call part; bytes do (the weights)


def test_resnet50_layers_count():
    layers = costs.resnet50_layers()
    convs, fc = layers[:-1], layers[-1]
    assert len(convs) == 53  # stem + 16 bottlenecks × 3 + 4 downsample shortcuts
    assert sum(".downsample." in layer.name for layer in convs) == 4
    assert (fc.name, fc.c_in, fc.c_out) == ("fc", 2048, 1000)


@pytest.fixture(scope="module")
def resnet():
    return cnn.make_resnet50()


def test_analytic_weights_match_the_model(resnet):
    analytic = sum(layer.kernel**2 * layer.c_in * layer.c_out for layer in costs.resnet50_layers()) + 1000  # fc bias
    counted = sum(
        p.numel() for m in resnet.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)) for p in m.parameters()
    )
    assert analytic == counted == 25_503_912  # the rest of the 25,557,032 are BatchNorm weights and biases


@pytest.mark.parametrize("resolution", [224, 50])
def test_analytic_layers_match_the_model_in_order(resnet, resolution):
    seen = []

    def record(name):
        return lambda module, inputs, output: seen.append((name, inputs[0].shape[-1]))

    modules = [(n, m) for n, m in resnet.named_modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    hooks = [m.register_forward_hook(record(n)) for n, m in modules]
    with torch.no_grad():
        resnet(torch.randn(1, 3, resolution, resolution).to(memory_format=torch.channels_last))
    for hook in hooks:
        hook.remove()
    layers = costs.resnet50_layers(resolution)
    assert [layer.name for layer in layers] == [n for n, _ in modules] == [n for n, _ in seen]  # built, run
    for layer, (_, m) in zip(layers, modules):
        if isinstance(m, torch.nn.Conv2d):
            assert (layer.c_in, layer.c_out, layer.kernel, layer.stride) == (
                m.in_channels,
                m.out_channels,
                m.kernel_size[0],
                m.stride[0],
            ), layer.name
        else:
            assert (layer.c_in, layer.c_out) == (m.in_features, m.out_features)
    # the fc's input is 2048 pooled features; the analytic list calls it a 1×1 image
    assert [layer.resolution for layer in layers[:-1]] == [side for _, side in seen[:-1]]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_conv_matches_float64(dtype):
    assert cnn.check_correctness(dtype, "cpu") <= cnn.TOLERANCE[dtype]


def test_correctness_check_catches_a_wrong_layer(monkeypatch):
    class Flipped(torch.nn.Conv2d):
        def forward(self, x):  # true convolution (flipped kernel) instead of PyTorch's cross-correlation
            return self._conv_forward(x, self.weight.flip(-1, -2), self.bias)

    def broken(c_in, c_out, kernel, dtype=torch.float32, device="cpu"):
        conv = Flipped(c_in, c_out, kernel, padding=kernel // 2, bias=False)
        return conv.to(device=device, dtype=dtype, memory_format=torch.channels_last)

    monkeypatch.setattr(cnn, "make_conv", broken)
    with pytest.raises(AssertionError, match="off by"):
        cnn.check_correctness(torch.float32, "cpu")


def test_check_resnet50_counts_torchvisions_parameters():
    assert cnn.check_resnet50() == costs.RESNET50_PARAMETERS == 25_557_032


def test_check_resnet50_catches_a_missing_layer(monkeypatch):
    original = cnn.make_resnet50

    def short(dtype=torch.float32, device="cpu", num_classes=1000):
        model = original(dtype, device, num_classes)
        model.layer3 = model.layer3[:-1]  # ResNet-50 with one bottleneck too few
        return model

    monkeypatch.setattr(cnn, "make_resnet50", short)
    with pytest.raises(AssertionError, match="parameters"):
        cnn.check_resnet50()


def test_unfused_resnet50_adds_every_pass_between_the_convs():
    """BatchNorm, ReLU, residual adds and pooling each read and write whole activations."""
    for batch in (1, 64):
        _, fused = costs.resnet50_cost(batch, 2, 224, fused=True)
        flops, unfused = costs.resnet50_cost(batch, 2, 224)
        assert unfused == fused + costs.resnet50_elementwise_bytes(batch, 2, 224)
        assert flops == costs.resnet50_cost(batch, 2, 224, fused=True)[0]
    # bf16 at 224²: the passes add 125 % at batch 1 (weights dominate) and 267 % at batch 64
    assert round(100 * (costs.resnet50_cost(1, 2)[1] / costs.resnet50_cost(1, 2, fused=True)[1] - 1)) == 125
    assert round(100 * (costs.resnet50_cost(64, 2)[1] / costs.resnet50_cost(64, 2, fused=True)[1] - 1)) == 267
    # by hand, the stem of one 224² image in bf16: BatchNorm and ReLU read and write 64·112² each, the max
    # pool reads it and writes 64·56²
    stem = 64 * 112 * 112
    assert costs.resnet50_elementwise_bytes(1, 2, 224) > 2 * (4 * stem + stem + stem // 4)
