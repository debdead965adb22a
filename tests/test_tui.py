"""The TUI driven by Pilot with the real engine (SmolLM2 in its child process).

One app session covers the expensive path (load, send, switch profile, cancel, a failed
switch that brings the previous profile back, export); a second app on the same data
directory shows the conversation survived the restart. Waiting is done with pilot.pause and
app.workers, never with sleeps. The screens around the chat (language, footers, the Open dialog,
the dashboard, serving, the models and summarize screens) are tested in test_tui_screens.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import app_in_a_terminal, read_terminal, wait_for_exit
from conftest import tui_profile as _profile
from tui_helpers import (
    attach_file,
    notices,
    press_at_once,
    screen_lines,
    type_message,
    type_message_only,
    until,
)
from tui_helpers import message_views as _views
from tui_helpers import send_message as _send
from tui_helpers import send_text as _send_text

from workstation.core.catalog import resolve_model_path
from workstation.core.kv_state import NOT_KEPT, KvStateStore
from workstation.core.language_words import model_figures
from workstation.core.model_info import read_model_info
from workstation.core.phrases import (
    WordsBasis,
    about_words,
    context_basis,
    context_words,
    part_percent,
    rounded_words,
    words_in,
)
from workstation.core.profile_lookup import load_profile, model_file
from workstation.core.profile_plan import plan_for_profile
from workstation.core.store import ConversationStore
from workstation.tui.app import WorkstationApp
from workstation.tui.i18n import Texts
from workstation.tui.screens.dialogs import ConfirmDialog, KeysDialog, TextPrompt
from workstation.tui.screens.profile_menu import ProfileMenu
from workstation.tui.toasts import WARNING_MOST_S
from workstation.tui.widgets.message_view import MessageView, PlainBody

if TYPE_CHECKING:
    from textual.widget import Widget
    from textual.widgets import Input

    from workstation.core.metrics import TurnMetrics


def _paragraphs(view: MessageView) -> list[str]:
    """The paragraphs a message shows: its Markdown's, or a plain message's (``PlainBody``)."""
    body = view.body
    if isinstance(body, PlainBody):
        return str(body.render()).split("\n\n")
    return [str(p.render()) for p in body.query("MarkdownParagraph")]


def fit_model_path(key: str) -> Path:
    return resolve_model_path(load_profile(key).model)


async def delete_with_f8(pilot, app: WorkstationApp) -> None:
    """F8, then "y" once the question is on screen (on a busy machine one pause is not enough,
    and a "y" before it would be typed into the message box)."""
    await pilot.press("f8")
    await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
    await pilot.press("y")


async def _choose_profile(pilot, app: WorkstationApp, key: str) -> None:
    await pilot.press("f3")
    await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
    menu = app.screen
    assert isinstance(menu, ProfileMenu)
    index = next(i for i, e in enumerate(menu.entries) if getattr(e, "key", None) == key)
    menu.query_one("#profiles").highlighted = index  # type: ignore[attr-defined]
    await pilot.press("enter")


async def test_chat_switch_cancel_export_restart(profiles: Path, tmp_path: Path) -> None:
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        said: list[str] = []
        await until(pilot, lambda: said.append(app.status_text()) or app.engine is not None)
        # its process starting (most of a small model's load), then the context made: it said
        # "loading a 0%", then "100%", standing still for seconds, and a switch looked stuck
        assert said[0].startswith(" loading A… "), said  # (the profile by its shown name, as F3 lists it)
        assert not any(re.search(r"loading A (0|100)%", s) for s in said), said
        fit = plan_for_profile(load_profile("a"))
        assert fit.total_layers == read_model_info(fit_model_path("a")).n_layer + 1 == 31
        # no GPU here, none seen: the line says nothing of one ("GPU layers 0/31" told an office PC nothing); F5 counts
        assert "GPU" not in app.status_text() and "ready" in app.status_text()

        # type (kept as the new conversation's draft once typing pauses), send (the draft
        # goes), see streamed text and the reply's figures
        await type_message_only(pilot, "Hello!")
        await until(pilot, lambda: app.store.drafts() == {None: ("Hello!", None)})
        await pilot.press("enter")
        await until(pilot, lambda: app.generating or app.last_metrics is not None)  # begun (or a fast one over)
        assert app.store.drafts() == {}
        await until(pilot, lambda: not app.generating)
        views = _views(app)
        assert [v.role for v in views] == ["user", "assistant"]
        reply = views[1]
        assert reply.content.strip() and app.live_tokens >= 1
        figures = str(reply.query_one(".metrics").render())
        assert "TTFT" in figures and "tok/s" in figures and "8 tokens" in figures
        assert "the wait for the first word of the reply" in str(reply.query_one(".metrics").tooltip)  # in words
        assert app.last_metrics is not None and app.last_metrics.stop_reason == "length"
        conv_id = app.conversation_id
        assert conv_id is not None
        other = app.store.new("Other", profile="a")  # a conversation of before the switch, asked in after it
        app.store.add_message(other.id, "user", "Hi")
        app.store.add_message(other.id, "assistant", "Hello.")

        # switch profile: the chat stays, the new model continues it
        first_pid = app.engine.pid
        await _choose_profile(pilot, app, "b")
        await until(pilot, lambda: app.engine is not None and app.profile.key == "b")
        assert app.engine.pid != first_pid
        # no K/V types on the status bar ("context memory K half size, V full size" told a newcomer
        # nothing): F3 says a profile's memory in words, F5 the loaded types (below)
        assert app.status_text().endswith(" · smollm2-135m-instruct-q4_1") and "memory" not in app.status_text()
        assert len(_views(app)) == 2 and app.conversation_id == conv_id
        # switched, then asked in another conversation first: each one's first reply after the switch says
        # so (the first in any conversation used the mark up, and this one's, read again, said nothing)
        await app.open_conversation(other.id)
        await _send_text(pilot, app, "Thanks!")
        await until(pilot, lambda: not app.generating)
        assert app.last_metrics is not None and app.last_metrics.after_switch
        await app.open_conversation(conv_id)
        await until(pilot, lambda: len(_views(app)) == 2)

        # Esc stops the reply and keeps what arrived
        await _send_text(pilot, app, "Write a long story about a dragon.")
        await until(pilot, lambda: app.live_tokens >= 3)
        await pilot.press("escape")
        await until(pilot, lambda: not app.generating)
        assert app.last_metrics is not None and app.last_metrics.stop_reason == "cancelled"
        partial = _views(app)[-1].content
        assert partial.strip()
        # "stopped" under it named no way on: Alt+C is said, as at the length limit
        assert any(n.message == "The reply was stopped; what arrived is kept, and Alt+C lets it go on."
                   for n in app._notifications), [n.message for n in app._notifications]
        stored = app.store.messages(conv_id)
        assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
        assert stored[-1].content == partial
        # each turn keeps the profile it ran on, and F5 plots the loaded profile's turns only
        assert [(m.metrics or {}).get("profile") for m in stored[1::2]] == ["a", "b"]
        # and says it, now that two have answered (which model said what was not told), by its name
        # as F3 says it (it said its file's, "quoting-lookup")
        assert [str(v.query_one(".metrics").render()).split(" · ")[0] for v in _views(app)[1::2]] == ["A", "B"]
        # the first reply after the switch says why it waited: B's engine held none of the conversation
        # (a wait of 17 s after a switch was told nothing); the reply before it says nothing of a switch
        # (the conversation before the new message: that one is read in any case, and was counted in)
        m = app.last_metrics
        assert 0 < m.new_n < m.prompt_n
        read_again = f"read the conversation again after the switch: {about_words(m.prompt_n - m.new_n)} words"
        assert [read_again in str(v.query_one(".metrics").render()) for v in _views(app)[1::2]] == [False, True]
        await pilot.press("f5")
        await until(pilot, lambda: bool(app.screen.query("#switch-line")))
        assert str(app.screen.query_one("#headline").render()).endswith(
            f"The first reply after the switch read the conversation again before its first word (about "
            f"{about_words(m.prompt_n - m.new_n)} words).")
        assert read_again in str(app.screen.query_one("#cache-line").render())
        assert len(app.screen.query_one("#row-decode .metric-spark").data) == 1  # type: ignore[attr-defined]
        assert str(app.screen.query_one("#switch-line").render()).startswith("The rows show B only: its 1 turn")
        assert "\nContext memory (K/V cache): q8_0/f16, K half size, V full size" in str(
            app.screen.query_one("#cache-line").render())
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)

        # Esc before the first token (a long message is still being read): the reply says it
        # was stopped before it began, and is kept so (it vanished, the question left unanswered)
        app.chat_screen.query_one("#prompt").value = "Desks go by team on the third floor. " * 60  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: app.generating)
        # the Esc lands just before the turn's thread begins, whose start clears the engine's
        # stop (the Esc was lost, and the reply went on): the app keeps stopping the turn
        engine, calls = app.engine, []
        real_cancel = engine.cancel

        def lost_once() -> None:
            real_cancel()
            if not calls:
                engine._cancel.clear()
            calls.append(1)

        engine.cancel = lost_once  # type: ignore[method-assign]
        await pilot.press("escape")
        await until(pilot, lambda: not app.generating)
        engine.cancel = real_cancel  # type: ignore[method-assign]
        assert len(calls) >= 2
        assert app.live_tokens == 0 and app.last_metrics is not None and app.last_metrics.stop_reason == "cancelled"
        unanswered = _views(app)[-1]
        assert unanswered.role == "assistant" and "Stopped before the reply began" in unanswered.body.source
        assert str(unanswered.query_one(".metrics").render()) == "B · stopped"
        assert [m.role for m in app.store.messages(conv_id)][-2:] == ["user", "assistant"]
        await pilot.press("alt+c")  # nothing to go on from: Alt+R is what asks (it said "not a reply")
        await until(pilot, lambda: any(n.message == "The last message has no reply to go on with yet; Alt+R asks "
                                       "for one." for n in app._notifications))
        assert not app.generating
        # the model is not shown an empty reply: the next question joins the unanswered one
        said = app.store.prompt_messages(conv_id, then="And the kitchen?")
        assert [m["role"] for m in said] == ["user", "assistant", "user", "assistant", "user"]
        assert said[-1]["content"].endswith("third floor.\n\nAnd the kitchen?")

        # a profile that fails to load: a message, and the previous profile runs again
        await _choose_profile(pilot, app, "broken")
        await until(pilot, lambda: app.loading is None and app.engine is not None)
        assert app.profile.key == "b"
        said = next(n.message for n in app._notifications if "could not be loaded" in n.message)
        assert "F4 shows the models on this PC" in said and "models list" not in said  # keys, not a command
        # one too big even in the memory the running model frees: refused before that is closed
        # (it was closed, the new one refused once it had gone, and the old one loaded again)
        _profile(profiles / "huge.yaml", str(fit_model_path("a")), context=1_048_576, parallel=64)
        running = app.engine
        await _choose_profile(pilot, app, "huge")
        await until(pilot, lambda: app.loading is None and any("HUGE was not loaded; it does not fit" in n.message
                                                               for n in app._notifications))
        assert app.engine is running and app.profile.key == "b"

        # export to Markdown through the dialog: a folder that is not there is said (a typo is
        # not made into a folder), then one that is
        # (said in the dialog, which stays open with the path to correct: it closed, the path lost)
        out = tmp_path / "export" / "chat.md"
        await pilot.press("f7")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        prompt = app.screen
        prompt.query_one("#answer").value = str(out)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: f"the folder {out.parent} does not exist" in str(prompt.query_one("#problem").render()))
        assert app.screen is prompt and prompt.query_one("#answer").value == str(out)  # type: ignore[attr-defined]
        out.parent.mkdir()
        await pilot.press("enter")
        await until(pilot, out.exists)
        text = out.read_text(encoding="utf-8")
        assert "## You\n\nHello!" in text and partial.strip()[:20] in text
        assert text.rstrip().endswith("## Assistant\n\n*Stopped before the reply began.*")
        # for a colleague: how each reply ended, not the dashboard's figures (TTFT … tok/s)
        assert "TTFT" not in text and "tok/s" not in text and "cache " not in text and "reused " not in text, text
        assert "\n*a · length limit*\n" in text and "\n*b · stopped*\n" in text, text

    # the conversation survives a restart (same WORKSTATION_DATA), without loading a model
    app2 = WorkstationApp("b", start_engine=False, sample_system=False, language="en")
    async with app2.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: len(_views(app2)) == 6)
        assert app2.conversation_id == conv_id
        assert "Stopped before the reply began" in _views(app2)[-1].body.source
        assert _views(app2)[1].content == reply.content
        assert "TTFT" in str(_views(app2)[1].query_one(".metrics").render())
        assert app2.engine is None and "not loaded" in app2.status_text()
        # F5 says "the first reply after the switch" of this session's switch only, not of a reply kept from before
        await pilot.press("f5")
        await until(pilot, lambda: bool(app2.screen.query("#headline")))
        assert "switch" not in str(app2.screen.query_one("#headline").render())
        assert "switch" not in str(app2.screen.query_one("#cache-line").render())
        await pilot.press("escape")
        await until(pilot, lambda: app2.screen is app2.chat_screen)
        app2.action_toggle_language()  # the app's own words in the chat take the new language
        await until(pilot, lambda: "Yanıt başlamadan durduruldu" in _views(app2)[-1].body.source)


async def test_export_asks_before_replacing_a_file_and_a_conversation_of_another_profile_says_so(
    profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """F7 wrote over an earlier export of the same name without a word (two conversations of
    one name, or one exported twice). And a conversation saved with another profile was
    answered by the loaded one unsaid, while `conversations` and `chat -c` still named the old."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # where the Open dialog and F7 start
    app = WorkstationApp("a", sample_system=False, language="en")
    older = app.store.new("Weekly", profile="b")
    app.store.add_message(older.id, "user", "Hi")
    (tmp_path / "Weekly.md").write_text("the first export\n", encoding="utf-8")
    async with app.run_test(size=(100, 30)) as pilot:
        # opened at the start, while a loads: said once a has loaded ("the profile loaded now" was
        # said of one still loading, and of one that then failed to load)
        said_while: list[bool] = []
        await until(pilot, lambda: said_while.extend(app.engine is not None for n in app._notifications
                                                     if n.message.startswith("This conversation was with b;"))
                    or app.engine is not None and bool(said_while))
        assert app.conversation_id == older.id and said_while[0], said_while
        # a profile loaded while it is open is not written on it until it answers there (it then said
        # "This conversation was with a" of a conversation a never answered in, and so did F7's file)
        assert app.store.get(older.id, with_messages=False).profile == "b"
        await app.open_conversation(older.id)
        await until(pilot, lambda: any(n.message.startswith("This conversation was with b; its next replies come "
                                                             "from a") for n in app._notifications))
        await pilot.press("f7")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        offered = app.screen.query_one("#answer").value  # type: ignore[attr-defined]
        assert offered == str(tmp_path / "Weekly-2.md")  # the earlier export is not offered to be replaced
        app.screen.query_one("#answer").value = str(tmp_path / "Weekly.md")  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        assert "Weekly.md is there already" in str(app.screen.query_one(".dialog-title").render())
        await pilot.press("n")  # not replaced: the name is asked again, as typed (all was to type again)
        await until(pilot, lambda: isinstance(app.screen, TextPrompt)
                    and app.screen.query_one("#answer").value == str(tmp_path / "Weekly.md"))  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("escape")  # Esc leaves the export, as Esc does
        await until(pilot, lambda: app.screen is app.chat_screen)
        assert (tmp_path / "Weekly.md").read_text(encoding="utf-8") == "the first export\n"
        await _send(pilot, app, "And today?")
        await until(pilot, lambda: not app.generating)
        assert app.store.get(older.id, with_messages=False).profile == "a"  # the profile that answered


async def test_f7_does_not_offer_to_write_over_the_document_a_conversation_is_about(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """F7 on a conversation about notes.txt, typed notes.txt: "Replace it with this conversation?"
    (the command line refuses it: "it is one of the files read")."""
    from textual.widgets import Input

    from workstation.tui.screens.file_picker import FilePicker, FileTree

    (tmp_path / "app").mkdir()
    monkeypatch.chdir(tmp_path / "app")  # started from its own folder, as a launcher does
    (tmp_path / "home" / "Documents").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    notes = tmp_path / "notes.txt"
    notes.write_text("The meeting is moved to Tuesday at three.\n", encoding="utf-8")
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, FilePicker) and bool(app.screen.query(FileTree)))
        # where the person keeps documents, not the program's folder the launcher started it in
        assert Path(app.screen.query_one(FileTree).path) == tmp_path / "home" / "Documents"
        line = app.screen.query_one("#picker-path", Input)
        line.value = str(notes)
        line.focus()
        await pilot.press("enter")
        await until(pilot, lambda: app.pending_document is not None)
        await _send(pilot, app, "When is the meeting?")
        await until(pilot, lambda: not app.generating)
        await pilot.press("f7")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        # offered beside the documents picked last, not in the folder the app started from
        assert app.screen.query_one("#answer", Input).value == str(tmp_path / "When-is-the-meeting.md")
        app.screen.query_one("#answer", Input).value = str(notes)
        await pilot.press("enter")
        problem = app.screen.query_one("#problem")
        await until(pilot, lambda: problem.display)
        assert str(problem.render()) == ("notes.txt is the document this conversation is about; name another file for "
                                         "the conversation.")
        assert isinstance(app.screen, TextPrompt)  # the name asked again, nothing asked to be replaced
        app.screen.query_one("#answer", Input).value = str(tmp_path / "meeting.md")
        await pilot.press("enter")
        await until(pilot, lambda: (tmp_path / "meeting.md").is_file())
    assert notes.read_text(encoding="utf-8") == "The meeting is moved to Tuesday at three.\n"


async def test_a_reopened_conversation_answers_from_its_saved_state(profiles: Path, smollm2_path: Path) -> None:
    """Quit, start again, reopen the conversation: the first turn restores the saved KV cells
    (restored_n > 0) and gives the greedy answer of an engine that ran the same two turns with
    its cells kept in memory. (Not the answer of a cold engine reading the whole conversation in
    one batch: batched and one-token decoding round differently, and on some CPUs a near-tie
    flips a greedy token; the restored cells must be the very cells, bit for bit.)"""
    from workstation.core.engine import Engine
    from workstation.core.profile_lookup import load_profile
    from workstation.core.profiles import Sampling

    long_message = "Our office moves to the third floor in May; desks go by team. " * 5  # (past MIN_RESTORE_TOKENS)
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        app.chat_screen.query_one("#prompt").value = long_message  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: app.generating or app.last_metrics is not None)  # begun (or a fast one over)
        await until(pilot, lambda: not app.generating)
        conv_id = app.conversation_id
        assert app.last_metrics is not None and app.last_metrics.restored_n == 0
    # quitting saved the conversation's cells (the engine closes with the app)

    app2 = WorkstationApp("a", sample_system=False, language="en")
    async with app2.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app2.engine is not None and len(_views(app2)) == 2)
        assert app2.conversation_id == conv_id
        await _send(pilot, app2, "And the printers?")
        await until(pilot, lambda: not app2.generating)
        m = app2.last_metrics
        assert m is not None and m.restored_n > 0 and m.cache_n == m.restored_n
        # (wide enough for every figure: at 100 columns the cache's go first, for "length limit · Alt+C …")
        await pilot.resize_terminal(160, 30)
        await until(pilot, lambda: "from disk" in str(_views(app2)[-1].query_one(".metrics").render()))
        restored_answer = _views(app2)[-1].content
        history = [{"role": x.role, "content": x.content} for x in app2.store.messages(conv_id)]

        # another conversation takes the slot: this one's cells go to disk, under its tag
        await pilot.press("ctrl+n")
        await until(pilot, lambda: app2.conversation_id is None)
        app2.chat_screen.query_one("#prompt").value = "The canteen closes at two on Fridays. " * 10  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: app2.generating)
        await until(pilot, lambda: not app2.generating)
        other_tag = app2.cells_tag(app2.conversation_id)  # type: ignore[arg-type]
        tag = app2.cells_tag(conv_id)  # type: ignore[arg-type]
        assert tag in {e.tag for e in KvStateStore().entries()}
        # deleting the conversation deletes its saved cells (they hold its text as tokens)
        await app2.open_conversation(conv_id)  # type: ignore[arg-type]
        await delete_with_f8(pilot, app2)
        await until(pilot, lambda: conv_id not in [c.id for c in app2.store.list()])
        await until(pilot, lambda: tag not in {e.tag for e in KvStateStore().entries()})
    # the other conversation's cells, saved as the app closed, are all that is left
    assert {e.tag for e in KvStateStore().entries()} == {other_tag}

    profile = load_profile("a")
    sampling = Sampling(**{**profile.sampling.__dict__})
    with Engine(profile) as warm:  # the same two turns, nothing saved or restored in between
        first = warm.run_chat(history[:1], sampling)
        assert first.text.strip() == history[1]["content"].strip()
        again = warm.run_chat(history[:-1], sampling)
    assert again.metrics.restored_n == 0 and again.metrics.cache_n == m.cache_n
    assert again.text.strip() == restored_answer.strip()


