"""Documents the tests write: PDFs (pypdf), DOCX (python-docx), texts, and Excel and PowerPoint
files built part by part in a zip."""

from __future__ import annotations

import inspect
import textwrap
import zipfile
from pathlib import Path
from typing import Any


def make_pdf(path: Path, pages: list[str], *, text_layer: bool = True) -> Path:
    """A PDF written by pypdf: one page per string, Helvetica text (or no text at all)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject, NumberObject

    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
        }
    )
    font_ref = writer._add_object(font)
    for text in pages:
        page = writer.add_blank_page(612, 792)
        if text_layer:
            lines = []
            for para in text.split("\n"):
                lines.extend(textwrap.wrap(para, 95) or [""])
            esc = [ln.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for ln in lines]
            ops = "BT /F1 9 Tf 11 TL 40 760 Td " + " ".join(f"({ln}) Tj T*" for ln in esc) + " ET"
        else:  # a "scanned" page: a picture of the page (a 2x2 grey image), no text operators
            ops = "q 500 0 0 700 40 40 cm /Im1 Do Q"
        stream = DecodedStreamObject()
        stream.set_data(ops.encode("cp1252", "replace"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        resources = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})})
        if not text_layer:
            picture = DecodedStreamObject()
            picture.set_data(bytes([128, 200, 200, 128]))
            picture.update({
                NameObject("/Type"): NameObject("/XObject"), NameObject("/Subtype"): NameObject("/Image"),
                NameObject("/Width"): NumberObject(2), NameObject("/Height"): NumberObject(2),
                NameObject("/ColorSpace"): NameObject("/DeviceGray"), NameObject("/BitsPerComponent"): NumberObject(8),
            })
            resources[NameObject("/XObject")] = DictionaryObject({NameObject("/Im1"): writer._add_object(picture)})
        page[NameObject("/Resources")] = resources
    with path.open("wb") as out:
        writer.write(out)
    return path


def make_docx(path: Path, sections: list[tuple[str, list[str]]]) -> Path:
    """A DOCX written by python-docx: a Heading 1 and its paragraphs per section."""
    import docx

    doc = docx.Document()
    for title, paras in sections:
        doc.add_heading(title, level=1)
        for para in paras:
            doc.add_paragraph(para)
    doc.save(str(path))
    return path


def add_docx_table(doc: Any, rows: list[tuple[str, ...]]) -> None:
    """A table of ``rows`` (the first its header) added to python-docx's ``doc``, a cell each."""
    table = doc.add_table(rows=len(rows), cols=len(rows[0]))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            table.cell(r, c).text = text


