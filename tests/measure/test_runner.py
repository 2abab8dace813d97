"""Whole runs on the CPU at tiny sizes, including the fault paths (OOM, Ctrl-C, crash)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import profiles
from benchmarks.commands.cli import main
from benchmarks.contract.results import read_run
from benchmarks.measure import planning, runner
from benchmarks.measure.adapters import ADAPTERS, MLP
from benchmarks.measure.backends import CpuBackend
from benchmarks.profiles import CurvePlan, Profile
from snippets import costs
from tests.measure.conftest import TINY, small_cache, written

ROOT = Path(__file__).resolve().parents[2]


def test_cpu_run_writes_a_valid_complete_file(tiny, capsys, tmp_path):
    assert tiny() == 0
    path = written(capsys)
    assert path.parent.parent == tmp_path
    run = read_run(path)
    assert run.complete and run.doc["run"]["interrupted"] is None
    assert run.device["kind"] == "cpu" and run.device["threads"] == 1
    assert run.ceilings["copy"]["bytes_per_s"] > 0 and run.ceilings["matmul"]["float32"]["flops_per_s"] > 0
    curves = run.ceilings["curves"]
    # copy: each working set's half, plus the ceiling's 1 MiB buffer (working set 2 MiB)
    assert sorted((e["kind"], e["working_set_bytes"]) for e in curves["bandwidth"]) == [
        ("copy", 2**14), ("copy", 2**17), ("copy", 2**21), ("read", 2**14), ("read", 2**17)
    ]  # fmt: skip
    assert all(e["bytes_per_s"] > 0 and e["timing"]["samples_s"] for e in curves["bandwidth"])
    assert [(e["dtype"], e["n"]) for e in curves["matmul"]] == [("float32", 32), ("float32", 128)]
    ceiling = next(e for e in curves["matmul"] if e["n"] == 128)
    assert ceiling["flops_per_s"] == run.ceilings["matmul"]["float32"]["flops_per_s"]
    assert run.doc["checks"] and all(check["passed"] for check in run.doc["checks"])
    records = run.records
    assert len(records) == 2 * 4  # graph needs CUDA, so the CPU runs eager only
    assert {r["mode"] for r in records} == {"eager"}
    assert all(r["status"] == "ok" and r["median_s"] > 0 for r in records)
    assert all(len(r["timing"]["samples_s"]) == TINY.rounds for r in records)
    assert {r["cache"] for r in records} == {"rotated"}
    small = next(r for r in records if r["params"]["width"] == 64 and r["batch"] == 4)
    assert small["flops"] == 2 * 2 * 64 * 64 * 4
    assert small["weight_copies"] > 1  # 2 layers of 64² floats are far smaller than any cache


def test_resident_cache_uses_one_copy(tiny, capsys):
    assert tiny("--cache", "resident") == 0
    records = read_run(written(capsys)).records
    assert {(r["cache"], r["weight_copies"]) for r in records} == {("resident", 1)}


def _failing_setup(monkeypatch, should_fail):
    """Make MLP calls raise `should_fail(width, batch)` (an exception or None) when run."""
    original = MLP.setup

    def setup(self, params, dtype, device, copies, max_batch):
        prepared = original(self, params, dtype, device, copies, max_batch)
        original_call = prepared.call

        def call(batch, mode="eager", copies=None):
            run = original_call(batch, mode, copies)

            def maybe_fail():
                exc = should_fail(params["width"], batch)
                if exc is not None:
                    raise exc
                return run()

            return maybe_fail

        prepared.call = call
        return prepared

    monkeypatch.setattr(MLP, "setup", setup)


def test_oom_is_recorded_and_the_run_goes_on(tiny, capsys, monkeypatch):
    _failing_setup(
        monkeypatch,
        lambda width, batch: (
            torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB")
            if width == 64 and batch >= 8
            else None
        ),
    )
    assert tiny() == 0
    run = read_run(written(capsys))
    assert run.complete
    status = {(r["params"]["width"], r["batch"]): r["status"] for r in run.records}
    assert [status[(64, b)] for b in (1, 4, 8, 16)] == ["ok", "ok", "oom", "skipped"]
    assert all(status[(128, b)] == "ok" for b in (1, 4, 8, 16))


def test_ctrl_c_keeps_a_valid_incomplete_file(tiny, capsys, monkeypatch):
    rounds_saved = {"n": 0}
    original_save = runner.RunFile.save

    def count_saves(self):
        original_save(self)
        if self.doc["records"] and self.doc["records"][0]["status"] == "ok":
            rounds_saved["n"] += 1

    def interrupt_in_second_round(width, batch):
        return KeyboardInterrupt() if rounds_saved["n"] >= 1 else None

    monkeypatch.setattr(runner.RunFile, "save", count_saves)
    _failing_setup(monkeypatch, interrupt_in_second_round)
    assert tiny() == 130
    run = read_run(written(capsys))
    assert not run.complete
    assert run.doc["run"]["interrupted"].startswith("KeyboardInterrupt")
    assert run.doc["run"]["finished_at"] is None
    assert run.records and all(r["status"] == "ok" for r in run.records)
    assert {len(r["timing"]["samples_s"]) for r in run.records} == {1}  # the first round, kept


def test_crash_keeps_what_was_saved(tiny, capsys, monkeypatch):
    original = runner._record
    calls = {"n": 0}

    def record_then_crash(*args):
        calls["n"] += 1
        if calls["n"] > 20:
            raise RuntimeError("disk on fire")
        return original(*args)

    monkeypatch.setattr(runner, "_record", record_then_crash)
    assert tiny() == 1
    run = read_run(written(capsys))
    assert not run.complete
    assert run.doc["run"]["interrupted"] == "RuntimeError: disk on fire"


class FakeGraphBackend(CpuBackend):
    """The CPU backend, pretending graph capture exists, to check how the runner labels modes.

    Only the runner's bookkeeping is under test here; real capture needs a GPU.
    """

    modes = ("graph", "eager")
    captured = 0

    def for_mode(self, fn, mode):
        if mode == "graph":
            FakeGraphBackend.captured += 1
            return fn
        return super().for_mode(fn, mode)


def test_graph_and_eager_curves_are_both_recorded(tiny, capsys, monkeypatch):
    monkeypatch.setattr(runner, "select_backend", lambda name, threads: FakeGraphBackend(threads or 1))
    assert tiny() == 0
    records = read_run(written(capsys)).records
    assert sorted({r["mode"] for r in records}) == ["eager", "graph"]
    assert len(records) == 2 * 2 * 4
    assert FakeGraphBackend.captured == 2 * 4


def _one_sweep_profile(monkeypatch, *sweeps):
    profile = Profile(name="tiny", description="test-only", sweeps=sweeps, rounds=3, min_sample_s=0.001, warmup_s=0.0)
    monkeypatch.setitem(profiles.PROFILES, "tiny", profile)


def test_resident_and_rotated_twins_are_separate_curves(tiny, capsys, monkeypatch):
    _one_sweep_profile(
        monkeypatch,
        *(
            CurvePlan("mlp", {"width": 64, "depth": 2}, ("float32",), ("eager",), (1, 2), cache=c)
            for c in ("resident", "rotated")
        ),
    )
    assert tiny() == 0
    records = read_run(written(capsys)).records
    assert sorted((r["cache"], r["batch"]) for r in records) == [
        ("resident", 1), ("resident", 2), ("rotated", 1), ("rotated", 2)
    ]  # fmt: skip
    assert {r["weight_copies"] for r in records if r["cache"] == "resident"} == {1}


def test_compile_mode_times_the_compiled_model(tiny, capsys, monkeypatch):
    compiled = []

    def fake_compile(module, dynamic, fullgraph):
        compiled.append((dynamic, fullgraph))
        return module  # the plumbing under test; a real compile takes tens of seconds here

    monkeypatch.setattr(torch, "compile", fake_compile)
    _one_sweep_profile(
        monkeypatch, CurvePlan("mlp", {"width": 64, "depth": 2}, ("float32",), ("eager", "compile"), (1, 2))
    )
    assert tiny("--cache", "resident") == 0
    written_path = written(capsys)
    records = read_run(written_path).records
    assert sorted((r["mode"], r["status"]) for r in records) == [("compile", "ok")] * 2 + [("eager", "ok")] * 2
    assert compiled == [(True, True)]  # one compilation, dynamic shapes, one graph, shared by every batch
    assert read_run(written_path).doc["run"]["compiled_graphs"] == 0  # nothing compiled for real here


def test_a_compile_failure_fails_its_points_once(tiny, capsys, monkeypatch):
    attempts = []

    def broken_compile(module, dynamic, fullgraph):
        def call(x):
            attempts.append(x.shape[0])
            raise RuntimeError("no C++ compiler")

        return call

    monkeypatch.setattr(torch, "compile", broken_compile)
    _one_sweep_profile(
        monkeypatch, CurvePlan("mlp", {"width": 64, "depth": 2}, ("float32",), ("eager", "compile"), (1, 2, 4))
    )
    assert tiny("--cache", "resident") == 0
    records = read_run(written(capsys)).records
    failed = [r for r in records if r["mode"] == "compile"]
    assert {r["status"] for r in failed} == {"error"} and all("no C++ compiler" in r["message"] for r in failed)
    assert {r["status"] for r in records if r["mode"] == "eager"} == {"ok"}
    assert len(attempts) == 1  # the other batches fail at once, not after a compile each


@pytest.mark.parametrize(
    ("weights", "cache", "mode", "memory", "expected"),
    [
        (16 * 2**20, 50 * 2**20, "rotated", None, 10),  # 3 × 50 MiB over 16 MiB
        (2**30, 50 * 2**20, "rotated", None, 1),  # weights alone dwarf the cache
        (1024, 50 * 2**20, "rotated", None, 64),  # capped
        (16 * 2**20, 50 * 2**20, "resident", None, 1),
        (16 * 2**20, 50 * 2**20, "rotated", 128 * 2**20, 2),  # at most a quarter of memory
    ],
)
def test_weight_copies(weights, cache, mode, memory, expected):
    assert planning.weight_copies(weights, cache, mode, memory) == expected


@pytest.mark.slow
def test_cuda_without_cuda_is_one_clear_line():
    assert not torch.cuda.is_available()
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "run", "--device", "cuda"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --device cuda: CUDA is not available")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", [[], ["run"], ["validate"], ["list"], ["summary"], ["schema"]])
def test_every_command_has_help(command):
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", *command, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "usage:" in done.stdout


def test_list_shows_workloads_and_profiles(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "mlp" in out and "Profile quick" in out and "Profile full" in out and "width=8192" in out


def test_schema_command_prints_the_schema(capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["properties"]["schema_version"]["const"] == 2


def test_linear_sweep_records_kernels_at_sampled_batches(one_sweep):
    records = one_sweep(
        CurvePlan(
            "linear", {"in_features": 32, "out_features": 16}, ("float32",), ("eager",), (1, 2, 3, 4, 5),
            rounds=2, min_sample_s=0.0005, warmup_s=0.0, kernel_batches=frozenset({2, 4}),
        )
    )  # fmt: skip
    assert sorted(b for b, r in records.items() if "kernels" in r) == [2, 4]
    assert "aten::addmm" in records[2]["kernels"]
    assert len(records[5]["timing"]["samples_s"]) == 2  # the sweep's own rounds, not the profile's
    assert records[3]["flops"] == 2 * 3 * 32 * 16


def test_routing_is_the_same_in_every_run(one_sweep):
    params = {"variant": "token-choice", "experts": 4, "top_k": 2, "d_model": 16, "d_ff": 8, "skew": 1.0}
    sweep = CurvePlan("moe", params, ("float32",), ("eager",), (3, 17), rounds=1, min_sample_s=0.0005, warmup_s=0.0)
    routings = []
    for _ in range(2):
        routings.append([(r["routing"], r["flops"], r["bytes"]) for r in one_sweep(sweep).values()])
    assert routings[0] == routings[1]
    assert routings[0][1][0]["mean_load"] == 17 * 2 / 4


def test_a_profiler_failure_costs_the_kernel_names_not_the_point(monkeypatch, one_sweep):
    from benchmarks.measure.adapters import Linear

    def broken(self, prepared, batch):
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")

    monkeypatch.setattr(Linear, "kernels", broken)
    records = one_sweep(
        CurvePlan(
            "linear", {"in_features": 16, "out_features": 8}, ("float32",), ("eager",), (1, 2, 3),
            rounds=2, min_sample_s=0.0005, warmup_s=0.0, kernel_batches=frozenset({2}),
        )
    )  # fmt: skip
    assert all(r["status"] == "ok" for r in records.values())
    assert records[2]["kernels_error"] == "RuntimeError: CUPTI_ERROR_NOT_INITIALIZED"
    assert "kernels" not in records[2]


def test_summary_tabulates_every_curve(synthetic_doc, write_doc, capsys):
    path = write_doc(synthetic_doc)
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Synthetic GPU (test fixture, not a measurement)" in out and "complete" in out
    assert "ceilings: copy" in out
    assert "mlp width 1024" in out and "linear 4096→4096" in out
    assert main(["summary", str(write_doc("", name="bad.json"))]) == 1


DECODE_TINY = {"layers": 1, "d_model": 32, "heads": 4, "kv_heads": 2, "d_ff": 64, "context": 16, "phase": "decode"}


def test_decode_batches_whose_kv_cache_cannot_fit_are_skipped(tiny, capsys, monkeypatch):
    from benchmarks.measure.adapters import Decode
    from benchmarks.measure.backends import CpuBackend

    needed = Decode().memory_needed(DECODE_TINY, "float32", 2)
    free = {}

    def free_memory(self):  # the budget is a share of what is free once everything else is set up
        free["asked"] = True
        return int(needed / planning.KV_MEMORY_SHARE) + 1  # room for batch 2, not 4

    monkeypatch.setattr(CpuBackend, "free_memory", free_memory)
    _one_sweep_profile(monkeypatch, CurvePlan("decode", DECODE_TINY, ("float32",), ("eager",), (1, 2, 4)))
    assert tiny() == 0
    run = read_run(written(capsys))
    status = {r["batch"]: r for r in run.records}
    assert status[1]["status"] == status[2]["status"] == "ok"
    assert status[4]["status"] == "skipped" and "KV cache" in status[4]["message"] and free["asked"]
    assert "of the memory left free" in status[4]["message"]
    split = status[2]["bytes_split"]
    assert split["kv_bytes"] == 2 * 1 * 2 * 2 * 8 * 17 * 4  # K and V, 1 layer, batch 2, 2 heads of 8, 17 positions
    assert sum(split.values()) == status[2]["bytes"]
    assert [c["workload"] for c in run.doc["checks"]] == ["decode"]
    assert status[1]["attention_backend"] == "flash_attention"  # pinned: the CPU's flash kernel takes GQA as is


def test_the_attention_backend_falls_back_in_order_and_never_to_math_on_cuda(monkeypatch):
    """A stand-in decoder that only the math backend can run: chosen on a CPU, refused on CUDA."""
    from types import SimpleNamespace

    from torch.nn.attention import SDPBackend

    from benchmarks.measure import adapters

    tried = []
    monkeypatch.setattr(adapters, "sdpa_kernel", lambda backends: _Allow(backends, tried))

    def step(batch, copies=None):
        def run():
            if tried[-1] is not SDPBackend.MATH:
                raise RuntimeError("No available kernel. Aborting execution.")

        return run

    prepared = SimpleNamespace(step=step)
    assert adapters.attention_backend(prepared, torch.device("cpu")) is SDPBackend.MATH
    assert tried == [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]
    tried.clear()
    with pytest.raises(RuntimeError, match="no attention backend runs this decoder: FLASH_ATTENTION: No available"):
        adapters.attention_backend(prepared, torch.device("cuda"))
    assert tried == list(adapters.ATTENTION_BACKENDS["cuda"]) and SDPBackend.MATH not in tried


class _Allow:
    """A stand-in for sdpa_kernel that records which backend a call was pinned to."""

    def __init__(self, backends, tried):
        self.backends, self.tried = backends, tried

    def __enter__(self):
        self.tried.append(self.backends[0])

    def __exit__(self, *exc):
        return False


def test_conv_and_resnet50_run_with_their_analytic_costs(tiny, capsys, monkeypatch):

    conv = {"c_in": 8, "c_out": 16, "kernel": 3, "resolution": 8}
    _one_sweep_profile(
        monkeypatch,
        CurvePlan("conv", conv, ("float32",), ("eager",), (1, 2)),
        CurvePlan("resnet50", {"resolution": 32}, ("float32",), ("eager",), (1,)),
    )
    assert tiny("--cache", "resident") == 0
    records = {(r["workload"], r["batch"]): r for r in read_run(written(capsys)).records}
    assert all(r["status"] == "ok" for r in records.values())
    assert records[("conv", 2)]["flops"] == 2 * 9 * 8 * 16 * 8 * 8 * 2
    assert records[("resnet50", 1)]["flops"] == costs.resnet50_cost(1, 4, 32)[0]


def test_kv_budgets_give_small_curves_what_they_need_and_split_the_rest():
    from benchmarks.measure.adapters import Decode

    decode = Decode()
    sweeps = [
        CurvePlan("decode", {**DECODE_TINY, "context": context}, ("float32",), ("eager",), (1, 64))
        for context in (16, 4096, 8192)
    ]
    sweeps.insert(1, CurvePlan("mlp", {"width": 8, "depth": 1}, ("float32",), ("eager",), (1,)))
    wants = [decode.memory_needed(s.params, "float32", 64) for s in (sweeps[0], sweeps[2], sweeps[3])]
    share = planning.KV_MEMORY_SHARE
    memory = (wants[0] + 2 * wants[1] * 0.75) / share  # the small curve's need and 75 % of two others
    budgets = runner.memory_budgets(sweeps, memory)
    assert set(budgets) == {(0, "float32"), (2, "float32"), (3, "float32")}  # the MLP needs no budget
    assert budgets[(0, "float32")] == wants[0]  # the short context gets all it needs
    assert budgets[(2, "float32")] == budgets[(3, "float32")] == pytest.approx(0.75 * wants[1])  # equal split
    assert sum(budgets.values()) == pytest.approx(memory * share)


def test_every_workload_has_an_adapter_and_every_adapter_a_workload():
    from benchmarks.measure.adapters import ADAPTERS
    from benchmarks.workloads import WORKLOADS

    assert set(ADAPTERS) == set(WORKLOADS)
    assert all(ADAPTERS[name].spec is WORKLOADS[name] for name in WORKLOADS)


def test_large_batches_need_fewer_weight_copies():
    """A batch's activations take cache room too: at large batch fewer copies span the cache."""
    mlp = MLP()
    sweep = CurvePlan("mlp", {"width": 256, "depth": 8}, ("float32",), ("eager",), (1, 64, 512))
    device = {"l2_bytes": 32 * 2**20, "memory_bytes": 2**34}
    copies = planning.copies_by_batch(mlp, sweep, "float32", "rotated", device, sweep.batches)
    # 2 MiB of weights; activations 8·4·2·b·256 bytes: 16 KiB a row
    assert copies == {1: 48, 64: 32, 512: 10}
    assert planning.copies_by_batch(mlp, sweep, "float32", "resident", device, sweep.batches) == {1: 1, 64: 1, 512: 1}


