"""The fleet on a local multi-node Ray cluster, no GPU needed: each node gets a stand-in accelerator type
(Ray's accelerator-type resource and a GPU count), runs the smoke profile on this CPU, and returns its file.

Needs Ray (`nox -s tests-ray`); skipped where Ray is not installed.
"""

import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

from benchmarks.commands import fleet  # noqa: E402
from benchmarks.commands.cli import main  # noqa: E402
from benchmarks.contract.results import read_run  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]
RUN_ARGS = ["--", "--device", "cpu", "--only", "mlp", "--allow-contended", "--threads", "1"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def cluster(tmp_path_factory, monkeypatch):
    """A head without GPUs and three stand-in GPU nodes: two FAKE-A, one FAKE-B. Always shut down."""
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    temp = Path(tempfile.mkdtemp(prefix="rayf-", dir="/tmp"))  # short: Ray's socket paths must stay short
    (temp / "ray").mkdir()
    monkeypatch.setenv("RAY_TMPDIR", str(temp))  # Ray's own files, the current-cluster note included
    local = cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "gcs_server_port": _free_port(),
            "node_ip_address": "127.0.0.1",
            "include_dashboard": False,
            "temp_dir": str(temp / "ray"),
        },
    )
    try:
        nodes = {
            name: local.add_node(
                num_cpus=1,
                num_gpus=1,
                node_ip_address="127.0.0.1",
                resources={f"{fleet.ACCELERATOR_RESOURCE}{kind}": 1},
            )
            for name, kind in (("a1", "FAKE-A"), ("a2", "FAKE-A"), ("b1", "FAKE-B"))
        }
        local.wait_for_nodes()
        yield local, nodes
    finally:
        ray.shutdown()
        local.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def test_one_run_per_kind_lands_validated_and_a_lost_node_costs_only_its_own_run(cluster, tmp_path, capsys):
    local, nodes = cluster
    results = tmp_path / "results"
    argv = ["fleet", "--address", local.address, "--profile", "smoke", "--per-node", "--results-dir", str(results)]

    assert main([*argv, "--dry-run", *RUN_ARGS]) == 0
    plan = capsys.readouterr().err
    assert "FAKE-A: 2 node(s) → 2 run(s)" in plan and "FAKE-B: 1 node(s) → 1 run(s)" in plan
    assert "CPU: 1 node(s) → 0 run(s): skipped (CPU-only)" in plan

    victim = nodes["a2"]
    killed_id = victim.unique_id

    def kill_when_it_starts():  # remove node a2 once its run has started: its task dies with it
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if f"node {killed_id[:8]}" in progress_seen[0]:
                local.remove_node(victim, allow_graceful=False)
                return
            time.sleep(0.5)

    progress_seen = [""]
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        progress_seen[0] += line + "\n"

    killer = threading.Thread(target=kill_when_it_starts, daemon=True)
    killer.start()
    args = fleet_args(argv + RUN_ARGS)
    code = fleet.drive(args, say)
    killer.join(timeout=5)
    said = "\n".join(lines)

    assert code == fleet.FAILED_BASE + 1, said
    failed = [line for line in lines if "FAILED" in line]
    assert len(failed) == 1 and killed_id[:8] in failed[0], said
    landed = sorted(results.glob("*/*.json"))
    assert len(landed) == 2, said
    for path in landed:
        assert read_run(path).doc["run"]["profile"] == "smoke"
    assert "fleet: 2 of 3 run(s) landed, 1 failed" in said
    assert any("started" in line for line in lines) and any("finished, validated" in line for line in lines)


def fleet_args(argv):
    import argparse

    parser = argparse.ArgumentParser()
    fleet.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)
