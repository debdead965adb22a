"""Office questions on an English and a Turkish invoice table and a rent table, each with what the
program counts for it (``table_facts.counted_answer``), checked by hand: the figure of the rows it
names, all rows' figures for a plain question, or nothing where it names rows the program cannot
tell (a small model repeats an "all 5 rows" total as the answer to "total outstanding")."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from workstation.core.phrases import say
from workstation.core.table_facts import (
    SheetFacts,
    counted_answer,
    counted_phrases,
    question_lines,
    table_facts,
)

EN = [["Invoice", "Customer", "Date", "Qty", "Unit price", "Amount", "Status"],
      ["INV-101", "ACME Ltd", "2025-01-15", "10", "12.50", "125.00", "paid"],
      ["INV-102", "Bilge Co", "2025-01-28", "4", "300.00", "1200.00", "unpaid"],
      ["INV-103", "ACME Ltd", "2025-02-03", "2", "45.00", "90.00", "unpaid"],
      ["INV-104", "Ceren AS", "2025-02-20", "1", "2500.00", "2500.00", "paid"],
      ["INV-105", "Bilge Co", "2024-12-30", "6", "20.00", "120.00", "unpaid"]]
TR = [["Fatura", "Müşteri", "Tarih", "Adet", "Birim fiyat", "Tutar", "Durum"],
      ["F-101", "ACME Ltd", "15.01.2025", "10", "12,50", "125,00", "ödendi"],
      ["F-102", "Bilge Co", "28.01.2025", "4", "300,00", "1.200,00", "ödenmedi"],
      ["F-103", "ACME Ltd", "03.02.2025", "2", "45,00", "90,00", "ödenmedi"],
      ["F-104", "Ceren AŞ", "20.02.2025", "1", "2.500,00", "2.500,00", "ödendi"],
      ["F-105", "Bilge Co", "30.12.2024", "6", "20,00", "120,00", "ödenmedi"]]
RENT = [["Daire", "Kira (TL)", "Aidat (TL)", "Durum"], ["A-1", "12.500,00", "900,00", "ödendi"],
        ["A-2", "18.750,00", "1.100,00", "ödenmedi"], ["A-3", "9.800,00", "750,00", "ödenmedi"],
        ["B-1", "22.000,00", "1.250,00", "ödendi"], ["B-2", "14.299,99", "900,00", "ödenmedi"],
        ["B-3", "16.500,00", "1.000,00", "ödenmedi"], ["C-1", "15.000,00", "850,00", "ödendi"],
        ["C-2", "10.750,00", "750,00", "ödenmedi"]]

SPLIT = [["Invoice", "Net", "VAT", "Total"], ["INV-1", "100.00", "20.00", "120.00"],
         ["INV-2", "200.00", "40.00", "240.00"], ["INV-3", "50.00", "10.00", "60.00"]]
SPLIT_TR = [["Fatura", "Net Tutar", "KDV", "Toplam"], ["F-1", "100,00", "20,00", "120,00"],
            ["F-2", "200,00", "40,00", "240,00"], ["F-3", "50,00", "10,00", "60,00"]]
STATE_EN = [["Invoice", "Amount", "Status"], ["INV-1", "100.00", "paid"], ["INV-2", "1000.00", "overdue"],
            ["INV-3", "40.00", "open"], ["INV-4", "250.00", "overdue"]]
STATE_TR = [["Fatura", "Tutar", "Durum"], ["F-1", "100,00", "ödendi"], ["F-2", "1.000,00", "gecikmiş"],
            ["F-3", "40,00", "açık"], ["F-4", "250,00", "gecikmiş"]]
SPEND = [["Month", "Spending", "Income"], ["Jan", "100.00", "300.00"], ["Feb", "50.00", "200.00"],
         ["Mar", "25.00", "100.00"]]
SPEND_TR = [["Ay", "Harcama", "Gelir"], ["Ocak", "100,00", "300,00"], ["Şubat", "50,00", "200,00"], ["Mart", "25,00", "100,00"]]
DUE_DATE = [["Invoice", "Due date", "Amount", "Status"], ["I-1", "2025-01-10", "100.00", "paid"],
            ["I-2", "2025-02-10", "50.00", "unpaid"], ["I-3", "2025-03-10", "25.00", "unpaid"]]
ONE_UNPAID = [["Invoice", "Customer", "Amount", "Status"], ["INV-1", "ACME Ltd", "10.00", "unpaid"],
              ["INV-2", "ACME Ltd", "20.00", "unpaid"], ["INV-3", "Bilge Co", "30.00", "paid"]]
# a tenant's column beside the rent's ("Kiracı", one who rents: no form of "Kira"), and the rent's alone
TENANTS = [["Daire", "Kiracı", "Kira", "Durum"], ["A-1", "Ali Yılmaz", "12.500,00", "ödendi"],
           ["A-2", "Ayşe Kaya", "18.750,00", "ödenmedi"], ["A-3", "Ali Yılmaz", "9.800,00", "ödenmedi"],
           ["B-1", "Can Demir", "22.000,00", "ödendi"]]
# what is owed in a column named so ("Amount due") beside a paid/unpaid state: its unpaid rows' (it added up all)
AMOUNT_DUE = [["Invoice", "Customer", "Amount due", "Status"], ["INV-1", "ACME Ltd", "100.00", "paid"],
              ["INV-2", "Bilge Co", "50.00", "unpaid"], ["INV-3", "ACME Ltd", "25.00", "paid"]]
DUE_ONLY = [["Invoice", "Amount due"], ["I-1", "10.00"], ["I-2", "20.00"], ["I-3", "5.00"]]  # (no state: all rows')
RENT_ONLY = [["Daire", "Kira", "Durum"], ["A-1", "12.500,00", "ödendi"], ["A-2", "18.750,00", "ödenmedi"],
             ["A-3", "9.800,00", "ödenmedi"], ["B-1", "22.000,00", "ödendi"]]

# a first-time user's invoices (counting11): a customer "Bob Carter", whose first name is said to a person too
BOB = [["Invoice", "Customer", "Date", "Amount", "Status"], ["INV-201", "Bob Carter", "2025-03-02", "1200.00", "unpaid"],
       ["INV-202", "Alice Green", "2025-03-05", "350.00", "paid"], ["INV-203", "Bob Carter", "2025-03-09", "310.00", "paid"],
       ["INV-204", "Dana White", "2025-03-12", "800.00", "unpaid"], ["INV-205", "Alice Green", "2025-03-15", "90.00", "unpaid"],
       ["INV-206", "Bob Carter", "2025-03-20", "430.00", "unpaid"], ["INV-207", "Dana White", "2025-03-22", "150.00", "paid"],
       ["INV-208", "Evan Brooks", "2025-03-28", "600.00", "paid"]]


# a bookkeeper's workbook (newuser19's "Faturalar 2025.xlsx"): the net amount, its KDV and the gross
# beside it, a paid/unpaid state, a TOPLAM row under the rows; read by the real reader from a real .xlsx
_INVOICES_2025 = [("F-2025-001", "Ege Tekstil A.Ş.", (1, 8), 12500, "ödendi"),
                  ("F-2025-002", "Karşıyaka Gıda Ltd.", (1, 20), 8400, "ödendi"),
                  ("F-2025-003", "Bornova Yapı", (2, 5), 23000, "ödenmedi"),
                  ("F-2025-004", "Ege Tekstil A.Ş.", (2, 18), 6750, "ödendi"),
                  ("F-2025-005", "Alsancak Kırtasiye", (3, 3), 1980, "ödenmedi"),
                  ("F-2025-006", "Karşıyaka Gıda Ltd.", (3, 14), 15200, "ödendi"),
                  ("F-2025-007", "Buca Oto", (3, 27), 4300, "ödenmedi"),
                  ("F-2025-008", "Ege Tekstil A.Ş.", (4, 9), 9800, "ödenmedi"),
                  ("F-2025-009", "Bornova Yapı", (4, 22), 31000, "ödendi"),
                  ("F-2025-010", "Karşıyaka Gıda Ltd.", (5, 6), 7250, "ödenmedi"),
                  ("F-2025-011", "Çiğli Lojistik", (5, 19), 18600, "ödendi"),
                  ("F-2025-012", "Alsancak Kırtasiye", (6, 2), 2640, "ödendi")]


@functools.cache
def _workbook_facts() -> SheetFacts:
    import datetime as dt
    import tempfile

    from docmaker import make_xlsx

    from workstation.core.documents import read_document

    rows: list[list[object]] = [["Fatura No", "Müşteri", "Tarih", "Tutar (TL)", "KDV", "Toplam", "Durum"]]
    rows += [[no, who, dt.date(2025, *day), float(net), net * 0.2, net * 1.2, state]
             for no, who, day, net, state in _INVOICES_2025]
    rows.append(["TOPLAM", None, None, ("formula", "SUM(D2:D13)", 141420.0), ("formula", "SUM(E2:E13)", 28284.0),
                 ("formula", "SUM(F2:F13)", 169704.0), None])
    with tempfile.TemporaryDirectory(prefix="faturalar") as folder:  # (a folder a call was left in /tmp)
        [facts] = read_document(make_xlsx(Path(folder) / "Faturalar 2025.xlsx", [("Faturalar", rows)])).facts
    return facts

# two amounts beside a KDV whose sum neither is (a deposit's, a discount's column)
# the reviewer's table: two days of March, one of April (2025 alone); ACME has one invoice in each quarter
QUARTER = [["Invoice", "Customer", "Date", "Amount"], ["INV-1", "ACME Ltd", "2025-03-04", "1200"],
           ["INV-2", "Bilge Co", "2025-03-18", "800"], ["INV-3", "ACME Ltd", "2025-04-02", "500"]]
# a column whose name holds another's ("Ek kira" holds "Kira"), and quarters a text column names (Q1 of 2 letters)
EXTRA_RENT = [["Daire", "Kira", "Ek kira"], ["1", "100", "5"], ["2", "200", "6"]]
EXTRA_RENT_EN = [["Flat", "Rent", "Extra rent"], ["1", "100", "5"], ["2", "200", "6"]]
QUARTERS = [["Quarter", "Amount"], ["Q1", "100"], ["Q2", "200"], ["Q1", "5"]]
UNEVEN = [["Fatura", "Tutar", "KDV", "Toplam"], ["F-1", "100,00", "20,00", "90,00"], ["F-2", "200,00", "40,00", "150,00"],
          ["F-3", "50,00", "10,00", "60,00"]]


def _facts(table: str) -> SheetFacts:
    if table == "workbook":
        return _workbook_facts()
    facts = {"en": lambda: table_facts("invoices.csv", 0, EN, usual_comma=False),
             "tr": lambda: table_facts("faturalar.csv", 0, TR, usual_comma=True),
             "rent": lambda: table_facts("kira.csv", 0, RENT, usual_comma=True),
             "split": lambda: table_facts("split.csv", 0, SPLIT, usual_comma=False),
             "split_tr": lambda: table_facts("kdv.csv", 0, SPLIT_TR, usual_comma=True),
             "state_en": lambda: table_facts("states.csv", 0, STATE_EN, usual_comma=False),
             "state_tr": lambda: table_facts("durumlar.csv", 0, STATE_TR, usual_comma=True),
             "spend": lambda: table_facts("spending.csv", 0, SPEND, usual_comma=False),
             "spend_tr": lambda: table_facts("harcama.csv", 0, SPEND_TR, usual_comma=True),
             "due_date": lambda: table_facts("due.csv", 0, DUE_DATE, usual_comma=False),
             "one_unpaid": lambda: table_facts("one.csv", 0, ONE_UNPAID, usual_comma=False),
             "tenants": lambda: table_facts("kiracilar.csv", 0, TENANTS, usual_comma=True),
             "rent_only": lambda: table_facts("daireler.csv", 0, RENT_ONLY, usual_comma=True),
             "amount_due": lambda: table_facts("due.csv", 0, AMOUNT_DUE, usual_comma=False),
             "due_only": lambda: table_facts("due.csv", 0, DUE_ONLY, usual_comma=False),
             "uneven": lambda: table_facts("kdv.csv", 0, UNEVEN, usual_comma=True),
             "quarter": lambda: table_facts("q.csv", 0, QUARTER, usual_comma=False),
             "extra_rent": lambda: table_facts("kira.csv", 0, EXTRA_RENT, usual_comma=True),
             "extra_rent_en": lambda: table_facts("rent.csv", 0, EXTRA_RENT_EN, usual_comma=False),
             "quarters": lambda: table_facts("quarters.csv", 0, QUARTERS, usual_comma=False),
             "bob": lambda: table_facts("invoices.csv", 0, BOB, usual_comma=False)}[table]()
    assert facts is not None
    return facts


ALL_EN = "Counted by the program: Amount (column F), all 5 rows: total 4,035.00"
ALL_TR = "Counted by the program: Tutar (column F), all 5 rows: total 4,035.00"
UNPAID_EN = "Counted by the program: Amount where Status is unpaid: 3 rows (INV-102, INV-103, INV-105), total 1,410.00"
UNPAID_TR = "Counted by the program: Tutar where Durum is ödenmedi: 3 rows (F-102, F-103, F-105), total 1,410.00"
PAID_TR = "Counted by the program: Tutar where Durum is ödendi: 2 rows (F-101, F-104), total 2,625.00"
ALL_RENT = ("Counted by the program: Kira (TL) (column B), all 8 rows: total 119,599.99, "
            "Aidat (TL) (column C), all 8 rows: total 7,500.00")

MARCH = "Counted by the program: 3 rows where Tarih from 2025-03-01 to 2025-03-31 (F-2025-005, F-2025-006, F-2025-007)"
Q1 = "Counted by the program: Amount where Date from 2025-01-01 to 2025-03-31: 2 rows (INV-1, INV-2), total 2,000"
H1 = "Counted by the program: Amount where Date from 2025-01-01 to 2025-06-30: 3 rows (INV-1, INV-2, INV-3), total 2,500"
EGE = "Counted by the program: Toplam where Müşteri is Ege Tekstil A.Ş.: 3 rows (F-2025-001, F-2025-004, F-2025-008), total 34,860"
PER_CUSTOMER = ("Counted by the program: rows for each Müşteri (column B): Ege Tekstil A.Ş. 3, Karşıyaka Gıda Ltd. 3, "
                "Bornova Yapı 2, Alsancak Kırtasiye 2, Buca Oto 1, Çiğli Lojistik 1")
PER_CUSTOMER_NET = ("Counted by the program: Tutar (TL) (column D) total for each Müşteri (column B): Bornova Yapı 54,000, "
                    "Karşıyaka Gıda Ltd. 30,850, Ege Tekstil A.Ş. 29,050, Çiğli Lojistik 18,600, Alsancak Kırtasiye 4,620, "
                    "Buca Oto 4,300")
ALL_BOB = "Counted by the program: Amount (column D), all 8 rows: total 3,930.00"
BOB_CARTER = "Counted by the program: Amount where Customer is Bob Carter: 3 rows (INV-201, INV-203, INV-206), total 1,940.00"
ALL_TENANTS = "Counted by the program: Kira (column C), all 4 rows: total 63,050.00"

# (question, table, the line counted: "" for nothing)
CASES = [
    # plain questions keep their line
    ("what is the total?", "en", ALL_EN),
    ("total amount", "en", ALL_EN),
    ("What is the grand total?", "en", ALL_EN),
    ("total of all invoices", "en", ALL_EN),
    ("add up the amounts", "en", ALL_EN),
    ("what is the total?", "tr", ALL_TR),
    ("toplam ne kadar?", "tr", ALL_TR),
    ("toplam tutar ne kadar?", "tr", ALL_TR),
    ("tüm faturaların toplam tutarı", "tr", ALL_TR),
    ("genel toplam", "tr", ALL_TR),
    ("total amount please", "rent", ALL_RENT),
    ("toplam ne kadar?", "rent", ALL_RENT),
    ("how many invoices?", "en", "Counted by the program: invoices.csv: 5 rows"),
    ("kaç fatura var?", "tr", "Counted by the program: faturalar.csv: 5 rows"),
    # the table's own status words, in any form of their verb
    ("total of unpaid invoices", "en", UNPAID_EN),
    ("unpaid total", "en", UNPAID_EN),
    ("How many invoices are unpaid?", "en", "Counted by the program: 3 rows where Status is unpaid (INV-102, INV-103, INV-105)"),
    ("ödenmedi faturaların toplamı", "tr", UNPAID_TR),
    ("ödenmemiş faturaların toplamı", "tr", UNPAID_TR),
    ("ödenmeyen faturaların toplamı", "tr", UNPAID_TR),
    ("ödenmiş faturaların toplamı", "tr", PAID_TR),
    ("kaç fatura ödenmedi?", "tr", "Counted by the program: 3 rows where Durum is ödenmedi (F-102, F-103, F-105)"),
    # a count and a total asked together: both in one counted line (the rows and the amount's total, not the Qty's)
    ("how many invoices are unpaid and what is their total?", "en", UNPAID_EN),
    ("how many unpaid invoices are there and what is the total?", "en", UNPAID_EN),
    ("how many invoices are unpaid and how much is owed?", "en", UNPAID_EN),
    ("kaç fatura ödenmedi ve toplamı ne kadar?", "tr", UNPAID_TR),
    ("kaç fatura ödenmedi ve ne kadar borç var?", "tr", UNPAID_TR),
    ("how many invoices are there and what is the total?", "en",
     "Counted by the program: invoices.csv: 5 rows, Amount (column F), all 5 rows: total 4,035.00"),
    ("kaç fatura var ve toplamı ne kadar?", "tr",
     "Counted by the program: faturalar.csv: 5 rows, Tutar (column F), all 5 rows: total 4,035.00"),
    # a state said in the table's other language: its rows ("unpaid" of "ödenmedi", "ödenmemiş" of "unpaid")
    ("How many invoices are unpaid?", "tr", "Counted by the program: 3 rows where Durum is ödenmedi (F-102, F-103, F-105)"),
    ("sum of unpaid", "tr", UNPAID_TR),
    ("total unpaid amount", "tr", UNPAID_TR),
    ("unpaid total", "tr", UNPAID_TR),
    ("total paid", "tr", PAID_TR),
    ("kaç fatura ödenmedi?", "en", "Counted by the program: 3 rows where Status is unpaid (INV-102, INV-103, INV-105)"),
    ("ödenmedi olanların toplamı", "en", UNPAID_EN),
    ("ödenmemiş faturaların toplamı", "en", UNPAID_EN),
    ("How many flats are unpaid?", "rent", "Counted by the program: 5 rows where Durum is ödenmedi (A-2, A-3, B-2, B-3, C-2)"),
    ("total rent of unpaid flats", "rent",
     "Counted by the program: Kira (TL) where Durum is ödenmedi: 5 rows (A-2, A-3, B-2, B-3, C-2), total 70,099.99"),
    ("total of overdue invoices", "state_tr",
     "Counted by the program: Tutar where Durum is gecikmiş: 2 rows (F-2, F-4), total 1,250.00"),
    ("how many invoices are open?", "state_tr", "Counted by the program: 1 row where Durum is açık (F-3)"),
    ("gecikmiş faturaların toplamı", "state_en",
     "Counted by the program: Amount where Status is overdue: 2 rows (INV-2, INV-4), total 1,250.00"),
    ("kaç fatura açık?", "state_en", "Counted by the program: 1 row where Status is open (INV-3)"),
    ("total of unpaid invoices", "state_tr", ""),  # (a state of no cell, in either language: nothing)
    ("total of not paid invoices", "tr", ""),  # (a state said with "not": nothing)
    # what is owed: the unpaid rows' amount, where one column says paid and unpaid and one is an amount's
    ("how much do customers owe in total?", "en", UNPAID_EN),
    ("how much do customers owe in total?", "tr", UNPAID_TR),
    ("borç toplamı", "tr", UNPAID_TR),
    ("müşterilerin toplam borcu ne kadar?", "tr", UNPAID_TR),
    ("borç toplamı", "en", UNPAID_EN),
    ("how much does ACME Ltd owe in total?", "en",
     "Counted by the program: Amount where Customer is ACME Ltd and Status is unpaid: 1 row (INV-103), total 90.00"),
    # a named customer's, asked without "total" too; a name no cell holds: nothing, not all unpaid rows'
    ("how much does ACME owe?", "en",
     "Counted by the program: Amount where Customer is ACME Ltd and Status is unpaid: 1 row (INV-103), total 90.00"),
    ("ACME'nin borcu ne kadar?", "tr",
     "Counted by the program: Tutar where Müşteri is ACME Ltd and Durum is ödenmedi: 1 row (F-103), total 90.00"),
    # one who owes nothing: said so, not "0 rows where Customer is Ceren AS and Status is unpaid"
    ("how much does Ceren owe?", "en", "Counted by the program: Ceren AS owes nothing (no unpaid rows)"),
    ("Ceren'in borcu ne kadar?", "tr", "Counted by the program: Ceren AŞ owes nothing (no unpaid rows)"),
    ("how much does Zeta Ltd owe?", "en", ""),
    ("how much does Zeta Ltd owe in total?", "en", ""),
    ("Zeta'nın toplam borcu ne kadar?", "tr", ""),
    ("how much does ACME owe?", "rent", ""),
    ("how much does ACME owe?", "state_en", ""),
    ("borç toplamı", "rent", ""),  # (Kira and Aidat: which one is owed, not said)
    ("how much do customers owe in total?", "rent", ""),
    ("total owed", "split", ""),  # (no paid/unpaid column)
    ("total owed", "state_en", ""),  # (overdue and open, no unpaid: not told)
    # what is outstanding or due: what is owed, by the same rule
    ("total outstanding", "en", UNPAID_EN),
    ("total due", "en", UNPAID_EN),
    ("what is the total amount due?", "tr", UNPAID_TR),
    ("total outstanding", "tr", UNPAID_TR),
    ("total due", "due_date", "Counted by the program: Amount where Status is unpaid: 2 rows (I-2, I-3), total 75.00"),  # (a date's "due")
    ("total outstanding", "rent", ""),
    # "due" or "owe" of a column named so ("Amount due") beside paid/unpaid: its unpaid rows, not all its rows
    ("total due", "amount_due", "Counted by the program: Amount due where Status is unpaid: 1 row (INV-2), total 50.00"),
    ("what is the total amount due?", "amount_due",
     "Counted by the program: Amount due where Status is unpaid: 1 row (INV-2), total 50.00"),
    ("how much do customers owe in total?", "amount_due",
     "Counted by the program: Amount due where Status is unpaid: 1 row (INV-2), total 50.00"),
    ("total due", "due_only", "Counted by the program: Amount due (column B), all 3 rows: total 35.00"),
    ("total due", "split", ""),
    ("total outstanding", "state_en", ""),
    ("total due", "state_tr", ""),
    # a spending column's total by its word in either language; none without one
    ("total spending", "spend", "Counted by the program: Spending (column B), all 3 rows: total 175.00"),
    ("harcama toplamı", "spend", "Counted by the program: Spending (column B), all 3 rows: total 175.00"),
    ("total spending", "spend_tr", "Counted by the program: Harcama (column B), all 3 rows: total 175.00"),
    ("total spending", "en", ""),
    ("toplam harcama", "tr", ""),
    ("total expenses", "spend", ""),  # ("expenses": no column's word, not Spending's and Income's totals)
    # a state the table's cells do not say: nothing, never all rows
    ("total of open invoices", "en", ""),
    ("total of overdue invoices", "en", ""),
    ("açık faturaların toplamı", "en", ""),
    ("tahsil edilmemiş tutar toplamı", "tr", ""),
    ("vadesi geçmiş toplam", "tr", ""),  # (past due: no cell says which unpaid invoices are)
    # a count of a text column's things: its different values, never the rows
    ("how many customers?", "en", "Counted by the program: Customer (column B): 3 different values (ACME Ltd, Bilge Co, Ceren AS)"),
    ("kaç müşteri var?", "tr", "Counted by the program: Müşteri (column B): 3 different values (ACME Ltd, Bilge Co, Ceren AŞ)"),
    ("how many customers?", "tr", "Counted by the program: Müşteri (column B): 3 different values (ACME Ltd, Bilge Co, Ceren AŞ)"),
    ("kaç müşteri var?", "en", "Counted by the program: Customer (column B): 3 different values (ACME Ltd, Bilge Co, Ceren AS)"),
    ("how many suppliers?", "tr", ""),  # ("suppliers": no column's word in either language)
    ("how many customers are there in total?", "rent", ""),
    # a count of a text column's things with a state: its different values in those rows
    # (said by the thing's own word as the question says it: "2 customers", not "Customer: 2 different values")
    ("how many customers are unpaid?", "en", "Counted by the program: 2 customers where Status is unpaid (Bilge Co, ACME Ltd)"),
    ("kaç müşteri ödenmedi?", "tr", "Counted by the program: 2 müşteri where Durum is ödenmedi (Bilge Co, ACME Ltd)"),
    ("how many customers are unpaid?", "one_unpaid", "Counted by the program: 1 customer where Status is unpaid (ACME Ltd)"),
    ("how many customers are not paid?", "en", ""),  # (a state said with "not": nothing)
    # whose rows: the owner named after "how many"/"kaç" is counted, not the invoices it names too
    ("kaç müşterinin faturası ödenmedi?", "tr", "Counted by the program: 2 müşteri where Durum is ödenmedi (Bilge Co, ACME Ltd)"),
    ("how many customers have unpaid invoices?", "en", "Counted by the program: 2 customers where Status is unpaid (Bilge Co, ACME Ltd)"),
    ("how many customers have invoices?", "en",
     "Counted by the program: Customer (column B): 3 different values (ACME Ltd, Bilge Co, Ceren AS)"),
    ("kaç müşterinin faturası gecikti?", "tr", ""),  # (a state no cell says: nothing, not the customers of all rows)
    ("how many customers have overdue invoices?", "en", ""),
    ("how many customers are overdue?", "en", ""),  # (a state no cell says: nothing, not the customers of all rows)
    ("kaç daire var?", "rent", "Counted by the program: kira.csv: 8 rows"),  # (a flat a row)
    ("toplam kaç TL", "tr", "Counted by the program: Adet (column D), all 5 rows: total 23, Tutar (column F), all 5 rows: total 4,035.00"),
    # an amount with its tax: the gross column's where the table splits each row's amount, else nothing
    ("What is the total with VAT?", "split", "Counted by the program: Total (column D), the amount with VAT, all 3 rows: total 420.00"),
    ("KDV dahil toplam", "split_tr", "Counted by the program: Toplam (column D), the amount with KDV, all 3 rows: total 420.00"),
    ("KDV'li toplam ne kadar?", "split_tr", "Counted by the program: Toplam (column D), the amount with KDV, all 3 rows: total 420.00"),
    ("What is the total without VAT?", "split", "Counted by the program: Net (column B), the amount without VAT, all 3 rows: total 350.00"),
    ("What is the total with VAT?", "en", ""),  # (whether Amount holds the VAT: not said)
    ("KDV dahil toplam", "tr", ""),
    # a time said from today: of the computer's date (test_counted_edges), nothing without a column of dates
    ("bu sene toplam kira", "rent", ""),
    # a threshold in TL: on the column a word of the question names, else nothing
    ("15.000 TL'den fazla kira ödeyen daireler hangileri?", "rent",
     "Counted by the program: 3 rows where Kira (TL) over 15,000 (A-2, B-1, B-3)"),
    ("Kirası 15.000 TL'den fazla olan daireler hangileri?", "rent",
     "Counted by the program: 3 rows where Kira (TL) over 15,000 (A-2, B-1, B-3)"),
    ("15.000 TL'den fazla olan daireler hangileri?", "rent", ""),
    # a column's common word in the other language names it ("rent" of "Kira (TL)")
    ("which flats pay more than 15,000 TL rent?", "rent", "Counted by the program: 3 rows where Kira (TL) over 15,000 (A-2, B-1, B-3)"),
    ("total rent", "rent", "Counted by the program: Kira (TL) (column B), all 8 rows: total 119,599.99"),
    ("which flats pay more than 15,000 TL deposit?", "rent", ""),  # ("deposit": no column's word)
    # a column's word no column has: nothing, never another amount column's figure
    ("total VAT", "en", ""),
    ("what is the total VAT?", "en", ""),
    ("total discount", "en", ""),
    ("average discount", "en", ""),
    ("total VAT of unpaid invoices", "en", ""),
    ("toplam KDV", "tr", ""),
    ("KDV toplamı", "tr", ""),
    ("toplam indirim", "tr", ""),
    ("toplam vergi", "tr", ""),
    ("total rent", "en", ""),
    ("total VAT", "split", "Counted by the program: VAT (column C), all 3 rows: total 70.00"),  # (not also Total's, named by "total")
    ("toplam KDV", "split_tr", "Counted by the program: KDV (column C), all 3 rows: total 70.00"),
    ("what is the total?", "split", "Counted by the program: Total (column D), all 3 rows: total 420.00"),
    ("total quantity", "en", "Counted by the program: Qty (column D), all 5 rows: total 23"),  # (a word any quantity answers to)
    # a column's word with an ending that makes another word names no column: "kiracı" (a tenant) is no
    # "kira", "rental" no "rent"; its case and plural endings do ("kiraların", "rents")
    ("kaç kiracı var?", "tenants", "Counted by the program: Kiracı (column B): 3 different values (Ali Yılmaz, Ayşe Kaya, Can Demir)"),
    ("kaç kiracı var?", "rent_only", ""),  # (not its 4 rows as tenants)
    # tenants in English, and a "total" of them: their count (different tenants), not the rent's total
    ("how many tenants?", "tenants", "Counted by the program: Kiracı (column B): 3 different values (Ali Yılmaz, Ayşe Kaya, Can Demir)"),
    ("toplam kiracı", "tenants", "Counted by the program: Kiracı (column B): 3 different values (Ali Yılmaz, Ayşe Kaya, Can Demir)"),
    ("total tenants", "tenants", "Counted by the program: Kiracı (column B): 3 different values (Ali Yılmaz, Ayşe Kaya, Can Demir)"),
    ("toplam kira", "tenants", "Counted by the program: Kira (column C), all 4 rows: total 63,050.00"),
    ("how many tenants?", "rent_only", ""),
    ("toplam kiracı", "rent_only", ""),
    ("kaç kiracı var?", "rent", ""),
    ("total rental", "rent_only", ""),
    ("kiracıların toplamı", "rent", ""),
    ("kiralık daire toplamı", "rent_only", ""),
    ("kiraların toplamı", "rent_only", "Counted by the program: Kira (column B), all 4 rows: total 63,050.00"),
    ("total rents", "rent_only", "Counted by the program: Kira (column B), all 4 rows: total 63,050.00"),
    ("Kirası 15.000 TL'den fazla olan daireler hangileri?", "tenants", "Counted by the program: 2 rows where Kira over 15,000 (A-2, B-1)"),
    # a figure for each value of a text column: its rows, or an amount's total, most first (it said all 12 rows)
    ("Hangi müşterinin kaç faturası var?", "workbook", PER_CUSTOMER),
    ("how many invoices does each customer have?", "workbook", PER_CUSTOMER),
    ("how many invoices per customer?", "workbook", PER_CUSTOMER),
    ("her müşterinin toplam tutarı", "workbook", PER_CUSTOMER_NET),
    ("total amount per customer", "workbook", PER_CUSTOMER_NET),
    ("müşteri başına toplam tutar", "workbook", PER_CUSTOMER_NET),
    ("how many invoices does each customer have?", "en",
     "Counted by the program: rows for each Customer (column B): ACME Ltd 2, Bilge Co 2, Ceren AS 1"),
    ("her müşterinin toplam tutarı", "tr",
     "Counted by the program: Tutar (column F) total for each Müşteri (column B): Ceren AŞ 2,500.00, Bilge Co 1,320.00, ACME Ltd 215.00"),
    ("how many invoices does each supplier have?", "workbook", ""),  # (no such column: nothing, not all rows)
    ("her ayın toplamı", "workbook", ""),  # (a month's figures: not told by a value's)
    ("how many flats does each customer have?", "rent", ""),
    ("which customer has how many unpaid invoices?", "workbook", ""),  # (a value's figure of some rows: not told)
    ("what is the total of each column?", "split", "Counted by the program: Total (column D), all 3 rows: total 420.00"),
    # a month: the rows of its days, of the table's one year or the year said (it counted nothing)
    ("Mart ayında kaç fatura kesildi?", "workbook", MARCH),
    ("how many invoices in March?", "workbook", MARCH),
    ("Mart'ta kaç fatura var?", "workbook", MARCH),
    ("martta kaç fatura var?", "workbook", MARCH),
    ("how many invoices in March 2025?", "workbook", MARCH),
    ("Şubat ayında kesilen faturaların toplamı", "workbook",
     "Counted by the program: Toplam where Tarih from 2025-02-01 to 2025-02-28: 2 rows (F-2025-003, F-2025-004), total 35,700"),
    ("how many invoices in May?", "workbook",
     "Counted by the program: 2 rows where Tarih from 2025-05-01 to 2025-05-31 (F-2025-010, F-2025-011)"),
    ("how many invoices in January 2025?", "en",
     "Counted by the program: 2 rows where Date from 2025-01-01 to 2025-01-31 (INV-101, INV-102)"),
    ("total for December 2024", "en", "Counted by the program: Amount where Date from 2024-12-01 to 2024-12-31: 1 row (INV-105), total 120.00"),
    ("how many invoices in January?", "en", ""),  # (2024's and 2025's days: which January, not said)
    ("Ocak'ta kaç fatura var?", "tr", ""),
    ("how many invoices in March and April?", "workbook", ""),  # (two months: not told)
    ("total since March", "workbook", ""),
    ("Mart'ta kaç daire ödedi?", "rent", ""),  # (no column of dates)
    ("total spending in March", "spend", ""),
    ("Mart ayında toplam harcama ne kadar?", "spend_tr", "Counted by the program: Harcama where Ay is Mart: 1 row (Mart), total 25.00"),  # (a cell's)
    # a quarter, a half, a year: the rows of its days, of the table's one year or the year said, said by its first
    # and last day (it counted all rows: "What is the total for Q1?" gave 2,500, and ACME's Q1 count all ACME's rows)
    ("What is the total for Q1?", "quarter", Q1),
    ("how many invoices does ACME have in Q1?", "quarter",
     "Counted by the program: 1 row where Customer is ACME Ltd and Date from 2025-01-01 to 2025-03-31 (INV-1)"),
    ("total for Q1 2025", "quarter", Q1),
    ("2025 Q1 total", "quarter", Q1),
    ("total in the first quarter", "quarter", Q1),
    ("total for the 1st quarter", "quarter", Q1),
    ("ilk çeyrek toplamı", "quarter", Q1),
    ("1. çeyrek toplamı", "quarter", Q1),
    ("birinci çeyreğin toplamı", "quarter", Q1),
    ("2025'in ilk çeyreği toplamı", "quarter", Q1),
    ("Q2 total", "quarter", "Counted by the program: Amount where Date from 2025-04-01 to 2025-06-30: 1 row (INV-3), total 500"),
    ("ilk çeyrekte kaç fatura kesildi?", "workbook", "Counted by the program: 7 rows where Tarih from 2025-01-01 to 2025-03-31 "
     "(F-2025-001, F-2025-002, F-2025-003, F-2025-004, F-2025-005, F-2025-006, F-2025-007)"),
    ("how many invoices in the 2nd quarter?", "workbook", "Counted by the program: 5 rows where Tarih from 2025-04-01 to 2025-06-30 "
     "(F-2025-008, F-2025-009, F-2025-010, F-2025-011, F-2025-012)"),
    ("total for Q4 2024", "en", "Counted by the program: Amount where Date from 2024-10-01 to 2024-12-31: 1 row (INV-105), total 120.00"),
    ("2025'in ilk çeyreği toplamı", "tr",
     "Counted by the program: Tutar where Tarih from 2025-01-01 to 2025-03-31: 4 rows (F-101, F-102, F-103, F-104), total 3,915.00"),
    ("first half total", "quarter", H1),
    ("H1 total", "quarter", H1),
    ("ilk yarı toplamı", "quarter", H1),
    ("yılın ikinci yarısında kaç fatura var?", "quarter", "Counted by the program: 0 rows where Date from 2025-07-01 to 2025-12-31"),
    ("total in 2025", "quarter", "Counted by the program: Amount where Date in 2025: 3 rows (INV-1, INV-2, INV-3), total 2,500"),
    ("2025'te kaç fatura var?", "quarter", "Counted by the program: 3 rows where Date in 2025 (INV-1, INV-2, INV-3)"),
    ("2025 yılında toplam", "quarter", "Counted by the program: Amount where Date in 2025: 3 rows (INV-1, INV-2, INV-3), total 2,500"),
    ("total for Q1", "en", ""),  # (2024's and 2025's days: which year's, not said)
    ("ilk çeyrek toplamı", "tr", ""),
    ("first half total", "en", ""),
    ("how many invoices in Q1 and Q2?", "quarter", ""),  # (two quarters, a quarter and a month, one not a year's: not told)
    ("total for the first quarter of March", "quarter", ""),
    ("H3 total", "quarter", ""),
    ("total since Q1", "quarter", ""),
    ("Q1'den sonra toplam", "quarter", ""),
    ("ilk çeyrek toplam kira", "rent", ""),  # (no column of dates)
    # a named value called a firm after its name ("firmasının", "company's"): its rows (it counted nothing)
    ("Ege Tekstil A.Ş. firmasının faturalarının toplamı ne kadar?", "workbook", EGE),
    ("Ege Tekstil firmasının toplamı", "workbook", EGE),
    ("Ege Tekstil şirketinin fatura toplamı", "workbook", EGE),
    ("Ege Tekstil A.Ş.'nin faturalarının toplamı ne kadar?", "workbook", EGE),
    ("Ege Tekstil A.Ş. firmasının kaç faturası var?", "workbook",
     "Counted by the program: 3 rows where Müşteri is Ege Tekstil A.Ş. (F-2025-001, F-2025-004, F-2025-008)"),
    ("total of ACME company's invoices", "en", "Counted by the program: Amount where Customer is ACME Ltd: 2 rows (INV-101, INV-103), total 215.00"),
    ("Zeta firmasının faturalarının toplamı ne kadar?", "workbook", ""),  # (a name no cell holds: nothing, not all rows)
    ("Zeta Ltd company's total", "en", ""),
    # a customer named by a name alone: its rows where a cell holds it, else nothing (not all rows' total)
    ("total amount of Zeta", "en", ""),
    ("Zeta'nın toplam tutarı", "tr", ""),
    ("Zeta's total", "en", ""),
    ("total amount of ACME", "en", "Counted by the program: Amount where Customer is ACME Ltd: 2 rows (INV-101, INV-103), total 215.00"),
    ("ACME'nin toplam tutarı", "tr", "Counted by the program: Tutar where Müşteri is ACME Ltd: 2 rows (F-101, F-103), total 215.00"),
    ("What is the Total Amount?", "en", ALL_EN),  # (a question's first word, and a column's, with a capital: no name)
    ("What is the total in Excel?", "en", ALL_EN),
    # a capitalised word said to or of a person, or a unit, is no customer's name (the count was lost)
    ("Can you tell me how many invoices are unpaid, Bob?", "en",
     "Counted by the program: 3 rows where Status is unpaid (INV-102, INV-103, INV-105)"),
    ("As the CEO asked, how many invoices are unpaid?", "en",
     "Counted by the program: 3 rows where Status is unpaid (INV-102, INV-103, INV-105)"),
    ("What is the total amount in EUR?", "en", ALL_EN),
    # a first name said to a person, at the start or end set off by a comma, after thanks or with Hanım/Bey,
    # is no customer's though a cell begins with it ("…, Bob?" counted Bob Carter's rows); said of one, it is
    ("what is the total, Bob?", "bob", ALL_BOB),
    ("Bob, what is the total?", "bob", ALL_BOB),
    ("Thanks Bob, what is the total?", "bob", ALL_BOB),
    ("what is the total? Thanks Bob", "bob", ALL_BOB),
    ("how many invoices are unpaid, Bob?", "bob",
     "Counted by the program: 4 rows where Status is unpaid (INV-201, INV-204, INV-205, INV-206)"),
    ("total for Bob", "bob", BOB_CARTER),
    ("Bob's invoices total", "bob", BOB_CARTER),
    ("Bob Carter's total", "bob", BOB_CARTER),
    ("For Bob, what is the total?", "bob", BOB_CARTER),
    ("what is the total, Bob Carter?", "bob", BOB_CARTER),  # (a whole cell's name: its rows)
    ("Ayşe, toplam kira ne?", "tenants", ALL_TENANTS),
    ("toplam kira ne Ayşe Hanım?", "tenants", ALL_TENANTS),
    ("Merhaba Ayşe, toplam kira ne kadar?", "tenants", ALL_TENANTS),
    ("Ayşe'nin toplam kirası", "tenants", "Counted by the program: Kira where Kiracı is Ayşe Kaya: 1 row (A-2), total 18,750.00"),
    # which owes, bought or has the most (or least): the figure per value in that order; what each owes its unpaid
    # rows' ("which customer owes the most money?" said "4 rows where Status is unpaid", which answers nothing)
    ("which customer owes the most money?", "bob",
     "Counted by the program: Bob Carter owes the most: 1,630.00; then Dana White 800.00, Alice Green 90.00"),
    ("which customer owes the least?", "bob",
     "Counted by the program: Alice Green owes the least: 90.00; then Dana White 800.00, Bob Carter 1,630.00"),
    ("en çok borcu olan müşteri hangisi?", "tr", "Counted by the program: Bilge Co owes the most: 1,320.00; then ACME Ltd 90.00"),
    ("en çok borcu olan müşteri", "tr", "Counted by the program: Bilge Co owes the most: 1,320.00; then ACME Ltd 90.00"),
    ("en az borcu olan müşteri kim?", "tr", "Counted by the program: ACME Ltd owes the least: 90.00; then Bilge Co 1,320.00"),
    ("which customer bought the most?", "bob", "Counted by the program: Amount (column D) total for each Customer (column B), "
     "the most first: Bob Carter 1,940.00, Dana White 950.00, Evan Brooks 600.00, Alice Green 440.00"),
    ("en çok ciro hangi müşteriden?", "tr", "Counted by the program: Tutar (column F) total for each Müşteri (column B), "
     "the most first: Ceren AŞ 2,500.00, Bilge Co 1,320.00, ACME Ltd 215.00"),
    ("which customer has the most invoices?", "bob", "Counted by the program: rows for each Customer (column B), "
     "the most first: Bob Carter 3, Alice Green 2, Dana White 2, Evan Brooks 1"),
    ("en az faturası olan müşteri hangisi?", "tr",
     "Counted by the program: rows for each Müşteri (column B), the fewest first: Ceren AŞ 1, ACME Ltd 2, Bilge Co 2"),
    ("which customer owes the most?", "rent", ""),  # (no customers; Kira and Aidat: which is owed, not told)
    # "with VAT" of Tutar | KDV | Toplam: the net is the amount its KDV makes the Toplam, row by row (it said nothing)
    ("KDV dahil toplam ne kadar?", "workbook", "Counted by the program: Toplam (column F), the amount with KDV, all 12 rows: total 169,704"),
    ("What is the total with VAT?", "workbook", "Counted by the program: Toplam (column F), the amount with KDV, all 12 rows: total 169,704"),
    ("KDV hariç toplam ne kadar?", "workbook",
     "Counted by the program: Tutar (TL) (column D), the amount without KDV, all 12 rows: total 141,420"),
    ("KDV dahil toplam ne kadar?", "uneven", ""),  # (Tutar and its KDV do not make Toplam: which holds the tax, not told)
    ("KDV hariç toplam ne kadar?", "uneven", ""),
    # the longest column name said wins over a shorter one inside it ("ek kira" said Kira's total too)
    ("toplam ek kira", "extra_rent", "Counted by the program: Ek kira (column C), all 2 rows: total 11"),
    ("ek kira toplamı", "extra_rent", "Counted by the program: Ek kira (column C), all 2 rows: total 11"),
    ("ek kiranın toplamı", "extra_rent", "Counted by the program: Ek kira (column C), all 2 rows: total 11"),
    ("toplam kira", "extra_rent", "Counted by the program: Kira (column B), all 2 rows: total 300"),
    ("kira ve ek kira toplamı", "extra_rent",
     "Counted by the program: Kira (column B), all 2 rows: total 300, Ek kira (column C), all 2 rows: total 11"),
    ("total extra rent", "extra_rent_en", "Counted by the program: Extra rent (column C), all 2 rows: total 11"),
    ("total rent", "extra_rent_en", "Counted by the program: Rent (column B), all 2 rows: total 300"),
    # a quarter a cell says ("Q1" of a column Quarter): that value's rows, not a quarter of a year with no dates
    ("total for Q1", "quarters", "Counted by the program: Amount where Quarter is Q1: 2 rows (Q1, Q1), total 105"),
    ("Q2 total", "quarters", "Counted by the program: Amount where Quarter is Q2: 1 row (Q2), total 200"),
    # the sheet's own words with a case ending ("Excel'deki", "dosyasındaki") before what is counted: no condition
    ("Excel'deki toplam tutar", "workbook", "Counted by the program: Toplam (column F), all 12 rows: total 169,704"),
    ("Excel’in toplamı", "workbook", "Counted by the program: Toplam (column F), all 12 rows: total 169,704"),
    ("Excel dosyasındaki toplam tutar", "workbook", "Counted by the program: Toplam (column F), all 12 rows: total 169,704"),
    ("Tablosundaki toplam", "workbook", "Counted by the program: Toplam (column F), all 12 rows: total 169,704"),
    ("What is the total in Excel?", "workbook", "Counted by the program: Toplam (column F), all 12 rows: total 169,704"),
]


@pytest.mark.parametrize(("question", "table", "line"), CASES)
def test_an_office_question_counts_its_rows_all_rows_or_nothing(question: str, table: str, line: str) -> None:
    assert say(counted_phrases(counted_answer(question, [_facts(table)]))) == line


def test_a_count_of_things_with_a_state_is_said_in_turkish() -> None:
    """"kaç müşteri ödenmedi?" on a Turkish screen: the unpaid rows' different customers, in Turkish."""
    from workstation.tui.i18n import Texts

    assert say(counted_phrases(counted_answer("kaç müşteri ödenmedi?", [_facts("tr")])), Texts("tr").get) == (
        "Programın hesabı: Durum değeri ödenmedi olan satırlarda 2 farklı müşteri (Bilge Co, ACME Ltd)")
    # (a reply's record kept before the count had its word: said by the column's name, as it was)
    item = {"what": "where", "title": "f.csv", "conditions": [{"name": "Durum", "letter": "G", "is": ["ödenmedi"]}],
            "rows": "2", "listed": ["Bilge Co", "ACME Ltd"], "name": "Müşteri", "letter": "B", "distinct": True, "figures": []}
    assert say(counted_phrases([item])) == (
        "Counted by the program: Müşteri where Durum is ödenmedi: 2 different values (Bilge Co, ACME Ltd)")


