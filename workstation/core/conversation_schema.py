"""The conversation database's schema: its tables in steps (MIGRATIONS, index i upgrades
version i to i + 1, kept in PRAGMA user_version), and the completion of a file an older build
left half-made at version 3."""

from __future__ import annotations

import sqlite3

from workstation.core.sqlite_schema import schema_version


def _complete_version_3(db: sqlite3.Connection) -> None:
    """Builds from before schema step 3 was finished wrote files at version 3 holding the drafts
    table only (no app_state, no messages.shown): complete them (once upgraded past 3 too: step
    4 runs first and does not touch what is missing). Cheap when nothing is missing: two reads,
    no write."""
    names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    columns = {row[1] for row in db.execute("PRAGMA table_info(messages)")}
    if {"drafts", "drafts_go_with_their_conversation", "app_state"} <= names and "shown" in columns:
        return
    db.execute("BEGIN IMMEDIATE")  # another process may complete it at the same moment: look again
    try:
        _add_missing_version_3(db)
        db.commit()
    except BaseException:
        db.rollback()
        raise


def complete_if_3(db: sqlite3.Connection) -> None:
    """A file at schema version 3 or later completed where step 3 was left half-done (opening it)."""
    if schema_version(db) >= 3:
        _complete_version_3(db)


def _add_missing_version_3(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS drafts (conversation_id INTEGER PRIMARY KEY, text TEXT NOT NULL, "
               "document_path TEXT, document_text TEXT, updated REAL NOT NULL)")
    db.execute("CREATE TRIGGER IF NOT EXISTS drafts_go_with_their_conversation AFTER DELETE ON conversations "
               "BEGIN DELETE FROM drafts WHERE conversation_id = old.id; END")
    db.execute("CREATE TABLE IF NOT EXISTS app_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    if "shown" not in {row[1] for row in db.execute("PRAGMA table_info(messages)")}:
        db.execute("ALTER TABLE messages ADD COLUMN shown TEXT NOT NULL DEFAULT ''")


# Index i upgrades schema version i to i + 1. The first step says IF NOT EXISTS so that a file
# left half-made by an older workstation (tables, but user_version 0) is completed, not refused.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS conversations (
        id INTEGER PRIMARY KEY,
        title TEXT NOT NULL,
        profile TEXT NOT NULL DEFAULT '',
        created REAL NOT NULL,
        updated REAL NOT NULL
    );
    CREATE TABLE IF NOT EXISTS messages (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        metrics TEXT,
        created REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, id);
    """,
    # a reasoning model's thinking before its answer: shown, never read back to the model
    "ALTER TABLE messages ADD COLUMN reasoning TEXT NOT NULL DEFAULT '';",
    # a half-typed message per conversation (0: the one not started yet) and its attached
    # document, so quitting or a closed terminal keeps it; gone with its conversation. And
    # which conversation was open, so the app starts where it was left. And what the chat shows
    # of a message instead of its text ('' the text): a summarized document's prompt reads
    # "Summarize the document notes.txt; ..." there, not the model's instructions and the text.
    """
    CREATE TABLE drafts (
        conversation_id INTEGER PRIMARY KEY,
        text TEXT NOT NULL,
        document_path TEXT,
        document_text TEXT,
        updated REAL NOT NULL
    );
    CREATE TRIGGER drafts_go_with_their_conversation AFTER DELETE ON conversations BEGIN
        DELETE FROM drafts WHERE conversation_id = old.id;
    END;
    CREATE TABLE app_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    ALTER TABLE messages ADD COLUMN shown TEXT NOT NULL DEFAULT '';
    """,
    # a conversation's own instructions to the model, read in place of its profile's system
    # prompt (Alt+I; LM Studio's system prompt per chat, Ollama's /set system)
    "ALTER TABLE conversations ADD COLUMN instructions TEXT NOT NULL DEFAULT '';",
    # the replies a question had before it was asked again (Alt+R), to go back to (Alt+V):
    # ChatGPT's "< 2/2 >"; a new reply had thrown the one before away for good
    """
    CREATE TABLE earlier_replies (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL,
        question_id INTEGER NOT NULL,
        content TEXT NOT NULL,
        metrics TEXT,
        created REAL NOT NULL,
        reasoning TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX earlier_replies_by_question ON earlier_replies(conversation_id, question_id);
    CREATE TRIGGER earlier_replies_go_with_their_conversation AFTER DELETE ON conversations BEGIN
        DELETE FROM earlier_replies WHERE conversation_id = old.id;
    END;
    """,
    # the question an earlier reply answered, where it was another wording of the last question
    # (changed with Up and sent again: the question before and its replies went for good)
    "ALTER TABLE earlier_replies ADD COLUMN question TEXT;",
    # a conversation's own sampling settings (Ctrl+E: those other than its profile's, by field, as
    # JSON), as LM Studio keeps them per chat; they were gone at the next start
    "ALTER TABLE conversations ADD COLUMN sampling TEXT NOT NULL DEFAULT '';",
    # who this file is, wherever it lies: the tag of a conversation's saved KV cells names it, so
    # a data folder copied or moved (a backup restored) still finds them (a path in the tag did not)
    """
    CREATE TABLE IF NOT EXISTS store_identity (id TEXT NOT NULL);
    INSERT INTO store_identity SELECT lower(hex(randomblob(16))) WHERE NOT EXISTS (SELECT 1 FROM store_identity);
    """,
    # the facts the program counted of a message's attached tables (``facts_record``'s, as JSON:
    # numbers, dates and titles as data, '' none), said in the UI's language when it is shown: after
    # a restart they were English until the document was attached again
    "ALTER TABLE messages ADD COLUMN facts TEXT NOT NULL DEFAULT '';",
    # when the question an earlier reply answered was asked (``question``'s own time, NULL: not
    # known): Alt+V back to a question as it was before Up changed it showed the changed one's
    # time, later than the reply under it
    "ALTER TABLE earlier_replies ADD COLUMN question_created REAL;",
)

SCHEMA_VERSION = len(MIGRATIONS)
