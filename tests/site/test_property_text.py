"""Property: every string field of a results or sweep file reaches a page as text, never as markup or math.

Each free-form string field (one the reader accepts any text in: found by putting text in every string field
of the document, one at a time, and validating) gets, all at once, a payload of formula delimiters ($, a lone
$$, a $$ pair around LaTeX), backslashes, LaTeX commands (\\href{javascript:...}, \\text{<img ...>}) and markup.
Every page's build step then runs, and its HTML goes through the site hook's formula rendering, beside the
formulas of the page's own source. On every page: no '$' from data is left as a '$' (so nothing from data opens
or closes a formula, and nothing pairs with an authored one), no MathML is made from data, the authored
formulas render exactly, and nothing would run in a browser.

Documents: the newest committed run, thinned, and a synthetic sweep, relabelled as SYNTHETIC test fixtures.
The sweep pages are "Your model" (and, in the full suite, the serving page). The fast loop fuzzes with three
payloads (a lone $$, \\text{<img>} between $$, \\href{javascript:}); the full suite with all nine.
"""

from __future__ import annotations

import copy
import importlib.util
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from benchmarks.contract.results import ModelSweep
from benchmarks.contract.validate import validate_document
from benchmarks.site.pages import (
    calculator,
    cnn,
    decode,
    devices,
    guide,
    home,
    mlp,
    moe,
    regimes,
    reproduce,
    serving,
    steps,
    theory,
    your_model,
)
from tests.site.test_property_splits import DEVICES, SiteData, _run
from tests.synthetic import make_sweep

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("site_hook", ROOT / "docs" / "hooks" / "site.py")
hook = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hook)

PAYLOADS = [  # at most 40 characters each: the shortest limit of a free-text field (a cache level's type)
    "$",
    "EPYC $$ 5",
    "$$\\text{<img/src=x/onerror=alert(1)>}$$",
    "$$\\href{javascript:alert(1)}{click}$$",
    "\\href{javascript:alert(2)}{x} \\(a\\) \\\\",
    "\\[b\\] \\frac{1}{2} $x$ $$y$$ $$",
    "<img src=x onerror=alert(3)>",
    "<script>alert(4)</script> *e* _u_ `c`",
    "[l](javascript:alert(5)) \\begin{x} &amp;",
]
PAGES = {  # the page module -> its notebook under docs/
    home: "index.py",
    theory: "theory.py",
    mlp: "mlp.py",
    regimes: "regimes.py",
    steps: "steps.py",
    moe: "moe.py",
    cnn: "cnn.py",
    decode: "decode.py",
    calculator: "calculator.py",
    devices: "devices.py",
    reproduce: "reproduce.py",
    guide: "guide.py",
}


def _strings(node, path=()):
    if isinstance(node, str):
        yield path
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, (*path, index))


def _pattern(path: tuple) -> tuple:
    return tuple("*" if isinstance(key, int) else key for key in path)


def _set(doc, pattern, value):
    """Set every string at `pattern` ('*' for any list index) to `value`."""
    head, rest = pattern[0], pattern[1:]
    keys = range(len(doc)) if head == "*" else [head]
    for key in keys:
        if not rest:
            if isinstance(doc[key], str):
                doc[key] = value
        elif isinstance(doc[key], (dict, list)) and (isinstance(doc[key], list) or rest[0] in doc[key]):
            _set(doc[key], rest, value)


def free_text_fields(doc: dict) -> list[tuple]:
    """The string fields (as patterns: any list index) in which the reader accepts any text, tried one field
    at a time on a copy of `doc` holding one record or point of each kind, then applied to every one."""
    sample = copy.deepcopy(doc)
    for name in ("records", "points"):
        if name in sample:
            kinds = {}
            for item in sample[name]:
                kinds.setdefault((item.get("workload"), item["status"], tuple(sorted(item))), item)
            sample[name] = list(kinds.values())
    found = []
    for pattern in dict.fromkeys(_pattern(path) for path in _strings(sample)):
        trial = copy.deepcopy(sample)
        _set(trial, pattern, "free $$ text")
        if not validate_document(trial):
            found.append(pattern)
    return found


