"""Every figure on every page, as a reader sees it on a laptop (1280 px) and on a phone (390 px): drawn,
inside its column, no label cut off, truncated or on top of another, and no page that scrolls sideways."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.end_to_end.test_browser import ARGS, CHROMIUM, READY, sync_api
from tests.end_to_end.test_site_build import PAGES, served_site

pytestmark = [pytest.mark.browser, pytest.mark.build]

LAYOUT = (Path(__file__).parent / "layout.js").read_text(encoding="utf-8")
WIDTHS = {"laptop": 1280, "phone": 390}


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@pytest.mark.parametrize("kind", ["committed", "synthetic"])
@pytest.mark.parametrize("screen", list(WIDTHS))
def test_every_figure_draws_and_fits(browser, kind, screen):
    base = served_site(kind)[1]
    context = browser.new_context(viewport={"width": WIDTHS[screen], "height": 900})
    problems = []
    try:
        page = context.new_page()
        for path in PAGES:
            page.goto(base + path, wait_until="load")
            page.wait_for_function(READY, timeout=30_000)
            found = page.evaluate(LAYOUT)
            name = path or "home"
            if found["sideways"]:
                problems.append(f"{name}: the page scrolls sideways at {found['width']} px")
            problems += [f"{name} {f['id']}: {p}" for f in found["figures"] for p in f["problems"]]
    finally:
        context.close()
    assert not problems, "\n".join(problems)
