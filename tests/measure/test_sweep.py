"""`python -m benchmarks sweep` on tiny models on this CPU: the search, the file, and every bad input."""

import json
import os
import signal
import textwrap
import threading
import time

import pytest

from benchmarks.commands import sweep_watch
from benchmarks.commands.cli import main
from benchmarks.contract.results import read_sweep
from benchmarks.measure import sweep as sweep_module

TINY = """
import torch
from torch import nn

def factory():
    return nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32))
"""


@pytest.fixture
def fast(monkeypatch):
    """Fewer samples and a small matmul ceiling: the control flow under test, not the numbers."""
    from benchmarks.measure import ceiling_plan, sweep_probe

    monkeypatch.setitem(ceiling_plan.COPY_BYTES, "cpu", 2**20)
    monkeypatch.setitem(sweep_probe.STREAM_WIDTH, "cpu", 128)
    monkeypatch.setitem(ceiling_plan.MATMUL_N, "cpu", 128)
    monkeypatch.setattr(sweep_module, "SEARCH_SAMPLES", 3)
    monkeypatch.setitem(sweep_module.FINAL_SAMPLES, 50, 5)
    monkeypatch.setitem(sweep_module.FINAL_SAMPLES, 90, 5)
    monkeypatch.setattr(sweep_module, "WARMUP_S", 0.0)


@pytest.fixture
def target(tmp_path):
    """Write a model file; return its TARGET."""

    def write(source: str, name: str = "model.py", factory: str = "factory") -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return f"{path}:{factory}"

    return write


def sweep(tmp_path, spec, *options):
    return main(["sweep", spec, "--device", "cpu", "--threads", "1", "--results-dir", str(tmp_path / "out"), *options])


def written(capsys):
    out = capsys.readouterr()
    return read_sweep(out.out.strip().splitlines()[-1]), out


def test_an_auto_sweep_searches_refines_probes_and_recommends(fast, tmp_path, target, capsys):
    assert sweep(tmp_path, target(TINY), "--input-shape", "32", "--budget-ms", "0.05", "--max-batch", "256") == 0
    found, out = written(capsys)
    doc = found.doc
    stages = {p["stage"] for p in doc["points"]}
    assert "search" in stages and "probe" in stages
    batches = [p["batch"] for p in doc["points"] if p["stage"] == "search"]
    assert batches[:3] == [1, 2, 4] and max(batches) <= 256
    assert doc["run"]["complete"] and doc["model"]["name"] == "Sequential"
    assert doc["model"]["notes"] == ["the model was in training mode: swept in eval mode, without gradients"]
    assert all(p["flops"] > 0 and p["bytes_high"] >= p["bytes_low"] > 0 for p in doc["points"] if p["status"] == "ok")
    lines = doc["recommendation"]["lines"]
    assert any(line.startswith("Highest throughput: batch ") for line in lines)
    assert any("budget" in line for line in lines)
    assert " batch found by samples  median ms" in out.out
    for line in lines:
        assert line in out.out


def test_a_budget_nothing_meets_says_by_how_much(fast, tmp_path, target, capsys):
    assert sweep(tmp_path, target(TINY), "--input-shape", "32", "--budget-ms", "0.000001", "--batches", "1,2") == 0
    found, _ = written(capsys)
    assert found.doc["recommendation"]["within_budget"] is None
    lines = found.doc["recommendation"]["lines"]
    assert lines[0].startswith("Noise: ")
    missed = next(line for line in lines if line.startswith("No batch meets the 1e-06 ms p50 budget: batch "))
    fastest = int(missed.split()[9].rstrip(","))
    assert found.doc["recommendation"]["run"] >= fastest  # the fastest, or a larger batch measured no slower


