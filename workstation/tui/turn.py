"""A turn of the chat: a message sent, its reply streamed and saved as it comes, finished,
stopped (Esc) or failed, and a message that waits for the office server."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from textual import on, work

from workstation.core.conversation_records import Conversation, ConversationGone
from workstation.core.conversation_titles import title_from_message
from workstation.core.document_changes import DocumentComparison, changes_record, compared
from workstation.core.document_changes import for_the_model as changes_for_the_model
from workstation.core.engine_api import too_long
from workstation.core.engine_process import EngineStopped
from workstation.core.errors import BackendUnreachable, WorkstationError
from workstation.core.events import PromptRead, ServerWaiting, TokenDelta
from workstation.core.events import TurnFinished as EngineTurnFinished
from workstation.core.kv_state import NOT_KEPT, conversation_tag
from workstation.core.metrics import TurnMetrics, turn_record
from workstation.core.model_file import model_file_changed
from workstation.core.pasted_tables import PASTED_TITLE, counted_pasted, for_the_model, pasted_facts
from workstation.core.phrases import rounded_words, words_in
from workstation.core.profile_lookup import model_file
from workstation.core.profiles import Profile, Sampling
from workstation.core.remote import refused
from workstation.core.reply_check import miscounted_figures, unchecked_figures, unchecked_record
from workstation.core.summary_chunks import with_counted
from workstation.core.table_facts import counted_answer, facts_record
from workstation.tui.app_part import AppPart
from workstation.tui.attachment import (
    Attached,
    conversation_document,
    conversation_tables,
    follow_up_counted,
    with_attached,
)
from workstation.tui.messages import (
    EngineFailed,
    PromptProgressed,
    ServerWaited,
    TokenStreamed,
    TurnFinished,
)
from workstation.tui.toasts import LOAD_NOTICE, NOT_SENT
from workstation.tui.widgets.message_view import MessageView

if TYPE_CHECKING:
    from workstation.core.conversation_records import StoredMessage
    from workstation.tui.app import WorkstationApp


SERVER_RETRY_S = 5.0  # a message waiting for the office server: how often it is tried again
KEEP_PARTIAL_EVERY_S = 2.0  # a reply is saved as it streams this often: a kill -9 loses no more


class Turn(AppPart):
    """A message sent and its reply."""

    def _turn_begun(self: WorkstationApp) -> bool:
        """A reply is written, or a message sent is on its way to one (Enter's worker)."""
        return self.generating or self._sending

    def action_send(self: WorkstationApp) -> None:
        """Enter: the box's text is sent. A second Enter before the first one's message left the
        box (a double press, a paste that ends with a line break) sent it again: the message
        twice, two replies on one engine at once, and one of them left "reading…" for good."""
        if self.screen is not self.chat_screen or self._sending:
            return
        self._sending = True
        self.run_worker(self._send_once(self.chat_screen.input_text()), group="send", exit_on_error=False)

    async def _send_once(self: WorkstationApp, text: str) -> None:
        try:
            await self.send(text)
        finally:
            self._sending = False
            if not self.generating:  # (not sent after all)
                self._release_turn()

    def _claim_turn(self: WorkstationApp) -> bool:
        """The open conversation's next reply is this window's to write: False, and said, while
        another window of the app or `chat -c` writes one there (both wrote their question,
        then both replies, and each window showed another history). Held until the turn ends."""
        conv_id = self.conversation_id
        if conv_id is None or (self._turn_held is not None and self._turn_held == (self.store, conv_id)):
            return True
        self._release_turn()
        if not self.store.claim_turn(conv_id):
            self.notify(self.texts("chat.answering_elsewhere", new=self.key_for("conv.new")), severity="warning",
                        timeout=12)
            return False
        self._turn_held = (self.store, conv_id)
        return True

    def _release_turn(self: WorkstationApp) -> None:
        held, self._turn_held = self._turn_held, None
        if held is not None:
            held[0].release_turn(held[1])

    async def send(self: WorkstationApp, text: str) -> None:
        """Send ``text`` (with an attached document) as the user's next message."""
        t = self.texts
        document = self.pending_document
        if not text.strip() and (document is None or self._box_emptied()):
            if document is not None:  # (emptied while a message is changed: the document Up attached again is
                self.say_still_editing()  # not sent alone; said, as Enter seemed to do nothing)
            return
        if self.generating:  # (Enter did nothing that could be seen, and the next message went after it in the box)
            self.notify(self.busy_text() if self.summarizing is not None else t("chat.busy_send",
                        stop=self.key_for("chat.stop")), severity="warning")
            return
        if self.profile is not None and self.server_to_try_again():
            # its load failed (the office server was down, say): try again; the text stays in the box
            self.notify(t("chat.retrying_server", url=self.profile.remote.base_url), severity="warning")
            self._send_when_connected = text  # sent once the server answers (a second Enter was needed,
            self._begin_load(self.profile)  # and nothing said so: it looked sent)
            return
        if self.engine is None and self.loading is not None:
            # the model loads (or is loaded again, its process stopped): the message waits in the box,
            # said over it, and goes then (it said "wait a moment", and was never sent); Esc, a change
            # in the box or a failed load leave it there unsent
            if self._reloading:
                self.notify(t("chat.sent_once_loaded"), timeout=8)
            self._send_when_connected = text
            return
        if self.engine is None:
            self.notify(self.not_ready_text(), severity="warning")
            return
        if document is not None and document == self.finding_attached:
            # Up put it back and its file is still being read (a big workbook): sent once it is found
            # (sent at once, it went under its bare name, its tables' counted figures lost)
            self.notify(t("chat.sent_once_found", name=document[0].name), timeout=5)
            self._send_when_connected = text
            return
        if document is not None and self._weighing is not None and self._weighing[1] == document:
            # attached after another document, and not yet known to be a second version of it: sent once
            # it is (sent at once, it went without the program's list of changes)
            self.notify(t("chat.sent_once_compared", name=document[0].name, old=self._weighing[0][0].name), timeout=5)
            self._send_when_connected = text
            return
        found = self.attached_summary(document) if document is not None else None
        summary = found[0] if found is not None and found[1] else None  # (of the file as it is now)
        if document is not None and summary is None and self.attachment_too_long(document):
            # refused before it is shown: the message and "waiting for the first word…" came, then
            # both went, the document still attached, each time Enter was pressed (F6's summary of
            # the file before it was changed: said so, it went in the document's place)
            self.notify(t("chat.attached_refused_old" if found else "chat.attached_refused", name=document[0].name,
                          summarize=self.key_for("summarize.open"),
                          remove=self.key_for("chat.detach")) + self.holder_text(document), severity="warning", timeout=12,
                        kind=NOT_SENT)
            return  # (the text stays in the box)
        # an earlier message changed goes on in a new conversation (``_go_on_from_earlier``), which
        # claims its own turn: nothing is written in this one (another window's reply here refused it)
        earlier = self._editing is not None and self._editing_place() is not None
        if not earlier and not self._claim_turn():
            return  # (the text stays in the box)
        if not earlier and self.conversation_id is not None and not self._open_gone():
            with contextlib.suppress(WorkstationError):
                if self.store.revision(self.conversation_id) != self._open_revision:
                    await self._redraw_open()  # a turn written elsewhere since: shown before this one
        content = text.strip()
        # the figures of the attached table that answer it, counted by the program: said under the reply
        tables = self._document_facts.get(document[0], []) if document is not None and summary is None else []
        self._counted = counted_answer(text, tables) if tables else []
        if document is None and self.conversation_id is not None and self.conversation_id not in self._tables_asked_of:
            # reopened after a restart: the table it last had attached, read again from its message's text
            # (the app's memory of it gone, a follow-up had no counted line and the model named the wrong rows)
            conv_id = self.conversation_id
            with contextlib.suppress(WorkstationError):  # (the conversations' file busy: counted of none)
                stored = self.store.messages(conv_id)
                self._tables_asked_of[conv_id] = await asyncio.to_thread(conversation_tables, stored)
        followed = self._tables_asked_of.get(self.conversation_id, []) \
            if document is None and self.conversation_id is not None else []
        asked_of = follow_up_counted(text, followed)  # (a follow-up of the conversation's table: what it names of it)
        self._counted += asked_of
        self._from_summary = ""  # (an earlier send's that got no reply stuck to the next reply)
        # a table pasted in the message's own words (an invoice's lines): its figures and arithmetic counted too
        pasted, counted = counted_pasted(text)
        self._counted += counted
        if document is not None:
            path, doc = document
            doc = with_counted(doc, tables, self._counted)  # (the rows its question named, counted: for the model too)
            name = t("chat.summary_of", name=path.name) if summary is not None else path.name
            self._from_summary = path.name if summary is not None else ""  # (said under its reply)
            content = with_attached(content, t("chat.document", name=name), doc if summary is None else summary)
        older = self.compared_with if document is not None and summary is None else None
        self._changes = None  # (an earlier send's that got no reply stuck to the next reply, as ``_from_summary``)
        if older is not None and document is not None:  # a second version of it: what changed, found by the program
            # (off the screen's thread: two long versions rewritten throughout took most of a second)
            # (put back by Up, the changes found for it before: the older text is not kept)
            comparison = older if isinstance(older, DocumentComparison) else \
                await asyncio.to_thread(compared, older[0].name, older[1], document[0].name, document[1])
            self._changes = changes_record(comparison)  # (said under the reply)
            # for the model, in place of the older text: as many as the room beside the document holds
            content = f"{content}\n\n{changes_for_the_model(comparison, self.changes_room(document))}"
        if asked_of:  # (for the model too, as an attached table's are)
            content = f"{content}\n\n{for_the_model(followed, asked_of)}"
        if counted:  # (for the model too, after the message, as an attached table's are: ``with_counted``)
            content = f"{content}\n\n{for_the_model(pasted, counted)}"
        self._edited_away = None
        if self._editing is not None:  # a question changed (or not), put back by Up
            edited, last = self._edited_question(), self._last_question()
            unchanged = self._box_as_put()  # (an earlier one sent as it was: asked again from there)
            self._editing = None
            if edited is not None and last is not None and edited.id == last.id:  # the last: sent instead of it
                if earlier and not self._claim_turn():  # (the last since Up: another window took the rest away)
                    self._editing = (edited.id, edited.created)
                    return  # (the text stays in the box)
                self._edited_away = await self._take_back(edited)  # (back should it come back)
            elif edited is not None:  # an earlier one: the conversation goes on from it in a new one
                await self._go_on_from_earlier(edited, unchanged)
        if earlier and not self._claim_turn():  # (the new one's, held; this one's where Up's message went meanwhile)
            return  # (the text stays in the box)
        made = self.conversation_id is None
        if made:
            title = (text.strip() or (document[0].name if document else ""))
            conv = self.store_write(lambda: self.store.new(title_from_message(title) or t("conv.untitled"),
                                                        self.profile.ref if self.profile else "",
                                                        self._new_instructions,  # Alt+I's, given before it
                                                        self.own_sampling))  # and Ctrl+E's
            self._new_instructions = self.instructions_for_new()  # (the next new one's: those kept for all, or none)
            self._mark_open(conv)
            self._claim_turn()  # (new: nobody else holds it; another window may open it meanwhile)
            self.store_write(lambda: self.store.set_open(conv.id))
        # saved before the risky part: the engine may fail or crash from here on; no await
        # before the box is cleared, so that a Ctrl+N cannot keep the sent text as a draft
        # (its tables' facts kept with it: said in the UI's language after a restart too)
        self._asked_facts = [facts_record(f) for f in tables]
        if tables and self.conversation_id is not None:
            self._tables_asked_of[self.conversation_id] = tables
        gone = self._save_message("user", content, facts=self._asked_facts)
        self._asked = content
        self._sent = (text, document, older)
        self._turn_from = "send"
        self._attach_document(None)
        self.chat_screen.clear_input()
        self.save_draft()  # sent: no draft left (a new conversation's was kept under None)
        if made:
            self._store_draft(None, "", None)
        if gone:  # it goes on as a new conversation: the earlier messages are not in it
            await self.chat_screen.show_messages([])
        await self.refresh_sidebar()  # (a new one listed; one written in goes to the top, as after a restart)
        self._start_reply(await self.chat_screen.add_exchange(content))

    def _start_reply(self: WorkstationApp, view: MessageView, upto: int | None = None) -> None:
        """The reply to the open conversation as it stands (``upto``: up to that message) streams
        into ``view``."""
        pace = self.stream_pace()
        self.reply_view = view
        view.markdown_every_s = pace.markdown_every_s
        try:
            messages = self.store.prompt_messages(self.conversation_id, upto=upto)  # type: ignore[arg-type]
        except BaseException:
            if not self.generating:  # (no turn began: the conversation is free again)
                self._release_turn()
            raise
        self.generating = True
        if self.engine is None:
            # gone since the send (or Alt+R, Alt+C) looked, while the screen was made ready (its
            # process stopped; F3 loads another): "The turn failed: AttributeError …" was said. The
            # turn fails as a lost engine's does: the message back in the box, sent once it is loaded
            why = self.texts("chat.sent_once_loaded") if self.loading is not None and self._turn_from == "send" \
                else self.not_ready_text()
            self.notify(why, severity="warning")
            self.post_message(EngineFailed(why, lost=WorkstationError(why)))
            return
        if self.profile is not None and self.conversation_id is not None:  # it goes on with the profile that answers
            # (send, Alt+R, Alt+C: the profile is written on it when one answers there, not when one is loaded)
            conv_id, ref = self.conversation_id, self.profile.ref
            self.store_write(lambda: self.store.set_profile(conv_id, ref))
        self._partial_at = time.perf_counter()  # kept from 2 s in, not at its first word
        self._turn += 1
        self.live_tokens = 0
        self.live_prompt = None
        self._t_first = self._t_last = None
        self.update_status()
        self._generate(self.engine, messages, pace.updates_hz, self.cells_tag(self.conversation_id),  # type: ignore[arg-type]
                       self.session_sampling)

    def _save_message(self: WorkstationApp, role: str, content: str, metrics: dict[str, Any] | None = None,
                      reasoning: str = "", facts: list[dict[str, Any]] | None = None) -> bool:
        """``content`` saved in the open conversation (``facts``: its attached tables' facts, as
        ``StoredMessage.facts``); True when it was not there any more. Should
        another window (or ``chat -c``'s user) have deleted it meanwhile, the message, with the
        question a reply answers, goes into a new conversation of the same title, which is then
        the open one: the app fell over with "cannot be used (FOREIGN KEY constraint failed)"
        when a reply finished there, the reply lost, and a message sent there was refused so."""
        was = self.conversation_id
        assert was is not None
        partial = self._partial if role == "assistant" else None
        if not self._open_gone():
            try:
                def save() -> None:
                    if partial is None or not self.store.update_message(partial, content, metrics, reasoning):
                        self.store.add_message(was, role, content, metrics, reasoning=reasoning, facts=facts)
                self.store_write(save)
                self._partial, self._partial_at = None, 0.0
                self._note_revision()
                return False
            except ConversationGone:
                pass
        self._partial, self._partial_at = None, 0.0
        title = self.open_title or self.texts("conv.untitled")

        def keep_apart() -> Conversation:
            conv = self.store.new(title, self.profile.ref if self.profile else "", self._open_instructions,
                                  self.own_sampling)
            if role == "assistant" and self._asked:
                self.store.add_message(conv.id, "user", self._asked, facts=self._asked_facts)
            self.store.add_message(conv.id, role, content, metrics, reasoning=reasoning, facts=facts)
            return conv
        conv = self.store_write(keep_apart)
        self._mark_open(conv)
        self.store_write(lambda: self.store.set_open(conv.id))
        self.notify(self.texts("conv.gone_kept", title=title), severity="warning")
        return True  # (SQLite may give the new one the number the deleted one had)

    async def _show_kept_turn(self: WorkstationApp) -> None:
        """The new conversation a turn was kept in, drawn (the deleted one's messages stayed)."""
        await self.chat_screen.show_messages(self.store.messages(self.conversation_id))  # type: ignore[arg-type]
        await self.refresh_sidebar()

    def cells_tag(self: WorkstationApp, conversation_id: int, created: float | None = None) -> str:
        """The tag the engine keeps this conversation's KV cells under (deleted with it); none
        kept on disk for a conversation that lives in memory only (gone when the app closes).
        ``created``: when it was made, for one no longer in the file."""
        if self.store.in_memory:
            return NOT_KEPT
        if created is None:
            created = self.store.get(conversation_id, with_messages=False).created
        return conversation_tag(self.store.identity, conversation_id, created)

    @work(thread=True, exclusive=True, exit_on_error=False, group="turn")
    def _generate(self: WorkstationApp, engine: Any, messages: list[dict[str, str]], hz: float, tag: str,
                  sampling: Sampling | None = None) -> None:
        # The first piece goes out at once (time to first token); later ones are batched to
        # at most ``hz`` screen updates a second so rendering leaves the CPU to the engine.
        # An engine in a child process batches on its side already (fewer wake-ups here).
        interval = 1.0 / hz
        if hasattr(engine, "stream_interval_s"):
            engine.stream_interval_s = interval
        pending: list[str] = []
        thought: list[str] = []
        count = 0
        last_post = 0.0

        def flush() -> None:
            nonlocal count
            if pending or thought:
                self.post_message(TokenStreamed("".join(pending), count, "".join(thought)))
                pending.clear()
                thought.clear()
                count = 0

        try:
            for event in engine.stream_chat(messages, sampling, tag=tag, reading=True):
                if isinstance(event, PromptRead):
                    self.post_message(PromptProgressed(event.fraction, event.read, event.total))
                elif isinstance(event, ServerWaiting):
                    self.post_message(ServerWaited(event.own, event.stalled, event.seconds, event.held))
                elif isinstance(event, TokenDelta):
                    pending.append(event.text)
                    thought.append(event.reasoning)
                    count += event.tokens
                    now = time.perf_counter()
                    if now - last_post >= 0.8 * interval:
                        flush()
                        last_post = now
                elif isinstance(event, EngineTurnFinished):
                    flush()
                    self.post_message(TurnFinished(event.text, event.metrics, event.reasoning))
        except WorkstationError as err:
            flush()
            lost = err if isinstance(err, EngineStopped) or model_file_changed(err) else None
            self.post_message(EngineFailed(self.texts.error(err),
                                           unreachable=isinstance(err, BackendUnreachable) and err.connection_lost,
                                           too_long=too_long(err), refused=refused(err), lost=lost,
                                           not_answering=err.said[0][0] if err.said else ""))
        except Exception as err:  # noqa: BLE001 - a sentence in the app, never a traceback
            flush()
            self.post_message(EngineFailed(self.texts("error.turn_failed", what=self.texts.error(err, foreign=True))))

    def action_stop(self: WorkstationApp) -> None:
        """Esc in the chat (every other screen has its own Esc: back)."""
        if self.summarizing is not None:  # Esc stops replies; a summary only on its own screen
            self.notify(self.busy_text(), severity="warning")
        elif self.generating and self.engine is not None:
            self._cancel_turn()
        elif self._send_when_connected is not None:  # not sent once the model has loaded: it stays in the box
            self._send_when_connected = None
        elif self._editing is not None and self.screen is self.chat_screen:  # a message put back by Up: left as it was
            self._leave_editing()

    def _cancel_turn(self: WorkstationApp) -> None:
        """Stop the reply being generated, and keep stopping it until it has stopped: an Esc
        right after Enter, before the turn's thread had begun (which clears the engine's
        stop), was lost and the reply went on. Only this turn: the next one is not stopped."""
        turn, engine = self._turn, self.engine
        if engine is None:
            return

        def again() -> None:
            if self._turn == turn and self.generating and self.engine is engine:
                engine.cancel()
            else:
                timer.stop()

        engine.cancel()
        timer = self.set_interval(0.25, again)

    @on(ServerWaited)
    def _server_waited(self: WorkstationApp, event: ServerWaited) -> None:
        if self.reply_view is not None:
            if event.stalled:
                self.reply_view.server_stalled(event.seconds)
            else:
                self.reply_view.server_waiting(event.own, event.held)

    @on(PromptProgressed)
    def _prompt_read(self: WorkstationApp, event: PromptProgressed) -> None:
        self.live_prompt = (event.read, event.total)  # F5's memory gauge counts the prompt as it is read
        if self.reply_view is not None:
            self.reply_view.read_so_far(event.fraction)

    @on(TokenStreamed)
    async def _token(self: WorkstationApp, event: TokenStreamed) -> None:
        now = time.perf_counter()
        if self._t_first is None:
            self._t_first = now
        self._t_last = now
        self.live_tokens += event.count
        if self.reply_view is not None:
            if event.reasoning:
                await self.reply_view.think(event.reasoning, event.count)
            if event.text:
                await self.reply_view.write(event.text)
            if now - self._partial_at >= KEEP_PARTIAL_EVERY_S:
                self._keep_partial(self.reply_view)

    def _keep_partial(self: WorkstationApp, view: MessageView) -> None:
        """The reply so far, saved as it streams ("interrupted" until it ends): a kill -9, a
        crash or a power cut mid-reply lost all of it, the question left with no answer."""
        self._partial_at = time.perf_counter()
        if self.conversation_id is None or not (view.content or view.reasoning) or self._open_gone():
            return  # (deleted elsewhere: the end of the turn keeps it in a new conversation)
        try:
            if self._partial is None:
                self._partial = self.store.add_message(self.conversation_id, "assistant", view.content,
                                                       {"stop_reason": "interrupted"}, reasoning=view.reasoning).id
            else:
                self.store.update_message(self._partial, view.content, {"stop_reason": "interrupted"},
                                          view.reasoning)
            self._note_revision()
        except WorkstationError:  # (a full disk): the end of the turn says so
            pass

    @on(TurnFinished)
    async def _finished(self: WorkstationApp, event: TurnFinished) -> None:
        view, self.reply_view = self.reply_view, None
        self.unreachable = False
        # a reply cut where the key's tokens for the day ran out: the next message is refused (it said "ready")
        self.server_answered("remote.quota_cut" if event.metrics.stop_reason == "quota" else "")
        self._engine_stops = 0  # (a reply came: a process that stops later is loaded again once more)
        metrics = event.metrics
        self.last_metrics = metrics
        ran_on = (self.profile.ref, self.profile.name) if self.profile else ("", "")
        continued = self._continued
        text, self._continued = continued + event.text, ""  # (a reply gone on with: all of it)
        thought = event.reasoning or (view.reasoning if view is not None else "")  # (gone on with: the first part's)
        conv = self.conversation_id
        if metrics.predicted_n and self._switched_at is not None and conv is not None \
                and (conv, self.open_created) not in self._answered_since_switch:  # (stopped before a word: to come)
            # each conversation's first reply since the switch (the first in any conversation used the mark
            # up: switched, asked in another, back, and the reply read again said nothing); one made since
            # had nothing to read again
            self._answered_since_switch.add((conv, self.open_created))
            metrics.after_switch = self.open_created < self._switched_at
        self.history.add(metrics, *ran_on, words=words_in(event.text) + words_in(event.reasoning))  # (this turn's tokens)
        replacing = self._replacing
        edited, self._edited_away = self._edited_away, None  # (answered: what it was sent in place of goes behind Alt+V)
        if replacing and not text.strip() and (metrics.stop_reason == "cancelled" or not thought):
            # asked again and given no answer (stopped before a word of it, thinking aside): the reply it
            # had stays; what did arrive is kept as the new reply, the earlier behind Alt+V (Esc keeps
            # what arrived, as ChatGPT keeps a stopped regeneration: it was dropped, and Ctrl+Q lost it)
            await self._keep_replaced(view)
            if self.is_running and metrics.stop_reason == "cancelled":  # (what was streaming went without a word)
                self.notify(self.texts("chat.kept_earlier", again=self.key_for("chat.again")))
        elif continued and not event.text.strip() and not event.reasoning:  # went on with nothing: as it was
            await self._keep_continued()
            if metrics.stop_reason != "cancelled":
                self.notify(self.texts("chat.nothing_more"))
        else:
            self._replacing = []
            served = (self.engine_info.model_name if self.engine_info is not None and self.profile is not None
                      and self.profile.backend == "openai" else "")
            record = turn_record(metrics, *ran_on, self.changes_from_profile(self.session_sampling), model_file(self.profile) if self.profile else "",
                                 served)
            if self._counted:  # (the program's figures, kept with the reply; an Alt+R's or Alt+C's its question's)
                record["counted"] = self._counted
            if self._from_summary:  # (F6's summary went in the document's place)
                record["from_summary"] = self._from_summary
            elif (unchecked := self._document_check(text)) is not None:  # (said under it, after the program's count)
                record["unchecked"] = unchecked
            if self._changes:  # (what changed between the two versions attached, found by the program)
                record["changes"] = self._changes
            self._counted, self._from_summary, self._changes = [], "", None
            if self._new_after_turn and metrics.stop_reason == "cancelled":  # Ctrl+N stopped it: said under it
                record["stopped_by"] = "new_conversation"
            if metrics.stop_reason == "quota":  # the key's day ran out in it: said under it with when it answers again
                from workstation.core.remote import resets_text

                record["resets"] = resets_text(getattr(self.engine, "day_resets_at", None))
            if view is not None:  # stopped before its first token: it says so, and is kept so
                await view.finish(text, metrics, event.reasoning, record)
                self.chat_screen.name_profiles()  # (the first reply of a profile switched to)
            self._tell_left_out(metrics)
            if metrics.stop_reason == "length" and text.strip() and self._can_go_on():  # ("length limit" named no way on)
                # (in words: "(1,024 tokens)" said nothing to the office staff the app is for; its own words
                # counted: an English reply of 920 words was "about 410" under Turkish, a Turkish word's tokens)
                self.notify(self.texts("chat.cut_at_limit", n=rounded_words(words_in(text)),
                                       go_on=self.key_for("chat.continue")), timeout=8)
                if view is not None:  # and under it while it is the last reply (the notice fades)
                    view.show_versions(view.versions, self.key_for("chat.continue"))
            elif metrics.stop_reason == "cancelled" and text.strip() and not replacing and self._can_go_on() \
                    and not self._new_after_turn:  # (Ctrl+N: the new conversation opens; its notice said so)
                # ("stopped" under it named no way on either, as "length limit" did)
                self.notify(self.texts("chat.stopped_go_on", go_on=self.key_for("chat.continue")), timeout=8)
            if self.conversation_id is not None:  # (the model never reads an empty reply: prompt_messages)
                if self._save_message("assistant", text, record, reasoning=thought):
                    await self._show_kept_turn()
                elif edited is not None:  # the question changed (Up): the one before and its replies stay behind Alt+V
                    await self._keep_edited(edited)
                elif replacing:  # the new reply is in: the one it replaces is kept as an earlier one (Alt+V)
                    conv_id, question = self.conversation_id, self._replacing_question
                    self.store_write(lambda: self.store.keep_as_earlier(conv_id, question, replacing))
                    self._note_revision()
                    self.chat_screen.mark_versions()
                    said = "chat.again_stopped" if metrics.stop_reason == "cancelled" else "chat.earlier_kept"
                    self.notify(self.texts(said, press=self.key_for("chat.versions")))
        self.generating = False
        if self._quit_after_turn:
            self.exit()
            return
        self.update_status()
        self._refresh_dashboard()
        if self._new_after_turn:  # Ctrl+N stopped it: the new conversation now
            self._new_after_turn = False
            await self.action_new_conversation()

    def _document_check(self: WorkstationApp, reply: str) -> dict[str, Any] | None:
        """What a reply about the document attached to its question gives that the document does
        not have (``reply_check.unchecked_figures``), kept with the reply to be said under it,
        where the model is one the app calls too small to trust with facts (``small_model``, the
        welcome's and F6's judgement): a lease's "three days' notice" where it says 60, and a law
        it never names, had nothing under them but the reply's speed. A follow-up asked without
        attaching it again is checked against the document the conversation holds, the one last
        attached (``conversation_document``): its invented figures had no line; a table pasted in the
        question or an earlier one is checked against that message (``pasted_known``: "the table in
        your message"), and F6's conversation (Ctrl+K) against the document in its first, hidden
        message. None: nothing to say."""
        if self.small_model is None or not reply.strip():
            return None
        messages: list[StoredMessage] = []
        if self.conversation_id is not None and not self._open_gone():
            with contextlib.suppress(WorkstationError):  # (the conversations' file busy: its own question's alone)
                messages = [m for m in self.store.messages(self.conversation_id) if m.role == "user"]
        attached = conversation_document([m.content for m in messages], self._asked)
        _, held, document = messages[0].content.partition("\nTEXT:\n") if messages and messages[0].shown else ("", "", "")
        if attached is None and held and self.conversation_id is not None:
            # F6's (Ctrl+K): the document whole in its first message, the summary's prompt the chat hides
            from workstation.core.kept_summary import asked_about

            with contextlib.suppress(WorkstationError):
                if (path := asked_about(self.store, self.conversation_id)) is not None:
                    attached = Attached("", path.name, document, 0)
        head, _, tail = self.texts("chat.summary_of", name="\0").partition("\0")
        if attached is None or attached.name.startswith(head) and attached.name.endswith(tail):
            return None  # (F6's summary went in its place: said so under the reply it was sent with)
        items = unchecked_figures(reply, attached.document, attached.name, self._counted)  # (the program's own known)
        # a figure given as the answer that is not the program's count for it (the total of every invoice
        # for the unpaid ones', "The program counted … 12,996.50"): the tables it counted, as the question
        # was counted of them (held since it was sent: read again here, a big sheet's rows froze the chat
        # as each reply ended)
        conv = self.conversation_id
        tables = ([f for f, _ in pasted_facts(attached.document)] if attached.name == PASTED_TITLE else
                  self._tables_asked_of.get(conv, []) if conv is not None else []) \
            if any(i.get("what") == "where" for i in self._counted) else []
        miscounted = miscounted_figures(reply, self._counted, tables)
        return unchecked_record(attached.name, items, miscounted) if items or miscounted else None

    def _tell_left_out(self: WorkstationApp, metrics: TurnMetrics) -> None:
        """The first time a conversation's start no longer fits the context, said in words (the
        reply's figures say it each time after): the model answered "what is my name?" with a
        made-up one, its first messages left out without a word, as the dashboard showed room."""
        conv = self.conversation_id
        if not metrics.left_out_n or conv is None or (conv, self.open_created) in self._left_out_told:
            return
        self._left_out_told.add((conv, self.open_created))
        n_ctx = self.engine_info.n_ctx if self.engine_info else 0
        self.notify(self.texts("chat.left_out", n=f"{metrics.left_out_n:,}", ctx=f"{n_ctx:,}",  # (what it forgot
                               instructions=self.key_for("chat.instructions")),  # was said in the first message)
                    severity="warning", timeout=20)

    def send_waiting(self: WorkstationApp) -> None:
        """The message waiting in the box for the model (``_send_when_connected``) sent, once the
        model has loaded and the chat shows: with F1, F3 or F5 open as the load ended it waits on
        until the chat is back (it was dropped, unsent), as the office server's retry waits. Another
        text typed meanwhile is not sent: it waits for Enter."""
        waiting = self._send_when_connected
        if waiting is None or self.engine is None or self.loading is not None or self.screen is not self.chat_screen:
            return
        self._send_when_connected = None
        if self.chat_screen.input_text() == waiting:
            self.action_send()

    def _wait_for_server(self: WorkstationApp, profile: Profile, waiting: str, said: bool = False) -> None:
        """A message sent while the office server could not be reached stays in the box, and
        the server is tried again every ``SERVER_RETRY_S`` seconds until it answers (then the
        message goes, as the notice said) or the box is changed, another profile is chosen, or
        the app quits. It waited for good: only another Enter sent it. ``said``: the wait was
        told already (a retry that failed again is not said every few seconds)."""
        def again() -> None:
            self._server_retry = None
            if self.profile is not profile or self.engine is not None or self.loading is not None \
                    or self.chat_screen.input_text() != waiting:
                return
            if self.screen is not self.chat_screen:  # (F1, F5 …: the message goes once the chat is back)
                self._server_retry = self.set_timer(SERVER_RETRY_S, again)
                return
            self._send_when_connected = waiting
            self._quiet_failure = True
            self._begin_load(profile)

        if not said and self._server_retry is None:
            self.notify(self.texts("chat.waiting_for_server", seconds=f"{SERVER_RETRY_S:.0f}"), timeout=12)
        if self._server_retry is not None:  # one wait at a time (an Enter meanwhile began another)
            self._server_retry.stop()
        self._server_retry = self.set_timer(SERVER_RETRY_S, again)

    @on(EngineFailed)
    async def _failed(self: WorkstationApp, event: EngineFailed) -> None:
        quiet, self._quiet_failure = self._quiet_failure and event.during == "load" and event.unreachable, False
        if event.during == "load":
            self._reloading = False
        reason, says_cut = event.reason, False
        if event.too_long and self._turn_from == "send" and self._sent[1] is not None:
            # (it said "save the text as a file and summarize it with F6" of a file attached)
            reason = self.texts("chat.sent_too_long_with_document", name=self._sent[1][0].name,
                                summarize=self.key_for("summarize.open"))
        elif event.not_answering == "remote.cut_by_stopping":
            # the office server's stop cut the reply off: it said "send it again" with the box empty and
            # nothing naming the key that asks again (kept with the reply too: "cut off: …")
            reason = self.texts("chat.cut_by_stopping", again=self.key_for("chat.again"))
            says_cut = True  # (said alone under the reply: "cut off: …, so the reply was cut off" said it twice)
        # (a lost engine is said by _engine_lost, once; a retry of a server still not reached: said once, when the
        # wait began; a reply cut off: under the reply, which is kept, and not again in a Problem box)
        tell = not quiet and event.lost is None
        if tell and event.during == "load":
            self.notify(reason, title=self.texts("error.title"), severity="error", timeout=12,
                        kind=LOAD_NOTICE)  # (the next load's notice replaces it)
        self.unreachable = event.unreachable
        self.server_answered(event.not_answering)
        if event.during == "load":
            self.load_failed = True
            self._summary_when_connected = None  # (its failure is said above; Ctrl+R tries again)
            waiting, self._send_when_connected = self._send_when_connected, None  # it stays in the box
            if waiting is not None and event.unreachable and self.profile is not None:
                self._wait_for_server(self.profile, waiting, said=quiet)
            self._chosen_profile = False
            self._other_profile_said = None  # (no profile loaded to answer it)
            self.loading = None
            self.chat_screen.set_load_progress(None)
            self.update_status()
            return
        view, self.reply_view = self.reply_view, None
        self.generating = False
        continued, self._continued = self._continued, ""
        replaced = bool(self._replacing)
        if replaced:  # asked again and failed: the reply it had stays
            await self._keep_replaced(view)
            view = None
        elif continued and view is not None and view.content == continued:  # went on with nothing: as it was
            await self._keep_continued()
            view = None
        answered = view is not None and bool(view.content or view.reasoning)
        said_under = False  # the reason said under the reply it cut off (kept): no Problem box saying it again
        if view is not None:
            if (view.content or view.reasoning) and self.conversation_id is not None:
                cut = TurnMetrics(stop_reason="failed")  # not "stopped": no one pressed Esc
                # the reason kept with the reply, said under it (its notice fades)
                record = {"stop_reason": "failed", "stop_said": reason, **({"stop_says_cut": True} if says_cut else {})}
                # saved first (the view is finished while other things run); then, kept in a new
                # conversation, that one drawn (it takes the view away: finished before)
                gone = self._save_message("assistant", view.content, record, reasoning=view.reasoning)
                await view.finish(view.content, cut, view.reasoning, record=record)
                if gone:
                    await self._show_kept_turn()
                said_under = self.screen is self.chat_screen  # (F5 open: the reply is not in sight, the box says it)
            else:
                await view.remove()
        if tell and not said_under:  # no reply to put it under (refused, cut before a word): the Problem box
            self.notify(reason, title=self.texts("error.title"), severity="error", timeout=12)
        # (an office server gone since the last reply: the message stayed in the chat unanswered, the box
        # emptied, though the status said "the next message tries again": it comes back, to send again)
        if (event.too_long or event.refused or (event.lost or event.unreachable) and not answered) \
                and self._turn_from == "send":
            await self._give_back_question()  # (not asked again, nor gone on with)
            text = self._sent[0]
            if event.lost and text.strip() and self.chat_screen.input_text() == text:
                self._send_when_connected = text  # answered once the model is back (not if it stops again)
        if self._quit_after_turn:  # what arrived is kept: on the way out, without loading again
            self.exit()
            return
        if event.lost is not None:
            self._engine_lost(self.engine, event.lost)
        self.update_status()

    async def _give_back_question(self: WorkstationApp) -> None:
        """A message more than the context holds is taken back into the box (its document
        attached again), to shorten or to summarize: it stayed in the chat as a question with
        no reply, the box emptied, and the text could be had back only by copying it out. So is
        one the office server refused (the key, the day's tokens: ``remote.refused``) or could not be
        reached for, to send again later: it stayed with no reply and no word, its reason in a notice
        that faded."""
        away, self._edited_away = self._edited_away, None  # sent in place of the last question (Up): it and its replies
        question = self._last_question()
        sent = question if question is not None and question.content == self._asked else None
        if sent is None or self._typed_since():  # typed since: the message stays in the chat (neither is lost)
            if away is not None:  # and the one it was sent in place of comes back before it (it was lost)
                await self._put_back(away, after=sent)
            return
        taken = await self._take_back(sent)
        conv_id = self.conversation_id
        if away is not None:  # they come back; the box's text goes in their place again once sent
            kept = await self._put_back(away)
            self._editing = (kept[0].id, kept[0].created) if kept else None
            if self._typed_since() and conv_id is not None:  # typed meanwhile: the message stays, after them
                self.store_write(lambda: self.store.put_back(conv_id, taken))
                self._editing = None
                await self._redraw_open()
                return
        elif self._typed_since() and conv_id is not None:
            # keys read while it was taken out of the chat: it stays there, as when typed before, and the
            # box keeps what was typed (the message came back over the first letters, the rest glued after it)
            self.store_write(lambda: self.store.put_back(conv_id, taken))
            self._note_revision()
            await self._redraw_open()
            return
        try:  # (deleted meanwhile by another window: the store says so, and nothing is left to do)
            empty = conv_id is not None and not self.store.messages(conv_id) \
                and not self.store.get(conv_id, with_messages=False).instructions
            if empty and conv_id is not None:
                # the conversation this message began holds nothing now: it goes too (it was left
                # in the list, titled after the refused message, with nothing in it)
                self.store.delete(conv_id)
                self.conversation_id = None
                self.store_write(lambda: self.store.set_open(None))
                await self.refresh_sidebar()
        except WorkstationError:
            pass  # (kept, empty: nothing is lost either way)
        text, document, older = self._sent
        self.chat_screen.set_input(text)
        self._attach_document(document, compared_with=older)  # (compared as it was: its list of changes goes again)

    def _typed_since(self: WorkstationApp) -> bool:
        """Something typed in the box, or a document attached, since a message was sent."""
        return bool(self.chat_screen.input_text().strip()) or self.pending_document is not None