def test_the_amount_with_vat_is_said_in_turkish() -> None:
    """"KDV dahil toplam" on a Turkish screen: the gross column's total, said to be with the tax."""
    from workstation.tui.i18n import Texts

    assert say(counted_phrases(counted_answer("KDV dahil toplam", [_facts("split_tr")])), Texts("tr").get) == (
        "Programın hesabı: Toplam (D sütunu), KDV dahil tutar, 3 satırın tümü: toplam 420,00")


def test_a_debt_of_a_table_with_two_amount_columns_counts_nothing() -> None:
    """"what is the total debt?" of a table with Amount and Paid amount beside paid/unpaid: which
    column is owed the program cannot tell (Amount less Paid amount is), so it counts nothing; not
    the unpaid rows' Amount (250.00, where 240.00 is owed), nor every amount column's total."""
    facts = table_facts("two.csv", 0, [["Invoice", "Customer", "Amount", "Paid amount", "Status"],
                                       ["INV-1", "ACME", "100.00", "100.00", "paid"],
                                       ["INV-2", "Bilge", "200.00", "0.00", "unpaid"],
                                       ["INV-3", "Ceren", "50.00", "10.00", "unpaid"]], usual_comma=False)
    assert facts is not None
    assert say(counted_phrases(counted_answer("what is the total debt?", [facts]))) == ""


