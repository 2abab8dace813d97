"""Sessions: `nox -l` lists them. `nox -s bench docs` measures this machine and builds the site.

Measuring (`bench`) needs only torch; the site (`docs`, `serve`) never installs torch.
"""

from __future__ import annotations

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


def _has_torch(session: nox.Session) -> bool:
    found = session.run(
        "python",
        "-c",
        "import importlib.util; print(importlib.util.find_spec('torch') is not None)",
        silent=True,
    )
    return isinstance(found, str) and found.strip().endswith("True")


@nox.session(venv_params=["--system-site-packages"], default=False)
def bench(session: nox.Session) -> None:
    """Measure this machine (its GPU when one is visible) into benchmarks/results/<device>/.

    Reuses the interpreter's torch when it has one, so a GPU machine's CUDA build is never
    downloaded again; otherwise installs the pinned CPU-friendly torch. Arguments after `--`
    go to `python -m benchmarks run`, e.g. `nox -s bench -- --profile quick --device cpu`.
    """
    if _has_torch(session):
        session.log("using the torch already installed for this interpreter")
    else:
        session.install(*group("bench"))
    session.run("python", "-m", "benchmarks", "run", *session.posargs)


@nox.session(venv_params=["--system-site-packages"], default=False)
def sweep(session: nox.Session) -> None:
    """Sweep your own model over batch sizes and get a recommended batch size, with an HTML report.

    `nox -s sweep -- TARGET [options]`, e.g. `nox -s sweep -- examples/resnet50_small.py:factory
    --budget-ms 100 --report report.html`; `python -m benchmarks sweep --help` lists the options.
    Reuses the interpreter's torch when it has one, like `bench`.
    """
    if _has_torch(session):
        session.log("using the torch already installed for this interpreter")
    else:
        session.install(*group("bench"))
    session.install(*group("report"))
    session.run("python", "-m", "benchmarks", "sweep", *session.posargs)


FAST = "not slow and not build and not browser"


@nox.session
def tests(session: nox.Session) -> None:
    """The fast loop (a few minutes): every test but the real quick profile, the site build and the browser.

    Arguments go to pytest, e.g. `nox -s tests -- tests/site -x`.
    """
    session.install(*group("test"))
    session.run("pytest", "-m", FAST, *session.posargs)


@nox.session(name="tests-all")
def tests_all(session: nox.Session) -> None:
    """Everything CI runs: the fast loop plus a real quick-profile run, the strict site build and the browser
    checks (Debian's Chromium). Arguments go to pytest."""
    session.install(*group("test"))
    session.env.setdefault("BATCHING_FUZZ_CASES", "1000")  # the fast loop tries 120 mutated results files
    session.run("pytest", *session.posargs)


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
