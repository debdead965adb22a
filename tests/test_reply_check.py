"""What a very small model's reply about an attached document gives that the document does not
have, said under the reply (``reply_check``), and the line under a reply in plain words."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tui_profile
from docmaker import make_docx
from tui_helpers import attach_file, message_views, send_message, until

from workstation.core.locales import locale_texts
from workstation.core.phrases import say
from workstation.core.reply_check import unchecked_figures, unchecked_phrases, unchecked_record
from workstation.tui.app import WorkstationApp

LEASE = [
    ("Residential Lease Agreement", [
        "This Lease is made on March 1, 2024 between Harbor Properties LLC (Landlord) and Dana Whitfield (Tenant).",
    ]),
    ("Rent", ["Tenant shall pay monthly rent of $1,850.00 on the first day of each month."]),
    ("Notice", ["Either party may end this Lease by giving sixty (60) days' written notice."]),
    ("Repairs", ["Landlord shall pay for repairs to the roof, plumbing and heating. Tenant pays for damage "
                 "caused by Tenant."]),
]
LEASE_TEXT = "\n".join(line for title, paras in LEASE for line in [title, *paras])


@pytest.fixture
def lease_profile(tmp_path: Path, smollm2_path: Path, profiles: Path) -> Path:
    # 40 tokens a reply: the late fee's "10%" comes by its 30th (80 wrote the same sentence twice)
    tui_profile(profiles / "lease.yaml", str(smollm2_path), context=2048,
                sampling={"temperature": 0.0, "max_tokens": 40, "seed": 1, "repeat_penalty": 1.0})
    return profiles


def line_under(view) -> str:
    return str(view.query_one(".metrics").render())


async def ask_about_the_lease(pilot, app: WorkstationApp, lease: Path, question: str):
    await until(pilot, lambda: app.engine is not None and app.small_model is not None)
    await attach_file(pilot, app, lease)
    await send_message(pilot, app, question)
    await until(pilot, lambda: not app.generating and len(message_views(app)) == 2)
    return message_views(app)[-1]


async def test_a_small_models_figure_that_the_lease_lacks_is_named_under_its_reply(
        lease_profile: Path, tmp_path: Path) -> None:
    """A paralegal attached a lease and asked; SmolLM2 135M answered with a late fee the lease
    does not have ("a 10% late fee"), and the line under the reply said only its speed: the
    start-up notice that the model gets figures wrong had scrolled away. The line names it, kept
    with the reply: said again (in Turkish after F9's restart) when the conversation is opened
    again, and in F7's export."""
    from workstation.core.store import ConversationStore

    lease = make_docx(tmp_path / "Lease_v1.docx", LEASE)
    app = WorkstationApp("lease", sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        reply = await ask_about_the_lease(pilot, app, lease, "What is the late fee?")
        assert "10% late fee" in reply.content  # (the model's own words: the lease names no late fee)
        said = ("Check figures, dates and names against Lease_v1.docx: this model often gets them wrong. "
                "“10%” is not in Lease_v1.docx.")
        await until(pilot, lambda: said in line_under(reply), what=f"the check under {line_under(reply)!r}")
        conv = app.conversation_id
    assert conv is not None
    store = ConversationStore()
    assert f"*{said}*" in store.to_markdown(conv)  # (F7's export says it under the reply too)
    store.close()
    again = WorkstationApp("lease", sample_system=False, language="tr", start_engine=False)  # (read, not answered)
    async with again.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: len(message_views(again)) == 2)
        kept = message_views(again)[-1]
        await until(pilot, lambda: "Rakamları, tarihleri ve adları Lease_v1.docx ile karşılaştırın: bu model bunları "
                                   "sık sık yanlış verir. “10%” Lease_v1.docx içinde yok." in line_under(kept),
                    what="the check kept with the reply, in Turkish")


@pytest.mark.parametrize(("reply", "missing"), [
    # a figure in any writing of it: 1,850 / 1.850 / 1850 / $1,850.00 are one
    ("The rent is $1,850 a month, or 1.850 as some write it, or 1850.", []),
    # a number in words with what it counts: the lease's "sixty (60) days", not its "Section 3"
    ("Notice is three days' notice, not 60 days or sixty days.", ["three days"]),
    # a law's name with its number, a date, and a name the lease never gives; all of them (the
    # line under the reply names three and counts the rest: ``unchecked_record``)
    ("Under the Illinois Code 1624-03, signed June 5, 1978, Cook County decides; also 2,000.",
     ["Illinois Code 1624-03", "June 5, 1978", "Cook County", "2,000"]),
    # what starts a sentence is no name; the parties and the file's own name are the lease's
    ("Repairs are paid by Harbor Properties LLC, as Lease_v1.docx says on March 1, 2024.", []),
    ("A 10% late fee applies.", ["10%"]),
])
def test_what_a_reply_gives_that_the_lease_lacks(reply: str, missing: list[str]) -> None:
    text = LEASE_TEXT + "\nSection 3. Keys."
    assert unchecked_figures(reply, text, "Lease_v1.docx") == missing


async def test_a_follow_up_without_the_document_attached_again_is_checked_against_it(
        lease_profile: Path, tmp_path: Path) -> None:
    """A paralegal attached the lease, asked, went to another conversation and back, and asked
    again without attaching it: the reply's deposit, which the lease does not have, had no line
    under it. A follow-up is checked against the document the conversation holds. Where every
    figure, date and name of a reply is in the document ("March 1, 2024", "Harbor Properties
    LLC": the first reply's), nothing more is said under it than before."""
    lease = make_docx(tmp_path / "Lease_v1.docx", LEASE)
    app = WorkstationApp("lease", sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        first = await ask_about_the_lease(pilot, app, lease, "When does the lease end?")
        assert "March 1, 2024" in first.content
        await pilot.pause()
        assert "Check figures" not in line_under(first) and "tok/s" in line_under(first)
        conv = app.conversation_id
        assert conv is not None
        await pilot.press("ctrl+n")  # (away to a new conversation, and back to this one)
        await until(pilot, lambda: app.conversation_id is None and not message_views(app))
        await app.open_conversation(conv)
        await until(pilot, lambda: len(message_views(app)) == 2)
        await send_message(pilot, app, "Is there a security deposit?")
        await until(pilot, lambda: not app.generating and len(message_views(app)) == 4)
        reply = message_views(app)[-1]
        assert "$1,000.00" in reply.content, reply.content  # (the model's own words: the lease names no deposit)
        await until(pilot, lambda: "Check figures, dates and names against Lease_v1.docx: this model often gets "
                                   "them wrong. “$1,000.00” is not in Lease_v1.docx." in line_under(reply),
                    what=f"the check under {line_under(reply)!r}")


@pytest.mark.parametrize(("reply", "document", "missing"), [
    # a decimal is no whole number: "$18.50" is not 1.850,00 (Turkish writing of 1850), 0.5% is not 5%
    ("The rent is $18.50 and the late fee 0.5%.", "Kira 1.850,00 TL; gecikme faizi %5 ve 5%.",
     ["$18.50", "0.5%"]),
    # the same number in either writing, its thousands marked by a comma, a dot or a space
    ("The rent is 1 850 a month, 1.850,00 or $1,850.00.", "Rent: 1,850 a month.", []),
    ("The rent is 1,850 a month, or 1850.", "Kira: ayda 1 850 TL.", []),
    ("The fee is 12,5% or 12.5%, not 125.", "Fee: 12.5%.", ["125"]),
    ("The rate is 0.125.", "Rate 0,125.", []),
])
def test_figures_are_compared_as_the_numbers_they_are(reply: str, document: str, missing: list[str]) -> None:
    assert unchecked_figures(reply, document, "kira.txt") == missing


def test_a_name_with_a_dotted_capital_i_is_the_same_name() -> None:
    """The document says "İstanbul"; a reply's "Istanbul" was said not to be in it."""
    document = "Kiralanan daire İstanbul ilinde, KADIKÖY ilçesindedir. Kiracı: Ayşe Yılmaz."
    reply = "The flat is in Istanbul (ISTANBUL), in Kadıköy, rented to Ayse Yilmaz; istanbul it is."
    assert unchecked_figures(reply, document, "kira_sozlesmesi.txt") == []
    assert unchecked_figures("The flat is in Ankara.", document, "kira_sozlesmesi.txt") == ["Ankara"]


def test_more_than_three_missing_are_counted_after_the_three_named() -> None:
    """Seven were missing and the line named three as if they were all."""
    items = ["3 days", "6 months", "3-month", "$500", "Cook County", "1978", "10%"]
    record = unchecked_record("lease_v1.txt", items)
    assert say(unchecked_phrases(record)).endswith(
        "“3 days”, “6 months”, “3-month” and 4 more are not in lease_v1.txt.")
    assert say(unchecked_phrases(record), locale_texts("tr").get).endswith(
        "“3 days”, “6 months”, “3-month” ve 4 tane daha lease_v1.txt içinde yok.")
    # three, or a record kept before the count: as before
    assert say(unchecked_phrases(unchecked_record("lease_v1.txt", items[:3]))).endswith(
        "“3 days”, “6 months” and “3-month” are not in lease_v1.txt.")
    assert unchecked_phrases({"name": "lease_v1.txt", "items": items[:3]}) == \
        unchecked_phrases(unchecked_record("lease_v1.txt", items[:3]))


def test_the_document_a_question_is_asked_of() -> None:
    """Its own; else the one attached last before it; never one attached after it (asked again)."""
    from workstation.tui.attachment import conversation_document

    lease = "What is the rent?\n\n---\nDocument: lease.txt\n\nRent 1,850."
    memo = "And this?\n\n---\nDocument: memo.txt\n\nMeeting at ten."
    questions = [lease, "And the deposit?", memo, "Who comes?"]
    found = conversation_document(questions, "And the deposit?")
    assert found is not None and found.name == "lease.txt" and found.document == "Rent 1,850."
    assert (found := conversation_document(questions, "Who comes?")) is not None and found.name == "memo.txt"
    assert (found := conversation_document(questions, memo)) is not None and found.name == "memo.txt"
    assert conversation_document(["Hello?"], "Hello?") is None
    pasted = PASTED + "What is the total?"  # (a table pasted in an earlier message: the follow-up's, named so)
    assert (found := conversation_document([pasted, "When were they issued?"], "When were they issued?")) is not None
    assert found.name == "the table in your message" and "F-104;Yıldız Ltd;12.400,00" in found.document


def test_a_code_or_a_name_the_document_lacks_is_named_though_part_of_it_is_there() -> None:
    """A code the lease does not have is named even where one of its parts is there ("Section
    1624-99" of a lease with "1624-05"), and so is a figure the lease has under a name it never says
    ("Texas Code 1624-05"); a quantity the lease counts a few words before its unit ("sixty (60)
    calendar days") is found in it."""
    document = "Under Section 1624-05 of the Code, notice is sixty (60) calendar days."
    assert unchecked_figures("This follows Section 1624-99.", document) == ["Section 1624-99"]
    assert unchecked_figures("This follows Texas Code 1624-05.", document) == ["Texas Code 1624-05"]
    assert unchecked_figures("Notice must be 60 days.", document) == []


def test_a_name_of_one_or_two_letters_is_not_named() -> None:
    """Too short to tell a name from an initial or a word written in capitals ("paid by Ed", "Mr. A"):
    such a word is never said to be missing from the document (honesty6's mutation went unseen)."""
    document = "The tenant pays the rent of $1,850 on the first day of each month to the landlord."
    assert unchecked_figures("It was paid by Ed and signed by Al for Mr. A.", document, "lease.txt") == []
    assert unchecked_figures("It was paid by Edward.", document, "lease.txt") == ["Edward"]


def test_a_figure_the_program_counted_for_the_question_is_known_to_the_check() -> None:
    """"What is the total of the paid invoices?" of a letter's invoice table: the program counted
    "total 2,315.25" (said under the reply, given the model), the model wrote that figure, and the
    check under it said "“2,315.25” is not in letter.docx": the program doubted its own count. A
    figure the program counted for the question is known; one it did not count is still named."""
    letter = ("Dear Sir,\nTable 1\nInvoice | Client | Amount | Status\nINV-101 | Ada Ltd | 1,200.50 | paid\n"
              "INV-102 | Birlik AS | 980.00 | unpaid\nINV-103 | Ada Ltd | 1,114.75 | paid")
    counted = [{"what": "where", "title": "Table 1", "conditions": [{"name": "Status", "letter": "", "is": ["paid"]}],
                "rows": "2", "listed": ["INV-101", "INV-103"], "name": "Amount", "letter": "",
                "figures": [{"what": "total", "figure": "2,315.25"}]}]
    reply = "The paid invoices come to 2,315.25 in all, and 4,000 are due next month."
    assert unchecked_figures(reply, letter, "letter.docx") == ["2,315.25", "4,000"]  # (not counted for it: named)
    assert unchecked_figures(reply, letter, "letter.docx", counted) == ["4,000"]
    assert unchecked_figures("They total 2315.25.", letter, "letter.docx", counted) == []  # (in any writing of it)


PASTED = ("Fatura;Müşteri;Tutar (TL)\nF-101;Demir AŞ;1.250,00\nF-102;Kaya AŞ;3.480,50\nF-103;Aksoy Gıda;980,25\n"
          "F-104;Yıldız Ltd;12.400,00\nF-105;Ece Tekstil;7.015,75\nF-106;Bora Yapı;2.300,00\n\n")


def test_a_reply_about_a_pasted_table_is_checked_against_the_message() -> None:
    """A small model quoted "F-102;Kaya AŞ;980,45" and "F-103;Aksoy Gıda;2.75" of 6 pasted invoices
    (neither in them) and nothing under the reply said so: the check ran only for an attached file.
    Its figures are checked against the message and the program's own figures of its table (its
    average, its counted total), named "the table in your message" in the UI's language."""
    from workstation.core.pasted_tables import PASTED_TITLE, counted_pasted, pasted_known

    message = PASTED + "Bu 6 faturanın toplamı ne kadar? En büyük fatura hangisi?"
    _, counted = counted_pasted(message)
    reply = ("Toplam 27.426,50 TL.\nF-101;Demir AŞ;1.250,00\nF-102;Kaya AŞ;980,45\nF-103;Aksoy Gıda;2.75\n"
             "En büyük fatura F-104 (Yıldız Ltd): 12.400,00 TL; ortalama 4.571,08.")
    items = unchecked_figures(reply, pasted_known(message), "", counted)
    assert items == ["980,45", "2.75"]
    record = unchecked_record(PASTED_TITLE, items)
    assert say(unchecked_phrases(record), locale_texts("tr").get).endswith(
        "“980,45” ve “2.75” mesajınızdaki tablo içinde yok.")
    assert say(unchecked_phrases(record)).endswith("“980,45” and “2.75” are not in the table in your message.")
    assert pasted_known("What is 2 + 2?") == ""  # (no table pasted: nothing to check against)


async def test_a_small_models_figure_that_the_pasted_table_lacks_is_named_under_its_reply(lease_profile: Path) -> None:
    """The invoices pasted in the message box and sent to SmolLM2 135M: its "1.250,00 + 2.300,00 =
    3.500,00" (they make 3.550,00) had nothing under it, a pasted table being no attached file. The
    line names the figure the message lacks, not those it has (1.250,00, 2.300,00, 20%)."""
    from test_pasted_tables import _send_pasted

    app = WorkstationApp("lease", sample_system=False, language="tr")
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: app.small_model is not None)
        await _send_pasted(app, pilot, PASTED + "What is the total with 20% VAT?")
        reply = message_views(app)[-1]
        assert "1.250,00 + 2.300,00 = 3.500,00" in reply.content  # (the model's own words)
        said = ("Rakamları, tarihleri ve adları mesajınızdaki tablo ile karşılaştırın: bu model bunları sık sık yanlış "
                "verir. “3.500,00” mesajınızdaki tablo içinde yok.")
        await until(pilot, lambda: line_under(reply).endswith(said), what=f"the check under {line_under(reply)!r}")


def test_a_date_rewritten_from_a_dotted_one_is_found_in_its_document() -> None:
    """A table's 15.03.2026 written by the reply as "15 Mart 2026", "15 March 2026" or "2026-03-15"
    was said not to be in it (a dotted date was one number, a Turkish month no month): each writing
    of the same day is found; another day is still said."""
    table = "Fatura;Müşteri;Tarih;Tutar (TL)\nF-101;Ada;02.03.2026;1.250,00\nF-102;Kaya AŞ;15.03.2026;3.480,50\n"
    for reply in ("F-102 tarihi 15 Mart 2026.", "F-102 is dated 15 March 2026.", "F-102 is dated March 15, 2026.",
                  "F-102: 2026-03-15.", "F-101: 2 Mart 2026."):
        assert unchecked_figures(reply, table) == [], reply
    assert unchecked_figures("F-102 tarihi 16 Mart 2026.", table) == ["16 Mart 2026"]


def test_a_name_the_reply_broke_over_two_lines_is_quoted_on_one() -> None:
    """A reply's "BEDEMAN\\nDurumu" was quoted under it as “BEDEMAN” and “Durumu” on two lines: each
    quoted item's spaces and line breaks are one space, in what the check finds and in a record kept
    before."""
    document = "Fatura;Müşteri;Tutar;Durum\nF-101;Ada;1.250,00;ödendi\n"
    assert unchecked_figures("Müşteri BEDEMAN\nDurumu ödendi.", document) == ["BEDEMAN Durumu"]
    record = {"name": "faturalar.csv", "items": ["BEDEMAN\nDurumu", "12\n 400"]}
    assert say(unchecked_phrases(record)).endswith("“BEDEMAN Durumu” and “12 400” are not in faturalar.csv.")


async def test_a_follow_up_of_a_pasted_table_is_checked_against_it(lease_profile: Path) -> None:
    """Invoices pasted in message 1; message 2 "When were these invoices issued?" got dates in no
    row from SmolLM2 135M and nothing under the reply: the check looked at the follow-up's own words
    alone. A follow-up is checked against the table pasted in an earlier message, named so."""
    from test_pasted_tables import _send_pasted
    from tui_helpers import send_text

    from workstation.core.pasted_tables import pasted_known

    app = WorkstationApp("lease", sample_system=False)
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: app.small_model is not None)
        first = PASTED + "What is the total?"
        await _send_pasted(app, pilot, first)
        await send_text(pilot, app, "When were these invoices issued?")
        await until(pilot, lambda: not app.generating and len(message_views(app)) == 4
                    and app.store.messages(app.conversation_id)[-1].metrics is not None)
        reply = message_views(app)[-1]
        missing = unchecked_figures(reply.content, pasted_known(first))
        assert missing, reply.content  # (the model's own words: what it made up)
        said = f"“{missing[0]}”"
        await until(pilot, lambda: said in line_under(reply) and "the table in your message" in line_under(reply),
                    what=f"the check under {line_under(reply)!r} of {reply.content!r}")


