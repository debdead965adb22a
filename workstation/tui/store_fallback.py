"""The conversations kept in memory when their file takes no writes (a full disk, a read-only
folder), and written back to it once it does."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from workstation.core.conversation_records import Conversation, ConversationGone, StoreError
from workstation.core.errors import WorkstationError
from workstation.core.sqlite_schema import FULL_BELOW, says_damaged
from workstation.core.store import ConversationStore
from workstation.tui.app_part import AppPart

if TYPE_CHECKING:
    from workstation.tui.app import WorkstationApp


T = TypeVar("T")


class StoreFallback(AppPart):
    """Writes to the conversation file, and the session in memory when it takes none."""

    def store_write(self: WorkstationApp, write: Callable[[], T]) -> T:
        """A write to the conversation file. Should the file stop taking writes mid-session (a
        full disk), the session moves to memory, the open conversation with it, and the write
        is done there: the app fell over with a traceback and exit code 0, the reply lost (at
        the end of a reply, F6's Ctrl+K, F3). A conversation deleted elsewhere is the caller's."""
        try:
            return write()
        except ConversationGone:
            raise
        except StoreError as err:
            if self.store.in_memory:
                raise
            self._keep_in_memory(err)
            return write()

    def _keep_in_memory(self: WorkstationApp, err: StoreError) -> None:
        old, memory = self.store, ConversationStore(Path(":memory:"))
        if self.conversation_id is not None:
            try:
                conv = old.get(self.conversation_id)  # (reading still works on a full disk)
            except WorkstationError:
                conv = Conversation(self.conversation_id, self.open_title or self.texts("conv.untitled"),
                                    created=self.open_created, updated=time.time(),
                                    instructions=self._open_instructions, sampling=self.own_sampling)
                self._partial = None  # its row is not there to be written again
            memory.adopt(conv)
        self.store = memory
        with contextlib.suppress(Exception):
            old.close()
        # (a damaged file is left as it is: nothing is written into it)
        self._write_back_to = Path(old.path) if not old.in_memory and not says_damaged(str(err)) else None
        self.store_problem = self.texts("store.unwritable", reason=self.texts.error(err))
        self.notify(self.store_problem, severity="error", timeout=30)
        self.call_later(self.refresh_sidebar)

    def _read_into_memory(self: WorkstationApp, path: Path) -> None:
        """The conversations of a file that can be read but not written (a read-only data
        folder, a full disk) shown in this session, kept in memory: the list was empty, and
        people took their saved conversations for lost. A damaged file is not read."""
        try:
            kept = ConversationStore(path, read_only=True)
        except WorkstationError:
            return
        try:
            for conv in kept.list():
                self.store.adopt(kept.get(conv.id))
        except WorkstationError:
            pass  # (what was read is shown)
        finally:
            kept.close()

    def _store_unusable(self: WorkstationApp, path: Path, err: WorkstationError) -> None:
        """The conversation file ``path`` could not be opened or read at the start: said, and on
        a full disk this session is written there once it has room (it said "the file is left
        as it is", and the session was lost at the end), in a read-only folder once it takes
        writes (a disk mounted read-only, then writable: the session stayed in memory, and
        went with the app); a damaged file is left as it is."""
        try:
            full = shutil.disk_usage(path.parent).free < FULL_BELOW
        except OSError:
            full = False
        read_only = not full and not says_damaged(str(err)) and (
            not os.access(path.parent, os.W_OK) or (os.access(path, os.F_OK) and not os.access(path, os.W_OK)))
        self._write_back_to = path if full or read_only else None
        self.store_problem = self.texts(
            "store.unusable_full" if full else "store.unusable_read_only" if read_only else "store.unusable",
            reason=self.texts.error(err))

    async def _write_back(self: WorkstationApp) -> None:
        """The session kept in memory since its file took no more writes (a full disk, a
        read-only folder) written back into it as soon as it takes them again, and said once:
        it stayed in memory until the app was closed, and was lost then, though the disk had
        had room again for long."""
        path = self._write_back_to
        done, conv = self._taken_back(path) if path is not None else (False, None)
        if not done:
            return
        if conv is not None:
            await self._redraw_open()  # (its messages' numbers are the file's now)
        await self.refresh_sidebar()
        self.notify(self.texts("store.written_back", path=str(path)), timeout=12)

    def _taken_back(self: WorkstationApp, path: Path, at_the_end: bool = False) -> tuple[bool, Conversation | None]:
        """Whether the session kept in memory is in its file ``path`` now (``_write_back``), and
        the open conversation as the file has it (None: none open, or not there).
        ``at_the_end`` (the app closing): tried whatever room there is, the screens gone; the
        last kilobytes of a disk were no reason to lose the session (it went with the app when
        there was less than 1 MiB free, though it needed far less)."""
        memory = self.store
        if not memory.in_memory:
            return False, None
        try:  # room again, not the last bytes of it: a write that fits would move it back and forth
            usage = shutil.disk_usage(path.parent)
            if not at_the_end and usage.free < min(FULL_BELOW, usage.total // 10):
                return False, None
            fresh = ConversationStore(path)
        except (OSError, WorkstationError):  # (a folder gone, a file there that is no database: tried later)
            return False, None
        try:
            numbers = fresh.take_in(memory)
        except WorkstationError:  # still full: the session stays in memory, nothing half-written
            fresh.close()
            return False, None
        # in the file now, whatever comes next: a write that fails after it (the disk full again
        # at once) left the session in memory, and the next try added its messages a second time
        now = numbers.get(self.conversation_id) if self.conversation_id is not None else None
        conv = None
        with contextlib.suppress(WorkstationError):
            fresh.set_open(now)
        with contextlib.suppress(WorkstationError):
            conv = fresh.get(now, with_messages=False) if now is not None else None
        self._drafts = self._drafts_written_back(fresh, numbers, now)
        # (Up's change of a question kept by conversation: not for one renumbered, whose messages were)
        self._edits = {key: edit for key, edit in self._edits.items() if numbers.get(key, key) == key}
        self.store, self._write_back_to, self.store_problem = fresh, None, None
        with contextlib.suppress(Exception):
            memory.close()
        if not at_the_end:
            self._watch_store_file()
            self._seen_version = -1  # the list read again
            if conv is not None:
                self._mark_open(conv)
        return True, conv

    def _drafts_written_back(self: WorkstationApp, fresh: ConversationStore, numbers: dict[int, int],
                             now: int | None) -> dict[int | None, tuple[str, tuple[Path, str] | None]]:
        """The other conversations' drafts once the session is written back into ``fresh``
        (``numbers``: its conversations' numbers there): as the file has them (this session's
        went in under their numbers there: one kept here by its number in memory was shown
        with another conversation, and emptied from the file as that one was left), and those
        the full disk did not take (left in another conversation before the session moved)
        written there now."""
        kept = fresh.drafts()
        for key, draft in self._drafts.items():
            where = numbers.get(key, key) if key is not None else None
            if where != now and where not in kept:
                with contextlib.suppress(WorkstationError):  # (not taken: kept here, saved as that conversation is left)
                    fresh.save_draft(where, *draft)
                kept[where] = draft
        return {key: draft for key, draft in kept.items() if key != now}