def test_a_total_with_gst_of_a_table_that_does_not_split_it_counts_nothing() -> None:
    """"total incl. GST" of a table with one Amount column: whether its amounts hold the tax the
    program cannot tell, so it counts nothing (not Amount's total, said as if it held GST)."""
    assert say(counted_phrases(counted_answer("total incl. GST", [_facts("en")]))) == ""


def test_a_count_of_things_with_a_state_keeps_the_figure_asked_beside_it() -> None:
    """"how many customers are unpaid and what is the total amount?": the unpaid rows' different
    customers, and their Amount's total beside them (the count alone dropped the figure asked)."""
    assert say(counted_phrases(counted_answer("how many customers are unpaid and what is the total amount?",
                                              [_facts("en")]))) == (
        "Counted by the program: 2 customers where Status is unpaid (Bilge Co, ACME Ltd); "
        "Amount where Status is unpaid: 3 rows (INV-102, INV-103, INV-105), total 1,410.00")


def test_a_vat_row_with_its_rate_among_the_data_rows_is_one_of_them() -> None:
    """A row "VAT 20%" between two expense rows, a Total under them: a row of the data (its 200.00
    in the Total's 1,500.00), counted; only the tax rows in the block under the data are left out."""
    facts = table_facts("expenses.csv", 0, [["Item", "Amount"], ["Rent", "1000.00"], ["VAT 20%", "200.00"],
                                            ["Office", "300.00"], ["Total", "1500.00"]], usual_comma=False)
    assert facts is not None and facts.rows == 3
    assert say(counted_phrases(counted_answer("what is the total?", [facts]))) == (
        "Counted by the program: Amount (column B), all 3 rows: total 1,500.00")