def test_a_dotted_dates_parts_vouch_for_dates_only() -> None:
    """The first way of finding "15 Mart 2026" in a table's 15.03.2026 put the date's 15 and 3 among the
    document's figures: a made-up "15 EUR" or "3 EUR" beside it, and a wrong month ("15 Nisan 2026"),
    went unsaid. A dotted date's parts vouch for a date the reply writes (its month too), not a figure."""
    lease = "Kira son ödeme: 15.03.2026. Gecikme bedeli: 50 EUR"
    assert unchecked_figures("The late fee is 15 EUR.", lease) == ["15"]
    assert unchecked_figures("The fee is 3 EUR.", lease) == ["3"]
    assert unchecked_figures("The rent is due on 15 Nisan 2026.", lease) == ["15 Nisan 2026"]
    assert unchecked_figures("The rent is due on 15 April 2026.", lease) == ["15 April 2026"]
    for same in ("The rent is due on 15 March 2026.", "Due 2026-03-15.", "Due 15/03/2026."):
        assert unchecked_figures(same, lease) == [], same


INVOICES = ("Invoice,Client,Amount,Status\nINV-1040,Birlik AS,1850.00,Paid\nINV-1041,Kaya Ltd,1120.50,Paid\n"
            "INV-1042,Deniz Foods,2200.00,Paid\nINV-1043,Atlas Print,1250.00,Unpaid\nINV-1044,Birlik AS,950.00,Paid\n"
            "INV-1045,Kaya Ltd,980.00,Unpaid\nINV-1046,Marmara Tech,1540.00,Paid\n"
            "INV-1047,Deniz Foods,1406.00,Unpaid\nINV-1048,Atlas Print,1200.00,Paid\n"
            "INV-1049,Marmara Tech,500.00,Unpaid\n")