def test_points_that_cannot_rotate_past_the_cache_are_measured_resident_or_left_to_their_twin():
    """64 copies of a 0.5 MiB MLP span 32 MiB, not 3 × 32 MiB: such a point is resident, whatever
    the sweep asked for; where another sweep already measures it resident, it is skipped with the reason."""
    plan = runner.RunPlan()
    sweep = CurvePlan("mlp", {"width": 128, "depth": 8}, ("float32",), ("eager",), (1, 4096))
    device = {"l2_bytes": 32 * 2**20, "memory_bytes": 2**34}
    copies = planning.copies_by_batch(MLP(), sweep, "float32", "rotated", device, sweep.batches)
    assert copies[1] == planning.MAX_COPIES
    # alone: batch 1 is measured resident with one copy; batch 4096's activations rotate on their own
    states = runner.cache_states(plan, MLP(), sweep, "float32", ["eager"], device, "rotated", copies, set())
    assert states == {("eager", "rotated"): {4096: copies[4096]}, ("eager", "resident"): {1: 1}}
    assert plan.fixed == []
    # with a resident twin of batch 1 in the run: skipped here, with the reason
    twins = {(sweep.label(), "float32", "eager", 1)}
    states = runner.cache_states(plan, MLP(), sweep, "float32", ["eager"], device, "rotated", copies, twins)
    assert states == {("eager", "rotated"): {4096: copies[4096]}, ("eager", "resident"): {}}
    [skipped] = plan.fixed
    assert (skipped["batch"], skipped["status"], skipped["cache"]) == (1, "skipped", "rotated")
    assert "cannot span 3× the 32 MiB cache" in skipped["message"]


