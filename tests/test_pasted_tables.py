"""A table pasted into a message's own text (an invoice's lines, rows copied from Excel): its
figures and arithmetic counted by the program, as an attached table's are (``core/pasted_tables.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import message_views, until

from workstation.core.pasted_tables import counted_pasted, for_the_model
from workstation.core.phrases import say
from workstation.core.table_facts import counted_answer, counted_phrases, table_facts
from workstation.tui.app import WorkstationApp
from workstation.tui.i18n import Texts
from workstation.tui.widgets.message_view import fold

INVOICE = """Please check the arithmetic on this invoice

Item | Qty | Price | Amount
Bookkeeping | 10 | 45.00 | 450.00
Payroll runs | 4 | 30.00 | 130.00
Tax filing | 1 | 250.00 | 250.00
Year-end review | 2 | 40.00 | 80.00

Subtotal: 920.00
VAT 20%: 184.00
Total due: 1,104.00"""
SAID = ("Counted by the program: row 'Payroll runs': 4 × 30.00 = 120.00, the table says 130.00; "
        "the amounts add up to 910.00; the message says Subtotal 920.00")


def _said(text: str, lang: str = "en") -> str:
    return say(counted_phrases(counted_pasted(text)[1]), Texts(lang).get if lang != "en" else None)


def test_an_invoices_wrong_row_and_subtotal_are_said() -> None:
    """4 × 30.00 is 120.00, not the row's 130.00; its amounts add up to 910.00, not the 920.00 it
    says (the VAT and the total follow from that subtotal: not said again)."""
    assert _said(INVOICE) == SAID
    tables, items = counted_pasted(INVOICE)
    assert for_the_model(tables, items) == f"- For this question, the program counted: {SAID[len('Counted by the program: '):]}."
    # the same lines, their VAT and total worked wrongly: each said, of the figures the message gives
    wrong = INVOICE.replace("Subtotal: 920.00", "Subtotal: 910.00").replace("184.00", "190.00")
    assert _said(wrong).endswith("; 20% of 910.00 is 182.00; the message says VAT 20% 190.00; the subtotal and "
                                 "the tax add up to 1,100.00; the message says Total due 1,104.00")
    # a line it does not know (a discount) ends the checks: no figure it is not sure of
    assert _said(INVOICE.replace("VAT 20%: 184.00", "Discount: 10.00\nVAT 20%: 182.00")).endswith("Subtotal 920.00")


def test_a_pasted_table_of_huge_numbers_is_counted_without_a_crash() -> None:
    """A row of 23 digits times another had more digits than a Decimal rounds: sending the message
    closed the app (decimal.InvalidOperation). Its rows agree with quantity × price; its sum is said."""
    huge = "Item | Qty | Price | Amount\nA | 99999999999999999999999 | 1 | 99999999999999999999999\nB | 1 | 1 | 1\n" \
           "C | 2 | 2 | 4\nWhat is the total of Amount?"
    assert _said(huge) == "Counted by the program: Amount, all 3 rows: total 100000000000000000000004"


def test_a_sum_question_on_a_pasted_tab_separated_table() -> None:
    """Rows copied from Excel (tabs), asked for their total: the program's total, of all rows."""
    text = "What is the total of the amounts?\nRegion\tAmount\nNorth\t1,200.50\nSouth\t2,500\nEast\t4,154.5\n"
    assert _said(text) == "Counted by the program: Amount, all 3 rows: total 7,855"
    assert _said("Region\tAmount\nNorth\t1\nSouth\t2\nEast\t3\nThanks!") == ""  # (no question: nothing said)


