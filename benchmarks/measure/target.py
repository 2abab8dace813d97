"""The model a sweep measures, loaded from TARGET (`path/to/file.py:factory` or `package.module:factory`).

The factory returns the model, or the model and an input maker `make_input(batch)` that returns a
tensor, a tuple of positional arguments or a dict of keyword arguments whose tensors have the batch
as their first dimension. Without an input maker, a per-sample shape (and a vocabulary size for
integer token inputs) makes random inputs. Every way this can go wrong ends in a TargetError of one
line that says what to fix.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from benchmarks.contract.errors import UserError

Inputs = tuple[tuple[Any, ...], dict[str, Any]]


class TargetError(UserError):
    """The target cannot be swept; the message says why in one line."""


@dataclass
class Target:
    spec: str  # as given
    model: nn.Module
    make_inputs: Callable[[int], Inputs]  # batch -> (args, kwargs), on the device, in the dtype
    input_words: str  # how inputs are made, for the results file
    notes: list[str] = field(default_factory=list)  # what was done to the model, said in the output

    @property
    def name(self) -> str:
        return type(self.model).__name__

    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def weight_bytes(self) -> int:
        tensors = [*self.model.parameters(), *self.model.buffers()]
        return sum(t.numel() * t.element_size() for t in tensors)


def _import(spec: str) -> Any:
    """The module TARGET names: a .py file (its folder importable) or a dotted module."""
    where, _, _ = spec.rpartition(":")
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = Path(where)
        if not path.is_file():
            raise TargetError(f"TARGET {spec}: no such file {where}")
        name = f"_batching_target_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path) if path.suffix == ".py" else None
        if module_spec is None or module_spec.loader is None:
            raise TargetError(f"TARGET {spec}: {where} is not a Python file (give path/to/file.py:factory)")
        sys.path.insert(0, str(path.resolve().parent))  # so the file can import its neighbours
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        with _importing(where):
            module_spec.loader.exec_module(module)
        return module
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    with _importing(where, spec):
        return importlib.import_module(where)


@contextlib.contextmanager
def _importing(where: str, dotted_spec: str | None = None) -> Iterator[None]:
    """Any failure of running a target's module, sys.exit() included, as one TargetError line; for a dotted
    TARGET (`dotted_spec`), a module that cannot be found is named as such."""
    try:
        yield
    except SystemExit as exc:
        raise TargetError(
            f'importing {where} called sys.exit({exc.code!r}): put its script part under if __name__ == "__main__"'
        ) from exc
    except Exception as exc:
        if dotted_spec is not None and isinstance(exc, ModuleNotFoundError):
            raise TargetError(f"TARGET {dotted_spec}: cannot import {where} ({exc.msg})") from exc
        raise TargetError(f"importing {where} failed: {_one_line(exc)}") from exc


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:240]}" if text else type(exc).__name__


def call_factory(spec: str) -> tuple[nn.Module, Callable | None, Callable | None]:
    """Import TARGET and call its factory: the model, the input maker when it returns one, and the loss function
    when it returns (model, make_input, loss_fn) (`sweep --train`)."""
    where, colon, attribute = spec.rpartition(":")
    if not colon or not where or not attribute:
        raise TargetError(f"TARGET {spec!r}: give path/to/file.py:factory or package.module:factory")
    module = _import(spec)
    factory = getattr(module, attribute, None)
    if factory is None:
        public = sorted(n for n in vars(module) if not n.startswith("_") and callable(getattr(module, n)))
        known = f" (it defines {', '.join(public[:12])})" if public else ""
        raise TargetError(f"{where} has no {attribute!r}{known}")
    if not callable(factory):
        raise TargetError(f"{where}:{attribute} is a {type(factory).__name__}, not a function that returns a model")
    try:
        made = factory()
    except SystemExit as exc:
        raise TargetError(f"{attribute}() in {where} called sys.exit({exc.code!r})") from exc
    except Exception as exc:
        raise TargetError(f"{attribute}() raised {_one_line(exc)}") from exc
    if isinstance(made, nn.Module):
        return made, None, None
    if isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], nn.Module) and callable(made[1]):
        return made[0], made[1], None
    if isinstance(made, tuple) and len(made) == 3 and isinstance(made[0], nn.Module) and all(map(callable, made[1:])):
        return made
    raise TargetError(
        f"{attribute}() returned {type(made).__name__}: return an nn.Module, or (module, make_input) where "
        "make_input(batch) returns the inputs, or (module, make_input, loss_fn) to train with loss_fn(output) or "
        "loss_fn(output, batch)"
    )


def _as_inputs(value: Any) -> Inputs:
    if isinstance(value, torch.Tensor):
        return (value,), {}
    if isinstance(value, (tuple, list)):
        return tuple(value), {}
    if isinstance(value, dict):
        return (), dict(value)
    raise TargetError(f"make_input returned {type(value).__name__}: return a tensor, a tuple of arguments or a dict")


def _tensors(inputs: Inputs) -> list[torch.Tensor]:
    args, kwargs = inputs
    return [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]


def _placed(inputs: Inputs, device: torch.device, dtype: torch.dtype) -> Inputs:
    """Inputs on the device, floating tensors in the sweep's dtype (integer tokens stay integers)."""

    def place(value):
        if not isinstance(value, torch.Tensor):
            return value
        value = value.to(device)
        return value.to(dtype) if value.is_floating_point() else value

    args, kwargs = inputs
    return tuple(place(v) for v in args), {k: place(v) for k, v in kwargs.items()}


