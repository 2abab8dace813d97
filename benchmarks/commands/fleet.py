"""`python -m benchmarks fleet`: run the benchmarks once per kind of GPU in a Ray cluster, bring every
results file home, validate it and land it under the results directory.

Each run is a Ray task holding one GPU on one node, pinned to that node; it runs `python -m benchmarks run`
with the node's own Python and torch (the checkout travels as Ray's working directory; nothing is
installed), watches its own results file for progress, and returns the file's bytes, since the nodes'
disks are not shared. The driver validates each file with the strict reader and writes it atomically;
a node that fails, disappears or runs past the time limit costs only its own run.

Ray is imported only once the arguments are parsed, so `--help` works without it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.contract.errors import UserError
from benchmarks.contract.inputs import RESULTS_LIMIT, read_bytes_bounded
from benchmarks.contract.results import DEFAULT_RESULTS_DIR, ResultsError, load_json, read_run, write_atomic
from benchmarks.profiles import PROFILES

ROOT = Path(__file__).resolve().parents[2]
ACCELERATOR_RESOURCE = "accelerator_type:"  # Ray's resource per GPU model, e.g. accelerator_type:H100
ACCELERATOR_LABEL = "ray.io/accelerator-type"
CPU_KIND = "CPU"
GRACE_S = 120.0  # beyond --time-limit: the node's own run ends itself; this covers start-up and the return
POLL_S = 2.0
FAILED_BASE = 10  # exit status 10 + the number of runs that failed
# What the working directory shipped to each node leaves out: results, site, caches, virtual environments
# (gitignore syntax: a leading / anchors a pattern at the checkout's root, so benchmarks/site/ still travels).
SHIP_EXCLUDES = ["/.git", "/.nox", "/.cache", "/site", "/benchmarks/results", "/benchmarks/sweeps",
                 "/benchmarks/serving", "__pycache__", "*.egg-info", "/.venv", "/venv", "node_modules"]  # fmt: skip


class FleetError(UserError):
    """A problem found before any run starts; the message is the one line the user sees (exit 2)."""


@dataclass(frozen=True)
class Node:
    node_id: str
    address: str
    kind: str  # the accelerator type, e.g. "H100", or "CPU" for a node without GPUs
    gpus: float
    cpus: float

    @property
    def short(self) -> str:
        return f"{self.kind} node {self.node_id[:8]} ({self.address})"


@dataclass
class Assignment:
    node: Node
    state: str = "waiting"
    points: int = 0
    landed: Path | None = None
    failure: str | None = None
    started: float = field(default_factory=time.monotonic)


def node_kind(entry: dict[str, Any]) -> str:
    """A node's accelerator kind from Ray's labels, then its accelerator-type resource; CPU when it has no GPU."""
    labels = entry.get("Labels") or {}
    if labels.get(ACCELERATOR_LABEL):
        return str(labels[ACCELERATOR_LABEL])
    resources = entry.get("Resources") or {}
    types = sorted(k[len(ACCELERATOR_RESOURCE) :] for k in resources if k.startswith(ACCELERATOR_RESOURCE))
    if types:
        return types[0]
    return "GPU (type unlabelled)" if resources.get("GPU", 0) > 0 else CPU_KIND


def discover(entries: Sequence[dict[str, Any]]) -> list[Node]:
    """Every alive node of a `ray.nodes()` listing, by kind."""
    found = []
    for entry in entries:
        if not entry.get("Alive"):
            continue
        resources = entry.get("Resources") or {}
        found.append(
            Node(
                node_id=str(entry["NodeID"]),
                address=str(entry.get("NodeManagerAddress", "?")),
                kind=node_kind(entry),
                gpus=float(resources.get("GPU", 0)),
                cpus=float(resources.get("CPU", 0)),
            )
        )
    return sorted(found, key=lambda n: (n.kind, n.node_id))


def choose(nodes: Sequence[Node], accelerators: str, per_node: bool, include_cpu: bool) -> list[Node]:
    """The nodes to run on: one per kind (the first by node id) or every node; CPU-only nodes only if asked."""
    wanted = None if accelerators == "all" else {a.strip().lower() for a in accelerators.split(",") if a.strip()}
    eligible = [
        n
        for n in nodes
        if (n.gpus >= 1 or (include_cpu and n.kind == CPU_KIND))
        and (wanted is None or n.kind.lower() in wanted or (n.kind == CPU_KIND and include_cpu))
    ]
    if wanted is not None:
        missing = wanted - {n.kind.lower() for n in nodes}
        if missing:
            kinds = ", ".join(sorted({n.kind for n in nodes})) or "none"
            raise FleetError(f"--accelerators: no node of kind {', '.join(sorted(missing))} (the cluster has: {kinds})")
    if per_node:
        return eligible
    first: dict[str, Node] = {}
    for node in eligible:
        first.setdefault(node.kind, node)
    return list(first.values())


def plan_lines(nodes: Sequence[Node], chosen: Sequence[Node], profile: str, run_args: Sequence[str]) -> list[str]:
    kinds: dict[str, list[Node]] = {}
    for node in nodes:
        kinds.setdefault(node.kind, []).append(node)
    lines = [f"cluster: {len(nodes)} alive node(s) of {len(kinds)} kind(s)"]
    for kind, members in kinds.items():
        runs = [n for n in chosen if n.kind == kind]
        where = "; ".join(n.short for n in runs) if runs else "skipped" + (" (CPU-only)" if kind == CPU_KIND else "")
        lines.append(f"  {kind}: {len(members)} node(s) → {len(runs)} run(s): {where}")
    extra = f" {' '.join(run_args)}" if run_args else ""
    lines.append(f"each run: python -m benchmarks run --profile {profile}{extra} (the node's own Python and torch)")
    return lines


def run_on_node(profile: str, time_limit: float | None, run_args: Sequence[str], progress=None) -> dict[str, Any]:
    """The task body, on the node: one `python -m benchmarks run` into a private directory; progress read from
    the results file it rewrites after every round; the file's bytes returned."""
    out = Path(tempfile.mkdtemp(prefix="batching-fleet-"))
    command = [sys.executable, "-m", "benchmarks", "run", "--profile", profile, "--results-dir", str(out)]
    if time_limit is not None:
        command += ["--time-limit", f"{time_limit:g}"]
    command += list(run_args)
    say = progress or (lambda state, points: None)
    say("started", 0)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=os.getcwd(),
                               preexec_fn=_die_with_parent)  # fmt: skip
    stderr: list[str] = []
    reader = threading.Thread(target=lambda: stderr.extend(process.stderr), daemon=True)
    reader.start()
    seen = ("started", 0)
    while process.poll() is None:
        time.sleep(POLL_S)
        now = _progress_of(out)
        if now and now != seen:
            seen = now
            say(*now)
    stdout = process.stdout.read() if process.stdout else ""
    reader.join(timeout=5)
    files = sorted(out.glob("*/*.json"))
    if process.returncode != 0 or not files:
        tail = " ".join(line.strip() for line in stderr[-3:] if line.strip())[:400]
        raise RuntimeError(f"`benchmarks run` exited {process.returncode}: {tail or stdout.strip()[-400:]}")
    path = files[-1]
    data = read_bytes_bounded(path, kind="results file", limit_bytes=RESULTS_LIMIT)
    return {"name": path.name, "slug": path.parent.name, "data": data}


