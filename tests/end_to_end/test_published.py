"""The site as published under a sub-path (a project page, e.g. https://OWNER.github.io/batching/).

The committed site of the test run is built with SITE_URL=http://127.0.0.1:PORT/batching/ and served there
(with the 404 page for any other address, as GitHub Pages does; tests/end_to_end/serve_site.py). This opens, in
headless Chromium, every page, every chart's anchor and embed snippet, and every exported file: nothing may
resolve to the host's root.
Prints what it opened.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.end_to_end.test_browser import ARGS, CHROMIUM, READY, sync_api
from tests.end_to_end.test_site_build import PAGES, served_site

pytestmark = [pytest.mark.browser, pytest.mark.build]

PREFIX = "/batching/"
HEADINGS = """() => [...document.querySelectorAll('article :is(h2, h3, h4, h5, h6)')].map(h => {
    const link = h.querySelector('a.headerlink, a.anchor-link');
    return [h.id, link ? link.href : null, link ? Number(getComputedStyle(link).opacity) : 0];
})"""
ADDRESSES = """() => [...document.querySelectorAll('a[href], img[src], link[href], script[src]')]
    .map(e => e.href || e.src).filter(u => u && !u.startsWith('javascript:'))"""
SNIPPETS = """() => [...document.querySelectorAll('figure.bchart')].map(f => [f.id,
    f.querySelector('.bchart-permalink').textContent,
    [...f.querySelectorAll('.bchart-snippet code')].map(c => c.textContent),
    [...f.querySelectorAll('.bchart-links a')].map(a => a.href)])"""


def published() -> tuple[Path, str]:
    """The committed site of the whole test run, built and served under PREFIX (see served_site)."""
    site, base = served_site("committed")
    assert base.endswith(PREFIX), base
    return site, base


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM:
        pytest.skip("no Chromium found")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def test_every_page_chart_and_export_resolves_under_the_sub_path(browser):
    site, base = published()
    pages = sorted(str(index.parent.relative_to(site)) + "/" for index in site.glob("**/index.html"))
    pages = [path.removeprefix("./") for path in pages]  # every page the build wrote
    assert set(PAGES) <= set(pages), f"pages not built: {set(PAGES) - set(pages)}"
    host = base[: -len(PREFIX) + 1]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    opened: list[str] = []
    charts: dict[str, tuple[str, str, list[str], list[str]]] = {}
    try:
        for path in pages:
            response = page.goto(base + path, wait_until="load")
            assert response is not None and response.ok, f"{base + path}: {response and response.status}"
            page.wait_for_function(READY, timeout=30_000)
            opened.append(base + path)
            for heading_id, href, opacity in page.evaluate(HEADINGS):
                assert heading_id and href == f"{base}{path}#{heading_id}", f"{path}: heading {heading_id}: {href}"
                assert opacity > 0, f"{path}#{heading_id}: its permalink is hidden"
            ids = page.evaluate("() => [...document.querySelectorAll('[id]')].map(e => e.id)")
            assert len(ids) == len(set(ids)), f"{path}: duplicate ids {sorted({i for i in ids if ids.count(i) > 1})}"
            for address in page.evaluate(ADDRESSES):
                if address.startswith(host):
                    assert address.startswith(base), f"{path} links to {address}, outside {PREFIX}"
            for chart_id, link, code, exports in page.evaluate(SNIPPETS):
                charts[chart_id] = (base + path, link, code, exports)

        assert charts, "no chart on any page"
        fetched = []
        for figure_id, (page_url, link, (markdown, html), exports) in sorted(charts.items()):
            chart_id = figure_id.removeprefix("chart-")
            png = f"{base}charts/{chart_id}.png"
            assert link == f"{page_url}#{figure_id}", f"{chart_id}: the link is {link}"
            assert markdown.endswith(f"]({png})]({link})") and markdown.startswith("[!["), markdown
            assert html.startswith(f'<a href="{link}"><img src="{png}" alt="'), html
            page.goto(link, wait_until="domcontentloaded")
            assert page.evaluate(f"() => !!document.getElementById({figure_id!r})"), f"{link} has no such chart"
            opened.append(link)
            for url in [png, *exports]:
                assert url.startswith(base + "charts/" + chart_id + "."), f"{chart_id} exports {url}"
                answer = context.request.get(url)
                assert answer.ok, f"{url}: {answer.status}"
                fetched.append(url)

        missing = base + "no/such/page/"
        answer = page.goto(missing, wait_until="load")
        assert answer is not None and answer.status == 404
        home = page.get_attribute("article a:has-text('home page')", "href")
        assert home and page.evaluate(f"() => new URL({home!r}, location.href).href") == base, home
        page.click("article a:has-text('home page')")
        page.wait_for_url(base)
        opened.append(f"{missing} (404, links home)")

        outside = [url for url in requested if url.startswith(host) and not url.startswith(base)]
        outside = [url for url in outside if not url.startswith(missing)]
        assert not outside, f"requests to the host's root: {outside[:10]}"
        assert not [u for u in requested if not re.match(r"(https?://127\.0\.0\.1|data:|blob:)", u)], "another host"
    finally:
        context.close()
    first = sorted(charts.items())[0][1]
    print(f"\nan embed snippet, as shown under a chart:\n{first[2][0]}\n{first[2][1]}")
    print(f"\nserved at {base}: opened {len(opened)} pages and chart anchors, fetched {len(fetched)} exported files")
    for url in [*opened, *fetched]:
        print(url)
