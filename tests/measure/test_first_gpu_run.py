"""What the first GPU run must survive, proven on the CPU with stand-ins: long kernel names, a time limit,
out-of-memory while sampling, graph pools that grow, a sweep's pool reuse."""

from __future__ import annotations

import pytest

from benchmarks.measure import adapters
from benchmarks.profiles import CurvePlan

ELEMENTWISE = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar("
    + "at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::" * 12
    + "operator()() const, std::array<char*, 2ul> >(int, float, std::array<char*, 2ul>)"
)


def test_kernel_names_are_kept_short_enough_for_the_results_file(one_sweep, monkeypatch):
    assert len(ELEMENTWISE) > 1000
    names = [ELEMENTWISE, *(f"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize{n}x128x64_cublas" for n in range(80))]
    monkeypatch.setattr(adapters.Linear, "kernels", lambda self, prepared, batch: names)
    sweep = CurvePlan("linear", {"in_features": 32, "out_features": 32}, ("float32",), ("eager",), (1, 2),
                  kernel_batches=frozenset({1}), cache="resident")  # fmt: skip
    records = one_sweep(sweep)  # read back through the strict reader: a name over its cap fails the file
    kept = records[1]["kernels"]
    assert len(kept) == 64 and max(map(len, kept)) <= 240
    assert kept[0].endswith("…") and kept[0].startswith("void at::native::vectorized_elementwise_kernel<4,")
    assert kept[1] == names[1]  # a GEMM's name is kept whole


@pytest.mark.parametrize("free_gib", [12, 16, 24, 60, 140])
def test_the_ceiling_curves_hold_what_the_plan_says(free_gib):
    from benchmarks.measure.ceiling_plan import held_bytes, plan_ceilings

    plan = plan_ceilings("cuda", ["bfloat16"], free_gib * 2**30)
    held = held_bytes(plan)
    assert held <= 0.56 * free_gib * 2**30
    if free_gib == 140:  # an H200's free memory: the curves' buffers against the largest working set
        assert 6.7 < held / max(plan.working_sets) < 6.9


def test_rounds_are_saved_at_most_every_few_seconds_and_on_any_stop(monkeypatch):
    from types import SimpleNamespace

    from benchmarks.measure import runner

    now = {"t": 0.0}
    monkeypatch.setattr(runner, "time", SimpleNamespace(perf_counter=lambda: now["t"]))
    saved = []
    rounds = runner.RoundSaver(saved.append)
    for index in range(25):  # a round every second
        now["t"] = float(index)
        rounds.after_round({"round": index})
    assert saved == [{"round": 0}, {"round": 10}, {"round": 20}]  # the first at once, then every 10 s
    rounds.flush()  # the run stopped: the last round is kept
    assert saved[-1] == {"round": 24}
    rounds.flush()
    assert len(saved) == 4  # nothing pending, nothing written
