"""Tables pasted into a message's own text (an invoice's lines 'Payroll runs | 4 | 30.00 | 130.00',
rows copied from Excel with tabs, a CSV's lines): found (``pasted_tables``), their facts counted as
an attached table's are (``table_facts``), and their arithmetic checked where the reading is certain
(``arithmetic_checks``): a row whose amount is not its quantity × price, a subtotal or total after
the table that is not what its amounts add up to. Asked "check the arithmetic on this invoice", a
135M model said "Your invoice is accurate" of one whose row said 4 × 30.00 = 130.00."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from workstation.core.phrases import say
from workstation.core.table_facts import (
    _SPACED,
    _TOTAL_START,
    CURRENCY_WORDS,
    ColumnFacts,
    SheetFacts,
    _figure,
    _line,
    _number,
    _places,
    _product_columns,
    _rounded,
    _value,
    as_written,
    counted_answer,
    counted_by_table,
    facts_record,
    facts_text,
    table_facts,
    total_row,
)

SPLITS = ("\t", "|", ";", ",")  # what a pasted line's cells may be split by, the surest first
MIN_ROWS = 3  # consecutive lines of as many cells: a table (two lines: a note)
AFTER_LINES = 8  # lines after a table read for its subtotal, VAT and total
MAX_CHECKS = 3  # rows said whose amount is not quantity × price
PASTED_TITLE = "the table in your message"  # (said in the UI's language: ``table_facts.title_phrase``)
# a Markdown table's rule under its header: |---|:---:|
_RULE = re.compile(r"\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*")
# a line after the table that says a figure: "Subtotal: 920.00", "VAT 20%: 184.00", "KDV %20 = 184,00 TL"
# (a figure's thousands set apart by spaces, as a table's cells may be: "Total: 7 015,00")
_SAID = re.compile(r"\s*(?P<label>[^\W\d][^:=]*?)\s*[:=]?\s*(?P<figure>\(?[-+\u2212]?[$€£₺¥]?\s?"
                   rf"(?:{_SPACED}(?:[.,]\d+)?|\d[\d.,]*)\)?)"
                   rf"\s*(?:[$€£₺¥]|(?:{CURRENCY_WORDS})\b)?\s*", re.IGNORECASE)
_TAX = re.compile(r"\b(?:vat|tax|gst|kdv)\b", re.IGNORECASE)
_RATE = re.compile(r"(?P<a>\d+(?:[.,]\d+)?)\s*%|%\s*(?P<b>\d+(?:[.,]\d+)?)")
_DUE = re.compile(r"(?:amount|balance)\s+due\b|(?:genel\s+|ara\s+)?toplam", re.IGNORECASE)


@dataclass
class Pasted:
    """A table found in a message: its rows' cells, what split them, and the lines after it."""

    rows: list[list[str]]
    delimiter: str
    said: list[tuple[str, str]]  # the labelled figures after it ("Subtotal", "920.00"): ``_said_after``
    start: int  # its first line in the message
    end: int  # the line after it and its labelled figures
    rows_end: int  # the line after its rows (its labelled figures from there)


def _cells(line: str, delimiter: str) -> list[str]:
    """``line``'s cells split by ``delimiter`` ([] where it holds none): a '|' row's outer bars
    dropped (| a | b |), a ; or , line read as the CSV reader reads a file's (its quotes)."""
    if delimiter not in line:
        return []
    if delimiter == "|":
        t = line.strip()
        t = t[1:] if t.startswith("|") else t
        t = t[:-1] if t.endswith("|") else t
        return [c.strip() for c in t.split("|")]
    try:
        return [c.strip() for c in next(csv.reader([line], delimiter=delimiter))]
    except (csv.Error, StopIteration):
        return []