def _batch_checked(maker: Callable, batch: int, device, dtype) -> Inputs:
    try:
        made = maker(batch)
    except Exception as exc:
        raise TargetError(f"make_input({batch}) raised {_one_line(exc)}") from exc
    inputs = _as_inputs(made)
    tensors = _tensors(inputs)
    if not tensors:
        raise TargetError(f"make_input({batch}) returned no tensor")
    first = tensors[0]
    if first.dim() == 0 or first.shape[0] != batch:
        raise TargetError(
            f"make_input({batch}) returned a tensor of shape {tuple(first.shape)}: its first dimension must be the "
            f"batch, {batch}"
        )
    return _placed(inputs, device, dtype)


def random_inputs(shape: tuple[int, ...], dtype: torch.dtype, vocab: int | None, device) -> Callable[[int], Inputs]:
    """Random inputs of a per-sample shape: normal floats, or integer tokens below `vocab`."""

    def make(batch: int) -> Inputs:
        if vocab is not None:
            return (torch.randint(0, vocab, (batch, *shape), device=device),), {}
        return (torch.randn(batch, *shape, device=device, dtype=dtype),), {}

    return make


def tensors(output: Any) -> list[torch.Tensor]:
    """Every tensor a model's output holds, in order: tensors, tuples, lists, dicts, dataclasses."""
    if isinstance(output, torch.Tensor):
        return [output]
    if dataclasses.is_dataclass(output) and not isinstance(output, type):
        output = [getattr(output, f.name) for f in dataclasses.fields(output)]
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (tuple, list)):
        return [t for value in output for t in tensors(value)]
    return []


def has_tensor(output: Any) -> bool:
    """Whether a model's output holds a tensor anywhere: tensors, tuples, lists, dicts, dataclasses."""
    if isinstance(output, torch.Tensor):
        return True
    if isinstance(output, (tuple, list)):
        return any(has_tensor(v) for v in output)
    if isinstance(output, dict):
        return any(has_tensor(v) for v in output.values())
    if dataclasses.is_dataclass(output) and not isinstance(output, type):
        return any(has_tensor(getattr(output, f.name)) for f in dataclasses.fields(output))
    return False


def load_target(
    spec: str,
    device: torch.device,
    dtype: torch.dtype,
    *,
    input_shape: tuple[int, ...] | None = None,
    vocab: int | None = None,
    input_dtype: torch.dtype | None = None,
    model: nn.Module | None = None,
    make_input: Callable | None = None,
    train: bool = False,
    loss_fn: Callable | None = None,
) -> Target:
    """The model on the device in the dtype, in eval mode, with a checked input maker; `model` and
    `make_input` instead of a TARGET for the Python API. With `train`, the model is timed as a whole training
    step (`benchmarks.measure.train_sweep.TrainingStep`) with `loss_fn` or the factory's."""
    if model is None:
        model, make_input, made_loss = call_factory(spec)
        loss_fn = loss_fn or made_loss
    elif train or not _already(model, device, dtype):
        model = copy.deepcopy(model)  # the caller's model stays on its device, in its dtype, with its weights
    notes = []
    if train:
        notes.append("timed as a training step: zero_grad, forward, loss, backward and an AdamW update, in train mode")
    elif loss_fn is not None:
        notes.append("the factory's loss_fn is used only by a training sweep (--train)")
    elif model.training:
        notes.append("the model was in training mode: swept in eval mode, without gradients")
    else:
        notes.append("swept in eval mode, without gradients")
    model = model.eval().to(device=device, dtype=dtype)
    if train:
        from benchmarks.measure.train_sweep import TrainingStep

        try:
            model = TrainingStep(model, loss_fn)
        except ValueError as exc:
            raise TargetError(str(exc)) from None
    if make_input is not None:
        maker = make_input
        words = "the factory's make_input(batch)"

        def make(batch: int) -> Inputs:
            return _batch_checked(maker, batch, device, dtype)

        if input_shape is not None or vocab is not None:
            notes.append(f"the input shape given is ignored: {words} makes the inputs")
    elif input_shape is not None:
        made = input_dtype or dtype
        make = random_inputs(input_shape, made, vocab, device)
        kind = f"integer tokens below {vocab}" if vocab is not None else f"random {str(made).replace('torch.', '')}"
        words = f"{kind} of shape (batch, {', '.join(map(str, input_shape))})"
    else:
        raise TargetError(
            "the factory returns no input maker: give --input-shape (one sample's shape, e.g. 3,224,224) "
            "and, for token ids, --vocab N"
        )
    target = Target(spec, model, make, words, notes)
    _check_output(target)
    return target


def _already(model: nn.Module, device: torch.device, dtype: torch.dtype) -> bool:
    """Whether every floating parameter and buffer is on the device in the dtype (moving it changes nothing)."""
    for t in (*model.parameters(), *model.buffers()):
        if not t.is_floating_point():
            continue
        same_device = t.device.type == device.type and (device.index is None or t.device.index == device.index)
        if t.dtype != dtype or not same_device:
            return False
    return True


def _check_output(target: Target) -> None:
    """The inputs of batch 2 must have the batch first (checked as they are made), and the model must
    run at batch 1 and return tensors. A model that fails at other batch sizes fails only those."""
    target.make_inputs(2)
    inputs = target.make_inputs(1)
    try:
        with torch.no_grad():
            output = target.model(*inputs[0], **inputs[1])
    except Exception as exc:
        raise TargetError(f"the model failed at batch 1: {_one_line(exc)}") from exc
    if not has_tensor(output):
        raise TargetError(
            f"the model returned {type(output).__name__} with no tensor in it: a sweep times tensor work, so return "
            "the tensors (a tuple, dict or dataclass of them is fine)"
        )