def _invoices(tmp_path: Path) -> tuple[str, list, list]:
    from workstation.core.documents import read_document
    from workstation.core.summary_chunks import with_facts
    from workstation.core.table_facts import counted_answer

    path = tmp_path / "invoices.csv"
    path.write_text(INVOICES, encoding="utf-8")
    document = read_document(path)
    counted = counted_answer("How much is unpaid in total?", document.facts)
    return with_facts(document, all_rows=True).text, document.facts, counted


def test_a_reply_giving_the_total_of_every_invoice_for_the_unpaid_ones_is_said_to_be_no_count_of_it(
        tmp_path: Path) -> None:
    """An office assistant attached 10 invoices and asked "How much is unpaid in total?"; the reply
    said "The program counted the invoice for 12,996.50 in total." over the program's own "Amount
    where Status is Unpaid: 4 rows (…), total 4,136.00", and nothing marked it: 12,996.50 is in the
    table (the total of every invoice), so the check let it pass. It is said not to be the program's
    count for this question, and what it is; the program's figures and the counted rows' are not."""
    from workstation.core.reply_check import miscounted_figures

    document, tables, counted = _invoices(tmp_path)
    reply = "The program counted the invoice for 12,996.50 in total."
    wrong = miscounted_figures(reply, counted, tables)
    record = unchecked_record("invoices.csv", unchecked_figures(reply, document, "invoices.csv", counted), wrong)
    assert say(unchecked_phrases(record)) == (
        "Check figures, dates and names against invoices.csv: this model often gets them wrong. The reply's "
        "“12,996.50” is not the program's count for this question (4,136.00): 12,996.50 is the total of Amount in "
        "all 10 rows.")
    assert say(unchecked_phrases(record), locale_texts("tr").get).endswith(
        "Yanıttaki “12,996.50”, programın bu soru için hesabı değil (4.136,00): 12,996.50, 10 satırın tümündeki "
        "Amount toplamıdır.")
    # the program's figure, the counted rows' own, and the whole total beside the asked one: nothing to say
    for right in ("The unpaid total is 4,136.00.", "INV-1043 (1,250.00) and INV-1049 (500.00) are unpaid.",
                  "Of 12,996.50 in all, 4,136.00 is unpaid."):
        assert miscounted_figures(right, counted, tables) == [], right
    # a figure given as the program's that it did not give for the question, though the table has it
    assert [w["text"] for w in miscounted_figures("The program counted 1,850.00 unpaid.", counted, tables)] == \
        ["1,850.00"]
    assert miscounted_figures(reply, [], tables) == []  # (nothing counted for the question: nothing to hold it to)



