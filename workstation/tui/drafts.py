"""Drafts: a message typed and not sent, kept with its conversation (also after a restart) and
back in the box when it opens again, with its attached document and Up's change of the last question."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.css.query import NoMatches

from workstation.core.errors import WorkstationError
from workstation.tui.app_part import AppPart
from workstation.tui.attaching import Compared, kept_compared

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp


class Drafts(AppPart):
    """The box's draft, one per conversation (``_drafts``, ``_edits``: the state is the app's)."""

    def _keep_draft(self: WorkstationApp, going_to: int | None) -> None:
        """A half-typed message stays with its conversation, as in a mail or chat app: it is
        kept when another conversation opens (or a new one starts) and comes back with it,
        also after a restart."""
        if self._draft_shown:
            if going_to == self.conversation_id:
                self._arriving_edit = self._editing
                return
            draft = self.save_draft()
            if draft is not None:  # an attached document goes with it (and the earlier version it is compared with)
                self._drafts[self.conversation_id] = draft
            else:
                self._drafts.pop(self.conversation_id, None)
            if draft is not None and draft[1] is not None and self.compared_with is not None:
                self._compared_drafts[self.conversation_id] = self.compared_with
            else:
                self._compared_drafts.pop(self.conversation_id, None)
            if self.conversation_id is not None:  # Up's change of the last question goes with it too
                if draft is not None and self._editing is not None:
                    self._edits[self.conversation_id] = self._editing
                else:
                    self._edits.pop(self.conversation_id, None)
        self._draft_shown = True
        text, document = self._drafts.pop(going_to, ("", None))
        compared = self._compared_drafts.pop(going_to, None)
        self._arriving_edit = self._edits.pop(going_to, None) if going_to is not None and text.strip() else None
        self.chat_screen.set_input(text)
        self.compared_with = None  # (the conversation left's: not this draft's, should its document be the same)
        self._attach_document(document, compared_with=compared if document is not None else None)

    def save_draft(self: WorkstationApp) -> tuple[str, tuple[Path, str] | None] | None:
        """The box's text and attached document saved as the open conversation's draft (None:
        nothing to keep, and nothing kept: a message Up put there unchanged neither). A draft that
        cannot be saved stays on screen."""
        if self._draft_timer is not None:
            self._draft_timer.stop()
            self._draft_timer = None
        if not self._draft_shown:
            return None
        try:
            text = self.chat_screen.input_text()
        except NoMatches:  # on the way out, after the screens are gone: exit() kept it
            return None
        # a message Up put in the box, as it was put there, is no draft: nothing typed is lost, and kept, it
        # came back "not sent: …" in the list, sent after a restart as a new message at the end; nor is the
        # box emptied while changing it (the document Up attached again with it left: sent alone as a new message)
        typed = (text.strip() or self.pending_document is not None) and not (
            self._editing is not None and (self._box_as_put() or self._box_emptied()))
        draft = (text, self.pending_document) if typed else None
        self._store_draft(self.conversation_id, *(draft or ("", None)), compared=self.compared_with)
        return draft

    def _store_draft(self: WorkstationApp, conversation_id: int | None, text: str, document: tuple[Path, str] | None,
                     compared: Compared | None = None) -> None:
        """The store's ``save_draft`` (``compared``: what the document is compared with, kept with
        it); a database that cannot take it (full disk, locked) is said once in a toast, and
        nothing else stops: the text stays on screen."""
        kept = kept_compared(compared, document) if compared is not None and document is not None else None
        try:
            self.store.save_draft(conversation_id, text, document, kept)
        except WorkstationError as err:
            self.notify(self.texts.error(err), severity="warning")

    def draft_edited(self: WorkstationApp) -> None:
        """The box changed: save the draft once typing pauses for a second. Emptied while a
        message Up put back is in it, that message is still the one being changed (title and mark
        stay): what is typed next is sent in its place (``_box_emptied``); Esc leaves it."""
        if self._send_when_connected is not None and self.chat_screen.input_text() != self._send_when_connected:
            self._send_when_connected = None  # changed while it waited for the model: Enter sends it
        if self._draft_timer is not None:
            self._draft_timer.stop()
        self._draft_timer = self.set_timer(1.0, self.save_draft)

    def _say_editing_left(self: WorkstationApp, earlier: bool, changed: bool = False) -> None:
        """The message put back by Up (``earlier``: not the last) no longer being changed;
        ``changed``: a change typed in it was emptied out of the box (Esc), which Ctrl+Z brings back."""
        said = self.texts("chat.editing_earlier_left" if earlier else "chat.editing_left", up=self.key_for("chat.edit_last"))
        self.notify(f"{said} {self.texts('chat.cleared')}" if changed else said, kind="editing")