def test_out_of_memory_ends_the_search_and_is_recorded(fast, tmp_path, target, capsys):
    source = TINY.replace(
        "    return nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32))",
        textwrap.dedent("""
        class Hungry(nn.Module):
            def forward(self, x):
                if x.shape[0] >= 8:
                    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")
                return x * 2
        return Hungry()
        """).replace("\n", "\n    "),
    )
    assert sweep(tmp_path, target(source), "--input-shape", "4") == 0
    found, _ = written(capsys)
    status = {p["batch"]: p["status"] for p in found.doc["points"]}
    assert status[4] == "ok" and status[8] == "oom" and 16 not in status
    assert status[7] == "ok" and 9 not in status  # probed below the first out-of-memory batch, not beyond it
    assert found.doc["recommendation"]["first_oom"] == 8
    assert "Memory: batch 7 is the largest that ran; batch 8 ran out of memory." in found.doc["recommendation"]["lines"]
    # whether the timings show a knee depends on the machine's noise (x * 2 takes microseconds); what the FLOP
    # counter saw does not
    no_ridge = "The FLOP counter saw no matmul or convolution: no ridge batch to predict; "
    assert any(line.startswith(no_ridge) for line in found.doc["recommendation"]["lines"])


def test_a_model_that_fails_at_some_batch_sizes_fails_only_those(fast, tmp_path, target, capsys):
    source = """
    import torch
    from torch import nn

    class Picky(nn.Module):
        def forward(self, x):
            if x.shape[0] == 4:
                raise ValueError("odd shape")
            return x + 1

    def factory():
        return Picky()
    """
    assert sweep(tmp_path, target(source), "--input-shape", "4", "--batches", "1,2,4,8") == 0
    found, _ = written(capsys)
    status = {p["batch"]: p["status"] for p in found.doc["points"]}
    assert status == {1: "ok", 2: "ok", 4: "error", 8: "ok"}
    assert found.doc["recommendation"]["lines"][-1] == "Failed at batch 4: ValueError: odd shape"


def test_a_batch_that_fails_bounds_the_search_like_out_of_memory(fast, tmp_path, target, capsys):
    source = """
    from torch import nn

    class Small(nn.Module):
        def forward(self, x):
            if x.shape[0] > 8:
                raise ValueError("at most 8 rows")
            return x + 1

    def factory():
        return Small()
    """
    assert sweep(tmp_path, target(source), "--input-shape", "4", "--budget-ms", "1000") == 0
    found, _ = written(capsys)
    status = {p["batch"]: p["status"] for p in found.doc["points"]}
    assert all(status[b] == "ok" for b in (1, 2, 4, 8)) and status[16] == "error"
    failed = {b for b, s in status.items() if s == "error"}
    assert failed <= {9, 16} and max(status) == 16  # no bisection toward 16, one probe past 8 at most


MAKER = """
import torch
from torch import nn
from dataclasses import dataclass

@dataclass
class Out:
    logits: torch.Tensor
    extra: str

class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 16)

    def forward(self, tokens, scale=1.0):
        return Out(self.embed(tokens).sum(1) * scale, "ok")

def factory():
    return TwoInputs(), lambda batch: {"tokens": torch.randint(0, 100, (batch, 5)), "scale": 2.0}
"""


def test_an_input_maker_with_keywords_and_a_dataclass_output(fast, tmp_path, target, capsys):
    assert sweep(tmp_path, target(MAKER), "--batches", "1,3") == 0
    found, _ = written(capsys)
    assert [p["status"] for p in found.doc["points"]] == ["ok", "ok"]
    assert found.doc["model"]["input"] == "the factory's make_input(batch)"


def test_integer_tokens_from_a_vocabulary(fast, tmp_path, target, capsys):
    source = """
    from torch import nn
    def factory():
        return nn.Sequential(nn.Embedding(50, 8), nn.Flatten(), nn.Linear(6 * 8, 4))
    """
    assert sweep(tmp_path, target(source), "--input-shape", "6", "--vocab", "50", "--batches", "2") == 0
    found, _ = written(capsys)
    assert found.doc["model"]["input"] == "integer tokens below 50 of shape (batch, 6)"