def _die_with_parent() -> None:
    """In the child: a SIGTERM when the task's worker dies (a cancelled task, a lost node), so no run outlives it."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _progress_of(out: Path) -> tuple[str, int] | None:
    files = sorted(out.glob("*/*.json"))
    if not files:
        return None
    try:
        doc = load_json(files[-1])
    except ResultsError:
        return None
    points = len(doc.get("records") or [])
    return ("points", points) if points else ("ceilings done", 0)


def land(result: Any, results_dir: Path) -> Path:
    """Validate a returned file with the strict reader and write it under results_dir/<slug>/ atomically;
    an existing file is never replaced. Raises ResultsError or ValueError with one line."""
    if not isinstance(result, dict) or not all(k in result for k in ("name", "slug", "data")):
        raise ValueError("the node returned no results file")
    name, slug, data = str(result["name"]), str(result["slug"]), result["data"]
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.json", name) or not re.fullmatch(
        r"[a-z0-9][a-z0-9-]{0,80}", slug
    ):
        raise ValueError(f"the node returned an unusable file name {slug!r}/{name!r}")
    with tempfile.TemporaryDirectory(prefix="batching-fleet-check-") as check:
        staged = Path(check) / slug / name
        staged.parent.mkdir()
        staged.write_bytes(data)
        read_run(staged)  # schema, rules, and that the file sits in its device's folder
    target = results_dir / slug / name
    if target.exists():
        raise ValueError(f"{target} exists already; not replaced")
    write_atomic(target, json.loads(data))
    return target


def add_parser(commands) -> None:
    fleet = commands.add_parser(
        "fleet",
        help="run the profile on every kind of GPU in a Ray cluster and collect the results",
        description="Discover the GPU kinds of a Ray cluster (from Ray's accelerator-type labels and resources), run "
        "`python -m benchmarks run` once per kind (or once per node), each as a Ray task holding one GPU on the node's "
        "own Python and torch, and land every results file under the results directory after validating it. A node "
        "that fails, disappears or overruns costs only its own run. Exit status: 0 when every run landed, 2 for bad "
        f"input, {FAILED_BASE} + the number of failed runs otherwise.",
        epilog="Options after `--` go to each node's `benchmarks run`, e.g. `-- --only mlp decode`.",
    )
    fleet.add_argument(
        "--address", required=True, help="the Ray cluster, e.g. ray://head:10001 or 10.0.0.1:6379, or auto"
    )
    fleet.add_argument("--profile", choices=["auto", *PROFILES], default="auto",
                       help="what each node measures (default auto: full on a GPU, quick on a CPU)")  # fmt: skip
    fleet.add_argument("--accelerators", default="all", metavar="all|KIND,...",
                       help="the GPU kinds to run on, e.g. H100,A100 (default all)")  # fmt: skip
    fleet.add_argument("--per-node", action="store_true", help="one run on every chosen node instead of one per kind")
    fleet.add_argument(
        "--include-cpu", action="store_true", help="also run on nodes without a GPU (skipped by default)"
    )
    fleet.add_argument("--time-limit", type=float, metavar="SECONDS",
                       help="each node's run ends inside this; a node still running "
                       f"{GRACE_S:g} s later is given up")  # fmt: skip
    fleet.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR,
                       help=f"where files land, under <device>/ (default {DEFAULT_RESULTS_DIR})")  # fmt: skip
    fleet.add_argument("--dry-run", action="store_true", help="list what would run where, and stop")
    fleet.add_argument("run_args", nargs="*", metavar="-- RUN_OPTION", help="options passed to each node's run")


def check_options(args: argparse.Namespace) -> None:
    if args.time_limit is not None and not 0 < args.time_limit <= 7 * 24 * 3600:
        raise FleetError(f"--time-limit {args.time_limit:g}: give a number of seconds above 0")
    if not args.accelerators.strip() or (args.accelerators != "all" and not args.accelerators.strip(", ")):
        raise FleetError("--accelerators: give 'all' or kinds separated by commas, e.g. H100,A100")
    forbidden = {"--results-dir", "--profile", "--time-limit"} & {a.split("=")[0] for a in args.run_args}
    if forbidden:
        raise FleetError(f"{', '.join(sorted(forbidden))}: give it to fleet itself, not after --")
    target = args.results_dir
    existing = next((p for p in [target, *target.absolute().parents] if p.exists()), None)
    if existing is not None and (not existing.is_dir() or not os.access(existing, os.W_OK)):
        raise FleetError(f"--results-dir {target}: {existing} is not a writable directory")


def run(args: argparse.Namespace) -> int:
    check_options(args)  # a FleetError is main's one line
    try:
        import ray  # noqa: F401
    except ImportError:
        raise FleetError(
            "fleet needs Ray on this machine: `nox -s fleet -- …` installs it, or pip install ray"
        ) from None
    return drive(args)


def drive(args: argparse.Namespace, say: Callable[[str], None] | None = None) -> int:
    import ray
    from ray.util.queue import Queue
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    unreachable = reachability_problem(args.address)
    if unreachable:  # Ray itself would retry for ever
        raise FleetError(f"--address {args.address}: {unreachable}")
    local = {"_node_ip_address": _host(args.address)} if _on_loopback(args.address) else {}
    try:
        ray.init(
            address=args.address,
            runtime_env={"working_dir": str(ROOT), "excludes": SHIP_EXCLUDES},
            logging_level="ERROR",
            log_to_driver=False,
            **local,
        )
    except Exception as exc:
        why = f"--address {args.address}: cannot join the Ray cluster ({type(exc).__name__}: {exc})"
        raise FleetError(why[:393]) from None
    try:
        nodes = discover(ray.nodes())
        chosen = choose(nodes, args.accelerators, args.per_node, args.include_cpu)  # a FleetError: main's line
        for line in plan_lines(nodes, chosen, args.profile, args.run_args):
            say(line)
        if args.dry_run:
            return 0
        if not chosen:
            raise FleetError("no node to run on (no GPU node; --include-cpu runs on CPU-only nodes)")
        return _collect(args, chosen, say, ray, Queue, NodeAffinitySchedulingStrategy)
    finally:
        ray.shutdown()


CONNECT_TIMEOUT_S = 5.0


def _named_port(address: str) -> tuple[str, int | None]:
    """The host an --address names and its port, None where it gives no number after its last ':'."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    return host, int(port) if colon and port.isascii() and port.isdigit() else None


