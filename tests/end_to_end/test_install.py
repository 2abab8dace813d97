"""`pip install .` builds and installs a working command, outside the checkout."""

import os
import subprocess
import venv

import pytest

from tests.end_to_end.test_quick_run import ROOT

pytestmark = pytest.mark.slow


def test_pip_install_gives_a_working_command(tmp_path):
    outside = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed copy, not the checkout
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True, system_site_packages=False)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-deps", str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
        env=outside,
    )
    run = tmp_path / "elsewhere"
    run.mkdir()
    listed = subprocess.run(
        [python, "-m", "benchmarks", "list"], cwd=run, capture_output=True, text=True, timeout=60, env=outside
    )
    assert listed.returncode == 0, listed.stderr
    assert "mlp" in listed.stdout and "Profile quick" in listed.stdout
    code = "import benchmarks.contract.results as r, snippets.costs; print(r.DEFAULT_RESULTS_DIR)"
    where = subprocess.run([python, "-c", code], cwd=run, capture_output=True, text=True, check=True, env=outside)
    assert where.stdout.strip() == str(run / "benchmarks-results")
    code = "import benchmarks, pathlib; top = pathlib.Path(benchmarks.__file__).parent; "
    code += "print(sorted(str(p.relative_to(top.parent)) for p in top.rglob('*.py')))"
    installed = subprocess.run([python, "-c", code], cwd=run, capture_output=True, text=True, check=True, env=outside)
    checkout = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "benchmarks").rglob("*.py"))
    assert installed.stdout.strip() == str(checkout)  # every package, the analysis folders' sub-packages too
    assert (
        "site-packages"
        in subprocess.run(
            [python, "-c", "import benchmarks; print(benchmarks.__file__)"],
            cwd=run,
            capture_output=True,
            text=True,
            env=outside,
        ).stdout
    )