def test_graph_mode_on_a_cpu_falls_back_to_eager_and_says_so(fast, tmp_path, target, capsys):
    assert sweep(tmp_path, target(TINY), "--input-shape", "32", "--batches", "1", "--mode", "graph") == 0
    found, out = written(capsys)
    assert found.doc["model"]["mode"] == "eager" and found.doc["model"]["mode_requested"] == "graph"
    assert "note: mode graph needs CUDA: measured eager instead" in out.err


def test_a_compile_failure_falls_back_to_eager(fast, tmp_path, target, capsys, monkeypatch):
    import torch

    def broken(model, dynamic):
        def call(*args, **kwargs):
            raise RuntimeError("no C++ compiler")

        return call

    monkeypatch.setattr(torch, "compile", broken)
    assert sweep(tmp_path, target(TINY), "--input-shape", "32", "--batches", "1", "--mode", "compile") == 0
    found, _ = written(capsys)
    assert found.doc["model"]["mode"] == "eager"
    assert any("torch.compile failed (RuntimeError: no C++ compiler)" in note for note in found.doc["model"]["notes"])


@pytest.mark.slow
def test_ctrl_c_keeps_a_valid_incomplete_file_and_report(fast, tmp_path, target, capsys, monkeypatch):
    original = sweep_module.Sweep.refine

    def interrupted(self):
        original(self)
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module.Sweep, "refine", interrupted)
    report = tmp_path / "report.html"
    assert sweep(tmp_path, target(TINY), "--input-shape", "32", "--max-batch", "4", "--report", str(report)) == 130
    found, out = written(capsys)
    assert not found.doc["run"]["complete"] and found.doc["run"]["interrupted"] == "KeyboardInterrupt: stopped"
    assert [p["batch"] for p in found.doc["points"]] == [1, 2, 4]
    assert "kept 3 batch sizes, marked incomplete" in out.err and "Traceback" not in out.err
    assert "incomplete: KeyboardInterrupt: stopped" in out.out and " batch found by samples  median ms" in out.out
    assert "Highest throughput: batch " in out.out
    assert "incomplete (KeyboardInterrupt: stopped)" in report.read_text()


def test_a_time_limit_stops_the_search(fast, tmp_path, target, capsys):
    assert sweep(tmp_path, target(TINY), "--input-shape", "32", "--time-limit", "8") == 0  # well above the least useful
    found, _ = written(capsys)
    assert found.doc["run"]["time_limit_s"] == 8
    assert found.doc["run"]["wall_s"] < 10


def test_the_first_batch_is_timed_when_loading_took_the_searchs_share_of_the_limit(
    fast, tmp_path, target, capsys, monkeypatch
):
    monkeypatch.setattr(sweep_module, "SEARCH_SHARE", 0.0)  # a slow machine: the search's share is spent before it
    assert sweep(tmp_path, target(TINY), "--input-shape", "32", "--time-limit", "30") == 0
    found, _ = written(capsys)
    assert [(p["batch"], p["status"]) for p in found.doc["points"]] == [(1, "ok")]
    assert found.doc["run"]["complete"]


def test_a_final_pass_after_the_time_limit_keeps_the_search_numbers(fast, tmp_path, target, capsys, monkeypatch):
    original = sweep_module.Sweep.probe

    def limit_passes(self):
        original(self)
        self.deadline = time.perf_counter()  # the limit falls between the search and the final pass

    monkeypatch.setattr(sweep_module.Sweep, "probe", limit_passes)
    assert sweep(tmp_path, target(TINY), "--input-shape", "32", "--max-batch", "4", "--time-limit", "100") == 0
    found, out = written(capsys)
    doc = found.doc
    assert [(p["batch"], p["status"]) for p in doc["points"]] == [(1, "ok"), (2, "ok"), (4, "ok")]
    assert doc["recommendation"]["run"] in (1, 2, 4)
    reason = (
        "the time limit cut the final pass short: 3 batch sizes got fewer than the search's 3 samples and keep those"
    )
    assert not doc["run"]["complete"] and doc["run"]["interrupted"] == reason
    assert doc["settings"]["samples"] == 3 and doc["settings"]["samples_asked"] == 5
    assert f"incomplete: {reason}" in out.out and "marked incomplete" in out.err


