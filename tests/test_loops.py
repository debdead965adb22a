"""A reply that repeats itself is stopped there (core/loops.py, the scheduler's decode loop):
SmolLM2 135M went round in circles to its 1,024-token limit on most Turkish questions."""

from __future__ import annotations

import dataclasses

from workstation.core.engine import Engine
from workstation.core.events import TokenDelta, TurnFinished
from workstation.core.loops import LoopWatch, cut_loop
from workstation.core.metrics import figures_line
from workstation.core.profiles import Sampling
from workstation.tui.i18n import Texts

SENTENCE = "The meeting with the supplier is moved to Friday at noon. "
LIST_QUESTION = [{"role": "user", "content": "Liste: 1. elma 2. armut"}]
FIRST_ITEMS = ("1. Elma: Elma is a female character in a fantasy novel.\n"
               "2. Armut: Armut is a fictional character in a fantasy novel.")


def streamed_cut(text: str, step: int = 3) -> str | None:
    """Where a watch fed ``text`` a few characters at a time (as tokens come) cuts it."""
    watch = LoopWatch()
    for i in range(0, len(text), step):
        cut = watch.push(text[i:i + step])
        if cut is not None:
            return text[:cut].rstrip()
    cut = watch.finish()
    return None if cut is None else text[:cut].rstrip()


def test_a_sentence_written_three_times_is_cut_to_its_first_copy() -> None:
    assert streamed_cut("Hello. " + SENTENCE * 5) == "Hello. " + SENTENCE.strip()
    assert cut_loop("Hello. " + SENTENCE * 3, times=3) == "Hello. " + SENTENCE.strip()
    # once again (a refrain, a quote) is no loop for a chat reply; twice again is
    assert streamed_cut("Hello. " + SENTENCE * 2 + "Thanks.") is None


def test_a_loop_that_begins_mid_sentence_is_cut_where_a_sentence_ends() -> None:
    """The 135M model's Turkish e-mail: its first paragraph, then the same one less two words
    again and again; the cut kept "… sörenseceğimiz.\\n\\nKoncularını" (the next copy's first word)."""
    looped = ("Koncularını bir kabulmak anlamında, ayrılmak için bir yerdek sörenseceğimiz.\n\n"
              + "Koncularını anlamında, ayrılmak için bir yerdek sörenseceğimiz.\n\n" * 5)
    assert streamed_cut(looped) == "Koncularını bir kabulmak anlamında, ayrılmak için bir yerdek sörenseceğimiz."


def test_short_items_asked_for_and_counting_are_no_loop() -> None:
    assert streamed_cut("ok ok ok ok ok") is None
    assert streamed_cut("Sure: " + "ok " * 12) is None
    assert streamed_cut("".join(f"{n}. {n}\n" for n in range(1, 31))) is None  # counting: each line its own
    # the same item again and again is one, whatever its list number
    items = "".join(f"{n}. Elma: a fruit that grows on trees in the garden.\n" for n in range(1, 9))
    assert streamed_cut(items) == "1. Elma: a fruit that grows on trees in the garden."


def test_code_blocks_and_tables_may_repeat_themselves() -> None:
    code = "Here:\n```python\n" + "print('The meeting is moved to Friday at noon today')\n" * 6 + "```\nDone."
    assert streamed_cut(code) is None
    table = "| Day | Room | Who | What is on |\n" + "| Monday | big room | all staff | weekly meeting |\n" * 6
    assert streamed_cut(table) is None
    # after the block, the watch goes on
    assert streamed_cut(code + "\n" + SENTENCE * 4) == code + "\n" + SENTENCE.strip()


def test_a_reply_that_loops_is_stopped_before_its_limit_and_keeps_its_first_copy(engine: Engine) -> None:
    """The brief's own example: a Turkish list, greedy, went "3. Elma … 4. Armut …" to its limit."""
    events = list(engine.stream_chat(LIST_QUESTION, Sampling(temperature=0.0, max_tokens=300, repeat_penalty=1.0, seed=1)))
    final = events[-1]
    assert isinstance(final, TurnFinished)
    assert final.metrics.stop_reason == "loop"
    assert final.metrics.predicted_n < 300
    assert final.text == FIRST_ITEMS  # the repeats left out
    streamed = "".join(e.text for e in events if isinstance(e, TokenDelta))
    assert streamed.startswith(FIRST_ITEMS) and "3. Elma" in streamed  # (what streamed of them: the app shows the kept text)
    assert figures_line(final.metrics).endswith(" · stopped: it began repeating itself")
    assert figures_line(final.metrics, Texts("tr").get).endswith(" · durduruldu: kendini tekrarlıyordu")


