"""The main screen: conversations on the left, the chat on the right, status at the bottom."""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from typing import TYPE_CHECKING, cast

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Button, Header, Input, ProgressBar, Static, TextArea

from workstation.core.catalog import params_text
from workstation.core.conversation_records import StoredMessage
from workstation.core.errors import WorkstationError
from workstation.core.letters import shortened
from workstation.core.moments import local_time
from workstation.tui.pacing import over_ssh
from workstation.tui.screens.app_screen import AppScreen
from workstation.tui.screens.dialogs import (
    NARROW,  # (narrower, the conversation list is put away: Ctrl+B shows it)
)
from workstation.tui.widgets.conversation_list import ConversationList
from workstation.tui.widgets.line_input import LineInput
from workstation.tui.widgets.message_view import MessageView, fold
from workstation.tui.widgets.progress import LocalProgressBar
from workstation.tui.widgets.screen_footer import ChatFooter
from workstation.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from textual.widgets._toast import ToastRack


NEW_LINE_KEYS = ("ctrl+j", "shift+enter")  # F1's "new line" (Shift+Enter where the terminal tells it)


class PromptLine(LineInput):
    """The one-line message box. Text pasted with line breaks goes to the multi-line editor,
    whole: the line kept the first line alone and dropped the rest without a word. PageUp and
    PageDown scroll the chat above it (they did nothing; the chat scrolled only once Tab had
    reached it, which nothing showed)."""

    BINDINGS = [Binding("pageup", "page_chat(-1)", show=False), Binding("pagedown", "page_chat(1)", show=False),
                Binding("ctrl+z", "undo_clear", show=False), Binding("down", "edit_next", show=False)]
    cleared = ""  # what Ctrl+U (the app's clear_message) took out: Ctrl+Z puts it back (Input has no undo)

    def action_page_chat(self, way: int) -> None:
        cast("ChatScreen", self.screen).page_chat(way)

    def action_edit_next(self) -> None:
        """Down while an earlier message is in the box to be changed (Up again): the one after it."""
        cast("ChatScreen", self.screen).wapp.action_edit_next()

    def action_undo_clear(self) -> None:
        """Ctrl+Z after Ctrl+U (or Esc leaving a message Up put back): the text back, as the
        multi-line editor's own undo does there (a long paragraph pasted and cleared was gone for good)."""
        if self.cleared and not self.value:  # (with line breaks: in the multi-line editor, as it was)
            text, self.cleared = self.cleared, ""
            cast("ChatScreen", self.screen).set_input(text)

    async def _on_key(self, event: events.Key) -> None:
        """Keys that reached this box once the editor had taken its place go on to the editor.
        Textual hands each key to the widget that has the focus when the key is read: keys typed
        fast after Ctrl+J (or pasted where the terminal does not mark a paste) were all handed
        here before Ctrl+J had opened the editor, went into this hidden box, and the next Ctrl+J
        put them on the editor's first line."""
        editor = self.screen.query_one("#editor", TextArea) if not self.display and self.is_attached else None
        if editor is not None and editor.display:  # (looked up only while this box is hidden: not per key)
            event.stop()
            event.prevent_default()
            key = events.Key(event.key, event.character)
            editor._forward_event(key)  # as the app hands a key on (marked: not handed round again)
            return
        if event.key in NEW_LINE_KEYS:  # here, in turn: as a binding it ran after the keys behind it
            event.stop()
            event.prevent_default()
            self.action_new_line()
            return
        await super()._on_key(event)

    def action_new_line(self) -> None:
        """Shift+Enter (where the terminal tells it from Enter; Ctrl+J everywhere): a new line,
        in the multi-line editor, as ChatGPT's Shift+Enter (Enter sent the message half written)."""
        at = self.cursor_position
        text = self.value[:at] + "\n" + self.value[at:]
        cast("ChatScreen", self.screen).to_editor(text, at + 1, said=False)

    def on_paste(self, event: events.Paste) -> None:  # before Input's own, which keeps line 1
        # line breaks as CR too: tmux and many terminals paste them so, and all but line 1 were lost
        pasted = event.text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" not in pasted.strip("\n"):
            return
        event.prevent_default()
        event.stop()
        at = self.cursor_position
        text = self.value[:at] + pasted + self.value[at:]
        cast("ChatScreen", self.screen).to_editor(text, at + len(pasted))


