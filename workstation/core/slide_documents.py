"""PowerPoint presentations (.pptx, .pptm) and OpenDocument presentations (.odp), read into a
``Document``: each slide a section ('Slide 3: Budget'), its text boxes and tables (rows
'a | b | c') as lines, then its speaker notes. Slide numbers, dates and footers are left out.
The zip is checked (``check_zip``) before a member is decompressed and the XML parsed without
entities (``xml_parser``), as for Word and OpenDocument texts."""

from __future__ import annotations

import time
import zipfile
from pathlib import Path
from typing import Any

from workstation.core.documents import (
    Document,
    DocumentBuilder,
    DocumentError,
    Limits,
    check_zip,
    document_tables,
)
from workstation.core.office_documents import (
    ODF_CELL,
    ODF_DRAW,
    ODF_H,
    ODF_P,
    ODF_ROW,
    ODF_TABLE_TAG,
    OdtText,
    cell_paragraphs,
    local_name,
    odf_tag,
    office_part,
    relation_id,
    relations,
    xml_parser,
)
from workstation.core.table_facts import SheetFacts

Rows = list[list[str]]  # a table's rows, a row's cells each

_NOT_SAID = {"sldNum", "dt", "ftr", "hdr", "sldImg"}  # placeholders: slide number, date, footer, header


def _placeholder(shape: Any) -> str | None:
    """A shape's placeholder type ('title', 'body'...; a placeholder without one is 'body'), or None."""
    for el in shape.iter("{*}ph"):
        return el.get("type", "body")
    return None


def _paragraph(p: Any) -> str:
    out: list[str] = []
    for el in p.iter():
        name = local_name(el.tag)
        if name == "t" and el.text:
            out.append(el.text)
        elif name == "br":
            out.append("\n")
    return "".join(out).strip()


def _shape_lines(root: Any, skip: set[str]) -> tuple[str | None, list[str], list[Rows]]:
    """A slide's (or notes page's) title and lines, its shapes in the order they are drawn:
    text boxes a line per paragraph, tables a line per row; placeholders in ``skip`` left out; and
    its tables' rows, for their facts (``document_tables``)."""
    title: str | None = None
    lines: list[str] = []
    tables: list[Rows] = []
    for shape in root.iter("{*}sp", "{*}graphicFrame"):
        kind = _placeholder(shape)
        if kind in skip:
            continue
        if local_name(shape.tag) == "graphicFrame":
            if next(shape.iter("{*}tbl"), None) is not None:
                tables.append([])
            for tr in shape.iter("{*}tr"):
                cells = [" ".join(t for t in (_paragraph(p) for p in tc.iter("{*}p")) if t) for tc in tr.iter("{*}tc")]
                if any(cells):
                    lines.append(" | ".join(cells))
                    tables[-1].append(cells)
            continue
        texts = [t for t in (_paragraph(p) for body in shape.iter("{*}txBody") for p in body.iter("{*}p")) if t]
        if kind in ("title", "ctrTitle") and title is None and texts:
            title = " ".join(" ".join(texts).split())
            continue
        lines.extend(texts)
    return title, lines, tables


def _section(builder: DocumentBuilder, number: int, title: str | None, hidden: bool, lines: list[str], notes: list[str],
             tables: list[Rows], facts: list[SheetFacts]) -> None:
    """A slide's section, its tables' facts counted as a Word document's are (``document_tables``)."""
    heading = f"Slide {number}" + (f": {title}" if title else "") + (" (hidden)" if hidden else "")
    if notes:
        lines = [*lines, "Speaker notes: " + notes[0], *notes[1:]]
    document_tables(builder, heading, lines, tables, facts)


