"""The noise-scale measurement on scikit-learn's digits, at toy settings: the file it writes is valid, and the
reader's estimates come out of it (skipped where scikit-learn is not installed; the test group installs it)."""

import pytest

pytest.importorskip("sklearn")

from benchmarks.analysis.roofline import noise_scale as ns
from benchmarks.contract.noise_scale import read_noise_scale
from benchmarks.measure import noise_scale


def test_a_tiny_measurement_writes_a_file_the_reader_accepts(tmp_path, monkeypatch):
    for name, value in {"CHECKPOINTS": (0, 5), "DRAWS": 6, "SEEDS": (0, 1), "BATCHES": (32, 128),
                        "LEARNING_RATES": (0.4, 1.6), "TARGET_LOSS": 1.5, "MAX_STEPS": 400}.items():  # fmt: skip
        monkeypatch.setattr(noise_scale, name, value)
    path = noise_scale.measure(tmp_path, ["test"])
    found = read_noise_scale(path)
    doc = found.doc
    assert doc["run"]["complete"] and doc["dataset"]["train_examples"] == 1437 and doc["dataset"]["features"] == 64
    assert len(doc["noise"]["measurements"]) == 4 and len(doc["training"]["runs"]) == 8
    assert all(len(m["small_sq_norms"]) == 6 for m in doc["noise"]["measurements"])
    small = [v for m in doc["noise"]["measurements"] for v in m["small_sq_norms"]]
    large = [v for m in doc["noise"]["measurements"] for v in m["large_sq_norms"]]
    assert sum(small) / len(small) > sum(large) / len(large)  # a small batch's gradient is the noisier
    assert ns.steps_by_batch(doc)  # the loose target is reached at both batch sizes
