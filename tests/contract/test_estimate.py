"""The time estimate: checked against the committed reference runs, and the plan a time limit makes."""

import json
from datetime import datetime
from pathlib import Path

import pytest

from benchmarks.measure import estimate
from benchmarks.profiles import FULL, QUICK, CurvePlan, Profile

ROOT = Path(__file__).resolve().parents[2]


def wall_seconds(path: Path) -> float:
    run = json.loads(path.read_text())["run"]
    return (datetime.fromisoformat(run["finished_at"]) - datetime.fromisoformat(run["started_at"])).total_seconds()


def test_the_reference_cpu_is_the_committed_reference_run():
    doc = json.loads((ROOT / estimate.REFERENCE_RUN).read_text())
    cpu = estimate.REFERENCE_CPU
    assert cpu.bytes_per_s == pytest.approx(doc["ceilings"]["copy"]["bytes_per_s"], rel=0.01)
    assert cpu.flops_per_s["float32"] == pytest.approx(doc["ceilings"]["matmul"]["float32"]["flops_per_s"], rel=0.01)
    assert cpu.l2_bytes == doc["device"]["l2_bytes"] and cpu.memory_bytes == doc["device"]["memory_bytes"]
    tiny = [
        r for r in doc["records"]
        if r["workload"] == "mlp" and r["params"] == {"width": 64, "depth": 8} and r["mode"] == "eager"
        and r["batch"] == 1
    ]  # fmt: skip
    assert cpu.op_s == pytest.approx(tiny[0]["median_s"] / 16, rel=0.05)


def test_the_quick_estimate_matches_the_reference_runs_wall_time():
    """Two committed quick runs on the reference CPU (1 thread) took 98 s each."""
    walls = [wall_seconds(p) for p in sorted((ROOT / "benchmarks/results/cpu-amd-epyc").glob("20261130T10*-quick-*"))]
    assert len(walls) == 2
    found = estimate.estimate(QUICK, estimate.REFERENCE_CPU).total_s
    assert all(0.75 < found / wall < 1.33 for wall in walls), (found, walls)


def test_the_full_profiles_upper_end_fits_five_minutes_on_an_h200():
    low, high = estimate.estimate_range(FULL, estimate.H200)
    assert high.total_s <= 300 and low.total_s < estimate.estimate(FULL, estimate.H200).total_s < high.total_s
    assert sum(high.parts.values()) == pytest.approx(high.total_s)
    assert {"ceilings", "mlp", "linear", "graph captures", "torch.compile", "kernel names", "cuDNN autotuning",
            "results file"} <= set(high.parts)  # fmt: skip
    assert all(low.parts[part] <= 1.01 * high.parts[part] for part in high.parts)  # calibration steps may differ


def test_the_costs_a_first_run_pays_beyond_sampling():
    """A second compile for batch 1, cuDNN's autotuning of every convolution shape, the sync and cache
    flush before each capture, and the results file rewritten while sampling."""
    h200 = estimate.H200.at("high")
    mlp = CurvePlan("mlp", {"width": 64, "depth": 8}, ("bfloat16",), ("compile",), (1, 2, 4), cache="resident")
    no_one = CurvePlan("mlp", {"width": 64, "depth": 8}, ("bfloat16",), ("compile",), (2, 4), cache="resident")
    shape = {"c_in": 64, "c_out": 64, "kernel": 3, "resolution": 56}
    conv = CurvePlan("conv", shape, ("bfloat16",), ("graph", "eager"), (1, 2, 4), cache="resident")
    resnet = CurvePlan("resnet50", {"resolution": 224}, ("bfloat16",), ("eager",), (1, 2), cache="resident")
    profile = Profile("p", "test-only", (mlp, conv, resnet), rounds=5, min_sample_s=0.002)
    found = estimate.estimate(profile, h200, ceilings=False)
    assert found.parts["torch.compile"] == pytest.approx(h200.compile_s + h200.recompile_s)
    assert estimate.estimate(profile, h200, [no_one], ceilings=False).parts["torch.compile"] == h200.compile_s
    assert found.parts["cuDNN autotuning"] == pytest.approx((3 * 1 + 2 * 23) * h200.autotune_s)  # shapes, not modes
    assert found.parts["graph captures"] >= 3 * (h200.capture_s + h200.capture_sync_s)
    assert found.parts["results file"] > 0
    assert "cuDNN autotuning" not in estimate.estimate(profile, estimate.REFERENCE_CPU, ceilings=False).parts