class MessageEditor(TextArea):
    """The multi-line message box. PageUp on its first line and PageDown on its last scroll
    the chat above, as in the one-line box (F1 says so; after a paste, which opens the editor,
    they did nothing); elsewhere they move the cursor a page, as an editor's do."""

    BINDINGS = [Binding("pageup", "page_chat(-1)", show=False), Binding("pagedown", "page_chat(1)", show=False),
                Binding("up", "up_or_last", show=False), Binding("down", "down_or_next", show=False)]

    def action_new_line(self) -> None:
        """Ctrl+J (Shift+Enter where the terminal tells it from Enter), F1's "new line": in the
        one-line box it opens this editor with a line break, here it did nothing."""
        self.insert("\n")

    async def _on_key(self, event: events.Key) -> None:
        if event.key in NEW_LINE_KEYS:  # in turn with the keys typed around it (see PromptLine)
            event.stop()
            event.prevent_default()
            self.action_new_line()
            return
        await super()._on_key(event)

    def action_up_or_last(self) -> None:
        """Up in the empty editor puts the last message back, as in the one-line box; on the first
        line of a message Up put back, the one before it."""
        wapp = cast("ChatScreen", self.screen).wapp
        if self.text and (self.cursor_location[0] > 0 or wapp._editing is None):
            self.action_cursor_up()
        else:
            wapp.action_edit_last()

    def action_down_or_next(self) -> None:
        """Down on the last line of an earlier message Up put back: the one after it."""
        wapp = cast("ChatScreen", self.screen).wapp
        if self.cursor_location[0] < self.document.line_count - 1 or wapp._editing is None:
            self.action_cursor_down()
        else:
            wapp.action_edit_next()

    def action_page_chat(self, way: int) -> None:
        row = self.cursor_location[0]
        if (way < 0 and row == 0) or (way > 0 and row >= self.document.line_count - 1):
            cast("ChatScreen", self.screen).page_chat(way)
        elif way < 0:
            self.action_cursor_page_up()
        else:
            self.action_cursor_page_down()


SHOWN_AT_ONCE = 30  # messages drawn when a conversation opens; the earlier ones on request
# and at most this much of their text (the last two messages whatever their length): 30 long
# replies (tables, code) took 2.7 s to open, a Markdown widget each laid out several times
SHOWN_CHARS = 16_000
SEARCH_PAUSE_S = 0.2  # the list follows the search box once typing pauses this long
FOUND_MARKED_S = 3.0  # a message a search found stays marked this long once opened
FOUND_DRAWN_MOST = 100  # messages drawn at most to show one a search found (30 ms each here)
# the share of the chat's lines its notices take at most: the newest show (Textual's rack scrolls to
# them), the older ones out of view until they go. Four at 80x24 filled the chat to the message box
NOTICES_MOST = 0.5


def drawn_at_once(messages: list[StoredMessage]) -> int:
    """How many of the last of ``messages`` are drawn at once: ``SHOWN_AT_ONCE`` at most, as
    many as hold ``SHOWN_CHARS`` of the text they show (a user's long paste or document folded,
    a reply's thinking too), two at least (the last question and its reply)."""
    count, chars = 0, 0
    for m in reversed(messages[-SHOWN_AT_ONCE:]):
        text = m.shown or m.content
        chars += len(fold(text)[0] if m.role == "user" else text)
        if count >= 2 and chars > SHOWN_CHARS:
            break
        count += 1
    return count


