"""The gradient noise scale and its steps-to-target check, on SYNTHETIC documents (exact norms and steps), and the
strict reader of noise-scale files."""

from __future__ import annotations

import copy
import json

import pytest

from benchmarks.analysis.roofline import noise_scale as ns
from benchmarks.contract.noise_scale import read_noise_scale, validate_noise_scale
from benchmarks.contract.results import ResultsError


def synthetic_doc(b_simple_by_seed=(100.0, 140.0), s_min=500.0, b_noise=120.0) -> dict:
    """SYNTHETIC: squared norms that are exactly |G|² + tr(Σ)/B, and steps exactly S_min·(1 + B_noise/B)."""
    gradient_sq, draws = 0.5, 4
    measurements = []
    for seed, b_simple in enumerate(b_simple_by_seed):
        trace = b_simple * gradient_sq
        measurements.append({
            "seed": seed, "step": 0, "train_loss": 2.3,
            "small_sq_norms": [gradient_sq + trace / 8] * draws, "large_sq_norms": [gradient_sq + trace / 512] * draws,
        })  # fmt: skip
    runs = []
    for batch in (4, 16, 64, 256):
        for rate, slower in ((0.1, 3.0), (0.4, 1.0)):
            steps = round(s_min * (1 + b_noise / batch) * slower / 10) * 10
            runs += [{"batch": batch, "learning_rate": rate, "seed": s, "steps": steps, "seconds": 1.0} for s in (0, 1)]
    return {
        "schema_version": 1, "kind": "noise-scale",
        "run": {"id": "20260101T000000Z-noise", "started_at": "2026-01-01T00:00:00+00:00",
                "finished_at": "2026-01-01T00:03:00+00:00", "complete": True, "interrupted": None,
                "command": ["synthetic"], "git_commit": None, "git_dirty": None, "synthetic": True},
        "host": {"name": "synthetic", "slug": "synthetic-host", "cpus": 2, "threads": 1, "python": "3.11",
                 "torch": "2.13.0", "load_average_start": [0.1, 0.1, 0.1]},
        "dataset": {"name": "digits", "package": "scikit-learn", "package_version": "1.9.1", "train_examples": 1437,
                    "features": 64, "classes": 10},
        "model": {"description": "synthetic", "parameters": 4810},
        "noise": {"small_batch": 8, "large_batch": 512, "draws": draws, "reference_batch": 32,
                  "reference_learning_rate": 0.2, "measurements": measurements},
        "training": {"optimizer": "sgd", "target_loss": 0.1, "max_steps": 100_000, "eval_every": 10,
                     "learning_rates": [0.1, 0.4], "runs": runs},
    }  # fmt: skip


def test_the_estimator_recovers_the_noise_scale_of_exact_norms_and_its_spread_over_seeds():
    found = ns.noise_scale(synthetic_doc())
    assert found.per_seed == pytest.approx({0: 100.0, 1: 140.0})
    assert found.mean == pytest.approx(120.0) and found.spread == pytest.approx(28.28, rel=1e-3)


def test_the_best_rate_per_batch_and_the_fit_recover_the_steps_model():
    doc = synthetic_doc(b_simple_by_seed=(120.0, 120.0))
    found = ns.check(doc)
    assert [p.learning_rate for p in found.points] == [0.4] * 4
    assert found.fitted_b_noise == pytest.approx(120.0, rel=0.05)
    assert all(r == pytest.approx(1.0, rel=0.02) for r in found.ratios().values())
    assert found.examples(256) > found.examples(4)  # past the noise scale, more examples buy fewer steps


def test_a_wrong_noise_scale_shows_in_the_ratios():
    doc = synthetic_doc(b_simple_by_seed=(1000.0, 1000.0), b_noise=20.0)
    ratios = ns.check(doc).ratios()
    assert ratios[4] < 0.7 and ratios[256] > 1.3


def test_a_batch_whose_runs_did_not_all_reach_the_target_has_no_steps():
    doc = synthetic_doc()
    for run in doc["training"]["runs"]:
        if run["batch"] == 4:
            run["steps"] = None
    assert [p.batch for p in ns.steps_by_batch(doc)] == [16, 64, 256]


def test_the_reader_accepts_the_synthetic_file_and_names_the_field_of_a_bad_one(tmp_path):
    doc = synthetic_doc()
    assert validate_noise_scale(doc) == []
    bad = copy.deepcopy(doc)
    bad["noise"]["measurements"][0]["small_sq_norms"].pop()
    assert validate_noise_scale(bad)[0][0] == "noise.measurements[0].small_sq_norms"
    bad = copy.deepcopy(doc)
    bad["training"]["runs"][0]["steps"] = 15
    assert validate_noise_scale(bad)[0][0] == "training.runs[0].steps"
    bad = copy.deepcopy(doc)
    bad["noise"]["large_batch"] = 5000
    assert validate_noise_scale(bad)[0][0] == "noise.large_batch"
    bad = copy.deepcopy(doc)
    bad["training"]["runs"][0]["seconds"] = "slow"
    assert validate_noise_scale(bad)[0][0] == "training.runs[0].seconds"
    path = tmp_path / "synthetic-host" / "20260101T000000Z-noise.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    assert read_noise_scale(path).synthetic
    path.write_text(json.dumps({**doc, "kind": "profile"}))
    with pytest.raises(ResultsError, match="kind"):
        read_noise_scale(path)
