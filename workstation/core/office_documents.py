"""Word (.docx) and OpenDocument (.odt) text, read into a ``Document`` with their sections,
tables and notes (footnotes and endnotes marked where the text refers to them). The zip is
checked (``check_zip``) before any member is decompressed, and every XML part is parsed
without entities, DTDs or the network (``xml_parser``; the workbook and slide readers too)."""

from __future__ import annotations

import posixpath
import time
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from workstation.core.documents import (
    Document,
    DocumentBuilder,
    DocumentError,
    Limits,
    add_notes,
    check_zip,
    document_tables,
    roman_numeral,
    short_error,
)
from workstation.core.table_facts import SheetFacts

# an office file's XML parts come from outside: no entity is expanded (a "billion laughs" stays a
# few bytes), no DTD loaded, nothing fetched, no tree deeper or text longer than lxml's defaults
SAFE_XML: dict[str, bool] = {"resolve_entities": False, "no_network": True, "load_dtd": False, "huge_tree": False}
_ZIP_ERRORS = (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error, NotImplementedError)


def xml_parser() -> Any:
    """The parser of an office file's XML parts (``SAFE_XML``)."""
    from lxml import etree

    return etree.XMLParser(**SAFE_XML)


@contextmanager
def office_part(name: str, what: str, missing: str) -> Iterator[None]:
    """Reading and parsing an office file's parts (after ``check_zip``): a part that is not
    there is the phrase ``missing`` (a zip that is not that kind of file), a zip password
    'doc.password', damaged data or XML 'doc.invalid': one sentence naming the file."""
    from lxml import etree

    try:
        yield
    except KeyError:
        raise DocumentError(said=[(missing, {"name": name})]) from None
    except RuntimeError:  # the zip's own encryption
        raise DocumentError(said=[("doc.password", {"name": name})]) from None
    except (*_ZIP_ERRORS, etree.XMLSyntaxError) as err:
        raise DocumentError(said=[("doc.invalid", {"name": name, "what": what, "detail": short_error(err)})]) from None


