"""The edges of what the program counts on a table's rows (``table_facts.counted_answer``) and of
a pasted table's arithmetic (``pasted_tables``): a threshold's own figure, the most rows named,
the largest table kept, the fewest lines that make a table. Each edge was open to a change of one
line that no other test saw."""

from __future__ import annotations

import calendar
import datetime as dt

from workstation.core.pasted_tables import counted_pasted
from workstation.core.phrases import say
from workstation.core.table_facts import (
    MAX_CELLS,
    MAX_LISTED,
    counted_answer,
    counted_phrases,
    table_facts,
)

HEADER = ["Invoice", "Client", "Amount", "Status"]
ROWS = [["INV-101", "Acme", "450.00", "paid"], ["INV-102", "Birch", "2380.50", "unpaid"],
        ["INV-103", "Cedar", "1200.00", "paid"], ["INV-104", "Acme", "3200.00", "unpaid"],
        ["INV-105", "Delta", "780.25", "unpaid"]]


def _line(question: str, rows: list[list[str]] = ROWS) -> str:
    facts = table_facts("invoices.csv", 0, [HEADER, *rows])
    assert facts is not None
    return say(counted_phrases(counted_answer(question, [facts])))


def test_a_thresholds_own_figure_is_in_or_out_as_its_words_say() -> None:
    """"over 1,200" leaves the invoice of 1,200.00 out, "at most 780.25" keeps the one of 780.25 in,
    and "between 2,500 and 500" is the range between them, written either way round."""
    assert _line("Which invoices are over 1,200?") == (
        "Counted by the program: 2 rows where Amount over 1,200 (INV-102, INV-104)")
    assert _line("Which invoices are at most 780.25?") == (
        "Counted by the program: 2 rows where Amount at most 780.25 (INV-101, INV-105)")
    assert _line("total of invoices between 2,500 and 500?") == _line("total of invoices between 500 and 2,500?") == (
        "Counted by the program: Amount where Amount between 500 and 2,500: 3 rows (INV-102, INV-103, INV-105), "
        "total 4,360.75")


def test_many_rows_are_counted_without_their_names() -> None:
    """Up to MAX_LISTED rows are named by their first cells; more are counted only (a line of
    dozens of invoice numbers under a reply says nothing anyone reads)."""
    many = [[f"INV-{200 + i}", "Acme", "5000.00", "unpaid"] for i in range(MAX_LISTED + 1)]
    assert _line("Which invoices are over 4,000?", many) == (
        f"Counted by the program: {MAX_LISTED + 1} rows where Amount over 4,000")
    assert _line("Which invoices are over 4,000?", many[:MAX_LISTED]).endswith("(INV-200, INV-201, INV-202, "
                                                                                 "INV-203, INV-204, INV-205, INV-206, "
                                                                                 "INV-207, INV-208, INV-209)")


