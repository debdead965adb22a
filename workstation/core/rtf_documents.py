"""Rich Text (.rtf, or any file that starts ``{\\rtf``) read into a ``Document``: a linear
tokenizer with a nesting cap, code pages from ``\\ansicpg`` and ``\\fcharset``, ``\\uN`` with
``\\ucN``, ``\\bin`` jumped over; destinations that hold no text (fonts, colours, pictures,
headers and footers) skipped."""

from __future__ import annotations

import codecs
import re
import time
from pathlib import Path

from workstation.core.documents import (
    Document,
    DocumentBuilder,
    DocumentError,
    Limits,
    add_notes,
    roman_numeral,
)

# --- RTF ----------------------------------------------------------------------------------------
# one token at a time, no recursion: a control word and its number (a space after it is part of
# it), a byte in hex (\'fc), a control symbol (\{ \~ \*), a brace, a run of text; line ends
# in the file are nothing
_RTF_TOKEN = re.compile(rb"\\([a-zA-Z]{1,32})(-?[0-9]{1,10})? ?|\\'([0-9a-fA-F]{2})|\\(.)|([{}])|([^\\{}\r\n]+)|[\r\n]+|\\",
                        re.S)
_RTF_MAX_DEPTH = 1000  # groups within groups (Word writes a few dozen)
# destinations that are no running text: tables of fonts, colours and styles, the document's
# properties, pictures and objects, headers and footers (as the DOCX reader), field codes,
# comments, index entries
_RTF_SKIP = frozenset(
    "colortbl stylesheet info pict object objdata header footer headerl headerr headerf footerl footerr footerf "
    "listtable listoverridetable revtbl rsidtbl generator xmlnstbl fldinst themedata colorschememapping "
    "latentstyles datastore filetbl pgdsctbl nonshppict shpinst annotation atnid atnauthor xe tc txe "
    "bkmkstart bkmkend private operator author title subject keywords comment doccomm".split())
_RTF_CHARS = {b"par": "\n", b"line": "\n", b"sect": "\n", b"page": "\n", b"row": "\n", b"tab": "\t",
              b"cell": "\x1f", b"nestcell": "\x1f", b"emdash": "\u2014", b"endash": "\u2013", b"bullet": "\u2022",
              b"lquote": "\u2018", b"rquote": "\u2019", b"ldblquote": "\u201c", b"rdblquote": "\u201d",
              b"emspace": " ", b"enspace": " ", b"qmspace": " "}
_RTF_SYMBOLS = {b"\\": "\\", b"{": "{", b"}": "}", b"~": "\u00a0", b"_": "\u2011", b"\n": "\n", b"\r": "\n", b"\t": "\t"}
# a font's \fcharset: the code page its \'hh bytes are in (Turkish 162: cp1254)
_RTF_CHARSETS = {77: "mac_roman", 128: "cp932", 129: "cp949", 134: "gbk", 136: "cp950", 161: "cp1253",
                 162: "cp1254", 163: "cp1258", 177: "cp1255", 178: "cp1256", 186: "cp1257", 204: "cp1251",
                 222: "cp874", 238: "cp1250"}


