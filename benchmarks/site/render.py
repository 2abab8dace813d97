"""Typed page parts, and the one renderer that turns them into HTML.

A page module builds a `Page`: named sections, each a list of parts (paragraphs, tables, figures,
takeaways, device sections). The notebook under docs/ shows a section with one call. Every string
in a part is plain text and is escaped here, on its way to HTML; only `Html` passes through as it
is, and `Html` is built by this package's own code from its own words, never from a results file.
Markdown is never built from data. Alt text, provenance, device introductions, the CPU notice and
takeaway boxes are written here once, not once per page.

Pure Python (no torch); IPython is imported only when a notebook shows a section.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from benchmarks.analysis.roofline.curves import Curve
from benchmarks.contract.errors import UserError
from benchmarks.contract.results import Run
from benchmarks.contract.text import printable
from benchmarks.site import glossary, text
from benchmarks.site.charts import SITE_ROOT, Figure, figure
from benchmarks.site.data import SiteData

ROOT = Path(__file__).resolve().parents[2]


class Html(str):
    """Markup written by this package's code; the renderer passes it through unescaped."""

    __slots__ = ()


Text = Union[str, Html, Sequence[Union[str, Html]]]  # noqa: UP007 (a runtime alias)


def inline(content: Any) -> str:
    """HTML of inline content: Html as it is, sequences joined, anything else escaped text."""
    if isinstance(content, Html):
        return str(content)
    if isinstance(content, (list, tuple)):
        return "".join(inline(item) for item in content)
    return text.h(content)


def tag(name: str, content: Any, **attributes: str) -> Html:
    """<name attributes>content</name>, the content escaped unless it is Html; `class_` and `data_x`
    name the attributes class and data-x."""
    attrs = "".join(f' {key.rstrip("_").replace("_", "-")}="{_attribute(value)}"' for key, value in attributes.items())
    return Html(f"<{name}{attrs}>{inline(content)}</{name}>")


def _attribute(value: Any) -> str:
    """An attribute's value escaped as text (`text.h`); a link this package wrote to a page of the site keeps its
    leading SITE_ROOT placeholder for the docs hook (only code builds an attribute that starts with it)."""
    value = str(value)
    if value.startswith(SITE_ROOT):
        return SITE_ROOT + text.h(value[len(SITE_ROOT) :])
    return text.h(value)


def strong(content: Any) -> Html:
    return tag("strong", content)


def code(content: Any) -> Html:
    return tag("code", content)


def link(content: Any, page: str) -> Html:
    """A link to another page of this site, e.g. link('Theory', 'theory/')."""
    return tag("a", content, href=f"{SITE_ROOT}{page}")


def term(words: str, name: str | None = None) -> Html:
    """`words` linked to the glossary's entry for `name` (default: the words themselves)."""
    entry = glossary.find(name or words)
    return tag("a", words, href=f"{SITE_ROOT}glossary/#{entry.slug}", class_="term", title=entry.definition)


URL = re.compile(r"https?://[^\s()<>]+[^\s()<>.,;:]")


def autolink(content: str) -> Html:
    """Plain text with every http(s) address made a link to another host (the rest escaped)."""
    pieces, start = [], 0
    for match in URL.finditer(content):
        pieces += [content[start : match.start()], tag("a", match.group(0), href=match.group(0))]
        start = match.end()
    return Html(inline([*pieces, content[start:]]))


# --------------------------------------------------------------------------- parts


@dataclass(frozen=True)
class Paragraph:
    content: Text


@dataclass(frozen=True)
class Heading:
    content: Text
    level: int = 4  # inside a device's section, whose own heading is h3 under the page's h2


@dataclass(frozen=True)
class Bullets:
    items: Sequence[Text]


@dataclass(frozen=True)
class Table:
    headers: Sequence[Text]
    rows: Sequence[Sequence[Text]]
    caption: Text = ""


@dataclass(frozen=True)
class Admonition:
    kind: str  # success, warning, note, example
    title: str
    body: Sequence[Any]  # parts


@dataclass(frozen=True)
class Details:
    summary: Text
    body: Sequence[Any]  # parts
    kind: str = ""  # an admonition class, e.g. "example"
    searched: bool = True  # False: left out of the site's search index (reference text every page would download)