def test_a_profile_may_let_a_reply_repeat_itself(engine: Engine) -> None:
    sampling = Sampling(temperature=0.0, max_tokens=160, repeat_penalty=1.0, seed=1, stop_on_loop=False)
    final = engine.run_chat(LIST_QUESTION, sampling)
    assert final.metrics.stop_reason == "length" and final.text.count("Elma:") > 1
    # and a reply whose lines are alike without going round (counting) runs to its own end
    counted = engine.run_chat([{"role": "user", "content": "Count from 1 to 10."}],
                              dataclasses.replace(sampling, stop_on_loop=True))
    assert counted.metrics.stop_reason == "eos" and counted.text.endswith("9. 9\n10. 10")


def test_a_reply_that_must_write_all_its_tokens_is_not_stopped(engine: Engine) -> None:
    """bench's generation runs (ignore_eos) measure a fixed number of tokens: a loop is no end."""
    sampling = Sampling(temperature=0.0, max_tokens=150, repeat_penalty=1.0, seed=1, ignore_eos=True)
    final = engine.run_chat(LIST_QUESTION, sampling)
    assert final.metrics.stop_reason == "length" and final.metrics.predicted_n == 150


def test_a_forms_lines_a_table_without_its_bars_and_copies_asked_for_are_no_loop() -> None:
    """A sign-in sheet ("Name: ____ Signature: ____" ten times), a Turkish form's dotted lines, a
    table's rows written without a leading bar, a dashed rule, and a line a message asked for ten
    times were cut to their first line as loops (review29); a loop is still cut, and copies past
    those asked for are."""
    from workstation.core.loops import chat_times, copies_asked, watched

    sheet = "\n".join(["Name: ____ Signature: ____ Date: ____"] * 10)
    form = "\n".join(f"{i}. Ad Soyad: ....... İmza: ......." for i in range(1, 11))
    table = "\n".join(["Ad | Soyad | İmza | Tarih"] * 6)
    rule = "Title\n" + " ".join(["-"] * 40)
    for text in (sheet, form, table, rule):
        assert cut_loop(text, 3) == text, text
    loop = "The meeting is on Monday at ten in room four. " * 5
    assert cut_loop(loop, 3) == "The meeting is on Monday at ten in room four."
    assert [copies_asked(q) for q in ("Write it 10 times", "10 kez yaz", "beş kere yaz", "Summarize this")] == \
        [10, 10, 5, 0]
    asked = watched([{"role": "user", "content": "Write 'I will not talk in class.' 10 times"}], Sampling())
    assert chat_times(asked) == 11 and chat_times(Sampling()) == 3
    line = "I will not talk in class. "
    watch = LoopWatch(chat_times(asked))
    assert watch.push(line * 10) is None  # the ten asked for
    assert watch.push(line * 12) is not None  # and no end to them


def test_a_stretch_written_again_with_only_its_numbers_changed_is_a_loop() -> None:
    """A paragraph under "06_summer.txt", "07_summer.txt" …, invented invoices "F-011 … F-027" and
    "Day 3: … Day 4: …" with the same words ran to the token limit: their numbers changed, so no
    stretch was written again word for word."""
    para = "The summer figures were good and the shop sold more ice cream than in any year before it."
    files = "".join(f"{n:02d}_summer.txt\n{para}\n\n" for n in range(6, 13))
    assert streamed_cut(files) == f"06_summer.txt\n{para}"
    invoices = "".join(f"Invoice F-{n:03d} from ACME for 1,200 TL\n" for n in range(11, 28))
    assert streamed_cut(invoices) == "Invoice F-011 from ACME for 1,200 TL\nInvoice F-012 from ACME for 1,200 TL"
    days = " ".join(f"Day {n}: We visit the old town and then have lunch at the hotel." for n in range(3, 9))
    assert streamed_cut(days) == "Day 3: We visit the old town and then have lunch at the hotel."
    assert cut_loop(days, 2) == "Day 3: We visit the old town and then have lunch at the hotel."  # (a summary's cut)
    # once again with other numbers is two things said, not a loop, even in a summary
    sales = " ".join(f"In {y} the shop sold {n} units of ice cream and its profit was {n * 9} TL, as planned."
                     for y, n in ((2023, 1200), (2024, 1350)))
    assert streamed_cut(sales) is None and cut_loop(sales, 2) == sales


