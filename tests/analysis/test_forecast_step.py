"""The continuous-batching step on the forecast: its fast path equals its detail, it divides each operation by
its bound's efficiency, and the recording step adds up what it times."""

import numpy as np
import pytest

from benchmarks.analysis.roofline.forecast import Efficiency
from benchmarks.analysis.serving.llm.forecast_step import ForecastStep, RecordingStep
from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
from benchmarks.analysis.serving.llm.step_model import StepWork
from benchmarks.gpus import find_gpu
from benchmarks.llm_models import find_model

WORKS = [StepWork(1, 1, 1025, 1025), StepWork(64, 64, 64 * 900, 64 * 900), StepWork(4096, 1, 4096 * 2048, 4096)]


@pytest.fixture(params=[("Llama-3-8B", 1), ("Mixtral-8x7B", 2)], ids=["dense", "moe-tp2"])
def ceiling(request):
    name, tp = request.param
    return RooflineStep(find_model(name), find_gpu("NVIDIA H100 SXM"), "bfloat16", tensor_parallel=tp)


def test_the_fast_path_equals_the_detail(ceiling):
    step = ForecastStep.of(ceiling, Efficiency(0.6, 0.7, 0.004))
    for w in WORKS:
        assert step.seconds(w.tokens, w.logits, w.attended, w.kv_positions) == pytest.approx(step.detail(w).seconds)


def test_each_operation_is_divided_by_its_bounds_efficiency(ceiling):
    e = Efficiency(0.5, 0.25, 0.002)
    step = ForecastStep.of(ceiling, e)
    for w in WORKS:
        d = ceiling.detail(w)
        parts = ((d.matmul_s, d.matmul_bound), (d.attention_s, d.attention_bound))
        want = e.fixed_s + d.communication_s + sum(s / (e.compute if b == "compute" else e.memory) for s, b in parts)
        assert step.detail(w).seconds == pytest.approx(want)
    assert {ceiling.detail(w).matmul_bound for w in WORKS} == {"memory", "compute"}  # both bounds are exercised
    assert ForecastStep.of(ceiling, Efficiency(1, 1, ceiling.fixed_s)).detail(WORKS[1]).seconds == pytest.approx(
        ceiling.detail(WORKS[1]).seconds
    )


def test_the_recording_step_adds_up_what_it_times(ceiling):
    step = RecordingStep.of(ceiling)
    total = sum(step.seconds(w.tokens, w.logits, w.attended, w.kv_positions) for w in WORKS)
    assert step.parts.calls == len(WORKS)
    assert step.parts.seconds + len(WORKS) * ceiling.fixed_s == pytest.approx(total)


@pytest.mark.parametrize("kind", ["ceiling", "forecast"])
@pytest.mark.parametrize("padding", [0, 3])
def test_a_run_of_decode_steps_timed_at_once_equals_each_step_to_the_last_bit(ceiling, kind, padding):
    step = ceiling if kind == "ceiling" else ForecastStep.of(ceiling, Efficiency(0.6, 0.7, 0.004))
    d = 37
    positions = [d * 50 + j * d for j in range(400)] + [d * 9000 + j * d for j in range(400)]
    many = step.decode_run_seconds(d, np.array(positions, dtype=np.float64), padding)
    one = [step.step_seconds(d, p, padding, 0.0, 0.0, d + padding) for p in positions]
    assert many.tolist() == one


def test_the_recording_step_has_no_run_of_steps_at_once(ceiling):
    assert RecordingStep.of(ceiling).decode_run_seconds is None  # it records each step the simulator takes
