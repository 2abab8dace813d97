"""The layers: only benchmarks/measure/ (and the snippets it runs) may import torch."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import benchmarks.analysis
import benchmarks.site

ROOT = Path(__file__).resolve().parents[2]


def _modules(package) -> list[str]:
    return [m.name for m in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.")]


def test_the_explaining_side_never_imports_torch():
    modules = [
        *_modules(benchmarks.analysis),
        *_modules(benchmarks.site),
        "benchmarks.commands.cli",
        "benchmarks.profiles",
        "benchmarks.contract.results",
        "benchmarks.contract.schema",
        "benchmarks.measure.stats",
        "benchmarks.commands.summary",
        "benchmarks.workloads",
        "benchmarks.measure.sampler",
        "benchmarks.measure.planning",
        "benchmarks.measure.ceiling_plan",
        "benchmarks.measure.estimate",
        "benchmarks.contract.schema_sweep",
        "benchmarks.commands.sweep",
        "benchmarks.commands.predict",
        "benchmarks.site.sweep_table",
        "snippets.costs",
    ]
    assert "benchmarks.site.pages.mlp" in modules and "benchmarks.analysis.roofline" in modules
    code = f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\nprint('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_analysis_never_plots():
    code = (
        "import importlib, pkgutil, sys, benchmarks.analysis as a\n"
        "for m in pkgutil.walk_packages(a.__path__, prefix='benchmarks.analysis.'): importlib.import_module(m.name)\n"
        "print(sorted(k for k in ('altair', 'vl_convert', 'IPython') if k in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