@dataclass(frozen=True)
class SourceBox:
    """A file of this repository, highlighted, in a box: collapsed (the code that was timed) or open (code the
    reader is meant to run)."""

    path: str
    open: bool = False


@dataclass(frozen=True)
class DeviceSection:
    """One device's run: a heading, the device introduced once, then the parts."""

    run: Run
    body: Sequence[Any]
    note: Text = ""  # what this page adds to the introduction
    dtypes: Sequence[str] = ()  # the dtypes whose measured ceilings the introduction states
    older: int = 0  # older runs of this device that the page does not chart


Part = Any  # one of the dataclasses above, a Figure, or Html


def takeaway(content: Text, items: Sequence[Text] = (), *, title: str = "") -> Admonition:
    """The box that ends a page: the lesson and the measured facts behind it."""
    body: list[Any] = [Paragraph(content)]
    if items:
        body.append(Bullets(items))
    return Admonition("success", title or ("Takeaways" if items else "Takeaway"), body)


def _as_list(content: Text) -> list[Any]:
    return list(content) if isinstance(content, (list, tuple)) else [content]


# --------------------------------------------------------------------------- figures


def measured_figure(
    chart: Any,
    chart_id: str,
    caption: str,
    summary: str,
    curves: Sequence[Curve] | None = None,
    *,
    run: Run | None = None,
    where: str | None = None,
    findings: str = "",
) -> Figure:
    """A figure of measured data whose text description says what the chart draws (`summary`),
    where it was measured (device, dtype, mode and cache state of `curves`, or `where`), what it
    shows (`findings`) and which run it comes from. The caption under it shows the summary alone: the
    device and the run are stated once, where the page introduces the device."""
    run = run or (curves[0].run if curves else None)
    if where is None:
        where = text.describe_curves(curves) if curves else text.device_label(run)
    sentences = [summary.rstrip("."), f"Measured on {where}"]
    if findings:
        sentences.append(findings.rstrip("."))
    if run is not None:
        sentences.append(f"Data: {text.provenance(run)}")
    return figure(chart, chart_id, caption, ". ".join(sentences) + ".", summary.rstrip(".") + ".")


# --------------------------------------------------------------------------- rendering


def render(parts: Iterable[Part]) -> str:
    return "".join(render_part(part) for part in parts)


def render_part(part: Part) -> str:
    for kind, renderer in _RENDERERS.items():
        if isinstance(part, kind):
            return renderer(part)
    raise TypeError(f"cannot render a {type(part).__name__}")


def _table(part: Table) -> str:
    head = "".join(f"<th>{inline(h)}</th>" for h in part.headers)
    body = "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>" for row in part.rows)
    caption = f"<caption>{inline(part.caption)}</caption>" if part.caption else ""
    return (  # Material's own wrappers: a wide table scrolls inside the text column, not the page
        f'<div class="md-typeset__scrollwrap"><div class="md-typeset__table"><table>{caption}<thead><tr>{head}</tr>'
        f"</thead><tbody>{body}</tbody></table></div></div>"
    )


def _admonition(part: Admonition) -> str:
    return (
        f'<div class="admonition {text.h(part.kind)}"><p class="admonition-title">{inline(part.title)}</p>'
        f"{render(part.body)}</div>"
    )


def _details(part: Details) -> str:
    kind = f' class="{text.h(part.kind)}"' if part.kind else ""
    kind += "" if part.searched else " data-search-exclude"
    return f"<details{kind}><summary>{inline(part.summary)}</summary>{render(part.body)}</details>"


def _source(part: SourceBox) -> str:
    source = (ROOT / part.path).read_text(encoding="utf-8")
    highlighted = highlight(source, PythonLexer(), HtmlFormatter(cssclass="highlight"))
    opened = " open" if part.open else ""
    return f'<details class="example"{opened}><summary>{text.h(part.path)}</summary>{highlighted}</details>'


