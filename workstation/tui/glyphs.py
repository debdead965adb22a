"""The symbols the app draws itself: bars, chart marks, arrows, the current profile's mark.

One place decides which: Unicode, or plain ASCII on the Linux console (``TERM=linux``, the
text screen a PC shows without a desktop), whose font has no eighth blocks, arrows or braille
and drew each as a diamond or a blank. The app reads ``glyphs()`` once and its screens ask it
(``app.glyphs``); Textual's own borders are its business.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Glyphs:
    plain: bool  # ASCII only: charts use letters for their marks
    eighths: str  # a bar's last cell by eighths of it, index 1 to 7 (index 0 unused)
    full: str  # a bar's whole cell
    track: str  # a progress bar's line
    spark: str  # a sparkline's heights, lowest first
    current: str  # the one in use in a list (F3's loaded profile)
    folded: str  # a block that opens (a long message, the model's thinking)
    unfolded: str  # …and one open
    line: str  # a chart legend's line
    rule: str  # a target's line in a legend
    attached: str  # a document attached to a draft
    between: str  # between a state and what it is about (the status line)
    delta: str  # "how much it changed" (F12's Δppl)
    marks: tuple[str, ...]  # a chart's series, told apart without colour (F10's lines)
    stacks: tuple[str, ...]  # …and the parts of a stacked bar


UNICODE = Glyphs(plain=False, eighths=" ▏▎▍▌▋▊▉", full="█", track="━", spark="▁▂▃▄▅▆▇█", current="●",
                 folded="▶", unfolded="▼", line="━━", rule="──", attached="📎", between="│", delta="Δ",
                 marks=("•", "x", "+", "o", "*", "#"), stacks=("█", "▒", "░"))
ASCII = Glyphs(plain=True, eighths=" ...::::", full="#", track="=", spark="_.-:=+*#", current="*",
               folded=">", unfolded="v", line="==", rule="--", attached="+", between="|", delta="d",
               marks=("@", "x", "+", "o", "*", "#"), stacks=("#", "=", "."))


def glyphs(environ: Mapping[str, str] | None = None) -> Glyphs:
    """ASCII on the Linux console (TERM linux, or a variant of it: linux-16color), else Unicode."""
    term = (os.environ if environ is None else environ).get("TERM", "")
    return ASCII if term == "linux" or term.startswith("linux-") else UNICODE
