"""Read documents (.txt/.md, .pdf, .docx, .odt, .xlsx, .ods, .pptx, .odp, .rtf, .html, .eml) into text
with pages, sections, sheets or slides.

Documents come from e-mail and the internet, so every reader is bounded: a file-size cap, a
page cap, a cap on the extracted text and on a workbook's cells, a decompressed-size and
compression-ratio check of an office file's zip members *before* anything is decompressed, a nesting-depth cap (RTF), and
a wall-clock deadline checked between pages. ``read_document(path, isolate=True)`` also runs the reader in a child process
with a memory limit and a hard timeout, so even a parser bug cannot hang or exhaust the
workstation. Every failure is one ``DocumentError`` sentence that names the file.
"""

from __future__ import annotations

import codecs
import contextlib
import multiprocessing as mp
import os
import re
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workstation import READER_PROCESS
from workstation.core.child_process import start_child
from workstation.core.errors import WorkstationError
from workstation.core.invocation import cli, shell_word
from workstation.core.letters import closest_name
from workstation.core.phrases import Phrase, say
from workstation.core.table_facts import MAX_CELLS, SheetFacts, table_facts

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".text", ".rst", ".csv", ".tsv")  # (a spreadsheet saved as text: summarize read it, batch left it alone)
HTML_SUFFIXES = (".html", ".htm", ".xhtml")
# Office files: Word, Excel and PowerPoint (with macros too), and OpenDocument's text, spreadsheet, slides
OFFICE_SUFFIXES = (".docx", ".odt", ".xlsx", ".xlsm", ".ods", ".pptx", ".pptm", ".odp")
SUPPORTED_SUFFIXES = (*TEXT_SUFFIXES, ".pdf", *OFFICE_SUFFIXES, ".rtf", ".eml", *HTML_SUFFIXES)
# what a kind of file is called (its locale key) where the kinds the app reads are listed: Ctrl+O's
# hint, Ctrl+P and F1's line for attaching, summarize --help (``Texts.file_kinds``). Its 22 endings
# listed one by one (.rst .tsv .xlsm .pptm .eml .xhtml …) read as a puzzle to a first-time user, and
# lists written by hand left CSV out while Ctrl+O listed it.
FILE_KIND_WORDS: dict[str, str] = {
    **dict.fromkeys((".txt", ".md", ".markdown", ".text", ".rst"), "picker.kind_text"),
    **dict.fromkeys((".docx", ".odt", ".rtf"), "picker.kind_word"),
    ".pdf": "picker.kind_pdf",
    **dict.fromkeys((".xlsx", ".xlsm", ".ods"), "picker.kind_sheet"),
    **dict.fromkeys((".csv", ".tsv"), "picker.kind_csv"),
    **dict.fromkeys((".pptx", ".pptm", ".odp"), "picker.kind_slides"),
    ".eml": "picker.kind_email",
    **dict.fromkeys((".html", ".htm", ".xhtml"), "picker.kind_web"),
}


class DocumentError(WorkstationError):
    """A document could not be read (missing, too big, damaged, hostile or unsupported)."""


# why a document could not be read where the reason was the PC's, not the document's: its memory, a
# reader slow on a busy PC, a file this user may not read, a disk or a share that failed, a reader's
# own fault; another try may read it. (Any other reader's phrase is the document's own: damaged, not
# what its name says, locked, too big: trying it again cannot help, saving it again may.)
NOT_THE_DOCUMENTS = frozenset({"doc.no_permission", "doc.unreadable", "doc.no_memory", "doc.reader_memory",
                               "doc.too_slow", "doc.too_slow_here", "doc.reader_failed"})
NOTHING_TO_READ = frozenset({"doc.empty", "doc.no_text"})  # a document with no text: nothing to summarize


def the_documents_own(said: list[Phrase]) -> bool:
    """Whether a document that could not be read (``said``: why, as the reader said it) is at fault
    itself (``NOT_THE_DOCUMENTS``), so that another try of it as it is cannot help; not where it was
    said otherwise (a server's or a queue's reason, or English alone: an older workstation's queue)."""
    return bool(said) and said[0][0].startswith("doc.") and said[0][0] not in NOT_THE_DOCUMENTS


def nothing_to_read(said: list[Phrase]) -> bool:
    """Whether ``said`` is why a document has no text in it at all (an empty file, say)."""
    return bool(said) and said[0][0] in NOTHING_TO_READ


@dataclass
class Limits:
    """Bounds on what reading one document may cost."""

    max_file_bytes: int = 64 * 2**20  # the file on disk
    max_pages: int = 3000  # PDF pages
    max_text_chars: int = 20_000_000  # extracted text
    max_unzipped_bytes: int = 256 * 2**20  # DOCX: sum of the zip members' declared sizes
    max_zip_ratio: float = 100.0  # DOCX: uncompressed / compressed for any member over 1 MiB
    max_zip_members: int = 5000
    timeout_s: float = 120.0  # wall clock for extracting the text
    max_memory_bytes: int = 2 * 2**30  # address space the isolated reader (isolate=True) may add to its own
    max_cells: int = MAX_CELLS  # a workbook's filled cells read (shared among its sheets; the rest said to be left out)


DEFAULT_LIMITS = Limits()


