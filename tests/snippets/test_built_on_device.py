"""Models are initialised on the device they run on, not on the CPU and copied (on a GPU that
copy of billions of fp32 parameters costs a minute)."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks.measure.adapters import ADAPTERS
from benchmarks.workloads import WORKLOADS
from snippets import cnn, decode, encoder, linear, mlp, train


class CpuTensorsMade(TorchDispatchMode):
    """Records every operator that produces a tensor on the CPU."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outputs = out if isinstance(out, (tuple, list)) else (out,)
        if any(isinstance(o, torch.Tensor) and o.device.type == "cpu" for o in outputs):
            self.ops.append(str(func))
        return out


META = torch.device("meta")
BF16 = torch.bfloat16
MOE = {"experts": 4, "top_k": 2, "d_model": 16, "d_ff": 8}
BUILDERS = {
    "mlp": lambda: mlp.make_mlp(64, 2, BF16, META),
    "linear": lambda: linear.make_linear(32, 16, BF16, META),
    "moe": lambda: ADAPTERS["moe"]._module({"variant": "token-choice", **MOE, "skew": 1.0}, "bfloat16", META),
    "moe (dense)": lambda: ADAPTERS["moe"]._module({"variant": "dense", **MOE}, "bfloat16", META),
    "conv": lambda: cnn.make_conv(8, 8, 3, BF16, META),
    "resnet50": lambda: cnn.make_resnet50(BF16, META),
    "decode": lambda: decode.make_decoder(decode.CHECK_CONFIG, BF16, META),
    "encoder": lambda: encoder.make_encoder(encoder.CHECK_CONFIG, BF16, META),
    "train-mlp": lambda: ADAPTERS["train-mlp"].build({"width": 64, "depth": 2}, "bfloat16", META),
    "train-decoder": lambda: train.make_decoder(train.CHECK_CONFIG, BF16, META),
}


def test_every_workload_has_a_builder_here():
    assert {name.split()[0] for name in BUILDERS} == set(WORKLOADS)


@pytest.mark.parametrize("workload", sorted(BUILDERS))
def test_weights_are_made_on_the_device(workload):
    made = CpuTensorsMade()
    with made:
        module = BUILDERS[workload]()
    assert made.ops == []
    assert {t.device.type for t in [*module.parameters(), *module.buffers()]} == {"meta"}
    assert {p.dtype for p in module.parameters()} == {BF16}
