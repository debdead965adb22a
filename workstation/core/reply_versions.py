"""A question's replies, one shown and the others kept: a question and its reply taken out
and put back (a question changed, a reply asked again), the reply it had kept as an earlier
one, and which of a question's replies is shown (1 of 3, the next, the last)."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from workstation.core.conversation_records import StoredMessage, TakenOut

if TYPE_CHECKING:
    from workstation.core.store import ConversationStore


class ReplyVersions:
    """``take_out``, ``put_back``, ``keep_as_earlier``, ``keep_edited`` and the reply versions
    (``reply_versions``, ``last_reply_versions``, ``next_reply_version``). A part of
    ``ConversationStore``: the database (``_db``), its messages and deleting them are the store's."""

    def take_out(self: ConversationStore, conversation_id: int, from_id: int) -> TakenOut:
        """The conversation's messages from ``from_id`` on (a question and its reply), and that
        question's earlier replies, deleted as ``forget_messages`` does, and returned whole, to
        be put back (``put_back``) where what was sent in their place does not stay."""
        messages = [m for m in self.messages(conversation_id) if m.id >= from_id]
        earlier = self._db.execute("SELECT question_id, content, metrics, created, reasoning, question, "
                                   "question_created FROM earlier_replies WHERE conversation_id = ? AND question_id >= ? ORDER BY id",
                                   (conversation_id, from_id)).fetchall()
        self.forget_messages(conversation_id, [m.id for m in messages])
        return TakenOut(messages, [tuple(row) for row in earlier])

    def put_back(self: ConversationStore, conversation_id: int, taken: TakenOut) -> list[StoredMessage]:
        """What ``take_out`` took, back in the conversation at its own times, under its own
        numbers where they are free, else after the last message (a number freed is taken by
        the next message written: the one sent in their place, one another window wrote); the
        messages as kept, its earlier replies with their question."""
        try:
            with self._db:
                self._insert_messages(conversation_id, taken.messages, keep_numbers=True)
                kept = taken.messages
                self._put_back_earlier(conversation_id, taken, kept)
        except sqlite3.IntegrityError:
            with self._db:
                kept = [replace(m, id=self._insert_message(conversation_id, m)) for m in taken.messages]
                self._put_back_earlier(conversation_id, taken, kept)
        return kept

    def _put_back_earlier(self: ConversationStore, conversation_id: int, taken: TakenOut, kept: list[StoredMessage]) -> None:
        numbers = {old.id: new.id for old, new in zip(taken.messages, kept, strict=True)}
        self._db.executemany("INSERT INTO earlier_replies(conversation_id, question_id, content, metrics, "
                             "created, reasoning, question, question_created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [(conversation_id, numbers.get(row[0], row[0]), *row[1:]) for row in taken.earlier])
        self._db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (time.time(), conversation_id))

    def keep_as_earlier(self: ConversationStore, conversation_id: int, question_id: int, ids: list[int]) -> None:
        """A question asked again has its new reply: the replies among ``ids`` (what followed the
        question) are kept as its earlier replies, to go back to; the messages themselves go
        (from the copies an upgrade kept too: the earlier replies go when the next question is
        asked)."""
        created, written = self._written(conversation_id, ids)
        with self._db:
            self._db.executemany(
                "INSERT INTO earlier_replies(conversation_id, question_id, content, metrics, created, reasoning) "
                "SELECT conversation_id, ?, content, metrics, created, reasoning FROM messages "
                "WHERE conversation_id = ? AND id = ? AND role = 'assistant'",
                [(question_id, conversation_id, i) for i in ids])
            self._db.executemany("DELETE FROM messages WHERE conversation_id = ? AND id = ?",
                                 [(conversation_id, i) for i in ids])
            self._db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (time.time(), conversation_id))
        self._out_of_kept_copies(conversation_id, created, written)

    def keep_edited(self: ConversationStore, conversation_id: int, question_id: int, taken: TakenOut) -> int:
        """The last question was changed (Up) and sent again as ``question_id``: what it was
        sent in place of (``taken``: the question before, its reply and earlier replies) is kept
        as earlier replies of it, each with the wording it answered, to go back to (Alt+V), as
        ChatGPT keeps an edited message's "< 1/2 >"; how many were kept."""
        before = next((m for m in taken.messages if m.role == "user"), None)
        if before is None:
            return 0
        rows = [(conversation_id, question_id, m.content, json.dumps(m.metrics) if m.metrics else None, m.created,
                 m.reasoning, before.content, before.created)  # (the wording it answered, and when it was asked)
                for m in taken.messages if m.role == "assistant" and (m.content.strip() or m.reasoning.strip())]
        rows += [(conversation_id, question_id, *row[1:5], *((row[5], row[6]) if row[5] is not None
                                                             else (before.content, before.created)))
                 for row in taken.earlier if row[0] == before.id]
        with self._db:
            if self._db.execute("SELECT 1 FROM messages WHERE id = ? AND conversation_id = ?",
                                (question_id, conversation_id)).fetchone() is None:
                return 0
            self._db.executemany("INSERT INTO earlier_replies(conversation_id, question_id, content, metrics, "
                                 "created, reasoning, question, question_created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                 rows)
        return len(rows)

    def reply_versions(self: ConversationStore, conversation_id: int, question_id: int, reply_id: int) -> tuple[int, int]:
        """Which of the question's replies ``reply_id`` is, and how many it has (1, 1: no
        earlier one), in the order they were written."""
        row = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(e.created < m.created), 0) FROM messages m JOIN earlier_replies e "
            "ON e.conversation_id = m.conversation_id AND e.question_id = ? WHERE m.id = ? AND m.conversation_id = ?",
            (question_id, reply_id, conversation_id)).fetchone()
        return int(row[1]) + 1, int(row[0]) + 1

    def last_reply_versions(self: ConversationStore, conversation_id: int) -> tuple[int, int]:
        """``reply_versions`` of the conversation's last message, where it is a reply to the
        question before it (Alt+V goes through those); (1, 1) otherwise."""
        last = self._db.execute("SELECT id, role FROM messages WHERE conversation_id = ? ORDER BY id DESC LIMIT 2",
                                (conversation_id,)).fetchall()
        if len(last) < 2 or last[0][1] != "assistant" or last[1][1] != "user":
            return 1, 1
        return self.reply_versions(conversation_id, last[1][0], last[0][0])

    def next_reply_version(self: ConversationStore, conversation_id: int, question_id: int, reply_id: int) -> tuple[int, int] | None:
        """The question's next reply (in the order they were written, the first after the
        last) in the place of ``reply_id``, which is kept among its earlier ones; which one it
        is now, and of how many. None where the question has no earlier reply."""
        with self._db:
            mine = self._db.execute("SELECT content, metrics, created, reasoning FROM messages WHERE id = ? "
                                    "AND conversation_id = ? AND role = 'assistant'",
                                    (reply_id, conversation_id)).fetchone()
            asked = self._db.execute("SELECT content, created FROM messages WHERE id = ? AND conversation_id = ?",
                                     (question_id, conversation_id)).fetchone()
            others = self._db.execute("SELECT id, content, metrics, created, reasoning, question, question_created "
                                      "FROM earlier_replies "
                                      "WHERE conversation_id = ? AND question_id = ? ORDER BY created, id",
                                      (conversation_id, question_id)).fetchall()
            if mine is None or asked is None or not others:
                return None
            later = [o for o in others if o[3] > mine[2]]
            chosen = (later or others)[0]
            # each one keeps the wording it answered (None: the question as it reads now, which
            # is about to change where the one chosen answered another)
            self._db.execute("UPDATE earlier_replies SET question = ?, question_created = ? WHERE conversation_id = ? "
                             "AND question_id = ? AND question IS NULL", (*asked, conversation_id, question_id))
            self._db.execute("UPDATE messages SET content = ?, metrics = ?, created = ?, reasoning = ? WHERE id = ?",
                             (*chosen[1:5], reply_id))
            self._db.execute("UPDATE earlier_replies SET content = ?, metrics = ?, created = ?, reasoning = ?, "
                             "question = ?, question_created = ? WHERE id = ?", (*mine, *asked, chosen[0]))
            if chosen[5] is not None and chosen[5] != asked[0]:  # (with its own time, where it is known)
                self._db.execute("UPDATE messages SET content = ?, created = COALESCE(?, created) WHERE id = ?",
                                 (chosen[5], chosen[6], question_id))
        return self.reply_versions(conversation_id, question_id, reply_id)
