"""The renderer: every string is escaped on its way to HTML; only Html passes through."""

import pytest

from benchmarks.site import render
from benchmarks.site.placeholders import SITE_ROOT
from benchmarks.site.render import Bullets, Heading, Html, Paragraph, Table, takeaway
from tests.synthetic import make_run, site_data

PAYLOAD = '<img src=x onerror=alert(1)>[x](javascript:alert(2)) "quoted" & more'


@pytest.mark.parametrize(
    "part",
    [
        Paragraph(PAYLOAD),
        Paragraph(["safe ", PAYLOAD]),
        Heading(PAYLOAD),
        Bullets([PAYLOAD]),
        Table([PAYLOAD], [[PAYLOAD]], caption=PAYLOAD),
        takeaway(PAYLOAD, [PAYLOAD]),
    ],
)
def test_text_is_escaped(part):
    out = render.render([part])
    assert "<img" not in out and "&lt;img src=x onerror=alert(1)&gt;" in out
    assert "&quot;quoted&quot; &amp; more" in out


def test_html_passes_through_and_links_are_relative_to_the_site():
    out = render.render([Paragraph(["see ", render.link("Theory", "theory/"), " and ", render.code("x < y")])])
    assert f'<a href="{SITE_ROOT}theory/">Theory</a>' in out and "<code>x &lt; y</code>" in out
    assert isinstance(render.strong("a"), Html)


def test_a_plain_string_is_not_a_part():
    with pytest.raises(TypeError):
        render.render(["<p>raw</p>"])


def test_device_section_introduces_the_device_once():
    doc = make_run(name="<b>Evil</b> GPU (test fixture)")
    run = site_data(doc).shown[0]
    out = render.render([render.DeviceSection(run, [Paragraph("body")], note="a note", older=2)])
    assert out.count("&lt;b&gt;Evil&lt;/b&gt; GPU") == 2  # the heading and the introduction
    assert "<b>Evil" not in out and "SYNTHETIC test fixture" in out
    assert "Measured ceilings: copy" in out and "a note" in out and "2 older run(s)" in out


def test_takeaway_holds_the_lesson_then_the_facts():
    out = render.render([takeaway("lesson", ["fact"])])
    assert out.index("lesson") < out.index("<li>fact</li>") and "Takeaways" in out


def test_a_page_lesson_keeps_its_markup_and_the_page_items_are_escaped():
    page = render.Page({"body": [Paragraph("text")]}, takeaway_items=[PAYLOAD], lesson="divide by H/H<sub>kv</sub>")
    out = page.takeaway_html()
    assert "H/H<sub>kv</sub>" in out and "<img" not in out and "&lt;img" in out
    assert out.index("divide") < out.index("&lt;img") and "Takeaways" in out
    assert "&lt;img" in page.text()  # the items are part of the page's text for its tests
    assert "Takeaway<" in render.Page({}).takeaway_html("a lesson alone")
    assert "another lesson" in page.takeaway_html("another lesson") and "divide" not in page.takeaway_html("another")


def test_autolink_links_addresses_and_escapes_the_rest():
    out = render.autolink("see (https://example.com/a_b.pdf), not javascript:alert(1) <b>")
    assert out == (
        'see (<a href="https://example.com/a_b.pdf">https://example.com/a_b.pdf</a>), not javascript:alert(1) &lt;b&gt;'
    )


def test_a_term_links_to_its_glossary_entry_and_an_unknown_one_is_refused():
    out = render.render(
        [Paragraph(["the ", render.term("ridge batch"), " and ", render.term("knee", "measured knee")])]
    )
    assert f'<a href="{SITE_ROOT}glossary/#ridge-batch" class="term"' in out
    assert f'href="{SITE_ROOT}glossary/#measured-knee"' in out and ">knee</a>" in out
    with pytest.raises(KeyError, match="no glossary term"):
        render.term("magic ratio")


def test_a_fold_can_stay_out_of_the_search_index():
    """Material's search leaves out what carries data-search-exclude: reference text a fold holds, which every
    page would otherwise download with the index."""
    from benchmarks.site.render import Details

    assert "data-search-exclude" not in render.render([Details("summary", [Paragraph("body")])])
    left_out = render.render([Details("summary", [Paragraph("body")], kind="note", searched=False)])
    assert left_out.startswith('<details class="note" data-search-exclude><summary>summary</summary>')
