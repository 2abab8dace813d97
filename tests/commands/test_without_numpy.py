"""The measuring verbs need only torch and the standard library (a GPU host may have no numpy); `serve`,
whose simulators use numpy, says so in one line there."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WITHOUT_NUMPY = (
    "import runpy, sys; sys.modules['numpy'] = None; sys.argv = ['benchmarks', *sys.argv[1:]]; "
    "runpy.run_module('benchmarks', run_name='__main__')"
)


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_NUMPY, *argv], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.parametrize("argv", [["list"], ["run", "--help"], ["doctor", "--help"], ["sweep", "--help"],
                                  ["fleet", "--help"], ["predict", "--help"]])  # fmt: skip
def test_the_measuring_verbs_start_without_numpy(argv):
    done = _run(*argv)
    assert done.returncode == 0, done.stderr[-500:]


def test_serve_without_numpy_is_one_line_and_exit_2():
    done = _run("serve", "--help")
    assert done.returncode == 2 and done.stderr.strip() == "error: serve needs numpy: pip install numpy"
