"""The TUI around the chat, driven by Pilot with the real engine (SmolLM2 in its child
process): the language and the palette, the footers, the Open dialog, the dashboard, serving
beside the chat, the models and summarize screens, quitting mid-reply and a summary behind the
chat (split from test_tui.py, which keeps the chat, its conversations and the terminal:
pytest-xdist with --dist loadfile gives a file to a process, and the one file set the suite's
time). Waiting is done with pilot.pause and app.workers, never with sleeps.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import tui_profile as _profile
from docmaker import make_xlsx
from textual import events
from textual.screen import ModalScreen, Screen
from textual.widgets._footer import FooterKey
from tui_helpers import (
    f6_state,
    notices,
    open_dialog,
    screen_lines,
    summarize_in_f6,
    type_message,
    until,
    workers_done,
)
from tui_helpers import message_views as _views
from tui_helpers import send_message as _send
from tui_helpers import send_text as _send_text

from workstation.core.errors import WorkstationError
from workstation.core.phrases import ENGLISH, say
from workstation.core.profile_lookup import load_profile
from workstation.core.store import ConversationStore
from workstation.tui.app import WorkstationApp
from workstation.tui.i18n import Texts, detect_language
from workstation.tui.messages import SystemSampled
from workstation.tui.screens.dashboard import live_said
from workstation.tui.screens.dialogs import ConfirmDialog, KeysDialog
from workstation.tui.screens.profile_menu import ProfileMenu
from workstation.tui.widgets.line_input import LineInput


async def _f4_listed(pilot, app: WorkstationApp):  # noqa: ANN001, ANN202 - (Pilot; the screen's type imported late)
    """F4 opened, its installed models listed: the screen."""
    from workstation.tui.screens.models import ModelsScreen

    await pilot.press("f4")
    await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.installed))
    assert isinstance(app.screen, ModelsScreen)
    return app.screen


async def test_language_switch_and_palette(profiles: Path) -> None:
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:  # (toasts drawn: their lines counted)
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert any(t.startswith("Profiles (F3)") for t in titles)  # the keys as F1 writes them
        assert any(t.startswith("Dashboard (F5)") for t in titles)
        # what F5 shows in words first, each term after ("TTFT, tokens per second, KV cache" alone was jargon)
        dash_help = next(c.help for c in app.get_system_commands(app.screen) if c.title.startswith("Dashboard (F5)"))
        assert dash_help.startswith("How fast replies come and what this PC is doing: the wait for the first word "
                                    "(TTFT), the writing speed (tok/s)"), dash_help
        assert [t for t in titles if t.startswith("Quit")] == ["Quit (Ctrl+Q)"]  # one, with its key
        assert "Stop (Esc)" in titles and not any("escape" in t for t in titles)
        assert not any(t.startswith("Remove the attachment") for t in titles)  # nothing attached
        app._attach_document((profiles / "notes.txt", "The meeting is on Tuesday."))
        assert "Remove the attachment (Ctrl+R)" in [c.title for c in app.get_system_commands(app.screen)]
        assert "ctrl+r" in app.screen.active_bindings  # the footer's and F1's, as Ctrl+P's: while one is attached
        app._attach_document(None)
        assert "ctrl+r" not in app.screen.active_bindings
        assert "Theme" in titles and "Screenshot" in titles  # Textual's own, as Textual words them
        assert any(t.startswith("Language: Türkçe") for t in titles)  # found by "language" too
        footer = {key for key, b in app.active_bindings.items() if b.binding.show}
        assert "ctrl+q" in footer and "f1" in footer and "f10" not in footer  # the footer has room for few
        assert [t for t in titles if t.startswith(("Keys", "Help"))] == ["Help (F1)"]  # not Textual's Keys too
        await pilot.press("f1")  # every key, those the footer has no room for too, with what it does
        await until(pilot, lambda: isinstance(app.screen, KeysDialog))
        # a newcomer's keys first, then a blank line (it began with Ctrl+E's sampling settings)
        assert [(key, name) for key, name, _ in app.screen.rows[:7]] == [
            ("Enter/Ctrl+S", "Send"), ("Ctrl+N", "New"), ("Ctrl+O", "Attach"), ("F3", "Profiles"), ("F4", "Models"),
            ("Ctrl+Q", "Quit"), ("", "")], app.screen.rows
        rows = {key: (name, what) for key, name, what in app.screen.rows}
        assert rows["F10"] == ("Size the office", Texts("en")("action.sizing.help")) and "Ctrl+N" in rows
        assert "Ctrl+R" not in rows  # nothing attached: nothing to remove (it was listed, as in the footer)
        # the chat's parts too: how to scroll it and go from part to part (F1 named neither)
        assert rows["PgUp/PgDn"] == ("Scroll", "Scroll the chat, from the message box") and "Tab" in rows
        assert rows["Ctrl+Y"] == ("Copy reply", Texts("en")("action.copy.help"))
        assert "in the multi-line editor Ctrl+Y is its redo" in rows["Ctrl+Y"][1]  # where it does not copy
        assert rows["Ctrl+E"] == ("Sampling", Texts("en")("action.sampling.help"))
        # the kinds of document Ctrl+O's dialog lists, here and in Ctrl+P's list (they left CSV out, and it is read)
        kinds = "(text, Word (.docx), PDF, Excel (.xlsx), CSV, PowerPoint (.pptx), e-mail (.eml) and web page)"
        assert kinds in rows["Ctrl+O"][1], rows["Ctrl+O"]
        assert [c.help for c in app.get_system_commands(app.chat_screen) if c.title.startswith("Attach")] == [
            rows["Ctrl+O"][1]]
        # (Turkish: the text is added to the message, 'eklenir'; it "entered" it, 'girer')
        assert Texts("tr")("action.attach.help").endswith(" ve web sayfası); metni bir sonraki mesajınıza eklenir")
        # what the figures under a reply mean, for a keyboard's user too (a mouse's tooltip said it)
        assert app.screen.rows[-1] == ("", "Figures under a reply", Texts("en")("metric.help", bench="workstation bench"))
        # in words: "in tokens a second" explained a figure with the word it was there to explain
        assert "in word pieces a second" in app.screen.rows[-1][2] and "tokens a second" not in app.screen.rows[-1][2]
        assert "a of b already read: " in app.screen.rows[-1][2]  # the line's "30 of 40 already read", explained in F1
        assert "guesses kept: " in app.screen.rows[-1][2] and "draft" not in app.screen.rows[-1][2]  # as F3 and F5 say it
        await pilot.press("f1")
        await until(pilot, lambda: app.screen is app.chat_screen)
        await pilot.press("f6")  # the summarize screen, kept by the app once made
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        app._attach_document((Path("memo.txt"), "Meeting at ten"))
        # toasts still shown are said again in the new language, with their time left; one that
        # cannot be (two sentences joined) is put away: a Turkish warning stayed on the English screen
        app.notify(app.texts("load.reset_failed", file="a.yaml", error="busy"), severity="warning", timeout=60)
        app.notify(app.texts("load.unchanged") + " " + app.texts("load.unchanged"), timeout=60)
        await pilot.pause()
        expires = [n.raised_at + n.timeout for n in app._notifications]
        # at 80x24 a notice that all went well takes the lines of its words only (two hid half the
        # chat), a warning keeps its blank lines; a short one goes sooner (it stayed as a long one)
        await until(pilot, lambda: len(app.screen.query("Toast")) == 2)
        warned, fine = app.screen.query("Toast")
        # (60 columns wide, not half the screen: a path broke mid-word, and this one took 3 lines;
        # the chat's are as wide as its column, 58 beside the list at 80)
        assert fine.region.height == fine.content_region.height == 2 and fine.region.width == 58, fine.region
        assert fine.region.x == app.chat_screen.query_one("#chat").region.x  # (not over the list)
        assert warned.region.height == warned.content_region.height + 2, warned.region
        # a path too long for the line breaks after a slash, not inside the file's name ("…-a-cli" / "ent-Mr-Brown.md.")
        app.notify(app.texts("conv.exported", path="/home/ayse/Documents/Exports/Write-a-short-email-to-a-client-Mr-Brown.md"),
                   kind="export")
        await until(pilot, lambda: any(line.rstrip().endswith("Write-a-short-email-to-a-client-Mr-Brown.md.")
                                       for line in screen_lines(app)))
        assert any(line.rstrip().endswith("Wrote the conversation to /home/ayse/Documents/Exports/") for line in screen_lines(app))
        assert app._notifications and all("\n" not in n.message for n in app._notifications)  # (the notice's words as said)
        app.put_away("export")
        assert 3.0 <= app.reading_time("Copied the last reply (9 characters).") < 4.0
        # by its characters, in any language: Turkish says as much in fewer, longer words (it went sooner)
        assert app.reading_time(Texts("tr")("load.unchanged")) == app.reading_time(Texts("en")("load.unchanged"))
        assert app.reading_time(Texts("tr")("fit.no_chat_template", model="m"), least=5.0, most=8.0) == 8.0
        assert app.reading_time(app.texts("load.saved_copy", file="/home/ayse/profiles/long.yaml")) == 5.0
        # Ctrl+E's notice: its settings are said again in Turkish too ("…kullanır: Temperature 0.2." was half English)
        own = dataclasses.replace(app.profile.sampling, temperature=0.25, max_tokens=1200)
        app.notify(applied := app.texts("sampling.applied", changes=app._sampling_said(own)), timeout=60)
        assert applied.endswith(": Temperature 0.25, Longest reply 1,200."), applied
        await pilot.press("f9")
        await pilot.pause()
        assert app.texts.lang == "tr"
        shown = [(n.title, n.message, n.raised_at + n.timeout) for n in app._notifications]
        assert shown[0] == ("Uyarı", "a.yaml kopyanız kenara konamadı (busy); kullanılmaya devam ediyor.", expires[0])
        assert not any(m.startswith(("No setting", "Hiçbir ayar")) for _, m, _ in shown), shown
        assert "Bundan sonra bu sohbetin yanıtları şunları kullanır: Sıcaklık 0,25, En uzun yanıt 1.200." in [
            m for _, m, _ in shown], shown
        attached = str(app.chat_screen.query_one("#attachment").render())
        assert attached == app.texts("chat.attached", name="memo.txt", n=3, remove="Ctrl+R") != Texts("en")(
            "chat.attached", name="memo.txt", n=3, remove="Ctrl+R")  # it stayed in English
        app._attach_document(None)
        kept = app.summarize_screen()  # relabelled although it was not showing
        assert kept.query_one("#summarize-path").placeholder == app.texts("summarize.path") != "Document to summarize"
        assert "yüklü değil" in app.status_text()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert any(t.startswith("Profiller (F3)") for t in titles)
        assert "Tema" in titles and "Ekran görüntüsü" in titles and "Theme" not in titles  # Textual's too
        assert any(t.startswith("Yeni (") for t in titles)  # in the chat, its own keys are offered
        await pilot.press("ctrl+p")  # the palette's search box too
        await pilot.pause()
        assert app.screen.query_one("CommandInput").placeholder == "Komut ara…"
        # the notices still due are not over it (they covered its search box for seconds), and
        # are back as it closes
        assert app._notifications and not any(toast.region for toast in app.screen.query("Toast"))
        # Turkish capitals found (Python's lower() made KULLANIM "kullanim", İNGİLİZCE an i with a dot)
        from textual.command import CommandList
        for typed, found in (("KULLANIM", "Kullanım"), ("İNGİLİZCE", "İngilizce")):
            await palette_search(pilot, typed)
            await until(pilot, lambda found=found: any(
                found in str(o.prompt) for o in app.screen.query_one(CommandList).options))
        await palette_search(pilot, "zzqx")  # none: said in Turkish ("No matches found")
        await until(pilot, lambda: any("Eşleşen komut yok." in str(o.prompt)
                                       for o in app.screen.query_one(CommandList).options))
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen and any(toast.region for toast in app.screen.query("Toast")))
        await pilot.press("f4")  # a screen's own keys in its footer
        await pilot.pause()
        await pilot.press("f1")  # and first in F1's list, in the UI's language; not the chat's own
        await until(pilot, lambda: isinstance(app.screen, KeysDialog))
        keys = app.screen
        assert keys.rows[0] == ("Esc", "Geri", "Sohbete dön")  # named as the app's keys are, with what it does
        assert ("p", "İndir", "Vurgulanan katalog modelini indir") in keys.rows  # a Turkish capital İ
        assert ("Sol ok/Sağ ok", "Diğer liste", "Kurulu modeller ile katalog arasında geç") in keys.rows  # one row, in Turkish words
        f_keys = [int(key[1:]) for key, _, _ in keys.rows if key[:1] == "F" and key[1:].isdigit()]
        assert f_keys == sorted(f_keys) and len(f_keys) >= 8, f_keys  # it went F6, F12, F10, F11, F9
        assert keys.rows[-1][1:] == ("Bu ekrandaki sözcük ve rakamlar", app.texts("models.terms"))  # what Q4_K_M and the like mean
        assert not any(name in ("Yeni", "Durdur", "Gönder", "Adlandır", "Mesaj kutusu") for _, name, _ in keys.rows)  # the chat's
        assert not any(key in ("F2", "F8", "Ctrl+L") for key, _, _ in keys.rows)  # they act on the chat's conversation
        assert str(keys.query_one(".dialog-title").render()) == "Tuşlar"
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, KeysDialog))
        shown = {b.binding.description for b in app.active_bindings.values() if b.binding.show}
        assert {"indir", "dosya ekle", "geri", "sil", "yenile"} <= shown, shown
        assert "pull" not in shown
        elsewhere = [c.title for c in app.get_system_commands(app.screen)]  # the chat's own keys stay there
        assert not any(t.startswith(("Yeni (", "Durdur (")) for t in elsewhere)
        assert any(t.startswith("Modeller (") for t in elsewhere)
        palette = next(b for b in app._bindings.key_to_bindings["ctrl+p"] if b.action == "command_palette")
        assert palette.description == "komutlar"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("f6", "f1")  # F6's own keys first, in its order: Ctrl+K (a priority key) came after the app's
        await until(pilot, lambda: isinstance(app.screen, KeysDialog))
        assert [key for key, _, _ in app.screen.rows[:4]] == ["Esc", "Ctrl+R", "Ctrl+K", "Ctrl+O"]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, KeysDialog))

        async def toasts_clear_of(*what: str) -> None:  # the notices not over what is read at the screen's top
            await until(pilot, lambda: any(toast.region for toast in app.screen.query("Toast")))
            covered = [(toast.region, w) for toast in app.screen.query("Toast") for w in what
                       if toast.region.overlaps(app.screen.query_one(w).region)]
            assert not covered, covered

        # (the chat's "The message box is empty" sat over F6's path box, a "Problem" over F5's speeds)
        app.clear_notifications()  # (those above, and these two)
        app.notify(app.texts("chat.cleared"), timeout=60)
        app.notify(app.texts("lang.not_saved", path="/tmp/x"), severity="error", timeout=60)
        await toasts_clear_of("#summarize-path", "#summarize-bar")
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("f5")
        await pilot.pause()
        assert type(app.screen).__name__ == "DashboardScreen"
        await toasts_clear_of("#headline", "#row-ttft", "#row-decode", "#row-prompt", "#row-tpot", "#kv-row")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.chat_screen


async def test_chat_notices_sit_above_the_message_box_clear_of_the_last_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At the top right "Wrote the conversation to …" sat over the reply being read (a
    conversation's newest lines are at its bottom), and at 80x24 three notices reached down over
    the message box. They sit right above the message box (and the attach line), the chat's last
    lines kept clear of them, at 80x24 and 120x35: after an export, an attach, a warning, an error."""
    from textual.errors import NoWidget
    from textual.geometry import Region
    from textual.widget import Widget
    from tui_helpers import make_app

    from workstation.tui.messages import DocumentRead
    from workstation.tui.screens.dialogs import TextPrompt

    monkeypatch.setenv("HOME", str(tmp_path))  # where F7 writes
    app = make_app(tmp_path, monkeypatch)  # a conversation of two questions and their replies, no model
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        chat = app.chat_screen

        def shown(widget: Widget) -> Region:  # the part on the screen (a toast scrolled out of the rack: none)
            try:
                found = chat.find_widget(widget)
            except NoWidget:
                return Region()
            return found.region.intersection(found.clip)

        def covered() -> list[tuple[Region, Region, Region]]:  # a notice over the last message or the box
            last, box = shown(_views(app)[-1]), shown(chat.query_one("#composer"))
            return [(r, last, box) for r in map(shown, chat.query("Toast")) if r.overlaps(last) or r.overlaps(box)]

        def read_clear(said: str) -> bool:  # the notice shown, the last message's last lines too, none covered
            last = _views(app)[-1]
            return (app.screen is chat and any(said in str(t.render()) and shown(t) for t in chat.query("Toast"))
                    and shown(last).bottom == last.region.bottom and not covered())

        async def clear_of_them(said: str) -> None:
            await until(pilot, lambda: read_clear(said), steps=400)
            assert read_clear(said), covered()

        await until(pilot, lambda: len(_views(app)) == 4)
        for size in ((80, 24), (120, 35)):
            await pilot.resize_terminal(*size)
            await pilot.press("f7")  # F7: the conversation exported where it offers
            await until(pilot, lambda: isinstance(app.screen, TextPrompt))
            await pilot.press("enter")
            await clear_of_them("Wrote the conversation to")
            for name in ("notes.txt", "memo.txt"):  # the second in the first's place: a warning, the attach line above the box
                app.post_message(DocumentRead(str(tmp_path / name), f"The {name} text."))
            await clear_of_them("memo.txt takes the place of notes.txt")
            await type_message(pilot, "Hello")  # no model loaded: said
            await clear_of_them("No model is loaded")
            app.notify(app.texts("lang.not_saved", path="/tmp/x"), severity="error")
            await clear_of_them("Problem")
            app.clear_notifications()
            app._attach_document(None)
        # none shown: the chat's lines back, down to the message box
        await until(pilot, lambda: chat.log_view.region.bottom == chat.query_one("#composer").region.y)


def footer_keys(screen: Screen[Any]) -> list[tuple[str, int, int]]:
    """The keys a screen's footer shows: (action, first column, column after the last)."""
    from textual.widgets._footer import FooterKey

    return [(k.action, k.region.x, k.region.right) for k in screen.query(FooterKey) if k.region.width]


def fits(keys: list[tuple[str, int, int]], width: int = 80) -> bool:
    """The footer's keys side by side, none over another, all inside the screen."""
    ends = sorted((x, right) for _, x, right in keys)
    return ends[-1][1] <= width and all(a[1] <= b[0] for a, b in zip(ends, ends[1:], strict=False))


async def palette_search(pilot: Any, typed: str) -> None:
    """``typed`` put whole in Ctrl+P's search box, its list once that search has ended (typing it
    key by key searched again at each key, and the backspaces after it at each too: a test that is
    about what the search finds spent most of its time there)."""
    from textual.command import CommandInput

    box = pilot.app.screen.query_one(CommandInput)
    box.value = typed
    box.cursor_position = len(typed)
    await pilot.pause()  # (its change handled: the search under way)
    await workers_done(pilot)
    await pilot.pause()


@functools.cache
def _table_sizing(ref: str, people: int | None) -> Any:
    from conftest import table_only

    return table_only(ref, people)


@pytest.mark.parametrize("language", ["en", "tr"])
async def test_every_screens_footer_fits_80_columns_with_its_own_keys_first(
        profiles: Path, language: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """F4, F6, F11 and F12 ran past 80 columns (the app's F3-F5 after the screen's keys, the
    palette's key drawn over them) and F4 named itself; the dashboard showed no way back but F5.
    Every screen but the chat shows its own keys, then Help and Quit; F1 lists the rest, which
    still work there."""
    from workstation.tui.screens import sizing

    # F10's sizing, the shipped table's, made once for both languages (its footer is not its figures:
    # 1.5 s of CPU each time)
    monkeypatch.setattr(sizing, "size_here", lambda ref, people=None, profile=None: _table_sizing(ref, people))
    app = WorkstationApp("a", start_engine=False, sample_system=False, language=language)
    async with app.run_test(size=(80, 24)) as pilot:
        for key in ("f4", "f5", "f6", "f10", "f11", "f12"):
            await pilot.press(key)
            await until(pilot, lambda: app.screen is not app.chat_screen)
            await pilot.pause()
            keys = footer_keys(app.screen)
            actions = [a for a, _, _ in keys]
            back = "back" if key == "f6" else "app.pop_screen"  # F6's Esc leaves its summary running
            assert fits(keys) and actions[0] in (back, "ask"), (key, keys)
            assert {"help", "quit", back} <= set(actions), (key, actions)
            assert not {"profiles", "models", "dashboard", "command_palette"} & set(actions), (key, actions)
            # nor the key that opens it, even where there is room for it (F6 had "f6 Summarize")
            own = {"f4": "models", "f5": "dashboard", "f6": "summarize", "f10": "sizing", "f11": "usage", "f12": "quality"}
            assert own[key] not in {k.action for k in app.screen.query(FooterKey)}, key
            if key == "f6":  # its main way to pick a file, which only the Choose… button said
                assert "browse" in actions, actions
                app.screen.running = True  # type: ignore[attr-defined]  # a summary running: Stop, Help and Quit
                app.screen.refresh_bindings()
                await pilot.pause()
                running = footer_keys(app.screen)
                assert fits(running) and {"stop", "help", "quit", "back"} <= {a for a, _, _ in running}, running
                app.screen.running = False  # type: ignore[attr-defined]
                app.screen.refresh_bindings()
            await pilot.press("f3")  # the app's keys still work there: F3 takes the screen's place, as F4 F5's
            await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
            assert app.screen_stack[-2] is app.chat_screen, key  # (it opened over F4: Esc went back to F4)
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is app.chat_screen)
        assert {"profiles", "models", "dashboard", "command_palette"} <= {a for a, _, _ in footer_keys(app.screen)}
        # at 60 columns (an SSH window) the chat's keys ran under the palette's ('f4 Model▏'):
        # those that do not fit whole are left out, and come back in a wider window
        await pilot.resize_terminal(60, 20)
        await until(pilot, lambda: fits(footer_keys(app.screen), 60) and "models" not in
                    {a for a, _, _ in footer_keys(app.screen)})
        assert {"quit", "help", "command_palette"} <= {a for a, _, _ in footer_keys(app.screen)}
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: "dashboard" in {a for a, _, _ in footer_keys(app.screen)})


@pytest.mark.parametrize("language", ["en", "tr"])
async def test_the_chat_footer_fits_80_columns_with_stop_in_place_of_new(profiles: Path, language: str) -> None:
    """At 80 columns the chat's footer cut F5 (Dashboard) under the palette's key. Esc (stop)
    is there while a reply streams, in the place of Ctrl+N (new; it stops the reply first)."""
    app = WorkstationApp("b", sample_system=False, language=language)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.engine is not None)

        async def footer() -> list[tuple[str, int, int]]:
            await pilot.pause()
            return footer_keys(app.chat_screen)

        idle = await footer()
        assert {"dashboard", "new_conversation", "command_palette"} <= {a for a, _, _ in idle}, idle
        assert "stop" not in {a for a, _, _ in idle} and fits(idle), idle
        await _send_text(pilot, app, "Write a long story about a dragon.")
        await until(pilot, lambda: app.live_tokens >= 3)
        streaming = await footer()
        assert app.generating and {"stop", "dashboard"} <= {a for a, _, _ in streaming}, streaming
        assert "new_conversation" not in {a for a, _, _ in streaming} and fits(streaming), streaming
        await pilot.press("f5")  # the first reply's live speed: said as this reply (it said "last 0 turns")
        await until(pilot, lambda: bool(app.screen.query("#row-decode")) and bool(
            app.screen.query_one("#row-decode .metric-spark").data))  # type: ignore[attr-defined]
        decode_name = str(app.screen.query_one("#row-decode .metric-name").render())
        assert decode_name.endswith("\n" + app.texts("dash.axis_this_reply")) and " 0 " not in decode_name, decode_name
        # the conversation memory fills as the reply is written, its unit said (it read "0/1,024" till the end)
        kv = app.screen.query_one("#kv-value")
        await until(pilot, lambda: not str(kv.render()).startswith("0/"))
        assert str(app.screen.query_one("#kv-name").render()).endswith({"en": ", tokens", "tr": ", token"}[language])
        # the line above the rows in words first, the figures' terms after ("Generating: 12 tokens so
        # far, 80.1 tok/s" was jargon to a first user), on its one line at 80 columns
        live = app.screen.query_one("#live")
        said = str(live.render())
        assert said.startswith({"en": "Writing: about ", "tr": "Yazılıyor: yaklaşık "}[language]), said
        assert " tok" in said and len(said) <= live.size.width, (said, live.size)
        # before the first word (the office server's queue, a long prompt read) it says it waits: it
        # said "Writing: about 0.0 words so far, … a second (0 tokens, … tok/s)"
        waiting = {"en": "Waiting for the first word…", "tr": "İlk sözcük bekleniyor…"}[language]
        assert live_said(0, None, app.texts) == waiting
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        await pilot.press("f6")  # F6's Choose… says the model is busy (it said none was loaded)
        await until(pilot, lambda: app.screen is not app.chat_screen)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: sum(n.message == app.busy_text() for n in app._notifications) == 1)
        assert not any("No model" in n.message for n in app._notifications)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        await pilot.press("escape")  # still stops the reply
        await until(pilot, lambda: not app.generating)
        assert app.last_metrics is not None and app.last_metrics.stop_reason == "cancelled"
        assert "new_conversation" in {a for a, _, _ in await footer()}