def test_a_right_answer_given_as_the_programs_is_not_said_to_be_no_count_of_it(tmp_path: Path) -> None:
    """Any figure of a sentence naming "the program" that it had not given was said to be no count
    of the question: the table's count of rows ("4 of the 10 invoices"), a year and row numbers, under
    a right answer. Only a figure written as the counted column's (an amount) is, given in the place
    of the program's figure; the whole total beside the program's is no answer either."""
    from workstation.core.reply_check import miscounted_figures

    _, tables, counted = _invoices(tmp_path)
    bare = [{"what": "where", "title": "invoices.xlsx", "rows": 4, "figures": [{"figure": "4,136.00"}], "listed": []}]
    for right in ("The program counted 4 of the 10 invoices as unpaid, 4,136.00 in total.",
                  "The program counted 4 unpaid invoices in 2025, total 4,136.00.",
                  "The program counted them from rows 2 to 11.",
                  "The program counted 4 of the 10 invoices as unpaid.", "The program counted 4 unpaid invoices in 2025.",
                  "4 invoices (INV-1043 … INV-1049) are unpaid: 4,136.00 of the 12,996.50 invoiced.",
                  "The program counted 4,136.00 unpaid of the 12,996.50 invoiced.",
                  "The program counted 4 unpaid, 25% of them due 15.03.2026."):
        assert miscounted_figures(right, bare) == [], right
        assert miscounted_figures(right, counted, tables) == [], right
    # the all-rows total given in the program's place is still said, with what it is
    for wrong in ("The program counted the invoice for 12,996.50 in total.",
                  "The program counted 4 of the 10 invoices as unpaid, 12,996.50 in total.",
                  "The program counted 4 unpaid invoices. The program's total is 12,996.50."):
        assert [(w["text"], w.get("what")) for w in miscounted_figures(wrong, counted, tables)] == \
            [("12,996.50", "total")], wrong
    assert [w["text"] for w in miscounted_figures("The program counted $1,850 unpaid.", counted, tables)] == ["1,850"]


