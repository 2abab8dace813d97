"""Step times read off a run's decode and prefill points, on a SYNTHETIC run (labelled so; never published)."""

import pytest

from benchmarks.analysis.roofline import calibration_file
from benchmarks.analysis.serving.llm.engine_config import Engine
from benchmarks.analysis.serving.llm.measured_step import MeasuredStep, NoMeasurement
from benchmarks.analysis.serving.llm.request_lengths import Lengths
from benchmarks.analysis.serving.llm.simulation import simulate
from tests.synthetic import record, run_of

CONFIG = {"layers": 2, "d_model": 256, "heads": 4, "kv_heads": 2, "d_ff": 512, "ffn": "swiglu"}


def decode_s(batch, context):  # SYNTHETIC: 1 ms + 0.1 ms a sequence + 1 µs a sequence per cached position
    return 1e-3 + 1e-4 * batch + 1e-6 * batch * context


def fixture_run(memory=True):
    records = [
        record("decode", {**CONFIG, "context": ctx, "phase": "decode"}, b, decode_s(b, ctx), 1.0, 1.0)
        for ctx in (100, 1000)
        for b in (1, 4, 16)
    ]
    records += [
        record("decode", {**CONFIG, "context": 200, "phase": "prefill"}, b, 2e-3 + 1e-5 * 200 * b, 1.0, 1.0)
        for b in (1, 4)
    ]
    run = run_of(records)
    run.device["memory_bytes"] = 10**9 if memory else None
    return run


def test_measured_points_are_returned_and_the_rest_interpolated_linearly():
    step = MeasuredStep(fixture_run())
    assert step.decode_s(4, 100) == pytest.approx(decode_s(4, 100))
    assert step.decode_s(10, 100) == pytest.approx(decode_s(10, 100))  # linear in batch between 4 and 16
    assert step.decode_s(4, 550) == pytest.approx(decode_s(4, 550))  # linear in context between 100 and 1,000
    assert step.decode_s(32, 2000) == pytest.approx(decode_s(32, 2000))  # extended beyond both: still affine here
    assert step.prefill_s(200) == pytest.approx(2e-3 + 1e-5 * 200)
    assert step.prefill_s(600) == pytest.approx(2e-3 + 1e-5 * 600)


def test_the_simulator_runs_on_measured_steps():
    step = MeasuredStep(fixture_run())
    r = simulate(step, Engine(), Lengths.fixed(200), Lengths.fixed(11), n_requests=3, clients=1)
    assert r.ttft_s == pytest.approx([2e-3 + 1e-5 * 200] * 2)
    steps = [decode_s(1, 200 + k) for k in range(10)]
    assert r.tpot_s == pytest.approx([sum(steps) / 10] * 2)


def test_a_run_without_what_the_step_needs_is_refused():
    with pytest.raises(NoMeasurement, match="matching"):
        MeasuredStep(fixture_run(), {"kv_heads": 4})
    with pytest.raises(NoMeasurement, match="memory"):
        MeasuredStep(fixture_run(memory=False))


def test_every_step_the_engine_takes_is_a_step_model():
    """The engine's one seam: the datasheet's step, the calibrated forecast and a measured decoder all give what
    StepModel names, and a step that lacks a part of it is not one."""
    from benchmarks.analysis.serving.llm.forecast_step import ForecastStep
    from benchmarks.analysis.serving.llm.roofline_step import RooflineStep
    from benchmarks.analysis.serving.llm.step_model import StepModel
    from benchmarks.gpus import find_gpu
    from benchmarks.llm_models import LLAMA_3_8B

    roofline = RooflineStep(LLAMA_3_8B, find_gpu("NVIDIA H100 SXM"), "bfloat16")
    efficiency = calibration_file.committed().efficiency("decode", "bfloat16")
    for found in (roofline, ForecastStep.of(roofline, efficiency), MeasuredStep(fixture_run())):
        assert isinstance(found, StepModel), type(found).__name__

    class NoCache:
        def step_seconds(self, *args):
            return 1.0

        def describe(self):
            return "a step with no KV cache"

    assert not isinstance(NoCache(), StepModel)
