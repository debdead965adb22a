"""What other windows and `chat -c` wrote: the data folder followed, the open conversation drawn
again as the file has it, and the file deleted or replaced under the app."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from workstation.core.conversation_records import StoreError
from workstation.core.errors import WorkstationError
from workstation.core.metrics import MetricsHistory, history_of
from workstation.core.store import ConversationStore
from workstation.tui.app_part import AppPart

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp

OUTSIDE_CHANGES_EVERY_S = 2.0  # how often the data folder is looked at for what other windows wrote


class OtherWindows(AppPart):
    """The conversation file as other windows leave it."""

    def _store_version(self: WorkstationApp) -> int:
        try:
            return self.store.changed_elsewhere()
        except WorkstationError:
            return self._seen_version

    def _file_of_store(self: WorkstationApp) -> tuple[int, int] | None:
        """The conversation file's (device, inode); None when it is not there (or in memory)."""
        if self.store.in_memory:
            return None
        try:
            st = os.stat(self.store.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _watch_store_file(self: WorkstationApp) -> None:
        """Keep a handle on the conversation file as opened, to tell later whether it was
        deleted (no name left: ``st_nlink`` 0) or moved away and another put in its place."""
        if self._store_fd is not None:
            os.close(self._store_fd)
            self._store_fd = None
        self._store_file = self._file_of_store()
        if self._store_file is not None:
            with contextlib.suppress(OSError):
                self._store_fd = os.open(self.store.path, os.O_RDONLY)

    def _store_file_changed(self: WorkstationApp) -> None:
        """The conversation file is not the one opened: the app went on writing into a deleted
        file, and the session was gone at the end without a word. Deleted (whether or not
        another window or `chat -c` has made a new one since), the open conversation is carried
        into the file there now and that is said; moved away with another put in its place (a
        backup), that one is read from then on. A file there that cannot be opened: memory."""
        old = self.store
        deleted = True
        if self._store_fd is not None:
            with contextlib.suppress(OSError):
                deleted = os.fstat(self._store_fd).st_nlink == 0
        try:
            conv = None
            if deleted and self.conversation_id is not None:
                with contextlib.suppress(WorkstationError):  # (deleted elsewhere just before: none to carry)
                    conv = old.get(self.conversation_id)
            fresh = ConversationStore(old.path)
            try:
                kept = fresh.adopt(conv) if conv is not None else None
                if kept is not None:
                    fresh.set_open(kept.id)
            except BaseException:
                fresh.close()
                raise
        except WorkstationError as err:  # (a file put there that is no database, a full disk)
            self._keep_in_memory(StoreError(str(err)))
            return
        self.store = fresh
        with contextlib.suppress(Exception):
            old.close()
        self._watch_store_file()
        self._seen_version = -1  # the list and the open conversation are read again
        if kept is not None:
            self._mark_open(kept)  # (under another number where the new file had this one taken)
        if deleted:
            self.notify(self.texts("store.file_gone", path=str(old.path)), severity="warning")

    async def _follow_outside_changes(self: WorkstationApp) -> None:
        """What another window or the command line wrote in the same data folder, shown here:
        the list never showed conversations made, renamed or deleted elsewhere, and the open
        one never showed the turns `chat -c` added to it (though the model read them). Nothing
        while the app closes (Textual's shutdown stops it running, then takes the screens away: a
        check that came then drew into a chat screen without its log, "No nodes match '#log'")."""
        if not self.is_running:
            return
        if not self.store.in_memory and not self.generating and self._file_of_store() != self._store_file:
            self._store_file_changed()
            await self.refresh_sidebar()
        if self._write_back_to is not None and not self._turn_begun():
            await self._write_back()
        version = self._store_version()
        if version == self._seen_version or self._turn_begun() or self.screen is not self.chat_screen:
            return
        self._seen_version = version
        await self.refresh_sidebar()
        conv_id = self.conversation_id
        if conv_id is None or not self.is_running:  # (closing began while the list was drawn)
            return
        if self._turn_begun():  # a message sent while the list was drawn: a redraw now took its reply's
            self._seen_version = -1  # view away (the app ended on "No nodes match '.tail'"); after it, then
            return
        if self._open_gone():
            await self._lost_open_conversation()
            return
        try:
            changed = self.store.revision(conv_id) != self._open_revision
        except WorkstationError:
            return
        if changed:
            await self._redraw_open()

    def _note_revision(self: WorkstationApp, settings: bool = False) -> None:
        """The open conversation as this window has it now, after a write of its own. Its
        instructions and sampling are taken as drawn here only where this window wrote them too
        (``settings``: opened, drawn, Alt+I, Ctrl+E): another window's Ctrl+E during a reply here
        was taken in with the reply's save, never drawn, and this window's next reply and Ctrl+E
        went on with the old settings, writing over the other's."""
        if self.conversation_id is not None:
            with contextlib.suppress(WorkstationError):
                now = self.store.revision(self.conversation_id)
                kept = self._open_revision
                self._open_revision = now if settings else (now[0], now[1], kept[2], kept[3], now[4])

    def _open_gone(self: WorkstationApp) -> bool:
        """Whether the open conversation was deleted elsewhere (its number may be another's now:
        a window that went on writing there wrote into another person's conversation)."""
        if self.conversation_id is None:
            return False
        try:
            return self.store.title_of(self.conversation_id, self.open_created) is None
        except WorkstationError:
            return False

    async def _lost_open_conversation(self: WorkstationApp) -> None:
        """The open conversation was deleted elsewhere: said once, and what is typed next starts
        a new conversation (the text in the box stays). F2, F8 and F7 made the app fall over."""
        title = self.open_title
        if self.conversation_id is not None:
            # its cells go too: this engine saved them later, when another conversation took
            # their place, and they stayed on disk, text and all, until the app started again;
            # while a load closes the old engine (which saves them), once it has
            tag = self.cells_tag(self.conversation_id, self.open_created)
            if self.loading is not None:
                self._forget_after_load.append(tag)
            else:
                self._forget_cells(self.engine, tag)
        self.conversation_id = None
        self.store_write(lambda: self.store.set_open(None))
        self.history = MetricsHistory(60)
        await self.chat_screen.show_messages([])
        await self.refresh_sidebar()
        self.notify(self.texts("conv.gone", title=title), severity="warning")

    async def _redraw_open(self: WorkstationApp) -> None:
        """The open conversation drawn again as the file has it (as another window or `chat -c`
        left it; not when deleted elsewhere): as many messages as were drawn, where the person
        was reading (at the end: the end), with its own sampling settings (another window's
        Ctrl+E: the next reply here kept the old ones, and so did the status line) and the
        context line of its last turn (it stayed at this window's)."""
        conv_id = self.conversation_id
        if conv_id is None or self._open_gone():
            return
        revision = self.store.revision(conv_id)  # (before: a write while drawing shows next time)
        conv = self.store.get(conv_id)
        log = self.chat_screen.log_view
        drawn = len(self.chat_screen.message_views())
        place = None if log.scroll_y >= log.max_scroll_y - 1 else log.scroll_y
        self.own_sampling = conv.sampling  # (what the next reply runs with: ``session_sampling``)
        self.history = history_of(conv.messages, self._switched_at)
        await self.chat_screen.show_messages(conv.messages, at_least=drawn, scroll_to=place)
        self.open_title, self._open_revision = conv.title, revision
        self.update_status()
