"""Figures, dates and names in a reply about a document that the document does not have.

A very small model (``summarize.small_model``) answered a paralegal's questions about a lease
with "three days' notice" where the lease says 60, and a law and a date the lease never names;
nothing under the reply said to check it. ``unchecked_figures`` finds, by the program, what a
reply names that its document does not contain (figures as any writing of them: 1,850, 1.850
and 1850 alike; "sixty (60) days" for "60 days"), and ``unchecked_phrases`` says it under the
reply: "Check figures, dates and names against Lease_v1.docx: this model often gets them wrong.
“three days”, “1978” and “Illinois Code 1624-03” are not in Lease_v1.docx."
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from workstation.core.letters import fold
from workstation.core.phrases import Phrase, say
from workstation.core.table_facts import (
    _MONTH_NUMBER,
    _SPACED,
    SheetFacts,
    _number,
    _plain_name,
    counted_phrases,
    title_phrase,
)

MOST_NAMED = 3  # the reply's figures named under it, at most

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
         "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
NUMBER_WORDS: dict[str, int] = {w: i for i, w in enumerate(_ONES)} | \
    {w: 10 * i for i, w in enumerate(_TENS) if w} | {"hundred": 100}
# what a figure counts, where a reply's "three days" is checked as a quantity ("60 days" is
# not the lease's "Section 3")
UNITS = ("day", "week", "month", "year", "hour", "minute",
         "gün", "hafta", "ay", "yıl", "saat")
# a month by its name, English (and its short form) or Turkish, as table_facts reads one in a question
_MONTHS = "|".join([*_MONTH_NUMBER, "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec"])


_MONTH_OF = {fold(name): n for name, n in _MONTH_NUMBER.items()}  # (Mayıs, MAYIS and Mayis alike)


def _month(token: str) -> int | None:
    """A month's name as its number (March, Mar, Mart: 3; None: no month): a date's month as the
    document may write it as a number (2024-03-01, 15.03.2026 is "March 1, 2024", "15 Mart 2026")."""
    word = fold(token)
    return _MONTH_OF.get(word) or next((n for name, n in _MONTH_OF.items() if len(word) >= 3 and
                                        name.startswith(word) and re.fullmatch(_MONTHS, token, re.I)), None)


# (thousands set apart by a space, as table_facts reads them: "1 850" is one figure, not 1 and 850)
_FIGURE = rf"(?:{_SPACED}(?!\d)|\d+)(?:[.,]\d+)*(?:[-/]\d+(?:[.,]\d+)*)*"
_WORD_NUMBER = r"(?i:" + "|".join(sorted([*NUMBER_WORDS], key=len, reverse=True)) + r")(?:[- ](?:" + \
    "|".join(_ONES[1:10]) + r"))?"
_UNIT = r"(?i:" + "|".join(UNITS) + r")\w*"
_MONEY = r"[$€£₺]"
_NAME_WORD = r"[A-ZÇĞİÖŞÜ][\w'’]*"
# what the reply names, in the order tried at each place: a date with its month named, a figure
# (with the capitalised words just before it: "Illinois Code 1624-03"), a number in words with
# what it counts ("three days"), a run of capitalised words (a name: "Cook County")
_NAMED = re.compile(
    rf"(?P<date>\b(?:(?i:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}(?:st|nd|rd|th)?\s+(?i:{_MONTHS})\.?,?\s+\d{{4}}))"
    rf"|(?P<figure>(?:{_NAME_WORD}\s+){{0,3}}{_MONEY}?{_FIGURE}%?(?:\s*-?\s*{_UNIT})?)"
    rf"|(?P<words>\b{_WORD_NUMBER}[\s-]+{_UNIT})"
    rf"|(?P<name>\b{_NAME_WORD}(?:\s+{_NAME_WORD})*)",
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*(?:[-*+>#]+\s*|\d+[.)]\s*)?|\*\*|\(|[\"“‘'])$")


def _value(figure: str) -> str:
    """A figure as the number it is, however written: 1,850 / 1.850 / 1 850 / 1850 / 1,850.00 /
    1.850,00 -> "1850"; 18.50 -> "18.5" (no 1850: "$18.50" is not the lease's "1.850,00"), 0.5 ->
    "0.5" (no 5). The last mark is the decimal one where one or two digits follow it, or the
    marks are mixed; one before exactly three digits marks thousands, in either way of writing
    (read by table_facts' ``_number``, in the way that decides). Not one number (a version
    1.2.3, a dotted date 15.01.2026): its digits."""
    value = _read(figure)
    if value is None:
        return re.sub(r"\D", "", figure).lstrip("0") or "0"
    return format(value.normalize(), "f")


def _read(figure: str) -> Decimal | None:
    """A figure as the one number it is, as written (``_value``'s reading: "4,136.00" is 4136.00,
    its decimal places kept); None where it is no one number (15.01.2026, 1.2.3, 2024-03-01)."""
    marks = re.findall(r"[.,]", figure)
    comma = False  # (whether the comma is its decimal mark)
    if marks:
        last = marks[-1]
        after = len(figure) - figure.rindex(last) - 1
        thousands = len(set(marks)) == 1 and after == 3 and not figure.startswith(f"0{last}")  # (0.125 is no 125)
        comma = (last == ".") if thousands else (last == ",")
    return _number(figure, comma)


def _word_value(words: str) -> int | None:
    """"sixty", "twenty-five", "twenty five" as a number (None: not one)."""
    total = 0
    for part in re.split(r"[\s-]+", words.lower()):
        if part not in NUMBER_WORDS:
            return None
        total += NUMBER_WORDS[part]
    return total


def _values(figure: str) -> list[str]:
    """The numbers a figure is: itself and, of a date or a code (2024-03-01, 1624-03), each part."""
    parts = re.split(r"[-/]", figure)
    return [_value(figure), *([_value(p) for p in parts] if len(parts) > 1 else [])]


class DocumentText:
    """What ``unchecked_figures`` looks a reply's figures, names and quantities up in: the
    document's numbers (each written as digits, or as words: "sixty (60)"), its words (any case, İ and I one letter:
    ``letters.fold``)
    and the quantities it names (a number within three words before "days", "months" …)."""

    def __init__(self, text: str) -> None:
        self.words = set(re.findall(r"[^\W\d_]+", fold(text)))  # (İstanbul, ISTANBUL and Istanbul alike)
        self.numbers: set[str] = set()
        # a dotted date's day, month and year (15.03.2026), for a date the reply writes another way ("15 Mart
        # 2026" was said not to be in it): for dates only, or a made-up "15 EUR" beside it went unsaid
        self.date_parts: set[str] = set()
        self.quantities: set[tuple[str, str]] = set()
        # the months it names, by name or as a date's (15.03.2026, 2026-03-15): a reply's "3 January 2026" of
        # a report that says February had its month taken as any 1 in it
        self.months: set[str] = set()
        tokens = re.findall(rf"{_FIGURE}|[^\W\d_]+", text)
        for i, token in enumerate(tokens):
            values = _values(token) if token[0].isdigit() else \
                [str(v)] if (v := _word_value(token)) is not None else \
                [str(month)] if (month := _month(token)) is not None else []
            self.numbers.update(values)
            if not token[0].isdigit() and (named := _month(token)) is not None:
                self.months.add(str(named))
            if re.fullmatch(r"\d{1,2}\.\d{1,2}\.\d{4}|\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{4}", token):
                parts = re.split(r"[./-]", token)
                self.months.update(_value(p) for p in (parts[1:2] if "/" not in token else parts[:2]))
            if re.fullmatch(r"\d{1,2}\.\d{1,2}\.\d{4}", token):
                self.date_parts.update(_value(p) for p in token.split("."))
            for after in tokens[i + 1:i + 5]:
                if (unit := _unit_of(after)) is not None:
                    self.quantities.update((v, unit) for v in values)
                    break

    def has_figure(self, figure: str) -> bool:
        whole, *parts = _values(figure)
        # (a date written 2026-03-15 or 15/03/2026 of the document's 15.03.2026: its parts are a dotted date's)
        known = self.numbers | self.date_parts if re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{4}", figure) \
            else self.numbers
        return whole in self.numbers or bool(parts) and all(v in known for v in parts)

    def has_name(self, name: str) -> bool:
        return all(w in self.words for w in re.findall(r"[^\W\d_]+", fold(name)))


def _unit_of(word: str) -> str | None:
    low = word.lower()
    return next((u for u in UNITS if low.startswith(u) and (len(low) - len(u) <= 3)), None)


def _quantity(text: str) -> tuple[str, str] | None:
    """"three days", "60-day" as (its number, its unit); None where it counts nothing named."""
    found = re.match(rf"(?P<n>{_FIGURE}|{_WORD_NUMBER})[\s-]+(?P<unit>\w+)$", text.strip(), re.IGNORECASE)
    if found is None or (unit := _unit_of(found["unit"])) is None:
        return None
    n = found["n"]
    value = _value(n) if n[0].isdigit() else str(_word_value(n))
    return value, unit


def unchecked_figures(reply: str, document: str, name: str = "", counted: list[dict[str, Any]] | None = None) -> list[str]:
    """The figures, dates and capitalised names ``reply`` gives that
    ``document`` does not contain, as the reply writes them, in its order: a figure is found in
    any writing of it (1,850 / 1.850 / 1850), a number with what it counts ("three days") where
    the document counts the same thing by that number ("sixty (60) days" is not "three days"
    though a "Section 3" is there), a name where each of its words is in the document in any
    case; a name that starts a sentence is not taken for one ("The", "Rent"). ``name``: the
    document's file name, which a reply may name too ("Lease_v1.docx"). ``counted``: what the
    program counted for the question (``counted_answer``'s items, kept with the reply): its figures
    are known too (the paid invoices' "total 2,315.25", counted by the program and given the model,
    was said under the reply as "not in letter.docx", the model doubted for the program's figure)."""
    said = say(counted_phrases(counted)) if counted else ""  # (English: a figure is known in any writing of it)
    doc = DocumentText(f"{name}\n{document}\n{said}")
    missing: list[str] = []
    for found in _NAMED.finditer(reply):
        said = found.group().strip()
        kind = found.lastgroup
        if kind == "name":
            if _SENTENCE_START.search(reply[:found.start()]) is not None:
                # (its first word starts a sentence: the rest, if any, may still be a name)
                first, _, rest = said.partition(" ")
                said = rest.strip()
                if not said or len(said) < 3:
                    continue
            if len(said) < 3 or doc.has_name(said) or (month := _month(said)) is not None and str(month) in doc.months:
                continue  # (a month named as the document names it otherwise: "October" of its "3 Oct")
        elif kind == "words":
            quantity = _quantity(said)
            if quantity is None or quantity in doc.quantities:
                continue
        elif kind == "date":
            known = doc.numbers | doc.date_parts  # (its day and year, and its month as a number: "15 Nisan 2026"
            month = next((m for w in re.findall(r"[^\W\d_]+", said) if (m := _month(w)) is not None), None)  # of 15.03)
            if all(_value(n) in known for n in re.findall(r"\d+", said)) and (month is None or str(month) in doc.months):
                continue
        else:  # a figure, maybe with the name before it and what it counts after it
            shown = re.search(rf"{_MONEY}?(?P<n>{_FIGURE})", said)  # (as the reply writes it: "$2,000", "10%")
            assert shown is not None
            before = said[:shown.start()].strip()
            if before and _SENTENCE_START.search(reply[:found.start()]) is not None:
                before = before.partition(" ")[2]  # (a sentence's first word is no part of a name)
            said = f"{before} {said[shown.start():]}".strip()
            quantity = None if before else _quantity(said[shown.start("n") - shown.start():])
            if quantity is not None:
                if quantity in doc.quantities:
                    continue
            elif doc.has_figure(shown["n"]) and (not before or doc.has_name(before)):
                continue
        said = " ".join(said.split())  # (quoted on one line: "BEDEMAN\nDurumu" was split over two)
        if said not in missing:
            missing.append(said)
    return missing


# a sentence of the reply that gives its figures as the program's ("The program counted …")
_PROGRAM_SAID = re.compile(r"\bprogram", re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
_YEAR = re.compile(r"(?:19|20)\d\d")


def _counted_shape(match: re.Match[str], fractions: bool, rows: int) -> bool:
    """Whether a figure of the reply (``miscounted_figures``' ``match``: the figure "n", its money
    sign and % as written) is written as the program's count for the question is, the counted
    column's kind: an amount (a money sign, a decimal part, thousands marks: "$4,136", "12,996.50",
    "1 850"), or, where the program's figures have no decimal part (``fractions``: they have),
    a whole number above ``rows`` (the table's count of rows, and its row numbers) that is no year.
    Never a percent, a date or code (15.03.2026, INV-1043), a year (2025), the table's count of rows
    or a row's number ("4 of the 10 invoices", "rows 2 to 11"): a right answer was said to be wrong."""
    figure = match["n"]
    read = _read(figure)
    if match.group().endswith("%") or read is None:
        return False
    exponent = read.as_tuple().exponent
    if re.match(_MONEY, match.group()) or isinstance(exponent, int) and exponent < 0:
        return True
    if read <= rows:
        return False
    if re.search(r"[.,\s]", figure):
        return True
    return not fractions and _YEAR.fullmatch(figure) is None


def miscounted_figures(reply: str, counted: list[dict[str, Any]] | None,
                       tables: list[SheetFacts] | None = None) -> list[dict[str, str]]:
    """The figures ``reply`` gives as the answer to what the program counted for the question
    (``counted``: ``counted_answer``'s "where" items, of ``tables``) that are not the program's
    count: "How much is unpaid in total?" of 10 invoices was answered "The program counted the
    invoice for 12,996.50 in total." under the program's "… Unpaid: 4 rows …, total 4,136.00":
    12,996.50 is in the table (the total of every invoice), so ``unchecked_figures`` let it pass.
    A figure is said so only where it is written as the counted column's figures are (an amount:
    ``_counted_shape``; never the table's count of rows, a row's number or a year: "4 of the 10
    invoices in 2025" was said to be no count of it) and the program did not give it for this
    question (its figures, its count of rows, the cells of the rows it counted), and either it is a
    figure of all the rows of the table (its column's total or average) and the reply gives none of
    the program's figures, or the reply's sentence gives it as the program's ("the program counted
    …") in the place of the program's figure, which it does not give. Each as
    {"text": the figure as the reply writes it, "counted": the program's figure, and "what"/"column"/
    "rows" where it is a figure of all the rows: "total", "Amount", "10"}, in the reply's order."""
    asked = [i for i in counted or [] if isinstance(i, dict) and i.get("what") == "where"
             and any(isinstance(f, dict) and f.get("figure") for f in i.get("figures") or [])]
    if not asked:
        return []
    given: set[str] = set()  # (what the program gave for the question: its figures, rows and the rows' cells)
    whole: dict[str, dict[str, str]] = {}  # a figure of all the rows -> what it is
    figures = [str(f["figure"]) for item in asked for f in item["figures"] if isinstance(f, dict) and f.get("figure")]
    answers = {_value(f) for f in figures}  # (the program's own figures for it)
    # (its figures' kind: with a decimal part, a whole number of the reply is no amount of that column)
    fractions = any(isinstance(e := read.as_tuple().exponent, int) and e < 0
                    for f in figures if (read := _read(f)) is not None)
    rows = 0  # (the tables' counts of rows and their rows' numbers, the header's and titles' above it too)
    for item in asked:
        given.update(_value(str(f["figure"])) for f in item["figures"] if isinstance(f, dict) and f.get("figure"))
        given.add(_value(str(item.get("rows", "0"))))
        rows = max(rows, int(read) if (read := _read(str(item.get("rows", "0")))) is not None else 0)
        listed = {str(n) for n in item.get("listed") or []}
        given.update(v for n in listed for f in re.findall(_FIGURE, n) for v in _values(f))
        for facts in tables or []:
            if facts.title != item.get("title"):
                continue
            rows = max(rows, facts.rows + facts.total_rows + facts.above + 1)
            for row in facts.cells:
                if listed & set(row):
                    given.update(v for cell in row for f in re.findall(_FIGURE, cell) for v in _values(f))
            for col in facts.columns:
                if col.kind != "numbers" or col.rate:
                    continue
                for what in ("total", "average"):
                    figure = getattr(col, what)
                    if figure and _value(figure) not in given:
                        whole.setdefault(_value(figure), {"what": what, "column": col.name, "rows": f"{facts.rows:,}",
                                                          "letter": col.letter})
    program = figures[0]
    answered = any(_value(shown) in given for shown in re.findall(_FIGURE, reply) if shown != "0")
    found: list[dict[str, str]] = []
    for sentence in _SENTENCES.split(reply):
        shown = list(re.finditer(rf"{_MONEY}?(?<![\w-])(?P<n>{_FIGURE})%?", sentence))
        # a sentence giving it as the program's, and not giving the program's figure: its other
        # figures of the counted kind are given in the answer's place ("4,136.00 of the 12,996.50
        # invoiced": the whole total beside the program's is no answer)
        claimed = _PROGRAM_SAID.search(sentence) is not None and all(_value(m["n"]) not in answers for m in shown)
        for match in shown:
            value = _value(match["n"])
            if value in given or any(value == f["value"] for f in found) or not _counted_shape(match, fractions, rows):
                continue
            if value in whole and not answered or claimed:
                said = {"text": match["n"], "counted": program, "value": value}
                found.append(said | ({k: v for k, v in whole[value].items() if v} if value in whole else {}))
    return [{k: v for k, v in f.items() if k != "value"} for f in found]


def unchecked_record(name: str, items: list[str], miscounted: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """What a reply's record keeps of the check (``unchecked_phrases`` says it): the document's
    name, the first ``MOST_NAMED`` of what the reply gives that it does not have, and how many
    more there are (seven missing were said as three, nothing said of the other four); and the
    first ``MOST_NAMED`` of its figures that are not the program's count for the question
    (``miscounted_figures``), which are not said as "not in" it too."""
    wrong = (miscounted or [])[:MOST_NAMED]
    items = [i for i in items if all(" ".join(i.split()) != w["text"] and not i.endswith(f" {w['text']}")
                                     for w in wrong)]
    record: dict[str, Any] = {"name": name, "items": items[:MOST_NAMED]}
    if len(items) > MOST_NAMED:
        record["more"] = len(items) - MOST_NAMED
    if wrong:
        record["miscounted"] = wrong
    return record


def _miscounted_phrases(record: dict[str, Any]) -> list[Phrase]:
    """"The reply's “12,996.50” is not the program's count for this question (4,136.00): 12,996.50
    is the total of Amount in all 10 rows." for each of a record's ``miscounted``."""
    said: list[Phrase] = []
    for wrong in record.get("miscounted") or []:
        if not isinstance(wrong, dict) or not wrong.get("text") or not wrong.get("counted"):
            continue
        values = {"text": str(wrong["text"]), "counted": str(wrong["counted"])}
        if wrong.get("what") in ("total", "average") and wrong.get("column"):
            what: Phrase = (f"check.all_rows_{wrong['what']}",
                            {"name": _plain_name(str(wrong["column"]), str(wrong.get("letter", ""))),
                             "n": str(wrong.get("rows", ""))})
            said += [*([("check.then", {})] if said else []), ("check.not_counted_is", {**values, "what": what})]
        else:
            said += [*([("check.then", {})] if said else []), ("check.not_counted", values)]
    return said


def unchecked_phrases(record: Any) -> list[Phrase]:
    """The line under a reply that a small model wrote about a document, from its record's
    ``unchecked`` (``unchecked_record``'s): "Check figures, dates and names against Lease_v1.docx:
    this model often gets them wrong. “three days” and “1978” are not in Lease_v1.docx.", and
    "“3 days”, “6 months”, “3-month” and 4 more are not in lease_v1.txt." ([]: nothing to say,
    or a record that is not one). A table pasted in the message is named so: "… are not in the table in
    your message" (``pasted_tables.pasted_known``)."""
    if not isinstance(record, dict) or not isinstance(record.get("name"), str):
        return []
    items = [" ".join(str(i).split()) for i in record.get("items") or [] if str(i).strip()][:MOST_NAMED]
    miscounted = _miscounted_phrases(record)  # (said first: the figure an office assistant copies)
    if not items and not miscounted:
        return []
    name = title_phrase(record["name"])  # (a pasted table's "the table in your message", in the UI's language)
    more = record.get("more")
    quoted = dict(zip(("text", "text2", "text3"), items, strict=False))
    said: list[Phrase] = [("check.against", {"name": name}), *miscounted]
    if not items:
        return said
    if miscounted:
        said.append(("check.then", {}))
    if isinstance(more, int) and more > 0 and len(items) == MOST_NAMED:
        return [*said, ("check.not_in_more", {**quoted, "n": more, "name": name})]
    return [*said, (f"check.not_in_{len(items)}", {**quoted, "name": name})]