async def test_a_conversation_deleted_in_another_window_keeps_the_turn(profiles: Path) -> None:
    """Another window deleted the conversation open here: the reply finishing in it made the
    app fall over ("cannot be used (FOREIGN KEY constraint failed)"), the reply lost; a message
    sent there was refused with that sentence; F2, F8 and F7 fell over ("no conversation number
    1"); and once the other window had made a conversation (SQLite gave it the deleted one's
    number) this window wrote into it, the other person's conversation."""
    app = WorkstationApp("b", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        other = ConversationStore(app.store.path)  # the other window, on the same data

        # deleted while the reply streams: the turn is kept in a new conversation of that title
        await _send_text(pilot, app, "Write a long story about a lighthouse.")
        first = app.conversation_id
        assert first is not None
        await until(pilot, lambda: app.live_tokens > 0)
        other.delete(first)
        picnic = other.new("Picnic")  # made at once in the other window: the deleted one's number
        other.add_message(picnic.id, "user", "A shopping list for a picnic?")
        await pilot.press("escape")
        await until(pilot, lambda: not app.generating)
        assert app.is_running and app.conversation_id is not None
        kept = app.store.get(app.conversation_id)
        assert kept.title == "Write a long story about a lighthouse." and kept.created > picnic.created
        assert [(m.role, m.content) for m in kept.messages][0] == ("user", "Write a long story about a lighthouse.")
        assert [m.role for m in kept.messages] == ["user", "assistant"]
        assert [v.content for v in _views(app)][0] == "Write a long story about a lighthouse."
        assert [m.content for m in other.messages(picnic.id)] == ["A shopping list for a picnic?"]  # untouched
        assert any(str(nt.message).startswith('"Write a long story about a lighthouse." was deleted in another '
                                              "window") for nt in app._notifications)

        # deleted while nothing runs: F8 at once says so (it fell over); the list and the chat follow
        app.chat_screen.set_input("Remember this list: " + "apples, pears, plums, " * 12)  # cells worth saving
        await pilot.press("enter")
        await until(pilot, lambda: app.live_tokens > 0)
        await pilot.press("escape")
        await until(pilot, lambda: not app.generating)
        app._notifications.clear()
        lost_tag = app.cells_tag(app.conversation_id)
        other.delete(app.conversation_id)
        await pilot.press("f8")
        await until(pilot, lambda: app.conversation_id is None and not _views(app))
        # (a notice that asks for nothing: read in its time, 5 to 8 s, not 12 over the chat)
        assert app.is_running and any(str(nt.message).startswith(
            '"Write a long story about a lighthouse." was deleted in another window (or from the command line); '
            "what you send now starts a new conversation.") and nt.timeout <= WARNING_MOST_S for nt in app._notifications)
        assert [c.title for c in app.store.list()] == ["Picnic"]
        other.close()
    # its cells were not saved when the app closed (they stayed on disk, text and all, until
    # the app started again)
    assert lost_tag not in {e.tag for e in KvStateStore().entries()}


async def test_a_long_conversation_opens_with_its_last_messages_and_shows_the_earlier_on_request(
        profiles: Path) -> None:
    """Every message was drawn at once: a conversation of 300 exchanges took 20 s to open, and
    68 s to start the app with it open, the app frozen. The last 30 are drawn; a button above
    them draws 30 more each time it is pressed."""
    from textual.widgets import Button

    from workstation.core.conversation_records import StoredMessage
    from workstation.tui.screens.chat import SHOWN_AT_ONCE, SHOWN_CHARS, drawn_at_once

    # long replies (tables, code: 30 took 2.7 s to open): as many as hold SHOWN_CHARS, two at least;
    # a user's attached document counts as the chat shows it, folded
    replies = [StoredMessage(i, "user", "Why?") if i % 2 == 0 else StoredMessage(i, "assistant", "x" * (SHOWN_CHARS // 4 - 10))
               for i in range(40)]
    assert drawn_at_once(replies) == 8 and drawn_at_once(replies[:1]) == 1  # the last four replies, their questions
    assert drawn_at_once([StoredMessage(1, "assistant", "x" * 3 * SHOWN_CHARS)] * 3) == 2
    document = StoredMessage(1, "user", "Summarize it\n\n---\nDocument: lease.txt\n\n" + "clause " * SHOWN_CHARS)
    assert drawn_at_once([document, StoredMessage(2, "assistant", "Done.")] * 20) == SHOWN_AT_ONCE
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        conv = app.store.new("Inventory")
        for i in range(40):
            app.store.add_message(conv.id, "user", f"Question {i}")
            app.store.add_message(conv.id, "assistant", f"Answer {i}")
        await app.open_conversation(conv.id)
        assert [v.content for v in _views(app)][:2] == ["Question 25", "Answer 25"] and len(_views(app)) == SHOWN_AT_ONCE
        button = app.chat_screen.query_one("#earlier", Button)
        assert str(button.label) == "Show earlier messages (50)"
        for left, drawn in ((20, 60), (None, 80)):
            if left is None:  # PageUp from the message box, once the chat is at its top (only a mouse did it)
                app.chat_screen.focus_prompt()
                await until(pilot, lambda: app.chat_screen.query_one("#prompt").has_focus)
                for _ in range(40):
                    await pilot.press("pageup")
                    if len(_views(app)) == drawn:
                        break
            else:
                button.focus()
                await pilot.press("enter")
            await until(pilot, lambda drawn=drawn: len(_views(app)) == drawn)
            assert [v.content for v in _views(app)][-1] == "Answer 39"  # in order, the newest last
            assert [v.content for v in _views(app)][0] == f"Question {40 - drawn // 2}"
            if left is not None:
                assert str(button.label) == f"Show earlier messages ({left})"
        assert not app.chat_screen.query("#earlier")  # all drawn: the button is gone
        await pilot.pause()
        assert app.chat_screen.query_one("#prompt").has_focus  # PageUp's: typing goes on in the box
        # PageUp and PageDown in the message box scroll the chat (they did nothing)
        app.chat_screen.focus_prompt()
        log = app.chat_screen.log_view
        log.scroll_end(animate=False)
        await until(pilot, lambda: log.scroll_y > 0 and log.scroll_y == log.max_scroll_y)
        bottom = log.scroll_y
        await pilot.press("pageup")
        await until(pilot, lambda: log.scroll_y < bottom)
        await pilot.press("pagedown", "pagedown", "pagedown")
        await until(pilot, lambda: log.scroll_y == bottom)
        # a key typed in the box lays out nothing but the box (the whole screen was laid out at
        # each key: with a long conversation's 1,300 widgets drawn, 40 to 90 ms a key)
        prompt = app.chat_screen.query_one("#prompt")
        asked = prompt._layout_updates
        await pilot.press("o", "k")
        assert prompt.value == "ok" and prompt._layout_updates == asked
        app.chat_screen.clear_input()
        # and so in the multi-line editor (a paste opens it), on its first line and its last
        app.chat_screen.set_input("Dear team,\nthe desks arrive Monday.")
        editor = app.chat_screen.query_one("#editor")
        await until(pilot, lambda: app.focused is editor)
        assert editor.cursor_location == (1, len("the desks arrive Monday."))  # typing goes on at the end
        await pilot.press("pageup")  # from the last line: the cursor a page up, to the first
        await until(pilot, lambda: editor.cursor_location[0] == 0)
        assert log.scroll_y == bottom
        await pilot.press("pageup")
        await until(pilot, lambda: log.scroll_y < bottom)
        app.chat_screen.clear_input()  # (the one-line box again)
        # F2 says which keys save and cancel
        await pilot.press("f2")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        assert str(app.screen.query_one(".dialog-hint").render()) == "Enter saves, Esc cancels."
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        # Ctrl+Y copies the last reply: it could be copied only with the mouse, or by F7's file
        app.chat_screen.focus_prompt()
        await pilot.press("ctrl+y")
        await until(pilot, lambda: app.clipboard == "Answer 39")
        assert any(str(n.message) == "Copied the last reply (9 characters). Ctrl+Y again copies the reply before it. If "
                   "pasting gives nothing, this terminal does not let apps copy: F7 saves the conversation as a file."
                   for n in app._notifications)
        # again: the reply before it, shown (only the last could be copied: yesterday's letter, a few up, could not)
        await pilot.press("ctrl+y")
        await until(pilot, lambda: app.clipboard == "Answer 38")
        assert any(n.message.startswith('Copied an earlier reply (9 characters), shown in the chat: "Answer 38".')
                   for n in app._notifications)
        await pilot.press("ctrl+y")
        await until(pilot, lambda: app.clipboard == "Answer 37")
        # one notice for the copies, the last: each press's stayed, three stacked (five: the screen's corner)
        copied = lambda: [str(n.message) for n in app._notifications if str(n.message).startswith("Copied")]  # noqa: E731
        await until(pilot, lambda: len(copied()) == 1 and '"Answer 37"' in copied()[0])
        await app.action_new_conversation()
        assert not _views(app) and not app.chat_screen.query("#earlier")
        await pilot.press("ctrl+y")
        await until(pilot, lambda: any(str(n.message) == "There is no reply here to copy yet." for n in app._notifications))


async def test_a_code_blocks_long_lines_wrap_in_the_chat(profiles: Path) -> None:
    """A letter the model put in a code block ran off the right edge at 80 columns ("…easy for
    the client to pay by using o") with no key to scroll it sideways: its lines wrap."""
    from textual.widgets import Label
    from textual.widgets._markdown import MarkdownFence

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    letter = ("Dear client, please make it easy for yourself to pay by using our online portal, where each "
              "invoice can be paid by card or by bank transfer within thirty days.")
    async with app.run_test(size=(80, 24)) as pilot:
        conv = app.store.new("Invoice e-mail")
        app.store.add_message(conv.id, "user", "Write the e-mail")
        app.store.add_message(conv.id, "assistant", f"Here it is:\n\n```\n{letter}\n```\n")
        await app.open_conversation(conv.id)
        await until(pilot, lambda: bool(app.chat_screen.query(MarkdownFence)))
        await pilot.pause()
        fence = app.chat_screen.query_one(MarkdownFence)
        code = fence.query_one(Label)
        assert code.region.width <= fence.region.width and code.region.right <= app.chat_screen.region.right
        assert code.region.height >= 3  # on lines of its own, not one line cut at the edge
        seen = "".join(line.text for line in code.render_lines(code.region.reset_offset)).split()
        assert "thirty" in seen and "days." in seen  # the end of the line is on screen


async def test_alt_y_copies_the_last_replys_code_blocks_one_by_one(profiles: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply's code could be copied only with its fences and the text around it (Ctrl+Y, all
    of it) or with the mouse. Alt+Y copies its last code block without the fences, and again the
    one before (LM Studio's and ChatGPT's copy button on each block)."""
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        conv = app.store.new("Scripts")
        app.store.add_message(conv.id, "user", "How do I list files?")
        app.store.add_message(conv.id, "assistant", "In Python:\n\n```python\nimport os\nprint(os.listdir())\n```\n\n"
                              "In a shell:\n\n~~~\nls -la\n~~~\n\nBoth list the folder.")
        await app.open_conversation(conv.id)
        app.chat_screen.focus_prompt()
        said = lambda text: any(str(n.message) == text for n in app._notifications)  # noqa: E731
        hint = " If pasting gives nothing, this terminal does not let apps copy: F7 saves the conversation as a file."
        await pilot.press("alt+y")
        await until(pilot, lambda: app.clipboard == "ls -la")
        assert said("Copied code block 2 of 2 (1 line). Alt+Y again copies the one before." + hint)
        await pilot.press("alt+y")
        await until(pilot, lambda: app.clipboard == "import os\nprint(os.listdir())")
        assert said("Copied code block 1 of 2 (python, 2 lines). Alt+Y again copies the one before." + hint)
        await pilot.press("alt+y")  # round to the last
        await until(pilot, lambda: app.clipboard == "ls -la")
        app.store.add_message(conv.id, "user", "Thanks")
        app.store.add_message(conv.id, "assistant", "You are welcome.")
        await app.open_conversation(conv.id)
        await pilot.press("alt+y")
        await until(pilot, lambda: said("The last reply has no code block; Ctrl+Y copies all of it."))
        assert app.clipboard == "ls -la"
        # a reply still being written: its last block may be half of it
        app.store.add_message(conv.id, "assistant", "```python\nimport os")
        await app.open_conversation(conv.id)
        app.reply_view = [v for v in app.chat_screen.query(MessageView) if v.role == "assistant"][-1]
        app.generating = True
        try:
            await pilot.press("alt+y")
            await until(pilot, lambda: said("The reply is still being written; its code can be copied once it is "
                                            "done (Esc stops it)."))
        finally:
            app.generating = False
            app.reply_view = None
        assert app.clipboard == "ls -la"
        # in tmux (its default set-clipboard drops what an app copies): the line that lets it through, Ctrl+Y's too
        monkeypatch.setenv("TMUX", "/tmp/tmux-1000/default,1,0")
        tmux = " In tmux, `set -g set-clipboard on` in ~/.tmux.conf lets apps copy."
        await pilot.press("alt+y")
        await until(pilot, lambda: said("Copied the code block (python, 1 line)." + hint + tmux))
        await pilot.press("ctrl+y")
        await until(pilot, lambda: said("Copied the last reply (19 characters). Ctrl+Y again copies the reply before it."
                                        + hint + tmux))


async def test_the_list_of_many_conversations_is_paged_and_not_made_again_for_nothing(profiles: Path) -> None:
    """Every line of the list was made again at each turn, each conversation opened and each
    key typed in the search: with 500 conversations, 2 s each time. It lists 100 and a line
    for the older ones, and keeps its lines while they are the same."""
    from textual.widgets import Label, ListView

    from workstation.tui.widgets.conversation_list import ConversationItem

    store = ConversationStore()
    ids = [store.new(f"Note {i}").id for i in range(250)]
    store.close()
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        sidebar = app.chat_screen.sidebar
        await until(pilot, lambda: len(sidebar.query(ConversationItem)) == 100)
        view = sidebar.query_one(ListView)
        assert str(view.children[-1].query_one(Label).render()) == "150 older: Enter lists them (or search)"
        more = view.children[-1].query_one(Label)
        await pilot.pause()  # whole, on as many lines as it takes (it ended "(or …" in a narrow list)
        assert more.size.width * more.size.height >= len("150 older: Enter lists them (or search)"), more.size
        lines = list(view.children)
        await app.open_conversation(ids[-3])  # the newest first: the third line
        assert list(view.children) == lines and view.index == 2  # the same lines, the cursor on it
        view.focus()
        view.index = len(view.children) - 1
        await pilot.press("enter")
        await until(pilot, lambda: len(sidebar.query(ConversationItem)) == 200)
        assert view.index == 100 and str(view.children[-1].query_one(Label).render()) == "50 older: Enter lists them (or search)"
        await pilot.press("enter")  # a conversation on the new page opens
        await until(pilot, lambda: app.conversation_id == ids[149])
        await pilot.pause()  # the list stays as it was, the cursor on it (it folded back to 100)
        assert len(sidebar.query(ConversationItem)) == 200 and view.index == 100


async def test_what_another_window_or_chat_c_writes_shows_here(profiles: Path) -> None:
    """A second window never showed conversations made, renamed or deleted elsewhere, and the
    open conversation never showed the turns `chat -c` added to it (the model read them)."""
    from textual.widgets import Label

    from workstation.tui.widgets.conversation_list import ConversationItem

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        conv = app.store.new("Budget")
        app.store.add_message(conv.id, "user", "Rent?")
        await app.open_conversation(conv.id)
        assert len(_views(app)) == 1
        other = ConversationStore(app.store.path)  # `chat -c Budget`, another window
        other.add_message(conv.id, "assistant", "1,200 a month.")
        other.add_message(conv.id, "user", "And heating?")
        made = other.new("Holidays")
        def titles() -> list[str]:  # (a line being made again has no label yet)
            return [str(i.query(Label).first().render()) for i in app.chat_screen.sidebar.query(ConversationItem)
                    if i.query(Label)]

        await until(pilot, lambda: titles() == ["Holidays", "Budget"] and len(_views(app)) == 3)
        assert [v.content for v in _views(app)] == ["Rent?", "1,200 a month.", "And heating?"]
        other.rename(made.id, "Summer holidays")
        await until(pilot, lambda: titles() == ["Summer holidays", "Budget"])
        other.delete(made.id)
        await until(pilot, lambda: titles() == ["Budget"])
        assert app.conversation_id == conv.id
        # a reply written again in place (another window keeps its reply as it streams, then
        # finishes it): drawn again too, where the count alone said nothing had changed
        reply = other.add_message(conv.id, "assistant", "About 90")
        await until(pilot, lambda: [v.content for v in _views(app)][-1:] == ["About 90"])
        other.update_message(reply.id, "About 90 a month in winter.", {"stop_reason": "stop"})
        await until(pilot, lambda: [v.content for v in _views(app)][-1:] == ["About 90 a month in winter."])
        other.close()


async def test_a_reply_is_kept_as_it_streams(profiles: Path) -> None:
    """A kill -9 (a crash, the power cut) mid-reply lost all of the reply on screen: the store
    held the question alone. What the file holds while the reply streams is what is left."""
    from workstation.tui.turn import KEEP_PARTIAL_EVERY_S

    app = WorkstationApp("b", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await _send_text(pilot, app, "Write a long story about a lighthouse keeper.")
        conv_id = app.conversation_id
        assert conv_id is not None
        other = ConversationStore(app.store.path)  # as the next start reads it

        def kept() -> list[tuple[str, str, str | None]]:
            return [(m.role, m.content, (m.metrics or {}).get("stop_reason")) for m in other.messages(conv_id)]

        assert KEEP_PARTIAL_EVERY_S <= 2
        await until(pilot, lambda: len(kept()) == 2 and len(kept()[1][1].split()) >= 3)
        role, partial, why = kept()[1]
        assert role == "assistant" and why == "interrupted" and app.generating
        assert _views(app)[-1].content.startswith(partial)
        from workstation.core.metrics import figures_line
        assert figures_line({"stop_reason": why}, app.texts.get) == "unfinished: saved while it was being written"
        await pilot.press("escape")
        await until(pilot, lambda: not app.generating)
        (_, final, why), = kept()[1:]  # the same row, now whole: not a second reply
        assert final == _views(app)[-1].content and final.startswith(partial) and why == "cancelled"
        other.close()


async def test_a_second_enter_before_the_message_left_the_box_sends_it_once(profiles: Path) -> None:
    """Enter twice before the first one's message left the box (a double press; a paste that
    ends with a line break, then Enter) sent it twice: two messages, two replies on one engine
    at once, and one reply left "reading the conversation…" on screen for good."""
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        app.chat_screen.set_input("Hello twice")
        app.action_send()  # both Enters handled before the first message's sending began
        app.action_send()
        # (the reply in: on a busy machine "not generating" held before the turn began, too)
        await until(pilot, lambda: app.conversation_id is not None and not app.generating
                    and len(app.store.messages(app.conversation_id)) >= 2)
        await pilot.pause(0.3)  # a second send would be under way by now
        stored = app.store.messages(app.conversation_id)
        assert [(m.role, m.content) for m in stored][:1] == [("user", "Hello twice")] and len(stored) == 2
        assert [v.role for v in _views(app)] == ["user", "assistant"] and _views(app)[-1].metrics is not None


async def _first_turn_answered(pilot, app: WorkstationApp) -> tuple[int | None, Path]:
    """Once the model is loaded, "Hello!" sent and answered: the conversation and its file."""
    await until(pilot, lambda: app.engine is not None)
    await _send(pilot, app, "Hello!")
    await until(pilot, lambda: not app.generating)
    return app.conversation_id, app.store.path


async def _first_turn_back_in_the_box(pilot, app: WorkstationApp) -> tuple[int, Input]:
    """"Hello!" sent and answered, then Up: the conversation and the box holding it again."""
    from textual.widgets import Input

    conv, _ = await _first_turn_answered(pilot, app)
    assert conv is not None
    prompt = app.chat_screen.query_one("#prompt", Input)
    prompt.focus()
    await pilot.press("up")
    await until(pilot, lambda: prompt.value == "Hello!")
    return conv, prompt


async def test_a_full_disk_mid_session_moves_the_session_to_memory(profiles: Path) -> None:
    """The conversation file stopped taking writes mid-session (a full disk): the app fell
    over with a traceback and exit code 0 at the end of the reply, the reply lost. SQLite's
    max_page_count makes the file full as a full disk does ("database or disk is full")."""
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        conv_id, path = await _first_turn_answered(pilot, app)
        assert conv_id is not None
        second = app.store.new("Second")
        db = app.store._db
        db.execute("VACUUM")
        db.execute(f"PRAGMA max_page_count = {db.execute('PRAGMA page_count').fetchone()[0]}")
        # a draft left in another conversation the full file did not take: kept in the app only,
        # and gone from it when the session was written back (the app's drafts read from the file)
        await app.open_conversation(second.id)
        app.chat_screen.set_input("~" * 5000)
        await app.open_conversation(conv_id)
        assert any("draft could not be saved" in str(n.message) for n in app._notifications) and app._drafts[second.id]
        app.chat_screen.set_input("=" * 5000)  # a long message: the file must grow to hold it
        await pilot.press("enter")
        await until(pilot, lambda: app.store.in_memory)
        # `chat -c` adds a turn to the file while the reply is written in memory: the write-back
        # deleted it (the file's messages that memory's copy lacked)
        other = ConversationStore(path)
        other.add_message(conv_id, "user", "From chat -c")
        other.add_message(conv_id, "assistant", "Its reply")
        other.close()
        app.store.save_draft(None, "A new idea")  # (as a new conversation's box left meanwhile keeps it)
        await until(pilot, lambda: any("kept in memory only" in str(n.message) for n in app._notifications)
                    and not app.generating and len(app.store.messages(conv_id)) >= 4)
        said = [str(n.message) for n in app._notifications]
        assert any("database or disk is full" in m and "kept in memory only" in m for m in said), said
        reply = app.store.messages(conv_id)[-1]
        assert reply.role == "assistant" and reply.content == _views(app)[-1].content
        assert app.is_running and app.return_code is None
        # the file takes writes again (a new connection has no page limit): the session is
        # written back into it and that is said once; it stayed in memory, lost at the end
        await until(pilot, lambda: not app.store.in_memory)
        await until(pilot, lambda: any("this session's conversations are now saved in" in str(n.message)
                                       for n in app._notifications))
        assert app.store.path == path and app.conversation_id == conv_id
        assert app._drafts[None][0] == "A new idea"  # (the draft memory had: lost with it)
        assert [v.content for v in _views(app)][1::2] == [m.content for m in app.store.messages(conv_id)][1::2]
        # full again, and the app closed (a logout's SIGTERM) before the disk had room again by
        # its measure: the session went with the app though the file could take it at the end
        db = app.store._db
        db.execute("VACUUM")
        db.execute(f"PRAGMA max_page_count = {db.execute('PRAGMA page_count').fetchone()[0]}")
        app.chat_screen.set_input("#" * 5000)
        await pilot.press("enter")
        await until(pilot, lambda: app.store.in_memory)
        await app.action_quit(False)  # (mid-reply: the reply so far is kept, then the app ends)
        await until(pilot, lambda: not app.is_running)
    kept = ConversationStore(path)  # all of it in the file: what the next start reads
    contents = [m.content for m in kept.messages(conv_id)]
    assert contents[6] == "#" * 5000 and len(contents) == 8, contents
    contents = contents[:6]
    assert contents[0::2] == ["Hello!", "From chat -c", "=" * 5000] and contents[3::2] == ["Its reply", reply.content] \
        or contents[0::2] == ["Hello!", "=" * 5000, "From chat -c"] and contents[3] == reply.content, contents
    assert kept.drafts()[None][0] == "A new idea" and kept.drafts()[second.id][0] == "~" * 5000
    kept.close()


async def test_a_conversation_file_deleted_while_the_app_runs_is_made_again(profiles: Path) -> None:
    """`rm conversations.sqlite3` while the app ran: it went on writing into the deleted file,
    and the whole session was gone at the end without a word."""
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        conv_id, path = await _first_turn_answered(pilot, app)
        for name in (path.name, path.name + "-wal", path.name + "-shm"):
            (path.parent / name).unlink(missing_ok=True)
        ConversationStore(path).close()  # and made again at once by `chat -c` in another terminal
        await until(pilot, lambda: any("was deleted while the app ran" in str(n.message) for n in app._notifications))
        await _send(pilot, app, "And then?")
        await until(pilot, lambda: not app.generating)
        assert path.exists() and app.conversation_id == conv_id
        kept = ConversationStore(path)  # what the next start reads
        assert [m.content for m in kept.messages(conv_id)][::2] == ["Hello!", "And then?"]
        kept.close()
        # a file put in its place that is no database: this session goes on in memory, said
        for name in (path.name + "-wal", path.name + "-shm"):
            (path.parent / name).unlink(missing_ok=True)
        (path.parent / "garbage").write_bytes(b"not a database" * 1000)
        (path.parent / "garbage").replace(path)
        await until(pilot, lambda: app.store.in_memory)
        # (a notice is a message the app handles next: not yet there as the store has moved)
        await until(pilot, lambda: any("kept in memory only" in str(n.message) for n in app._notifications))
        assert len(app.store.messages(conv_id)) == 4


async def test_a_narrow_terminal_puts_the_list_away_until_ctrl_b(profiles: Path) -> None:
    """At 40 columns the list kept 22 of them and the chat had 17."""
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(50, 20)) as pilot:
        sidebar = app.chat_screen.sidebar
        await until(pilot, lambda: not sidebar.display)
        assert app.chat_screen.query_one("#chat").region.width == 50
        await pilot.resize_terminal(100, 30)
        await until(pilot, lambda: sidebar.display)
        await pilot.resize_terminal(60, 18)  # at 60 the list stayed, and the chat had 35 columns beside it
        await until(pilot, lambda: not sidebar.display)
        await pilot.resize_terminal(100, 30)
        await until(pilot, lambda: sidebar.display)
        # Ctrl+B with the list shown goes to it (it hid it: Down and Enter then sent the draft)
        await pilot.press("H", "i", "ctrl+b")
        await until(pilot, lambda: sidebar.has_focus_within)
        assert sidebar.display
        await pilot.press("ctrl+b")  # pressed there, it puts the list away: the choice stands at any width
        await until(pilot, lambda: not sidebar.display)
        assert app.focused is app.chat_screen.query_one("#prompt")
        await pilot.resize_terminal(120, 30)
        await pilot.pause()
        assert not sidebar.display
        await pilot.press("ctrl+b")  # hidden, it is shown with the focus
        await until(pilot, lambda: sidebar.display and sidebar.has_focus_within)
        assert app.chat_screen.query_one("#prompt").value == "Hi"


async def test_f6_on_a_narrow_terminal_gives_the_path_a_line_of_its_own(profiles: Path) -> None:
    """At 60x18 F6's path box kept 12 columns beside its three buttons: "/tmp/t" of the path."""
    from workstation.tui.screens.summarize import SummarizeScreen

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(60, 18)) as pilot:
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
        path, run = (app.screen.query_one(f"#summarize-{w}") for w in ("path", "run"))
        await until(pilot, lambda: path.region.width == 59 and run.region.y > path.region.y)
        await pilot.resize_terminal(100, 30)  # wide: one line again
        await until(pilot, lambda: run.region.y == path.region.y and path.region.width > 40)


async def test_a_setting_that_works_against_the_user_is_said_when_it_loads(profiles: Path, smollm2_path: Path) -> None:
    """`profiles check` noted more threads than cores (or a context past the trained length)
    and the app loaded such a profile in silence: the user never learned why it was slow."""
    from workstation.core.hardware import count_physical_cores

    cores = count_physical_cores()
    _profile(profiles / "many.yaml", str(smollm2_path), threads=cores + 1)
    app = WorkstationApp("many", sample_system=False, language="tr")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        said = f"Not: threads {cores + 1}, ama bu bilgisayarda {cores} fiziksel çekirdek var"
        await until(pilot, lambda: any(str(n.message).startswith(said) for n in app._notifications))
        app._notifications.clear()
        await _choose_profile(pilot, app, "a")  # a profile without such a setting: nothing more
        await until(pilot, lambda: app.loading is None and app.profile.key == "a")
        assert not any("Not:" in str(n.message) for n in app._notifications)


async def test_send_without_model_and_bad_profile_keep_the_app_usable(profiles: Path) -> None:
    app = WorkstationApp("no-such-profile", sample_system=False, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert any("no profile named" in n.message for n in app._notifications)
        await type_message(pilot, "hi")
        await pilot.pause()
        assert any("No model is loaded" in n.message for n in app._notifications)
        assert app.chat_screen.input_text() == "hi"  # nothing lost
        assert app.is_running


async def test_conversations_new_rename_search_delete(profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datetime as dt
    import sqlite3
    import time

    from textual.widgets import Input, ListView

    from workstation.tui.screens import chat

    # the message found stays marked a while: on a busy PC its 3 s were over before it was looked at
    monkeypatch.setattr(chat, "FOUND_MARKED_S", 60.0)

    from workstation.tui.widgets.conversation_list import ConversationItem

    # the app's "today" is this moment's, taken once before anything is written: every message
    # after it is of its day (a run across midnight said "Yesterday" over the replies)
    now = time.time()
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en", clock=lambda: now)

    async def search_for(text: str) -> None:
        """``text`` in the search box whole, as typed (each key typed cost a redraw of the list)."""
        search = app.chat_screen.query_one("#search", Input)
        assert search.has_focus
        search.value = text
        await pilot.pause()

    first = app.store.new("Quarterly report")
    app.store.add_message(first.id, "user", "Summarize the sales figures")
    second = app.store.new("Lunch menu")
    for day in ("Monday", "Tuesday", "Wednesday", "Thursday"):
        app.store.add_message(second.id, "user", f"Soup on {day}?")
        app.store.add_message(second.id, "assistant", f"## {day}\n\n- **Lentil**\n- `tomato`\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.conversation_id == second.id)
        await app.open_conversation(first.id)
        assert [v.content for v in _views(app)] == ["Summarize the sales figures"]

        await pilot.press("f2")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        app.screen.query_one("#answer").value = "Q3 report"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: app.store.get(first.id).title == "Q3 report")
        # another conversation's name (case aside) is refused in a sentence: two of one name
        # could not be told apart, and `chat -c` reached only the newest
        await pilot.press("f2")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        app.screen.query_one("#answer").value = "lunch  MENU"  # type: ignore[attr-defined]  (two spaces: cleaned as rename cleans it)
        await pilot.press("enter")
        await until(pilot, lambda: "Another conversation is named \u201cLunch menu\u201d"
                    in str(app.screen.query_one("#problem").render()))
        assert isinstance(app.screen, TextPrompt)  # left open, the name to change (it closed)
        app.screen.query_one("#answer").value = "  "  # type: ignore[attr-defined]  # emptied: said, not taken as Esc
        await pilot.press("enter")
        await until(pilot, lambda: str(app.screen.query_one("#problem").render())
                    == 'A conversation needs a title; Esc keeps "Q3 report".')
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        assert app.store.get(first.id).title == "Q3 report"

        # a half-typed message stays with its conversation, and so does an attached document
        app.chat_screen.query_one("#prompt").value = "Also the margins for"  # type: ignore[attr-defined]
        app._attach_document((Path("margins.txt"), "Q3: 12%"))
        screen, laid = app.chat_screen, []  # each layout of the screen counted (with a long list, 0.1 to 0.3 s each)
        screen._refresh_layout = lambda *a, _was=screen._refresh_layout, **k: (laid.append(1), _was(*a, **k))[1]
        await app.open_conversation(second.id)
        await pilot.pause()
        del screen._refresh_layout
        assert len(laid) <= 3, laid  # laid out once all is drawn (and again as sizes settle); each reply drawn added one
        assert app.chat_screen.input_text() == "" and app.pending_document is None
        app.chat_screen.set_input("Soup on\nFridays?")
        await app.open_conversation(first.id)
        assert app.chat_screen.input_text() == "Also the margins for"
        assert app.pending_document == (Path("margins.txt"), "Q3: 12%")
        assert "margins.txt" in str(app.chat_screen.query_one("#attachment").render())
        await app.open_conversation(second.id)
        assert app.chat_screen.input_text() == "Soup on\nFridays?"  # in the multi-line editor
        editor = app.chat_screen.query_one("#editor")
        await pilot.pause()  # where Enter adds a line, the editor's frame says how to send
        assert editor.display and "Ctrl+S" in app.export_screenshot()
        app.chat_screen.clear_input()  # (the one-line box again)
        await app.open_conversation(first.id)
        app.chat_screen.clear_input()
        app._attach_document(None)

        await pilot.press("ctrl+n")
        await until(pilot, lambda: app.conversation_id is None and not _views(app))
        await pilot.press("ctrl+f")
        await pilot.press("enter")  # nothing typed: Enter goes down to the list, as before
        await until(pilot, lambda: app.focused is app.chat_screen.query_one("#conversations"))
        assert app.conversation_id is None
        await pilot.press("ctrl+f")
        await search_for("nothing like it")
        await pilot.press("enter")  # no match: said, and the box keeps the focus
        await until(pilot, lambda: any("No conversation matches" in str(n.message) for n in app._notifications))
        assert app.conversation_id is None and app.focused is app.chat_screen.query_one("#search")
        await pilot.press("escape")  # Esc: out of the search, its filter gone (it did nothing)
        await until(pilot, lambda: app.focused is app.chat_screen.query_one("#prompt"))
        assert app.chat_screen.query_one("#search").value == ""
        await until(pilot, lambda: len(app.chat_screen.sidebar.query("ConversationItem")) == 2)
        for n in range(6):  # more than a screen after the match: the conversation opened at its end
            app.store.add_message(first.id, "assistant", f"Reply {n}")
            app.store.add_message(first.id, "user", f"Question {n}")
        asked = now - 3 * 86400  # the question three days ago, the replies today
        with sqlite3.connect(app.store.path) as db:
            db.execute("UPDATE messages SET created = ? WHERE content = 'Summarize the sales figures'", (asked,))
        await pilot.press("ctrl+f")
        await search_for("sales")
        await until(pilot, lambda: len(app.chat_screen.sidebar.query("ConversationItem")) == 1)
        await pilot.press("down")  # Down: into the results, the first highlighted (none was: Enter did nothing)
        await until(pilot, lambda: app.focused is app.chat_screen.query_one("#conversations"))
        assert app.chat_screen.query_one("#conversations", ListView).index == 0
        await pilot.press("ctrl+f")
        # the title does not say why it matched: the words around the match do
        # (as many words as the sidebar holds, cut at a word: conversation_list.found_words)
        assert str(app.chat_screen.sidebar.query_one(".match").render()) == "Summarize the sales…"
        await pilot.press("enter")  # the one match opens, as in a quick-open box
        await until(pilot, lambda: app.conversation_id == first.id)
        # at the message found, marked a moment (it opened at its end: the match out of sight)
        match, log = _views(app)[0], app.chat_screen.log_view
        assert match.content == "Summarize the sales figures" and match.has_class("found")
        await until(pilot, lambda: log.max_scroll_y > 0 and log.scroll_y == match.virtual_region.y)
        # when each was said: the day over a day's first message, the time beside who wrote it
        weekday = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()[dt.date.fromtimestamp(asked).weekday()]
        assert [(i, str(v.query_one(".day").render())) for i, v in enumerate(_views(app)) if v.query(".day")] == [
            (0, weekday), (1, "Today")]
        assert str(match.query_one(".role").render()) == f"You  {dt.datetime.fromtimestamp(asked):%H:%M}"
        await until(pilot, lambda: app.focused is app.chat_screen.query_one("#prompt"))
        # the filter is done with: the box empties and every conversation is listed again
        assert app.chat_screen.query_one("#search").value == ""
        await until(pilot, lambda: len(app.chat_screen.sidebar.query("ConversationItem")) == 2)
        await pilot.press("ctrl+f")
        await search_for("zzqq")  # nothing matches: said in the list (it was left blank)
        await until(pilot, lambda: not app.chat_screen.sidebar.query("ConversationItem")
                    and bool(app.chat_screen.sidebar.query(".none-found")))
        assert str(app.chat_screen.sidebar.query_one(".none-found Label").render()) == 'No conversation holds "zzqq".'
        await search_for("sales")
        await until(pilot, lambda: len(app.chat_screen.sidebar.query("ConversationItem")) == 1)
        assert not app.chat_screen.sidebar.query(".none-found")
        await pilot.press("ctrl+n")  # a new conversation: the search that would hide it goes (it looked unsaved)
        await until(pilot, lambda: len(app.chat_screen.sidebar.query("ConversationItem")) == 2)
        assert app.chat_screen.query_one("#search").value == "" and app.conversation_id is None
        await app.open_conversation(first.id)

        def items() -> dict[int | None, int]:
            return {item.conversation_id: id(item) for item in app.chat_screen.sidebar.query(ConversationItem)}

        before = items()
        await delete_with_f8(pilot, app)
        await until(pilot, lambda: [c.id for c in app.store.list()] == [second.id])
        await until(pilot, lambda: any('Deleted "Q3 report"' in str(n.message) for n in app._notifications))
        # the deleted one's line goes, the others' stay as they are (the whole list was made
        # again: up to a second with 100 listed)
        assert items() == {second.id: before[second.id]}
        # into the list (Tab, a click) with no line highlighted (the open one just deleted): its
        # first is, so that Enter opens it (Enter did nothing until Down)
        listed = app.chat_screen.query_one("#conversations", ListView)
        assert listed.index is None and app.conversation_id is None
        listed.focus()
        await until(pilot, lambda: listed.index == 0)
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation_id == second.id)

        # in Turkish the question is answered with e/h (evet, hayır); "y" is not an answer there
        await pilot.press("f9")
        await until(pilot, lambda: app.texts.lang == "tr")
        await app.open_conversation(second.id)
        for keys, kept in ((("y", "h"), True), (("e",), False)):
            await pilot.press("f8")
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
            labels = [str(b.label) for b in app.screen.query("Button")]
            assert labels == ["Sil (e)", "Vazgeç (h)"], labels
            for key in keys:
                await pilot.press(key)
                if key == "y":
                    await pilot.pause()
                    assert isinstance(app.screen, ConfirmDialog)
            await until(pilot, lambda: not isinstance(app.screen, ConfirmDialog))
            await until(pilot, lambda kept=kept: bool(app.store.list()) is kept)

        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.conversation_id is None
        await pilot.press("f8")  # nothing open: said, not silently nothing
        await until(pilot, lambda: any("Açık bir sohbet yok" in str(n.message) for n in app._notifications))


async def test_a_damaged_conversation_database_is_said_and_left_alone(profiles: Path, tmp_path: Path) -> None:
    """A conversation file the app cannot use (here not a database at all) stopped the app:
    it is said in a sentence now, the file is left as it is, and this session's chat works."""
    path = tmp_path / "c.db"
    path.write_bytes(b"these are not the conversations you are looking for\n" * 200)
    before = path.read_bytes()
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en", store_path=path)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: any("cannot be opened (file is not a database). The file is damaged: move it "
                                       "aside with the files beside it" in str(n.message) and "This session's "
                                       "conversations are kept in memory only" in str(n.message)
                                       for n in app._notifications))
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app._exception is None and app.store.list() == []
        kept = app.store.new("Only this session")
        assert app.cells_tag(kept.id) == NOT_KEPT  # its KV cells are not left on disk after it
        # Ctrl+Q then lost it without a word (the toast had long gone): it asks, and No stays
        app.store.add_message(kept.id, "user", "Remember the meeting")
        await pilot.press("ctrl+q")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        assert "conversations are not saved" in app.screen.question  # type: ignore[attr-defined]
        await pilot.press("n")
        await until(pilot, lambda: app.screen is app.chat_screen)
        assert app.is_running
        await pilot.press("ctrl+q")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("y")
        await until(pilot, lambda: not app.is_running)
    assert path.read_bytes() == before


async def test_conversations_on_a_read_only_disk_are_shown_and_kept_as_they_are(profiles: Path, tmp_path: Path) -> None:
    """A data folder on a read-only disk (a backup, a folder of someone else's): the app said so
    and showed no conversation at all, and people took theirs for lost; they are shown now, and
    quitting asks only once something new would be lost."""
    import subprocess

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("mounting a disk needs root")
    try:
        kept = ConversationStore(disk / "c.db")
        budget = kept.new("Budget 2027")
        kept.add_message(budget.id, "user", "Plan the budget")
        kept.close()
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        app = WorkstationApp("a", start_engine=False, sample_system=False, language="en", store_path=disk / "c.db")
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: any("kept in memory until the folder takes writes again" in str(n.message)
                                           for n in app._notifications))
            assert [c.title for c in app.store.list()] == ["Budget 2027"]
            assert [m.content for m in app.store.messages(budget.id)] == ["Plan the budget"]
            memory = app.store
            memory.add_message(budget.id, "user", "And the travel costs?")
            assert memory.holds_unsaved()  # (the damaged file's test: Ctrl+Q asks then)
            memory.forget_messages(budget.id, [memory.messages(budget.id)[-1].id])
            assert not memory.holds_unsaved()
            memory.rename(budget.id, "Budget 2027, final")  # (quit without a question, the new title was lost)
            assert memory.holds_unsaved()
            memory.rename(budget.id, "Budget 2027")
            # the disk writable again: the session is written into its file (it stayed in memory,
            # and went with the app)
            memory.add_message(budget.id, "user", "And the travel costs?")
            subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)
            await until(pilot, lambda: any("now saved in" in str(n.message) for n in app._notifications))
            assert not app.store.in_memory
            await pilot.press("ctrl+q")  # nothing new to lose: not asked
            await until(pilot, lambda: not app.is_running)
        kept = ConversationStore(disk / "c.db")
        assert [m.content for m in kept.messages(budget.id)] == ["Plan the budget", "And the travel costs?"]
        kept.close()
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


async def test_any_way_out_keeps_the_draft_and_a_late_draft_timer_is_harmless(profiles: Path) -> None:
    """The app leaving by another way than Ctrl+Q (the end of a turn it was told to quit after)
    keeps what is typed; the draft's one-second timer firing after the screens are gone did
    raise (no '#editor') and showed a traceback on the way out."""
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    report = app.store.new("Quarterly report")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.conversation_id == report.id)
        await type_message_only(pilot, "Half a thought")
        assert app._draft_timer is not None  # pending: it fires a second after typing stops
        app.exit()
    assert app._exception is None
    assert app.save_draft() is None  # what the late timer runs: nothing left to read, no error

    again = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with again.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: again.chat_screen.input_text() == "Half a thought")


