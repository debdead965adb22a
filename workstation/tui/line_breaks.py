"""Lines that break between phrases, never inside one ("1 min 43 s so far" whole).

Textual (like Rich) breaks a line at any space, the no-break space U+00A0 included (its
wrap splits on Python's ``\\s``), so F6's state line at 100 columns ended "1 min 0 s so" with
"far" on the next. A phrase is held whole with no-break spaces (``held``) and the line is
broken at its widget's width here (``broken_at``), at plain spaces only; the lines it makes
fit, so Textual leaves them as they are. A path is broken after one of its slashes, never
inside a name (``paths_broken_at``: a notice ended "…Mr-Bro" with "wn.md" on the next line).
"""

from __future__ import annotations

import re
import textwrap

NO_BREAK = "\u00a0"


def held(phrase: str) -> str:
    """``phrase`` with its spaces made no-break: ``broken_at`` keeps it on one line."""
    return phrase.replace(" ", NO_BREAK)


def broken_at(text: str, width: int) -> str:
    """``text`` in lines of ``width`` columns at most, broken at plain spaces only (a ``held``
    phrase longer than a line is cut as Textual cuts a long word); its own lines stay."""
    if width <= 0:  # not laid out yet: Textual breaks it, and the next update breaks it here
        return text.replace(NO_BREAK, " ")
    lines = [textwrap.wrap(line, width, break_on_hyphens=False) or [""] for line in text.split("\n")]
    return "\n".join(part for parts in lines for part in parts).replace(NO_BREAK, " ")


class _PathWrapper(textwrap.TextWrapper):
    """Textwrap's lines, a word broken only after a slash of a path (/ or \\), not at its hyphens."""

    wordsep_re = re.compile(r"(\s+|[^\s/\\]*[/\\]+|[^\s/\\]+)")


def paths_broken_at(text: str, width: int) -> str:
    """``text`` in lines of ``width`` columns at most, broken at spaces and, inside a path too
    long for the line, after one of its slashes: Textual (as Rich) cuts a word longer than the
    line where the line ends, a file name in two ("…Mr-Bro" / "wn.md"). A name longer than a
    line is cut as Textual cuts it; ``text`` without a slash, or not laid out yet, as it is."""
    if width <= 0 or not any(mark in text for mark in "/\\"):
        return text
    wrapper = _PathWrapper(width, break_long_words=False, break_on_hyphens=True, replace_whitespace=False)
    return "\n".join(part for line in text.split("\n") for part in (wrapper.wrap(line) or [""]))