def test_a_final_pass_cut_short_says_how_many_samples_it_got():
    assert (
        sweep_module.cut_short(30, [3, 3, 4], [])
        == "the time limit cut the final pass short: 3 batch sizes got 3 to 4 of 30 samples"
    )
    assert sweep_module.cut_short(30, [30, 30], []) is None
    assert sweep_module.cut_short(30, [2], [4, 8]) == (
        "the time limit cut the final pass short: 1 batch size got 2 of 30 samples; 2 batch sizes got fewer than the "
        f"search's {sweep_module.SEARCH_SAMPLES} samples and keep those"
    )


BAD_TARGETS = [
    ("missing.py:factory", None, "no such file"),
    ("no_such_package.models:factory", None,
     "TARGET no_such_package.models:factory: cannot import no_such_package.models (No module named"),
    ("{model}:factory", "import nope_not_a_module\n", "model.py failed: ModuleNotFoundError: No module named"),
    ("{model}:nothing", TINY, "has no 'nothing' (it defines factory"),
    ("{model}", TINY, "give path/to/file.py:factory or package.module:factory"),
    ("{model}:factory", "def factory():\n    raise RuntimeError('weights not found')\n",
     "factory() raised RuntimeError: weights not found"),
    ("{model}:factory", "def factory():\n    return 42\n", "factory() returned int: return an nn.Module"),
    ("{model}:factory", "import sys\nsys.exit(3)\n", "model.py called sys.exit(3): put its script part under if"),
    ("{model}:factory", "import sys\ndef factory():\n    sys.exit()\n", "factory() in "),
    ("{model}:factory", TINY.replace("nn.Linear(32, 32), nn.ReLU()", "nn.Linear(16, 32), nn.ReLU()"),
     "the model failed at batch 1: RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
    ("{model}:factory", "import torch\nfrom torch import nn\ndef factory():\n"
     "    return nn.Identity(), lambda b: torch.zeros(3, 4)\n",
     "make_input(2) returned a tensor of shape (3, 4): its first dimension must be the batch, 2"),
    ("{model}:factory", "import torch\nfrom torch import nn\nclass Words(nn.Module):\n"
     "    def forward(self, x):\n        return 'hello'\ndef factory():\n    return Words()\n",
     "the model returned str with no tensor in it"),
    ("{model}:factory", "from torch import nn\ndef factory():\n    return nn.Identity()\n",
     "the factory returns no input maker: give --input-shape"),
    ("/etc/passwd:factory", None, "TARGET /etc/passwd:factory: /etc/passwd is not a Python file"),
    ("{text}:factory", None, "model.txt is not a Python file (give path/to/file.py:factory)"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "source", "message"), BAD_TARGETS)
def test_bad_targets_end_in_one_line(fast, tmp_path, target, capsys, spec, source, message):
    if source is not None:
        spec = spec.format(model=target(source).rsplit(":", 1)[0])
    if "{text}" in spec:
        spec = spec.format(text=target(TINY, name="model.txt").rsplit(":", 1)[0])
    shape = [] if "input maker" in message else ["--input-shape", "32"]
    assert sweep(tmp_path, spec, *shape, "--batches", "1") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and message in err[-1], err
    assert not any("Traceback" in line for line in err)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--budget-ms", "0"], "'0': give a number above 0"),
        (["--budget-ms", "-5"], "'-5': give a number above 0"),
        (["--max-batch", "\u0664"], "give a whole number from 1"),
        (["--batches", "0,4"], "batch sizes are whole numbers from 1"),
        (["--batches", "8,4,,2"], "give auto or batch sizes such as 1,8,32"),
        (["--input-dtype", "int64"], "--input-dtype int64: give --vocab N"),
        (["--report", "out.pdf"], "give a path ending in .html"),
        (["--batches", "1,64", "--max-batch", "8"], "beyond --max-batch 8"),
    ],
)
def test_bad_options_end_in_one_line(tmp_path, target, capsys, options, message):
    with (
        pytest.raises(SystemExit)
        if "give a number" in message or "give a whole" in message or "batch sizes" in message
        else _nothing()
    ):
        code = sweep(tmp_path, target(TINY), "--input-shape", "32", *options)
        assert code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--results-dir", "--report"])
