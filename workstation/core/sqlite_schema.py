"""SQLite files of our own (stdlib ``sqlite3``): opened in WAL mode and brought to the current
schema by numbered migrations, the version kept in ``PRAGMA user_version``.

Used by the conversation store and the server's accounts (keys and usage), so every file is
migrated the same way: one transaction per step with the version bump inside it.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from workstation.core.errors import WorkstationError
from workstation.core.paths import own_file


class SchemaError(WorkstationError):
    """A database file cannot be opened or brought to this version's schema."""


def schema_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def migrate(db: sqlite3.Connection, migrations: Sequence[str], what: str) -> None:
    """Run ``migrations[v:]`` on a file at schema version ``v`` (index i upgrades i to i + 1).

    ``what`` names the file in the error, as "The conversation database /path". A file from a
    newer workstation is refused (SchemaError), never downgraded."""
    version = schema_version(db)
    if version > len(migrations):
        raise SchemaError(
            f"{what} was written by a newer workstation "
            f"(schema {version}, this one knows {len(migrations)})."
        )
    for step in range(version, len(migrations)):
        # One transaction per step, the version bump inside it: a step that fails or is
        # killed half-way leaves the file exactly as it was before the step (SQLite's DDL
        # is transactional). The version is read again once the write lock is held: another
        # process opening the same file at the same moment (the TUI and `chat -c` after an
        # upgrade) may have done the step meanwhile, and an ALTER TABLE cannot run twice.
        try:
            db.execute("BEGIN IMMEDIATE")
            if schema_version(db) <= step:
                for statement in _statements(migrations[step]):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {step + 1}")
            db.commit()
        except sqlite3.Error:
            if db.in_transaction:
                db.rollback()
            raise


def _statements(script: str) -> list[str]:
    """A migration's SQL statements, one by one (``sqlite3.complete_statement`` says where
    each ends, semicolons in strings and triggers included)."""
    out: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                out.append(pending.strip())
            pending = ""
    if pending.strip():
        out.append(pending.strip())
    return out


FULL_BELOW = 1024 * 1024  # free bytes under which a disk counts as full (SQLite's journal pages)
_DISK_WORDS = ("disk I/O error", "unable to open", "disk is full", "readonly", "read-only")


def sqlite_reason(err: BaseException, path: Path) -> str:
    """SQLite's words for a failure of the file ``path``, with what a person can act on where
    they say nothing of it: a full disk gives "disk I/O error" (no room for the -wal and -shm
    files beside it) and a read-only folder "unable to open database file"."""
    text = str(err)
    folder = path.parent
    if str(path) == ":memory:" or not any(w in text for w in _DISK_WORDS):  # (locked, a constraint: not the disk)
        return text
    if folder.is_dir() and not os.access(folder, os.W_OK):  # (a read-only disk counts no room free too)
        return f"{text}: its folder {folder} cannot be written (read-only)"
    try:
        if shutil.disk_usage(folder).free < FULL_BELOW:
            return f"{text}: the disk holding it is full"
    except OSError:
        pass
    return text


_DAMAGED_WORDS = ("file is not a database", "malformed")


def cannot_use(what: str, err: BaseException, path: Path, verb: str = "opened") -> str:
    """"``what`` cannot be opened (why).", with the next step where a person can take one (the
    bare reason left them with none): a damaged file renamed, a folder that cannot be written
    made writable or another one used."""
    reason = sqlite_reason(err, path)
    said = f"{what} cannot be {verb} ({reason})."
    if any(w in str(err) for w in _DAMAGED_WORDS):
        said += (f" The file is damaged: move it aside with the files beside it whose names begin the same "
                 f"({path.name}-wal, {path.name}-shm), for example into a folder named 'damaged'; an empty one is "
                 "made in its place the next time, and the moved files keep what they held for whoever can repair "
                 "them.")
    elif reason.endswith("cannot be written (read-only)") or (
            isinstance(err, OSError) and err.errno in (errno.EROFS, errno.EACCES, errno.EPERM)):
        said += f" Make {path.parent} writable for this user, or set WORKSTATION_DATA to a folder that is."
    return said


OPEN_WAIT_S = 30.0  # how long opening waits for the file's lock (another opener upgrading it)
WRITE_WAIT_MS = 5000  # how long a write waits for another's (sqlite3.connect's default)


def _write_ahead_log(db: sqlite3.Connection, deadline: float) -> None:
    """WAL mode on. Turning a file from an older build (a rollback journal) into WAL needs it to
    itself, and SQLite answers "database is locked" at once, without the connection's wait,
    while another connection holds its write lock (another opener upgrading it): eight windows
    opening one old file at once hit this 3 times in 60. It is tried again until ``deadline``."""
    pause = 0.01
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def open_database(
    path: Path, migrations: Sequence[str], what: str, *, check_same_thread: bool = True
) -> sqlite3.Connection:
    """``path`` opened (its folder made), in WAL mode with foreign keys on, at the current schema.
    Raises SchemaError with one sentence naming ``what`` when it cannot be used."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if str(path) != ":memory:":
            own_file(path)
        # opening may wait for another program's upgrade of the same file (each step a write):
        # eight at once on a busy machine waited out sqlite3's 5 s ("database is locked")
        db = sqlite3.connect(path, check_same_thread=check_same_thread, timeout=OPEN_WAIT_S)
    except (OSError, sqlite3.Error) as err:
        raise SchemaError(cannot_use(what, err, path)) from None
    try:
        db.execute("PRAGMA foreign_keys = ON")
        _write_ahead_log(db, time.monotonic() + OPEN_WAIT_S)
        # deleted rows overwritten, not left in free pages: where SQLite is built without it (not
        # Debian's), F8's conversation could still be read in the file with `strings`
        db.execute("PRAGMA secure_delete = ON")
        migrate(db, migrations, what)
        db.execute(f"PRAGMA busy_timeout = {WRITE_WAIT_MS}")  # then as every write waits
    except sqlite3.Error as err:
        db.close()
        raise SchemaError(cannot_use(what, err, path)) from None
    except BaseException:
        db.close()
        raise
    return db
