"""The statistical side of the training batch, measured: the gradient noise scale of a small classifier on
scikit-learn's digits, and the steps it takes to reach a target loss at several batch sizes.

Noise scale (McCandlish et al. 2018, "An Empirical Model of Large-Batch Training", appendix A): the squared norm of
a gradient averaged over a batch of B examples has expectation |G|² + tr(Σ)/B, so the mean squared norm at two
batch sizes gives both |G|² and tr(Σ), and B_simple = tr(Σ)/|G|². Here the squared norms of many independent
batches at a small and a large batch size are recorded at checkpoints of a reference training run, for each
seed; `benchmarks.analysis.roofline.noise_scale` makes the estimates from them.

Steps to target: plain SGD at each batch size, each with the best of a grid of learning rates (the model assumes a
tuned rate at every batch), for each seed, until the loss over the whole training set is at most the target.

Everything is recorded raw, in a results file of its own kind (`benchmarks.contract.noise_scale`); the run is
rewritten after each part and marked incomplete if it stops. Needs torch and scikit-learn (the `noise-scale`
dependency group).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.contract.errors import UserError, run_command
from benchmarks.contract.noise_scale import DEFAULT_NOISE_DIR, KIND, VERSION
from benchmarks.contract.results import write_atomic
from benchmarks.measure.fingerprint import cpu_model, device_slug
from benchmarks.measure.session import provenance

HIDDEN = 64
SMALL_BATCH, LARGE_BATCH = 8, 512
DRAWS = 48  # independent batches per batch size per checkpoint
CHECKPOINTS = (0, 50, 150, 400)  # steps of the reference run at which the gradient norms are taken
REFERENCE = {"batch": 32, "learning_rate": 0.2}
TARGET_LOSS = 0.1  # mean cross-entropy over the whole training set
BATCHES = (4, 8, 16, 32, 64, 128, 256, 512)
LEARNING_RATES = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
SEEDS = (0, 1, 2)
MAX_STEPS = 2000
EVAL_EVERY = 10
HOLD_OUT = 0.2  # the digits kept out of training (not used for the target: the target is the training loss)


def load_digits() -> tuple[torch.Tensor, torch.Tensor, str]:
    """The training part of scikit-learn's digits (pixels scaled to [0, 1]), its labels, and sklearn's version."""
    import sklearn
    from sklearn.datasets import load_digits as sklearn_digits

    digits = sklearn_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(1234))
    keep = order[: int(len(y) * (1 - HOLD_OUT))]
    return x[keep], y[keep], sklearn.__version__


def make_model(features: int, classes: int, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(features, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, classes))


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def gradient_sq_norm(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """|∇ mean loss|² over this batch."""
    model.zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()
    return float(sum((p.grad.double() ** 2).sum() for p in model.parameters()))


def batch_sq_norms(model, x, y, batch: int, draws: int, generator: torch.Generator) -> list[float]:
    """Squared gradient norms of `draws` batches of `batch` examples, each drawn without replacement."""
    return [gradient_sq_norm(model, *_rows(x, y, batch, generator)) for _ in range(draws)]


def _rows(x, y, batch, generator):
    picked = torch.randperm(len(y), generator=generator)[:batch]
    return x[picked], y[picked]


@torch.no_grad()
def full_loss(model, x, y) -> float:
    return float(F.cross_entropy(model(x), y))


def noise_measurements(x, y, seed: int) -> list[dict]:
    """At each checkpoint of a reference SGD run: the full training loss and the squared gradient norms of many
    batches at the small and the large batch size."""
    model = make_model(x.shape[1], int(y.max()) + 1, seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=REFERENCE["learning_rate"])
    generator = torch.Generator().manual_seed(10_000 + seed)
    found, step = [], 0
    for checkpoint in CHECKPOINTS:
        while step < checkpoint:
            sgd_step(model, optimizer, *_rows(x, y, REFERENCE["batch"], generator))
            step += 1
        found.append(
            {
                "seed": seed,
                "step": step,
                "train_loss": full_loss(model, x, y),
                "small_sq_norms": batch_sq_norms(model, x, y, SMALL_BATCH, DRAWS, generator),
                "large_sq_norms": batch_sq_norms(model, x, y, LARGE_BATCH, DRAWS, generator),
            }
        )
    return found


def sgd_step(model, optimizer, x, y) -> None:
    optimizer.zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()
    optimizer.step()


def steps_to_target(x, y, batch: int, learning_rate: float, seed: int) -> tuple[int | None, float]:
    """(steps until the full training loss is at most TARGET_LOSS, checked every EVAL_EVERY steps, or None when
    MAX_STEPS did not reach it; seconds taken). Each epoch visits every example once, in a new order."""
    model = make_model(x.shape[1], int(y.max()) + 1, seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
    generator = torch.Generator().manual_seed(20_000 + seed)
    start, step, order = time.perf_counter(), 0, torch.empty(0, dtype=torch.int64)
    while step < MAX_STEPS:
        if len(order) < batch:
            order = torch.randperm(len(y), generator=generator)
        picked, order = order[:batch], order[batch:]
        sgd_step(model, optimizer, x[picked], y[picked])
        step += 1
        if step % EVAL_EVERY == 0:
            loss = full_loss(model, x, y)
            if loss != loss or loss > 1e3:  # diverged: this rate is too large for this batch
                return None, time.perf_counter() - start
            if loss <= TARGET_LOSS:
                return step, time.perf_counter() - start
    return None, time.perf_counter() - start


def host() -> dict:
    cpu = cpu_model()
    return {
        "name": cpu or platform.machine(),
        "slug": "cpu-" + device_slug(cpu or platform.machine()),
        "cpus": os.cpu_count() or 1,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__.split("+")[0],
        "load_average_start": [round(v, 2) for v in os.getloadavg()],
    }


def new_document(command: list[str], sklearn_version: str, x, y) -> dict:
    started = datetime.now(timezone.utc)
    commit, dirty = provenance()
    model = make_model(x.shape[1], int(y.max()) + 1, 0)
    return {
        "schema_version": VERSION,
        "kind": KIND,
        "run": {
            "id": started.strftime("%Y%m%dT%H%M%SZ") + "-noise",
            "started_at": started.isoformat(timespec="seconds"),
            "finished_at": None,
            "complete": False,
            "interrupted": None,
            "command": command,
            "git_commit": commit,
            "git_dirty": dirty,
        },
        "host": host(),
        "dataset": {
            "name": "digits",
            "package": "scikit-learn",
            "package_version": sklearn_version,
            "train_examples": len(y),
            "features": x.shape[1],
            "classes": int(y.max()) + 1,
        },
        "model": {
            "description": f"Linear {x.shape[1]}→{HIDDEN}, ReLU, Linear {HIDDEN}→10; cross-entropy",
            "parameters": parameter_count(model),
        },
        "noise": {
            "small_batch": SMALL_BATCH,
            "large_batch": LARGE_BATCH,
            "draws": DRAWS,
            "reference_batch": REFERENCE["batch"],
            "reference_learning_rate": REFERENCE["learning_rate"],
            "measurements": [],
        },
        "training": {
            "optimizer": "sgd",
            "target_loss": TARGET_LOSS,
            "max_steps": MAX_STEPS,
            "eval_every": EVAL_EVERY,
            "learning_rates": list(LEARNING_RATES),
            "runs": [],
        },
    }


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def measure(out_dir: Path, command: list[str], threads: int = 1) -> Path:
    torch.set_num_threads(threads)
    x, y, version = load_digits()
    doc = new_document(command, version, x, y)
    path = out_dir / doc["host"]["slug"] / f"{doc['run']['id']}.json"
    wall = time.perf_counter()
    try:
        for seed in SEEDS:
            doc["noise"]["measurements"] += noise_measurements(x, y, seed)
            write_atomic(path, doc)
            say(f"  noise, seed {seed}: done ({time.perf_counter() - wall:.0f} s)")
        for batch in BATCHES:
            for learning_rate in LEARNING_RATES:
                for seed in SEEDS:
                    steps, seconds = steps_to_target(x, y, batch, learning_rate, seed)
                    doc["training"]["runs"].append(
                        {
                            "batch": batch,
                            "learning_rate": learning_rate,
                            "seed": seed,
                            "steps": steps,
                            "seconds": round(seconds, 4),
                        }
                    )
            write_atomic(path, doc)
            say(f"  steps to target, batch {batch}: done ({time.perf_counter() - wall:.0f} s)")
        doc["run"]["complete"] = True
    except BaseException as exc:
        doc["run"]["interrupted"] = f"{type(exc).__name__}: {exc}"[:500]
        raise
    finally:
        doc["run"]["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        doc["host"]["load_average_end"] = [round(v, 2) for v in os.getloadavg()]
        write_atomic(path, doc)
    return path


def main(argv: list[str] | None = None) -> int:
    return run_command(_main, argv)


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.measure.noise_scale",
        description="Measure the gradient noise scale of a small classifier on scikit-learn's digits and the steps "
        "plain SGD takes to a target training loss at several batch sizes (a few minutes on two cores).",
    )
    parser.add_argument("--results-dir", type=Path, default=DEFAULT_NOISE_DIR, help="where the file goes")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    args = parser.parse_args(argv)
    if args.threads < 1:
        raise UserError("--threads must be at least 1")
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise UserError("scikit-learn is needed for its digits dataset (the noise-scale dependency group)") from None
    print(
        measure(
            args.results_dir, ["python", "-m", "benchmarks.measure.noise_scale", *(argv or sys.argv[1:])], args.threads
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
