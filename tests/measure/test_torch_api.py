"""No torch API newer than the GPU machine's torch (2.11) on the measuring path.

The scan finds every torch name benchmarks/measure/, snippets/ and examples/ use; each must be listed in
benchmarks/measure/torch_api.py with the release that introduced it, no later than TARGET. A new name
fails here until someone checks when torch introduced it.
"""

import ast
from pathlib import Path

from benchmarks.measure import torch_api

ROOT = Path(__file__).resolve().parents[2]
MEASURING_PATH = sorted(
    [*ROOT.glob("benchmarks/measure/*.py"), *ROOT.glob("snippets/*.py"), *ROOT.glob("examples/*.py")]
)


def _aliases(tree: ast.AST, found: set[str]) -> dict[str, str]:
    alias = {"torch": "torch"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for name in node.names:
                if name.name == "torch" or name.name.startswith("torch."):
                    alias[name.asname or "torch"] = name.name if name.asname else "torch"
                    found.add(name.name)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            for name in node.names:
                alias[name.asname or name.name] = f"{node.module}.{name.name}"
                found.add(f"{node.module}.{name.name}")
    return alias


def used_names(path: Path) -> set[str]:
    """torch names one file uses: imports, attribute chains (`self.cuda` and `cuda` are the backends'
    torch.cuda), and getattr(torch.X, "name")."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    alias = _aliases(tree, found)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts, base = [], node
            while isinstance(base, ast.Attribute):
                parts.append(base.attr)
                base = base.value
            parts.reverse()
            if not isinstance(base, ast.Name):
                continue
            if base.id == "self" and parts[0] == "cuda":
                head, parts = "torch.cuda", parts[1:]
            elif base.id == "cuda":
                head = "torch.cuda"
            elif base.id in alias:
                head = alias[base.id]
            else:
                continue
            found.add(".".join([head, *parts]))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            owner, attribute = [*node.args, None, None][:2]
            if (isinstance(attribute, ast.Constant) and isinstance(owner, ast.Attribute)
                    and isinstance(owner.value, ast.Name) and owner.value.id in alias):  # fmt: skip
                found.add(f"{alias[owner.value.id]}.{owner.attr}.{attribute.value}")
    return found


def test_the_scan_finds_what_it_should():
    names = used_names(ROOT / "benchmarks/measure/backends.py")
    assert {"torch.cuda.graph_pool_handle", "torch.cuda.CUDAGraph", "torch._C._cuda_endAllocateToPool"} <= names


def test_every_torch_name_on_the_measuring_path_is_listed_and_no_newer_than_the_gpu_machines_torch():
    used = set().union(*(used_names(path) for path in MEASURING_PATH))
    unlisted = sorted(used - set(torch_api.SINCE))
    assert not unlisted, f"add each with the torch release that introduced it: {unlisted}"
    newer = {name: since for name, since in torch_api.SINCE.items() if torch_api.version(since) > torch_api.TARGET}
    assert not newer


def test_every_listed_name_resolves_in_this_torch():
    assert torch_api.missing() == []
    assert not torch_api.resolve("torch.cuda.no_such_function") and not torch_api.resolve("torch.no_such_module.x")
