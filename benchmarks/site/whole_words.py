"""Keep a table cell's words whole: a browser may end a line after a hyphen, a dash or a slash, which splits
"TensorRT-LLM", "(116–151)" or "train/decode" over two lines of a narrow cell. Every such word in a table cell is
wrapped in `<span class="whole">`, which the site's stylesheet keeps on one line (`white-space: nowrap`); the
cell may still wrap between words. Text inside code, math, SVG, scripts and styles is left as it is."""

from __future__ import annotations

import re

_BREAKS = "\\-\u2010-\u2014/"  # where a browser may end a line inside a word: hyphens, dashes, a slash
_WORD = re.compile(rf"[^\s<>]*[^\s<>{_BREAKS}][{_BREAKS}]+[^\s<>]+")
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)\b[^>]*?(/?)>|<!--.*?-->", re.S)
_CELL = {"td", "th"}
_LEAVE = {"script", "style", "code", "pre", "math", "svg", "kbd", "samp", "textarea"}
_VOID = {"br", "img", "input", "hr", "wbr", "col", "meta", "link", "source", "area", "base", "embed", "track"}


def keep_table_words_whole(html: str) -> str:
    """`html` with every word of a td or th cell that a browser could break at a hyphen, dash or slash wrapped in
    `<span class="whole">`. Tags and entities are never split: a word is whole text between tags."""
    out: list[str] = []
    cells = 0  # open td/th elements around the text
    left = 0  # open elements whose text is left alone
    at = 0
    for tag in _TAG.finditer(html):
        text = html[at : tag.start()]
        out.append(_wrap(text) if cells and not left else text)
        out.append(tag.group(0))
        at = tag.end()
        if tag.group(2) is None:  # a comment
            continue
        name = tag.group(2).lower()
        closing, self_closing = tag.group(1) == "/", tag.group(3) == "/"
        if self_closing or name in _VOID:
            continue
        step = -1 if closing else 1
        if name in _CELL:
            cells = max(0, cells + step)
        elif name in _LEAVE:
            left = max(0, left + step)
    text = html[at:]
    out.append(_wrap(text) if cells and not left else text)
    return "".join(out)


def _wrap(text: str) -> str:
    return _WORD.sub(lambda m: f'<span class="whole">{m.group(0)}</span>', text)