def pasted_tables(text: str) -> list[Pasted]:
    """The tables in ``text``: MIN_ROWS or more consecutive lines each split into the same number
    (2 or more) of cells by a tab, '|', ';' or ',' (the first of these that makes one)."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    found: list[Pasted] = []
    i = 0
    while i < len(lines):
        for d in SPLITS:
            n = len(_cells(lines[i], d))
            if n < 2:
                continue
            rows: list[list[str]] = []
            j = i
            while j < len(lines):
                if d == "|" and rows and _RULE.fullmatch(lines[j]):
                    j += 1
                    continue
                cells = _cells(lines[j], d)
                if len(cells) != n:
                    break
                rows.append(cells)
                j += 1
            if len(rows) >= MIN_ROWS:
                said, end = _said_after(lines, j)
                found.append(Pasted(rows, d, said, i, end, j))
                i = end
                break
        else:
            i += 1
    return found


def pasted_facts(text: str) -> list[tuple[SheetFacts, Pasted]]:
    """The facts of each table pasted in ``text`` (``table_facts``, titled PASTED_TITLE, "table 2 in
    your message" after it), only where it has a column of numbers (three lines of prose with two
    commas or a '|' each are no table; a table of words has nothing to count)."""
    out: list[tuple[SheetFacts, Pasted]] = []
    for p in pasted_tables(text):
        title = PASTED_TITLE if not out else f"table {len(out) + 1} in your message"
        facts = table_facts(title, 0, p.rows, usual_comma={";": True, ",": False}.get(p.delimiter), first_column=0)
        if facts is None or not any(c.kind == "numbers" for c in facts.columns):
            continue
        out.append((facts, p))
    return out


def _as_written(value: Decimal) -> str:
    """A figure with the decimals it was written with (30.00, 4), the English way (``say`` writes
    it the UI's language's)."""
    exponent = value.as_tuple().exponent
    return _figure(value, max(0, -exponent) if isinstance(exponent, int) else None)


def _row_name(facts: SheetFacts, row: list[str], n: int) -> str:
    """A row as the checks name it: its first cell of words ("Payroll runs"), else its number."""
    for col in facts.columns:
        if col.kind == "text" and col.at < len(row) and _line(row[col.at]):
            return _line(row[col.at])
    return str(n)


def _known(label: str) -> bool:
    """Whether a figure's label is one the checks know: a subtotal or total, a VAT with its rate."""
    return bool(_TAX.search(label) and _RATE.search(label) or _TOTAL_START.match(label) or _DUE.match(label))


def _said_after(lines: list[str], at: int) -> tuple[list[tuple[str, str]], int]:
    """The labelled figures in the lines from ``at`` ("Subtotal: 920.00 / VAT 20%: 184.00"), in
    order, up to the first one the checks do not know (``_known``: "Discount: 10.00" ends them,
    what follows it is not certain), and the line after the last line of labelled figures, known
    or not (``at`` where none; a blank line before them skipped): "Discount: 5.00" ended them, and
    the "Total: 25.00" under it was read as the message's question, asking for the columns' totals.
    A label the checks do not know is one only with its ':' or '=' ("Discount: 5.00"; "sum these 3"
    is a question)."""
    said: list[tuple[str, str]] = []
    end = at
    known = True  # (no label the checks do not know met yet)
    for k in range(at, min(len(lines), at + AFTER_LINES)):
        line = lines[k]
        if not line.strip():
            if end > at:
                break
            continue
        parts = [(part, _SAID.fullmatch(part)) for part in re.split(r"\s+/\s+", line.strip())]
        if not all(m is not None and (_known(m["label"]) or re.search(r"[:=]", part[m.end("label"):m.start("figure")]))
                   for part, m in parts):
            break
        known = known and all(m is not None and _known(m["label"]) for _, m in parts)
        if known:
            said += [(" ".join(m["label"].split()), m["figure"]) for _, m in parts if m]
        end = k + 1
    return said, end


def question_of(text: str, pasted: list[Pasted]) -> str:
    """``text`` without the lines of its pasted tables and their labelled figures: what the message
    asks ("Subtotal: 920.00" asks for no total, and a row's "Payroll runs" names no rows)."""
    lines = text.split("\n")
    for p in sorted(pasted, key=lambda p: -p.start):
        del lines[p.start:p.end]
    return "\n".join(lines)


def as_markdown(text: str) -> str:
    """``text`` with each table pasted in it written as a Markdown table (its first row the header,
    a '|' in a cell escaped), a blank line before and after it, its labelled figures a line each
    (not one in a code block of the message's own): a Markdown viewer showed a
    tab-separated table's lines as one line of words (F7's export). A table, not a code block: a
    viewer lines its columns up whatever their widths (tabs in a code block do not), and its
    cells stay words to read and copy."""
    pasted = pasted_tables(text)
    if not pasted:
        return text
    lines = text.split("\n")
    for p in sorted(pasted, key=lambda p: -p.start):
        if sum(line.lstrip().startswith("```") for line in lines[:p.start]) % 2:
            continue  # (in a code block of the message's own: as it is)

        def row(cells: list[str]) -> str:
            return "| " + " | ".join(_line(c).replace("|", "\\|") for c in cells) + " |"

        table = [row(p.rows[0]), "|" + "---|" * len(p.rows[0]), *(row(r) for r in p.rows[1:])]
        before = [""] if p.start and lines[p.start - 1].strip() else []
        after = [""] if p.rows_end < len(lines) and lines[p.rows_end].strip() else []
        # its labelled figures ("Subtotal: 920.00"), a line each (a paragraph ran them into one)
        lines[p.rows_end:p.end] = [f"{line}  " if k < p.end - 1 and line.strip() else line
                                   for k, line in enumerate(lines[p.rows_end:p.end], p.rows_end)]
        lines[p.start:p.rows_end] = before + table + after
    return "\n".join(lines)


