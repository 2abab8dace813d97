"""The results contract of a noise-scale measurement (`benchmarks.measure.noise_scale`): its JSON Schema, its
rules and its one strict reader.

One document per measurement, `<noise dir>/<host slug>/<id>.json`: the host, the dataset and the model, the
squared gradient norms of many batches at two batch sizes at checkpoints of a reference run (per seed), and the
steps plain SGD took to a target training loss at each batch size, learning rate and seed. Raw measurements only:
every estimate is made from them by `benchmarks.analysis.roofline.noise_scale`.

Like every results file it is input from strangers: every field is checked, and a bad file is refused in one
line naming the file and the field. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.contract.documents import DocumentKind
from benchmarks.contract.schema import NAME, SLUG, described, object_schema, provenance_fields

_PACKAGE = Path(__file__).resolve().parents[1]
DEFAULT_NOISE_DIR = _PACKAGE / "noise" if (_PACKAGE.parent / "pyproject.toml").is_file() else Path.cwd() / "noise"
KIND = "noise-scale"
VERSION = 1
MAX_ITEMS = 10_000
MAX_BATCH = 2**20

_BATCH = {"type": "integer", "minimum": 1, "maximum": MAX_BATCH}
_SEED = {"type": "integer", "minimum": 0, "maximum": 2**31}
_STEPS = {"type": "integer", "minimum": 0, "maximum": 10**9}
_RATE = {"type": "number", "exclusiveMinimum": 0, "maximum": 1e3}
_SQ_NORM = {"type": "number", "minimum": 0, "maximum": 1e30}
_LOAD = {"type": "array", "minItems": 3, "maxItems": 3, "items": {"type": "number", "minimum": 0, "maximum": 1e5}}


def _array(items: dict, description: str, least: int = 0) -> dict:
    return {"type": "array", "items": items, "minItems": least, "maxItems": MAX_ITEMS, "description": description}


RUN = object_schema(
    {
        **provenance_fields("measurement", "Whether every part finished.", "Why it stopped early; null if it did not."),
        "synthetic": described({"type": "boolean"}, "Test fixtures only: never published."),
    },
    ["id", "started_at", "finished_at", "complete", "interrupted", "command", "git_commit", "git_dirty"],
    "What was measured, when, with which code.",
    extra=False,
)
HOST = object_schema(
    {
        "name": described(NAME, "The CPU."),
        "slug": described({"type": "string", "pattern": SLUG}, "The host's directory name."),
        "cpus": described({"type": "integer", "minimum": 1, "maximum": 100_000}, "Logical CPUs."),
        "threads": described({"type": "integer", "minimum": 1, "maximum": 100_000}, "Intra-op threads used."),
        "python": described(NAME, "Python version."),
        "torch": described(NAME, "torch version."),
        "load_average_start": described(_LOAD, "1, 5 and 15-minute load averages when it started."),
        "load_average_end": described(_LOAD, "The same when it ended."),
    },
    ["name", "slug", "cpus", "threads", "python", "torch", "load_average_start"],
    "The machine.",
    extra=False,
)
DATASET = object_schema(
    {
        "name": described(NAME, "The dataset."),
        "package": described(NAME, "The package that ships it."),
        "package_version": described(NAME, "That package's version."),
        "train_examples": described(_BATCH, "Examples trained on."),
        "features": described(_BATCH, "Features of an example."),
        "classes": described({"type": "integer", "minimum": 2, "maximum": 100_000}, "Classes."),
    },
    ["name", "package", "package_version", "train_examples", "features", "classes"],
    "The data.",
    extra=False,
)
MODEL = object_schema(
    {
        "description": described(NAME, "The model, in words."),
        "parameters": described({"type": "integer", "minimum": 1, "maximum": 2**50}, "Parameters."),
    },
    ["description", "parameters"],
    "The model.",
    extra=False,
)
MEASUREMENT = object_schema(
    {
        "seed": _SEED,
        "step": described(_STEPS, "Steps of the reference run before this checkpoint."),
        "train_loss": described({"type": "number", "minimum": 0, "maximum": 1e6}, "Loss over the training set."),
        "small_sq_norms": _array(_SQ_NORM, "|gradient|² of each batch at the small batch size.", 2),
        "large_sq_norms": _array(_SQ_NORM, "|gradient|² of each batch at the large batch size.", 2),
    },
    ["seed", "step", "train_loss", "small_sq_norms", "large_sq_norms"],
    "The gradient norms at one checkpoint of one seed's reference run.",
    extra=False,
)
NOISE = object_schema(
    {
        "small_batch": _BATCH,
        "large_batch": _BATCH,
        "draws": described({"type": "integer", "minimum": 2, "maximum": MAX_ITEMS}, "Batches per batch size."),
        "reference_batch": _BATCH,
        "reference_learning_rate": _RATE,
        "measurements": _array(MEASUREMENT, "One per seed and checkpoint."),
    },
    ["small_batch", "large_batch", "draws", "reference_batch", "reference_learning_rate", "measurements"],
    "The gradient noise measurements.",
    extra=False,
)
TRAINING_RUN = object_schema(
    {
        "batch": _BATCH,
        "learning_rate": _RATE,
        "seed": _SEED,
        "steps": described({**_STEPS, "type": ["integer", "null"]}, "Steps to the target; null: not reached."),
        "seconds": described({"type": "number", "minimum": 0, "maximum": 86_400}, "Wall time of the run."),
    },
    ["batch", "learning_rate", "seed", "steps", "seconds"],
    "One training run to the target.",
    extra=False,
)
TRAINING = object_schema(
    {
        "optimizer": described({"type": "string", "enum": ["sgd"]}, "Plain SGD."),
        "target_loss": described({"type": "number", "exclusiveMinimum": 0, "maximum": 1e3}, "The target."),
        "max_steps": _STEPS,
        "eval_every": described({"type": "integer", "minimum": 1, "maximum": 10**6}, "Steps between checks."),
        "learning_rates": _array(_RATE, "The grid each batch size tried.", 1),
        "runs": _array(TRAINING_RUN, "Every run."),
    },
    ["optimizer", "target_loss", "max_steps", "eval_every", "learning_rates", "runs"],
    "The steps to a target training loss.",
    extra=False,
)
NOISE_SCALE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "batching noise-scale measurement",
    **object_schema(
        {
            "schema_version": described({"type": "integer", "const": VERSION}, "Version of this kind of file."),
            "kind": described({"type": "string", "const": KIND}, "noise-scale."),
            "run": RUN,
            "host": HOST,
            "dataset": DATASET,
            "model": MODEL,
            "noise": NOISE,
            "training": TRAINING,
        },
        ["schema_version", "kind", "run", "host", "dataset", "model", "noise", "training"],
        "One measurement of the gradient noise scale and of the steps to a target.",
        extra=False,
    ),
}


def noise_scale_rules(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """What the schema cannot say: two batch sizes in order, within the data; as many norms as draws; steps
    within the limit and on the evaluation grid; learning rates from the grid; no run listed twice."""
    from benchmarks.contract.rules import date_problems

    problems = list(date_problems(doc["run"]))
    noise, training, examples = doc["noise"], doc["training"], doc["dataset"]["train_examples"]
    if not noise["small_batch"] < noise["large_batch"] <= examples:
        problems.append(("noise.large_batch", f"must exceed small_batch and not exceed train_examples ({examples})"))
    for index, m in enumerate(noise["measurements"]):
        for key in ("small_sq_norms", "large_sq_norms"):
            if len(m[key]) != noise["draws"]:
                problems.append((f"noise.measurements[{index}].{key}", f"must hold draws ({noise['draws']}) norms"))
    seen: set[tuple] = set()
    for index, run in enumerate(training["runs"]):
        where = f"training.runs[{index}]"
        key = (run["batch"], run["learning_rate"], run["seed"])
        if key in seen:
            problems.append((where, "lists a batch, learning rate and seed already listed"))
        seen.add(key)
        if run["learning_rate"] not in training["learning_rates"]:
            problems.append((f"{where}.learning_rate", "must be one of training.learning_rates"))
        steps = run["steps"]
        if steps is not None and (steps > training["max_steps"] or steps % training["eval_every"]):
            problems.append((f"{where}.steps", "must be a multiple of eval_every within max_steps"))
    return problems


@dataclass(eq=False)
class NoiseScaleRun:
    """One validated noise-scale measurement and where it came from."""

    path: Path
    doc: dict[str, Any]

    @property
    def id(self) -> str:
        return self.doc["run"]["id"]

    @property
    def synthetic(self) -> bool:
        return bool(self.doc["run"].get("synthetic", False))


NOISE_SCALE_KIND = DocumentKind(
    KIND, VERSION, NOISE_SCALE_SCHEMA, noise_scale_rules, "noise-scale measurements", NoiseScaleRun
)


def validate_noise_scale(doc: Any) -> list[tuple[str, str]]:
    """Every problem of a parsed noise-scale document as (field path, message); [] when it is valid."""
    return NOISE_SCALE_KIND.problems(doc)


def read_noise_scale(path: Path | str, *, layout: bool = True) -> NoiseScaleRun:
    """Parse and validate one noise-scale file, or raise ResultsError naming the file and the field. With
    `layout`, it must sit at `<host slug>/<id>.json`."""
    return NOISE_SCALE_KIND.read(path, layout=layout)


def load_noise_scale(directory: Path | str | None = None) -> list[NoiseScaleRun]:
    """Every noise-scale file under `directory` (default: the committed ones), validated, oldest first."""
    directory = Path(directory) if directory is not None else DEFAULT_NOISE_DIR
    runs = [read_noise_scale(p) for p in sorted(directory.glob("*/*.json"))] if directory.is_dir() else []
    return sorted(runs, key=lambda r: r.doc["run"]["started_at"])