async def test_drafts_survive_quitting(profiles: Path) -> None:
    """What is typed and not sent comes back after a restart, in its own conversation, with
    its attached document; Ctrl+Q keeps even what was typed the instant before; the app opens
    where it was left, and the list says which conversations hold a draft; a deleted
    conversation's draft goes with it."""
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    report = app.store.new("Quarterly report")
    menu = app.store.new("Lunch menu")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.conversation_id == menu.id)
        await type_message_only(pilot, "Soup on Fridays?")
        await app.open_conversation(report.id)
        await type_message_only(pilot, "Also the margins for")
        app._attach_document((Path("margins.txt"), "Q3: 12%"))
        await pilot.press("ctrl+n")
        await until(pilot, lambda: app.conversation_id is None)
        await type_message_only(pilot, "A new idea")
        await pilot.press("ctrl+q")  # at once: no pause for the typing to settle
    assert not app.is_running

    def drafts_listed(a: WorkstationApp) -> dict[str, str]:
        out = {}
        for item in a.chat_screen.sidebar.query("ConversationItem"):
            labels = [str(label.render()) for label in item.query("Label")]
            marks = [text for text, label in zip(labels, item.query("Label"), strict=True) if label.has_class("draft")]
            if marks:
                out[labels[0]] = marks[0]
        return out

    again = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with again.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: again.chat_screen.input_text() == "A new idea")  # where it was left
        await pilot.press("!")  # typing goes on where the draft ends (it was all selected: replaced)
        assert again.chat_screen.input_text() == "A new idea!"
        await pilot.press("backspace")
        assert again.conversation_id is None
        assert drafts_listed(again) == {"Quarterly report": "not sent: Also the margins for",
                                        "Lunch menu": "not sent: Soup on Fridays?"}
        # under its conversation's title, not at the margin where it read as a title of its own
        for item in again.chat_screen.sidebar.query("ConversationItem"):
            title, *rest = item.query("Label")
            assert all(label.content_region.x >= title.content_region.x + 2 for label in rest if label.has_class("draft"))
        assert sum(1 for label in again.chat_screen.sidebar.query(".draft") if label.region.width) == 2
        await again.open_conversation(menu.id)
        assert again.chat_screen.input_text() == "Soup on Fridays?" and again.pending_document is None
        assert drafts_listed(again) == {"Quarterly report": "not sent: Also the margins for",
                                        "New conversation": "not sent: A new idea"}
        await pilot.press("f9")  # in Turkish at once (the list kept "Draft:" until it changed)
        await until(pilot, lambda: drafts_listed(again) == {"Quarterly report": "gönderilmedi: Also the margins for",
                                                            "Yeni sohbet": "gönderilmedi: A new idea"})
        await pilot.press("f9")
        await until(pilot, lambda: drafts_listed(again) == {"Quarterly report": "not sent: Also the margins for",
                                                            "New conversation": "not sent: A new idea"})
        await again.open_conversation(report.id)
        assert again.chat_screen.input_text() == "Also the margins for"
        assert again.pending_document == (Path("margins.txt"), "Q3: 12%")
        assert "margins.txt" in str(again.chat_screen.query_one("#attachment").render())
        # the new conversation's draft is listed at the top: choosing it brings the draft back
        listed = again.chat_screen.sidebar.query_one("#conversations")
        listed.focus()
        listed.index = 0  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: again.conversation_id is None)
        assert again.chat_screen.input_text() == "A new idea"
        # a closed terminal does not say goodbye: what is typed is on disk a second later
        await type_message_only(pilot, " for the team")
        await until(pilot, lambda: again.store.drafts().get(None) == ("A new idea for the team", None))
        await again.open_conversation(report.id)
        await delete_with_f8(pilot, again)
        await until(pilot, lambda: report.id not in {c.id for c in again.store.list()})
        assert set(again.store.drafts()) == {menu.id, None}


async def test_f8_in_the_list_deletes_the_highlighted_conversation_not_the_open_one(profiles: Path) -> None:
    """With the list walked to another conversation, F8 asked to delete the open one (its
    title in the question, which a quick "y" does not read), for good; F2 and F7 renamed and saved
    the open one. The list is headed by
    day once it holds more than one (a week's conversations were told apart by nothing), and
    the cursor steps over the headings."""
    import datetime as dt
    import sqlite3

    from textual.widgets import Input, Label

    # the days by the app's clock, one moment taken once (the test's own "today" and the app's
    # differed in a run across midnight): a Wednesday noon, the lunch menu last used on the Sunday
    now = dt.datetime(2026, 3, 4, 12, 0).timestamp()
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en", clock=lambda: now)
    lunch = app.store.new("Lunch menu")
    app.store.add_message(lunch.id, "user", "Soup on Fridays?")
    policy = app.store.new("Remote work policy")
    with sqlite3.connect(app.store.path) as db:  # the lunch menu was last used three days ago
        db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now - 3 * 86400, lunch.id))
        db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now - 60, policy.id))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.conversation_id == policy.id)
        listed = app.chat_screen.sidebar.query_one("#conversations")
        def titles() -> list[str]:
            return [str(i.query_one(Label).render()) for i in listed.children if i.query(Label)]

        await until(pilot, lambda: titles() == ["Today", "Remote work policy", "Sunday", "Lunch menu"])
        listed.focus()
        await pilot.press("down")  # from the open one to the lunch menu, over its day's heading
        await until(pilot, lambda: getattr(listed.highlighted_child, "conversation_id", None) == lunch.id)
        # a list of a few lines, walked up: the day's heading over the open one went out of sight
        # for good (the list scrolled to the line alone)
        await pilot.resize_terminal(100, 10)
        for key, at, top in (("up", policy.id, None), ("down", lunch.id, None), ("up", policy.id, 0)):
            await pilot.press(key)
            await until(pilot, lambda at=at, top=top: getattr(listed.highlighted_child, "conversation_id", None) == at
                        and top in (None, listed.scroll_y))
        await pilot.resize_terminal(100, 30)
        await pilot.press("down")
        await until(pilot, lambda: getattr(listed.highlighted_child, "conversation_id", None) == lunch.id)
        for key, offered in (("f7", "Lunch-menu.md"), ("f2", "Lunch menu")):  # F2 and F7 renamed and saved the open one
            await until(pilot, lambda: app.focused is listed)
            await pilot.press(key)
            await until(pilot, lambda: isinstance(app.screen, TextPrompt))
            assert app.screen.value.endswith(offered)  # type: ignore[attr-defined]
            if key == "f7":  # at 80x24 a path longer than the box is said whole under it (the box
                # showed "ment/Lunch-menu.md", the folder it goes to cut off)
                await pilot.resize_terminal(80, 24)
                far = "/home/ayse/Documents/Quarterly Reports/2025 Finance Department/Lunch-menu.md"
                app.screen.query_one("#answer", Input).value = far
                await until(pilot, lambda: app.screen.query_one("#whole").display)
                shown = "\n".join(screen_lines(app))
                assert "Saves to /home/ayse/Documents/" in shown and "Department/Lunch-menu.md" in shown, shown
                await pilot.resize_terminal(100, 30)
            await pilot.press("escape" if key == "f7" else "ctrl+u")
        await pilot.press(*"Canteen menu", "enter")
        await until(pilot, lambda: app.store.get(lunch.id, with_messages=False).title == "Canteen menu")
        await until(pilot, lambda: app.focused is listed and "Canteen menu" in titles())
        assert listed.highlighted_child.conversation_id == lunch.id  # (it went back to the open one)
        assert app.store.get(policy.id, with_messages=False).title == "Remote work policy"
        app._drafts[lunch.id] = ("And on Mondays?", None)  # its draft goes with it: said (it went unsaid)
        await pilot.press("f8")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        assert app.screen.question == ('Delete this conversation? "Canteen menu": this cannot be undone. What is '  # type: ignore[attr-defined]
                                       "typed in it and not sent goes too.")
        await pilot.press("y")
        await until(pilot, lambda: [c.id for c in app.store.list()] == [policy.id])
        assert app.conversation_id == policy.id  # the open one stays open
        await until(pilot, lambda: [getattr(i, "conversation_id", None) for i in listed.children] == [policy.id])
        # the new conversation's draft listed on top: F8 there deletes nothing (it asked for the open one)
        app._drafts[None] = ("A new idea", None)
        await app.refresh_sidebar()
        await until(pilot, lambda: [getattr(i, "conversation_id", -1) for i in listed.children] == [None, policy.id])
        listed.focus()
        listed.index = 0  # type: ignore[attr-defined]
        await pilot.press("f8")
        await until(pilot, lambda: any(n.message.startswith("Highlight a conversation in the list to delete it")
                                       for n in app._notifications))
        assert not isinstance(app.screen, ConfirmDialog) and [c.id for c in app.store.list()] == [policy.id]


async def test_f1_on_a_narrow_terminal_says_each_key_on_lines_of_its_own(profiles: Path) -> None:
    """At 60x20 F1's third column, what a key does, was 9 letters wide: "Temp… / top-p / and /
    the / other / samp…", one key a screen. Below 72 columns the name goes over what it does."""
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, KeysDialog))
        assert len(app.screen.table.columns) == 1  # type: ignore[attr-defined]
        await pilot.resize_terminal(100, 30)  # the same dialog, made wide: three columns again
        await until(pilot, lambda: len(app.screen.table.columns) == 3)  # type: ignore[attr-defined]


@pytest.mark.parametrize("size", [(80, 24), (110, 32)])
async def test_f1_at_80x24_says_what_a_key_does_on_few_lines(profiles: Path, size: tuple[int, int]) -> None:
    """At 80x24 F1's third column, what a key does, was 30 letters wide: Ctrl+O's took 7 lines and
    three keys filled the dialog. Below 100 columns it goes under the key and its name, across the
    dialog; at 110 the three columns stay."""
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=size) as pilot:
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, KeysDialog))
        await pilot.pause()
        lines = screen_lines(app)
        first = next(i for i, line in enumerate(lines) if "Attach a document (text," in line)
        last = next(i for i, line in enumerate(lines) if "goes" in line and i >= first)
        assert last - first <= (2 if size[0] < 100 else 3), lines[first:last + 1]  # (7 lines at 80x24)
        assert len(app.screen.table.columns) == (1 if size[0] < 100 else 3)  # type: ignore[attr-defined]
        assert any("Ctrl+O  Attach" in line for line in lines) == (size[0] < 100), lines


async def test_ctrl_e_says_its_keys_in_view_at_80x24(profiles: Path) -> None:
    """At 80x24 Ctrl+E's dialog ended at "Seed": how to apply the settings (Enter), put back
    the profile's (Ctrl+R) or leave (Esc) was said below the fold, under the nine settings."""
    from textual.widgets import Input, Label

    from workstation.tui.screens.sampling import SamplingDialog

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        # a message being typed keeps Ctrl+A and Ctrl+E, the line's start and end as in a terminal
        # (Ctrl+E opened the sampling settings mid-sentence); from the empty box Ctrl+E opens them
        box = app.screen.query_one("#prompt", Input)
        await pilot.press(*"Hello there", "ctrl+a")
        assert box.cursor_position == 0 and app.screen is app.chat_screen
        await pilot.press("ctrl+e")
        assert box.cursor_position == len("Hello there") and app.screen is app.chat_screen
        await pilot.press("ctrl+u", "ctrl+e")
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog))
        await pilot.pause()
        keys = app.screen.query_one("#sampling-keys", Label)
        assert "Enter applies them" in str(keys.render()) and "Esc" in str(keys.render())
        box = app.screen.query_one("#sampling")
        assert keys.region.height and box.region.contains_region(keys.region), (keys.region, box.region)


def test_the_app_without_a_terminal_says_so_and_exits(tmp_path: Path) -> None:
    """With its input not a terminal (< /dev/null, a pipe, nohup) the app drew its screen, took
    no key, Ctrl+Q included, and spun a core until killed; with 2> to a file the window stayed
    blank; with > to a file an 80x24 screen never followed the window's size; with TERM=dumb it
    drew escape codes. Each is one sentence and exit code 1."""
    import pty
    import subprocess
    import sys

    workstation = f"{sys.executable} -m workstation"  # (the venv's script is not always there)
    done = subprocess.run([sys.executable, "-m", "workstation", "tui", "--no-load"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.startswith("workstation: The app reads its keys from a terminal, and its input here is not "
                                  "one (a file, a pipe or /dev/null): start it in a terminal window, or use the "
                                  "command line instead, e.g. "), done.stderr

    with app_in_a_terminal("--no-load", TERM="dumb") as (pid, fd):
        seen = read_terminal(fd, lambda b: b"chat" in b and b"\n" in b.split(b"TERM=dumb")[-1], 60, "said TERM=dumb")
        assert wait_for_exit(pid, 30, "exited") == 1
    assert b"This terminal (TERM=dumb) cannot show the app's screen" in seen and b"\x1b[" not in seen, seen

    log = tmp_path / "err.log"
    pid, fd = pty.fork()
    if pid == 0:  # the app in a terminal, its standard error to a file
        os.execv("/bin/sh", ["sh", "-c", f"exec {workstation} tui --no-load 2>{log}"])
    try:
        seen = read_terminal(fd, lambda b: b"2>" in b and b"\n" in b.split(b"2>")[-1], 60, "said 2>")
        assert wait_for_exit(pid, 30, "exited") == 1
    finally:
        os.close(fd)
    assert b"The app draws its screen on standard error, which goes to a file or a pipe here" in seen, seen
    assert "The app draws its screen" in log.read_text(encoding="utf-8")

    out = tmp_path / "out.txt"  # its standard output to a file: an 80x24 screen that never followed the window
    pid, fd = pty.fork()
    if pid == 0:
        os.execv("/bin/sh", ["sh", "-c", f"exec {workstation} tui --no-load >{out}"])
    try:
        seen = read_terminal(fd, lambda b: b"reply.txt" in b and b"\n" in b.split(b"reply.txt")[-1], 60, "said >")
        assert wait_for_exit(pid, 30, "exited") == 1
    finally:
        os.close(fd)
    assert b"The app needs a terminal on its standard output, which goes to a file or a pipe here" in seen, seen
    assert b"\x1b[" not in seen and out.read_text(encoding="utf-8") == "", seen


def test_a_terminal_without_utf8_is_sent_ascii_only() -> None:
    """Over SSH under LANG=C (a terminal that is not UTF-8) and on the Linux console, Textual's
    borders (▊▔▁▎), the header's ⭘, the palette's 🔎 and the footer's ▏ reached the terminal as
    two or three letters each (every line ran past its end) or as the console's diamonds. The
    app in a real terminal (a pty) under LANG=C sends only ASCII, the palette open too; the
    console keeps the Latin letters its font has (Türkçe), and Python's own LC_CTYPE=C.UTF-8
    under LANG=C is not taken for the person's. A Latin-1 byte typed there is a letter, not
    the app's end."""
    from workstation.tui.glyphs import terminal_charset, terminal_table
    from workstation.tui.typed_bytes import typed_charset

    assert typed_charset({"LANG": "tr_TR.ISO-8859-9"}) == "iso8859-9"  # a Turkish terminal's ş
    assert typed_charset({"LANG": "C", "LC_CTYPE": "C.UTF-8"}) == "cp1252"
    assert terminal_charset({"LANG": "C", "LC_CTYPE": "C.UTF-8", "TERM": "xterm"}) == "ascii"
    assert terminal_charset({"LANG": "tr_TR.UTF-8", "TERM": "linux"}) == "console"
    assert terminal_charset({"LANG": "en_US.UTF-8", "TERM": "xterm-256color"}) == "unicode"
    console = terminal_table("console")
    assert console is not None and "▊▔ Türkçe ╭─╮ 🔎".translate(console) == "|- Türkçe +-+ ??"
    with app_in_a_terminal("--no-load", "--lang", "en", TERM="xterm-256color", LANG="C", LC_ALL="",
                           LC_CTYPE="", COLUMNS="80", LINES="24") as (pid, fd):
        seen = read_terminal(fd, lambda b: b"palette" in b, 60, "drew the chat's footer")
        # an é typed in a terminal that sends Latin-1 (PuTTY's old default) ended the app with
        # Textual's UnicodeDecodeError traceback: it is read as typed, and drawn as e here; the
        # last key typed, not held back until the next (E9 begins a UTF-8 character)
        os.write(fd, b"caf\xe9")
        seen += read_terminal(fd, lambda b: b"cafe" in b, 30, "took the typed word")
        os.write(fd, b"\x10")  # Ctrl+P: the palette, its magnifier
        seen += read_terminal(fd, lambda b: b"Search for commands" in b, 30, "opened the palette")
    assert seen.isascii(), sorted({chr(c) for c in seen.decode("utf-8", "replace").encode("utf-8") if c > 127})


def test_closing_the_terminal_mid_reply_ends_the_app_and_keeps_the_reply(profiles: Path, tmp_path: Path) -> None:
    """The terminal window closed while a reply streamed: Textual's output thread died writing
    to it, and the app then hung in a write for good, model and all (`kill -TERM` did nothing).
    A real terminal (a pty), closed as a window closes it: its SIGHUP, then SIGCONT."""
    import os
    import signal

    db = tmp_path / "data"
    with app_in_a_terminal("-p", "b", "--lang", "en", WORKSTATION_DATA=str(db), COLUMNS="100", LINES="30") as (pid, fd):
        read_terminal(fd, lambda seen: b"ready" in seen, 120, "loaded the model")
        os.write(fd, b"Write a long story about a stapler.\r")
        read_terminal(fd, lambda seen: b"generating" in seen, 60, "began the reply")
        read_terminal(fd, lambda seen: False, 2, "")  # the reply streams for a while
        os.close(fd)  # the window closes: the kernel hangs the terminal up
        os.kill(pid, signal.SIGCONT)
        # (the app's own last resort ends it after 30 s, not 0)
        code = wait_for_exit(pid, 25, "the app still runs after its terminal closed")
        assert code == 0  # it quit as Ctrl+Q does, not by its last resort
    store = ConversationStore(db / "conversations.sqlite3")
    try:
        conv = store.list()[0]
        messages = store.messages(conv.id)
    finally:
        store.close()
    assert [m.role for m in messages] == ["user", "assistant"] and messages[1].content.strip()


@pytest.mark.parametrize(("sig", "code"), [("SIGHUP", 0), ("SIGQUIT", 131)])
def test_a_hang_up_with_the_terminal_still_open_gives_the_terminal_back(tmp_path: Path, sig: str, code: int) -> None:
    """`kill -HUP` while the terminal is still there: the app quits and puts the terminal back
    (the main screen, the cursor), as Ctrl+Q does; it took SIGHUP for a closed terminal and
    left it in the app's screen with no cursor. `kill -QUIT` left the terminal so too (and the
    mouse reported): it quits the same way, with a quit signal's exit code (128 + 3)."""
    import os
    import signal

    with app_in_a_terminal("--no-load", "--lang", "en", WORKSTATION_DATA=str(tmp_path / "data")) as (pid, fd):
        read_terminal(fd, lambda seen: b"F1" in seen or b"f1" in seen, 60, "drew its footer")
        os.kill(pid, getattr(signal, sig))
        drawn = read_terminal(fd, lambda seen: b"\x1b[?1049l" in seen and b"\x1b[?25h" in seen, 25,
                              "gave the terminal back")  # the main screen back, the cursor shown
        assert wait_for_exit(pid, 25, f"the app still runs after {sig}") == code, drawn[-200:]


async def test_keys_typed_with_the_chat_history_focused_go_to_the_message_box(profiles: Path, tmp_path: Path) -> None:
    """After a click in the chat (on a long message's "▶ 4 more lines" line) the chat history
    kept the focus, and what was typed was lost: it took four Tabs to get back to the box."""
    app = WorkstationApp("b", sample_system=False, language="en", store_path=tmp_path / "c.db", start_engine=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.screen is app.chat_screen)
        prompt = app.screen.query_one("#prompt")
        app.screen.query_one("#log").focus()
        await pilot.pause()
        await pilot.press("h", "i", "space", "t", "h", "e", "r", "e")
        assert app.focused is prompt and prompt.value == "hi there"  # type: ignore[attr-defined]


async def test_the_app_draws_its_whole_screen_again_after_a_suspend(profiles: Path, tmp_path: Path, signals_kept: None) -> None:
    """Suspended (Ctrl+Z, `kill -TSTP`) and continued (`fg`, `kill -CONT`), the app took the
    terminal again (Textual's driver does, on SIGCONT) but drew only what changed next: in a
    terminal window most of the screen stayed blank until a resize. (A pty read here gets the
    whole screen either way, so the test asks for what the app does: a full redraw, layout
    too, on SIGCONT.)"""
    import os
    import signal

    app = WorkstationApp("b", sample_system=False, language="en", store_path=tmp_path / "c.db", start_engine=False,
                         quit_on_signals=True)
    async with app.run_test(size=(100, 30)) as pilot:
        refreshed: list[dict[str, bool]] = []
        redraw = app.refresh

        def refresh(**how: bool) -> WorkstationApp:
            refreshed.append(how)
            return redraw(**how)

        app.refresh = refresh  # type: ignore[method-assign]
        os.kill(os.getpid(), signal.SIGCONT)
        await until(pilot, lambda: refreshed)
        assert refreshed == [{"layout": True}]


async def test_pasted_lines_go_whole_to_the_editor_and_a_message_keeps_its_lines(profiles: Path) -> None:
    """Sixty lines pasted into the one-line box kept the first line alone, unsaid; a message of
    several lines showed as one run-on paragraph (its line breaks were Markdown's soft ones),
    and so did a reply's letter (Subject, Date, To); a reply's HTML was not shown at all."""
    from textual import events
    from textual.widgets import Input, TextArea

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = app.chat_screen.query_one("#prompt", Input)
        editor = app.chat_screen.query_one("#editor", TextArea)
        prompt.focus()
        prompt.value = "Please check: "
        prompt.cursor_position = len(prompt.value)
        # line breaks as CR (tmux pastes so; lines 2 and 3 were lost), CR LF, and CR at the end
        prompt.post_message(events.Paste("Line 1: desks\rLine 2: chairs\r\nLine 3: lamps\r"))
        await until(pilot, lambda: editor.display and editor.has_focus)
        assert editor.text == "Please check: Line 1: desks\nLine 2: chairs\nLine 3: lamps\n"
        assert editor.cursor_location == (3, 0)  # after what was pasted
        assert any(n.message.startswith("The pasted text has 3 lines, so the message box is now the multi-line editor")
                   for n in app._notifications)
        # Ctrl+U empties it at once (a long paste took a key press per line: select-all, F7, is the app's)
        await pilot.press("ctrl+u")
        assert editor.text == "" and editor.has_focus
        assert any(n.message == "The message box is empty: Ctrl+Z brings the text back." for n in app._notifications)
        await pilot.press("ctrl+z")
        assert editor.text == "Please check: Line 1: desks\nLine 2: chairs\nLine 3: lamps\n"
        prompt.post_message(events.Paste("one line"))  # a line alone is the line's own paste
        await pilot.pause()
        app.chat_screen.toggle_editor()  # back to one line: Shift+Enter (Ctrl+J) starts a new line there
        prompt.value, prompt.cursor_position = "Dear team, old words", 5
        await until(pilot, lambda: prompt.has_focus)
        await pilot.press("ctrl+u")  # the whole box, not only what is left of the cursor
        assert prompt.value == ""
        await pilot.press("ctrl+z")  # back (the line has no undo of its own: a long paragraph was lost)
        assert prompt.value == "Dear team, old words"
        search = app.chat_screen.query_one("#search", Input)
        search.focus()
        await pilot.press(*"budget", "ctrl+u")  # the search box's own Ctrl+U: the message stays
        assert search.value == "" and prompt.value == "Dear team, old words" and search.has_focus
        # and its own Ctrl+A/Ctrl+E/Ctrl+K (the app's Ctrl+E opened the sampling settings over it)
        await pilot.press(*"budget", "ctrl+a", "ctrl+e", "left", "left", "ctrl+k")
        assert search.value == "budg" and search.has_focus and app.screen is app.chat_screen
        await pilot.press("ctrl+u")
        prompt.focus()
        prompt.value, prompt.cursor_position = "Dear team,", len("Dear team,")
        await until(pilot, lambda: prompt.has_focus)
        await pilot.press("ctrl+j", *"desks")
        await until(pilot, lambda: editor.text == "Dear team,\ndesks")
        assert editor.has_focus and not app.generating
        await pilot.press("ctrl+j", *"chairs")  # in the editor too (it did nothing there)
        await until(pilot, lambda: editor.text == "Dear team,\ndesks\nchairs")
        app.chat_screen.clear_input()  # as a message is sent: one line again (the editor stayed 8 rows tall)
        await until(pilot, lambda: prompt.has_focus)
        assert not editor.display and prompt.display and editor.text == ""
        # typed fast, as a paste without bracketed paste or a quick typist: every key before the
        # editor had the focus went to the hidden line, and the next Ctrl+J put it on line 1
        for key in [*"first", "ctrl+j", *"second", "ctrl+j", *"third"]:
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await until(pilot, lambda: editor.text == "first\nsecond\nthird")
        app.chat_screen.clear_input()

        conv = app.store.new("Lines")
        app.store.add_message(conv.id, "user", "Line 1: desks\nLine 2: chairs")
        app.store.add_message(conv.id, "assistant", "Subject: chairs\nTo: Ayla\n\n<table><tr><td>12</td></tr></table>")
        await app.open_conversation(conv.id)
        await until(pilot, lambda: len(_views(app)) == 2)
        await pilot.pause()
        mine, reply = (_paragraphs(v) for v in _views(app))
        # text with no Markdown in it is one widget, not a Markdown document of paragraphs
        assert all(isinstance(v.body, PlainBody) for v in _views(app)), _views(app)
        assert mine[0].splitlines() == ["Line 1: desks", "Line 2: chairs"], mine
        assert reply[0].splitlines() == ["Subject: chairs", "To: Ayla"], reply
        assert reply[1] == "<table><tr><td>12</td></tr></table>", reply  # shown as written, not left out

        # a message with an attached document shows the question and the document's name, the
        # document folded (a contract filled screens to scroll past); a long paste its first lines
        from textual.widgets import Collapsible, Static

        from workstation.tui.widgets.message_view import fold

        contract = "\n".join(f"{i}. The tenant keeps desk {i} tidy." for i in range(1, 201))
        app.store.add_message(conv.id, "user", f"Summarize clause 3.\n\n---\nDocument: lease.txt\n\n{contract}")
        app.store.add_message(conv.id, "user", "\n".join(f"row {i}" for i in range(60)))
        one_line = "Check this line: " + " ".join(["desk"] * 1000)
        app.store.add_message(conv.id, "user", one_line)
        # a link's text that is another address than its own: the chat showed the text alone (phishing)
        app.store.add_message(conv.id, "assistant", "Send them [https://cloud.sheda.net/send-forms]"
                              "(http://support.daimg.com/f) or see [www.sheda.net](http://www.sheda.net).")
        await app.open_conversation(conv.id)
        await until(pilot, lambda: len(_views(app)) == 6)
        await pilot.pause()
        doc, paste, line, linked = _views(app)[2:]
        assert _paragraphs(linked) == ["Send them https://cloud.sheda.net/send-forms (http://support.daimg.com/f) "
                                       "or see www.sheda.net."], _paragraphs(linked)
        shown = _paragraphs(doc)
        assert shown == ["Summarize clause 3.", "Document: lease.txt"], shown
        block = doc.query_one(".folded", Collapsible)
        # how to open it: Enter in the message box did nothing ("Enter shows them")
        assert block.collapsed and block.title == f"200 more lines (about {rounded_words(words_in(contract))} words): a click, or " \
                                                  "Enter on this line, shows them"
        block.collapsed = False
        await pilot.pause()
        assert str(doc.query_one(".folded-text", Static).render()).startswith("1. The tenant keeps desk 1 tidy.")
        assert block.title.endswith(", shown: a click, or Enter on this line, folds them")  # (it still said "shows")
        block.collapsed = True
        await until(pilot, lambda: block.title.endswith("shows them"))
        assert _paragraphs(paste)[0].splitlines()[-1] == "row 7 …"
        assert paste.query_one(".folded", Collapsible).title.startswith("52 more lines")
        rest = fold(one_line)[1]  # one long line: its length, not "1 more lines"
        assert "\n" not in rest and line.query_one(".folded", Collapsible).title.startswith(
            f"About {rounded_words(words_in(rest))} more words: a click")
        assert not _views(app)[0].query(".folded")  # a short message: no fold


async def test_numbered_lists_show_the_numbers_written(tmp_path: Path, profiles: Path) -> None:
    """A lease whose clauses go 1, 2, 4, 5 (clause 3 taken out), attached and sent, showed its
    clauses as 1, 2, 3, 4: the chat's Markdown numbered a list on from its first number, and a
    paralegal read "3. Parking" for clause 4. A reply's "4. Late fee" after "2." showed "3.".
    A list numbered "1. 1. 1." (Markdown's way of leaving the counting to it) is counted."""
    lease = tmp_path / "lease.txt"
    lease.write_text("1. Term: one year from May 1.\n2. Rent: $1,850 a month.\n4. Parking: one space, B12.\n"
                     "5. Late fee: $50 after the fifth day.\n", encoding="utf-8")
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await attach_file(pilot, app, lease)
        await _send(pilot, app, "Which clause sets the late fee?")
        await until(pilot, lambda: not app.generating and len(_views(app)) == 2)
        await pilot.pause()
        lines = [line.split("▎")[-1].strip() for line in screen_lines(app)]  # (the chat's, right of its edge)
        clauses = [line for line in lines if line[:2] in ("1.", "2.", "3.", "4.", "5.")]
        assert clauses == ["1. Term: one year from May 1.", "2. Rent: $1,850 a month.", "4. Parking: one space, B12.",
                           "5. Late fee: $50 after the fifth day."], lines

        conv = app.store.new("Clauses")
        app.store.add_message(conv.id, "user", "Which clauses cost money?")
        app.store.add_message(conv.id, "assistant", "1. Rent\n2. Deposit\n4. Late fee\n\nTo do:\n\n"
                                                    "1. Sign it\n1. Date it\n1. Send it back")
        await app.open_conversation(conv.id)
        await until(pilot, lambda: len(_views(app)) == 2 and _views(app)[1].content.startswith("1. Rent"))
        await pilot.pause()
        lines = [line.split("▎")[-1].strip() for line in screen_lines(app)]
        assert "4. Late fee" in lines and "3. Late fee" not in lines, lines
        assert ["1. Sign it", "2. Date it", "3. Send it back"] == [line for line in lines if line.endswith(" it")
                                                                   or line.endswith("back")], lines


async def test_ctrl_e_sets_the_conversations_sampling(profiles: Path) -> None:
    """The sampling settings could be changed only in the profile's file, loaded again (LM
    Studio has a panel, Ollama ``/set parameter``). Ctrl+E's apply to this conversation's next
    replies, are checked as a profile's are, and leave the file as it was; F3's other profile
    runs with them too, and says so."""
    from textual.widgets import Input, Label

    from workstation.core.profile_lookup import model_file
    from workstation.tui.screens.sampling import SamplingDialog

    written = (profiles / "a.yaml").read_text(encoding="utf-8")
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await pilot.press("ctrl+e")
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog))
        dialog = app.screen
        assert dialog.query_one("#s-max_tokens", Input).value == "8"  # the profile's
        await pilot.resize_terminal(160, 45)  # each setting's few words whole (the seed's ended "empty o…")
        await pilot.pause()
        for help_line in dialog.query(".sampling-help"):
            assert help_line.size.width >= len(str(help_line.render())), str(help_line.render())
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        await pilot.press("end", "ctrl+u", "9", "enter")  # temperature 9: refused as a profile's would be
        problem = dialog.query_one("#sampling-problem", Label)
        assert problem.display and "Temperature is 9.0; allowed values are 0 to 5." in str(problem.render())
        assert app.screen is dialog
        await pilot.press("end", "ctrl+u", "0", *["down"] * 7, "end", "ctrl+u", "3", "enter")  # temperature 0, 3 tokens
        await until(pilot, lambda: not isinstance(app.screen, SamplingDialog))
        assert app.session_sampling is not None and app.session_sampling.max_tokens == 3
        assert "own sampling" in app.status_text()
        await _send_text(pilot, app, "Write a long story about a cat.")
        await until(pilot, lambda: not app.generating)
        reply = app.store.messages(app.conversation_id)[-1]
        assert reply.role == "assistant" and (reply.metrics or {}).get("predicted_n") == 3, reply.metrics
        assert (profiles / "a.yaml").read_text(encoding="utf-8") == written
        # the reply says it had the session's settings, under it and in F7's export (it read as
        # written with the profile's)
        assert reply.metrics["sampling"] == {"max_tokens": 3}
        assert reply.metrics["model"] == model_file(app.profile)  # (F4 times this PC's replies by their model file)
        # (the last reply, cut at its limit, ends with the key that goes on with it)
        assert str(_views(app)[-1].query_one(".metrics").render()).endswith(
            " · own settings: Longest reply 3 · Alt+C goes on with it")
        assert "· own settings: max_tokens 3*" in app.store.to_markdown(app.conversation_id)  # type: ignore[arg-type]
        # Ctrl+R: the profile's again
        await pilot.press("ctrl+e")
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog))
        assert app.screen.query_one("#s-max_tokens", Input).value == "3"
        await pilot.press("ctrl+r", "enter")
        await until(pilot, lambda: app.session_sampling is None and not isinstance(app.screen, SamplingDialog))
        assert "own sampling" not in app.status_text()
        # a profile that fails to load brings this one back, its settings with it; one that
        # loads runs with the conversation's own settings in place of its file's, and says so
        await pilot.press("ctrl+e")
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog))
        await pilot.press("end", "ctrl+u", "1", "enter")
        await until(pilot, lambda: app.session_sampling is not None)
        await _choose_profile(pilot, app, "broken")
        await until(pilot, lambda: app.loading is None and app.engine is not None)
        assert app.profile.key == "a" and app.session_sampling is not None
        await _choose_profile(pilot, app, "b")
        await until(pilot, lambda: app.loading is None and app.engine is not None and app.profile.key == "b")
        assert app.session_sampling is not None and "own sampling" in app.status_text()
        assert (app.session_sampling.temperature, app.session_sampling.max_tokens) == (1.0, 400)  # b's own length
        # a reply's record keeps those that apply on this profile, from the one source: a setting
        # the profile has itself is none of the conversation's own there
        assert app.own_sampling == app.changes_from_profile(app.session_sampling) == {"temperature": 1.0}
        kept, app.own_sampling = app.own_sampling, {"max_tokens": 400}
        assert app.session_sampling is None and app.changes_from_profile(app.session_sampling) == {}
        app.own_sampling = kept
        assert any(n.message == "This conversation keeps its own sampling settings with this profile: Temperature 1 "
                   "(Ctrl+E changes them)." for n in app._notifications), [n.message for n in app._notifications]


