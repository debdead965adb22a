"""Pasted text stays text: Textual's key parser reads an escape code inside a bracketed paste
(coloured output copied from a terminal or a log: ``ESC[31m``) as the start of a key, and gives
what follows back as key presses; a bell (``\\a``, Ctrl+G) in it started the API server, and a
``\\r`` sent the message. ``PasteGuard`` holds a paste until its end marker and hands the parser
the pasted text without escape codes and control characters (tabs and line breaks kept)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from textual._xterm_parser import XTermParser
from textual.message import Message

PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
# CSI (colours, cursor moves), OSC (titles, links: ended by BEL or ESC \), other two-byte escapes
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]")  # all but \t \n \r


def pasted_text(raw: str) -> str:
    """What a paste holds as text: escape codes and control characters taken out."""
    return _CONTROLS.sub("", _ESCAPES.sub("", raw))


class PasteGuard(XTermParser):
    """Textual's parser, fed a paste only when it is whole, and cleaned (``pasted_text``)."""

    def __init__(self, debug: bool = False) -> None:
        super().__init__(debug)
        self._tail = ""  # the last characters passed on outside a paste: a start marker split across reads
        self._paste: str | None = None  # what arrived of a paste so far

    def feed(self, data: str) -> Iterable[Message]:
        if not data:  # the end of input
            return super().feed(data)
        out: list[str] = []
        while data:
            if self._paste is None:
                joined = self._tail + data
                at = joined.find(PASTE_START)
                if at < 0:
                    out.append(data)
                    self._tail = joined[-(len(PASTE_START) - 1) :]
                    break
                cut = at + len(PASTE_START) - len(self._tail)  # just after the marker, in data
                out.append(data[:cut])
                data, self._tail, self._paste = data[cut:], "", ""
            else:
                looked = max(0, len(self._paste) - len(PASTE_END) + 1)  # (what came before was looked at)
                self._paste += data
                at = self._paste.find(PASTE_END, looked)
                if at < 0:
                    break
                out.append(pasted_text(self._paste[:at]) + PASTE_END)
                data, self._paste = self._paste[at + len(PASTE_END) :], None
        text = "".join(out)
        return super().feed(text) if text else ()


def guard_pastes() -> bool:
    """Make Textual's terminal driver read keys with ``PasteGuard``; False where this Textual
    has no such driver (then nothing changes)."""
    try:
        from textual.drivers import linux_driver
    except ImportError:  # (Windows: Textual's own driver there)
        return False
    if getattr(linux_driver, "XTermParser", None) not in (XTermParser, PasteGuard):
        return False  # another Textual: its parser is not the one this guard knows
    linux_driver.XTermParser = PasteGuard  # type: ignore[misc]
    return True