def test_a_folder_that_cannot_be_written_is_refused_before_any_work(tmp_path, target, capsys, monkeypatch, flag):
    (tmp_path / "afile").write_text("")
    path = tmp_path / "afile" / ("x.html" if flag == "--report" else "sweeps")
    monkeypatch.setattr(sweep_module, "run_sweep", lambda *a, **k: pytest.fail("the sweep started"))
    code = main(["sweep", target(TINY), "--input-shape", "32", "--results-dir", str(tmp_path / "out"), flag, str(path)])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {flag} {path}: {tmp_path / 'afile'} is a file, not a folder"]


def test_a_report_that_fails_at_the_end_still_prints_the_results_path(fast, tmp_path, target, capsys, monkeypatch):
    from benchmarks.site import report

    def refused(doc, path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(report, "write_report", refused)
    code = sweep(tmp_path, target(TINY), "--input-shape", "32", "--batches", "1", "--report", str(tmp_path / "r.html"))
    assert code == 2
    found, out = written(capsys)
    assert found.doc["run"]["complete"]
    assert out.err.strip().splitlines()[-1] == f"error: --report {tmp_path / 'r.html'}: Permission denied"


def test_an_input_shape_beside_an_input_maker_is_noted_as_ignored(fast, tmp_path, target, capsys):
    assert sweep(tmp_path, target(MAKER), "--batches", "1", "--input-shape", "7") == 0
    found, out = written(capsys)
    note = "the input shape given is ignored: the factory's make_input(batch) makes the inputs"
    assert note in found.doc["model"]["notes"] and f"note: {note}" in out.err


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.slow
def test_the_report_is_one_offline_file_with_everything_escaped(fast, tmp_path, target, capsys):
    source = TINY.replace("def factory():", "class Evil(nn.Sequential):\n    pass\n\ndef factory():").replace(
        "return nn.Sequential(", "return Evil("
    )
    report = tmp_path / "report.html"
    assert sweep(tmp_path, target(source, name="x<img src=y onerror=alert(1)>.py"), "--input-shape", "32",
                 "--batches", "1,2,4", "--report", str(report)) == 0  # fmt: skip
    page = report.read_text()
    assert "<img src=y" not in page and "x&lt;img src=y onerror=alert(1)&gt;.py" in page
    assert "window.vegaEmbed=" in page and 'src="http' not in page and "Highest throughput" in page
    specs = json.loads(page.split('<script type="application/json" id="specs">')[1].split("</script>")[0])
    assert set(specs) == {"latency", "throughput"}  # on a CPU no per-batch memory peak: no chart, and why
    assert "No memory chart: on a CPU the sweep can read only the process&#x27;s peak resident memory" in page
    assert "process peak  bound" in page


def test_the_python_api(fast):
    import torch
    from torch import nn

    from benchmarks import sweep as api

    result = api(nn.Linear(8, 8), lambda b: torch.randn(b, 8), device="cpu", threads=1, batches=[1, 2], quiet=True)
    assert [row["batch"] for row in result.table] == [1, 2] and result.path is None
    assert result.recommendation.best.batch in (1, 2)
    assert "Highest throughput" in str(result) and set(result.charts()) == {"latency", "throughput"}
    with pytest.raises(TypeError, match="unknown option"):
        api(nn.Linear(8, 8), budget=3)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"budget_ms": 0}, "budget_ms 0: give a number above 0"),
        ({"budget_ms": -3}, "budget_ms -3: give a number above 0"),
        ({"percentile": 95}, "percentile 95: choose 50, 90, 99"),
        ({"threads": 0}, "threads 0: give a whole number from 1"),
        ({"batches": [4, 0]}, "batches [4, 0]: give batch sizes, whole numbers from 1"),
        ({"batches": [1, 64], "max_batch": 8}, "batches goes to 64, beyond max_batch 8"),
    ],
)
def test_the_python_api_checks_its_options_before_any_work(monkeypatch, options, message):
    from torch import nn

    from benchmarks import sweep as api

    monkeypatch.setattr(sweep_module, "run_sweep", lambda *a, **k: pytest.fail("the sweep started"))
    with pytest.raises(ValueError) as raised:
        api(nn.Linear(8, 8), device="cpu", input_shape=(8,), **options)
    assert str(raised.value) == message