async def test_ctrl_e_settings_are_kept_with_the_conversation(profiles: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl+E's settings were gone at the next start. They are the conversation's, as LM
    Studio keeps them per chat: given before its first message they are kept with it, they come
    back when it is opened again (after a restart too) and chat -c uses them; a new
    conversation starts with the profile's."""
    import json

    from textual.widgets import Input

    from workstation.cli import main
    from workstation.tui.screens.sampling import SamplingDialog

    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await pilot.press("ctrl+e")
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog))
        assert app.screen.query_one("#s-max_tokens", Input).value == "8"  # the profile's
        await pilot.press(*["down"] * 7, "end", "ctrl+u", "3", "enter")  # the longest reply: 3 tokens
        await until(pilot, lambda: not isinstance(app.screen, SamplingDialog))
        await _send_text(pilot, app, "Write a long story about a cat.")
        await until(pilot, lambda: not app.generating)
        story = app.conversation_id
        assert story is not None
        await pilot.press("ctrl+n")  # a new one: the profile's
        await until(pilot, lambda: app.conversation_id is None)
        assert app.session_sampling is None and "own sampling" not in app.status_text()
        await pilot.pause()
        assert "own sampling" not in str(app.chat_screen.query_one("#status").render())  # (as shown: it stayed)
        await _send_text(pilot, app, "Say hi")
        await until(pilot, lambda: not app.generating)
        other = app.conversation_id
        await app.open_conversation(story)
    app = WorkstationApp(None, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:  # started again: where it was, with its settings
        await until(pilot, lambda: app.engine is not None and app.conversation_id == story)
        assert app.session_sampling is not None and app.session_sampling.max_tokens == 3
        assert "own sampling" in app.status_text()
        await _send_text(pilot, app, "And another one, please.")
        await until(pilot, lambda: not app.generating)
        reply = app.store.messages(story)[-1]
        assert (reply.metrics or {}).get("predicted_n") == 3 and reply.metrics["sampling"] == {"max_tokens": 3}
        # another window on it: its Ctrl+E is this window's next reply's (it kept its old ones), and the
        # turns it writes fill the context line under the box here (it stayed at this window's last)
        window = ConversationStore(app.store.path)
        before = {m.id for m in window.messages(story)}
        add_exchange = app.chat_screen.add_exchange

        async def meanwhile(content: str) -> object:  # Ctrl+E there while this window's reply goes out:
            view = await add_exchange(content)  # (taken in with that reply's save, and never used)
            window.set_sampling(story, {"max_tokens": 2})
            return view

        app.chat_screen.add_exchange = meanwhile  # type: ignore[method-assign]
        await _send_text(pilot, app, "One more, please.")
        await until(pilot, lambda: not app.generating)
        app.chat_screen.add_exchange = add_exchange  # type: ignore[method-assign]
        await _send_text(pilot, app, "And the last one.")
        await until(pilot, lambda: not app.generating)
        reply = app.store.messages(story)[-1]
        assert (reply.metrics or {}).get("predicted_n") == 2 and reply.metrics["sampling"] == {"max_tokens": 2}
        window.add_message(story, "user", "Longer?")
        window.add_message(story, "assistant", "Yes.", {"prompt_n": 150, "cache_n": 50, "predicted_n": 24})
        window.set_sampling(story, {})
        left = f"room for about {about_words(app.engine_info.n_ctx - 224)} more words"  # (150 + 50 + 24 tokens)
        await until(pilot, lambda: left in app.chat_screen.query_one("#prompt").border_subtitle
                    and "own sampling" not in str(app.chat_screen.query_one("#status").render()))
        assert app.session_sampling is None
        window.set_sampling(story, {"max_tokens": 3})  # as it was, for what follows (the model
        window.forget_messages(story, [m.id for m in window.messages(story) if m.id not in before])  # ends sooner)
        window.close()
        await app.open_conversation(other)  # type: ignore[arg-type]
        assert app.session_sampling is None
        await app.open_conversation(story)
        assert app.session_sampling is not None and app.session_sampling.max_tokens == 3
    capsys.readouterr()
    code = main(["chat", "-p", "a", "-c", f"#{story}", "Go on."])
    said = capsys.readouterr()
    assert code == 0, said.err
    store = ConversationStore()
    metrics = store.messages(story)[-1].metrics or {}
    store.close()
    assert (metrics["predicted_n"], metrics["stop_reason"]) == (3, "length"), metrics
    # the advice names where the limit came from (it named --max-tokens and the profile)
    assert "The reply stopped at its limit of 3 tokens; for a longer one, raise this conversation's longest " \
           "reply with Ctrl+E in the app (or give --max-tokens for one turn)." in said.err, said.err
    assert main(["chat", "-p", "a", "-c", f"#{story}", "--json", "--max-tokens", "2", "Go on."]) == 0  # options win
    said = json.loads(capsys.readouterr().out)
    assert (said["metrics"]["predicted_n"], said["metrics"]["stop_reason"]) == (2, "length"), said


async def test_ctrl_e_takes_numbers_as_turkish_writes_them(profiles: Path) -> None:
    """In Turkish the boxes show 0,95 and take 0,3: the comma was dropped as it was typed (a
    "number" box), and 0,3 became a temperature of 3, said back as "Sıcaklık 3"; 2.048 tokens
    is 2048, and 2,5 in a whole number's box is refused, not read as 25."""
    from textual.widgets import Input, Label

    from workstation.tui.screens.sampling import SamplingDialog, read_number

    assert (read_number("0,3", False, "."), read_number("0.3", False, "."), read_number("2.048", True, "."),
            read_number("2,048", True), read_number("-1", True)) == (0.3, 0.3, 2048, 2048, -1)
    # a whole number's thousands as the UI's language marks them: 1.500 in English is no 1500
    for typed, whole, thousands in (("2,5", True, "."), ("1.000,5", False, "."), ("1,2,3", False, ","),
                                    ("1.500", True, ","), ("2,048", True, ".")):
        with pytest.raises(ValueError):
            read_number(typed, whole, thousands)
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")  # (the dialog's words only)
    async with app.run_test(size=(120, 40)) as pilot:
        top_p = app.profile.sampling.top_p
        await pilot.press("ctrl+e")
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog))
        dialog = app.screen
        assert dialog.query_one("#s-top_p", Input).value == f"{top_p:g}".replace(".", ",")
        await pilot.resize_terminal(80, 24)  # each help whole, on two lines where it must ("daha yük…")
        await pilot.pause()
        for help_line in dialog.query(".sampling-help"):
            drawn = [line.text.rstrip() for line in help_line.render_lines(help_line.region.reset_offset)]
            assert " ".join(line.strip() for line in drawn if line.strip()) == str(help_line.render()), drawn
        await pilot.press("end", "ctrl+u", "9", "enter")  # what is wrong is in sight there too
        problem = dialog.query_one("#sampling-problem", Label)
        await until(pilot, lambda: problem.display)
        assert dialog.query_one("#sampling").region.contains_region(problem.region), problem.region
        await pilot.press("end", "ctrl+u", *"0,7")
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        await pilot.press("end", "ctrl+u", *"0,3", "down", "down", "end", "ctrl+u", *"2,5", "enter")
        problem = dialog.query_one("#sampling-problem", Label)
        assert problem.display and "'2,5'" in str(problem.render()), str(problem.render())
        await pilot.press("end", "ctrl+u", *"40", *["down"] * 5, "end", "ctrl+u", *"2.048", "enter")
        await until(pilot, lambda: not isinstance(app.screen, SamplingDialog))
        assert app.session_sampling is not None
        assert (app.session_sampling.temperature, app.session_sampling.max_tokens) == (0.3, 2048)
        said = [n.message for n in app._notifications if "Sıcaklık" in n.message]
        assert said and "Sıcaklık 0,3" in said[-1] and "En uzun yanıt 2.048" in said[-1], said
        await pilot.press("ctrl+e")  # the box shows it as the sentence did (it showed "2048")
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog))
        assert app.screen.query_one("#s-max_tokens", Input).value == "2.048"
        await pilot.press("escape")


async def test_alt_i_gives_a_conversation_its_own_instructions(profiles: Path) -> None:
    """One conversation in one word, or in Turkish, took a profile of its own (LM Studio has a
    system prompt per chat, Ollama ``/set system``). Alt+I's instructions are kept with the
    conversation, read in place of the profile's system prompt, and shown at the chat's top;
    given before the first message, they go with the conversation that message makes."""
    from textual.widgets import Static, TextArea

    from workstation.tui.screens.instructions import InstructionsDialog

    app = WorkstationApp("a", sample_system=False, language="en")

    def line() -> list[Static]:  # the instructions' line, as shown
        return [w for w in app.chat_screen.query("#instructions").results(Static) if w.display]

    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await pilot.press("alt+i")
        await until(pilot, lambda: isinstance(app.screen, InstructionsDialog))
        await pilot.press(*"Answer in one word.", "ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, InstructionsDialog) and bool(line()))
        assert str(line()[0].render()) == "Instructions (Alt+I): Answer in one word."
        await _send(pilot, app, "Name a colour.")
        await until(pilot, lambda: not app.generating)
        conv = app.store.get(app.conversation_id)  # type: ignore[arg-type]
        assert (conv.title, conv.instructions) == ("Name a colour.", "Answer in one word.")
        assert app.store.prompt_messages(conv.id)[0] == {"role": "system", "content": "Answer in one word."}
        assert line() and len(app.chat_screen.query("#instructions")) == 1  # still there, over the exchange
        # Esc leaves them as they were; another conversation has none; back, they are there
        await pilot.press("alt+i")
        await until(pilot, lambda: isinstance(app.screen, InstructionsDialog))
        assert app.screen.query_one("#instructions-text", TextArea).text == "Answer in one word."
        # Ctrl+Q (the one app key a dialog lets through) over what was typed there asks first:
        # it closed the dialog with the app, the text lost without a word; No leaves it as typed.
        # (Ctrl+L, the message box, is held back as the app's other keys are: the dialog stays)
        await pilot.press("ctrl+l", "x", "ctrl+q")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        assert app.screen.question == "What you typed in this window is not kept if you quit now. Quit?"  # type: ignore[attr-defined]
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, InstructionsDialog))
        assert app.screen.query_one("#instructions-text", TextArea).text == "Answer in one word.x"
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, InstructionsDialog))
        assert app.store.get(conv.id).instructions == "Answer in one word."
        await pilot.press("ctrl+n")
        await until(pilot, lambda: app.conversation_id is None and not line())
        await app.open_conversation(conv.id)
        await until(pilot, lambda: bool(line()))
        # emptied (Ctrl+R): the profile's system prompt again
        await pilot.press("alt+i")
        await until(pilot, lambda: isinstance(app.screen, InstructionsDialog))
        await pilot.press("ctrl+r", "ctrl+s")
        await until(pilot, lambda: not line())
        assert app.store.get(conv.id).instructions == ""
        assert app.store.prompt_messages(conv.id)[0]["role"] == "user"
        assert any("profile's system prompt again" in n.message for n in app._notifications)
        # deleted in another window while the dialog is open, its number another's by then
        # (SQLite gives it to the next one made): the instructions are not written into that one
        from workstation.core.store import ConversationStore

        mine = app.store.new("Mine")
        await app.open_conversation(mine.id)
        await pilot.press("alt+i")
        await until(pilot, lambda: isinstance(app.screen, InstructionsDialog))
        other = ConversationStore(app.store.path)
        other.delete(mine.id)
        theirs = other.new("Theirs")
        assert theirs.id == mine.id
        await pilot.press(*"Be brief.", "ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, InstructionsDialog))
        assert other.get(theirs.id).instructions == ""
        assert any("deleted in another window; its instructions were not kept" in n.message for n in app._notifications)
        # another window's delete seen as the app closes (a check that came during the quit drew
        # into a chat screen without its log: "No nodes match '#log'"): nothing is drawn then
        gone = app.store.new("Gone")
        await app.open_conversation(gone.id)
        other.delete(gone.id)
        app._running = False  # as App._shutdown leaves it before it takes the screens away
        try:
            await app._follow_outside_changes()
        finally:
            app._running = True
        assert app.conversation_id == gone.id


async def test_emptying_the_box_while_changing_the_last_message_keeps_it_being_changed(profiles: Path) -> None:
    """Up, then Ctrl+U (the app's "clear") to type the message anew: two first-time users in a row
    (ChatGPT's and LM Studio's habit) expected the text typed next to be the change, and it went
    as a new message at the end ("No longer changing your last message"). Emptied, the box still
    changes it (title and mark stay), said in one line; Up puts it back as it was (not the one
    before it), and Up again from there goes back; sending the empty box does nothing; Esc leaves
    it, with no "Ctrl+Z brings the text back" that would give it back as a new message."""
    from textual.widgets import Input

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        conv = app.store.new("Invoice")
        app.store.add_message(conv.id, "user", "Write to the client.")
        app.store.add_message(conv.id, "assistant", "Dear client, …")
        app.store.add_message(conv.id, "user", "Write to the bank.")
        app.store.add_message(conv.id, "assistant", "Dear bank, …")
        await app.open_conversation(conv.id)
        said = notices(app)
        prompt = app.chat_screen.query_one("#prompt", Input)
        app.chat_screen.focus_prompt()
        await pilot.press("up")
        await until(pilot, lambda: prompt.value == "Write to the bank." and app._editing is not None)
        editing = app._editing
        await pilot.press("ctrl+u")
        still = "Still changing your last message (Up puts it back as it was; Esc leaves it)."
        await until(pilot, lambda: still in said and prompt.value == "")
        assert app._editing == editing and prompt.border_title == app.texts("chat.editing_title")
        assert not any(text.startswith(("No longer changing", "The message box is empty")) for text in said)
        await pilot.press("enter")  # the empty box sent: nothing
        await pilot.pause()
        assert len(app.store.messages(conv.id)) == 4 and app._editing == editing
        await pilot.press(*"Write to the supplier.", "ctrl+u")  # typed, emptied again: still the same one
        await until(pilot, lambda: prompt.value == "")
        assert app._editing == editing and prompt.border_title == app.texts("chat.editing_title")
        await pilot.press("up")  # the emptying undone: the message back, not the one before it
        await until(pilot, lambda: prompt.value == "Write to the bank.")
        assert app._editing == editing
        await pilot.press("up")  # and from there, as it was put back, the one before it
        await until(pilot, lambda: prompt.value == "Write to the client." and app._editing_at is not None)
        # each letter deleted (no Ctrl+U): the same, the earlier one still marked in the chat
        await pilot.press(*["backspace"] * len("Write to the client."))
        await until(pilot, lambda: prompt.value == "")
        await pilot.pause()
        marked = [v.content for v in _views(app) if v.has_class("editing")]
        assert marked == ["Write to the client."] and str(prompt.border_title).startswith("changing your message 1 ")
        await pilot.press("down")  # Down too: the one emptied back, not the one after it
        await until(pilot, lambda: prompt.value == "Write to the client.")
        await pilot.press("ctrl+u")
        await until(pilot, lambda: "Still changing your message 1 (Up puts it back as it was; Esc leaves it)." in said)
        await pilot.press("escape")  # Esc leaves it, as before: nothing to bring back with Ctrl+Z
        await until(pilot, lambda: app._editing is None and said[-1].startswith("No longer changing that earlier message"))
        assert not said[-1].endswith(app.texts("chat.cleared")) and not prompt.border_title
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert prompt.value == "" and len(app.store.messages(conv.id)) == 4
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(80, 24)) as pilot:
        said = notices(app)
        await app.open_conversation(conv.id)
        app.chat_screen.focus_prompt()
        await pilot.press("up")
        await until(pilot, lambda: app._editing is not None)
        await pilot.press("ctrl+u")
        await until(pilot, lambda: "Son mesajınızı hâlâ değiştiriyorsunuz (Yukarı ok onu olduğu gibi geri getirir; Esc "
                    "bırakır)." in said)
        assert app._editing is not None and not any(text.startswith("Son mesajınızı artık") for text in said)


async def test_the_box_emptied_while_changing_the_last_message_sends_the_new_text_in_its_place(
        profiles: Path) -> None:
    """Up, Ctrl+U, the message typed anew, Enter: it replaces the last message (it went as a new
    one at the end, the last left as it was), the message as it was and its reply behind Alt+V."""

    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        conv, prompt = await _first_turn_back_in_the_box(pilot, app)
        await until(pilot, lambda: app._editing is not None)
        await pilot.press("ctrl+u", *"Good morning!", "enter")
        await until(pilot, lambda: not app.generating and not app._sending and len(app.store.messages(conv)) == 2
                    and app.store.messages(conv)[0].content == "Good morning!")
        assert [v.content for v in _views(app) if v.role == "user"] == ["Good morning!"]
        assert any(n.message.startswith("Your message as it was before you changed it, and its reply, are kept")
                   for n in app._notifications)
        await pilot.press("alt+v")
        await until(pilot, lambda: [v.content for v in _views(app) if v.role == "user"] == ["Hello!"])
        assert app.store.drafts().get(conv, ("", None))[0] == ""


async def test_the_box_emptied_while_changing_an_earlier_message_goes_on_in_a_new_conversation(
        profiles: Path) -> None:
    """Up, Up, Ctrl+U, the message typed anew, Enter: the conversation goes on from it in a new
    one, "(changed at message 1)", as a changed earlier message does (it went at the end of this
    one as a new message); this one stays as it was."""

    conv_id, kept = _budget_letter(profile="a")
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = await _opened_with_the_box(pilot, app, conv_id)
        await pilot.press("up", "up")
        await until(pilot, lambda: prompt.value == "Write a budget letter." and app._editing_at is not None)
        await pilot.press("ctrl+u", *"Write a sales letter.", "enter")
        await until(pilot, lambda: app.conversation_id != conv_id and not app.generating and not app._sending)
        new = app.store.get(app.conversation_id)  # type: ignore[arg-type]
        assert new.title == "Budget letter (changed at message 1)"
        assert [m.content for m in new.messages if m.role == "user"] == ["Write a sales letter."]
        assert [dataclasses.astuple(m) for m in app.store.messages(conv_id)] == kept


async def test_instructions_can_be_kept_for_every_new_conversation(profiles: Path) -> None:
    """A ChatGPT user's custom instructions: Alt+I gave them to one conversation only, and Ctrl+P
    "custom" or "instructions" found nothing else. Alt+I's "Use for new conversations too" keeps
    them (the store's app_state), Ctrl+N's new conversation starts with them, shown at its top, and
    Ctrl+P's "Instructions for new conversations" changes or empties them."""
    from textual.command import CommandList, CommandPalette
    from textual.widgets import Checkbox, Label, Static

    from workstation.tui.screens.instructions import NEW_INSTRUCTIONS_KEY, InstructionsDialog

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")

    def line() -> str:  # the instructions' line at the chat's top, as shown ('' none)
        shown = [w for w in app.chat_screen.query("#instructions").results(Static) if w.display]
        return str(shown[0].render()) if shown else ""

    async with app.run_test(size=(80, 24)) as pilot:
        conv = app.store.new("Budget")
        app.store.add_message(conv.id, "user", "Hello")
        await app.open_conversation(conv.id)
        await pilot.press("alt+i")
        await until(pilot, lambda: isinstance(app.screen, InstructionsDialog))
        assert app.screen.query_one(Checkbox).value is False  # (none kept yet)
        await pilot.press(*"Answer in Turkish.", "tab", "space", "ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, InstructionsDialog))
        assert app.store.get(conv.id).instructions == "Answer in Turkish."
        assert app.store.recalled(NEW_INSTRUCTIONS_KEY) == "Answer in Turkish."
        assert any(str(n.message) == "This conversation's replies follow its own instructions from now on. New "
                   "conversations start with these instructions too." for n in app._notifications)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: app.conversation_id is None and line() == "Instructions (Alt+I): Answer in Turkish.")
        assert app.instructions_now() == "Answer in Turkish."
        # Alt+I there: the choice ticked, as they are the kept ones
        await pilot.press("alt+i")
        await until(pilot, lambda: isinstance(app.screen, InstructionsDialog))
        assert app.screen.query_one(Checkbox).value is True
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        # Ctrl+P "custom": the command for new conversations' instructions; emptied there, none
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"custom")
        await until(pilot, lambda: any(str(o.prompt).startswith("Instructions for new conversations")
                                       for o in app.screen.query_one(CommandList).options))
        app.screen.query_one(CommandList).highlighted = next(
            i for i, o in enumerate(app.screen.query_one(CommandList).options)
            if str(o.prompt).startswith("Instructions for new conversations"))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, InstructionsDialog))
        assert str(app.screen.query_one(".dialog-title", Label).render()) == "Instructions for new conversations"
        assert not app.screen.query(Checkbox)
        await pilot.press("ctrl+r", "ctrl+s")
        await until(pilot, lambda: app.store.recalled(NEW_INSTRUCTIONS_KEY) is None and not line())
        assert app.store.get(conv.id).instructions == "Answer in Turkish."  # (the conversation's own stay)
        await app.open_conversation(conv.id)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: app.conversation_id is None)
        assert app.instructions_now() == "" and not line()
    # and in Turkish: "özel talimat" finds it
    from workstation.tui.palette import FoldedCommands

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(80, 24)) as pilot:
        said = [str(hit.match_display) async for hit in FoldedCommands(app.screen).search("özel talimat")]
        assert any(s.startswith("Yeni sohbetlerin talimatları") for s in said), said


async def test_keys_typed_fast_are_done_in_their_order(profiles: Path) -> None:
    """End, six Backspaces and "0,3" sent at once (tmux, a fast typist) left Ctrl+E's
    temperature at "0" or empty: Textual ran the box's Backspace and End only once the key had
    bubbled up to the app, after the characters behind them had gone in. The message box too."""
    from textual.widgets import Input

    from workstation.tui.screens.sampling import SamplingDialog

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("ctrl+e")
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog))
        box = app.screen.query_one("#s-temperature", Input)
        assert app.focused is box and box.value
        await press_at_once(pilot, "end", *["backspace"] * 6, *"0,3")
        assert box.value == "0,3"
        await press_at_once(pilot, "home", "delete", "delete", "delete", *"1,25", "left", "backspace", "right", "9")
        assert box.value == "1,59"
        # a key that moves the focus on (Tab, the dialog's Down) then keys for the next box: they
        # went on in the box they were sent to, the next box's binding run on its text (Ctrl+K
        # emptied Top-p, "0,9" went into the temperature)
        await press_at_once(pilot, "tab", "ctrl+a", "ctrl+k", *"0,9", "down", "end", "backspace", "5")
        top_p = app.screen.query_one("#s-top_p", Input)
        assert (box.value, top_p.value, app.screen.query_one("#s-top_k", Input).value) == ("1,59", "0,9", "45")
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        prompt = app.chat_screen.query_one("#prompt", Input)
        await pilot.click("#prompt")
        await press_at_once(pilot, *"Merhaba", *["backspace"] * 4, *"aba", "home", "delete", "M")
        assert prompt.value == "Meraba"


def test_ctrl_e_shows_a_setting_whole() -> None:
    """Ctrl+E showed 0.1234567 as 0.123457: Enter on the dialog left as it was changed the
    setting and turned "own sampling" on."""
    from workstation.tui.screens.sampling import shown

    for value in (0.1234567, 0.7, 1.0, 1e-06, 0.95):
        assert float(shown(value)) == value
    assert (shown(1.0), shown(40), shown(None)) == ("1", "40", "")


async def test_f8_on_a_desk_pc_says_what_the_server_keeps() -> None:
    """F8 said "This cannot be undone." on a desk PC too, where the office server's cache and
    audit trail keep what F8 cannot reach."""
    from workstation.core.profile_check import profile_from_dict

    desk = profile_from_dict({"name": "desk", "backend": "openai",
                              "remote": {"base_url": "http://192.0.2.7:8088/v1"}}, "<t>")
    app = WorkstationApp(desk, start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        conv = app.store.new("Payroll")
        await app.open_conversation(conv.id)
        await pilot.press("f8")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        assert app.screen.question == ('Delete this conversation? "Payroll": this cannot be undone. It is deleted '
                                       "from this PC; what the server at 192.0.2.7:8088 keeps of it (its cache, "
                                       "an audit trail) stays there.")
        await pilot.press("n")
        asked = app.store.new("How many invoices came?")  # its own question mark met the dialog's: '?"?'
        await app.open_conversation(asked.id)
        await pilot.press("f8")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        assert app.screen.question.startswith('Delete this conversation? "How many invoices came?": this cannot')
        await pilot.press("n")


async def test_f8_on_the_conversation_asked_of_a_summary_deletes_the_kept_summary(profiles: Path,
                                                                                 tmp_path: Path) -> None:
    """F6 keeps its last summary, and with it the document's text; F8 on the conversation Ctrl+K
    made of it left both in the file (and on F6 after a restart), with no way to delete them.
    One never asked about in the chat (a client's letter) stayed until another document was
    summarized: F8 on F6 deletes it, and the parts a stopped run kept of that document."""
    import json
    import sqlite3
    import time

    from textual.widgets import Input

    from workstation.core.kept_parts import parts_store
    from workstation.core.kept_summary import KEPT
    from workstation.tui.screens.summarize import SummarizeScreen

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        other = app.store.new("Other")
        asked = app.store.new("About payroll.pdf")
        kept = {"path": "/tmp/payroll.pdf", "at": 1.0, "asked": asked.id, "result": {"follow_up": "account 1234"}}
        app.store.remember(KEPT, json.dumps(kept))
        for conv, stays in ((other, True), (asked, False)):
            await app.open_conversation(conv.id)
            await delete_with_f8(pilot, app)
            await until(pilot, lambda conv=conv: conv.id not in [c.id for c in app.store.list()])
            assert (app.store.recalled(KEPT) is not None) == stays, conv.title

        letter = tmp_path / "letter.txt"
        letter.write_text("Dear Ms Quill, your balance QUILL-88 is due.")
        parts = parts_store(None)
        db = sqlite3.connect(parts)
        db.execute("INSERT INTO parts (path, version, start, end, reply, summary, kept_at) VALUES (?, 'v', 0, 9, ?, ?, ?)",
                   (str(letter.resolve()), "QUILL-88", "QUILL-88", time.time()))
        db.commit()
        db.close()
        result = {"source": str(letter), "summary": "Ms Quill owes QUILL-88.",
                  "follow_up": [{"role": "user", "content": "Dear Ms Quill, your balance QUILL-88 is due."}]}
        app.store.remember(KEPT, json.dumps({"path": str(letter), "at": 1.0, "asked": None, "result": result}))
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen) and app.screen.result is not None)
        screen = app.screen
        assert isinstance(screen, SummarizeScreen)
        await delete_with_f8(pilot, app)
        await until(pilot, lambda: app.store.recalled(KEPT) is None and screen.result is None)
        assert screen.query_one("#summarize-path", Input).value == "" and screen.summary == ""
        for file in (parts, parts.with_name(parts.name + "-wal")):
            assert not file.exists() or b"QUILL-88" not in file.read_bytes(), file
        assert letter.exists()  # the document itself stays