def _run_doc() -> dict:
    run = _run(DEVICES["a"], frozenset(DEVICES["a"]["run"]["workloads_done"]), newer=True)
    doc = copy.deepcopy(run.doc)
    doc["records"] = [r for r in doc["records"] if r["dtype"] == "float32"]  # one dtype: fewer charts, faster
    doc["records"][0].update(status="error", message="failed (fixture)", median_s=None, timing=None)
    doc["device"].update(driver="driver (fixture)", cuda="cuda (fixture)")  # null on a CPU: text here
    doc["run"].update(fitted_to_time="fitted (fixture)", time_limit_s=600)
    linear = [r for r in doc["records"] if r["workload"] == "linear" and r["status"] == "ok"]
    linear[0]["kernels"] = ["kernel (fixture)"]
    linear[-1]["kernels_error"] = "no names (fixture)"
    curves = doc["ceilings"]["curves"]  # a ceiling point that failed says why
    curves["matmul"].append({"dtype": "float32", "n": 4096, "status": "error", "message": "failed (fixture)"})
    oom = {"kind": "read", "working_set_bytes": 2**31, "status": "oom", "message": "oom (fixture)"}
    curves["bandwidth"].append(oom)
    return doc


def _sweep_doc() -> dict:
    doc = make_sweep()
    doc["model"]["notes"] = ["a note (fixture)"]
    doc["run"].update(complete=False, interrupted="stopped (fixture)")
    doc["points"].append({"batch": 4096, "stage": "search", "status": "error", "message": "failed (fixture)",
                          "median_s": None, "percentile_s": None})  # fmt: skip
    return doc


RUN_DOC, SWEEP_DOC = _run_doc(), _sweep_doc()
RUN_FIELDS, SWEEP_FIELDS = free_text_fields(RUN_DOC), free_text_fields(SWEEP_DOC)