def local_name(tag: Any) -> str:
    """An element's or attribute's name without its namespace (Excel's 'transitional' and
    'strict' files name the same parts in different namespaces); '' for a comment's."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def relation_id(el: Any) -> str:
    """The relationship an element names (its ``r:id``, in whichever namespace), or ''."""
    return next((v for k, v in el.attrib.items() if k.startswith("{") and local_name(k) == "id"), "")


def relations(zf: zipfile.ZipFile, member: str) -> dict[str, tuple[str, str]]:
    """An Office Open XML part's relationships (its ``_rels/NAME.rels``): id -> (kind, member),
    the kind the Type's last word ('worksheet', 'slide', 'notesSlide'), the member a path in
    the zip; links out of the file left out."""
    from lxml import etree

    folder, base = posixpath.split(member)
    rels = posixpath.join(folder, "_rels", base + ".rels")
    if rels not in zf.namelist():
        return {}
    out: dict[str, tuple[str, str]] = {}
    for rel in etree.fromstring(zf.read(rels), xml_parser()).iter("{*}Relationship"):
        target = rel.get("Target") or ""
        if rel.get("TargetMode") == "External" or not target:
            continue
        where = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(folder, target))
        out[rel.get("Id") or ""] = ((rel.get("Type") or "").rsplit("/", 1)[-1], where)
    return out


_WORD_RUN_TEXT = "w:br | w:cr | w:noBreakHyphen | w:ptab | w:t | w:tab | w:footnoteReference | w:endnoteReference"
_WORD_REFS = ("./w:r/w:footnoteReference | ./w:r/w:endnoteReference"
              " | ./w:hyperlink/w:r/w:footnoteReference | ./w:hyperlink/w:r/w:endnoteReference")
_NOT_NOTES = ("separator", "continuationSeparator", "continuationNotice")


class _WordNotes:
    """A Word document's footnotes and endnotes (python-docx has no API for them; they held a
    legal text's citations and case numbers, and were dropped). A reference in the text is
    marked where it stands, ``[1]`` for a footnote and ``[i]`` for an endnote, numbered in the
    order the text refers to them, as Word shows them; the notes follow as sections of their own."""

    def __init__(self, doc: Any, path: Path, deadline: float, name: str, limits: Limits) -> None:
        from docx.opc.constants import RELATIONSHIP_TYPE as RT

        self.deadline, self.name, self.limits = deadline, name, limits
        self.bodies = {"footnote": self._load(doc, path, RT.FOOTNOTES, "word/footnotes.xml", "footnote"),
                       "endnote": self._load(doc, path, RT.ENDNOTES, "word/endnotes.xml", "endnote")}
        self.labels: dict[str, dict[str, str]] = {"footnote": {}, "endnote": {}}  # note id -> its mark, in order
        self.numbered = {"footnote": 0, "endnote": 0}  # (a note with a mark of its own, '*', has no number)

    @staticmethod
    def _mark(kind: str, number: int) -> str:
        return str(number) if kind == "footnote" else roman_numeral(number)

    def _load(self, doc: Any, path: Path, reltype: str, member: str, kind: str) -> dict[str, str]:
        """Each note's text by its id, the separators left out."""
        from docx.oxml.ns import qn
        from docx.oxml.parser import parse_xml
        from docx.text.paragraph import Paragraph

        blob = None
        for rel in doc.part.rels.values():  # the part the document names (word/footnotes.xml)
            if rel.reltype == reltype and not rel.is_external:
                blob = rel.target_part.blob
                break
        if blob is None:  # or the usual member, where the relationship is missing
            with zipfile.ZipFile(path) as zf:  # (its size was checked with the rest: check_zip)
                if member not in zf.namelist():
                    return {}
                blob = zf.read(member)
        root = parse_xml(blob)
        notes: dict[str, str] = {}
        for note in root.iterchildren(qn(f"w:{kind}")):
            if time.monotonic() > self.deadline:
                raise DocumentError(said=[("doc.too_slow_here", {"name": self.name, "seconds": f"{self.limits.timeout_s:.0f}"})])
            if note.get(qn("w:type"), "normal") in _NOT_NOTES:
                continue
            paras = (Paragraph(p, None).text.strip() for p in note.iter(qn("w:p")))
            notes[note.get(qn("w:id"), "")] = " ".join(t for t in paras if t)
        return notes

    def text(self, p: Any) -> str:
        """A paragraph's text (``Paragraph.text``), with its notes' marks where they stand."""
        if not (self.bodies["footnote"] or self.bodies["endnote"]) or not p.xpath(_WORD_REFS):
            return str(p.text)
        from docx.oxml.ns import qn

        out: list[str] = []
        for run in p.xpath("./w:r | ./w:hyperlink/w:r"):  # (in document order, as Paragraph.text)
            for e in run.xpath(_WORD_RUN_TEXT):
                kind = {qn("w:footnoteReference"): "footnote", qn("w:endnoteReference"): "endnote"}.get(e.tag)
                if kind is None:
                    out.append(str(e))
                    continue
                note_id, labels = e.get(qn("w:id"), ""), self.labels[kind]
                if e.get(qn("w:customMarkFollows")) in ("1", "true", "on"):  # its own mark ('*') follows
                    labels.setdefault(note_id, "".join(str(t) for t in run.xpath("w:t")).strip() or "*")
                    continue
                if note_id not in labels:  # (a note referred to again keeps its number)
                    self.numbered[kind] += 1
                    labels[note_id] = self._mark(kind, self.numbered[kind])
                out.append(f"[{labels[note_id]}]")
        return "".join(out)

    def add_to(self, builder: DocumentBuilder) -> None:
        """The notes as sections 'Footnotes' and 'Endnotes': a line '[1] text' each."""
        for kind, title in (("footnote", "Footnotes"), ("endnote", "Endnotes")):
            bodies, labels = self.bodies[kind], self.labels[kind]
            lines = [f"[{labels[i]}] {bodies[i]}".rstrip() for i in labels if i in bodies]
            # notes no mark in the text reached (a reference inside a tracked change or a
            # content control): kept, numbered on
            for note_id, body in bodies.items():
                if note_id not in labels and body:
                    self.numbered[kind] += 1
                    lines.append(f"[{self._mark(kind, self.numbered[kind])}] {body}")
            add_notes(builder, title, lines)


