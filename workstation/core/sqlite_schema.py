"""SQLite files of our own (stdlib ``sqlite3``): opened in WAL mode and brought to the current
schema by numbered migrations, the version kept in ``PRAGMA user_version``.

Used by the conversation store and the server's accounts (keys and usage), so every file is
migrated the same way: one transaction per step with the version bump inside it.
"""

from __future__ import annotations

import errno
import functools
import inspect
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from workstation.core.errors import WorkstationError
from workstation.core.paths import own_file


class SchemaError(WorkstationError):
    """A database file cannot be opened or brought to this version's schema."""


T = TypeVar("T")


def schema_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def kept_before_upgrade(path: Path, version: int) -> Path:
    """Where the file at schema ``version`` is copied before a newer workstation upgrades it:
    an office that goes back to the older version (a rollback) finds its file there, as it was."""
    return path.with_name(f"{path.name}.schema-{version}-backup")


def kept_copies(path: Path) -> list[Path]:
    """The copies ``kept_before_upgrade`` made of the file at ``path``, one per older schema
    (none: an empty list)."""
    try:
        return sorted(p for p in path.parent.iterdir()
                      if p.name.startswith(f"{path.name}.schema-") and p.name.endswith("-backup") and p.is_file())
    except OSError:
        return []


def _keep_before_upgrade(path: Path, version: int) -> None:
    """A copy of the file (at schema ``version``, older than this one's) beside it: an older
    workstation refuses the upgraded file, and a command that only lists upgraded it (a
    rollback then had nothing to go back to). SQLite's backup, so what the -wal holds is in
    it; read by another connection while this one holds the write lock; written under another name and renamed, so a copy is whole or not there. A copy that
    cannot be made (a full disk) leaves the upgrade as it was before copies were kept."""
    kept = kept_before_upgrade(path, version)
    part = kept.with_name(kept.name + ".part")
    try:  # (read by a connection of its own: the backup of one inside a write waits for ever)
        part.unlink(missing_ok=True)
        own_file(part)  # (this user's alone before anything is in it)
        source, copy = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True), sqlite3.connect(part)
        try:
            source.backup(copy)
        finally:
            source.close()
            copy.close()
        os.replace(part, kept)
    except (OSError, sqlite3.Error):
        part.unlink(missing_ok=True)


def migrate(db: sqlite3.Connection, migrations: Sequence[str], what: str, path: Path | None = None) -> None:
    """Run ``migrations[v:]`` on a file at schema version ``v`` (index i upgrades i to i + 1).

    ``what`` names the file in the error, as "The conversation database /path". A file from a
    newer workstation is refused (SchemaError), never downgraded; with ``path``, the copy an
    upgrade keeps of an older file is made first, and a refusal names the copy made before the
    newer one's upgrade."""
    version = schema_version(db)
    if version > len(migrations):
        said = f"{what} was written by a newer workstation (schema {version}, this one knows {len(migrations)})."
        kept = kept_before_upgrade(path, len(migrations)) if path is not None else None
        if kept is not None and kept.is_file():
            said += (f" Use the newer workstation again, or, losing what was written since its upgrade, "
                     f"move it aside with {path.name}-wal and {path.name}-shm beside it, and rename the copy kept "
                     f"before it, {kept}, to {path.name}.")
        else:
            said += " Use the newer workstation again."
        raise SchemaError(said)
    for step in range(version, len(migrations)):
        # One transaction per step, the version bump inside it: a step that fails or is
        # killed half-way leaves the file exactly as it was before the step (SQLite's DDL
        # is transactional). The version is read again once the write lock is held: another
        # process opening the same file at the same moment (the TUI and `chat -c` after an
        # upgrade) may have done the step meanwhile, and an ALTER TABLE cannot run twice.
        try:
            db.execute("BEGIN IMMEDIATE")
            now = schema_version(db)
            if step == version and now == version > 0 and path is not None and str(path) != ":memory:":
                _keep_before_upgrade(path, version)  # (under the write lock: no opener upgrades it meanwhile)
            if now <= step:
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
_DISK_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT)


