"""The sweep on models it was not written for (a Transformer encoder, an LSTM; tests/measure/holdout.py) and on a
noisy machine: counts against hand counts, verdicts, why the search stopped, one slow sample, the time limit,
and the caller's model left as it was."""

import time

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from benchmarks.analysis.roofline import recommend
from benchmarks.measure import sweep as sweep_module
from benchmarks.measure.model_cost import call_cost
from benchmarks.site import sweep_words
from tests.measure import holdout
from tests.measure.test_sweep import fast, sweep, target, written  # noqa: F401  (fixtures and helpers)

HOLDOUT = "tests/measure/holdout.py"
BATCH = 4


def _counted(factory):
    model, make_input = factory()
    model.eval()
    return model, make_input(BATCH), call_cost(model, (make_input(BATCH),), {})


@pytest.mark.parametrize(
    ("factory", "hand", "fast_path"),
    [
        (holdout.transformer, holdout.transformer_flops_per_sample, "aten._transformer_encoder_layer_fwd"),
        (holdout.lstm, holdout.lstm_flops_per_sample, "aten.mkldnn_rnn_layer"),
    ],
)
def test_fast_path_models_are_counted_within_two_percent_of_a_hand_count(factory, hand, fast_path):
    model, inputs, cost = _counted(factory)
    with torch.no_grad(), FlopCounterMode(display=False) as plain:
        model(inputs)
    assert plain.get_total_flops() < 0.01 * hand() * BATCH  # the plain counter misses the fused layers
    assert cost.flops / BATCH == pytest.approx(hand(), rel=0.02)
    assert fast_path in cost.fast_paths and cost.uncounted == () and cost.ops > 0


def test_an_rnn_reads_its_recurrent_weights_at_every_step():
    model, inputs, cost = _counted(holdout.lstm)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    boundary = inputs.numel() * 4 + 2 * 2 * BATCH * holdout.HIDDEN * 4  # the input; h and c of both layers
    assert cost.bytes_low == pytest.approx(holdout.lstm_weight_reads_per_call() + boundary, rel=0.02)
    assert cost.bytes_low > 10 * weights


def test_attention_and_a_kv_cache_are_counted():
    """The decode step's SDPA call (the CPU's flash kernel) and its KV cache, read once per call."""
    from examples.decode_step import CONFIG, CONTEXT, factory

    model, make_input = factory()
    inputs = make_input(2)
    cost = call_cost(model.eval(), (), inputs)
    heads, head_dim = CONFIG.heads, CONFIG.head_dim
    attention = CONFIG.layers * 2 * 2 * heads * (CONTEXT + 1) * head_dim  # scores and values, one query token
    matrices = sum(2 * p.numel() for p in model.parameters() if p.dim() == 2)  # 2 FLOPs per weight, one token
    assert cost.flops / 2 == pytest.approx(matrices + attention, rel=0.02)
    assert cost.bytes_low >= sum(p.numel() * 4 for p in model.parameters()) + inputs["cache"].numel() * 4


@pytest.mark.parametrize(("name", "hand"), [("transformer", holdout.transformer_flops_per_sample),
                                            ("lstm", holdout.lstm_flops_per_sample)])  # fmt: skip
def test_a_holdout_sweep_counts_judges_and_says_why_it_stopped(fast, tmp_path, capsys, name, hand):  # noqa: F811
    assert sweep(tmp_path, f"{HOLDOUT}:{name}", "--max-batch", "8", "--budget-ms", "1000") == 0
    found, out = written(capsys)
    doc = found.doc
    for point in (p for p in doc["points"] if p["status"] == "ok"):
        assert point["flops"] / point["batch"] == pytest.approx(hand(), rel=0.02)
        assert point["ops"] > 0 and point["uncounted"] == []
    assert any("fast paths off" in note for note in doc["model"]["notes"])
    stopped = doc["run"]["search_stopped"]  # on a loaded machine a flat stretch, measured twice, may end it first
    assert stopped == "the largest batch allowed (--max-batch 8)" or stopped.endswith(", measured twice")
    rec = sweep_words.from_document(doc)
    assert rec.diagnosis.segments and all(s.regime != recommend.UNKNOWN for s in rec.diagnosis.segments)
    assert f"Search stopped: {stopped}." in out.out
    printed = out.out.splitlines()
    assert printed[printed.index("") + 1].startswith("Noise: ")  # the first line after the table