def read_docx(path: Path, data: bytes, limits: Limits, deadline: float) -> Document:
    check_zip(path, limits)
    name = path.name
    try:
        import docx
        from docx.table import Table
        from docx.text.paragraph import Paragraph

        doc = docx.Document(str(path))
    except KeyError:  # a zip without Word's parts ([Content_Types].xml, word/document.xml)
        raise DocumentError(said=[("doc.zip_not_word", {"name": name})]) from None
    except Exception as err:  # noqa: BLE001 - python-docx/lxml raise many types
        raise DocumentError(said=[("doc.invalid", {"name": name, "what": "DOCX", "detail": short_error(err)})]) from None
    builder = DocumentBuilder(name, limits, deadline)
    title: str | None = None
    lines: list[str] = []
    tables: list[list[list[str]]] = []  # the section's tables, a row's cells each
    facts: list[SheetFacts] = []

    def flush() -> None:
        document_tables(builder, title, lines, tables, facts)

    try:
        notes = _WordNotes(doc, path, deadline, name, limits)
        for block in doc.iter_inner_content():
            if time.monotonic() > deadline:
                builder.add("")  # raises the timeout error
            if isinstance(block, Paragraph):
                text = notes.text(block._p).strip()
                style = (block.style.name if block.style is not None else "") or ""
                if text and (style.startswith("Heading") or style == "Title"):
                    flush()
                    title = text
                elif text:
                    lines.append(text)
            elif isinstance(block, Table):
                tables.append([])
                for row in block.rows:
                    cells = ["\n".join(notes.text(p._p) for p in c.paragraphs).strip() for c in row.cells]  # (Cell.text)
                    if any(cells):
                        lines.append(" | ".join(cells))
                        tables[-1].append(cells)
        flush()
        notes.add_to(builder)
    except DocumentError:
        raise
    except Exception as err:  # noqa: BLE001
        raise DocumentError(said=[("doc.docx_damaged", {"name": name, "detail": short_error(err)})]) from None
    if not builder.text().strip():
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    return Document(str(path), "docx", builder.text(), builder.sections, facts=facts)


# --- ODT (OpenDocument text: LibreOffice, OpenOffice) -------------------------------------------
ODF_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
ODF_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
ODF_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
ODF_DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"


def odf_tag(ns: str, tag: str) -> str:
    return f"{{{ns}}}{tag}"


ODF_H, ODF_P = odf_tag(ODF_TEXT, "h"), odf_tag(ODF_TEXT, "p")
ODF_NOTE = odf_tag(ODF_TEXT, "note")
ODF_ROW, ODF_CELL = odf_tag(ODF_TABLE, "table-row"), odf_tag(ODF_TABLE, "table-cell")
ODF_TABLE_TAG = odf_tag(ODF_TABLE, "table")
# what is not the document's running text: tracked deletions, comments, declarations, forms,
# an index's templates; pictures and text boxes (draw:*) within a paragraph
ODF_SKIP = {odf_tag(ODF_TEXT, t) for t in ("tracked-changes", "sequence-decls", "variable-decls", "user-field-decls",
                                           "dde-connection-decls", "note-citation", "ruby-text")} | {
    odf_tag(ODF_OFFICE, t) for t in ("annotation", "annotation-end", "forms")}


class OdtText:
    """Text of OpenDocument paragraphs: spans and links read through, ``text:s`` spaces,
    ``text:tab``, ``text:line-break``; a note (``text:note``) is marked with its citation
    (``[1]``, ``[i]``) and its text kept for the notes' sections. No recursion: a stack."""

    def __init__(self) -> None:
        self.notes: dict[str, list[str]] = {"footnote": [], "endnote": []}

    def inline(self, para: Any, in_note: bool = False) -> str:
        out: list[str] = []
        stack: list[Any] = [para]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            if item is not para:
                tag = item.tag
                if not isinstance(tag, str) or tag in ODF_SKIP or tag.startswith(f"{{{ODF_DRAW}}}"):
                    continue  # (its tail, pushed apart, still counts)
                if tag == odf_tag(ODF_TEXT, "s"):
                    try:
                        count = int(item.get(odf_tag(ODF_TEXT, "c"), "1"))
                    except ValueError:
                        count = 1
                    out.append(" " * max(1, min(count, 100)))
                    continue
                if tag == odf_tag(ODF_TEXT, "tab"):
                    out.append("\t")
                    continue
                if tag == odf_tag(ODF_TEXT, "line-break"):
                    out.append("\n")
                    continue
                if tag == ODF_NOTE:
                    if not in_note:
                        out.append(self._note(item))
                    continue
            if item.text:
                out.append(item.text)
            for child in reversed(item):
                if child.tail:
                    stack.append(child.tail)
                stack.append(child)
        return "".join(out)

    def _note(self, note: Any) -> str:
        kind = "endnote" if note.get(odf_tag(ODF_TEXT, "note-class")) == "endnote" else "footnote"
        notes = self.notes[kind]
        citation = note.find(odf_tag(ODF_TEXT, "note-citation"))
        mark = (citation.text or "").strip() if citation is not None else ""
        if not mark:
            mark = str(len(notes) + 1) if kind == "footnote" else roman_numeral(len(notes) + 1)
        body = note.find(odf_tag(ODF_TEXT, "note-body"))
        paras = [] if body is None else (self.inline(p, in_note=True).strip() for p in body.iter(ODF_P, ODF_H))
        notes.append(f"[{mark}] " + " ".join(t for t in paras if t))
        return f"[{mark}]"