def _said_in_rows(pasted: Pasted, amount: ColumnFacts) -> list[tuple[str, str]]:
    """The total rows at the end of a pasted table ("Subtotal | | | 920.00", "Total | | 1,030.00"),
    left out of its figures, as labelled figures said after it are (``Pasted.said``): its label and
    its amount's cell, to be checked as those are. None where one is among the rows above (whose
    rows a total there adds up is not certain) or has no amount."""
    rows = pasted.rows[1:]
    k = len(rows)
    while k and total_row(rows[k - 1]):
        k -= 1
    if not k or any(total_row(r) for r in rows[:k]):  # (none above: a table of VAT by rate, its rows its data)
        return []
    said: list[tuple[str, str]] = []
    for r in rows[k:]:
        label = next(c.strip() for c in r if c.strip()).rstrip(":")
        figure = r[amount.at].strip() if amount.at < len(r) else ""
        if not figure or figure == label:
            return []
        said.append((label, figure))
    return said


def arithmetic_checks(facts: SheetFacts, pasted: Pasted) -> list[dict[str, Any]]:
    """What the program finds wrong in a pasted table's arithmetic, as a reply's record keeps it:
    each row whose amount is not its quantity × price ("row_check"), and a subtotal, VAT or total
    said after the table that its amounts do not give ("sum_check", "tax_check", "due_check").
    Only where the reading is certain: the product columns found (``_product_columns``), each figure
    read, each label known (one it does not know, a discount say, ends the checks)."""
    if not facts.cells or facts.cut:
        return []
    items: list[dict[str, Any]] = []
    found = _product_columns(facts)
    numbers = [c for c in facts.columns if c.kind == "numbers"]
    amount = found[2] if found else numbers[0] if len(numbers) == 1 and not numbers[0].rate else None
    if found is not None:
        a, b, c = found
        for n, row in enumerate(facts.cells, 1):
            x, y, z = _value(row, a), _value(row, b), _value(row, c)
            if x is None or y is None or z is None or _rounded(x * y, z) == z:
                continue
            if len(items) < MAX_CHECKS:
                items.append({"what": "row_check", "title": facts.title, "name": _row_name(facts, row, n), "a": _as_written(x),
                              "b": _as_written(y), "figure": _as_written(_rounded(x * y, z)),
                              "said": _as_written(z)})
    if amount is None:
        return items
    values = [v for v in (_value(r, amount) for r in facts.cells) if v is not None]
    if not values:
        return items
    total = sum(values, Decimal(0))
    places = _places(values)
    base: Decimal | None = None  # the subtotal as the message says it
    taxes: list[Decimal] = []
    for label, written in _said_in_rows(pasted, amount) + pasted.said:
        value = _number(written, amount.comma)
        tax, rate = _TAX.search(label), _RATE.search(label)
        if value is None:
            break
        if tax and rate:
            if base is None:
                break  # (VAT of what: not certain)
            percent = _number(rate["a"] or rate["b"], amount.comma and "," in (rate["a"] or rate["b"]))
            if percent is None:
                break
            expected = _rounded(base * percent / 100, value)
            if expected != value:
                items.append({"what": "tax_check", "title": facts.title, "label": label, "rate": _as_written(percent) + "%",
                              "of": _as_written(base), "figure": _as_written(expected), "said": _as_written(value)})
            taxes.append(value)
        elif _TOTAL_START.match(label) or _DUE.match(label):
            if base is None:
                if value != total:
                    items.append({"what": "sum_check", "title": facts.title, "label": label, "figure": _figure(total, places),
                                  "said": _as_written(value)})
                base = value
                continue
            if taxes:
                expected = base + sum(taxes, Decimal(0))
                if expected != value:
                    items.append({"what": "due_check", "title": facts.title, "label": label, "figure": _as_written(_rounded(expected, value)),
                                  "said": _as_written(value)})
            break
        else:
            break
    return items


def counted_pasted(text: str) -> tuple[list[SheetFacts], list[dict[str, Any]]]:
    """The facts of the tables pasted in a message's ``text`` and what the program counted for it:
    the figures its question asks for (``counted_answer``, on its words without the tables' lines),
    then each table's arithmetic checked (``arithmetic_checks``)."""
    found = pasted_facts(text)
    if not found:
        return [], []
    tables = [f for f, _ in found]
    items = counted_answer(question_of(text, [p for _, p in found]), tables)
    return tables, items + [c for f, p in found for c in arithmetic_checks(f, p)]


