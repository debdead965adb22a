"""Excel workbooks (.xlsx, .xlsm) and OpenDocument spreadsheets (.ods), read into a ``Document``:
each sheet a section ('Sheet: Budget 2026'), each row that holds anything a line of its cells
joined by ' | ' so that the model reads a table. Excel's cells: shared and inline strings,
numbers, booleans, errors, formulas' cached values, and dates stored as serial numbers shown
as dates where the cell's style says so; an OpenDocument cell as LibreOffice shows it.

The zip is checked (``check_zip``) before a member is decompressed, the XML parsed without
entities (``xml_parser``) and a sheet's rows streamed, never held as a tree: a sheet of a
million empty cells costs a pass over them and nothing more. A workbook is read up to
``Limits.max_cells`` cells, each sheet after the first keeping a share; a sheet cut short says so in a line
of its own, and the workbook in ``Document.notes`` (the attach line, the summary's head). Hidden sheets
(Excel's lookups and scratch work) are left out and named there, unless no sheet shown holds anything."""

from __future__ import annotations

import math
import re
import time
import zipfile
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from workstation.core.documents import Document, DocumentBuilder, DocumentError, Limits, check_zip
from workstation.core.office_documents import (
    ODF_CELL,
    ODF_ROW,
    ODF_TABLE,
    SAFE_XML,
    OdtText,
    cell_paragraphs,
    local_name,
    odf_tag,
    office_part,
    relation_id,
    relations,
    xml_parser,
)
from workstation.core.phrases import Phrase, say
from workstation.core.table_facts import SheetFacts, table_facts

_WIDEST_ROW = 200  # columns shown in place (empty ones as ''): beyond that, a row's filled cells only


def _children(el: Any, name: str) -> list[Any]:
    return [c for c in el if local_name(c.tag) == name]


def _flat(text: str) -> str:
    """A cell's text on one line (a cell with line breaks would break the table's rows)."""
    return " ".join(text.split())