def test_a_column_whose_name_begins_with_a_state_word_is_not_that_state() -> None:
    """"Açıklama" (description) begins with "açık" (open), yet names no state: "total of open
    invoices" of Invoice | Açıklama | Amount counts nothing, not all rows' total as the open ones'."""
    facts = table_facts("note.csv", 0, [["Invoice", "Açıklama", "Amount"], ["INV-1", "kira", "100.00"],
                                        ["INV-2", "elektrik", "50.00"]], usual_comma=False)
    assert facts is not None
    assert say(counted_phrases(counted_answer("total of open invoices", [facts]))) == ""
    assert say(counted_phrases(counted_answer("how many open invoices?", [facts]))) == ""


def test_an_english_question_on_a_turkish_sheet_names_its_column_by_the_english_word() -> None:
    """"total amount of unpaid customer invoices" of Fatura | Müşteri | … | Durum: "customer" is
    Müşteri's word in English, no value the question puts before what it counts: the unpaid rows'
    Tutar, not nothing."""
    assert say(counted_phrases(counted_answer("total amount of unpaid customer invoices", [_facts("tr")]))) == (
        "Counted by the program: Tutar where Durum is ödenmedi: 3 rows (F-102, F-103, F-105), total 1,410.00")


def test_a_table_of_vat_by_rate_keeps_its_rows() -> None:
    """A VAT breakdown by rate (each row "KDV %10", "KDV %20": data rows, common under Turkish
    invoices) lost every row to the tax-row rule (review28): 0 rows, 0 columns, nothing counted. A
    tax row with its rate is left out only below the data, and a total row still is."""
    facts = table_facts("kdv.csv", 0, [["Oran", "Matrah", "KDV"], ["KDV %10", "5.000", "500"],
                                       ["KDV %20", "2.000", "400"]], usual_comma=True)
    assert facts is not None and facts.rows == 2
    assert say(counted_phrases(counted_answer("KDV toplamı ne kadar?", [facts]))) == (
        "Counted by the program: KDV (column C), all 2 rows: total 900")
    with_total = table_facts("kdv.csv", 0, [["Oran", "Matrah", "KDV"], ["KDV %10", "5.000", "500"],
                                            ["KDV %20", "2.000", "400"], ["Toplam", "7.000", "900"]], usual_comma=True)
    assert with_total is not None and with_total.rows == 2


