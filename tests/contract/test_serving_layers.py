"""Ray stays inside the real-server check's harness: nothing else imports it, at import time or when the site
or the comparison runs, and the comparison needs no torch."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_only_the_harness_imports_ray():
    code = (
        "import importlib, pkgutil, sys\n"
        "import benchmarks.analysis, benchmarks.site, benchmarks.contract, benchmarks.commands\n"
        "names = [m.name for p in (benchmarks.analysis, benchmarks.site, benchmarks.contract, benchmarks.commands)\n"
        "         for m in pkgutil.walk_packages(p.__path__, prefix=p.__name__ + '.')]\n"
        "names += ['benchmarks.measure.serving_check', 'benchmarks.measure.serving_client']\n"
        "for name in names: importlib.import_module(name)\n"
        "assert 'benchmarks.commands.serving_check' in names and 'benchmarks.site.pages.serving_check' in names\n"
        "print(sorted(k for k in ('ray', 'torch') if k in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_comparison_command_refuses_a_bad_file_in_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "serving-check", "schema_version": 1}')
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.commands.serving_check", "--compare", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {bad}: run: is required but missing")
