"""The fleet's planning and landing, without Ray: which nodes run, and what lands."""

import argparse
import json
import socket
import sys
import time
import types
from pathlib import Path

import pytest

from benchmarks.commands import fleet
from benchmarks.commands.cli import main


def _entry(node_id, kind=None, gpus=1, alive=True, label=True):
    resources = {"CPU": 8.0, "node:127.0.0.1": 1.0}
    labels = {}
    if gpus:
        resources["GPU"] = float(gpus)
        if kind and label:
            labels[fleet.ACCELERATOR_LABEL] = kind
        elif kind:
            resources[f"{fleet.ACCELERATOR_RESOURCE}{kind}"] = 1.0
    return {"NodeID": node_id, "Alive": alive, "NodeManagerAddress": "127.0.0.1", "Resources": resources,
            "Labels": labels}  # fmt: skip


CLUSTER = [
    _entry("b2", "H100"),
    _entry("a1", "H100", label=False),  # an older Ray: the type as a resource only
    _entry("c3", "A100"),
    _entry("d4", gpus=0),
    _entry("e5", "L4", alive=False),
]


def test_kinds_come_from_labels_then_resources_and_dead_nodes_are_left_out():
    nodes = fleet.discover(CLUSTER)
    assert [(n.node_id, n.kind) for n in nodes] == [("c3", "A100"), ("d4", "CPU"), ("a1", "H100"), ("b2", "H100")]


def test_one_run_per_kind_by_default_per_node_when_asked_cpu_only_when_asked():
    nodes = fleet.discover(CLUSTER)
    assert [n.node_id for n in fleet.choose(nodes, "all", per_node=False, include_cpu=False)] == ["c3", "a1"]
    assert [n.node_id for n in fleet.choose(nodes, "all", per_node=True, include_cpu=False)] == ["c3", "a1", "b2"]
    assert [n.node_id for n in fleet.choose(nodes, "h100", per_node=False, include_cpu=True)] == ["d4", "a1"]
    with pytest.raises(fleet.FleetError, match="no node of kind l4"):
        fleet.choose(nodes, "H100,L4", per_node=False, include_cpu=False)


def test_the_dry_run_plan_says_what_runs_where():
    nodes = fleet.discover(CLUSTER)
    lines = fleet.plan_lines(nodes, fleet.choose(nodes, "all", False, False), "full", ["--only", "mlp"])
    assert lines[0] == "cluster: 4 alive node(s) of 3 kind(s)"
    assert "  CPU: 1 node(s) → 0 run(s): skipped (CPU-only)" in lines
    assert any(line.startswith("  H100: 2 node(s) → 1 run(s): H100 node a1") for line in lines)
    assert lines[-1].endswith("--profile full --only mlp (the node's own Python and torch)")


def _committed_file() -> Path:
    return sorted(Path("benchmarks/results").glob("*/*.json"))[-1]


def test_a_valid_file_lands_atomically_and_is_never_replaced(tmp_path):
    source = _committed_file()
    result = {"name": source.name, "slug": source.parent.name, "data": source.read_bytes()}
    landed = fleet.land(result, tmp_path)
    assert landed == tmp_path / source.parent.name / source.name
    assert json.loads(landed.read_text()) == json.loads(source.read_text())
    with pytest.raises(ValueError, match="exists already"):
        fleet.land(result, tmp_path)
    assert [p.name for p in landed.parent.iterdir()] == [source.name]  # no temporary left behind


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: {**r, "data": b"{not json"}, "run.json|JSON|json"),
        (lambda r: {**r, "slug": "another-device"}, "another-device|slug|folder"),
        (lambda r: {**r, "name": "../escape.json"}, "unusable file name"),
        (lambda r: None, "no results file"),
    ],
)
def test_a_bad_file_is_refused_in_one_line_and_nothing_lands(tmp_path, change, message):
    source = _committed_file()
    result = change({"name": source.name, "slug": source.parent.name, "data": source.read_bytes()})
    with pytest.raises(Exception, match=message) as found:
        fleet.land(result, tmp_path / "results")
    assert "\n" not in str(found.value)
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--time-limit", "0"], "--time-limit 0"),
        (["--accelerators", ","], "--accelerators"),
        (["--", "--results-dir", "x"], "--results-dir: give it to fleet itself"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(capsys, argv, message):
    assert main(["fleet", "--address", "127.0.0.1:1", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


def test_a_results_dir_that_is_a_file_is_refused_before_joining(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    args = argparse.Namespace(time_limit=None, accelerators="all", run_args=[], results_dir=blocker / "results")
    with pytest.raises(fleet.FleetError, match="not a writable directory"):
        fleet.check_options(args)


def test_the_progress_queue_lives_on_the_driver_node_so_a_lost_worker_loses_only_its_run():
    placed = {}

    class Stop(Exception):
        pass

    class FakeContext:
        def get_node_id(self):
            return "driver-node"

    class FakeRay:
        def get_runtime_context(self):
            return FakeContext()

    def fake_queue(actor_options):
        placed.update(actor_options)
        raise Stop

    def affinity(node_id, soft):
        return ("affinity", node_id, soft)

    with pytest.raises(Stop):
        fleet._collect(argparse.Namespace(), [], print, FakeRay(), fake_queue, affinity)
    assert placed == {"num_cpus": 0, "scheduling_strategy": ("affinity", "driver-node", False)}


@pytest.fixture
def fake_ray(monkeypatch):
    """A stand-in Ray whose init fails the test: fleet must refuse before it joins anything."""
    modules = {name: types.ModuleType(name) for name in ("ray", "ray.util", "ray.util.queue",
                                                          "ray.util.scheduling_strategies")}  # fmt: skip
    modules["ray"].init = lambda **kwargs: pytest.fail(f"ray.init({kwargs}) was called")
    modules["ray.util.queue"].Queue = object
    modules["ray.util.scheduling_strategies"].NodeAffinitySchedulingStrategy = object
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)


def test_an_address_where_nothing_listens_is_one_line_in_bounded_time(fake_ray, capsys, monkeypatch):
    dialled = []
    connect = socket.create_connection

    def recording(address, timeout=None):
        dialled.append(address)
        return connect(address, timeout=timeout)

    monkeypatch.setattr(socket, "create_connection", recording)
    began = time.perf_counter()
    assert main(["fleet", "--address", "127.0.0.1:1", "--dry-run"]) == 2
    assert time.perf_counter() - began < fleet.CONNECT_TIMEOUT_S + 2
    assert dialled == [("127.0.0.1", 1)]
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --address 127.0.0.1:1: nothing answers at 127.0.0.1:1 (") and "\n" not in err


def test_the_address_dialled_is_the_one_given():
    assert fleet.host_and_port("ray://head.example:10001") == ("head.example", 10001)
    assert fleet.host_and_port("[::1]:6379") == ("::1", 6379)
    assert fleet.host_and_port("auto") is None and fleet.host_and_port("10.0.0.1:99999") is None


def test_a_port_out_of_range_is_refused_before_ray_is_asked(fake_ray, capsys):
    assert fleet.reachability_problem("10.0.0.1:99999") == "port 99999 is outside 1 to 65535"
    assert fleet.reachability_problem("auto") is None
    assert main(["fleet", "--address", "ray://10.0.0.1:0", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --address ray://10.0.0.1:0: port 0 is outside 1 to 65535"
