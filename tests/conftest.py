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


# The files that take longest on one worker of the full suite (seconds on 2 cores: 353, 223, 87, 174, 97, 81, 61,
# 50, 43, 39), started first so that no worker is left running one of them alone at the end. `nox -s tests-all`
# hands whole files to workers in collection order (--dist loadfile --no-loadscope-reorder).
LONG_FIRST = (
    "tests/end_to_end/test_quick_run.py",
    "tests/end_to_end/test_many_runs_build.py",
    "tests/site/test_property_splits.py",
    "tests/end_to_end/test_browser.py",
    "tests/end_to_end/test_layout.py",
    "tests/site/test_property_text.py",
    "tests/measure/test_sweep.py",
    "tests/site/test_page_faults.py",
    "tests/site/test_notebook_sections.py",
    "tests/contract/test_fuzz.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    root = Path(config.rootpath)
    items.sort(key=lambda item: rank.get(Path(item.path).relative_to(root).as_posix(), len(LONG_FIRST)))


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