class _Live(HTMLParser):
    """Whatever in the HTML would run or navigate in a browser."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "img", "iframe", "object", "embed", "math"):
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on") or (name in ("href", "src", "action") and "javascript:" in (value or "").lower()):
                self.found.append(f"<{tag} {name}={value!r}>")


def _fuzzed(doc: dict, fields: list[tuple], payload: str) -> dict:
    doc = copy.deepcopy(doc)
    for path in fields:
        _set(doc, path, payload)
    problems = validate_document(doc)
    assert not problems, (payload, problems[:3])  # each field alone accepts any text; so do all at once
    return doc


def _check(name: str, html: str, baseline: str, source: str, payload: str) -> None:
    assert html.count("$") == baseline.count("$"), (name, payload, "a '$' from data reached the page as '$'")
    authored = hook.authored_formulas(source)
    page = "".join(f"<p>$${tex}$$</p>" for tex in sorted(authored)) + html + "<p>$$ b^* $$</p>"
    rendered = hook.render_math(page, authored | {"b^*"})
    assert rendered.count("<math") == len(authored) + 1, (name, payload, "formulas from data, or authored ones lost")
    live = _Live()
    live.feed(html)
    assert not live.found, (name, payload, live.found)


@pytest.fixture
def stage(tmp_path, monkeypatch):
    def fresh(name: str) -> None:
        monkeypatch.setenv("BATCHING_CHART_DIR", str(tmp_path / name))

    return fresh


FAST = PAYLOADS[1:4]  # the fast loop: a lone $$, a $$ pair around \text{<img>}, and \href{javascript:}


@pytest.mark.slow
def test_every_string_field_reaches_every_page_as_text(stage):
    _fuzz_pages(stage, FAST, {your_model: "your_model.py"})


@pytest.mark.slow
def test_every_string_field_reaches_every_page_as_text_for_every_payload(stage):
    _fuzz_pages(stage, PAYLOADS, {your_model: "your_model.py", serving: "serving.py"})


def _fuzz_pages(stage, payloads: list[str], sweep_pages: dict) -> None:
    """Every page of runs, and `sweep_pages` (the pages of model sweeps), with each payload in every field."""
    started = time.perf_counter()
    assert len(RUN_FIELDS) >= 15 and len(SWEEP_FIELDS) >= 11, (RUN_FIELDS, SWEEP_FIELDS)
    base_run = _run(DEVICES["a"], frozenset(), newer=True)
    run = type(base_run)(path=base_run.path, doc=RUN_DOC)
    baseline = {}
    for page in PAGES:
        stage(f"base-{page.__name__}")
        baseline[page] = page.build(SiteData(runs=[run], shown=[run])).text()
    for page in sweep_pages:
        stage(f"base-{page.__name__}")
        baseline[page] = page.build([ModelSweep(path=Path("/fixture/s.json"), doc=SWEEP_DOC)]).text()
    for number, payload in enumerate(payloads):
        doc = _fuzzed(RUN_DOC, RUN_FIELDS, payload)
        run = type(base_run)(path=base_run.path, doc=doc)
        for page, source in PAGES.items():
            stage(f"{number}-{page.__name__}")
            html = page.build(SiteData(runs=[run], shown=[run])).text()
            _check(page.__name__, html, baseline[page], (ROOT / "docs" / source).read_text(encoding="utf-8"), payload)
        sweep = _fuzzed(SWEEP_DOC, SWEEP_FIELDS, payload)
        for page, source in sweep_pages.items():
            stage(f"{number}-{page.__name__}")
            html = page.build([ModelSweep(path=Path("/fixture/s.json"), doc=sweep)]).text()
            _check(page.__name__, html, baseline[page], (ROOT / "docs" / source).read_text(encoding="utf-8"), payload)
    print(
        f"{len(RUN_FIELDS)} run fields and {len(SWEEP_FIELDS)} sweep fields x {len(payloads)} payloads on "
        f"{len(PAGES) + len(sweep_pages)} pages in {time.perf_counter() - started:.1f} s"
    )


def test_a_formula_from_data_stays_text_beside_authored_ones():
    """The hook alone: between two '$$' that data wrote (were it ever to reach the page raw), no MathML."""
    html = "<p>$$a$$</p><p>EPYC $$\\text{<img/src=x/onerror=alert(1)>}$$</p><p>$$b$$</p><p>EPYC $$ 5</p>"
    out = hook.render_math(html, {"a", "b"})
    assert out.count("<math") == 2 and "&#36;&#36;\\text{<img" in out and "EPYC $$ 5" in out


def test_every_formula_a_page_writes_is_found():
    """Each docs page's $$...$$ pairs are all authored formulas the hook renders."""
    for source in sorted((ROOT / "docs").glob("*.py")):
        text = source.read_text(encoding="utf-8")
        pairs = text.count("$$") // 2
        assert len(hook.authored_formulas(text)) == pairs, source.name


def test_every_authored_formula_renders_through_the_markdown_step():
    """The pages' markdown cells as the notebook converter writes them: every $$...$$ a page writes comes out as
    MathML (the converter leaves the formula's text as the hook expects it), and nothing is left as text."""
    jupytext = pytest.importorskip("jupytext")
    markdown = pytest.importorskip("nbconvert.filters.markdown_mistune")
    for source in sorted((ROOT / "docs").glob("*.py")):
        text = source.read_text(encoding="utf-8")
        cells = jupytext.reads(text, fmt="py:percent").cells
        html = "".join(markdown.markdown2html_mistune(c.source) for c in cells if c.cell_type == "markdown")
        out = hook.render_math(html, hook.authored_formulas(text))
        assert out.count("<math") == text.count("$$") // 2 and "&#36;&#36;" not in out, source.name