def test_a_profile_with_both_cache_states_never_measures_a_point_twice(tiny, capsys, monkeypatch):
    """The tiny profile's MLPs under a 32 MiB cache: rotation cannot reach 3×, and the resident
    twins the profile measures take those points."""
    twin = CurvePlan("mlp", {"width": 64, "depth": 2}, ("float32",), ("eager",), (1, 4), cache="resident")
    profile = Profile(name="tiny", description="test-only", sweeps=(*TINY.sweeps, twin), rounds=2, min_sample_s=0.001)
    monkeypatch.setitem(profiles.PROFILES, "tiny", profile)
    small_cache(monkeypatch, l2_bytes=32 * 2**20)
    assert tiny() == 0
    records = read_run(written(capsys)).records  # the reader rejects a point recorded twice
    by_state = {(r["params"]["width"], r["batch"], r["cache"]): r["status"] for r in records}
    assert by_state[(64, 1, "resident")] == by_state[(64, 4, "resident")] == "ok"
    assert by_state[(64, 1, "rotated")] == by_state[(64, 4, "rotated")] == "skipped"
    assert by_state[(64, 8, "resident")] == by_state[(128, 16, "resident")] == "ok"  # no twin: measured resident
    assert not any(cache == "rotated" and status == "ok" for (_, _, cache), status in by_state.items())