def pasted_known(text: str) -> str:
    """What a reply about the tables pasted in a message's ``text`` is checked against
    (``reply_check.unchecked_figures``, named PASTED_TITLE): the message itself and its tables'
    figures the program counted (``facts_text``: their totals, averages); '' where it has none. A
    small model quoted "F-102;Kaya AŞ;980,45" of a pasted row that says 980,25, and nothing under
    the reply said so: the check ran only for an attached file."""
    found = pasted_facts(text)
    return "\n".join([text, *(line for f, _ in found for line in facts_text(f))]) if found else ""


def for_the_model(tables: list[SheetFacts], items: list[dict[str, Any]]) -> str:
    """What the program counted for a message's pasted tables, as a line the model reads after the
    message ("- For this question, the program counted: …", as an attached table's counts are
    given it: ``summary_chunks.with_counted``), English, its figures as the table writes them; ''
    where nothing was counted."""
    said = counted_by_table(items)
    if not said or not tables:
        return ""
    by_title = {t.title: t for t in tables}
    # each table's figures as it writes them (of two pasted tables, 1.250,00 and 1,250.00), then joined
    parts = [say(phrases, as_written(by_title.get(title, tables[0]))) for title, phrases in said]
    return say([("facts.for_question", {"item": say([("facts.then", {})]).join(parts)})])


def _first_column(record: dict[str, Any]) -> int:
    """The sheet's column of a recorded table's first cell (``table_facts``' ``first_column``): 0
    where its columns have no letters (a Word document's table), else its first column's letter's
    number less its place in the row ("B" at 0: 2)."""
    columns = [c for c in record.get("columns") or [] if isinstance(c, dict)]
    letter = str(columns[0].get("letter") or "") if columns else ""
    if not letter.isalpha():
        return 0
    n = 0
    for ch in letter.upper():
        n = n * 26 + ord(ch) - 64
    return n - int(columns[0].get("at") or 0)


def _agrees(read: Any, kept: Any) -> bool:
    """Whether facts read again (``facts_record``'s, as JSON holds them) say all that the kept
    record says (a field an older build did not keep is not asked of them)."""
    if isinstance(kept, dict):
        return isinstance(read, dict) and all(k in read and _agrees(read[k], v) for k, v in kept.items())
    if isinstance(kept, list):
        return isinstance(read, list) and len(read) == len(kept) and all(map(_agrees, read, kept))
    return bool(read == kept)


def tables_read_again(document: str, name: str, records: list[dict[str, Any]]) -> list[SheetFacts]:
    """The tables of a document as a message keeps it (``document``: its text as attached, with the
    facts ``with_facts`` put before its rows; ``name``: its file's name; ``records``: its tables'
    facts kept with the message, ``facts_record``'s), their rows read again from the text, by
    which a question's condition is counted (``SheetFacts.cells``, which the record leaves out):
    after a restart, a follow-up about a conversation's table ("how many invoices does Birlik AS
    have?") had no counted line, and the model named the wrong invoices. A CSV's rows as its
    file's (``documents._csv_facts``: its delimiter, its decimal mark); a Word document's or a
    sheet's 'a | b | c' as a table pasted in a message's are (``pasted_tables``). Each table only
    where its facts read again are the record's (its rows, columns and every figure, read with the
    same decimal mark): exact, as when it was attached, or not at all (a text cut at the app's
    limit, a cell of two lines, a record that cannot be read)."""
    from pathlib import Path

    from workstation.core.documents import _csv_facts
    from workstation.core.summary_chunks import own_text

    text = own_text(document).strip("\n")
    pasted = pasted_tables(text)
    found: list[SheetFacts] = []
    for record in records:
        if not isinstance(record, dict):
            continue
        title = str(record.get("title") or "")
        section = record.get("section") if isinstance(record.get("section"), int) else 0
        candidates: list[SheetFacts | None] = []
        if title == name and name.lower().endswith((".csv", ".tsv")):  # (a CSV file's own table)
            candidates.append(_csv_facts(Path(name), text, text.split("\n", 1)[0].strip()))
        candidates += [table_facts(title, section, p.rows, bool(record.get("cut")),
                                   usual_comma={";": True, ",": False}.get(p.delimiter),
                                   first_column=_first_column(record)) for p in pasted]
        for facts in candidates:
            if facts is None:
                continue
            facts.section, facts.among_text = section, bool(record.get("among_text"))
            if _agrees(json.loads(json.dumps(facts_record(facts))), record):
                found.append(facts)
                break
    return found
