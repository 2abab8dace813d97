"""The built site in headless Chromium: no console errors, no other hosts, charts drawn.

Uses the system's Chromium (Debian's `chromium`, which .ci/run installs) through Playwright's
Python package; set BATCHING_CHROMIUM to use another binary. Skips, saying why, when either
is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil

import pytest

from benchmarks.analysis.roofline import calculator
from benchmarks.gpus import find_gpu
from tests.end_to_end.test_site_build import BUNDLE, MAX_PAGE_BYTES, PAGES, built_site, served_site

pytestmark = [pytest.mark.browser, pytest.mark.build]

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = os.environ.get("BATCHING_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    pytest.skip("no Chromium found (install Debian's chromium or set BATCHING_CHROMIUM)", allow_module_level=True)

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
READY = """() => [...document.querySelectorAll('figure.bchart .bchart-view')].every(
    v => v.dataset.drawn && v.querySelector('svg'))"""  # drawn and fitted to its column by charts.js
MARKS = """() => [...document.querySelectorAll('figure.bchart')].map(f => [f.id,
    f.querySelectorAll('.bchart-view svg [class*="mark-"] path, .bchart-view svg [class*="mark-"] line').length])"""


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


class Watch:
    """Everything a page did that the site forbids: console errors, page errors, other hosts, dialogs."""

    def __init__(self, page, base: str):
        self.problems: list[str] = []
        self.bytes: dict[str, int] = {}
        page.on("console", lambda m: m.type == "error" and self.problems.append(f"console error: {m.text}"))
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("dialog", lambda d: (self.problems.append(f"dialog opened: {d.message}"), d.dismiss()))
        page.on("response", lambda r: self._sized(r))

        def route(route):
            url = route.request.url
            if url.startswith(base) or url.startswith("data:") or url.startswith("blob:"):
                route.continue_()
            else:
                self.problems.append(f"request to another host: {url}")
                route.abort()

        page.route("**/*", route)

    def _sized(self, response):
        with contextlib.suppress(Exception):
            self.bytes[response.url] = len(response.body())


@pytest.fixture(params=["committed", "synthetic"])
def site_url(request):
    return served_site(request.param)[1]


def _open(browser, base, path, scheme="light"):
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    watch = Watch(page, base)
    page.goto(base + path, wait_until="load")
    page.wait_for_function(READY, timeout=20_000)
    return context, page, watch


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_cleanly_with_charts_drawn(browser, site_url, path):
    context, page, watch = _open(browser, site_url, path)
    try:
        marks = page.evaluate(MARKS)
        assert all(count > 0 for _, count in marks), f"charts without marks: {marks}"
        labels = page.evaluate(
            "() => [...document.querySelectorAll('.bchart-view svg')].map(s => s.getAttribute('aria-label') || '')"
        )
        assert all(labels), "every chart's SVG carries its text description"
        page.wait_for_timeout(300)
        weight = sum(size for url, size in watch.bytes.items() if not url.endswith(BUNDLE))
        assert weight <= MAX_PAGE_BYTES, f"{path or 'home'} transfers {weight} bytes besides the chart bundle"
        assert sum(url.endswith(BUNDLE) for url in watch.bytes) <= 1
        assert not watch.problems, "\n".join(watch.problems)
    finally:
        context.close()


def test_instant_navigation_keeps_charts_drawn(browser, site_url):
    context, page, watch = _open(browser, site_url, "")
    try:
        page.evaluate("window.__notReloaded = true")
        page.click("nav.md-nav--primary a.md-nav__link[href$='mlp/']")
        page.wait_for_url("**/mlp/")
        page.wait_for_function(READY, timeout=20_000)
        assert page.evaluate("window.__notReloaded === true"), "the page reloaded: instant navigation is off"
        assert page.evaluate("document.querySelectorAll('figure.bchart').length") > 0
        page.go_back()
        page.wait_for_url(site_url)
        page.wait_for_function(READY, timeout=20_000)
        assert all(count > 0 for _, count in page.evaluate(MARKS))
        assert not watch.problems, "\n".join(watch.problems)
    finally:
        context.close()


def test_dark_mode_draws_charts(browser, site_url):
    context, page, watch = _open(browser, site_url, "mlp/", scheme="dark")
    try:
        assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == "slate"
        assert all(count > 0 for _, count in page.evaluate(MARKS))
        assert not watch.problems, "\n".join(watch.problems)
    finally:
        context.close()


LAPTOP_SCREEN = {"width": 1366, "height": 768}  # the most common laptop screen
SEEN_OF_A_CHART_PX = 40  # its title's line and the top of its plot: enough for a reader to see a chart begins


def test_the_home_pages_first_chart_starts_on_a_laptops_first_screen(browser):
    context = browser.new_context(viewport=LAPTOP_SCREEN)
    try:
        page = context.new_page()
        page.goto(served_site("committed")[1], wait_until="load")
        page.wait_for_function(READY, timeout=20_000)
        top = page.evaluate("() => document.querySelector('figure.bchart').getBoundingClientRect().top")
        assert top < LAPTOP_SCREEN["height"] - SEEN_OF_A_CHART_PX, f"the first chart starts at {top:.0f} px"
    finally:
        context.close()


def test_html_in_a_device_name_runs_nothing(browser):
    base = served_site("synthetic")[1]
    for path in ("", "mlp/", "reproduce/"):
        context, page, watch = _open(browser, base, path)
        try:
            page.wait_for_timeout(300)
            assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0
            if path == "mlp/":
                assert "<img src=x onerror=alert(1)>" in page.inner_text("article")
            assert not watch.problems, "\n".join(watch.problems)
        finally:
            context.close()


RIDGE_LABELS = """() => [...document.querySelectorAll('figure.bchart .mark-text text')]
    .map(t => t.textContent).filter(t => t.startsWith('ridge'))"""
DOTS = "() => document.querySelectorAll('figure.bchart .mark-symbol path').length"


def test_calculator_controls_redraw_the_prediction(browser):
    base = served_site("committed")[1]
    context, page, watch = _open(browser, base, "calculator/")
    try:
        h100, t4 = find_gpu("NVIDIA H100 SXM"), find_gpu("NVIDIA T4")
        # the browser's Vega expressions against the Python formulas, at the default choice and another
        assert (
            page.evaluate(RIDGE_LABELS)[0]
            == f"ridge: batch ≈ {calculator.gpu_ridge_batch(h100, 'bfloat16', 4096):,.0f}"
        )
        page.select_option("select[name=gpu]", "NVIDIA T4")
        page.select_option("select[name=dtype]", "float32")
        page.select_option("select[name=layer_width]", "1024")
        page.wait_for_timeout(500)
        assert (
            page.evaluate(RIDGE_LABELS)[0] == f"ridge: batch ≈ {calculator.gpu_ridge_batch(t4, 'float32', 1024):,.0f}"
        )
        assert page.evaluate(DOTS) == 0  # nothing measured on a T4
        title = page.evaluate("() => document.querySelector('#chart-calculator .role-title-text').textContent")
        assert "NVIDIA T4" in title and "float32 · MLP of 8 layers, width 1024" in title, title
        with page.expect_download() as saved:
            page.click("#chart-calculator button.bchart-choice-png")
        assert saved.value.suggested_filename == "calculator-nvidia-t4-float32-1024-8.png"
        measured = page.eval_on_selector("select[name=gpu]", "s => [...s.options].map(o => o.value)")
        cpu = next(name for name in measured if name.startswith("measured: CPU"))
        page.select_option("select[name=gpu]", cpu)
        page.wait_for_timeout(500)
        assert page.evaluate(DOTS) > 0, "the committed CPU run's 8×1024 fp32 MLP appears as dots"
        assert not watch.problems, "\n".join(watch.problems)
    finally:
        context.close()


def test_every_page_opened_from_disk_draws_its_charts(browser):
    """README and Reproduce say "open site/index.html": from file:// a browser refuses module scripts, so the charts'
    scripts must be classic ones, and links to a page's folder must name its index.html."""
    site = built_site("committed")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    problems = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("console", lambda m: m.type == "error" and "search" not in m.text.lower() and problems.append(m.text))
        for path in PAGES:
            page.goto((site / path / "index.html").as_uri(), wait_until="load")
            page.wait_for_function(READY, timeout=30_000)
            marks = page.evaluate(MARKS)
            problems += [f"{path or 'home'} {chart}: no marks" for chart, count in marks if count == 0]
        folders = page.evaluate(
            "() => [...document.querySelectorAll('nav a[href]')].map(a => a.getAttribute('href'))"
            ".filter(h => !/^[a-z]+:|^#/.test(h) && !/index\\.html(#.*)?$/.test(h))"
        )
        assert not folders, f"links that would open a folder listing from disk: {folders[:5]}"
        page.click("nav.md-nav--primary a.md-nav__link[href$='mlp/index.html']")
        page.wait_for_url("**/mlp/index.html")
        page.wait_for_function(READY, timeout=30_000)
    finally:
        context.close()
    assert not problems, "\n".join(problems)