def test_list_prints_a_range_and_the_assumption_of_each_part(capsys):
    from benchmarks.commands.cli import main

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    block = out[out.index("on NVIDIA H200") :].splitlines()
    low, high = estimate.estimate_range(FULL, estimate.H200)
    assert block[0].startswith("on NVIDIA H200") and f"{low.total_s / 60:.1f}–{high.total_s / 60:.1f} min" in out
    parts = {line.split()[0] for line in block[1:] if line.startswith("    ") and not line.strip().startswith("(")}
    assert {"graph", "torch.compile", "cuDNN", "results", "kernel"} <= parts
    assert "cuDNN autotuning" in out and "per new convolution shape (layer × batch): 10–80 ms assumed" in out
    assert "batch 1's own, 5–20 s assumed" in out and "device sync and cache flush" in out


def test_skipped_kv_batches_cost_nothing():
    """A decode sweep's batches whose KV cache exceeds its share are not planned, so not estimated."""
    model = {"layers": 4, "d_model": 4096, "heads": 32, "kv_heads": 32, "d_ff": 14336, "ffn": "swiglu"}
    long = CurvePlan("decode", {**model, "context": 32768, "phase": "decode"}, ("bfloat16",), ("graph",), (1, 512))
    short = CurvePlan("decode", {**model, "context": 32768, "phase": "decode"}, ("bfloat16",), ("graph",), (1,))
    profile = Profile("p", "test-only", (long,), rounds=5, min_sample_s=0.002)
    both = estimate.estimate(profile, estimate.H200, [long], ceilings=False)
    one = estimate.estimate(profile, estimate.H200, [short], ceilings=False)
    assert both.points == one.points == 1


def test_a_time_limit_cuts_samples_before_batch_sizes():
    sweeps = list(QUICK.sweeps)
    planned = estimate.estimate(QUICK, estimate.REFERENCE_CPU, sweeps, ceilings=False).total_s
    same, note = estimate.fit_to_time(QUICK, sweeps, estimate.REFERENCE_CPU, planned + 1)
    assert same == sweeps and note is None
    fewer, note = estimate.fit_to_time(QUICK, sweeps, estimate.REFERENCE_CPU, 0.7 * planned)
    assert [s.batches for s in fewer] == [s.batches for s in sweeps]  # only samples were cut
    assert estimate.estimate(QUICK, estimate.REFERENCE_CPU, fewer, ceilings=False).total_s <= 0.7 * planned
    assert note.startswith(f"to fit {0.7 * planned:.0f} s") and "samples per point" in note
    thinned, note = estimate.fit_to_time(QUICK, sweeps, estimate.REFERENCE_CPU, 0.3 * planned)
    assert all(QUICK.settings(s)["rounds"] == estimate.MIN_SAMPLES for s in thinned)
    assert sum(len(s.batches) for s in thinned) < sum(len(s.batches) for s in sweeps)
    assert all(s.batches[0] == t.batches[0] and s.batches[-1] == t.batches[-1] for s, t in zip(sweeps, thinned))
    assert "every second batch size dropped" in note


def test_a_run_is_estimated_on_its_own_ceilings():
    ceilings = {"copy": {"bytes_per_s": 2e12}, "matmul": {"bfloat16": {"flops_per_s": 5e14}}}
    machine = estimate.machine_from_ceilings("cuda", ceilings, {"l2_bytes": 2**25, "memory_bytes": 2**36})
    assert machine.bytes_per_s == 2e12 and machine.flops_per_s == {"bfloat16": 5e14}
    assert machine.l2_bytes == 2**25 and machine.op_s == estimate.H200.op_s