def test_one_slow_sample_does_not_end_the_search(fast, tmp_path, target, capsys, monkeypatch):  # noqa: F811
    """Batch 4's first measurement is made twenty times slower: its throughput then looks flat against batch 1's,
    which would end the search; measured again, it does not. (Five times was not enough on a loaded machine: a
    first batch measured 1.3× slow by noise made the slowed batch 4 look like growth, and nothing was re-measured.)"""
    real, slowed = sweep_module.measure_points, []
    slower = 20

    def slow_once(backend, points, **kwargs):
        outcomes = real(backend, points, **kwargs)
        for point in points:
            outcome = outcomes[(point.curve, point.batch)]
            if point.batch == 4 and not slowed and outcome.status == "ok":
                slowed.append(4)
                timing = outcome.timing
                for key in ("median_s", "q1_s", "q3_s", "min_s", "max_s"):
                    timing[key] *= slower
                timing["samples_s"] = [s * slower for s in timing["samples_s"]]
        return outcomes

    monkeypatch.setattr(sweep_module, "measure_points", slow_once)
    spec = target("import torch\nfrom torch import nn\n\ndef factory():\n    return nn.Linear(32, 32)\n")
    assert sweep(tmp_path, spec, "--input-shape", "32", "--max-batch", "16") == 0
    found, out = written(capsys)
    assert "measured batches 1, 2, 4 again" in out.err  # the slowed batch 4 (slowed in the measuring process)
    assert {1, 2, 4, 8, 16} <= {p["batch"] for p in found.doc["points"] if p["status"] == "ok"}
    assert found.doc["run"]["search_stopped"] == "the largest batch allowed (--max-batch 16)"


def test_flat_throughput_ends_the_search_once_measured_twice(fast, tmp_path, target, capsys):  # noqa: F811
    """A model whose time grows in proportion to the batch: throughput is flat from the start."""
    source = """
import time
import torch
from torch import nn

class Proportional(nn.Module):
    def forward(self, x):
        time.sleep(0.005 * x.shape[0])
        return x * 2

def factory():
    return Proportional()
"""
    assert sweep(tmp_path, target(source), "--input-shape", "4", "--max-batch", "64") == 0
    found, out = written(capsys)
    stopped = found.doc["run"]["search_stopped"]
    assert stopped.startswith("throughput grew ") and stopped.endswith(", measured twice")
    assert max(p["batch"] for p in found.doc["points"]) <= 16
    assert f"Search stopped: {stopped}." in out.out


def test_the_time_limit_bounds_the_whole_command(fast, tmp_path, capsys, monkeypatch):  # noqa: F811
    """Every stage after the set-up (loading the model, the ceilings, the probes) keeps to the limit counted from
    the command's start; only a set-up that alone outlasts it (a heavily loaded machine) can push the end past
    it."""
    real, searching = sweep_module.Sweep.search, tmp_path / "search-started"

    def search(self):  # in the measuring process: the time it starts searching (the clock is the machine's)
        searching.write_text(repr(time.perf_counter()))
        real(self)

    monkeypatch.setattr(sweep_module.Sweep, "search", search)
    limit = 4.0
    started = time.perf_counter()
    assert sweep(tmp_path, f"{HOLDOUT}:transformer", "--time-limit", str(limit)) == 0
    elapsed = time.perf_counter() - started
    found, _ = written(capsys)
    set_up = float(searching.read_text()) - started
    bound = max(limit, set_up + 1.0) + 1.5  # one count or one round past the limit at most
    assert found.doc["run"]["wall_s"] <= bound and elapsed <= bound + 1.0


def test_the_api_leaves_the_callers_model_as_it_was(fast):  # noqa: F811
    from benchmarks import sweep as api

    model, make_input = holdout.lstm()
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    result = api(model, make_input, device="cpu", threads=1, batches=[1, 2], dtype="bfloat16", quiet=True)
    assert model.training and all(m.training for m in model.modules())
    assert all(torch.equal(v, before[k]) and v.dtype == before[k].dtype for k, v in model.state_dict().items())
    model.lstm.eval()  # a mixed mode is restored module by module
    api(model, make_input, device="cpu", threads=1, batches=[1], quiet=True)
    assert model.training and not model.lstm.training
    head = str(result).splitlines()[0]
    assert head.startswith("Recurrent (a model object), bfloat16") and head.count("Recurrent") == 1
