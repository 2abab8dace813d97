"""The site: strict builds from committed and synthetic results, exports, links, page weight.

Each site is built once per test run (`served_site`), in a temporary directory, and shared with the
browser, layout and claims tests, whichever test process runs them.
"""

from __future__ import annotations

import atexit
import fcntl
import functools
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest

from tests.synthetic import PAYLOAD, SYNTHETIC_DEVICE, hostile, hostile_sweep, make_run, make_sweep

ROOT = Path(__file__).resolve().parents[2]
# The placeholders the docs hook fills in, as a file might spell them (names with '__' are allowed)
SPOOF = "__PAGE_URL__ __SITE_URL__/spoofed __SITE_ROOT__/spoofed"
EVIL = f"{PAYLOAD} {SPOOF} (test fixture)"
PAGES = [
    "", "guide/", "serving/", "llm_serving/", "your_model/", "theory/", "mlp/", "regimes/", "steps/", "moe/", "cnn/",
    "decode/", "training/", "calculator/", "devices/", "published/", "methodology/", "reproduce/", "glossary/",
]  # fmt: skip
BUNDLE = "assets/javascripts/vega-bundle.js"
MAX_PAGE_BYTES = 1_200_000  # every chart also carries its "Link or embed" snippets

pytestmark = pytest.mark.build

pytest.importorskip("mkdocs", reason="the docs dependency group is not installed")
pytest.importorskip("altair", reason="the docs dependency group is not installed")


