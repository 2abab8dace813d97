"""`sweep --train`: the training-step wrapper, what autograd keeps per sample, the factory's loss, and the
recommendation (on SYNTHETIC sweep documents)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from benchmarks.analysis.roofline.training import sweep_training_lines
from benchmarks.commands.cli import main
from benchmarks.measure.target import TargetError, call_factory, load_target
from benchmarks.measure.train_sweep import TrainingStep, saved_bytes, training_record

CPU = torch.device("cpu")


def mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def test_a_call_is_one_training_step_in_training_mode_even_under_no_grad():
    step = TrainingStep(mlp(), None)
    step.eval()
    before = [p.detach().clone() for p in step.model.parameters()]
    with torch.no_grad():
        out = step(torch.randn(5, 16))
    assert out.shape == (5, 4) and not out.requires_grad and step.model.training
    assert all(not torch.equal(a, p) for a, p in zip(before, step.model.parameters()))


def test_what_autograd_keeps_grows_with_the_batch_and_leaves_the_weights_out():
    step = TrainingStep(mlp(), None)
    one, four = (saved_bytes(step, ((torch.randn(b, 16),), {})) for b in (1, 4))
    assert four - one == 3 * 4 * (16 + 32 + 4)  # each Linear's input, the ReLU's output (shared), the output
    record = training_record(step, lambda b: ((torch.randn(b, 16),), {}), 4)
    assert record["saved_bytes_per_sample"] == 4 * (16 + 32 + 4)
    assert record["held_bytes"]["optimizer state"] == 2 * record["held_bytes"]["weights"]


def test_a_training_factory_returns_its_loss_and_a_model_without_parameters_is_refused(tmp_path):
    path = tmp_path / "factory.py"
    path.write_text(
        "import torch\nfrom torch import nn\n"
        "def factory():\n"
        "    return nn.Linear(8, 2), (lambda b: torch.randn(b, 8)), (lambda out: out.sum())\n"
        "def frozen():\n"
        "    return nn.ReLU(), (lambda b: torch.randn(b, 8))\n"
    )
    model, _, loss_fn = call_factory(f"{path}:factory")
    assert isinstance(model, nn.Linear) and loss_fn(torch.ones(2, 2)).item() == 4
    target = load_target(f"{path}:factory", CPU, torch.float32, train=True)
    assert isinstance(target.model, TrainingStep) and target.model.loss_fn is not None
    assert "training step" in target.notes[0]
    with pytest.raises(TargetError, match="nothing to train"):
        load_target(f"{path}:frozen", CPU, torch.float32, train=True)


def synthetic_sweep(per_sample: float) -> dict:
    """SYNTHETIC: a training sweep whose time per sample flattens at batch 64."""
    times = {1: 1.0e-3, 4: 1.1e-3, 16: 1.6e-3, 64: 4.0e-3, 256: 15.6e-3, 1024: 62e-3}
    return {
        "points": [{"batch": b, "status": "ok", "median_s": s} for b, s in times.items()],
        "training": {"optimizer": "AdamW", "loss": "synthetic", "counted": "synthetic",
                     "held_bytes": {"weights": 1e8, "gradients": 1e8, "optimizer state": 2e8},
                     "saved_bytes": {"1": per_sample, "4": 4 * per_sample}, "saved_bytes_per_sample": per_sample},
    }  # fmt: skip


def test_the_recommendation_is_the_smaller_of_the_flat_batch_and_the_largest_that_fits():
    lines = sweep_training_lines(synthetic_sweep(1e6), memory_gb=1.0)
    assert "stops falling at batch 64" in lines[2] and lines[-1].startswith("  run batch 64: where")
    tight = sweep_training_lines(synthetic_sweep(1e7), memory_gb=1.0)  # (1e9 - 4e8) / 1e7 = 60
    assert "fit 1 GB: 60" in tight[-2] and tight[-1].startswith("  run batch 60: the largest that fits")
    assert "not even one sample" in sweep_training_lines(synthetic_sweep(1e7), memory_gb=0.3)[-1]


def test_memory_gb_needs_train(capsys):
    assert main(["sweep", "examples/train_classifier.py:factory", "--memory-gb", "4"]) == 2
    assert "--memory-gb is a training sweep's budget" in capsys.readouterr().err


def test_the_loss_is_called_with_the_batch_when_its_signature_asks_for_it():
    from benchmarks.measure.train_sweep import takes_batch

    def output_only(output):
        return output

    def with_batch(output, batch):
        return output

    def with_target(input, target, weight=None):  # PyTorch's loss(input, target) shape
        return input

    def three(output, batch, more):
        return output

    def keyword_only(output, *, labels):
        return output

    assert not takes_batch(output_only) and not takes_batch(lambda out: out)
    assert takes_batch(with_batch) and takes_batch(with_target) and takes_batch(lambda *parts: parts[0])
    for bad in (three, keyword_only, lambda: 0):
        with pytest.raises(ValueError, match=r"take loss_fn\(output\) or loss_fn\(output, batch\)"):
            takes_batch(bad)


def test_a_loss_with_labels_sees_the_batch_the_model_was_given():
    class Labelled(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 3)

        def forward(self, x, labels=None):
            return self.linear(x)

    seen = []

    def loss_fn(output, batch):
        seen.append(batch)
        return nn.functional.cross_entropy(output, batch["labels"])

    model = Labelled()
    step = TrainingStep(model, loss_fn)
    x, y = torch.randn(5, 4), torch.randint(0, 3, (5,))
    before = model.linear.weight.detach().clone()
    output = step(x=x, labels=y)
    assert set(seen[-1]) == {"x", "labels"} and torch.equal(seen[-1]["labels"], y)
    assert not output.requires_grad and not torch.equal(before, model.linear.weight)


def test_a_recurrent_model_with_its_own_loss_sweeps_on_the_first_try(capsys, tmp_path):
    code = main(["sweep", "examples/train_recurrent.py:factory", "--train", "--max-batch", "8", "--memory-gb", "1",
                 "--device", "cpu", "--results-dir", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    assert "loss: the factory's loss_fn(output, batch)" in out.out
    assert "per sample" in out.out and "largest batch whose held state and activations fit 1 GB" in out.out