def sqlite_reason(err: BaseException, path: Path) -> str:
    """SQLite's words for a failure of the file ``path``, with what a person can act on where
    they say nothing of it: a full disk gives "disk I/O error" (no room for the -wal and -shm
    files beside it) and a read-only folder "unable to open database file"."""
    # (making the file itself: "[Errno 30] Read-only file system: '/…/conversations.sqlite3'" was said)
    text = (err.strerror or str(err)) if isinstance(err, OSError) else str(err)
    folder = path.parent
    if "locked" in text:  # another process holds its write lock past our wait
        return f"{text}: another program is using it; try again when it is done"
    on_disk = isinstance(err, OSError) and err.errno in _DISK_ERRNOS
    if str(path) == ":memory:" or not (on_disk or any(w in text for w in _DISK_WORDS)):  # (locked, a constraint)
        return text
    said = "" if on_disk else f"{text}: "  # (the system's words alone add nothing there)
    if folder.is_dir() and not os.access(folder, os.W_OK):  # (a read-only disk counts no room free too)
        return f"{said}its folder {folder} cannot be written (read-only)"
    try:
        if shutil.disk_usage(folder).free < FULL_BELOW:
            return f"{said}the disk holding it is full"
    except OSError:
        pass
    return text


_DAMAGED_WORDS = ("file is not a database", "malformed")


def says_damaged(text: str) -> bool:
    """Whether an SQLite error's words (or a sentence made of them) say the file is damaged."""
    return any(w in text for w in _DAMAGED_WORDS)


def move_aside(path: Path) -> str:
    """What to do with a file that is not (or no longer) a database of ours."""
    return (f"move it aside with the files beside it whose names begin the same ({path.name}-wal, {path.name}-shm), "
            "for example into a folder named 'damaged'; an empty one is made in its place the next time, and the "
            "moved files keep what they held for whoever can repair them.")


def cannot_use(what: str, err: BaseException, path: Path, verb: str = "opened") -> str:
    """"``what`` cannot be opened (why).", with the next step where a person can take one (the
    bare reason left them with none): a damaged file renamed, a folder that cannot be written
    made writable or another one used."""
    if str(path) != ":memory:" and path.is_dir():  # SQLite says only "unable to open database file"
        return (f"{what} cannot be {verb}: {path} is a folder, not a database file. Rename or move that folder "
                "aside; an empty database is made in its place the next time.")
    reason = sqlite_reason(err, path)
    said = f"{what} cannot be {verb} ({reason})."
    if says_damaged(str(err)):
        said += f" The file is damaged: {move_aside(path)}"
    elif reason.endswith("cannot be written (read-only)") or (
            isinstance(err, OSError) and err.errno in (errno.EROFS, errno.EACCES, errno.EPERM)):
        said += f" Make {path.parent} writable for this user, or set WORKSTATION_DATA to a folder that is."
    return said


def in_plain_words(error: type[WorkstationError], what: Callable[[Any], str]) -> Callable[[type[T]], type[T]]:
    """A class decorator: every public method of the class (its parts' too) turns an SQLite error (a locked,
    damaged or foreign file, a full disk) into one ``error`` sentence naming the file
    (``what(self)``, as "The key file /path"; the file is ``self.path``), never a traceback."""

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except sqlite3.Error as err:
                raise error(cannot_use(what(self), err, Path(self.path), "used")) from None

        return run

    def decorate(cls: type[T]) -> type[T]:
        # the class's own methods and its parts' (mixins: ``vars`` of the class alone left a
        # part's method raising the SQLite error itself), the nearest definition of each name
        methods: dict[str, Callable[..., Any]] = {}
        for klass in reversed(cls.__mro__):
            methods.update((name, method) for name, method in vars(klass).items()
                           if not name.startswith("_") and inspect.isfunction(method))
        for name, method in methods.items():
            setattr(cls, name, wrap(method))
        return cls

    return decorate


