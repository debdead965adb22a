"""Lines that break between phrases, never inside one ("1 min 43 s so far" whole).

Textual (like Rich) breaks a line at any space, the no-break space U+00A0 included (its
wrap splits on Python's ``\\s``), so F6's state line at 100 columns ended "1 min 0 s so" with
"far" on the next. A phrase is held whole with no-break spaces (``held``) and the line is
broken at its widget's width here (``broken_at``), at plain spaces only; the lines it makes
fit, so Textual leaves them as they are.
"""

from __future__ import annotations

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
