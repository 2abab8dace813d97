"""README's first screen says what is measured and what is predicted; the claim must match the committed results."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_offers_both_paths_and_says_truly_what_is_measured_today():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_screen = readme[: readme.index("## The site")]
    assert "nox -s docs" in first_screen and "nox -s bench docs" in first_screen
    kinds = {
        json.loads(p.read_text(encoding="utf-8"))["device"]["kind"]
        for p in (ROOT / "benchmarks" / "results").rglob("*.json")
    }
    assert ("Every committed run is from a CPU" in first_screen) == (kinds == {"cpu"}), kinds