def test_total_vat_of_a_table_without_vat_counts_nothing_either_language() -> None:
    """"what is the total VAT?" of a table with no VAT/KDV column said the Amount column's total as
    the program's count (the model was given it too: review28); "total with VAT" already counted nothing."""
    assert say(counted_phrases(counted_answer("what is the total VAT?", [_facts("en")]))) == ""
    assert say(counted_phrases(counted_answer("toplam KDV ne kadar?", [_facts("tr")]))) == ""


def test_a_count_for_each_value_is_said_in_turkish_and_cut_after_ten() -> None:
    """"Hangi müşterinin kaç faturası var?" on a Turkish screen; of more than ten values, the ten
    with most rows and how many more."""
    from workstation.tui.i18n import Texts

    assert say(counted_phrases(counted_answer("Hangi müşterinin kaç faturası var?", [_facts("workbook")])),
               Texts("tr").get) == ("Programın hesabı: her Müşteri (B sütunu) değeri için satır sayısı: Ege Tekstil A.Ş. 3, "
                                    "Karşıyaka Gıda Ltd. 3, Bornova Yapı 2, Alsancak Kırtasiye 2, Buca Oto 1, Çiğli Lojistik 1")
    rows = [["Fatura", "Müşteri", "Tutar"]] + [[f"F-{i}", f"Firma {i % 12}", "10"] for i in range(24)] + [["F-99", "Firma 0", "5"]]
    facts = table_facts("f.csv", 0, rows, usual_comma=True)
    assert facts is not None
    assert say(counted_phrases(counted_answer("how many invoices does each customer have?", [facts]))) == (
        "Counted by the program: rows for each Müşteri (column B): Firma 0 3, " + ", ".join(f"Firma {i} 2" for i in range(1, 10))
        + ", and 2 more")