def test_two_pasted_tables_figures_are_each_said_under_its_table() -> None:
    """Two tables in one message, asked for the total: "B, all 3 rows: total 6, total 60" read as
    one column with two totals. Each table's figures under its own name, in both languages."""
    text = "A|1\nB|2\nC|3\n\nX|10\nY|20\nZ|30\nwhat is the total?"
    assert _said(text) == ("Counted by the program: the table in your message: B, all 3 rows: total 6; "
                           "table 2 in your message: B, all 3 rows: total 60")
    assert _said(text.replace("what is the total?", "toplam nedir?"), "tr") == (
        "Programın hesabı: mesajınızdaki tablo: B, 3 satırın tümü: toplam 6; "
        "mesajınızdaki 2. tablo: B, 3 satırın tümü: toplam 60")
    tables, items = counted_pasted(text)
    assert for_the_model(tables, items) == ("- For this question, the program counted: the table in your message: B, "
                                            "all 3 rows: total 6; table 2 in your message: B, all 3 rows: total 60.")
    # one table: said as before, without its name
    assert _said("A|1\nB|2\nC|3\nwhat is the total?") == "Counted by the program: B, all 3 rows: total 6"


def test_labelled_figures_the_checks_do_not_know_are_no_question() -> None:
    """"Discount: 5.00" after the table ended its labelled figures, and the "Total: 22.00" under it
    was read as the message's question (asking for a total): the line showed each column's sum.
    Lines "Label: figure" after a table are never the question; the checks still end at a label
    they do not know (no check of a total after a discount)."""
    from workstation.core.pasted_tables import pasted_tables, question_of

    table = "Item | Qty | Price | Amount\nPaper | 3 | 4.50 | 13.50\nPens | 2 | 5.75 | 11.50\nTape | 1 | 2.00 | 2.00\n"
    text = table + "Discount: 5.00\nTotal: 99.00"
    assert question_of(text, pasted_tables(text)) == ""
    assert counted_pasted(text)[1] == []
    # asked: its question only; the subtotal checked, nothing after the discount
    asked = "What is the total?\n" + table + "Subtotal: 27.00\nDiscount: 5.00\nTotal: 99.00"
    assert question_of(asked, pasted_tables(asked)) == "What is the total?"
    assert _said(asked) == "Counted by the program: Amount, all 3 rows: total 27.00"
    # a line of words with a figure and no ':' is a question, not a label
    assert question_of(table + "Can you sum these 3", pasted_tables(table + "Can you sum these 3")) == "Can you sum these 3"


def test_a_figure_said_in_dollars_or_pounds_after_a_table_is_checked() -> None:
    """"Total due: 1,104.00 dollars": the pasted tables' currency words (tl, eur, usd, gbp) were a
    list of their own, without the questions' dollars, lira, pounds: the line was no labelled
    figure, left in the question (asking for a total), and not checked. One list for both."""
    wrong = INVOICE.replace("Subtotal: 920.00", "Subtotal: 910.00 dollars").replace("1,104.00", "1,104.00 dollars")
    assert _said(wrong) == ("Counted by the program: row 'Payroll runs': 4 × 30.00 = 120.00, the table says 130.00; "
                            "20% of 910.00 is 182.00; the message says VAT 20% 184.00; "
                            "the subtotal and the tax add up to 1,094.00; the message says Total due 1,104.00")


def test_a_bar_in_ordinary_prose_is_no_table() -> None:
    """Lines of words with a '|' or commas in them: no table, nothing counted."""
    prose = ("What is the total effort here? Option A | option B, we said.\nThen plan | act, as before.\n"
             "Keep it short | simple, please.\nAnd: sum it up, kindly, for the team.")
    assert counted_pasted(prose) == ([], [])


def test_a_turkish_decimal_comma_pasted_table() -> None:
    """A Turkish Excel's rows (1.200,50) and its "Ara toplam" / "KDV %20" lines, in Turkish."""
    text = ("Toplam tutar nedir?\nMüşteri\tAdet\tFiyat\tTutar\nAhmet\t2\t600,25\t1.200,50\n"
            "Ayşe\t1\t350,75\t350,75\nMehmet\t4\t500,00\t2.100,00\n\nAra toplam: 3.551,25\nKDV %20: 710,25")
    assert _said(text, "tr") == (
        "Programın hesabı: Tutar, 3 satırın tümü: toplam 3.651,25; 'Mehmet' satırı: 4 × 500,00 = 2.000,00, tabloda "
        "2.100,00 yazıyor; tutarların toplamı 3.651,25; mesajda Ara toplam 3.551,25 yazıyor")