def test_a_table_too_big_to_keep_has_no_rows_counted() -> None:
    """A table of more than MAX_CELLS cells keeps no rows: a question with a condition on it gets
    nothing counted (not the figures of all rows), its facts all the same."""
    n = MAX_CELLS // len(HEADER) + 1
    big = [HEADER, *([f"INV-{i}", "Acme", "10.00", "paid" if i % 2 else "unpaid"] for i in range(n))]
    facts = table_facts("big.csv", 0, big)
    assert facts is not None and facts.rows == n and facts.cells == []
    assert counted_answer("What is the total of the unpaid invoices?", [facts]) == []
    assert counted_answer("What is the total?", [facts])[0]["figure"] == f"{10 * n:,}.00"
    small = table_facts("small.csv", 0, big[:MAX_CELLS // len(HEADER)])
    assert small is not None and len(small.cells) == MAX_CELLS // len(HEADER) - 1  # (at the limit: kept)


PASTED = """What is the total?

Item | Qty | Price | Amount
Bookkeeping | 10 | 45.00 | 450.00
Payroll runs | 4 | 30.00 | 130.00
Tax filing | 1 | 250.00 | 260.00
Year-end review | 2 | 40.00 | 90.00
Audit | 3 | 100.00 | 310.00
Filing | 1 | 20.00 | 20.00
Post | 2 | 5.00 | 10.00
Phone | 3 | 10.00 | 30.00
Print | 4 | 2.50 | 10.00
Rent | 1 | 500.00 | 500.00
"""


def _said(text: str) -> str:
    return say(counted_phrases(counted_pasted(text)[1]))


def test_two_lines_are_no_pasted_table() -> None:
    """A header and one row (two lines with a '|') are a note, not a table: nothing counted."""
    assert counted_pasted("What is the total?\nItem | Amount\nBoxes | 120.50\n") == ([], [])
    assert _said("What is the total?\nItem | Amount\nBoxes | 120.50\nVan | 800\n") == (
        "Counted by the program: Amount, all 2 rows: total 920.5")


def test_at_most_three_wrong_rows_are_said() -> None:
    """Four rows whose amount is not quantity × price: the first three said (MAX_CHECKS), as a
    line under a reply holds them."""
    said = _said(PASTED)
    assert said.count("row '") == 3 and "Audit" not in said and "Year-end review" in said, said


def test_a_markdown_tables_rule_line_is_no_row() -> None:
    """A table pasted from a Markdown page ('|---|---|' under its header) is counted as the same
    rows without it."""
    rows = PASTED.split("\n")
    markdown = "\n".join([*rows[:3], "|---|---:|---:|---:|", *rows[3:]])
    assert _said(markdown) == _said(PASTED) and "Amount, all 10 rows: total 1,810.00" in _said(PASTED)


def test_a_vat_with_no_subtotal_before_it_is_not_checked() -> None:
    """A VAT line straight after the rows (no subtotal said): of what it is a share is not certain,
    so nothing of it is said; a total after it neither."""
    text = ("Item | Qty | Price | Amount\nA | 2 | 3.00 | 6.00\nB | 1 | 4.00 | 4.00\nC | 5 | 1.00 | 5.00\n"
            "VAT 20%: 9.00\nTotal: 24.00")
    assert counted_pasted(text)[1] == []


def test_quantity_times_price_is_checked_only_where_two_rows_show_it() -> None:
    """The columns are quantity, price and amount only where two rows or more show it: a single
    row's 2 × 3 = 6 sets no rule, and the amounts' subtotal is then not checked either."""
    text = "Item | Qty | Price | Amount\nA | 2 | 3 | 6\nB |  | 5 | 9\nC |  | 4 | 10\n\nSubtotal: 30"
    assert counted_pasted(text)[1] == []


def test_a_status_word_that_no_cell_holds_counts_nothing() -> None:
    """"total of overdue invoices" where Status says paid or unpaid was answered with the figures of
    all rows ("Amount, all 5 rows"), which a small model repeats as the overdue ones' total: a word
    before what is counted that no cell holds is a condition the program cannot apply. English and
    Turkish; a plain word there ("all", "tüm") and a value it holds are counted as before."""
    facts = table_facts("invoices.csv", 0, [HEADER, *ROWS])
    assert facts is not None
    assert counted_answer("What is the total of overdue invoices?", [facts]) == []
    assert counted_answer("How many pending rows?", [facts]) == []
    assert _line("What is the total of all invoices?") == "Counted by the program: Amount (column C), all 5 rows: total 8,010.75"
    assert _line("total of unpaid invoices") == (
        "Counted by the program: Amount where Status is unpaid: 3 rows (INV-102, INV-104, INV-105), total 6,360.75")
    turkish = table_facts("faturalar.csv", 0, [["Fatura", "Müşteri", "Tutar", "Durum"], ["F-1", "Acar", "450,00", "ödendi"],
                                               ["F-2", "Bilge", "2380,50", "açık"], ["F-3", "Ceren", "1200,00", "ödendi"]],
                          usual_comma=True)
    assert turkish is not None
    assert counted_answer("gecikmiş faturaların toplamı", [turkish]) == []
    assert say(counted_phrases(counted_answer("Tüm faturaların toplam tutarı", [turkish]))) == (
        "Counted by the program: Tutar (column C), all 3 rows: total 4,030.50")


def test_a_value_said_by_its_first_word_is_counted_where_only_one_begins_so() -> None:
    """"invoices from Ankara" where the cells say "Ankara Ltd" was answered with the figures of all
    rows: a name matched by a value's first words where only that value begins so (English as
    Turkish: "Ankara'dan"); where two do ("Acme Ltd", "Acme Holdings"), nothing."""
    rows = [["INV-1", "Ankara Ltd", "450.00", "paid"], ["INV-2", "Acme Ltd", "2380.50", "unpaid"],
            ["INV-3", "Acme Holdings", "1200.00", "paid"], ["INV-4", "Ankara Ltd", "50.00", "paid"]]
    ankara = "Counted by the program: Amount where Client is Ankara Ltd: 2 rows (INV-1, INV-4), total 500.00"
    assert _line("What is the total of invoices from Ankara?", rows) == ankara
    assert _line("Ankara'dan faturaların toplamı", rows) == ankara
    facts = table_facts("invoices.csv", 0, [HEADER, *rows])
    assert facts is not None
    assert counted_answer("What is the total of invoices from Acme?", [facts]) == []


def test_a_year_said_alone_counts_its_dates_rows_or_nothing() -> None:
    """"total for 2025" and "2025 toplamı" were answered with all rows' total: with a column of dates
    they are its rows of that year (15.01.2025 read as 2025-01-15 is); without one, nothing. A
    column named by the year ("Region | 2024 | 2025") is that column, as before."""
    from workstation.tui.i18n import Texts

    dated = table_facts("invoices.csv", 0, [["Invoice", "Date", "Amount"], ["INV-1", "30.12.2024", "100.00"],
                                            ["INV-2", "05.01.2025", "200.00"], ["INV-3", "2025-03-01", "300.00"]])
    assert dated is not None
    said = "Counted by the program: Amount where Date in 2025: 2 rows (INV-2, INV-3), total 500.00"
    for question in ("What is the total for 2025?", "2025 toplamı", "2025'te toplam"):
        assert say(counted_phrases(counted_answer(question, [dated]))) == said, question
    assert say(counted_phrases(counted_answer("2025 toplamı", [dated])), Texts("tr").get) == (
        "Programın hesabı: Date 2025 yılında olan satırlarda Amount: 2 satır (INV-2, INV-3), toplam 500,00")
    undated = table_facts("invoices.csv", 0, [HEADER, *ROWS])
    assert undated is not None
    assert counted_answer("What is the total for 2025?", [undated]) == []
    assert counted_answer("2025 toplamı", [undated]) == []
    years = table_facts("regions.csv", 0, [["Region", "2024", "2025"], ["North", "1", "2"], ["South", "3", "4"],
                                           ["East", "5", "6"]])
    assert years is not None
    assert say(counted_phrases(counted_answer("total for 2025", [years]))) == (
        "Counted by the program: 2025 (column C), all 3 rows: total 12")


def test_without_vat_is_the_net_columns_total_where_the_table_splits_it() -> None:
    """"total without VAT" and "KDV hariç toplam" counted nothing (a negation) even where each row's
    amount is split into Net, VAT and Total: there it is the Net column's total, said so. A table
    with no such split still counts nothing."""
    split = table_facts("invoices.csv", 0, [["Invoice", "Net", "VAT", "Total"], ["INV-1", "100.00", "20.00", "120.00"],
                                            ["INV-2", "200.00", "40.00", "240.00"], ["INV-3", "50.00", "10.00", "60.00"]])
    assert split is not None
    said = "Counted by the program: Net (column B), the amount without VAT, all 3 rows: total 350.00"
    for question in ("What is the total without VAT?", "KDV hariç toplam"):
        assert say(counted_phrases(counted_answer(question, [split]))) == said, question
    turkish = table_facts("faturalar.csv", 0, [["Fatura", "Net Tutar", "KDV", "Toplam"], ["F-1", "100,00", "20,00", "120,00"],
                                               ["F-2", "200,00", "40,00", "240,00"], ["F-3", "50,00", "10,00", "60,00"]],
                          usual_comma=True)
    assert turkish is not None
    from workstation.tui.i18n import Texts

    assert say(counted_phrases(counted_answer("KDV'siz toplam ne kadar?", [turkish])), Texts("tr").get) == (
        "Programın hesabı: Net Tutar (B sütunu), KDV hariç tutar, 3 satırın tümü: toplam 350,00")
    plain = table_facts("invoices.csv", 0, [HEADER, *ROWS])
    assert plain is not None
    assert counted_answer("What is the total without VAT?", [plain]) == []


def test_a_money_total_leaves_the_quantities_total_out() -> None:
    """"What is the total?" of Qty | Unit price | Amount said "Qty, total 15" beside the amount's
    65.50 (correct, but a small model took the 15): the amount's only, of all rows and of the rows
    a condition names; asked for the quantity, the quantity's."""
    rows = [["Item", "Qty", "Unit price", "Amount", "Status"], ["Paper", "3", "4.50", "13.50", "paid"],
            ["Pens", "10", "1.20", "12.00", "unpaid"], ["Ink", "2", "20.00", "40.00", "paid"]]
    facts = table_facts("order.csv", 0, rows)
    assert facts is not None

    def line(question: str) -> str:
        return say(counted_phrases(counted_answer(question, [facts])))

    assert line("What is the total?") == "Counted by the program: Amount (column D), all 3 rows: total 65.50"
    assert line("total of paid items") == "Counted by the program: Amount where Status is paid: 2 rows (Paper, Ink), total 53.50"
    assert line("total quantity") == "Counted by the program: Qty (column B), all 3 rows: total 15"


def test_a_value_with_its_turkish_case_ending_before_what_is_counted_is_counted() -> None:
    """"ACME'nin faturalarının toplamı" of a Turkish table counted nothing: the value blanked, its
    ending "nin" was left as a word before "faturalarının" that no cell holds. Its rows counted, as
    "ACME toplamı" has them."""
    rows = [["Fatura", "Müşteri", "Tutar", "Durum"], ["F-1", "ACME Ltd", "125,00", "ödendi"],
            ["F-2", "Bilge Co", "1.200,00", "ödenmedi"], ["F-3", "ACME Ltd", "90,00", "ödenmedi"]]
    facts = table_facts("faturalar.csv", 0, rows, usual_comma=True)
    assert facts is not None
    acme = "Counted by the program: Tutar where Müşteri is ACME Ltd: 2 rows (F-1, F-3), total 215.00"
    for question in ("ACME'nin faturalarının toplamı", "ACME Ltd'nin faturalarının toplamı", "ACME toplamı"):
        assert say(counted_phrases(counted_answer(question, [facts]))) == acme, question
    assert say(counted_phrases(counted_answer("Bilge'nin faturalarının toplamı", [facts]))) == (
        "Counted by the program: Tutar where Müşteri is Bilge Co: 1 row (F-2), total 1,200.00")


def test_a_condition_said_in_words_no_cell_holds_counts_nothing() -> None:
    """Said of the rows in words the table's cells do not hold, these were answered with the
    figures of all rows ("Tutar, all 3 rows: total 1,415.00"), which a small model gives as the
    unpaid ones' or this month's: a state no cell says in either language ("total of overdue
    invoices" of a Turkish table, "açık faturaların toplamı" of an English one), a time said from
    today ("this month's total", "bu ayın toplamı"). The table's own values are counted as before,
    said in its other language too ("sum of unpaid invoices" of cells that say "ödenmedi")."""
    turkish = table_facts("faturalar.csv", 0, [["Fatura", "Müşteri", "Tutar", "Durum"], ["F-1", "ACME Ltd", "125,00", "ödendi"],
                                               ["F-2", "Bilge Co", "1.200,00", "ödenmedi"], ["F-3", "ACME Ltd", "90,00", "ödenmedi"]],
                          usual_comma=True)
    english = table_facts("invoices.csv", 0, [HEADER, *ROWS])
    assert turkish is not None and english is not None
    for question in ("total of overdue invoices", "total of open invoices",
                     "this month's total", "bu ayın toplamı", "geçen haftanın toplamı"):
        assert counted_answer(question, [turkish]) == [], question
    for question in ("açık faturaların toplamı", "son faturaların toplamı", "gecikmiş faturaların toplamı",
                     "this month's total", "total for last year", "bu ayın toplamı"):
        assert counted_answer(question, [english]) == [], question
    for question in ("ödenmedi faturaların toplamı", "sum of unpaid invoices"):
        assert say(counted_phrases(counted_answer(question, [turkish]))) == (
            "Counted by the program: Tutar where Durum is ödenmedi: 2 rows (F-2, F-3), total 1,290.00"), question
    assert say(counted_phrases(counted_answer("What is the total of paid invoices?", [turkish]))) == (
        "Counted by the program: Tutar where Durum is ödendi: 1 row (F-1), total 125.00")
    assert _line("ödendi faturaların toplamı").startswith("Counted by the program: Amount where Status is paid: ")
    assert _line("total of unpaid invoices") == (
        "Counted by the program: Amount where Status is unpaid: 3 rows (INV-102, INV-104, INV-105), total 6,360.75")
    assert _line("What is the total of this invoice list?") == "Counted by the program: Amount (column C), all 5 rows: total 8,010.75"


def test_how_many_in_total_keeps_the_quantities_total() -> None:
    """"How many items did we sell in total?" lost "Qty, total 15" (its answer) when a money total
    began to leave quantities out: a question that asks how many keeps them."""
    rows = [["Item", "Qty", "Unit price", "Amount"], ["Paper", "3", "4.50", "13.50"], ["Pens", "10", "1.20", "12.00"],
            ["Ink", "2", "20.00", "40.00"]]
    facts = table_facts("order.csv", 0, rows)
    assert facts is not None
    said = say(counted_phrases(counted_answer("How many items did we sell in total?", [facts])))
    assert "Qty (column B), all 3 rows: total 15" in said
    assert say(counted_phrases(counted_answer("What is the total?", [facts]))) == (
        "Counted by the program: Amount (column D), all 3 rows: total 65.50")


RENT = [["Daire", "Kira (TL)", "Aidat (TL)", "Durum"], ["A-1", "12.500,00", "900,00", "ödendi"],
        ["A-2", "18.750,00", "1.100,00", "ödenmedi"], ["A-3", "9.800,00", "750,00", "ödenmedi"],
        ["B-1", "22.000,00", "1.250,00", "ödendi"], ["B-2", "14.299,99", "900,00", "ödenmedi"],
        ["B-3", "16.500,00", "1.000,00", "ödenmedi"], ["C-1", "15.000,00", "850,00", "ödendi"],
        ["C-2", "10.750,00", "750,00", "ödenmedi"]]


def test_a_turkish_status_said_in_another_form_of_its_verb_is_counted() -> None:
    """"ödenmemiş kiraların toplamı" of a table whose Durum says "ödendi"/"ödenmedi" counted nothing
    (and "ödenmeyen", "ödenmiş", "ödenen" the same): another form of the same verb, saying "not" as
    the cell does, names the cell's rows; never those of the other polarity."""
    rent = table_facts("kira.csv", 0, RENT, usual_comma=True)
    turkish = table_facts("faturalar.csv", 0, [["Fatura", "Müşteri", "Tutar", "Durum"], ["F-1", "ACME Ltd", "125,00", "ödendi"],
                                               ["F-2", "Bilge Co", "1.200,00", "ödenmedi"], ["F-3", "ACME Ltd", "90,00", "ödenmedi"]],
                          usual_comma=True)
    assert rent is not None and turkish is not None
    unpaid = say(counted_phrases(counted_answer("ödenmemiş kiraların toplamı", [rent])))
    assert unpaid.startswith("Counted by the program: Kira (TL) where Durum is ödenmedi: 5 rows (A-2, A-3, B-2, B-3, C-2), "
                             "total 70,099.99"), unpaid
    said_unpaid = "Counted by the program: Tutar where Durum is ödenmedi: 2 rows (F-2, F-3), total 1,290.00"
    for question in ("ödenmemiş faturaların toplamı", "ödenmeyen faturaların toplamı", "ödenmemişlerin toplamı"):
        assert say(counted_phrases(counted_answer(question, [turkish]))) == said_unpaid, question
    said_paid = "Counted by the program: Tutar where Durum is ödendi: 1 row (F-1), total 125.00"
    for question in ("ödenmiş faturaların toplamı", "ödenen faturaların toplamı", "ödenenlerin toplamı"):
        assert say(counted_phrases(counted_answer(question, [turkish]))) == said_paid, question
    for question in ("kaç fatura ödenmemiş?", "kaç fatura ödenmedi?"):
        assert say(counted_phrases(counted_answer(question, [turkish]))) == (
            "Counted by the program: 2 rows where Durum is ödenmedi (F-2, F-3)"), question


def test_a_threshold_in_tl_names_its_column_by_a_word_of_its_name() -> None:
    """"15.000 TL'den fazla kira ödeyen daireler hangileri?" of a table with two TL columns, Kira (TL)
    and Aidat (TL), counted nothing: the column is named by a word of its name ("kira", "kirası"),
    and the verb after it ("ödeyen": the flats that pay rent) is no condition. C-1's 15.000 is not
    more than 15.000. A verb that is a value's form ("ödenmeyen") is a condition as well; where
    neither column is named, nothing."""
    rent = table_facts("kira.csv", 0, RENT, usual_comma=True)
    assert rent is not None
    over = "Counted by the program: 3 rows where Kira (TL) over 15,000 (A-2, B-1, B-3)"
    for question in ("15.000 TL'den fazla kira ödeyen daireler hangileri?", "Kirası 15.000 TL'den fazla olan daireler hangileri?"):
        assert say(counted_phrases(counted_answer(question, [rent]))) == over, question
    assert say(counted_phrases(counted_answer("Aidatı 1.000 TL'den fazla olan daireler hangileri?", [rent]))) == (
        "Counted by the program: 2 rows where Aidat (TL) over 1,000 (A-2, B-1)")
    assert say(counted_phrases(counted_answer("15.000 TL'den fazla kira ödenmeyen daireler hangileri?", [rent]))) == (
        "Counted by the program: 2 rows where Durum is ödenmedi and Kira (TL) over 15,000 (A-2, B-3)")
    assert counted_answer("15.000 TL'den fazla olan daireler hangileri?", [rent]) == []


def test_how_many_of_a_text_columns_things_counts_its_different_values() -> None:
    """"how many customers?" of 5 invoices of 3 customers said "invoices.csv: 5 rows", read as 5
    customers: the Customer column's different values, named, in the UI's language too; of a table
    with no column of customers, nothing."""
    from workstation.tui.i18n import Texts

    rows = [["Invoice", "Customer", "Amount"], ["INV-1", "ACME Ltd", "10.00"], ["INV-2", "Bilge Co", "20.00"],
            ["INV-3", "ACME Ltd", "30.00"], ["INV-4", "Ceren AS", "40.00"], ["INV-5", "Bilge Co", "50.00"]]
    facts = table_facts("invoices.csv", 0, rows)
    assert facts is not None
    said = counted_phrases(counted_answer("How many customers?", [facts]))
    assert say(said) == "Counted by the program: Customer (column B): 3 different values (ACME Ltd, Bilge Co, Ceren AS)"
    assert say(said, Texts("tr").get) == "Programın hesabı: Customer (B sütunu): 3 farklı değer (ACME Ltd, Bilge Co, Ceren AS)"
    assert _line("How many invoices?") == "Counted by the program: invoices.csv: 5 rows"
    assert counted_answer("How many suppliers are there?", [facts]) == []


def test_a_time_said_from_today_is_counted_by_the_computers_date() -> None:
    """"bu sene toplam kira", "last quarter's total" were answered with all rows' total, which a
    small model gives as this year's. Today is the computer's date: "this year", "bu yıl", "bu
    sene", "last year", "geçen yıl", "this quarter", "last quarter", "geçen çeyrek", "bu ayın" count
    the rows of those days, said by the year or the first and last day so the period taken is
    seen; "next quarter", "since last quarter", "geçen hafta" and any without a column of dates: nothing."""
    today = dt.date.today()
    quarter = today.year * 4 + (today.month - 1) // 3 - 1  # (the one before today's)
    last_q = (dt.date(quarter // 4, quarter % 4 * 3 + 1, 1),
              dt.date(quarter // 4 + (quarter % 4 == 3), (quarter % 4 * 3 + 3) % 12 + 1, 1) - dt.timedelta(days=1))
    days = [today, last_q[0], dt.date(today.year - 1, 6, 15), dt.date(today.year - 3, 1, 2)]
    rows = [["Invoice", "Date", "Amount"]] + [[f"INV-{i}", d.isoformat(), f"{10 ** i}.00"] for i, d in enumerate(days, 1)]
    dated = table_facts("invoices.csv", 0, rows)
    rent = table_facts("kira.csv", 0, RENT, usual_comma=True)
    assert dated is not None and rent is not None

    def counted(first: dt.date, last: dt.date, said: str) -> str:
        found = [f"INV-{i}" for i, d in enumerate(days, 1) if first <= d <= last]
        total = sum(10 ** i for i, d in enumerate(days, 1) if first <= d <= last)
        return (f"Counted by the program: Amount where Date {said}: {len(found)} row{'s' * (len(found) != 1)} "
                f"({', '.join(found)}), total {total:,}.00")

    this_year = counted(dt.date(today.year, 1, 1), dt.date(today.year, 12, 31), f"in {today.year}")
    last_year = counted(dt.date(today.year - 1, 1, 1), dt.date(today.year - 1, 12, 31), f"in {today.year - 1}")
    first = dt.date(today.year, (today.month - 1) // 3 * 3 + 1, 1)
    this_quarter = counted(first, dt.date(today.year, first.month + 2, calendar.monthrange(today.year, first.month + 2)[1]),
                           f"from {first} to {first.replace(month=first.month + 2, day=calendar.monthrange(today.year, first.month + 2)[1])}")
    last_quarter = counted(*last_q, f"from {last_q[0]} to {last_q[1]}")
    month_end = today.replace(day=calendar.monthrange(today.year, today.month)[1])
    this_month = counted(today.replace(day=1), month_end, f"from {today.replace(day=1)} to {month_end}")
    for question, line in (("bu yıl toplam", this_year), ("bu sene toplam ne kadar?", this_year), ("this year's total", this_year),
                           ("total for this year", this_year), ("total for last year", last_year), ("geçen yıl toplamı", last_year),
                           ("total this quarter", this_quarter), ("bu çeyrek toplamı", this_quarter),
                           ("total last quarter", last_quarter), ("geçen çeyrek toplamı", last_quarter),
                           ("what was the total of the previous quarter?", last_quarter),
                           ("this month's total", this_month), ("bu ayın toplamı", this_month)):
        assert say(counted_phrases(counted_answer(question, [dated]))) == line, question
    for question in ("total next quarter", "total since last quarter", "geçen haftanın toplamı", "gelecek yıl toplamı"):
        assert counted_answer(question, [dated]) == [], question
    for question in ("bu sene toplam kira", "bu sene toplam ne kadar?", "bu yıl toplam", "this year's total",
                     "total last quarter", "geçen çeyrek toplamı"):
        assert counted_answer(question, [rent]) == [], question


def test_a_money_column_named_by_a_word_of_its_name_is_the_one_counted() -> None:
    """"ödenmemiş kiraların toplamı" of Kira (TL) beside Aidat (TL) said both columns' totals (a
    small model took the dues' 4,500.00 for the rent's): "kira", "kiraların" name Kira (TL) by a
    word of its name; a question that names neither has both, as before."""
    rent = table_facts("kira.csv", 0, RENT, usual_comma=True)
    assert rent is not None
    assert say(counted_phrases(counted_answer("ödenmemiş kiraların toplamı", [rent]))) == (
        "Counted by the program: Kira (TL) where Durum is ödenmedi: 5 rows (A-2, A-3, B-2, B-3, C-2), total 70,099.99")
    assert say(counted_phrases(counted_answer("toplam kira ne kadar?", [rent]))) == (
        "Counted by the program: Kira (TL) (column B), all 8 rows: total 119,599.99")
    assert say(counted_phrases(counted_answer("toplam ne kadar?", [rent]))) == (
        "Counted by the program: Kira (TL) (column B), all 8 rows: total 119,599.99, "
        "Aidat (TL) (column C), all 8 rows: total 7,500.00")


def test_a_year_or_a_tax_split_the_program_cannot_apply_counts_nothing() -> None:
    """The edges of a year said alone and of "without VAT": two years of one column of dates are
    no condition the program applies (nothing, not one year's rows); a year the sheet's name says
    ("Sales 2025") is no condition (all rows); "without VAT" is a Subtotal column's total as it is
    a Net one's, and nothing where no column holds the amount with the tax; an invoice is a row by
    any name, so a word before it that no cell holds ("foreign invoices") counts nothing."""
    dated = table_facts("invoices.csv", 0, [["Invoice", "Date", "Amount"], ["INV-1", "30.12.2024", "100.00"],
                                            ["INV-2", "05.01.2025", "200.00"], ["INV-3", "2025-03-01", "300.00"]])
    assert dated is not None
    assert counted_answer("What is the total for 2024 and 2025?", [dated]) == []
    sales = table_facts("Sales 2025", 0, [["Region", "Amount"], ["North", "100"], ["South", "200"]])
    assert sales is not None
    assert say(counted_phrases(counted_answer("What is the total for 2025?", [sales]))) == (
        "Counted by the program: Amount (column B), all 2 rows: total 300")
    subtotal = table_facts("invoices.csv", 0, [["Invoice", "Subtotal", "VAT", "Total"], ["INV-1", "100.00", "20.00", "120.00"],
                                               ["INV-2", "200.00", "40.00", "240.00"]])
    assert subtotal is not None
    assert say(counted_phrases(counted_answer("What is the total without VAT?", [subtotal]))) == (
        "Counted by the program: Subtotal (column B), the amount without VAT, all 2 rows: total 300.00")
    no_gross = table_facts("invoices.csv", 0, [["Invoice", "Net", "VAT"], ["INV-1", "100.00", "20.00"],
                                               ["INV-2", "200.00", "40.00"]])
    assert no_gross is not None
    assert counted_answer("What is the total without VAT?", [no_gross]) == []
    unnamed = table_facts("sheet.csv", 0, [["No", "Customer", "Amount"], ["1", "Acme", "100.00"], ["2", "Birch", "200.00"]])
    assert unnamed is not None
    assert counted_answer("What is the total of foreign invoices?", [unnamed]) == []


def test_a_word_of_two_columns_names_both_and_two_tables_rows_are_said_once_each() -> None:
    """"kiraların toplamı" of Kira (TL) beside Kira farkı (TL) names no one of them (both totals, not
    the first's alone); two tables' rows counted are said under each table's name once ("a.csv: 2
    rows", not the title again before it)."""
    rents = table_facts("kiralar.csv", 0, [["Daire", "Kira (TL)", "Kira farkı (TL)"], ["D1", "15.000,00", "500,00"],
                                           ["D2", "12.000,00", "300,00"]], usual_comma=True)
    assert rents is not None
    assert say(counted_phrases(counted_answer("Kiraların toplamı ne kadar?", [rents]))) == (
        "Counted by the program: Kira (TL) (column B), all 2 rows: total 27,000.00, Kira farkı (TL) (column C), "
        "all 2 rows: total 800.00")
    two = table_facts("a.csv", 0, [["Item", "Amount"], ["x", "1"], ["y", "2"]])
    three = table_facts("b.csv", 0, [["Item", "Amount"], ["x", "1"], ["y", "2"], ["z", "3"]])
    assert two is not None and three is not None
    assert say(counted_phrases(counted_answer("how many rows?", [two, three]))) == (
        "Counted by the program: a.csv: 2 rows; b.csv: 3 rows")


def test_a_place_written_in_lower_case_counts_nothing_rather_than_all_rows() -> None:
    """"total of invoices from ankara" where the cells say "Ankara Ltd": all rows' 300.00 was said,
    Ankara Ltd's being 100.00. Written with its capital it is that value's rows; in lower case the
    program cannot tell the value from a word ("new" of "New York Co"), so it counts nothing."""
    rows = [["INV-1", "Ankara Ltd", "100.00", "paid"], ["INV-2", "Birch", "200.00", "paid"],
            ["INV-3", "New York Co", "50.00", "unpaid"]]
    assert _line("total of invoices from ankara", rows) == ""
    assert _line("total of new invoices", rows) == ""
    assert "where Client is Ankara Ltd: 1 row (INV-1), total 100.00" in _line("total of invoices from Ankara", rows)
    assert "total 200.00" in _line("total for birch", rows)  # a whole value in lower case: its rows
    assert "all 3 rows: total 350.00" in _line("what is the total?", rows)


def test_a_currency_word_names_no_column() -> None:
    """A figure's currency ("100 EUR'dan fazla") is no column's name, though one column says it in
    its name ("Kira (EUR)") and the other does not ("Aidat", euros too): which one the question
    means is not said, so nothing is counted (it counted the rent over 100 EUR: every flat)."""
    rows = [["1", "1.550", "120"], ["2", "1.700", "95"], ["3", "975", "110"], ["4", "1.400", "80"]]
    for header in (["Daire", "Kira (EUR)", "Aidat"], ["Daire", "Kira (TL)", "Aidat (TL)"]):
        facts = table_facts("daireler.csv", 0, [header, *rows])
        assert facts is not None
        for question in ("100 EUR'dan fazla olan satırlar hangileri?", "1.000 TL'den fazla olan satırlar hangileri?"):
            assert counted_answer(question, [facts]) == [], (header, question)
        # (a column named by its word is counted, its currency beside it)
        assert say(counted_phrases(counted_answer("Aidatı 100 EUR'dan fazla olan satırlar hangileri?", [facts]))) == (
            f"Counted by the program: 2 rows where {header[2]} over 100 (1, 3)")


def test_the_rows_own_column_named_after_a_threshold_is_what_is_listed() -> None:
    """"15.000 TL'den fazla olan daireler hangileri?" of Daire | Kira (TL) | Aidat (TL), the flats
    numbered: "0 rows where Daire over 15,000" told the user no flat pays over 15,000 TL when two
    do. "daireler" names what is listed; with no column measured named, nothing is counted; with
    "kirası" the rent's rows; the flats' own numbers still where a question names them first."""
    rows = [["Daire", "Kira (TL)", "Aidat (TL)"], ["1", "12.750,00", "900,00"], ["2", "16.000,00", "1.100,00"],
            ["3", "17.000,00", "950,00"], ["4", "14.500,00", "800,00"]]
    facts = table_facts("kira.csv", 0, rows, usual_comma=True)
    assert facts is not None
    line = lambda q: say(counted_phrases(counted_answer(q, [facts])))  # noqa: E731
    assert line("15.000 TL'den fazla olan daireler hangileri?") == ""
    assert line("Kirası 15.000 TL'den fazla olan daireler hangileri?") == (
        "Counted by the program: 2 rows where Kira (TL) over 15,000 (2, 3)")
    assert line("Daire 2'den büyük olanlar hangileri?") == "Counted by the program: 2 rows where Daire over 2 (3, 4)"


def test_last_month_is_the_month_before_the_computers_date() -> None:
    """"last month's total", "geçen ayın toplamı": the rows of the month before today's, said by its
    first and last day (not this month's)."""
    today = dt.date.today()
    before = today.replace(day=1) - dt.timedelta(days=1)  # (last month's last day)
    rows = [["Invoice", "Date", "Amount"], ["INV-1", today.replace(day=1).isoformat(), "10.00"],
            ["INV-2", before.isoformat(), "20.00"]]
    dated = table_facts("invoices.csv", 0, rows)
    assert dated is not None
    line = (f"Counted by the program: Amount where Date from {before.replace(day=1)} to {before}: "
            "1 row (INV-2), total 20.00")
    for question in ("last month's total", "total for last month", "geçen ayın toplamı"):
        assert say(counted_phrases(counted_answer(question, [dated]))) == line, question


def test_a_column_named_inside_another_word_is_not_named() -> None:
    """A column "Net" is not named by "internet": "total amount for internet?" is the Amount's
    total of the Internet row, not also Net's."""
    rows = [["Item", "Net", "Amount"], ["Internet", "10", "12"], ["Phone", "20", "24"]]
    facts = table_facts("e.csv", 0, rows, usual_comma=False)
    assert facts is not None
    assert say(counted_phrases(counted_answer("what is the total amount for internet?", [facts]))) == (
        "Counted by the program: Amount where Item is Internet: 1 row (Internet), total 12")


def test_a_quarter_named_by_a_column_is_that_columns_total() -> None:
    """"Q1 total" of "Region | Q1 | Q2": the column Q1's total, not a quarter of dates the table has none of."""
    facts = table_facts("r.csv", 0, [["Region", "Q1", "Q2"], ["North", "100", "200"], ["South", "50", "70"]],
                        usual_comma=False)
    assert facts is not None
    assert say(counted_phrases(counted_answer("Q1 total", [facts]))) == \
        "Counted by the program: Q1 (column B), all 2 rows: total 150"


SALES = [["Month", "Revenue EUR", "Costs EUR", "Orders"]] + [
    [m, str(r), str(r // 2), "10"] for m, r in zip(
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
        [5200, 5400, 5900, 6100, 6300, 6500, 6700, 6600, 6400, 6200, 6500, 7000], strict=True)]


def test_a_column_named_in_brackets_or_by_its_word_in_the_other_language_is_counted() -> None:
    """"Toplam gelir (Revenue EUR) ne kadar?" of a sales table counted nothing (the person's own word
    before the bracketed name read as a condition no cell holds), nor "Toplam gelir ne kadar?"
    ("gelir": revenue); a column's word in the other language names it both ways, never a column
    the question does not name."""
    facts = table_facts("sales.csv", 0, SALES, usual_comma=False)
    assert facts is not None
    revenue = "Counted by the program: Revenue EUR (column B), all 12 rows: total 74,800"
    line = lambda q: say(counted_phrases(counted_answer(q, [facts])))  # noqa: E731
    for question in ("Toplam gelir (Revenue EUR) ne kadar?", "Toplam gelir ne kadar?", "Toplam hasılat (Revenue EUR) ne kadar?",
                     "Revenue EUR (hasılat) toplamı ne kadar?"):
        assert line(question) == revenue, question
    assert line("Total takings (Revenue EUR)?") == ""  # (a word the program does not know: no figure, not a guess)
    # a bracketed word that says which rows are meant stays a condition (blanked, the whole table was counted)
    dated = table_facts("invoices.csv", 0, [["Invoice", "Customer", "Date", "Amount"], ["F-101", "Ada", "2026-03-02", "1200"],
                                            ["F-102", "Birlik", "2026-03-15", "2400"], ["F-103", "Ada", "2026-04-01", "600"],
                                            ["F-104", "Cem", "2026-04-11", "2400"]])
    assert dated is not None
    march = "2 rows (F-101, F-102), total 3,600"
    for question in ("total of Amount (March)?", "Tutar (Mart) toplamı nedir?", "Toplam Mart (Tutar) nedir?",
                     "total Amount (first quarter)?"):
        assert say(counted_phrases(counted_answer(question, [dated]))).endswith(march), question
    assert say(counted_phrases(counted_answer("Toplam tutar (Amount) ne kadar?", [dated]))).endswith("all 4 rows: total 6,600")
    assert line("Toplam gelir (Revenue EUR) ne kadar ve en yüksek ay hangisi?").startswith(f"{revenue}, largest 7,000")
    assert line("Toplam ödenmemiş (Revenue EUR) ne kadar?") == ""  # (a state no cell holds: which rows, not told)
    turkish = table_facts("gelir.csv", 0, [["Ay", "Gelir (TL)", "Gider (TL)"], ["Ocak", "100,00", "40,00"],
                                            ["Şubat", "250,00", "60,00"]])
    assert turkish is not None
    assert say(counted_phrases(counted_answer("What is the total revenue?", [turkish]))) == \
        "Counted by the program: Gelir (TL) (column B), all 2 rows: total 350.00"
    amounts = table_facts("a.csv", 0, [["Invoice", "Amount"], ["INV-1", "10.00"], ["INV-2", "20.00"]])
    assert amounts is not None
    assert counted_answer("Toplam gelir ne kadar?", [amounts]) == []  # (no revenue column: not the Amount's)


EIGHT = [["INV-1001", "Acme", "1200.00", "paid"], ["INV-1002", "Birch", "2380.50", "unpaid"],
         ["INV-1003", "Cedar", "3200.00", "unpaid"], ["INV-1004", "Delta", "5100.00", "paid"],
         ["INV-1005", "Acme", "1555.25", "unpaid"], ["INV-1006", "Birch", "900.00", "paid"],
         ["INV-1007", "Cedar", "4375.00", "unpaid"], ["INV-1008", "Delta", "600.00", "paid"]]


def test_two_asks_are_counted_each_with_its_own_condition() -> None:
    """"Which invoice is the largest and what is the total of the unpaid ones?": the largest of all
    rows (its row named) and the unpaid ones' total; the largest was said as the unpaid ones'. Said
    in Turkish, pasted, or the other way round: the same. An ask that says nothing but what it asks
    for counts the rows of the ask beside it ("… and what is the total?")."""
    both = ("Counted by the program: Amount (column C), all 8 rows: largest 5,100.00 (INV-1004, Delta); "
            "Amount where Status is unpaid: 4 rows (INV-1002, INV-1003, INV-1005, INV-1007), total 11,510.75")
    assert _line("Which invoice is the largest and what is the total of the unpaid ones?", EIGHT) == both
    assert _line("En büyük fatura hangisi ve ödenmemişlerin toplamı ne kadar?", EIGHT) == both
    table = "\n".join(" | ".join(r) for r in [HEADER, *EIGHT])
    assert _said(f"Which invoice is the largest and what is the total of the unpaid ones?\n\n{table}\n") == both.replace(" (column C)", "")
    assert _line("What is the total of the unpaid ones, and which invoice is the largest?", EIGHT) == (
        "Counted by the program: Amount where Status is unpaid: 4 rows (INV-1002, INV-1003, INV-1005, INV-1007), "
        "total 11,510.75; Amount (column C), all 8 rows: largest 5,100.00 (INV-1004, Delta)")
    unpaid = "Counted by the program: Amount where Status is unpaid: 4 rows (INV-1002, INV-1003, INV-1005, INV-1007), "
    assert _line("How many invoices are unpaid and what is their total?", EIGHT) == unpaid + "total 11,510.75"
    assert _line("What is the total and the average of the unpaid invoices?", EIGHT) == (
        unpaid + "total 11,510.75, average 2,877.69")
    assert _line("How many are paid and how many are unpaid?", EIGHT) == (
        "Counted by the program: 4 rows where Status is paid (INV-1001, INV-1004, INV-1006, INV-1008); "
        "4 rows where Status is unpaid (INV-1002, INV-1003, INV-1005, INV-1007)")


def test_a_later_ask_of_the_rows_keeps_the_condition_before_it_and_turkish_largest_is_read() -> None:
    """Split into its asks, "What is the total of the Acme invoices and how many invoices?" counted the
    second ask of ALL rows ("inv.csv: 5 rows", where Acme has 2), as did "… ve kaç tane?"; "en büyüğü"
    (ğ for k) was no ask at all. A later count naming only the rows goes with the ask before it; a
    "which" ("Which invoice is the largest and …", "… and which invoice is the largest?") is its own still."""
    english = table_facts("inv.csv", 0, [["Invoice", "Client", "Amount", "Status"], ["F-101", "Acme", "450.00", "paid"],
                                         ["F-102", "Birch", "2380.50", "unpaid"], ["F-103", "Acme", "1200.00", "paid"],
                                         ["F-104", "Ada", "3200.00", "unpaid"], ["F-105", "Ada", "780.25", "unpaid"]])
    turkish = table_facts("faturalar.csv", 0, [["Fatura", "Müşteri", "Tutar", "Durum"], ["F-101", "Acme", "450,00", "ödendi"],
                                               ["F-102", "Birch", "2380,50", "ödenmedi"], ["F-104", "Ada", "3200,00", "ödenmedi"],
                                               ["F-105", "Ada", "780,25", "ödenmedi"]], usual_comma=True)
    assert english is not None and turkish is not None
    line = lambda q, f: say(counted_phrases(counted_answer(q, [f])))  # noqa: E731
    acme = "Counted by the program: Amount where Client is Acme: 2 rows (F-101, F-103), total 1,650.00"
    for question in ("What is the total of Acme invoices and how many invoices?", "What is the total for Acme and how many rows?"):
        assert line(question, english) == acme, question
    ada = "Counted by the program: Tutar where Müşteri is Ada: 2 rows (F-104, F-105), total 3,980.25"
    for question in ("Ada'nın faturalarının toplamı ne kadar ve kaç tane?", "Ada'nın faturalarının toplamı ne kadar ve kaç fatura var?"):
        assert line(question, turkish) == ada, question
    assert line("Ödenmemiş faturaların toplamı ve en büyüğü ne?", turkish) == (
        "Counted by the program: Tutar where Durum is ödenmedi: 3 rows (F-102, F-104, F-105), total 6,360.75, largest 3,200.00")
    assert line("Which invoice is the largest and what is the total of the unpaid ones?", english).startswith(
        "Counted by the program: Amount (column C), all 5 rows: largest 3,200.00 (F-104, Ada); ")