def make_docx_bomb(path: Path, size: int = 1 << 30) -> Path:
    """A DOCX-shaped zip whose document.xml unpacks to ``size`` bytes of zeros (~1 MB on disk)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        with zf.open("word/document.xml", "w", force_zip64=True) as member:
            block = b"\0" * (1 << 20)
            for _ in range(size >> 20):
                member.write(block)
    return path


SUBJECT_PARAGRAPHS = [
    "Honeybees live in colonies. A honeybee colony has one queen, thousands of worker bees and "
    "some drones. The honeybees build a hive of wax combs.",
    "Worker honeybees collect nectar and pollen from flowers. The honeybees turn the nectar into "
    "honey and store the honey in the wax combs of the hive.",
    "Honeybees pollinate crops such as apples, almonds and clover. Farmers rent honeybee hives "
    "so the honeybees pollinate their fields.",
    "Honeybees talk to each other with a waggle dance. The dance tells other honeybees where the "
    "flowers are and how far away they are.",
    "In winter the honeybees cluster together in the hive and eat the honey they stored. The "
    "queen honeybee starts laying eggs again in spring.",
    "Beekeepers care for honeybees. A beekeeper checks the hive for disease, mites and honey, "
    "and harvests the extra honey in summer.",
]


def honeybee_text(repeat: int = 6) -> str:
    """A long text whose subject (honeybees) is in every paragraph."""
    paras = []
    for i in range(repeat):
        for j, p in enumerate(SUBJECT_PARAGRAPHS):
            paras.append(f"{p} (Note {i * len(SUBJECT_PARAGRAPHS) + j + 1}.)")
    return "\n\n".join(paras) + "\n"


def english_text() -> str:
    """Varied English prose that every machine has: stdlib module docstrings, in a fixed order."""
    import argparse
    import csv
    import logging

    return "\n\n".join(inspect.getdoc(m) or "" for m in (argparse, logging, csv))


# --- Excel and PowerPoint files, written part by part (no library here writes them) -------------
_CT = "http://schemas.openxmlformats.org/package/2006/content-types"
_PKG_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_DOC_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_XL = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def _rels(targets: list[tuple[str, str, str]]) -> str:
    """A .rels part: (id, type's last word, target) each."""
    items = "".join(f'<Relationship Id="{i}" Type="{_DOC_RELS}/{kind}" Target="{target}"/>' for i, kind, target in targets)
    return f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="{_PKG_RELS}">{items}</Relationships>'


def _xml_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _column_name(n: int) -> str:
    letters = ""
    while n:
        n, rest = divmod(n - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def make_xlsx(path: Path, sheets: list[tuple[str, list[list[object]]]], *, hidden: tuple[str, ...] = (),
              sheet_xml: dict[str, str] | None = None, date1904: bool = False) -> Path:
    """An Excel workbook laid out as Excel saves one: a sheet per (name, rows). A cell is a str
    (a shared string), an int or float, a bool, a ``datetime.date``/``datetime`` (a serial number in
    a date style), ``("inline", text)``, ``("formula", formula, cached value)``, ``("error", "#DIV/0!")``,
    ``("percent", 0.125)`` or None (no cell). ``sheet_xml`` puts a sheet's XML as given (hostile ones)."""
    import datetime as dt

    shared: list[str] = []
    epoch = dt.datetime(1904, 1, 1) if date1904 else dt.datetime(1899, 12, 30)

    def cell(ref: str, value: object) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return f'<c r="{ref}" t="b"><v>{int(value)}</v></c>'
        if isinstance(value, (int, float)):
            return f'<c r="{ref}"><v>{value!r}</v></c>'
        if isinstance(value, dt.date):
            moment = value if isinstance(value, dt.datetime) else dt.datetime(value.year, value.month, value.day)
            serial = (moment - epoch).total_seconds() / 86400
            return f'<c r="{ref}" s="{2 if isinstance(value, dt.datetime) else 1}"><v>{serial:.10g}</v></c>'
        if isinstance(value, tuple):
            kind = value[0]
            if kind == "inline":
                return f'<c r="{ref}" t="inlineStr"><is><t>{_xml_text(str(value[1]))}</t></is></c>'
            if kind == "formula":
                cached = value[2]
                typ = ' t="str"' if isinstance(cached, str) else ""
                return f'<c r="{ref}"{typ}><f>{_xml_text(str(value[1]))}</f><v>{_xml_text(str(cached))}</v></c>'
            if kind == "error":
                return f'<c r="{ref}" t="e"><v>{value[1]}</v></c>'
            if kind == "percent":
                return f'<c r="{ref}" s="3"><v>{value[1]!r}</v></c>'
        text = str(value)
        if text not in shared:
            shared.append(text)
        return f'<c r="{ref}" t="s"><v>{shared.index(text)}</v></c>'

    parts: dict[str, str] = {}
    for i, (name, rows) in enumerate(sheets, 1):
        body = "".join(f'<row r="{r}">' + "".join(cell(f"{_column_name(c)}{r}", v) for c, v in enumerate(row, 1)) + "</row>"
                       for r, row in enumerate(rows, 1))
        parts[f"xl/worksheets/sheet{i}.xml"] = (sheet_xml or {}).get(name) or (
            f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="{_XL}">'
            f'<sheetData>{body}</sheetData></worksheet>')
    sheet_list = "".join(f'<sheet name="{_xml_text(name)}" sheetId="{i}" r:id="rId{i}"'
                         + (' state="hidden"' if name in hidden else "") + "/>" for i, (name, _) in enumerate(sheets, 1))
    parts["xl/workbook.xml"] = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="{_XL}" '
                                f'xmlns:r="{_DOC_RELS}"><workbookPr{" date1904=" + chr(34) + "1" + chr(34) if date1904 else ""}/>'
                                f"<sheets>{sheet_list}</sheets></workbook>")
    n = len(sheets)
    parts["xl/_rels/workbook.xml.rels"] = _rels([(f"rId{i}", "worksheet", f"worksheets/sheet{i}.xml") for i in range(1, n + 1)]
                                                + [(f"rId{n + 1}", "sharedStrings", "sharedStrings.xml"),
                                                   (f"rId{n + 2}", "styles", "styles.xml")])
    parts["xl/sharedStrings.xml"] = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><sst xmlns="{_XL}" '
                                     f'count="{len(shared)}">' + "".join(f"<si><t>{_xml_text(s)}</t></si>" for s in shared)
                                     + "</sst>")
    parts["xl/styles.xml"] = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><styleSheet xmlns="{_XL}">'
                              '<numFmts count="1"><numFmt numFmtId="164" formatCode="dd/mm/yyyy\\ hh:mm"/></numFmts>'
                              '<cellXfs count="4"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/>'
                              '<xf numFmtId="164" applyNumberFormat="1"/><xf numFmtId="10" applyNumberFormat="1"/></cellXfs>'
                              "</styleSheet>")
    parts["_rels/.rels"] = _rels([("rId1", "officeDocument", "xl/workbook.xml")])
    parts["[Content_Types].xml"] = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="{_CT}">'
                                    '<Default Extension="xml" ContentType="application/xml"/></Types>')
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member in ("[Content_Types].xml", "_rels/.rels", *sorted(p for p in parts if p.startswith("xl/"))):
            zf.writestr(member, parts[member])
    return path


