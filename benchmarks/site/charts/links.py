"""Links that last: each chart's embed snippets, permalinks on every heading, and the ids that moved.

A chart's addresses are its page anchor (`<page>#chart-<id>`) and its exported files
(`charts/<id>.{png,svg,csv,json}`). Ids come from the page and what a chart shows (device slug, dtype,
mode, cache), never from a run, so a new run or a new device adds charts without renaming the others
(tests/site/test_chart_ids.py checks it). When an id has to change all the same, `MOVED` keeps the
old addresses working: the page gets an anchor with the old id beside the chart, and the exported
files are also written under the old id.

Pure Python: the docs hook applies these to every page and to the built site.
"""

from __future__ import annotations

import html
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from benchmarks.site import text

# SITE_URL and PAGE_URL are replaced by the docs hook with absolute addresses built from the site's URL
# (SITE_URL): a wiki needs the address the site is published at, not a path relative to a page.
from benchmarks.site.placeholders import PAGE_URL, SITE_URL, UNPUBLISHED

UNPUBLISHED_NOTE = (
    '<p class="bchart-unpublished"><strong>Local addresses:</strong> this copy of the site was built without '
    "<code>SITE_URL</code>, so these snippets point at <code>{site}</code>, which works only on this machine. "
    "Build with <code>SITE_URL</code> set to where the site is published to get addresses a wiki can use.</p>"
)

# Old chart id -> the id of the chart that now shows what it showed. Applied only in a build where
# the old id is not drawn and the new one is.
MOVED: dict[str, str] = {
    # The home page's headline: a datasheet prediction until a GPU run is committed, then that run's
    # measured curve. A wiki that embedded the prediction shows the measurement that replaced it.
    "home-predicted": "home-headline",
}

EXPORTS = ("png", "svg", "csv", "json")


def _markdown_text(value: str) -> str:
    """Text safe inside Markdown link text or image alt text: punctuation that Markdown reads is escaped."""
    return re.sub(r"([\\`*_{}\[\]()<>#+!|])", r"\\\1", " ".join(value.split()))


def snippets(chart_id: str, caption: str, site_url: str = SITE_URL, page_url: str = PAGE_URL) -> dict[str, str]:
    """The chart's page anchor and ready-to-paste Markdown and HTML: its PNG, linked to the anchor."""
    anchor = f"{page_url}#chart-{chart_id}"
    png = f"{site_url}charts/{chart_id}.png"
    return {
        "link": anchor,
        "markdown": f"[![{_markdown_text(caption)}]({png})]({anchor})",
        "html": f'<a href="{anchor}"><img src="{png}" alt="{_attribute_text(caption)}"></a>',
    }


def _attribute_text(value: str) -> str:
    """Text safe in an HTML attribute that never spells a placeholder (its '__' as character references)."""
    return html.escape(value, quote=True).replace("__", "&#95;&#95;")


def _snippet_html(value: str) -> str:
    """A snippet shown as text: escaped like all text (`text.h`), then with the placeholders this module wrote
    (never any from a caption: `snippets` escaped its '__') put back for the docs hook to fill in."""
    return text.h(value).replace(text.h(SITE_URL), SITE_URL).replace(text.h(PAGE_URL), PAGE_URL)


def embed_html(chart_id: str, caption: str) -> str:
    """The "Link or embed" control under a chart (the snippets shown as text, with placeholders)."""
    found = snippets(chart_id, caption)
    rows = "".join(
        f'<p>{label}</p><pre class="bchart-snippet" id="embed-{chart_id}-{key}">'
        f"<code>{_snippet_html(found[key])}</code></pre>"
        for key, label in (("markdown", "Markdown"), ("html", "HTML"))
    )  # each <pre> has its own id: Material's copy button names the code block after the closest id
    return (
        f'<details class="bchart-embed" data-search-exclude><summary>Link or embed</summary>{UNPUBLISHED}'
        f'<p>Link: <a class="bchart-permalink" href="#chart-{chart_id}">{_snippet_html(found["link"])}</a></p>'
        f"{rows}</details>"
    )