@dataclass
class Section:
    """A page (PDF) or a section under a heading (DOCX, Markdown, HTML) of ``Document.text``."""

    start: int  # character offsets into Document.text
    end: int
    number: int  # page number (1-based) or section index (1-based)
    title: str | None = None
    kind: str = "section"  # page | section
    # what a part of the text that begins inside this section is read after, where its start
    # alone would not say (a sheet's name and first row: which columns the numbers are in)
    lead: str | None = None

    @property
    def label(self) -> str:
        if self.kind == "page":
            return f"p. {self.number}"
        return f"§ {self.title}" if self.title else f"section {self.number}"


@dataclass
class Document:
    source: str
    kind: str  # text | markdown | pdf | docx | odt | xlsx | ods | pptx | odp | rtf | html | email
    text: str
    sections: list[Section] = field(default_factory=list)
    encoding: str | None = None
    # a table's facts counted by the program (a workbook's sheets, a CSV file): summarize gives
    # them to the model, to use in place of figures of its own, and shows them under the summary
    facts: list[SheetFacts] = field(default_factory=list)
    # what the reader left out or cut, a sentence each, said where the person sees it (the attach
    # line, the summary's head): a workbook read up to its cells, its hidden sheets left out
    notes: list[Phrase] = field(default_factory=list)

    @property
    def name(self) -> str:
        return Path(self.source).name

    @property
    def pages(self) -> int | None:
        return len(self.sections) if self.kind == "pdf" else None

    def sections_in(self, start: int, end: int) -> list[Section]:
        """The sections that overlap the character span [start, end)."""
        return [s for s in self.sections if s.start < max(end, start + 1) and s.end > start]

    def cite(self, start: int, end: int) -> str:
        """Where the span [start, end) came from: 'pp. 3–5', '§ Methods', or 'lines 10–42'."""
        return say([self.cite_phrase(start, end)])

    def cite_phrase(self, start: int, end: int) -> Phrase:
        """``cite`` as a phrase (the TUI says 's. 3–5' and 'satır 10–42' in Turkish)."""
        secs = self.sections_in(start, end)
        if secs and secs[0].kind == "page":
            a, b = secs[0].number, secs[-1].number
            return ("cite.page", {"n": a}) if a == b else ("cite.pages", {"a": a, "b": b})
        titled = [s for s in secs if s.title]
        covered = sum(min(s.end, end) - max(s.start, start) for s in titled)
        if titled and covered * 2 >= end - start:  # (a body without headings and its "Footnotes": by its lines)
            names = [s.label for s in titled]
            if len(names) > 3:
                names = [names[0], "…", names[-1]]
            return ("cite.named", {"names": "; ".join(names)})
        first = self.text.count("\n", 0, start) + 1
        last = first + self.text.count("\n", start, max(start, end - 1))
        return ("cite.line", {"n": first}) if first == last else ("cite.lines", {"a": first, "b": last})

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "chars": len(self.text),
            "encoding": self.encoding,
            "pages": self.pages,
            "sections": [
                {"number": s.number, "title": s.title, "kind": s.kind, "start": s.start, "end": s.end}
                for s in self.sections
            ],
        }


# --- building a document from parts ---------------------------------------------------------
class DocumentBuilder:
    """Joins (title, text) parts with blank lines and records each part's span."""

    def __init__(self, name: str, limits: Limits, deadline: float, kind: str = "section") -> None:
        self.name, self.limits, self.deadline, self.kind = name, limits, deadline, kind
        self.parts: list[str] = []
        self.sections: list[Section] = []
        self.length = 0
        self.tables = 0  # tables met so far, each numbered as the document has them (``document_tables``)

    def add(self, text: str, title: str | None = None, number: int | None = None) -> None:
        if time.monotonic() > self.deadline:
            raise DocumentError(said=[("doc.too_slow_here", {"name": self.name, "seconds": f"{self.limits.timeout_s:.0f}"})])
        text = text.strip("\n")
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        start = self.length
        self.parts.append(text)
        self.length += len(text)
        if self.length > self.limits.max_text_chars:
            raise DocumentError(said=[("doc.too_much_text", {"name": self.name, "chars": f"{self.limits.max_text_chars:,}"})])
        self.sections.append(
            Section(start, self.length, number or len(self.sections) + 1, title, self.kind)
        )

    def section(self, title: str | None, lines: list[str]) -> None:
        """The section so far: ``title`` (a heading, or None) over ``lines``, added where it holds
        anything; ``lines`` emptied for the next one (the DOCX, ODT and HTML readers')."""
        body = "\n".join(lines).strip()
        if body or title:
            self.add(f"{title}\n{body}" if title and body else (title or body), title=title)
        lines.clear()

    def text(self) -> str:
        return "".join(self.parts)


def document_tables(builder: DocumentBuilder, title: str | None, lines: list[str], tables: list[list[list[str]]],
                    facts: list[SheetFacts]) -> None:
    """The section so far (``DocumentBuilder.section``) with the facts of its ``tables`` (a Word or
    OpenDocument text's, their rows 'a | b | c' among its lines) counted as a sheet's are
    (``table_facts``: "Table 2: 4 rows under the header row"), added to ``facts``: a 4-row cost
    table in a letter had none, and the model garbled its sums. Each table numbered as the document
    has them (one of two rows before it gets no facts, and is Table 1 all the same); a Word or
    OpenDocument text's and a slide's alike. ``tables`` emptied for the next."""
    at = len(builder.sections)
    builder.section(title, lines)
    for rows in tables:
        builder.tables += 1
        found = table_facts(f"Table {builder.tables}", at, rows, first_column=0) \
            if len(builder.sections) > at else None
        if found is not None:
            found.among_text = True
            facts.append(found)
    tables.clear()