@functools.lru_cache(maxsize=32)
def expected_tables(migrations: tuple[str, ...]) -> frozenset[str]:
    """The tables a file at the current schema holds: its own migrations run on an empty
    database in memory (so the list is never kept twice)."""
    db = sqlite3.connect(":memory:")
    try:
        for script in migrations:
            for statement in _statements(script):
                db.execute(statement)
        return frozenset(_tables(db))
    finally:
        db.close()


def _tables(db: sqlite3.Connection) -> set[str]:
    return {name for (name,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}


def check_tables(db: sqlite3.Connection, migrations: Sequence[str], what: str, path: Path) -> None:
    """SchemaError when a table of the current schema is missing (another program's file of
    the same name, or damage): "no such table" at the first question, or an HTTP 500 a request."""
    missing = sorted(expected_tables(tuple(migrations)) - _tables(db))
    if missing:
        raise SchemaError(_missing(what, path, missing))


def _missing(what: str, path: Path, tables: list[str]) -> str:
    names = ", ".join(f"'{m}'" for m in tables)
    step = move_aside(path)
    return (f"{what} cannot be used: it has no table {names} (it is another program's file, or damaged). "
            f"{step[0].upper()}{step[1:]}")


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


# SQLite's words for a file that takes no writes: a read-only disk or folder, and a full disk (no
# room for the -wal and -shm files: `conversations` could not list what was in the file)
_READ_ONLY_WORDS = ("readonly", "read-only", "unable to open", "disk I/O error", "disk is full")


def open_database(
    path: Path, migrations: Sequence[str], what: str, *, check_same_thread: bool = True, read_only: bool = False,
    complete: Callable[[sqlite3.Connection], None] | None = None,
) -> sqlite3.Connection:
    """``path`` opened (its folder made), in WAL mode with foreign keys on, at the current schema.
    Raises SchemaError with one sentence naming ``what`` when it cannot be used.

    ``read_only``: the caller only reads (a list, a summary), so a file that cannot be written
    (a backup on read-only media, a folder of someone else's) is opened read-only instead of
    refused, as long as it is at the current schema. ``complete``: run after the migrations,
    before the tables are checked (a file an older build left half-made, completed)."""
    try:
        return _open_writable(path, migrations, what, check_same_thread, complete)
    except SchemaError as refused:
        cause = refused.__cause__
        if read_only and isinstance(cause, OSError) and not path.exists():  # nothing saved yet in a folder
            return _open_writable(Path(":memory:"), migrations, what, check_same_thread, complete)  # that takes no files
        if not (read_only and isinstance(cause, sqlite3.Error | OSError) and path.is_file()
                and any(w in str(cause) for w in _READ_ONLY_WORDS)):
            raise
        return _open_read_only(path, migrations, what, check_same_thread, refused)


SWITCH_UP_TO = 512 * 1024 * 1024  # files up to this size are switched to INCREMENTAL once, on opening


def _switch_to_incremental(db: sqlite3.Connection, path: Path) -> None:
    """A file made before files gave deleted pages back (``auto_vacuum`` NONE) switched once with
    VACUUM, which rewrites it whole: only where that is cheap (up to ``SWITCH_UP_TO``) and the
    disk has room for it (VACUUM writes a copy of the file and a journal beside it); only where
    no other program has the file open (the app beside `serve`, a second window: switched at a
    later opening). VACUUM holds the write lock for seconds (2.8 s for 350 MB), and another
    window's write that waited ``WRITE_WAIT_MS`` for it failed, its session moved to memory;
    leaving WAL mode for it needs the file to itself, and says at once when another has it.
    Those opening it meanwhile wait for it (``OPEN_WAIT_S``). Skipped, the file works as before,
    only never shrinks."""
    if str(path) == ":memory:" or db.execute("PRAGMA auto_vacuum").fetchone()[0] != 0:
        return
    try:
        size = path.stat().st_size
        if size > SWITCH_UP_TO or shutil.disk_usage(path.parent).free < 3 * size + FULL_BELOW:
            return
    except OSError:
        return
    db.execute("PRAGMA busy_timeout = 0")
    try:
        db.execute("PRAGMA journal_mode = DELETE")  # "database is locked" where another has it open
    except sqlite3.Error:
        return
    try:
        db.execute("PRAGMA auto_vacuum = INCREMENTAL")
        db.execute("VACUUM")
    except sqlite3.Error:
        pass
    finally:
        _write_ahead_log(db, time.monotonic() + OPEN_WAIT_S)


def give_back_free_pages(db: sqlite3.Connection) -> None:
    """The pages a delete freed given back to the disk (the file shrinks), in a file made with
    ``auto_vacuum = INCREMENTAL``; nothing in one that is not. Outside a transaction."""
    db.executescript("PRAGMA incremental_vacuum")  # (execute() gave back one page: it steps it once)


def _open_read_only(path: Path, migrations: Sequence[str], what: str, check_same_thread: bool,
                    refused: SchemaError) -> sqlite3.Connection:
    """``path`` opened read-only: SQLite's ``mode=ro``, or ``immutable=1`` where even that needs
    to write (a WAL file's -shm in a folder that takes no files)."""

    for mode in ("mode=ro", "immutable=1"):
        db = None
        try:
            db = sqlite3.connect(f"file:{quote(str(path.resolve()))}?{mode}", uri=True,
                                 check_same_thread=check_same_thread, timeout=WRITE_WAIT_MS / 1000)
            if schema_version(db) != len(migrations):  # (an older file needs its upgrade written)
                db.close()
                raise refused
            check_tables(db, migrations, what, path)
            return db
        except sqlite3.Error:
            if db is not None:
                db.close()
            continue
        except SchemaError:
            if db is not None:
                db.close()
            raise
    raise refused


def _open_writable(path: Path, migrations: Sequence[str], what: str, check_same_thread: bool,
                   complete: Callable[[sqlite3.Connection], None] | None) -> sqlite3.Connection:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if str(path) != ":memory:":
            own_file(path)
        # opening may wait for another program's upgrade of the same file (each step a write):
        # eight at once on a busy machine waited out sqlite3's 5 s ("database is locked")
        db = sqlite3.connect(path, check_same_thread=check_same_thread, timeout=OPEN_WAIT_S)
    except (OSError, sqlite3.Error) as err:
        raise SchemaError(cannot_use(what, err, path)) from err
    try:
        db.execute("PRAGMA foreign_keys = ON")
        if str(path) != ":memory:" and db.execute("PRAGMA page_count").fetchone()[0] == 0:
            # a new file gives deleted pages back to the disk (``give_back_free_pages``): set before
            # anything is written in it, or it takes a VACUUM (18.75 MB stayed so with a quarter deleted)
            db.execute("PRAGMA auto_vacuum = INCREMENTAL")
        _write_ahead_log(db, time.monotonic() + OPEN_WAIT_S)
        # deleted rows overwritten, not left in free pages: where SQLite is built without it (not
        # Debian's), F8's conversation could still be read in the file with `strings`
        db.execute("PRAGMA secure_delete = ON")
        migrate(db, migrations, what, path)
        if complete is not None:
            try:
                complete(db)
            except sqlite3.Error:
                check_tables(db, migrations, what, path)  # (a table it builds on missing: said so)
                raise
        check_tables(db, migrations, what, path)
        _switch_to_incremental(db, path)
        db.execute(f"PRAGMA busy_timeout = {WRITE_WAIT_MS}")  # then as every write waits
    except sqlite3.Error as err:
        db.close()
        if str(err).startswith("no such table: "):  # an upgrade step found a table gone
            raise SchemaError(_missing(what, path, [str(err).removeprefix("no such table: ").removeprefix("main.")])) \
                from err
        raise SchemaError(cannot_use(what, err, path)) from err
    except BaseException:
        db.close()
        raise
    return db