class _SheetText:
    """The sheets of one workbook as sections of ``builder``. Each sheet may take the cells
    left (of ``Limits.max_cells``) but a share kept for each sheet after it (1,000 cells, or
    less among many sheets), so that a huge first sheet does not crowd out a short summary
    sheet after it, nor does a short one take a huge one's room."""

    def __init__(self, builder: DocumentBuilder, limits: Limits, sheets: int) -> None:
        self.builder, self.limits = builder, limits
        self.cells_left = limits.max_cells
        self.sheets_left = max(1, sheets)
        self.reserve = min(1000, limits.max_cells // (2 * self.sheets_left))  # cells kept for each sheet still to come
        self.rows: list[dict[int, str]] = []
        self.stored: list[set[int]] = []  # each row's columns of numbers Excel stored (not as a person wrote them)
        self.title = self.name = ""
        self.budget = 0
        self.cut = False
        self.held = 0  # characters held, for the text cap
        self.facts: list[SheetFacts] = []  # each sheet's (``table_facts``)
        self.cut_sheets: list[str] = []  # the names of the sheets read in part, or not at all

    def begin(self, name: str, hidden: bool) -> None:
        self.name = name
        self.title = f"Sheet: {name}" + (" (hidden)" if hidden else "")
        self.rows, self.stored, self.cut, self.held = [], [], False, 0
        self.budget = self.cells_left - self.reserve * (self.sheets_left - 1)

    def row(self, cells: dict[int, str], stored: set[int] | None = None) -> bool:
        """A row's filled cells by column (1-based), ``stored`` those that are numbers Excel stored;
        False once this sheet's cells are spent."""
        if time.monotonic() > self.builder.deadline:
            self.builder.add("")  # raises the timeout error
        cells = {c: v for c, v in cells.items() if v}
        if not cells:
            return True
        if len(cells) > self.budget:
            self.cut = True
            return False
        self.budget -= len(cells)
        self.cells_left -= len(cells)
        self.rows.append(cells)
        self.stored.append(stored or set())
        self.held += sum(len(v) + 3 for v in cells.values())
        if self.builder.length + self.held > self.limits.max_text_chars:
            raise DocumentError(said=[("doc.too_much_text", {"name": self.builder.name,
                                                             "chars": f"{self.limits.max_text_chars:,}"})])
        return True

    def end(self) -> None:
        self.sheets_left = max(1, self.sheets_left - 1)
        if self.cut:
            self.cut_sheets.append(self.name)
        if not self.rows:  # (a first row wider than the cells left: said, not a sheet gone without a word)
            if self.cut:
                self.builder.section(self.title, [say([("doc.sheet_not_read", {"limit": f"{self.limits.max_cells:,}"})])])
            return
        first = min(min(r) for r in self.rows)  # (a sheet begun in column B: no empty column A)
        lines = []
        for cells in self.rows:
            last = max(cells)
            if last - first < _WIDEST_ROW:
                lines.append(" | ".join(cells.get(c, "") for c in range(first, last + 1)))
            else:
                lines.append(" | ".join(cells[c] for c in sorted(cells)))
        if self.cut:
            lines.append(say([("doc.sheet_cut", {"rows": f"{len(self.rows):,}", "limit": f"{self.limits.max_cells:,}"})]))
        columns = lines[0] if len(lines) > 1 else None
        self.builder.section(self.title, lines)
        table = [[cells.get(c, "") for c in range(first, min(max(cells), first + _WIDEST_ROW - 1) + 1)] for cells in self.rows]
        # the decimal mark judged by the cells as written (an .ods's as LibreOffice shows them: in
        # Turkish 1.200 and 350,75), not by an Excel's stored numbers, written 1200.5 here
        written = [[("" if first + i in stored else c) for i, c in enumerate(r)] for r, stored in zip(table, self.stored, strict=True)]
        facts = table_facts(self.title, len(self.builder.sections) - 1, table, self.cut, written=written,
                            first_column=first)
        if facts is not None:
            self.facts.append(facts)
        if columns is not None:  # a part of a summary that begins in its rows reads them under its columns
            self.builder.sections[-1].lead = f"{self.title} (continued)\n{columns}"
        self.rows, self.stored = [], []

    def notes(self, hidden: list[str]) -> list[Phrase]:
        """What the person is told of the workbook beside its text (the attach line, the
        summary's head): the sheets cut at ``Limits.max_cells``, the hidden sheets left out."""
        notes: list[Phrase] = []
        if self.cut_sheets:
            notes.append(("doc.workbook_cut", {"limit": f"{self.limits.max_cells:,}", "names": _names(self.cut_sheets)}))
        if hidden:
            notes.append(("doc.hidden_sheet" if len(hidden) == 1 else "doc.hidden_sheets",
                          {"names": _names(hidden), "n": len(hidden)}))
        return notes


def _names(names: list[str]) -> str:
    shown = [f"'{n}'" for n in names[:5]]
    return ", ".join(shown + (["…"] if len(names) > 5 else []))


# --- Excel (.xlsx, .xlsm) ----------------------------------------------------------------------
_CELL_REF = re.compile(r"([A-Za-z]{1,3})(\d*)")
# number formats Excel has built in, by id: dates, times, percentages
_BUILTIN_DATES = {14, 15, 16, 17, 22, *range(27, 32), *range(34, 37), *range(50, 55), 57, 58}
_BUILTIN_TIMES = {18, 19, 20, 21, 32, 33, 45, 46, 47, 55, 56}
_BUILTIN_PERCENT = {9, 10}
_FORMAT_LITERALS = re.compile(r'"[^"]*"|\[[^\]]*\]|\\.|_.|\*.')


def _format_kind(code: str) -> str:
    """'date', 'time', 'percent' or '' for a custom number format ('dd.mm.yyyy', '[h]:mm',
    '0.0%'): its words in quotes, its [colours] and escaped characters left out first."""
    bare = _FORMAT_LITERALS.sub("", code.split(";", 1)[0]).lower()
    if bare in ("general", "@"):
        return ""
    if "y" in bare or "d" in bare:
        return "date"
    if "h" in bare or "s" in bare:
        return "time"
    return "percent" if "%" in bare else ""


def _column(ref: str | None) -> int | None:
    """The 1-based column of a cell reference ('C7' is 3), or None without one."""
    if not ref:
        return None
    m = _CELL_REF.match(ref)
    if not m:
        return None
    n = 0
    for ch in m.group(1).upper():
        n = n * 26 + ord(ch) - 64
    return n


def _number(value: str) -> str:
    """A number as people write it: '0.3' for Excel's 0.30000000000000004, '45000' for 45000.0."""
    try:
        x = float(value)
    except ValueError:
        return value.strip()
    if not math.isfinite(x):
        return value.strip()
    return f"{x:.15g}"


def _serial_date(value: str, kind: str, date1904: bool) -> str:
    """Excel's serial day number as a date ('2026-01-15', '2026-01-15 13:30') or a time ('13:30');
    a number out of any date's range stays a number."""
    try:
        x = float(value)
    except ValueError:
        return value.strip()
    if not math.isfinite(x) or not 0 <= x < 2_958_466:  # (9999-12-31)
        return _number(value)
    if date1904:
        base = datetime(1904, 1, 1)
    else:  # Excel counts a 29 February 1900 that was not: days after it are one fewer
        base = datetime(1899, 12, 31) if x < 60 else datetime(1899, 12, 30)
    moment = base + timedelta(seconds=round(x * 86400))
    clock = moment.strftime("%H:%M:%S" if moment.second else "%H:%M")
    if kind == "time":
        return clock
    if moment.hour == moment.minute == moment.second == 0:
        return moment.date().isoformat()
    return f"{moment.date().isoformat()} {clock}"


def _string_item(si: Any) -> str:
    """The text of a shared or inline string: its runs' text, its phonetic guide left out."""
    out: list[str] = []
    for el in si.iter():
        if local_name(el.tag) == "t" and el.text and local_name(el.getparent().tag) != "rPh":
            out.append(el.text)
    return "".join(out)


class _Workbook:
    """The parts of an Excel workbook that its sheets' cells refer to."""

    def __init__(self, zf: zipfile.ZipFile, path: Path, limits: Limits, deadline: float) -> None:
        from lxml import etree

        self.zf, self.name, self.limits, self.deadline = zf, path.name, limits, deadline
        self.names = set(zf.namelist())
        root = etree.fromstring(zf.read("xl/workbook.xml"), xml_parser())
        self.date1904 = any(el.get("date1904") in ("1", "true") for el in root.iter("{*}workbookPr"))
        rels = relations(self.zf, "xl/workbook.xml")
        self.sheets: list[tuple[str, bool, str]] = []  # (name, hidden, member)
        for sheet in root.iter("{*}sheet"):
            kind, member = rels.get(relation_id(sheet), ("", ""))
            if kind == "worksheet" and member in self.names:  # (chart sheets and macro sheets hold no cells)
                self.sheets.append((sheet.get("name") or member, sheet.get("state", "visible") != "visible", member))
        self.kinds = self._styles()
        self.shared = self._shared_strings()

    def _styles(self) -> list[str]:
        """Each cell style's kind of number ('date', 'time', 'percent', ''), by the index a cell's
        ``s`` names."""
        from lxml import etree

        member = "xl/styles.xml"
        if member not in self.names:
            return []
        root = etree.fromstring(self.zf.read(member), xml_parser())
        codes = {el.get("numFmtId"): el.get("formatCode") or "" for el in root.iter("{*}numFmt")}
        kinds: list[str] = []
        for xfs in root.iter("{*}cellXfs"):
            for xf in _children(xfs, "xf"):
                fid = xf.get("numFmtId", "0")
                if fid in codes:
                    kinds.append(_format_kind(codes[fid]))
                    continue
                n = int(fid) if fid.isdigit() else 0
                kinds.append("date" if n in _BUILTIN_DATES else "time" if n in _BUILTIN_TIMES
                             else "percent" if n in _BUILTIN_PERCENT else "")
        return kinds

    def _shared_strings(self) -> list[str]:
        member = next((m for kind, m in relations(self.zf, "xl/workbook.xml").values() if kind == "sharedStrings"),
                      "xl/sharedStrings.xml")
        if member not in self.names:
            return []
        strings: list[str] = []
        held = 0
        for si in self._stream(member, "si"):
            strings.append(_flat(_string_item(si)))
            held += len(strings[-1])
            if held > self.limits.max_text_chars:
                raise DocumentError(said=[("doc.too_much_text", {"name": self.name, "chars": f"{self.limits.max_text_chars:,}"})])
        return strings

    def _stream(self, member: str, tag: str) -> Any:
        """The elements ``tag`` of a part as the parser meets them, each freed after use."""
        from lxml import etree

        with self.zf.open(member) as f:
            for _event, el in etree.iterparse(_Reader(f, self.deadline, self.name, self.limits), events=("end",),
                                              tag=f"{{*}}{tag}", **SAFE_XML):
                yield el
                el.clear(keep_tail=True)
                while el.getprevious() is not None:
                    del el.getparent()[0]

    def cell(self, c: Any) -> str:
        kind, value, inline = c.get("t", "n"), None, None
        for child in c:
            name = local_name(child.tag)
            if name == "v":
                value = child.text or ""
            elif name == "is":
                inline = child
        if kind == "inlineStr":
            return _flat(_string_item(inline)) if inline is not None else ""
        if value is None:
            return ""  # (a formula never calculated, a styled empty cell)
        if kind == "s":
            i = int(value) if value.strip().isdigit() else -1
            return self.shared[i] if 0 <= i < len(self.shared) else ""
        if kind == "b":
            return "TRUE" if value.strip() in ("1", "true") else "FALSE"
        if kind in ("str", "e"):
            return _flat(value)
        if kind == "d":  # an ISO date (strict files)
            return value.strip().replace("T00:00:00", "").replace("T", " ")
        style = c.get("s", "0")
        number_kind = self.kinds[int(style)] if style.isdigit() and int(style) < len(self.kinds) else ""
        if number_kind in ("date", "time"):
            return _serial_date(value, number_kind, self.date1904)
        if number_kind == "percent":
            try:
                return f"{float(value) * 100:.15g}%"
            except ValueError:
                pass
        return _number(value)

    def read_sheet(self, member: str, sheet: _SheetText) -> None:
        for row in self._stream(member, "row"):
            cells: dict[int, str] = {}
            stored: set[int] = set()
            col = 0
            for c in row:
                col += 1
                if not len(c):  # an empty cell (styled, or a million of them): nothing to read
                    continue
                if local_name(c.tag) != "c":
                    col -= 1
                    continue
                col = _column(c.get("r")) or col
                text = self.cell(c)
                if text:
                    cells[col] = text
                    if c.get("t", "n") == "n":
                        stored.add(col)
            if not sheet.row(cells, stored):
                return


class _Reader:
    """A zip member read for the parser with the reading's deadline checked on the way (lxml
    parses in C: the deadline would otherwise be seen only between rows it hands back)."""

    def __init__(self, f: IO[bytes], deadline: float, name: str, limits: Limits) -> None:
        self.f, self.deadline, self.name, self.limits = f, deadline, name, limits

    def read(self, n: int = -1) -> bytes:
        if time.monotonic() > self.deadline:
            raise DocumentError(said=[("doc.too_slow_here", {"name": self.name, "seconds": f"{self.limits.timeout_s:.0f}"})])
        return self.f.read(min(n, 1 << 16) if n > 0 else 1 << 16)


def read_xlsx(path: Path, data: bytes, limits: Limits, deadline: float) -> Document:
    """An Excel workbook: each worksheet a section 'Sheet: name', its rows 'a | b | c'. Its hidden
    sheets (Excel's lookups and scratch work, not what its reader sees) are left out and named
    (``_SheetText.notes``), unless every sheet with cells is hidden."""
    check_zip(path, limits, what="XLSX")
    name = path.name
    builder = DocumentBuilder(name, limits, deadline)
    with office_part(name, "XLSX", "doc.zip_not_excel"), zipfile.ZipFile(path) as zf:
        book = _Workbook(zf, path, limits, deadline)

        def read(chosen: list[tuple[str, bool, str]]) -> _SheetText:
            sheets = _SheetText(builder, limits, len(chosen))
            for sheet_name, hidden, member in chosen:
                sheets.begin(sheet_name, hidden)
                book.read_sheet(member, sheets)
                sheets.end()
            return sheets

        left_out = [s for s in book.sheets if s[1]]
        sheets = read([s for s in book.sheets if not s[1]])
        if left_out and not builder.text().strip():  # (no sheet shown holds anything: the hidden ones, not nothing)
            sheets, left_out = read(left_out), []
    if not builder.text().strip():
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    return Document(str(path), "xlsx", builder.text(), builder.sections, facts=sheets.facts,
                    notes=sheets.notes([s[0] for s in left_out]))


# --- OpenDocument spreadsheets (.ods) -------------------------------------------------------------
_ODF_TABLE_EL = odf_tag(ODF_TABLE, "table")
ODF_COVERED = odf_tag(ODF_TABLE, "covered-table-cell")
_ODF_OFFICE_NS = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_ODF_STYLE_NS = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
ODF_STYLE = odf_tag(_ODF_STYLE_NS, "style")


def _repeat(el: Any, attr: str) -> int:
    try:
        return max(1, int(el.get(odf_tag(ODF_TABLE, attr), "1")))
    except ValueError:
        return 1


def _ods_cell(cell: Any, reader: OdtText) -> str:
    """A cell as LibreOffice shows it (its paragraphs: '15.01.2026', '12%'), or its value."""
    paras = (reader.inline(p).strip() for p in cell_paragraphs(cell))
    text = _flat(" ".join(t for t in paras if t))
    if text:
        return text
    for attr in ("value", "date-value", "time-value", "boolean-value", "string-value"):
        value = cell.get(odf_tag(_ODF_OFFICE_NS, attr))
        if value:
            return _flat(value)
    return ""


def _ods_stream(zf: zipfile.ZipFile, path: Path, limits: Limits, deadline: float) -> Iterator[tuple[str, Any]]:
    """content.xml's styles (at their end: a hidden sheet is hidden by its style), tables (at
    their start and end) and rows (at their end), each row freed once the caller has it: the
    tree never holds more than a row."""
    from lxml import etree

    with zf.open("content.xml") as f:
        for event, el in etree.iterparse(_Reader(f, deadline, path.name, limits), events=("start", "end"),
                                         tag=(ODF_STYLE, _ODF_TABLE_EL, ODF_ROW), **SAFE_XML):
            yield event, el
            if event == "end":
                el.clear(keep_tail=True)
                prev = el.getprevious()
                while prev is not None and prev.tag in (ODF_ROW, _ODF_TABLE_EL):
                    prev.getparent().remove(prev)
                    prev = el.getprevious()


def read_ods(path: Path, data: bytes, limits: Limits, deadline: float) -> Document:
    """An OpenDocument spreadsheet: each table a section 'Sheet: name', its rows 'a | b | c';
    repeated rows and cells (how it stores a million empty ones) taken as one, not unrolled. Its
    hidden sheets are left out and named (``_SheetText.notes``), unless every sheet with cells is."""
    check_zip(path, limits, what="ODS")
    name = path.name
    builder = DocumentBuilder(name, limits, deadline)
    with office_part(name, "ODS", "doc.zip_not_ods"), zipfile.ZipFile(path) as zf:
        sheets, left_out = _ods_tables(zf, path, limits, deadline, builder, hidden_too=False)
        if left_out and not builder.text().strip():  # (no sheet shown holds anything: the hidden ones, not nothing)
            sheets, left_out = _ods_tables(zf, path, limits, deadline, builder, hidden_too=True)
    if not builder.text().strip():
        raise DocumentError(said=[("doc.no_text", {"name": name})])
    return Document(str(path), "ods", builder.text(), builder.sections, facts=sheets.facts,
                    notes=sheets.notes(left_out))


def _ods_tables(zf: zipfile.ZipFile, path: Path, limits: Limits, deadline: float, builder: DocumentBuilder,
                hidden_too: bool) -> tuple[_SheetText, list[str]]:
    """An .ods's tables read into ``builder``, its hidden ones too where ``hidden_too``; the names
    of the hidden ones left out."""
    def hides(el: Any) -> bool:  # a table's style that hides it (content.xml's styles come before its tables)
        return any(p.get(odf_tag(ODF_TABLE, "display")) == "false" for p in el)

    hidden: set[str] = set()  # the tables' styles that hide them
    tables = 0
    for event, el in _ods_stream(zf, path, limits, deadline):
        if el.tag == ODF_STYLE and event == "end" and hides(el):
            hidden.add(el.get(odf_tag(_ODF_STYLE_NS, "name")) or "")
        elif el.tag == _ODF_TABLE_EL and event == "start":
            tables += hidden_too or el.get(odf_tag(ODF_TABLE, "style-name")) not in hidden
    sheets = _SheetText(builder, limits, tables)
    reader = OdtText()
    spent = skipped = False
    left_out: list[str] = []
    for event, el in _ods_stream(zf, path, limits, deadline):
        if el.tag == ODF_STYLE:
            continue
        if el.tag == _ODF_TABLE_EL:
            if event == "start":
                name = el.get(odf_tag(ODF_TABLE, "name")) or f"Sheet {len(builder.sections) + 1}"
                is_hidden = el.get(odf_tag(ODF_TABLE, "style-name")) in hidden
                skipped = is_hidden and not hidden_too
                if skipped:
                    left_out.append(name)
                else:
                    sheets.begin(name, is_hidden)
                spent = False
            elif not skipped:
                sheets.end()
            continue
        if event == "start" or spent or skipped:
            continue
        cells: dict[int, str] = {}
        col = 1
        for cell in el:
            if cell.tag not in (ODF_CELL, ODF_COVERED):
                continue
            times = _repeat(cell, "number-columns-repeated")
            text = _ods_cell(cell, reader) if cell.tag == ODF_CELL else ""
            if text:  # (a repeated filled cell is unrolled as far as the sheet's cells go, the row's
                for k in range(min(times, sheets.budget + 1 - len(cells))):  # cells so far counted: a
                    cells[col + k] = text  # 2 KB file of 400 cells each repeated a million took 2 GB)
            col += times
        for _ in range(min(_repeat(el, "number-rows-repeated"), sheets.budget + 1) if cells else 1):
            if not sheets.row(dict(cells)):
                spent = True
                break
    return sheets, left_out