async def test_ask_again_change_the_last_message_and_a_message_too_long_comes_back(profiles: Path,
                                                                                      smollm2_path: Path) -> None:
    """There was no way to have a new reply (ChatGPT's regenerate), to change the message just
    sent, or to have back a message too long for the context: it stayed in the chat with no
    reply and the box was emptied. Alt+R asks again, Up in the empty box puts the last message
    back (taken back only once sent), and a message too long comes back into the box."""
    from textual.widgets import Input

    ctx = 256  # (a context filled with less reading: each token read costs the engine's CPU)
    _profile(profiles / "a.yaml", str(smollm2_path), context=ctx)
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        conv, _ = await _first_turn_answered(pilot, app)
        assert conv is not None
        first = app.store.messages(conv)
        prompt = app.chat_screen.query_one("#prompt", Input)
        app.chat_screen.set_input("half typed")
        await pilot.press("alt+r")  # a new reply to "Hello!", the one there replaced; the box left alone
        await until(pilot, lambda: not app.generating and [m.role for m in app.store.messages(conv)] == ["user", "assistant"]
                    and app.store.messages(conv)[1].created > first[1].created)
        assert [m.content for m in app.store.messages(conv)][0] == "Hello!" and prompt.value == "half typed"
        assert [v.role for v in _views(app)] == ["user", "assistant"]
        cut = app.store.messages(conv)[1]
        assert cut.metrics and cut.metrics["stop_reason"] == "length"  # 8 tokens at most
        # "length limit" under it named no way on: Alt+C is said
        # in words (it said "(8 tokens)": jargon), rounded as the app rounds words
        # (its own words counted: tokens said as words by the UI's language made an English reply of 920 words
        # "about 410" under Turkish)
        assert any(n.message == f"The reply stopped at its length limit (about {rounded_words(words_in(cut.content))} "
                   "words); Alt+C lets it go on." for n in app._notifications), [n.message for n in app._notifications]
        # and under it, where it stays once the notice faded ("· length limit" alone named no way on)
        assert "length limit · Alt+C goes on with it · reply 2 of 2 (Alt+V)" in _views(app)[-1]._metrics_text()
        await app.open_conversation(conv)  # drawn from the store (text with no Markdown: one plain widget)
        await until(pilot, lambda: len(_views(app)) == 2)
        reopened = _views(app)[-1]
        assert "length limit · Alt+C goes on with it" in reopened._metrics_text()  # (drawn from the store too)
        assert "Alt+C" not in _views(app)[0]._metrics_text()
        await pilot.press("alt+c")  # the reply goes on, in the same message
        await until(pilot, lambda: not app.generating and len(app.store.messages(conv)[1].content) > len(cut.content))
        went_on = app.store.messages(conv)
        # F5's live line counts the words this turn wrote, as its tokens (it counted the earlier part's words too)
        assert reopened.written() == (went_on[1].content[len(cut.content):], "") and reopened.content == went_on[1].content
        assert len(went_on) == 2 and went_on[1].content.startswith(cut.content) and went_on[1].id == cut.id
        assert _views(app)[-1].content == went_on[1].content and len(_views(app)) == 2
        assert _views(app)[-1].body.source == went_on[1].content  # all of it shown, once

        prompt.value = ""
        prompt.focus()
        await pilot.press("up")  # the last message back in the box; nothing taken back yet
        await until(pilot, lambda: prompt.value == "Hello!")
        assert prompt.border_title == "changing your last message (Esc for a new one)"  # (a toast went)
        await pilot.press("f9")  # in the language of now
        await until(pilot, lambda: prompt.border_title == "son mesajınızı değiştiriyorsunuz (yeni mesaj için Esc)")
        await pilot.press("f9")
        await until(pilot, lambda: str(prompt.border_title).startswith("changing your last message"))
        assert len(app.store.messages(conv)) == 2
        await pilot.press("alt+r")  # asked again meanwhile: what is in the box still goes in its place
        await until(pilot, lambda: not app.generating and len(app.store.messages(conv)) == 2)
        await pilot.press("end", *" there", "enter")  # sent in its place
        await until(pilot, lambda: not app.generating and len(app.store.messages(conv)) == 2
                    and app.store.messages(conv)[0].content == "Hello! there")
        assert [v.content for v in _views(app) if v.role == "user"] == ["Hello! there"]
        # the question as it was and its replies are behind Alt+V (they went for good), each
        # shown with the wording it answered; round to the changed one again
        assert any(n.message == "Your message as it was before you changed it, and its reply, are kept: Alt+V shows "
                   "them again." for n in app._notifications)
        edited = app.store.messages(conv)
        assert app.store.last_reply_versions(conv) == (4, 4)  # the first reply, the one gone on with, the last
        await pilot.press("alt+v")
        await until(pilot, lambda: [v.content for v in _views(app) if v.role == "user"] == ["Hello!"])
        assert app.store.messages(conv)[0].content == "Hello!" and app.store.last_reply_versions(conv) == (1, 4)
        assert app.store.messages(conv)[1].content == first[1].content  # the first reply it had
        assert app.store.prompt_messages(conv)[-2:] == [{"role": "user", "content": "Hello!"},
                                                         {"role": "assistant", "content": first[1].content}]
        await pilot.press("alt+v", "alt+v", "alt+v")
        await until(pilot, lambda: app.store.last_reply_versions(conv) == (4, 4))
        assert [(m.content) for m in app.store.messages(conv)] == [m.content for m in edited]
        await until(pilot, lambda: [v.content for v in _views(app) if v.role == "user"] == ["Hello! there"])
        await pilot.press("up", "escape")  # left: the box says it is a new message now
        await until(pilot, lambda: not prompt.border_title)
        await pilot.press(*"Thanks", "enter")  # a new message, the last one kept
        await until(pilot, lambda: not app.generating and len(app.store.messages(conv)) == 4)
        assert [m.content for m in app.store.messages(conv) if m.role == "user"] == ["Hello! there", "Thanks"]
        app.chat_screen.toggle_editor()  # Up in the empty multi-line editor too
        await pilot.press("up")
        await until(pilot, lambda: app.chat_screen.input_text() == "Thanks")
        await pilot.press("escape")  # (left: the one-line box again, and a new message)
        await until(pilot, lambda: prompt.has_focus and not prompt.border_title)

        # asked again and stopped (Esc) once it began: what arrived is kept as the new reply (Esc
        # "keeps what arrived"; it was dropped), the one there before behind Alt+V
        app.session_sampling = dataclasses.replace(app.profile.sampling, max_tokens=12)  # type: ignore[union-attr]
        await _send_text(pilot, app, "Write a long story about a cat.")
        await until(pilot, lambda: not app.generating)
        story = app.store.messages(conv)[-1]
        app.session_sampling = dataclasses.replace(app.profile.sampling, max_tokens=300)  # type: ignore[union-attr]
        await pilot.press("alt+r")  # (long enough to be stopped)
        await until(pilot, lambda: app.reply_view is not None and len(app.reply_view.content) > 10)
        await pilot.press("escape")
        await until(pilot, lambda: not app.generating)
        stopped = app.store.messages(conv)[-1]
        assert stopped.id != story.id and stopped.metrics and stopped.metrics["stop_reason"] == "cancelled"
        assert stopped.content.strip() and _views(app)[-1].content == stopped.content
        assert any(n.message == "Stopped: what arrived of the new reply is kept, and the earlier reply too: Alt+V "
                   "shows it again." for n in app._notifications)
        assert len(app.store.messages(conv)) == 6
        await pilot.press("alt+v")  # the earlier one, as it was
        await until(pilot, lambda: _views(app)[-1].content == story.content)
        assert app.store.messages(conv)[-1].content == story.content
        app.session_sampling = None

        long = "Read this list of office supplies and tell me what is missing. " + "stapler, paper, ink, " * 400
        app.chat_screen.set_input(long)
        await pilot.press("enter")
        await until(pilot, lambda: not app.generating and prompt.value == long)  # as typed
        assert len(app.store.messages(conv)) == 6  # not left in the chat unanswered
        assert [v.content for v in _views(app) if v.role == "user"] == ["Hello! there", "Thanks", "Write a long story about a cat."]
        assert any("cannot hold it" in n.message and "F6" in n.message for n in app._notifications)

        # how full the context is, under the box (it showed on F5 only), said before it is past full
        last = app.history.turns[-1]
        used = last.prompt_n + last.cache_n + last.predicted_n
        # in words, not tokens: how much more the conversation holds ("context 3% full (120 of 4,096 tokens)")
        assert prompt.border_subtitle == f"room for about {about_words(ctx - used)} more words in this conversation"
        # said in Turkish, in Turkish words: fewer for as many tokens (a Turkish word takes more of them)
        assert (about_words(4096), about_words(4096, Texts("tr").get), about_words(2, Texts("tr").get)) == ("3,100", "1,600", "0.8")
        english, app.texts = app.texts, Texts("tr")
        # (by the language's figure, or the model's own once its tokenizer is read: fewer either way)
        await until(pilot, lambda: app.words_basis() is not None)  # (the model's own, once its tokenizer is read)
        basis = app.words_basis()
        assert basis is not None
        words = app.texts.number(basis.count(ctx - used))
        # (and why fewer: SmolLM2's Turkish figure is under half its English one, ``costly``)
        assert basis.per_token <= 0.4 and basis.costly
        # this conversation is English: its room is said by English words in the Turkish line (it said the
        # Turkish figure, "…; Türkçe sözcük daha çok yer tutar", a third of the server's English words)
        assert app.context_fill_text() == f"bu sohbette yaklaşık {app.texts.number(about_words(ctx - used))} sözcüklük yer kaldı"
        assert int(words.replace(".", "")) < int(about_words(ctx - used).replace(",", ""))
        app.texts = english
        # a conversation grown past the context: its start left out, said once, and under the reply
        part = "The inventory lists desks, chairs, lamps and shelves on each floor. " * 6  # ~90 tokens
        fills = []
        for text in (part, part[: len(part) * 2 // 5], part):  # 76%, then past 85% (warned), then past full
            app.chat_screen.set_input(text)
            await pilot.press("enter")
            await until(pilot, lambda: not app.generating and not prompt.value)
            last = app.history.turns[-1]
            fills.append(round((last.prompt_n + last.cache_n + last.predicted_n) / ctx * 100))
            said = " words left, then it forgets the start" if fills[-1] >= 85 else " more words in this conversation"
            assert str(prompt.border_subtitle).endswith(said), (prompt.border_subtitle, fills)
            if fills[-1] >= 85:  # in Turkish, whose start is forgotten ("sonra başını unutur": its head)
                english, app.texts = app.texts, Texts("tr")
                assert app.context_fill_text().endswith(" sözcük kaldı, sonra ilk mesajlar unutulur")
                app.texts = english
        assert fills[0] < 85 <= fills[1], fills
        told = [n.message for n in app._notifications if f"longer than the model's context ({ctx} tokens)" in n.message]
        left_out = app.store.messages(conv)[-1].metrics["left_out_n"]  # type: ignore[index]
        assert len(told) == 1 and f"its first {left_out} messages were left out" in told[0], (told, fills)
        assert "(they stay saved)" in told[0] and "instructions (Alt+I)" in told[0]  # what to do of what it must keep
        assert left_out >= 4  # the four before the long ones, at least
        assert f"the model did not see the first {left_out} messages" in str(_views(app)[-1].query_one(".metrics").render())
        await pilot.press("ctrl+n")  # a new conversation: no figure of the last one's under its box
        await until(pilot, lambda: app.conversation_id is None and not prompt.border_subtitle)


async def test_a_changed_question_that_comes_back_brings_back_the_one_it_replaced(profiles: Path) -> None:
    """Up put the last question in the box; sent changed and too long for the context, the
    changed text came back into the box, but the question it was sent in place of and its
    replies (the one shown, and the one Alt+V went back to) were gone for good. They come back;
    the box's text still goes in their place once it is sent."""
    from textual.widgets import Input

    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        conv, _ = await _first_turn_answered(pilot, app)
        assert conv is not None
        first = app.store.messages(conv)
        await pilot.press("alt+r")  # a second reply: the first kept as an earlier one
        await until(pilot, lambda: not app.generating and app.store.messages(conv)[1].created > first[1].created)
        before = app.store.messages(conv)
        prompt = app.chat_screen.query_one("#prompt", Input)
        prompt.focus()
        await pilot.press("up")
        await until(pilot, lambda: prompt.value == "Hello!")
        long = "Hello! Which of these is missing? " + "stapler, paper, ink, " * 400
        app.chat_screen.set_input(long)
        await pilot.press("enter")
        await until(pilot, lambda: not app.generating and prompt.value == long)
        assert app.store.messages(conv) == before
        assert app.store.reply_versions(conv, before[0].id, before[1].id) == (2, 2)
        await until(pilot, lambda: [v.content for v in _views(app)] == [m.content for m in before])
        prompt.value = "Hello there!"  # shortened: sent in place of "Hello!", not after it
        await pilot.press("enter")
        await until(pilot, lambda: not app.generating and app.store.messages(conv)[0].content == "Hello there!")
        assert [m.role for m in app.store.messages(conv)] == ["user", "assistant"]


async def test_alt_v_back_to_the_question_before_it_was_changed_shows_that_questions_own_time(profiles: Path) -> None:
    """Up, the question changed and sent, then Alt+V back to the question as it was: its reply
    came back with its own time, but the question kept the changed one's, so it read as asked
    after its own reply (12:05 over a reply of 12:01). Each wording keeps its own time."""
    from textual.widgets import Input

    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        conv, _ = await _first_turn_answered(pilot, app)
        assert conv is not None
        first = app.store.messages(conv)
        prompt = app.chat_screen.query_one("#prompt", Input)
        prompt.focus()
        await pilot.press("up")
        await until(pilot, lambda: prompt.value == "Hello!")
        await pilot.press("end", *" there", "enter")
        await until(pilot, lambda: not app.generating and app.store.messages(conv)[0].content == "Hello! there")
        changed = app.store.messages(conv)
        assert changed[0].created > first[1].created
        await pilot.press("alt+v")
        await until(pilot, lambda: [v.content for v in _views(app) if v.role == "user"] == ["Hello!"])
        back = app.store.messages(conv)
        assert [m.created for m in back] == [m.created for m in first]  # each its own time, in order
        assert [v.created for v in _views(app)] == [m.created for m in first]
        await pilot.press("alt+v")  # and the changed one again, with its own
        await until(pilot, lambda: [v.content for v in _views(app) if v.role == "user"] == ["Hello! there"])
        assert [m.created for m in app.store.messages(conv)] == [m.created for m in changed]


async def test_up_again_for_an_earlier_message_says_there_is_none_or_that_it_was_changed(profiles: Path) -> None:
    """A ChatGPT user pressed Up again to change the message before the last (ChatGPT changes
    any of them): nothing happened, without a word. With none before it, that is said; a message
    changed in the box is not lost to Up, and that is said; the box keeps it."""
    from textual.widgets import Input

    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await _first_turn_answered(pilot, app)
        prompt = app.chat_screen.query_one("#prompt", Input)
        prompt.focus()
        await pilot.press("up")
        await until(pilot, lambda: prompt.value == "Hello!")
        await pilot.press("up")
        first = "This is your first message here; there is none before it to change."
        await until(pilot, lambda: any(n.message == first for n in app._notifications))
        assert prompt.value == "Hello!"
        await pilot.press("!", "up")
        only = "You have changed this message: press Enter to send it, or Esc to leave it, before you go to " \
               "another message."
        await until(pilot, lambda: any(n.message == only for n in app._notifications))
        assert prompt.value == "Hello!!"
        prompt.value = "Hello! and more"  # a box holding a new message (not Up's): Up says nothing of it
        await pilot.press("escape", *"Thanks")
        app.clear_notifications()
        await pilot.press("up")
        await pilot.pause()
        assert not any(n.message == only for n in app._notifications)


def _stored_exchanges(title: str, exchanges: list[tuple[str, str]], shown: dict[int, str] | None = None,
                      **settings: object) -> tuple[int, list[tuple[object, ...]]]:
    """A conversation written in the store directly (no model), opened at the next start: its
    number and its messages as kept. ``shown``: the user message of that index shown so (F6's
    document chat); ``settings``: ``ConversationStore.new``'s."""
    store = ConversationStore()
    conv = store.new(title, **settings)  # type: ignore[arg-type]
    for i, (asked, answered) in enumerate(exchanges):
        store.add_message(conv.id, "user", asked, shown=(shown or {}).get(i, ""))
        store.add_message(conv.id, "assistant", answered, {"predicted_n": 5, "stop_reason": "eos"})
    store.set_open(conv.id)
    kept = [dataclasses.astuple(m) for m in store.messages(conv.id)]
    store.close()
    return conv.id, kept


BUDGET_LETTER = [("Write a budget letter.", "Dear team, the budget."), ("Make it shorter.", "Dear team.")]


def _budget_letter(**settings: object) -> tuple[int, list[tuple[object, ...]]]:
    """The two-exchange "Budget letter" the earlier-message tests change, its replies 3 tokens."""
    return _stored_exchanges("Budget letter", BUDGET_LETTER, sampling={"max_tokens": 3}, **settings)


async def _opened_with_the_box(pilot, app: WorkstationApp, conv_id: int) -> Input:
    """Once the model is loaded and ``conv_id`` opened at the start: the message box, focused."""
    from textual.widgets import Input

    await until(pilot, lambda: app.engine is not None and app.conversation_id == conv_id)
    prompt = app.chat_screen.query_one("#prompt", Input)
    prompt.focus()
    return prompt


async def test_up_again_goes_back_to_an_earlier_message_and_sent_changed_goes_on_in_a_new_conversation(
        profiles: Path) -> None:
    """Up again put the message before the last in the box? It said only the last could be
    changed (ChatGPT and LM Studio change any). Now Up again goes back, marks the message in the
    chat, and sent changed, the conversation goes on from it in a new one; the old one stays."""

    conv_id, kept = _budget_letter(profile="a", instructions="Answer briefly.")
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        said = notices(app)
        prompt = await _opened_with_the_box(pilot, app, conv_id)
        await pilot.press("up")
        await until(pilot, lambda: prompt.value == "Make it shorter.")
        await pilot.press("up")
        await until(pilot, lambda: prompt.value == "Write a budget letter.")
        first = [v for v in _views(app) if v.role == "user"][0]
        assert [v for v in _views(app) if v.has_class("editing")] == [first]
        assert str(prompt.border_title).startswith("changing your message 1 ")
        assert said[-1].startswith("Your message 1 of 2 is in the box (marked in the chat). Enter sends it in a new "
                                   "conversation"), said
        await pilot.press(*" for March")
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation_id != conv_id and not app.generating and not app._sending)
        new = app.conversation_id
        assert new is not None
        conv = app.store.get(new)
        assert conv.title == "Budget letter (changed at message 1)"
        assert (conv.instructions, conv.sampling, conv.profile) == ("Answer briefly.", {"max_tokens": 3}, "a")
        assert [m.role for m in conv.messages] == ["user", "assistant"]
        assert conv.messages[0].content == "Write a budget letter. for March" and conv.messages[1].content.strip()
        assert (conv.messages[1].metrics or {}).get("predicted_n", 0) <= 3  # (the conversation's own settings)
        assert [dataclasses.astuple(m) for m in app.store.messages(conv_id)] == kept  # the old one as it was
        assert "Continued in a new conversation from your changed message; the earlier one is kept as it was." in said
        assert {c.id for c in app.store.list()} >= {conv_id, new}
        await until(pilot, lambda: {conv_id, new} <= {i.conversation_id for i in app.chat_screen.sidebar.query(
            "ConversationItem")})
        assert not [v for v in _views(app) if v.has_class("editing")]


async def test_up_and_down_go_through_the_messages_and_esc_leaves_all_as_it_was(profiles: Path) -> None:
    """Up again goes back to the first message (F6's document message passed over), Down forward
    to the last; a changed message is not lost to Up; Esc or an emptied box leave everything as it
    was, the mark gone. Without a model: nothing is sent."""
    from textual.widgets import Input

    conv_id, kept = _stored_exchanges("Plans", [("One?", "1."), ("[document] Two", "2."), ("Three?", "3.")],
                                      shown={1: "Summary of report.pdf"})
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        said = notices(app)
        await until(pilot, lambda: app.conversation_id == conv_id and len(_views(app)) == 6)
        prompt = app.chat_screen.query_one("#prompt", Input)
        prompt.focus()

        def marked() -> list[str]:
            return [v.content for v in _views(app) if v.has_class("editing")]

        await pilot.press("up")
        await until(pilot, lambda: prompt.value == "Three?")
        assert marked() == []  # (the last: in its place, as before)
        await pilot.press("up")  # F6's document message passed over
        await until(pilot, lambda: prompt.value == "One?")
        assert marked() == ["One?"] and said[-1].startswith("Your message 1 of 3 is in the box")
        await pilot.press("up")
        await until(pilot, lambda: said[-1] == "This is your first message here; there is none before it to change.")
        await pilot.press("down")
        await until(pilot, lambda: prompt.value == "Three?")
        assert marked() == [] and said[-1].startswith("Your last message is back in the box")
        await pilot.press("up", "x", "up")  # changed: Up keeps the change, and says why
        await until(pilot, lambda: said[-1].startswith("You have changed this message: press Enter to send it"))
        assert prompt.value == "One?x" and marked() == ["One?"]
        await pilot.press("backspace", "escape")  # Esc: nothing changed, nothing marked
        await until(pilot, lambda: app._editing is None and prompt.value == "")
        assert marked() == [] and said[-1].startswith("No longer changing that earlier message")
        await pilot.press("up", "up", "ctrl+u")  # the box emptied: still changing it (typed anew), Esc leaves it
        await until(pilot, lambda: prompt.value == "" and marked() == ["One?"])
        await pilot.press("escape")
        await until(pilot, lambda: app._editing is None and marked() == [])
        assert prompt.border_title in ("", None)
        assert [dataclasses.astuple(m) for m in app.store.messages(conv_id)] == kept
        assert [c.id for c in app.store.list()] == [conv_id]
    tr = Texts("tr")  # (the Turkish of what it says: rendered, as the app would)
    assert tr("conv.changed_title", title="Bütçe mektubu", n="3") == "Bütçe mektubu (3. mesajda değiştirildi)"
    assert tr("chat.editing_earlier", n="1", total="3", send="Enter", up="Yukarı ok", down="Aşağı ok").startswith(
        "3 mesajınızdan 1. mesaj kutuda (sohbette işaretli).")
    assert tr("chat.went_on_in_new").startswith("Değiştirdiğiniz mesajdan yeni bir sohbette devam edildi")


async def test_a_notice_gone_gives_the_chat_its_last_lines_back(profiles: Path) -> None:
    """Up again to an earlier message, Esc: once the notices' time was up (or one was clicked
    away) the rows over the message box stayed blank, a reply's last lines not drawn after a
    PgUp, until a restart: Textual's expired toast forgets its notice without drawing the rack of
    notices again, which stayed shown with none in it, and the chat kept its lines clear of it."""
    from textual.widgets import Input
    from textual.widgets._toast import Toast, ToastRack

    _stored_exchanges("Letter", [("Hello?", "I am a model."), ("Two?", "Two.\n\nTwo again."),
                                 ("Who is it to?", "Birlik AS."), ("One word?", "Birlik.\n\nThat is all.")])
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(110, 32), notifications=True) as pilot:
        await until(pilot, lambda: app.conversation_id is not None and len(_views(app)) == 8)
        prompt = app.chat_screen.query_one("#prompt", Input)
        prompt.focus()
        log, composer = app.chat_screen.log_view, app.chat_screen.query_one("#composer")
        await pilot.press("up", "up", "escape")
        await until(pilot, lambda: app._editing is None and bool(app.chat_screen.query(Toast)))
        await until(pilot, lambda: log.region.bottom < composer.region.y)  # (kept clear of the notice)
        while toasts := list(app.chat_screen.query(Toast)):
            await pilot.click(toasts[0])  # (as its time running out does: Toast._expire)
            await pilot.pause()
        for _ in range(3):
            await pilot.pause()
        await pilot.press("pageup")
        await pilot.pause()
        assert log.region.bottom == composer.region.y, (log.region, composer.region)
        above_box = app.chat_screen.get_widget_at(log.region.x + 2, composer.region.y - 1)[0]
        assert not isinstance(above_box, ToastRack) and log in above_box.ancestors_with_self


@pytest.mark.parametrize("language", ["en", "tr"])
async def test_down_on_the_last_says_so_esc_says_ctrl_z_and_the_box_title_fits_80_columns(
        profiles: Path, language: str) -> None:
    """Down on the last message (Up put it in the box) did nothing and said nothing, as Up past
    the first says there is none before it; Esc on a typed change emptied the box and did not say
    that Ctrl+Z brings it back; the box's title for an earlier message was cut at 80 columns
    ("(sent, it goes on in a new …"; Turkish cut at 110)."""
    from textual.widgets import Input

    _stored_exchanges("Plans", [("One?", "1."), ("Two?", "2."), ("Three?", "3.")])
    app = WorkstationApp("a", start_engine=False, sample_system=False, language=language)
    async with app.run_test(size=(80, 24)) as pilot:
        said = notices(app)
        await until(pilot, lambda: app.conversation_id is not None and len(_views(app)) == 6)
        prompt = app.chat_screen.query_one("#prompt", Input)
        prompt.focus()
        await pilot.press("up", "up")
        await until(pilot, lambda: prompt.value == "Two?")
        title = str(prompt.border_title)
        assert title == app.texts("chat.editing_earlier_title", n="2")
        await pilot.pause()
        assert title in app.export_screenshot().replace("&#160;", " "), title  # whole, not cut with "…"
        await pilot.press("down")
        await until(pilot, lambda: prompt.value == "Three?")
        await pilot.press("down")
        await until(pilot, lambda: said[-1] == app.texts("chat.editing_last_one"))
        assert prompt.value == "Three?"
        await pilot.press("up", "x", "escape")  # a change typed, Esc: said that Ctrl+Z brings it back
        await until(pilot, lambda: app._editing is None and prompt.value == "")
        assert said[-1].endswith(app.texts("chat.cleared")), said[-1]
        await pilot.press("ctrl+z")
        assert prompt.value == "Two?x"
    assert Texts("en")("chat.editing_last_one") == "This is your last message here; there is none after it to change."


async def test_a_changed_earlier_message_goes_to_its_copy_only_whatever_happens_meanwhile(profiles: Path) -> None:
    """A changed earlier message sent (Up, Up): the original conversation's turn, held by another
    window writing a reply there, refused it ("answering elsewhere"), though nothing is written
    there; and a conversation opened while the copy was drawn, before the box was emptied (a
    sidebar click, Ctrl+F), kept the sent text as a draft and got the message. Now the one opened
    then is refused as busy and gets nothing; the message goes in the copy."""
    import subprocess
    import sys

    from textual.widgets import Input

    other_id, other_kept = _stored_exchanges("Holiday plan", [("Where to?", "The sea.")])
    conv_id, kept = _budget_letter()
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        said = notices(app)
        await until(pilot, lambda: app.engine is not None and app.conversation_id == conv_id)
        holder = subprocess.Popen(  # another window, writing a reply in the original now
            [sys.executable, "-c", "import sys; from pathlib import Path; from workstation.core.turn_lock import "
             "claim_turn; print(claim_turn(Path(sys.argv[1]), int(sys.argv[2])), flush=True); sys.stdin.read()",
             str(app.store.path), str(conv_id)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
            prompt = app.chat_screen.query_one("#prompt", Input)
            prompt.focus()
            await pilot.press("up", "up")
            await until(pilot, lambda: prompt.value == "Write a budget letter.")
            await pilot.press(*" for March")
            drawing, go_on = asyncio.Event(), asyncio.Event()
            show = app.chat_screen.show_messages

            async def held(*args: object, **kwargs: object) -> None:  # the copy drawn: held there a while
                if not drawing.is_set():
                    drawing.set()
                    await go_on.wait()
                await show(*args, **kwargs)  # type: ignore[arg-type]

            app.chat_screen.show_messages = held  # type: ignore[method-assign]
            await pilot.press("enter")
            await until(pilot, drawing.is_set, what=f"the copy is drawn: {said}")
            await app.open_conversation(other_id)  # (a click in the list, meanwhile)
            go_on.set()
            await until(pilot, lambda: not app.generating and not app._sending)
        finally:
            holder.kill()
            holder.wait()
        copy = app.conversation_id
        assert copy not in (None, conv_id, other_id) and "A reply is still being written; wait for it or press Esc." in said
        assert [m.content for m in app.store.messages(copy)][0] == "Write a budget letter. for March"
        assert [dataclasses.astuple(m) for m in app.store.messages(other_id)] == other_kept  # nothing there
        assert [dataclasses.astuple(m) for m in app.store.messages(conv_id)] == kept
        assert not any(text.strip() for text, _ in app.store.drafts().values()), app.store.drafts()  # sent: no draft
        assert prompt.value == "" and not any("writing a reply" in s for s in said), said


async def test_an_earlier_message_gone_on_from_twice_gets_a_title_of_its_own_and_the_box_toast_goes(
        profiles: Path) -> None:
    """Changed at message 2 twice, both copies were "X (changed at message 2)" (`chat -c` reached
    only the newest), a copy of a copy "X (changed at message 2) (changed at message 1)", and the
    "Your message 2 of 3 is in the box … press Enter" toast stayed above "Continued in a new
    conversation". Without a model: the copy is made as Enter makes it."""
    from textual.widgets import Input

    from workstation.tui.last_exchange import root_title

    conv_id, _ = _stored_exchanges("Plans", [("One?", "1."), ("Two?", "2."), ("Three?", "3.")])
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.conversation_id == conv_id and len(_views(app)) == 6)
        prompt = app.chat_screen.query_one("#prompt", Input)
        prompt.focus()
        await pilot.press("up", "up")
        await until(pilot, lambda: prompt.value == "Two?")

        def toasts() -> list[str]:
            return [str(n.message) for n in app._notifications]

        assert any(t.startswith("Your message 2 of 3 is in the box") for t in toasts())
        second = app.store.messages(conv_id)[2]
        await app._go_on_from_earlier(second)
        await pilot.pause()
        assert not any(t.startswith("Your message 2 of 3 is in the box") for t in toasts()), toasts()
        assert any(t.startswith("Continued in a new conversation") for t in toasts())
        first_copy = app.conversation_id
        await app.open_conversation(conv_id)
        await app._go_on_from_earlier(second)
        again = app.conversation_id
        copy_of_copy = app.store.messages(again)  # (message 1 of the copy changed)
        await app._go_on_from_earlier(copy_of_copy[0])
        titles = [app.store.get(c, with_messages=False).title for c in (first_copy, again, app.conversation_id)]
        assert titles == ["Plans (changed at message 2)", "Plans (changed at message 2, copy 2)",
                          "Plans (changed at message 1)"], titles
    assert root_title("Bütçe (3. mesajda değiştirildi, 2. kopya)") == "Bütçe"  # (Turkish, and one named so by hand)
    assert root_title("(changed at message 2)") == "(changed at message 2)"


async def test_an_earlier_message_put_in_the_box_unchanged_leaves_no_draft(profiles: Path) -> None:
    """Up, Up (message 2 in the box, unchanged), then Ctrl+N: the conversation kept it as a draft,
    "not sent: Two?" in the list, and after a restart Enter sent it again as a new message at the
    end. As Up put it, it is no draft; changed, it is kept (nothing typed is lost)."""
    from textual.widgets import Input

    conv_id, _ = _stored_exchanges("Plans", [("One?", "1."), ("Two?", "2."), ("Three?", "3.")])
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.conversation_id == conv_id and len(_views(app)) == 6)
        prompt = app.chat_screen.query_one("#prompt", Input)
        for keys, kept in ((("up", "up"), ""), (("up",), ""), (("up", "up", "x"), "Two?x")):
            prompt.focus()
            await pilot.press(*keys)
            await until(pilot, lambda: prompt.value.startswith(("Two?", "Three?")) and app._editing is not None)
            await pilot.press("ctrl+n")
            await until(pilot, lambda: app.conversation_id is None)
            assert app.store.drafts().get(conv_id, ("", None))[0] == kept, (keys, app.store.drafts())
            await app.open_conversation(conv_id)
            assert prompt.value == kept, keys
            if kept:
                await pilot.press("escape")
                await until(pilot, lambda: prompt.value == "" and app._editing is None)


@pytest.mark.parametrize(("language", "size"), [("en", (80, 24)), ("tr", (110, 32))])
async def test_a_copy_of_an_earlier_message_is_told_apart_from_its_original_in_the_list(
        profiles: Path, language: str, size: tuple[int, int]) -> None:
    """The sidebar cut long titles: "Write a two-line note to staff… (changed at …" and its original
    "Write a two-line note to staff…" looked alike. A copy's line starts with a mark and the message
    it went on from; its title stays whole everywhere else."""
    long = "Write a two-line note to staff about the new printer"
    conv_id, _ = _stored_exchanges(long, [(long, "Room 2."), ("Shorter?", "Room 2."), ("Thanks", "Welcome.")])
    app = WorkstationApp("a", start_engine=False, sample_system=False, language=language)
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.conversation_id == conv_id and len(_views(app)) == 6)
        await app._go_on_from_earlier(app.store.messages(conv_id)[2])
        await app.refresh_sidebar()  # (as the reply sent there does)
        copy = app.conversation_id
        assert app.store.get(copy, with_messages=False).title == app.texts("conv.changed_title", title=long, n="2")

        def lines() -> dict[int | None, str]:
            return {item.conversation_id: item.query_one("TitleLabel").render().plain
                    for item in app.chat_screen.sidebar.query("ConversationItem")}

        await until(pilot, lambda: set(lines()) == {conv_id, copy}, steps=100)
        await pilot.pause()
        shown = lines()
        assert shown[copy].startswith(app.texts("sidebar.changed_at", n="2", title="").strip()), shown
        assert shown[copy] != shown[conv_id] and not shown[conv_id].startswith("✎"), shown


async def test_an_earlier_message_sent_unchanged_is_asked_again_and_titled_so(profiles: Path) -> None:
    """Up, Up, Enter (message 1 sent as it was): it went on in a new conversation titled "(changed at
    message 1)", though nothing was changed. As ChatGPT's regenerate of an earlier message, the model
    is asked again from there, in a new conversation titled "(again from message 1)"."""

    from workstation.tui.last_exchange import root_title

    conv_id, kept = _budget_letter()
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        said = notices(app)
        prompt = await _opened_with_the_box(pilot, app, conv_id)
        await pilot.press("up", "up")
        await until(pilot, lambda: prompt.value == "Write a budget letter.")
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation_id != conv_id and not app.generating and not app._sending)
        conv = app.store.get(app.conversation_id)
        assert conv.title == "Budget letter (again from message 1)"
        assert [m.content for m in conv.messages][0] == "Write a budget letter." and len(conv.messages) == 2
        assert [dataclasses.astuple(m) for m in app.store.messages(conv_id)] == kept
        assert "Asked again from your message 1 in a new conversation; the earlier one is kept as it was." in said
    assert root_title("Bütçe (2. mesajdan yeniden, 3. kopya)") == "Bütçe"
    assert Texts("tr")("conv.again_title", title="Bütçe", n="2") == "Bütçe (2. mesajdan yeniden)"