async def test_an_invoice_pasted_in_the_chat_has_its_arithmetic_checked(profiles: Path, tmp_path: Path) -> None:
    """The invoice pasted in the message box and sent with the real model: the program's line under
    the reply says the wrong row and subtotal, is kept with the reply and in F7's export; the model
    reads it after the message, the user's message shows it not, and Up puts back the words alone."""
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        conv = await _send_pasted(app, pilot, INVOICE)
        views = message_views(app)
        assert str(views[-1].query_one(".metrics").render()).endswith("\n" + SAID)
        messages = app.store.messages(conv)
        assert messages[-1].metrics["counted"][0]["figure"] == "120.00"  # (kept with the reply)
        assert messages[-2].content.endswith("\n\n- For this question, the program counted: row 'Payroll runs': "
                                             "4 × 30.00 = 120.00, the table says 130.00; the amounts add up to "
                                             "910.00; the message says Subtotal 920.00.")  # (given to the model)
        assert "For this question" not in "".join(fold(messages[-2].content))  # (shown under the reply, not here)
        exported = app.store.export_markdown(conv, tmp_path / "out.md").read_text(encoding="utf-8")
        assert "*" + SAID + "*" in exported and exported.count("Payroll runs': 4") == 1  # (under the reply alone)
        app.chat_screen.focus_prompt()
        await pilot.press("up")
        await until(pilot, lambda: app._editing is not None)
        assert app.chat_screen.input_text() == INVOICE


NO_AMOUNTS = "What is the total of this invoice?\nItem\tQty\tUnit price\nPaper\t3\t4.50\nPens\t10\t1.20\nToner\t2\t35.00"
NO_AMOUNTS_SAID = "Counted by the program: the total, Qty × Unit price over all 3 rows: 95.50"


def test_a_total_with_its_thousands_set_apart_by_spaces_is_checked() -> None:
    """A total under a table whose cells are written 1 250,00 ("Total: 7 015,00") was no total line
    to the checks: the amounts' 7,005.00 said, the message's wrong total not."""
    text = ("Check this invoice:\nItem;Qty;Price;Amount\nDesks;2;1 250,00;2 500,00\nChairs;10;120,50;1 205,00\n"
            "Screens;3;1 100,00;3 300,00\nTotal: 7 015,00\n")
    assert _said(text) == "Counted by the program: the amounts add up to 7,005.00; the message says Total 7,015.00"