async def test_the_open_dialog_says_an_empty_subfolder_and_takes_a_name_without_its_extension(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Enter on an empty folder in the list opened it in place with nothing under it and no word
    (the folder shown, empty, says why); a name typed without its extension ("note0001" beside the
    only note0001.txt) said "There is no '…/note0001'": the one file of that name is taken."""
    from textual.widgets import Input

    from workstation.tui.screens.file_picker import FileTree

    docs = tmp_path / "docs"
    (docs / "a-empty").mkdir(parents=True)
    (docs / "note0001.txt").write_text("Meeting at ten.\n", encoding="utf-8")
    (docs / "note0001.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # a kind not opened here: not counted
    monkeypatch.chdir(docs)
    monkeypatch.setenv("HOME", str(docs))
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_dialog(pilot, app)
        tree = screen.query_one(FileTree)
        await until(pilot, lambda: bool(tree.root.children) and not tree.loading)
        assert tree.cursor_node is not None and str(tree.cursor_node.label) == "a-empty"
        problem = screen.query_one("#picker-problem")
        await pilot.press("enter")  # opened in place: said as the folder shown says it
        await until(pilot, lambda: problem.display and str(problem.render()).startswith("Nothing to open in this folder."))
        await pilot.press("down")  # past it: said no more
        await until(pilot, lambda: not problem.display)
        path_line = screen.query_one("#picker-path", Input)
        path_line.focus()
        path_line.value = "note0001"
        await pilot.press("enter")
        await until(pilot, lambda: app.pending_document is not None or (problem.display and "There is no" in str(problem.render())))
        assert app.pending_document == (docs / "note0001.txt", "Meeting at ten."), str(problem.render())


async def test_the_open_dialog_asks_which_of_two_files_a_name_without_its_extension_is(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """"report" typed beside report.docx and report.txt said "There is no '…/report'": both are
    named and the dialog asks which; the whole name then opens that one."""
    from docmaker import make_docx
    from textual.widgets import Input

    docs = tmp_path / "docs"
    docs.mkdir()
    make_docx(docs / "report.docx", [("Report", ["Budget for March."])])
    (docs / "report.txt").write_text("Budget for April.\n", encoding="utf-8")
    monkeypatch.chdir(docs)
    monkeypatch.setenv("HOME", str(docs))
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_dialog(pilot, app)
        problem = screen.query_one("#picker-problem")
        path_line = screen.query_one("#picker-path", Input)
        path_line.focus()
        path_line.value = "report"
        await pilot.press("enter")
        await until(pilot, lambda: problem.display and bool(str(problem.render())))
        assert str(problem.render()) == ("More than one file is named 'report': report.docx and report.txt. "
                                         "Which one? Type its whole name, or pick it from the list."), str(problem.render())
        assert app.pending_document is None and app.screen is screen
        path_line.value = "report.txt"
        await pilot.press("enter")
        await until(pilot, lambda: app.pending_document is not None)
        assert app.pending_document == (docs / "report.txt", "Budget for April.")


async def test_the_open_dialogs_list_follows_a_folder_pasted_without_its_slash(profiles: Path, tmp_path: Path) -> None:
    """A folder's path pasted in the Open dialog's path line (a file manager's copy: no slash at its
    end) left the list where it was; typed letter by letter, the list followed it. Pasted in the
    line, or in the list, or as Input's own paste (a name in the folder shown): the list follows."""
    from textual import events

    from workstation.tui.screens.file_picker import FileTree, PathLine

    reports = tmp_path / "docs" / "reports"
    reports.mkdir(parents=True)
    (reports / "q3.txt").write_text("Sales.", encoding="utf-8")
    (tmp_path / "docs" / "old").mkdir()
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_dialog(pilot, app)
        tree, line = screen.query_one(FileTree), screen.query_one(PathLine)
        line.focus()
        await pilot.pause()
        line.post_message(events.Paste(str(reports)))  # in the line
        await until(pilot, lambda: Path(tree.path) == reports)
        tree.focus()
        await pilot.pause()
        tree.post_message(events.Paste(f"{tmp_path / 'docs'}\n"))  # in the list
        await until(pilot, lambda: Path(tree.path) == tmp_path / "docs")
        line.focus()
        line.put("")
        await pilot.pause()
        line.post_message(events.Paste("old"))  # a name alone: Input's own paste, in the folder shown
        await until(pilot, lambda: Path(tree.path) == tmp_path / "docs" / "old")
        # typed, a folder's name without its slash is not followed yet (a longer name may come)
        line.put(str(reports))
        await pilot.pause()
        assert Path(tree.path) == tmp_path / "docs" / "old"


async def test_the_open_dialog_lists_documents_and_folders_and_picks_one(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl+O (and F6's Choose, F4's add) open a folder tree of the files that can be used, as an
    office app's Open dialog; typing a path was the only way, which office staff do not know."""
    from textual import events
    from textual.widgets import Input

    from workstation.tui.screens.file_picker import FilePicker, FileTree
    from workstation.tui.screens.models import ModelsScreen
    from workstation.tui.screens.summarize import SummarizeScreen

    docs = tmp_path / "docs"
    (docs / "old").mkdir(parents=True)
    (docs / "notes.txt").write_text("Meeting at ten.\n", encoding="utf-8")
    (docs / "Report.MD").write_text("# Q3\n\nMargins rose.\n", encoding="utf-8")
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    (docs / ".secret.txt").write_text("hidden\n", encoding="utf-8")
    (docs / "old" / "2019.txt").write_text("Old minutes.\n", encoding="utf-8")
    (docs / os.fsdecode(b"zz\xe9.txt")).write_text("From an old zip.\n", encoding="utf-8")  # latin-1 bytes
    (docs / "gone.txt").symlink_to(docs / "moved-away.txt")  # a link to nothing: not a file to pick
    monkeypatch.chdir(docs)  # the folder the app is started from
    monkeypatch.setenv("HOME", str(docs))  # where the Open dialog and F7 start
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    shown = notices(app)
    async with app.run_test(size=(80, 24)) as pilot:
        async def picker() -> tuple[FilePicker, FileTree]:
            await until(pilot, lambda: isinstance(app.screen, FilePicker) and bool(app.screen.query(FileTree)))
            screen = app.screen
            assert isinstance(screen, FilePicker)
            tree = screen.query_one(FileTree)
            await until(pilot, lambda: bool(tree.root.children) and not tree.loading)
            return screen, tree

        def names(tree: FileTree) -> list[str]:
            return [str(node.label) for node in tree.root.children]

        def in_sight(box: Input) -> str:  # the part of a text box's line drawn on the screen
            line = box.content_region
            return screen_lines(app)[line.y][line.x:line.right].rstrip()

        def inside_dialog(screen: FilePicker, widget: Any) -> bool:  # inside the border: wrapped, not cut
            return bool(screen.query_one("#file-picker").region.shrink((1, 1, 1, 1)).contains_region(widget.region))

        await pilot.press("ctrl+o")
        screen, tree = await picker()
        assert Path(tree.path) == docs
        # folders first; no photo, nothing hidden; a name that is no UTF-8 shown as it can be (it drew
        # as zz\udce9.txt, past the dialog's border)
        assert names(tree) == ["old", "notes.txt", "Report.MD", "zz\ufffd.txt"]
        path_line = screen.query_one("#picker-path", Input)
        assert path_line.value == f"{docs}/"
        for size in ((80, 24), (80, 18)):  # the hint inside the border, wrapped and not cut
            await pilot.resize_terminal(*size)
            await pilot.pause()
            hint = screen.query_one(".dialog-hint")
            assert hint.region.height >= 2 and inside_dialog(screen, hint), (size, hint.region)
            assert tree.region.height >= 3, size
        # the kinds the tree shows, as people call them (its 22 endings, .rst .xlsm .pptm …, puzzled a first user)
        assert "Folders and text, Word (.docx), PDF, Excel (.xlsx), CSV, PowerPoint (.pptx), e-mail (.eml) and web " \
               "page files." in str(hint.render())
        assert tree.cursor_node is not None and str(tree.cursor_node.label) == "old"
        await pilot.press("enter", "down")  # Enter opens a folder in the tree; down to its file
        await until(pilot, lambda: tree.cursor_node is not None and str(tree.cursor_node.label) == "2019.txt")
        assert path_line.value == str(docs / "old" / "2019.txt")  # the line follows the tree
        assert in_sight(path_line).endswith("/old/2019.txt"), in_sight(path_line)  # its end: the name, not the folders
        await pilot.press("backspace")  # out of old/ (it went above docs/): closed, the cursor on it
        await until(pilot, lambda: tree.cursor_node is not None and str(tree.cursor_node.label) == "old")
        assert Path(tree.path) == docs and not tree.cursor_node.is_expanded
        await pilot.press("enter", "down")
        await until(pilot, lambda: tree.cursor_node is not None and str(tree.cursor_node.label) == "2019.txt")
        await pilot.press("enter")
        await until(pilot, lambda: app.pending_document is not None)
        assert app.pending_document == (docs / "old" / "2019.txt", "Old minutes.")  # (as a message holds it)
        assert "2019.txt" in str(app.chat_screen.query_one("#attachment").render())

        app.action_attach()  # the next one starts where the last pick was, not where the app began
        screen, tree = await picker()
        path_line = screen.query_one("#picker-path", Input)
        assert Path(tree.path) == docs / "old" and names(tree) == ["2019.txt"]
        await pilot.press("backspace")  # the folder above, the cursor on the one left; the line says it
        await until(pilot, lambda: Path(tree.path) == docs and "notes.txt" in names(tree))
        await until(pilot, lambda: tree.cursor_node is not None and str(tree.cursor_node.label) == "old")
        assert path_line.value == f"{docs}/"
        for key in "my notes.md":  # keys that arrive at once, before the line has the focus: all kept
            tree.post_message(events.Key("space" if key == " " else key, key))
        await until(pilot, lambda: path_line.has_focus and path_line.value == f"{docs}/my notes.md")
        tree.focus()
        await pilot.pause()
        tree.post_message(events.Paste(f"{docs / 'old' / '2019.txt'}\n"))  # a path pasted in the list
        await until(pilot, lambda: path_line.has_focus and path_line.value == str(docs / "old" / "2019.txt"))
        path_line.value = f"{docs}/"
        path_line.cursor_position = len(path_line.value)
        path_line.post_message(events.Paste(str(docs / "Report.MD")))  # pasted in the line: the whole path
        await until(pilot, lambda: path_line.value == str(docs / "Report.MD"))
        path_line.value = f"{docs}/"
        tree.focus()
        await pilot.pause()
        await pilot.press(*"notes.tx")  # typing in the list types in the line, after the folder
        assert path_line.has_focus and path_line.value == str(docs / "notes.tx")
        tree.focus()
        path_line.focus()  # and back: the line is not selected all (one key emptied it)
        await pilot.press("end", "t")
        assert path_line.value == str(docs / "notes.txt")
        await pilot.press("enter")
        await until(pilot, lambda: app.pending_document is not None and app.pending_document[0].name == "notes.txt")
        assert app.pending_document == (docs / "notes.txt", "Meeting at ten.")
        # (said once the two are weighed, off the screen's thread: not versions of one text)
        await until(pilot, lambda: any(m.startswith("notes.txt takes the place of 2019.txt: one document goes "
                                                    "with a message") for m in shown))  # it was replaced without a word

        app.action_attach()
        screen, tree = await picker()
        await pilot.press("backspace")
        await until(pilot, lambda: Path(tree.path) == tmp_path and "docs" in names(tree))
        path_line = screen.query_one("#picker-path", Input)
        (tmp_path / "empty").mkdir()
        path_line.focus()
        path_line.value = "empty"  # a folder with nothing to pick: the list says so (it was blank)
        await pilot.press("enter")
        problem = screen.query_one("#picker-problem")
        await until(pilot, lambda: Path(tree.path) == tmp_path / "empty" and problem.display)
        assert str(problem.render()).startswith("Nothing to open in this folder.") and problem.has_class("-busy")
        path_line.focus()
        path_line.value = "nope.txt"  # not there: no "pick from the list" under an empty list
        await pilot.press("enter")
        await until(pilot, lambda: str(problem.render()).startswith("There is no"))
        assert str(problem.render()) == f"There is no '{tmp_path / 'empty' / 'nope.txt'}'. " \
            "Type another path, or Backspace for the folder above."
        (tmp_path / "empty" / "gone.pdf").symlink_to(tmp_path / "moved.pdf")  # a link whose file has gone
        path_line.focus()
        path_line.value = "gone.pdf"
        await pilot.press("enter")
        await until(pilot, lambda: str(problem.render()) == f"'gone.pdf' is a link to {tmp_path / 'moved.pdf'}, "
                    "which is not there.")  # as the command line says it (it was "There is no")
        tree.focus()
        await pilot.press("backspace")  # the list has the focus: the folder above, and the note gone
        await until(pilot, lambda: Path(tree.path) == tmp_path and "docs" in names(tree) and not problem.display)
        path_line.focus()
        path_line.value = "docs/old"  # a folder typed: shown; in the folder shown, as a name alone is
        await pilot.press("enter")
        await until(pilot, lambda: Path(tree.path) == docs / "old" and names(tree) == ["2019.txt"])
        assert path_line.value == str(docs / "old" / "2019.txt")  # its first file, highlighted
        path_line.focus()  # a folder typed with its slash: the list follows at once (it waited for Enter)
        path_line.value = f"{tmp_path}/"
        await until(pilot, lambda: Path(tree.path) == tmp_path and "docs" in names(tree))
        await pilot.press(*"docs/", *"old/")  # (a name alone: in the folder shown)
        await until(pilot, lambda: Path(tree.path) == docs / "old" and names(tree) == ["2019.txt"])
        assert path_line.has_focus and path_line.value == f"{docs}/old/"
        path_line.value = "~no_such_user_here/x.txt"  # raised in expanduser and took the app down
        await pilot.press("enter")  # not there: said in the dialog, which stays for another try
        problem = screen.query_one("#picker-problem")
        await until(pilot, lambda: problem.display)
        assert str(problem.render()) == f"There is no '{docs / 'old' / '~no_such_user_here' / 'x.txt'}'. " \
            "Type another path, or pick from the list."
        assert app.screen is screen and inside_dialog(screen, problem)
        assert path_line.has_focus
        path_line.cursor_position = len(path_line.value)  # as after typing it
        await pilot.press("/")  # a new path typed after the one refused takes its place (it went after it)
        assert path_line.value == "/"
        await pilot.press("t")
        assert path_line.value == "/t"
        path_line.value = str(docs / "photo.png")  # there, and no document: said, the dialog stays
        await pilot.press("enter")
        await until(pilot, lambda: str(problem.render()) == "'photo.png' is a binary file, not text.")
        assert app.screen is screen and app.pending_document == (docs / "notes.txt", "Meeting at ten.")
        assert Path(tree.path) == Path("/")  # (the list followed the "/" typed)
        path_line.value = f"{docs}/old/"  # a step elsewhere clears it
        await until(pilot, lambda: Path(tree.path) == docs / "old" and not problem.display)
        tree.focus()
        await pilot.press("backspace")
        await until(pilot, lambda: Path(tree.path) == docs and not problem.display)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        assert app.pending_document == (docs / "notes.txt", "Meeting at ten.")  # cancelled: kept
        assert "(Ctrl+R removes it)" in str(app.chat_screen.query_one("#attachment").render())
        await pilot.press("ctrl+r")  # it could only be sent or replaced
        await until(pilot, lambda: app.pending_document is None)
        assert any(n.message == "notes.txt will not go with your next message." for n in app._notifications)
        assert not app.chat_screen.query_one("#attachment").display

        await pilot.press("f6")  # the summary's document, from the same dialog
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
        summarize = app.screen
        # a blank screen said nothing of what to do
        assert str(summarize.query_one("#summarize-state").render()).startswith("Choose… (Ctrl+O) picks a document")
        await pilot.press("ctrl+o")  # the key, or the Choose… button
        await picker()
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is summarize)
        assert await pilot.click("#summarize-browse")
        screen, tree = await picker()
        assert str(screen.query_one(".dialog-title").render()) == "Choose the document to summarize, or a folder"
        assert Path(tree.path) == docs  # where the last pick was (a path not there is none)
        path_line = screen.query_one("#picker-path", Input)
        path_line.focus()
        path_line.value = "Report.MD"
        await pilot.press("enter")
        await until(pilot, lambda: app.screen is summarize)
        box = summarize.query_one("#summarize-path", Input)
        assert box.value == str(docs / "Report.MD")
        # at 80 columns the path has a line of its own, the document's name in sight (beside the
        # buttons it had 30 columns and showed "/tmp/pytest-of-…/", the name cut off)
        assert box.content_region.width >= 70 and in_sight(box).endswith("/docs/Report.MD"), in_sight(box)
        await until(pilot, lambda: any("No model" in str(n.message) for n in app._notifications))  # it ran
        first = next(n for n in app._notifications if "No model" in str(n.message))
        await pilot.press("ctrl+r")  # F6's own Ctrl+R (the chat's removes an attachment): it ran again,
        # said anew in the place of the same toast (not stacked under it)
        await until(pilot, lambda: any("No model" in str(n.message) and n.identity != first.identity
                                       for n in app._notifications))
        assert sum("No model" in str(n.message) for n in app._notifications) == 1
        await pilot.press("escape")

        await pilot.press("f4")  # a model file: .gguf files only
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen))
        (docs / "mine.Q4_0.gguf").write_bytes(b"GGUF")
        await pilot.press("a")
        screen, tree = await picker()
        assert str(screen.query_one(".dialog-title").render()) == "Add a GGUF model file"
        assert names(tree) == ["old", "mine.Q4_0.gguf"]
        await pilot.press("down", "enter")  # not a usable model: said in the dialog, nothing copied
        problem = screen.query_one("#picker-problem")
        await until(pilot, lambda: "is not a usable GGUF model" in str(problem.render()))
        assert app.screen is screen
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen))

    monkeypatch.chdir(tmp_path)  # started again from elsewhere: the dialog opens where the last pick was
    again = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with again.run_test(size=(80, 24)) as pilot:
        app = again
        await pilot.press("ctrl+o")
        screen, tree = await picker()
        assert Path(tree.path) == docs