def test_a_month_is_said_by_its_days_in_turkish() -> None:
    """"Mart ayında kaç fatura kesildi?" on a Turkish screen: March's rows, said by its first and last day."""
    from workstation.tui.i18n import Texts

    assert say(counted_phrases(counted_answer("Mart ayında kaç fatura kesildi?", [_facts("workbook")])), Texts("tr").get) == (
        "Programın hesabı: Tarih 01.03.2025 ile 31.03.2025 arasında olan 3 satır (F-2025-005, F-2025-006, F-2025-007)")


def test_a_month_word_in_a_name_or_as_range_is_no_month() -> None:
    """"Kasım Yılmaz kaç fatura almış?" (Kasım, a first name) counted November's rows of that
    customer, 0; "100 ile 300 aralıkta" (in the range) counted December's; "March Ltd total" (a firm
    no cell holds) said March's total (review29). A month said as one ("Kasım ayında", "Aralık'ta")
    is still the month, and not the customer Kasım Yılmaz too."""
    rows = [["Fatura", "Müşteri", "Tarih", "Tutar", "Durum"], ["F-1", "Kasım Yılmaz", "2025-03-02", "100", "ödendi"],
            ["F-2", "Kasım Yılmaz", "2025-11-05", "200", "ödenmedi"], ["F-3", "Ayşe Kaya", "2025-03-20", "300", "ödendi"],
            ["F-4", "Ayşe Kaya", "2025-12-20", "50", "ödenmedi"]]
    facts = table_facts("f.csv", 0, rows, usual_comma=False)
    assert facts is not None

    def said(question: str) -> str:
        return say(counted_phrases(counted_answer(question, [facts])))

    two = "Counted by the program: 2 rows where Müşteri is Kasım Yılmaz (F-1, F-2)"
    assert said("Kasım Yılmaz kaç fatura almış?") == two
    assert said("How many invoices does Kasım Yılmaz have?") == two
    assert said("Kasım ayında kaç fatura kesildi?") == \
        "Counted by the program: 1 row where Tarih from 2025-11-01 to 2025-11-30 (F-2)"
    assert said("Aralık'ta kaç fatura kesildi?") == \
        "Counted by the program: 1 row where Tarih from 2025-12-01 to 2025-12-31 (F-4)"
    for nothing in ("Tutarı 100 ile 300 aralıkta olan kaç fatura var?", "Bu aralıkta kaç fatura var?", "March Ltd total"):
        assert said(nothing) == "", nothing