async def test_the_reply_check_counts_of_the_tables_held_not_read_again(
        lease_profile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As each reply about an attached table ended, the check read the document's tables again from
    the conversation's stored text, on the screen's thread: a big sheet froze the chat. It checks
    against the tables held since the question was sent: none read again, and the file gone from
    the disk meanwhile changes nothing."""
    import workstation.tui.turn as turn
    from workstation.tui.attachment import conversation_tables

    read_again: list[int] = []

    def counting(messages):  # the real one, each call counted
        read_again.append(1)
        return conversation_tables(messages)

    monkeypatch.setattr(turn, "conversation_tables", counting)
    invoices = tmp_path / "invoices.csv"
    invoices.write_text(INVOICES, encoding="utf-8")
    app = WorkstationApp("lease", sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        await ask_about_the_lease(pilot, app, invoices, "How much is unpaid in total?")
        await send_message(pilot, app, "And how much is unpaid in total?")  # (a follow-up, not attached again)
        await until(pilot, lambda: not app.generating and len(message_views(app)) == 4
                    and app.store.messages(app.conversation_id)[-1].metrics is not None)
        assert read_again == []
        counted = app.store.messages(app.conversation_id)[-1].metrics["counted"]
        assert any(i["what"] == "where" for i in counted)
        invoices.unlink()
        app._counted = counted  # (the reply's count, as the turn had it)
        record = app._document_check("The program counted the invoice for 12,996.50 in total.")
        assert record is not None and record["miscounted"][0]["what"] == "total", record
        assert read_again == []