def test_the_python_api_restores_the_thread_count(fast):
    import torch
    from torch import nn

    from benchmarks import sweep as api

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        api(nn.Linear(8, 8), device="cpu", input_shape=(8,), threads=1, batches=[1], quiet=True)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_every_measurement_of_a_sweep_captures_into_a_fresh_graph_pool(fast, monkeypatch):
    """A graph pool whose graphs all died cannot be captured into again (torch's use-count check fails
    when the model kept a tensor made during a capture), so each measurement starts a new phase."""
    import torch
    from torch import nn

    from benchmarks import sweep as api
    from benchmarks.measure.backends import CpuBackend

    log = []

    class Recorder(CpuBackend):
        def new_phase(self):
            log.append("new pool")

        def for_mode(self, fn, mode):
            log.append("prepare")
            return super().for_mode(fn, mode)

    monkeypatch.setattr(sweep_module, "select_backend", lambda name, threads: Recorder(threads or 1))
    api(nn.Linear(8, 8), lambda b: torch.randn(b, 8), device="cpu", threads=1, max_batch=8, quiet=True)
    workloads = log[log.index("new pool") :]  # the ceilings capture before: one phase of their own
    measurements = "".join("n" if entry == "new pool" else "p" for entry in workloads).split("n")[1:]
    assert len(measurements) >= 3 and all(measurements)  # search, probes, final: each a fresh pool first


# A model that misbehaves from batch 4 on: batches 1 and 2 are timed first (the contract is checked at 1 and 2).
MISBEHAVES_FROM_4 = """
import os, sys, time
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(32, 32)

    def forward(self, x):
        if x.shape[0] >= 4:
            {action}
        return self.layer(x)

def factory():
    return Model()
"""


def misbehaving(target, action: str) -> str:
    return target(MISBEHAVES_FROM_4.replace("{action}", action))


@pytest.mark.slow
def test_a_forward_that_never_returns_is_ended_at_the_time_limit_keeping_what_was_timed(
    fast, tmp_path, target, capsys, monkeypatch
):
    monkeypatch.setattr(sweep_watch, "GRACE_S", 1.0)
    monkeypatch.setattr(sweep_module, "SEARCH_SHARE", 0.9)  # the search reaches batch 4 also on a busy machine
    began = time.perf_counter()
    code = sweep(tmp_path, misbehaving(target, "time.sleep(600)"), "--input-shape", "32", "--time-limit", "6")
    assert time.perf_counter() - began < 6 + 1 + 4
    assert code == 0
    found, out = written(capsys)
    doc = found.doc
    assert [(p["batch"], p["status"]) for p in doc["points"]] == [(1, "ok"), (2, "ok")]
    why = (
        "--time-limit 6: the model's process was still running 1 s past the time limit and was ended after timing "
        "2 batch sizes"
    )
    assert not doc["run"]["complete"] and doc["run"]["interrupted"] == why
    assert doc["recommendation"]["run"] in (1, 2)
    assert f"error: {why}; the file keeps them, marked incomplete" in out.err and "Traceback" not in out.err
    assert not list(found.path.parent.glob(".*.tmp"))