async def test_a_document_cut_to_fit_a_message_says_so_where_it_stays(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 6 MB text was attached as "huge.txt (200,000 characters)": only a toast, soon gone, said
    that 97% of it was left out; the line under the box now says so while it is attached (and
    the toast went: it covered the chat, the line under it saying the same)."""
    from textual.widgets import Input

    from workstation.core.phrases import rounded_words, words_in
    from workstation.tui.attaching import MAX_DOCUMENT_CHARS
    from workstation.tui.screens.file_picker import FilePicker

    (tmp_path / "huge.txt").write_text("The invoice was paid. " * 15_000, encoding="utf-8")  # 330,000 characters
    (tmp_path / "small.txt").write_text("Meeting at ten.\n", encoding="utf-8")
    # a workbook's hidden sheet is left out: said on the line too, not in the text alone
    make_xlsx(tmp_path / "budget.xlsx", [("Budget", [["Rent", 1200]]), ("Rates", [["USD", 32]])], hidden=("Rates",))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # where the Open dialog and F7 start
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    toasts = notices(app)  # (also one gone before it is looked for: a busy PC took a toast's 15 s)
    async with app.run_test(size=(120, 30)) as pilot:
        line = app.chat_screen.query_one("#attachment")
        read = rounded_words(words_in(("The invoice was paid. " * 15_000)[:MAX_DOCUMENT_CHARS]))  # (in words, as every line)
        for name, said in [("huge.txt", f"Attached: huge.txt, its first {read} or so of about 60,000 words only"),
                           ("budget.xlsx", "(Ctrl+R removes it). The hidden sheet 'Rates' was left out; show it in "
                                           "Excel or LibreOffice to have it read."),
                           ("small.txt", "Attached: small.txt (about 3 words)")]:
            await pilot.press("ctrl+o")
            await until(pilot, lambda: isinstance(app.screen, FilePicker))
            path_line = app.screen.query_one("#picker-path", Input)
            path_line.focus()
            path_line.value = name
            await pilot.press("enter")
            await until(pilot, lambda name=name: app.pending_document is not None and app.pending_document[0].name == name)
            assert said in str(line.render()), str(line.render())
            if name == "huge.txt":  # and no toast besides, 15 s over the chat, saying what the line says
                assert not [m for m in toasts if "only its first" in m], toasts
        assert app.pending_document[1] == "Meeting at ten."  # type: ignore[index]
        assert "hidden" not in str(line.render())  # (the workbook's note went with it)
        # the folded message counts what the message holds (the attach line said one more)
        from workstation.tui.attachment import with_attached
        from workstation.tui.widgets.message_view import fold
        long_doc = "".join(f"Row {i} of the ledger.\n" for i in range(40))
        sent = with_attached("Check it.", "Document: ledger.txt", long_doc.rstrip())
        assert len(fold(sent)[1]) == len(long_doc.rstrip())


async def test_the_open_dialog_lists_names_in_the_alphabets_order(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual sorted by name.lower(): Ç Ğ Ö Ş Ü ı after z, and I apart from i."""
    from workstation.tui.screens.file_picker import FileTree

    docs = tmp_path / "belgeler"
    (docs / "Çizelgeler").mkdir(parents=True)
    (docs / "arşiv").mkdir()
    for name in ("zam.txt", "Şubat.txt", "sabah.txt", "ılık.txt", "İzin.txt", "Isparta.txt", "ödeme.txt",
                 "Ozan.txt", "cari.txt", "ücret.txt", "dosya.txt", "ğ.txt", "gider.txt", "hane.txt"):
        (docs / name).write_text("x\n", encoding="utf-8")
    monkeypatch.chdir(docs)
    monkeypatch.setenv("HOME", str(docs))  # where the Open dialog and F7 start
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+o")
        await until(pilot, lambda: bool(app.screen.query(FileTree)) and bool(app.screen.query_one(FileTree).root.children))
        assert [str(n.label) for n in app.screen.query_one(FileTree).root.children] == [
            "arşiv", "Çizelgeler", "cari.txt", "dosya.txt", "gider.txt", "ğ.txt", "hane.txt", "ılık.txt",
            "Isparta.txt", "İzin.txt", "Ozan.txt", "ödeme.txt", "sabah.txt", "Şubat.txt", "ücret.txt", "zam.txt"]


async def test_a_folder_typed_in_the_open_dialog_opens_it_and_attaches_nothing_unchosen(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder typed and Enter filled the path line with the folder's first file (…/kira.txt),
    so a second Enter attached a file the user never chose. Now: the folder is listed, the list
    has the focus, the line says the folder, and Enter picks nothing until a file is chosen: it
    says how to choose one."""
    from textual.widgets import Input, Static

    from workstation.tui.screens.file_picker import FileTree

    docs = tmp_path / "sözleşmeler"
    docs.mkdir()
    (docs / "kira.txt").write_text("Kira her ayın beşinde ödenir.\n", encoding="utf-8")
    (docs / "zam.txt").write_text("Zam yılda bir kez yapılır.\n", encoding="utf-8")
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "home")
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await open_dialog(pilot, app)
        tree, line = screen.query_one(FileTree), screen.query_one("#picker-path", Input)
        line.focus()
        line.value = str(docs)
        await pilot.press("enter")
        await until(pilot, lambda: Path(tree.path) == docs and len(tree.root.children) == 2 and not tree.loading)
        await pilot.pause()
        assert tree.has_focus and line.value == f"{docs}/" and tree.cursor_node is None
        await pilot.press("enter")  # the second Enter: nothing chosen, nothing read or attached
        await pilot.pause()
        assert app.screen is screen and screen._reading is None and app.pending_document is None
        # and it says how to choose one (it did nothing and said nothing: pressed again and again)
        problem = screen.query_one("#picker-problem", Static)
        assert problem.display and str(problem.render()) == app.texts("picker.choose_first")
        await pilot.press("down", "down")  # chosen: the second file
        await until(pilot, lambda: line.value == str(docs / "zam.txt"))
        assert not problem.display  # (chosen: said no more)
        await pilot.press("enter")
        await until(pilot, lambda: app.pending_document is not None)
        assert app.pending_document == (docs / "zam.txt", "Zam yılda bir kez yapılır.")


async def test_the_open_dialog_opens_where_the_app_was_started_and_its_note_follows_the_path_typed(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Started (./run.sh) from a folder of one's own with nothing in it yet, no Documents: Ctrl+O
    opened in home ("Nothing to open in this folder" about a folder the user never chose); now in
    that folder. A path typed after it: the note about the folder left goes as the path changes
    (it stayed until Enter, over a folder full of documents)."""
    from textual.widgets import Input, Static

    from workstation.tui.screens.file_picker import FileTree

    home, here, docs = tmp_path / "home", tmp_path / "dava", tmp_path / "x" / "docs"
    for folder in (home, here, docs):
        folder.mkdir(parents=True)
    (docs / "kira.txt").write_text("Kira her ayın beşinde ödenir.\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.chdir(here)
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        screen = await open_dialog(pilot, app)
        tree, line = screen.query_one(FileTree), screen.query_one("#picker-path", Input)
        problem = screen.query_one("#picker-problem", Static)
        assert Path(tree.path) == here and line.value == f"{here}/"
        await until(pilot, lambda: problem.display, what="the empty folder said")
        assert str(problem.render()).startswith("Nothing to open in this folder")
        await pilot.press(*"notes")  # a name in this folder: still said
        assert problem.display
        await pilot.press("/")  # another folder named (not there): what was said of this one goes
        await until(pilot, lambda: not problem.display, what="the note about the folder left gone")
        line.value = ""
        await pilot.press(*f"{tmp_path}/x/docs/")
        await until(pilot, lambda: Path(tree.path) == docs and len(tree.root.children) == 1 and not tree.loading)
        for _ in range(3):
            await pilot.pause()
        assert not problem.display, str(problem.render())


def test_the_open_dialog_starts_in_the_folder_the_app_was_started_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No folder picked yet and no Documents: the folder ``./run.sh`` was started from (home
    with nothing in it said "Nothing to open"), even with nothing in it yet; not the program's
    own folder where it holds nothing to open, nor the disk's top."""
    from workstation.tui.screens import file_picker
    from workstation.tui.screens.file_picker import start_folder

    home, papers = tmp_path / "home", tmp_path / "home" / "işler"
    papers.mkdir(parents=True)
    (papers / "kira.txt").write_text("Kira.\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(papers)
    assert start_folder(None) == papers
    assert start_folder(papers / "gone" / "x.txt") == papers  # the last pick's folder first
    program = Path(file_picker.__file__).resolve().parents[3]
    (program / "models").mkdir(exist_ok=True)
    monkeypatch.chdir(program / "models")  # the program's own, nothing to open in it (its models)
    assert start_folder(None) == home
    monkeypatch.chdir(program)  # (where README's ./run.sh starts it: its README is none of one's papers)
    assert start_folder(None) == home
    monkeypatch.chdir("/")
    assert start_folder(None) == home
    (tmp_path / "bare").mkdir()
    monkeypatch.chdir(tmp_path / "bare")  # one's own, nothing in it yet: still where they are
    assert start_folder(None) == tmp_path / "bare"
    (home / "Belgeler").mkdir()  # the Documents folder of a Turkish desktop
    monkeypatch.chdir(papers)
    assert start_folder(None) == home / "Belgeler"
    (home / "Documents").mkdir()
    assert start_folder(None) == home / "Documents"
    # the folder the desktop names as its documents' (user-dirs.dirs), in whatever language
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (home / ".config").mkdir()
    (home / "Evrak").mkdir()
    (home / ".config" / "user-dirs.dirs").write_text('XDG_DESKTOP_DIR="$HOME/Masaüstü"\n'
                                                     'XDG_DOCUMENTS_DIR="$HOME/Evrak"\n', encoding="utf-8")
    assert start_folder(None) == home / "Evrak"
    (home / ".config" / "user-dirs.dirs").write_text('XDG_DOCUMENTS_DIR="$HOME/"\n', encoding="utf-8")
    assert start_folder(None) == home / "Documents"  # (home itself: none named)


def test_an_empty_list_in_the_open_dialog_says_why(tmp_path: Path) -> None:
    """The tree shows a blank list for a folder it cannot open (it swallows the error) and for
    one with nothing usable; the dialog says which (root reads any folder: a missing one here)."""
    from workstation.tui.screens.file_picker import empty_folder_note

    (tmp_path / ".hidden.txt").write_text("x", encoding="utf-8")
    usable = frozenset({".txt"})
    assert empty_folder_note(tmp_path, usable) == ("picker.empty", False, {})
    for name in ("scan1.png", "scan2.PNG", "notes.odt", "README"):  # files, none of a kind it opens
        (tmp_path / name).write_bytes(b"\x89PNG")
    assert empty_folder_note(tmp_path, usable) == ("picker.none_usable", False, {"kinds": [".png", ".odt", "README"]})
    assert Texts("en")("picker.none_usable", kinds=".png").startswith(
        "Nothing in this folder can be opened here: its files are .png.")  # not "nothing to open" as if empty
    tr = Texts("tr")  # a list as a sentence says it ("dosyaları .docx .txt" read as a broken sentence)
    assert tr("picker.none_usable", kinds=tr.series([".docx", ".txt"])).startswith(
        "Bu klasördeki hiçbir şey burada açılamaz; buradaki dosyalar .docx ve .txt.")
    assert Texts("en").series([".png", ".odt", "README"]) == ".png, .odt and README"
    assert tr.series([".png", ".odt", ".zip", ".exe"]) == ".png, .odt, .zip …"  # the list goes on: no "ve"
    (tmp_path / "notes.TXT").write_text("x", encoding="utf-8")
    assert empty_folder_note(tmp_path, usable) is None
    assert empty_folder_note(tmp_path / "gone", usable) == ("picker.unreadable", True, {"why": "No such file or directory"})
    assert empty_folder_note(tmp_path / "notes.TXT", usable) == ("picker.unreadable", True, {"why": "Not a directory"})
    assert Texts("en")("picker.unreadable", why="Not a directory").startswith("This folder cannot be opened (Not a")


async def test_system_readings_arrive_from_one_sampler_thread(
    profiles: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workstation.tui import app as app_module

    monkeypatch.setattr(app_module, "SAMPLE_EVERY_S", 0.05)
    app = WorkstationApp("a", start_engine=False, sample_system=True, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: len(app.cpu_history) >= 3)
        assert app.system is not None and app.system.ram_total > app.system.ram_used > 0
        samplers = [w for w in app.workers if w.group == "sample"]
        assert len(samplers) == 1  # one thread for the app's life, not a worker per reading
        await pilot.press("f5")
        await pilot.pause()
        assert "CPU" in "".join(str(w.render()) for w in app.screen.query("Static"))
    assert samplers[0].is_finished  # it stops with the app
    # a reading that arrives while the app shuts down (no screens left) is only kept
    app._sampled(SystemSampled(5.0, 1, 2, []))
    assert app.cpu_history[-1] == 5.0


async def test_dashboard_kv_gauge_is_the_loaded_engines(profiles: Path, tmp_path: Path) -> None:
    """A conversation whose last turn ran with an 8192-token context, reopened on a profile of
    another context: the KV gauge shows the loaded engine's context, not the old turn's use."""
    from workstation.core.metrics import TurnMetrics

    db = tmp_path / "c.db"
    store = ConversationStore(db)
    conv = store.new("weekly", "long-documents")
    store.add_message(conv.id, "user", "hi")
    store.add_message(conv.id, "assistant", "Hello.",
                      TurnMetrics(kv_size=8192, kv_used=172, prompt_n=30, cache_n=3092).to_dict())
    store.close()
    app = WorkstationApp("a", sample_system=False, language="en", store_path=db)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None and app.engine_info is not None)
        await app.open_conversation(conv.id)
        await pilot.press("f5")
        await until(pilot, lambda: bool(app.screen.query("#kv-value")))
        n_ctx = app.engine_info.n_ctx
        assert n_ctx != 8192
        app.screen.refresh_view()
        assert str(app.screen.query_one("#kv-value").render()) == f"0/{n_ctx:,}"  # 0/1,024
        app.action_toggle_language()  # Turkish: 0/1.024 (a figure apart, each number the language's way)
        await until(pilot, lambda: bool(app.screen.query("#kv-value")))
        app.screen.refresh_view()
        assert str(app.screen.query_one("#kv-value").render()) == f"0/{n_ctx:,}".replace(",", ".")
        # the memory line is said again in the new language (it stayed English until F5 again)
        memory_line = lambda: str(app.screen.query_one("#memory-line").render())  # noqa: E731
        await until(pilot, lambda: memory_line().startswith("Modelin aldığı bellek: "))
        # in words first, the terms after ("Memory at load: estimated 1.1 GB, allocated 772 MB" was
        # jargon to a first user); the share is the estimate's against what the model took
        load = {"components": {"total": {"estimated": 1.1 * 1024**3, "allocated": 772 * 1024**2, "diff_pct": 45.9}}}
        app.screen._show_memory(load)
        assert memory_line() == "Modelin aldığı bellek: 772 MB; yüklemeden önce 1,1 GB olarak hesaplanmıştı (+%45,9)"
        app.texts = Texts("en")
        app.screen._show_memory(load)
        assert memory_line() == "Memory the model took: 772 MB; before loading it was worked out as 1.1 GB (+45.9%)"
        app.texts = Texts("tr")
        # the turn's cache hits in Turkish figures (3092 of 3122 were written bare)
        await until(pilot, lambda: "3.092" in str(app.screen.query_one("#cache-line").render()))
        assert "3.122" in str(app.screen.query_one("#cache-line").render())
        # said as the line under a reply says it ("önbellek isabeti" was a term a first user could not read)
        assert str(app.screen.query_one("#cache-line").render()).startswith(
            "Önceden okunup yeniden kullanılan: sohbetin 3.122 sözcük parçasının 3.092'si (%99)")
        # an axis line too long for its column drops its unit, not the other line ("maks 5.439 token/sn"
        # wrapped and pushed "min" out of the row)
        row = app.screen.query_one("#row-decode")
        row.set("Üretim", [5439.0, 63.0], "63 token/sn", "token/sn")
        assert str(row.query_one(".metric-axis").render()).splitlines() == ["maks 5.439", "min 63"]


async def test_a_desk_pcs_dashboard_shows_no_local_model_lines() -> None:
    """A desk PC's profile (the office server answers) showed "KV cache 0/4,096" and "Memory at
    load: not recorded yet", as if a model were loaded on this PC."""
    app = WorkstationApp("office-server", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("f5")
        await until(pilot, lambda: bool(app.screen.query("#kv-row")))
        assert not app.screen.query_one("#kv-row").display and not app.screen.query_one("#memory-line").display
        assert app.screen.query_one("#row-decode").display  # the turns' own figures stay
        # this PC's CPU, RAM and GPUs beside the server's figures: said to be this PC's
        from workstation.tui.messages import GpuReading, SystemSampled
        app._sampled(SystemSampled(5.0, 2 * 1024**3, 8 * 1024**3, [GpuReading(0, "RTX 4060", 3.0, 1, 8 * 1024**3, 40.0, 20.0)]))
        shown = [str(app.screen.query_one(f"#{part}").render()) for part in ("row-cpu .metric-name", "ram-line", "gpu-lines")]
        assert shown[0].startswith("This PC's CPU") and shown[1].startswith("This PC's RAM: 2")
        assert shown[2].startswith("This PC's GPU 0 RTX 4060: 3% busy"), shown
        # and that they do not set the replies' speed; the replies are said to be the office server's
        # ("Your last 4 replies: …" sat above "This PC's CPU … 100%" as if this PC wrote them)
        assert shown[1].endswith("(this PC's CPU and RAM do not set the replies' speed)"), shown
        from workstation.core.metrics import TurnMetrics
        assert app.profile is not None
        for _ in range(2):
            app.history.add(TurnMetrics(ttft_ms=2700.0, predicted_n=120, predicted_ms=2000.0, prompt_n=40),
                            app.profile.ref, app.profile.name, words=90)
        app.screen.refresh_view()
        headline = str(app.screen.query_one("#headline").render())
        assert headline.startswith("Your last 2 replies: the first words after about 2.7 s"), headline
        assert headline.endswith("The office server wrote them (its model: the one it offers first), shared with "
                                 "others and over the network: this PC does not set their speed."), headline


async def test_dashboard_plots_the_loaded_profile_and_compares_it_with_the_one_before(
    profiles: Path, tmp_path: Path
) -> None:
    """After a switch (F3) the rows plotted two profiles' turns as one series, with nothing to
    mark the change: a slower K/V type read as the machine slowing down. Now they plot the
    loaded profile's turns, and one line gives the profile before's medians."""
    from workstation.core.metrics import TurnMetrics, turn_record

    db = tmp_path / "c.db"
    store = ConversationStore(db)
    conv = store.new("compare", "a")
    saved = [  # (replies of 40 tokens: long enough for their writing speed to count, REPLY_RATE_MIN)
        (TurnMetrics(ttft_ms=900, predicted_n=40, predicted_per_second=40.0).to_dict()),  # saved before turns said their profile
        turn_record(TurnMetrics(ttft_ms=300, predicted_n=40, predicted_per_second=70.0), "b", "B"),
        turn_record(TurnMetrics(ttft_ms=1300, predicted_n=40, predicted_per_second=80.0), "b", "B"),
        turn_record(TurnMetrics(stop_reason="cancelled"), "a", "A"),  # stopped before its first token
        turn_record(TurnMetrics(ttft_ms=200, predicted_n=40, predicted_per_second=20.0), "a", "A"),
        turn_record(TurnMetrics(ttft_ms=250, predicted_n=40, predicted_per_second=25.0), "a", "A"),
    ]
    for record in saved:  # (30 words of 40 tokens: the replies' own words a token, 0.75)
        store.add_message(conv.id, "user", "hi")
        store.add_message(conv.id, "assistant", "Hello there. " * 15, record)
    store.close()
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en", store_path=db)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.open_conversation(conv.id)
        await pilot.press("f5")
        await until(pilot, lambda: bool(app.screen.query("#switch-line")))
        screen = app.screen

        def spark(row: str) -> list[float]:
            return list(screen.query_one(f"#row-{row} .metric-spark").data)  # type: ignore[attr-defined]

        assert spark("decode") == [20.0, 25.0] and spark("ttft") == [200.0, 250.0]
        assert str(screen.query_one("#live").render()) == "5 turns in this conversation"
        # the sentence on top tells of the loaded profile's replies only, as the rows plot them
        assert str(screen.query_one("#headline").render()).startswith("Your last 2 replies: the first words after about 0.2 s")
        line = str(screen.query_one("#switch-line").render())
        # the older turn without a profile joins B's run: median of 40, 70, 80 and of 900, 300, 1300;
        # said as the headline says replies, each figure's term after it ("median 70.0 tok/s, TTFT
        # 900 ms" alone was jargon to a first user)
        assert line == ("The rows show A only: its 2 turns since you switched to it. "
                        "Before the switch, B's last 3 replies: the first words after about 0.9 s (TTFT 900 ms), "
                        "then about 52 words a second (70.0 tok/s). "
                        # which wrote faster here, of one model file (F5 said only B's figures after a switch)
                        "With the same model, B wrote faster here than A: about 52 against 17 words a second."), line
        # one of A's 2 replies begun while other programs kept cores busy: not compared (it said
        # "about 26 against 13 words a second" of 6 replies against 1 written on a busy PC)
        busy = next(t for t in app.history.turns if t.predicted_per_second == 20.0)
        busy.cpu_others = 2.0
        screen.refresh_view()
        await pilot.pause()
        line = str(screen.query_one("#switch-line").render())
        assert line.startswith("The rows show A only") and "faster" not in line, line
        busy.cpu_others = 0.0
        # the last reply the first after a switch, its prompt restored from disk (as the app marks it,
        # TurnMetrics.after_switch): said on top and in the rows, why it did not wait (a wait after a
        # switch was told nothing)
        first_after = app.history.turns[-1]
        first_after.prompt_n, first_after.cache_n, first_after.restored_n = 40, 1200, 1200
        first_after.after_switch = True
        screen.refresh_view()
        await pilot.pause()
        assert str(screen.query_one("#headline").render()).endswith(
            "The first reply after the switch found about 900 of the conversation's 930 words kept on disk from "
            "before the switch: it did not read them again.")
        assert str(screen.query_one("#cache-line").render()).startswith(
            "Reused, read before: 1,200 of the conversation's 1,240 word pieces (97%) · restored from disk: "
            "1,200 tokens · kept from before the switch: 900 of 930 words\n")
        first_after.after_switch = False
        # back to B, before its first turn: nothing plotted, and A's turns are the ones before
        app.profile = load_profile("b")
        screen.refresh_view()
        await pilot.pause()
        assert spark("decode") == [] and str(screen.query_one("#kv-value").render()) == "–"
        assert not screen.query_one("#headline").display  # (no replies of its own to tell of)
        assert str(screen.query_one("#switch-line").render()) == (
            "No turns on B yet since you switched to it. "
            "Before the switch, A's last 2 replies: the first words after about 0.2 s (TTFT 225 ms), "
            "then about 17 words a second (22.5 tok/s).")  # (none of B's since the switch: nothing to compare)
        # the line under the rows agrees with "5 turns in this conversation" (it said "No turns yet")
        assert str(screen.query_one("#cache-line").render()).startswith(
            "No turns since you switched to this profile; send a message to see its figures.")
        # the profile before is named as the loaded one is, in the UI's language (name_tr in
        # Turkish); by the name its turn saved where its file is gone
        (profiles / "a.yaml").write_text((profiles / "a.yaml").read_text(encoding="utf-8") + "name_tr: Ofis A\n",
                                         encoding="utf-8")
        app.texts = Texts("tr")
        screen.relabel()
        assert app.profile_title("a", "A") == "Ofis A"
        # the same English replies, the same words a second in Turkish: by their own words a token, not
        # the UI language's (it said 17 in English and 9 after F9)
        assert str(screen.query_one("#switch-line").render()).endswith(
            "Geçişten önce Ofis A profilinin son 2 yanıtı: ilk sözcükler yaklaşık 0,2 sn (TTFT 225 ms) sonra geldi, "
            "ardından saniyede yaklaşık 17 sözcük (22,5 token/sn).")
        assert app.profile_title(str(tmp_path / "gone.yaml"), "Gone") == "Gone"
        assert app.profile_title("x" * 300, "Long") == "Long"  # (a name no file can have: no traceback on a redraw)
        # the line under each reply names its profile so too (it said its file's name, "quoting-lookup")
        from workstation.tui.widgets.message_view import MessageView

        app.chat_screen.relabel()
        await pilot.pause()
        said = [str(v.query_one(".metrics").render()) for v in app.chat_screen.query(MessageView) if v.profile()]
        assert said[-1].startswith("Ofis A · ") and said[0].startswith("B · "), said
        app.texts = Texts("en")
        screen.relabel()
        app.chat_screen.relabel()
        await pilot.pause()
        assert str(app.chat_screen.query(MessageView).last().query_one(".metrics").render()).startswith("A · ")
        # a conversation on one profile: no line
        await app.action_new_conversation()
        screen.refresh_view()
        await pilot.pause()
        assert not screen.query_one("#switch-line").display


async def test_deleting_a_linked_model_removes_the_link_only_and_says_so(
    profiles: Path, tmp_path: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model added with --link was offered as "Delete smol-link (98 MB) from disk?": only the
    link went, and no space was freed."""
    from textual.widgets import DataTable

    from workstation.tui.screens.models import ModelsScreen

    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "smol-link.gguf").symlink_to(smollm2_path)
    monkeypatch.setenv("WORKSTATION_MODELS", str(folder))
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        models = await _f4_listed(pilot, app)
        models.query_one("#installed", DataTable).move_cursor(
            row=[row.path for row in models.installed].index(folder / "smol-link.gguf"))
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        question = str(app.screen.query_one(".dialog-title").render())
        assert question.startswith(f"Remove the link smol-link? The file it points to ({smollm2_path.resolve()}) stays "
                                   "where it is, and no space is freed."), question
        assert "use it" not in question  # profiles a and b name the file itself, not the link: not touched
        # while asked, another window put a file in the link's place (pulled it): "Remove the
        # link" deleted that file, the only copy
        (folder / "smol-link.gguf").unlink()
        (folder / "smol-link.gguf").write_bytes(b"GGUF pulled meanwhile")
        await pilot.press("y")
        await until(pilot, lambda: any("changed while you were asked" in str(n.message) for n in app._notifications))
        assert (folder / "smol-link.gguf").read_bytes() == b"GGUF pulled meanwhile"
        (folder / "smol-link.gguf").unlink()
        (folder / "smol-link.gguf").symlink_to(smollm2_path)
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen))
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("y")
        await until(pilot, lambda: not (folder / "smol-link.gguf").is_symlink())
    assert smollm2_path.is_file()


async def test_a_screen_closed_as_it_opens_ends_nothing(profiles: Path) -> None:
    """A key and Esc read together (a fast typist, tmux, a slow link) closed a screen before it
    was shown, and what it did as it opened ended the app on an error: F3's list, F4's, the
    header's title (F10), Textual's palette (Ctrl+P, an IndexError), and a second palette while
    the first was still going (a widget with its id already there)."""
    from tui_helpers import press_at_once

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        for keys in (("escape", "f3"), ("f3", "escape"), ("f4", "escape"), ("f10", "escape"), ("ctrl+p", "escape"),
                     ("ctrl+p", "escape", "ctrl+p")):
            await press_at_once(pilot, *keys)
            while app.screen is not app.chat_screen:
                await pilot.press("escape")
                await pilot.pause()
            assert app.is_running and app.return_code is None, keys
        await pilot.press("f3")  # and it opens as before
        await until(pilot, lambda: type(app.screen).__name__ == "ProfileMenu")


def contrast(one: tuple[int, int, int], other: tuple[int, int, int]) -> float:
    """WCAG's contrast ratio of two colours (1 to 21; 4.5 for text that reads)."""
    def luminance(rgb: tuple[int, int, int]) -> float:
        linear = [c / 255 / 12.92 if c <= 10 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    high, low = sorted((luminance(one), luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


async def test_keymap_from_settings(profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.widgets import Input

    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.yaml").write_text("theme: textual-light\nkeymap:\n  dashboard.toggle: f10\n  conv.new: ctrl+w\n",
                                        encoding="utf-8")
    monkeypatch.setenv("WORKSTATION_DATA", str(data))
    monkeypatch.setenv("WORKSTATION_PROFILES", str(tmp_path / "ofice"))  # (a typo: said, not left out unsaid)
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    said = notices(app)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        # F10 was the sizing report's: it has no key now, and the notice, the palette and F1 say so
        # (a keymap from an older version took Ctrl+E, and the palette still named it for Sampling)
        assert said == ["Your keymap in settings.yaml gives F10 to Dashboard; Size the office had that key and has "
                        "none now: find it with Ctrl+P, or give it a key of its own in the keymap.",
                        f"WORKSTATION_PROFILES names the folder {tmp_path / 'ofice'}, which is not there (a typo?), "
                        "so the office's profiles are not listed, only the shipped ones and your own; set it to the "
                        "folder that holds them."], said
        # a warning says so in words: only its edge's colour told it from a notice that all went well
        assert [n.title for n in app._notifications] == ["Warning", "Warning"]
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Dashboard (F10)" in titles and "Size the office" in titles, titles
        await pilot.press("f10")
        await pilot.pause()
        assert type(app.screen).__name__ == "DashboardScreen"
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        # a key the keymap gives an app's action that a text box edits with (Ctrl+W, a word back):
        # the message box gives it up, the sidebar's search box keeps it, and the footer says
        # "New" only where the key makes one (it said so in the search box, where it deleted a word)
        footer = lambda: {k.key for k in app.chat_screen.query(FooterKey)}  # noqa: E731
        await until(pilot, lambda: "ctrl+w" in footer())
        await pilot.press("ctrl+f", *"bee hive", "ctrl+w")
        search = app.chat_screen.query_one("#search", Input)
        assert search.has_focus and search.value == "bee "
        await until(pilot, lambda: "ctrl+w" not in footer() and "f1" in footer())
        await pilot.press("escape")  # (to the message box)
        await until(pilot, lambda: app.chat_screen.query_one("#prompt").has_focus and "ctrl+w" in footer())
        await pilot.press("f1")  # F1's list says the keys as the keymap made them
        await until(pilot, lambda: isinstance(app.screen, KeysDialog))
        names = {key: name for key, name, _ in app.screen.rows}
        assert names["F10"] == "Dashboard" and "F5" not in names, names
        assert names["Ctrl+W"] == "New", names
        # the theme chosen last (a light one on a light terminal) is the one it starts with: it
        # went back to the dark one at each start; a new choice is kept beside the keymap
        assert app.theme == "textual-light"
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        # …where the message box's hint and the footer's keys were pale (2.5:1, 2.9:1)
        for style in (app.chat_screen.query_one("#prompt").get_component_rich_style("input--placeholder"),
                      app.chat_screen.query(FooterKey).first().get_component_rich_style("footer-key--key")):
            assert contrast(style.color.get_truecolor(), style.bgcolor.get_truecolor()) >= 4.5, style
        app.theme = "textual-dark"
        await pilot.pause()
        assert yaml.safe_load((data / "settings.yaml").read_text(encoding="utf-8")) == {
            "theme": "textual-dark", "keymap": {"dashboard.toggle": "f10", "conv.new": "ctrl+w"}}


async def test_the_dashboard_tells_no_drafts_from_no_speculation(profiles: Path, smollm2_path: Path) -> None:
    """A prompt-lookup profile's turn that drafted nothing said "no speculative decoding"; so did a
    desk PC's, of an office server that may well draft (its timings now say its drafts)."""
    from workstation.core.metrics import TurnMetrics

    for lang in ("en", "tr"):  # F5 names the share as the line under a reply does ("guesses kept 72%")
        t = Texts(lang)
        kept = re.split(r" %?72", t("metric.draft", rate="72", acc="55", n="76"))[0]  # (its words before the share)
        assert t("dash.draft", pct="72", acc="55", n="76").lower().startswith(kept + ": "), lang
    _profile(profiles / "look.yaml", str(smollm2_path), speculative={"mode": "lookup"})
    _profile(profiles / "desk.yaml", "", backend="openai", remote={"base_url": "http://127.0.0.1:9/v1"})
    # (in F3's word for speculation, "Speed-up", as Turkish says "Hızlandırma" there: it said "Draft acceptance: no
    # speculative decoding")
    # (and what the hits are, in words, before the term: "Speed-up hits" alone was jargon to a first user)
    # (and as the line under a reply says it, "guesses kept 72%": "speed-up hits" read as a speed gain)
    # (and what the speed-up is: "the speed-up is off" said not what it sped up, nor how)
    for key, said in (("look", "Guesses kept: none this turn (the speed-up that guesses the next words is on"),
                      ("a", "No guesses: the speed-up that guesses next words (speculation) is off"),
                      ("desk", "Guesses kept: none reported by the server this turn (the speed-up that guesses the next "
                               "words is the server's")):
        app = WorkstationApp(key, start_engine=False, sample_system=False, language="en")
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            app.history.add(TurnMetrics(ttft_ms=100, predicted_n=10, predicted_ms=100, prompt_n=20, stop_reason="eos"),
                            key, key.upper())
            await pilot.press("f5")
            await until(pilot, lambda a=app: type(a.screen).__name__ == "DashboardScreen")
            await until(pilot, lambda a=app, s=said: s in str(a.screen.query_one("#cache-line").render()))


@pytest.mark.parametrize(("lang", "shown"), [("en", "3.9 s"), ("tr", "3,9 sn")])
async def test_the_dashboard_writes_a_figure_as_its_axis_does(profiles: Path, lang: str, shown: str) -> None:
    """The same time read "3,883 ms" on the row's axis and "3883 ms" beside it; the axis is in seconds
    where the waits reach one, as the figure beside it is ("3.9 s" beside "3,883 ms" were two units)."""
    from workstation.core.metrics import TurnMetrics

    app = WorkstationApp("a", start_engine=False, sample_system=False, language=lang)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.generating = True  # the first reply being written: said so ("no turns yet" stood while it was)
        await pilot.press("f5")
        await until(pilot, lambda: type(app.screen).__name__ == "DashboardScreen")
        assert str(app.screen.query_one("#cache-line").render()) == {
            "en": "The first reply is being written; its figures come when it ends.",
            "tr": "İlk yanıt yazılıyor; rakamları yanıt bitince gelecek."}[lang]
        app.summarizing = "memo.txt"  # F6 making a summary holds the engine too: no reply is being written
        app.screen.refresh_view()
        assert str(app.screen.query_one("#cache-line").render()) == {
            "en": "No turns yet; send a message to see figures.",
            # ("tur", a round, read oddly to a Turkish user: the replies counted are "yanıt")
            "tr": "Henüz yanıt yok; rakamları görmek için bir mesaj gönderin."}[lang]
        app.generating, app.summarizing = False, None
        for ttft in (1200.0, 3883.0):  # (the last one took every core, measured as it began)
            turn = TurnMetrics(ttft_ms=ttft, predicted_n=10, predicted_ms=100, prompt_n=2000, prompt_ms=1000,
                               stop_reason="eos", kv_size=4096, kv_used=124, n_threads=2, threads_reason="idle")
            turn.finish_rates()  # 2,000 tok/s of prompt
            app.history.add(turn, "a", "A")
        app.screen.refresh_view()
        row = app.screen.query_one("#row-ttft")
        await until(pilot, lambda: str(row.query_one(".metric-value").render()).strip() == shown)
        assert shown in str(row.query_one(".metric-axis").render())
        prompt = str(app.screen.query_one("#row-prompt").query_one(".metric-value").render())
        assert prompt.startswith("2,000" if lang == "en" else "2.000"), prompt
        # each row's name in plain words, then the engineers' term ("TTFT per turn" was jargon to
        # a first user), and the replies in a sentence on top: the wait in seconds, the language's
        # way; no writing speed from replies of 10 tokens (too short to time, as F4 says a model's)
        assert str(row.query_one(".metric-name").render()) == {
            "en": "Wait for first word (TTFT)\nlast 2 replies", "tr": "İlk sözcüğü bekleme (TTFT)\nson 2 yanıt"}[lang]
        # (Turkish: a word piece is no 'parça' alone, the word of the GPU line's model parts; the K/V
        # memory is 'bağlam belleği' as in F3, profiles list and the K/V line below it); TPOT said in
        # words ("Per word piece (TPOT)" said not what of it; the acronym means nothing in Turkish)
        assert str(app.screen.query_one("#row-tpot .metric-name").render()).startswith(
            {"en": "Time per word piece (TPOT)\n", "tr": "Sözcük parçası başına süre\n"}[lang])
        # F1 on F5 says what each row's figure is, one sentence each (the label has no room for it)
        await pilot.press("f1")
        await until(pilot, lambda: type(app.screen).__name__ == "KeysDialog")
        figures = app.screen.rows[-1]  # type: ignore[attr-defined]
        assert figures[:2] == ("", {"en": "Words and figures on this screen", "tr": "Bu ekrandaki sözcük ve rakamlar"}[lang]), figures
        assert {"en": "Time per word piece (TPOT): how long the writing of each word piece took, in ms",
                "tr": "Sözcük parçası başına süre (TPOT): her sözcük parçasının yazılmasının aldığı süre"}[lang] in figures[2]
        await pilot.press("escape")
        await until(pilot, lambda: type(app.screen).__name__ == "DashboardScreen")
        # (its unit said: "279/4,096" said none)
        kv_name = app.screen.query_one("#kv-name")
        assert str(kv_name.render()) == {"en": "Conversation memory (K/V), tokens",
                                         "tr": "Bağlam belleği (K/V), token"}[lang] and kv_name.size.width >= 27
        # a reply being written: the writing speed's row counts it apart ("last 3 turns" beside "last 2 turns");
        # the rows count replies, as the headline does ("Son 2 yanıtınız" above "son 3 tur")
        app.generating, app.live_tokens, app._t_first, app._t_last = True, 5, 1.0, 2.0
        app.screen.refresh_view()
        assert str(app.screen.query_one("#row-decode .metric-name").render()).endswith(
            {"en": "\nlast 2 replies + this one", "tr": "\nson 2 yanıt + bu yanıt"}[lang])
        # the conversation memory counts the new prompt as it is read, all of it once the reply has begun
        # (a prompt of 1,749 tokens showed "129/4.096": the last turn's 124 cells and 5 tokens)
        from workstation.tui.messages import PromptProgressed, SystemSampled

        app.post_message(PromptProgressed(0.88, 1536, 1749))  # (as the turn's worker posts the engine's PromptRead)
        await until(pilot, lambda: app.live_prompt == (1536, 1749))
        app.screen.refresh_view()
        assert str(app.screen.query_one("#kv-value").render()) == {"en": "1,754/4,096", "tr": "1.754/4.096"}[lang]
        # a reasoning model thinking (no answer yet): its thought's words are the reply's words so far (it said "1")
        from workstation.tui.widgets.message_view import MessageView

        app.live_tokens, app.reply_view = 40, MessageView("assistant", "", app.texts, reasoning="step " * 30)
        app.screen.refresh_view()
        assert str(app.screen.query_one("#live").render()).startswith(
            {"en": "Writing: about 30 words so far", "tr": "Yazılıyor: yaklaşık 30 sözcük"}[lang])
        app.reply_view = None
        app.generating, app.live_tokens, app._t_first, app._t_last = False, 0, None, None
        # the cores the last reply took, said as measured as it began; other programs busy now said beside
        # (it said "no other program keeps one busy" while they kept both cores busy)
        app.system = SystemSampled(100.0, 1, 2, [], cpu_others=2.0)  # (the app's own use taken out)
        app.screen.refresh_view()
        cores = str(app.screen.query_one("#cache-line").render())
        # (two sentences with a full stop between; what the count beside it means said, not "(1 çekirdek alırdı)")
        assert {"en": "in the last reply: 2, every core (no other program kept one busy as it began). Now other "
                      "programs keep ",
                "tr": "Son yanıtta çalışan işlemci çekirdeği: 2, hepsi (yanıt başlarken başka bir program "
                      "çekirdekleri meşgul etmiyordu). Şu an "}[lang] in cores, cores
        assert {"en": "; if they stay busy, it writes with 1 of the cores.",
                "tr": "; böyle kalırsa 1 çekirdekle yazar."}[lang] in cores, cores
        app.system = None
        app.screen.refresh_view()
        assert str(app.screen.query_one("#headline").render()) == {
            "en": "Your last 2 replies: the first words after about 2.5 s.",
            "tr": "Son 2 yanıtınız: ilk sözcükler yaklaşık 2,5 sn sonra geldi."}[lang]
        for label in app.screen.query(".metric-name"):  # each line of a name fits its column, unwrapped
            assert all(len(line) <= label.size.width for line in str(label.render()).splitlines()), label.render()
        # a wait of 10 s and more as the line under the reply says it ("TTFT 20 s"): it read "19,865 ms"
        app.history.add(TurnMetrics(ttft_ms=19_865, predicted_n=10, predicted_ms=100, stop_reason="eos"), "a", "A")
        app.screen.refresh_view()
        assert str(row.query_one(".metric-value").render()).strip() == {"en": "20 s", "tr": "20 sn"}[lang]


async def test_the_dashboards_reading_speed_leaves_out_turns_that_read_a_few_tokens(profiles: Path) -> None:
    """A follow-up that read 19 new tokens (the rest cached) showed "Prompt tok/s 30": the step's
    own cost, not reading, and it looked like a PC reading slowly. A turn of one token has no
    decode rate: "–", not "0.0 tok/s"."""
    from workstation.core.metrics import TurnMetrics

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        for prompt_n, prompt_ms, predicted_n in ((1500, 1000.0, 40), (19, 630.0, 1)):
            turn = TurnMetrics(ttft_ms=prompt_ms, predicted_n=predicted_n, predicted_ms=400 if predicted_n > 1 else 0,
                               prompt_n=prompt_n, prompt_ms=prompt_ms, stop_reason="eos")
            turn.finish_rates()
            app.history.add(turn, "a", "A")
        await pilot.press("f5")
        await until(pilot, lambda: type(app.screen).__name__ == "DashboardScreen")
        value = lambda row: str(app.screen.query_one(f"#row-{row}").query_one(".metric-value").render()).strip()  # noqa: E731
        await until(pilot, lambda: value("prompt").startswith("1,500"))  # the 1,500 tokens read in 1 s
        assert len(app.screen.query_one("#row-prompt .metric-spark").data) == 1  # type: ignore[attr-defined]
        assert value("decode") == "–"
        # the turn shown is not the last one: not said to be ("last turn" beside the figure of the one before)
        name = str(app.screen.query_one("#row-prompt .metric-name").render())
        assert name.endswith("\nlong prompts: 1") and "last reply" not in name, name
        assert name.startswith("Reading speed (prompt)\n"), name
        # on top, in words, of the replies that time the model as F3 and F4 count them (the one of
        # 40 tokens; "your last 2 replies" counted the 1-token one, where F4 said "your last reply"):
        # its wait (1,000 ms) and speed (100 tok/s, 75 words) beside the speed people read; not
        # called the last reply, which was the 1-token one
        assert str(app.screen.query_one("#headline").render()) == (
            "Your last reply long enough to time: the first words after about 1.0 s, then about 75 words a second, "
            "faster than people read.")
        # a long prompt again, the short turn between: the last of each row, not its "last 2" (beside
        # rows of "last 3 replies", "Your last 2 replies" read as another count of the same ones)
        app.history.add(app.history.turns[0], "a", "A")
        app.screen.refresh_view()
        assert str(app.screen.query_one("#row-prompt .metric-name").render()).endswith("\nlong prompts: 2")
        assert str(app.screen.query_one("#row-ttft .metric-name").render()).endswith("\nlast 3 replies")
        assert str(app.screen.query_one("#headline").render()).startswith("Your last 2 replies long enough to time: ")


def test_the_dashboards_headline_says_a_slow_reply_beside_the_speed_people_read() -> None:
    """F5's sentence on top, of a reply slower than people read (a large model on the CPU), and
    of a wait too long for tenths of a second."""
    from workstation.core.metrics import TurnMetrics
    from workstation.tui.screens.dashboard import live_said, replies_headline

    # the live line's words so far are a count, whole: "about 0.8 words" after a token (before the
    # first, "about 0.0 words so far" while the prompt was read: the wait is said)
    assert live_said(0, None, Texts("en")) == "Waiting for the first word…"
    assert live_said(1, 3.0, Texts("en")).startswith("Writing: about 1 word so far, 2 a second (1 token, ")
    assert live_said(2, 3.0, Texts("tr")).startswith("Yazılıyor: yaklaşık 1 sözcük, saniyede 1,2 (2 token, ")
    # a reply written in English, said in Turkish: its own words counted, its rate by its own words a token
    assert live_said(40, 20.0, Texts("tr"), words=30).startswith("Yazılıyor: yaklaşık 30 sözcük, saniyede 15 (40 token, ")
    turn = TurnMetrics(ttft_ms=65_000, predicted_n=40, predicted_ms=20_000, stop_reason="eos")
    turn.finish_rates()  # 2 tok/s
    assert replies_headline([turn], Texts("en")) == (
        "Your last reply: the first words after about 1 min 5 s, then about 1.5 words a second, slower than people read.")
    assert replies_headline([turn], Texts("tr")) == (  # (whose reading: 'okuma hızına yetişmez' said no one's; a Turkish word is more tokens)
        "Son yanıtınız: ilk sözcükler yaklaşık 1 dk 5 sn sonra geldi, ardından saniyede yaklaşık 0,8 sözcük; "
        "okuyabileceğinizden yavaş.")
    assert replies_headline([], Texts("en")) == ""
    # faster or slower than people read by the words a second said beside it (READING_WORDS_A_SECOND, as
    # README says people read), in each language: 6 tokens a second said "about 4 words a second, faster
    # than people read", and in Turkish "saniyede yaklaşık 2 sözcük; okuyabileceğinizden hızlı"
    six = TurnMetrics(ttft_ms=500, predicted_n=60, predicted_ms=10_000, stop_reason="eos")
    six.finish_rates()
    assert replies_headline([six], Texts("en")).endswith(" then about 4 words a second, slower than people read."), \
        replies_headline([six], Texts("en"))
    assert replies_headline([six], Texts("tr")).endswith(" sözcük; okuyabileceğinizden yavaş."), replies_headline([six], Texts("tr"))
    assert replies_headline([six], Texts("tr"), per_token=1.0).endswith(
        "saniyede yaklaşık 6 sözcük; okuyabileceğinizden hızlı."), replies_headline([six], Texts("tr"), per_token=1.0)
    # a short reply after it (30 tokens: too short to time) is not the one said
    short = TurnMetrics(ttft_ms=61, predicted_n=30, predicted_ms=640, stop_reason="length")
    short.finish_rates()
    assert replies_headline([turn, short], Texts("en")).startswith(
        "Your last reply long enough to time: the first words after about 1 min 5 s, then about 1.5 words")
    assert replies_headline([turn, turn, short], Texts("tr")).startswith("Ölçülecek kadar uzun son 2 yanıtınız: ")


@pytest.mark.parametrize(("lang", "said"), [("en", "Press Ctrl+Q to quit the app"),
                                             ("tr", "Uygulamadan çıkmak için Ctrl+Q tuşlarına basın")])
async def test_ctrl_c_says_how_to_quit_in_words(profiles: Path, lang: str, said: str) -> None:
    """Ctrl+C, pressed to quit out of habit, showed Textual's "Press [b]ctrl+q[/b] to quit the
    app" with its markup as typed, in English whatever the UI's language."""
    app = WorkstationApp("a", start_engine=False, sample_system=False, language=lang)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.set_focus(None)
        await pilot.press("ctrl+c")
        await until(pilot, lambda: bool(app._notifications))
        shown = [n.message for n in app._notifications]
        assert any(m.startswith(said) for m in shown) and not any("[b]" in m for m in shown), shown


async def test_ctrl_c_during_a_reply_stops_it(profiles: Path) -> None:
    """As Esc (and ``ollama run``'s Ctrl+C): it said how to quit, and the reply went on."""
    app = WorkstationApp("b", sample_system=False, language="en")  # (replies of up to 400 tokens)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await _send_text(pilot, app, "Write a long story about a lighthouse keeper.")
        await until(pilot, lambda: app.reply_view is not None and bool(app.reply_view.content))
        await pilot.press("ctrl+c")  # the message box has the focus
        await until(pilot, lambda: not app.generating)
        conv = app.conversation_id
        assert conv is not None
        reply = app.store.messages(conv)[-1]
        assert reply.metrics and reply.metrics["stop_reason"] == "cancelled" and app.is_running
        assert not any("to quit the app" in str(n.message) for n in app._notifications)


@pytest.mark.parametrize("lang", ["tr", "en"])
async def test_a_very_small_model_is_said_to_answer_well_in_english_only(profiles: Path, lang: str) -> None:
    """The default model (135M) answered a Turkish question in made-up words, and nothing in
    the chat said why (F6 said it of documents); in the English UI nothing is said."""
    app = WorkstationApp("a", sample_system=False, language=lang)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None and app.loading is None)
        await pilot.pause(0.2)
        said = " ".join(str(n.message) for n in app._notifications)
        if lang == "tr":
            assert "çok küçük bir model (135M parametre): İngilizce dışındaki dillerde" in said, said
        else:
            assert "very small model" not in said, said


def test_language_from_locale() -> None:
    assert detect_language({"LANG": "tr_TR.UTF-8"}) == "tr"
    assert detect_language({"LC_ALL": "en_US.UTF-8", "LANG": "tr_TR.UTF-8"}) == "en"
    assert detect_language({}) == "en"
    # gettext's LANGUAGE first (its first language we have), not under the C locale
    assert detect_language({"LANGUAGE": "de:tr:en", "LANG": "en_US.UTF-8"}) == "tr"
    assert detect_language({"LANGUAGE": "en_GB:tr", "LANG": "tr_TR.UTF-8"}) == "en"
    assert detect_language({"LANGUAGE": "tr", "LANG": "C.UTF-8"}) == "en"
    assert detect_language({"LANGUAGE": "de", "LANG": "tr_TR.UTF-8"}) == "tr"
    assert Texts("tr")("status.ready") == "hazır"
    assert Texts("tr")("no.such.key") == "no.such.key"


def test_turkish_writes_numbers_with_its_own_separators() -> None:
    """8,192 tokens and 23.0 GB were shown as English writes them in the Turkish UI: a value
    that is wholly a number (with its unit) takes the language's separators (and Turkish
    writes %78, as its sentences around such figures did), in the UI's
    sentences, the core's phrases and figures shown alone; names holding numbers do not."""
    from workstation.core.phrases import say

    tr, en = Texts("tr"), Texts("en")
    assert tr("models.fit", words=tr("words.language", n="3,100"), verdict="-", most="") == (
        "Bu bilgisayarda, yaklaşık 3.100 sözcük kadar bir konuşma için (yeni bir profilin ayarı; F3 → E, Bağlam'da "
        "değişir): -.")
    assert en("models.fit", words=en("words.language", n="3,100"), verdict="-", most="").startswith(
        "On this PC, for a conversation of up to about 3,100 words (")
    assert [tr.number(v) for v in ("1,234,567.89", "23.0 GB", "-1.5%", "+0.25%", "40 W", "~4.9 GB", "100 %",
                                   "35.7 token/sn")] == [
        "1.234.567,89", "23,0 GB", "-%1,5", "+%0,25", "40 W", "~4,9 GB", "%100", "35,7 token/sn"]
    assert en.number("100 %") == "100%" and en.number("~4.9 GB") == "~4.9 GB"
    # a count of words as a person says an estimate: two figures, under 2 with a decimal; a
    # Turkish word takes more tokens than an English one
    from workstation.core.phrases import about_words, rounded_words

    assert [rounded_words(w) for w in (1.94, 2.0, 57.4, 347, 3072, 12_345)] == ["1.9", "2", "57", "350", "3,100", "12,000"]
    assert (about_words(4096), about_words(4096, tr.get)) == ("3,100", "1,600")
    # the texts that say a token's words say that figure (bench said "3 for 2 English words", F1 three quarters)
    from workstation.core.phrases import words_per_token

    assert words_per_token() == 0.75 and "about 4 for 3 English words" in say([("bench.legend_tok_s", {})]) \
        and "three quarters of a word" in en("metric.help") and "about 750 words" in en("sampling.max_tokens.help")
    # a Turkish word's pieces depend on the model (SmolLM2 cut one in 4-5; F1 said "çoğu zaman 2-3"),
    # around the fixed figure of 0.4 words a token (2.5 tokens)
    assert words_per_token(tr.get) == 0.4 and all(
        "modele göre 2 ila 5" in tr(key) and "2-3" not in tr(key)
        for key in ("metric.help", "bench.legend_tok_s", "sampling.max_tokens.help"))
    # the words of a text: by spaces, and Chinese and Japanese (no spaces) at 1.5 characters a word,
    # their punctuation none (by spaces a Chinese thought of 12 characters was 1 word)
    from workstation.core.phrases import words_in

    assert [words_in(t) for t in ("Hello there,  friend", "你好，世界。我们今天开会。", "私は会議に行きます。",
                                   "I use Python 和 Java", "안녕하세요 세계", "")] == [3, 7, 6, 5, 2, 0]
    for name in ("Llama 3.1 8B", "127.0.0.1", "8080", "q8_0", "v1.2.3", "12:30", "3.5 Haiku", "2,500 Dollars"):
        assert tr.number(name) == name == en.number(name)
    # people's words given to a sentence are never taken for a figure: a title "2,500", a draft "1.5"
    assert tr("conv.delete_q", title="2,500").startswith('"2,500"') and tr("sidebar.draft", text="1.5").endswith("1.5")
    unreadable = say([("doc.unreadable", {"name": "2,500", "reason": "1.5"})], tr.get)
    assert "'2,500'" in unreadable and "(teknik ayrıntı: 1.5)" in unreadable, unreadable
    verdict = [("fit.gpu", {"where": ("fit.where_one", {}), "used": "5.2 GB", "total": "24 GB"})]
    assert say(verdict) == "fits entirely on the GPU: 5.2 GB of 24 GB"
    assert say(verdict, tr.get) == "tamamen GPU belleğine sığar: 5,2 GB / 24 GB"
    # a size is said whole, its unit with it (human_bytes): "282 MB'ını", not "0,3 GB'ını"
    small = [("fit.cpu", {"why": "", "need": "282 MB", "free": "23.4 GB"})]
    assert say(small, tr.get) == "CPU'da çalışır: boş 23,4 GB belleğin 282 MB'ını kullanır"
    assert say(verdict, en.get) == say(verdict)


def test_a_model_not_downloaded_is_said_with_the_apps_own_keys() -> None:
    """In the app, F3's note said "F4, then p" but the toast for the same model said to run
    './run.sh models pull …' at a command line."""
    from workstation.core.catalog import catalog_entries
    from workstation.core.installed_models import missing_model_error
    from workstation.core.paths import models_dir

    entry = next(e for e in catalog_entries() if e["name"] == "llama-3.1-8b-instruct-q4_k_m")
    err = missing_model_error(models_dir() / entry["file"])
    assert "models pull llama-3.1-8b-instruct-q4_k_m" in str(err)  # the command line's
    assert Texts("en").error(err) == ("The model llama-3.1-8b-instruct-q4_k_m is not downloaded yet (about "
                                      "4.6 GB); F4, then p, downloads it.")  # (4.9 decimal GB in catalog.yaml)
    assert Texts("tr").error(err).endswith("; F4, ardından p onu indirir.")
    assert "(yaklaşık 4,6 GB)" in Texts("tr").error(err)  # it said 4.9 in Turkish
    # where an error not the app's own may come (the nets under a load, a worker, a pull): named with its kind
    assert Texts("en").error(err, foreign=True) == Texts("en").error(err)
    assert Texts("en").error(KeyError("x"), foreign=True) == "KeyError: 'x'" and Texts("en").error(KeyError("x")) == "'x'"


def test_a_language_that_cannot_be_saved_says_so(tmp_path: Path) -> None:
    """F9 on a full disk: the choice was dropped without a word and gone at the next start."""
    from workstation.tui.settings import load_settings, save_language

    assert save_language("tr", tmp_path / "settings.yaml") is True
    assert load_settings(tmp_path / "settings.yaml").language == "tr"
    (tmp_path / "a-file").write_text("")
    assert save_language("tr", tmp_path / "a-file" / "settings.yaml") is False  # the folder cannot hold it


def test_a_keymap_key_no_keyboard_has_is_said_and_the_action_keeps_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A keymap value of a list or "ctrl+" became a key no press makes: New conversation had no
    key left (the footer said "[1 New"), and nothing said why. ``language: 5`` (no language)
    was ignored without a word; settings.yaml's problems were English in the Turkish app."""
    from workstation.tui.actions import ACTIONS
    from workstation.tui.settings import known_key, load_settings

    path = tmp_path / "settings.yaml"
    path.write_text("keymap:\n  conv.new: [1, 2]\n  dashboard.toggle: 'ctrl+'\n  chat.focus: ctrl+g, f12\n",
                    encoding="utf-8")
    settings = load_settings(path)
    assert settings.keymap == {"chat.focus": "ctrl+g, f12"}
    assert settings.problem is not None and Texts("en")(settings.problem[0], **settings.problem[1]) == (
        f"{path}: the keymap names keys no keyboard has (conv.new: [1, 2]; dashboard.toggle: ctrl+); those actions "
        "keep their own keys. Keys are written as ctrl+k, f10 or alt+shift+left.")
    assert all(known_key(k) for a in ACTIONS for k in a.key.split(","))  # (each default key passes)
    path.write_text("language: 5\nkeymap:\n  conv.nwe: ctrl+k\n", encoding="utf-8")
    assert load_settings(path).language is None
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "settings.yaml").write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    said = WorkstationApp(None, start_engine=False, sample_system=False, language="tr").startup_problem
    assert said == (f"{tmp_path / 'data' / 'settings.yaml'}: language değeri 5, uygulamanın dillerinden biri değil "
                    "(en ya da tr); uygulama bu bilgisayarın dilini kullanıyor."), said
    path.write_text("language: TR\nkeymap:\n  conv.nwe: ctrl+k\n", encoding="utf-8")
    settings = load_settings(path)
    assert settings.language == "tr" and settings.problem is not None
    assert Texts("tr")(settings.problem[0], **settings.problem[1]).startswith(
        f"{path}: tuş eşlemesinde bilinmeyen komut kimlikleri var: conv.nwe; bilinen kimlikler: app.help, ")


def test_locales_have_the_same_keys() -> None:
    root = Path(__file__).parent.parent / "workstation" / "tui" / "locales"
    en = yaml.safe_load((root / "en.yaml").read_text(encoding="utf-8"))
    tr = yaml.safe_load((root / "tr.yaml").read_text(encoding="utf-8"))
    assert set(en) == set(tr) - set(ENGLISH)  # the core's sentences have their English in core/phrases.py
    assert not set(en) & set(ENGLISH)
    # a phrase that is one blank only passes on words the app did not write (the system's reason, a
    # server's message, the GGUF check's technical words, names): one of the app's own sentences
    # passed through it ("kld.why") stayed English in Turkish
    assert {key for key, text in ENGLISH.items() if re.fullmatch(r"\W*\{\w+\}\W*", text)} == {
        "file.os_says", "remote.server_said", "gguf.technical", "cite.named", "profile.in",
        "size.price"}  # (a price as the language writes it: $299, Turkish 299 $)
    from workstation.core.profiles import KV_CACHE_TYPES

    assert {f"kv.{c}" for c in KV_CACHE_TYPES} <= set(ENGLISH) & set(tr)  # each K/V type in plain words (F3, the status bar)
    # one Turkish word for "word" (sözcük, as the word counts say it; "kelime" came in with new phrases)
    assert not [key for key, text in tr.items() if "kelime" in str(text).lower()]
    # speculation is "hızlandırma" and its draft model "küçük yardımcı model", as F3, F5 and fit say them ("taslak"
    # and "tokenizer" were left in a draft's refusal and fit's measured line; an unsent message is a "taslak")
    assert not [key for key, text in tr.items() if key.startswith(("draft.", "fit", "metric.", "dash.", "load."))
                and re.search(r"taslak|tokenizer", str(text), re.IGNORECASE)]


def test_turkish_sentences_read_as_a_turkish_speaker_writes_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tester's findings: words calqued from English ("API'yi sunun", "Bölüm bölüm noktalar"),
    a number's suffix missing (1,04 GB'ı), the currency before the figure."""
    import datetime as dt
    import zipfile

    from docmaker import make_docx

    from workstation.core.documents import DocumentError, read_document
    from workstation.core.model_info import check_gguf

    tr = Texts("tr")
    assert tr("dash.ram", used="1.04 GB", total="23.54 GB") == "RAM: 23,54 GB belleğin 1,04 GB'ı kullanımda"
    assert tr("usage.server_today_limit", server="s", tokens="0", limit="10,000", left="0", resets="00:00").endswith(
        "; saat 00:00'a kadar 0 token kaldı.")
    assert tr("action.serve") == "API sunucusu" and "API sunucusunu başlatın (" in tr("usage.none")
    assert tr("summary.points") == "Bölümlere göre ana noktalar"
    assert say([("headline.buy_priced", {"machine": "X", "price": "2,499"})], tr.get) == "Bir X alın (yaklaşık 2.499 $)"
    with pytest.raises(DocumentError) as missing:
        monkeypatch.chdir(tmp_path)
        read_document(Path("yokdosya.txt"))
    assert tr.error(missing.value) == f"'yokdosya.txt' adlı bir klasör ya da belge bulunamadı ({tmp_path} klasöründe arandı)."
    (tmp_path / "rapor.txt").write_text("Satışlar arttı.", encoding="utf-8")
    with pytest.raises(DocumentError) as typo:  # a typo: the file of that folder it most likely means
        read_document(Path("rapr.txt"))
    assert tr.error(typo.value) == f"'rapr.txt' adlı bir klasör ya da belge bulunamadı ({tmp_path} klasöründe arandı). Bunu mu demek istediniz: 'rapor.txt'?"
    # a count's suffix as the number is read: "3 bölümden 1'i", 2'si, 3'ü ... (it said "1 tanesinden")
    assert [tr("summarize.stopped", done=n, total=12).split(" bittikten")[0].split()[-1] for n in (1, 2, 3, 6, 9, 10, 40)] \
        == ["1'i", "2'si", "3'ü", "6'sı", "9'u", "10'u", "40'ı"]
    # ... and what follows says the parts done for any count ('onların' of one part read wrong)
    assert tr("summarize.stopped", done=1, total=11) == "11 bölümden 1'i bittikten sonra durduruldu; bitenlerin özeti aşağıda."
    assert "1.500'ünü kullandınız; saat 14:00'e kadar" in tr(
        "usage.server_today_limit", server="s", tokens="1,500", limit="10,000", left="8,500", resets="14:00")
    # a library's English words in a Turkish sentence are labelled as such: a damaged DOCX, a damaged model
    word = make_docx(tmp_path / "rapor.docx", [("Rapor", ["Metin."])])
    with zipfile.ZipFile(word) as whole, zipfile.ZipFile(tmp_path / "bozuk.docx", "w") as damaged:
        for item in whole.infolist():
            damaged.writestr(item, b"<w:document><w:body>" if item.filename == "word/document.xml" else whole.read(item))
    for path, read in ((tmp_path / "bozuk.docx", read_document), (Path(__file__).parent / "hostile" / "dim-zero.gguf",
                                                                 check_gguf)):
        with pytest.raises(WorkstationError) as damaged_file:
            read(path)
        assert "teknik ayrıntı: " in tr.error(damaged_file.value).lower(), tr.error(damaged_file.value)
        assert "teknik" not in str(damaged_file.value)  # (the command line's English as it was)
    # F4: a damaged model's error once, in Turkish (its details said it in English, its verdict again)
    from workstation.tui.integrations import installed_models, model_fit

    (tmp_path / "modeller").mkdir()
    (tmp_path / "modeller" / "bozuk.gguf").write_bytes((Path(__file__).parent / "hostile" / "dim-zero.gguf").read_bytes())
    monkeypatch.setenv("WORKSTATION_MODELS", str(tmp_path / "modeller"))
    (row,) = installed_models(tr)
    assert model_fit(row, tr) == ""
    assert row.details.startswith(f"{tmp_path / 'modeller' / 'bozuk.gguf'} kullanılabilir bir GGUF modeli değil: ")
    # the keys without a word on them in Turkish words (the palette said "Son mesajı düzenle (Up)")
    assert (tr.key("up"), tr.key("ctrl+left"), tr.key("f3"), Texts("en").key("up")) == ("Yukarı ok", "Ctrl+Sol ok", "F3", "Up")
    # the conversation list's day headings in Turkish's own day and month names
    monday = dt.datetime(2026, 11, 30, 12).timestamp()
    assert [tr.day_heading(monday, dt.date(2026, 11, d)) for d in (30,)] + [
        tr.day_heading(monday, dt.date(2026, 12, d)) for d in (1, 3, 15)] == ["Bugün", "Dün", "Pazartesi", "Kasım 2026"]
    # F6's advice names the profile's setting, in words (it said "--max-tokens" in the app)
    assert "--max-tokens" not in tr.in_app("summary.cut_short") and "en uzun yanıt" in tr.in_app("summary.cut_short")
    # …and where a user finds it: F3 → E's own row ("dosyasındaki sampling.max_tokens" said not where that was,
    # nor what it is; then the profile's file, which E now changes itself)
    for lang, where in (("en", "(F3 → E, Longest reply)"), ("tr", "(F3 → E, En uzun yanıt)")):
        assert where in Texts(lang).in_app("summary.cut_short") and "sampling.max_tokens" not in Texts(lang).in_app(
            "summary.cut_short"), lang


def test_every_core_phrase_is_translated_with_its_values() -> None:
    """Turkish says each of the core's phrases (fit verdicts, the sizing headline), with the
    same blanks to fill."""
    import string

    tr = Texts("tr")
    for key, english in ENGLISH.items():
        turkish = tr.get(key)
        assert turkish is not None, key
        blanks = {f for _, f, _, _ in string.Formatter().parse(english) if f}
        assert {f for _, f, _, _ in string.Formatter().parse(turkish) if f} == blanks, key


def test_a_profile_with_several_problems_is_said_wholly_in_turkish(tmp_path: Path) -> None:
    """A profile file's problems said together were English in the Turkish UI ("has 4 problems:
    (1) unknown field …"), a sampling value's Turkish sentence among them turned English too; the
    command line's English stays as it was."""
    bad = tmp_path / "masa.yaml"
    bad.write_text("model: x.gguf\ncontex: 4096\nthreads: lots\nflash_attn: maybe\ntemperature: 0.2\n"
                   "sampling: {temperature: 9}\n", encoding="utf-8")
    app = WorkstationApp(str(bad), start_engine=False, sample_system=False, language="tr")
    said = app.startup_problem
    assert said == (
        f"{bad} dosyasında 5 sorun var: (1) 'contex' diye bir alan yok; bunu mu demek istediniz: 'context'? "
        "(2) 'temperature' diye bir alan yok; bu alan, zaten var olan sampling: bloğunda temperature: 0,2 olarak "
        "yazılmalı. (3) 'threads' alanı 'lots'; izin verilen değerler auto ya da 1 ile 512 arası. "
        "(4) 'flash_attn' alanı 'maybe'; izin verilen değerler: auto, on, off. "
        "(5) 'sampling.temperature' alanı 9,0; izin verilen değerler 0 ile 5 arası."), said
    for english in ("field", "allowed", "problems", "did you mean", "belongs"):
        assert english not in said
    with pytest.raises(WorkstationError) as err:
        load_profile(str(bad))
    assert str(err.value) == (
        f"{bad} has 5 problems: (1) unknown field 'contex'; did you mean 'context'? (2) unknown field 'temperature'; "
        "it belongs as temperature: 0.2 in the sampling: block already there. (3) field 'threads' is 'lots'; "
        "allowed values are auto or 1 to 512. (4) field 'flash_attn' is 'maybe'; allowed values are auto, on, off. "
        "(5) field 'sampling.temperature' is 9.0; allowed values are 0 to 5.")
    one = tmp_path / "tek.yaml"  # one problem: said alone, the file named once
    one.write_text("model: x.gguf\nparallel: 99\n", encoding="utf-8")
    assert WorkstationApp(str(one), start_engine=False, sample_system=False, language="tr").startup_problem == (
        f"{one}: 'parallel' alanı 99; izin verilen değerler 1 ile 64 yuva arası.")


async def test_serve_the_api_alongside_the_chat(profiles: Path, tmp_path: Path) -> None:
    """Ctrl+G: the profile's model moves into `workstation serve`; the chat becomes one of its
    clients while an office tool (the openai client) uses the same server; Ctrl+G again brings
    the chat's own engine back and the server stops."""
    import asyncio

    import httpx
    import openai

    from workstation.core.engine_process import EngineProcess
    from workstation.core.remote import RemoteEngine

    app = WorkstationApp("a", sample_system=False, language="en", store_path=tmp_path / "c.db", api_port=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: app.api is not None and app.engine is not None and app.loading is None)
        api = app.api
        assert isinstance(app.engine, RemoteEngine) and api.url in app.status_text()
        await _send(pilot, app, "Say hello")
        client = openai.OpenAI(base_url=api.url, api_key="unused")
        tool = await asyncio.to_thread(
            client.completions.create, model="a", prompt="The capital of France is", max_tokens=4, temperature=0
        )
        await until(pilot, lambda: not app.generating)
        assert tool.usage.completion_tokens >= 1
        assert _views(app)[-1].content.strip() and app.last_metrics.predicted_n >= 1
        metrics = httpx.get(api.url.removesuffix("/v1") + "/metrics").text
        served = next(line for line in metrics.splitlines() if line.startswith("workstation:requests_total"))
        assert float(served.split()[-1]) >= 2  # the chat's request and the tool's, one server
        # F8 reaches the server's cells with the chat's key (a short chat: none were saved)
        assert app.engine.own_server and app.engine.forget(app.cells_tag(app.conversation_id)) == 0
        await pilot.press("ctrl+g")
        await until(pilot, lambda: app.api is None and app.engine is not None and app.loading is None)
        assert isinstance(app.engine, EngineProcess) and not api.alive
        await until(pilot, lambda: any("The API is no longer served" in n.message for n in app._notifications))
        # (another profile while serving stops the API and says so: test_serve_with_peoples_keys_needs_a_key…)


async def test_serve_with_peoples_keys_needs_a_key_but_the_chat_works(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a person's key exists (``workstation keys add``), Ctrl+G still serves: the API answers
    over HTTP with the same rules as ``workstation serve`` (no key: 401; the person's key: an
    answer; /health open), the chat keeps talking to it, and the notice says clients need a key.
    On the PC that holds the keys, its user's own key in WORKSTATION_API_KEY (as desk PCs set
    it) is no operator's key: serve refuses that, so Ctrl+G serves with a key of its own.
    (One app for both: was test_ctrl_g_serves_when_the_users_own_persons_key_is_set.)"""
    import asyncio

    import httpx

    from workstation.core.keys import KeyRing
    from workstation.core.remote import RemoteEngine

    ring = KeyRing()  # the test's own data folder (conftest), which the served child reads too
    _, secret = ring.add("alice", tokens_per_day=1000)
    ring.close()
    monkeypatch.setenv("WORKSTATION_API_KEY", secret)
    app = WorkstationApp("a", sample_system=False, language="en", store_path=tmp_path / "c.db", api_port=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: app.loading is None and app.engine is not None)
        said = " ".join(str(n.message) for n in app._notifications)
        assert app.api is not None, said  # it said "The operator's key …"
        api = app.api
        assert isinstance(app.engine, RemoteEngine) and api.url.startswith("http://127.0.0.1:")
        # a key of its own, not alice's
        assert app.engine.client.headers.get("Authorization") not in (None, f"Bearer {secret}")
        assert "could not start" not in said and "Traceback" not in said
        assert api.url in said and "Clients need their API key" in said
        root = api.url.removesuffix("/v1")
        body = {"model": "a", "prompt": "The capital of France is", "max_tokens": 4, "temperature": 0}
        assert (await asyncio.to_thread(httpx.get, f"{root}/health")).status_code == 200
        bare = await asyncio.to_thread(httpx.post, f"{api.url}/completions", json=body, timeout=120)
        assert bare.status_code == 401
        keyed = await asyncio.to_thread(
            httpx.post, f"{api.url}/completions", json=body, timeout=120,
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert keyed.status_code == 200 and keyed.json()["usage"]["completion_tokens"] >= 1
        await _send(pilot, app, "Say hello")  # the chat is a client too, without alice's key
        await until(pilot, lambda: not app.generating)
        assert _views(app)[-1].content.strip() and app.last_metrics.predicted_n >= 1
        # another profile (F3) while serving: the API stops with the old one, and that is said
        # (only "Loaded: B" was, and office tools found nothing at the address); Ctrl+G stopping
        # it: test_serve_the_api_alongside_the_chat
        app.switch_profile(load_profile("b"))
        await until(pilot, lambda: app.loading is None and app.profile is not None and app.profile.key == "b")
        assert app.api is None and not api.alive
        said = [n.message for n in app._notifications]
        assert "Loaded: B. The API served from A stopped with it; Ctrl+G serves B." in said, said


async def test_serve_on_a_port_in_use_says_so_and_the_chat_comes_back(profiles: Path, tmp_path: Path) -> None:
    import socket

    from workstation.core.engine_process import EngineProcess

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        app = WorkstationApp("a", sample_system=False, language="en", store_path=tmp_path / "c.db", api_port=port)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: app.engine is not None)
            await pilot.press("ctrl+g")
            await until(pilot, lambda: app.loading is None and app.engine is not None)
            assert app.api is None and isinstance(app.engine, EngineProcess)
            said = " ".join(str(n.message) for n in app._notifications)
            assert str(port) in said and "in use" in said
            assert "API could not start" in said and "tui --port" in said and "new profile" not in said


async def test_f4_list_shown_before_own_figures(profiles: Path, smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In Turkish F4's list waited for every installed model's vocabulary to be read (its own words
    a token, ``language_words``): seconds on a PC with several large models. The list shows at
    once by the language's general figure, and each row's own figure comes in when measured."""
    import threading

    from textual.widgets import DataTable

    from workstation.core import language_words
    from workstation.tui import integrations
    from workstation.tui.screens.models import ModelsScreen

    released = threading.Event()
    measure = language_words._measure

    def held(model: Path, texts: list[str]) -> list[float | None]:
        released.wait(60)
        return measure(model, texts)

    monkeypatch.setattr(language_words, "_known", {})
    monkeypatch.setattr(language_words, "_measure", held)
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")  # (F4 lists without one)
    try:
        async with app.run_test(size=(110, 30)) as pilot:
            await pilot.press("f4")
            await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.installed), steps=200)
            models = app.screen
            assert isinstance(models, ModelsScreen) and not released.is_set()
            row = next(r for r in models.installed if r.path == smollm2_path)
            general = row.details
            assert general == integrations.model_details(row.info, Texts("tr"), smollm2_path, measure=False)
            table = models.query_one("#installed", DataTable)
            at = models.installed.index(row)
            shown = str(table.get_row_at(at)[-1])
            released.set()
            own = integrations.model_details(row.info, Texts("tr"), smollm2_path)
            assert own != general  # (SmolLM2 spends about 4 tokens on a Turkish word: fewer words than the general 0.4)
            await until(pilot, lambda: row.details == own and str(table.get_row_at(at)[-1]) != shown)
    finally:
        released.set()


async def test_f9_over_f4s_figures_leaves_the_screen_the_app_draws_on(profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """F4 and F9 at once (a first-time user's F4, Esc, F9, F4): F4's list measured each model's words
    a token in a thread, F9 measured them again in another and the status line its model's in a
    third, each loading a vocabulary with llama-cpp-python's quiet mode, which points the process's
    standard output and error at /dev/null and back. Two at once left them at /dev/null for good:
    the terminal the app draws on. The app went on (keys, Ctrl+Q) behind a picture that never
    changed again, not even on a resize."""
    from textual import events

    from workstation.core import language_words
    from workstation.tui.screens.models import ModelsScreen

    def where(fd: int) -> tuple[int, int]:
        seen = os.fstat(fd)
        return seen.st_dev, seen.st_ino

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.pause()
        before = (where(1), where(2), sys.stdout, sys.stderr)
        after = before
        for _ in range(3):
            monkeypatch.setattr(language_words, "_known", {})  # each model's vocabulary read again, at once
            for key in ("f4", "f9", "down", "down", "f9"):
                event = events.Key(key, None)
                event.set_sender(app)
                app._driver.send_message(event)
            await pilot.pause()
            # (not workers.wait_for_complete: it raises WorkerCancelled where F4's fit worker was cancelled)
            await until(pilot, lambda: all(w.is_finished for w in app.workers))
            after = (where(1), where(2), sys.stdout, sys.stderr)
            if after != before:
                break
            while app.screen is not app.chat_screen:
                await pilot.press("escape")
        else:
            await pilot.press("f4")  # and the app goes on
            await until(pilot, lambda: isinstance(app.screen, ModelsScreen))
    assert after == before, "the app's terminal (standard output, error) was left at /dev/null"


async def test_keys_that_come_as_the_app_closes_do_nothing(profiles: Path) -> None:
    """Ctrl+Q, then Esc, F4, Down or F9 before the app had gone (keys typed at once, as a terminal
    hands them on): Textual let the screens go first, and each key then looked for the screen shown.
    The app stopped on "No screens on stack" (F9: on a list taken apart), saying "the app stopped on
    an unexpected error" as it quit, with a non-zero exit."""
    for keys in (("escape", "f4", "down", "down", "escape", "escape", "f4", "escape"),
                 ("escape", "f9", "f4", "down", "down", "f9", "escape", "escape")):
        app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
        async with app.run_test(size=(110, 32)) as pilot:
            await pilot.press("f4")
            for key in ("ctrl+q", *keys):
                event = events.Key(key, None)
                event.set_sender(app)
                app._driver.send_message(event)
        assert app.return_code in (None, 0) and not app._exit_renderables, (keys, app._exit_renderables)


async def test_down_pressed_while_f4s_list_comes_stays(profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """F4 again, then Down at once: the list came a moment later and put the cursor back on the first
    model (Down four times, and nothing had moved)."""
    import threading

    from textual.widgets import DataTable

    from workstation.tui import integrations
    from workstation.tui.screens.models import ModelsScreen

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and len(app.screen.installed) >= 3)
        models = app.screen
        await pilot.press("escape")
        listed, go_on = integrations.installed_models, threading.Event()

        def held(*args: Any, **kwargs: Any) -> Any:
            go_on.wait(30)  # (the list comes after the keys)
            return listed(*args, **kwargs)

        monkeypatch.setattr(integrations, "installed_models", held)
        await pilot.press("f4", "down", "down")
        table = models.query_one("#installed", DataTable)
        assert app.screen is models and table.cursor_row == 2
        go_on.set()
        await until(pilot, lambda: all(worker.is_finished for worker in app.workers))
        await pilot.pause()
        assert table.cursor_row == 2


async def test_f9_twice_at_once_leaves_no_work_undone(profiles: Path) -> None:
    """F9 twice at once: the second cancelled the sidebar's relabelling before it began, and Python
    said "coroutine 'ConversationList.show' was never awaited" (a RuntimeWarning on the terminal)."""
    import gc
    import warnings

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", RuntimeWarning)
        async with app.run_test(size=(110, 32)) as pilot:
            await pilot.pause()
            for _ in range(5):
                for key in ("f9", "f9"):  # as a terminal hands them on
                    event = events.Key(key, None)
                    event.set_sender(app)
                    app._driver.send_message(event)
                await pilot.pause()
                await until(pilot, lambda: all(worker.is_finished for worker in app.workers))
            gc.collect()
    assert not [str(w.message) for w in said if "never awaited" in str(w.message)]


async def test_models_and_summarize_screens(profiles: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """F4 lists what is really on disk and in the catalog; F6 summarizes a real document with
    the loaded model, and a document that cannot be read is one message, the screen usable."""
    from docmaker import SUBJECT_PARAGRAPHS
    from textual.widgets import Button, DataTable, Input, Markdown, TabbedContent

    from workstation.core.catalog import catalog_entries
    from workstation.tui.messages import Progress
    from workstation.tui.screens.models import ModelsScreen
    from workstation.tui.screens.summarize import SummarizeScreen

    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)

        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.catalog))
        models = app.screen
        assert isinstance(models, ModelsScreen)
        assert smollm2_path in [row.path for row in models.installed]
        catalog = models.query_one("#catalog", DataTable)
        assert catalog.row_count == len(catalog_entries())
        states = {str(catalog.get_row_at(i)[0]): str(catalog.get_row_at(i)[2]) for i in range(catalog.row_count)}
        sizes = {str(catalog.get_row_at(i)[0]): str(catalog.get_row_at(i)[1]) for i in range(catalog.row_count)}
        assert sizes["llama-3.1-8b-instruct-q4_k_m"] == "~4.6 GB"  # as 'models list' says it, not "?"
        assert states["smollm2-135m-instruct-q4_1"] == "yes" and states["llama-3.1-8b-instruct-q4_k_m"] == "no"
        models.query_one(TabbedContent).active = "tab-catalog"
        catalog.move_cursor(row=list(states).index("smollm2-135m-instruct-q4_1"))
        await pilot.press("p")  # pull what is already here: said, nothing downloaded
        await until(pilot, lambda: any("already installed" in str(n.message) for n in app._notifications))
        # deleting the model the profiles run, loaded now, says so before it is done (the bare
        # question deleted the default model of most profiles)
        models.query_one(TabbedContent).active = "tab-installed"
        models.query_one("#installed", DataTable).move_cursor(
            row=[row.path for row in models.installed].index(smollm2_path))
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        question = str(app.screen.query_one(".dialog-title").render())
        assert "The profiles a, b use it: they will not load until they name another model." in question, question
        assert question.endswith("It is the model loaded now; the chat goes on with it until another profile is loaded.")
        await pilot.press("escape")  # kept
        await until(pilot, lambda: app.screen is models)
        assert smollm2_path.is_file()
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        # a catalog model's download stopped half-way (its part kept for p to resume) showed as
        # "no", like one never begun, and nothing in F4 removed it: its share is shown, d removes it
        entry = next(e for e in catalog_entries() if e["name"] == "llama-3.1-8b-instruct-q4_k_m")
        elsewhere = tmp_path / "models"
        elsewhere.mkdir()
        part = elsewhere / f".{entry['file']}.part"
        part.write_bytes(b"\0" * 6999)  # 34.995%: said as 35%, as a load's share is (it floored to 34%)
        part.with_name(part.name + ".json").write_text(json.dumps({"url": entry["source"], "total": 20000}))
        with pytest.MonkeyPatch.context() as local:  # (the models folder of this test alone)
            local.setenv("WORKSTATION_MODELS", str(elsewhere))
            await pilot.press("f4")
            await until(pilot, lambda: app.screen is models and models.catalog[0].path is not None
                        and models.catalog[0].path.parent == elsewhere)
            models.query_one(TabbedContent).active = "tab-catalog"
            names = [row.name for row in models.catalog]
            assert str(catalog.get_row_at(names.index(entry["name"]))[2]) == "35% downloaded"
            models.pulling = entry["name"]  # its download going on, as the pull's worker says it: the status
            for done, pct in ((0, None), (6999, 35), (20000, 99)):  # bar's share rounds too, none before a byte
                models.post_message(Progress(done, 20000))
                await until(pilot, lambda pct=pct: app.downloading == (entry["name"], pct))
            models.pulling = ""
            app.show_download(None)
            catalog.move_cursor(row=names.index(entry["name"]))
            await until(pilot, lambda: "stopped with 7 KB here (35%): p downloads the rest, d removes it"
                        in str(models.query_one("#model-task").render()))
            english, app.texts = app.texts, Texts("tr")  # in Turkish as it is said ("İndirmesi 7 KB inmişken durdu")
            assert models._part_hint(models.catalog[names.index(entry["name"])]) == (
                "İndirme yarıda kaldı: 7 KB indirildi (%35). p kalanını indirir, d yarım dosyayı siler.")
            app.texts = english
            await pilot.press("p")  # (asked as the rest of it)
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
            assert str(app.screen.query_one(".dialog-title").render()).startswith(
                "Download the rest of llama-3.1-8b-instruct-q4_k_m (~4.6 GB in all, 35% downloaded, licence:")
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is models)
            await pilot.press("d")
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
            assert "Remove the unfinished download of llama-3.1-8b-instruct-q4_k_m (7 KB)?" in str(
                app.screen.query_one(".dialog-title").render())
            await pilot.press("y")
            await until(pilot, lambda: not part.exists() and str(catalog.get_row_at(names.index(entry["name"]))[2]) == "no")
            assert not part.with_name(part.name + ".json").exists()
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)

        doc = tmp_path / "bees.md"
        doc.write_text("# Bees\n\n" + "\n\n".join(SUBJECT_PARAGRAPHS[:2]), encoding="utf-8")
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
        screen = app.screen
        assert isinstance(screen, SummarizeScreen)
        bad = tmp_path / "photo.txt"
        bad.write_bytes(bytes(range(256)) * 10)
        screen.query_one("#summarize-path", Input).value = str(bad)
        await pilot.press("enter")
        await until(pilot, lambda: not screen.running and any("photo.txt" in str(n.message) for n in app._notifications))
        assert not app.generating and screen.summary == ""
        # nor does the footer offer Ctrl+K (ask in chat) with nothing to ask about ("^k ask in chat"
        # beside "nothing to show or to ask about")
        asks = lambda: "ctrl+k" in {k.key for k in screen.query(FooterKey)}  # noqa: E731
        await until(pilot, lambda: not asks())
        app.screen.query_one("#summarize-result").focus()  # (Ctrl+K asks from the summary, not the path box)
        await pilot.press("ctrl+k")  # nothing to ask about yet: said (it did nothing, said nothing)
        await until(pilot, lambda: any(str(n.message).startswith("There is no finished summary to ask about yet")
                                       for n in app._notifications))
        screen.query_one("#summarize-path", Input).focus()
        screen.query_one("#summarize-path", Input).value = str(doc)
        await pilot.press("enter")
        await until(pilot, lambda: not screen.query_one("#summarize-ask", Button).disabled)
        assert screen.summary.startswith("# Summary of bees.md") and "§ Bees" not in screen.summary  # one part: no label
        assert "Points by part" not in screen.summary and "Part 1" not in screen.summary  # (the summary is the part's)
        assert screen.query_one("#summary", Markdown).source == screen.summary
        state = f6_state(screen)
        # (16 tokens a summary in profile a: cut short, and said so, not "Done.")
        assert not app.generating and state.startswith("Cut short:") and "Ctrl+S saves it beside the document" in state
        assert app.last_folder == doc.parent  # typed, not picked: F7 and the Open dialog start there too
        # the path box's own Ctrl+K deletes to the end, as in every box, wherever its cursor is (at
        # the end of the document's path it asked in the chat: pressed to clear the box, the path
        # typed next was sent to the model); the footer does not offer "ask in chat" there
        box = screen.query_one("#summarize-path", LineInput)
        assert screen.query_one("#summarize-result").has_focus  # (the summary done: Ctrl+K asks from it)
        box.focus()
        await until(pilot, lambda: box.has_focus)
        assert box.cursor_position == len(box.value)
        await until(pilot, lambda: not asks())
        await pilot.press("ctrl+k")  # (the box's: deletes what is selected, or to the end)
        assert app.screen is screen and box.has_focus and str(doc).startswith(box.value)
        box.put(str(doc))
        await pilot.press("home", "right", "ctrl+k", *"tmp/other.md", "ctrl+k")
        assert app.screen is screen and box.value == "/tmp/other.md" and box.has_focus
        # from the summary, Ctrl+K asks in the chat, and the footer says so
        screen.query_one("#summarize-result").focus()
        await until(pilot, asks)
        box.put(str(doc))
        box.focus()
        await until(pilot, lambda: not asks())
        # the summary scrolls from the path box, which keeps the focus (PageDown and End did nothing
        # there: a long summary seemed cut at the screen's last line), and is shown whole
        assert screen.query_one("#summarize-ask").region.right < 100  # (it touched the right edge)
        shown = screen.query_one("#summarize-result")
        await pilot.resize_terminal(100, 16)  # (whole at 30 lines)
        await until(pilot, lambda: shown.max_scroll_y > 0)
        assert app.focused is screen.query_one("#summarize-path")
        await pilot.press("pagedown")
        await until(pilot, lambda: shown.scroll_y > 0)
        await pilot.press("ctrl+end")
        await until(pilot, lambda: shown.scroll_y == shown.max_scroll_y)
        last = screen.query_one("#summary", Markdown).children[-1]  # its last line on the screen
        assert shown.region.y < last.region.bottom <= shown.region.bottom, (last.region, shown.region)
        await pilot.press("ctrl+home")
        await until(pilot, lambda: shown.scroll_y == 0)
        await pilot.resize_terminal(100, 30)
        # Ctrl+S writes it beside the document (the way was Ctrl+K, then F7 of the whole chat); a
        # file of the person's there is left as it was
        beside = doc.with_name("bees.md.summary.md")
        beside.write_text("my own notes\n", encoding="utf-8")
        said = lambda: " ".join(str(n.message) for n in app._notifications)  # noqa: E731
        timeouts: dict[str, object] = {}
        saved = notices(app, timeouts)
        await pilot.press("ctrl+s")
        other = doc.with_name("bees.md.summary-2.md")  # beside it, under another name (it stopped there)
        await until(pilot, lambda: other.is_file() and other.read_text(encoding="utf-8") == screen.summary)
        assert f"bees.md.summary.md is there already and is not a summary of this document, so it was left as it " \
               f"was; the summary is saved as {other}" in said()
        assert beside.read_text(encoding="utf-8") == "my own notes\n"
        beside.unlink()
        for _ in range(2):  # then written, and its own summary replaced
            await pilot.press("ctrl+s")
            await until(pilot, lambda: beside.is_file() and beside.read_text(encoding="utf-8") == screen.summary)
        assert f"Saved the summary as {beside}" in said()
        assert [timeouts[n] for n in saved] == [None] * 3, timeouts  # it asks nothing: the app's reading time (not 10 s)
        # SmolLM2 135M swaps names and invents dates: the summary tells its reader to check them
        assert screen.summary.split("\n")[2].startswith("> Check names, dates and figures against the document: "
                                                         "smollm2-135m-instruct-q4_1 is a very small model (135M")
        english = screen.summary
        await pilot.press("f9")  # the line says itself again in Turkish (it stayed in English)
        await until(pilot, lambda: f6_state(screen).startswith("Yarıda kaldı:"))
        # and the summary's headings and figures (they stayed in English), the model's words as they were
        await until(pilot, lambda: screen.query_one("#summary", Markdown).source.startswith("# bees.md özeti"))
        assert screen.summary == screen.query_one("#summary", Markdown).source and "Check names" not in screen.summary
        assert (screen.result is not None and screen.result.overall and screen.result.overall in screen.summary)
        await pilot.press("f9")
        await until(pilot, lambda: f6_state(screen) == state)
        await until(pilot, lambda: screen.query_one("#summary", Markdown).source == english)
        # ask in the chat: the new conversation holds the document and the summary the engine
        # made of it (one part), so a question starts from the summary's KV cells
        assert screen.result is not None
        follow_up = list(screen.result.follow_up)
        assert [m["role"] for m in follow_up] == ["user", "assistant"]
        assert SUBJECT_PARAGRAPHS[1][:40] in follow_up[0]["content"]
        document_prompt = len(app.engine.chat_prompt(follow_up[:1]))  # the summary's prompt
        before = app.conversation_id
        app.chat_screen.set_input("What does it say of bees?")  # typed before F6: asked in the new one
        app.screen.query_one("#summarize-result").focus()  # (Ctrl+K asks from the summary, not the path box)
        await pilot.press("ctrl+k")
        await until(pilot, lambda: app.screen is app.chat_screen and len(_views(app)) == 2)
        # (it stayed behind as the other conversation's "not sent: What doe…", this box empty)
        assert app.chat_screen.input_text() == "What does it say of bees?" and before not in app._drafts
        app.chat_screen.set_input("")
        assert [(m.role, m.content) for m in app.store.messages(app.conversation_id)] == [
            (m["role"], m["content"]) for m in follow_up
        ]
        # the chat shows what was asked, not the model's instructions around the document
        assert _views(app)[0].content == "Summarize the document bees.md; then answer my questions about it."
        summary_view = _views(app)[1]  # a saved reply without figures: no "waiting" label on it
        assert str(summary_view.query_one(".metrics").render()) == ""
        await _send(pilot, app, "Who?")
        await until(pilot, lambda: not app.generating)
        m = app.last_metrics
        assert m is not None and m.stop_reason != "cancelled"
        assert m.cache_n > document_prompt  # the document's prompt and the summary's tokens
        assert m.prompt_n < 16  # the question, in the chat template
        made = screen.summary
        asked = app.conversation_id
        count = len(app.store.list())
        await pilot.press("f6")  # Ctrl+K again: the conversation made of it, not a second one without the question
        await until(pilot, lambda: app.screen is screen)
        app.screen.query_one("#summarize-result").focus()  # (Ctrl+K asks from the summary, not the path box)
        await pilot.press("ctrl+k")
        await until(pilot, lambda: app.screen is app.chat_screen and app.conversation_id == asked)
        assert len(app.store.list()) == count and len(_views(app)) == 4

    # the summary is there after a restart, and can be asked about again (it was gone, and
    # minutes of work with it, when the app closed)
    again = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with again.run_test(size=(100, 30)) as pilot:
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(again.screen, SummarizeScreen))
        kept = again.screen
        assert isinstance(kept, SummarizeScreen)
        await until(pilot, lambda: kept.summary == made)
        assert kept.query_one("#summary", Markdown).source == made
        assert kept.query_one("#summarize-path", Input).value == str(doc)
        assert again.last_folder == doc.parent  # (remembered for the next start, as a pick is)
        state = str(kept.query_one("#summarize-state").render())
        assert state.startswith("The last summary, of bees.md, made 20") and "Ctrl+R summarizes the document again" in state
        assert "is a very small model" in kept.summary  # what was said of it is said again (in the summary)
        assert kept.result is not None and kept.result.follow_up == follow_up
        # F9 after the restart: the line and the summary's own headings, notes and figures in Turkish
        # (the headings stayed in English under a Turkish line), the model's words as they were
        await pilot.press("f9")
        await until(pilot, lambda: kept.query_one("#summary", Markdown).source.startswith("# bees.md özeti"))
        assert str(kept.query_one("#summarize-state").render()).startswith("Son özet: bees.md, ")
        assert "Check names" not in kept.summary and "çok küçük bir model" in kept.summary
        assert kept.result.overall and kept.result.overall in kept.summary
        await pilot.press("f9")
        await until(pilot, lambda: kept.query_one("#summary", Markdown).source == made)
        kept.query_one("#summarize-result").focus()  # (Ctrl+K asks from the summary, not the path box)
        await pilot.press("ctrl+k")  # the conversation made of it before the restart, its question in it
        await until(pilot, lambda: again.screen is again.chat_screen and again.conversation_id == asked)
        said = [(m.role, m.content) for m in again.store.messages(asked)]
        assert said[:2] == [(m["role"], m["content"]) for m in follow_up] and said[2] == ("user", "Who?")