def _tmp(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def write_synthetic_results(directory: Path) -> None:
    """SYNTHETIC devices: a GPU-like fixture, and a CPU fixture with an HTML, markdown and JavaScript-URL
    payload in every free-form string field (its older run was cut short, with the payload as reason)."""
    gpu = make_run()
    evil = dict(name=EVIL, slug="synthetic-evil", kind="cpu", widths=(512,), dtypes=("float32",), modes=("eager",))
    newer = hostile(make_run(run_id="20260102T000000Z-evil", started_at="2026-01-02T00:00:00+00:00", **evil))
    older = hostile(make_run(run_id="20260101T120000Z-cut", started_at="2026-01-01T12:00:00+00:00", complete=False,
                             **evil))  # fmt: skip
    older["run"]["interrupted"] = PAYLOAD
    for doc in (gpu, newer, older):
        path = directory / doc["device"]["slug"] / f"{doc['run']['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc), encoding="utf-8")


def write_synthetic_sweeps(directory: Path) -> None:
    """SYNTHETIC sweeps: a plain one, and one with the payload in every free-form field."""
    evil = hostile_sweep(make_sweep(seed=1))
    evil["device"]["slug"] = "synthetic-evil"
    evil["model"]["name"] = f"Net {SPOOF}"
    for doc in (make_sweep(), evil):
        path = directory / doc["device"]["slug"] / f"{doc['run']['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc), encoding="utf-8")


BUILD_TIMEOUT_S = 1500  # a guard against a hung build, not a speed target: README times the 200 synthetic runs at
# 129 s, and a loaded CI machine once took over 600 s; asserting a speed is BATCHING_MANY_RUNS_LIMIT_S's job
# Runs its arguments as a child and writes the largest resident set of that child's tree (KiB) last on stderr.
# It ends the child itself at the time limit: a limit that killed only this parent would leave the build running.
PEAK_OF_CHILD = (
    "import resource, subprocess, sys; "
    f"code = subprocess.call(sys.argv[1:], timeout={BUILD_TIMEOUT_S}); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)"
)


def build(
    site_dir: Path,
    results_dir: Path | None = None,
    synthetic: bool = False,
    site_url: str | None = None,
    sweeps_dir: Path | None = None,
    report_peak: bool = False,
) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` in a child process; with `report_peak`, the largest process of the build (in
    KiB) is the last line of its stderr, measured by a parent of its own, so that no earlier child of this
    test process counts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATCHING_") and k != "SITE_URL"}
    if site_url:
        env["SITE_URL"] = site_url  # instant navigation works only where the site is served from here
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["NO_MKDOCS_2_WARNING"] = "1"
    if results_dir is not None:
        env["BATCHING_RESULTS_DIR"] = str(results_dir)
    if sweeps_dir is not None:
        env["BATCHING_SWEEPS_DIR"] = str(sweeps_dir)
    if synthetic:
        env["BATCHING_INCLUDE_SYNTHETIC"] = "1"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)]
    if report_peak:
        command = [sys.executable, "-c", PEAK_OF_CHILD, *command]
    return subprocess.run(
        command,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S + (30 if report_peak else 0),  # with report_peak, the parent's limit acts first
    )


SHARED_SITES = "TESTS_SHARED_SITES"  # set by tests/conftest.py: one directory for the whole run


def _run_owner() -> int:
    """The process the whole test run lives in: pytest-xdist's controller for a worker, else this one."""
    return os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()


def _serve(root: Path, prefix: str = "/") -> str:
    """Serves root/prefix at prefix (tests/end_to_end/serve_site.py) for the rest of the test run; its URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.end_to_end.serve_site", str(root), str(_run_owner()), prefix],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    _SERVERS.append(server)  # it outlives this process when another still uses it: never waited for here
    port = int(server.stdout.readline())
    server.stdout.close()
    return f"http://127.0.0.1:{port}{prefix}"


_SERVERS: list[subprocess.Popen] = []


# The committed site is built and served as a project page of GitHub Pages is, under a sub-path
# (tests/end_to_end/test_published.py opens all of it there); the synthetic one at the host's root.
PREFIXES = {"committed": "/batching/", "synthetic": "/"}


@functools.cache
def served_site(kind: str) -> tuple[Path, str]:
    """The site, 'committed' (benchmarks/results/) or 'synthetic', built once per test run (the first test
    process to ask builds it, under a lock; the others wait and reuse it) and served on 127.0.0.1 at its
    PREFIXES path; returns the site directory and its URL. Its build log is in BUILD_LOGS."""
    shared = Path(os.environ.get(SHARED_SITES) or _tmp("sites-"))
    root, prefix = shared / f"site-{kind}", PREFIXES[kind]
    site, url_file, log_file = root / prefix.strip("/"), shared / f"{kind}.url", shared / f"{kind}.log"
    with open(shared / f"{kind}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not log_file.exists():  # the first to ask builds; a failed build is not tried again
            site.mkdir(parents=True)
            url = _serve(root, prefix)
            if kind == "synthetic":
                results, sweeps = _tmp("results-"), _tmp("sweeps-")
                write_synthetic_results(results)
                write_synthetic_sweeps(sweeps)
                done = build(site, results, synthetic=True, site_url=url, sweeps_dir=sweeps)
            else:
                done = build(site, site_url=url)
            if done.returncode == 0:
                url_file.write_text(url, encoding="utf-8")
            log_file.write_text(done.stdout + done.stderr, encoding="utf-8")
    if not url_file.exists():
        pytest.fail(f"mkdocs build --strict failed for the {kind} site:\n{log_file.read_text()[-8000:]}")
    BUILD_LOGS[kind] = log_file.read_text(encoding="utf-8")
    SERVED_AT[site] = prefix
    return site, url_file.read_text(encoding="utf-8")


SERVED_AT: dict[Path, str] = {}  # a served site's directory: the path it is served at


BUILD_LOGS: dict[str, str] = {}


def built_site(kind: str) -> Path:
    return served_site(kind)[0]


@pytest.fixture(scope="module", params=["committed", "synthetic"])
def site(request) -> Path:
    return built_site(request.param)


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []  # (attribute, value)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and "name" in attrs:
            self.ids.add(attrs["name"])
        for name in ("href", "src"):
            if attrs.get(name) and not (tag == "link" and attrs.get("rel") == "canonical"):
                self.links.append((f"{tag}.{name}", attrs[name]))


@functools.cache
def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _html_pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "results" not in p.relative_to(site).parts)


def _target(site: Path, page: Path, link: str) -> tuple[Path, str] | None:
    """The file and fragment an internal link points to, or None for an external link. A site served under a
    sub-path (PREFIXES) is resolved there: a root-relative link (the 404 page's) must stay under it."""
    prefix = SERVED_AT.get(site, "/")
    base = "http://site.invalid" + prefix + page.relative_to(site).as_posix()
    url = urlparse(urljoin(base, link))
    if url.netloc != "site.invalid":
        return None
    if not url.path.startswith(prefix):
        return site / "__outside_the_site__" / url.path.lstrip("/"), url.fragment
    path = site / unquote(url.path.removeprefix(prefix))
    if path.is_dir() or url.path.endswith("/"):
        path = path / "index.html"
    return path, url.fragment


def test_the_build_prints_no_kernel_warnings(site):
    log = BUILD_LOGS["committed" if site == built_site("committed") else "synthetic"]
    assert "Kernel is running over TCP" not in log
    assert not [line for line in log.splitlines() if "IPKernelApp" in line and "WARNING" in line]


def test_build_reads_only_published_results(site):
    pages = "".join(p.read_text(encoding="utf-8") for p in _html_pages(site))
    if site == built_site("committed"):
        assert SYNTHETIC_DEVICE not in pages, "a synthetic fixture leaked into the published site"
        assert "SYNTHETIC" not in pages and "(test fixture)" not in pages
        assert not list(site.glob("results/synthetic-*")) and not list(site.glob("charts/*synthetic*"))
    else:
        assert SYNTHETIC_DEVICE in pages and "SYNTHETIC test fixture" in pages, "fixtures must be labelled"


def test_every_page_and_chart_export_exists(site):
    for page in PAGES:
        assert (site / page / "index.html").is_file(), page
    assert (site / BUNDLE).stat().st_size > 100_000
    ids = set()
    for page in _html_pages(site):
        ids |= {i[len("chart-") :] for i in _parse(page).ids if i.startswith("chart-")}
    assert "theory-intensity" in ids
    for chart_id in ids:
        for ext in ("svg", "png", "csv", "json"):
            export = site / "charts" / f"{chart_id}.{ext}"
            assert export.is_file() and export.stat().st_size > 0, export
        svg = (site / "charts" / f"{chart_id}.svg").read_text(encoding="utf-8")
        assert "<svg" in svg and "mark-" in svg, chart_id


def test_synthetic_site_has_every_kind_of_chart():
    ids = {p.stem for p in (built_site("synthetic") / "charts").glob("*.json")}
    assert "home-headline" in ids
    assert "mlp-synthetic-gpu-bfloat16-graph-rotated-latency" in ids
    assert "mlp-synthetic-gpu-bfloat16-graph-rotated-throughput" in ids
    assert "mlp-synthetic-gpu-bfloat16-rotated-modes" in ids
    assert "mlp-synthetic-evil-float32-eager-rotated-latency" in ids
    assert "steps-synthetic-gpu-bfloat16-graph-rotated" in ids


def test_steps_page_finds_the_synthetic_staircase():
    """The SYNTHETIC fixture's Linear sweep steps up every 64 rows once compute-bound (from 192)."""
    text = (built_site("synthetic") / "steps" / "index.html").read_text(encoding="utf-8")
    assert "192 → 193" in text and "256 → 257" in text
    assert "tile boundary: batch crosses 256 (a multiple of 128, a side of the kernel's 64×128 tile)" in text
    assert "wave boundary: 64×128 tiles" in text


def test_internal_links_and_anchors_resolve(site):
    broken = []
    for page in _html_pages(site):
        for attr, link in _parse(page).links:
            if link.startswith(("mailto:", "javascript:", "data:")):
                continue
            target = _target(site, page, link)
            if target is None:
                assert attr == "a.href", f"{page}: {attr}={link} loads from another host"
                continue
            path, fragment = target
            if not path.is_file():
                broken.append(f"{page.relative_to(site)}: {link} (no file)")
            elif fragment and path.suffix == ".html" and fragment not in _parse(path).ids:
                broken.append(f"{page.relative_to(site)}: {link} (no anchor)")
    assert not broken, "\n".join(broken)


def _page_weight(site: Path, page: Path) -> int:
    """Bytes of a page plus the local CSS/JS/images it loads, without the shared chart bundle."""
    total = page.stat().st_size
    for attr, link in set(_parse(page).links):
        if attr not in ("link.href", "script.src", "img.src"):
            continue
        target = _target(site, page, link)
        if target and target[0].is_file() and not target[0].as_posix().endswith(BUNDLE):
            total += target[0].stat().st_size
    return total


def test_page_weight(site):
    for name in PAGES:
        weight = _page_weight(site, site / name / "index.html")
        assert weight <= MAX_PAGE_BYTES, f"{name or 'home'}: {weight} bytes"


MAX_PROSE_WORDS = 2500  # a page a reader can take in; detail, derivations and long tables go in folded sections
FOLDED_OR_NOT_PROSE = ("details", "table", "figure", "template", "script", "style", "pre", "svg", "nav")


def prose_words(page_html: str) -> int:
    """Words of the article a reader sees without opening anything: folded sections, tables, charts and code
    left out."""
    found = re.search(r"<article[^>]*>(.*)</article>", page_html, flags=re.S)
    body = found.group(1) if found else page_html
    for tag in FOLDED_OR_NOT_PROSE:
        body = re.sub(rf"<{tag}\b.*?</{tag}>", " ", body, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", body)
    return len(re.findall(r"[^\W_][\w’'.,%/×÷−+-]*", html.unescape(text)))


def test_prose_words_leave_out_what_is_folded_or_not_prose():
    page = ("<article><p>One two three.</p><details><summary>Four</summary><p>five six</p></details>"
            "<table><tr><td>seven</td></tr></table><figure>eight</figure><p>nine &amp; 10 %</p></article>")  # fmt: skip
    assert prose_words(page) == 5  # one, two, three, nine, 10


def test_every_page_shows_at_most_about_2500_words_of_prose_unfolded():
    site = built_site("committed")
    found = {name or "home": prose_words((site / name / "index.html").read_text(encoding="utf-8")) for name in PAGES}
    assert max(found.values()) <= MAX_PROSE_WORDS, sorted(found.items(), key=lambda kv: -kv[1])[:3]
    assert min(found.values()) > 300  # the count reads the article


class _Live(HTMLParser):
    """What would run in a browser: the payload's <img> with its handler, an inline script that calls
    alert, any event handler, any javascript: link."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "img" and values.get("src") == "x":
            self.found.append("<img src=x>")
        self._in_script = tag == "script"
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and "alert(" in data:
            self.found.append("<script> calling alert")


def _live(text: str) -> list[str]:
    parser = _Live()
    parser.feed(text)
    return parser.found


def test_results_strings_are_escaped():
    """Every page and every exported chart of a site built from a payload in every free-form field."""
    site = built_site("synthetic")
    shown = 0
    for page in _html_pages(site):
        text = page.read_text(encoding="utf-8")
        assert not _live(text), (page, _live(text))
        # the payload's own words, shown as text (also backslash-escaped, in the Markdown embed snippet)
        shown_as_text = r"\\?\[x\\?\]\\?\(javascript:alert\\?\(2\\?\)\\?\)"
        assert "javascript:alert" not in re.sub(shown_as_text, "", text.replace("&amp;", "&"))
        shown += text.count("&lt;img src=x onerror=alert(1)&gt;[x](javascript:alert(2))&lt;script&gt;")
    for export in (site / "charts").glob("*.svg"):
        assert not _live(export.read_text(encoding="utf-8")), export
    assert shown >= 5, "the payload must be shown, escaped, on the pages"
    for path in (site / "results").rglob("*.json"):  # the raw files are served as data, never as pages
        assert path.suffix == ".json"


def test_data_spelling_the_hooks_placeholders_is_shown_as_written():
    """A device and a model named with __PAGE_URL__, __SITE_URL__/ and __SITE_ROOT__/ keep those words on every
    page and in the search index: the hook fills in only the placeholders the pages themselves wrote."""
    site = built_site("synthetic")
    shown = 0
    for page in [*_html_pages(site), site / "search" / "search_index.json"]:
        text = html.unescape(page.read_text(encoding="utf-8"))
        rewritten = re.findall(r".{0,80}(?:[:/.]|\d)/spoofed", text)
        assert not rewritten, (page, rewritten[:3])
        assert "__PAGE_URL_" not in text.replace("__PAGE_URL__", "") and "__SITE_ROOT_" not in text.replace(
            "__SITE_ROOT__", ""
        ), page  # and no placeholder of the build's own is left unfilled
        shown += text.count(SPOOF)
    assert shown >= 10, "the names must be shown, as written, on the pages"


def test_every_page_says_so_while_every_committed_run_is_a_cpu():
    notice = "These results come from a CPU"
    for page in PAGES:  # a GPU-kind run exists: no notice, and its measured curve heads the home page
        assert notice not in (built_site("synthetic") / page / "index.html").read_text(encoding="utf-8")
    runs = list((ROOT / "benchmarks" / "results").rglob("*.json"))
    kinds = {json.loads(p.read_text())["device"]["kind"] for p in runs}
    committed = built_site("committed")
    for page in PAGES:
        text = (committed / page / "index.html").read_text(encoding="utf-8")
        assert (notice in text) == (kinds == {"cpu"}), page or "home"
    home = (committed / "index.html").read_text(encoding="utf-8")
    assert ('id="chart-home-predicted"' in home) == ("cuda" not in kinds)


def test_bad_results_file_fails_the_build_naming_file_and_field():
    results = _tmp("bad-results-")
    doc = make_run()
    doc["records"][3]["batch"] = "many"
    path = results / "synthetic-gpu" / "broken.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    done = build(_tmp("site-bad-"), results, synthetic=True)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "broken.json" in output and "records[3].batch" in output, output[-3000:]


def test_notebooks_always_execute_fresh():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^\s+execute: true", config, re.M)
    assert re.search(r"^\s+allow_errors: false", config, re.M)
    assert re.search(r"^\s+cache: false", config, re.M)
    assert re.search(r"^\s+- navigation.instant", config, re.M)
    assert re.search(r"^\s+font: false", config, re.M)


CAPTION = re.compile(r'<figcaption>.*?</strong>(.*?)<span class="bchart-links">', re.S)


def test_captions_are_one_or_two_sentences(site):
    long = []
    for page in _html_pages(site):
        for caption in CAPTION.findall(page.read_text(encoding="utf-8")):
            sentences = re.findall(r"[.!?](?=\s|$)", re.sub(r"<[^>]+>", "", caption).strip())
            if len(sentences) > 2:
                long.append(f"{page.relative_to(site)}: {caption[:120]}")
    assert not long, "\n".join(long)
