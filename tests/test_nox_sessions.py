"""The noxfile's list of Ray tests names exactly the test files marked `ray`: `nox -s tests-ray` collects only
those (its environment lacks the site's packages), so a new Ray test left off the list would never run."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def noxfile_ray_tests() -> set[str]:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "RAY_TESTS" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("noxfile.py defines no RAY_TESTS")


def test_the_ray_session_collects_every_file_marked_ray_and_no_other():
    marked = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if re.search(r"pytest\.mark\.ray\b", path.read_text())
    }
    assert marked, "no test is marked ray"
    assert noxfile_ray_tests() == marked