def test_lists_that_count_or_differ_only_in_a_number_they_were_asked_for_are_no_loop() -> None:
    """Compared with their numbers alike, these are the same line again and again: a list that
    counts, rooms, a times table, each day of the week, a table; and items that differ."""
    week = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
    no_loops = {
        "numbers 1 to 50": "\n".join(str(n) for n in range(1, 51)),
        "numbered": "".join(f"{n}. {n}\n" for n in range(1, 51)),
        "rooms": "".join(f"Room {n}: free\n" for n in range(101, 140)),
        "times table": "".join(f"7 x {n} = {7 * n}\n" for n in range(1, 21)),
        "products": "".join(f"{n}. Product {n} - price {n * 10} TL\n" for n in range(1, 30)),
        "week": "\n".join(f"{d}: team meeting at 10:00 in room 4 with all of the sales staff" for d in week),
        "fruits": "1. apples 2. pears 3. plums 4. cherries 5. grapes 6. figs 7. lemons 8. limes 9. kiwis",
        "table": "| No | Item | Price |\n|---|---|---|\n" + "".join(f"| {n} | pen | {n} TL |\n" for n in range(1, 30)),
    }
    for name, text in no_loops.items():
        assert streamed_cut(text) is None, name
        assert cut_loop(text, 2) == text, name


def test_a_line_with_a_lone_dash_is_watched() -> None:
    """A lone "-" read as a form's blank left its whole line unwatched: a bullet list's items, and
    "9:00 AM - 9:00 AM:" written to the token limit on one line; a dashed rule is still no loop."""
    assert streamed_cut("9:00 AM - 9:00 AM: " * 20) == "9:00 AM - 9:00 AM:"
    bullets = "- Elma: a fruit that grows on trees in the garden.\n" * 8
    assert streamed_cut("Fruit:\n" + bullets) == "Fruit:\n- Elma: a fruit that grows on trees in the garden."
    hours = "".join(f"- {h}:00 - {h + 1}:00 meeting with the team\n" for h in range(8, 18))
    assert streamed_cut(hours) is None
    assert streamed_cut("Title\n" + " ".join(["-"] * 40)) is None and streamed_cut("— — — — — — — — — — — — — — — — —") is None


def test_a_log_of_hours_that_goes_round_on_one_line_is_stopped(engine: Engine) -> None:
    """SmolLM2 135M at temperature 0 wrote "9:00 AM - 9:00 AM:" to its token limit."""
    sampling = Sampling(temperature=0.0, max_tokens=300, repeat_penalty=1.0, seed=1)
    final = engine.run_chat([{"role": "user", "content": "Write a log entry for each hour from 9 to 17."}], sampling)
    assert final.metrics.stop_reason == "loop" and final.metrics.predicted_n < 300
    assert final.text.count("9:00 AM") <= 2


def test_lines_asked_for_or_one_for_each_day_are_copies_asked_for() -> None:
    """"Office hours for every day of January" was cut to two lines (lines alike but for their dates: the
    numbers-changed rule), and "Write 20 lines" was asked for no copies (loopstop2)."""
    from workstation.core.loops import MONTH_DAYS, LoopWatch, chat_times, copies_asked, watched
    from workstation.core.profiles import Sampling

    assert [copies_asked(q) for q in ("Write 20 lines of 'I am here'", "12 satır yaz", "office hours for every day of "
                                      "January", "her gün için bir satır yaz", "What day is it?")] == \
        [20, 12, MONTH_DAYS, MONTH_DAYS, 0]
    asked = [{"role": "user", "content": "Write the office hours for every day of January 2025, one line each."}]
    times = chat_times(watched(asked, Sampling()))
    reply = "".join(f"2025-01-{d:02d}: the office is open from 09:00 to 17:00 for visitors and calls.\n" for d in range(1, 32))
    watch, cut = LoopWatch(times=times), None
    for word in reply.split(" "):
        cut = cut or watch.push(word + " ")
    assert cut is None, reply[:cut]
    watch, cut = LoopWatch(), None  # (unasked: the numbers-changed rule still stops it)
    for word in reply.split(" "):
        cut = cut or watch.push(word + " ")
    assert cut is not None


def reminder(n: int, amount: int, day: int) -> str:
    return (f"Dear customer, this is a friendly reminder that invoice F-{n:03d} for {amount} TL is due on {day} March. "
            "Please pay by bank transfer.\n\n")