def test_a_count_for_each_value_is_given_to_the_model_in_the_words_shown() -> None:
    """"Hangi müşterinin kaç faturası var?": the rows of each customer were shown under the reply but
    not given to the model (only the counts of named rows were), which counted them itself and wrong.
    Given beside the table's facts, in the words shown."""
    from workstation.core.summary_chunks import FACTS_LABEL, with_counted, without_counted

    facts = _facts("workbook")
    items = counted_answer("Hangi müşterinin kaç faturası var?", [facts])
    shown = say(counted_phrases(items)).removeprefix("Counted by the program: ")
    assert question_lines(facts, items) == [f"- For this question, the program counted: {shown}."]
    totals = counted_answer("her müşterinin toplam tutarı", [facts])
    assert question_lines(facts, totals) == [
        "- For this question, the program counted: " + PER_CUSTOMER_NET.removeprefix("Counted by the program: ") + "."]
    text = f"{FACTS_LABEL}\n{facts.title}: 12 rows\n- Müşteri (column B): text\n"
    asked = with_counted(text, [facts], items)
    assert asked.split("\n")[3] == f"- For this question, the program counted: {shown}."
    assert without_counted(asked) == text


def test_one_who_owes_nothing_is_said_so_in_turkish_and_to_the_model() -> None:
    """"Ceren'in borcu ne kadar?" of a customer with no unpaid rows said "0 satır" on a Turkish screen;
    said it owes nothing, on the screen and to the model."""
    from workstation.tui.i18n import Texts

    items = counted_answer("Ceren'in borcu ne kadar?", [_facts("tr")])
    assert say(counted_phrases(items), Texts("tr").get) == "Programın hesabı: Ceren AŞ için borç yok (ödenmemiş satırı yok)"
    assert question_lines(_facts("tr"), items) == ["- For this question, the program counted: Ceren AŞ owes nothing (no unpaid rows)."]
    # another condition beside it (a month): its 0 rows, which say it
    assert say(counted_phrases(counted_answer("how much does Ceren owe for December 2024?", [_facts("en")]))) == (
        "Counted by the program: 0 rows where Customer is Ceren AS and Status is unpaid and Date from 2024-12-01 to 2024-12-31")


