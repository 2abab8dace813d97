"""A notebook page's hidden cells (tagged hide-input: the reader sees their output, not their code) stay a few calls:
what they compute belongs in the page module under benchmarks/site/pages/, where it is tested."""

from pathlib import Path

import jupytext
import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(DOCS.glob("*.py"))
MAX_HIDDEN_LINES = 3


def hidden_cells(path: Path) -> list[tuple[int, list[str]]]:
    """Each hide-input code cell of the notebook at `path`: its position among the cells and its non-blank lines."""
    notebook = jupytext.read(path)
    return [
        (index, [line for line in cell.source.splitlines() if line.strip()])
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and "hide-input" in cell.metadata.get("tags", [])
    ]


def test_every_page_is_checked():
    assert len(PAGES) > 10 and all(hidden_cells(path) for path in PAGES)


@pytest.mark.parametrize("path", PAGES, ids=lambda path: path.stem)
def test_hidden_cells_are_at_most_three_lines(path):
    long = [
        f"docs/{path.name} cell {index} (first line {lines[0]!r}) has {len(lines)} non-blank lines"
        for index, lines in hidden_cells(path)
        if len(lines) > MAX_HIDDEN_LINES
    ]
    assert not long, f"more than {MAX_HIDDEN_LINES} lines in a hidden cell: " + "; ".join(long)
