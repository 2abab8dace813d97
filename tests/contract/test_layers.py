"""The layers: only benchmarks/measure/ (and the snippets it runs) may import torch."""

import ast
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
        "benchmarks.commands.serve",
        "benchmarks.commands.serve_llm",
        "benchmarks.site.sweep_table",
        "snippets.costs",
    ]
    assert "benchmarks.site.pages.mlp" in modules and "benchmarks.analysis.roofline.roofline_model" in modules
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
# commands → measure / analysis / site → contract → the registry (workloads, profiles, gpus) → snippets.
REGISTRY = {"workloads", "profiles", "gpus", "llm_models"}
ALLOWED = {
    "commands": {"measure", "analysis", "site", "contract", "registry", "snippets"},
    "measure": {"contract", "registry", "snippets"},
    "analysis": {"contract", "registry", "snippets"},
    "site": {"analysis", "contract", "registry", "snippets"},
    "contract": {"registry"},
    "registry": {"registry", "snippets"},
    "snippets": {"snippets"},
    "package": {"commands", "measure"},  # __main__ runs the command line; benchmarks.sweep() the sweep
}
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
    return parts[1]


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