@pytest.mark.parametrize("how", ["ctrl+q", "SIGTERM", "SIGHUP", "SIGINT"])
async def test_quitting_mid_reply_keeps_the_reply_so_far(profiles: Path, tmp_path: Path, how: str, signals_kept: None) -> None:
    """Ctrl+Q while a reply streams stops it and saves what arrived, as Esc does (it was thrown
    away, although the palette says quitting saves the conversations). So do SIGTERM (`kill`,
    a logout) and SIGHUP (the terminal window closed): they killed the app, the reply on screen
    was lost, and the engine's process printed tracebacks into the terminal. SIGINT (`kill
    -INT`; the Ctrl+C key is read as a key) ended it with the reply lost."""
    import os
    import signal

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):  # should the app not catch it, pytest lives on
        signal.signal(sig, lambda *_: None)
    db = tmp_path / "c.db"
    app = WorkstationApp("b", sample_system=False, language="en", store_path=db, quit_on_signals=how != "ctrl+q")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await _send_text(pilot, app, "Write a long story about a stapler.")
        await until(pilot, lambda: app.live_tokens >= 5)
        conv_id = app.conversation_id
        if how == "ctrl+q":
            await pilot.press("ctrl+q")
        else:  # a logout's SIGTERM, then the terminal's SIGHUP: the second does not cut the first short
            os.kill(os.getpid(), getattr(signal, how))
            await pilot.pause()
            os.kill(os.getpid(), signal.SIGHUP if how == "SIGTERM" else signal.SIGTERM)
        await until(pilot, lambda: not app.is_running)
    store = ConversationStore(db)
    try:
        messages = store.messages(conv_id)
    finally:
        store.close()
    assert [m.role for m in messages] == ["user", "assistant"]
    assert len(messages[1].content.split()) >= 3
    assert (messages[1].metrics or {}).get("stop_reason") == "cancelled"