# --- notes (footnotes and endnotes: Word, OpenDocument, RTF) ---------------------------------------
def roman_numeral(n: int) -> str:
    """``n`` in lower-case Roman numerals (Word numbers endnotes i, ii, iii…)."""
    out = []
    for value, letters in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
                           (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")):
        count, n = divmod(n, value)
        out.append(letters * count)
    return "".join(out)


def add_notes(builder: DocumentBuilder, title: str, lines: list[str]) -> None:
    """A document's footnotes or endnotes as a last section: its title, then '[1] text' lines."""
    if lines:
        builder.add(title + "\n" + "\n".join(lines), title=title)


# --- text files -------------------------------------------------------------------------------
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# the first bytes of binary files that a text reader could take for text when short or cut
# (no NUL among them yet): PNG, JPEG, GIF, a ZIP (an Office file renamed), an ELF program
_BINARY_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF87a", b"GIF89a", b"PK\x03\x04", b"\x7fELF")
_TURKISH = set("ğĞşŞıİ")
_TURKISH_ALL = _TURKISH | set("çÇöÖüÜâÂîÎûÛ")


def _turkish_single_byte(data: bytes) -> tuple[str, str] | None:
    """Turkish text in cp1254 / ISO-8859-9 (charset detectors often call it cp1257 or latin-1)."""
    for enc in ("cp1254", "iso-8859-9"):
        try:
            text = data.decode(enc)
        except UnicodeDecodeError:
            continue
        non_ascii = [c for c in text if ord(c) > 127]
        if not non_ascii or "ı" not in text:
            return None
        specific = sum(1 for c in non_ascii if c in _TURKISH)
        share = sum(1 for c in non_ascii if c in _TURKISH_ALL) / len(non_ascii)
        if specific and share >= 0.6:
            return text, enc
        return None
    return None


_WESTERN = set("àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿßœÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝŸŒ"
               "‘’‚“”„–—…€«»°±²³´µ·¹º¼½¾×÷§¶©®™¢£¥¿¡ªˆ˜•†‡‰‹›")


def _western_single_byte(data: bytes) -> tuple[str, str] | None:
    """French, German, Spanish, Italian… text in cp1252 / ISO-8859-1 (the detector called it
    cp1250 or hp_roman8: "Café crème" came out "Café crčme", "niño" "nińo"). Taken where every
    byte above ASCII reads as a Western letter or mark, and those are a few of the letters, as in
    any of these languages: Cyrillic or Greek read this way would be nearly all such letters."""
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    non_ascii = [c for c in text if ord(c) > 127]
    if not non_ascii or any(c not in _WESTERN for c in non_ascii):
        return None
    letters = sum(1 for c in text if c.isalpha())
    accented = sum(1 for c in non_ascii if c.isalpha())
    return (text, "cp1252") if accented <= 0.3 * letters else None


def _utf16_without_bom(data: bytes) -> tuple[str, str] | None:
    """UTF-16 text saved without a byte-order mark (some Windows tools, exports of old
    programs): it was called a binary file. Told by its NUL bytes: in the first 4 KiB, the high
    byte of each Latin letter, digit or space is NUL, so over 40% of the bytes at odd places
    (little-endian) or at even ones (big-endian) are NUL, and almost none at the others. A
    binary file read this way is still refused: its text is mostly control characters."""
    sample = data[: min(len(data), 4096) & ~1]  # (whole pairs: a cut odd byte at the end)
    if len(sample) < 4:
        return None
    even, odd = sample[0::2], sample[1::2]
    even_nul, odd_nul = even.count(0) / len(even), odd.count(0) / len(odd)
    for enc, nul, other in (("utf-16-le", odd_nul, even_nul), ("utf-16-be", even_nul, odd_nul)):
        if nul > 0.4 and other <= 0.02:
            body = data[: len(data) & ~1]
            try:
                return body.decode(enc), enc
            except UnicodeDecodeError as err:
                if err.reason != "unexpected end of data":  # (a pair of surrogates cut at the end)
                    return None
                return body[: err.start].decode(enc), enc
    return None


def decode_text(data: bytes, name: str) -> tuple[str, str]:
    """Text and encoding name of a text file's bytes, or DocumentError for binary data."""
    for bom, enc in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(enc), enc
            except UnicodeDecodeError:
                raise DocumentError(said=[("doc.bad_encoding", {"name": name, "enc": enc})]) from None
    if b"\x00" in data[:65536] and not data.startswith(_BINARY_MAGIC):
        utf16 = _utf16_without_bom(data)
        if utf16:
            return utf16
    if b"\x00" in data[:65536] or data.startswith(_BINARY_MAGIC):
        # besides UTF-16 (above), a NUL byte almost always means a binary file
        raise DocumentError(said=[("doc.binary", {"name": name})])
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    single = _turkish_single_byte(data) or _western_single_byte(data)
    if single:
        return single
    from charset_normalizer import from_bytes

    best = from_bytes(data[: 4 * 2**20]).best()
    if best is None:
        raise DocumentError(said=[("doc.binary_or_encoding", {"name": name})])
    enc = best.encoding
    if enc.startswith(("utf_16", "utf_32")):
        # without a BOM and without NUL bytes (both handled above), "UTF-16" is a guess made of
        # a few stray bytes (a cut PNG read as '襐乇ഊ'), or CJK text saved without a BOM: asked
        # for in UTF-8, not read as either
        raise DocumentError(said=[("doc.binary_or_encoding", {"name": name})])
    try:
        text = data.decode(enc)
    except (UnicodeDecodeError, LookupError):
        raise DocumentError(said=[("doc.unknown_encoding", {"name": name})]) from None
    return text, enc


def _looks_binary(text: str) -> bool:
    sample = text[:65536]
    if not sample:
        return False
    controls = sum(1 for c in sample if ord(c) < 32 and c not in "\n\r\t\f\v")
    return controls / len(sample) > 0.02


# a Markdown heading: its line, the closing #s trimmed in Python (a pattern with \s* on both sides
# of #* took cubic time in a run of spaces, 45 s for a 3 KB file; \s+ ran across lines too)
_MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(\S.*)$", re.MULTILINE)


def _heading_title(rest: str) -> str:
    """A heading's words without its closing #s ("Methods ##" is "Methods"; "C#" stays)."""
    title = rest.rstrip()
    bare = title.rstrip("#")
    return bare.rstrip() if bare != title and (not bare or bare[-1] in " \t") else title


def plain_text(data: bytes, name: str) -> tuple[str, str]:
    """Text (line ends made ``\\n``) and encoding of bytes that should be text: a file's, or
    what came through a pipe (``chat < letter.txt``: a Turkish letter saved in Windows-1254
    failed there with a Python error). DocumentError, one sentence, for what is not text."""
    text, encoding = decode_text(data, name)
    if _looks_binary(text):
        raise DocumentError(said=[("doc.binary", {"name": name})])
    return text.replace("\r\n", "\n").replace("\r", "\n"), encoding


def _read_text(path: Path, data: bytes, limits: Limits, deadline: float) -> Document:
    text, encoding = plain_text(data, path.name)
    if len(text) > limits.max_text_chars:
        raise DocumentError(said=[("doc.too_much_text", {"name": path.name, "chars": f"{limits.max_text_chars:,}"})])
    kind = "markdown" if path.suffix.lower() in (".md", ".markdown") else "text"
    sections: list[Section] = []
    if kind == "markdown":
        heads = list(_MD_HEADING.finditer(text))
        if heads and heads[0].start() > 0 and text[: heads[0].start()].strip():
            sections.append(Section(0, heads[0].start(), 1, None))
        for i, m in enumerate(heads):
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            sections.append(Section(m.start(), end, len(sections) + 1, _heading_title(m.group(2))))
        if sections:
            sections[0].start = 0
    if not sections:
        sections = [Section(0, len(text), 1, None)]
        columns = text.lstrip("\n").split("\n", 1)[0].strip()
        if path.suffix.lower() in (".csv", ".tsv") and 0 < len(columns) <= 1000 and "\n" in text.strip():
            # a spreadsheet saved as text: a summary's parts after the first read its rows under
            # its first line (the columns' names), as a workbook's do
            sections[0].lead = f"{path.name} (continued)\n{columns}"
            facts = _csv_facts(path, text, columns)
            return Document(str(path), kind, text, sections, encoding, [facts] if facts else [])
    return Document(str(path), kind, text, sections, encoding)


def csv_delimiter(name: str, columns: str) -> str:
    """What a CSV or TSV file's cells are split by: a tab in a .tsv, else the most used of , ; and
    tab in ``columns``, its first line."""
    return "\t" if name.lower().endswith(".tsv") else max(",;\t", key=columns.count)


def _csv_facts(path: Path, text: str, columns: str) -> SheetFacts | None:
    """A CSV or TSV file's facts (``table_facts``): its cells split by a tab in a .tsv, else by the
    first line's most used of , ; and tab (a Turkish or German Excel saves CSV with ;, its numbers
    with a decimal comma: 1.200,50)."""
    import csv
    import io

    delimiter = csv_delimiter(path.name, columns)
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error:
        return None
    if max(map(len, rows), default=0) < 2:
        return None
    return table_facts(path.name, 0, rows, usual_comma={";": True, ",": False}.get(delimiter))


# --- PDF ----------------------------------------------------------------------------------------
def _read_pdf(path: Path, data: bytes, limits: Limits, deadline: float) -> Document:
    import io
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    name = path.name
    if not data.lstrip()[:1024].startswith(b"%PDF") and b"%PDF-" not in data[:1024]:
        raise DocumentError(said=[("doc.not_pdf", {"name": name})])
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception:  # noqa: BLE001 - any failure means we cannot open it
                ok = 0
            if not ok:
                raise DocumentError(said=[("doc.password_pdf", {"name": name})])
        n_pages = len(reader.pages)
    except DocumentError:
        raise
    except RecursionError:
        raise DocumentError(said=[("doc.pdf_nested", {"name": name})]) from None
    except Exception:  # noqa: BLE001 - pypdf raises many types on damaged files (its words are not the user's)
        raise DocumentError(said=[("doc.pdf_damaged", {"name": name})]) from None
    if n_pages == 0:
        raise DocumentError(said=[("doc.pdf_no_pages", {"name": name})])
    if n_pages > limits.max_pages:
        raise DocumentError(said=[("doc.too_many_pages", {"name": name, "pages": f"{n_pages:,}",
                                                          "limit": f"{limits.max_pages:,}"})])
    builder = DocumentBuilder(name, limits, deadline, kind="page")
    failed = 0
    for number in range(1, n_pages + 1):
        try:
            page_text = reader.pages[number - 1].extract_text() or ""
        except DocumentError:
            raise
        except RecursionError:
            page_text, failed = "", failed + 1
        except Exception:  # noqa: BLE001 - one bad page should not lose the document
            page_text, failed = "", failed + 1
        builder.add(_clean_pdf_text(page_text), number=number)
    text = builder.text()
    if not text.strip():
        if failed == n_pages:
            raise DocumentError(said=[("doc.pdf_unreadable", {"name": name})])
        if not _has_pictures(reader, n_pages):  # blank pages were said to be "a scanned PDF, probably"
            raise DocumentError(said=[("doc.no_text", {"name": name})])
        raise DocumentError(said=[("doc.scanned_pdf", {"name": name})])
    return Document(str(path), "pdf", text, builder.sections)


def _has_pictures(reader: Any, n_pages: int) -> bool:
    """Whether a PDF without text has pictures on its pages (their names only, none decoded);
    True where that cannot be told (then it is said to be scanned, as before)."""
    try:
        return any(len(reader.pages[i].images) for i in range(n_pages))
    except Exception:  # noqa: BLE001 - pypdf raises many types on damaged files
        return True


def _clean_pdf_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def short_error(err: BaseException) -> str:
    msg = str(err).strip().rstrip(".").splitlines()[0] if str(err).strip() else type(err).__name__
    return msg[:120]


# --- office files: their zip ------------------------------------------------------------------------
# an OLE2 compound file: Office's files before 2007 (.doc, .xls, .ppt), and a .docx, .xlsx or
# .pptx that a password protects (encrypted inside one)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def check_zip(path: Path, limits: Limits, what: str = "DOCX") -> None:
    """Refuse zip bombs before decompressing anything: member count, sizes, compression ratio."""
    name = path.name
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except zipfile.BadZipFile:  # a DOCX is a zip: this one is something else with the name, or cut short
        try:
            with path.open("rb") as f:
                head = f.read(4)
        except OSError:
            head = b""
        zip_start = head == b"PK\x03\x04"
        if zip_start:  # it begins as one: a copy or a download that stopped part of the way
            raise DocumentError(said=[("doc.zip_damaged", {"name": name, "what": what})]) from None
        if head == _OLE_MAGIC[:4]:  # Office's password protection, or its format before 2007 renamed
            raise DocumentError(said=[("doc.office_locked", {"name": name, "what": what})]) from None
        raise DocumentError(said=[("doc.renamed", {"name": name, "what": what, "suffix": what.lower()})]) from None
    except (OSError, ValueError, NotImplementedError) as err:  # (NotImplementedError: a zip version or method it lacks)
        raise DocumentError(said=[("doc.invalid", {"name": name, "what": what, "detail": short_error(err)})]) from None
    if len(infos) > limits.max_zip_members:
        raise DocumentError(said=[("doc.zip_members", {"name": name, "members": f"{len(infos):,}",
                                                       "limit": f"{limits.max_zip_members:,}", "what": what})])
    total = 0
    for info in infos:
        total += info.file_size
        if total > limits.max_unzipped_bytes:
            raise DocumentError(said=[("doc.zip_bomb_size", {"name": name, "mib": limits.max_unzipped_bytes // 2**20})])
        if info.file_size > 2**20:
            ratio = info.file_size / max(1, info.compress_size)
            if ratio > limits.max_zip_ratio:
                raise DocumentError(said=[("doc.zip_bomb_ratio", {"name": name, "ratio": f"{ratio:,.0f}"})])


# --- HTML -------------------------------------------------------------------------------------
def _read_html(path: Path, data: bytes, limits: Limits, deadline: float) -> Document:
    name = path.name
    markup: bytes | str = data
    utf16 = None
    if b"\x00" in data[:65536] and not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        utf16 = _utf16_without_bom(data)
        if utf16 is None:
            raise DocumentError(said=[("doc.binary_not_html", {"name": name})])
        markup = utf16[0]
    builder = DocumentBuilder(name, limits, deadline)
    facts: list[SheetFacts] = []
    encoding = add_html(builder, markup, name, facts)
    if not builder.text().strip():
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    return Document(str(path), "html", builder.text(), builder.sections, utf16[1] if utf16 else encoding, facts=facts)


_MAX_SPAN = 100  # a cell's colspan/rowspan taken up to this many columns or rows (a page may say 10000)


def _span(cell: Any, attr: str) -> int:
    value = str(cell.get(attr) or "1").strip()
    return min(_MAX_SPAN, max(1, int(value))) if value.isdigit() else 1


def _html_row(tr: Any, below: dict[int, tuple[str, int]]) -> list[str] | None:
    """A table row's cells' text, in their columns: a cell spanning columns (colspan) or rows
    (rowspan, from a row above: ``below``) in each of them, as a Word table's merged cells are
    read; None for a row with a table of its own inside (its cells' columns cannot be told)."""
    if tr.find(["tr", "table"]) is not None:
        return None
    cells: list[str] = []

    def rows_above() -> None:
        while len(cells) in below:
            text, left = below.pop(len(cells))
            if left > 1:
                below[len(cells)] = (text, left - 1)
            cells.append(text)

    for cell in tr.find_all(["td", "th"], recursive=False):
        rows_above()
        text = re.sub(r"\s+", " ", cell.get_text(" ", strip=True))
        for _ in range(_span(cell, "colspan")):
            if (rows := _span(cell, "rowspan")) > 1:
                below[len(cells)] = (text, rows - 1)
            cells.append(text)
    rows_above()
    while cells and not cells[-1]:
        cells.pop()
    return cells


def add_html(builder: DocumentBuilder, markup: bytes | str, name: str, facts: list[SheetFacts] | None = None) -> str | None:
    """The text of an HTML page (a file's, or an e-mail's) added to ``builder``: headings
    h1-h3 begin sections, each block (p, li, td…) a line, a table's row a line of its cells
    'a | b | c' (as a Word document's); scripts, styles and the head left out. With ``facts``,
    its tables' facts are counted into it as a Word document's are (``document_tables``): an
    .html page's cost table had none. The encoding BeautifulSoup found, for bytes."""
    from bs4 import BeautifulSoup

    try:
        soup = BeautifulSoup(markup, "html.parser")
    except Exception as err:  # noqa: BLE001
        raise DocumentError(said=[("doc.bad_html", {"name": name, "detail": short_error(err)})]) from None
    for tag in soup(["script", "style", "noscript", "template", "svg", "head"]):
        tag.decompose()
    title: str | None = None
    lines: list[str] = []
    tables: list[list[list[str]]] = []  # the section's tables, a row's cells each
    table: Any = None  # the <table> the rows in ``tables[-1]`` are of
    below: dict[int, tuple[str, int]] = {}  # that table's cells spanning rows: (text, rows left) by column
    nested = False  # that table has a table inside a row: its rows' facts not counted

    def flush() -> None:
        if facts is None:
            builder.section(title, lines)
            tables.clear()
        else:
            document_tables(builder, title, lines, tables, facts)

    blocks = ("tr", "p", "li", "pre", "blockquote", "td", "th", "dt", "dd", "figcaption", "caption")
    root = soup.body or soup
    seen_any = False
    for el in root.find_all(["h1", "h2", "h3", *blocks]):
        if el.find_parent(blocks) is not None:
            continue  # its text is part of the enclosing block
        if el.name == "tr":
            owner = el.find_parent("table")
            if owner is not table or not tables:  # a new table (or the same one after a heading)
                table, below, nested = owner, {}, False
                tables.append([])
            cells = _html_row(el, below)
            text = " | ".join(cells) if cells is not None else re.sub(r"[ \t]+", " ", el.get_text(" ", strip=True))
            if not text:
                continue
            seen_any = True
            lines.append(text)
            if cells is None:  # a table inside its row: its columns cannot be told apart, none counted
                nested = True
                tables[-1].clear()
            elif not nested:
                tables[-1].append(cells)
            continue
        text = re.sub(r"[ \t]+", " ", el.get_text(" ", strip=True))
        if not text:
            continue
        seen_any = True
        if el.name in ("h1", "h2", "h3"):
            flush()
            title = text
        else:
            lines.append(text)
    flush()
    if not seen_any:  # no block structure: take all the text
        text = soup.get_text("\n", strip=True)
        if text:
            builder.add(text)
    return soup.original_encoding


# --- what a file is, by its content ---------------------------------------------------------------
_SNIFF_BYTES = 8192
_HTML_START = re.compile(rb"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html[\s>]|head[\s>]|body[\s>])", re.I | re.S)


ODF_MIME = "application/vnd.oasis.opendocument."
_HEADER_LINE = re.compile(rb"[A-Za-z][A-Za-z0-9-]*:[^\n]*\n(?:[ \t][^\n]*\n)*")


def _looks_like_email(head: bytes) -> bool:
    """Whether a file without a suffix is an e-mail (a mail program's saved message): it begins
    with header lines, among them From, Date and one that only mail has."""
    head = head.replace(b"\r\n", b"\n")
    pos, names = 0, set()
    while (m := _HEADER_LINE.match(head, pos)) is not None:
        names.add(m.group().split(b":", 1)[0].lower())
        pos = m.end()
    return {b"from", b"date"} <= names and bool(names & {b"message-id", b"mime-version", b"received", b"return-path"})


def _odf_mimetype(head: bytes) -> str | None:
    """The media type an OpenDocument file stores first, uncompressed, as the member
    ``mimetype`` (``application/vnd.oasis.opendocument.text``): read from the first bytes."""
    if len(head) < 30 or head[8:10] != b"\0\0":  # (stored, not compressed)
        return None
    size = int.from_bytes(head[22:26], "little")
    name_len, extra_len = int.from_bytes(head[26:28], "little"), int.from_bytes(head[28:30], "little")
    if head[30 : 30 + name_len] != b"mimetype" or size > 100:
        return None
    start = 30 + name_len + extra_len
    value = head[start : start + size].decode("ascii", "replace")
    return value if value.startswith(ODF_MIME) else None


_OFFICE_KINDS = {".docx": "docx", ".odt": "odt", ".xlsx": "xlsx", ".xlsm": "xlsx", ".ods": "ods",
                 ".pptx": "pptx", ".pptm": "pptx", ".odp": "odp"}


def document_kind(path: Path, head: bytes) -> str:
    """``rtf``, ``pdf``, ``docx``, ``odt``, ``xlsx``, ``ods``, ``pptx``, ``odp``, ``email``, ``html`` or ``text`` for a file whose first
    bytes are ``head``: the content's signature decides (a PDF renamed ``.txt`` is a PDF; an RTF
    saved as ``.doc`` is RTF; a ``LICENSE`` with no suffix is text); without one, the suffix,
    then mail headers (a file of a mail folder), an HTML start, then text. An office file (Word,
    Excel, PowerPoint, OpenDocument) is told by its parts; DocumentError (one sentence) for any
    other archive. Binary data is refused later, when decoding it as text."""
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\rtf"):
        return "rtf"  # whatever its name (Word's "Save as: Rich Text" under .doc, WordPad's .rtf)
    if b"%PDF-" in head[:1024]:
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        # an office file is told by its parts, whatever its name (a workbook renamed .docx is
        # read as the workbook); without them, by its suffix, whose reader says what is wrong
        # (damaged, a bomb, not that kind of file: its own checks decide)
        suffix = path.suffix.lower()
        mimetype = _odf_mimetype(head)
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError):
            names = set()
        if mimetype is None and "content.xml" in names and "META-INF/manifest.xml" in names:  # (mimetype not first)
            mimetype = ODF_MIME + {".ods": "spreadsheet", ".odp": "presentation"}.get(suffix, "text")
        if mimetype is not None:  # OpenDocument: a text, a spreadsheet or slides (a drawing, a formula: not read)
            kind = {"text": "odt", "spreadsheet": "ods", "presentation": "odp"}.get(mimetype.removeprefix(ODF_MIME))
            if kind is None:
                raise DocumentError(said=[("doc.zip", {"name": path.name})])
            return kind
        for part, kind in (("word/document.xml", "docx"), ("xl/workbook.xml", "xlsx"), ("ppt/presentation.xml", "pptx")):
            if part in names:
                return kind
        if suffix in OFFICE_SUFFIXES:
            return _OFFICE_KINDS[suffix]
        raise DocumentError(said=[("doc.zip", {"name": path.name})])
    suffix = path.suffix.lower()
    if suffix == ".pdf" or suffix in OFFICE_SUFFIXES:
        return _OFFICE_KINDS.get(suffix, "pdf")  # no signature: the reader for that format says what is wrong
    if suffix == ".eml" or suffix not in SUPPORTED_SUFFIXES and _looks_like_email(head):  # (a mail folder's file)
        return "email"
    if suffix in HTML_SUFFIXES or _HTML_START.match(head.lstrip(b"\xef\xbb\xbf")):
        return "html"
    return "text"


def looks_like_document(path: Path) -> bool:
    """Whether a file without a known suffix reads as a document (for folder scans): a PDF,
    a Word, Excel, PowerPoint or OpenDocument file, RTF, an e-mail, HTML, or text without NUL bytes."""
    try:
        with path.open("rb") as f:
            head = f.read(_SNIFF_BYTES)
        kind = document_kind(path, head)
    except (OSError, DocumentError):
        return False
    if kind != "text":
        return True
    try:
        text, _ = decode_text(head, path.name)
    except DocumentError:
        return False
    return bool(text.strip()) and not _looks_binary(text)


# --- entry points ---------------------------------------------------------------------------
def _cannot_read(name: str, err: OSError) -> list[Phrase]:
    if isinstance(err, PermissionError):
        return [("doc.no_permission", {"name": name})]
    return [("doc.unreadable", {"name": name, "reason": err.strerror or str(err)})]


def name_is_text(path: str | Path) -> bool:
    """Whether ``path`` is UTF-8 text: a name made elsewhere (an old zip archive's cp437 or
    cp1254) holds bytes Python keeps as surrogates, which no text (a summary's heading, a
    conversation's title, SQLite) can take: the app fell over with UnicodeEncodeError."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def told_apart(paths: list[Path]) -> list[str]:
    """Each document's name as a table shows it: the file's name, and where two files of that
    name sit in different folders, as many folders above it as tell them apart ("a/notes.txt",
    "b/notes.txt": two rows said "notes.txt"). A file given twice is one name twice."""
    whole = [Path(os.path.abspath(p)).parts for p in paths]
    depth = [1] * len(paths)
    while True:
        names = [os.sep.join(parts[-n:]) for parts, n in zip(whole, depth, strict=True)]
        clash = [i for i, name in enumerate(names) if any(
            names[j] == name and whole[j] != whole[i] for j in range(len(names)))]
        deeper = [min(n + 1, len(whole[i])) if i in clash else n for i, n in enumerate(depth)]
        if deeper == depth:  # (none clashes, or none can go further)
            return [shown_name(name) for name in names]
        depth = deeper


def shown_name(path: str | Path) -> str:
    """``path`` as it can be shown and written: bytes that are not UTF-8 as U+FFFD."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _reader(kind: str) -> Any:
    """The reader of a kind of document (those of office files, RTF and e-mail in modules of
    their own, which build on this one's)."""
    if kind in ("docx", "odt"):
        from workstation.core import office_documents

        return office_documents.read_docx if kind == "docx" else office_documents.read_odt
    if kind in ("xlsx", "ods"):
        from workstation.core import sheet_documents

        return sheet_documents.read_xlsx if kind == "xlsx" else sheet_documents.read_ods
    if kind in ("pptx", "odp"):
        from workstation.core import slide_documents

        return slide_documents.read_pptx if kind == "pptx" else slide_documents.read_odp
    if kind == "rtf":
        from workstation.core.rtf_documents import read_rtf

        return read_rtf
    if kind == "email":
        from workstation.core.email_documents import read_email

        return read_email
    return {"text": _read_text, "pdf": _read_pdf, "html": _read_html}[kind]


def link_target(path: Path) -> str:
    """Where the link ``path`` points, as a whole path (a relative target is taken from the
    link's folder)."""
    try:
        target = os.readlink(path)
    except OSError:
        return "?"
    return target if os.path.isabs(target) else os.path.normpath(os.path.join(path.absolute().parent, target))


LOOKED_AT = 5000  # names of a folder compared with a path that is not there (a home folder may hold many more)


def not_there(path: Path, folder: bool = False) -> list[Phrase]:
    """How to say that ``path`` (a document, or with ``folder`` a folder of them) is not there: where
    it was looked for (the current folder, for a relative path), and the file (folder) of its folder
    that it most likely means, as command and profile typos get one ("long_reprot.txt": "did you
    mean 'long_report.txt'?"; it said only that it does not exist)."""
    where: Phrase | str = "" if path.is_absolute() else ("doc.in_folder", {"folder": str(Path.cwd())})
    said: list[Phrase] = [("doc.missing", {"path": str(path), "where": where})]
    names: list[str] = []
    try:
        with os.scandir(path.parent) as entries:
            for n, entry in enumerate(entries):
                if n >= LOOKED_AT:
                    break
                with contextlib.suppress(OSError):
                    if entry.is_dir() if folder else entry.is_file():
                        names.append(entry.name)
    except OSError:  # its folder is not there either, or cannot be read: nothing to guess from
        return said
    meant = closest_name(path.name, names, cutoff=0.6)
    if meant is not None:
        said.append(("doc.meant", {"path": str(path.with_name(meant))}))  # (as it was typed, with its folder)
    return said


def read_document(path: str | Path, limits: Limits | None = None, *, isolate: bool = False) -> Document:
    """The text of ``path`` with its pages/sections; ``DocumentError`` when it cannot be read.

    ``isolate=True`` reads it in a child process under a memory limit and a hard timeout
    (for files from outside: the batch queue and the CLI use it).
    """
    limits = limits or DEFAULT_LIMITS
    if not name_is_text(path):
        name = Path(path).name  # (or a folder on its way: the whole path)
        raise DocumentError(said=[("doc.name_not_text", {"name": shown_name(path if name_is_text(name) else name)})])
    if isolate:
        return _read_isolated(Path(path), limits)
    path = Path(path)
    name = path.name
    if not path.exists():
        if path.is_symlink():  # a link whose file was moved or deleted: it said "does not exist"
            raise DocumentError(said=[("doc.broken_link", {"name": name, "target": link_target(path)})])
        raise DocumentError(said=not_there(path))
    if path.is_dir():
        raise DocumentError(said=[("doc.folder", {"name": name or str(path), "path": str(path),
                                                  "command": cli("batch " + shell_word(str(path)))})])
    if not path.is_file():  # a pipe, a device, a socket: reading it could wait for ever
        raise DocumentError(said=[("doc.not_regular", {"path": str(path)})])
    try:
        size = path.stat().st_size
    except OSError as err:
        raise DocumentError(said=_cannot_read(name, err)) from None
    if size > limits.max_file_bytes:
        raise DocumentError(said=[("doc.too_big", {"name": name, "mib": f"{size / 2**20:,.0f}",
                                                   "limit": f"{limits.max_file_bytes / 2**20:,.0f}"})])
    if size == 0:
        raise DocumentError(said=[("doc.empty", {"name": name})])
    deadline = time.monotonic() + limits.timeout_s
    try:
        data = path.read_bytes()
    except OSError as err:
        raise DocumentError(said=_cannot_read(name, err)) from None
    kind = document_kind(path, data[:_SNIFF_BYTES])
    try:
        doc = _reader(kind)(path, data, limits, deadline)
    except MemoryError:
        raise DocumentError(said=[("doc.no_memory", {"name": name})]) from None
    except RecursionError:
        raise DocumentError(said=[("doc.too_nested", {"name": name})]) from None
    if not doc.text.strip():
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    return doc


def isolated_reader(conn: Any, path: str, limits: Limits) -> None:
    try:
        import resource
    except ImportError:  # (Windows: no address-space limit)
        pass
    else:
        import psutil

        # the budget is the reading's own, beyond what the process holds already: its imports
        # (llama.cpp's bindings load first in every process, with numpy and its threads) took
        # 161 MiB of address space on 2 cores, and grow with the cores
        try:
            soft = psutil.Process().memory_info().vms + limits.max_memory_bytes
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)  # (a lower limit of the system's stays)
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        except (ValueError, OSError, psutil.Error):
            pass
    reply: tuple[str, Any]
    try:
        reply = ("ok", read_document(path, limits))
    except WorkstationError as err:
        reply = ("error", (str(err), err.said))
    except MemoryError:
        said: list[Phrase] = [("doc.reader_memory", {"name": Path(path).name, "mib": limits.max_memory_bytes // 2**20})]
        reply = ("error", (say(said), said))
    except BaseException as err:  # noqa: BLE001 - reported as one sentence
        said = [("doc.reader_failed", {"name": Path(path).name, "detail": f"{type(err).__name__}: {short_error(err)}"})]
        reply = ("error", (say(said), said))
    try:
        conn.send(reply)
    except OSError:  # the reader's parent is gone (a batch killed with kill -9): no one to tell, and no
        pass  # traceback on the terminal it was started from (BrokenPipeError's was)
    finally:
        conn.close()


def _read_isolated(path: Path, limits: Limits) -> Document:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=isolated_reader, args=(child, str(path), limits), daemon=True,
                       name=READER_PROCESS)  # (so named, it loads no llama.cpp: workstation/__init__.py)
    start_child(proc)
    child.close()
    try:
        # spawn start-up (a fresh interpreter) is not the document's fault: allow for it.
        if not parent.poll(limits.timeout_s + 30):
            raise DocumentError(said=[("doc.too_slow", {"name": path.name, "seconds": f"{limits.timeout_s:.0f}"})])
        try:
            status, value = parent.recv()
        except (EOFError, OSError):
            proc.join(5)
            raise DocumentError(said=[("doc.reader_crashed", {"name": path.name, "code": proc.exitcode})]) from None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()
    if status == "error":
        message, said = value if isinstance(value, tuple) else (value, None)
        raise DocumentError(message, said=said)
    return value