class Recorder:
    """Wraps measure_points and a workload's kernels() so a test can read the order they ran in."""

    def __init__(self, monkeypatch, names=("gemm_kernel",)):
        from benchmarks.measure.adapters import Linear

        self.calls = []
        measure = runner.measure_points

        def measure_points(*args, **kwargs):
            outcomes = measure(*args, **kwargs)
            self.calls.append("every sample taken")
            return outcomes

        def kernels(adapter, prepared, batch):
            self.calls.append(f"kernels of batch {batch}")
            return list(names)

        monkeypatch.setattr(runner, "measure_points", measure_points)
        monkeypatch.setattr(Linear, "kernels", kernels)


LINEAR_SWEEP = CurvePlan(
    "linear", {"in_features": 16, "out_features": 8}, ("float32",), ("eager",), (1, 2, 3),
    rounds=2, min_sample_s=0.0005, warmup_s=0.0, kernel_batches=frozenset({1, 3}),
)  # fmt: skip


def test_kernel_names_are_recorded_after_every_sample(monkeypatch, one_sweep):
    """A profiler session leaves CUPTI attached and slows later launches: none may precede a sample."""
    recorder = Recorder(monkeypatch)
    records = one_sweep(LINEAR_SWEEP)
    assert recorder.calls == ["every sample taken", "kernels of batch 1", "kernels of batch 3"]
    assert records[1]["kernels"] == records[3]["kernels"] == ["gemm_kernel"] and "kernels" not in records[2]