async def test_f6_forgets_a_failure_once_another_document_is_in_its_box(profiles: Path, tmp_path: Path) -> None:
    """F6 given a document that is not there said why nothing was summarized; the chat's long letter
    then offered in its box, the old failure was still said under it. It stays while the path that
    failed is in the box (to be mended) and goes once another path is. (A folder is summarized now,
    every document in it: test_f6_folder.)"""
    from textual.widgets import Input

    folder = tmp_path / "School Letters"
    folder.mkdir()
    letter = folder / "letter.txt"
    letter.write_text("Dear parents, the trip is on Friday.\n", encoding="utf-8")
    missing = folder / "letter 2.txt"
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await summarize_in_f6(pilot, app, missing)
        await until(pilot, lambda: not screen.running and "letter 2.txt" in f6_state(screen))
        failed = f6_state(screen)
        box = screen.query_one("#summarize-path", Input)
        await until(pilot, lambda: box.value == str(missing))  # (put back to be mended: why stays said)
        await pilot.pause()
        assert f6_state(screen) == failed
        box.value = str(letter)
        await until(pilot, lambda: "letter 2.txt" not in f6_state(screen))
        assert f6_state(screen) == app.texts("summarize.idle")


async def test_f6_shows_a_summarys_numbered_points_as_written(profiles: Path, tmp_path: Path) -> None:
    """F6's summary pane numbered a list on from its first number, as the chat did: a summary
    naming a lease's clauses 2 and 4 showed "3." for clause 4 (the summary is read back after a
    restart here, as kept). A list numbered "1. 1." is still counted."""
    from workstation.core.kept_summary import KEPT
    from workstation.tui.screens.summarize import SummarizeScreen

    lease = tmp_path / "lease.txt"
    summary = ("# Summary of lease.txt\n\n2. Rent: $1,850 a month.\n4. Late fee: $50 after the fifth day.\n\n"
               "Check:\n\n1. the dates\n1. the names\n")
    store = ConversationStore()
    store.remember(KEPT, json.dumps({"path": str(lease), "at": 1.7e9, "result": {"source": str(lease), "summary": summary},
                                     "written": {"en": summary}}))
    store.close()
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen) and app.screen.summary == summary)
        await pilot.pause()
        lines = [line.strip() for line in screen_lines(app)]
        assert "4. Late fee: $50 after the fifth day." in lines and "3. Late fee: $50 after the fifth day." not in lines, lines
        assert "1. the dates" in lines and "2. the names" in lines, lines