def cell_paragraphs(container: Any) -> list[Any]:
    """The paragraphs and headings of a table cell, as the body's walk takes them: not those
    of a note's body (its text is the note's, marked where it is cited: a cell said it twice)
    nor of a drawing's text box (left out of body paragraphs too)."""
    found: list[Any] = []
    stack: list[Any] = list(reversed(container))
    while stack:
        el = stack.pop()
        tag = el.tag
        if not isinstance(tag, str) or tag in ODF_SKIP or tag == ODF_NOTE or tag.startswith(f"{{{ODF_DRAW}}}"):
            continue
        if tag in (ODF_P, ODF_H):
            found.append(el)
        else:
            stack.extend(reversed(el))
    return found


def read_odt(path: Path, data: bytes, limits: Limits, deadline: float) -> Document:
    """An OpenDocument text (.odt): content.xml, after the zip's checks; ``text:h`` headings as
    sections, paragraphs and list items as lines, table rows as 'a | b | c' (as DOCX)."""
    from lxml import etree

    check_zip(path, limits, what="ODT")
    name = path.name
    try:
        with zipfile.ZipFile(path) as zf:
            content = zf.read("content.xml")
            # a password set in LibreOffice encrypts content.xml; the manifest says so
            manifest = zf.read("META-INF/manifest.xml") if "META-INF/manifest.xml" in zf.namelist() else b""
    except KeyError:
        raise DocumentError(said=[("doc.zip_not_odt", {"name": name})]) from None
    except RuntimeError:  # the zip's own encryption
        raise DocumentError(said=[("doc.password", {"name": name})]) from None
    except _ZIP_ERRORS as err:
        raise DocumentError(said=[("doc.invalid", {"name": name, "what": "ODT", "detail": short_error(err)})]) from None
    try:
        root = etree.fromstring(content, xml_parser())
    except etree.XMLSyntaxError as err:
        if b"encryption-data" in manifest:
            raise DocumentError(said=[("doc.password", {"name": name})]) from None
        raise DocumentError(said=[("doc.invalid", {"name": name, "what": "ODT", "detail": short_error(err)})]) from None
    del content
    body = root.find(f"{odf_tag(ODF_OFFICE, 'body')}/{odf_tag(ODF_OFFICE, 'text')}")
    if body is None:
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    builder = DocumentBuilder(name, limits, deadline)
    reader = OdtText()
    title: str | None = None
    lines: list[str] = []
    held = 0  # characters in lines, before they reach the builder (and its cap)
    tables: dict[Any, list[list[str]]] = {}  # the section's tables (their elements), a row's cells each
    facts: list[SheetFacts] = []

    def flush() -> None:
        nonlocal held
        document_tables(builder, title, lines, list(tables.values()), facts)
        tables.clear()
        held = 0

    def line(text: str) -> None:
        nonlocal held
        if text:
            lines.append(text)
            held += len(text) + 1
            if builder.length + held > limits.max_text_chars:
                raise DocumentError(said=[("doc.too_much_text", {"name": name, "chars": f"{limits.max_text_chars:,}"})])

    stack: list[Any] = list(reversed(body))
    while stack:
        el = stack.pop()
        tag = el.tag
        if not isinstance(tag, str) or tag in ODF_SKIP or tag.endswith("-source"):  # (an index's templates)
            continue
        if time.monotonic() > deadline:
            builder.add("")  # raises the timeout error
        if tag == ODF_H:
            text = reader.inline(el).strip()
            if text:
                flush()
                title = text
        elif tag == ODF_P:
            line(reader.inline(el).strip())
        elif tag == ODF_ROW:
            cells = []
            for cell in el.iterchildren(ODF_CELL):
                paras = (reader.inline(p).strip() for p in cell_paragraphs(cell))
                cells.append(" ".join(t for t in paras if t))
            if any(cells):
                line(" | ".join(cells))
                tables.setdefault(next(el.iterancestors(ODF_TABLE_TAG), None), []).append(cells)
        else:  # lists and their items, sections, tables, an index's body: what they hold
            if tag == ODF_TABLE_TAG:  # (each table counted, one of blank rows too: numbered as the document has them)
                tables.setdefault(el, [])
            stack.extend(reversed(el))
    flush()
    add_notes(builder, "Footnotes", reader.notes["footnote"])
    add_notes(builder, "Endnotes", reader.notes["endnote"])
    if not builder.text().strip():
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    return Document(str(path), "odt", builder.text(), builder.sections, facts=facts)
