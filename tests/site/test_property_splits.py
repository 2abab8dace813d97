"""Property: a set of results files that validates always builds, whatever runs its workloads came from.

For every subset S of the workloads, two devices each have two runs in two dtypes: on device A an older run
holds the workloads outside S and a newer one holds S; on device B the reverse. Every page's build step then
runs (a page module's `build`, the step each docs page calls), with chart exports staged, so that a chart id
used twice on a page fails as it would in the site build. An empty side of a split is a run that measured
nothing, which must not hide the other.

The documents are the newest committed run's records, relabelled: SYNTHETIC test fixtures (never published).
Its float32 records are copied as bfloat16 (times scaled) for the second dtype.

Speed: a page whose every data access goes through its own workloads is built once per distinct restriction
of S to those workloads (the mlp page: twice, with and without mlp); the pages that read whole runs (home,
devices, reproduce, guide) are built for 8 subsets in the fast loop and for all 64 in the full suite (slow).
"""

from __future__ import annotations

import copy
import itertools
import json
import time

import pytest

from benchmarks.contract.results import DEFAULT_RESULTS_DIR, Run, newest_complete_runs
from benchmarks.contract.schema import MAX_BANDWIDTH, MAX_FLOP_RATE, MIN_BANDWIDTH, MIN_FLOP_RATE
from benchmarks.contract.validate import validate_document
from benchmarks.site.data import SiteData
from benchmarks.site.pages import (
    calculator,
    cnn,
    decode,
    devices,
    guide,
    home,
    mlp,
    moe,
    regimes,
    reproduce,
    steps,
    theory,
)
from benchmarks.workloads import WORKLOADS

# encoder: predicted and served, not yet measured in a committed run nor drawn on a page; the training steps: drawn on
# the training page only, from a run of their own
NOT_ON_A_PAGE = ("encoder", "train-mlp", "train-decoder")
ALL = tuple(name for name in WORKLOADS if name not in NOT_ON_A_PAGE)
SUBSETS = [frozenset(c) for n in range(len(ALL) + 1) for c in itertools.combinations(ALL, n)]
# page -> the workloads its data comes from (None: whole runs, so every subset is built)
PAGES = {
    home: None,
    devices: None,
    reproduce: None,
    guide: None,
    theory: ("mlp",),
    mlp: ("mlp",),
    regimes: ("mlp",),
    calculator: ("mlp",),
    steps: ("linear",),
    moe: ("moe",),
    cnn: ("conv", "resnet50"),
    decode: ("decode",),
}


def _base() -> dict:
    files = sorted(DEFAULT_RESULTS_DIR.rglob("*.json"), key=lambda p: p.name, reverse=True)
    docs = (json.loads(path.read_text(encoding="utf-8")) for path in files)
    doc = next((d for d in docs if {r["workload"] for r in d["records"]} >= set(ALL)), None)
    assert doc is not None, "a committed run should hold every workload a page draws"
    doc["records"] = [r for r in doc["records"] if r["workload"] in ALL]
    curves: dict[str, list[dict]] = {}
    for record in doc["records"]:  # at most 5 batches per curve (first, last and between): faster pages
        key = json.dumps([record[k] for k in ("workload", "params", "dtype", "mode", "cache")], sort_keys=True)
        curves.setdefault(key, []).append(record)
    doc["records"] = [r for found in curves.values() for r in _thin(sorted(found, key=lambda r: r["batch"]))]
    return doc


def _thin(records: list[dict]) -> list[dict]:
    if len(records) <= 5:
        return records
    picks = sorted({round(i * (len(records) - 1) / 4) for i in range(5)})
    return [records[i] for i in picks]


BASE = _base()


def _two_dtypes(doc: dict) -> dict:
    """The float32 records, plus a bfloat16 copy of each (SYNTHETIC: times scaled, bytes halved)."""
    extra = []
    for record in doc["records"]:
        if record["dtype"] != "float32":
            continue
        twin = copy.deepcopy(record)
        twin["dtype"] = "bfloat16"
        twin["bytes"] = record["bytes"] / 2
        if "bytes_split" in twin:
            twin["bytes_split"] = {key: value / 2 for key, value in twin["bytes_split"].items()}
        if twin.get("timing"):
            for key, value in list(twin["timing"].items()):
                if key.endswith("_s"):
                    twin["timing"][key] = [v * 0.8 for v in value] if isinstance(value, list) else value * 0.8
            twin["median_s"] = twin["timing"]["median_s"]
        extra.append(twin)
    doc["records"] += extra
    matmul = doc["ceilings"]["matmul"]
    matmul.setdefault("bfloat16", {**matmul["float32"], "flops_per_s": matmul["float32"]["flops_per_s"] * 1.25})
    return doc


def _device(name: str, slug: str) -> dict:
    doc = _two_dtypes(copy.deepcopy(BASE))
    doc["device"].update(name=f"{name} (test fixture, not a measurement)", slug=slug)
    doc["run"]["synthetic"] = True
    return doc


DEVICES = {"a": _device("Fixture CPU A", "fixture-cpu-a"), "b": _device("Fixture CPU B", "fixture-cpu-b")}


def _run(device: dict, workloads: frozenset, newer: bool) -> Run:
    doc = {**device, "run": copy.deepcopy(device["run"])}
    stamp = "20270102T000000Z" if newer else "20270101T000000Z"
    doc["run"].update(
        id=f"{stamp}-quick-{'b' if newer else 'a'}{len(workloads)}",
        started_at=f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T00:00:00+00:00",
        finished_at=f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T00:01:00+00:00",
        workloads_done=sorted(workloads),
        workloads_planned=sorted(workloads),
    )
    doc["records"] = [r for r in device["records"] if r["workload"] in workloads]
    return Run(path=DEFAULT_RESULTS_DIR / doc["device"]["slug"] / f"{doc['run']['id']}.json", doc=doc)


