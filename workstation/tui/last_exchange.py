"""The last question and its reply changed: the question taken back to the box (Up), asked
again (Alt+R), the reply continued (Alt+C) or another one asked for (Alt+V)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.widgets import Input, TextArea

from workstation.core.conversation_records import StoredMessage, TakenOut
from workstation.core.conversation_titles import root_title
from workstation.core.document_changes import DocumentComparison, recorded_changes
from workstation.core.metrics import history_of
from workstation.core.summary_chunks import without_counted
from workstation.tui.app_part import AppPart
from workstation.tui.attachment import Attached, find_attached
from workstation.tui.widgets.message_view import MessageView

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp


class LastExchange(AppPart):
    """The conversation's last exchange, changed."""

    def _last_question(self: WorkstationApp) -> StoredMessage | None:
        """The open conversation's last message of the user's (None: none yet)."""
        if self.conversation_id is None or self._open_gone():
            return None
        return next((m for m in reversed(self.store.messages(self.conversation_id)) if m.role == "user"), None)

    async def _take_back(self: WorkstationApp, question: StoredMessage) -> TakenOut:
        """``question`` (the last of the user's) and its reply out of the conversation, and off
        the screen: changed, or too long for the context. What went is returned, to put back."""
        conv_id = self.conversation_id
        assert conv_id is not None
        taken = self.store_write(lambda: self.store.take_out(conv_id, question.id))
        self._note_revision()
        await self.chat_screen.remove_last_exchange(keep_question=False)
        return taken

    def action_edit_last(self: WorkstationApp) -> None:
        """Up in the empty message box: the last message sent is put back in the box, to change
        (or leave) and send instead of it, its reply replaced; as Up in Slack, Telegram or a
        shell. Nothing is taken back until it is sent: the conversation stays as it was. Up again
        while it is there unchanged: the message before it, and so on back to the first (ChatGPT
        and LM Studio change any): sent, an earlier one goes on in a new conversation
        (``_go_on_from_earlier``)."""
        prompt = self.chat_screen.query_one("#prompt", Input)
        editor = self.chat_screen.query_one("#editor", TextArea)
        if self.screen is not self.chat_screen or self.focused not in (prompt, editor):
            return
        if self._box_emptied():  # Ctrl+U (or every letter deleted) while changing a message: it back, as put
            self._put_back_emptied()
            return
        if self.chat_screen.input_text() or self.pending_document is not None:
            if self._editing is not None and self._box_as_put():
                self._edit_another(-1)
            elif self._editing is not None:  # changed: Up would lose the change (said, not nothing)
                self.notify(self.texts("chat.only_last_editable", send=self._send_key()), kind="editing")
            return  # (what is in the box, an attached document too, is the next message's: not replaced)
        if self.generating:  # (Up goes nowhere while a reply is written)
            return
        question = self._last_question()
        if question is None:
            return
        if question.shown:  # F6's document chat: its message is the document and the instructions
            self.notify(self.texts("chat.not_again_document"), severity="warning")
            return
        self._put_in_box(question)
        self._say_editing_last()

    def action_edit_next(self: WorkstationApp) -> None:
        """Down in the message box while an earlier message is in it unchanged (Up again): the
        one after it, back to the last. In the box emptied while changing one, as Up: that one
        back (not the one after it: the box is still at it)."""
        if self.screen is not self.chat_screen or self._editing is None:
            return
        if self._box_emptied():
            self._put_back_emptied()
        elif self._box_as_put():
            self._edit_another(1)

    def _box_emptied(self: WorkstationApp) -> bool:
        """Whether the box was emptied while a message is in it to be changed (Ctrl+U, or each
        letter deleted): no words, and no document but the one Up attached again with it. Still
        being changed (two first-time users emptied it to type the message anew, and it went as a
        new one); unlike one put back as it was (a document alone, say): that is ``_box_as_put``."""
        if self._editing is None or self.chat_screen.input_text().strip() or self._box_as_put():
            return False
        document = self.pending_document
        if document is None:
            return True
        question = self._edited_question()
        attached = find_attached(question.content) if question is not None else None
        return attached is not None and document[0].name == attached.name and document[1] == attached.document

    def _put_back_emptied(self: WorkstationApp) -> None:
        """Up (or Down) in the box emptied while changing a message: that message back in it as Up
        put it (an undo of the emptying; Up again from there goes further back), and said."""
        question = self._edited_question()
        if question is None:
            return
        self._put_in_box(question)
        self._say_editing_last()

    def _put_in_box(self: WorkstationApp, question: StoredMessage) -> None:
        """``question`` in the message box to be changed (Up), its document attached again."""
        self._editing = (question.id, question.created)  # (first: the box's changes below are its)
        text, attached = self._as_put(question)
        self.chat_screen.set_input(text)
        if attached is not None:  # attached again, as it was sent: the box gets the words only
            # (its file where it was attached, this session or before a restart, known by its text:
            # its tables' facts are known or counted again by it)
            # (and the changes the program found between it and its earlier version, which its reply
            # listed: they go again; the new reply had none, and the model no list)
            self.attach_again(attached.name, attached.document, self._changes_of(question))
        elif self.pending_document is not None:  # (the one Up attached with the message after it)
            self._attach_document(None)

    @staticmethod
    def _as_put(question: StoredMessage) -> tuple[str, Attached | None]:
        """What Up puts in the box for ``question``: its words (without the program's counts of a
        table pasted in it: counted again when it is sent), and the document attached to it."""
        attached = find_attached(question.content)
        return (without_counted(question.content).rstrip("\n") if attached is None else attached.text), attached

    def _edited_question(self: WorkstationApp) -> StoredMessage | None:
        """The message of the user's in the box to be changed (Up); None: none."""
        if self._editing is None or self.conversation_id is None or self._open_gone():
            return None
        return next((m for m in self.store.messages(self.conversation_id) if (m.id, m.created) == self._editing), None)

    def _box_as_put(self: WorkstationApp) -> bool:
        """Whether the box holds the message being changed as Up put it there (not changed)."""
        question = self._edited_question()
        if question is None:
            return False
        text, attached = self._as_put(question)
        document = self.pending_document
        return self.chat_screen.input_text() == text and \
            (document[0].name if document is not None else None) == (attached.name if attached is not None else None)

    def _edit_another(self: WorkstationApp, way: int) -> None:
        """The user's message before (``way`` -1) or after (1) the one in the box, in its place,
        passing over those that cannot be changed (F6's document chat's); the first has none before."""
        if self.generating or self.conversation_id is None:
            return
        asked = [m for m in self.store.messages(self.conversation_id) if m.role == "user"]
        at = next((i for i, m in enumerate(asked) if (m.id, m.created) == self._editing), None)
        if at is None:
            return
        others = [m for m in (reversed(asked[:at]) if way < 0 else asked[at + 1:]) if not m.shown]
        if not others:  # (said: Down on the last did nothing, without a word)
            self.notify(self.texts("chat.editing_first" if way < 0 else "chat.editing_last_one"), kind="editing")
            return
        self._put_in_box(others[0])
        self._say_editing_last()

    def _editing_place(self: WorkstationApp) -> tuple[int, int] | None:
        """Where the message being changed is: its number among the user's messages and how many
        there are; None where it is the last (or none is being changed)."""
        if self._editing is None or self.conversation_id is None or self._open_gone():
            return None
        asked = [(m.id, m.created) for m in self.store.messages(self.conversation_id) if m.role == "user"]
        if self._editing not in asked or self._editing == asked[-1]:
            return None
        return asked.index(self._editing) + 1, len(asked)

    def _send_key(self: WorkstationApp) -> str:
        """The key that sends the box's message: Ctrl+S in the multi-line editor, else Enter."""
        return "Ctrl+S" if self.chat_screen.query_one("#editor", TextArea).display else "Enter"

    def _leave_editing(self: WorkstationApp) -> None:
        """Esc while a message is in the box to be changed: the box emptied, the one-line box again
        where it was in the multi-line editor (Ctrl+Z brings its text back), and the document Up attached with it taken off; the conversation as it was."""
        question, earlier = self._edited_question(), self._editing_at is not None
        # (what was typed: Ctrl+Z brings it back, said; an emptied box has nothing to bring back)
        changed = self._editing is not None and not self._box_as_put() and bool(self.chat_screen.input_text().strip())
        attached = find_attached(question.content) if question is not None else None
        document = self.pending_document
        self.chat_screen.clear_message(leave_editor=True)
        if attached is not None and document is not None and document[0].name == attached.name:
            self._attach_document(None)  # (the box empty: the message is no longer changed, and said so)
        if self._editing is not None:
            self._editing = None
            self._say_editing_left(earlier, changed)

    async def _go_on_from_earlier(self: WorkstationApp, question: StoredMessage, unchanged: bool = False) -> None:
        """An earlier message changed and sent (not the last): the conversation goes on in a new
        one that holds a copy of the messages before it (the store's ``copy_before``), titled
        after it, which is the open one from here; the one it was is kept as it was. Sent
        ``unchanged`` (Up, Up, Enter): the model asked again from there (ChatGPT's and LM
        Studio's regenerate of an earlier message), and titled so, not "changed" (it was not)."""
        was, title = self.conversation_id, root_title(self.open_title) or self.texts("conv.untitled")
        assert was is not None
        number = f"{sum(1 for m in self.store.messages(was) if m.role == 'user' and m.id <= question.id):,}"
        named = "conv.again_title" if unchanged else "conv.changed_title"
        conv = self.store_write(lambda: self.store.copy_before(
            was, question.id, self.texts(named, title=title, n=number),
            lambda k: self.texts(f"{named}_again", title=title, n=number, k=f"{k:,}")))
        self._store_draft(was, "", None)  # (the change was kept as its draft as it was typed: it is sent)
        self._edits.pop(was, None)
        if was in self._tables_asked_of:  # its table's follow-ups are the new one's too
            self._tables_asked_of[conv.id] = list(self._tables_asked_of[was])
        self._mark_open(conv)
        self.own_sampling = conv.sampling  # (Ctrl+E's, copied with it)
        self._claim_turn()  # (new: nobody else holds it)
        self.store_write(lambda: self.store.set_open(conv.id))
        self.history = history_of(conv.messages, self._switched_at)
        await self.chat_screen.show_messages(conv.messages)
        self.notify(self.texts("chat.went_on_again" if unchanged else "chat.went_on_in_new", n=number), timeout=8,
                    kind="editing")  # (in place of "message 2 is in the box")

    def _changes_of(self: WorkstationApp, question: StoredMessage) -> DocumentComparison | None:
        """The changes the program found between ``question``'s document and its earlier version,
        as its reply keeps them (``metrics["changes"]``); None where it has none."""
        assert self.conversation_id is not None
        reply = next((m for m in self.store.messages(self.conversation_id)
                      if m.id > question.id and m.role == "assistant"), None)
        return recorded_changes((reply.metrics or {}).get("changes")) if reply is not None else None

    def _kept_figures(self: WorkstationApp, metrics: dict[str, Any] | None) -> None:
        """The program's count of the question's table, the "answered from F6's summary" note and the
        changes found between two versions of its document (``document_changes``) of
        the reply asked again (Alt+R) or gone on with (Alt+C), for the new one: the same question of
        the same document (reply 2/2 had no "Counted by the program" line that 1/2 had: newuser19)."""
        self._counted = list((metrics or {}).get("counted") or [])
        self._from_summary = str((metrics or {}).get("from_summary") or "")
        changes = (metrics or {}).get("changes")
        self._changes = changes if isinstance(changes, dict) else None

    def _say_editing_last(self: WorkstationApp) -> None:
        """A message is in the box to be changed (Up, or its conversation opened again): which,
        and what sending it does; an earlier one marked in the chat and scrolled to."""
        place = self._editing_place()
        self._editing_at = place
        self._say_box_title()
        if place is None:
            self.chat_screen.mark_editing(None)
            self.notify(self.texts("chat.editing_last", send=self._send_key(), up=self.key_for("chat.edit_last")),
                        timeout=5, kind="editing")
            return
        n, total = place
        self.chat_screen.mark_editing(total - n)
        self.notify(self.texts("chat.editing_earlier", n=f"{n:,}", total=f"{total:,}", send=self._send_key(),
                               up=self.key_for("chat.edit_last"), down=self.texts.key("down")), timeout=10,
                    kind="editing")

    def _chat_free(self: WorkstationApp) -> bool:
        """Whether the chat's last exchange can be acted on now (Alt+R, Alt+V): the chat shown,
        nothing being written, the open conversation still there (said where it is not)."""
        if self.screen is not self.chat_screen:
            return False
        if self.generating or self._sending:
            self.notify(self.busy_text(), severity="warning")
            return False
        if self._open_gone():
            self.run_worker(self._lost_open_conversation(), exit_on_error=False)
            return False
        return True

    async def action_ask_again(self: WorkstationApp) -> None:
        """A new reply to the last message (ChatGPT's and LM Studio's "regenerate"), in the
        place of the one there, which stays until the new one has come: a try that fails, or
        is stopped (Esc), leaves it. The message box and its draft are left alone."""
        if not self._chat_free():
            return
        question = self._last_question()
        if question is None:
            self.notify(self.texts("chat.nothing_to_ask_again"), severity="warning")
            return
        if question.shown:  # F6's document chat: asked again, the model would not have the document
            self.notify(self.texts("chat.not_again_document"), severity="warning")
            return
        if self.engine is None:
            self.notify(self.not_ready_text(), severity="warning")
            return
        conv_id = self.conversation_id
        assert conv_id is not None  # (a question put back by Up stays so: sent, it replaces this one and its new reply)
        if not self._claim_turn():
            return
        after = [m for m in self.store.messages(conv_id) if m.id > question.id]
        self._replacing = [m.id for m in after]
        self._replacing_question = question.id
        self._asked = question.content
        self._turn_from = "again"
        self._kept_figures(after[0].metrics if after else None)  # (the same question, the same table's count)
        self.generating = True  # (no other turn begins while the screen is made ready)
        try:
            await self.chat_screen.remove_last_exchange(keep_question=True)
            reply = await self.chat_screen.add_reply()
            self._start_reply(reply, upto=question.id)
        except BaseException:  # (a database that fails to read the prompt: not "generating" for ever)
            self.generating, self._replacing = False, []
            raise

    async def _keep_replaced(self: WorkstationApp, view: MessageView | None) -> None:
        """A question asked again got no new reply (it failed, was stopped, or gave nothing):
        the one it had stays, drawn again; what the try kept as it streamed goes."""
        self._replacing = []
        if view is not None:
            await view.remove()
        partial, self._partial = self._partial, None
        if partial is not None and self.conversation_id is not None and not self._open_gone():
            conv_id = self.conversation_id
            self.store_write(lambda: self.store.forget_messages(conv_id, [partial]))
        await self._redraw_open()

    async def _keep_continued(self: WorkstationApp) -> None:
        """A reply to go on with got nothing more (it failed, or was stopped before a word): it
        stays as it was, its figures too (they said "stopped"), drawn again."""
        self._partial = None
        await self._redraw_open()

    async def action_continue_reply(self: WorkstationApp) -> None:
        """The last reply goes on where it stopped (its length limit, Esc), in the same message:
        ChatGPT's "Continue generating". The model reads its own words so far as the reply
        begun (``reply_to_continue``), not as a reply to answer."""
        if self.screen is not self.chat_screen:
            return
        if self.generating or self._sending:
            self.notify(self.busy_text(), severity="warning")
            return
        stored = self.store.messages(self.conversation_id) if self.conversation_id is not None and not self._open_gone() else []
        views = self.chat_screen.message_views()
        last = stored[-1] if stored else None
        if last is None or last.role != "assistant" or not last.content.strip() or not views \
                or views[-1].role != "assistant":
            # a question with no reply yet (stopped before its first word): Alt+R asks for one
            unanswered = last is not None and (last.role == "user" or not last.content.strip())
            said = "chat.no_reply_to_continue" if unanswered else "chat.nothing_to_continue" if last else \
                "chat.no_reply_yet"  # (an empty conversation: "the last message here" named none)
            self.notify(self.texts(said, again=self.key_for("chat.again")), severity="warning")
            return
        if (last.metrics or {}).get("stop_reason") == "loop":  # cut where it began repeating itself: more of it, more of the same
            self.notify(self.texts("chat.loop_no_go_on", again=self.key_for("chat.again")))
            return
        if (last.metrics or {}).get("stop_reason") in ("eos", "stop"):  # the model (or a stop text) ended it: nothing is cut (it said nothing)
            self.notify(self.texts("chat.reply_complete", again=self.key_for("chat.again")))
            return
        if self.engine is None:  # (what there is to go on with said first: no model is needed to know)
            self.notify(self.not_ready_text(), severity="warning")
            return
        if not self._can_go_on():  # a server other than workstation serve may begin anew
            self.notify(self.texts("chat.continue_not_here"), severity="warning")
            return
        if not self._claim_turn():
            return
        self._continued = last.content
        self._turn_from = "continue"
        self._kept_figures(last.metrics)
        self._partial = last.id  # the reply's own row is written again as it goes on
        self._asked = next((m.content for m in reversed(stored) if m.role == "user"), "")
        views[-1].reopen()
        self._start_reply(views[-1])

    def _can_go_on(self: WorkstationApp) -> bool:
        """Whether Alt+C can go on with a reply here: not on a server other than workstation
        serve, which may begin a reply anew."""
        meta = getattr(self.engine, "meta", None)
        return meta is None or bool(meta.get("n_ctx"))

    async def action_other_reply(self: WorkstationApp) -> None:
        """The last question's next reply in the place of the one shown (ChatGPT's "< 2/2 >"):
        each Alt+R keeps the reply it replaces, and this goes through them in the order they
        were written, back to the first after the last. The next turn reads the one shown."""
        if not self._chat_free():
            return
        question = self._last_question()
        conv_id = self.conversation_id
        stored = self.store.messages(conv_id) if conv_id is not None and question is not None else []
        reply = stored[-1] if stored and stored[-1].role == "assistant" else None
        shown = None
        if conv_id is not None and question is not None and reply is not None:
            shown = self.store_write(lambda: self.store.next_reply_version(conv_id, question.id, reply.id))
        if shown is None:  # (with no reply at all, "this reply has no other one" named none there)
            said = "chat.no_other_reply" if reply is not None else "chat.no_reply_to_continue" if question else \
                "chat.no_reply_yet"
            self.notify(self.texts(said, again=self.key_for("chat.again")), severity="warning")
            return
        self._note_revision()
        await self._redraw_open()
        n, total = shown
        self.notify(self.texts("chat.reply_version", n=f"{n:,}", total=f"{total:,}", press=self.key_for("chat.versions")))

    async def _keep_edited(self: WorkstationApp, edited: TakenOut) -> None:
        """The last question changed and answered: the question it was sent in place of, with
        its replies, kept as earlier versions of it (Alt+V goes back to them)."""
        conv_id, question = self.conversation_id, self._last_question()
        if conv_id is None or question is None:
            return
        kept = self.store_write(lambda: self.store.keep_edited(conv_id, question.id, edited))
        if kept:
            self._note_revision()
            self.chat_screen.mark_versions()
            self.notify(self.texts("chat.edit_kept", press=self.key_for("chat.versions")))

    async def _put_back(self: WorkstationApp, away: TakenOut, after: StoredMessage | None = None) -> list[StoredMessage]:
        """What a message was sent in place of (Up), back in the open conversation, before
        ``after`` (the message sent, kept in the chat) where it is given; the messages as kept."""
        conv_id = self.conversation_id
        if conv_id is None or self._open_gone():
            return []
        later = self.store_write(lambda: self.store.take_out(conv_id, after.id)) if after is not None else None
        kept = self.store_write(lambda: self.store.put_back(conv_id, away))
        if later is not None:
            self.store_write(lambda: self.store.put_back(conv_id, later))
        self._note_revision()
        await self._redraw_open()
        return kept