async def test_f6_says_a_summary_cut_at_its_length_limit_is_cut_short(profiles: Path, tmp_path: Path) -> None:
    """F6 said "Done." of a summary whose last step stopped at its reply length limit (it ends
    mid-sentence): it says it was cut short and how to get it whole, with E's Longest reply row
    (F3 → E), not by editing max_tokens in the profile's file; in Turkish too."""
    from docmaker import SUBJECT_PARAGRAPHS


    doc = tmp_path / "bees.md"
    doc.write_text("# Bees\n\n" + SUBJECT_PARAGRAPHS[0], encoding="utf-8")
    app = WorkstationApp("a", sample_system=False, language="en")  # (8 tokens a reply: 16 a summary)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await summarize_in_f6(pilot, app, doc)
        await until(pilot, lambda: not screen.running and screen.result is not None)
        result = screen.result
        assert result is not None and len(result.chunks) == 1 and result.chunks[0].metrics is not None
        assert result.chunks[0].metrics.stop_reason == "length" and result.cut_short
        state = lambda: f6_state(screen)  # noqa: E731
        assert state().startswith("Cut short: the summary stopped at its length limit, so it ends mid-sentence (…). "
                                  "To get it whole, raise the profile's longest reply (F3 → E, Longest reply), then "
                                  "summarize it again (Ctrl+R). Ctrl+K on the summary below (Tab or a click goes to it) asks"), state()
        assert "Done" not in state() and "max_tokens" not in screen.summary
        assert "(F3 → E, Longest reply)" in screen.summary, screen.summary  # the note under it says the same way
        await pilot.press("f9")
        await until(pilot, lambda: state().startswith("Yarıda kaldı: özet uzunluk sınırına takıldı"))
        assert "(F3 → E, En uzun yanıt)" in state() and "Bitti" not in state()


