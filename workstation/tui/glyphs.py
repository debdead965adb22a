"""The symbols the app draws itself: bars, chart marks, arrows, the current profile's mark;
and what the terminal is sent in place of the characters it cannot show.

One place decides which: Unicode, or plain ASCII on the Linux console (``TERM=linux``, the
text screen a PC shows without a desktop), whose font has no eighth blocks, arrows or braille
and drew each as a diamond or a blank, and under a language setting that is not UTF-8
(``LANG=C`` over SSH: the terminal shows each byte of a UTF-8 character as a letter of its
own, and every line after one runs out of its columns). The app reads ``glyphs()`` once and
its screens ask it (``app.glyphs``). What Textual draws itself (the message box's and the
buttons' borders, scroll bars, the palette's magnifier, the header's circle) and what a
model writes (an emoji, a dash) reach such a terminal through ``terminal_table()``: each
character it lacks becomes ASCII of the same width.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from rich.cells import get_character_cell_size


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
    folder: str  # a folder in a file list (Ctrl+O's), with the space after it
    folder_open: str  # …one open in it
    file: str  # …and a file


UNICODE = Glyphs(plain=False, eighths=" ▏▎▍▌▋▊▉", full="█", track="━", spark="▁▂▃▄▅▆▇█", current="●",
                 folded="▶", unfolded="▼", line="━━", rule="──", attached="📎", between="│", delta="Δ",
                 marks=("•", "x", "+", "o", "*", "#"), stacks=("█", "▒", "░"),
                 folder="📁 ", folder_open="📂 ", file="📄 ")
ASCII = Glyphs(plain=True, eighths=" ...::::", full="#", track="=", spark="_.-:=+*#", current="*",
               folded=">", unfolded="v", line="==", rule="--", attached="+", between="|", delta="d",
               marks=("@", "x", "+", "o", "*", "#"), stacks=("#", "=", "."),
               folder="[+] ", folder_open="[-] ", file="    ")


Charset = Literal["unicode", "console", "ascii"]
# what Python sets LC_CTYPE to under the C locale (PEP 538), so that LANG=C reads as LC_CTYPE=C.UTF-8
_COERCED = ("C.UTF-8", "C.utf8", "UTF-8")


def locale_setting(environ: Mapping[str, str] | None = None) -> str:
    """The language setting that names the terminal's charset: the first of LC_ALL, LC_CTYPE
    and LANG that is set, as tmux and ncurses read it ('' where none is). Python started under
    LANG=C sets LC_CTYPE=C.UTF-8 for itself (PEP 538): that one is passed over."""
    env = os.environ if environ is None else environ
    names = ["LC_ALL", "LC_CTYPE", "LANG"]
    if env.get("LANG") and env.get("LC_CTYPE") in _COERCED:  # Python's own, not the person's
        names.remove("LC_CTYPE")
    return next((env[name] for name in names if env.get(name)), "")


def terminal_charset(environ: Mapping[str, str] | None = None) -> Charset:
    """What the terminal can show: ``ascii`` under a language setting (``locale_setting``)
    that names a charset other than UTF-8 (C, POSIX, en_US.ISO-8859-1), ``console`` on the
    Linux console (TERM linux, or a variant of it: linux-16color), whose font has the Latin
    letters (Turkish's too) and little else, ``unicode`` elsewhere (no setting at all counts
    as UTF-8, today's default)."""
    env = os.environ if environ is None else environ
    locale = locale_setting(env)
    if locale and "UTF8" not in locale.upper().replace("-", ""):
        return "ascii"
    term = env.get("TERM", "")
    return "console" if term == "linux" or term.startswith("linux-") else "unicode"


def glyphs(environ: Mapping[str, str] | None = None) -> Glyphs:
    """ASCII where the terminal cannot show Unicode's symbols (``terminal_charset``), else Unicode."""
    return UNICODE if terminal_charset(environ) == "unicode" else ASCII


# what the characters Textual and the app draw most look like in ASCII (by their shape)
_LOOKS_LIKE = {
    **dict.fromkeys("▁▂▃_", "_"), **dict.fromkeys("▔‾", "-"), **dict.fromkeys("▏▎▍▌▋▊▉▐▕", "|"),
    **dict.fromkeys("█▄▅▆▇▀▓■", "#"), "▒": ":", "░": ".", **dict.fromkeys("…·•∙", "."),
    **dict.fromkeys("‐‑‒–—―−", "-"), **dict.fromkeys("‘’‚′", "'"), **dict.fromkeys("“”„″", '"'),
    **dict.fromkeys("«‹", "<"), **dict.fromkeys("»›", ">"), **dict.fromkeys("▶►▸→⇒", ">"),
    **dict.fromkeys("◀◄◂←⇐", "<"), **dict.fromkeys("▲▴↑", "^"), **dict.fromkeys("▼▾↓", "v"),
    **dict.fromkeys("●◉⭘○◯✱★", "o"), **dict.fromkeys("✓✔", "v"), **dict.fromkeys("×✕✗✘", "x"),
    "ı": "i", "İ": "I", "ß": "s", "æ": "a", "Æ": "A", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D",
    "ł": "l", "Ł": "L", "€": "E", "°": "o", "±": "+", "÷": "/", "Δ": "d", "≈": "~", "≤": "<", "≥": ">",
    "\N{NO-BREAK SPACE}": " ",
}


def _in_ascii(character: str) -> str:
    """``character`` as ASCII of the width it takes on screen: its look-alike, its letter
    without the accent (ç c, ş s), or '?' a cell."""
    width = get_character_cell_size(character)
    if width == 0:  # a joiner, an accent of its own, an emoji's variation selector
        return ""
    if character in _LOOKS_LIKE:
        return _LOOKS_LIKE[character]
    if "BOX DRAWINGS" in (name := unicodedata.name(character, "")):
        words = set(name.split())
        across, down = bool(words & {"HORIZONTAL", "LEFT", "RIGHT"}), bool(words & {"VERTICAL", "UP", "DOWN"})
        return "+" if across == down else ("=" if "DOUBLE" in words else "-") if across else "|"
    letters = "".join(c for c in unicodedata.normalize("NFKD", character) if c.isascii() and c.isprintable())
    return letters if len(letters) == width else "?" * width


class _TerminalTable(dict[int, str | int]):
    """A ``str.translate`` table worked out a character at a time, as the screen meets them."""

    def __init__(self, keeps: Callable[[int], bool]) -> None:
        super().__init__()
        self.keeps = keeps

    def __missing__(self, code: int) -> str | int:
        self[code] = value = code if self.keeps(code) else _in_ascii(chr(code))
        return value


def _console_keeps(code: int) -> bool:
    """The Linux console's font (Lat15, Uni2): ASCII, and the Latin letters of Western Europe
    and Turkish (up to U+017F: ç ğ ı ş İ)."""
    return code < 0x80 or 0xA0 <= code <= 0x17F


def terminal_table(charset: Charset) -> Mapping[int, str | int] | None:
    """What ``str.translate`` makes of the screen's text for this terminal; None where the
    terminal shows it as it is."""
    if charset == "unicode":
        return None
    return _TerminalTable(_console_keeps if charset == "console" else lambda code: code < 0x80)
