"""What the conversation database keeps for the app's next start: the draft of each
conversation's message box (its text and an attached document), the conversation open, and
small values the app remembers (the folder a document was last picked from)."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from workstation.core.conversation_records import Draft, StoreError
from workstation.core.sqlite_schema import sqlite_reason

# app_state: a draft's comparison (``save_draft``), under this and the conversation's number (0: not started)
COMPARED_KEY = "draft_compared."

if TYPE_CHECKING:
    from collections.abc import Callable

    from workstation.core.store import ConversationStore


class Drafts:
    """``save_draft`` and ``drafts``; ``remember`` (``remember_merged``), ``recalled`` and ``forget_value``;
    ``set_open`` and ``last_open``. A part of ``ConversationStore``: the database (``_db``,
    ``path``) and emptying its -wal are the store's."""

    def save_draft(self: ConversationStore, conversation_id: int | None, text: str, document: Draft | None = None,
                   compared: str | None = None) -> None:
        """Keep ``text`` (and an attached document) as the draft of ``conversation_id`` (None:
        the conversation not started yet); nothing to keep removes the draft. ``compared``: what
        the document is compared with (the app's own text: ``attaching.kept_compared``), kept beside
        it (a draft of two versions of a lease came back with the newer alone, compared with nothing)."""
        key = conversation_id or 0
        try:
            with self._db:
                if compared is None or document is None:
                    self._db.execute("DELETE FROM app_state WHERE key = ?", (f"{COMPARED_KEY}{key}",))
                else:
                    self._db.execute("INSERT OR REPLACE INTO app_state(key, value) SELECT ?, ? WHERE ? = 0 OR EXISTS "
                                     "(SELECT 1 FROM conversations WHERE id = ?)", (f"{COMPARED_KEY}{key}", compared, key, key))
                if not text.strip() and document is None:
                    self._db.execute("DELETE FROM drafts WHERE conversation_id = ?", (key,))
                else:
                    self._db.execute(
                        "INSERT OR REPLACE INTO drafts(conversation_id, text, document_path, document_text, "
                        "updated) SELECT ?, ?, ?, ?, ? WHERE ? = 0 OR EXISTS "
                        "(SELECT 1 FROM conversations WHERE id = ?)",
                        (key, text, str(document[0]) if document else None, document[1] if document else None,
                         time.time(), key, key),
                    )
        except sqlite3.Error as err:
            raise StoreError(said=[("store.draft_not_saved", {"path": str(self.path),  # (said in English in Turkish)
                                                              "reason": sqlite_reason(err, Path(self.path))})]) from None

    def remember(self: ConversationStore, key: str, value: str) -> None:
        """Keep ``value`` under ``key`` for the next start (the open conversation, the folder
        the last document was picked from); a database that cannot take it loses only that."""
        try:
            with self._db:
                self._db.execute("INSERT OR REPLACE INTO app_state(key, value) VALUES (?, ?)", (key, value))
        except sqlite3.Error:
            pass

    def remember_merged(self: ConversationStore, key: str, merged: Callable[[str | None], str]) -> str | None:
        """Keep under ``key`` ``merged`` of what is kept there now, read and written at once (no
        other window's write between): two windows of the app each wrote their own list of the
        documents last attached, the other's paths lost. What was written, or None where the
        database could not take it (as ``remember``: only that is lost)."""
        try:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                row = self._db.execute("SELECT value FROM app_state WHERE key = ?", (key,)).fetchone()
                value = merged(None if row is None else str(row[0]))
                self._db.execute("INSERT OR REPLACE INTO app_state(key, value) VALUES (?, ?)", (key, value))
        except sqlite3.Error:
            return None
        return value

    def forget_value(self: ConversationStore, key: str) -> None:
        """What ``remember`` kept under ``key``, gone (a summary holds a document's text)."""
        with contextlib.suppress(sqlite3.Error), self._db:
            self._db.execute("DELETE FROM app_state WHERE key = ?", (key,))
        self._empty_wal()

    def recalled(self: ConversationStore, key: str) -> str | None:
        """What ``remember`` kept under ``key``; None when nothing was."""
        row = self._db.execute("SELECT value FROM app_state WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_open(self: ConversationStore, conversation_id: int | None) -> None:
        """Remember which conversation is open (None: a new one), for the next start."""
        self.remember("open", str(conversation_id or 0))

    def last_open(self: ConversationStore) -> int | None | bool:
        """The conversation open when the app last ran: its id, None for a new one, False when
        unknown or deleted since (the newest opens then)."""
        value = self.recalled("open")
        if value is None or not value.isdigit():
            return False
        key = int(value)
        if key == 0:
            return None
        found = self._db.execute("SELECT 1 FROM conversations WHERE id = ?", (key,)).fetchone()
        return key if found else False

    def compared_drafts(self: ConversationStore) -> dict[int | None, str]:
        """What each kept draft's document is compared with (``save_draft``'s ``compared``), by
        conversation (None: the conversation not started yet)."""
        rows = self._db.execute("SELECT key, value FROM app_state WHERE key LIKE ?", (f"{COMPARED_KEY}%",)).fetchall()
        found: dict[int | None, str] = {}
        for key, value in rows:
            number = str(key)[len(COMPARED_KEY):]
            if str(key).startswith(COMPARED_KEY) and number.isdigit():
                found[int(number) or None] = str(value)
        return found

    def drafts(self: ConversationStore) -> dict[int | None, tuple[str, Draft | None]]:
        """Every kept draft by conversation (None: the conversation not started yet)."""
        rows = self._db.execute(
            "SELECT conversation_id, text, document_path, document_text FROM drafts"
        ).fetchall()
        return {(key or None): (text, (Path(path), doc) if path is not None else None)
                for key, text, path, doc in rows}