async def test_f6_says_a_summary_cut_by_its_share_of_the_context_needs_a_larger_context(
        profiles: Path, smollm2_path: Path, tmp_path: Path) -> None:
    """A summary held by its share of the context (256 tokens: 64 for the summary), not by the
    profile's longest reply (400): F6 told the user to raise the longest reply, which changed
    nothing. It says a larger context (F3 → E, Context) lets it finish; in Turkish too."""
    from docmaker import SUBJECT_PARAGRAPHS


    _profile(profiles / "c.yaml", str(smollm2_path), context=256,
             sampling={"temperature": 0.0, "max_tokens": 400, "seed": 1, "repeat_penalty": 1.0})
    doc = tmp_path / "bees.md"
    doc.write_text("# Bees\n\n" + "\n\n".join(SUBJECT_PARAGRAPHS[:3]), encoding="utf-8")
    app = WorkstationApp("c", sample_system=False, language="en")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await summarize_in_f6(pilot, app, doc)
        await until(pilot, lambda: not screen.running and screen.result is not None)
        result = screen.result
        assert result is not None and result.cut_short
        state = lambda: f6_state(screen)  # noqa: E731
        assert state().startswith("Cut short: the summary used all the room this profile's context leaves it, so it "
                                  "ends mid-sentence (…). To get it whole, give the profile a larger context (F3 → E, "
                                  "Context), then summarize it again (Ctrl+R)."), state()
        assert "Longest reply" not in state() and "Longest reply" not in screen.summary and result.cut_by == "context"
        assert "(F3 → E, Context)" in screen.summary, screen.summary  # the note under it says the same
        await pilot.press("f9")
        await until(pilot, lambda: state().startswith("Yarıda kaldı: özet, bu profilin bağlamında"))
        assert "(F3 → E, Bağlam)" in state() and "En uzun yanıt" not in state()


async def test_a_summary_goes_on_behind_the_chat_until_stopped(
    profiles: Path, tmp_path: Path, smollm2_path: Path, signals_kept: None
) -> None:
    """Esc on F6 goes back to the chat and the summary goes on (it was cancelled without a
    word): the status line and the chat say so, F6 shows the same run, Ctrl+X stops it keeping
    the parts done; a summary that ends behind the chat says it is ready. Ctrl+Q asks before
    it stops one; SIGTERM (a logout) does not ask.
    F6 had no way to do every part again (`summarize --start-over`): Alt+R, in the footer and
    F1 only while a stopped run's parts are kept for the document in the box, summarizes from
    the first part and uses none of them, once it has asked (naming how many parts go). While
    another process summarizes the document, F6 and `summarize` refuse it in one sentence (both
    wrote its kept parts at once). (One app for both: was test_f6_starts_a_stopped_summary_over_with_alt_r.)"""
    import os
    import signal
    import sqlite3
    import subprocess
    import sys

    signal.signal(signal.SIGTERM, lambda *_: None)  # should the app not catch it, pytest lives on
    from docmaker import honeybee_text
    from textual.widgets import Button, Input, Markdown

    from workstation.core.kept_parts import FILE_NAME, kept_count, parts_for
    from workstation.core.paths import data_dir
    from workstation.core.summarize import SummaryProgress
    from workstation.tui.messages import Progress
    from workstation.tui.screens.summarize import SummarizeScreen

    _profile(profiles / "small.yaml", str(smollm2_path), context=512)  # short parts: a quicker test
    long_doc = tmp_path / "hive.txt"
    long_doc.write_text(honeybee_text(3), encoding="utf-8")  # two parts at 512 tokens
    short_doc = tmp_path / "bees.txt"
    # not the long one's start (its cells would make this one all but free): still running at Esc
    short_doc.write_text("\n\n".join(reversed(honeybee_text(1).split("\n\n"))), encoding="utf-8")
    app = WorkstationApp("small", sample_system=False, language="en", quit_on_signals=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
        screen = app.screen
        assert isinstance(screen, SummarizeScreen)
        states: list[str] = []  # every state line said, and the bar's figure with it
        say = screen._say
        screen._say = lambda text, *whole: (  # type: ignore[method-assign]
            states.append(f"{text} [{screen.query_one('#summarize-progress').progress:g}]"), say(text, *whole))
        # the bar counts the step that puts the parts' summaries together, and the words say it
        # (at 80% they said "Parts done: 4 of 4" all through that step, and "2 of 4" at 40%)
        screen.post_message(Progress(4, 5, data=SummaryProgress("reduce", 4, 5, 4, 4, 20.0, None)))
        await until(pilot, lambda: bool(states))
        assert states == ["Parts done: 4 of 4 · putting the summary together · time left: 20 s [4]"], states
        states.clear()
        doc = long_doc
        shown_keys = lambda: {a for a, _, _ in footer_keys(screen)}  # noqa: E731
        screen.query_one("#summarize-path", Input).value = str(doc)
        await pilot.pause()
        assert "start_over" not in shown_keys() and "run" in shown_keys()  # nothing kept: nothing to start over

        async def alt_r() -> None:  # as a terminal sends it (ESC r): a key with its letter, the path box focused
            assert isinstance(app.focused, Input) and app.focused.id == "summarize-path"
            key = events.Key("alt+r", "r")
            key.set_sender(app)
            app._driver.send_message(key)  # type: ignore[union-attr]
            await pilot.pause()

        await alt_r()
        assert not screen.running  # (and the key does nothing then)
        assert screen.query_one("#summarize-path", Input).value == str(doc)  # (it typed an "r" after the path)
        # another window's F6, or a summarize, on it now: refused in a sentence both ways (both wrote its parts)
        held = parts_for(doc, app.profile)  # (this process's: a summarize in another is refused; then that one holds it)
        other = subprocess.Popen(
            [sys.executable, "-c", "import sys; from pathlib import Path; from workstation.cli import main; "
             "from workstation.core.kept_parts import parts_for; from workstation.core.profile_lookup import load_profile; "
             "print(main(['summarize', '-p', 'small', sys.argv[1]]), flush=True); sys.stdin.readline(); "
             "print(parts_for(Path(sys.argv[1]), load_profile('small')) is not None, flush=True); sys.stdin.read()",
             str(doc)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert other.stdin is not None and other.stdout is not None and other.stderr is not None
        busy = ("hive.txt is being summarized in another window or command now; summarize it again once that "
                "summary has finished or been stopped.")
        try:
            assert held is not None and other.stdout.readline().strip() == "1"  # refused
            held.close()
            other.stdin.write("\n")
            other.stdin.flush()
            assert other.stdout.readline().strip() == "True"  # it holds the document now
            told_busy = notices(app)
            await pilot.press("enter")
            await until(pilot, lambda: busy in told_busy and not screen.running)
        finally:
            other.stdin.close()
            other.wait(30)
        assert other.stderr.read() == f"workstation: {busy}\n"
        states.clear()
        await pilot.press("enter")
        await until(pilot, lambda: screen.running)
        assert "start_over" not in shown_keys()  # not while it runs
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        said = lambda: " ".join(str(n.message) for n in app._notifications)  # noqa: E731
        await until(pilot, lambda: "summary of hive.txt goes on" in said())  # notices are messages
        assert screen.running
        assert "summarizing hive.txt" in app.status_text()
        await pilot.press("f5")  # the dashboard shows the summary under way, not the last chat turn's figures
        await until(pilot, lambda: type(app.screen).__name__ == "DashboardScreen")
        live = lambda: str(app.screen.query_one("#live").render())  # noqa: E731
        await until(pilot, lambda: live().startswith("Summarizing hive.txt: "))
        assert "Generating" not in live()
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        await pilot.pause()
        shown = {a for a, _, _ in footer_keys(app.chat_screen)}  # Esc stops no summary: no "Stop" (it said so)
        assert "stop" not in shown and "new_conversation" not in shown and "dashboard" in shown, shown
        await type_message(pilot, "Hello?")
        # (that the message was not sent and waits in the box: "the chat waits until it ends" read as queued)
        await until(pilot, lambda: "A summary of hive.txt is being made, so your message was not sent: it stays in the box"
                    in said())
        assert app.conversation_id is None  # the message waited: nothing was sent or saved
        assert app.chat_screen.input_text() == "Hello?"  # (as the notice says: in the box)
        await pilot.press("escape")  # in the chat Esc stops replies, not a summary
        await pilot.pause(0.2)
        assert screen.running and not screen._cancel.is_set() and not app.engine._cancel.is_set()
        await pilot.press("f6")
        await until(pilot, lambda: app.screen is screen)  # the same run, not a new screen
        for key in ("ctrl+o", "ctrl+r"):  # out of the footer while it runs, but not silent
            app.clear_notifications()
            await pilot.press(key)
            await until(pilot, lambda: "wait for it, or press Ctrl+X to stop it" in said())
        assert not isinstance(app.screen, ModalScreen) and screen.running
        await until(pilot, lambda: "Parts done: 1 of" in f6_state(screen))
        # the time so far, ticking: a part takes a while and nothing else on the screen moved
        state = lambda: f6_state(screen)  # noqa: E731
        assert re.search(r" · (\d+ min )?\d+ s so far$", state()), state()
        first = state()
        await until(pilot, lambda: state() != first and "so far" in state())
        await pilot.press("ctrl+x")
        await until(pilot, lambda: not screen.running)
        # the first part's summary said as it is written, the bar moving before the part ends
        # (it showed "Parts done: 0 of 2" and an empty bar until then)
        writing = [s for s in states if s.startswith("Parts done: 0 of 2, then the summary · ") and "part 1: " in s]
        assert any("of its summary written" in s for s in writing), states
        assert any(0 < float(s.rsplit("[", 1)[1].rstrip("]")) < 1 for s in writing), states
        # the time left is said within the first part, from its reading (it said "time left: …" until a part ended)
        assert any("time left: …" not in s for s in writing), states
        # and it counts down, never climbing more than a small share (it said "2 min 52 s", then "3 min 5 s")
        units = {"h": 3600, "min": 60, "s": 1}
        told = [sum(int(n) * units[u] for n, u in re.findall(r"(\d+) (h|min|s)\b", m[1]))
                for m in (re.search(r"time left: (\d[^·\[]*)", s) for s in states) if m]
        from workstation.core.summarize import TIME_LEFT_RISE, TIME_LEFT_RISE_FLOOR

        assert all(b <= a + max(a * TIME_LEFT_RISE, TIME_LEFT_RISE_FLOOR) + 1  # (+1: said in whole seconds)
                   for a, b in zip(told, told[1:], strict=False)), states
        assert screen.result is not None and screen.result.cancelled
        done = sum(1 for c in screen.result.chunks if c.summary is not None)
        assert 1 <= done < len(screen.result.chunks)
        assert f"Stopped after {done} of {len(screen.result.chunks)} parts" in str(
            screen.query_one("#summarize-state").render())
        assert f6_state(screen).endswith(
            "Ctrl+R goes on from them; Alt+R does every part again.")
        # the key and the button say so too (they said "summarize" beside that line)
        await until(pilot, lambda: {k.key: k.description for k in screen.query(FooterKey)}.get("ctrl+r") == "go on")
        assert str(screen.query_one("#summarize-run", Button).label) == "Go on"
        assert screen.query_one("#summary", Markdown).source == screen.summary != ""
        assert not app.generating and app.summarizing is None and "summarizing" not in app.status_text()
        # Ctrl+R on it again goes on from the parts it finished (it began again at part 1, and a
        # desk PC's key paid for them twice)
        finished = {(c.start, c.end): c.summary for c in screen.result.chunks if c.summary is not None}
        states.clear()
        await pilot.press("ctrl+r")
        await until(pilot, lambda: screen.running)
        # (how many are left: "the others are being summarized" was said of the one part left)
        await until(pilot, lambda: any(s.startswith(f"{len(finished)} of 2 parts kept from the run that stopped; "
                                                    f"{2 - len(finished)} more to summarize…") for s in states))
        await pilot.press("ctrl+x")
        await until(pilot, lambda: not screen.running)
        assert screen.result is not None
        assert {(c.start, c.end): c.summary for c in screen.result.chunks if (c.start, c.end) in finished} == finished

        # Alt+R: every part again, in the footer (at 80 columns) and F1 while parts are kept
        await until(pilot, lambda: "start_over" in shown_keys())
        await pilot.resize_terminal(80, 30)
        await until(pilot, lambda: fits(footer_keys(screen)) and {"help", "quit"} <= shown_keys())
        await pilot.resize_terminal(100, 30)
        assert f6_state(screen).endswith(
            "Ctrl+R goes on from them; Alt+R does every part again.")
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, KeysDialog))
        assert ("Alt+R", "Start over", "Summarize every part again, forgetting the parts a stopped summary kept "
                "(shown only where some are kept)") in app.screen.rows
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen)
        screen.query_one("#summarize-path", Input).value = str(tmp_path / "other.txt")
        await until(pilot, lambda: "start_over" not in shown_keys())  # parts kept for another document only
        screen.query_one("#summarize-path", Input).value = str(doc)
        await until(pilot, lambda: "start_over" in shown_keys())
        # the kept part marked: were it used, the summary would show the mark
        with sqlite3.connect(data_dir() / FILE_NAME) as db:
            assert db.execute("UPDATE parts SET summary='KEPT-MARK', reply='KEPT-MARK'").rowcount >= 1
        states.clear()
        kept = kept_count(doc, app.profile)
        for answer in ("n", "y"):  # asked first, naming how many parts go (they went without a word)
            await alt_r()
            await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
            question = str(app.screen.query_one(".dialog-title").render())
            assert question.startswith("Summarize hive.txt again from its first part? The ") and (
                f"The {kept} parts a stopped summary finished are dropped" in question if kept > 1 else
                "The part a stopped summary finished is dropped" in question), question
            await pilot.press(answer)
            await until(pilot, lambda: not isinstance(app.screen, ConfirmDialog))
            if answer == "n":
                await pilot.pause()
                assert not screen.running and kept_count(doc, app.profile) == kept
        await until(pilot, lambda: screen.running)
        assert screen.query_one("#summarize-path", Input).value == str(doc)
        # it begins at the first part, none of them done (going on from the kept one said "1 of 2 parts
        # kept from the run that stopped" here): stopped then, as the part's summary is all it would add
        await until(pilot, lambda: any(s.startswith("Parts done: 0 of 2") for s in states))
        await pilot.press("ctrl+x")
        await until(pilot, lambda: not screen.running)
        assert not any("kept from the run that stopped" in s for s in states), states
        with sqlite3.connect(data_dir() / FILE_NAME) as db:  # the kept part is gone, not used
            assert db.execute("SELECT count(*) FROM parts WHERE summary='KEPT-MARK'").fetchone() == (0,)
        assert screen.result is None or all(c.summary != "KEPT-MARK" for c in screen.result.chunks)
        assert "KEPT-MARK" not in screen.summary

        screen.query_one("#summarize-path", Input).value = str(short_doc)
        await pilot.press("enter")
        await until(pilot, lambda: screen.running)
        await pilot.press("escape")
        await until(pilot, lambda: not screen.running)
        await until(pilot, lambda: "The summary of bees.txt is ready" in said())  # a message to the app
        assert app.screen is app.chat_screen
        await pilot.press("f6")
        await until(pilot, lambda: app.screen is screen)
        assert screen.result is not None and not screen.result.cancelled
        assert not screen.query_one("#summarize-ask", Button).disabled
        summary = screen.query_one("#summary", Markdown)  # drawn now that it shows
        await until(pilot, lambda: summary.source == screen.summary and len(summary.children) > 0)

        before = screen.summary
        other_doc = tmp_path / "hive2.txt"  # (the first one's parts are kept: it begins with them done)
        other_doc.write_text(honeybee_text(3).replace("bee", "wasp"), encoding="utf-8")
        screen.query_one("#summarize-path", Input).value = str(other_doc)
        screen.query_one("#summarize-path", Input).focus()  # (the summary done had the focus)
        await pilot.press("enter")
        await until(pilot, lambda: screen.running)
        await pilot.press("ctrl+x")  # before any part is done: the summary before comes back (it was gone)
        await until(pilot, lambda: not screen.running)
        await until(pilot, lambda: "Stopped before any part was summarized; the last summary is shown again." in said())
        await until(pilot, lambda: screen.query_one("#summary", Markdown).source == before)
        assert f6_state(screen).startswith("The last summary, of bees.txt")
        assert screen.summary == before
        assert screen.query_one("#summarize-path", Input).value == str(other_doc)  # as typed, for Ctrl+R
        assert not screen.query_one("#summarize-ask", Button).disabled

        await pilot.press("enter")
        await until(pilot, lambda: screen.running)
        worker = next(w for w in screen.workers if w.group == "summarize" and not w.is_finished)
        await pilot.press("ctrl+q")  # mid-summary: asked first (its parts done were lost unasked)
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        # true to how far it has got (it said "its parts done so far are kept" before any was done)
        asked = str(app.screen.query_one(".dialog-title").render())
        assert "no part of it is done yet" in asked or "its parts done so far are kept: Ctrl+R on the same " \
            "document in F6 goes on from them" in asked, asked
        from workstation.core.summarize import SummaryProgress

        for done, total, said in ((0, 2, "and no part of it is done yet."), (1, 2, "its parts done so far are kept"),
                                  (2, 2, "while its parts are put together (all 2 parts are kept: Ctrl+R on the same "
                                         "document in F6 finishes it)")):
            running, screen._last = screen._last, SummaryProgress("map", done, total + 1, done, total, None, None)
            assert said in screen.quit_question(), screen.quit_question()
            screen._last = running
        await pilot.press("n")
        await until(pilot, lambda: app.screen is screen)
        assert not worker.is_finished and not app._exit
        os.kill(os.getpid(), signal.SIGTERM)  # not asked: stops it and quits, without a hang
        await until(pilot, lambda: worker.is_finished)  # the summary's thread ends soon (Textual's shutdown waits for it)
        assert app._exit and screen._cancel.is_set() and worker.is_finished


def test_the_summary_eta_speaks_the_ui_language() -> None:
    from workstation.core.summarize import eta_text

    def eta(lang: str, seconds: float | None) -> str:
        t = Texts(lang)
        return eta_text(seconds, t("summarize.eta"), lookup=t.get)

    # in words, not "ETA 1m05s"
    assert [eta("en", s) for s in (None, 7, 65, 3725)] == ["time left: …", "time left: 7 s", "time left: 1 min 5 s",
                                                           "time left: 1 h 2 min"]
    # Turkish abbreviates hour, minute and second as sa, dk and sn (the thinking time says sn too)
    assert [eta("tr", s) for s in (7, 65, 3725)] == ["kalan süre: 7 sn", "kalan süre: 1 dk 5 sn",
                                                    "kalan süre: 1 sa 2 dk"]
    # F6's state line breaks between phrases, never inside a time: at 100 columns it ended
    # "· 1 min 0 s so" with "far" on the next line (Textual breaks at a no-break space too)
    from workstation.tui.line_breaks import broken_at, held

    said = f"Parts done: 1 of 3, then the summary · {held(eta('en', 65))} · part 2: 1,234 words of its summary written"
    assert broken_at(f"{said} · {held('1 min 0 s so far')}", 100).split("\n") == [
        "Parts done: 1 of 3, then the summary · time left: 1 min 5 s · part 2: 1,234 words of its summary",
        "written · 1 min 0 s so far"]
    assert broken_at(f"{said} · {held('1 min 43 s so far')}", 60).split("\n") == [
        "Parts done: 1 of 3, then the summary · time left: 1 min 5 s", "· part 2: 1,234 words of its summary written ·",
        "1 min 43 s so far"]


async def test_a_progress_bars_percentage_is_written_as_the_language_writes_it() -> None:
    """Turkish writes %12: Textual's bar said 12% under a line that said %23."""
    from textual.app import App, ComposeResult

    from workstation.tui.i18n import Texts
    from workstation.tui.widgets.progress import LocalProgressBar

    class Bars(App[None]):
        texts = Texts("tr")

        def compose(self) -> ComposeResult:
            yield LocalProgressBar(total=100, show_eta=False)

    app = Bars()
    async with app.run_test() as pilot:
        app.query_one(LocalProgressBar).update(progress=12)
        await pilot.pause()
        assert str(app.query_one("#percentage").render()) == "%12"
        app.texts = Texts("en")
        app.query_one(LocalProgressBar).update(progress=35)
        await pilot.pause()
        assert str(app.query_one("#percentage").render()) == "35%"


async def test_the_palette_lists_commands_in_the_alphabets_order_and_finds_them_without_turkish_letters(
        profiles: Path) -> None:
    """Ctrl+P listed its commands by code point ("Çık", "Örnekleme", "Özetle", "İstem" after z,
    "Dışa aktar" after "Durdur"), and "disa" found nothing in "Dışa aktar", "cik" nothing in "Çık"."""
    from textual.command import CommandList, CommandPalette

    from workstation.core.letters import alphabetical

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette)
                    and app.screen.query_one(CommandList).option_count > 20)
        names = [str(o.prompt).split("\n")[0] for o in app.screen.query_one(CommandList).options]
        assert names == sorted(names, key=alphabetical), names
        first = [n.split(" (")[0] for n in names]
        assert first.index("Çık") < first.index("Dışa aktar") < first.index("Durdur") < first.index("Düzenleyici")
        assert first.index("Ofis için donanım hesabı") < first.index("Örnekleme") < first.index("Özetle")
        assert any(n.endswith(" (Yukarı ok)") for n in names) and not any("(Up)" in n for n in names)  # its keys in Turkish
        assert first.index("Talimatlar") < first.index("Tema") and first.index("Örnekleme") < first.index("Yeni")
        # "kaydet" (save) finds Dışa aktar by its other words (the locale's): "No command matches" before
        # and the commands people look for by another word: "indir" (download) F4's models, "exit" Quit
        async def finds(typed: str, found: str) -> None:
            await palette_search(pilot, typed)
            await until(pilot, lambda: any(
                str(o.prompt).startswith(found) for o in app.screen.query_one(CommandList).options))

        for typed, found in (("disa", "Dışa aktar"), ("cik", "Çık"), ("ORNEKLEME", "Örnekleme"), ("kaydet", "Dışa aktar"),
                             ("indir", "Modeller"), ("pano", "Hız"), ("eposta", "Ekle"), ("büyük model", "Modeller")):
            await finds(typed, found)
        # a short word by a word's start only: "dil" (language) listed "Diğer yanıt (Alt+V)" and
        # "Düzenleyici (Ctrl+E)" too, by letters spread over their names and keys
        from workstation.tui.palette import FoldedCommands
        said = [str(hit.match_display) async for hit in FoldedCommands(app.screen_stack[-2]).search("dil")]
        assert said and all(s.startswith("Dil") for s in said), said

        async def first_found(typed: str) -> str:  # the palette's first: its best match
            hits = [hit async for hit in FoldedCommands(app.screen_stack[-2]).search(typed)]
            return str(max(hits, key=lambda hit: hit.score).match_display) if hits else ""

        # F4 first, where a bigger model is downloaded: F3 came first (it offers none that is not
        # installed), and "daha büyük model" found nothing ("daha", more, names no command)
        for typed in ("daha büyük model", "daha hızlı model", "model indir", "model"):
            assert (await first_found(typed)).startswith("Modeller (F4)"), typed
        app.texts = Texts("en")  # and "save" finds Export in English
        for typed in ("bigger model", "faster model", "a bigger model", "model"):
            assert (await first_found(typed)).startswith("Models (F4)"), typed
        # …and the words a first user typed ("email", "bigger model": "No command matches"; the
        # Attach help's own word is "e-mail"), each word of several by itself
        for typed, found in (("save", "Export"), ("exit", "Quit"), ("history", "Sidebar"), ("email", "Attach"),
                             ("e-mail", "Attach"), ("bigger model", "Models"), ("smaller model", "Profiles"),
                             ("file", "Summarize"), ("turkish", "Language")):
            await finds(typed, found)


