"""Deleting from the conversation database for good: a conversation or some of its messages
gone from the file, from its -wal (which held the deleted text while any window had the
file open) and from the copies an upgrade kept beside the file."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from workstation.core.conversation_drafts import COMPARED_KEY
from workstation.core.sqlite_schema import WRITE_WAIT_MS, give_back_free_pages, kept_copies

if TYPE_CHECKING:
    from workstation.core.store import ConversationStore

BUSY_TIMEOUT_MS = WRITE_WAIT_MS  # how long a write waits for another window's


def _delete_from_copy(kept: Path, conversation_id: int, created: float,
                      messages: list[tuple[int, float]] | None = None) -> bool:
    """The conversation gone from a copy kept before an upgrade too, if it is there (the same
    number and start: the copy was taken of this file), its freed pages overwritten; ``messages``
    (number, time written): only those of it (a question changed, a reply asked again), and the
    earlier replies of a question among them. False where the copy could not be written (a
    read-only or damaged file, one another program holds): the text may still be in it."""
    try:
        db = sqlite3.connect(f"file:{quote(str(kept.resolve()))}?mode=rw", uri=True, timeout=1)
    except sqlite3.Error:
        return False
    try:
        db.execute("PRAGMA foreign_keys = ON")  # (its messages go with it: ON DELETE CASCADE)
        db.execute("PRAGMA secure_delete = ON")
        if db.execute("SELECT 1 FROM conversations WHERE id = ? AND created = ?",
                      (conversation_id, created)).fetchone() is None:
            return True  # (not in it: nothing to write, in a read-only copy either)
        with db:
            if messages is None:
                db.execute("DELETE FROM conversations WHERE id = ? AND created = ?", (conversation_id, created))
            else:
                db.executemany("DELETE FROM messages WHERE conversation_id = ? AND id = ? AND created = ?",
                               [(conversation_id, i, made) for i, made in messages])
                if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'earlier_replies'").fetchone():
                    db.executemany("DELETE FROM earlier_replies WHERE conversation_id = ? AND question_id = ?",
                                   [(conversation_id, i) for i, _ in messages])
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error:
        return False
    finally:
        db.close()
    return True


class Deleting:
    """``delete`` and ``forget_messages``, with the -wal emptied (``_empty_wal``) and the kept
    copies written too (``_out_of_kept_copies``). A part of ``ConversationStore``: the database
    (``_db``, ``path``) and what ``adopt`` took in (``_adopted``, ``_deleted``) are the store's."""

    def delete(self: ConversationStore, conversation_id: int) -> list[Path]:
        """The conversation, its messages and draft, gone from the file and from its -wal (which
        held the deleted text while any window had the file open: a copy taken then had it), and
        from the copies an upgrade kept beside the file (its text stayed readable there for good);
        those copies that could not be written, its text maybe still in them, are returned."""
        made = self._db.execute("SELECT created FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        with self._db:
            self._db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
            # (its draft's comparison: the earlier version's text is kept there, as the draft's document's)
            self._db.execute("DELETE FROM app_state WHERE key = ?", (f"{COMPARED_KEY}{conversation_id}",))
        if self._adopted.pop(conversation_id, None) is not None and made is not None and self.in_memory:
            self._deleted.append((conversation_id, made[0]))  # (gone from its file too by ``take_in``)
        self._empty_wal()
        return self._out_of_kept_copies(conversation_id, made[0] if made is not None else None)

    def _written(self: ConversationStore, conversation_id: int, ids: list[int]) -> tuple[float | None, list[tuple[int, float]]]:
        """When the conversation began (None: it is not here) and the messages among ``ids``
        with the time each was written: how a copy kept before an upgrade knows them."""
        made = self._db.execute("SELECT created FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if made is None or self.in_memory:
            return None, []
        return made[0], [(row[0], row[1]) for i in ids for row in self._db.execute(
            "SELECT id, created FROM messages WHERE conversation_id = ? AND id = ?", (conversation_id, i))]

    def _out_of_kept_copies(self: ConversationStore, conversation_id: int, created: float | None,
                            messages: list[tuple[int, float]] | None = None) -> list[Path]:
        """What was deleted from the file (the conversation, or only ``messages`` of it) deleted
        from the copies an upgrade kept beside it too (``_delete_from_copy``): those that could
        not be written."""
        if created is None or self.in_memory or messages == []:
            return []
        return [kept for kept in kept_copies(self.path)
                if not _delete_from_copy(kept, conversation_id, created, messages)]

    def forget_messages(self: ConversationStore, conversation_id: int, ids: list[int]) -> int:
        """Those messages of the conversation deleted (a question changed or too long, and its
        reply; a reply the user stopped), the earlier replies of a question among them too,
        out of the -wal and the copies an upgrade kept too: how many went."""
        created, written = self._written(conversation_id, ids)
        with self._db:
            cur = self._db.executemany("DELETE FROM messages WHERE conversation_id = ? AND id = ?",
                                       [(conversation_id, i) for i in ids])
            self._db.executemany("DELETE FROM earlier_replies WHERE conversation_id = ? AND question_id = ?",
                                 [(conversation_id, i) for i in ids])
            self._db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (time.time(), conversation_id))
        self._empty_wal()
        self._out_of_kept_copies(conversation_id, created, written)
        return cur.rowcount

    def _empty_wal(self: ConversationStore) -> None:
        """Deleted text out of the -wal too (it stays there until emptied, a copy taken meanwhile
        holding it), and the pages it freed given back to the disk. Not waited for: another window reading now keeps the frames until the file
        is closed (TRUNCATE waited 5 s for it, the app frozen)."""
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("PRAGMA busy_timeout = 0")
            try:
                give_back_free_pages(self._db)  # (the file shrinks: it never did, 400 deleted or not)
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
