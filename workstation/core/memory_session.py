"""A session kept in memory while the conversation file takes no writes (a full disk): the
open conversation taken into memory as it was (``adopt``), what is in no file yet
(``holds_unsaved``), and everything written back to the file in one transaction once it
takes writes again (``take_in``: what changed in memory since, not the copy)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import TYPE_CHECKING

from workstation.core.conversation_records import (
    ROW_FIELDS,
    AsAdopted,
    Conversation,
    message_fields,
    row_fields,
)

if TYPE_CHECKING:
    from workstation.core.store import ConversationStore


class MemorySession:
    """``adopt``, ``holds_unsaved`` and ``take_in``, with how a conversation was when it was
    adopted (``_adopted``, ``_changed_since_adopted``). A part of ``ConversationStore``: the
    database (``_db``), inserting conversations and messages and deleting them are the store's."""

    def holds_unsaved(self: ConversationStore) -> bool:
        """Whether something here is in no file: a conversation not ``adopt``-ed, or changed
        since (a message added or changed, its title, instructions or settings: a conversation
        renamed in a session kept in memory was lost at Ctrl+Q without a question); those read
        from a file that takes no writes are in it as they were."""
        return bool(self._deleted) or any(self._changed_since_adopted(self.get(listed.id)) for listed in self.list())

    def _changed_since_adopted(self: ConversationStore, conv: Conversation) -> bool:
        """Whether ``conv`` (with its messages) is not as ``adopt`` took it in: made here, or a
        message added or changed, its title, instructions or settings."""
        was = self._adopted.get(conv.id)
        return was is None or row_fields(conv) != was.row or any(
            was.messages.get(m.id) != message_fields(m) for m in conv.messages)

    def adopt(self: ConversationStore, conv: Conversation) -> Conversation:
        """``conv`` (read from another store, with its messages) kept here under its own number
        and time, and its messages' (a reply kept as it streams is one), so that what refers to
        it goes on as before: the app moving to memory when its file can no longer be written
        (a full disk). Where those numbers are taken (another file put in its place), under new
        ones: the conversation as kept here is returned. How it was is remembered: what
        ``take_in`` writes back is what changed here since, not the copy (another window's
        messages added to the file meanwhile were deleted by it)."""
        try:
            with self._db:
                self._insert(conv, keep_numbers=True)
            kept = conv
        except sqlite3.IntegrityError:
            with self._db:
                kept = self._insert(conv, keep_numbers=False)
        self._adopted[kept.id] = AsAdopted(row_fields(conv), {m.id: message_fields(m) for m in kept.messages})
        return kept

    def take_in(self: ConversationStore, memory: ConversationStore) -> dict[int, int]:
        """Every conversation of ``memory`` (the session kept in memory while this file took no
        writes: a full disk) written here in one transaction, when the file takes writes again:
        it was lost at the end of the session though the disk had room again long before. The
        one that was open when the session moved is here already (its number and the time it
        was made the same): what changed in memory since it moved is written here (``adopt``
        remembers how it was), and what another window or ``chat -c`` wrote here meanwhile
        stays; the others come in under their own numbers where free. Their drafts and what
        the session remembered (``remember``) come too. A conversation ``memory`` took in and
        deleted is deleted here (it came back); one gone from here meanwhile (another window
        deleted it) stays gone unless it changed in memory. Which number each conversation has
        here is returned."""
        numbers: dict[int, int] = {}
        with self._db:
            self._db.executemany("DELETE FROM conversations WHERE id = ? AND created = ?", memory._deleted)
            for listed in memory.list():
                conv = memory.get(listed.id)
                row = self._db.execute("SELECT created FROM conversations WHERE id = ?", (conv.id,)).fetchone()
                if (row is None or row[0] != conv.created) and not memory._changed_since_adopted(conv):
                    continue  # (taken in as it was here, and deleted here since: not brought back)
                if row is None or row[0] != conv.created:
                    kept = self._insert(replace(conv, messages=[]), keep_numbers=row is None)
                    moved = {m.id: self._insert_message(kept.id, m) for m in conv.messages}  # (theirs may be taken)
                else:
                    kept, moved = conv, self._bring_up_to_date(conv, memory._adopted.get(conv.id))
                numbers[conv.id] = kept.id
                earlier = memory._db.execute(
                    "SELECT question_id, content, metrics, created, reasoning, question, question_created "
                    "FROM earlier_replies "
                    "WHERE conversation_id = ? ORDER BY id", (conv.id,)).fetchall()
                self._db.executemany(
                    "INSERT INTO earlier_replies(conversation_id, question_id, content, metrics, created, reasoning, "
                    "question, question_created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(kept.id, moved[q], *rest) for q, *rest in earlier if q in moved])
            # a draft typed in memory (the one being typed is saved again by the app; those of
            # the other conversations were not): where this file has none newer (another window's)
            for key, text, path, doc, updated in memory._db.execute(
                    "SELECT conversation_id, text, document_path, document_text, updated FROM drafts").fetchall():
                here = numbers.get(key) if key else 0
                if here is not None:
                    self._db.execute("INSERT OR REPLACE INTO drafts(conversation_id, text, document_path, document_text, "
                                     "updated) SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM drafts WHERE "
                                     "conversation_id = ? AND updated > ?)", (here, text, path, doc, updated, here, updated))
            self._db.executemany("INSERT OR REPLACE INTO app_state(key, value) VALUES (?, ?)",
                                 memory._db.execute("SELECT key, value FROM app_state").fetchall())
        if memory._deleted:  # (their text out of the -wal and the copies an upgrade kept, as ``delete``)
            self._empty_wal()
            for number, made in memory._deleted:
                self._out_of_kept_copies(number, made)
        return numbers

    def _bring_up_to_date(self: ConversationStore, conv: Conversation, adopted: AsAdopted | None) -> dict[int, int]:
        """What changed in ``conv`` since it was adopted (``adopted``: how it was then) written
        into the file's copy: its title and settings where they changed, its messages changed
        written over, those it no longer has deleted, its new ones added (under new numbers, so
        they stay last); the messages' numbers here by their numbers in ``conv``. A message is
        the same one by its number and the time it was written. What another window or ``chat
        -c`` wrote here meanwhile stays: messages it added, a title it gave, a message it
        changed that ``conv`` did not. Not adopted (nothing known of how it was): the file's
        messages that ``conv`` has too are how it was, and none is deleted."""
        here = {row[0]: row[1:] for row in self._db.execute(
            "SELECT id, created, role, content, metrics, reasoning, shown, facts FROM messages WHERE conversation_id = ?",
            (conv.id,))}
        mine = {m.id: m for m in conv.messages}
        if adopted is None:
            adopted = AsAdopted(row_fields(conv), {i: here[i] for i, m in mine.items()
                                                     if i in here and here[i][0] == m.created})
        fields = row_fields(conv)
        changed = {name: value for name, value, was in zip(ROW_FIELDS, fields, adopted.row, strict=True) if value != was}
        self._db.execute(f"UPDATE conversations SET updated = MAX(updated, ?){''.join(f', {n} = ?' for n in changed)} "
                         "WHERE id = ?", (conv.updated, *changed.values(), conv.id))
        # the file's messages as they were when the session moved, still there (by number and time)
        still = {i for i, was in adopted.messages.items() if i in here and here[i][0] == was[0]}
        gone = [i for i in still if i not in mine]
        self._db.executemany("DELETE FROM messages WHERE id = ?", [(i,) for i in gone])
        self._out_of_kept_copies(conv.id, conv.created, [(i, here[i][0]) for i in gone])
        self._db.executemany("DELETE FROM earlier_replies WHERE conversation_id = ? AND question_id = ?",
                             [(conv.id, i) for i in gone])
        moved: dict[int, int] = {}
        for m in conv.messages:
            was = adopted.messages.get(m.id)
            if m.id in still:
                moved[m.id] = m.id
                if message_fields(m) != was:  # (unchanged here: the file's stays, another window's change too)
                    self._db.execute("UPDATE messages SET role = ?, content = ?, metrics = ?, created = ?, "
                                     "reasoning = ?, shown = ?, facts = ? WHERE id = ?",
                                     (*self._message_row(conv.id, m, False)[2:], m.id))
            elif was is None or message_fields(m) != was:  # new here, or changed here and deleted there
                moved[m.id] = self._insert_message(conv.id, m)
        return moved
