import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.synthetic import make_run


@pytest.fixture(autouse=True, scope="session")
def private_device_locks(tmp_path_factory):
    """Runs started by the tests (and their subprocesses) lock devices among themselves only."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BATCHING_LOCK_DIR", str(tmp_path_factory.mktemp("locks")))
        yield


@pytest.fixture
def synthetic_doc():
    """A valid SYNTHETIC results document (labelled so; never published)."""
    return make_run()


@pytest.fixture
def write_doc(tmp_path):
    """Write a document (or raw text) to a results file under tmp_path and return its path: by
    default where a results directory keeps it, <device slug>/<run id>.json."""

    def write(content, name=None, slug=None) -> Path:
        document = content if isinstance(content, dict) else {}
        run, device = document.get("run"), document.get("device")
        run_id = run.get("id") if isinstance(run, dict) else None
        device_slug = device.get("slug") if isinstance(device, dict) else None
        name = name or (f"{run_id}.json" if isinstance(run_id, str) else "run.json")
        slug = slug or (device_slug if isinstance(device_slug, str) else "synthetic-gpu")
        path = tmp_path / slug / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    return write


def pytest_configure(config):
    """One directory for the sites the end-to-end tests build, shared by every test process of this run
    (tests/end_to_end/test_site_build.py `served_site`); pytest-xdist's workers inherit it."""
    if not hasattr(config, "workerinput") and "TESTS_SHARED_SITES" not in os.environ:
        config.shared_sites = tempfile.mkdtemp(prefix="batching-sites-")
        os.environ["TESTS_SHARED_SITES"] = config.shared_sites


def pytest_unconfigure(config):
    if getattr(config, "shared_sites", None):
        shutil.rmtree(config.shared_sites, ignore_errors=True)
        os.environ.pop("TESTS_SHARED_SITES", None)
