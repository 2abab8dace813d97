"""Text from files is text: the one rule that every string of a results file, sweep or serving check obeys,
and the one way text from a file is written to a terminal.

A string may not hold control characters (C0, DEL, C1), bidirectional overrides, embeddings, isolates and
marks, zero-width characters or line and paragraph separators: each can make a terminal run commands of its
own, or make a name read as another (a right-to-left override, U+202E, shows the rest
of a name backwards). Nothing a benchmark writes needs them.

Pure Python: nothing on this module's import path may import torch.
"""

from __future__ import annotations

import re

_HIDDEN = (
    "\x00-\x1f\x7f-\x9f"  # C0 controls (ESC, newline, tab ...), DEL and C1 controls (CSI ...)
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional marks, embeddings, overrides and isolates
    "\u200b-\u200d\u2060\ufeff"  # zero-width space, non-joiner, joiner, word joiner, byte order mark
    "\u2028\u2029"  # line and paragraph separators
)
HIDDEN = re.compile(f"[{_HIDDEN}]")


def text_problem(value: str, *, lines: bool = False) -> str | None:
    """Why `value` cannot be a text field of a file, or None when it can. With `lines`, line breaks are
    allowed (a quotation of several lines); nothing else hidden is."""
    if value.isprintable():  # the common case, and fast: no hidden character is printable
        return None
    for match in HIDDEN.finditer(value):
        char = match.group()
        if lines and char == "\n":
            continue
        return (
            f"must not hold control, bidirectional or zero-width characters (U+{ord(char):04X} at character "
            f"{match.start() + 1})"
        )
    return None


def printable(value: object) -> str:
    """`value` as text that is safe to print to a terminal: every control, bidirectional or zero-width
    character (and anything else Python cannot print) written as its escape, e.g. ESC as \\x1b."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable_lines(lines: list[str] | tuple[str, ...]) -> str:
    """The lines joined for a terminal, each made printable (see `printable`)."""
    return "\n".join(printable(line) for line in lines)
