"""The fleet on a local multi-node Ray cluster, no GPU needed: each node gets a stand-in accelerator type
(Ray's accelerator-type resource and a GPU count), runs the quick profile's MLP on this CPU under a time
limit, and returns its file.

Needs Ray (`nox -s tests-ray`); skipped where Ray is not installed.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from benchmarks.commands import fleet  # noqa: E402
from benchmarks.commands.cli import main  # noqa: E402
from benchmarks.contract.results import read_run  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]
# Ray rewrites 127.0.0.1 to the machine's own address; any other loopback address it keeps, so every node,
# port and the driver stay on the loopback range.
LOOPBACK = "127.0.0.2"
NODES = {"a1": "FAKE-A", "a2": "FAKE-A", "b1": "FAKE-B"}
RUN_ARGS = ["--", "--device", "cpu", "--only", "mlp", "--allow-contended", "--threads", "1"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


class LocalCluster:
    """Ray nodes on this machine's loopback, each a `ray start --block` in a process group of its own, so one
    node can be lost (its group killed) and every node is stopped afterwards by its own process id."""

    def __init__(self, temp: Path, env: dict[str, str]):
        self.temp, self.env, self.nodes = temp, env, {}
        self.port = _free_port()
        self.address = f"{LOOPBACK}:{self.port}"
        self.ray = str(Path(sys.executable).parent / "ray")

    def start(self, name: str, *args: str) -> None:
        where = ["--head", "--port", str(self.port), "--temp-dir", str(self.temp / "ray"), "--include-dashboard",
                 "false"] if not self.nodes else ["--address", self.address]  # fmt: skip
        command = [self.ray, "start", "--block", "--node-ip-address", LOOPBACK, "--disable-usage-stats", *where]
        log = open(self.temp / f"{name}.log", "w")  # noqa: SIM115 - closed with the node
        self.nodes[name] = (subprocess.Popen([*command, *args], env=self.env, stdout=log, stderr=log,
                                             start_new_session=True), log)  # fmt: skip

    def wait_for(self, count: int, timeout: float = 300) -> list[dict]:
        """The alive nodes, once there are `count` (ray.nodes() entries), asked from a short-lived driver."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                ray.init(address=self.address, _node_ip_address=LOOPBACK, logging_level="ERROR")
                alive = [n for n in ray.nodes() if n.get("Alive")]
            except ConnectionError:
                alive = []
            finally:
                ray.shutdown()
            if len(alive) >= count:
                return alive
            time.sleep(2)
        logs = "; ".join(f"{p.name}: {p.read_text()[-300:]!r}" for p in sorted(self.temp.glob("*.log")))
        raise TimeoutError(f"{count} Ray nodes did not come up in {timeout:g} s ({len(alive)} did); {logs}")

    def kill(self, name: str) -> None:
        process, log = self.nodes.pop(name)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
                process.wait(timeout=20)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()

    def stop(self) -> None:
        for name in [n for n in self.nodes if n != "head"] + (["head"] if "head" in self.nodes else []):
            self.kill(name)


@pytest.fixture
def cluster(monkeypatch):
    """A head without GPUs and three stand-in GPU nodes: two FAKE-A, one FAKE-B. Always stopped."""
    temp = Path(tempfile.mkdtemp(prefix="rayf-", dir="/tmp"))  # short: Ray's socket paths must stay short
    (temp / "ray").mkdir()
    env = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "RAY_TMPDIR": str(temp)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    local = LocalCluster(temp, dict(os.environ))
    try:
        local.start("head", "--num-cpus", "1", "--num-gpus", "0")
        local.wait_for(1)
        for count, (name, kind) in enumerate(NODES.items(), start=2):  # one at a time: a loaded GCS times out
            # a resource naming each node lets the test find its node id
            resources = json.dumps({f"{fleet.ACCELERATOR_RESOURCE}{kind}": 1, f"name-{name}": 1})
            local.start(name, "--num-cpus", "1", "--num-gpus", "1", "--resources", resources)
            local.wait_for(count)
        yield local
    finally:
        ray.shutdown()
        local.stop()
        shutil.rmtree(temp, ignore_errors=True)


def test_one_run_per_kind_lands_validated_and_a_lost_node_costs_only_its_own_run(cluster, tmp_path, capsys):
    local = cluster
    results = tmp_path / "results"
    argv = [
        "fleet",
        "--address",
        local.address,
        "--profile",
        "quick",
        "--time-limit",
        "90",  # three runs share two cores: 45 s left the planner about 20 s of curves each, too little to time one
        "--results-dir",
        str(results),
    ]

    assert main([*argv, "--dry-run", *RUN_ARGS]) == 0
    plan = capsys.readouterr().err
    assert "FAKE-A: 2 node(s) → 1 run(s)" in plan and "FAKE-B: 1 node(s) → 1 run(s)" in plan, plan
    assert "CPU: 1 node(s) → 0 run(s): skipped (CPU-only)" in plan

    ids = {name: n["NodeID"] for n in local.wait_for(4) for name in NODES if f"name-{name}" in n["Resources"]}
    lines: list[str] = []
    lost: list[str] = []

    def lose_a2_once_its_run_starts():  # its task, and the run under it, die with the node
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if any(ids["a2"][:8] in line and line.endswith(": started") for line in lines):
                local.kill("a2")
                lost.append("a2")
                return
            time.sleep(0.5)

    killer = threading.Thread(target=lose_a2_once_its_run_starts, daemon=True)
    killer.start()
    code = fleet.drive(fleet_args([*argv, "--per-node", *RUN_ARGS]), lines.append)
    killer.join(timeout=5)
    said = "\n".join(lines)

    assert lost == ["a2"], said
    assert code == fleet.FAILED_BASE + 1, said
    failed = [line for line in lines if "FAILED" in line]
    assert len(failed) == 1 and ids["a2"][:8] in failed[0], said
    landed = sorted(results.glob("*/*.json"))
    assert len(landed) == 2, said  # a1 (FAKE-A) and b1 (FAKE-B), each validated
    assert all(read_run(path).doc["run"]["profile"] == "quick" for path in landed)
    for name in ("a1", "b1"):
        assert any(ids[name][:8] in line and "finished, validated" in line for line in lines), said
    assert "fleet: 2 of 3 run(s) landed, 1 failed" in said


def fleet_args(argv):
    import argparse

    parser = argparse.ArgumentParser()
    fleet.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)