@pytest.mark.parametrize("size", [(80, 24), (110, 32)])
async def test_the_notice_of_an_earlier_message_in_the_box_leaves_it_in_sight(
        profiles: Path, size: tuple[int, int]) -> None:
    """Up, Up: the notice ("Your message 2 of 3 is in the box …") was 5 rows, and the chat kept
    2 or 3 more clear under it: the first Up's notice, given way to it, left its empty holder in
    the rack. It is 3 rows at most, nothing more is kept clear, and the marked message is seen whole."""
    from textual.widgets._toast import ToastRack

    two = "Please write the budget letter for March to the whole team, with the sales office's figures."
    _stored_exchanges("Plans", [("One?", "1."), (two, "2."), ("Three?", "3.")])
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=size, notifications=True) as pilot:
        await until(pilot, lambda: app.conversation_id is not None and len(_views(app)) == 6)
        app.chat_screen.focus_prompt()
        await pilot.press("up", "up")
        await until(pilot, lambda: app._editing_at is not None and bool(app.chat_screen.query(ToastRack)))
        log, rack = app.chat_screen.log_view, app.chat_screen.query_one(ToastRack)
        await until(pilot, lambda: log.styles.margin.bottom == rack.region.height > 0)
        for _ in range(3):
            await pilot.pause()
        marked = next(v for v in _views(app) if v.has_class("editing"))
        toasts = [t.region.height for t in rack.query("Toast")]
        assert len(toasts) == 1 and toasts[0] <= 3, toasts  # (the first Up's notice gone, with its holder)
        assert rack.region.height == toasts[0] + 1, rack.region  # (and its blank row above: no more kept clear)
        assert log.region.y <= marked.region.y and marked.region.bottom <= log.region.bottom, (marked.region, log.region)


async def test_esc_in_the_multi_line_editor_leaves_an_earlier_message_as_the_one_line_box_does(
        profiles: Path) -> None:
    """Up, Up put a message of two lines in the multi-line editor; Esc emptied it and left the empty
    editor open (the one-line box's Esc empties it and says Ctrl+Z brings the text back). Now Esc
    leaves it the same way: the one-line box back, empty, and Ctrl+Z brings the text back."""
    from textual.widgets import Input, TextArea

    conv_id, kept = _stored_exchanges("Plans", [("One?", "1."), ("Two\nlines?", "2."), ("Three?", "3.")])
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        said = notices(app)
        await until(pilot, lambda: app.conversation_id == conv_id and len(_views(app)) == 6)
        prompt, editor = app.chat_screen.query_one("#prompt", Input), app.chat_screen.query_one("#editor", TextArea)
        prompt.focus()
        await pilot.press("up", "up")
        await until(pilot, lambda: editor.display and editor.text == "Two\nlines?")
        await pilot.press("!", "escape")
        await until(pilot, lambda: app._editing is None and not editor.display, steps=100)
        assert prompt.display and prompt.has_focus and prompt.value == "" and editor.text == ""
        assert said[-1].startswith("No longer changing that earlier message") and \
            said[-1].endswith(app.texts("chat.cleared")), said[-1]
        await pilot.press("ctrl+z")
        await until(pilot, lambda: editor.display and editor.text == "Two\nlines?!")
        assert [dataclasses.astuple(m) for m in app.store.messages(conv_id)] == kept


async def test_alt_v_and_alt_c_in_an_empty_conversation_say_there_is_no_reply(profiles: Path) -> None:
    """In a new conversation Alt+V said "This reply has no other one yet" and Alt+C "The last
    message here is not a reply to go on with": there was neither."""
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        none_yet = "There is no reply here yet: send a message first."
        for key in ("alt+v", "alt+c"):
            await pilot.press(key)
            await until(pilot, lambda: any(n.message == none_yet for n in app._notifications))
            app.clear_notifications()
        # the same notice again while it is shown takes its place: one toast, not a stack of the same
        await pilot.press("alt+v", "alt+c", "alt+v")
        await until(pilot, lambda: any(n.message == none_yet for n in app._notifications))
        await pilot.pause()
        assert [n.message for n in app._notifications] == [none_yet]


async def test_alt_v_goes_back_to_the_reply_asked_again(profiles: Path) -> None:
    """Alt+R threw the reply it replaced away for good (ChatGPT keeps it: "< 1/2 >"). It is kept:
    Alt+V puts it back in the chat and in what the next turn reads, and again the newer one."""
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        conv, _ = await _first_turn_answered(pilot, app)
        assert conv is not None
        first = app.store.messages(conv)[-1]
        await pilot.press("alt+v")  # nothing earlier yet: said
        await until(pilot, lambda: any("has no other one yet: Alt+R asks again" in n.message
                                       for n in app._notifications))
        app.session_sampling = dataclasses.replace(app.profile.sampling, max_tokens=2)  # type: ignore[union-attr]
        await pilot.press("alt+r")  # a shorter reply, so the two are told apart
        await until(pilot, lambda: not app.generating and app.store.messages(conv)[-1].content != first.content)
        second = app.store.messages(conv)[-1]
        assert any(n.message == "The earlier reply is kept: Alt+V shows it again." for n in app._notifications)
        assert len(app.store.messages(conv)) == 2
        figures = lambda: str(_views(app)[-1].query_one(".metrics").render())  # noqa: E731
        assert figures().endswith(" · reply 2 of 2 (Alt+V)"), figures()  # seen, not only found by pressing it
        await pilot.press("alt+v")
        await until(pilot, lambda: _views(app)[-1].content == first.content)
        await until(pilot, lambda: figures().endswith(" · reply 1 of 2 (Alt+V)"))
        assert app.store.messages(conv)[-1].content == first.content and len(app.store.messages(conv)) == 2
        assert app.store.prompt_messages(conv)[-1]["content"] == first.content  # what the next turn reads
        assert any(n.message.startswith("Reply 1 of 2 (Alt+V: the next one).") for n in app._notifications)
        await pilot.press("alt+v")
        await until(pilot, lambda: _views(app)[-1].content == second.content)
        await app.open_conversation(conv)  # opened again: said still
        await until(pilot, lambda: figures().endswith(" · reply 2 of 2 (Alt+V)"))
        await pilot.press("f9")  # in the language of the moment (it stayed English)
        await until(pilot, lambda: figures().endswith(" · yanıt 2/2 (Alt+V)"))
        await pilot.press("f9")
        await until(pilot, lambda: figures().endswith(" · reply 2 of 2 (Alt+V)"))
        await type_message(pilot, "Thanks.")  # a new question: the earlier reply's versions are Alt+V's no more
        await until(pilot, lambda: not app.generating and len(app.store.messages(conv)) == 4)
        assert not any("reply 2 of 2" in str(v.query_one(".metrics").render()) for v in _views(app) if v.role == "assistant")
        await pilot.press("f1")  # listed with the chat's keys
        await until(pilot, lambda: isinstance(app.screen, KeysDialog))
        assert dict((key, name) for key, name, _ in app.screen.rows)["Alt+V"] == "Other reply"


async def test_alt_c_on_a_reply_the_model_ended_says_it_is_complete(profiles: Path) -> None:
    """Alt+C on a reply that had ended (the model's end, not a limit) did nothing and said nothing."""
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        conv = app.store.new("Greeting", "a")
        app.store.add_message(conv.id, "user", "Say hello.")
        app.store.add_message(conv.id, "assistant", "Hello! How can I help?", {"stop_reason": "eos", "predicted_n": 7})
        await app.open_conversation(conv.id)
        await until(pilot, lambda: len(_views(app)) == 2)
        await pilot.press("alt+c")
        await until(pilot, lambda: any(n.message.startswith("The last reply is complete") for n in app._notifications))
        assert not app.generating and app.store.messages(conv.id)[-1].content == "Hello! How can I help?"


async def test_the_last_message_being_changed_is_still_changed_after_another_conversation(profiles: Path) -> None:
    """Up put the last message back in the box; opening another conversation and coming back
    brought the text back (the draft) but not the change: Enter then sent it as a new message
    under the old one."""

    app = WorkstationApp("a", sample_system=False, language="en")
    said = notices(app)  # (the second takes the first's place on screen: counted as said)
    async with app.run_test(size=(100, 30)) as pilot:
        conv, prompt = await _first_turn_back_in_the_box(pilot, app)
        await pilot.press("end", *" there")
        await pilot.press("ctrl+n")  # another conversation, then back
        await until(pilot, lambda: app.conversation_id is None and prompt.value == "")
        await app.open_conversation(conv)
        await until(pilot, lambda: prompt.value == "Hello! there")
        told = [m for m in said if m.startswith("Your last message is back in the box")]
        assert len(told) == 2  # when Up put it back, and again on coming back to it
        prompt.focus()
        await pilot.press("enter")  # sent in its place
        await until(pilot, lambda: not app.generating and app.store.messages(conv)[0].content == "Hello! there")
        assert [m.role for m in app.store.messages(conv)] == ["user", "assistant"]
        # a draft that is not the last message being changed stays a new message
        app.chat_screen.set_input("Thanks")
        await pilot.press("ctrl+n")
        await until(pilot, lambda: app.conversation_id is None)
        await app.open_conversation(conv)
        await until(pilot, lambda: prompt.value == "Thanks")
        prompt.focus()
        await pilot.press("enter")
        await until(pilot, lambda: not app.generating and len(app.store.messages(conv)) == 4)


async def test_up_on_a_message_sent_with_a_document_attaches_it_again(profiles: Path, tmp_path: Path) -> None:
    """Up on a message sent with a document put the whole document in the box, after the
    question and a "---" line; sent again, it went with it as typed text. The box now gets the
    question, and the document is attached again as it was sent, in whichever language."""
    from textual.widgets import Input

    memo = "Meeting at ten in room 4.\n\n---\nNot a label: the memo's own rule."
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        prompt = app.chat_screen.query_one("#prompt", Input)
        app._attach_document((Path("/docs/memo.txt"), memo))
        app.chat_screen.set_input("When is the meeting?")
        prompt.focus()
        await pilot.press("enter")
        await until(pilot, lambda: not app.generating and app.conversation_id is not None
                    and len(app.store.messages(app.conversation_id)) == 2)
        conv = app.conversation_id
        assert app.pending_document is None
        await pilot.press("f9")  # sent in English, put back in Turkish
        await until(pilot, lambda: app.texts.lang == "tr")
        prompt.focus()
        await pilot.press("up")
        await until(pilot, lambda: prompt.value == "When is the meeting?")
        assert app.pending_document is not None and app.pending_document[0].name == "memo.txt"
        assert app.pending_document[1] == memo
        # emptied, the box still changes the last message: the document Up attached stays with it, kept
        # as no draft (sent alone after a restart), not sent alone by Enter; Esc takes it off with the message
        await pilot.press("ctrl+u")
        await until(pilot, lambda: prompt.value == "")
        assert app.pending_document is not None and app._editing is not None and app.save_draft() is None
        said = notices(app)
        await pilot.press("enter")  # (it did nothing and said nothing)
        await until(pilot, lambda: any(text.startswith("Son mesajınızı hâlâ değiştiriyorsunuz") for text in said))
        assert len(app.store.messages(conv)) == 2 and app.pending_document is not None
        await pilot.press("escape")
        await until(pilot, lambda: app.pending_document is None and app._editing is None)
        await pilot.press("up")
        await until(pilot, lambda: prompt.value == "When is the meeting?" and app.pending_document is not None)
        await pilot.press("end", *" Which room?", "enter")  # sent in its place, the document with it
        await until(pilot, lambda: not app.generating and app.store.messages(conv)[0].content.startswith(
            "When is the meeting? Which room?"))
        sent = app.store.messages(conv)
        assert len(sent) == 2 and sent[0].content.endswith(memo) and sent[0].content.count(memo) == 1
        assert "Belge: memo.txt" in sent[0].content
        # a document sent with no words: the box stays empty, the document attached again
        app._attach_document((Path("/docs/memo.txt"), memo))
        await pilot.press("enter")
        await until(pilot, lambda: not app.generating and len(app.store.messages(conv)) == 4)
        assert app.pending_document is None
        prompt.focus()
        await pilot.press("up")
        await until(pilot, lambda: app.pending_document is not None and app.finding_attached is None)
        assert prompt.value == "" and app.pending_document[1] == memo
        # a document attached for the next message stays: Up does not replace it with the last one's
        app.chat_screen.clear_input()
        app._editing = None
        app._attach_document((Path("/docs/minutes.txt"), "Minutes of Monday."))
        prompt.focus()
        await pilot.press("up")
        await pilot.pause()
        assert app.pending_document == (Path("/docs/minutes.txt"), "Minutes of Monday.") and prompt.value == ""
        # asked for a total of an attached table: the program's own figure under the model's reply (a
        # small model answered the average, and nothing pointed to the counted total), in the UI's language
        from textual.widgets import Static

        from workstation.tui import integrations
        from workstation.tui.messages import DocumentRead

        sales = tmp_path / "sales.csv"
        sales.write_text("Month,Revenue\nJan,1200.5\nFeb,2500\nMar,4154.5\n", encoding="utf-8")
        app.post_message(DocumentRead(str(sales), *integrations.read_document_text(sales)))
        await until(pilot, lambda: app.pending_document is not None and app.pending_document[0] == sales)
        # its own size, not with the program's facts put before its rows (a 92-byte file said "423 characters")
        assert str(app.chat_screen.query_one("#attachment").render()).startswith("Eklendi: sales.csv (3 satır, 2 sütun)")
        app.chat_screen.set_input("What is the total of column B?")
        prompt.focus()
        await pilot.press("enter")
        await until(pilot, lambda: not app.generating and len(app.store.messages(conv)) == 6)
        figures = app.chat_screen.query(MessageView).last().query_one(".metrics", Static)
        assert str(figures.render()).endswith("\nProgramın hesabı: Revenue (B sütunu), 3 satırın tümü: toplam 7.855")
        assert app.store.messages(conv)[-1].metrics["counted"][0]["figure"] == "7,855"  # (kept with the reply)
        await pilot.press("f9")
        await until(pilot, lambda: app.texts.lang == "en")
        assert str(figures.render()).endswith("\nCounted by the program: Revenue (column B), all 3 rows: total 7,855")
        # the table put back by Up, or from a draft after a restart (its facts no longer in the app's
        # memory): still counted, again from its file as it is unchanged (Up attached Path("sales.csv"))
        prompt.focus()
        await pilot.press("up")
        await until(pilot, lambda: app.pending_document is not None and app.finding_attached is None)
        assert app.pending_document[0] == sales and prompt.value == "What is the total of column B?"
        app._document_facts.clear()  # (as after a restart)
        app._attach_document(app.pending_document)
        await until(pilot, lambda: sales in app._document_facts)
        await pilot.press("enter")
        await until(pilot, lambda: not app.generating and app.pending_document is None
                    and "counted" in (app.store.messages(conv)[-1].metrics or {}))
        assert app.store.messages(conv)[-1].metrics["counted"][0]["figure"] == "7,855"
        # a file changed since: none counted, and that known (each attach read the whole file again)
        sales.write_text(sales.read_text(encoding="utf-8") + "Extra,1\n", encoding="utf-8")
        app._document_facts.clear()
        app._attach_document((sales, "Month,Revenue"))
        await until(pilot, lambda: sales in app._document_facts)
        assert app._document_facts[sales] == []
        app._attach_document(None)


async def test_up_after_a_restart_finds_the_documents_file_and_counts_its_table_again(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A question about an attached table, asked again (Alt+R), the app started again (from another
    folder than the document's), the message put back by Up (one first session, one second: each part
    below was a test of its own, each with both sessions):

    - Up, Enter while the document's file is still read (it waits for it), then Ctrl+R takes the
      document off: once the file is found, nothing of that Enter is left waiting (it would go by
      itself at the model's next load, as a switch in F3); the words stay in the box, unsent.
    - Up, then Enter before the thread has found the document's file (a big workbook: seconds): the
      message went with the document under its bare name, no tables' facts, so no counted line and no
      counted figures for the model (review28). It waits for the file, said so, and goes once it is read.
    - Up, the file found, sent again: its reply has the program's counted line as before (the document
      was attached again by its bare name, no file: no facts, no line)."""
    from textual.widgets import Input

    from workstation.tui import integrations
    from workstation.tui.messages import DocumentRead

    sales = tmp_path / "docs" / "sales.csv"
    sales.parent.mkdir()
    sales.write_text("Month,Revenue\nJan,1200.5\nFeb,2500\nMar,4154.5\n", encoding="utf-8")
    assert Path.cwd() != sales.parent
    question = "What is the total of column B?"
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        app.post_message(DocumentRead(str(sales), *integrations.read_document_text(sales)))
        await until(pilot, lambda: app.pending_document is not None)
        await _send(pilot, app, question)
        await until(pilot, lambda: not app.generating and app.conversation_id is not None
                    and len(app.store.messages(app.conversation_id)) == 2
                    and app.store.messages(app.conversation_id)[-1].metrics is not None)
        conv = app.conversation_id
        first = app.store.messages(conv)[-1]
        assert first.metrics["counted"][0]["figure"] == "7,855"
        # Alt+R on it: reply 2/2 had no "Counted by the program" line, where 1/2 had (newuser19): the
        # same question of the same table has the same count
        await pilot.press("alt+r")
        await until(pilot, lambda: not app.generating and app.store.messages(conv)[-1].id != first.id
                    and app.store.messages(conv)[-1].metrics is not None)
        again = app.store.messages(conv)[-1]
        assert (again.metrics or {}).get("counted", [{}])[0].get("figure") == "7,855", again.metrics
        assert str(_views(app)[-1].query_one(".metrics").render()).endswith(
            "\nCounted by the program: Revenue (column B), all 3 rows: total 7,855")
    real_read = integrations.read_document_text

    def reads_held() -> threading.Event:
        """The document reader held until the returned event is set (a big workbook's time)."""
        may_read = threading.Event()

        def held_read(path: Path) -> tuple:
            may_read.wait(timeout=5)
            return real_read(path)

        monkeypatch.setattr(integrations, "read_document_text", held_read)
        return may_read

    app2 = WorkstationApp("a", sample_system=False, language="en")
    async with app2.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: app2.engine is not None and app2.conversation_id == conv and len(_views(app2)) == 2)
        prompt = app2.chat_screen.query_one("#prompt", Input)
        # Up, Enter at once (it waits for the file), then Ctrl+R: nothing sent later
        may_read = reads_held()
        prompt.focus()
        await pilot.press("up")
        await until(pilot, lambda: app2.pending_document is not None)
        await pilot.press("enter")  # at once: it waits for the file
        assert app2._send_when_connected is not None
        await pilot.press("ctrl+r")  # the document taken off meanwhile
        await until(pilot, lambda: app2.pending_document is None)
        may_read.set()
        await until(pilot, lambda: app2.finding_attached is None)
        await pilot.pause()
        assert app2._send_when_connected is None
        assert prompt.value == question and len(app2.store.messages(conv)) == 2
        # Up, Enter at once: it waits for the file and goes once it is read, counted
        app2.chat_screen.clear_input()
        app2._editing = None
        may_read = reads_held()
        prompt.focus()
        await pilot.press("up")
        await until(pilot, lambda: app2.pending_document is not None)
        assert app2.finding_attached is not None  # (its file still looked for: what Enter meets)
        assert app2.store.last_reply_versions(conv) == (2, 2)  # (its Alt+R's)
        await pilot.press("enter")  # at once: the file is still being read
        may_read.set()
        # the message sent again in its place, with a reply of its own, the first kept behind Alt+V
        # (the first session's reply met the wait at once, its count with it)
        await until(pilot, lambda: not app2.generating and app2.pending_document is None
                    and app2.store.last_reply_versions(conv) == (3, 3)
                    and app2.store.messages(conv)[-1].role == "assistant"
                    and app2.store.messages(conv)[-1].metrics is not None)
        assert app2.store.messages(conv)[-1].metrics.get("counted", [{}])[0].get("figure") == "7,855"
        # Up, the file found (its facts no longer in memory, as after a restart), then Enter
        app2._document_facts.clear()
        monkeypatch.setattr(integrations, "read_document_text", real_read)
        prompt.focus()
        await pilot.press("up")
        await until(pilot, lambda: app2.pending_document is not None and app2.finding_attached is None)
        assert app2.pending_document[0] == sales, app2.pending_document[0]
        await until(pilot, lambda: sales in app2._document_facts)
        await pilot.press("enter")
        await until(pilot, lambda: not app2.generating and app2.pending_document is None
                    and app2.store.last_reply_versions(conv) == (4, 4)
                    and len(app2.store.messages(conv)) == 2 and app2.store.messages(conv)[-1].role == "assistant"
                    and app2.store.messages(conv)[-1].metrics is not None)
        assert app2.store.messages(conv)[-1].metrics.get("counted", [{}])[0].get("figure") == "7,855"
        figures = _views(app2)[-1].query_one(".metrics")
        assert str(figures.render()).endswith("\nCounted by the program: Revenue (column B), all 3 rows: total 7,855")


async def test_up_after_a_restart_takes_the_file_of_the_documents_text_not_the_newest_of_its_name(
        tmp_path: Path) -> None:
    """Two files named invoices.csv, in two folders, attached one after the other, the question sent
    with the first: after a restart, Up took the newest file of that name kept, the other one, and
    counted its table for the question. The file is known by the text that was attached; where no
    file has it any more, the person is told it was not found again and how to attach it."""
    from textual.widgets import Input

    from workstation.tui import integrations
    from workstation.tui.attachment import with_attached
    from workstation.tui.messages import DocumentRead

    first, other = tmp_path / "a" / "invoices.csv", tmp_path / "b" / "invoices.csv"
    for path, amount in ((first, 1200), (other, 99)):
        path.parent.mkdir()
        path.write_text(f"Invoice,Amount,Status\nINV-1,{amount},unpaid\nINV-2,300,paid\n", encoding="utf-8")
    store = tmp_path / "c.db"
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en", store_path=store)
    async with app.run_test(size=(110, 32)) as pilot:
        for path in (first, other):  # (the other one attached last: the newest kept of that name)
            app.post_message(DocumentRead(str(path), *integrations.read_document_text(path)))
            await until(pilot, lambda path=path: app.pending_document is not None and app.pending_document[0] == path)
    text = integrations.read_document_text(first)[0].rstrip()
    saved = ConversationStore(store)
    conv = saved.new("Invoices")
    saved.add_message(conv.id, "user", with_attached("total of unpaid invoices", "Document: invoices.csv", text))
    saved.add_message(conv.id, "assistant", "1,200.")
    saved.set_open(conv.id)
    saved.close()

    async def up_again() -> tuple[Path, list[str]]:
        again = WorkstationApp("a", start_engine=False, sample_system=False, language="en", store_path=store)
        async with again.run_test(size=(110, 32)) as pilot:
            said = notices(again)
            await until(pilot, lambda: again.conversation_id == conv.id and len(_views(again)) == 2)
            again.chat_screen.query_one("#prompt", Input).focus()
            await pilot.press("up")
            await until(pilot, lambda: again.pending_document is not None and again.finding_attached is None)
            assert again.pending_document[1] == text
            found = again.pending_document[0]
            # no draft left for the next start: the box's draft, saved a second after Up (on a busy
            # machine before its file was found), came back there, and Up did nothing
            again.chat_screen.clear_input()
            again._attach_document(None)
            again.save_draft()
            return found, said

    path, said = await up_again()
    assert path == first and not any("not found" in n for n in said), (path, said)
    first.write_text("Invoice,Amount,Status\nINV-1,5,unpaid\n", encoding="utf-8")  # (changed since)
    path, said = await up_again()
    assert path == Path("invoices.csv"), path
    assert any(n.startswith("invoices.csv was not found again as it was attached") and "Ctrl+O" in n
               for n in said), said


async def test_up_reads_the_documents_file_off_the_screens_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Up put the last message back and read its document's file to know it again on the screen's
    thread: a big workbook held the screen until it was read. The words are back in the box at
    once, the document attached under its name (sent now, it goes as it was); the file is read
    beside the screen, which answers keys meanwhile, and takes the document's place once found."""
    import threading

    from textual.widgets import Input

    from workstation.tui import integrations
    from workstation.tui.attachment import with_attached
    from workstation.tui.messages import DocumentRead

    invoices = tmp_path / "invoices.csv"
    invoices.write_text("Invoice,Amount\nINV-1,1200\nINV-2,300\n", encoding="utf-8")
    store = tmp_path / "c.db"
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en", store_path=store)
    async with app.run_test(size=(110, 32)) as pilot:
        app.post_message(DocumentRead(str(invoices), *integrations.read_document_text(invoices)))
        await until(pilot, lambda: app.pending_document is not None)
    text = integrations.read_document_text(invoices)[0].rstrip()
    saved = ConversationStore(store)
    conv = saved.new("Invoices")
    saved.add_message(conv.id, "user", with_attached("total?", "Document: invoices.csv", text))
    saved.add_message(conv.id, "assistant", "1,500.")
    saved.set_open(conv.id)
    saved.close()
    read_on: list[int] = []
    may_read = threading.Event()
    real_read = integrations.read_document_text

    def held_read(path: Path) -> tuple:  # (the real reader, once let: a big file's time)
        read_on.append(threading.get_ident())
        may_read.wait(timeout=5)
        return real_read(path)

    monkeypatch.setattr(integrations, "read_document_text", held_read)
    again = WorkstationApp("a", start_engine=False, sample_system=False, language="en", store_path=store)
    async with again.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: again.conversation_id == conv.id and len(_views(again)) == 2)
        prompt = again.chat_screen.query_one("#prompt", Input)
        prompt.focus()
        await pilot.press("up")
        await until(pilot, lambda: bool(read_on))
        assert read_on[0] != threading.main_thread().ident  # (the screen's thread is the main one)
        assert prompt.value == "total?" and again.pending_document == (Path("invoices.csv"), text)
        await pilot.press("end", "!")  # the screen answers while the file is read
        assert prompt.value == "total?!" and again.finding_attached is not None
        may_read.set()
        await until(pilot, lambda: again.finding_attached is None)
        assert again.pending_document == (invoices, text) and again._document_facts.get(invoices)


async def test_a_follow_up_in_a_conversation_reopened_after_a_restart_is_counted_of_its_table(
        profiles: Path, tmp_path: Path) -> None:
    """A Word letter with an invoice table attached, "how many invoices does Birlik AS have?"
    counted by the program; the app quit and started again, the conversation opened, the same
    asked without attaching it again: no counted line, the model named the wrong invoices and
    nothing said so (the table was in the app's memory only). The table the conversation last had
    attached is read again from its message's text: counted as in the first run, under the reply
    and for the model, though the file is gone."""
    import docx
    from docmaker import add_docx_table

    from workstation.core.documents import read_document
    from workstation.core.summary_chunks import with_facts
    from workstation.core.table_facts import facts_record
    from workstation.tui.attachment import with_attached

    letter = tmp_path / "letter.docx"
    made = docx.Document()
    made.add_paragraph("Dear Sir, the invoices of March are below.")
    add_docx_table(made, [("Invoice", "Client", "Amount", "Status"), ("INV-101", "Ada Ltd", "1,200.50", "paid"),
                          ("INV-102", "Birlik AS", "980.00", "unpaid"), ("INV-103", "Ada Ltd", "1,114.75", "paid"),
                          ("INV-105", "Birlik AS", "2,380.10", "unpaid")])
    made.save(letter)
    document = read_document(letter)
    letter.unlink()  # (moved since: the conversation's own text is counted, no file)
    store = tmp_path / "c.db"
    saved = ConversationStore(store)  # the first run, as the app kept it
    conv = saved.new("Invoices")
    saved.add_message(conv.id, "user", with_attached("Who are the clients?", "Document: letter.docx",
                                                     with_facts(document, all_rows=True).text.rstrip()),
                      facts=[facts_record(f) for f in document.facts])
    saved.add_message(conv.id, "assistant", "Ada Ltd and Birlik AS.")
    saved.set_open(conv.id)
    saved.close()
    said = "Counted by the program: 2 rows where Client is Birlik AS (INV-102, INV-105)"
    app = WorkstationApp("a", sample_system=False, language="en", store_path=store)
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: app.engine is not None and app.conversation_id == conv.id and len(_views(app)) == 2)
        await _send(pilot, app, "How many invoices does Birlik AS have?")
        await until(pilot, lambda: not app.generating and len(app.store.messages(conv.id)) == 4
                    and app.store.messages(conv.id)[-1].metrics is not None)
        messages = app.store.messages(conv.id)
        assert messages[-1].metrics.get("counted", [{}])[0].get("listed") == ["INV-102", "INV-105"], messages[-1].metrics
        assert f"- For this question, the program counted: {said[len('Counted by the program: '):]}." \
            in messages[-2].content, messages[-2].content  # (given to the model)
        line = str(_views(app)[-1].query_one(".metrics").render()) + "\n"
        assert f"\n{said}\n" in line, line


async def test_a_question_with_a_condition_on_an_attached_table_has_its_rows_counted(
        profiles: Path, tmp_path: Path) -> None:
    """"Which unpaid invoices are over 1,000 EUR, and what is their total?" of an attached invoice
    table (a CSV, and a Word document's table): the model invented "514 invoices, $30 million" and
    nothing was counted under its reply. The program's count of those rows is under the reply, kept
    with it, and given to the model beside the table's facts; Up puts the document back as it was.

    Then more of it asked in the same conversation: only the first answer had the program's counted
    line; the others none, and the model invented their figures (newuser19, newuser21). A follow-up
    is counted of the table the conversation last had attached, given to the model too; a question
    that names nothing of it ("how many people came?") gets no count of its rows."""
    import docx
    from textual.widgets import Input

    from workstation.tui import integrations
    from workstation.tui.messages import DocumentRead

    invoices = tmp_path / "invoices.csv"
    # (a row of each kind: unpaid over 1,000, paid over 1,000, unpaid under it; each token of the table
    # is read by the model twice, for the CSV and the Word document)
    invoices.write_text("Invoice,Amount,Status\nINV-102,2380.50,unpaid\nINV-103,1200.00,paid\n"
                        "INV-104,3200.00,unpaid\nINV-105,780.25,unpaid\n", encoding="utf-8")
    letter = docx.Document()
    letter.add_paragraph("Open invoices of March.")
    table = letter.add_table(rows=5, cols=3)
    for r, row in enumerate([line.split(",") for line in invoices.read_text(encoding="utf-8").split()]):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    letter.save(tmp_path / "invoices.docx")
    said = ("Counted by the program: Amount where Status is unpaid and Amount over 1,000: 2 rows (INV-102, INV-104), "
            "total 5,580.50")
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        turns = 0

        async def ask(question: str) -> dict:
            nonlocal turns
            turns += 1
            await _send(pilot, app, question)
            await until(pilot, lambda: not app.generating and app.conversation_id is not None
                        and len(app.store.messages(app.conversation_id)) == 2 * turns
                        and app.store.messages(app.conversation_id)[-1].metrics is not None)
            return app.store.messages(app.conversation_id)[-1].metrics or {}

        for path in [invoices, tmp_path / "invoices.docx"]:
            app.post_message(DocumentRead(str(path), *integrations.read_document_text(path)))
            await until(pilot, lambda path=path: app.pending_document is not None and app.pending_document[0] == path)
            attached = app.pending_document[1]
            await ask("Which unpaid invoices in the table are over 1,000 EUR, and what is their total?")
            assert str(_views(app)[-1].query_one(".metrics").render()).endswith("\n" + said)
            messages = app.store.messages(app.conversation_id)
            assert messages[-1].metrics["counted"][0]["rows"] == "2"  # (kept with the reply, for F7's export too)
            assert ("\n- For this question, the program counted: Amount where Status is unpaid and Amount over 1,000: "
                    "2 rows (INV-102, INV-104), total 5,580.50.\n") in messages[-2].content  # (given to the model)
            app.chat_screen.query_one("#prompt", Input).focus()
            await pilot.press("up")  # the document put back as it was attached, its facts known: counted again
            await until(pilot, lambda: app.pending_document is not None and app.finding_attached is None)
            assert app.pending_document == (path, attached)
            app.chat_screen.clear_input()
            app._editing = None
            app._attach_document(None)
            if path == invoices:  # a follow-up, nothing attached: counted of the table the conversation last had
                follow = await ask("What is the total of the unpaid invoices?")
                assert follow.get("counted", [{}])[0].get("figures") == [{"figure": "6,360.75", "what": "total"}], follow
                sent = app.store.messages(app.conversation_id)[-2].content
                assert "the program counted" in sent and "6,360.75" in sent, sent  # (the model is given it too)
                line = str(_views(app)[-1].query_one(".metrics").render()) + "\n"  # (the reply's own checks may follow)
                assert "\nCounted by the program: Amount where Status is unpaid: 3 rows (INV-102, INV-104, INV-105), " \
                    "total 6,360.75\n" in line, line
                assert not (await ask("How many people came to the party?")).get("counted")
        await pilot.press("f9")  # (in the UI's language)
        await until(pilot, lambda: app.texts.lang == "tr")
        assert str(_views(app)[-1].query_one(".metrics").render()).endswith(
            "\nProgramın hesabı: Status değeri unpaid ve Amount 1.000 üzeri olan satırlarda Amount: 2 satır "
            "(INV-102, INV-104), toplam 5.580,50")