def split_data(subset: frozenset) -> SiteData:
    rest = frozenset(ALL) - subset
    runs = [
        _run(DEVICES["a"], rest, newer=False),
        _run(DEVICES["a"], subset, newer=True),
        _run(DEVICES["b"], subset, newer=False),
        _run(DEVICES["b"], rest, newer=True),
    ]
    newest = newest_complete_runs(runs, include_synthetic=True)
    shown = sorted(newest.values(), key=lambda r: (r.device["kind"] != "cuda", r.device["name"]))
    return SiteData(runs=runs, shown=shown)


def _cases(whole_runs: list[frozenset]) -> list[tuple[object, frozenset]]:
    """(page, subset) pairs: a page reading its own workloads once per restriction of the subsets to them; a
    page reading whole runs for each of `whole_runs`."""
    cases = []
    for page, reads in PAGES.items():
        seen = set()
        for subset in SUBSETS if reads is not None else whole_runs:
            key = subset if reads is None else subset & frozenset(reads)
            if key not in seen:
                seen.add(key)
                cases.append((page, subset))
    return cases


def _build(cases, tmp_path, monkeypatch) -> None:
    started = time.perf_counter()
    spent: dict[str, float] = {}
    for number, (page, subset) in enumerate(cases):
        began = time.perf_counter()
        monkeypatch.setenv("BATCHING_CHART_DIR", str(tmp_path / str(number)))  # a chart id twice: ValueError
        data = split_data(subset)
        try:
            html = page.build(data).text()
        except Exception as exc:  # name the case that broke
            raise AssertionError(f"{page.__name__} with {sorted(subset)} newer on device A: {exc!r}") from exc
        assert html, page.__name__
        name = page.__name__.rsplit(".", 1)[-1]
        spent[name] = spent.get(name, 0.0) + time.perf_counter() - began
    seconds = {k: round(v, 1) for k, v in spent.items()}
    print(f"{len(cases)} page builds in {time.perf_counter() - started:.1f} s: {seconds}")


# The fast loop: every restriction for the pages of some workloads, and for the whole-run pages the
# subsets of none, all and each single workload; CI's full suite: all 64 subsets for those too.
SOME = [frozenset(), frozenset(ALL), *(frozenset([w]) for w in ALL)]


@pytest.mark.slow
def test_every_page_builds_for_every_split_of_its_workloads(tmp_path, monkeypatch):
    _build(_cases(SOME), tmp_path, monkeypatch)


@pytest.mark.slow
def test_whole_run_pages_build_for_all_64_splits(tmp_path, monkeypatch):
    assert len(SUBSETS) == 64
    _build([(page, subset) for page, subset in _cases(SUBSETS) if PAGES[page] is None], tmp_path, monkeypatch)


@pytest.mark.parametrize("subset", [frozenset(), frozenset(ALL)], ids=["none", "all"])
def test_an_empty_side_never_hides_the_other(subset):
    """A run that measured nothing is not the device's shown run while another run measured something."""
    data = split_data(subset)
    for run in data.shown:
        assert run.workloads_measured == set(ALL), (run.device["slug"], run.id)


def test_the_schema_bounds_ceilings_to_physical_ranges():
    """1e-300 FLOP/s (which crashed the CNN page) and 1e21 B/s are refused, naming the field."""
    for where, value in ((("matmul", "float32", "flops_per_s"), 1e-300), (("copy", "bytes_per_s"), 1e21)):
        doc = copy.deepcopy(_run(DEVICES["a"], frozenset(ALL), newer=True).doc)
        target = doc["ceilings"]
        for key in where[:-1]:
            target = target[key]
        target[where[-1]] = value
        problems = validate_document(doc)
        assert problems and problems[0][0] == "ceilings." + ".".join(where), problems[:2]


CORNERS = [  # the two extreme ridges in the fast loop; the other two corners in the full suite
    pytest.param(MAX_FLOP_RATE, MIN_BANDWIDTH, id="highest-ridge"),
    pytest.param(MIN_FLOP_RATE, MAX_BANDWIDTH, id="lowest-ridge"),
    pytest.param(MIN_FLOP_RATE, MIN_BANDWIDTH, id="slowest", marks=pytest.mark.slow),
    pytest.param(MAX_FLOP_RATE, MAX_BANDWIDTH, id="fastest", marks=pytest.mark.slow),
]


@pytest.mark.slow
@pytest.mark.parametrize(("flops", "bandwidth"), CORNERS)
def test_ceilings_at_the_schemas_bounds_build_every_page(tmp_path, monkeypatch, flops, bandwidth):
    run = _run(DEVICES["a"], frozenset(ALL), newer=True)
    doc = copy.deepcopy(run.doc)
    doc["ceilings"]["copy"]["bytes_per_s"] = bandwidth
    for entry in doc["ceilings"]["matmul"].values():
        entry["flops_per_s"] = flops
    assert not validate_document(doc)
    run = Run(path=run.path, doc=doc)
    for number, page in enumerate(PAGES):
        monkeypatch.setenv("BATCHING_CHART_DIR", str(tmp_path / str(number)))
        assert page.build(SiteData(runs=[run], shown=[run])).text(), page.__name__