def test_kernel_names_say_why_they_are_missing(monkeypatch, one_sweep):
    Recorder(monkeypatch, names=())
    records = one_sweep(LINEAR_SWEEP)
    assert records[1]["kernels_error"].startswith("no kernel names")
    monkeypatch.setattr(runner, "KERNEL_NAMES_BUDGET_S", 0.0)
    Recorder(monkeypatch)
    records = one_sweep(LINEAR_SWEEP)
    assert records[1]["kernels_error"] == records[3]["kernels_error"]
    assert records[1]["kernels_error"].startswith("skipped: the run's 0 s for recording kernel names were spent")
    assert all(r["status"] == "ok" for r in records.values())


def test_a_time_limit_plans_fewer_samples_and_ends_in_time(tiny, capsys, monkeypatch):
    """Eight points wanting 60 samples of 20 ms each (about 10 s) under a 4 s limit: the run plans
    fewer samples on its own ceilings, ends in time with a complete file and says what it cut."""
    import dataclasses
    import time

    sweeps = tuple(dataclasses.replace(s, rounds=60, min_sample_s=0.02) for s in TINY.sweeps)
    slow = Profile(name="tiny", description="test-only", sweeps=sweeps, rounds=3, min_sample_s=0.001, warmup_s=0.0)
    monkeypatch.setitem(profiles.PROFILES, "tiny", slow)
    started = time.perf_counter()
    assert tiny("--time-limit", "4") == 0
    elapsed = time.perf_counter() - started
    run = read_run(written(capsys))
    assert run.complete and run.doc["run"]["time_limit_s"] == 4
    assert "samples per point instead of 60" in run.doc["run"]["fitted_to_time"]
    assert all(r["status"] == "ok" and len(r["timing"]["samples_s"]) < 60 for r in run.records)
    # The limit, the last write of the file and a slower last sample on a loaded machine: well short of the ~10 s the
    # run takes without a limit (at 4 + 1 s it failed at 5.09 s on 2 cores loaded to a load average of 5).
    assert elapsed < 4 + 2.5, elapsed


