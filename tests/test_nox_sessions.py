"""The noxfile's lists of Ray and engine tests name exactly the test files marked `ray` and `engine`: `nox -s
tests-ray` and `nox -s tests-engine` collect only those (their environments lack the site's packages), so a new such
test left off its list would never run."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def noxfile_list(name: str = "RAY_TESTS") -> set[str]:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"noxfile.py defines no {name}")


def marked(mark: str) -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if re.search(rf"pytest\.mark\.{mark}\b", path.read_text())
    }


def test_the_ray_session_collects_every_file_marked_ray_and_no_other():
    assert marked("ray"), "no test is marked ray"
    assert noxfile_list("RAY_TESTS") == marked("ray")


def test_the_engine_session_collects_every_file_marked_engine_and_no_other():
    assert marked("engine"), "no test is marked engine"
    assert noxfile_list("ENGINE_TESTS") == marked("engine")


def test_ci_runs_the_ray_and_engine_sessions():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "tests-ray" in ci and "tests-engine" in ci