class ChatScreen(AppScreen, Screen[None]):
    _earlier: list[StoredMessage] = []  # the open conversation's messages not drawn yet, oldest first
    _search_timer: Timer | None = None
    _sidebar_chosen = False  # Ctrl+B showed or hid the list: no width does it over
    _drawing: asyncio.Lock | None = None  # held while the conversation is drawn
    _found_view: MessageView | None = None  # the message whose words a search found are marked (till the next key)
    _notices_placed: tuple[int, ...] = ()  # (``place_notices``): lines below, columns left, width, most lines

    def compose(self) -> ComposeResult:
        t = self.wapp.texts
        yield Header()
        with Horizontal(id="body"):
            yield ConversationList(t, self.wapp.today, id="sidebar")
            with Vertical(id="chat"):
                yield VerticalScroll(id="log")
                # in a box of their own: a repaint of the log then leaves them alone (Textual
                # paints every widget whose container overlaps what changed)
                with Vertical(id="composer"):
                    yield Static("", id="attachment", markup=False)
                    yield PromptLine(placeholder=t("chat.placeholder"), id="prompt", select_on_focus=False)
                    yield MessageEditor(id="editor", soft_wrap=True, show_line_numbers=False)
        yield LocalProgressBar(total=1.0, show_eta=False, id="load-progress")
        yield StatusBar(id="status")
        yield ChatFooter()

    async def on_mount(self) -> None:
        editor = self.query_one("#editor", TextArea)
        editor.display = False
        editor.border_subtitle = self.wapp.texts("chat.editor_hint")  # Enter adds a line here
        self.query_one("#attachment").display = False
        self.query_one("#load-progress").display = False
        self.query_one("#log", VerticalScroll).anchor()
        self.query_one("#prompt", Input).focus()
        self.set_busy(self.wapp.generating)
        self.wapp.update_status()  # (the box's title and line, set before it was mounted)
        await self.wapp.chat_ready()

    def on_screen_resume(self) -> None:
        self.wapp.send_waiting()  # (the model loaded while F1, F3 or F5 was open: its message goes now)

    def on_key(self, event: events.Key) -> None:
        """A printable key typed while the chat history (or another part of this screen that is
        not a box to type in) has focus goes to the message box, as chat apps do: after a click
        in the chat (on a long message's fold line, say) what was typed was lost, and it took
        four Tabs to get back. Keys bound to something keep doing it."""
        focused = self.focused
        if (isinstance(focused, (Input, TextArea)) or not event.is_printable or not event.character
                or event.key in self.app.active_bindings):
            return
        editor = self.query_one("#editor", TextArea)
        if editor.display:
            editor.focus()
            editor.insert(event.character)
        else:
            prompt = self.query_one("#prompt", Input)
            prompt.focus()
            prompt.insert_text_at_cursor(event.character)
        event.stop()
        event.prevent_default()

    # --- what the app calls --------------------------------------------------------------
    @property
    def log_view(self) -> VerticalScroll:
        return self.query_one("#log", VerticalScroll)

    def message_views(self) -> list[MessageView]:
        """The messages drawn, in order: the log's own children (a query of the screen or of the
        log matched every widget inside each message, a dozen a Markdown message: 14 ms a
        query with 30 messages drawn, and a turn's start and end made several)."""
        return list(self.log_view.query_children(MessageView))

    @property
    def sidebar(self) -> ConversationList:
        return self.query_one(ConversationList)

    async def show_messages(self, messages: list[StoredMessage], at_least: int = 0,
                            scroll_to: float | None = None, found: int | None = None, words: str = "") -> None:
        """The conversation's last ``SHOWN_AT_ONCE`` messages, under a button that draws the
        earlier ones: every message is a Markdown widget, and drawing 600 at once took 20 s to
        open a long conversation (68 s to start the app with it open), the app frozen.
        ``at_least`` messages are drawn where more were (drawn again as another window left
        it), and ``scroll_to`` keeps the place read (None: the end). ``found``: the message a
        search found, drawn (within the last ``FOUND_DRAWN_MOST``), scrolled to the top and
        marked a moment (the conversation opened at its end, the match pages up); ``words``, what
        the search was for, marked in it until the next key, the fold that holds them opened. One drawing at a time: two at once (a message sent
        as what another window wrote was being drawn) drew it twice."""
        if self._drawing is None:
            self._drawing = asyncio.Lock()
        async with self._drawing:
            await self._draw_messages(messages, at_least, scroll_to, found, words)

    async def _draw_messages(self, messages: list[StoredMessage], at_least: int, scroll_to: float | None,
                             found: int | None = None, words: str = "") -> None:
        self._found_view = None
        log = self.log_view
        await log.remove_children()
        t = self.wapp.texts
        if not messages:
            self._earlier = []
            await log.mount(Static(self.welcome_text(), id="welcome", markup=False))
            await self.show_instructions()
            return
        shown = [m for m in messages if m.role != "system"]
        at = next((i for i, m in enumerate(shown) if m.id == found), None) if found is not None else None
        if at is not None and len(shown) - at > FOUND_DRAWN_MOST:  # (a match hundreds of messages up: the end, as before)
            at = None
        count = max(drawn_at_once(shown), at_least, len(shown) - at if at is not None else 0)
        self._earlier, now = shown[:-count], shown[-count:]
        earlier = [Button(t("chat.earlier", n=len(self._earlier)), id="earlier")] if self._earlier else []
        views = [self._view(m, day) for m, day in zip(now, self._day_lines([m.created for m in now]), strict=True)]
        target = next((v for v in views if v.message_id == found), None) if at is not None else None
        if target is not None and words.strip():
            target.mark_found(words)  # (drawn marked, its fold open where they are in it)
            self._found_view = target
        await log.mount_all([*earlier, *views])
        self.mark_versions()
        self.name_profiles()
        await self.show_instructions()
        if target is not None:
            log.release_anchor()  # (anchored, the log went back to its end)
            target.add_class("found")
            found_view = target
            # at the words found (in a long message or its fold: a document), else the message's top
            log.call_after_refresh(lambda: found_view.scroll_to_found()
                                   or log.scroll_to_widget(found_view, top=True, animate=False))
            self.set_timer(FOUND_MARKED_S, lambda: target.remove_class("found"))
        elif scroll_to is None:
            log.scroll_end(animate=False)
            log.anchor()
        else:
            log.release_anchor()
            log.call_after_refresh(log.scroll_to, y=scroll_to, animate=False)

    def mark_editing(self, back: int | None) -> None:
        """The user's message ``back`` before their last marked as the one being changed in the
        box (Up again), and scrolled to (drawn first where it is among the earlier ones not
        drawn); None: none marked, the chat at its end again where one was."""
        log = self.log_view
        views = self.message_views()
        marked = [v for v in views if v.has_class("editing")]
        for view in marked:
            view.remove_class("editing")
        if back is None:
            if marked:
                log.scroll_end(animate=False)
                log.anchor()
            return
        asked = [v for v in views if v.role == "user"]
        if back >= len(asked):
            if self._earlier:  # (up among those not drawn yet: drawn, then marked)
                self.run_worker(functools.partial(self._mark_once_drawn, back), group="mark-editing", exclusive=True)
            return
        view = asked[-1 - back]
        view.add_class("editing")
        log.release_anchor()  # (anchored, the log went back to its end)
        log.call_after_refresh(log.scroll_to_widget, view, top=True, animate=False)

    async def _mark_once_drawn(self, back: int) -> None:
        """The earlier messages drawn down to the user's message ``back`` before their last, then it marked."""
        while self._earlier and back >= sum(1 for v in self.message_views() if v.role == "user"):
            await self._draw_earlier(self.query_one("#earlier", Button))
        self.mark_editing(back)

    def unmark_found(self) -> None:
        """The words a search found no longer marked in the message opened (the next key)."""
        if self._found_view is not None:
            self._found_view.unmark_found()
            self._found_view = None

    def mark_versions(self) -> None:
        """The last reply says which of its versions it is, where Alt+V has others, and that
        Alt+C goes on with it where its length limit cut it; no other reply does (Alt+V and Alt+C
        take the last question's only)."""
        views = self.message_views()
        conv_id = self.wapp.conversation_id
        n, total = 1, 1
        if conv_id is not None and views and views[-1].role == "assistant":
            try:
                n, total = self.wapp.store.last_reply_versions(conv_id)
            except (sqlite3.Error, WorkstationError):  # (a file that cannot be read now: nothing said)
                pass
        last = views[-1] if views and views[-1].role == "assistant" else None
        cut = (last is not None and (last.metrics or {}).get("stop_reason") == "length" and bool(last.content.strip())
               and self.wapp._can_go_on())
        for i, view in enumerate(views):
            view.show_versions((n, total, self.wapp.key_for("chat.versions")) if total > 1 and i == len(views) - 1
                               else None, self.wapp.key_for("chat.continue") if cut and view is last else "")

    def name_profiles(self) -> None:
        """Where the replies shown were written with more than one profile (a switch mid-way,
        F3), each says its own before its figures: which model said what was not told. By its title
        in the UI's language, as F3 names it (it said its file's name, "quoting-lookup")."""
        views = [v for v in self.message_views() if v.profile()]
        named = len({v.profile() for v in views}) > 1
        for view in views:
            said = view.metrics or {}
            view.name_profile(self.wapp.profile_title(str(said["profile"]), str(said.get("profile_name") or view.profile()))
                              if named else "")

    def _instructions_line(self) -> str:
        text = " ".join(self.wapp.instructions_now().split())
        return self.wapp.texts("chat.instructions_line", text=shortened(text, 200),
                               press=self.wapp.key_for("chat.instructions")) if text else ""

    async def show_instructions(self) -> None:
        """The open conversation's own instructions (Alt+I), one line at the top of the chat:
        what the replies follow is seen, not only remembered. Updated in place: a second line
        mounted beside the first (two redraws at once) was a DuplicateIds crash."""
        log = self.log_view
        line = self._instructions_line()
        shown = log.query("#instructions")
        if shown:
            widget = shown.first(Static)
            widget.update(line)
            widget.display = bool(line)
        elif line:  # (no await between the look and the mount)
            await log.mount(Static(line, id="instructions", markup=False), before=0 if log.children else None)

    def _view(self, m: StoredMessage, day: str = "") -> MessageView:
        return MessageView(m.role, m.shown or m.content, self.wapp.texts, m.metrics, reasoning=m.reasoning,
                           message_id=m.id, created=m.created, day=day, facts=m.facts)

    def _day_lines(self, times: list[float]) -> list[str]:
        """The day's line over each of these messages, shown in this order: over the first
        unless it is of today, and over each of another day than the one before (a conversation
        over several days did not say when anything was said; a line over every message, or
        the date in each header, would fill the 80x24 chat)."""
        today = self.wapp.today()
        lines, last = [], today
        for t in times:
            at = local_time(t)
            day = last if at is None else at.date()
            lines.append(self.wapp.texts.day_line(t, today) if day != last else "")
            last = day
        return lines

    async def mark_days(self) -> None:
        """The day lines of the messages drawn, again (earlier ones drawn above, a new message,
        another language)."""
        views = self.message_views()
        for view, day in zip(views, self._day_lines([v.created for v in views]), strict=True):
            await view.show_day(day)

    @on(Button.Pressed, "#earlier")
    async def _show_earlier(self, event: Button.Pressed) -> None:
        event.stop()
        await self._draw_earlier(event.button)

    async def _draw_earlier(self, button: Button) -> None:
        """The next earlier messages (``drawn_at_once``), above those drawn (under ``button``)."""
        count = drawn_at_once(self._earlier)
        batch, self._earlier = self._earlier[-count:], self._earlier[:-count]
        log = self.log_view
        log.release_anchor()  # (reading back: the view stays where it is, not at the end)
        await log.mount_all([self._view(m) for m in batch], after=button)
        await self.mark_days()
        if self._earlier:
            button.label = self.wapp.texts("chat.earlier", n=len(self._earlier))
        else:
            if button.has_focus:  # (pressed by PageUp from the box, the focus stays there)
                self.log_view.focus()
            await button.remove()

    async def add_exchange(self, question: str) -> MessageView:
        """Show the user's message and an empty reply for the answer to stream into, in one
        layout pass (each mount on its own costs a pass while the engine reads the prompt)."""
        log = self.log_view
        t = self.wapp.texts
        reply = MessageView("assistant", "", t, streaming=True)
        with self.app.batch_update():
            for welcome in log.query_children("#welcome"):
                await welcome.remove()
            await log.mount_all([MessageView("user", question, t), reply])
        for view in self.message_views():  # a new question: Alt+V has no reply of the last one to go through
            view.show_versions(None)
        await self.mark_days()  # (yesterday's conversation gone on today: "Today" over the question)
        log.anchor()
        return reply

    def page_chat(self, way: int) -> None:
        """The chat a page up (``way`` < 0) or down, from the message box."""
        log = self.log_view
        if way < 0:
            log.release_anchor()  # (anchored, a streaming reply pulled it back to the end)
            if log.scroll_y <= 0 and self._earlier:  # at the top: the earlier messages, as a chat app
                for button in self.query("#earlier"):  # (only a mouse reached the button)
                    cast(Button, button).press()
                return
            log.scroll_page_up(animate=False)
        else:
            log.scroll_page_down(animate=False)
            if log.scroll_target_y >= log.max_scroll_y:
                log.anchor()  # back at the end: it follows the reply again

    async def remove_last_exchange(self, keep_question: bool) -> None:
        """The last message of the user's drawn (unless ``keep_question``) and what follows it,
        off the screen: a question changed or too long, a reply asked again."""
        views = self.message_views()
        asked = [i for i, v in enumerate(views) if v.role == "user"]
        if asked:
            for view in views[asked[-1] + (1 if keep_question else 0):]:
                await view.remove()

    async def add_reply(self) -> MessageView:
        """An empty reply at the end of the chat for an answer to stream into (a question asked again)."""
        reply = MessageView("assistant", "", self.wapp.texts, streaming=True)
        await self.log_view.mount(reply)
        self.log_view.anchor()
        return reply

    def input_text(self) -> str:
        editor = self.query_one("#editor", TextArea)
        if editor.display:
            return editor.text
        return self.query_one("#prompt", Input).value

    def set_input(self, text: str) -> None:
        """Put ``text`` in the message box (the multi-line editor when it has line breaks)."""
        editor = self.query_one("#editor", TextArea)
        if "\n" in text and not editor.display:
            self.toggle_editor()
        if editor.display:
            editor.text = text
            editor.move_cursor(editor.document.end)
        else:
            prompt = self.query_one("#prompt", Input)
            prompt.value = text
            prompt.cursor_position = len(text)  # typing goes on at its end (Up's last message)

    def clear_input(self) -> None:
        """The message box emptied as a message is sent: the multi-line editor gives way to the
        one-line box again (it stayed 8 rows tall, and at 60x20 the chat had 9 left)."""
        editor = self.query_one("#editor", TextArea)
        prompt = self.query_one("#prompt", Input)
        editor.text = ""
        prompt.value = ""
        if editor.display:
            had_focus = editor.has_focus
            editor.display = False
            prompt.display = True
            if had_focus:
                self.set_focus(prompt)

    def clear_message(self, leave_editor: bool = False) -> None:
        """The message box emptied, the cursor in it; Ctrl+Z brings the text back (the editor's
        own undo: the deletion is one of its edits; the line's ``undo_clear``). ``leave_editor``
        (Esc leaving a message Up put back): the multi-line editor gives way to the one-line box,
        as the one-line box is left (Esc emptied the editor and left it open, 8 empty rows); its
        Ctrl+Z opens the editor again with the text (``set_input``)."""
        editor = self.query_one("#editor", TextArea)
        if editor.display and not leave_editor:
            editor.clear()
            editor.focus()
            return
        prompt = self.query_one("#prompt", PromptLine)
        text = self.input_text()
        self.clear_input()
        prompt.cleared = text
        prompt.focus()

    def toggle_editor(self) -> None:
        editor = self.query_one("#editor", TextArea)
        prompt = self.query_one("#prompt", Input)
        # focus moves now, not after the keys already typed (Widget.focus waits its turn): typed
        # fast after Ctrl+J, they went to the hidden box, and the next Ctrl+J put them on line 1
        if editor.display:
            prompt.value = editor.text.replace("\n", " ")
            editor.display = False
            prompt.display = True
            self.set_focus(prompt)
        else:
            editor.text = prompt.value
            editor.display = True
            prompt.display = False
            self.set_focus(editor)

    def to_editor(self, text: str, at: int, said: bool = True) -> None:
        """The multi-line editor, holding ``text`` with the cursor at offset ``at`` (``said``:
        a toast says the paste opened it)."""
        if not self.query_one("#editor", TextArea).display:
            self.toggle_editor()
        editor = self.query_one("#editor", TextArea)
        editor.text = text
        before = text[:at]
        editor.move_cursor((before.count("\n"), len(before) - (before.rfind("\n") + 1)))
        if said:
            self.notify(self.wapp.texts("chat.pasted_lines", n=len(text.strip("\n").splitlines())))

    def focus_prompt(self) -> None:
        editor = self.query_one("#editor", TextArea)
        (editor if editor.display else self.query_one("#prompt", Input)).focus()

    def set_attachment(self, text: str | None) -> None:
        widget = self.query_one("#attachment", Static)
        widget.update(text or "")
        widget.display = bool(text)

    def set_busy(self, busy: bool) -> None:
        """While a reply streams the cursors stop blinking: each blink is a repaint, and every
        repaint takes CPU from the engine on a small machine; over SSH they never blink (each
        blink sent the whole box down the link: ``pacing.over_ssh``)."""
        prompt, editor = self.query_one_optional("#prompt", Input), self.query_one_optional("#editor", TextArea)
        if prompt is None or editor is None:  # (not composed yet; on_mount sets them)
            return
        blink = not busy and not over_ssh()
        prompt.cursor_blink = blink
        editor.cursor_blink = blink

    def set_status(self, text: str) -> None:
        # (by its id: a query by type matched every widget of the chat, 14 ms with 30 messages
        # drawn, and the line is set on every change of state, each step of a load)
        bar = self.query_one_optional("#status", StatusBar)
        if bar is not None:
            bar.update(text)

    def set_editing_title(self, text: str) -> None:
        """Over the message box while it holds the last message being changed (Up)."""
        # (none while the app closes: a timer's redraw for another window's turn found the
        # screen mounted and its box already gone, and ended the app on an error)
        for box in (self.query_one_optional("#prompt", Input), self.query_one_optional("#editor", TextArea)):
            if box is not None and (box.border_title or "") != text:  # (the same again: not repainted)
                box.border_title = text

    def set_context_fill(self, text: str) -> None:
        """How full the context is, under the message box (the editor's too)."""
        hint = self.wapp.texts("chat.editor_hint")  # (Enter adds a line there: said first)
        # (none while the app closes: a redraw for another window's turn then ended it on an error)
        prompt, editor = self.query_one_optional("#prompt", Input), self.query_one_optional("#editor", TextArea)
        if prompt is not None and (prompt.border_subtitle or "") != text:  # (the same again: not repainted)
            prompt.border_subtitle = text
        said = f"{hint} · {text}" if text else hint
        if editor is not None and editor.border_subtitle != said:
            editor.border_subtitle = said

    def set_load_progress(self, fraction: float | None) -> None:
        """The load's bar: llama.cpp's share read of the file, else (0: its process starting, 1: the
        context being made) a bar that moves without a share, not one that stands at 0 or 100%."""
        bar = self.query_one("#load-progress", ProgressBar)
        bar.display = fraction is not None
        if fraction is not None:
            bar.update(total=1.0 if 0 < fraction < 1 else None, progress=fraction)

    def toggle_sidebar(self) -> None:
        """Ctrl+B goes to the list: shown but not focused, the list takes the focus (it hid the
        list, and Down and Enter meant for the list sent the half-typed message); focused, it
        is put away and the message box has the focus; hidden, it is shown with the focus."""
        sidebar = self.sidebar
        if sidebar.display and not sidebar.has_focus_within:
            self.set_focus(self.query_one("#conversations"))
            return
        sidebar.display = not sidebar.display
        self._sidebar_chosen = True
        if sidebar.display:
            self.set_focus(self.query_one("#conversations"))
        else:
            self.focus_prompt()

    def place_notices(self, rack: ToastRack) -> None:
        """The chat's notices sit right above the message box (and the attach line), over the chat
        and not the conversation list, and the chat keeps as many of its last lines clear: at the
        top they covered what was being read ("Wrote the conversation to …" over the reply, at
        80x24 a warning over the message box too), and the newest of a conversation is at its
        bottom. Half the chat's lines at most (``NOTICES_MOST``)."""
        composer, chat, log = self.query_one("#composer"), self.query_one("#chat"), self.log_view
        lines = composer.region.y - chat.region.y  # the chat's, over the message box, with no notice
        below = self.size.height - composer.region.y
        most = max(1, int(lines * NOTICES_MOST))
        placed = (below, chat.region.x, chat.region.width, most)
        if placed != self._notices_placed:
            rack.styles.margin, rack.styles.width, rack.styles.max_height = (0, 0, below, chat.region.x), chat.region.width, most
            self._notices_placed = placed
        taken = min(most, rack.region.height) if rack.display else 0
        if log.styles.margin.bottom != taken:
            log.styles.margin = (0, 0, taken, 0)
        if rack.scroll_y < rack.max_scroll_y:  # the newest in view (the rack's mount scrolled before its height was set)
            rack.scroll_end(animate=False, force=True, immediate=True)

    def on_resize(self, event: events.Resize) -> None:
        """Below ``NARROW`` columns the list is put away (Ctrl+B brings it back): its 22 columns
        left 17 for the chat at 40. Ctrl+B's choice stands."""
        if not self._sidebar_chosen:
            self.sidebar.display = event.size.width >= NARROW

    def welcome_text(self) -> str:
        """What an empty chat says: how to begin, and of a model too small to trust with facts,
        that (said in no chat before; F6 alone warned of it)."""
        t = self.wapp.texts
        small = self.wapp.small_model
        if small is None:
            return t("chat.welcome")
        profile = self.wapp.profile  # (a desk PC's F4 holds this PC's models, not the office server's)
        said = "chat.small_model_server" if profile is not None and profile.backend == "openai" else "chat.small_model"
        return f"{t('chat.welcome')}\n\n{t(said, name=small[0], n=params_text(small[1]))}"

    def show_welcome(self) -> None:
        for welcome in self.query("#welcome"):
            cast(Static, welcome).update(self.welcome_text())

    def relabel(self) -> None:
        t = self.wapp.texts
        self.query_one("#prompt", Input).placeholder = t("chat.placeholder")
        self.query_one("#editor", TextArea).border_subtitle = t("chat.editor_hint")
        self.sidebar.relabel(t)
        for view in self.message_views():
            view.relabel(t)
        self.name_profiles()  # (their profiles' titles in the new language)
        self.call_later(self.mark_days)
        self.show_welcome()
        for line in self.query("#instructions"):
            cast(Static, line).update(self._instructions_line())
        for earlier in self.query("#earlier"):
            cast(Button, earlier).label = t("chat.earlier", n=len(self._earlier))

    # --- events --------------------------------------------------------------------------
    @on(Input.Changed, "#prompt")
    @on(TextArea.Changed, "#editor")
    def _edited(self) -> None:
        self.wapp.draft_edited()

    @on(Input.Submitted, "#prompt")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.wapp.action_send()

    @on(ConversationList.Chosen)
    async def _chosen(self, event: ConversationList.Chosen) -> None:
        if event.conversation_id is None:  # the new conversation's draft
            await self.wapp.action_new_conversation()
            return
        await self.wapp.open_conversation(event.conversation_id, found=event.message_id, words=event.words)
        if self.wapp.conversation_id == event.conversation_id:
            self.focus_prompt()  # to type the next message at once, as after a search

    @on(ConversationList.SearchChanged)
    def _search(self, event: ConversationList.SearchChanged) -> None:
        """The list for what is typed once typing pauses (each key redrew the list: with 500
        conversations, 2 s a key, and keys typed meanwhile went astray)."""
        if self._search_timer is not None:
            self._search_timer.stop()
        self._search_timer = self.set_timer(SEARCH_PAUSE_S, lambda: self.wapp.refresh_sidebar(event.text))

    @on(ConversationList.SearchSubmitted)
    async def _search_submitted(self, event: ConversationList.SearchSubmitted) -> None:
        await self.wapp.open_first_match(event.text)
