"""F6 given a folder summarizes every document in it, in the app, through batch's own queue
(``run_batch``) with the app's loaded model: it said "School Letters is a folder, not a document.
To summarize every document in it, run: …run.sh batch …", and Ctrl+P had no command for it.
A real folder (a .txt, a .docx of several parts, an empty file), the real small model."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from docmaker import honeybee_text, make_docx
from textual.widgets import Button, Input, Label, ProgressBar
from tui_helpers import f6_state, notices, open_f6, summarize_in_f6, until

from workstation.core.batch_queue import DB_NAME, LOCK_NAME, queue_rows
from workstation.core.store import ConversationStore
from workstation.tui.app import WorkstationApp
from workstation.tui.screens.file_picker import FilePicker, FileTree
from workstation.tui.screens.summarize import SummarizeScreen


def _letters(tmp_path: Path) -> Path:
    folder = tmp_path / "School Letters"
    folder.mkdir()
    (folder / "letter1 trip.txt").write_text("Dear parents, the class trip to the museum is on Friday. "
                                             "Bring a packed lunch.\n", encoding="utf-8")
    paragraphs = honeybee_text(6).split("\n\n")
    make_docx(folder / "letter2 bees.docx", [("The school garden", paragraphs)])  # (parts: a context of 1,024)
    (folder / "letter3 empty.txt").write_text("", encoding="utf-8")
    return folder


def _short_letters(tmp_path: Path) -> Path:
    """School Letters of two short letters and an empty file: a folder's run to its end, where the
    parts of a long document are not what is looked at (the docx of several parts costs a test
    a minute of the machine's time)."""
    folder = tmp_path / "School Letters"
    folder.mkdir()
    (folder / "letter1 trip.txt").write_text("Dear parents, the class trip to the museum is on Friday. "
                                             "Bring a packed lunch.\n", encoding="utf-8")
    (folder / "letter2 play.txt").write_text("Dear parents, the school play is on Thursday evening at six.\n",
                                             encoding="utf-8")
    (folder / "letter3 empty.txt").write_text("", encoding="utf-8")
    return folder


async def _seen(pilot, screen: SummarizeScreen, until_done: bool = True) -> list[str]:
    """The state lines F6 shows until its run ends."""
    seen: list[str] = []

    def look() -> bool:
        state = f6_state(screen)
        if not seen or seen[-1] != state:
            seen.append(state)
        return not screen.running

    await until(pilot, look, steps=20000)
    return seen


async def test_f6_summarizes_a_folder_through_the_batch_queue_and_a_stopped_run_goes_on_where_it_stopped(
        profiles: Path, tmp_path: Path) -> None:
    """F6 on a folder: each document, which of how many and its part on the state line; the chat
    busy meanwhile (said as for a summary), Esc leaving it running. Ctrl+X stops a folder as Ctrl+C
    stops `batch`: the document in hand waits; F6 again on the folder goes on where it stopped, says
    so, and does not summarize again what was done. At the end, the counts with why a document was
    skipped, "All summaries.md" shown and named; Ctrl+K asks about it in a conversation of its own.
    (One run serves both: the full run and the stopped one each summarized the long docx.)"""
    folder = _letters(tmp_path)
    app = WorkstationApp("a", sample_system=False, language="en", store_path=tmp_path / "c.db")
    said = notices(app)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await summarize_in_f6(pilot, app, folder)
        await until(pilot, lambda: "Document 1 of 3" in f6_state(screen) or not screen.running)
        assert screen.running, f6_state(screen)
        await pilot.press("escape")  # back to the chat: it goes on
        await until(pilot, lambda: app.screen is app.chat_screen)
        assert any("School Letters goes on" in n for n in said), said
        assert app.summarizing == "School Letters" and app.generating
        app.chat_screen.set_input("Hello?")
        await pilot.press("enter")
        await until(pilot, lambda: any(n.startswith("A summary of School Letters is being made") for n in said))
        await pilot.press("f6")
        await until(pilot, lambda: app.screen is screen)
        seen: list[str] = []

        def in_document_2() -> bool:
            state = f6_state(screen)
            if not seen or seen[-1] != state:
                seen.append(state)
            return "Document 2 of 3: letter2 bees.docx, part" in state or not screen.running

        await until(pilot, in_document_2, steps=20000)
        assert screen.running, f6_state(screen)
        assert any(s.startswith("Document 2 of 3: letter2 bees.docx, part 1 of ") for s in seen), seen
        # the folder's time left, as `batch` says it (it said only "… · 1 min 9 s so far"), and the bar by the work
        # (tokens) done of the whole, not by documents: a report's 90 s sat at 15%, then notes went from 40% to 90%
        assert any(re.fullmatch(r"Document 2 of 3: letter2 bees\.docx, part 1 of \d+ \(2 documents left, [^()]+ at this "
                                r"run's pace\) · .+ so far", " ".join(s.split())) for s in seen), seen
        bar = screen.query_one("#summarize-progress", ProgressBar)
        assert bar.total is not None and bar.total > 3 and bar.progress == int(bar.progress) > 3, (bar.total, bar.progress)
        # Ctrl+Q's question says the documents done are kept (it said "no part of it is done yet": review29)
        assert screen.quit_question().startswith("School Letters is being summarized: 1 of its 3 documents are "
                                                 "done and kept"), screen.quit_question()
        await pilot.press("ctrl+x")
        await _seen(pilot, screen)
        state = f6_state(screen)
        every = (folder / "summaries" / "All summaries.md").read_text(encoding="utf-8")
        assert "- letter2 bees.docx: not summarized yet (the run stopped before it was done); F6 on the folder " \
            "again goes on." in every, every  # (it said "run the batch again")
        assert state.startswith("School Letters: 1 summarized, 0 skipped, 0 failed. Stopped: 2 documents wait; "
                                "press Enter on the folder again"), state
        first = folder / "summaries" / "letter1 trip.txt.summary.md"
        made = first.stat().st_mtime_ns
        assert {r.path: r.status for r in queue_rows(folder / "summaries")} == {
            "letter1 trip.txt": "done", "letter2 bees.docx": "pending", "letter3 empty.txt": "pending"}
        box = screen.query_one("#summarize-path", Input)
        assert box.value == str(folder)
        box.focus()
        await pilot.press("enter")  # again: it goes on
        seen = await _seen(pilot, screen)
        assert any(n.startswith("Going on where the last run on School Letters stopped: 1 of its 3 documents "
                                "done already") for n in said), said
        assert not any("letter1 trip.txt" in s for s in seen), seen
        assert first.stat().st_mtime_ns == made
        state = f6_state(screen)
        every_path = folder / "summaries" / "All summaries.md"
        assert state.startswith("School Letters: 2 summarized, 1 skipped ('letter3 empty.txt' is empty), 0 failed."), state
        assert ", 0 failed." in state and str(every_path) in state and "Ctrl+K on it (Tab or a click goes to it) asks about them" in state, state
        text = every_path.read_text(encoding="utf-8")
        assert "## letter1 trip.txt" in text and "## letter2 bees.docx" in text
        assert screen.summary == text
        assert not app.generating and app.summarizing is None
        assert (folder / "summaries" / "letter2 bees.docx.summary.md").is_file()
        app.screen.query_one("#summarize-result").focus()  # (Ctrl+K asks from the summary, not the path box)
        await pilot.press("ctrl+k")  # from the summary: asks in the chat
        await until(pilot, lambda: app.screen is app.chat_screen and app.conversation_id is not None)
        conv = app.conversation_id
    assert (folder / "summaries" / DB_NAME).is_file()
    store = ConversationStore(tmp_path / "c.db")
    try:
        titles = {c.id: c.title for c in store.list()}
        messages = store.messages(conv)
    finally:
        store.close()
    assert titles[conv] == "About School Letters"
    assert [m.role for m in messages] == ["user", "assistant"] and messages[1].content == text


async def test_ctrl_p_summarize_a_folder_opens_f6_with_the_dialog_for_a_folder(profiles: Path, tmp_path: Path) -> None:
    """Ctrl+P "Summarize a folder" (in Turkish "Bir klasörü özetle"): F6, its Open dialog asking
    for the folder; its button summarizes the folder shown."""
    folder = _short_letters(tmp_path)
    app = WorkstationApp("a", sample_system=False, language="en", store_path=tmp_path / "c.db")
    async with app.run_test(size=(120, 34)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Summarize a folder" in titles
        app.action_summarize_folder()
        await until(pilot, lambda: isinstance(app.screen, FilePicker) and bool(app.screen.query(FileTree)))
        picker = app.screen
        assert isinstance(picker, FilePicker)
        assert str(picker.query_one(".dialog-title").render()) == "Choose the folder to summarize"
        line = picker.query_one("#picker-path", Input)
        line.focus()
        line.value = str(folder)
        await pilot.press("enter")  # the folder shown in the list
        await until(pilot, lambda: Path(picker.query_one(FileTree).path) == folder)
        await pilot.click("#picker-folder")
        screen = app.summarize_screen()
        await until(pilot, lambda: app.screen is screen and screen.running)
        assert app.summarizing == "School Letters"
        await _seen(pilot, screen)
        assert f6_state(screen).startswith("School Letters: 2 summarized"), f6_state(screen)
        await pilot.press("f9")  # Turkish
        await until(pilot, lambda: app.texts.lang == "tr")
        assert "Bir klasörü özetle" in [c.title for c in app.get_system_commands(app.chat_screen)]
        assert f6_state(screen).startswith("School Letters: 2 özetlendi, 1 atlandı"), f6_state(screen)


async def test_ctrl_k_on_a_folder_too_long_for_a_message_says_so(profiles: Path, tmp_path: Path) -> None:
    """Ctrl+K on the file of a folder's summaries longer than a message of this profile holds: said as
    for a document too long (its words, a message's), and what to do; no conversation is made of it
    (the model would have read its end alone). Its failed documents are named with why, the rest
    counted."""
    folder = tmp_path / "Scans"
    folder.mkdir()
    about = " from the office of the school board about the class trip to the city museum and the packed lunches"
    for n in range(15):  # damaged files fail at once, each a line in All summaries.md (long names: few files)
        (folder / f"scanned letter number {n:02d}{about}.pdf").write_bytes(b"not a PDF at all " * 4)
    app = WorkstationApp("a", sample_system=False, language="en", store_path=tmp_path / "c.db")
    said = notices(app)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await summarize_in_f6(pilot, app, folder)
        await _seen(pilot, screen)
        state = f6_state(screen)
        assert state.startswith(f"Scans: 0 summarized, 0 skipped, 15 failed ('scanned letter number 00{about}"
                                ".pdf' is damaged or not really a PDF; open it in the program it came from and "
                                "save it as a PDF again · 'scanned letter number 01"), state
        assert " · and 12 more). Ctrl+R tries the failed ones again (those summarized are not done again). " \
            "All the summaries are in one file" in state, state
        conversations = app.conversation_id
        # the folder's run over: its summaries take the focus, for Ctrl+K at once (the path box keeps the key)
        await until(pilot, lambda: app.screen.query_one("#summarize-result").has_focus)
        await pilot.press("ctrl+k")
        await until(pilot, lambda: any(n.startswith("All summaries.md is too long to ask about in the chat: a message in this profile can be up to about ")
                                       for n in said))
        assert app.screen is screen and app.conversation_id == conversations


def _hold_lock(outdir: Path) -> subprocess.Popen[str]:
    """Another run holding the folder's lock (as `batch` on the command line does while it works)."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys\nfrom pathlib import Path\nfrom workstation.core.batch_queue import BatchLock\n"
         "lock = BatchLock(Path(sys.argv[1]))\nprint('held', flush=True)\nsys.stdin.read()\n", str(outdir)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize("lang", ["en", "tr"])
async def test_f6_on_a_folder_another_run_holds_says_so_in_plain_words(profiles: Path, tmp_path: Path,
                                                                       lang: str) -> None:
    """Another run (here: `batch` on the command line) works on the folder: F6 says so in one sentence
    in the UI's language, what to do, without the command line's Ctrl-C or its process number (it
    said "Another batch run (process 4242) … stop it with Ctrl-C in the window it runs in", in English
    under Turkish). Once that run has gone, its lock file left behind does not block F6."""
    folder = _short_letters(tmp_path)
    holder = _hold_lock(folder / "summaries")
    app = WorkstationApp("a", sample_system=False, language=lang, store_path=tmp_path / "c.db")
    said = notices(app)
    try:
        async with app.run_test(size=(120, 34)) as pilot:
            screen = await summarize_in_f6(pilot, app, folder)
            await until(pilot, lambda: not screen.running and bool(said))
            state = f6_state(screen)
            sentence = ("Another summarizing run is already working on this folder" if lang == "en" else
                        "Bu klasör üzerinde zaten başka bir özetleme çalışıyor")
            assert state.startswith(sentence) and sentence in said[-1], (state, said)
            assert "Ctrl-C" not in state and str(holder.pid) not in state and "batch run" not in state, state
            holder.communicate("")  # it ends, leaving its lock file (as a killed run does)
            assert (folder / "summaries" / LOCK_NAME).exists()
            box = screen.query_one("#summarize-path", Input)
            box.focus()
            await pilot.press("enter")
            await _seen(pilot, screen)
            assert f6_state(screen).startswith("School Letters: 2 "), f6_state(screen)
    finally:
        if holder.poll() is None:
            holder.communicate("")


def test_batch_held_by_another_run_says_so_in_turkish(profiles: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`batch --lang tr` on a folder another run holds: the command line's advice (Ctrl-C in its
    window), in Turkish (it was English)."""
    from workstation.cli import main

    folder = _letters(tmp_path)
    holder = _hold_lock(folder / "summaries")
    try:
        assert main(["batch", str(folder), "-p", str(profiles / "a.yaml"), "--lang", "tr"]) == 1
        err = capsys.readouterr().err.strip()
        assert f"Başka bir toplu çalıştırma (işlem {holder.pid})" in err and "Ctrl-C" in err, err
        assert len(err.splitlines()) == 1, err
    finally:
        holder.communicate("")


async def test_f6_shows_the_last_folders_run_again_after_a_restart_and_retries_the_failed(
        profiles: Path, tmp_path: Path) -> None:
    """F6 on a folder, Ctrl+Q, start again, F6: the last folder's run is shown again (its counts, the
    file of every summary in the pane, the folder in the box; the pane was empty although the files
    were there). Ctrl+R, said in the footer and on the state line, tries the failed document again
    (mended meanwhile) without doing again the one summarized."""
    folder = tmp_path / "Orders"
    folder.mkdir()
    (folder / "memo.txt").write_text("The canteen closes at two on Fridays. Bring your own cup.\n", encoding="utf-8")
    (folder / "order.docx").write_bytes(b"not a docx at all " * 4)
    app = WorkstationApp("a", sample_system=False, language="en", store_path=tmp_path / "c.db")
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await summarize_in_f6(pilot, app, folder)
        await _seen(pilot, screen)
        first = f6_state(screen)
        assert first.startswith("Orders: 1 summarized, 0 skipped, 1 failed ('order.docx"), first
    memo = folder / "summaries" / "memo.txt.summary.md"
    made = memo.stat().st_mtime_ns
    app = WorkstationApp("a", sample_system=False, language="en", store_path=tmp_path / "c.db")
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await open_f6(pilot, app)
        await until(pilot, lambda: f6_state(screen).startswith("Orders: "))
        state = f6_state(screen)
        assert state.startswith("Orders: 1 summarized, 0 skipped, 1 failed ('order.docx"), state
        assert "Ctrl+R tries the failed ones again" in state, state
        every = (folder / "summaries" / "All summaries.md").read_text(encoding="utf-8")
        assert screen.summary == every and "## memo.txt" in every
        assert screen.query_one("#summarize-path", Input).value == str(folder)
        assert "retry the failed ones" in [b.description for b in screen.active_bindings.values()
                                           if b.binding.id == "summarize.run" for b in [b.binding]]
        make_docx(folder / "order.docx", [("Order", ["Ten boxes of paper for the office, to come on Monday."])])
        await pilot.press("ctrl+r")
        await until(pilot, lambda: screen.running)
        await _seen(pilot, screen)
        state = f6_state(screen)
        assert state.startswith("Orders: 2 summarized, 0 skipped, 0 failed."), state
    assert memo.stat().st_mtime_ns == made


@pytest.mark.parametrize("lang", ["en", "tr"])
async def test_the_dialog_for_a_folder_summarizes_it_with_a_key_it_names(profiles: Path, tmp_path: Path,
                                                                        lang: str) -> None:
    """The dialog asking for the folder to summarize: Ctrl+S summarizes the folder shown, from the
    list or the path line, and the hint and the button say so (the button took three Tabs, unsaid)."""
    folder = _letters(tmp_path)
    app = WorkstationApp("a", sample_system=False, language=lang, store_path=tmp_path / "c.db")
    async with app.run_test(size=(120, 34)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        app.action_summarize_folder()
        await until(pilot, lambda: isinstance(app.screen, FilePicker) and bool(app.screen.query(FileTree)))
        picker = app.screen
        assert isinstance(picker, FilePicker)
        hint = str(picker.query_one(".dialog-hint", Label).render())
        button = str(picker.query_one("#picker-folder", Button).label)
        words = "Ctrl+S: summarize the folder shown" if lang == "en" else "Ctrl+S: gösterilen klasörü özetle"
        assert hint.endswith(" · " + words), hint
        assert button == ("Summarize this folder (Ctrl+S)" if lang == "en" else "Bu klasörü özetle (Ctrl+S)"), button
        line = picker.query_one("#picker-path", Input)
        line.focus()
        line.value = str(folder)
        await pilot.press("enter")  # the folder shown in the list
        await until(pilot, lambda: Path(picker.query_one(FileTree).path) == folder)
        picker.query_one(FileTree).focus()
        await pilot.press("ctrl+s")
        screen = app.summarize_screen()
        await until(pilot, lambda: app.screen is screen and screen.running)
        assert app.summarizing == "School Letters"
        await pilot.press("ctrl+x")
        await until(pilot, lambda: not screen.running, steps=20000)


async def test_the_file_of_every_summary_says_its_notes_in_its_own_language(profiles: Path, tmp_path: Path) -> None:
    """F6 on a folder in English, F9 (Turkish), F6 on it again (nothing to do again): "Tüm özetler.md"
    says each summary's notes (the small model's caveat) in Turkish; they stayed in English, the
    language the summary was made in, under Turkish titles. The summary file itself is left as made."""
    folder = tmp_path / "Notes"
    folder.mkdir()
    (folder / "memo.txt").write_text("The canteen closes at two on Fridays. Bring your own cup.\n", encoding="utf-8")
    app = WorkstationApp("a", sample_system=False, language="en", store_path=tmp_path / "c.db")
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await summarize_in_f6(pilot, app, folder)
        await _seen(pilot, screen)
        english = (folder / "summaries" / "All summaries.md").read_text(encoding="utf-8")
        assert "> Check names, dates and figures against the document:" in english, english
        await pilot.press("f9")
        await until(pilot, lambda: app.texts.lang == "tr")
        box = screen.query_one("#summarize-path", Input)
        box.value = str(folder)
        box.focus()
        await pilot.press("enter")  # (nothing to do again: it may be over at once)
        await until(pilot, lambda: (folder / "summaries" / "Tüm özetler.md").is_file() and not screen.running)
    turkish = (folder / "summaries" / "Tüm özetler.md").read_text(encoding="utf-8")
    assert "> Adları, tarihleri ve rakamları belgeyle karşılaştırın:" in turkish, turkish
    assert "Check names, dates" not in turkish, turkish
    assert "Check names, dates" in (folder / "summaries" / "memo.txt.summary.md").read_text(encoding="utf-8")


async def test_f6_on_a_folder_takes_the_summary_f6_made_of_a_document_in_it(profiles: Path, tmp_path: Path) -> None:
    """A paralegal summarized an agreement in F6, then the folder holding a copy of it: the run
    summarized the agreement again (a minute of four). Its content the same and the profile the
    same, F6's summary is taken: said on the state line and in "All summaries.md", the summary
    file the very summary F6 made; the other document is summarized. The caveat of the small
    model is said once, at the top, under no document."""
    folder = tmp_path / "Client A"
    folder.mkdir()
    text = "The tenant pays 1,850 dollars a month. The lease runs for twelve months from March.\n"
    (tmp_path / "agreement.txt").write_text(text, encoding="utf-8")
    (folder / "agreement copy.txt").write_text(text, encoding="utf-8")  # (the same content, another name)
    (folder / "memo.txt").write_text("The office closes at two on Fridays. Bring your own cup.\n", encoding="utf-8")
    app = WorkstationApp("a", sample_system=False, language="en", store_path=tmp_path / "c.db")
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await summarize_in_f6(pilot, app, tmp_path / "agreement.txt")
        await until(pilot, lambda: screen.running, steps=2000)
        await until(pilot, lambda: not screen.running and bool(screen.summary), steps=20000)
        made = screen.summary
        box = screen.query_one("#summarize-path", Input)
        box.value = str(folder)
        box.focus()
        await pilot.press("enter")
        seen = await _seen(pilot, screen)
        state = f6_state(screen)
    assert not any("agreement copy.txt" in s and s.startswith("Document") for s in seen), seen
    assert "agreement copy.txt was taken from F6's summary of agreement.txt, made " in state, state
    assert state.startswith("Client A: 2 summarized, 0 skipped, 0 failed."), state
    out = folder / "summaries"
    assert (out / "agreement copy.txt.summary.md").read_text(encoding="utf-8") == made
    db = sqlite3.connect(out / DB_NAME)
    events = db.execute("SELECT path, event FROM events").fetchall()
    db.close()
    assert ("agreement copy.txt", "taken") in events and ("agreement copy.txt", "started") not in events, events
    assert ("memo.txt", "started") in events, events
    every = (out / "All summaries.md").read_text(encoding="utf-8")
    assert "## agreement copy.txt\n\n_Taken from F6's summary of agreement.txt, made " in every, every
    caveat = "> Check names, dates and figures against the document:"
    assert every.startswith("# All summaries of Client A\n\n" + caveat), every
    assert every.count(caveat) == 1, every
    assert caveat in (out / "memo.txt.summary.md").read_text(encoding="utf-8")  # (each file keeps its own)


async def test_a_summary_done_takes_the_focus_so_ctrl_k_asks_at_once(profiles: Path, tmp_path: Path) -> None:
    """F6's line at a summary's end says "Ctrl+K on the summary below … asks questions about it in the
    chat", but the path box kept the focus, and there Ctrl+K is the box's own delete key
    (``box_keeps``): pressed as told, it did nothing. The summary done takes the focus; Tab and
    Shift+Tab go between it and the path box (past the buttons it took four presses), where Ctrl+K
    still deletes to the end."""
    doc = tmp_path / "trip.txt"
    doc.write_text("Dear parents, the class trip to the museum is on Friday. Bring a packed lunch.\n",
                   encoding="utf-8")
    app = WorkstationApp("a", sample_system=False, language="en", store_path=tmp_path / "c.db")
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await summarize_in_f6(pilot, app, doc)
        await until(pilot, lambda: not screen.running and screen.has_summary, steps=20000)
        box, shown = screen.query_one("#summarize-path", Input), screen.query_one("#summarize-result")
        await until(pilot, lambda: shown.has_focus)
        assert "Ctrl+K on the summary below (Tab or a click goes to it) asks" in f6_state(screen), f6_state(screen)
        await pilot.press("tab")  # to the path box, at once
        assert box.has_focus
        await pilot.press("ctrl+k")  # the box's own there: deletes (what is selected, or to the end)
        assert app.screen is screen and box.has_focus and str(doc).startswith(box.value) and box.value != str(doc)
        box.value = str(doc)
        await pilot.press("shift+tab")
        assert shown.has_focus
        await pilot.press("shift+tab", "tab")
        assert shown.has_focus
        await pilot.press("ctrl+k")  # from the summary: asks in the chat
        await until(pilot, lambda: app.screen is app.chat_screen and app.conversation_id is not None)


async def test_the_bar_of_a_folder_run_going_on_counts_the_documents_done_before(profiles: Path,
                                                                               tmp_path: Path) -> None:
    """F6 going on with a folder's run: the bar showed 14 of 24 documents done (10 summarized, 4 failed
    by a run before), then, by tokens once a document was done, this run's work alone: 1 done of
    about 11 (9%). The documents done before count as done work (their text at this run's pace), and
    the bar never goes back (the failed ones, counted by documents, are no work)."""
    from types import SimpleNamespace

    from workstation.core.batch_queue import BatchEvent, BatchQueue, Pace
    from workstation.tui.screens.summarize import FolderEvent

    folder = tmp_path / "Notes"
    out = folder / "summaries"
    out.mkdir(parents=True)
    for i in range(24):
        (folder / f"note{i:02}.txt").write_text(f"Note {i}: the delivery for order {i} came on Monday.\n",
                                                encoding="utf-8")
    queue = BatchQueue(out / DB_NAME)
    try:
        queue.scan(folder, out)
        for i in range(10):  # the run before
            queue.mark_done(f"note{i:02}.txt", {})
        for i in range(10, 14):
            queue.mark_failed(f"note{i:02}.txt", "damaged")
        app = WorkstationApp("a", start_engine=False, sample_system=False, language="en",
                             store_path=tmp_path / "c.db")
        async with app.run_test(size=(120, 34)) as pilot:
            await pilot.press("f6")
            await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
            screen = app.screen
            assert isinstance(screen, SummarizeScreen)
            screen.path = folder
            bar = screen.query_one("#summarize-progress", ProgressBar)
            screen.post_message(FolderEvent(BatchEvent("start", counts=queue.counts())))
            await until(pilot, lambda: bar.total == 24)
            before = bar.progress / bar.total
            assert before == pytest.approx(14 / 24)
            pace = Pace()  # this run's: one note done
            pace.begin()
            row = next(r for r in queue.rows() if r.path == "note14.txt")
            queue.mark_done(row.path, {})
            totals = {"document_tokens": 16, "prompt_n": 120, "prompt_ms": 900.0, "calls": 1, "predicted_ms": 400.0,
                      "total_ms": 1400.0}
            pace.finished(row, row.size, SimpleNamespace(totals=totals, chunk_budget=900, prefix_tokens=90))
            work = pace.work(queue)
            assert work is not None and work[0] / work[1] == pytest.approx(11 / 20, abs=0.02), work
            screen.post_message(FolderEvent(BatchEvent("file-done", row.path, counts=queue.counts(), work=work)))
            await until(pilot, lambda: bar.total != 24)
            assert bar.progress / bar.total >= before, (bar.progress, bar.total)
    finally:
        queue.close()
