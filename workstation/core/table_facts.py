"""Facts about a table's rows counted by the program, exactly: a workbook's sheet (``sheet_documents``)
or a CSV/TSV file (``documents``), whichever reader produced the rows.

A small model that reads 3,000 rows of numbers invents figures ("revenue up 20%"); these facts
(the rows, the columns' names, and per column its kind: for numbers the total, smallest, largest
and average, for dates the first and last, for text the most common values with their counts)
are given to it with the instruction to use only them, and shown to the user under the summary.
Sums are exact (``Decimal``: 0.1 + 0.2 is 0.3), never floats."""

from __future__ import annotations

import calendar
import datetime
import itertools
import re
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from workstation.core.phrases import Lookup, Phrase, say

MAX_COLUMNS = 40  # columns described; the rest counted in a line
TOP_VALUES = 3  # a text column's most common values named

# thousands set apart by a space, as forms and French or Russian tables write them: 1 000, 12 500,50,
# 1 234 567.89 (a space, a no-break space, a narrow no-break space); groups of exactly three after the
# first of one to three, that never begins with 0 (012 345 is a code), in one number with either
# decimal mark: the column's decides (``_column_reading``), 1 000,50 reads only with a comma
_SPACES = " \u00a0\u202f"
_SPACED = rf"[1-9]\d{{0,2}}(?:[{_SPACES}]\d{{3}})+"
_NUMBER = re.compile(rf"[-+]?(?:\d{{1,3}}(?:,\d{{3}})+|{_SPACED}|\d+)(?:\.\d+)?(?:[eE][-+]?\d{{1,3}})?|[-+]?\.\d+")  # (1e999999 would overflow a sum)
# as a CSV saved where a comma is the decimal mark (Turkey, Germany: its cells split by ;): 1.200,50
# (0.125 is no thousands: a group of three never follows a lone 0)
_COMMA_NUMBER = re.compile(rf"[-+]?(?:[1-9]\d{{0,2}}(?:\.\d{{3}})+|{_SPACED}|\d+)(?:,\d+)?")
# what says a table is written where the comma is the decimal mark, where its numbers do not:
# a date written 15.01.2026, a letter only Turkish writes (ğ ı İ ş: "Müşteri", "Tutarı")
_COMMA_LOCALE = re.compile(r"\d{1,2}\.\d{1,2}\.\d{4}|[ğĞıİşŞ]")
_CURRENCY = "$€£₺¥"
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2}(?::\d{2})?)?")
_DOTTED_DATE = re.compile(r"(\d{1,2})\.(\d{1,2})\.(\d{4})")  # 15.01.2026 (day first, as Turkey and Germany write it)
# a row of totals under the rows (its numbers are the rows' own again: counted twice, the total doubled)
_YEAR = re.compile(r"(?:19|20)\d{2}")  # a column named by its year: Region | 2024 | 2025
_TOTAL_ROW = re.compile(r"(?:grand |sub-?)?totals?|sum|genel toplam|ara toplam|toplam", re.IGNORECASE)
# a row of the tax under the rows, with its rate ("KDV %18 | | 1.800", "VAT 20%:"): its amount is the rows' tax,
# no row's (counted as one, "the total" held the VAT twice over); "VAT" alone may be a row's (an expense)
_TAX_ROW = re.compile(r"(?:vat|kdv|gst|tax)\s*\(?(?:%\s*\d+(?:[.,]\d+)?|\d+(?:[.,]\d+)?\s*%)\)?", re.IGNORECASE)
# a column's name that says what it holds: a quantity, a price or rate (never added up as a total), an
# amount (a row's quantity × price already). By its name only: by its numbers alone (whole numbers
# beside decimals) a year or a head count beside a salary read as a quantity
# (nights × price per night, hours × rate: a booking's and a timesheet's total; "nights over 3" said
# "total 16" of nights where the bookings' 1,925 was asked for)
_QUANTITY_NAME = re.compile(r"\b(?:qty|quantity|quantities|adet|miktar|units|pieces|pcs|nights|hours|gece|saat)\b",
                            re.IGNORECASE)
# a price (per unit where the table has a quantity column: its rows one each where it has none, a
# receipt's "Price" added up is its total), and what is per unit or a rate whatever the table
_PRICE_NAME = re.compile(r"\b(?:prices?|fiyat\w*)\b", re.IGNORECASE)
_RATE_NAME = re.compile(r"\b(?:unit\s+(?:price|cost)s?|(?:price|cost)\s+per\b.*|per\s+unit|rates?|"
                        r"birim\s+fiyat\w*|kuru?|oran\w*)\b", re.IGNORECASE)
_AMOUNT_NAME = re.compile(r"\b(?:amount|total|sum|subtotal|line\s+total|net|gross|value|tutar\w*|toplam\w*)\b",
                          re.IGNORECASE)
_TOTAL_START = re.compile(r"(?:(?:grand |sub-?)?totals?|sum|(?:genel |ara )?toplam)\b", re.IGNORECASE)


@dataclass
class ColumnFacts:
    name: str
    kind: str  # numbers | percents | dates | text | empty
    filled: int  # rows with something in this column (the total rows left out)
    other: int = 0  # filled cells not of its kind (left out of its figures)
    total: str = ""  # numbers: written the English way ("7,563,716.55")
    smallest: str = ""
    largest: str = ""
    average: str = ""
    first: str = ""  # dates: the earliest and latest (ISO); text: the first and last row's value
    last: str = ""
    distinct: int = 0  # text: different values
    top: list[tuple[str, int]] = field(default_factory=list)  # text: the most common values and their counts
    # numbers that read two ways (1.200: 1.2, or 1,200 as Turkish writes it) and nothing in the file
    # said which: a cell of them as written and as read (``_column_reading``), said with the figures
    guessed: tuple[str, str, str] = ("", "", "")  # ("1.200", "1,200", "1.2"): the cell, as read, and the other way
    # its letter in the sheet ("B"), said beside its name: people ask "the total of column B?"
    # ('' for a table in a Word document, which has no letters)
    letter: str = ""
    # text: its values (casefolded, of 3 letters or more, up to MAX_VALUES), by which a question's
    # condition is known ("total revenue for March": a value of Month; ``counted_answer``)
    values: frozenset[str] = frozenset()
    at: int = 0  # its place in each of ``SheetFacts.cells``' rows
    comma: bool = False  # its numbers are written with a decimal comma (``_column_reading``): its cells read so
    # numbers named a price or rate ("Unit price", "Rate", "Birim fiyat": ``_PRICE_NAME``): their total
    # is no figure anyone asks for (an invoice's unit prices added up: "total 40.70" was taken for its total)
    rate: bool = False


MAX_VALUES = 5000
# the cells of a table kept with its facts, to count the rows a question names (``counted_answer``):
# a workbook's whole limit (``Limits.max_cells``). Each cell is the reader's own string, kept alive
# (about 60 bytes for a cell of 10 letters) with an 8-byte place in its row's list: some 7 MB at
# most for a table this big; a larger one (a CSV of millions of cells) keeps none, and a question
# with a condition about it gets no counted line
MAX_CELLS = 100_000


@dataclass
class SheetFacts:
    title: str  # "Sheet: Invoices 2025", "expenses.csv"
    section: int  # the index of its section in ``Document.sections``
    rows: int  # rows under the header row (all rows where it has none)
    header: bool
    columns: list[ColumnFacts]
    more_columns: int = 0  # beyond MAX_COLUMNS
    total_rows: int = 0  # rows reading "Total" left out of the figures
    cut: bool = False  # the sheet was read only in part (``Limits.max_cells``)
    sum_row: bool = False  # a last row of the columns' sums with no word saying so, left out (``_sum_row``)
    above: int = 0  # title rows above the header row, left out (``_title_rows``)
    decimal_comma: bool = False  # most of its numbers' columns are written 45.600,50 (``_column_reading``)
    # a table among a text's paragraphs (a Word document's, a slide's), not a sheet or CSV file of its
    # own: a question about the text is about its table only where it names the table or a column
    among_text: bool = False
    # its rows (under the header row, the total rows left out), each its cells as read: what a
    # question's condition is counted on ("unpaid invoices over 1,000"); [] above MAX_CELLS cells
    cells: list[list[str]] = field(default_factory=list, repr=False)
    # a table of quantities and prices with no amount column (``_product_total``): the quantity's
    # and the price's column places and the sum of quantity × price over its rows ("95.50")
    product: tuple[int, int, str] | None = None


def _number(text: str, comma: bool = False) -> Decimal | None:
    t = text.strip().replace("\u2212", "-")  # (−1,200: the minus sign a formatted report writes)
    negative = t.startswith("(") and t.endswith(")")  # (1,200.00): an accountant's negative
    if negative:
        t = t[1:-1].strip()
    sign = t[0] if t[:1] in ("-", "+") and t[1:2] in tuple(_CURRENCY) else ""  # -$1,200
    t = t[len(sign):].strip(_CURRENCY).strip()
    if t.startswith("(") and t.endswith(")") and not negative and not sign:  # $(1,200.00)
        negative, t = True, t[1:-1].strip()
    t = sign + t
    if not (_COMMA_NUMBER if comma else _NUMBER).fullmatch(t):
        return None
    t = re.sub(f"[{_SPACES}]", "", t)  # (1 000: only where the pattern read groups of three)
    try:
        value = Decimal(t.replace(".", "").replace(",", ".") if comma else t.replace(",", ""))
    except InvalidOperation:
        return None
    return -value if negative else value


def _date(text: str) -> str | None:
    t = text.strip()
    if _ISO_DATE.fullmatch(t):
        return t if _real_day(t[:10]) else None
    m = _DOTTED_DATE.fullmatch(t)
    day = f"{m.group(3)}-{int(m.group(2)):02d}-{int(m.group(1)):02d}" if m else ""
    return day if day and _real_day(day) else None


def _real_day(iso: str) -> bool:
    """Whether a day of the calendar is written there: 2026-13-45 (a code, a mistyped cell) was
    a date, the table's last."""
    import datetime as dt

    try:
        dt.date.fromisoformat(iso)
    except ValueError:
        return False
    return True


_STARTS = frozenset("-+.(%\u2212" + _CURRENCY)  # what a number may begin with, besides a digit


def _read(text: str, comma: bool = False) -> tuple[str, Decimal | str | None]:
    """A cell's kind and value: ('numbers', Decimal), ('percents', Decimal), ('dates', ISO date)
    or ('text', None)."""
    t = text.strip()
    if not t or not (t[0].isdigit() or t[0] in _STARTS):  # (most words, at once: a CSV of millions of cells)
        return "text", None
    if not comma and "_" not in t:  # 2004.38 as Decimal reads it, the pattern's checks spared
        try:
            plain = Decimal(t)
        except InvalidOperation:
            pass
        else:
            if plain.is_finite() and abs(plain.adjusted()) < 1000:
                return "numbers", plain
    if t.endswith("%") or t.startswith("%"):  # 12.5% (%12,5 as Turkish writes it)
        value = _number(t[:-1] if t.endswith("%") else t[1:], comma)
        if value is not None:
            return "percents", value
    value = _number(t, comma)
    if value is not None:
        return "numbers", value
    day = _date(t)
    return ("dates", day) if day is not None else ("text", None)


def _two_ways(text: str) -> tuple[bool, bool, bool]:
    """Whether a cell is a number written with a decimal comma only (350,75; 1.250.000), with a
    decimal point only (2.25; 1,200.50), or both ways with two values (1.200, 1,200)."""
    t = text.strip().rstrip("%").strip()
    if "," not in t and "." not in t:
        return False, False, False
    as_comma, as_dot = _number(t, True), _number(t)
    if as_comma is None or as_dot is None:
        return as_comma is not None, as_dot is not None, False
    return False, False, as_comma != as_dot


Mark = tuple[bool | None, bool | None]  # (what a table says, what it hints): True a decimal comma, None nothing


def _decimal_mark(rows: list[list[str]], usual: bool | None) -> Mark:
    """Whether a table's numbers are written 1.200,50: what it says (its cells: 350,75 reads only
    so, 2.25 only as 2.25; else a CSV split by ;, ``usual`` True), and what it hints (its text,
    ``_COMMA_LOCALE``: a date 15.01.2026, a Turkish letter; a CSV split by commas, ``usual``
    False, a decimal point). A Turkish Excel's tab-separated text has decimal commas too: read as
    1.2 its 1.200 made a total of 18.7 of 18,700."""
    comma = dot = 0
    for row in rows[:1000]:
        for c in row:
            only_comma, only_dot, _ = _two_ways(c)
            comma += only_comma
            dot += only_dot
    said = comma > dot if comma != dot else True if usual else None
    turkish = any(_COMMA_LOCALE.search(c) for row in rows[:1000] for c in row)
    hint = None if turkish and usual is False else True if turkish else False if usual is False else None
    return said, hint


def _column_reading(cells: list[str], table: Mark) -> tuple[bool, bool]:
    """Whether a column's numbers are written with a decimal comma, and whether that was a guess.
    Its own cells decide first (one 350,75 or 1.250.000 says comma, one 2.25 a point), then what
    the table says (``_decimal_mark``: its other columns, a ; CSV); where nothing says, a mark
    before exactly three digits is read as thousands, as an amount is written (1.200 and 15.000
    are 1,200 and 15,000; 1,200 is 1,200): a guess, said, unless the table hints so too (a
    Turkish word over 1.200, a CSV split by commas over 1,200)."""
    comma = dot = thousands_dot = thousands_comma = 0
    for c in cells[:1000]:
        only_comma, only_dot, both = _two_ways(c)
        comma += only_comma
        dot += only_dot
        if both:
            thousands_dot += "." in c
            thousands_comma += "," in c
    if comma != dot:
        return comma > dot, False
    said, hint = table
    if said is not None or not thousands_dot and not thousands_comma:  # (nothing read two ways: either)
        return bool(said), False
    thousands = thousands_dot >= thousands_comma  # (1.200 as thousands: the comma its decimal mark)
    return thousands, hint != thousands


def _kind(text: str, comma: bool = False) -> str:
    return _read(text, comma)[0]


MAX_PLACES = 6  # decimals kept as a column writes them (an Excel's 0.30000000000000004: not its way)


def _places(values: list[Decimal]) -> int | None:
    """The decimals every number of a column is written with (0.80 and 65.00: 2), None where its
    cells write them differently (1200.5 beside 2500) or not at all: its figures said as it writes
    them ("smallest 0.80, largest 65.00"; "0.8" and "65" were not the file's, and not alike).
    Not three (1.200 read as 1.2: said "1.200" it read as twelve hundred)."""
    places = {-v.as_tuple().exponent if isinstance(v.as_tuple().exponent, int) else 0 for v in values}
    only = places.pop() if len(places) == 1 else 0
    return only if 0 < only <= MAX_PLACES and only != 3 else None


def _figure(value: Decimal, places: int | None = None) -> str:
    """A figure the English way, with thousands separators: 7,563,716.55; -1,200; 0.3; with
    ``places`` decimals where given (0.80)."""
    if abs(value) >= Decimal(10) ** 20:
        return str(value)
    if places is not None:
        return f"{value:,.{places}f}"
    if value == value.to_integral_value():
        return f"{int(value):,}"
    return f"{value.normalize():,f}"


def _figures(values: list[Decimal], kind: str, places: int | None) -> tuple[str, str, str, str]:
    """The total (of numbers, not percentages: '' for those), smallest, largest and average of
    ``values`` (not empty), as the facts write them (``places``: the column's decimals)."""
    total = sum(values, Decimal(0))
    unit = "%" if kind == "percents" else ""
    average = total / len(values)
    return (_figure(total, places) if kind == "numbers" else "", _figure(min(values), places) + unit,
            _figure(max(values), places) + unit,
            _average(average, places) + unit)


def _line(text: str) -> str:
    """A cell's text on one line (a CSV's quoted cell may hold line breaks: a fact a line each)."""
    return " ".join(text.split())