@pytest.mark.parametrize("head", [["Invoice", "Balance", "Status"], ["Invoice", "Outstanding", "Status"],
                                  ["Invoice", "Amount", "Amount due", "Status"]])
def test_what_is_due_is_the_unpaid_rows_whatever_the_amount_column_is_called(head: list[str]) -> None:
    """"total due" beside a paid/unpaid Status: the unpaid rows of the column of what is owed, whatever
    it is called: the one column of numbers ("Balance"), or the one named so beside another amount
    ("Amount due" beside "Amount"): it counted nothing."""
    rows = [head] + [[f"I-{i}"] + ["10.00"] * (len(head) - 2) + [s] for i, s in enumerate(["paid", "unpaid", "unpaid"])]
    facts = table_facts("x.csv", 0, rows, usual_comma=False)
    assert facts is not None
    assert say(counted_phrases(counted_answer("total due", [facts]))) == (
        f"Counted by the program: {head[-2]} where Status is unpaid: 2 rows (I-1, I-2), total 20.00")


def test_who_owes_the_most_is_said_in_turkish_and_given_to_the_model_in_the_words_shown() -> None:
    """"which customer owes the most money?" said "4 rows where Status is unpaid"; now who owes the
    most and the others after, on a Turkish screen in Turkish, and to the model in the words shown."""
    from workstation.tui.i18n import Texts

    facts = _facts("bob")
    items = counted_answer("which customer owes the most money?", [facts])
    assert say(counted_phrases(items), Texts("tr").get) == (
        "Programın hesabı: en çok borcu olan Bob Carter: 1.630,00; ardından Dana White 800,00, Alice Green 90,00")
    assert question_lines(facts, items) == [
        "- For this question, the program counted: Bob Carter owes the most: 1,630.00; then Dana White 800.00, Alice Green 90.00."]
    assert say(counted_phrases(counted_answer("en çok ciro hangi müşteriden?", [_facts("tr")])), Texts("tr").get) == (
        "Programın hesabı: her Müşteri (B sütunu) değeri için Tutar (F sütunu) toplamı, en çoktan aza: "
        "Ceren AŞ 2.500,00, Bilge Co 1.320,00, ACME Ltd 215,00")
    one = table_facts("one.csv", 0, [BOB[0], BOB[1], BOB[2], BOB[3]], usual_comma=False)  # (one owes: no "then")
    assert one is not None
    assert say(counted_phrases(counted_answer("which customer owes the most?", [one]))) == (
        "Counted by the program: Bob Carter owes the most: 1,200.00")


def test_a_periods_last_day_and_the_years_last_quarter_and_half_are_counted() -> None:
    """A quarter's last day (an invoice of 31 March) is in Q1; "son çeyrek", "the last quarter of
    2025" are Q4 and "son yarı" is H2 (not Q3, H1 or a quarter from today): each a period's rows."""
    rows = [["Invoice", "Date", "Amount"], ["INV-1", "2025-01-05", "100"], ["INV-2", "2025-03-31", "200"],
            ["INV-3", "2025-11-20", "400"], ["INV-4", "2025-07-01", "800"]]
    facts = table_facts("q.csv", 0, rows, usual_comma=False)
    assert facts is not None
    q4 = "Counted by the program: Amount where Date from 2025-10-01 to 2025-12-31: 1 row (INV-3), total 400"
    for question, line in (
            ("Q1 total", "Counted by the program: Amount where Date from 2025-01-01 to 2025-03-31: 2 rows (INV-1, INV-2), total 300"),
            ("son çeyrek toplamı", q4), ("2025'in son çeyreği toplamı", q4), ("total for the last quarter of 2025", q4),
            ("son yarı toplamı", "Counted by the program: Amount where Date from 2025-07-01 to 2025-12-31: 2 rows (INV-3, INV-4), "
                                 "total 1,200")):
        assert say(counted_phrases(counted_answer(question, [facts]))) == line, question


def test_how_many_and_how_much_of_the_unpaid_rows_gives_both() -> None:
    """"how many invoices are unpaid and how much do they come to?" (no word of owing): the unpaid
    rows' count and their amount's total, not the count alone."""
    rows = [["Invoice", "Customer", "Status", "Amount"], ["INV-1", "ACME", "unpaid", "100"],
            ["INV-2", "Bilge", "paid", "200"], ["INV-3", "ACME", "unpaid", "50"]]
    facts = table_facts("i.csv", 0, rows, usual_comma=False)
    assert facts is not None
    line = "Counted by the program: Amount where Status is unpaid: 2 rows (INV-1, INV-3), total 150"
    for question in ("how many invoices are unpaid and how much do they come to?", "how many are unpaid and how much is it?"):
        assert say(counted_phrases(counted_answer(question, [facts]))) == line, question