async def test_ctrl_p_dark_and_light_switch_the_theme_and_f1_names_them(profiles: Path) -> None:
    """Ctrl+P "dark", "light", "karanlık", "açık" found nothing: a ChatGPT user looks for a dark
    or light mode by those words. "Dark theme" and "Light theme" switch to Textual's own, kept for
    the next start as "Theme"'s choice is; F1 on the chat names them."""
    from textual.command import CommandList, CommandPalette

    from workstation.tui.palette import FoldedCommands
    from workstation.tui.settings import load_settings

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(80, 24)) as pilot:
        async def run(typed: str, found: str) -> None:
            await pilot.press("ctrl+p")
            await until(pilot, lambda: isinstance(app.screen, CommandPalette))
            await pilot.press(*typed)
            await until(pilot, lambda: any(str(o.prompt).startswith(found)
                                           for o in app.screen.query_one(CommandList).options))
            commands = app.screen.query_one(CommandList)
            commands.highlighted = next(i for i, o in enumerate(commands.options) if str(o.prompt).startswith(found))
            await pilot.press("enter")
            await until(pilot, lambda: app.screen is app.chat_screen)

        await run("light", "Light theme")
        await until(pilot, lambda: app.theme == "textual-light")
        assert load_settings().theme == "textual-light"
        await run("dark", "Dark theme")
        await until(pilot, lambda: app.theme == "textual-dark")
        assert load_settings().theme == "textual-dark"
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, KeysDialog))
        rows = app.screen.rows  # type: ignore[attr-defined]
        assert ("Ctrl+P", "Dark theme", app.texts("action.dark_theme.help")) in rows
        assert ("Ctrl+P", "Light theme", app.texts("action.light_theme.help")) in rows
        await pilot.press("escape")
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(80, 24)):
        for typed, found in (("karanlık", "Koyu tema"), ("açık", "Açık tema"), ("koyu", "Koyu tema")):
            said = [str(hit.match_display) async for hit in FoldedCommands(app.screen).search(typed)]
            assert found in said, (typed, said)


async def test_the_palette_finds_f4_by_fit_and_memory(profiles: Path) -> None:
    """Ctrl+P "fit" found nothing, though F3 says "see whether it fits": "fit", "fits", "memory",
    "would it fit" find F4's models (where each model's fit is said), and "sığar mı" in Turkish."""
    from workstation.tui.palette import FoldedCommands

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()

        async def first_found(typed: str) -> str:  # the palette's best match
            hits = [hit async for hit in FoldedCommands(app.screen).search(typed)]
            return str(max(hits, key=lambda hit: hit.score).match_display) if hits else ""

        for typed in ("fit", "fits", "memory", "would it fit", "will it fit"):
            assert (await first_found(typed)).startswith("Models (F4)"), typed
        app.texts = Texts("tr")
        for typed in ("sığar mı", "sigar mi", "sığar", "bellek", "fit"):  # (the command's own word too: `workstation fit`)
            assert (await first_found(typed)).startswith("Modeller (F4)"), typed
        # comparing settings: "bench" and "compare" found nothing; F12 shows what eval measured
        for typed in ("karşılaştır", "bench", "ölçüm"):
            assert (await first_found(typed)).startswith("Niceleme kaybı (F12)"), typed
        app.texts = Texts("en")
        for typed in ("bench", "compare", "benchmark", "compare settings"):
            assert (await first_found(typed)).startswith("Quantization loss (F12)"), typed


async def test_a_small_plain_terminal_shows_every_word_in_its_own_symbols_and_colours(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Testers at 40x15 on the Linux console with NO_COLOR: F8's "Vazgeç (h" was cut and the
    status line's last letter stood beside every dialog; the theme was drawn in greys; ▶ ● │
    showed as the console's blanks or diamonds."""
    from textual.widgets import Button, OptionList
    from tui_helpers import make_app, screen_lines

    from workstation.tui.screens.file_picker import FilePicker

    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "linux")
    monkeypatch.setenv("SSH_CONNECTION", "192.168.1.20 51234 192.168.1.10 22")
    app = make_app(tmp_path, monkeypatch, language="tr")
    async with app.run_test(size=(40, 15)) as pilot:
        await workers_done(pilot)
        await pilot.pause()
        # over SSH the message box's cursor does not blink: each blink sent the box down the link
        assert not app.chat_screen.query_one("#prompt").cursor_blink
        assert app.ansi_color is True  # the terminal's own colours: Textual's NO_COLOR drops them all (not greys)
        # Textual drew the text cursor, which box had the keys and a bar's part to come in
        # colours alone: the cursor is reversed, the box with the keys has double lines, the
        # chat (or the list) that has them a line down its left, a bar's rest is blank
        prompt, log = app.chat_screen.query_one("#prompt"), app.chat_screen.query_one("#log")
        assert prompt.get_component_rich_style("input--cursor").reverse
        assert prompt.styles.border_top[0] == "double" and app.chat_screen.query_one("#search").styles.border_top[0] == "tall"
        log.focus()
        await pilot.pause()
        assert log.styles.border_left[0] == "heavy" and prompt.styles.border_top[0] == "tall"
        assert app.chat_screen.query_one("#load-progress #bar").get_component_rich_style("bar--bar").bgcolor.is_default
        prompt.focus()
        status = screen_lines(app)[-2]
        assert status.startswith(" yüklü değil | Office CPU — SmolLM2 135M") and "│" not in status and len(status.rstrip()) <= 40, status
        await pilot.press("f8")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.pause()
        shown = "\n".join(screen_lines(app))
        assert "Sil (e)" in shown and "Vazgeç (h)" in shown, shown
        # nothing dims the chat behind a dialog without colours: its words (the status line's)
        # stood beside the dialog's border as if they were the dialog's
        assert "office-cpu" not in shown, shown
        assert app.screen.query_one(".dialog").outer_size.width == 40  # no column of the chat beside it
        assert all(b.region.right <= 40 for b in app.screen.query(Button))
        await pilot.press("escape")
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        await pilot.pause()
        assert "* Office CPU" in "\n".join(screen_lines(app)) and "●" not in "\n".join(screen_lines(app))
        # without colours the highlighted profile is told apart by a line under it
        assert app.screen.query_one(OptionList).get_component_rich_style("option-list--option-highlighted").underline
        await pilot.press("escape")
        monkeypatch.setenv("HOME", str(tmp_path))  # (where the Open dialog starts: a folder of folders and files)
        await pilot.press("ctrl+o")  # folders and files in the Open dialog: Textual's 📁 📄 were blanks or '??'
        await until(pilot, lambda: isinstance(app.screen, FilePicker))
        await pilot.pause()
        shown = "\n".join(screen_lines(app))
        assert "[+] " in shown and "📁" not in shown and "📄" not in shown, shown


async def test_the_dashboards_row_names_stand_apart_from_their_axis() -> None:
    """F5 at 110x32 in Turkish read "İlk sözcüğü bekleme (TTFT)maks 10.653 ms": a name filling its
    column ran into the axis beside it, whose figure filled its own. A space stands between them."""
    from tui_helpers import screen_lines

    from workstation.core.metrics import TurnMetrics

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.pause()
        for ttft in (1200.0, 10_653.0):
            turn = TurnMetrics(ttft_ms=ttft, predicted_n=40, predicted_ms=1000, prompt_n=200, prompt_ms=1000,
                               stop_reason="eos")
            turn.finish_rates()
            app.history.add(turn, "a", "A")
        await pilot.press("f5")
        await until(pilot, lambda: type(app.screen).__name__ == "DashboardScreen")
        app.screen.refresh_view()
        await pilot.pause()
        line = next((ln for ln in screen_lines(app) if "İlk sözcüğü bekleme (TTFT)" in ln), "")
        assert "maks 11 sn" in line, screen_lines(app)  # (in seconds, as the figure beside it says it)
        assert "(TTFT)maks" not in line and "(TTFT) " in line, line


@pytest.mark.parametrize("lang", ["en", "tr"])
async def test_f5s_headline_says_the_last_reply_began_while_the_pc_was_busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                           lang: str) -> None:
    """A reply begun while other programs kept a core busy (its record's ``cpu_others``, as the
    engine measured it) writes at about half speed; F5's headline said that speed as this PC's
    own, with no word of why (F4 said it; F5 did not)."""
    from tui_helpers import make_app

    from workstation.core.metrics import TurnMetrics
    from workstation.core.store import ConversationStore

    app = make_app(tmp_path, monkeypatch, language=lang)
    store = ConversationStore()
    conv = next(c for c in store.list() if c.title == "Meeting notes")
    store.add_message(conv.id, "user", "And a longer one?")
    busy = TurnMetrics(ttft_ms=400, predicted_n=60, predicted_ms=2400, prompt_n=30, cache_n=100, stop_reason="eos",
                       n_threads=1, threads_reason="busy", cpu_others=1.1)
    busy.finish_rates()
    store.add_message(conv.id, "assistant", "Agree who writes the notes before the meeting begins. " * 4, busy.to_dict())
    store.close()
    async with app.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: len(_views(app)) == 6)
        await pilot.press("f5")
        await until(pilot, lambda: type(app.screen).__name__ == "DashboardScreen")
        headline = str(app.screen.query_one("#headline").render())
        assert headline.endswith({
            "en": " (the PC was busy with other programs as the last one began: slower than usual).",
            "tr": " (sonuncusu başlarken bilgisayar başka programlarla meşguldü: her zamankinden yavaş)."}[lang]), headline
        # a quiet reply after it: nothing said
        quiet = TurnMetrics.from_dict({**busy.to_dict(), "cpu_others": 0.1, "threads_reason": "idle"})
        app.history.add(quiet, app.profile.ref if app.profile else "", "x")
        app.screen.refresh_view()
        headline = str(app.screen.query_one("#headline").render())
        assert "(" not in headline, headline


@pytest.mark.parametrize("lang", ["en", "tr"])
async def test_f5s_wait_leaves_out_a_reply_that_read_the_whole_conversation_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lang: str) -> None:
    """A reply that had to read the whole conversation again (after a profile change, a restart
    without its saved state: its record says 1,500 prompt tokens read, none reused, 15 of them
    the new message's) waited 6 s where an ordinary one waits 0.3 s; F5's headline said the
    median of both, "about 3.2 s", true of neither. The wait is the ordinary replies', the
    re-read said apart, with its own wait."""
    from tui_helpers import make_app

    from workstation.core.metrics import TurnMetrics
    from workstation.core.store import ConversationStore

    app = make_app(tmp_path, monkeypatch, language=lang)
    store = ConversationStore()
    conv = store.new("Budget")
    for ttft, prompt_n, cache_n in ((300, 20, 900), (6000, 1500, 0)):  # an ordinary turn, then a re-read
        store.add_message(conv.id, "user", "And the next line?")
        m = TurnMetrics(ttft_ms=ttft, prompt_n=prompt_n, cache_n=cache_n, new_n=15, prompt_ms=ttft * 0.9,
                        predicted_n=60, predicted_ms=1500, stop_reason="eos", threads_reason="idle")
        m.finish_rates()
        store.add_message(conv.id, "assistant", "The travel line goes up by a tenth next year. " * 4, m.to_dict())
    store.close()
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.pause()
        await app.open_conversation(conv.id)
        await until(pilot, lambda: len(_views(app)) == 4)
        await pilot.press("f5")
        await until(pilot, lambda: type(app.screen).__name__ == "DashboardScreen")
        headline = str(app.screen.query_one("#headline").render())
        assert headline.startswith({"en": "Your last 2 replies: the first words after about 0.3 s, ",
                                    "tr": "Son 2 yanıtınız: ilk sözcükler yaklaşık 0,3 sn sonra geldi, "}[lang]), headline
        assert headline.endswith({
            "en": " One of them first read the whole conversation again (after a profile change or a restart), "
                  "which took about 6.0 s: the wait above leaves it out.",
            "tr": " Biri önce tüm konuşmayı yeniden okudu (profil değişikliğinden ya da yeniden başlatmadan sonra), "
                  "yaklaşık 6,0 sn sürdü: yukarıdaki bekleme onu saymaz."}[lang]), headline


async def test_a_screens_own_key_is_named_where_that_screen_is_not_shown() -> None:
    """F6's "{ask} asks about them in the chat" said "  asks about them" (no key) in Turkish once
    Ctrl+K had taken the person to the chat: a screen's own key was looked for among the keys the
    screen shown has now. It is named from its screen wherever that is (newuser21)."""
    from workstation.tui.screens.summarize import SummarizeScreen

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        assert app.key_for("summarize.ask") == "Ctrl+K"
        assert app.key_for("no.such.key") == ""


@pytest.mark.parametrize("lang", ["en", "tr"])
async def test_f4_says_a_models_limits_and_its_helper_in_plain_words(profiles: Path, lang: str) -> None:
    """A paralegal comparing models in F4 read "13 MB of it a second copy of the model, laid out for
    this CPU", "guesses words for Llama 3.1 8B … the same 128k-token vocabulary", and "reads up to
    about 98,000 words at once" in the description above "(when it reads up to about 6,100 words at
    once …)": two limits side by side, read as a contradiction. The fit says what it was worked out
    for, beside the model's own limit, and where a profile sets its own; the helper model says what
    it is for; the CPU's extra copy says what it costs and why."""
    from textual.widgets import DataTable, Static, TabbedContent

    from workstation.tui.screens.models import ModelsScreen

    app = WorkstationApp("a", start_engine=False, sample_system=False, language=lang)
    async with app.run_test(size=(110, 40)) as pilot:
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.catalog), steps=200)
        models = app.screen
        assert isinstance(models, ModelsScreen)

        async def detail_of(table: str, rows: list[Any], name: str) -> str:
            models.query_one(f"#{table}", DataTable).move_cursor(row=[r.name for r in rows].index(name))
            box = models.query_one("#model-detail", Static)
            await until(pilot, lambda: "…" not in str(box.content) and ":" in str(box.content)
                        and name in str(box.content), steps=200)
            return " ".join(str(box.content).split())

        await pilot.press("right")
        await until(pilot, lambda: models.query_one(TabbedContent).active == "tab-catalog")
        big = await detail_of("catalog", models.catalog, "llama-3.1-8b-instruct-q4_k_m")
        helper = await detail_of("catalog", models.catalog, "llama-3.2-1b-instruct-q4_k_m")
        await pilot.press("left")
        await until(pilot, lambda: models.query_one(TabbedContent).active == "tab-installed")
        gemma = await detail_of("installed", models.installed, "gemma-3-270m-q4_k_m")
    if lang == "en":
        # how long a conversation it is worked out for, up front; the profile that runs it sets that (as F3
        # and fit plan it); the model's own limit beside it
        assert "On this PC, for a conversation of up to about 3,100 words (as a new profile is set; F3 → E, Context " \
               "changes it; it can read up to about 98,000 words at most): " in big, big
        assert "it can speed up Llama 3.1 8B as its helper (both read text the same way)" in helper, helper
        assert "vocabulary" not in helper and "guesses words" not in helper, helper
        copy = re.search(r"; [\d.,]+ [KMG]B of that is extra memory this processor uses so that answers come quicker", gemma)
        assert copy or "memory free (" in gemma, gemma  # (a CPU without a repacked layout: none said)
        assert "second copy" not in gemma and "laid out" not in gemma, gemma
    else:
        assert "Bu bilgisayarda, yaklaşık 1.600 sözcük kadar bir konuşma için (yeni bir profilin ayarı; F3 → E, " \
               "Bağlam'da değişir; en çok yaklaşık 52.000 sözcük okuyabilir): " in big, big
        assert "Llama 3.1 8B'nin yardımcısı olarak onu hızlandırabilir (ikisi metni aynı biçimde okur)" in helper, helper
        assert "ikinci bir kopyası" not in gemma and "okurken" not in gemma, gemma
    assert "when it reads up to" not in big, big


async def test_a_notice_said_as_the_app_closes_does_not_stop_it_on_an_error() -> None:
    """Notices were laid out after the app's screens had gone (it closing): "the app stopped on an
    unexpected error (ScreenStackError: No screens on stack)" (a clean-clone run under load)."""
    app = WorkstationApp("office-cpu", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(80, 24)):
        pass
    assert not app._screen_stack
    app._refresh_notifications()  # (a notice's refresh, once the screens are gone: nothing to do)


async def test_lang_on_the_command_line_is_for_that_run_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`./run.sh --lang tr` starts the app in Turkish for that run (README: F9 is what keeps the
    choice, in settings.yaml): a later `tui --help` stays in the PC's language. F9 saves it."""
    from workstation.tui.app import WorkstationApp
    from workstation.tui.settings import load_settings, settings_path

    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.delenv("LANGUAGE", raising=False)
    monkeypatch.delenv("LC_ALL", raising=False)
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.texts.lang == "tr"
    assert not settings_path().exists() or load_settings().language is None
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f9")
        await until(pilot, lambda: app.texts.lang == "en")
    assert load_settings().language == "en"


async def test_a_problem_notice_shown_as_f11_opens_is_clear_of_its_lines(tmp_path: Path) -> None:
    """An error notice shown when F11 opened on a desk PC sat over its lines, at the top right
    where they are read: "This PC serves no one itself: what you use is c▌". F11's notices sit
    at the bottom right above its keys, as F5's and F6's do."""
    from serve_helpers import free_port

    from workstation.core.profile_lookup import load_profile_file
    from workstation.tui.screens.usage import UsageScreen

    desk = tmp_path / "desk.yaml"  # a desk PC whose office server is not up: its F11 says so, then its own
    desk.write_text(yaml.safe_dump({"name": "desk", "backend": "openai",
                                    "remote": {"base_url": f"http://127.0.0.1:{free_port()}/v1"}}), encoding="utf-8")
    app = WorkstationApp(load_profile_file(desk), sample_system=False, language="en", store_path=tmp_path / "c.db")
    async with app.run_test(size=(110, 32), notifications=True) as pilot:  # (toasts drawn)
        await until(pilot, lambda: app.loading is None)
        app.clear_notifications()
        app.notify(app.texts("lang.not_saved", path="/tmp/x"), severity="error", timeout=60)
        await pilot.press("f11")
        await until(pilot, lambda: isinstance(app.screen, UsageScreen) and app.screen.overview is not None)
        assert str(app.screen.query_one("#usage-total").render()).startswith("This PC serves no one itself")
        await until(pilot, lambda: any(toast.region for toast in app.screen.query("Toast")))
        await pilot.pause()
        covered = [(toast.region, w) for toast in app.screen.query("Toast") for w in ("#usage-server", "#usage-total")
                   if toast.region.overlaps(app.screen.query_one(w).region)]
        assert not covered, covered


async def test_f4_says_how_each_model_does_here_and_suggests_one(profiles: Path) -> None:
    """A first-time user asked "which model should I use on this PC?": F4 had no column saying
    how each would do here, and they stepped through the rows one by one. Each row's "On this PC"
    fills in from the details box's own verdict; one is suggested (★, the line above, the reason
    in the box), another with a GPU (fake NVML); the cursor stays where it was moved while the
    column fills; F4 left while it fills leaves no worker going on down the list."""
    from textual.widgets import DataTable, Label, Static

    from workstation.core.hardware import FakeGpuProbe, set_probe
    from workstation.tui import integrations
    from workstation.tui.screens.models import ModelsScreen

    async def suggested(app: WorkstationApp, pilot: Any) -> str:
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.catalog), steps=200)
        models = app.screen
        assert isinstance(models, ModelsScreen)
        catalog = models.query_one("#catalog", DataTable)
        await pilot.press("right")
        await pilot.press("down", "down")  # (while the column fills: the cursor stays there)
        await until(pilot, lambda: models.suggestion is not None, steps=400)
        assert catalog.cursor_row == 2
        t = app.texts
        for n, row in enumerate(models.catalog):
            fit = models.fits[row]
            cell = str(catalog.get_row_at(n)[3])
            assert cell.removeprefix("★ ") == integrations.fit_mark(fit, t), cell
            assert cell != "…"
            if fit.slow:  # the cell and the box say it alike
                assert cell.startswith(("slow", "★ slow")) and "Slow here" in fit.text
            elif fit.planned and not fit.fits:
                assert cell == "too big"
        assert models.suggestion is not None
        name = models.suggestion.row.name
        at = [r.name for r in models.catalog].index(name)
        assert str(catalog.get_row_at(at)[3]).startswith("★ ")
        assert name in str(models.query_one("#model-suggest", Label).render())
        catalog.move_cursor(row=at)
        await pilot.pause()
        assert "Suggested for this PC" in str(models.query_one("#model-detail", Static).render())
        return name

    set_probe(FakeGpuProbe.of())  # no GPU
    try:
        app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
        async with app.run_test(size=(80, 24)) as pilot:
            on_cpu = await suggested(app, pilot)
        set_probe(FakeGpuProbe.of(("NVIDIA GeForce RTX 4090", 24, 23.2)))
        app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
        async with app.run_test(size=(80, 24)) as pilot:
            on_gpu = await suggested(app, pilot)
            assert on_gpu != on_cpu  # a card runs a larger model as fast as people read
            # F4 again, left while the column fills (each row held): its worker stops with it
            import threading

            held, calls, real = threading.Event(), [], integrations.model_fit_parts

            def slow_fit(*args: Any, **kwargs: Any) -> integrations.ModelFit:
                calls.append(1)
                held.wait(30)
                return real(*args, **kwargs)

            integrations.model_fit_parts = slow_fit  # type: ignore[assignment]
            try:
                await pilot.press("escape")
                await pilot.press("f4")
                await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(calls), steps=200)
                models = app.screen
                await pilot.press("escape")
                await until(pilot, lambda: not isinstance(app.screen, ModelsScreen))
                held.set()
                await until(pilot, lambda: not any(w.group == "models-fit" and w.is_running for w in models.workers), steps=200)
                assert len(calls) == 1  # (not one row more once F4 was left)
            finally:
                held.set()
                integrations.model_fit_parts = real  # type: ignore[assignment]
    finally:
        set_probe(None)


async def test_a_fit_worked_out_for_the_list_before_a_reload_stays_out_of_the_fresh_one(profiles: Path) -> None:
    """The column's worker cancelled by a reload (a model pulled, deleted) could still post the fit it
    was working out: it landed in the fresh list, for a model that may be gone or changed."""
    from workstation.tui.integrations import ModelFit
    from workstation.tui.screens.models import FitFound

    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        models = await _f4_listed(pilot, app)
        before = models._generation
        name = models.installed[0].name
        models.action_reload()
        await until(pilot, lambda: models._generation > before)
        row = next(r for r in models.installed if r.name == name)  # (the fresh list's row of that model)
        models.fits.pop(row, None)
        models.post_message(FitFound(row, ModelFit("stale: worked out for the list before"), before))
        await pilot.pause()
        await pilot.pause()
        assert row not in models.fits or models.fits[row].text != "stale: worked out for the list before"


async def test_f4_keeps_each_rows_fit_apart_and_fills_the_column_cell_by_cell(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """F4 kept fits by name: a damaged installed file with a catalog model's name got its catalog
    row's fit, an error sentence, in its box (the damaged row says its error once, in its details).
    And each fit refilled both lists, the columns shifting as the marks came in: a mark that fits
    its column goes in its own cell."""
    from textual.widgets import DataTable, Static

    from workstation.tui.screens.models import ModelsScreen

    home = tmp_path / "damaged-models"
    home.mkdir()
    (home / "Qwen_Qwen3-0.6B-Q4_K_M.gguf").write_bytes((Path(__file__).parent / "hostile" / "dim-zero.gguf").read_bytes())
    monkeypatch.setenv("WORKSTATION_MODELS", str(home))
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="en")
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ModelsScreen) and bool(app.screen.catalog), steps=200)
        models = app.screen
        assert isinstance(models, ModelsScreen)
        fills, fill = [], models._fill

        def counted(keep_cursor: bool = False) -> None:
            fills.append(1)
            fill(keep_cursor)

        models._fill = counted  # type: ignore[method-assign]
        await until(pilot, lambda: all(r in models.fits for r in [*models.installed, *models.catalog]), steps=400)
        await pilot.pause()
        damaged = next(r for r in models.installed if r.damaged)
        assert damaged.name == "qwen3-0.6b-q4_k_m" and models.fits[damaged].text == ""
        models.query_one("#installed", DataTable).move_cursor(row=models.installed.index(damaged))
        await pilot.pause()
        box = str(models.query_one("#model-detail", Static).render())
        assert len(box.splitlines()) >= 1 and all("GGUF" not in line for line in box.splitlines()[1:]), box
        # the marks went in their cells: the lists filled again only for wider ones, not once a fit
        assert len(fills) < len(models.catalog) // 2, len(fills)
        catalog = models.query_one("#catalog", DataTable)
        for n, row in enumerate(models.catalog):
            assert str(catalog.get_row_at(n)[3]) == models._mark(row)