def test_an_invoice_without_amounts_is_totalled_as_quantity_times_price(tmp_path: Path) -> None:
    """An invoice's lines with a quantity and a unit price and no amount: its total is 3 × 4.50 +
    10 × 1.20 + 2 × 35.00 = 95.50; its unit prices added up (40.70) were said as "total", and the
    model repeated it. A price or rate column is never added up (its average, smallest, largest
    stay); the quantity's own total where the question asks for the quantity. The same rule for an
    attached table (one mechanism: ``table_facts``)."""
    from workstation.core.documents import read_document
    from workstation.core.table_facts import counted_answer, facts_text

    assert _said(NO_AMOUNTS) == NO_AMOUNTS_SAID
    assert _said(NO_AMOUNTS, "tr") == "Programın hesabı: toplam, 3 satırın tümünde Qty × Unit price: 95,50"
    assert _said(NO_AMOUNTS.replace("of this invoice", "quantity")) == "Counted by the program: Qty, all 3 rows: total 15"
    assert _said(NO_AMOUNTS.replace("total of this invoice", "average unit price")) == (
        "Counted by the program: Unit price, all 3 rows: average 13.57")
    tables, _ = counted_pasted(NO_AMOUNTS)
    assert facts_text(tables[0])[3:] == [
        "- Unit price: prices or rates (not added up); smallest 1.20, largest 35.00, average 13.57.",
        "- Qty × Unit price, added up over all 3 rows: 95.50."]
    # a timesheet's hours × rate and a booking's nights × price per night are such totals too (a
    # booking's "total price" said nothing, then "total 16" of its nights where 1,925 was asked for)
    hours = "What is the total?\nTask\tHours\tRate\nAudit\t4\t50\nFiling\t2\t40\nReview\t1\t60"
    assert _said(hours) == "Counted by the program: the total, Hours × Rate over all 3 rows: 340"
    stays = ("Customer | Nights | Price per night\nAnna Berg | 4 | 85\nMehmet Kaya | 2 | 120\nJohn Smith | 7 | 60\n"
             "Laura Rossi | 3 | 150\nAyse Demir | 5 | 95")
    assert _said("What is the total price of all bookings?\n" + stays) == (
        "Counted by the program: the total, Nights × Price per night over all 5 rows: 1,925")
    assert _said("How many nights in total?\n" + stays) == "Counted by the program: Nights, all 5 rows: total 21"
    # a table with its amounts: their total, as before (no product of its own), its price not added up
    assert _said(INVOICE.replace("Please check the arithmetic on", "What is the total of")).startswith(
        "Counted by the program: Amount, all 4 rows: total 910.00; row 'Payroll runs'")
    # the same invoice attached as a CSV file, in Turkish
    attached = tmp_path / "fatura.csv"
    attached.write_text("Kalem;Adet;Birim fiyat\nKağıt;3;4,50\nKalem;10;1,20\nToner;2;35,00\n", encoding="utf-8")
    facts = read_document(attached).facts
    assert say(counted_phrases(counted_answer("Faturanın toplamı nedir?", facts)), Texts("tr").get) == (
        "Programın hesabı: toplam, 3 satırın tümünde Adet (B sütunu) × Birim fiyat (C sütunu): 95,50")


async def _send_pasted(app: WorkstationApp, pilot: object, text: str) -> int:
    """``text`` pasted in the message box and sent (Ctrl+S) with the real model; the conversation."""
    from textual import events
    from textual.widgets import Input, TextArea

    await until(pilot, lambda: app.engine is not None)
    prompt = app.chat_screen.query_one("#prompt", Input)
    editor = app.chat_screen.query_one("#editor", TextArea)
    prompt.focus()
    prompt.post_message(events.Paste(text))
    await until(pilot, lambda: editor.display and editor.has_focus)
    await pilot.press("ctrl+s")  # type: ignore[attr-defined]
    await until(pilot, lambda: app.conversation_id is not None and not app.generating
                and len(app.store.messages(app.conversation_id)) == 2
                and app.store.messages(app.conversation_id)[-1].metrics is not None)
    assert app.conversation_id is not None
    return app.conversation_id


async def test_an_invoice_without_amounts_pasted_in_the_chat_says_its_total(profiles: Path) -> None:
    """The invoice of quantities and unit prices pasted and sent with the real model: under the reply,
    its total (95.50, quantity × unit price), not the unit prices added up (40.70); the model reads
    the same, and the unit prices' line it reads has no total."""
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        conv = await _send_pasted(app, pilot, NO_AMOUNTS)
        shown = str(message_views(app)[-1].query_one(".metrics").render())
        # (then the reply check's line where the very small model gave a figure the message lacks)
        assert f"\n{NO_AMOUNTS_SAID}" in shown and "40.70" not in shown
        assert app.store.messages(conv)[-2].content.endswith(
            "\n\n- For this question, the program counted: the total, Qty × Unit price over all 3 rows: 95.50.")