@pytest.mark.slow
def test_a_factory_that_never_returns_is_ended_at_the_time_limit(fast, tmp_path, target, capsys, monkeypatch):
    monkeypatch.setattr(sweep_watch, "GRACE_S", 1.0)
    source = "import time\nfrom torch import nn\ndef factory():\n    time.sleep(600)\n    return nn.Identity()\n"
    began = time.perf_counter()
    code = sweep(tmp_path, target(source), "--input-shape", "32", "--time-limit", "5")
    assert time.perf_counter() - began < 5 + 1 + 4
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        "error: --time-limit 5: the model's process was still running 1 s past the time limit and was ended "
        "before timing any batch; no results file kept"
    )


@pytest.mark.parametrize(("action", "status"), [("os._exit(0)", 0), ("sys.exit(3)", 3)])
def test_a_model_that_ends_its_process_is_reported_with_what_was_kept(fast, tmp_path, target, capsys, action, status):
    assert sweep(tmp_path, misbehaving(target, action), "--input-shape", "32") == 1
    found, out = written(capsys)
    doc = found.doc
    assert [(p["batch"], p["status"]) for p in doc["points"]] == [(1, "ok"), (2, "ok")]
    why = f"the model's process exited with status {status} after timing 2 batch sizes"
    assert not doc["run"]["complete"] and doc["run"]["interrupted"] == why
    assert f"error: {why}; the file keeps them, marked incomplete" in out.err
    assert "Highest throughput: batch " in out.out


def test_a_model_that_drops_rows_at_some_batch_is_not_credited_with_them(fast, tmp_path, target, capsys):
    assert sweep(tmp_path, misbehaving(target, "return self.layer(x[:3])"), "--input-shape", "32") == 0
    found, _ = written(capsys)
    points = {p["batch"]: p for p in found.doc["points"]}
    assert [points[b]["status"] for b in (1, 2, 4)] == ["ok", "ok", "error"]
    assert "the output has 3 rows at batch 4" in points[4]["message"]
    assert found.doc["run"]["search_stopped"].startswith("batch 4 failed")
    assert found.doc["recommendation"]["run"] in (1, 2)


def test_ctrl_c_reaches_a_model_stuck_in_its_forward_and_the_file_is_kept(fast, tmp_path, target, capsys):
    """The terminal's Ctrl-C reaches the command's process, which hands it on to the measuring process once."""
    out_dir = tmp_path / "out"

    def interrupt_once_two_batches_are_written():
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline:
            for path in out_dir.glob("*/*.json"):
                try:
                    if len(json.loads(path.read_text())["points"]) >= 2:
                        time.sleep(0.5)  # into batch 4's endless forward
                        os.kill(os.getpid(), signal.SIGINT)
                        return
                except (ValueError, KeyError, OSError):
                    pass
            time.sleep(0.05)

    watcher = threading.Thread(target=interrupt_once_two_batches_are_written, daemon=True)
    watcher.start()
    code = sweep(tmp_path, misbehaving(target, "time.sleep(600)"), "--input-shape", "32")
    watcher.join(5)
    assert code == 130
    found, out = written(capsys)
    assert [(p["batch"], p["status"]) for p in found.doc["points"]] == [(1, "ok"), (2, "ok")]
    assert found.doc["run"]["interrupted"] == "KeyboardInterrupt: stopped"
    assert "kept 2 batch sizes, marked incomplete" in out.err and "Traceback" not in out.err