def _column_name(n: int) -> str:
    letters = ""
    while n:
        n, rest = divmod(n - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _column(name: str, cells: list[str], comma: bool, guessed: bool = False) -> ColumnFacts:
    filled = [t for t in (c.strip() for c in cells) if t]
    if not filled:
        return ColumnFacts(name, "empty", 0)
    seen: dict[str, tuple[str, Decimal | str | None]] = {}  # (a value read once: dates and names repeat)
    read = [seen.get(c) or seen.setdefault(c, _read(c, comma)) for c in filled]
    kind, n = Counter(k for k, _ in read).most_common(1)[0]
    if kind == "text" or n * 2 <= len(filled):  # (no more than half of one kind: a column of words, all its values counted)
        kind, n = "text", len(filled)
    col = ColumnFacts(name, kind, len(filled), len(filled) - n)
    if kind in ("numbers", "percents"):
        values = [v for k, v in read if k == kind and isinstance(v, Decimal)]
        unit = "%" if kind == "percents" else ""
        col.total, col.smallest, col.largest, col.average = _figures(values, kind, _places(values))
        if guessed:  # (the first cell that read two ways, as written and as read)
            shown = next(c for c in filled if _two_ways(c)[2])
            as_read, other = (_read(shown, mark)[1] for mark in (comma, not comma))
            col.guessed = (shown, _figure(as_read) + unit if isinstance(as_read, Decimal) else shown,
                           _figure(other) + unit if isinstance(other, Decimal) else shown)
    elif kind == "dates":
        days = [v for k, v in read if k == kind and isinstance(v, str)]
        col.first, col.last = min(days), max(days)
    else:
        counts = Counter(filled)
        col.distinct = len(counts)
        col.first, col.last = _line(filled[0]), _line(filled[-1])
        col.top = [(_line(v), k) for v, k in counts.most_common(TOP_VALUES) if k > 1]
        # (a code of a letter and a digit is a value too: "Q1" of a column Quarter, read as a quarter of a year)
        col.values = frozenset(itertools.islice((w for w in (_folded(_line(v)) for v in counts) if len(w) >= 3
                                                 or re.fullmatch(r"[^\W\d_]\d|\d[^\W\d_]", w)), MAX_VALUES))
    return col


def table_facts(title: str, section: int, rows: list[list[str]], cut: bool = False, usual_comma: bool | None = None,
                written: list[list[str]] | None = None, first_column: int = 1) -> SheetFacts | None:
    """The facts of a table whose first row may be its columns' names (a row of words only, over
    rows that are not); None for fewer than three rows (no table to speak of). Its numbers may be
    written 1.200,50 (``usual_comma``: True a CSV split by ;, False one split by commas, None
    neither; ``_column_reading`` decides each column); the facts' figures the English way all the same.
    ``written``: the cells as a person wrote them, by which the decimal mark is judged (an Excel
    workbook's stored numbers left out: the program writes those 1200.5 whatever the locale).
    ``first_column``: the sheet's column of the rows' first cell (1: A; a sheet begun in column B, 2),
    by which each column's letter is said; 0: a table without letters (a Word document's)."""
    table_mark = _decimal_mark(written if written is not None else rows, usual_comma)
    decimal_comma = bool(table_mark[0])
    rows = [r for r in rows if any(c.strip() for c in r)]
    above = _title_rows(rows, decimal_comma)
    rows = rows[above:]
    if len(rows) < 3:  # (a note of two lines: its lines say it all)
        return None
    width = max(len(r) for r in rows)
    first = [c.strip() for c in rows[0]]
    words = [c for c in first if c]
    below = (c for r in rows[1:] for c in r if c.strip())
    # years in a row of names (two or more, in order: 2024 | 2025) name their columns: read as
    # numbers, the first row was counted as a row and 2,024 added to each year's total
    years = [int(c) for c in words if _YEAR.fullmatch(c)]
    named_by_years = len(years) >= 2 and (years == sorted(set(years)) or years == sorted(set(years), reverse=True))
    header = all(_kind(c, decimal_comma) == "text" or (named_by_years and _YEAR.fullmatch(c)) for c in words) and (
        any(_kind(c, decimal_comma) != "text" for c in below) or len(words) == len(first) == len(set(first)))
    body = rows[1:] if header else rows

    def cells(table: list[list[str]], i: int) -> list[str]:
        return [r[i] if i < len(r) else "" for r in table]

    data = data_rows(body)
    mine = [[c for r in written for c in r[i:i + 1]] for i in range(width)] if written is not None else None
    readings = [_column_reading(mine[i] if mine is not None else cells(data, i), table_mark) for i in range(width)]
    sum_row = _sum_row(data, [comma for comma, _ in readings])
    if sum_row:
        data = data[:-1]
    columns: list[ColumnFacts] = []
    shown = 0
    commas: list[bool] = []  # how each column of numbers is written
    for i in range(width):
        letter = _column_name(first_column + i) if first_column else ""
        name = first[i] if header and i < len(first) and first[i] else letter or _column_name(i + 1)
        col = _column(name, cells(data, i), *readings[i])
        col.letter, col.at, col.comma = letter, i, readings[i][0]
        if col.kind == "empty":
            continue
        if col.kind in ("numbers", "percents"):
            commas.append(readings[i][0])
        shown += 1
        if shown <= MAX_COLUMNS:
            columns.append(col)
    kept = data if sum(map(len, data)) <= MAX_CELLS else []
    facts = SheetFacts(title, section, len(data), header, columns, max(0, shown - MAX_COLUMNS),
                       len(body) - len(data) - sum_row, cut, sum_row, above,
                       2 * sum(commas) > len(commas) if commas else decimal_comma, cells=kept)
    if header:
        facts.product = _product_total(facts, data)
    return facts


def _row_label(r: list[str]) -> str:
    """A row's first filled cell, without its colon ('' for an empty row)."""
    words = [c.strip() for c in r if c.strip()]
    return words[0].rstrip(":").strip() if words else ""


def total_row(r: list[str]) -> bool:
    """Whether a row of a table reads "Total" (Subtotal, Genel toplam) in its first filled cell: its
    numbers the rows' own again, left out of the figures; or the tax with its rate ("KDV %18",
    ``_TAX_ROW``), the rows' tax, no row, where it is below them (``data_rows``)."""
    label = _row_label(r)
    return bool(label) and (_TOTAL_ROW.fullmatch(label) is not None or _TAX_ROW.fullmatch(label) is not None)


def data_rows(body: list[list[str]]) -> list[list[str]]:
    """A table's rows less those that read "Total" anywhere, and less the tax rows with their rate
    ("KDV %18 | | 1.800") in the block of such rows at its end, below its data: a table of VAT by
    rate ("KDV %10 | 5.000 | 500", "KDV %20 | …") is all such rows, its own data (every row was
    left out, nothing counted: review28)."""
    end = len(body)
    while end and total_row(body[end - 1]):
        end -= 1
    return [r for i, r in enumerate(body)
            if not (_TOTAL_ROW.fullmatch(_row_label(r)) or (end and i >= end and total_row(r)))]


def _product_total(facts: SheetFacts, data: list[list[str]]) -> tuple[int, int, str] | None:
    """Marks ``facts``' price and rate columns (``ColumnFacts.rate``: their total left out), and
    where it has one quantity column and one price column and no amount column (none named so,
    none their product: ``_product_columns``), the sum of quantity × price over its rows: an
    invoice's lines "Paper | 3 | 4.50" without their amounts, whose total is 95.50, not the unit
    prices' 40.70. By the columns' names only (``_QUANTITY_NAME``, ``_PRICE_NAME``, ``_RATE_NAME``):
    whole numbers beside decimals are as often a year or a head count beside a salary. Not where a
    row has one of the two and not the other (its product unknown)."""
    numbers = [c for c in facts.columns if c.kind == "numbers" and not _AMOUNT_NAME.search(c.name)]
    quantities = [c for c in numbers if _QUANTITY_NAME.search(c.name)]
    for c in numbers:
        if c not in quantities and (_RATE_NAME.search(c.name) or quantities and _PRICE_NAME.search(c.name)):
            c.rate, c.total = True, ""
    prices = [c for c in numbers if c.rate]
    if len(quantities) != 1 or len(prices) != 1 or any(c.kind == "numbers" and _AMOUNT_NAME.search(c.name)
                                                       for c in facts.columns):
        return None
    quantity, price = quantities[0], prices[0]
    if _product_columns(facts, data) is not None:
        return None
    products: list[Decimal] = []
    for row in data:
        x, y = _value(row, quantity), _value(row, price)
        if (x is None) != (y is None):
            return None
        if x is not None and y is not None:
            products.append(x * y)
    if not products:
        return None
    return quantity.at, price.at, _figure(sum(products, Decimal(0)), _places(products))


def _value(row: list[str], col: ColumnFacts) -> Decimal | None:
    """A row's number in ``col``, read as its column is (``ColumnFacts.comma``); None where it holds none."""
    kind, value = _read(_line(row[col.at]) if col.at < len(row) else "", col.comma)
    return value if kind == "numbers" and isinstance(value, Decimal) else None


def _rounded(value: Decimal, like: Decimal) -> Decimal:
    """``value`` rounded half up to the decimals ``like`` is written with; as it is where it has more
    digits than a Decimal holds (a pasted quantity of 23 digits times another: the message closed
    the app with decimal.InvalidOperation)."""
    exponent = like.as_tuple().exponent
    if not isinstance(exponent, int):
        return value
    try:
        return value.quantize(Decimal(1).scaleb(exponent), ROUND_HALF_UP)
    except InvalidOperation:
        return value


def _product_columns(facts: SheetFacts,
                     rows: list[list[str]] | None = None) -> tuple[ColumnFacts, ColumnFacts, ColumnFacts] | None:
    """The quantity, price and amount columns: three of numbers where one is the product of the two
    others in most ``rows`` (``facts.cells`` where not given; more than half of those with the three,
    and two at least); the amount the rightmost such column."""
    numbers = [c for c in facts.columns if c.kind == "numbers"]
    best: tuple[int, tuple[ColumnFacts, ColumnFacts, ColumnFacts]] | None = None
    for amount in reversed(numbers):
        for a, b in itertools.combinations([c for c in numbers if c is not amount], 2):
            full = [(x, y, z) for r in (facts.cells if rows is None else rows)
                    if (x := _value(r, a)) is not None and (y := _value(r, b)) is not None
                    and (z := _value(r, amount)) is not None]
            agree = sum(_rounded(x * y, z) == z for x, y, z in full)
            if agree >= 2 and agree * 2 > len(full) and (best is None or agree > best[0]):
                best = (agree, (a, b, amount))
    return best[1] if best else None


def _title_rows(rows: list[list[str]], comma: bool) -> int:
    """The rows of one cell each above a row of columns' names ("Sales report 2025" in A1): read
    as the header, its columns went without their names and the names' row was counted as a row."""
    def filled(r: list[str]) -> list[str]:
        return [c for c in r if c.strip()]

    k = 0
    while k < min(3, len(rows) - 3) and len(filled(rows[k])) == 1:
        k += 1
    names = filled(rows[k]) if k < len(rows) else []
    return k if k and len(names) >= 2 and all(_kind(c, comma) == "text" for c in names) else 0


def _sum_row(data: list[list[str]], commas: list[bool]) -> bool:
    """Whether the last row is the sum of the rows above that ``_TOTAL_ROW`` did not know (a SUM
    under each column, its label's cell left blank or "Total amount"): each of its cells a number,
    the exact sum of its column above, and a cell blank that every row above fills, or its first
    cell beginning with a word for a total. Counted as a row, each total was doubled."""
    if len(data) < 3:
        return False
    last, above = data[-1], data[:-1]

    def cell(r: list[str], i: int) -> str:
        return r[i].strip() if i < len(r) else ""

    width = max(len(r) for r in data)
    filled = [i for i in range(width) if cell(last, i)]
    labelled = bool(filled) and _TOTAL_START.match(cell(last, filled[0])) is not None  # "Total amount", "Toplam tutar:"
    if not filled or not labelled and not any(not cell(last, i) and all(cell(r, i) for r in above) for i in range(width)):
        return False
    for i in filled[1:] if labelled else filled:
        kind, value = _read(cell(last, i), commas[i])
        values = [v for k, v in (_read(cell(r, i), commas[i]) for r in above) if k == "numbers" and isinstance(v, Decimal)]
        if kind != "numbers" or len(values) < 2 or sum(values, Decimal(0)) != value:
            return False
    return True


def _n(n: int) -> str:
    return f"{n:,}"


def column_phrase(col: ColumnFacts) -> Phrase | str:
    """A column as the facts name it: by its header and its letter ("Revenue (column B)"), by its
    letter alone where it has no header, by its header alone where it has no letter."""
    return ("facts.column", {"name": col.name, "letter": col.letter}) if col.letter and col.letter != col.name \
        else col.name


_TITLE = re.compile(r"Table (?P<n>\d+)|Sheet: (?P<name>.*?)(?P<hidden> \(hidden\))?"
                    r"|(?P<pasted>the table in your message)|table (?P<pasted_n>\d+) in your message", re.DOTALL)


def title_phrase(title: str) -> Phrase | str:
    """A table's title in the UI's language: the readers name a Word document's tables "Table 2" and
    a workbook's sheets "Sheet: Budget" (the facts' and a reply's record keep that); a Turkish screen
    said "Table 1: 6 satır". A file's name ("expenses.csv") as it is."""
    found = _TITLE.fullmatch(title)
    if found is None:
        return title
    if found["n"]:
        return ("facts.table", {"n": found["n"]})
    if found["pasted"] or found["pasted_n"]:  # (a table pasted in a message: ``pasted_tables``)
        return ("facts.pasted_n", {"n": found["pasted_n"]}) if found["pasted_n"] else ("facts.pasted", {})
    return ("facts.sheet_hidden" if found["hidden"] else "facts.sheet", {"name": found["name"]})


def _average(average: Decimal, places: int | None) -> str:
    """A column's average written as its figures are: with the decimals its cells all have (0.80),
    else whole where it is whole (111,000 over 6 rows: 18,500, not 18,500.00), else two decimals."""
    if abs(average) >= Decimal(10) ** 20:
        return str(average)
    if places is None and average == average.to_integral_value():
        return _figure(average)
    # half up, as people and spreadsheets round (Decimal's own half-even wrote 615.12 of 615.125)
    return f"{average.quantize(Decimal(1).scaleb(-(2 if places is None else places)), ROUND_HALF_UP):,}"


def facts_phrases(facts: SheetFacts) -> list[list[Phrase]]:
    """The facts as sentences, a line each: the table's rows and columns, then a line per column."""
    head = "facts.head_cut" if facts.cut else "facts.head" if facts.header else "facts.head_no_header"
    lines: list[list[Phrase]] = [[(head, {"title": title_phrase(facts.title), "rows": _n(facts.rows),
                                         "columns": _n(len(facts.columns) + facts.more_columns)})]]
    if facts.total_rows:
        lines[0].append(("facts.total_rows", {"n": _n(facts.total_rows)}))
    if facts.sum_row:
        lines[0].append(("facts.sum_row", {}))
    for col in facts.columns:
        name = column_phrase(col)
        if col.kind == "numbers" and not col.rate:
            line: list[Phrase] = [("facts.numbers", {"name": name, "total": col.total, "smallest": col.smallest,
                                                     "largest": col.largest, "average": col.average})]
        elif col.kind in ("percents", "numbers"):  # (prices and rates: no total)
            line = [("facts.percents" if col.kind == "percents" else "facts.rates", {"name": name, "smallest": col.smallest, "largest": col.largest,
                                        "average": col.average})]
        elif col.kind == "dates":
            line = [("facts.dates", {"name": name, "first": col.first, "last": col.last})]
        elif col.distinct == col.filled and col.filled > 1:
            line = [("facts.text_unique", {"name": name, "first": col.first, "last": col.last})]
        elif col.distinct == 1:
            line = [("facts.text_same", {"name": name, "text": col.first})]
        elif col.top:
            top = [("facts.value_count", {"text": v, "n": _n(k)}) for v, k in col.top]
            listed: list[Phrase] = [p for i, item in enumerate(top) for p in ([("facts.and", {})] if i else []) + [item]]
            line = [("facts.text", {"name": name, "distinct": _n(col.distinct), "top": listed})]
        else:
            line = [("facts.text_few", {"name": name, "distinct": _n(col.distinct)})]
        if col.filled < facts.rows:
            line.append(("facts.filled", {"filled": _n(col.filled), "rows": _n(facts.rows)}))
        if col.other:
            line.append(("facts.other", {"n": _n(col.other)}))
        if col.guessed[0]:
            line.append(("facts.guessed", {"text": col.guessed[0], "value": col.guessed[1], "other": col.guessed[2]}))
        lines.append(line)
    if facts.more_columns:
        lines.append([("facts.more_columns", {"n": _n(facts.more_columns)})])
    if facts.product:
        lines.append([("facts.product", _product_said(facts))])
    return lines


def _product_said(facts: SheetFacts) -> dict[str, Any]:
    """A table's sum of quantity × price (``SheetFacts.product``) as its phrases say it."""
    assert facts.product is not None
    by_at = {c.at: c for c in facts.columns}
    a, b, figure = facts.product
    return {"a": column_phrase(by_at[a]), "b": column_phrase(by_at[b]), "figure": figure, "rows": _n(facts.rows)}


def facts_record(facts: SheetFacts) -> dict[str, Any]:
    """A table's facts as JSON keeps them (``summarize --json``, F6's last summary kept for the
    next start): its rows (``cells``) and each column's ``values`` left out, the words a question's condition is known by,
    a set JSON cannot write (F6 closed the app with "Object of type frozenset is not JSON
    serializable" on the summary of any document with a table)."""
    data = asdict(facts)
    data.pop("cells", None)  # (its rows: the document's, not a fact)
    for column in data["columns"]:
        column.pop("values", None)
    return data


def recorded_facts(records: list[dict[str, Any]]) -> list[SheetFacts]:
    """The tables' facts a message keeps (``facts_record``'s, as the store holds them:
    numbers, dates and titles as data) as ``facts_said`` says them: after a restart, the facts of a
    message's attached table were English until the document was attached again. Their rows and
    values were not kept (none is said); a record that cannot be read is left out (said as stored)."""

    def made(kind: type[Any], data: dict[str, Any]) -> Any:
        known = {f.name for f in fields(kind)}
        return kind(**{k: v for k, v in data.items() if k in known})

    tables: list[SheetFacts] = []
    for record in records:
        try:
            columns = [made(ColumnFacts, {**c, "top": [tuple(t) for t in c.get("top") or []],
                                          "guessed": tuple(c.get("guessed") or ("", "", ""))})
                       for c in record.get("columns") or []]
            product = record.get("product")
            tables.append(made(SheetFacts, {**record, "columns": columns, "cells": [],
                                            "product": tuple(product) if product else None}))
        except (TypeError, ValueError, AttributeError):
            continue
    return tables


def facts_text(facts: SheetFacts, lookup: Lookup | None = None) -> list[str]:
    """``facts_phrases`` in words: English for the model (with ``as_written``'s figures), the UI's
    language for the user."""
    return [say(line, lookup) for line in facts_phrases(facts)]


def _comma_figures(key: str) -> str | None:
    return {"number.thousands": ".", "number.decimal": ","}.get(key)


def as_written(facts: SheetFacts) -> Lookup | None:
    """The lookup that writes ``facts``' figures as its table writes its own, for the model:
    English words, and of a table written 45.600,50 the totals 3.816.895,84 (given 3,816,895.84
    beside rows of 45.600,50, a model quoted them the English way in a Turkish summary, and could
    not match them with the rows). The table's way, not the summary's language's: it is what the
    rows beside them say, and what the reader checks the summary against."""
    return _comma_figures if facts.decimal_comma else None


# what a question about a table asks for, in English and Turkish: the facts' figure that answers it
_ASKED = [
    ("total", re.compile(r"\b(?:total|sum|add(?:s|ed)? up)\b|\btoplam", re.IGNORECASE)),
    ("average", re.compile(r"\baverage\b|\bortalama", re.IGNORECASE)),
    # ("en büyüğü", "en yükseği", "en küçüğü", "en düşüğü": the k a ğ before a vowel)
    ("largest", re.compile(r"\b(?:max|maximum|largest|highest|biggest)\b|\ben (?:büyü[kğ]|yükse[kğ]|fazla)", re.IGNORECASE)),
    ("smallest", re.compile(r"\b(?:min|minimum|smallest|lowest)\b|\ben (?:küçü[kğ]\w*|düşü[kğ]\w*|az)\b", re.IGNORECASE)),
    ("rows", re.compile(r"\b(?:how many|count|number of)\b|\bkaç\b|\badet|\bsayısı", re.IGNORECASE)),
]
_ROWS_ASKED = dict(_ASKED)["rows"]  # ("how many", "kaç": the rows counted)
# a column asked for by its letter: "column B", "B sütunu"
_LETTER = re.compile(r"\bcolumn\s+([A-Za-z]{1,3})\b|\b([A-Za-z]{1,3})\s+sütun", re.IGNORECASE)
_ROWS = re.compile(r"\brows?\b|\bsatır", re.IGNORECASE)
# a table named in the question ("the table", "table 2", "2. tablo"): a text's tables are asked about so only
_TABLE = re.compile(r"\btables?\b(?:\s+(\d+))?|(?:\b(\d+)\.\s*)?\btablo(?:\w*\s+(\d+)\b)?", re.IGNORECASE)
MAX_COUNTED = 3  # figures said under a reply


# a question's figure (1,000; 1.000; €1.000,50; -200) and its unit (1,000 EUR, 1.000 TL, 10%)
# (its thousands set apart by spaces too, as French and many forms write them: 1 000, 12 500,50)
_FIGURE = rf"(?:[$€£₺¥]\s?)?[-+\u2212]?(?:\d{{1,3}}(?:[{_SPACES}]\d{{3}})+(?:[.,]\d+)?(?!\d)|\d(?:[\d.,]*\d)?)"
# the words for a currency a figure may be said with (a question's "1,000 EUR", a pasted table's "Total: 1.104,00 TL")
CURRENCY_WORDS = r"eur|euros?|usd|dollars?|tl|lira|try|gbp|pounds?"
_UNIT = rf"(?:\s?%|\s?[$€£₺¥]|\s?(?:{CURRENCY_WORDS})\b)?"
# a percentage as Turkish writes it, its % before it (%10'dan fazla)
_A = rf"(?<![\w.,])(?P<pre>%\s?)?(?P<a>{_FIGURE})(?P<unit>{_UNIT})"
_B = rf"(?P<pre_b>%\s?)?(?P<b>{_FIGURE})(?P<unit_b>{_UNIT})"
# "1,000 and under" ends there: "over 1,000 and under 3,000" is two thresholds, not "at most 1,000"
_NO_FIGURE = r"(?!\s+(?:than\s+)?(?:[$€£₺¥%]\s?)?[-+\u2212]?\d)"
_ENDING = r"(?:['’]?[a-zçğıöşü]{1,4})?"  # a Turkish case ending after it: 1.000'den, 1000'in, 500ün, TL'den
# a threshold on a column of numbers a question sets, in English and Turkish (the inclusive and
# two-sided ones first: "no less than 500" is no "less than 500"): over, under, least, most, between
_THRESHOLDS: list[tuple[str, re.Pattern[str]]] = [
    (op, re.compile(pattern.format(A=_A, B=_B, E=_ENDING, NO_FIGURE=_NO_FIGURE), re.IGNORECASE)) for op, pattern in [
        ("between", r"\bbetween\s+{A}\s+and\s+{B}"),
        ("between", r"{A}{E}\s+(?:ile|ve|-)\s+{B}{E}\s+aras[ıi]\w*"),
        ("least", r"\b(?:at\s+least|no\s+less\s+than|not\s+less\s+than|minimum\s+of)\s+{A}"),
        ("least", r"(?:>=|≥)\s*{A}"),
        ("least", r"{A}\s+(?:or|and)\s+(?:more|above|over|higher|greater)\b{NO_FIGURE}"),
        ("least", r"\ben\s+az\s+{A}"),
        ("least", r"{A}{E}\s+(?:ve|veya)\s+(?:üzeri|üstü|fazlası|yukarısı)"),
        ("most", r"\b(?:at\s+most|no\s+more\s+than|not\s+more\s+than|up\s+to|maximum\s+of)\s+{A}"),
        ("most", r"(?:<=|≤)\s*{A}"),
        ("most", r"{A}\s+(?:or|and)\s+(?:less|fewer|below|under|lower)\b{NO_FIGURE}"),
        ("most", r"\ben\s+(?:fazla|çok)\s+{A}"),
        ("most", r"{A}{E}\s+(?:ve|veya)\s+(?:altı|aşağısı|azı)"),
        ("over", r"\b(?:(?:more|greater|higher|larger|bigger)\s+than|over|above|exceed(?:s|ing)?|in\s+excess\s+of)\s+{A}"),
        ("over", r">\s*{A}"),
        ("over", r"{A}{E}\s+(?:fazla|büyük|yüksek|çok|üzeri|üstü|üzerinde|üstünde)\w*"),
        ("under", r"\b(?:(?:less|lower|smaller|fewer)\s+than|under|below)\s+{A}"),
        ("under", r"<\s*{A}"),
        ("under", r"{A}{E}\s+(?:az|küçük|düşük|altı|altında)\w*"),
    ]]
# what "more than 3 …" may count that is no figure of a column: its rows, times, days ("clients with
# more than 3 invoices" sets no threshold on an amount); a text column's name does so too
_COUNTED_THINGS = frozenset({
    "row", "rows", "time", "times", "item", "items", "entry", "entries", "record", "records", "line", "lines",
    "people", "person", "day", "days", "week", "weeks", "month", "months", "year", "years",
    "satır", "kez", "kere", "tane", "adet", "kayıt", "kişi", "gün", "hafta", "ay", "yıl"})
# words that say a value is not wanted ("not paid", "except Ankara", "Ankara hariç"): a condition
# the program does not apply
_NOT_BEFORE = frozenset({"not", "non", "no", "except", "excluding", "without", "than", "besides", "but"})
_NOT_AFTER = frozenset({"hariç", "haricinde", "harici", "dışında", "dışındaki", "olmayan", "olmayanlar", "değil"})
# a question that asks for rows ("which unpaid invoices?", "hangi faturalar"), not a figure
_WHICH = re.compile(r"\b(?:which|list|show)\b|\bhangi|\blistele|\bgöster", re.IGNORECASE)
MAX_LISTED = 10  # the matching rows' first cells named ("INV-102, INV-104") up to so many


# what sets a condition the program cannot apply ("What is the total after 2026-01-01?", "over a
# thousand", "ödenmemiş faturalar" of an English table, "Ankara'dan" where the cells say "Ankara
# Ltd"): with it, the figures of all rows answer another question (a small model repeats them as
# the answer). A date or a word for one with before/after; a threshold with no figure it reads; a
# negation; a month named; a word with a Turkish case ending that is no value or column of the table
# (and a time said from today: "this month's total", "bu ayın toplamı", "last week")
_WHEN = re.compile(r"\b(?:before|after|since|until|till|prior\s+to)\b|\b(?:önce|sonra|itibaren|beri)\w*|"
                   r"\b(?:this|last|next|current|previous|past)\s+(?=(?:day|week|month|year|quarter)\b)|"
                   r"\b(?:bu|geçen|gelecek|önümüzdeki)\s+(?=(?:gün|hafta|ay|yıl|sene|çeyrek)\w*)", re.IGNORECASE)
_MONTHS = (r"january|february|march|april|june|july|august|september|october|november|december|"
           r"ocak|şubat|mart|nisan|mayıs|haziran|temmuz|ağustos|eylül|ekim|kasım|aralık")
_WHEN_WORD = re.compile(rf"\d{{4}}-\d{{1,2}}-\d{{1,2}}|\b\d{{1,2}}[./]\d{{1,2}}[./]\d{{2,4}}\b|\b(?:19|20)\d{{2}}\b|"
                        rf"\b(?:{_MONTHS}|may|today|yesterday|tomorrow|day|week|month|year|quarter|"
                        r"bugün|dün|yarın|gün|hafta|ay(?:ın|da|dan)?\b|yıl|sene|çeyrek)\w*", re.IGNORECASE)
_MONTH = re.compile(rf"\b(?:{_MONTHS})\b", re.IGNORECASE)
_NO_FIGURE_THRESHOLD = re.compile(
    r"\b(?:more|greater|higher|larger|bigger|less|lower|smaller|fewer)\s+than\b|\b(?:at\s+least|at\s+most|"
    r"no\s+more|no\s+less|in\s+excess\s+of|exceed\w*)\b|\b(?:over|above|under|below)\s+(?:an?|one|two|three|four|five|"
    r"ten|twenty|fifty|hundred|thousand|million|half|a\s+few)\b|\w['’]?[dt][ae]n\s+(?:fazla|az|büyük|küçük|yüksek|düşük)\b",
    re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|except|excluding|without|other\s+than)\b|n['’]t\b|\bnon-|"
                       r"\b(?:hariç|haricinde|harici|dışında\w*|olmayan\w*|değil\w*)|\w+m[ae](?:m[ıi]ş|y[ae]n|d[ıi]ğ)\w*",
                       re.IGNORECASE)
_CASE_ENDED = re.compile(r"(\w+)['’][dt][ae](?:n|ki)?\b")  # Ankara'dan, 2025'te, Mart'taki


# the sheet's own words, with any ending ("Excel'deki", "Tablo'nun", "dosyasındaki"): no value's name, nor a
# condition said before what a question counts ("Excel'deki toplam tutar" of a column Toplam)
_SHEET_WORD = re.compile(r"tablo\w*|sütun\w*|excel\w*|dosya\w*", re.IGNORECASE)


def _names(text: str) -> set[str]:
    """The words of ``text`` written with a capital as a name is (casefolded) where a figure is asked
    of it: with a case ending or 's after it ("Zeta'nın", "Zeta's"), or after "of", "for", "from",
    "by" ("total amount of Zeta"). Not a name anywhere else: a sentence's first word ("What"), one
    said to or of a person ("…, Bob?", "Thanks, Ayşe", "as the CEO asked") or a unit ("TL")."""
    return {_folded(m.group(1)) for m in re.finditer(r"([^\W\d_]+)(['’]\w)?", text)
            if m.group(1)[:1].isupper() and not _SHEET_WORD.fullmatch(m.group(1))
            and (m.group(2) or re.search(r"(?<!\w)(?:of|for|from|by)\s+$", text[:m.start()], re.IGNORECASE))}


# a first name said TO a person, not of a customer: at the sentence's start or end set off by a comma
# ("Bob, what is the total?", "what is the total, Bob?"), after a greeting or thanks ("Thanks Bob",
# "Merhaba Ayşe"), or with Hanım/Bey at its end ("toplam ne Ayşe Hanım?"): "Bob" of a cell "Bob Carter"
# counted Bob Carter's rows. Its name's span is the group "name"; "total for Bob", "Bob's invoices" are
# no such thing (``_condition``)
_GREETING = r"(?:thanks|thank\s+you|thx|hi|hello|hey|dear|ok|okay|merhaba|selam|teşekkürler|teşekkür\s+ederim|sağ\s?ol)"
_NAME_SAID = r"(?P<name{}>[A-ZÇĞİÖŞÜ][^\W\d_]*)"
_ADDRESSED = re.compile(
    rf"(?:^|[.?!]\s+)(?:(?i:{_GREETING})[\s,]+)?{_NAME_SAID.format(1)}(?:\s+(?i:hanım|bey))?\s*[,:!]"
    rf"|(?:^|[.?!]\s+)(?i:{_GREETING})[\s,]+{_NAME_SAID.format(2)}(?:\s+(?i:hanım|bey))?\b(?!['’])"
    rf"|(?:,|\b(?i:{_GREETING}))\s*{_NAME_SAID.format(3)}(?:\s+(?i:hanım|bey))?\s*[.?!]*\s*$"
    rf"|\s{_NAME_SAID.format(4)}\s+(?i:hanım|bey)\s*[.?!]*\s*$")


def _addressed(text: str) -> list[tuple[int, int]]:
    """Where ``text`` names the person it is said to (``_ADDRESSED``): each name's span."""
    return [m.span(g) for m in _ADDRESSED.finditer(text) for g in ("name1", "name2", "name3", "name4") if m.group(g)]


# what a named value may be called after its name ("Ege Tekstil A.Ş. firmasının", "ACME company's"): the value still
_FIRM = r"(?:\s+(?:firma|şirket|kurum)\w*|\s+(?:company|firm)(?:['’]s)?)?"


def _unapplied(plain: str, facts: SheetFacts, values: dict[int, set[str]], said: frozenset[str] = frozenset(),
               figures: bool = True, debtor: bool = False) -> bool:
    """Whether ``plain`` (a question, its readable thresholds blanked: ``_blanked``) sets a condition
    on ``facts``' rows that the program cannot apply (``_WHEN``, ``_NO_FIGURE_THRESHOLD``,
    ``_NEGATION``, a month or a case-ended word that is no value of it; asked for a figure
    (``figures``), a column's word none of its columns has: ``_other_column_word``): counted
    nothing, not all rows. Its columns' names and the ``values`` ``_condition`` found are no such condition."""
    def without(text: str, words: set[str]) -> str:
        for word in sorted(words, key=len, reverse=True):  # (its Turkish case ending too: "ACME'nin")
            text = re.sub(rf"(?<!\w){re.escape(word)}(?:['’]\w+)?{_FIRM}(?!\w)", " ", text)
        return text

    found = without(_folded(plain), {v for vs in values.values() for v in vs} | said)
    # a firm named by a name no cell holds ("Zeta Ltd company's total", "Zeta firmasının"): not all rows' figure
    if re.search(r"(?<!\w)(?:firma|şirket|kurum)\w*|\b(?:company|firm)['’]s\b", found) and \
            re.search(r"[A-ZÇĞİÖŞÜ]\S*\s+(?i:firma|şirket|kurum|company|firm)", plain):
        return True
    if _WHEN.search(found) and _WHEN_WORD.search(_WHEN.sub(" ", found)):  # ("since last month": a column "Month" too)
        return True
    text = without(found, {_folded(c.name) for c in facts.columns if len(c.name) > 1})
    if _NEGATION.search(text) or _NO_FIGURE_THRESHOLD.search(text) or _MONTH.search(text):
        return True
    if _unmatched_before(found, facts):
        return True
    # a column's word no column of the table has ("total VAT", "toplam indirim" of Amount's table):
    # another column's figure answers another question (a count's things are ``_HOW_MANY``'s to tell)
    # (or a word made of a column's word by another ending: "kiracı" of Kira, "rental" of Rent)
    names = {w for c in facts.columns for w in _name_words(c.name)}
    unknown = _unknown_words(found, facts)
    if figures and any(_other_column_word(word, names) for word in unknown):
        return True
    # who owes, named by a name no cell holds ("how much does Zeta Ltd owe?"): not all unpaid rows' amount;
    # asked of any figure, a name so written where a question's first word is not ("total amount of Zeta"),
    # or with a case ending or 's after it ("Zeta'nın toplam tutarı", "Zeta's total"): not all rows' figure
    if {_folded(w) for w in re.findall(r"[^\W\d_]+", plain) if w[:1].isupper()}.intersection(unknown) and (
            debtor or _names(plain).intersection(unknown)):
        return True
    letters = {c.letter.casefold() for c in facts.columns if c.letter}
    return any(m.group(1) not in letters and not _SHEET_WORD.fullmatch(m.group(1))
               for m in _CASE_ENDED.finditer(text))


# the words that may stand before what a question counts ("the invoices", "all rows", "toplam tutar")
# and set no condition on its rows: any other word there is a value's ("overdue invoices",
# "gecikmiş faturalar"), and where it matches no cell, the program cannot apply it
_PLAIN_BEFORE = frozenset({
    "the", "a", "an", "all", "of", "my", "our", "your", "their", "its", "these", "those", "this", "that", "each",
    "every", "any", "both", "added", "including", "different", "distinct", "unique", "there", "do", "does", "did",
    "have", "has", "we", "farklı", "var", "ne", "kadar", "total", "totals", "sum", "average", "many", "much", "number", "count", "how", "what",
    "which", "list", "show", "per", "for", "in", "on", "to", "and", "or", "with", "by", "is", "are", "was", "were",
    "largest", "smallest", "highest", "lowest", "biggest", "max", "maximum", "min", "minimum", "overall", "grand",
    "combined", "whole", "entire", "please", "me", "give", "tell", "up", "add", "column", "columns", "table", "sheet",
    "tüm", "bütün", "toplam", "ortalama", "kaç", "en", "büyük", "yüksek", "fazla", "küçük", "düşük", "az", "her",
    "bu", "şu", "hangi", "ve", "ile", "için", "tane", "adet", "olan", "olanlar", "bulunan", "ones", "tablodaki", "tablo", "sütun", "listele", "göster",
    "kesilen", "düzenlenen", "issued", "most", "least", "fewest", "çok"})  # (an invoice "issued", "kesilen fatura": each of them
# what a question counts, besides its table's columns: its rows, by any name
# (an invoice table's rows are its invoices, whatever its columns are named: "unpaid invoices" of Fatura | Tutar)
_ROW_NOUNS = ("row", "item", "entr", "record", "line", "invoice", "satır", "kayıt", "fatura")
_TITLE_WORDS = frozenset({"sheet", "table", "hidden", "csv", "tsv", "xlsx", "xls", "your", "message", "the"})


def _unmatched_before(text: str, facts: SheetFacts) -> bool:
    """Whether ``text`` (a question casefolded, the values it names blanked) puts a word that is no
    value of ``facts`` before what it counts ("total of overdue invoices" where Status says paid or
    unpaid; "gecikmiş faturaların toplamı"): a condition the program cannot apply. What it counts:
    a word of a column's name ("invoices" of "Invoice", "faturaların" of "Fatura No"), of the
    file's or sheet's name, or rows by any name."""
    columns = {w for c in facts.columns for w in re.findall(r"[^\W\d_]+", _folded(c.name))}
    columns |= {w for c in facts.columns for w in _name_words(c.name)}
    nouns = {w for w in columns if len(w) >= 3}
    nouns |= {w for w in re.findall(r"[^\W\d_]{3,}", _folded(facts.title)) if w not in _TITLE_WORDS}
    plain = _PLAIN_BEFORE | columns | {w for c in facts.columns for v in c.values for w in v.split()}
    words = re.findall(r"[^\W_][\w'’.-]*", text)
    for before, word in itertools.pairwise(words):
        word = re.split(r"['’]", word)[0]
        word = word.strip(".-")
        if not (any(_word_of(word, n) for n in nouns) or word.startswith(_ROW_NOUNS)):
            continue
        before = re.split(r"['’]", before)[0].strip(".-")
        if before not in plain and not any(_word_of(before, n) for n in nouns) and len(before) >= 3 and before.isalpha() \
                and not _SHEET_WORD.fullmatch(before):
            return True
    return False


# words that say a row's state ("open invoices", "total due", "açık faturalar"), besides the forms
# ``_status_like`` knows by their endings: a question with one the table's cells do not hold asks
# for some rows, not all of them
_STATUS_WORDS = frozenset({
    "outstanding", "open", "overdue", "paid", "unpaid", "due", "owe", "owes", "owed", "owing", "late", "pending", "closed",
    "settled", "void", "active", "inactive", "done", "complete", "açık", "kapalı", "kapanmış", "iptal", "borç", "borcu"})


def _status_like(word: str) -> bool:
    """Whether ``word`` (casefolded) may say which rows are meant ("unpaid", "outstanding", "settled",
    "ödenmemiş", "gecikmiş"): an English participle or un- word, a word for a state, a Turkish verb's
    form (``_verb_form``); not a thing counted nor a question's word ("total", "invoices", "ne")."""
    return word in _STATUS_WORDS or _verb_form(word) is not None or len(word) >= 5 and (
        word.endswith("ed") or word.startswith("un") and len(word) >= 6
        or word.endswith("ing") and len(word) >= 6 and not word.endswith("thing"))


def _unknown_state(text: str, facts: SheetFacts) -> bool:
    """Whether ``text`` (a question casefolded, the values it names blanked) holds a word that may
    say which rows are meant (``_status_like``) and that the program does not know: none of the
    plain words of a question (``_PLAIN_BEFORE``, ``_COUNTED_THINGS``, what ``_ASKED`` and
    ``_WHICH`` read), of the table's columns' names, values or title, nor rows by any name. With
    it, the figures of all rows answer another question ("total rent of unpaid flats" of a table
    that says "ödenmedi": "Kira (TL), all 8 rows: total 119,599.99" was read as the unpaid ones')."""
    return any(_status_like(word) for word in _unknown_words(text, facts))


def _unknown_words(text: str, facts: SheetFacts) -> list[str]:
    """The words of ``text`` (a question casefolded, the values it names blanked) the program does
    not know: none of the plain words of a question (``_PLAIN_BEFORE``, ``_COUNTED_THINGS``, what
    ``_ASKED`` and ``_WHICH`` read), of the table's columns' names, values or title, nor rows by
    any name ("customers" of a table with no column Customer)."""
    columns = {w for c in facts.columns for w in _name_words(c.name)}
    columns |= {w for w in re.findall(r"[^\W\d_]{3,}", _folded(facts.title)) if w not in _TITLE_WORDS}
    values = {w for c in facts.columns for v in c.values for w in v.split()}
    return [word for word in re.findall(r"[^\W\d_]{3,}", re.sub(r"['’]\w*", "", text))
            if not (word in _PLAIN_BEFORE or word in _COUNTED_THINGS or word in values or any(_word_of(word, c) for c in columns)
                    or word.startswith(_ROW_NOUNS) or _WHICH.search(word) or any(p.search(word) for _, p in _ASKED)
                    or _SHEET_WORD.fullmatch(word)
                    or re.fullmatch(CURRENCY_WORDS, word))]


@dataclass(frozen=True)
class Threshold:
    """A threshold a question sets on a column of numbers ("over 1,000", "500'den az")."""

    column: ColumnFacts
    op: str  # over | under | least | most | between
    a: Decimal
    b: Decimal = Decimal(0)  # between's upper end

    def holds(self, value: Decimal) -> bool:
        return {"over": value > self.a, "under": value < self.a, "least": value >= self.a,
                "most": value <= self.a, "between": self.a <= value <= self.b}[self.op]


def _asked_figure(text: str) -> Decimal | None:
    """A figure as a question writes it, English or Turkish: one that reads only one way is so
    (1,5 and 1.000,50; 1.5 and 1,000.50), and one that reads two ways (1.000, 1,000) has its
    thousands marked, as an amount is written (``_column_reading``'s guess); None: no figure
    (1,00,0)."""
    t = text.replace("\u2212", "-")  # (1 000 and 12 500,50: their groups read as a cell's are, ``_number``)
    as_dot, as_comma = _number(t), _number(t, True)
    if as_dot is None or as_comma is None or as_dot == as_comma:
        return as_comma if as_dot is None else as_dot
    return as_comma if "." in t else as_dot


def _threshold_spans(question: str) -> list[tuple[str, re.Match[str]]]:
    """The thresholds ``question`` sets ("over 1,000", "between 500 and 800", "1.000'den fazla"),
    each with where it is; none twice (the first pattern that reads a span has it)."""
    found: list[tuple[str, re.Match[str]]] = []
    for op, pattern in _THRESHOLDS:
        for m in pattern.finditer(question):
            if not any(m.start() < other.end() and other.start() < m.end() for _, other in found):
                found.append((op, m))
    return sorted(found, key=lambda f: f[1].start())


def _thresholds(question: str, spans: list[tuple[str, re.Match[str]]],
                facts: SheetFacts) -> tuple[list[Threshold], bool]:
    """The thresholds of ``spans`` on ``facts``' columns, and whether one of them cannot be
    applied (its figure unreadable, its column not to be told among several, what it counts no
    figure: "more than 3 invoices"). A threshold's column: the only one of numbers (of
    percentages where it says %), else the one named nearest before it, else the only one named."""
    things = {w for c in facts.columns if c.kind == "text" for first in _folded(c.name).split()[:1]
              for w in _name_words(first)}
    letters = [(m.end(), (m.group(1) or m.group(2)).upper()) for m in _LETTER.finditer(question)]
    found: list[Threshold] = []
    for op, m in spans:
        after = [_folded(w) for w in re.findall(r"\w+", question[m.end("unit") if m.group("unit") else m.end("a"):])[:1]]
        after += [_folded(w) for w in re.findall(r"\w+", question[m.end():])[:1]]
        a = _asked_figure(m.group("a"))
        b = _asked_figure(m.group("b")) if "b" in m.groupdict() else Decimal(0)
        if a is None or b is None:
            return [], True
        counts = [w for w in after if w in _COUNTED_THINGS or any(_word_of(w, t) for t in things)]
        if counts and not _no_count(m, a, b, facts.rows, any(w in _COUNTED_THINGS for w in counts)):
            return [], True
        percent = any("%" in (m.groupdict().get(g) or "") for g in ("pre", "unit", "pre_b", "unit_b"))
        columns = [c for c in facts.columns if c.kind == ("percents" if percent else "numbers")] \
            or [c for c in facts.columns if not percent and c.kind == "percents"]
        mentions = [(n.end(), c) for c in columns if len(c.name) > 1
                    for n in re.finditer(re.escape(c.name), question, re.IGNORECASE)]
        mentions += [(end, c) for c in columns for end, letter in letters if c.letter == letter]
        mentions += [(end, c) for end, c in _named_by_word(question, columns)]
        # the rows' own first column named after it is what is listed, not measured ("15.000
        # TL'den fazla olan daireler" of Daire | Kira (TL) | Aidat (TL): "0 rows where Daire over
        # 15,000" told the user no flat pays over 15,000 TL when two do)
        mentions = [(end, c) for end, c in mentions
                    if not (c is facts.columns[0] and end > m.end() and len(columns) > 1)]
        before = [(end, c) for end, c in mentions if end <= m.start()]
        named = {id(c): c for _, c in mentions}
        column = columns[0] if len(columns) == 1 else max(before, key=lambda e: e[0])[1] if before \
            else next(iter(named.values())) if len(named) == 1 else None
        if column is None:
            return [], True
        found.append(Threshold(column, op, *((a, b) if op != "between" or a <= b else (b, a))))
    return found, False


# a column's common words in the UI's other language, both ways: "which flats pay more than 15,000 TL
# rent?" of a column "Kira (TL)" named no column, and counted nothing ("kaç müşteri var?" of a
# column "Customer" the same). A name's word is its key or begins with it ("Kirası", "Tutarı")
_OTHER_LANGUAGE = [("rent", "kira"), ("amount", "tutar"), ("total", "toplam"), ("customer", "müşteri"),
                   ("client", "müşteri"), ("date", "tarih"), ("invoice", "fatura"), ("price", "fiyat"),
                   ("quantity", "adet"), ("quantity", "miktar"), ("status", "durum"), ("flat", "daire"),
                   ("apartment", "daire"), ("tenant", "kiracı"), ("expense", "gider"), ("spending", "harcama"), ("income", "gelir"),
                   ("revenue", "gelir"), ("revenue", "hasılat"),
                   ("salary", "maaş"), ("payment", "ödeme"), ("product", "ürün"), ("city", "şehir"), ("vat", "kdv"),
                   ("tax", "vergi"), ("discount", "indirim"), ("fee", "ücret"), ("deposit", "depozito"),
                   ("commission", "komisyon"), ("shipping", "kargo"),
                   # a row's state, as a status column's cells say it ("unpaid invoices" of cells that say
                   # "ödenmedi", "kaç fatura ödenmedi?" of "unpaid"); a Turkish verb's other forms by its own
                   # (``_verb_form``: "ödenmemiş" of "ödenmedi")
                   ("paid", "ödendi"), ("unpaid", "ödenmedi"), ("overdue", "gecikmiş"), ("open", "açık")]


def _key_word(word: str, key: str) -> bool:
    """Whether ``word`` (casefolded) is the list's ``key`` (``_OTHER_LANGUAGE``) or, for a key of four
    letters or more that says no state, a form of it (``_word_of``: "kirası" of "kira"; "açıklama"
    is no "açık", "kiracı" and "rental" no "kira" or "rent")."""
    return word == key or len(key) >= 4 and _word_of(word, key) and not (key in _STATUS_WORDS or _verb_form(key))


# what may follow a word where it still names the same thing: a Turkish plural, possessive and case
# ending ("kirası", "faturaların", "müşterinin", "tutarlarından", "faturamız"), an English plural or
# possessive ("invoices", "customer's"); not an ending that makes another word ("kiracı" a tenant,
# "kiralık", "kirasız"; "rental", "renter"): read by its first letters, "kaç kiracı var?" of a table
# of Kira counted its rows as tenants, and "total rental" was the rent's total
_INFLECTED = re.compile(r"(?:l[ae]r)?(?:s?[ıiuü]|[ıiuü]?m(?:[ıiuü]z)?|[ıiuü]?n[ıiuü]z)?"
                        r"(?:n?[ıiuü]n|n?[ıiuü]|n?y?[ae]|n?[dt][ae](?:n|ki)?|y?l[ae])?|e?s|['’]s?|s['’]")


def _word_of(word: str, stem: str) -> bool:
    """Whether ``word`` (casefolded) is ``stem`` or ``stem`` with an ending that keeps its meaning
    (``_INFLECTED``; "quantities" of "quantity")."""
    if stem.endswith("y") and word.startswith(stem[:-1] + "ies"):
        return _INFLECTED.fullmatch(word[len(stem) + 2:]) is not None
    return word.startswith(stem) and _INFLECTED.fullmatch(word[len(stem):]) is not None


def _other_language(word: str) -> set[str]:
    """``word``'s (casefolded) common words in the other language (``_OTHER_LANGUAGE``): by the word
    itself, and a Turkish verb's form by its stem and "not" ("ödenmemiş" of "ödenmedi": "unpaid")."""
    form = _verb_form(word)
    return {other for pair in _OTHER_LANGUAGE for key, other in (pair, pair[::-1])
            if key == word or form is not None and _verb_form(key) == form}


def _other_column_word(word: str, names: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether ``word`` (casefolded) is a column's common word (``_OTHER_LANGUAGE``) that names one
    column and no other ("vat", "indirimi", "rent"), by the rule ``_name_words`` reads names by, or
    a word made of one of them or of a table's column's word (``names``) by an ending that makes
    another word ("kiracı", a tenant, of Kira; "rental" of Rent: ``_word_of``); not one any amount's
    column answers to (total, amount, price, quantity: ``_AMOUNT_NAME``, ...) nor a table's rows
    (invoices): asked "total VAT" of a table without a VAT column, the program said its Amount's total."""
    if any(r.search(word) for r in (_AMOUNT_NAME, _QUANTITY_NAME, _PRICE_NAME, _RATE_NAME)) or word.startswith(_ROW_NOUNS):
        return False
    keys = {key for pair in _OTHER_LANGUAGE for key in pair} | set(names)
    return any(_key_word(word, key) or len(key) >= 4 and word.startswith(key) and not (
        key in _STATUS_WORDS or _verb_form(key)) for key in keys)


def _name_words(name: str) -> set[str]:
    """The words (of three letters or more, casefolded) that name a column called ``name``: its own
    and their common words in the UI's other language (``_OTHER_LANGUAGE``: "rent" of "Kira (TL)",
    "müşteri" of "Customer")."""
    own = set(re.findall(r"[^\W\d_]{3,}", _folded(name)))
    return own | {other for w in own for a, b in _OTHER_LANGUAGE for key, other in ((a, b), (b, a))
                  if _key_word(w, key)}


def _named_by_word(question: str, columns: list[ColumnFacts]) -> list[tuple[int, ColumnFacts]]:
    """The columns ``question`` names by a word of their name, each with where that word ends: "kira",
    "kirası", "kiraların" name "Kira (TL)" (a unit or currency of its name names none). A word of
    two columns' names ("tutar" of "Net Tutar" and "Tutar") names neither."""
    names = {id(c): {w for w in _name_words(c.name) if not re.fullmatch(CURRENCY_WORDS, w)} for c in columns}
    found: list[tuple[int, ColumnFacts]] = []
    for m in re.finditer(r"\w+", question):
        word = _folded(m.group(0))
        naming = [c for c in columns if any(_word_of(word, n) for n in names[id(c)])]
        if len(naming) == 1:
            found.append((m.end(), naming[0]))
    return found


def _threshold_verbs(plain: str, spans: list[tuple[str, re.Match[str]]], thresholds: list[Threshold],
                     facts: SheetFacts) -> str:
    """``plain`` with the threshold's column and a verb that says what it is blanked after each
    threshold ("15.000 TL'den fazla kira ödeyen daireler": the flats that pay rent over 15,000 TL),
    where its verb is no form of a value of the table ("ödenen" of a table that says "ödendi" is a
    condition of its own): read as a word before "daireler", it was a condition no cell holds. The
    column's word alone too, as English says it ("which flats pay more than 15,000 TL rent?": read
    after "pay", the verb before the threshold, "rent" was a condition no cell holds)."""
    forms = {f for c in facts.columns for v in c.values if (f := _verb_form(v)) is not None}
    for (_, m), t in zip(spans, thresholds, strict=False):
        after = re.match(r"\s+(\w+)(?:\s+(\w+))?", plain[m.end():])
        if after is None or not any(end == m.end() + after.end(1) for end, _ in _named_by_word(
                plain[:m.end() + after.end(1)], [t.column])):
            continue
        form = _verb_form(_folded(after.group(2))) if after.group(2) else None
        blank = after.end() if form is not None and not form[1] and form not in forms else after.end(1)
        plain = plain[:m.end()] + " " * blank + plain[m.end() + blank:]
    return plain


def _no_count(m: re.Match[str], a: Decimal, b: Decimal, rows: int, unbounded: bool) -> bool:
    """Whether a threshold's figure followed by what a count names ("faturalar", "days") is no
    count all the same: a Turkish question puts its noun after it ("1000 TL'den fazla faturalar":
    invoices over 1,000 TL), an English one before it ("clients with more than 3 invoices": a
    count). Its figure is no count where it says a unit (TL, €, %), has decimals, or (a count of
    the table's rows: ``unbounded`` False, not days or times) is far above its rows (1000 of 5)."""
    if any((m.groupdict().get(g) or "").strip() for g in ("pre", "unit", "pre_b", "unit_b")):
        return True
    low = min(a, b) if "b" in m.groupdict() else a
    whole = all(v == v.to_integral_value() for v in (a, b))
    return not unbounded and (not whole or low >= 10 * max(rows, 1))


def _blanked(question: str, spans: list[tuple[str, re.Match[str]]]) -> str:
    """``question`` with its thresholds' words blanked: "en az 500" asks for no smallest, "maximum
    of 200" for no largest, and 1.000 is no value of a column."""
    for _, m in spans:
        question = question[:m.start()] + " " * (m.end() - m.start()) + question[m.end():]
    return question


def _says(text: str, name: str) -> bool:
    """Whether ``text`` (casefolded) says a column's ``name`` (casefolded), as a word or with an ending
    that keeps its meaning (``_INFLECTED``: "kirası", "amounts"): "kiracı" (a tenant) says no "Kira"."""
    return any(_INFLECTED.fullmatch(m.group(1)) for m in re.finditer(rf"(?<!\w){re.escape(name)}(\w*)", text))


def _unsaid(text: str, name: str) -> str:
    """``text`` (casefolded) without each place it says a column's ``name`` (casefolded, ``_says``):
    what else it says ("kira" is said in "toplam ek kira" only inside "ek kira")."""
    return re.sub(rf"(?<!\w){re.escape(name)}\w*", lambda m: " " * len(m.group(0)), text)


def _glossed(text: str, facts: SheetFacts) -> str:
    """``text`` without the person's own word for a column said beside its name in brackets: "Toplam
    gelir (Revenue EUR)", "Revenue EUR (hasılat)" name one column twice, and the word read as a
    condition no cell holds counted nothing. Only a word that names that very column (its name's, or
    their common word in the other language: ``_name_words``): "Amount (March)", "Tutar (Mart)",
    "Amount (first quarter)" say which rows are meant, and blanked they had the whole table counted."""

    def blank(m: re.Match[str], group: str, names: set[str]) -> str:
        words = re.findall(r"[^\W\d_]+", _folded(m.group(group)))
        if not words or not all(any(_word_of(w, n) for n in names) for w in words):
            return m.group(0)
        start, end = m.start(group) - m.start(), m.end(group) - m.start()
        return m.group(0)[:start] + " " * (end - start) + m.group(0)[end:]

    for c in facts.columns:
        if len(c.name) < 2:
            continue
        name, names = re.escape(c.name), _name_words(c.name)
        text = re.sub(rf"(?<!\w)(?P<own>[^\W\d_]+)\s*\(\s*{name}\s*\)", lambda m, n=names: blank(m, "own", n),
                      text, flags=re.IGNORECASE)
        text = re.sub(rf"(?<!\w){name}\s*\((?P<own>\s*[^\W\d_]+(?:\s+[^\W\d_]+)?\s*)\)",
                      lambda m, n=names: blank(m, "own", n), text, flags=re.IGNORECASE)
    return text


def counted_answer(question: str, tables: list[SheetFacts]) -> list[dict[str, Any]]:
    """The figures the program counted that answer ``question`` about ``tables`` (their facts), to
    show under the model's reply (``counted_phrases``: "Counted by the program: Revenue (column B)
    total 7,855"): asked "what is the total of column B?" a small model gave the average, and
    nothing pointed to the counted figure. The column asked for by its letter or its name, else
    each column of numbers; [] where the question asks for no total, sum, average, count, largest
    or smallest. A table among a text's paragraphs (a Word document's, a slide's: ``among_text``)
    only where the question names it ("the table", "table 2"), one of its columns or a value of its
    rows ("the unpaid invoices"): "total pages?" of a report showed its cost table's total.
    A question with a condition on the rows (a value of a text column: "unpaid", "for March",
    "Ankara'dan"; a threshold on a column of numbers: "over 1,000", "500'den az") has them counted
    on the rows that meet it, from ``SheetFacts.cells`` (``_counted_where``): "Which unpaid
    invoices are over 1,000 EUR?" was answered "514 invoices, $30 million", and the facts of all
    rows read as the unpaid ones'. Where the program cannot apply it (a value of two columns, one
    said with "not", a figure it cannot read, a column it cannot tell, a table read in part, one too
    big to keep): nothing, as the figures of all rows answer another question. Counting pasted
    rows: ``counted_answer(question, [table_facts(title, 0, rows)])``.
    Plain strings and lists of them, as a reply's record keeps them (JSON).
    A question of two asks, each with its own ask word ("Which invoice is the largest and what is
    the total of the unpaid ones?") is counted per ask, each with its own condition (``_asks``):
    the largest of all rows was said as the unpaid ones' largest."""
    items: list[dict[str, Any]] = []
    for ask in _asks(question, tables):
        for item in _counted_one(ask, tables):
            same = [had for had in items if item["what"] == had["what"] == "where" and all(
                item.get(key) == had.get(key) for key in ("title", "conditions", "rows"))]
            if item in items or same and not item["name"]:
                continue  # (counted already: "how many are unpaid and how much is owed?" said the unpaid rows once)
            for had in same:
                if not had["name"] or had["name"] == item["name"]:
                    had.update(item, figures=had["figures"] + [f for f in item["figures"] if f not in had["figures"]])
                    break
            else:
                items.append(item)
    return items[:MAX_COUNTED]


# what joins two asks of one question ("… and what is …", "…, how many …", "… ve … ne kadar?")
_JOIN = re.compile(r"\s*,\s*(?:(?:and|ve)\s+)?|\s+(?:and|ve)\s+", re.IGNORECASE)
# a word that points back to the rows an earlier ask named ("how many are unpaid and what is their total?")
_BACK = re.compile(r"\b(?:their|them|they|those|these|its|it|bunlar\w*|onlar\w*|şunlar\w*)\b", re.IGNORECASE)
# an ask's words that name nothing it asks about: what is left of "what is the average" is nothing
_ASK_WORDS = re.compile(r"\b(?:what|what's|whats|which|how|much|many|is|are|was|were|the|a|an|of|one|ones|there|"
                        r"also|then|ne|nedir|kadar|hangisi|peki|ayrıca|da|de|en)\b", re.IGNORECASE)
_ROW_WORDS = frozenset({"var", "mı", "mi", "tane", "adet", "are", "there", "ones"})  # (said of the rows, no condition)
_ASK_AT_ALL = re.compile(r"\bwhat\b|\bhow\s+much\b|\bne\s+kadar\b|\bnedir\b|\bhangisi\b", re.IGNORECASE)


def _asks(question: str, tables: list[SheetFacts]) -> list[str]:
    """``question`` split into its asks, each joined by "and", "ve" or a comma and each with its own
    ask word (``_ASKED``, which, what, how much, ne kadar): ["Which invoice is the largest", "what
    is the total of the unpaid ones?"]. A part with no ask word of its own ("paid and unpaid", "for
    Acme, Birch") or one that points back to an earlier ask's rows ("… and what is their total?")
    stays with the ask before it, as does one that names nothing but what it asks for ("… and what
    is the total?"); such a one first goes with the ask after it ("what is the total and the average
    of the unpaid invoices?"). [question] where it is one ask."""
    blanked = _blanked(question, _threshold_spans(question))  # ("between 500 and 800" is one threshold)
    cuts = [m for m in _JOIN.finditer(blanked) if m.start() > 0 and m.end() < len(blanked)]
    parts, start = [], 0
    for m in cuts:
        parts.append((question[start:m.start()], blanked[start:m.start()]))
        start = m.end()
    parts.append((question[start:], blanked[start:]))
    if len(parts) < 2:
        return [question]

    def asks(text: str) -> bool:
        return any(words.search(text) for _, words in _ASKED) or bool(_WHICH.search(text) or _ASK_AT_ALL.search(text))

    columns = {w for facts in tables for c in facts.columns if c.kind in ("numbers", "percents")
               for w in _name_words(c.name)}

    def bare(text: str, later: bool = False) -> bool:  # (nothing said but what is asked: "what is the average")
        left = text
        for _, words in _ASKED:  # (before the ask words: "en büyüğü" is one, "en" alone another)
            left = words.sub(" ", left)
        left = _ASK_WORDS.sub(" ", left)
        said = re.findall(r"[^\W\d_]{2,}", _folded(_WHICH.sub(" ", left)))
        if later and _ROWS_ASKED.search(text) and not _WHICH.search(text):  # (the rows themselves, counted after
            # an ask: "… and how many invoices?", "ve kaç tane?" count the rows the ask before names, not all of
            # them; "… and which invoice is the largest?", or first, "which invoice is the largest and …", its own)
            said = [w for w in said if not (w in _COUNTED_THINGS or w.startswith(_ROW_NOUNS) or w in _ROW_WORDS)]
        return not any(not any(_word_of(w, c) for c in columns) for w in said)

    groups: list[list[str]] = []  # (each: its text, its blanked text)
    for text, seen in parts:
        if groups and (not asks(seen) or _BACK.search(seen) or not asks(groups[-1][1])):
            groups[-1] = [f"{groups[-1][0]} and {text}", f"{groups[-1][1]} and {seen}"]  # ("kira ve ek kira toplamı")
        else:
            groups.append([text, seen])
    if len(groups) < 2:
        return [question]
    # (a bare ask asks of the rows the ask before it names: "how many are unpaid and what is the total?";
    # the first one of those after it: "what is the total and the average of the unpaid invoices?")
    merged: list[list[str]] = []
    waiting: list[str] | None = None
    for text, seen in groups:
        if merged and bare(seen, later=True):
            merged[-1] = [f"{merged[-1][0]} and {text}", f"{merged[-1][1]} and {seen}"]
        elif bare(seen):
            waiting = [f"{waiting[0]} and {text}", f"{waiting[1]} and {seen}"] if waiting else [text, seen]
        else:
            merged.append([f"{waiting[0]} and {text}", f"{waiting[1]} and {seen}"] if waiting else [text, seen])
            waiting = None
    return [text for text, _ in merged] if len(merged) > 1 else [question]


def _counted_one(question: str, tables: list[SheetFacts]) -> list[dict[str, Any]]:
    """``counted_answer`` of one ask."""
    spans = _threshold_spans(question)
    plain = _blanked(question, spans)
    asked = [what for what, words in _ASKED if words.search(plain)]
    # ("how much does ACME owe?": what it owes in all; "how many are unpaid and how much is owed?": both)
    if "total" not in asked and _HOW_MUCH.search(plain) and (_OWED.search(plain) or "rows" in asked):
        asked.append("total")
    if not asked and not spans and not _WHICH.search(plain) and not (_RANK.search(plain) and _PER.search(plain)):
        return []  # (nor "en çok borcu olan müşteri": which has the most)
    letters = {(m.group(1) or m.group(2)).upper() for m in _LETTER.finditer(plain)}
    said_tables = list(_TABLE.finditer(plain))
    table_numbers = {n for m in said_tables for n in m.groups() if n}
    lowered = plain.casefold()
    whole = plain
    items: list[dict[str, Any]] = []
    for facts in tables:
        numbers = [c for c in facts.columns if c.kind in ("numbers", "percents")]
        named = [c for c in numbers if c.letter in letters or len(c.name) > 1 and _says(lowered, c.name.casefold())
                 or _QUANTITY_NAME.search(c.name) and _QUANTITY_NAME.search(plain)  # ("total quantity" of "Qty")
                 or c.rate and (_PRICE_NAME.search(plain) or _RATE_NAME.search(plain))]
        if len(named) > 1:  # ("toplam ek kira" of Kira | Ek kira: Ek kira's, not also Kira's said inside it)
            named = [c for c in named if c.letter in letters or not any(
                len(d.name) > len(c.name) and _says(lowered, d.name.casefold())
                and not _says(_unsaid(lowered, d.name.casefold()), c.name.casefold()) for d in named)]
        if len(named) > 1:  # ("total VAT" of Net | VAT | Total: the VAT's, not also Total's, named by the word asked)
            named = [c for c in named if not dict(_ASKED)["total"].fullmatch(c.name.strip())] or named
        if not named:  # (by a word of its name: "kiraların toplamı" of Kira (TL) beside Aidat (TL))
            named = list({id(c): c for _, c in _named_by_word(plain, [c for c in numbers if not c.rate])}.values())
        if facts.among_text and not named and (not said_tables or table_numbers
                                                and facts.title.rpartition(" ")[2] not in table_numbers) \
                and (said_tables or not _condition(_without_named_months(whole, facts), facts)[0]):
            continue  # (not asked about: another table, or the text's own words; "the unpaid ones" names it)
        plain = _glossed(whole, facts)
        net = _net_asked(plain, facts)
        if net is not None:  # ("total without VAT": the Net column's, said so; "with VAT" the gross one's)
            plain, named = (_IN_TAX if net[2] else _EX_TAX).sub(lambda m: " " * len(m.group(0)), plain), [net[0]]
        elif _IN_TAX.search(plain):
            continue  # (whether its amounts hold the tax the program cannot tell: nothing, not the VAT's or all amounts')
        owed = _owed(plain, facts)
        debt = _debt(facts) if owed else None
        if owed and debt is None:
            continue  # (what is owed the program cannot tell: nothing, not all rows' amounts)
        thresholds, unsure = _thresholds(question, spans, facts) if spans else ([], False)
        plain = _threshold_verbs(plain, spans, thresholds, facts)
        per, plain = _per_asked(plain, facts)
        values, doubt, said = _condition(_without_named_months(plain, facts), facts)
        own = bool(values)  # (the values the question names, besides what is owed)
        if owed and debt is not None:  # ("how much do customers owe?": the unpaid rows' amount)
            named = [debt[0]]
            for at, unpaid in debt[1].items():
                values.setdefault(at, set()).update(unpaid)
            said |= {_folded(owed.group(0))}
        years, no_year, year_said = _year(plain, facts)
        doubt = doubt or no_year or _unapplied(plain, facts, values, said | year_said,
                                                   any(what != "rows" for what in asked), owed is not None)
        if per is not False:  # ("how many invoices does each customer have?": a figure per customer)
            if isinstance(per, ColumnFacts) and not (own or years or thresholds or doubt or unsure) \
                    and facts.cells and not facts.cut:
                rank, of_each = _ranked(whole, asked)
                # (what each owes: its unpaid rows' amount, "which customer owes the most?")
                items += _counted_per(facts, per, of_each, named, plain, values if owed else {}, rank)
            continue  # (all rows' figure answers another question)
        if values or years or thresholds or doubt or unsure:
            if not doubt and not unsure and facts.cells and not facts.cut:  # (all its rows, or nothing)
                # ("how many customers are unpaid?": the unpaid rows' different customers, not the rows)
                thing = _thing_asked(plain, facts) if "rows" in asked and not _ROWS.search(plain) else None
                if thing is not None and thing.at not in values:
                    items += _counted_where(facts, values, thresholds, asked, named, years, plain, thing)
                if thing is None or thing.at in values or any(what != "rows" for what in asked):
                    where = _counted_where(facts, values, thresholds, asked, named, years, plain)
                    items += [_owing(item, facts, debt) for item in where] if owed and debt is not None else where
            continue  # (its figures of all rows answer another question)
        if _unknown_state(_folded(plain), facts):  # ("total outstanding" of a table that says no such thing)
            continue
        things = _things_asked(plain, facts) if "rows" in asked and not _ROWS.search(plain) else []
        # ("how many customers?": its different customers, not its rows; "toplam kiracı", the tenants' count)
        thing = _total_thing(plain, facts, named) if "total" in asked and "rows" not in asked else None
        things = things or (_things_asked(plain, facts, thing) if thing is not None else [])
        if things:
            items += things
            continue
        counted = _HOW_MANY.search(_folded(plain))
        if counted and counted.group(1) in _unknown_words(counted.group(1), facts):
            continue  # ("how many customers are there in total?" of a table without them: not its amounts' total)
        # (not where it counts something else: "how many customers?" of a table with no such column)
        if "rows" in asked and (not named or len(asked) == 1 or _ROWS.search(plain)) and (_ROWS.search(plain) or not (
                _unknown_words(_folded(plain), facts) or counted and re.fullmatch(CURRENCY_WORDS, counted.group(1)))):
            # ("toplamı kaç?", "toplam kaç TL": no count)
            items.append({"what": "rows", "title": facts.title, "rows": _n(facts.rows)})
        # the table's total: its quantities × prices, not its quantities added up; asked as "the total
        # price" too (a price named alone: "total price of all bookings" said nothing)
        product = "total" in asked and facts.product is not None and all(c.rate for c in named)
        if product:
            by_at = {c.at: c for c in facts.columns}
            a, b = by_at[facts.product[0]], by_at[facts.product[1]]
            items.append({"what": "product", "title": facts.title, "name": a.name, "letter": a.letter, "name_b": b.name, "letter_b": b.letter,
                          "figure": facts.product[2], "rows": _n(facts.rows)})
        for col in named or _money_first(numbers, asked, plain):
            for what in asked:
                if product and what == "total":
                    continue
                figure = {"total": col.total, "average": col.average, "largest": col.largest,
                          "smallest": col.smallest}.get(what, "")
                # ("which invoice is the largest?", "en büyük fatura hangisi?": its row named, not only its figure)
                held = _rows_holding(facts, col, what) if what in ("largest", "smallest") and _WHICH.search(plain) else []
                if figure:
                    items.append({"what": what, "title": facts.title, "name": col.name, "letter": col.letter,
                                  "figure": figure, "rows": _n(facts.rows)} | ({"of": held} if held else {})
                                 | ({"with" if net[2] else "without": net[1].name} if net else {}))
    return items[:MAX_COUNTED]


MAX_HOLDING = 3  # the rows that hold a column's largest (or smallest) figure, named where no more do


def _rows_holding(facts: SheetFacts, col: ColumnFacts, what: str) -> list[str]:
    """The rows of ``facts.cells`` that hold ``col``'s largest (``what``) or smallest figure, each
    named by its first two text cells ("F-104, Yıldız Ltd"): "which invoice is the largest?" of an
    attached or pasted table was answered with its figure alone, and the model named another row.
    [] where its rows are not kept (or read in part), a row has no text cell, or more than
    MAX_HOLDING rows hold it."""
    if not facts.cells or facts.cut or col.kind != "numbers":
        return []
    found = [(v, r) for r in facts.cells if (v := _value(r, col)) is not None]
    if not found:
        return []
    best = (max if what == "largest" else min)(v for v, _ in found)
    rows = [r for v, r in found if v == best]
    texts = [c for c in facts.columns if c.kind == "text"][:2]
    names = [", ".join(t for t in (_line(r[c.at]) for c in texts if c.at < len(r)) if t) for r in rows]
    return names if len(names) <= MAX_HOLDING and all(names) else []


# what is owed ("how much do customers owe?", "borç toplamı", "toplam borcu", "total outstanding", "total
# due"): the unpaid rows' amount (``_debt``), where the word names no column of the table (an "Amount due"'s
# own total: ``_owed``)
_OWED = re.compile(r"\b(?:owe[sd]?|owing|debts?|outstanding|due)\b|\bbor[çc]\w*", re.IGNORECASE)
_HOW_MUCH = re.compile(r"\bhow\s+much\b|\bne\s+kadar\b", re.IGNORECASE)  # (what is owed, asked without "total")


def _owed(plain: str, facts: SheetFacts) -> re.Match[str] | None:
    """Where ``plain`` asks what is owed (``_OWED``): by a word that names no column of numbers of ``facts``
    (a column "Due date" says no amount: "total due" is still the unpaid rows'), or one that does where
    a column says paid and unpaid (``_debt``: "total due" of "Amount due" beside a Status of paid/unpaid
    is its unpaid rows', not also the paid ones' it added up)."""
    owed = _OWED.search(plain)
    if owed is None or any(_word_of(_folded(owed.group(0)), w) for c in facts.columns if c.kind == "numbers"
                           for w in _name_words(c.name)) and _debt(facts) is None:
        return None
    return owed


def _debt(facts: SheetFacts) -> tuple[ColumnFacts, dict[int, set[str]]] | None:
    """The amount column and the unpaid rows' state (``_condition``'s values of "unpaid" in either
    language) that say what a table's rows owe: where one text column says paid and unpaid and one
    column of numbers is an amount's (``_AMOUNT_NAME``); else None (Kira | Aidat: which is owed?)."""
    unpaid, doubt_unpaid, _ = _condition("unpaid", facts)
    paid, doubt_paid, _ = _condition("paid", facts)
    numbers = [c for c in facts.columns if c.kind == "numbers" and not c.rate and not _QUANTITY_NAME.search(c.name)]
    # the amount's column, whatever it is called: the one named an amount, else the one named what is owed
    # ("Balance due", "Outstanding", "Borç"; "Amount due" beside "Amount"), else the one column of numbers
    # ("Kira" beside its Durum)
    amounts = [c for c in numbers if _AMOUNT_NAME.search(c.name)]
    if len(amounts) != 1:
        amounts = [c for c in numbers if _OWED.search(c.name)] or amounts or numbers
    if doubt_unpaid or doubt_paid or len(unpaid) != 1 or unpaid.keys() != paid.keys() or len(amounts) != 1:
        return None
    return amounts[0], unpaid


_HOW_MANY = re.compile(r"\b(?:how\s+many|kaç)\s+(?:(?:different|distinct|farklı)\s+)?([^\W\d_]+)")  # what a count counts


def _things_asked(plain: str, facts: SheetFacts, col: ColumnFacts | None = None) -> list[dict[str, Any]]:
    """A count asked of a text column's things ("how many customers?", "kaç müşteri var?" of a column
    Customer): its different values, named where few ("Customer: 3 different values (ACME Ltd,
    Bilge Co, Ceren AS)"), not the rows (5 invoices of 3 customers: "5 rows" was read as 5
    customers). [] where no such column is named, or it holds a value per row (an Invoice
    column's: its rows are its things). ``col``: the column, where known (``_total_thing``)."""
    col = col or _thing_asked(plain, facts)
    if col is None:
        return []
    values = list(dict.fromkeys(v for v in (_line(r[col.at]) if col.at < len(r) else "" for r in facts.cells) if v))
    listed = values if len(values) == col.distinct <= MAX_LISTED else []
    return [{"what": "distinct", "title": facts.title, "name": col.name, "letter": col.letter,
             "rows": _n(col.distinct), "listed": listed}]


def _thing_asked(plain: str, facts: SheetFacts) -> ColumnFacts | None:
    """The text column whose things a count asks for (``_things_asked``): the one ``plain`` names by
    a word of its name, where it holds a value more than once; else None. Of two named, the one the
    word after "how many"/"kaç" names (``_HOW_MANY``): "kaç müşterinin faturası ödenmedi?" (whose
    invoices: the customers) and "how many customers have unpaid invoices?" count customers, not
    the invoices' rows."""
    texts = [c for c in facts.columns if c.kind == "text"]
    named = {id(c): c for _, c in _named_by_word(plain, texts)}
    counted = _HOW_MANY.search(_folded(plain)) if len(named) > 1 else None
    if counted is not None:
        named = {id(c): c for _, c in _named_by_word(counted.group(1), texts)}
    if len(named) != 1:
        return None
    col = next(iter(named.values()))
    return col if col.distinct < col.filled else None


def _total_thing(plain: str, facts: SheetFacts, named: list[ColumnFacts]) -> ColumnFacts | None:
    """The text column a "total" asks the count of, by the word right after it ("toplam kiracı", "total
    tenants": how many tenants, not the rent's total), where no column of numbers is named (``named``)
    and the word names one text column whose values repeat (``_thing_asked``); else None."""
    after = re.search(rf"(?:{dict(_ASKED)['total'].pattern})\w*\s+([^\W\d_]+)", plain, re.IGNORECASE)
    return None if named or after is None else _thing_asked(after.group(1), facts)


def _thing_word(question: str, thing: ColumnFacts, n: int) -> str:
    """The word a count of ``thing``'s values says them by, as the question says it after "how many"/"kaç"
    (``_HOW_MANY``: "2 customers", "2 farklı müşteri"), one of them by its column's word ("1 customer");
    the word of its column's name it is a form of ("müşteri" of "kaç müşterinin faturası"); '' where it
    says none (the column's name says them)."""
    counted = _HOW_MANY.search(_folded(question))
    word = counted.group(1) if counted else ""
    stem = next((w for w in sorted(_name_words(thing.name), key=len, reverse=True) if _word_of(word, w)), "")
    many = re.fullmatch(r"e?s|ies", word[len(stem):] if word.startswith(stem) else word[len(stem) - 1:])
    return word if stem and many and n != 1 else stem


# a figure asked for each value of a text column ("how many invoices does each customer have?", "her
# müşterinin toplam tutarı", "Hangi müşterinin kaç faturası var?", "müşteri başına toplam"): the word
# after each/per/her/hangi/which or before başına/bazında names the column
# (and which has the most or least: "which customer owes the most?", "en çok ciro hangi müşteriden?",
# "en çok borcu olan müşteri": ``_RANK``)
_PER = re.compile(r"\b(?:each|every|per|her)\s+([^\W\d_]+)|([^\W\d_]+)\s+(?:başına|bazında)\b|"
                  r"\b(?:hangi|which)\s+([^\W\d_]+)(?=.*(?:\bkaç\b|\bhow\s+(?:many|much)\b|\bne\s+kadar\b|"
                  r"\btoplam|\btotal\b|\bmost\b|\bleast\b|\bfewest\b|\ben\s+(?:çok|fazla|az)\b))|\bby\s+([^\W\d_]+)|"
                  r"\ben\s+(?:çok|fazla|az)\b[^?.!]*?\bhangi\s+([^\W\d_]+)|"
                  r"\ben\s+(?:çok|fazla|az)\s+(?:[^\W\d_]+\s+){0,2}?olan\s+([^\W\d_]+)", re.IGNORECASE)
# the order a figure per value is asked in: the most first ("which customer owes the most?", "en çok"),
# or the least first ("the least", "en az")
_RANK = re.compile(r"\b(?P<most>most|largest|highest|biggest)\b|\ben\s+(?P<en_most>çok|fazla|büyük|yüksek)\b|"
                   r"\b(?:least|fewest|smallest|lowest)\b|\ben\s+(?:az|küçük|düşük)\b", re.IGNORECASE)
MAX_PER = 10  # values named by a count per value; the rest said as "and N more"


def _ranked(plain: str, asked: list[str]) -> tuple[str, list[str]]:
    """The order a figure per value is asked in (``_RANK``: "most", "least"; '' where none is said),
    and what is asked of each value in it: their rows where it counts ("how many", "the most
    invoices", "en çok fatura"), else their total ("which customer bought the most?")."""
    rank = _RANK.search(plain)
    if rank is None:
        return "", asked
    after = re.findall(r"[^\W\d_]+", _folded(plain[rank.end():]))[:1]
    rows = "rows" in asked or any(w.startswith(_ROW_NOUNS) for w in after)
    return ("most" if rank.group("most") or rank.group("en_most") else "least"), ["rows"] if rows else ["total"]


def _per_asked(plain: str, facts: SheetFacts) -> tuple[ColumnFacts | bool, str]:
    """The text column a figure is asked for each value of (``_PER``), where a word after each/per/her
    names one whose values repeat; True where it names a thing the program does not know or cannot
    count by ("each supplier" of a table without one, "her ay": counted nothing, not all rows' figure);
    False where it asks no such figure ("each column", "which invoices", "by date"); and ``plain`` with
    the words that ask it blanked ("başına", "her": no condition on the rows)."""
    texts = [c for c in facts.columns if c.kind == "text"]
    for m in _PER.finditer(plain):
        word = _folded(next(g for g in m.groups() if g))
        naming = list({id(c): c for _, c in _named_by_word(word, texts)}.values())
        if len(naming) == 1 and naming[0].distinct < naming[0].filled:
            return naming[0], plain[:m.start()] + " " * (m.end() - m.start()) + plain[m.end():]
        if m.group(4) or word.startswith(_ROW_NOUNS) or re.match(r"column|sütun|tablo|table|one|biri", word):
            continue  # ("by date", "each row", "which invoices": no value's figure)
        if naming or word in _COUNTED_THINGS or word in _unknown_words(word, facts):
            return True, plain
    return False, plain


def _counted_per(facts: SheetFacts, by: ColumnFacts, asked: list[str], named: list[ColumnFacts],
                 question: str, owing: dict[int, set[str]] | None = None, rank: str = "") -> list[dict[str, Any]]:
    """A figure for each value of ``by`` (``_per_asked``) on ``facts.cells``: its rows where a count
    is asked, else the total of ``named`` (the amount's column a word of the question names, not the
    column named by the word "total" itself; else the amounts' columns, ``_money_first``); the
    values most first, up to ``MAX_PER`` ("Ege Tekstil 3, Karşıyaka Gıda 3, Bornova 2, and 3 more"),
    the least first where ``rank`` says "least" (``_ranked``). ``owing``: the unpaid rows' state
    (``_debt``), where what each owes is asked: those rows only ("Bob Carter owes the most: 1,630.00")."""
    def cell(row: list[str], at: int) -> str:
        return _line(row[at]) if at < len(row) else ""

    groups: dict[str, list[list[str]]] = {}
    for r in facts.cells:
        if cell(r, by.at) and all(_folded(cell(r, at)) in wanted for at, wanted in (owing or {}).items()):
            groups.setdefault(cell(r, by.at), []).append(r)
    head = {"what": "per", "title": facts.title, "name": by.name, "letter": by.letter, "rows": _n(len(groups))}
    head |= ({"rank": rank} if rank else {}) | ({"owed": True} if owing else {})
    order = 1 if rank == "least" else -1
    if "rows" in asked:
        counts = sorted(((v, len(rs)) for v, rs in groups.items()), key=lambda e: order * e[1])
        return [{**head, "of": "", "values": [[v, _n(k)] for v, k in counts[:MAX_PER]],
                 "more": _n(max(0, len(counts) - MAX_PER))}]
    if "total" not in asked:
        return []
    numbers = [c for c in facts.columns if c.kind == "numbers" and not c.rate]
    total_word = dict(_ASKED)["total"]
    columns = [c for c in named if not total_word.fullmatch(c.name.strip())] or [
        c for _, c in _named_by_word(question, numbers) if not total_word.fullmatch(c.name.strip())] or named \
        or _money_first(numbers, asked, question)
    items: list[dict[str, Any]] = []
    for col in list({id(c): c for c in columns}.values())[:MAX_COUNTED]:
        places = _places([v for r in facts.cells if (v := _value(r, col)) is not None])
        totals = sorted(((v, sum((x for r in rs if (x := _value(r, col)) is not None), Decimal(0)))
                         for v, rs in groups.items()), key=lambda e: order * e[1])
        items.append({**head, "of": col.name, "of_letter": col.letter,
                      "values": [[v, _figure(t, places)] for v, t in totals[:MAX_PER]],
                      "more": _n(max(0, len(totals) - MAX_PER))})
    return items


def _money_first(numbers: list[ColumnFacts], asked: list[str], question: str) -> list[ColumnFacts]:
    """The columns whose figures answer a question that names none: ``numbers``, less the
    quantities (Qty, Adet) where it asks for a total, says no quantity and an amount's column is
    there ("What is the total?" of Qty | Unit price | Amount: the amount's, not also "Qty total 15")."""
    money = [c for c in numbers if c.kind == "numbers" and not c.rate and _AMOUNT_NAME.search(c.name)
             and not _QUANTITY_NAME.search(c.name)]
    # ("how many did we sell in total?", "how many items?": a count, the quantities' total its answer; not
    # where it counts the rows by their name: "how many invoices are unpaid and what is their total?")
    counted = _HOW_MANY.search(_folded(question))
    things = re.findall(r"[^\W\d_]+", _folded(question)[counted.start(1):])[:2] if counted else []  # ("how many unpaid invoices")
    rows = any(w.startswith(_ROW_NOUNS) and not w.startswith("item") for w in things)
    if "total" not in asked or "rows" in asked and not rows or not money or _QUANTITY_NAME.search(question):
        return numbers
    return [c for c in numbers if not _QUANTITY_NAME.search(c.name)]


def _counted_where(facts: SheetFacts, values: dict[int, set[str]], thresholds: list[Threshold], asked: list[str],
                   named: list[ColumnFacts], years: dict[int, str] | None = None,
                   question: str = "", thing: ColumnFacts | None = None) -> list[dict[str, Any]]:
    """The rows of ``facts.cells`` that have one of ``values`` in each of their columns and meet
    each threshold, counted: how many, their first cells where few, and the figures ``asked`` of
    the columns ``named`` (else the thresholds', else each column of numbers), each read as its
    column is (``ColumnFacts.comma``: 1.200,50) and written as the facts write it."""
    by_at = {c.at: c for c in facts.columns}

    def cell(row: list[str], at: int) -> str:
        return _line(row[at]) if at < len(row) else ""

    def number(row: list[str], col: ColumnFacts) -> Decimal | None:
        kind, value = _read(cell(row, col.at), col.comma)
        return value if kind == col.kind and isinstance(value, Decimal) else None

    def meets(row: list[str]) -> bool:
        return all(_folded(cell(row, at)) in wanted for at, wanted in values.items()) and all(
            (v := number(row, t.column)) is not None and t.holds(v) for t in thresholds) and all(
            (day := _date(cell(row, at)) or "").startswith(year) or "/" in year and year[:10] <= day <= year[11:]
            for at, year in (years or {}).items())

    rows = [r for r in facts.cells if meets(r)]
    conditions: list[dict[str, Any]] = []
    for at, wanted in values.items():
        written: dict[str, str] = {}  # (each as its first row writes it, in the table's order)
        for r in facts.cells:
            if _folded(cell(r, at)) in wanted:
                written.setdefault(_folded(cell(r, at)), cell(r, at))
        conditions.append({"name": by_at[at].name, "letter": by_at[at].letter, "is": list(written.values())})
    for at, year in (years or {}).items():
        if "/" in year:  # (a month, quarter, half: its first and last day)
            conditions.append({"name": by_at[at].name, "letter": by_at[at].letter, "from": year[:10], "to": year[11:]})
            continue
        conditions.append({"name": by_at[at].name, "letter": by_at[at].letter, "year": year})
    for t in thresholds:
        unit = "%" if t.column.kind == "percents" else ""
        conditions.append({"name": t.column.name, "letter": t.column.letter, "op": t.op, "a": _figure(t.a) + unit,
                           "b": _figure(t.b) + unit if t.op == "between" else ""})
    first = facts.columns[0].at if facts.columns else 0
    listed = [c for c in (cell(r, first) for r in rows) if c] if len(rows) <= MAX_LISTED else []
    said = {"what": "where", "title": facts.title, "conditions": conditions, "rows": _n(len(rows)), "listed": listed}
    if thing is not None:  # (a count of a text column's things: its different values in those rows)
        things = list(dict.fromkeys(v for v in (cell(r, thing.at) for r in rows) if v))
        return [{**said, "name": thing.name, "letter": thing.letter, "rows": _n(len(things)), "distinct": True,
                 "word": _thing_word(question, thing, len(things)),
                 "listed": things if len(things) <= MAX_LISTED else [], "figures": []}]
    items: list[dict[str, Any]] = []
    columns = named or list({id(t.column): t.column for t in thresholds}.values()) \
        or _money_first([c for c in facts.columns if c.kind in ("numbers", "percents")], asked, question)
    for col in columns:
        found = [v for v in (number(r, col) for r in rows) if v is not None]
        if not found:
            continue
        places = _places([v for v in (number(r, col) for r in facts.cells) if v is not None])
        figures = dict(zip(("total", "smallest", "largest", "average"), _figures(found, col.kind, places), strict=True))
        if col.rate:  # (prices and rates added up: no total)
            figures["total"] = ""
        wanted = [{"what": what, "figure": figures[what]} for what in asked if figures.get(what)]
        if wanted:
            items.append({**said, "name": col.name, "letter": col.letter, "figures": wanted})
    return items or [{**said, "name": "", "letter": "", "figures": []}]


def _owing(item: dict[str, Any], facts: SheetFacts, debt: tuple[ColumnFacts, dict[int, set[str]]]) -> dict[str, Any]:
    """A count of the unpaid rows of what is owed (``_counted_where``'s ``item``), marked where there
    are none (``where_phrase``: "ACME Ltd owes nothing (no unpaid rows)", not "0 rows where Customer
    is ACME Ltd and Status is unpaid"): ``debtor`` the one value named besides the unpaid state. As it
    is where rows were found, or another condition was set (a threshold, a month: "0 rows" says which)."""
    states = {c.name for c in facts.columns if c.at in debt[1]}
    others = [c for c in item.get("conditions") or [] if c.get("name") not in states]
    if item.get("rows") != "0" or len(others) != 1 or len(others[0].get("is") or []) != 1:
        return item
    return {**item, "debtor": others[0]["is"][0]}


# a word of a question, with a Turkish case ending after it ("Ankara'dan", "Martta", "İzmir'deki")
_WORD = re.compile(r"(\w[\w&./-]*)(?:['’](?:d|t|n|y)?\w*)?")


def _folded(text: str) -> str:
    """``text`` casefolded, İ as i ("İzmir" casefolds to i and a combining dot, no word's letter)."""
    return text.casefold().replace("\u0307", "")


def _condition(question: str, facts: SheetFacts) -> tuple[dict[int, set[str]], bool, frozenset[str]]:
    """The values of the table's text a question (casefolded) names ("total revenue for March",
    "how many customers are from Ankara?", "Ankara'dan kaç müşteri var?"), by their column's
    place (``ColumnFacts.at``; its values casefolded: "march"), and whether it names one the
    program cannot apply: one of two columns, or said not to be wanted ("not paid", "Ankara
    hariç"). Its columns' names are not values (a column "Region" and a value "Region" of another:
    not); the longest name first ("New York", not "York")."""
    columns = [c for c in facts.columns if c.kind == "text" and c.values]
    if not columns:
        return {}, False, frozenset()
    names = {_folded(c.name) for c in facts.columns}
    matched = list(_WORD.finditer(question))
    written = [m.group(1).rstrip("./-") for m in matched]
    addressed = set(_addressed(question))  # (a name said to a person: no value's first word)
    words = [_folded(w) for w in written]
    found: dict[int, set[str]] = {}
    doubt = False
    taken: set[int] = set()
    forms: dict[tuple[str, bool], list[tuple[ColumnFacts, str]]] | None = None  # (made once, where asked)
    verbs: set[str] = set()  # the question's words that are another form of a value
    for n in (3, 2, 1):
        for i in range(len(words) - n + 1):
            said = " ".join(words[i:i + n])
            if taken.intersection(range(i, i + n)) or said in names:
                continue
            # Turkish endings written without an apostrophe: "ankarada", "martta", "izmirden"
            stem = re.sub(r"(?:d|t)(?:a|e)(?:n|ki)?$", "", said)
            value = said if any(said in c.values for c in columns) else \
                stem if stem != said and len(stem) >= 3 and stem not in names else ""
            holding = [c for c in columns if value and value in c.values]
            alike: set[str] = set()
            if not holding and n == 1 and (form := _verb_form(said)) is not None:
                # another form of a one-word value's verb ("ödenmemiş" of "ödenmedi"): its values
                if forms is None:
                    forms = {}
                    for c in columns:
                        for v in c.values:
                            if (f := _verb_form(v)) is not None:
                                forms.setdefault(f, []).append((c, v))
                holding = list({id(c): c for c, _ in forms.get(form, [])}.values())
                alike = {v for _, v in forms.get(form, [])}
                value = said
            if not holding and n == 1 and (others := _other_language(said)):
                # a state said in the table's other language ("unpaid" of cells that say "ödenmedi")
                formed = {f for o in others if (f := _verb_form(o)) is not None}
                matching = [(c, v) for c in columns for v in c.values if v in others or _verb_form(v) in formed]
                holding = list({id(c): c for c, _ in matching}.values())
                alike, value = {v for _, v in matching}, said
            if not holding:
                continue
            taken.update(range(i, i + n))
            if alike:
                verbs.add(said)
            if len(holding) > 1 or i and words[i - 1] in _NOT_BEFORE or words[i + n:i + n + 1] and \
                    words[i + n] in _NOT_AFTER:
                doubt = True
            else:
                found.setdefault(holding[0].at, set()).update(alike or {value})
    # a value said by its first words, by a name written with a capital ("invoices from Ankara", "Ankara'dan"
    # where the cells say "Ankara Ltd"): that value's rows, where only it (or it written two ways:
    # "Ankara Ltd", "Ankara Ltd.") begins so in one column; else a place the program cannot tell
    said: set[str] = set()
    # each value by its first words ("ankara" and "ankara ltd" of "ankara ltd co"), made once: each
    # word of a long question looked through every cell took seconds on a table of 5,000 rows
    beginning: dict[str, list[tuple[ColumnFacts, str]]] | None = None
    for n in (3, 2, 1):
        for i in range(len(words) - n + 1):
            phrase = " ".join(words[i:i + n])
            if taken.intersection(range(i, i + n)) or phrase in names or phrase in _PLAIN_BEFORE or len(phrase) < 3:
                continue
            capital = written[i][:1].isupper()
            if not capital and (n > 1 or phrase in _COUNTED_THINGS or any(r.search(phrase) for _, r in _ASKED)
                                or _WHICH.search(phrase)):
                continue
            if beginning is None:
                beginning = {}
                for c in columns:
                    for v in c.values:
                        parts = v.split(" ")
                        for k in range(1, len(parts)):
                            beginning.setdefault(" ".join(parts[:k]), []).append((c, v))
            starting = beginning.get(phrase, [])
            if not starting or n == 1 and matched[i].span(1) in addressed:
                continue
            taken.update(range(i, i + n))
            said.add(phrase)
            # written in lower case ("from ankara" of "Ankara Ltd"): maybe the value, maybe a word
            # ("new" of "New York"); its rows are not counted, nor all rows as if none were named
            # (all rows' 300.00 was said of "invoices from ankara", Ankara Ltd's being 100.00)
            if not capital or len({c.at for c, _ in starting}) > 1 or len({" ".join(re.findall(r"\w+", v)) for _, v in starting}) > 1 \
                    or i and words[i - 1] in _NOT_BEFORE or words[i + n:i + n + 1] and words[i + n] in _NOT_AFTER:
                doubt = True
            else:
                found.setdefault(starting[0][0].at, set()).update(v for _, v in starting)
    return found, doubt, frozenset(said | verbs)


# a Turkish verb's form, as a status cell and a question say it: its stem, then "not" (me/ma),
# then its tense or participle (di/tı, miş, en/yen), then plural and case endings (ler, in, e, den):
# "ödendi", "ödenmiş", "ödenen", "ödenmedi", "ödenmemişlerin", "ödenmeyen" are one verb, "öden"
_VERB_FORM = re.compile(r"(?P<stem>\w{3,}?)(?P<not>m[ae])?(?:d[ıiuü]|t[ıiuü]|m[ıiuü]ş|y?[ae]n)"
                        r"(?:l[ae]r)?(?:n?[ıiuü]n|[ıiuü]|y?[ae]|[dt][ae]n?)?")


def _verb_form(word: str) -> tuple[str, bool] | None:
    """A Turkish word's verb stem and whether it says "not" (``_VERB_FORM``: "ödenmemiş" and
    "ödenmedi" are ("öden", True), "ödenen" ("öden", False)); None for a word of no such form. A
    question's word matches a one-word value of the same stem and the same "not" only: "ödenmemiş
    kiralar" are the rows that say "ödenmedi", never those that say "ödendi"."""
    m = _VERB_FORM.fullmatch(word)
    return (m["stem"], bool(m["not"])) if m else None


_OPS = ("over", "under", "least", "most", "between")
# an amount asked for without its tax: "total without VAT", "excl. VAT", "KDV hariç toplam", "KDV'siz"
_EX_TAX = re.compile(r"\b(?:without|excluding|excl\.?|exclusive\s+of|ex\.?|before|net\s+of)\s+(?:the\s+)?"
                     r"(?:vat|tax|gst|kdv)\b|\b(?:vat|tax|gst|kdv)\s+(?:hariç|haricinde|harici|excluded)\b|"
                     r"\bkdv['’]?siz\w*", re.IGNORECASE)
# an amount asked for with its tax: "total with VAT", "incl. VAT", "KDV dahil toplam", "KDV'li"
_IN_TAX = re.compile(r"\b(?:with|including|incl\.?|inclusive\s+of|plus)\s+(?:the\s+)?(?:vat|tax|gst|kdv)\b|"
                     r"\b(?:vat|tax|gst|kdv)['’]?\s*(?:dahil|included|inclusive)\b|\bkdv['’]?l[iı]\b", re.IGNORECASE)
_NET_NAME = re.compile(r"\bnet\b|\bsubtotal\b|\bara\s+toplam|\bmatrah", re.IGNORECASE)
_GROSS_NAME = re.compile(r"\b(?:total|gross|amount|toplam|brüt|tutar)\w*", re.IGNORECASE)
_TAX_NAME = re.compile(r"\b(?:vat|tax|gst|kdv)\b", re.IGNORECASE)


def _net_asked(plain: str, facts: SheetFacts) -> tuple[ColumnFacts, ColumnFacts, bool] | None:
    """The column of amounts without tax and the tax's column, where ``plain`` asks for an amount
    without its tax ("total without VAT", "KDV hariç toplam") and ``facts`` splits each row's
    amount so: one column named net (Net, Subtotal, Ara toplam), one of the tax (VAT, KDV), one of
    the amount with it (Total, Gross, Brüt); elsewhere None (the negation: nothing counted). Asked
    with its tax ("total with VAT", "KDV dahil": ``_IN_TAX``), the gross column instead; True with
    it: "with VAT" said the VAT column's total beside the Total's."""
    with_tax = _IN_TAX.search(plain) is not None
    if not with_tax and not _EX_TAX.search(plain):
        return None
    numbers = [c for c in facts.columns if c.kind == "numbers" and not c.rate]
    taxes = [c for c in numbers if _TAX_NAME.search(c.name)]
    nets = [c for c in numbers if _NET_NAME.search(c.name) and c not in taxes]
    gross = [c for c in numbers if _GROSS_NAME.search(c.name) and c not in taxes and c not in nets]
    if len(taxes) == 1 and not nets and len(gross) == 2:  # (Tutar | KDV | Toplam: the net is the one its tax makes the other)
        nets, gross = _net_by_sum(facts, gross, taxes[0])
    if len(taxes) != 1 or len(nets) != 1 or len(gross) != 1:
        return None
    return (gross[0] if with_tax else nets[0]), taxes[0], with_tax


def _net_by_sum(facts: SheetFacts, two: list[ColumnFacts], tax: ColumnFacts) -> tuple[list[ColumnFacts], list[ColumnFacts]]:
    """Of two amounts' columns beside a tax's ("Tutar (TL) | KDV | Toplam"), the one without the tax and
    the one with it: where in every row of the three (two at least) the first and the tax make the
    second; else ([], both) (which holds the tax, not told)."""
    for net, gross in (two, two[::-1]):
        full = [(a, t, g) for r in facts.cells if (a := _value(r, net)) is not None
                and (t := _value(r, tax)) is not None and (g := _value(r, gross)) is not None]
        if len(full) >= 2 and all(a + t == g for a, t, g in full):
            return [net], [gross]
    return [], two
# a year said alone ("total for 2025", "2025 toplamı", "2025'te"), not a day's nor a figure's part
_YEAR_SAID = re.compile(r"(?<![\w.,/-])((?:19|20)\d{2})(?![\d.,/-]*\d)(?!-)")


# a month named, in English or Turkish, with its case ending or "ayı/ayında" after it ("Mart'ta",
# "martta", "Mart ayında", "in March"; "May" only after "in": it is a verb too)
_MONTH_NAMES = ("january february march april may june july august september october november december",
                "ocak şubat mart nisan mayıs haziran temmuz ağustos eylül ekim kasım aralık")
_MONTH_NUMBER = {name: i for names in _MONTH_NAMES for i, name in enumerate(names.split(), 1)}
_MONTH_SAID = re.compile(r"(?<!\w)(?P<month>" + "|".join(n for n in _MONTH_NUMBER if n != "may") + r"|(?<=\bin\s)may)"
                         r"(?:['’]?(?:[dt][ae](?:n|ki)?|n?[ıi]n|y[ıi]|[ıi]))?(?!\w)(?:\s+ay(?:[ıi](?:n(?:da|daki|[ıi]n|a)?)?)?\b)?",
                         re.IGNORECASE)


_FIRM_AFTER = re.compile(r"\s+(?:ltd|limited|inc|co|corp|gmbh|a\.?ş|şti|ltd\.?\s*şti)\b\.?", re.IGNORECASE)


def _a_month(found: re.Match[str], plain: str, cells: set[str]) -> bool:
    """Whether a month word of a question (``_MONTH_SAID``) is the month, not part of a name a cell
    holds ("Kasım Yılmaz kaç fatura almış?": Kasım is a first name, and November's 0 rows were
    said), a firm's ("March Ltd"), or "aralık" as "range" ("100 ile 300 aralıkta": December's
    rows): "aralık" is December with its apostrophe, "ayı" or a year after it (review29)."""
    month, said, after = _folded(found.group("month")), found.group(0), plain[found.end():]
    if re.search(r"\say", said, re.IGNORECASE):  # ("Kasım ayında": the month, a name's or not)
        return True
    named = {w for v in cells for w in _folded(v).split()}
    if month in named or _FIRM_AFTER.match(after):
        return False
    if month == "aralık" and not ("'" in said or "’" in said or re.search(r"\say", said, re.IGNORECASE)
                                  or re.match(r"\s+(?:19|20)\d{2}\b", after) or said.lower() == "aralık"):
        return False
    return True


def _without_named_months(plain: str, facts: SheetFacts) -> str:
    """``plain`` with each month said as one ("Kasım ayında", "Mart ayının") blanked, for the values
    matched in cells: a customer Kasım Yılmaz was taken for "Kasım ayında" too. Not a month a cell
    holds whole (a column Ay of "Mart": that value's rows, ``_condition``'s)."""
    cells = {_folded(v) for c in facts.columns if c.kind == "text" for v in c.values}

    def blank(m: re.Match[str]) -> str:
        month = _folded(m.group("month"))
        return " " * len(m.group(0)) if re.search(r"\say", m.group(0), re.IGNORECASE) and month not in cells \
            else m.group(0)

    return _MONTH_SAID.sub(blank, plain)


# a part of a year named ("Q1", "H2", "first quarter", "1st half", "ilk çeyrek", "1. çeyrekte", "birinci
# yarısı", "son çeyrek"), or a year, quarter or month said from today ("this year", "last quarter", "bu yıl",
# "geçen çeyrek", "bu ayın"): ``_year`` applies each as the months it spans
_NTH = {"first": 1, "1st": 1, "ilk": 1, "birinci": 1, "1.": 1, "second": 2, "2nd": 2, "ikinci": 2, "2.": 2,
        "third": 3, "3rd": 3, "üçüncü": 3, "3.": 3, "fourth": 4, "4th": 4, "dördüncü": 4, "4.": 4, "son": 0}
_PERIOD_SAID = re.compile(
    r"(?<![\w.])(?P<short>[qh])(?P<n>[1-4])(?!\w)(?:['’]\w+)?"
    r"|(?<![\w.])(?P<nth>first|second|third|fourth|1st|2nd|3rd|4th|ilk|birinci|ikinci|üçüncü|dördüncü|son|[1-4]\.)"
    r"\s+(?P<part>quarter|half|çeyre[kğ]\w*|yarı\w*)"
    r"|(?<!\w)(?P<now>this|current|last|previous|bu|geçen)\s+(?P<of>year|quarter|month|yıl\w*|sene\w*|çeyre[kğ]\w*|"
    r"ay(?:[ıi]n(?:da)?|da(?:ki)?|ki)?(?!\w))(?:['’]s)?", re.IGNORECASE)


def _period(found: re.Match[str], today: datetime.date) -> tuple[int | None, int, int] | None:
    """The months a part of a year said (``_PERIOD_SAID``) spans, first and last, and its year where
    said from today (None: the year said, or the table's one); None where it names none (H3)."""
    if found.group("short"):
        n, short = int(found.group("n")), found.group("short").casefold()
        return None if short == "h" and n > 2 else (None, 3 * n - 2, 3 * n) if short == "q" else (None, 6 * n - 5, 6 * n)
    if found.group("nth"):
        n, half = _NTH[_folded(found.group("nth"))], found.group("part").casefold().startswith(("half", "yarı"))
        n = n or (2 if half else 4)  # ("son çeyrek": the year's last)
        return None if half and n > 2 else (None, 6 * n - 5, 6 * n) if half else (None, 3 * n - 2, 3 * n)
    now, of = _folded(found.group("now")), _folded(found.group("of"))
    back = now in ("last", "previous", "geçen")
    if of.startswith(("year", "yıl", "sene")):
        return today.year - back, 1, 12
    if of.startswith(("quarter", "çeyre")):
        quarter = (today.year * 4 + (today.month - 1) // 3) - back
        return quarter // 4, quarter % 4 * 3 + 1, quarter % 4 * 3 + 3
    month = today.year * 12 + today.month - 1 - back
    return month // 12, month % 12 + 1, month % 12 + 1


def _days(year: int | str, first: int, last: int) -> str:
    """Months ``first`` to ``last`` of ``year`` as their first and last day: "2025-01-01/2025-03-31"."""
    return f"{year}-{first:02d}-01/{year}-{last:02d}-{calendar.monthrange(int(year), last)[1]:02d}"


def _year(plain: str, facts: SheetFacts,
          today: datetime.date | None = None) -> tuple[dict[int, str], bool, frozenset[str]]:
    """The year a question says alone ("total for 2025", "2025 toplamı") as a condition on
    ``facts``' one column of dates (its rows of that year, their days read by ``_date``), or a month
    ("in March", "Mart'ta"), quarter ("Q1", "ilk çeyrek"), half ("H1", "ilk yarı") of it, or of the
    column's one year where none is said ("2025-01-01/2025-03-31": its first and last day), or one
    said from ``today`` (the computer's date: "this year", "last quarter", "geçen çeyrek"); whether
    it is one the program cannot apply (no column of dates, two of them, two years or periods, a
    month or quarter of a column of two years with none said: nothing, not all rows), and the words
    said. A column named by the year ("Region | 2024 | 2025") or a sheet's name that says it
    ("Sales 2025") is no condition; nor one said with before or after (``_unapplied`` has those)."""
    # (a month or quarter a text column's cells say, "Mart" of a column Ay, "Q1" of Quarter: that value's rows, ``_condition``'s)
    cells = {v for c in facts.columns if c.kind == "text" for v in c.values}
    # (and one a column's name or the sheet's says, "Region | Q1 | Q2", "Sales Q1": that column's figures, not a condition)
    folded = {_folded(v) for v in cells} | {w for c in facts.columns for w in _folded(c.name).split()} \
        | set(_folded(facts.title).replace("_", " ").split())
    periods = [m for m in _PERIOD_SAID.finditer(plain) if _folded(m.group(0)) not in folded
               and not (m.group("short") and _folded(m.group("short") + m.group("n")) in folded)]
    spans = {m.span() for m in periods}
    blanked = _PERIOD_SAID.sub(lambda m: " " * len(m.group(0)) if m.span() in spans else m.group(0), plain)
    said = {m.group(1) for m in _YEAR_SAID.finditer(plain)}
    said -= {c.name.strip() for c in facts.columns} | set(re.findall(r"\d{4}", facts.title))
    months = {_MONTH_NUMBER[_folded(m.group("month"))]: m for m in _MONTH_SAID.finditer(plain)
              if _folded(m.group("month")) not in cells and _a_month(m, plain, cells)}
    if not said and not months and not periods or _WHEN.search(blanked):  # ("since Q1", "Q1'den sonra": not applied)
        return {}, bool(periods) and bool(_WHEN.search(blanked)), frozenset()
    words = frozenset(said | {_folded(w) for m in [*months.values(), *periods] for w in m.group(0).split()})
    dates = [c for c in facts.columns if c.kind == "dates"]
    if len(said) > 1 or len(months) + len(periods) > 1 or len(dates) != 1:
        return {}, True, words
    if not months and not periods:
        return {dates[0].at: next(iter(said))}, False, words
    span = (None, next(iter(months)), next(iter(months))) if months else _period(periods[0], today or datetime.date.today())
    if span is None:
        return {}, True, words
    if span[0] is not None:  # (from today: "this year", "geçen çeyrek"; the last quarter of a year said is its Q4)
        if periods[0].group("now") and _folded(periods[0].group("now")) == "last" and said \
                and _folded(periods[0].group("of")) == "quarter":
            return {dates[0].at: _days(next(iter(said)), 10, 12)}, False, words
        if said:
            return {}, True, words
        return {dates[0].at: str(span[0]) if (span[1], span[2]) == (1, 12) else _days(span[0], span[1], span[2])}, False, words
    # a month, quarter or half ("Mart'ta", "in Q1"): of the year said, else of the column's one year (of two: not told)
    years = {d[:4] for r in facts.cells if (d := _date(r[dates[0].at] if dates[0].at < len(r) else ""))}
    year = next(iter(said)) if said else next(iter(years)) if len(years) == 1 else ""
    return ({dates[0].at: _days(year, span[1], span[2])}, False, words) if year else ({}, True, words)


def _plain_name(name: str, letter: str) -> Phrase | str:
    """A column in a condition: by its name ("Status"), "column B" where it has none but its letter."""
    return ("facts.letter", {"letter": letter}) if letter and name == letter else name


def where_phrase(item: dict[str, Any]) -> Phrase:
    """A count of the rows a question named (``_counted_where``'s item) as a phrase: "Amount where
    Status is unpaid and Amount over 1,000: 2 rows (INV-102, INV-104), total 5,580.50"."""
    conditions: list[Phrase] = []
    for c in item.get("conditions") or []:
        if not isinstance(c, dict):
            continue
        if conditions:
            conditions.append(("facts.where_and", {}))
        name = _plain_name(str(c.get("name", "")), str(c.get("letter", "")))
        if isinstance(c.get("is"), list) and c["is"]:
            more: list[Phrase] = [("facts.or_value", {"text": str(v)}) for v in c["is"][1:]]
            conditions.append(("facts.where_is", {"name": name, "text": str(c["is"][0]), "more": more}))
        elif c.get("from") and c.get("to"):
            conditions.append(("facts.where_days", {"name": name, "a": str(c["from"]), "b": str(c["to"])}))
        elif c.get("year"):
            conditions.append(("facts.where_year", {"name": name, "text": str(c["year"])}))
        elif c.get("op") in _OPS:
            conditions.append((f"facts.where_{c['op']}", {"name": name, "a": str(c.get("a", "")),
                                                          "b": str(c.get("b", ""))}))
    listed = item.get("listed") or []
    shown = f" ({', '.join(map(str, listed))})" if listed else ""  # (the first cells, as the table writes them)
    figures: list[Phrase] = [p for f in item.get("figures") or [] if isinstance(f, dict) and f.get("what") in _FIGURES
                             for p in (("facts.and", {}), (f"facts.figure_{f['what']}", {"figure": str(f.get("figure", ""))}))]
    rows = str(item.get("rows", ""))
    if item.get("debtor") and rows == "0":  # ("how much does Ceren AS owe?" with no unpaid rows of it: ``_owing``)
        return ("facts.owes_nothing", {"name": str(item["debtor"])})
    if item.get("distinct") and item.get("word"):  # ("how many customers are unpaid?": "2 customers where …")
        return ("facts.counted_where_things", {"word": str(item["word"]), "n": rows, "conditions": conditions,
                                               "names": shown})
    if item.get("distinct") and item.get("name"):  # (a reply's record kept before its word was)
        return ("facts.counted_where_distinct", {"name": _plain_name(str(item["name"]), str(item.get("letter", ""))),
                                                 "n": rows, "conditions": conditions, "names": shown})
    if not item.get("name"):
        return ("facts.counted_where_rows", {"n": rows, "conditions": conditions, "names": shown})
    return ("facts.counted_where", {"name": _plain_name(str(item["name"]), str(item.get("letter", ""))), "n": rows,
                                    "conditions": conditions, "names": shown, "figures": figures})


_FIGURES = ("total", "average", "largest", "smallest")
# a pasted table's arithmetic checked (``pasted_tables.arithmetic_checks``): each kind's values
_CHECKS = {"row_check": ("name", "a", "b", "figure", "said"), "sum_check": ("label", "figure", "said"),
           "tax_check": ("label", "rate", "of", "figure", "said"), "due_check": ("label", "figure", "said")}


def question_lines(facts: SheetFacts, items: list[dict[str, Any]]) -> list[str]:
    """The counts of ``items`` on the rows of ``facts``' table a question named, and its figures for
    each value of a column ("Hangi müşterinin kaç faturası var?": ``_counted_per``), as lines for the
    model beside the facts (``summary_chunks.with_counted``), in the words shown under the reply
    (``_said_items``): English, its figures as the table writes them (``as_written``). The figures
    of all rows are the facts' own already."""
    return [say([("facts.for_question", {"item": _said_items([item])})], as_written(facts))
            for item in items if item.get("what") in ("where", "per") and item.get("title") == facts.title]


def counted_phrases(items: list[dict[str, Any]]) -> list[Phrase]:
    """``counted_answer``'s figures as a sentence, saying what was counted: "Counted by the program:
    Revenue (column B), all 3 rows: total 7,855, largest 4,154.5" (a reply's record kept before
    the rows were said: "Revenue (column B) total 7,855"); a count of the rows a question named
    (``where_phrase``) set apart by a semicolon. Of two tables or more, each table's under its
    name ("the table in your message: B, all 3 rows: total 6; table 2 in your message: …"): said
    together, two tables' columns "B" read as one column with two totals."""
    said: list[Phrase] = []
    for _, phrases in counted_by_table(items):
        if said:
            said.append(("facts.then", {}))
        said += phrases
    return [("facts.counted", {"items": said})] if said else []


def counted_by_table(items: list[dict[str, Any]]) -> list[tuple[str, list[Phrase]]]:
    """``counted_phrases``' sentence of each table's ``items``, by its title, in the order they come
    (one table's alone, without its title; of two or more, each under its name): said a table at a
    time, each table's figures are written as it writes them (``pasted_tables.for_the_model``)."""
    groups: dict[str, list[dict[str, Any]]] = {}  # (by table, in the order they come: a reply's old record has no titles)
    for item in items:
        groups.setdefault(str(item.get("title") or ""), []).append(item)
    if len(groups) < 2:
        said = _said_items(items)
        return [(next(iter(groups), ""), said)] if said else []
    out: list[tuple[str, list[Phrase]]] = []
    for title, group in groups.items():
        phrases = _said_items(group)
        titled = not title or group[0].get("what") == "rows"  # (a count of its rows names it already)
        out.append((title, phrases if titled else [("facts.of_table", {"title": title_phrase(title), "items": phrases})]))
    return out


def _figure_said(item: dict[str, Any]) -> Phrase:
    """One counted figure of a column ("total 27,426.50"), with the rows that hold it where the
    question asked which ("largest 12,400.00 (F-104, Yıldız Ltd)": ``_rows_holding``)."""
    held = [str(r) for r in item.get("of") or []]
    if held:
        return f"facts.figure_{item.get('what')}_of", {"figure": item.get("figure", ""), "row": "; ".join(held)}
    return f"facts.figure_{item.get('what')}", {"figure": item.get("figure", "")}


def _said_items(items: list[dict[str, Any]]) -> list[Phrase]:
    """``counted_phrases``' sentence of one table's ``items``."""
    said: list[Phrase] = []
    column: tuple[str, str, str] | None = None  # the column the figures said last are of
    apart = False  # the last said was a count of named rows
    for item in items:
        what, rows = item.get("what"), item.get("rows", "")
        of = (item.get("name", ""), item.get("letter", ""), rows)
        if what != "where" and said and of == column and what != "rows":  # (another figure of the same column: its name once)
            figures = said[-1][1]["figures"]
            figures += [("facts.and", {}), _figure_said(item)]
            continue
        if said:
            said.append(("facts.then" if apart or what == "where" or what in _CHECKS else "facts.and", {}))
        column, apart = None, what == "where"
        if what == "where":
            said.append(where_phrase(item))
            continue
        if what in _CHECKS:  # (a pasted table's arithmetic: ``pasted_tables.arithmetic_checks``)
            apart = True
            said.append((f"facts.{what}", {k: str(item.get(k, "")) for k in _CHECKS[what]}))
            continue
        if what == "product":  # (a table's quantities × prices added up: ``_product_total``)
            said.append(("facts.counted_product", {
                "a": column_phrase(ColumnFacts(of[0], "numbers", 0, letter=of[1])),
                "b": column_phrase(ColumnFacts(str(item.get("name_b", "")), "numbers", 0, letter=str(item.get("letter_b", "")))),
                "rows": rows, "figure": item.get("figure", "")}))
            continue
        if what == "rows":
            said.append(("facts.counted_rows", {"title": title_phrase(item.get("title", "")), "rows": rows}))
            continue
        if what == "per":  # (a figure per value of a text column: ``_counted_per``)
            values = [p for i, (v, figure) in enumerate(item.get("values") or [])
                      for p in ([("facts.and", {})] if i else []) + [("facts.per_value", {"text": str(v), "figure": str(figure)})]]
            more: list[Phrase] = [("facts.per_more", {"n": str(item.get("more"))})] if str(item.get("more", "0")) != "0" else []
            by = column_phrase(ColumnFacts(of[0], "text", 0, letter=of[1]))
            rank = f"_{item['rank']}" if item.get("rank") in ("most", "least") else ""
            apart = True
            if item.get("owed") and item.get("of"):  # ("which customer owes the most?": who, and the others after)
                owing = item.get("values") or []
                then: list[Phrase] = [("facts.owes_then", {"values": values[2:]})] if len(owing) > 1 else []
                said.append((f"facts.owes{rank or '_most'}", {"name": str(owing[0][0]), "figure": str(owing[0][1]),
                                                             "then": then, "more": more}) if owing else ("facts.owes_none", {}))
                continue
            said.append((f"facts.counted_per_total{rank}", {"name": column_phrase(ColumnFacts(
                str(item["of"]), "numbers", 0, letter=str(item.get("of_letter", "")))), "by": by, "values": values, "more": more})
                if item.get("of") else (f"facts.counted_per_rows{rank}", {"by": by, "values": values, "more": more}))
            continue
        if what == "distinct":  # (a text column's different values: ``_things_asked``)
            listed = item.get("listed") or []
            said.append(("facts.counted_distinct", {
                "name": column_phrase(ColumnFacts(of[0], "text", 0, letter=of[1])), "n": rows,
                "names": f" ({', '.join(map(str, listed))})" if listed else ""}))
            continue
        name = column_phrase(ColumnFacts(of[0], "numbers", 0, letter=of[1]))
        if rows:
            column = of
            said.append(("facts.counted_without" if item.get("without") else "facts.counted_with" if item.get("with")
                         else "facts.counted_all", {
                "name": name, "rows": rows, "label": str(item.get("without") or item.get("with") or ""),
                                               "figures": [_figure_said(item)]}))
        else:
            said.append((f"facts.counted_{what}", {"name": name, "figure": item.get("figure", "")}))
    return said