def read_pptx(path: Path, data: bytes, limits: Limits, deadline: float) -> Document:
    """A PowerPoint presentation: its slides in the order shown, each a section."""
    from lxml import etree

    check_zip(path, limits, what="PPTX")
    name = path.name
    builder = DocumentBuilder(name, limits, deadline)
    facts: list[SheetFacts] = []
    with office_part(name, "PPTX", "doc.zip_not_powerpoint"), zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        root = etree.fromstring(zf.read("ppt/presentation.xml"), xml_parser())
        rels = relations(zf, "ppt/presentation.xml")
        slides = []
        for sid in root.iter("{*}sldId"):
            kind, member = rels.get(relation_id(sid), ("", ""))
            if kind == "slide" and member in names:
                slides.append(member)
        for number, member in enumerate(slides, 1):
            if time.monotonic() > deadline:
                builder.add("")  # raises the timeout error
            slide = etree.fromstring(zf.read(member), xml_parser())
            title, lines, tables = _shape_lines(slide, _NOT_SAID)
            notes: list[str] = []
            for kind, notes_member in relations(zf, member).values():
                if kind == "notesSlide" and notes_member in names:
                    page = etree.fromstring(zf.read(notes_member), xml_parser())
                    # the notes are the body placeholder's (the others: the slide's picture, its number)
                    notes = [t for shape in page.iter("{*}sp") if _placeholder(shape) == "body"
                             for body in shape.iter("{*}txBody") for t in (_paragraph(p) for p in body.iter("{*}p")) if t]
            _section(builder, number, title, slide.get("show") in ("0", "false"), lines, notes, tables, facts)
    if not builder.text().strip():
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    return Document(str(path), "pptx", builder.text(), builder.sections, facts=facts)


# --- OpenDocument presentations (.odp) ------------------------------------------------------------
ODF_PRESENTATION = "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"
ODF_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
ODF_PAGE = odf_tag(ODF_DRAW, "page")
ODF_NOTES = odf_tag(ODF_PRESENTATION, "notes")
ODF_CLASS = odf_tag(ODF_PRESENTATION, "class")
_ODF_NOT_SAID = {"page-number", "date-time", "footer", "header", "page"}


def _odp_lines(container: Any, reader: OdtText) -> tuple[str | None, list[str], list[Rows]]:
    """A page's (or its notes') title and lines: each frame or shape's paragraphs, tables' rows;
    and its tables' rows, for their facts (``document_tables``)."""
    title: str | None = None
    lines: list[str] = []
    tables: dict[Any, Rows] = {}  # (by their elements, in the order met)
    stack: list[Any] = list(reversed(container))
    while stack:
        el = stack.pop()
        tag = el.tag
        if not isinstance(tag, str) or tag == ODF_NOTES or el.get(ODF_CLASS) in _ODF_NOT_SAID:
            continue
        if tag == ODF_ROW:
            cells = [" ".join(t for t in (reader.inline(p).strip() for p in cell_paragraphs(c)) if t)
                     for c in el.iterchildren(ODF_CELL)]
            if any(cells):
                lines.append(" | ".join(cells))
                tables.setdefault(next(el.iterancestors(ODF_TABLE_TAG), None), []).append(cells)
        elif tag in (ODF_P, ODF_H):
            text = reader.inline(el).strip()
            if text:
                lines.append(text)
        elif el.get(ODF_CLASS) == "title" and title is None:
            texts = [reader.inline(p).strip() for p in el.iter(ODF_P, ODF_H)]
            title = " ".join(" ".join(texts).split()) or None
        else:
            if tag == ODF_TABLE_TAG:  # (one of blank rows too: each numbered as the presentation has them)
                tables.setdefault(el, [])
            stack.extend(reversed(el))
    return title, lines, list(tables.values())


def read_odp(path: Path, data: bytes, limits: Limits, deadline: float) -> Document:
    """An OpenDocument presentation: each page (``draw:page``) a section, with its notes."""
    from lxml import etree

    check_zip(path, limits, what="ODP")
    name = path.name
    builder = DocumentBuilder(name, limits, deadline)
    reader = OdtText()
    facts: list[SheetFacts] = []
    with office_part(name, "ODP", "doc.zip_not_odp"), zipfile.ZipFile(path) as zf:
        root = etree.fromstring(zf.read("content.xml"), xml_parser())
    body = root.find(f"{odf_tag(ODF_OFFICE, 'body')}/{odf_tag(ODF_OFFICE, 'presentation')}")
    if body is None:
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    for number, page in enumerate(body.iterchildren(ODF_PAGE), 1):
        if time.monotonic() > deadline:
            builder.add("")  # raises the timeout error
        title, lines, tables = _odp_lines(page, reader)
        notes: list[str] = []
        for part in page.iterchildren(ODF_NOTES):
            notes.extend(_odp_lines(part, reader)[1])
        _section(builder, number, title, False, lines, notes, tables, facts)
    if not builder.text().strip():
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    return Document(str(path), "odp", builder.text(), builder.sections, facts=facts)
