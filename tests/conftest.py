import json
from pathlib import Path

import pytest

from tests.synthetic import make_run


@pytest.fixture
def synthetic_doc():
    """A valid SYNTHETIC results document (labelled so; never published)."""
    return make_run()


@pytest.fixture
def write_doc(tmp_path):
    """Write a document (or raw text) to a results file under tmp_path and return its path."""

    def write(content, name="run.json", slug="synthetic-gpu") -> Path:
        path = tmp_path / slug / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    return write
