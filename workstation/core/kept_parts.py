"""The parts of a document that a stopped summary finished, kept in SQLite as each is done, so
that the next run of the same document and profile goes on from them.

The overnight queue keeps them in its own database (``.workstation-batch.sqlite``, by the
document's path in the folder); ``summarize`` and the app's F6 in the data folder's
``summary-parts.sqlite``, by the document's full path. A part is used only for the same version
of the file (its size and time), the same profile, model and part budget: a document edited
since, or another profile (which cuts it into other parts), starts again. A run that ends with
every part summarized forgets its parts; parts nobody came back to go after ``KEEP_DAYS``.
One process at a time summarizes a document of the data folder's store (F6 and ``summarize``
both wrote its parts at once): it holds the document's byte of the store's turn lock
(``turn_lock``, as a reply holds its conversation's) while it runs, and another is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workstation.core.errors import WorkstationError
from workstation.core.paths import data_dir, own_file
from workstation.core.turn_lock import claim_turn, release_turn

PARTS_TABLE = """
CREATE TABLE IF NOT EXISTS parts (  -- parts of a document a stopped run finished (PartsKept)
    path TEXT NOT NULL,             -- the document (the batch folder's relative path, or its full path)
    version TEXT NOT NULL,          -- the document's version, the profile and its model
    start INTEGER NOT NULL,         -- the part's character span
    end INTEGER NOT NULL,
    reply TEXT NOT NULL,
    summary TEXT NOT NULL,
    kept_at REAL NOT NULL DEFAULT 0,  -- when (the data folder's parts nobody came back to go in time)
    PRIMARY KEY (path, version, start, end)
);
"""
FILE_NAME = "summary-parts.sqlite"
KEEP_DAYS = 30


class SummaryBusy(WorkstationError):
    """Another process (another window's F6, another ``summarize``) summarizes the document now."""


class PartsKept:
    """The finished parts of one document (``done``: by character span, the reply and its
    summary) for one version of it; parts of any other version are forgotten on opening. Its
    own connection, used from the caller's and the engine's threads.

    ``best_effort``: a part that cannot be kept (a full or read-only disk) is let go, and the
    summary goes on (the overnight queue's are not: its run stops, to go on when there is room)."""

    def __init__(self, db_path: Path, key: str, version: str, best_effort: bool = False) -> None:
        self.key, self.version, self.best_effort = key, version, best_effort
        self.claimed: tuple[Path, int] | None = None  # the document's summary held (``parts_for``): let go at close
        self._lock = threading.Lock()
        self.db = sqlite3.connect(str(db_path), timeout=30, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA secure_delete = ON")  # a document's text overwritten when its parts go
        with self._lock:
            # parts of another version: the document changed since, or the profile (said by the callers)
            self.dropped = self.db.execute("DELETE FROM parts WHERE path=? AND version!=?", (key, version)).rowcount
            self.done: dict[tuple[int, int], tuple[str, str]] = {
                (a, b): (reply, summary) for a, b, reply, summary in self.db.execute(
                    "SELECT start, end, reply, summary FROM parts WHERE path=? AND version=?", (key, version))}

    def keep(self, chunk: Any) -> None:
        """``chunk`` (a ``summary_chunks.Chunk``) finished: kept at once."""
        row = (self.key, self.version, chunk.start, chunk.end, chunk.reply, chunk.summary or "")
        with self._lock:
            try:
                self.db.execute("INSERT OR REPLACE INTO parts (path, version, start, end, reply, summary, kept_at) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?)", (*row, time.time()))
            except sqlite3.Error:
                if not self.best_effort:
                    raise

    def forget(self) -> None:
        """The document's summary is whole: its parts are not needed again."""
        with self._lock, contextlib.suppress(sqlite3.Error):
            self.db.execute("DELETE FROM parts WHERE path=?", (self.key,))

    def start_over(self) -> None:
        """Every part is to be done again (``summarize --start-over``, F6's Alt+R): the kept ones
        are forgotten, and this run's are kept as it does them."""
        self.forget()
        self.done.clear()

    def close(self) -> None:
        with self._lock:
            self.db.close()
        claimed, self.claimed = self.claimed, None
        if claimed is not None:
            release_turn(*claimed)


def version_of(source: Path, profile: Any) -> str:
    """The version of a document whose parts are usable: the file's size and time, the
    profile's name, its model, its context and a part's budget (``summarize --max-tokens``):
    another context or budget cuts the document into other parts (F6 said Ctrl+R would go on
    from them, and began at part 1)."""
    st = source.stat()
    return (f"{file_version(st.st_size, st.st_mtime_ns)}{getattr(profile, 'ref', '')}:{getattr(profile, 'model', '')}:"
            f"{getattr(profile, 'context', '')}:{profile.sampling.max_tokens}")


def document_version(path: Path) -> str | None:
    """The file as it is now (``file_version``: its size and time); None where it cannot be
    read. F6's summary keeps its document's, so that the chat asks about it only while the file
    is unchanged (it sent the summary of a file edited since)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return file_version(st.st_size, st.st_mtime_ns)


def file_version(size: int, mtime_ns: int) -> str:
    """How ``version_of`` begins for a file of that size and time, whatever the profile (``batch
    --status`` counts the parts kept of a document as it is, with no profile)."""
    return f"{size}:{mtime_ns}:"


def parts_store(folder: Path | None) -> Path:
    """The data folder's store, made (and its old parts let go) where it was not."""
    path = (folder or data_dir()) / FILE_NAME
    own_file(path)
    db = sqlite3.connect(str(path), timeout=30, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA secure_delete = ON")  # (old parts' text overwritten, not left in free pages)
        db.executescript(PARTS_TABLE)
        db.execute("DELETE FROM parts WHERE kept_at < ?", (time.time() - KEEP_DAYS * 86400,))
    finally:
        db.close()
    return path


def _claim(store: Path, key: str) -> tuple[Path, int]:
    """The document ``key`` of ``store`` is this process's to summarize until ``release_turn``
    of what is returned, or the process ends; SummaryBusy where another process's summary of
    it goes on. Its byte of the store's turn lock is a hash of its key."""
    byte = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=6).digest(), "big")
    if not claim_turn(store, byte):
        raise SummaryBusy(said=[("summary.busy_elsewhere", {"name": Path(key).name})])
    return store, byte


def parts_for(source: Path, profile: Any, folder: Path | None = None) -> PartsKept | None:
    """The kept parts of the document at ``source`` for ``profile``, in the data folder's
    store, the document this process's to summarize until they are closed (SummaryBusy where
    another process summarizes it); None where that store cannot be used (a read-only data
    folder): the summary is made as before, only not resumable."""
    try:
        store, key = parts_store(folder), str(source.resolve())
        claimed = _claim(store, key)
        try:
            parts = PartsKept(store, key, version_of(source, profile), best_effort=True)
        except BaseException:
            release_turn(*claimed)
            raise
        parts.claimed = claimed
        return parts
    except SummaryBusy:
        raise
    except (OSError, sqlite3.Error, WorkstationError):  # (WorkstationError: a data folder that cannot be made)
        return None


@contextlib.contextmanager
def summarizing(sources: list[Path], folder: Path | None = None) -> Iterator[None]:
    """The documents at ``sources`` are this process's to summarize while it lasts
    (SummaryBusy where another process summarizes one): ``summarize`` claims them all before
    its model loads, to be refused then, not after the load and the documents before it."""
    try:
        store: Path | None = (folder or data_dir()) / FILE_NAME
    except WorkstationError:  # (no data folder: no parts are kept, nothing to hold)
        store = None
    held: list[tuple[Path, int]] = []
    try:
        for source in sources:
            if store is not None:
                held.append(_claim(store, str(source.resolve())))
        yield
    finally:
        for claim in held:
            release_turn(*claim)


def forget_parts(source: Path, folder: Path | None = None) -> None:
    """Every part kept of the document at ``source``, whichever version and profile, deleted
    (F6's F8: a document's text gone from the data folder); nothing where none are kept."""
    try:
        path = (folder or data_dir()) / FILE_NAME
        if not path.exists():
            return
        db = sqlite3.connect(str(path), timeout=5, isolation_level=None)
        try:
            db.execute("PRAGMA secure_delete = ON")
            db.execute("DELETE FROM parts WHERE path=?", (str(source.resolve()),))
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            db.close()
    except (OSError, sqlite3.Error, WorkstationError):
        pass


def kept_count(source: Path, profile: Any, folder: Path | None = None, other: bool = False) -> int:
    """How many parts of the document at ``source``, as it is now, a stopped run of ``profile``
    finished (0 where none, or the store cannot be read); ``other``: how many were kept for
    another version of it (the file, or the profile, changed since: they will not be used)."""
    try:
        path = (folder or data_dir()) / FILE_NAME
        if not path.exists():
            return 0
        version = version_of(source, profile)
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            row = db.execute(f"SELECT COUNT(*) FROM parts WHERE path=? AND version{'!=' if other else '='}?",
                             (str(source.resolve()), version)).fetchone()
        finally:
            db.close()
        return int(row[0])
    except (OSError, sqlite3.Error, WorkstationError):
        return 0