def host_and_port(address: str) -> tuple[str, int] | None:
    """The host and port an --address names ('ray://head:10001', '10.0.0.1:6379', '[::1]:6379'); None for
    'auto' or an address without a port, which Ray resolves itself."""
    host, port = _named_port(address)
    if not host or port is None or not 0 < port < 65536:
        return None
    return host.strip("[]"), port


def reachability_problem(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why nothing can be joined at `address`, dialling exactly the host and port it names within `timeout_s`;
    None when something answers there (or the address is Ray's to resolve)."""
    target = host_and_port(address)
    if target is None:
        port = _named_port(address)[1]
        return None if port is None or 0 < port < 65536 else f"port {port} is outside 1 to 65535"
    try:
        with socket.create_connection(target, timeout=timeout_s):
            return None
    except TimeoutError:
        return f"nothing answered at {target[0]}:{target[1]} within {timeout_s:g} s; is the cluster's head running?"
    except OSError as exc:
        return f"nothing answers at {target[0]}:{target[1]} ({exc.strerror or exc}); is the cluster's head running?"


def _host(address: str) -> str:
    return address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")


def _on_loopback(address: str) -> bool:
    """A cluster on this machine's loopback range (e.g. 127.0.0.2, which Ray does not rewrite to the machine's
    own address as it does 127.0.0.1): the driver joins it from the same loopback address."""
    host = _host(address)
    return host.startswith("127.") and not address.startswith("ray://")


def _collect(args, chosen, say, ray, Queue, NodeAffinity) -> int:
    # The progress queue is an actor: pinned to the driver's own node, so that losing a worker node loses only its run.
    here = NodeAffinity(node_id=ray.get_runtime_context().get_node_id(), soft=False)
    queue = Queue(actor_options={"num_cpus": 0, "scheduling_strategy": here})
    body = ray.remote(_task)
    assignments: dict[Any, Assignment] = {}
    for node in chosen:
        options = {
            "num_cpus": 1 if node.kind == CPU_KIND else 0,
            "num_gpus": 0 if node.kind == CPU_KIND else 1,
            "max_retries": 0,
            "scheduling_strategy": NodeAffinity(node_id=node.node_id, soft=False),
        }
        ref = body.options(**options).remote(node.node_id, args.profile, args.time_limit, args.run_args, queue)
        assignments[ref] = Assignment(node)
    deadline = None if args.time_limit is None else args.time_limit + GRACE_S
    pending = list(assignments)
    by_node = {a.node.node_id: a for a in assignments.values()}
    while pending:
        done, pending = ray.wait(pending, num_returns=1, timeout=POLL_S)
        _drain(queue, by_node, say)
        for ref in done:
            _finish(ref, assignments[ref], args.results_dir, say, ray)
        if deadline is not None:
            for ref in list(pending):
                found = assignments[ref]
                if time.monotonic() - found.started > deadline:
                    ray.cancel(ref, force=True)
                    found.failure = f"ran past the time limit ({args.time_limit:g} s + {GRACE_S:g} s); given up"
                    say(f"{found.node.short}: FAILED: {found.failure}")
                    pending.remove(ref)
    _drain(queue, by_node, say)
    failed = [a for a in assignments.values() if a.failure]
    say(f"fleet: {len(assignments) - len(failed)} of {len(assignments)} run(s) landed, {len(failed)} failed")
    for found in assignments.values():
        if found.landed:
            print(found.landed)
    return 0 if not failed else min(FAILED_BASE + len(failed), 125)


def _task(node_id: str, profile: str, time_limit, run_args, queue) -> dict[str, Any]:
    def progress(state: str, points: int) -> None:
        queue.put((node_id, state, points))

    return run_on_node(profile, time_limit, run_args, progress)


def _drain(queue, by_node: dict[str, Assignment], say) -> None:
    while not queue.empty():
        node_id, state, points = queue.get()
        found = by_node.get(node_id)
        if found is None or found.failure or found.landed:
            continue
        if (state, points) != (found.state, found.points):
            found.state, found.points = state, points
            say(f"{found.node.short}: {state}" + (f" {points}" if state == "points" else ""))


def _finish(ref, found: Assignment, results_dir: Path, say, ray) -> None:
    try:
        result = ray.get(ref)
    except Exception as exc:
        cause = getattr(exc, "cause", None) or exc
        reason = str(cause).strip().splitlines()
        why = reason[-1] if reason else type(cause).__name__
        found.failure = f"{type(cause).__name__}: {why}"[:300]
        say(f"{found.node.short}: FAILED: {found.failure}")
        return
    try:
        found.landed = land(result, results_dir)
    except (ResultsError, ValueError, OSError) as exc:
        found.failure = f"its results file was not landed: {exc}"[:300]
        say(f"{found.node.short}: FAILED: {found.failure}")
        return
    say(f"{found.node.short}: finished, validated → {found.landed}")
