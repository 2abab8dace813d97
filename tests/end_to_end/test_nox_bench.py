"""`nox -s bench` from a virtual environment that holds torch and nox, with no package index reachable.

A GPU machine often has exactly that: torch in a venv or a conda env, no network. nox builds session
venvs from the base interpreter, which cannot see a venv's torch; the session must run in the Python
that runs nox instead, and install nothing.
"""

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE_INDEX = {
    "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
    "PIP_EXTRA_INDEX_URL": "",
    "PIP_FIND_LINKS": "",
    "PIP_NO_INDEX": "1",
    "PIP_CONFIG_FILE": os.devnull,
    "UV_OFFLINE": "1",
    "UV_INDEX_URL": "http://127.0.0.1:9/simple",
}


def venv_with_torch_and_nox(path: Path) -> Path:
    """A venv of the base interpreter that sees this interpreter's packages (torch, nox) through a .pth
    file: its torch is invisible to the base interpreter, as a venv's or conda env's torch is."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    python = path / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "host-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.mark.slow
def test_nox_bench_uses_the_venvs_torch_and_installs_nothing(tmp_path):
    python = venv_with_torch_and_nox(tmp_path / "gpu-host")
    base = subprocess.run(
        [sys._base_executable, "-c", "import importlib.util; print(importlib.util.find_spec('torch') is None)"],
        capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    assert base == "True", "the base interpreter has torch of its own: this test would prove nothing"
    envdir = tmp_path / "nox-envs"
    done = subprocess.run(
        [python, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "--envdir", str(envdir), "-s", "bench", "--",
         "--profile", "smoke", "--device", "cpu", "--threads", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, **UNREACHABLE_INDEX},
    )  # fmt: skip
    log = done.stdout + done.stderr
    assert done.returncode == 0, log
    assert f"using the torch of {python}; nothing is installed" in log
    assert "pip install" not in log and "Creating virtual environment" not in log
    assert not (envdir / "bench").exists()
    assert ", 0 failed, in " in log
