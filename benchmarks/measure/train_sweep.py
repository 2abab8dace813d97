"""`sweep --train`: the user's model timed as a training step, and the activations autograd keeps per sample.

The model is wrapped in `TrainingStep`, a module whose call is one whole step (zero the gradients, forward, loss,
backward, an AdamW update) and returns the forward's output, so the sweep times, searches and reports it as it
does any model. The loss is the factory's `loss_fn` when it returns `(model, make_input, loss_fn)`, called as
`loss_fn(output)` or, when its signature takes two arguments, `loss_fn(output, batch)` with the batch that
`make_input(b)` returned (on the device, as the model got it: PyTorch's `loss(input, target)`, Lightning's
`training_step(batch)`); else the mean square of the output (a stand-in whose backward costs what any loss over
the output does).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

OPTIMIZER = "AdamW (lr 1e-4, foreach where the device has it; capturable on CUDA)"
SAVED_AT = (1, 2, 4)  # batches at which the tensors autograd keeps are counted


def floating_tensors(output: Any) -> list[torch.Tensor]:
    """The floating tensors of an output: a tensor, or the tensors of a tuple, list or dict of them."""
    if isinstance(output, torch.Tensor):
        return [output] if output.is_floating_point() else []
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (tuple, list)):
        return [t for item in output for t in floating_tensors(item)]
    return []


def mean_square(output: Any) -> torch.Tensor:
    """The stand-in loss: the mean square of every floating tensor of the output."""
    found = [t.float().pow(2).mean() for t in floating_tensors(output)]
    if not found:
        raise ValueError("the model's output holds no floating tensor to take a loss of")
    return torch.stack(found).sum()


def takes_batch(loss_fn: Callable) -> bool:
    """Whether `loss_fn` is called with the batch too, from its signature: `loss_fn(output)` or `loss_fn(output,
    batch)`. ValueError (one line) for any other shape."""
    try:
        signature = inspect.signature(loss_fn)
    except (TypeError, ValueError):
        raise ValueError("loss_fn: its signature cannot be read; wrap it: def loss_fn(output, batch): ...") from None
    positional = [p for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]  # fmt: skip
    required = sum(p.default is p.empty for p in positional)
    spread = any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values())
    keyword = [p.name for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    most = math.inf if spread else len(positional)
    if not keyword and required <= 1 and most == 1:
        return False
    if not keyword and required <= 2 <= most:
        return True
    raise ValueError(f"loss_fn{signature}: take loss_fn(output) or loss_fn(output, batch), where batch is what "
                     "make_input(b) returned")  # fmt: skip


def detached(output: Any) -> Any:
    """The output without its graph: a tensor, or a tuple, list or dict of them (a recurrent layer's output and
    state)."""
    if isinstance(output, torch.Tensor):
        return output.detach()
    if isinstance(output, tuple) and hasattr(output, "_fields"):  # a named tuple
        return type(output)(*(detached(item) for item in output))
    if isinstance(output, (tuple, list)):
        return type(output)(detached(item) for item in output)
    if isinstance(output, dict):
        return {key: detached(value) for key, value in output.items()}
    return output


def batch_of(args: tuple, kwargs: dict) -> Any:
    """What make_input returned, as the model was called with it: a tensor, a tuple of arguments or a dict."""
    if kwargs and not args:
        return kwargs
    return args[0] if len(args) == 1 and not kwargs else args


class TrainingStep(nn.Module):
    """One training step of `model` per call; the wrapped model stays in training mode whatever mode this is set to."""

    def __init__(self, model: nn.Module, loss_fn: Callable[[Any], torch.Tensor] | None):
        super().__init__()
        self.model = model.train()
        self.loss_fn = loss_fn or mean_square
        self.with_batch = takes_batch(self.loss_fn)
        parameters = [p for p in model.parameters() if p.requires_grad]
        if not parameters:
            raise ValueError("the model has no parameter that requires a gradient: there is nothing to train")
        cuda = parameters[0].is_cuda
        self.optimizer = torch.optim.AdamW(parameters, lr=1e-4, capturable=cuda)

    def loss(self, output: Any, args: tuple, kwargs: dict) -> torch.Tensor:
        return self.loss_fn(output, batch_of(args, kwargs)) if self.with_batch else self.loss_fn(output)

    def train(self, mode: bool = True) -> TrainingStep:
        self.training = mode
        self.model.train(True)
        return self

    @torch.enable_grad()
    def forward(self, *args, **kwargs):
        self.optimizer.zero_grad(set_to_none=True)
        output = self.model(*args, **kwargs)
        loss = self.loss(output, args, kwargs)
        if not (isinstance(loss, torch.Tensor) and loss.numel() == 1):
            raise ValueError(f"loss_fn must return a one-element tensor, got {type(loss).__name__}")
        loss.backward()
        self.optimizer.step()
        return detached(output)


def saved_bytes(step: TrainingStep, inputs: tuple[tuple, dict]) -> int:
    """Bytes of the tensors autograd keeps for the backward of one forward and loss, the parameters left out; views
    of one storage count once, as the largest of them."""
    parameters = {p.untyped_storage().data_ptr() for p in step.model.parameters()}
    storages: dict[int, int] = {}

    def pack(tensor):
        key = tensor.untyped_storage().data_ptr()
        if key not in parameters:
            storages[key] = max(storages.get(key, 0), tensor.numel() * tensor.element_size())
        return tensor

    args, kwargs = inputs
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        step.loss(step.model(*args, **kwargs), args, kwargs)
    return sum(storages.values())


def training_record(step: TrainingStep, make_inputs: Callable[[int], tuple[tuple, dict]], dtype_bytes: int) -> dict:
    """What the results file says of the training step: the optimizer, the loss, the state held whatever the batch,
    and the bytes autograd keeps at a few batches with the slope per sample between the first and the last."""
    kept = {batch: saved_bytes(step, make_inputs(batch)) for batch in SAVED_AT}
    first, last = SAVED_AT[0], SAVED_AT[-1]
    weights = sum(p.numel() * p.element_size() for p in step.model.parameters())
    trained = sum(p.numel() * p.element_size() for p in step.model.parameters() if p.requires_grad)
    return {
        "optimizer": OPTIMIZER,
        "loss": (
            "mean square of the output"
            if step.loss_fn is mean_square
            else f"the factory's loss_fn(output{', batch' if step.with_batch else ''})"
        ),
        "held_bytes": {"weights": weights, "gradients": trained, "optimizer state": 2 * trained},
        "saved_bytes": {str(batch): kept[batch] for batch in SAVED_AT},
        "saved_bytes_per_sample": max(0.0, (kept[last] - kept[first]) / (last - first)),
        "counted": "tensors autograd keeps for the backward (torch.autograd.graph.saved_tensors_hooks), parameters "
        f"left out, each storage once; {dtype_bytes}-byte elements",
    }