_PML = "http://schemas.openxmlformats.org/presentationml/2006/main"
_DML = "http://schemas.openxmlformats.org/drawingml/2006/main"


def _shape(paragraphs: list[str], placeholder: str | None = None) -> str:
    ph = f'<p:nvPr><p:ph type="{placeholder}"/></p:nvPr>' if placeholder else "<p:nvPr/>"
    paras = "".join(f"<a:p><a:r><a:t>{_xml_text(t)}</a:t></a:r></a:p>" for t in paragraphs)
    return (f'<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/>{ph}</p:nvSpPr><p:spPr/>'
            f"<p:txBody><a:bodyPr/>{paras}</p:txBody></p:sp>")


def make_pptx(path: Path, slides: list[tuple[str, list[str], str | None]], *, table: list[list[str]] | None = None,
              hidden: tuple[int, ...] = ()) -> Path:
    """A PowerPoint presentation: a slide per (title, text box's paragraphs, speaker notes or
    None), each with a slide-number placeholder (not to be read); ``table`` on the first slide."""
    parts: dict[str, str] = {}
    ids = ""
    for i, (title, lines, notes) in enumerate(slides, 1):
        shapes = _shape([title], "title") + _shape(lines) + _shape([str(i)], "sldNum")
        if table and i == 1:
            rows = "".join("<a:tr>" + "".join(f"<a:tc><a:txBody><a:p><a:r><a:t>{_xml_text(c)}</a:t></a:r></a:p></a:txBody></a:tc>"
                                              for c in row) + "</a:tr>" for row in table)
            shapes += (f'<p:graphicFrame><a:graphic><a:graphicData><a:tbl>{rows}</a:tbl></a:graphicData></a:graphic>'
                       "</p:graphicFrame>")
        show = ' show="0"' if i in hidden else ""
        parts[f"ppt/slides/slide{i}.xml"] = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sld xmlns:p="{_PML}" '
                                             f'xmlns:a="{_DML}" xmlns:r="{_DOC_RELS}"{show}><p:cSld><p:spTree>{shapes}'
                                             "</p:spTree></p:cSld></p:sld>")
        if notes is not None:
            parts[f"ppt/slides/_rels/slide{i}.xml.rels"] = _rels([("rId1", "notesSlide", f"../notesSlides/notesSlide{i}.xml")])
            parts[f"ppt/notesSlides/notesSlide{i}.xml"] = (
                f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:notes xmlns:p="{_PML}" xmlns:a="{_DML}">'
                f'<p:cSld><p:spTree>{_shape([], "sldImg")}{_shape(notes.split(chr(10)), "body")}{_shape([str(i)], "sldNum")}'
                "</p:spTree></p:cSld></p:notes>")
        ids += f'<p:sldId id="{255 + i}" r:id="rId{i}"/>'
    parts["ppt/presentation.xml"] = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:presentation '
                                     f'xmlns:p="{_PML}" xmlns:r="{_DOC_RELS}"><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>')
    # (the relationships in another order than the slides: the list above decides)
    parts["ppt/_rels/presentation.xml.rels"] = _rels([(f"rId{i}", "slide", f"slides/slide{i}.xml")
                                                      for i in reversed(range(1, len(slides) + 1))])
    parts["_rels/.rels"] = _rels([("rId1", "officeDocument", "ppt/presentation.xml")])
    parts["[Content_Types].xml"] = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="{_CT}">'
                                    '<Default Extension="xml" ContentType="application/xml"/></Types>')
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, text in parts.items():
            zf.writestr(member, text)
    return path