async def test_a_document_whose_measuring_fails_says_why_and_f6_asks_all_the_same(
        profiles: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """A desk PC's office server gone between the load and the attach: the document could not be
    measured. Its line and a notice say why and what now, in a sentence; F6's Ctrl+K on its
    summary asks (it said "ledger.txt is still being measured for the chat: press Ctrl+K again in a
    moment" for ever, the line under the box as if all were well)."""
    from serve_helpers import serve, write_profile

    from workstation.core.kept_parts import document_version
    from workstation.core.summarize import SummaryResult
    from workstation.tui.screens.summarize import SummarizeScreen

    ledger = tmp_path / "ledger.txt"
    ledger.write_text("The invoice was paid. " * 40, encoding="utf-8")
    (tmp_path / "office").mkdir()
    with serve(write_profile(tmp_path / "office", smollm2_path)) as server:
        _profile(profiles / "desk.yaml", "", backend="openai", remote={"base_url": server.base_url})
        app = WorkstationApp("desk", sample_system=False, language="en")
        async with app.run_test(size=(120, 30)) as pilot:
            await until(pilot, lambda: app.engine is not None)
            server.proc.terminate()  # the office server stopped (restarted, say) after the desk PC connected
            server.proc.wait(timeout=20)
            document = (ledger, ledger.read_text(encoding="utf-8"))
            app._attach_document(document)
            await pilot.press("f6")
            await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
            f6 = app.screen
            f6.path, f6.summary = ledger, "The ledger says the invoice was paid."
            f6.result = SummaryResult(str(ledger), f6.summary, f6.summary, [], [], {}, False, 1024, 0, 512)
            f6.version = document_version(ledger)
            # its measuring over, failed (the server gone): said (before, only as any failed task is)
            await until(pilot, lambda: any(n.severity != "information" for n in app._notifications))
            app.screen.query_one("#summarize-result").focus()  # (Ctrl+K asks from the summary, not the path box)
            await pilot.press("ctrl+k")
            await until(pilot, lambda: app.screen is not f6 or any(
                "still being measured" in str(n.message) for n in app._notifications))
            assert not any("still being measured" in str(n.message) for n in app._notifications)
            # said under the box and in a notice, in a sentence: what failed, and what now
            assert any(str(n.message).startswith("ledger.txt could not be measured for this profile: ")
                       for n in app._notifications)
            await until(pilot, lambda: app.screen is app.chat_screen)
            app.conversation_id = None
            await app.chat_screen.show_messages([])
            app._attach_document(document)
            line = app.chat_screen.query_one("#attachment")
            await until(pilot, lambda: "could not be measured" in str(line.render()))
            said = str(line.render())
            assert said.startswith(f"Attached: ledger.txt (about {rounded_words(words_in(document[1]))} words); "
                                   "it goes with your next message (Ctrl+R "
                                   "removes it). ledger.txt could not be measured for this profile: "), said
            assert said.endswith(" It still goes with your next message; if it is too long, it comes back to the "
                                 "box with your words.") and "Traceback" not in said, said
            assert not app.attachment_measuring(document)
            await pilot.press("f9")  # in Turkish too
            await until(pilot, lambda: "bu profil için ölçülemedi" in str(line.render()))


async def test_a_document_too_long_for_a_message_is_said_when_attached(profiles: Path, tmp_path: Path,
                                                                       gemma_path: Path) -> None:
    """A document longer than the context was said not to fit only after Enter, in a toast; the
    line under the box says so once it is attached (a short one is left as it was). F6, which
    the line names, opens with it in its box (it was empty: the path typed again)."""
    from textual.widgets import Input

    from workstation.core.engine_api import answer_reserve
    from workstation.core.kept_parts import document_version
    from workstation.tui.screens.summarize import SummarizeScreen

    ledger = tmp_path / "ledger.txt"
    ledger.write_text("The invoice was paid. " * 400, encoding="utf-8")  # ~2,000 tokens, context 1,024
    _profile(profiles / "gemma.yaml", str(gemma_path), context=4096)  # another model, another tokenizer
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        line = app.chat_screen.query_one("#attachment")
        # attached before the model has loaded (a draft restored at the start): said once it has
        # (it read "(6,737 characters); it goes with your next message" until Enter)
        app._attach_document((ledger, ledger.read_text(encoding="utf-8")))
        await until(pilot, lambda: app.engine is not None and "too long to send" in str(line.render()))
        app._attach_document((Path("/docs/short.txt"), "Meeting at ten."))
        app._attach_document((ledger, ledger.read_text(encoding="utf-8")))
        await until(pilot, lambda: "too long to send" in str(line.render()))
        # another of the user's profiles holds it whole (GEMMA, 4,096): named after the line's own words
        await until(pilot, lambda: app.pending_document in app._holders)
        gemma = app.holder_text(app.pending_document)
        assert gemma.startswith(' The "GEMMA" profile takes longer messages, up to about '), gemma
        assert gemma.endswith(", so it holds it whole. F3, then Enter, switches to it; your message and the document "
                              "stay."), gemma
        said = str(line.render())
        # in words, as the box's line says what the conversation holds (it said "about 2,001 tokens ... context of
        # 1,024 tokens")
        # by this document's own words a token (1,600 words in ``own`` tokens), as F6's parts are counted
        # (it said 770, the app's three quarters of a word a token, of a document read at 0.8)
        # in short sentences: what is wrong, then what to do (one sentence of three clauses read as a riddle);
        # the figure what a message holds of it, the reply's room left out, fewer than its words (the whole
        # context read "about 2,600 words: more than a message can hold, which reads up to about 3,000")
        tokens, n_ctx, own = next(m for d, m in app._document_tokens.items() if d[0] == ledger)
        # said as F3 says the profile: a conversation's and a message's (one figure, F3's "reads about 1,100 words
        # at once", stood beside the refusal of an 850-word contract)
        holds = rounded_words((n_ctx - answer_reserve(app.profile.sampling, n_ctx) - (tokens - own)) * 1600 / own)
        conversation = rounded_words(n_ctx * 1600 / own)
        assert conversation
        assert said == "Attached: ledger.txt. It is too long to send: a message in this profile can be up to " \
            f"about {holds} words of this document (the rest of the room is kept for the reply), and it has about " \
            "1,600. F6 summarizes it; your next message then asks about the summary. " \
            "Ctrl+R removes it." + gemma, said
        await pilot.press("f9")  # in Turkish, the figure said as this document's words (beside F3's and the box's)
        await until(pilot, lambda: str(line.render()).startswith("Eklendi: ledger.txt. Bu belge"))
        assert str(line.render()) == "Eklendi: ledger.txt. Bu belge gönderilemeyecek kadar uzun: bu profilde bir " \
            f"mesaj en çok bu belgeden yaklaşık {holds.replace(',', '.')} sözcük alabilir (kalan yer yanıta " \
            "ayrılır), belge ise yaklaşık 1.600 sözcük. " \
            "F6 onu özetler; ardından bir sonraki mesajınız özet hakkında sorar. Ctrl+R onu kaldırır." \
            + app.holder_text(app.pending_document), str(line.render())
        await pilot.press("f9")
        await until(pilot, lambda: str(line.render()).startswith("Attached: ledger.txt. It is too long"))
        app.chat_screen.set_input("What was paid?")
        await pilot.press("enter")  # refused before it is shown, both ways out named (it said "save the text as a file")
        await until(pilot, lambda: any(str(n.message) == "Not sent: ledger.txt is too long for a message in this "
                                       "profile. Your message stays in the box. F6 summarizes the document; your "
                                       "message then asks about the summary, in this conversation. Ctrl+R removes "
                                       "the document." + gemma for n in app._notifications))
        # (the message and "waiting for the first word…" flashed, then went, each Enter)
        assert not _views(app) and app.conversation_id is None and not app.generating
        assert app.chat_screen.input_text() == "What was paid?"
        assert app.pending_document is not None and app.pending_document[0] == ledger  # (given back with it)
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
        box = app.screen.query_one("#summarize-path", Input)
        await until(pilot, lambda: box.value == str(ledger))
        # F6 has summarized it: the chat asks about the summary in its place, and says so
        from workstation.core.summarize import SummaryResult
        f6 = app.screen
        f6.path, f6.summary = ledger, "The ledger says the invoice was paid."
        f6.result = SummaryResult(str(ledger), f6.summary, f6.summary, [], [], {}, False, 1024, 0, 512)
        f6.version = document_version(ledger)  # (the file as it was summarized)
        app._attach_document(app.pending_document)  # (as the summary's end does)
        # F6 says what its Ctrl+K does with it: the question typed goes, in the same conversation
        assert f6._result_text() == "Done. Ctrl+K on the summary below (Tab or a click goes to it) goes back to your conversation and sends your message there, " \
            "with this summary in place of ledger.txt; Ctrl+S saves it beside the document."
        app.chat_screen.set_input("")  # nothing typed: nothing is sent, the next message asks it (said so)
        assert f6._result_text().startswith("Done. Ctrl+K on the summary below (Tab or a click goes to it) goes back to your conversation: what you ask there next")
        app.chat_screen.set_input("What was paid?")
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        assert str(line.render()) == "Attached: ledger.txt, about 1,600 words, too long for a message. Your next " \
            "message asks about its summary (F6) in its place. Ctrl+R removes it."
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
        # still being measured (as just after the summary's end): said to wait (it opened a new "About NAME")
        measured = app._document_tokens.pop(app.pending_document)
        app.screen.query_one("#summarize-result").focus()  # (Ctrl+K asks from the summary, not the path box)
        await pilot.press("ctrl+k")
        await until(pilot, lambda: any(str(n.message) == "ledger.txt is still being measured for the chat: in a "
                                       "moment, press Ctrl+K again on the summary below (Tab goes to it)."
                                       for n in app._notifications))
        assert app.screen is f6 and app.conversation_id is None and not app.store.list()
        app._document_tokens[app.pending_document] = measured
        app.screen.query_one("#summarize-result").focus()  # (Ctrl+K asks from the summary, not the path box)
        await pilot.press("ctrl+k")  # ask in chat: the message refused before is asked, here (it opened a new
        # conversation "About ledger.txt" with the question in its box, to be sent again)
        await until(pilot, lambda: app.conversation_id is not None and not app.generating)
        assert app.screen is app.chat_screen and [c.title for c in app.store.list()] != ["About ledger.txt"]
        asked = app.store.messages(app.conversation_id)[0].content
        assert asked.startswith("What was paid?") and "Document: ledger.txt (its summary, made with F6)" in asked \
            and "The ledger says the invoice was paid." in asked and "The invoice was paid. The invoice" not in asked
        # the file edited after F6 summarized it: that summary is of what it was, said so, and not sent
        # in its place (matched by path only, the old summary went with the next message)
        await pilot.press("ctrl+n")
        ledger.write_text("The invoice was paid twice. " * 400, encoding="utf-8")
        app._attach_document((ledger, ledger.read_text(encoding="utf-8")))
        await until(pilot, lambda: "older version" in str(line.render()))
        assert str(line.render()).endswith("too long for a message. Its summary (F6) is of an older version: the "
                                           "file has changed since. F6 summarizes it again; your next message then "
                                           "asks about that summary. Ctrl+R removes it."), str(line.render())
        app.chat_screen.set_input("Was it paid twice?")
        await pilot.press("enter")
        await until(pilot, lambda: any(str(n.message).startswith("Not sent: ledger.txt has changed since it was "
                                                                 "summarized (F6)") for n in app._notifications))
        assert app.conversation_id is None and app.chat_screen.input_text() == "Was it paid twice?"
        f6.path = f6.result = None
        await pilot.press("ctrl+n")
        app._attach_document((ledger, ledger.read_text(encoding="utf-8")))
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
        box.value = "/elsewhere/typed.txt"  # typed over: left so when F6 comes back with the same attachment
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
        await pilot.pause()
        assert box.value == "/elsewhere/typed.txt"
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        app._attach_document((Path("/docs/short.txt"), "Meeting at ten."))
        # how much of the conversation's room it takes, said when attached (a document that did not
        # fit what was left of the conversation was said nothing of: the reply came cut or failed)
        await until(pilot, lambda: "of the room left in this conversation" in str(line.render()))
        said = str(line.render())
        # as a share of the room, of its tokens: in words, "540 of the 2,700 words left" of a 610-word
        # memo (a token's words), or in its own words a room the line under the box did not say
        tokens, n_ctx, own = app._document_tokens[app.pending_document]
        assert said.startswith("Attached: short.txt (about 3 words)") and \
            f"It takes about {part_percent(own / (n_ctx - (tokens - own)))}% of the room left in this " \
            "conversation." in said, said
        await pilot.press("ctrl+r")
        app.chat_screen.set_input("Note this. " + "The invoice was paid. " * 20)  # ~100 of the 1,024 tokens
        await pilot.press("enter")
        await until(pilot, lambda: not app.generating and app.context_left() is not None)
        app._attach_document((ledger, "The invoice was paid. " * 180))  # ~900 tokens: fits a message, not what is left
        await until(pilot, lambda: "words are left in this conversation" in str(line.render()))
        # its words as wc -w counts them, the room as the line under the box says it (the same figure)
        # (by the model's figure for the UI's language, the same for every turn: replies' own moved it up)
        basis = app.words_basis()
        assert basis is not None
        said, words_left = str(line.render()), basis.count(app.context_left())
        # (and why fewer words than that do not fit: "2,200 words, but only about 2,500 are left" read as a fault)
        assert said.startswith("Attached: ledger.txt, about 720 words") \
            and f"only about {words_left} words are left in this conversation, and its reply needs room too" in said \
            and "Ctrl+N starts a new conversation" in said and "F6 summarizes it" in said, said
        assert f"room for about {words_left} more words" in app.context_fill_text(), app.context_fill_text()
        # F3 says the loaded profile's whole context by the same words a token (it said 3,100 in all
        # where the line under the box said room for 3,200 more: the language's 0.75 against the replies'),
        # a reply of another words a token moving neither (F3 said 950, then 3,500, then 3,100)
        last = app.history.turns[-1]
        app.history.add(dataclasses.replace(last, predicted_n=100), words=83)
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        menu = app.screen
        assert isinstance(menu, ProfileMenu) and app.words_basis() == WordsBasis(0.75, "language") == basis
        row = next(str(menu._prompt(i, e)) for i, e in enumerate(menu.entries) if menu._is_current(e))  # type: ignore[arg-type]
        n_ctx = app.engine_info.n_ctx
        assert f"· a conversation of about {basis.count(n_ctx)} words; a message up to about " \
            f"{basis.count(n_ctx - answer_reserve(app.profile.sampling, n_ctx))}" in row, row
        # another model's profile by the UI language's figure for its own tokenizer: the conversation's figure
        # was measured with SmolLM2's tokenizer and replies (F3 said Gemma's 4,096 tokens as 3,400 words by it)
        gemma = next(i for i, e in enumerate(menu.entries) if getattr(e, "key", "") == "gemma")
        await until(pilot, lambda: gemma in menu.verdicts)
        gemma_words = context_words(4096, context_basis(None, model_figures(model_file(menu.entries[gemma]))))
        assert f"· a conversation of {gemma_words}; " in str(menu._prompt(gemma, menu.entries[gemma])), menu.entries[gemma]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ProfileMenu))
        from workstation.core.metrics import TurnMetrics, turn_record

        reply = TurnMetrics(predicted_n=100, predicted_ms=1000, stop_reason="eos")
        reply.finish_rates()  # (a Gemma reply here of 0.5 words a token)
        app.store.add_message(app.store.new("gemma").id, "assistant", "word " * 50,
                              turn_record(reply, "gemma", "GEMMA", model=str(gemma_path.resolve())))
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu) and gemma in app.screen.verdicts)
        menu = app.screen
        assert isinstance(menu, ProfileMenu)
        # another model's replies are not this conversation's kind of text: its profile is said as on a fresh
        # start, by the language's figure for its model, as F4 says it
        assert f"· a conversation of {gemma_words}; " in str(menu._prompt(gemma, menu.entries[gemma])), menu.entries[gemma]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ProfileMenu))


async def test_a_first_message_too_long_leaves_no_empty_conversation(profiles: Path) -> None:
    """Refused as longer than the context, a new conversation's first message came back into the
    box, and the conversation it began stayed in the list, titled after it, with nothing in it."""
    from textual.widgets import Input

    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        prompt = app.chat_screen.query_one("#prompt", Input)
        long = "Count the staplers in this list. " + "stapler, paper, ink, " * 400
        app.chat_screen.set_input(long)
        prompt.focus()
        await pilot.press("enter")
        await until(pilot, lambda: not app.generating and prompt.value == long)
        said = next(n.message for n in app._notifications if "cannot hold it" in n.message)
        assert "F6" in said and "command line" not in said  # (it named a command to type, in the app)
        assert app.conversation_id is None and app.store.list("") == []
        app.chat_screen.set_input("Hello!")  # the next one begins a conversation as ever
        await pilot.press("enter")
        await until(pilot, lambda: not app.generating and app.conversation_id is not None)
        assert [c.title for c in app.store.list("")] == ["Hello!"]


async def test_a_conversation_written_in_goes_to_the_top_of_the_list(profiles: Path) -> None:
    """The list is newest first, but a message sent in an older conversation left it where it
    was until the app started again."""
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        older = app.store.new("Older")
        app.store.add_message(older.id, "user", "Hi")
        app.store.add_message(older.id, "assistant", "Hello.")
        newer = app.store.new("Newer")
        app.store.add_message(newer.id, "user", "Hi")
        await app.open_conversation(older.id)

        def order() -> list[int | None]:
            return [item.conversation_id for item in app.chat_screen.sidebar.query("ConversationItem")]

        await until(pilot, lambda: order() == [newer.id, older.id])
        await _send(pilot, app, "And again?")
        await until(pilot, lambda: not app.generating)
        await until(pilot, lambda: order() == [older.id, newer.id])