def test_a_time_limit_must_be_positive(tiny, capsys):
    assert tiny("--time-limit", "-3") == 2
    assert "--time-limit -3: give a number of seconds above 0" in capsys.readouterr().err


@pytest.mark.parametrize("cache_mib", [2, 8, 16, 32, 64, 256])
def test_the_smoke_profile_rotates_more_than_one_weight_copy_under_any_common_cache_size(cache_mib):
    """The smoke's "rotated weights" path needs a point rotated through several copies: on an 8 MiB cache every
    tiny sweep is resident (64 copies cannot span 3 caches) and ResNet-50's 51 MB needs one copy, so a 4 MiB
    linear layer is there for small caches and ResNet-50 for large ones."""
    device = {"l2_bytes": cache_mib * 2**20, "memory_bytes": 16 * 2**30}
    rotated = []
    for sweep in profiles.SMOKE.sweeps:
        if (sweep.cache or "rotated") != "rotated":
            continue
        workload = ADAPTERS[sweep.workload]
        for dtype in sweep.dtypes:
            copies = planning.copies_by_batch(workload, sweep, dtype, "rotated", device, sweep.batches)
            stuck = planning.unrotatable(workload, sweep, dtype, device, copies)
            rotated += [n for b, n in copies.items() if b not in stuck and n > 1]
    assert rotated, f"no smoke point rotates more than one copy under a {cache_mib} MiB cache"