def _codec(name: str) -> str | None:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def read_rtf(path: Path, data: bytes, limits: Limits, deadline: float) -> Document:
    """Rich Text Format (WordPad, Word, TextEdit): text from a bounded, linear tokenizer.
    Skipped: the destinations of _RTF_SKIP and ``{\\*...}`` ignorable ones; \\par and \\line
    are line ends, \\cell and \\row table rows ('a | b | c'); ``\\'hh`` bytes are decoded with the
    font's \\fcharset or the file's \\ansicpg code page (cp1254 Turkish; cp1252 without one);
    \\uN is a Unicode letter followed by \\ucN stand-ins that are skipped; \\bin data is
    jumped over. Footnotes (\\footnote) are marked and listed as in DOCX."""
    name = path.name
    default_cp = "cp1252"
    fonts: dict[int, str] = {}  # \fN -> its code page (from the font table)
    default_font = None
    # a group's state: where its text goes (body, skip, font table, or a note's number),
    # its \ucN, its font, whether it is hidden (\v)
    dest: str | int = "body"
    uc, font, hidden = 1, None, False
    stack: list[tuple[str | int, int, int | None, bool]] = []
    body: list[str | tuple[int]] = []  # text, and a note's place (its index) to number at the end
    notes: list[tuple[str, list[str]]] = []  # (footnote | endnote, its text)
    pending = bytearray()  # \'hh and 8-bit bytes waiting to be decoded in one go (a double-byte code page)
    skip = 0  # stand-ins left to skip after a \uN
    chars = 0
    font_number: int | None = None  # in the font table: the font being described

    def out(text: str) -> None:
        nonlocal chars
        if dest == "body":
            body.append(text)
        elif isinstance(dest, int):
            notes[dest][1].append(text)
        else:
            return
        chars += len(text)
        if chars > limits.max_text_chars:
            raise DocumentError(said=[("doc.too_much_text", {"name": name, "chars": f"{limits.max_text_chars:,}"})])

    def flush() -> None:  # (before anything that may change the group, its font or where text goes)
        if pending:
            current = font if font is not None else default_font
            out(pending.decode(fonts.get(current, default_cp) if current is not None else default_cp, "replace"))
            pending.clear()

    pos, end, tokens = 0, len(data), 0
    token = _RTF_TOKEN
    while pos < end:
        m = token.match(data, pos)
        if m is None:  # (cannot happen: every byte starts some token)
            pos += 1
            continue
        pos = m.end()
        tokens += 1
        if tokens & 1023 == 0 and time.monotonic() > deadline:
            raise DocumentError(said=[("doc.too_slow_here", {"name": name, "seconds": f"{limits.timeout_s:.0f}"})])
        word, param, hexbyte, symbol, brace, run = m.groups()
        if run is not None or hexbyte is not None:
            raw = run if run is not None else bytes([int(hexbyte, 16)])
            if skip:
                cut = min(skip, len(raw))
                skip -= cut
                raw = raw[cut:]
            if raw and dest not in ("skip", "font") and not hidden:
                pending.extend(raw)
            continue
        flush()
        if brace is not None:
            skip = 0
            if brace == b"{":
                if len(stack) >= _RTF_MAX_DEPTH:
                    raise DocumentError(said=[("doc.too_nested", {"name": name})])
                stack.append((dest, uc, font, hidden))
            elif stack:
                dest, uc, font, hidden = stack.pop()
            continue
        if symbol is not None:
            if skip:
                skip -= 1
                continue
            if symbol == b"*":
                dest = "skip"  # an ignorable destination: what this reader does not know
            elif symbol in _RTF_SYMBOLS and not hidden:
                out(_RTF_SYMBOLS[symbol])
            continue
        if word is None:
            continue  # a line end in the file, or a lone backslash at its end
        number = int(param) if param is not None else None
        if word == b"bin":  # binary data: jumped over, however long it says it is
            pos = min(end, pos + max(0, number or 0))
            continue
        if skip:
            skip -= 1
            continue
        if word == b"u" and number is not None:
            if not hidden:
                out(chr(number % 65536))
            skip = uc
        elif word == b"uc":
            uc = max(0, min(number or 0, 10))
        elif word in _RTF_CHARS:
            if not hidden:
                out(_RTF_CHARS[word])
        elif word == b"ansicpg":
            default_cp = _codec(f"cp{number}") or default_cp
        elif word in (b"mac", b"pc", b"pca"):
            default_cp = {b"mac": "mac_roman", b"pc": "cp437", b"pca": "cp850"}[word]
        elif word == b"deff":
            default_font = number
        elif word == b"fonttbl":
            dest = "font"
        elif word == b"f" and number is not None:
            if dest == "font":
                font_number = number
            else:
                font = number
        elif word == b"fcharset" and dest == "font" and font_number is not None and number in _RTF_CHARSETS:
            fonts[font_number] = _RTF_CHARSETS[number]
        elif word == b"cpg" and dest == "font" and font_number is not None:
            fonts[font_number] = _codec(f"cp{number}") or fonts.get(font_number, default_cp)
        elif word == b"v":
            hidden = number != 0
        elif word == b"footnote" and dest == "body":
            body.append((len(notes),))
            notes.append(("footnote", []))
            dest = len(notes) - 1
        elif word == b"ftnalt" and isinstance(dest, int):
            notes[dest] = ("endnote", notes[dest][1])
        elif word.decode() in _RTF_SKIP:
            dest = "skip"
    flush()

    marks: dict[int, str] = {}
    lines: dict[str, list[str]] = {"footnote": [], "endnote": []}
    for index, (kind, parts) in enumerate(notes):
        number = len(lines[kind]) + 1
        marks[index] = str(number) if kind == "footnote" else roman_numeral(number)
        text = " ".join(_rtf_clean("".join(parts)).split())
        lines[kind].append(f"[{marks[index]}] {text}".rstrip())
    text = _rtf_clean("".join(part if isinstance(part, str) else f"[{marks[part[0]]}]" for part in body))
    builder = DocumentBuilder(name, limits, deadline)
    builder.add(text)
    add_notes(builder, "Footnotes", lines["footnote"])
    add_notes(builder, "Endnotes", lines["endnote"])
    if not builder.text().strip():
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    return Document(str(path), "rtf", builder.text(), builder.sections, default_cp)


def _rtf_clean(text: str) -> str:
    """RTF's text tidied: a table row's cells 'a | b | c', surrogate pairs (\\u-10179\\u-8704)
    made one letter, no spaces at line ends, at most one blank line in a row."""
    text = re.sub(r"\x1f[ \t]*(?=\n|$)", "", text).replace("\x1f", " | ")
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = "\n".join(line.rstrip(" \t\u00a0") for line in text.split("\n"))  # (a regex here was quadratic in a run of spaces)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