async def test_the_app_starts_with_the_profile_loaded_last(profiles: Path) -> None:
    """F3's choice was forgotten at each start and the default's model loaded again (LM Studio
    and Ollama's app start with the model used last); one that no longer loads leaves the default."""
    app = WorkstationApp("b", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
    from workstation.core.store import ConversationStore

    assert ConversationStore(app.store.path).recalled("profile") == app.profile.ref  # type: ignore[union-attr]
    again = WorkstationApp(None, start_engine=False, sample_system=False, language="en")
    assert again.profile is not None and again.profile.key == "b" and again.startup_problem is None
    assert WorkstationApp("a", start_engine=False, sample_system=False, language="en").profile.key == "a"  # -p wins
    (profiles / "b.yaml").unlink()
    gone = WorkstationApp(None, start_engine=False, sample_system=False, language="en")
    assert gone.profile is None and gone.startup_problem is not None  # the default, as before (not in this folder)


async def test_a_reply_that_repeats_itself_is_kept_without_its_repeats_and_said_so(profiles: Path) -> None:
    """SmolLM2 went round in circles ("Ok, five times:" again and again) to its longest reply,
    40 s on a 2-core PC: it stops there, the reply shows its first copy (what streamed of the repeats
    gone), and the line under it says why and the way on (Alt+C would only repeat it)."""
    app = WorkstationApp("b", sample_system=False, language="en")
    said = notices(app)
    async with app.run_test(size=(110, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await _send_text(pilot, app, "Write the word ok five times.")
        await until(pilot, lambda: not app.generating and len(_views(app)) == 2)
        kept = app.store.messages(app.conversation_id)[-1]  # type: ignore[arg-type]
        assert kept.metrics and kept.metrics["stop_reason"] == "loop"
        assert kept.content == "Ok five times:" and kept.metrics["predicted_n"] < 400  # ("Ok, five times:" again to the limit)
        assert _views(app)[-1].content == kept.content
        assert "stopped: it began repeating itself · Alt+R asks again" in _views(app)[-1]._metrics_text()
        await pilot.press("alt+c")
        await until(pilot, lambda: any("began repeating itself, so it was stopped there" in n for n in said))
        assert not app.generating and len(app.store.messages(app.conversation_id)) == 2  # type: ignore[arg-type]


async def test_asked_again_the_reply_there_stays_until_a_new_one_came(profiles: Path) -> None:
    """Alt+R deleted the reply before the new one existed: a try that failed (here: too long
    once this session's replies may be longer) lost it, and the question too; Up and Alt+R on
    F6's document chat sent its hidden instructions as the person's own words."""
    app = WorkstationApp("a", sample_system=False, language="en")
    said = notices(app)  # (a toast expires: on a busy machine the first was gone before the third came)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        conv = app.store.new("Supplies")
        # fits with 8 tokens for the reply, not with 64 (a sixteenth of the context: the least a reply gets)
        question = "List what is missing: " + "stapler, paper, ink, " * 136
        app.store.add_message(conv.id, "user", question)
        # (cut by its limit: Alt+C goes on with it; one the model ended is said to be complete)
        app.store.add_message(conv.id, "assistant", "Toner.", {"stop_reason": "length", "predicted_n": 2})
        await app.open_conversation(conv.id)
        app.chat_screen.set_input("half typed")
        app.session_sampling = dataclasses.replace(app.profile.sampling, max_tokens=400)  # type: ignore[union-attr]
        app.store.set_sampling(conv.id, app.own_sampling)  # kept with it, as Ctrl+E does (a redraw reads it)
        await pilot.press("alt+r")
        await until(pilot, lambda: any("cannot hold it" in n for n in said))
        await until(pilot, lambda: not app.generating and [v.content for v in _views(app)] == [question, "Toner."])
        assert [m.content for m in app.store.messages(conv.id)] == [question, "Toner."]  # nothing lost
        assert app.chat_screen.input_text() == "half typed"
        # a reply gone on with (Alt+C) that no longer fits, and a question with no reply asked
        # again: each stays where it was (both were taken back, the box given another text)
        app.chat_screen.clear_input()
        await pilot.press("alt+c")
        await until(pilot, lambda: sum("cannot hold it" in n for n in said) == 2)
        await until(pilot, lambda: not app.generating and [v.content for v in _views(app)] == [question, "Toner."])
        assert app.store.messages(conv.id)[1].metrics == {"stop_reason": "length", "predicted_n": 2}  # its figures too
        app.store.forget_messages(conv.id, [app.store.messages(conv.id)[1].id])
        await app.open_conversation(conv.id)  # (opened, it has its own sampling: the profile's, none kept)
        app.session_sampling = dataclasses.replace(app.profile.sampling, max_tokens=400)  # type: ignore[union-attr]
        app.store.set_sampling(conv.id, app.own_sampling)  # kept with it, as Ctrl+E does (a redraw reads it)
        await pilot.press("alt+r")
        await until(pilot, lambda: sum("cannot hold it" in n for n in said) == 3)
        await until(pilot, lambda: not app.generating)
        assert [m.content for m in app.store.messages(conv.id)] == [question] and app.chat_screen.input_text() == ""

        doc = app.store.new("About notes.txt")
        app.store.add_message(doc.id, "user", "Summarize the following part … END OF TEXT.",
                              shown="Summarize notes.txt; then answer my questions about it.")
        app.store.add_message(doc.id, "assistant", "The notes list desks.")
        await app.open_conversation(doc.id)
        app.chat_screen.clear_input()
        app.chat_screen.query_one("#prompt").focus()
        await pilot.press("up", "alt+r")
        await until(pilot, lambda: sum("made by F6 from a document" in n for n in said) == 2)
        assert app.chat_screen.input_text() == "" and not app.generating
        assert [m.content for m in app.store.messages(doc.id)][1] == "The notes list desks."


def test_a_pasted_escape_code_stays_text_and_never_presses_keys() -> None:
    """Coloured text copied from a terminal holds escape codes: Textual's parser read the one in
    a paste as the start of a key and gave what followed back as key presses (the bell as
    Ctrl+G started the API server; a carriage return sent the message). Read a byte at a time
    or whole, the paste is one paste of its text."""
    from textual import events

    from workstation.tui.paste_guard import PasteGuard

    wire = "x\x1b[200~A \x1b[31mRED\x1b[0m B bell\x07 C\x1b]8;;http://e.example\x07link\x1b]8;;\x07\r\nEND\x1b[201~y"
    for size in (1, 2, 3, 5, 7, len(wire)):
        parser = PasteGuard()
        tokens = [t for i in range(0, len(wire), size) for t in parser.feed(wire[i : i + size])]
        tokens += list(parser.feed(""))
        keys = [t.key for t in tokens if isinstance(t, events.Key)]
        pastes = [t.text for t in tokens if isinstance(t, events.Paste)]
        assert keys == ["x", "y"], (size, keys)
        assert pastes == ["A RED B bell Clink\r\nEND"], size
    alone = PasteGuard()  # Esc outside a paste is still Esc
    assert [t.key for t in [*alone.feed("\x1b"), *alone.feed("")] if isinstance(t, events.Key)] == ["escape"]


def test_the_app_in_a_terminal_keeps_a_pasted_bell_and_return_in_the_box(tmp_path: Path) -> None:
    """The real app in a real terminal: a paste holding an escape code, a bell and a return is
    put in the message box (kept as the draft when it quits), neither sent nor taken as Ctrl+G."""
    import os

    from workstation.core.store import ConversationStore

    data = tmp_path / "data"
    with app_in_a_terminal("--no-load", "--lang", "en", WORKSTATION_DATA=str(data)) as (pid, fd):
        read_terminal(fd, lambda seen: b"F1" in seen or b"f1" in seen, 60, "drew its footer")
        os.write(fd, b"\x1b[200~log \x1b[31mline\x1b[0m\x07 ok\rnext\r\x1b[201~")
        seen = read_terminal(fd, lambda seen: b"log line" in seen, 30, "showed the pasted text")
        os.write(fd, b"\x11")  # Ctrl+Q
        seen += read_terminal(fd, lambda seen: b"\x1b[?1049l" in seen, 30, "gave the terminal back")
        assert wait_for_exit(pid, 30, "the app still runs after Ctrl+Q") == 0
    assert b"serving the API" not in seen
    store = ConversationStore(data / "conversations.sqlite3")
    try:
        assert store.drafts() == {None: ("log line ok\nnext\n", None)}
        assert store.list() == []
    finally:
        store.close()


async def test_one_reply_at_a_time_in_a_conversation_across_windows(profiles: Path) -> None:
    """Two windows on one conversation, sent to at once, wrote both questions and then both
    replies, and each window showed another history. While another process writes a reply
    there, a message is refused in a sentence and stays in the box, and `chat -c` waits its
    turn, saying so; once that process is done each goes in turn, and what was written
    elsewhere is shown before the next message."""
    import select
    import subprocess
    import sys

    app = WorkstationApp("b", sample_system=False, language="en")
    said = notices(app)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        conv = app.store.new("Budget")
        app.store.add_message(conv.id, "user", "Rent?")
        app.store.add_message(conv.id, "assistant", "1,200 a month.")
        await app.open_conversation(conv.id)
        other = subprocess.Popen(  # another window, writing a reply there now
            [sys.executable, "-c", "import sys; from pathlib import Path; from workstation.core.turn_lock import "
             "claim_turn; print(claim_turn(Path(sys.argv[1]), int(sys.argv[2])), flush=True); sys.stdin.read()",
             str(app.store.path), str(conv.id)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        cli = None
        try:
            assert other.stdout is not None and other.stdout.readline().strip() == "True"
            cli = subprocess.Popen([str(Path(sys.executable).parent / "workstation"), "chat", "-p", "b", "-c", "Budget",
                                    "Electricity?"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            assert cli.stderr is not None
            ready, _, _ = select.select([cli.stderr], [], [], 120)
            waiting = cli.stderr.readline().decode() if ready else ""
            assert 'waiting for the reply being written in "Budget"' in waiting, waiting
            await type_message(pilot, "And heating?")
            await until(pilot, lambda: any("Another window (or a command) is writing a reply" in s for s in said))
            assert not app.generating and app.chat_screen.input_text() == "And heating?"
            other_store = ConversationStore(app.store.path)
            other_store.add_message(conv.id, "user", "Water?")  # what that window wrote meanwhile
            other_store.add_message(conv.id, "assistant", "30 a month.")
            other_store.close()
        finally:
            other.kill()
            other.wait()
        assert cli.wait(timeout=120) == 0, cli.stderr.read()  # its turn, once the other one ended
        cli.stderr.close()
        await pilot.press("enter")
        await until(pilot, lambda: app.generating or len(_views(app)) >= 8)
        await until(pilot, lambda: not app.generating)
        asked = ["Rent?", "1,200 a month.", "Water?", "30 a month.", "Electricity?"]
        assert [v.content for v in _views(app)][:5] == asked and _views(app)[6].content == "And heating?", "|".join(v.content for v in _views(app))
        stored = [m.content for m in app.store.messages(conv.id)]
        assert stored[:5] == asked and stored[6] == "And heating?" and len(stored) == 8


async def test_enter_during_a_reply_says_why_and_ctrl_n_stops_it_and_opens_a_new_chat(profiles: Path) -> None:
    """While a reply streamed, Enter in the message box said nothing that the user could connect
    with it (texts typed piled up in the box) and Ctrl+N did nothing: Enter says the reply is
    still being written, that Esc stops it and the message stays; Ctrl+N stops the reply,
    keeps what arrived, and opens a new conversation, as ChatGPT's "new chat" does."""
    from textual.widgets import Input

    app = WorkstationApp("b", sample_system=False, language="en")
    said = notices(app)  # (a toast expires while a model loads)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await _send_text(pilot, app, "Write a very long story about a cat who works in an office.")
        await until(pilot, lambda: app.live_tokens >= 3)
        first = app.conversation_id
        await type_message(pilot, "And a dog?")
        assert "A reply is still being written: Esc stops it; your message stays in the box." in said, said
        assert app.chat_screen.query_one("#prompt", Input).value == "And a dog?" and app.generating
        await pilot.press("ctrl+n")
        await until(pilot, lambda: not app.generating and app.conversation_id is None)
        kept = app.store.messages(first)  # type: ignore[arg-type]
        assert [m.role for m in kept] == ["user", "assistant"] and kept[-1].content.strip()
        assert len(_views(app)) == 0
        assert any("a new conversation opens" in n for n in said)
        # the line under the stopped reply says why it stopped ("stopped" alone: the user had not pressed Esc),
        # also once its conversation is opened again; no "Alt+C lets it go on" for a chat no longer on screen
        assert (kept[-1].metrics or {}).get("stopped_by") == "new_conversation"
        assert not any("lets it go on" in n for n in said), said
        await app.open_conversation(first)  # type: ignore[arg-type]
        await until(pilot, lambda: len(_views(app)) == 2)
        under = str(_views(app)[1].query_one(".metrics").render())
        assert "stopped when a new conversation was started" in under, under


async def test_a_message_given_back_is_never_glued_to_what_is_typed_meanwhile(profiles: Path,
                                                                              smollm2_path: Path) -> None:
    """A message too long for the context comes back into the box; keys read while it was taken
    out of the chat were overwritten by it, and the rest of the typing went on after it ("…long
    text…lo" for "Hello"): typed meanwhile, the message stays in the chat (as when typed before)
    and the box keeps only what was typed."""
    from textual.widgets import Input

    _profile(profiles / "a.yaml", str(smollm2_path), context=512)
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        screen = app.chat_screen
        prompt = screen.query_one("#prompt", Input)
        taking_out = screen.remove_last_exchange

        taken: list[bool] = []

        async def typed_meanwhile(*args: object, **kwargs: object) -> None:
            prompt.insert_text_at_cursor("Hel")  # keys read while the message is taken out of the chat
            await taking_out(*args, **kwargs)  # type: ignore[arg-type]
            taken.append(True)

        screen.remove_last_exchange = typed_meanwhile  # type: ignore[method-assign]
        long = "The quarterly figures for every office. " * 200
        screen.set_input(long)
        await pilot.press("enter")
        await until(pilot, lambda: bool(taken) and not app.generating)
        conv = app.conversation_id
        assert conv is not None and [m.content for m in app.store.messages(conv)] == [long.strip()]  # (kept)
        await pilot.pause()
        assert prompt.value == "Hel", prompt.value[:80]


async def test_the_welcome_names_f9_and_ctrl_p_and_f9_to_turkish_warns_of_a_small_model(profiles: Path) -> None:
    """The English welcome named F1-F6 but not F9, so a Turkish speaker could not find Turkish,
    nor Ctrl+P, for the F keys a terminal keeps for itself;
    after F9 the small model's warning that a Turkish start gives (its Turkish answers are
    mostly nonsense) was not given."""
    from textual.widgets import Static

    app = WorkstationApp("a", sample_system=False, language="en")
    said = notices(app)  # (a toast expires while a model loads)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        welcome = app.chat_screen.query_one("#welcome", Static)
        # over SSH a terminal can keep F1, F10, F11 or Alt for itself (GNOME Terminal's menu
        # and full screen, a Mac's Option): the welcome said nothing of Ctrl+P, which finds them all
        assert "F9: Türkçe" in str(welcome.render()) and "Ctrl+P finds any command" in str(welcome.render())
        assert not any("135M" in n for n in said)  # English: no warning toast ...
        # ... but the empty chat says the model is too small to trust with facts (a new user took
        # its confident wrong dates and totals for answers; F6 alone warned of it)
        await until(pilot, lambda: "is a very small model (135M parameters): quick, but it often gets names, dates and "
                    "figures wrong, and its replies in languages other than English are often nonsense. Check what it "
                    "says, or choose a larger model with F4." in str(welcome.render()))
        await pilot.press("f9")
        await until(pilot, lambda: any("çok küçük bir model (135M parametre): İngilizce dışındaki dillerde "
                                       "yanıtları çoğu zaman anlamsızdır" in n for n in said))
        assert "F9: English" in str(welcome.render()) and "Ctrl+P her komutu" in str(welcome.render())
        assert "çok küçük bir model (135M parametre): hızlıdır ama" in str(welcome.render())
        # the warning alone: no notice that the screen is in Turkish, which its every line says (the
        # two stacked over F3's verdicts)
        assert not any(n.startswith("Arayüz artık") for n in said), said


async def test_a_turkish_start_keeps_the_small_models_language_warning_in_the_welcome(profiles: Path) -> None:
    """Started in Turkish with the default very small model: the warning that its replies in
    languages other than English are mostly nonsense was a pop-up gone after ~9 s; the welcome
    that stays said only that it gets names, dates and figures wrong. The welcome says both."""
    from textual.widgets import Static

    app = WorkstationApp("a", sample_system=False, language="tr")
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: app.engine is not None and app.small_model is not None)
        welcome = app.chat_screen.query_one("#welcome", Static)
        await until(pilot, lambda: "çok küçük bir model (135M parametre)" in str(welcome.render()))
        assert "İngilizce dışındaki dillerde yanıtları çoğu zaman anlamsızdır" in str(welcome.render())
        assert "adları, tarihleri ve rakamları sık sık yanlış verir" in str(welcome.render())


async def test_a_conversations_title_from_a_long_turkish_message_reads_whole(profiles: Path) -> None:
    """The list named a conversation "Kiracımızdan gelen mesaj şu, buna kibar bir": cut
    mid-phrase, nothing saying it went on. It ends where it reads whole, with "…"."""
    app = WorkstationApp("a", sample_system=False, language="tr")
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await _send_text(pilot, app, "Kiracımızdan gelen mesaj şu, buna kibar bir yanıt yazar mısın: kira gecikecek.")
        await until(pilot, lambda: app.conversation_id is not None and not app.generating)
        assert app.conversation_id is not None
        assert app.store.get(app.conversation_id, with_messages=False).title == "Kiracımızdan gelen mesaj şu…"


async def test_an_engine_killed_while_idle_is_noticed_loaded_again_once_and_the_message_answered(
        profiles: Path) -> None:
    """The engine's process killed while idle (the system, short of memory): the next message
    showed, nothing more, "ready" in the status. Its end is noticed at once and said, the model
    loaded again and the message answered; killed again before a reply, it is left stopped,
    the message stays in the box and the sentence says what to do."""
    import os
    import signal

    app = WorkstationApp("a", sample_system=False, language="en")
    said = notices(app)  # (a toast expires while a model loads)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None and app.loading is None)
        first = app.engine
        os.kill(first.pid, signal.SIGKILL)  # (nothing sent yet)
        await until(pilot, lambda: app.engine is not first)
        stopped = "The model's process stopped (it was killed: most often the system does that when memory runs out)" \
                  "; it is being loaded again."
        assert stopped in said
        assert app.loading is None or "model stopped, loading it again" in app.status_text()
        app.chat_screen.set_input("Hello after the crash")
        await pilot.press("enter")  # while it loads, or once loaded: answered either way
        await until(pilot, lambda: app.engine is not None and app.conversation_id is not None and not app.generating
                    and len(app.store.messages(app.conversation_id)) == 2)
        assert app.engine is not first and app.engine.alive and _views(app)[-1].content.strip()
        assert app.chat_screen.input_text() == ""
        # killed again, then again before a reply: the second time it is left stopped, and said what to do
        os.kill(app.engine.pid, signal.SIGKILL)
        await until(pilot, lambda: app.engine is not None and app.loading is None and app.engine.pid is not None
                    and sum(stopped in s for s in said) == 2)
        os.kill(app.engine.pid, signal.SIGKILL)
        await until(pilot, lambda: app.engine is None and app.engine_problem is not None)
        assert app.engine_problem.startswith("The model's process stopped again (it was killed") \
            and "press F3 to load it again" in app.engine_problem
        assert "model stopped" in app.status_text() and app.loading is None
        app.chat_screen.set_input("Still there?")
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.chat_screen.input_text() == "Still there?" and said[-1] == app.engine_problem


async def test_an_engine_killed_mid_reply_says_why_and_the_next_message_is_answered(
        profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed mid-reply, the reply said only "cut off by an error", and the next Enter said
    "No model is loaded; press F3". The sentence says what happened, the model is loaded
    again, and a message sent meanwhile is answered once it is back."""
    import os
    import signal
    import threading

    # the first load held until the checks made while it loads are done (a quiet PC loaded the
    # model before them: "app.loading is None"); the real load then, as every later one
    hold, load = threading.Event(), WorkstationApp._open_engine

    def held(self: WorkstationApp, profile: object, progress: object) -> object:
        hold.wait(120)
        return load(self, profile, progress)

    monkeypatch.setattr(WorkstationApp, "_open_engine", held)
    app = WorkstationApp("a", sample_system=False, language="en")  # (8 tokens a reply: the story's own length below)
    said = notices(app)  # (a toast expires while a model loads)
    async with app.run_test(size=(100, 30)) as pilot:
        # Enter while the model loads: the message waits in the box, said over it, and goes once it has
        # loaded ("The model is still loading; wait a moment." and it was never sent); changed or Esc:
        # it stays unsent
        from textual.widgets import Input
        prompt = app.chat_screen.query_one("#prompt", Input)
        app.chat_screen.set_input("Hi")
        await pilot.press("enter")
        await until(pilot, lambda: app._send_when_connected == "Hi")
        assert app.loading is not None and app.engine is None  # (a model loads for seconds: still loading)
        assert prompt.border_title == "will be sent once the model has loaded (Esc: not sent)" and prompt.value == "Hi"
        await pilot.press("end", "!")  # changed: not sent, nor said to be
        await until(pilot, lambda: not prompt.border_title)
        await pilot.press("enter")
        await until(pilot, lambda: app._send_when_connected == "Hi!")
        await pilot.press("escape")  # Esc: not sent
        await until(pilot, lambda: not prompt.border_title)
        assert app.loading is not None and app._send_when_connected is None and prompt.value == "Hi!"
        await pilot.press("enter")
        await until(pilot, lambda: app._send_when_connected == "Hi!")
        # F1 open as the load ends: the message waits on until the chat is back (it was dropped, unsent)
        await pilot.press("f1")
        await until(pilot, lambda: app.screen is not app.chat_screen)
        hold.set()
        await until(pilot, lambda: app.engine is not None)
        assert app.screen is not app.chat_screen
        assert app._send_when_connected == "Hi!" and app.conversation_id is None and prompt.value == "Hi!"
        await pilot.press("escape")
        await until(pilot, lambda: app.engine is not None and app.conversation_id is not None and not app.generating
                    and [m.content for m in app.store.messages(app.conversation_id)][:1] == ["Hi!"])
        assert prompt.value == "" and not prompt.border_title and "The model is still loading; wait a moment." not in said
        first = app.engine
        app.session_sampling = dataclasses.replace(app.profile.sampling, max_tokens=400)  # type: ignore[union-attr]
        await _send_text(pilot, app, "Write a long story about a lighthouse keeper.")
        await until(pilot, lambda: len(_views(app)[-1].content.split()) >= 3)
        os.kill(first.pid, signal.SIGKILL)
        await until(pilot, lambda: not app.generating and app.engine is not first)
        app.session_sampling = None
        assert "The model's process stopped (it was killed: most often the system does that when memory runs " \
               "out); it is being loaded again." in said
        assert _views(app)[-1].content.strip()  # what it wrote stays
        app.chat_screen.set_input("Say hello")
        await pilot.press("enter")
        await until(pilot, lambda: app.engine is not None and not app.generating
                    and [m.content for m in app.store.messages(app.conversation_id)][-2:-1] == ["Say hello"])
        assert not any("No model is loaded" in s for s in said)
        assert app.store.messages(app.conversation_id)[-1].role == "assistant"
        # killed while a message goes out, after the send looked at the engine and before its reply
        # began: it said "The turn failed: AttributeError: 'NoneType' object has no attribute …"
        second, add_exchange = app.engine, app.chat_screen.add_exchange

        async def killed_meanwhile(content: str) -> MessageView:
            app.chat_screen.add_exchange = add_exchange  # type: ignore[method-assign]  # (once)
            os.kill(second.pid, signal.SIGKILL)
            for _ in range(1200):  # its end noticed (its watch), as when idle
                if app.engine is not second:
                    break
                await asyncio.sleep(0.05)
            return await add_exchange(content)

        app.chat_screen.add_exchange = killed_meanwhile  # type: ignore[method-assign]
        app.chat_screen.set_input("Say bye")
        await pilot.press("enter")
        await until(pilot, lambda: app.engine not in (None, second) and not app.generating
                    and [m.content for m in app.store.messages(app.conversation_id)][-2:-1] == ["Say bye"])
        assert "The model is being loaded again; your message is sent once it is ready." in said, said
        assert not any("AttributeError" in s or "turn failed" in s for s in said), said
        assert [m.content for m in app.store.messages(app.conversation_id)].count("Say bye") == 1


async def test_a_model_file_changed_on_disk_is_said_before_a_turn_and_loaded_again(
        profiles: Path, smollm2_path: Path, tmp_path: Path) -> None:
    """A model file overwritten while the app had it mapped: the next turn read the mapping
    (a bus error: the engine's process died). The turn is refused first, said, the model
    loaded again, and the message (back in the box meanwhile) answered."""
    import os
    import shutil

    copy = tmp_path / "copy.gguf"
    shutil.copyfile(smollm2_path, copy)
    _profile(profiles / "copied.yaml", str(copy))
    app = WorkstationApp("copied", sample_system=False, language="en")
    said = notices(app)  # (a toast expires while a model loads)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None and app.loading is None)
        first = app.engine
        stat = copy.stat()
        os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # written again in place, as cp does
        await _send(pilot, app, "Hello")
        await until(pilot, lambda: app.engine is not None and app.engine is not first and not app.generating
                    and app.conversation_id is not None and len(app.store.messages(app.conversation_id)) == 2)
        assert "The model file copy.gguf changed on disk since it was loaded (overwritten, cut short or " \
               "replaced); it is being loaded again." in said
        assert [m.role for m in app.store.messages(app.conversation_id)] == ["user", "assistant"]
        assert not first.alive


def test_a_loads_bar_moves_at_most_ten_times_a_second(profiles: Path) -> None:
    """Every share of a load redrew the status bar (4 ms of the app's CPU each; a fifth of the
    app's CPU in these tests). A load's shares reach the app at most every LOAD_BAR_EVERY_S,
    the first and the end always."""
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    posted: list[float] = []
    app.post_message = lambda message: posted.append(message.fraction) or True  # type: ignore[method-assign,attr-defined]
    bar = app._load_bar(load_profile("a"))
    shares = [i / 3000 for i in range(3001)]  # (3 ms of calls: fewer than a tenth go unless they took 30 s)
    for share in shares:  # as fast as llama.cpp's callbacks come: far more than ten a LOAD_BAR_EVERY_S
        bar(share)
    assert posted[0] == 0.0 and posted[-1] == 1.0 and len(posted) < len(shares) // 10, posted


def test_every_part_of_the_app_hears_its_messages() -> None:
    """The app is made of parts (``AppPart`` mixins, tui/app_part.py). Textual drops an ``@on``
    handler without a word in a class its metaclass did not make (Textual issue #3930): each
    ``@on`` of the app and its parts is where Textual's dispatch looks for it."""
    from workstation.tui.app_part import AppPart

    heard: list[str] = []
    for cls in WorkstationApp.__mro__:
        for name, value in vars(cls).items():
            for message_type, selectors in getattr(value, "_textual_on", []):
                registered = vars(cls).get("_decorated_handlers", {}).get(message_type, [])
                assert (value, selectors) in registered, f"{cls.__name__}.{name} never hears {message_type.__name__}"
                if issubclass(cls, AppPart) and cls is not WorkstationApp:
                    heard.append(name)
    assert {"_document_read", "_attachment_measured", "_token", "_finished", "_failed", "_engine_exited",
            "_load_progress", "_loaded"} <= set(heard)


async def test_an_attached_documents_facts_are_shown_in_the_uis_language(profiles: Path, tmp_path: Path) -> None:
    """A Word document's table attached on a Turkish screen: the message shown in the chat read
    "Facts counted by the program from every row:", "Table 1: 6 rows under the header row ..." in
    English. Shown in the UI's language (F9 to English: English), the message kept and sent as it
    was (the model's words, English); Up puts the document back as attached, and the reply's
    counted line is still said.

    Then a CSV of invoices attached on a Turkish screen, asked about, the app quit and started again:
    its message's facts showed in English ("Facts counted by the program from every row:",
    "invoices.csv: 4 rows ...", "2026-01-03") until the document was attached again, for the store
    kept only their English sentence. The facts are kept with the message as data and said in the
    UI's language when it is opened again: Turkish words, the date as 03.01.2026."""
    import docx
    from textual.widgets import Collapsible, Input, Static

    from workstation.core.summary_chunks import FACTS_LABEL
    from workstation.tui import integrations
    from workstation.tui.messages import DocumentRead

    months = ["Ocak", "Şubat", "Mart", "Nisan", "Mayıs", "Haziran"]
    letter = docx.Document()
    for n in range(14):  # (a long one: folded under its name, opened to be read; 14 are enough to fold)
        letter.add_paragraph(f"Satışlar, bölüm {n + 1}.")
    table = letter.add_table(rows=7, cols=2)
    for r, row in enumerate([["Ay", "Tutar"], *[[m, str(100 * (i + 1))] for i, m in enumerate(months)]]):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    path = tmp_path / "satis.docx"
    letter.save(path)
    store = tmp_path / "c.db"
    app = WorkstationApp("a", sample_system=False, language="tr", store_path=store)
    async with app.run_test(size=(110, 40)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        app.post_message(DocumentRead(str(path), *integrations.read_document_text(path)))
        await until(pilot, lambda: app.pending_document is not None and app.pending_document[0] == path)
        attached = app.pending_document[1]
        await _send(pilot, app, "Tutar sütununun toplamı nedir?")
        await until(pilot, lambda: not app.generating and app.conversation_id is not None
                    and len(app.store.messages(app.conversation_id)) == 2
                    and app.store.messages(app.conversation_id)[-1].metrics is not None)
        sent = app.store.messages(app.conversation_id)[0].content
        assert FACTS_LABEL in sent and "Table 1: 6 rows under the header row, 2 columns." in sent  # (the model's)
        view = _views(app)[0]

        async def shown() -> str:
            """The message as the chat shows it, its folded document opened."""
            for block in view.query(Collapsible).results(Collapsible):
                block.collapsed = False
            await pilot.pause()
            return "\n".join([view.body.source, *(str(s.render()) for s in view.query(".folded-text").results(Static))])

        assert view.query(Collapsible)  # (folded, as a long one is)
        said = await shown()
        assert "Programın her satırdan saydığı bilgiler:" in said and "Tablo 1: başlık satırının altında 6 satır" in said
        assert FACTS_LABEL not in said and "Table 1" not in said and "Ocak" in said, said
        assert "Belge: satis.docx" in said, said
        assert "Programın hesabı: Tutar" in str(_views(app)[-1].query_one(".metrics", Static).render())
        # F7's export says the document's line and facts as the chat does, in the UI's language (it wrote
        # "## Siz" over "Document: satis.docx" and the program's facts in English)
        await pilot.press("f7")
        await until(pilot, lambda: isinstance(app.screen, TextPrompt))
        app.screen.query_one(Input).value = str(tmp_path / "satis.md")
        await pilot.press("enter")
        await until(pilot, lambda: (tmp_path / "satis.md").is_file() and app.screen is app.chat_screen)
        exported = (tmp_path / "satis.md").read_text(encoding="utf-8")
        assert "## Siz" in exported and "Belge: satis.docx" in exported, exported
        assert "Programın her satırdan saydığı bilgiler:" in exported and "Tablo 1: başlık satırının altında 6 satır" \
            in exported and FACTS_LABEL not in exported and "Table 1" not in exported, exported
        await pilot.press("f9")
        await until(pilot, lambda: app.texts.lang == "en")
        said = await shown()
        assert FACTS_LABEL in said and "Table 1: 6 rows under the header row, 2 columns." in said, said
        # its line too, sent on a Turkish screen ("Belge: satis.docx" stayed on the English one); stored as sent
        assert "Document: satis.docx" in said and "Belge" not in said, said
        assert "Belge: satis.docx" in app.store.messages(app.conversation_id)[0].content
        app.chat_screen.query_one("#prompt", Input).focus()
        await pilot.press("up")  # the document put back as it was attached (the model's words)
        await until(pilot, lambda: app.pending_document is not None and app.finding_attached is None)
        assert app.pending_document == (path, attached)
        # a CSV of invoices attached on a Turkish screen and asked about in a new conversation
        app.chat_screen.clear_input()
        app._editing = None
        app._attach_document(None)
        await pilot.press("f9")
        await until(pilot, lambda: app.texts.lang == "tr")
        await pilot.press("ctrl+n")
        await until(pilot, lambda: app.conversation_id is None)
        invoices = tmp_path / "invoices.csv"
        invoices.write_text("Invoice,Date,Amount,Status\nINV-101,2026-01-03,1200,unpaid\nINV-102,2026-01-09,300,paid\n"
                            "INV-103,2026-02-11,2500,unpaid\nINV-104,2026-02-20,800,paid\n", encoding="utf-8")
        app.post_message(DocumentRead(str(invoices), *integrations.read_document_text(invoices)))
        await until(pilot, lambda: app.pending_document is not None and app.pending_document[0] == invoices)
        await _send(pilot, app, "total of unpaid invoices")
        await until(pilot, lambda: not app.generating and app.conversation_id is not None
                    and len(app.store.messages(app.conversation_id)) == 2
                    and app.store.messages(app.conversation_id)[-1].metrics is not None)
        conv_id = app.conversation_id
    sent_again = ConversationStore(store).messages(conv_id)[0]
    assert FACTS_LABEL in sent_again.content and "2026-01-03" in sent_again.content  # (the model's words, English)
    assert sent_again.facts and sent_again.facts[0]["title"] == "invoices.csv"  # (kept as data)

    again = WorkstationApp("a", start_engine=False, sample_system=False, language="tr", store_path=store)
    async with again.run_test(size=(110, 40)) as pilot:
        await until(pilot, lambda: again.conversation_id == conv_id and len(_views(again)) == 2)
        view = _views(again)[0]
        for block in view.query(Collapsible).results(Collapsible):
            block.collapsed = False
        await pilot.pause()
        said = "\n".join([view.body.source, *(str(s.render()) for s in view.query(".folded-text").results(Static))])
        assert "Programın her satırdan saydığı bilgiler:" in said and FACTS_LABEL not in said, said
        assert "03.01.2026" in said and "dates from" not in said, said
        assert not again.counted_tables()  # (not attached in this run: said from what the store kept)


def test_the_documents_last_attached_are_kept_up_to_their_number(tmp_path: Path) -> None:
    """The documents last attached are kept for the next start (a message's document found again
    by Up), the newest KEPT_PATHS of them: one attached again goes last, the oldest go."""
    import json

    from workstation.tui.attaching import ATTACHED_KEY, KEPT_PATHS, recalled_paths

    old = [tmp_path / f"doc{i}.txt" for i in range(KEPT_PATHS + 5)]
    store = tmp_path / "c.db"
    app = WorkstationApp("a", sample_system=False, language="en", store_path=store)
    app.store.remember(ATTACHED_KEY, json.dumps([str(p) for p in old]))
    app = WorkstationApp("a", sample_system=False, language="en", store_path=store)
    app._remember_attached(old[-3], "its text")
    kept = [p for p, _ in recalled_paths(app.store.recalled(ATTACHED_KEY))]
    assert kept == [p for p, _ in app._attached_before] and len(kept) == KEPT_PATHS
    assert kept[-1] == old[-3] and kept[0] == old[-KEPT_PATHS] and kept.count(old[-3]) == 1


def test_two_windows_keep_each_others_documents_last_attached(tmp_path: Path) -> None:
    """Two windows of the app on one conversation file, each attaching documents: each wrote its
    own list of the documents last attached over the other's, whose paths were lost (Up after a
    restart found its documents no more). Each adds its own to what is kept, newest last, at
    most KEPT_PATHS; and many written at once by two writers lose none."""
    import subprocess
    import sys

    from workstation.tui.attaching import ATTACHED_KEY, KEPT_PATHS, recalled_paths

    store = tmp_path / "c.db"
    one = WorkstationApp("a", start_engine=False, sample_system=False, language="en", store_path=store)
    two = WorkstationApp("a", start_engine=False, sample_system=False, language="en", store_path=store)
    one._remember_attached(tmp_path / "mine.csv", "mine")
    two._remember_attached(tmp_path / "yours.csv", "yours")  # (its list, read at its start, knew none)
    one._remember_attached(tmp_path / "more.csv", "more")
    kept = recalled_paths(one.store.recalled(ATTACHED_KEY))
    assert [p.name for p, _ in kept] == ["mine.csv", "yours.csv", "more.csv"], kept
    assert one._attached_before == kept  # (what it finds by Up: the other window's too)

    one.store.close()
    two.store.close()
    # two windows (two processes) attaching at the same moment
    attach = ("import sys; from pathlib import Path; from workstation.tui.app import WorkstationApp\n"
              "app = WorkstationApp('a', start_engine=False, sample_system=False, language='en', "
              "store_path=Path(sys.argv[1]))\n"
              "for i in range(30): app._remember_attached(Path(sys.argv[2]) / f'{sys.argv[3]}{i}.csv', str(i))\n")
    writers = [subprocess.Popen([sys.executable, "-c", attach, str(store), str(tmp_path), who]) for who in "ab"]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    two = WorkstationApp("a", start_engine=False, sample_system=False, language="en", store_path=store)
    kept = recalled_paths(two.store.recalled(ATTACHED_KEY))
    names = [p.name for p, _ in kept]
    assert len(kept) == KEPT_PATHS and len(set(names)) == KEPT_PATHS, names
    assert {"a29.csv", "b29.csv"} <= set(names) and names[-1] in ("a29.csv", "b29.csv"), names
    mine = [n for n in names if n.startswith("a")]
    assert mine == [f"a{i}.csv" for i in range(30)][-len(mine):], names  # (its own in order, the newest last)
    two.store.close()


async def test_the_turkish_line_under_a_long_reply_fits_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80x24 in Turkish the line under a reply took two lines where its figures had four digits
    ("TTFT 1.904 ms · 31,1 token/sn · 1.024 token · 0/1.180 yeniden"), and "uzunluk sınırı ·
    Alt+C sürdürür" went under it: the figures least worth a look are left out where it would
    wrap (the cache's counts, the guesses kept, the length, then the wait, the speed last), how it
    ended and the key that goes on never; wider, they are all back. The record is a real reply's cut
    at its limit."""
    from tui_helpers import make_app

    from workstation.core.metrics import TurnMetrics

    app = make_app(tmp_path, monkeypatch, language="tr")
    record = TurnMetrics(ttft_ms=1904.2, prompt_n=1180, cache_n=0, prompt_ms=1180 / 0.28, predicted_n=1024,
                         predicted_ms=1024 / 31.1 * 1000, kv_used=2204, kv_size=4096, stop_reason="length")
    record.finish_rates()
    async with app.run_test(size=(80, 24)) as pilot:
        figures = await _reply_figures(pilot, app, ("Rapor", "Raporu yaz.", "Rapor uzun bir metin ve burada kesildi"),
                                       record, "Alt+C")
        await until(pilot, lambda: figures.size.height == 1 and "uzunluk sınırı · Alt+C sürdürür" in str(figures.render()))
        line = next(row for row in screen_lines(app) if "uzunluk sınırı" in row)
        assert "31,1 token/sn · uzunluk sınırı · Alt+C sürdürür" in line, line  # (the speed left out last)
        await pilot.resize_terminal(160, 30)  # room for every figure: all said again
        await until(pilot, lambda: "TTFT 1,9 sn · 31,1 token/sn · 1.024 token · uzunluk sınırı"
                    in str(figures.render()))
        assert figures.size.height == 1


async def _reply_figures(pilot, app: WorkstationApp, exchange: tuple[str, str, str], record: TurnMetrics,
                         key: str) -> Widget:
    """A conversation (title, question, reply with ``record``'s figures) stored and opened: the line of
    figures under its reply, once it names ``key`` (Alt+C, Alt+R)."""
    title, asked, answered = exchange
    conv = app.store.new(title)
    app.store.add_message(conv.id, "user", asked)
    app.store.add_message(conv.id, "assistant", answered, record.to_dict())
    await app.open_conversation(conv.id)
    await until(pilot, lambda: len(_views(app)) == 2 and key in _views(app)[-1]._metrics_text())
    return _views(app)[-1].query_one(".metrics")


async def test_the_list_shows_a_conversations_title_whole_where_it_has_room(profiles: Path) -> None:
    """A new conversation's title (up to 48 letters) showed its first 22 in the list at 110 columns,
    "Write a short thank-yo…": on two lines it is whole; a longer one (renamed) ends with "…" there,
    and at 80 columns a title is cut with "…" within the list's width."""
    from textual.widgets import Label

    from workstation.tui.widgets.conversation_list import ConversationItem

    title = "Write a short thank-you email to our supplier…"
    store = ConversationStore()
    store.new("A renamed conversation whose title is far longer than the list can show on two lines")
    store.new(title)
    store.close()
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        sidebar = app.chat_screen.sidebar
        await until(pilot, lambda: len(sidebar.query(ConversationItem)) == 2)
        for size in ((110, 32), (80, 24)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            labels = [item.query_one(Label) for item in sidebar.query(ConversationItem)]
            rows = [[line[r.x:r.right].strip() for line in screen_lines(app)[r.y:r.bottom]]
                    for r in (label.region for label in labels)]
            assert all(len(row) == 2 for row in rows), rows
            if size == (110, 32):
                assert " ".join(rows[0]) == title, rows  # (the newest first)
            assert rows[1][-1].endswith("…") and rows[1][1].startswith("whose " if size[0] == 110 else "conversation "), rows


async def test_a_documents_size_is_said_in_words_on_its_line_and_its_fold_after_f9(profiles: Path) -> None:
    """A document's size was said in characters on the line that attached it ("(880 characters)") and
    in its message's fold, and in words once measured ("about 1,100 words"): after F9 one line said
    "karakter", the next "sözcük". Words everywhere, in either language."""
    from textual.widgets import Collapsible

    memo = "Meeting at ten in the small room.\n" * 40  # 280 words
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        app._attach_document((Path("/docs/memo.txt"), memo))
        line = app.chat_screen.query_one("#attachment")
        assert str(line.render()).startswith("Attached: memo.txt (about 280 words);"), str(line.render())
        conv = app.store.new("Memo")
        app.store.add_message(conv.id, "user", f"Check it.\n\n---\nDocument: memo.txt\n\n{memo}")
        await app.open_conversation(conv.id)
        await until(pilot, lambda: len(_views(app)) == 1)
        app._attach_document((Path("/docs/memo.txt"), memo))  # (put away as the conversation opened)
        await pilot.press("f9")
        await until(pilot, lambda: app.texts.lang == "tr" and "sözcük" in str(line.render()))
        assert str(line.render()).startswith("Eklendi: memo.txt (yaklaşık 280 sözcük);"), str(line.render())
        await pilot.pause()
        block = _views(app)[0].query_one(".folded", Collapsible)
        assert "(yaklaşık 280 sözcük)" in str(block.title) and "karakter" not in str(block.title), block.title


async def test_an_expanded_sheet_is_headed_in_the_ui_language(profiles: Path, tmp_path: Path) -> None:
    """A workbook sent with a message, its fold opened under --lang tr: the text began "Sheet:
    Faturalar"; it says "Sayfa: Faturalar", as the facts name it. What the model read stays the
    reader's heading, as the facts it is given name the sheet ("Sheet: Faturalar")."""
    from docmaker import make_xlsx
    from textual.widgets import Collapsible, Static

    from workstation.core.documents import read_document

    book = read_document(make_xlsx(tmp_path / "Faturalar.xlsx", [("Faturalar", [["Müşteri", "Tutar"], ["Ayla", 1200]])]))
    assert book.text.startswith("Sheet: Faturalar\n"), book.text
    sent = f"Toplam ne?\n\n---\nBelge: Faturalar.xlsx\n\n{book.text}\n" + "\n".join(f"satır {i}" for i in range(40))
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(110, 32)) as pilot:
        conv = app.store.new("Faturalar")
        app.store.add_message(conv.id, "user", sent)
        await app.open_conversation(conv.id)
        await until(pilot, lambda: len(_views(app)) == 1)
        block = _views(app)[0].query_one(".folded", Collapsible)
        block.collapsed = False
        await pilot.pause()
        shown = str(_views(app)[0].query_one(".folded-text", Static).render())
        assert shown.startswith("Sayfa: Faturalar\n") and "Sheet:" not in shown, shown
        assert app.store.get(conv.id).messages[0].content == sent  # (the model's words: as they were)


@pytest.mark.parametrize("language", ["en", "tr"])
async def test_a_reply_stopped_for_repeating_itself_keeps_its_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, language: str
) -> None:
    """A reply stopped because it began repeating itself read "TTFT 921 ms · 21.1 tok/s · stopped:
    it began repeating itself · Alt+R asks again" at 110 columns: the token count left out to fit
    the long reason (in Turkish the wait too; at 80 columns every figure). Where all the figures
    do not fit beside it, the reason and Alt+R go on a line of their own under them, and nothing
    wraps, at 110 and at 80 columns."""
    from tui_helpers import make_app

    from workstation.core.metrics import TurnMetrics

    app = make_app(tmp_path, monkeypatch, language=language)
    record = TurnMetrics(ttft_ms=921.4, prompt_n=412, cache_n=0, prompt_ms=412 / 0.28, predicted_n=287,
                         predicted_ms=287 / 21.1 * 1000, kv_used=699, kv_size=4096, stop_reason="loop")
    record.finish_rates()
    tokens = {"en": "287 tokens", "tr": "287 token"}[language]
    async with app.run_test(size=(110, 32)) as pilot:
        figures = await _reply_figures(pilot, app, ("Loop", "Write the word ok five times.",
                                                    "ok ok ok ok ok. Write the word ok five times."), record, "Alt+R")
        for size in ((110, 32), (80, 24)):
            await pilot.resize_terminal(*size)
            columns = size[0]
            await until(pilot, lambda: figures.content_region.width < columns - 20  # noqa: B023 (looked at at once)
                        and "Alt+R" in str(figures.render()))
            await pilot.pause()
            said = str(figures.render())
            width = figures.content_region.width
            assert "TTFT" in said and tokens in said and "Alt+R" in said, (size, said)
            assert all(len(line) <= width for line in said.split("\n")), (size, said)  # (none wraps)
            assert figures.size.height == 2 and said.split("\n")[1].startswith(app.texts("metric.loop")), (size, said)