async def test_a_conversation_begun_with_a_pasted_table_is_titled_by_its_words(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A conversation begun with a pasted table was titled into the table's header ("What is the
    total of this invoice? Item Qty Unit"), and F7 offered a file of that name: its words alone."""
    from workstation.tui.screens.dialogs import TextPrompt

    monkeypatch.setenv("HOME", str(tmp_path))  # where F7 starts
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        conv = await _send_pasted(app, pilot, NO_AMOUNTS)
        assert app.store.get(conv, with_messages=False).title == "What is the total of this invoice?"
        app.chat_screen.focus()
        await pilot.press("f7")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        offered = app.screen.query_one("#answer").value  # type: ignore[attr-defined]
        assert Path(offered).name == "What-is-the-total-of-this-invoice.md"


def test_f7s_export_writes_a_pasted_table_as_a_markdown_table(tmp_path: Path) -> None:
    """A tab-separated table pasted in a message was exported as its lines, which a Markdown viewer
    runs into one line: written as a Markdown table (its columns lined up by any viewer, its cells
    still words), the invoice's "Subtotal" lines a line each; one in a code block is left as it is."""
    from workstation.core.store import ConversationStore

    store = ConversationStore(tmp_path / "c.db")
    conv = store.new("Invoice")
    store.add_message(conv.id, "user", NO_AMOUNTS + "\n\nSubtotal: 95.50\nTotal due: 95.50")
    store.add_message(conv.id, "user", "```\na|b\nc|d\ne|f\n```")
    exported = store.export_markdown(conv.id, tmp_path / "out.md").read_text(encoding="utf-8")
    assert ("What is the total of this invoice?\n\n| Item | Qty | Unit price |\n|---|---|---|\n| Paper | 3 | 4.50 |\n"
            "| Pens | 10 | 1.20 |\n| Toner | 2 | 35.00 |\n\nSubtotal: 95.50  \nTotal due: 95.50\n") in exported
    assert "```\na|b\nc|d\ne|f\n```" in exported


def test_two_pasted_tables_figures_are_each_written_as_its_table_writes_them() -> None:
    """The line for the model wrote both tables' figures with the first table's decimal mark: a table
    of 1,250.50 after one of 1.250,50 was said to total "3.260,50", which it reads as 3.26."""
    text = ("What is the total?\nÜrün;Adet;Tutar\nKağıt;3;1.250,50\nKalem;2;2.000,00\nBant;1;10,00\n\n"
            "Item,Qty,Amount\nPaper,3,1250.50\nPens,2,2000.00\nTape,1,10.00\n")
    tables, items = counted_pasted(text)
    assert for_the_model(tables, items) == (
        "- For this question, the program counted: the table in your message: Tutar, all 3 rows: total 3.260,50; "
        "table 2 in your message: Amount, all 3 rows: total 3,260.50.")


def test_a_total_row_inside_a_pasted_table_is_checked_as_a_line_after_it() -> None:
    """"Subtotal | | | 920.00" as the table's last row was left out of its figures but never checked
    (its amounts add up to 900.00): checked as "Subtotal: 920.00" after the table is, its VAT and
    total after it too; a right one says nothing, and one among the rows is not checked."""
    rows = ("Item | Qty | Price | Amount\nBookkeeping | 10 | 45.00 | 450.00\nPayroll runs | 4 | 30.00 | 120.00\n"
            "Tax filing | 1 | 250.00 | 250.00\nYear-end review | 2 | 20.00 | 40.00\n")
    assert _said("Please check this invoice\n\n" + rows + "Subtotal | | | 920.00\n") == (
        "Counted by the program: the amounts add up to 860.00; the message says Subtotal 920.00")
    assert _said("Please check this invoice\n\n" + rows + "Subtotal | | | 860.00\nVAT 20%: 172.00\nTotal due: 1,040.00\n") == (
        "Counted by the program: the subtotal and the tax add up to 1,032.00; the message says Total due 1,040.00")
    assert _said("Please check this invoice\n\n" + rows + "Total | | | 860.00\n") == ""
    middle = rows.replace("Tax filing", "Subtotal | | | 999.00\nTax filing")
    assert _said("Please check this invoice\n\n" + middle) == ""


def test_a_total_row_is_checked_only_where_no_total_row_is_among_the_rows_above() -> None:
    """A table with a section's subtotal among its rows: the "Total" at its end may add up all the
    rows or only those after the subtotal (290.00 is the last two), so it is not checked (it was
    said to be wrong: "the amounts add up to 860.00; the message says Total 290.00")."""
    rows = ("Item | Qty | Price | Amount\nBookkeeping | 10 | 45.00 | 450.00\nPayroll runs | 4 | 30.00 | 120.00\n"
            "Subtotal | | | 570.00\nTax filing | 1 | 250.00 | 250.00\nYear-end review | 2 | 20.00 | 40.00\n")
    for total in ("290.00", "999.00", "860.00"):
        assert _said(f"Please check this invoice\n\n{rows}Total | | | {total}\n") == ""


def test_a_total_row_with_no_figure_in_its_amount_leaves_the_lines_after_the_table_checked() -> None:
    """A template's total row left unfilled ("Total | | | Total": the amount cell holds its label,
    not a figure) has nothing to check; the subtotal said after the table still is."""
    rows = ("Item | Qty | Price | Amount\nBookkeeping | 10 | 45.00 | 450.00\nPayroll runs | 4 | 30.00 | 120.00\n"
            "Tax filing | 1 | 250.00 | 250.00\nYear-end review | 2 | 20.00 | 40.00\n")
    assert _said("Please check this invoice\n\n" + rows + "Total | | | Total\n\nSubtotal: 920.00\n") == (
        "Counted by the program: the amounts add up to 860.00; the message says Subtotal 920.00")


def test_a_vat_row_inside_a_pasted_table_is_no_data_row() -> None:
    """"KDV %18 | | 1.800" under the rows is the rows' tax, left out as a total row is (counted as a
    row, "the total" was 11,800 of rows adding up to 10,000 and "how many rows" said 3); "VAT" alone,
    with no rate, may be a row's own (an expense) and stays one."""
    rows = "Ürün | Adet | Tutar\nKağıt | 10 | 5.000\nKalem | 5 | 5.000\n"
    assert _said("Bu tablonun toplamı ne kadar?\n\n" + rows + "KDV %18 | | 1.800\n") == (
        "Counted by the program: Tutar, all 2 rows: total 10,000")
    assert _said("What is the total?\n\nItem\tAmount\nPaper\t5,000\nPens\t5,000\nVAT 18%:\t1,800\n") == (
        "Counted by the program: Amount, all 2 rows: total 10,000")
    assert _said("Kaç satır var?\n\n" + rows + "KDV %18 | | 1.800\n") == "Counted by the program: the table in your message: 2 rows"
    assert _said("What is the total?\n\nItem | Amount\nRent | 5,000\nVAT | 300\nPens | 5,000\n") == (
        "Counted by the program: Amount, all 3 rows: total 10,300")


INVOICE_ROWS = [("Invoice", "Client", "Amount", "Status"), ("INV-101", "Ada Ltd", "1200.50", "paid"),
                ("INV-102", "Birlik AS", "980.00", "unpaid"), ("INV-103", "Ada Ltd", "1114.75", "paid"),
                ("INV-104", "Kaya", "450", "unpaid"), ("INV-105", "Birlik AS", "2380.10", "unpaid")]


@pytest.mark.parametrize("name", ["invoices.csv", "invoices-tr.csv", "invoices.tsv", "letter.docx", "invoices.xlsx"])
def test_an_attached_tables_rows_read_again_from_its_message_count_as_its_file(tmp_path: Path, name: str) -> None:
    """After a restart the app has only what a message keeps of its attached document: its text,
    and its tables' facts without their rows. Read again from the text (a CSV's lines, a Word
    table's 'a | b | c' rows; a Turkish CSV's 1.200,50 too), the tables count a follow-up's rows as
    the file's did when it was attached (a workbook's sheet too); a text that no longer gives the
    kept facts gives none."""
    import json

    import docx
    from docmaker import add_docx_table, make_xlsx

    from workstation.core.documents import read_document
    from workstation.core.pasted_tables import tables_read_again
    from workstation.core.summary_chunks import with_facts
    from workstation.core.table_facts import counted_answer, facts_record

    path = tmp_path / name
    if name == "letter.docx":
        letter = docx.Document()
        letter.add_paragraph("Dear Sir, the invoices of March, as agreed, are below.")
        add_docx_table(letter, [(a, b, c.replace("1200.50", "1,200.50"), d) for a, b, c, d in INVOICE_ROWS])
        letter.add_paragraph("Kind regards, Ayşe")
        letter.save(path)
    elif name == "invoices.xlsx":  # (its amounts stored as numbers)
        make_xlsx(path, [("Invoices", [list(INVOICE_ROWS[0]), *([a, b, float(c), d] for a, b, c, d in INVOICE_ROWS[1:])])])
    elif name == "invoices-tr.csv":  # (a Turkish Excel's: split by ;, a decimal comma)
        turkish = {"1200.50": "1.200,50", "980.00": "980,00", "1114.75": "1.114,75", "2380.10": "2.380,10"}
        path.write_text("\n".join(";".join(turkish.get(c, c) for c in row) for row in INVOICE_ROWS), encoding="utf-8")
    else:
        path.write_text("\n".join(("\t" if name.endswith(".tsv") else ",").join(row) for row in INVOICE_ROWS),
                        encoding="utf-8")
    document = read_document(path)
    text = with_facts(document, all_rows=True).text.rstrip()  # (as the app attaches it)
    kept = json.loads(json.dumps([facts_record(f) for f in document.facts]))  # (as the store keeps them)
    again = tables_read_again(text, name, kept)
    assert len(again) == len(document.facts) == 1
    for question in ("How many invoices does Birlik AS have?", "What is the total of the unpaid invoices in the table?",
                     "What is the total of the paid invoices in the table?"):
        counted = counted_answer(question, again)
        assert counted and counted == counted_answer(question, document.facts), question
    assert counted[0]["figures"] == [{"what": "total", "figure": "2,315.25"}]
    cut = text[:text.rindex("INV-105")]  # (a row short of what was counted: not the same table)
    assert tables_read_again(cut, name, kept) == []


INVOICES_TR = ("Fatura;Müşteri;Tutar (TL)\nF-101;Demir AŞ;1.250,00\nF-102;Kaya AŞ;3.480,50\nF-103;Aksoy Gıda;980,25\n"
               "F-104;Yıldız Ltd;12.400,00\nF-105;Ece Tekstil;7.015,75\nF-106;Bora Yapı;2.300,00\n\n")


def test_which_row_holds_the_largest_is_named_for_a_pasted_table_and_an_attached_one() -> None:
    """"En büyük fatura hangisi?" of 6 pasted invoices was answered "en büyük 12.400,00" without the
    invoice, and the model named another: the row that holds it is said with it (an attached
    table's the same way, ``counted_answer``), and only where the question asks which."""
    _, items = counted_pasted(INVOICES_TR + "Bu 6 faturanın toplamı ne kadar? En büyük fatura hangisi?")
    assert say(counted_phrases(items), Texts("tr").get) == (
        "Programın hesabı: Tutar (TL), 6 satırın tümü: toplam 27.426,50, en büyük 12.400,00 (F-104, Yıldız Ltd)")
    _, items = counted_pasted(INVOICES_TR + "Which invoice is the smallest?")
    assert say(counted_phrases(items)) == "Counted by the program: Tutar (TL), all 6 rows: smallest 980.25 (F-103, Aksoy Gıda)"
    _, items = counted_pasted(INVOICES_TR + "En büyük tutar ne kadar?")  # (not asked which: its figure alone)
    assert say(counted_phrases(items)) == "Counted by the program: Tutar (TL), all 6 rows: largest 12,400.00"
    facts = table_facts("faturalar.csv", 0, [line.split(";") for line in INVOICES_TR.strip().split("\n")])
    assert facts is not None
    assert say(counted_phrases(counted_answer("En büyük fatura hangisi?", [facts]))) == (
        "Counted by the program: Tutar (TL) (column C), all 6 rows: largest 12,400.00 (F-104, Yıldız Ltd)")