def test_letters_asked_for_the_items_a_message_lists_are_not_cut() -> None:
    """"A payment reminder for each of invoices F-011, F-012 and F-013": three reminders alike but for
    their numbers were cut after the first, "stopped: it repeated itself" (loopstop3); a fourth the
    message did not ask for still stops the reply, the three asked for kept."""
    from workstation.core.loops import items_asked, loop_watch, watched

    asked = {
        "Write a payment reminder for each of invoices F-011, F-012 and F-013": 3,
        "Write a payment reminder for these 3 invoices.": 3,
        "Write a reminder for F-011, F-012 and F-013.": 3,
        "Write a thank-you note to each of Ali, Ayşe, Mehmet and Zeynep.": 4,
        "Şu 3 fatura için birer ödeme hatırlatması yaz.": 3,
        "F-011, F-012 ve F-013 faturaları için hatırlatma yaz.": 3,
        "Bu üç müşteriye birer mektup yaz.": 3,
        # (no count: a year, an amount, one report)
        "Summarize the 2024 report.": 0,
        "Sales were 1,200 TL in March.": 0,
    }
    assert {q: items_asked(q) for q in asked} == asked
    reply = reminder(11, 1200, 5) + reminder(12, 1350, 10) + reminder(13, 900, 15)
    for question in ("Write a payment reminder for each of invoices F-011, F-012 and F-013",
                     "F-011, F-012 ve F-013 faturaları için birer ödeme hatırlatması yaz."):
        sampling = watched([{"role": "user", "content": question}], Sampling())
        watch = loop_watch(sampling)
        assert watch.push(reply) is None and watch.finish() is None, question
        more = reply + reminder(14, 700, 20) + reminder(15, 650, 25)
        watch = loop_watch(sampling)
        cut = watch.push(more) or watch.finish()
        assert cut is not None and more[:cut].rstrip() == reply.rstrip()
    assert streamed_cut(reply) is not None  # (unasked: the numbers-changed rule stops it)


def test_a_bare_every_day_or_an_attached_documents_words_ask_for_no_copies() -> None:
    """"I get 40 e-mails every day. Summarize this one" allowed 32 copies before the loop stop, as
    "a line for every day of January" does; and an attached document's own lists and "every day"s
    are no question's (loopstop3)."""
    from workstation.core.loops import MONTH_DAYS, copies_asked, watched
    from workstation.tui.attachment import with_attached

    assert [copies_asked(q) for q in ("I get 40 e-mails every day. Summarize this one for me.",
                                      "Her gün gelen bu raporu özetle.", "We meet every day at nine.")] == [0, 0, 0]
    assert [copies_asked(q) for q in ("Write a line for each day of March.", "her günü için bir satır yaz",
                                      "Write the opening hours for every day of the week.")] == [MONTH_DAYS] * 3
    document = "Invoices F-011, F-012, F-013, F-014 and F-015 are paid every day of the month.\n" * 3
    for label in ("Document: notes.txt", "Belge: notlar.txt"):
        message = {"role": "user", "content": with_attached("Summarize this.", label, document)}
        assert watched([message], Sampling()).loop_copies == 0, label
    message = {"role": "user", "content": with_attached("Write it 10 times.", "Document: notes.txt", document)}
    assert watched([message], Sampling()).loop_copies == 10


def test_copies_already_decided_are_kept_by_another_watched() -> None:
    """A desk PC's request read again by serve's own ``watched``: what was decided stays, a count the
    message asks for that is more is taken."""
    from workstation.core.loops import watched

    decided = Sampling(loop_copies=31)
    assert watched([{"role": "user", "content": "Write it 10 times"}], decided).loop_copies == 31
    assert watched([{"role": "user", "content": "Summarize this"}], decided).loop_copies == 31
    assert watched([{"role": "user", "content": "Write it 40 times"}], decided).loop_copies == 40


def test_things_listed_allow_copies_alike_but_for_their_numbers_never_word_for_word() -> None:
    """"Explain the 100 year flood", "What does the on switch do?" and "Compare 2023 and 2024 sales" were
    taken as copies asked for (100, 10, 2): a sentence written 60 times was never cut (review31). Things
    listed or counted out now allow copies whose numbers change only; the loop stop is as it was."""
    from workstation.core.loops import MONTH_DAYS, copies_asked, items_asked, loop_watch, watched

    for question in ("Explain the 100 year flood", "What does the on switch do?", "Compare 2023 and 2024 sales",
                     "Bu on gün içinde ne oldu?"):
        sampling = watched([{"role": "user", "content": question}], Sampling())
        assert sampling.loop_copies == 0, question
        looping = "The flood plain is the land beside a river that water covers in a flood. " * 60
        watch = loop_watch(sampling)
        cut = watch.push(looping) or watch.finish()
        assert cut is not None and cut < 200, (question, cut)
    assert copies_asked("Write these 3 invoices") == 0 and items_asked("Write these 3 invoices") == 3
    assert items_asked("Write a note to each of " + ", ".join(f"room {n}" for n in range(1, 60))) == MONTH_DAYS
    assert items_asked("What does the on switch do?") == 0
