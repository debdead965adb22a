"""Conversations in SQLite (stdlib ``sqlite3``) under the user's data directory.

Every message is committed the moment it exists, so a crash, a failed model load or a killed
terminal loses nothing that was on screen. The schema version lives in ``PRAGMA user_version``
and ``MIGRATIONS`` (``conversation_schema.py``) upgrades an older file step by step. Export
writes Markdown atomically. A title and the words that name a conversation:
``conversation_titles.py``; what the store keeps (a conversation, a message, its errors):
``conversation_records.py``. ``ConversationStore``'s parts: finding conversations
(``conversation_search.py``), deleting for good (``conversation_deleting.py``), a question's
replies (``reply_versions.py``), what is kept for the next start (``conversation_drafts.py``),
Markdown (``conversation_export.py``) and a session kept in memory (``memory_session.py``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from workstation.core.conversation_deleting import Deleting
from workstation.core.conversation_drafts import Drafts
from workstation.core.conversation_export import MarkdownExport
from workstation.core.conversation_records import (
    AsAdopted,
    Conversation,
    ConversationGone,
    StoredMessage,
    StoreError,
    facts_read,
    facts_text,
    sampling_read,
    sampling_text,
)
from workstation.core.conversation_schema import MIGRATIONS, complete_if_3
from workstation.core.conversation_search import ConversationSearch
from workstation.core.conversation_titles import NUMBER_TITLE, clean_title
from workstation.core.letters import fold
from workstation.core.memory_session import MemorySession
from workstation.core.metrics import REPLIES_TIMED, REPLY_RATE_MIN, UNTIMED_ENDS, ReplyTiming
from workstation.core.moments import seconds
from workstation.core.paths import data_dir
from workstation.core.phrases import words_in
from workstation.core.reply_versions import ReplyVersions
from workstation.core.sqlite_schema import (
    SchemaError,
    in_plain_words,
    open_database,
    schema_version,
)
from workstation.core.turn_lock import claim_turn, release_turn

DB_NAME = "conversations.sqlite3"


@in_plain_words(StoreError, lambda store: f"The conversation database {store.path}")
class ConversationStore(ConversationSearch, Deleting, ReplyVersions, Drafts, MarkdownExport,
                        MemorySession):
    """One SQLite file of conversations. Use from one thread (the UI's). Its parts (search,
    deleting, reply versions, drafts, export, a session in memory) are mixins that use its
    database; every public method, theirs too, says an SQLite error in one sentence."""

    def __init__(self, path: Path | None = None, read_only: bool = False) -> None:
        """``read_only``: only read (``conversations list``/``show``), so a file that cannot be
        written (a backup on read-only media) still is."""
        self.path = path or data_dir() / DB_NAME
        try:
            # (a half-made 3 is upgraded past it first: completed still, before its tables are checked)
            self._db = open_database(self.path, MIGRATIONS, f"The conversation database {self.path}",
                                     read_only=read_only, complete=complete_if_3)
        except SchemaError as err:
            raise StoreError(str(err)) from None
        self._db.create_function("fold", 1, fold, deterministic=True)  # search and names, case aside
        self._adopted: dict[int, AsAdopted] = {}  # conversations ``adopt`` took in, as they were
        # those of them deleted here since (number, when made): still in their file until ``take_in``
        self._deleted: list[tuple[int, float]] = []

    @property
    def schema_version(self) -> int:
        return schema_version(self._db)

    @property
    def in_memory(self) -> bool:
        """Kept in memory only (the file could not be used): gone when it is closed."""
        return str(self.path) == ":memory:"

    def close(self) -> None:
        self._db.close()

    def claim_turn(self, conversation_id: int) -> bool:
        """Whether a reply may be written in the conversation now: False while another window
        of the app, or ``chat -c``, writes one (``core/turn_lock.py``); held until ``release_turn``."""
        return self.in_memory or claim_turn(Path(self.path), conversation_id)

    def release_turn(self, conversation_id: int) -> None:
        if not self.in_memory:
            release_turn(Path(self.path), conversation_id)

    # --- conversations ------------------------------------------------------------------
    def new(self, title: str = "New conversation", profile: str = "", instructions: str = "",
            sampling: dict[str, Any] | None = None) -> Conversation:
        """A new conversation (``instructions`` and ``sampling``: its own, given before its first
        message)."""
        title = clean_title(title) or "New conversation"
        now = time.time()
        with self._db:
            cur = self._db.execute(
                "INSERT INTO conversations(title, profile, created, updated, instructions, sampling) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (title, profile, now, now, instructions.strip(), sampling_text(sampling)),
            )
        return Conversation(int(cur.lastrowid or 0), title, profile, now, now, instructions=instructions.strip(),
                            sampling=dict(sampling or {}))

    def copy_before(self, conversation_id: int, message_id: int, title: str,
                    again: Callable[[int], str] | None = None) -> Conversation:
        """A new conversation, titled ``title``, that goes on from ``conversation_id`` before its
        message ``message_id`` (an earlier message changed, as ChatGPT's edit): its own
        instructions, sampling settings and profile, and a copy of its messages before that one,
        each as it is kept (its figures, thinking, the document attached to it and the facts
        counted of its tables), in one transaction. The conversation copied stays as it was.
        Not copied: the earlier replies Alt+V goes through (the copy has each message as shown,
        no versions), and the drafts (the box's text is the copy's next message, not a draft).
        A title no other conversation has (case aside, as ``rename`` keeps them): where
        ``title`` is taken, ``again(2)``, ``again(3)``, … the first free (the message changed
        twice made two of one name, and `chat -c NAME` reached only the newest); ``again``
        left out: "title (2)". ConversationGone where it was deleted meanwhile (another window)."""
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")  # (no other window's write between the read and the copy)
            try:
                conv = self.get(conversation_id)
            except StoreError:
                raise ConversationGone(f"Conversation {conversation_id} was deleted.") from None
            free = base = clean_title(title) or conv.title
            numbered = again or (lambda k: f"{base} ({k})")
            k = 2
            while self._title_taken(free) is not None and k < 10_000:  # (a title cut at its end: not for ever)
                free, k = clean_title(numbered(k)) or free, k + 1
            now = time.time()
            made = self._insert(replace(conv, title=free, created=now, updated=now,
                                        messages=[m for m in conv.messages if m.id < message_id]), keep_numbers=False)
        return self.get(made.id)  # (its messages under their new numbers)

    def titled_or_new(self, title: str, profile: str = "") -> tuple[Conversation, bool]:
        """The newest conversation titled ``title``, or a new one (True): at once, so that
        commands started together with one new name (`chat -c NAME` four times in a script)
        make one conversation, not four of the same name."""
        title = clean_title(title) or "New conversation"
        # a title the app cut from a long message ends in "…" (``title_from_message``): its words
        # without it name it too ("chat -c 'Kiracımızdan gelen mesaj şu'"), the exact title first
        cut = title if title.endswith("…") else title + "…"
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")  # no other writer between the look and the insert
            row = self._db.execute("SELECT id FROM conversations WHERE title IN (?, ?) "
                                   "ORDER BY title = ? DESC, updated DESC, id DESC LIMIT 1",
                                   (title, cut, title)).fetchone()
            if row is None:
                now = time.time()
                cur = self._db.execute(
                    "INSERT INTO conversations(title, profile, created, updated) VALUES (?, ?, ?, ?)",
                    (title, profile, now, now),
                )
                return Conversation(int(cur.lastrowid or 0), title, profile, now, now), True
        return self.get(int(row[0]), with_messages=False), False

    def get(self, conversation_id: int, with_messages: bool = True) -> Conversation:
        row = self._db.execute(
            "SELECT id, title, profile, created, updated, instructions, sampling FROM conversations WHERE id = ?",
            (conversation_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"There is no conversation number {conversation_id}.")
        conv = Conversation(*row[:5], instructions=row[5], sampling=sampling_read(row[6]))
        if with_messages:
            conv.messages = self.messages(conversation_id)
        return conv

    def message_counts(self) -> dict[int, int]:
        """Messages per conversation (one without any is absent)."""
        rows = self._db.execute("SELECT conversation_id, COUNT(*) FROM messages GROUP BY conversation_id")
        return {int(cid): int(n) for cid, n in rows}

    def check_title_free(self, title: str, but: int | None = None) -> None:
        """StoreError if a conversation other than ``but`` has the (cleaned) title, case aside
        as ``chat -c`` sets it aside (``fold``: Çalışma and çalışma, İş Planı and iş planı are
        one name; SQLite's NOCASE knows only ASCII)."""
        taken = self._title_taken(title, but)
        if taken is not None:
            raise StoreError(said=[("store.title_taken", {"title": taken})])

    def _title_taken(self, title: str, but: int | None = None) -> str | None:
        """The title of a conversation other than ``but`` that is ``title`` case aside (``fold``), or None."""
        taken = self._db.execute("SELECT title FROM conversations WHERE id != ? AND fold(title) = ? LIMIT 1",
                                 (but or -1, fold(title))).fetchone()
        return None if taken is None else str(taken[0])

    def rename(self, conversation_id: int, title: str) -> None:
        """Give the conversation a name no other has (case aside): two of one name could not be
        told apart, and `chat -c NAME` reached only the newest."""
        title = clean_title(title)
        if not title:
            raise StoreError("A conversation needs a title; type one.")
        if NUMBER_TITLE.fullmatch(title):  # #12 names conversation 12 (`conversations`, chat -c): not a title
            raise StoreError(f"“{title}” reads as a conversation's number (#12 is conversation 12); choose a title "
                             "with words.")
        current = self._db.execute("SELECT title FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if current is None or fold(current[0]) != fold(title):  # its own name again (Enter in F2): kept
            self.check_title_free(title, conversation_id)
        with self._db:
            self._db.execute(
                "UPDATE conversations SET title = ? WHERE id = ?", (title, conversation_id)
            )

    def set_instructions(self, conversation_id: int, text: str, created: float | None = None) -> None:
        """The conversation's own instructions to the model ('' or blank: its profile's system
        prompt again). ConversationGone where it was deleted meanwhile (another window), also
        where ``created`` tells that its number is another's now (SQLite gives a deleted
        conversation's number to the next one made)."""
        with self._db:
            cur = self._db.execute("UPDATE conversations SET instructions = ? WHERE id = ? AND (? IS NULL OR created = ?)",
                                   (text.strip(), conversation_id, created, created))
        if cur.rowcount == 0:
            raise ConversationGone("The conversation was deleted; its instructions have nowhere to go.")

    def set_sampling(self, conversation_id: int, own: dict[str, Any], created: float | None = None) -> None:
        """The conversation's own sampling settings (Ctrl+E's, those other than its profile's, by
        field; {}: its profile's again). ConversationGone as for ``set_instructions``."""
        with self._db:
            cur = self._db.execute("UPDATE conversations SET sampling = ? WHERE id = ? AND (? IS NULL OR created = ?)",
                                   (sampling_text(own), conversation_id, created, created))
        if cur.rowcount == 0:
            raise ConversationGone("The conversation was deleted; its sampling settings have nowhere to go.")

    def set_profile(self, conversation_id: int, profile: str) -> None:
        with self._db:
            self._db.execute(
                "UPDATE conversations SET profile = ? WHERE id = ?", (profile, conversation_id)
            )

    # --- what changed: this file's name, other windows' writes --------------------------
    @property
    def identity(self) -> str:
        """This file's own name for itself, kept inside it (a copy has the same): what the tags of
        its conversations' saved KV cells name, wherever the data folder lies."""
        row = self._db.execute("SELECT id FROM store_identity LIMIT 1").fetchone()
        return str(row[0]) if row is not None else str(Path(self.path).resolve())

    def title_of(self, conversation_id: int, created: float) -> str | None:
        """The title of the conversation of that number made at ``created`` (a KV state's tag
        names both); None when it is gone (SQLite gives a deleted one's number to the next)."""
        row = self._db.execute("SELECT title, created FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        made = seconds(row[1]) if row is not None else None
        return str(row[0]) if row is not None and abs((made or 0.0) - created) < 1e-5 else None

    def changed_elsewhere(self) -> int:
        """A number that changes when another connection (another window of the app, ``chat
        -c``, ``summarize -c``) has written to the file; this one's own writes leave it."""
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def revision(self, conversation_id: int) -> tuple[int, int, str, str, float]:
        """What changes when the conversation's messages do: their number, and their length
        with their figures (a reply kept as it streamed is written again in place); its
        instructions (Alt+I, or chat -c's window: the line at the chat's top) and its own
        sampling settings (another window's Ctrl+E: this one's next reply runs with them)."""
        row = self._db.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(content) + LENGTH(COALESCE(metrics, ''))), 0), "
                               "(SELECT instructions FROM conversations WHERE id = ?), "
                               "(SELECT sampling FROM conversations WHERE id = ?), COALESCE(SUM(created), 0) "
                               "FROM messages WHERE conversation_id = ?",
                               (conversation_id, conversation_id, conversation_id)).fetchone()
        # (another reply put back: its time)
        return int(row[0]), int(row[1]), str(row[2] or ""), str(row[3] or ""), float(row[4])

    # --- messages -----------------------------------------------------------------------
    def add_message(
        self,
        conversation_id: int,
        role: str,
        content: str,
        metrics: dict[str, Any] | None = None,
        reasoning: str = "",
        shown: str = "",
        facts: list[dict[str, Any]] | None = None,
    ) -> StoredMessage:
        """``facts``: those the program counted of the tables of the document attached to it
        (``table_facts.facts_record``'s), kept to be said in the UI's language when it is shown."""
        now = time.time()
        try:
            with self._db:
                cur = self._db.execute(
                    "INSERT INTO messages(conversation_id, role, content, metrics, created, reasoning, shown, facts) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (conversation_id, role, content, json.dumps(metrics) if metrics else None, now, reasoning, shown,
                     facts_text(facts or [])),
                )
                self._db.execute(
                    "UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id)
                )
                # the next question: the earlier replies of the one before can no longer be gone
                # back to (Alt+V acts on the last), so they go, not kept where nothing shows them
                dropped = self._db.execute("DELETE FROM earlier_replies WHERE conversation_id = ?",
                                           (conversation_id,)).rowcount if role == "user" else 0
        except sqlite3.IntegrityError:  # said "cannot be used (FOREIGN KEY constraint failed)": the file is fine
            if self._db.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone() is None:
                raise ConversationGone(f"Conversation {conversation_id} was deleted.") from None
            raise
        if dropped:
            self._empty_wal()
        return StoredMessage(int(cur.lastrowid or 0), role, content, metrics, now, reasoning, shown, list(facts or []))

    def _insert(self, conv: Conversation, keep_numbers: bool) -> Conversation:
        cur = self._db.execute("INSERT INTO conversations(id, title, profile, created, updated, instructions, sampling) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?)", (conv.id if keep_numbers else None, conv.title,
                                                                conv.profile, conv.created, conv.updated,
                                                                conv.instructions, sampling_text(conv.sampling)))
        conv_id = int(cur.lastrowid or conv.id)
        self._insert_messages(conv_id, conv.messages, keep_numbers)
        return replace(conv, id=conv_id)

    _INSERT_MESSAGE = ("INSERT INTO messages(id, conversation_id, role, content, metrics, created, reasoning, shown, "
                       "facts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")

    @staticmethod
    def _message_row(conv_id: int, m: StoredMessage, keep_number: bool) -> tuple[Any, ...]:
        return (m.id if keep_number else None, conv_id, m.role, m.content, json.dumps(m.metrics) if m.metrics else None,
                m.created, m.reasoning, m.shown, facts_text(m.facts))

    def _insert_messages(self, conv_id: int, messages: list[StoredMessage], keep_numbers: bool) -> None:
        """``messages`` written as they are, under their own numbers where ``keep_numbers``."""
        self._db.executemany(self._INSERT_MESSAGE, [self._message_row(conv_id, m, keep_numbers) for m in messages])

    def _insert_message(self, conv_id: int, m: StoredMessage) -> int:
        """``m`` written under a new number, which is returned."""
        return int(self._db.execute(self._INSERT_MESSAGE, self._message_row(conv_id, m, False)).lastrowid or 0)

    def update_message(self, message_id: int, content: str, metrics: dict[str, Any] | None = None,
                       reasoning: str = "") -> bool:
        """A message written again (a reply kept as it streamed, then finished); False when it
        is not there any more (its conversation deleted meanwhile)."""
        with self._db:
            cur = self._db.execute("UPDATE messages SET content = ?, metrics = ?, reasoning = ? WHERE id = ?",
                                   (content, json.dumps(metrics) if metrics else None, reasoning, message_id))
        return cur.rowcount > 0

    def reply_speeds(self, model: str, profiles: Sequence[str] = (), limit: int = REPLIES_TIMED) -> list[float]:
        """The writing speeds (tokens a second) of ``reply_timings``' replies, newest first."""
        return [r.tps for r in self.reply_timings(model, profiles, limit)]

    def reply_timings(self, model: str, profiles: Sequence[str] = (), limit: int = REPLIES_TIMED,
                      cpu_alone: bool = False) -> list[ReplyTiming]:
        """The last ``limit`` replies of the model file ``model`` (its resolved path, as
        ``turn_record`` keeps it), newest first, each with its speed, its words (``words_in``, its
        thinking too, as F5 counts them), tokens and profile; of replies kept before turns named
        their model, those of the profiles ``profiles`` (by ``Profile.ref``; a variant of one too).
        Only the replies that time it (``metrics.timed_replies``, in SQL); with ``cpu_alone``,
        only those that time this PC's CPU (``_CPU_ALONE``: no draft pair's, no GPU's)."""
        ran_on, named = "json_extract(metrics, '$.profile')", "json_extract(metrics, '$.model')"
        older = " OR ".join([f"{ran_on} = ?"] * len(profiles) + [f"substr({ran_on}, 1, ?) = ?"] * len(profiles))
        variants = [v for ref in profiles for v in (len(ref) + 1, ref + " ")]
        whose = f"{named} = ?" + (f" OR ({named} IS NULL AND ({older}))" if profiles else "")
        rows = self._db.execute(
            "SELECT json_extract(metrics, '$.predicted_per_second'), json_extract(metrics, '$.predicted_n'), "
            "content, reasoning, COALESCE(json_extract(metrics, '$.profile'), ''), "
            "COALESCE(json_extract(metrics, '$.profile_name'), json_extract(metrics, '$.profile'), ''), "
            "COALESCE(json_extract(metrics, '$.cpu_others'), 0) "
            f"FROM messages WHERE {self._TIMED} AND ({whose}) {'AND ' + self._CPU_ALONE if cpu_alone else ''} "
            "ORDER BY id DESC LIMIT ?",
            (REPLY_RATE_MIN, *UNTIMED_ENDS, model, *profiles, *variants, limit),
        ).fetchall()
        from workstation.core.language_words import text_language

        return [ReplyTiming(float(tps), int(n), words_in(content or "") + words_in(reasoning or ""), str(ref),
                            str(name), float(others or 0), text_language(content or ""))
                for tps, n, content, reasoning, ref, name, others in rows]

    _TIMED = ("role = 'assistant' AND metrics IS NOT NULL AND json_valid(metrics) "
              "AND json_extract(metrics, '$.predicted_n') >= ? AND json_extract(metrics, '$.predicted_per_second') > 0 "
              f"AND COALESCE(json_extract(metrics, '$.stop_reason'), '') NOT IN ({', '.join('?' * len(UNTIMED_ENDS))})")

    # a reply that times this PC's CPU: not a draft pair's (its guesses kept beat the CPU's own
    # pace) nor one with every layer on the GPU (the CPU-alone estimate is not of it)
    _CPU_ALONE = ("COALESCE(json_extract(metrics, '$.draft_n'), 0) = 0 "
                  "AND COALESCE(json_extract(metrics, '$.threads_reason'), '') != 'gpu'")

    def timed_models(self) -> list[str]:
        """The model files (as ``turn_record`` keeps them) of the replies that time a model on
        the CPU alone (``reply_timings``' with ``cpu_alone``), the newest reply's first: whose
        replies measure this PC against its estimate (``calibration.replies_scale``)."""
        rows = self._db.execute(
            f"SELECT json_extract(metrics, '$.model') AS model FROM messages WHERE {self._TIMED} "
            f"AND {self._CPU_ALONE} AND model IS NOT NULL GROUP BY model ORDER BY max(id) DESC",
            (REPLY_RATE_MIN, *UNTIMED_ENDS),
        ).fetchall()
        return [str(model) for model, in rows if model]

    def messages(self, conversation_id: int) -> list[StoredMessage]:
        rows = self._db.execute(
            "SELECT id, role, content, metrics, created, reasoning, shown, facts FROM messages "
            "WHERE conversation_id = ? ORDER BY id",
            (conversation_id,),
        ).fetchall()
        return [
            StoredMessage(mid, role, content, json.loads(metrics) if metrics else None, created, reasoning, shown,
                          facts_read(facts))
            for mid, role, content, metrics, created, reasoning, shown, facts in rows
        ]

    def prompt_messages(self, conversation_id: int, then: str | None = None,
                        upto: int | None = None) -> list[dict[str, str]]:
        """The conversation as the model reads it (``then``: the user's next message, not saved
        here). A user message that got no reply (its turn failed: the server was down) is kept,
        joined to the next user message, so that roles alternate: Gemma's and Mistral's chat
        templates refuse two user messages in a row, and the conversation could go no further.
        A reply with no words (stopped before its first token, or all thinking) is left out the
        same way: the model is not shown itself saying nothing. Of two replies in a row (the
        app killed while a question was asked again) the newer stands for both. The
        conversation's own instructions come first, as a system message (the engine then leaves
        the profile's system prompt out)."""
        row = self._db.execute("SELECT instructions FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        out: list[dict[str, str]] = [{"role": "system", "content": row[0]}] if row and row[0].strip() else []
        stored = [  # ``upto``: the messages up to that one (a question asked again, without its old reply)
            (m.role, m.content) for m in self.messages(conversation_id)
            if (m.role != "assistant" or m.content.strip()) and (upto is None or m.id <= upto)
        ]
        for role, content in stored + ([("user", then)] if then is not None else []):
            if out and role == "user" and out[-1]["role"] == "user":
                out[-1]["content"] = f"{out[-1]['content']}\n\n{content}"
            elif out and role == "assistant" and out[-1]["role"] == "assistant":
                out[-1]["content"] = content  # two replies in a row (a kill mid-"ask again"): the newer
            else:
                out.append({"role": role, "content": content})
        return out


def model_replies(model: Path, store: Path | None = None) -> list[ReplyTiming]:
    """This PC's last replies with the model file ``model`` that time it (``replies_said``'s), from
    the conversations' file ``store`` (by default the data folder's); none where it cannot be read."""
    from workstation.core.errors import WorkstationError
    from workstation.core.profile_lookup import model_file_refs

    path = store or data_dir() / DB_NAME
    if not path.is_file():
        return []
    try:
        conversations = ConversationStore(path, read_only=True)  # (its own: a store is for one thread)
        try:
            return conversations.reply_timings(str(model.resolve()), model_file_refs(model))
        finally:
            conversations.close()
    except (OSError, sqlite3.Error, WorkstationError):  # (a damaged file: the estimate alone, as before)
        return []
