"""Links that last: embed snippets, heading permalinks, moved chart ids (benchmarks/site/charts/links.py)."""

from __future__ import annotations

import html
import re

import pytest

from benchmarks.site import placeholders
from benchmarks.site.charts import CHART_ID, links
from benchmarks.site.render import DeviceSection, Heading, render
from tests.synthetic import PAYLOAD, make_run, site_data

SITE = "https://example.org/batching/"
PAGE = SITE + "mlp/"


def test_snippets_link_the_png_to_the_charts_anchor():
    found = links.snippets("mlp-cpu-x-latency", "Latency against batch (float32, eager)", SITE, PAGE)
    assert found["link"] == PAGE + "#chart-mlp-cpu-x-latency"
    assert found["markdown"] == (
        "[![Latency against batch \\(float32, eager\\)](https://example.org/batching/charts/mlp-cpu-x-latency.png)]"
        "(https://example.org/batching/mlp/#chart-mlp-cpu-x-latency)"
    )
    assert found["html"] == (
        '<a href="https://example.org/batching/mlp/#chart-mlp-cpu-x-latency">'
        '<img src="https://example.org/batching/charts/mlp-cpu-x-latency.png" '
        'alt="Latency against batch (float32, eager)"></a>'
    )


def test_a_pasted_markdown_snippet_renders_as_the_png_linked_to_the_anchor():
    markdown = pytest.importorskip("markdown")
    found = links.snippets("home-headline", "8×1024 MLP [bf16] on a GPU", SITE, SITE)
    out = markdown.markdown(found["markdown"])
    assert out == (
        '<p><a href="https://example.org/batching/#chart-home-headline">'
        '<img alt="8×1024 MLP [bf16] on a GPU" src="https://example.org/batching/charts/home-headline.png" /></a></p>'
    )


def test_a_hostile_caption_stays_text_in_both_snippets_and_on_the_page():
    found = links.snippets("x", PAYLOAD, SITE, PAGE)
    assert f'alt="{html.escape(PAYLOAD, quote=True)}"' in found["html"]
    assert "](" not in found["markdown"].split("](", 1)[0].split("![", 1)[1]  # the alt text cannot close early
    shown = links.embed_html("x", PAYLOAD)
    assert "<img" not in shown and "<script" not in shown and "<svg" not in shown


def test_the_control_is_filled_in_with_the_sites_address():
    shown = links.absolute(links.embed_html("theory-cpu", "A chart"), "https://example.org/batching", PAGE)
    assert placeholders.TOKEN not in shown  # every placeholder filled in
    assert "Link or embed" in shown and 'href="#chart-theory-cpu"' in shown
    assert "https://example.org/batching/charts/theory-cpu.png" in shown
    assert "https://example.org/batching/mlp/#chart-theory-cpu" in shown


def test_a_build_without_a_site_url_says_so_beside_the_snippets():
    control = links.embed_html("theory-cpu", "A chart")
    local = links.absolute(control, "http://127.0.0.1:8000/", PAGE, published=False)
    note = local.split("<summary>Link or embed</summary>", 1)[1].split("<p>Link:", 1)[0]
    assert "SITE_URL" in note and "http://127.0.0.1:8000/" in note and "only on this machine" in note
    published = links.absolute(control, SITE, PAGE)
    assert "SITE_URL" not in published and placeholders.TOKEN not in published and "bchart-unpublished" not in published


def _ids(html_text: str) -> list[str]:
    return re.findall(r'<h[2-6][^>]*\sid="([^"]+)"', html_text)


def test_every_heading_gets_an_id_and_a_visible_link():
    page = '<h2 id="curves">Curves<a class="anchor-link" href="#curves">¶</a></h2><h4>float32, eager</h4><h5>Why</h5>'
    out = links.permalinks(page)
    assert 'class="anchor-link headerlink"' in out
    assert '<h4 id="curves--float32-eager">float32, eager<a class="headerlink" href="#curves--float32-eager"' in out
    assert '<h5 id="curves--float32-eager--why">' in out
    code = '<h2 id="what-the-serve-command">The <code>serve</code> command<a class="anchor-link" href="#x">¶</a></h2>'
    assert 'class="anchor-link headerlink" href="#what-the-serve-command"' in links.permalinks(code)


def test_a_devices_headings_keep_their_ids_when_another_device_is_added():
    cpu = make_run(name="Synthetic CPU (test fixture)", slug="synthetic-cpu", kind="cpu", run_id="20260101T000000Z-c")
    gpu = make_run()

    def section(run):
        return DeviceSection(run, [Heading("float32, eager, cache rotated")])

    alone = site_data(cpu).shown
    both = site_data(cpu, gpu).shown
    one = links.permalinks('<h2 id="curves">Curves</h2>' + render([section(r) for r in alone]))
    two = links.permalinks('<h2 id="curves">Curves</h2>' + render([section(r) for r in both]))
    assert "curves--synthetic-cpu--float32-eager-cache-rotated" in _ids(one)
    assert set(_ids(one)) <= set(_ids(two)) and len(_ids(two)) == len(set(_ids(two)))
    assert both[0].device["slug"] == "synthetic-gpu"  # the new device comes first


def test_a_moved_id_is_kept_as_an_anchor_beside_its_replacement(tmp_path):
    page = '<figure class="bchart" id="chart-home-headline"></figure>'
    out = links.moved_here(page, links.built_ids(page), {"home-predicted": "home-headline"})
    assert out.startswith('<span id="chart-home-predicted" class="bchart-moved"></span><figure')
    still = page + '<figure class="bchart" id="chart-home-predicted"></figure>'
    assert links.moved_here(still, links.built_ids(still), {"home-predicted": "home-headline"}) == still

    for ext in links.EXPORTS:
        (tmp_path / f"home-headline.{ext}").write_text(ext)
    assert links.write_moved_exports(tmp_path, {"home-predicted": "home-headline", "a": "b"}) == ["home-predicted"]
    assert all((tmp_path / f"home-predicted.{ext}").read_text() == ext for ext in links.EXPORTS)
    assert not (tmp_path / "a.png").exists()


def test_every_moved_id_points_at_a_valid_id_that_is_not_moved_again():
    for old, new in links.MOVED.items():
        assert CHART_ID.match(old) and CHART_ID.match(new) and new not in links.MOVED