def absolute(html_text: str, site_url: str, page_url: str, published: bool = True) -> str:
    """Fill in the embed snippets' addresses for one page; `published` is false for a build without SITE_URL,
    whose snippets then say, beside them, that their addresses work only where the site was built."""
    site_url = site_url if site_url.endswith("/") else site_url + "/"
    note = "" if published else UNPUBLISHED_NOTE.format(site=text.h(site_url))
    return html_text.replace(UNPUBLISHED, note).replace(SITE_URL, site_url).replace(PAGE_URL, page_url)


# --------------------------------------------------------------------------- headings

_HEADING = re.compile(r"<h([2-6])((?:\s[^>]*)?)>(.*?)</h\1>", re.S | re.I)
_ID = re.compile(r'\sid="([^"]*)"')
_ANCHOR = re.compile(r'\sdata-anchor="([^"]*)"')
_TAGS = re.compile(r"<[^>]+>")


def anchor_slug(text: str) -> str:
    words = re.sub(r"[^\w\s-]", "", html.unescape(_TAGS.sub("", text)).lower().replace("¶", ""))
    return re.sub(r"[\s_-]+", "-", words).strip("-") or "section"


def permalinks(html_text: str) -> str:
    """Give every h2–h6 an id and a visible ¶ link to itself.

    A heading without an id gets one from its text (or its `data-anchor`: a device's h3 carries the
    device's slug), prefixed with its section's id, so the same heading under two devices gets two ids
    that do not depend on which device comes first."""
    seen = set(_ID.findall(html_text))
    parents: dict[int, str] = {}

    def one(match: re.Match) -> str:
        level, attrs, inner = int(match.group(1)), match.group(2), match.group(3)
        found = _ID.search(attrs)
        if found:
            ident = found.group(1)
        else:
            parent = next((parents[k] for k in range(level - 1, 1, -1) if k in parents), "")
            named = _ANCHOR.search(attrs)
            own = anchor_slug(named.group(1)) if named else anchor_slug(inner)
            base = f"{parent}--{own}" if parent and level > 2 else own
            ident, n = base, 2
            while ident in seen:
                ident, n = f"{base}-{n}", n + 1
            seen.add(ident)
            attrs = f' id="{ident}"{attrs}'
        for deeper in [k for k in parents if k >= level]:
            del parents[deeper]
        parents[level] = ident
        if "anchor-link" in inner:  # nbconvert's own ¶, pointed at the id the heading ended up with
            inner = re.sub(
                r'<a class="anchor-link" href="[^"]*"', f'<a class="anchor-link headerlink" href="#{ident}"', inner
            )
        elif "headerlink" not in inner:
            inner += f'<a class="headerlink" href="#{ident}" title="Link to this section">¶</a>'
        return f"<h{level}{attrs}>{inner}</h{level}>"

    return _HEADING.sub(one, html_text)


# --------------------------------------------------------------------------- moved ids

_FIGURE_ID = re.compile(r'<figure class="bchart" id="chart-([a-z0-9-]+)"')


def moved_here(html_text: str, built: Iterable[str], moved: dict[str, str] | None = None) -> str:
    """An anchor with each old id just before the chart that replaced it, so `page#chart-<old>` lands there."""
    moved = MOVED if moved is None else moved
    built = set(built)
    targets: dict[str, list[str]] = {}
    for old, new in moved.items():
        if old not in built:
            targets.setdefault(new, []).append(old)

    def one(match: re.Match) -> str:
        olds = targets.get(match.group(1), [])
        return "".join(f'<span id="chart-{old}" class="bchart-moved"></span>' for old in olds) + match.group(0)

    return _FIGURE_ID.sub(one, html_text) if targets else html_text


def built_ids(html_text: str) -> list[str]:
    return _FIGURE_ID.findall(html_text)


def write_moved_exports(charts_dir: Path, moved: dict[str, str] | None = None) -> list[str]:
    """Write the exports of every moved chart under its old id too (a static host cannot redirect a
    PNG); returns the old ids written."""
    moved = MOVED if moved is None else moved
    written = []
    for old, new in sorted(moved.items()):
        if (charts_dir / f"{old}.json").exists() or not (charts_dir / f"{new}.json").exists():
            continue
        for ext in EXPORTS:
            source = charts_dir / f"{new}.{ext}"
            if source.exists():
                shutil.copyfile(source, charts_dir / f"{old}.{ext}")
        written.append(old)
    return written
