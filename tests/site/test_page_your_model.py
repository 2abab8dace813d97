"""The "Your model" page, from SYNTHETIC sweeps: what it says, and that nothing from a file runs."""

from benchmarks.contract.results import ModelSweep
from benchmarks.site.pages import your_model
from tests.synthetic import PAYLOAD, hostile_sweep, make_sweep


def sweep_of(doc) -> ModelSweep:
    return ModelSweep(path=f"/synthetic/{doc['device']['slug']}/{doc['run']['id']}.json", doc=doc)


def test_each_sweep_shows_its_recommendation_charts_and_table():
    page = your_model.build([sweep_of(make_sweep())])
    text = page.html("sweeps")
    assert "SyntheticModel on Synthetic GPU" in text
    assert "Largest batch within the 3 ms p90 budget: batch 16" in text
    assert text.count('<figure class="bchart"') == 3 and "Every batch size measured" in text


def test_no_sweep_says_how_to_add_one():
    assert "No sweep is committed yet" in your_model.build([]).html("sweeps")


def test_the_examples_are_the_real_files():
    text = your_model.build([]).html("examples")
    assert "examples/resnet50_small.py" in text and "examples/decode_step.py" in text and "make_input" in text


def test_free_text_from_a_sweep_file_is_escaped():
    text = your_model.build([sweep_of(hostile_sweep(make_sweep()))]).html("sweeps")
    assert PAYLOAD not in text and "<img src=x" not in text and "<script>alert" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text


def test_a_cpu_sweep_has_no_memory_chart_and_says_why():
    doc = make_sweep()
    doc["device"]["kind"] = "cpu"
    text = your_model.build([sweep_of(doc)]).html("sweeps")
    assert text.count('<figure class="bchart"') == 2
    assert "the allocator&#x27;s peak per batch is known only on CUDA" in text
    assert "process peak" in text and "peak memory" not in text


def test_the_provenance_says_when_the_tree_had_uncommitted_changes_and_the_notes_are_shown():
    doc = make_sweep()
    doc["run"].update(git_commit="cd9b870bb8becc2fffa47cf4415022d36e0646f3", git_dirty=True)
    doc["model"]["notes"] = ["the model was in training mode: swept in eval mode, without gradients"]
    text = your_model.build([sweep_of(doc)]).html("sweeps")
    assert "from a tree with uncommitted changes on commit cd9b870" in text
    assert "Notes: the model was in training mode: swept in eval mode, without gradients." in text
    doc["run"]["git_dirty"] = False
    assert "at commit cd9b870, started" in your_model.build([sweep_of(doc)]).html("sweeps")


def test_a_smaller_batch_that_breaks_the_budget_is_named():
    doc = make_sweep(budget_ms=3.0)
    slow = next(p for p in doc["points"] if p["batch"] == 8)
    slow["percentile_s"] = slow["timing"]["max_s"] = 3.2e-3  # batch 16 meets the 3 ms budget, batch 8 does not
    slow["timing"]["samples_s"][-1] = 3.2e-3
    text = your_model.build([sweep_of(doc)]).html("sweeps")
    assert "Batch 8 breaks the budget (3.2 ms p90) although the larger batch 16 meets it" in text


def test_every_sweep_chart_names_its_cache_state_and_a_cpus_threads():
    gpu = make_sweep()
    cpu = make_sweep()
    cpu["device"] = {**cpu["device"], "kind": "cpu", "threads": 2}
    for doc, threads in ((gpu, None), (cpu, "2 threads")):
        page = your_model.build([sweep_of(doc)])
        figures = [part for part in page.sections["sweeps"] if hasattr(part, "spec")]
        assert len(figures) >= 2
        for figure in figures:
            first = figure.spec["title"]["subtitle"][0]
            assert "cache resident" in first
            assert (threads in first) if threads else "thread" not in first
