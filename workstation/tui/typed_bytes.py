"""Keys typed in a terminal that does not send UTF-8.

Textual reads the keyboard as UTF-8 and ended the app with a UnicodeDecodeError traceback
at the first other byte: an é typed in PuTTY set to ISO-8859-1 (an old default), or in any
terminal over SSH under a Latin-1 or Turkish ISO-8859-9 language setting. A byte that is not
UTF-8 is read in the charset the language setting names (tr_TR.ISO-8859-9: ş), else as
Windows' Western European (cp1252: é, and the € and quotes that Latin-1 lacks), so what was
typed reaches the message box.
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping

from workstation.tui.glyphs import locale_setting

ERRORS = "workstation-typed"  # the codec error handler's name, for Textual's key decoder
KEY_READ = 16  # bytes a read of the keyboard holds at most for one key (a paste comes in larger reads)


def typed_charset(environ: Mapping[str, str] | None = None) -> str:
    """The charset the language setting names (``locale_setting``: tr_TR.ISO-8859-9), where
    Python has a codec for it and it is not UTF-8; cp1252 otherwise."""
    named = locale_setting(environ).partition(".")[2].partition("@")[0]
    try:
        codec = codecs.lookup(named).name if named else ""
    except LookupError:
        codec = ""
    return codec if codec and codec != "utf-8" else "cp1252"


def _read_in_charset(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    bad = error.object[error.start:error.end]
    return bytes(bad).decode(typed_charset(), errors="replace"), error.end


def tolerant_decoder(encoding: str) -> type[codecs.IncrementalDecoder]:
    """``codecs.getincrementaldecoder``, its decoders reading a byte that is not ``encoding``
    as ``typed_charset`` does (the name Textual's Linux driver calls for its key decoder)."""
    decoder = codecs.getincrementaldecoder(encoding)

    class Tolerant(decoder):  # type: ignore[valid-type, misc]
        def __init__(self, errors: str = ERRORS) -> None:
            super().__init__(errors)

        def decode(self, data: bytes, final: bool = False) -> str:
            text: str = super().decode(data, final)
            if not final and len(data) <= KEY_READ and len(self.getstate()[0]) == 1:
                # a key read alone whose byte begins a UTF-8 character: a Latin-1 é (E9), ç, Ö,
                # not half of one (a UTF-8 terminal sends a character whole); it was held back,
                # unseen, until the next key was typed
                text += super().decode(b"", True)
            return text

    return Tolerant


codecs.register_error(ERRORS, _read_in_charset)
