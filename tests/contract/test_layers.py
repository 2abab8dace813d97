"""The layers: only benchmarks/measure/ (and the snippets it runs) may import torch; the folders import one way."""

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import benchmarks.analysis
import benchmarks.commands
import benchmarks.contract
import benchmarks.site

ROOT = Path(__file__).resolve().parents[2]


def _modules(package) -> list[str]:
    return [m.name for m in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.")]


# The parts of measure/ that the command line and the site read without measuring (all of commands/ is torch-free
# at import time: `run` and `sweep` import the measuring code after parsing).
MEASURE_WITHOUT_TORCH = ["stats", "sampler", "planning", "ceiling_plan", "estimate"]


def test_the_explaining_side_never_imports_torch():
    modules = [
        *_modules(benchmarks.analysis),
        *_modules(benchmarks.site),
        *_modules(benchmarks.contract),
        *_modules(benchmarks.commands),
        *(f"benchmarks.{name}" for name in sorted(REGISTRY)),
        *(f"benchmarks.measure.{name}" for name in MEASURE_WITHOUT_TORCH),
        "snippets.costs",
        "snippets.choose",
    ]
    assert "benchmarks.site.pages.mlp" in modules and "benchmarks.analysis.roofline.roofline_model" in modules
    assert {"benchmarks.analysis.serving.batcher.simulator", "benchmarks.analysis.published.calibration"} < set(modules)
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


# Folders and what each may import (besides itself, the standard library and third-party packages):
# commands → measure / analysis / site → contract → the registry (workloads, profiles, gpus, llm_models) → snippets.
# snippets/ is the lowest layer: each snippet runs on its own beside costs.py (`python snippets/mlp.py` falls back to
# `from costs import ...`), so the cost library stays in snippets/ rather than beside the registry.
REGISTRY = {"workloads", "profiles", "gpus", "llm_models"}
BELOW_ANALYSIS = {"contract", "registry", "snippets"}
# analysis/ holds three products over one core, each folder importing only downwards:
# roofline (the roofline core and each page's arithmetic) ← serving (arrivals; the dynamic batcher; the LLM engine)
# ← published (published figures checked against the roofline and the simulators, and the calibration fitted to them).
ANALYSIS = {
    "analysis": BELOW_ANALYSIS,
    "analysis.roofline": BELOW_ANALYSIS,
    "analysis.serving": BELOW_ANALYSIS,
    "analysis.serving.batcher": {"analysis.serving", "analysis.roofline", *BELOW_ANALYSIS},
    "analysis.serving.llm": {"analysis.serving", "analysis.roofline", *BELOW_ANALYSIS},
    "analysis.published": {"analysis.roofline", "analysis.serving.batcher", "analysis.serving.llm", *BELOW_ANALYSIS},
}
ALLOWED = {
    "commands": {"measure", *ANALYSIS, "site", "contract", "registry", "snippets"},
    "measure": {"contract", "registry", "snippets"},
    **ANALYSIS,
    "site": {*ANALYSIS, "contract", "registry", "snippets"},
    "contract": {"registry"},
    "registry": {"registry", "snippets"},
    "snippets": {"snippets"},
    "package": {"commands", "measure"},  # __main__ runs the command line; benchmarks.sweep() the sweep
}
# What the simulators take from the roofline core: the cost model, predictions and forecasts of a step (and the
# calibration committed for them), the cited launch cost, and, for a step read off a committed run, its curves and
# the decode page's arithmetic.
ROOFLINE_THE_SIMULATORS_USE = {
    "cost_model",
    "predict",
    "forecast",
    "calibration_file",
    "cited_figures",
    "curves",
    "decode",
}  # calibration_file: the forecast as committed
# Imports that still point the wrong way, each to be removed, never added to.
KNOWN_WRONG_WAY: set[tuple[str, str]] = set()


def _folder(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "snippets":
        return "snippets"
    if len(parts) == 1 or parts[1] in ("__init__", "__main__"):
        return "package"
    if parts[1] in REGISTRY:
        return "registry"
    if parts[1] == "analysis":  # the innermost package: analysis.roofline, analysis.serving.batcher, ...
        depth = 2
        while depth < len(parts) and _is_package(".".join(parts[: depth + 1])):
            depth += 1
        return ".".join(parts[1:depth])
    return parts[1]


def _is_package(dotted: str) -> bool:
    return (ROOT / dotted.replace(".", "/") / "__init__.py").is_file()


def _is_module(dotted: str) -> bool:
    path = ROOT / dotted.replace(".", "/")
    return path.with_suffix(".py").is_file() or path.is_dir()


def _resolved(package: str, name: str) -> str:
    """`from benchmarks import workloads` imports the module benchmarks.workloads."""
    return f"{package}.{name}" if _is_module(f"{package}.{name}") else package


def _imports() -> list[tuple[str, str, str]]:
    """(module, imported module, imported name) for every import of project code, lazy ones included."""
    found = []
    for path in sorted([*ROOT.glob("benchmarks/**/*.py"), *ROOT.glob("snippets/*.py")]):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.split(".")[0] in ("benchmarks", "snippets")
            ):
                found += [(module, _resolved(node.module, alias.name), alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                found += [
                    (module, a.name, "") for a in node.names if a.name.split(".")[0] in ("benchmarks", "snippets")
                ]
    return found


def test_dependencies_point_one_way():
    imports = _imports()
    assert len(imports) > 200
    wrong = {
        (module, target)
        for module, target, _ in imports
        if _folder(module) != _folder(target) and _folder(target) not in ALLOWED[_folder(module)]
    }
    assert wrong - KNOWN_WRONG_WAY == set(), f"imports against the layers: {sorted(wrong - KNOWN_WRONG_WAY)}"
    assert wrong >= KNOWN_WRONG_WAY, f"fixed, so remove from KNOWN_WRONG_WAY: {sorted(KNOWN_WRONG_WAY - wrong)}"


def test_every_analysis_module_sits_in_a_product_folder():
    flat = [m for m in _modules(benchmarks.analysis) if _folder(m) == "analysis"]
    assert flat == [], f"analysis modules outside roofline/, serving/ and published/: {flat}"
    assert {_folder(m) for m in _modules(benchmarks.analysis)} == set(ANALYSIS) - {"analysis"}


def test_the_simulators_take_only_the_named_parts_of_the_roofline_core():
    taken = {
        target.removeprefix("benchmarks.analysis.roofline.")
        for module, target, _ in _imports()
        if _folder(module).startswith("analysis.serving") and _folder(target) == "analysis.roofline"
    }
    assert taken, "the simulators rest on the roofline core's cost model"
    unnamed = sorted(taken - ROOFLINE_THE_SIMULATORS_USE)
    assert unnamed == [], f"the simulators import parts of the roofline core not named: {unnamed}"


def test_no_private_name_crosses_a_module_boundary():
    crossing = [
        f"{module} imports {target}.{name}"
        for module, target, name in imports_of_names()
        if name.startswith("_") and not name.startswith("__") and not _is_module(f"{target}.{name}")
    ]
    assert crossing == []


def imports_of_names():
    return [(m, t, n) for m, t, n in _imports() if n]


def test_no_import_cycle_between_modules():
    graph: dict[str, set[str]] = {}
    for module, target, name in _imports():
        for candidate in (f"{target}.{name}", target):  # `from package import module` imports the module
            if (ROOT / (candidate.replace(".", "/") + ".py")).is_file() or (
                ROOT / candidate.replace(".", "/")
            ).is_dir():
                graph.setdefault(module, set()).add(candidate)
                break
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                raise AssertionError(f"import cycle: {' → '.join([*path[path.index(nxt) :], nxt])}")
            if not state.get(nxt):
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if not state.get(start):
            visit(start, [start])


def test_a_class_name_found_by_grep_is_the_one_class_meant():
    defined: dict[str, list[str]] = {}
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    assert len(defined) > 100  # the walk found the package
    twice = {name: where for name, where in defined.items() if len(where) > 1}
    assert not twice, twice


def test_no_analysis_module_outgrows_one_job():
    lines = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for path in (ROOT / "benchmarks" / "analysis").rglob("*.py")
    }
    assert len(lines) > 30
    engine = {p: n for p, n in lines.items() if "/serving/llm/" in p}
    assert engine and max(engine.values()) <= 500, sorted(engine.items(), key=lambda item: -item[1])[:3]
    assert max(lines.values()) <= 600, sorted(lines.items(), key=lambda item: -item[1])[:3]