def device_intro(section: DeviceSection) -> Html:
    """The one introduction of a device on a page: name, kind, run, and its measured ceilings."""
    run = section.run
    words: list[Any] = [strong(text.device_label(run)), f" ({text.kind_word(run)} run; {text.provenance(run)})."]
    ceilings = text.ceilings_words(run, section.dtypes)
    if ceilings:
        words.append(f" Measured ceilings: {ceilings}.")
    if section.note:
        words += [" ", *_as_list(section.note)]
    if section.older:
        words.append(f" {section.older} older run(s) of this device are in the repository and not charted.")
    return Html(f"<p>{inline(words)}</p>")


def _device_section(part: DeviceSection) -> str:
    heading = tag("h3", text.device_label(part.run), data_anchor=part.run.device["slug"])  # names its permalink
    return f"{heading}{device_intro(part)}{render(part.body)}"


_RENDERERS: dict[type, Callable[[Any], str]] = {
    Html: str,
    Paragraph: lambda p: f"<p>{inline(p.content)}</p>",
    Heading: lambda p: f"<h{p.level}>{inline(p.content)}</h{p.level}>",
    Bullets: lambda p: "<ul>" + "".join(f"<li>{inline(item)}</li>" for item in p.items) + "</ul>",
    Table: _table,
    Admonition: _admonition,
    Details: _details,
    SourceBox: _source,
    DeviceSection: _device_section,
    Figure: lambda p: p._repr_html_(),
}


# --------------------------------------------------------------------------- pages


NO_RESULTS = Paragraph(
    [
        "No results are committed yet: run ",
        code("nox -s bench docs"),
        " to measure this machine.",
    ]
)


@dataclass
class Page:
    """Named sections of parts; a notebook shows one with `page.show(name)`, and ends with `page.show_takeaway()`:
    the box with the page module's lesson and, under it, the items it measured."""

    sections: Mapping[str, Sequence[Part]]
    data: SiteData | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # objects a visible cell may use
    takeaway_items: Sequence[Text] = ()  # what the page measured, as bullets under the lesson
    lesson: str = ""  # the takeaway's lesson: the page module's fixed words, inline HTML kept as it is

    def html(self, name: str) -> str:
        return render(self.sections[name])

    def text(self) -> str:
        """Every section's HTML, in order, and the takeaway's items (for tests)."""
        items = render([Bullets(self.takeaway_items)]) if self.takeaway_items else ""
        return "".join(self.html(name) for name in self.sections) + items

    def takeaway_html(self, lesson: str | None = None, *, title: str = "") -> str:
        """The box that ends the page, with `lesson` (default: the page's). A lesson is written in code, so its inline
        HTML (a subscript, a link) is kept as it is; what it quotes from a file is escaped where it is computed."""
        return render([takeaway(Html(self.lesson if lesson is None else lesson), self.takeaway_items, title=title)])

    def show(self, name: str) -> None:
        from IPython.display import HTML, display

        display(HTML(self.html(name)))

    def show_takeaway(self, lesson: str | None = None, *, title: str = "") -> None:
        from IPython.display import HTML, display

        display(HTML(self.takeaway_html(lesson, title=title)))


class PageDataError(UserError):
    """A page could not be built from a file that validated: one line naming the file and what failed."""


@contextmanager
def drawing_from(path: Path | str) -> Iterator[None]:
    """Inside, any failure becomes one PageDataError naming the results file being drawn (the first one named,
    when drawing one file leads into another)."""
    try:
        yield
    except PageDataError:
        raise
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise PageDataError(
            printable(
                f"{path}: the file validates, but this page cannot be built from it: {type(exc).__name__}: {first}"
            )
        ) from exc


def device_sections(
    data: SiteData, build: Callable[[Run], DeviceSection], empty: Part = NO_RESULTS, workloads: tuple[str, ...] = ()
) -> list[Part]:
    """One DeviceSection per device the site shows (per run a page's `workloads` come from, when a
    device's newest runs measured different ones), or `empty` when there is none."""
    runs = data.shown_for(*workloads) if workloads else data.shown
    return [_built(build, run) for run in runs] or [empty]


def _built(build: Callable[[Run], DeviceSection], run: Run) -> DeviceSection:
    with drawing_from(run.path):
        return build(run)
