"""The overnight queue: summarize every document in a folder, resumable after any stop.

State lives in SQLite (WAL, synchronous=FULL) next to the summaries, one row per document:
``pending`` -> ``running`` -> ``done`` | ``failed``. Summaries are written atomically (a
temporary file, fsync, rename) *before* the row is marked done, so after a ``kill -9`` at any
moment the next run finds either

* a ``running`` row whose summary file was written by that attempt (it differs from the file,
  if any, that was there when the attempt began): it was finished, only the bookkeeping was
  cut off; it is marked done without being redone, or
* a ``running`` row without such a file: it is queued again (nothing half-written exists; a
  summary of an older version of the document is never taken for the new one),

and never redoes a ``done`` document (unless the file changed on disk since). A document that
cannot be read or summarized is marked ``failed`` with its one-sentence reason (in English, and
as its phrases, so that ``batch --status`` says it in the reader's language) and the queue
goes on; ``retry_failed=True`` queues those again. A failure that is not a document's own — the
engine cannot be opened (the server cannot be reached, the model cannot be loaded) or the
server stops answering (``BackendUnreachable``) — fails no document: the documents in flight
finish or go back to ``pending``, no new one is started, and ``run_batch`` raises
``BatchStopped`` with the reason, so the next run continues where this one stopped.

Nothing in the queue file is trusted for a path: every document and summary path is derived
again from this run's scan of the folder, and anything that resolves outside the folder (or
the output folder) is refused. One run at a time holds ``.workstation-batch.lock`` in the
output folder, and rows are claimed in one transaction.

A profile with ``parallel: N`` keeps up to N documents in flight: each is summarized in a worker
thread over the one engine, whose slots then decode their chunks side by side.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workstation.core.atomic import output_folder, write_text_atomic
from workstation.core.conversation_export import conversation_export
from workstation.core.documents import (
    SUPPORTED_SUFFIXES,
    TEXT_SUFFIXES,
    looks_like_document,
    name_is_text,
    not_there,
    nothing_to_read,
    read_document,
    shown_name,
)
from workstation.core.errors import EX_TEMPFAIL, BackendUnreachable, WorkstationError
from workstation.core.file_lock import HeldFile, LockChanging, LockHeld
from workstation.core.invocation import cli, shell_word
from workstation.core.kept_parts import PARTS_TABLE, PartsKept, file_version, version_of
from workstation.core.moments import Moment
from workstation.core.phrases import Lookup, Phrase, say
from workstation.core.sqlite_schema import SchemaError, cannot_use, in_plain_words, migrate

DB_NAME = ".workstation-batch.sqlite"
LOCK_NAME = ".workstation-batch.lock"
SUMMARY_SUFFIX = ".summary.md"
OUTPUT_FOLDER = "summaries"  # where the summaries go without -o: DIR/summaries (F6 puts a folder's there too)

_SCHEMA = PARTS_TABLE + """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,          -- relative to the batch folder
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    status TEXT NOT NULL,           -- pending | running | done | failed | skipped (no text to summarize)
    reason TEXT,
    output TEXT,                    -- relative to the output folder
    attempts INTEGER NOT NULL DEFAULT 0,
    added_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    result_json TEXT,
    prior_output TEXT               -- the summary file present when the attempt began
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    event TEXT NOT NULL,            -- queued | started | done | failed | requeued | recovered | changed
    at REAL NOT NULL,
    detail TEXT
);
"""
# the queue's schema by ``sqlite_schema.migrate`` (its version in PRAGMA user_version); the first step
# is the file as it was before it had a version (an older one's missing columns: ``_complete``)
_MIGRATIONS: tuple[str, ...] = (
    _SCHEMA,
    # why a document failed, as its phrases (JSON, ``_said_json``), beside the English ``reason``
    "ALTER TABLE files ADD COLUMN reason_said TEXT;",
)


class BatchError(WorkstationError):
    """The batch folder or its queue cannot be used."""


def disk_full(folder: Path) -> BatchError:
    """The disk under the queue or the summaries is full: the run stops (no document failed for
    it; one in flight is pending again, as after any stop)."""
    return BatchError(f"The disk holding {folder} is full; free some space there, then run the same command "
                      "again to go on where it stopped.")


def disk_is_full(err: BaseException) -> bool:
    """A write that failed for want of room (or of the user's quota), in SQLite or a file."""
    if isinstance(err, sqlite3.Error):
        return getattr(err, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)


def check_folder(root: Path) -> None:
    """``BatchError`` unless ``root`` is a folder, in the words ``summarize`` uses for a path
    that is not there (and, for a document, the command that summarizes it)."""
    if root.is_dir():
        return
    if not root.exists():
        raise BatchError(said=not_there(root, folder=True))
    if looks_like_document(root):
        raise BatchError(said=[("batch.not_folder", {"path": str(root),
                                                     "command": cli("summarize " + shell_word(str(root)))})])
    raise BatchError(said=[("batch.not_a_folder", {"path": str(root)})])


MAX_ATTEMPTS = 3  # a document on which the server went away this many times is marked failed


class BatchStopped(BatchError):
    """The run stopped with documents still pending, for a reason that is no document's fault
    (``reason``: the engine's own sentence); ``counts`` is the queue then. ``temporary``: the
    server cannot take requests now, exit status 75 (EX_TEMPFAIL: nothing is lost, run again
    later); else (a model that cannot be loaded) 1, as running again will not help until the
    profile or the model is fixed."""

    def __init__(self, reason: str, counts: dict[str, int], temporary: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.counts = counts
        self.temporary = temporary
        self.exit_code = EX_TEMPFAIL if temporary else 1


@dataclass
class QueueRow:
    path: str
    status: str
    reason: str | None  # why it failed, in English
    output: str | None
    attempts: int
    size: int = 0  # the document's bytes on disk
    said: list[Phrase] = field(default_factory=list)  # why it failed, as phrases (none: a queue of an older workstation)
    parts_kept: int = 0  # (pending) parts of it a stopped run finished, for the document as it is: not done again
    # (done) its summary in each language the run knew, by the name the file of every summary has in it
    # (``_in_languages``), and the digest of the summary file as written: the notes and headings follow
    # the file of every summary's language where the summary file is as written
    written: dict[str, str] = field(default_factory=dict)
    digest: str | None = None
    # (done) taken from F6's summary made before (``Taken``): the document it was made of, and when
    taken: tuple[str, float] | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> QueueRow:
        written, digest, taken = {}, None, None
        try:
            result = json.loads(row["result_json"]) if row["result_json"] else {}
            written = {str(k): str(v) for k, v in dict(result.get("written") or {}).items()}
            digest = str(result["digest"]) if result.get("digest") else None
            if result.get("taken"):
                taken = (str(result["taken"]["name"]), float(result["taken"]["at"]))
        except (ValueError, TypeError, AttributeError, KeyError):  # (an older queue's, or damaged: the file as it is)
            pass
        return cls(row["path"], row["status"], row["reason"], row["output"], row["attempts"], row["size"],
                   _said_of(row["reason_said"], row["reason"]), written=written, digest=digest, taken=taken)


@dataclass
class Taken:
    """A summary made before of a document of the folder — F6's, of the same content by the same
    profile (``kept_summary.kept_for``) — that a run takes instead of summarizing it again: a
    paralegal's agreement, summarized in F6 minutes before, took a minute of the folder's run."""

    name: str  # the document it was made of (its name may differ from the folder's copy)
    at: float  # when it was made
    summary: str  # its Markdown as the summary file is written (the language of the run's summaries)
    written: dict[str, str] = field(default_factory=dict)  # its Markdown by ``language_of``, as ``_in_languages``


def _said_json(said: list[Phrase]) -> str | None:
    """A sentence's phrases as the queue keeps them (a phrase, a tuple, is a JSON list)."""
    return json.dumps(said, ensure_ascii=False, default=str) if said else None


def _said_of(text: str | None, reason: str | None) -> list[Phrase]:
    """The phrases ``_said_json`` kept; none where they do not say ``reason``, the English kept
    beside them (damaged, a phrase this workstation does not know, or written over by an older
    workstation's run, which keeps no phrases): the English is said then."""
    def back(value: Any) -> Any:
        if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], dict):
            return (value[0], {k: back(v) for k, v in value[1].items()})
        return [back(v) for v in value] if isinstance(value, list) else value

    if not text:
        return []
    try:
        said = [back(p) for p in json.loads(text)]
        return said if say(said) == reason else []
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return []


def output_name(rel: str) -> str:
    return rel + SUMMARY_SUFFIX


def _our_summary(path: Path, root: Path, outdir: Path) -> bool:
    """Whether ``path`` (under ``outdir``) is a summary a run wrote: named ``<document>.summary.md``
    where that document is, or, its document renamed or gone, holding what a summary holds
    (``earlier_summary``: it was summarized as a document). A person's own notes.summary.md,
    with no notes beside it and no summary's closing line, is a document."""
    from workstation.core.summary_file import earlier_summary

    if not path.name.endswith(SUMMARY_SUFFIX):
        return False
    source = path.resolve().relative_to(outdir.resolve()).as_posix()[: -len(SUMMARY_SUFFIX)]
    return (root / source).is_file() or earlier_summary(path)


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` resolves (symbolic links followed) to ``folder`` or below it."""
    resolved, base = path.resolve(), folder.resolve()
    return resolved == base or base in resolved.parents


def _fingerprint(path: Path) -> str | None:
    """Identity of a summary file: an atomic write always makes a new inode."""
    try:
        st = path.stat()
    except OSError:
        return None
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


class BatchLock:
    """One batch run per output folder: an exclusive ``flock`` held for the whole run (the
    kernel drops it when the process dies, even by SIGKILL). A run that ends removes the file
    (colleagues reading the summaries asked what it was); one that dies leaves it, unlocked.
    The file is removed while still locked, and a run that locked a file just removed so tries
    the new one, so two runs never both hold a lock."""

    def __init__(self, outdir: Path) -> None:
        output_folder(outdir, BatchError)
        self.path = outdir / LOCK_NAME
        try:
            self._held = HeldFile(self.path)
        except LockHeld as held:
            # (the app says it without the command line's Ctrl-C: ``in_app.batch.busy``)
            raise BatchError(said=[("batch.busy", {"pid": held.holder or "?", "folder": str(outdir)})]) from None
        except LockChanging:  # inode numbers that change under us (some network file systems)
            raise BatchError(said=[("batch.lock_changing", {"path": str(self.path)})]) from None
        except OSError as err:  # a folder of someone else's, or on read-only media
            raise BatchError(said=[("batch.cannot_write", {"folder": str(outdir), "why": err.strerror or str(err)})]
                             ) from None
        try:
            self._held.write(str(os.getpid()))
        except OSError as err:  # a full disk: it said "A disk this command writes to is full", naming none
            self.release()
            raise BatchError(said=[("batch.cannot_write_full", {"folder": str(outdir),
                                                                "why": err.strerror or str(err)})]) from None

    def release(self) -> None:
        self._held.release()


@in_plain_words(BatchError, lambda queue: f"The batch queue {queue.path}")
class BatchQueue:
    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.found: set[str] = set()  # documents seen by the last scan()
        self.skipped: list[str] = []  # files the last scan() left alone: not documents it reads
        self.unnamed: list[str] = []  # and those whose names are not UTF-8 text (as shown: U+FFFD)
        self.exports: list[str] = []  # and the conversations the app exported there (F7): no documents
        output_folder(db_path.parent, BatchError)
        try:
            self.db = sqlite3.connect(str(db_path), timeout=30, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            # the parts of a summary written go: their text overwritten, not left in free pages where
            # SQLite is built without secure delete (not Debian's)
            self.db.execute("PRAGMA secure_delete = ON")
            migrate(self.db, _MIGRATIONS, f"The batch queue {db_path}", db_path)
            _complete(self.db)
        except sqlite3.DatabaseError as err:  # (a damaged one: moved aside, as the data folder's databases)
            raise BatchError(cannot_use(f"The batch queue {db_path}", err, db_path)) from None
        except SchemaError as err:  # (a newer workstation's)
            raise BatchError(str(err)) from None

    @property
    def path(self) -> Path:
        return self.db_path

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                if self.db.in_transaction:  # (SQLite rolls back itself on a full disk)
                    self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.Error as err:  # "database or disk is full": said, not a traceback's name
            if disk_is_full(err):
                raise disk_full(self.db_path.parent) from None
            raise

    def _event(self, path: str, event: str, detail: str | None = None) -> None:
        self.db.execute(
            "INSERT INTO events (path, event, at, detail) VALUES (?, ?, ?, ?)",
            (path, event, time.time(), detail),
        )

    # --- state changes --------------------------------------------------------------------
    def scan(self, root: Path, outdir: Path, retry_failed: bool = False,
             taken: Callable[[Path], Taken | None] | None = None) -> int:
        """Queue the folder's documents (new or changed ones); returns how many were queued.
        ``self.found`` is then the set of documents this scan saw: the only paths a run uses.
        ``taken``: a summary made before of a new or changed document (``Taken``), written as its
        summary and the document done, not queued."""
        queued = 0
        found: list[tuple[str, int, int]] = []
        self.skipped, self.unnamed, self.exports = [], [], []
        # summaries kept in a folder of their own (DIR/summaries): nothing in it is a document;
        # kept beside the documents (-o DIR, or a folder above it: every document was skipped
        # as "our own output", and the run did nothing): only the summaries are ours
        beside = _inside(root, outdir)
        # another queue's summaries in the folder (a run with -o DIR/out, then one without -o):
        # not documents either, or the summaries were summarized
        others = [db.parent for db in root.rglob(DB_NAME) if db.parent.resolve() != outdir.resolve()]
        for path in sorted(root.rglob("*")):
            if not path.is_file():
                continue
            rel_parts = path.relative_to(root).parts
            if any(p.startswith(".") for p in rel_parts):
                continue
            if not name_is_text(path.relative_to(root)):  # no text, nor SQLite, can hold its name
                self.unnamed.append(shown_name(path.relative_to(root)))
                continue
            if path.suffix.lower() not in SUPPORTED_SUFFIXES and (path.suffix or not looks_like_document(path)):
                self.skipped.append(path.relative_to(root).as_posix())  # other programs' files, said once
                continue  # a suffix-less one is sniffed
            if not _inside(path, root):  # a link out
                continue
            if _inside(path, outdir) and (not beside or _our_summary(path, root, outdir)):  # our own output
                continue
            if _all_summaries_file(path) and any(path.parent.resolve() == folder.resolve()
                                                 for folder in (outdir, *others)):  # (write_all_summaries', any queue's)
                continue
            if any(_inside(path, other) and _our_summary(path, root, other) for other in others):
                continue
            if conversation_export(path):  # F7 offers the folder documents were opened from: it was summarized
                self.exports.append(path.relative_to(root).as_posix())
                continue
            st = path.stat()
            found.append((path.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns))
        self.found = {rel for rel, _, _ in found}
        with self._tx() as db:
            for rel, size, mtime in found:
                row = db.execute("SELECT status, size, mtime_ns FROM files WHERE path = ?", (rel,)).fetchone()
                if (row is None or (row["size"], row["mtime_ns"]) != (size, mtime) and row["status"] != "running") \
                        and self._take(root, outdir, rel, size, mtime, taken, row is None):
                    continue  # (done before, by F6: not summarized again)
                if row is None:
                    db.execute(
                        "INSERT INTO files (path, size, mtime_ns, status, output, added_at) "
                        "VALUES (?, ?, ?, 'pending', ?, ?)",
                        (rel, size, mtime, output_name(rel), time.time()),
                    )
                    self._event(rel, "queued")
                    queued += 1
                elif (row["size"], row["mtime_ns"]) != (size, mtime) and row["status"] != "running":
                    db.execute(
                        "UPDATE files SET status='pending', reason=NULL, reason_said=NULL, size=?, mtime_ns=? WHERE path=?",
                        (size, mtime, rel),
                    )
                    self._event(rel, "changed")
                    queued += 1
                elif row["status"] == "done" and not (outdir / output_name(rel)).exists():
                    # its summary deleted: made again (it stayed "done", and no run made it)
                    db.execute("UPDATE files SET status='pending', reason=NULL, reason_said=NULL WHERE path=?", (rel,))
                    self._event(rel, "requeued", "its summary is gone")
                    queued += 1
                elif retry_failed and row["status"] == "failed":
                    db.execute("UPDATE files SET status='pending', reason=NULL, reason_said=NULL WHERE path=?", (rel,))
                    self._event(rel, "requeued", "retry failed")
                    queued += 1
            # a document deleted (or moved) since it was queued: nothing left to do or to retry (a done
            # one stays done: a scan of the wrong folder, or a share briefly away, forgot the night's work)
            for row in db.execute("SELECT path FROM files WHERE status IN ('pending', 'failed', 'skipped')").fetchall():
                if row["path"] not in self.found:
                    db.execute("DELETE FROM files WHERE path=?", (row["path"],))
                    db.execute("DELETE FROM parts WHERE path=?", (row["path"],))
                    self._event(row["path"], "removed", "the document is gone")
        return queued

    def _take(self, root: Path, outdir: Path, rel: str, size: int, mtime: int,
              taken: Callable[[Path], Taken | None] | None, new: bool) -> bool:
        """Whether the document ``rel`` (new, or changed since) has a summary made before
        (``taken``), now written as its summary (never over a person's own file) and its row done."""
        take = taken(root / rel) if taken is not None else None
        out = outdir / output_name(rel)
        if take is None or not _inside(out.parent, outdir):
            return False
        try:
            _check_not_theirs(out)
            write_text_atomic(out, take.summary)
        except (WorkstationError, OSError) as err:  # (a full disk: the run says it; else summarized as any other)
            if disk_is_full(err):
                raise disk_full(outdir) from None
            return False
        _fsync_dir(out.parent)
        result = json.dumps({"taken": {"name": take.name, "at": take.at}, "written": take.written,
                             "digest": hashlib.sha256(take.summary.encode("utf-8")).hexdigest()})
        if new:
            self.db.execute("INSERT INTO files (path, size, mtime_ns, status, output, added_at, finished_at, result_json) "
                            "VALUES (?, ?, ?, 'done', ?, ?, ?, ?)",
                            (rel, size, mtime, output_name(rel), time.time(), time.time(), result))
        else:
            self.db.execute("UPDATE files SET status='done', reason=NULL, reason_said=NULL, size=?, mtime_ns=?, "
                            "finished_at=?, result_json=? WHERE path=?", (size, mtime, time.time(), result, rel))
        self.db.execute("DELETE FROM parts WHERE path=?", (rel,))
        self._event(rel, "taken", f"F6's summary of {take.name}")
        return True

    def recover(self, outdir: Path) -> int:
        """Rows left 'running' by a killed run: done if that attempt wrote its summary (a file
        that is not the one found when the attempt began), else pending."""
        n = 0
        with self._tx() as db:
            for row in db.execute("SELECT path, prior_output FROM files WHERE status='running'").fetchall():
                out = outdir / output_name(row["path"])
                now = _fingerprint(out) if _inside(out, outdir) else None
                if now is not None and now != row["prior_output"]:
                    db.execute(
                        "UPDATE files SET status='done', finished_at=? WHERE path=?", (time.time(), row["path"])
                    )
                    db.execute("DELETE FROM parts WHERE path=?", (row["path"],))  # its summary is written
                    self._event(row["path"], "recovered", "summary was written before the stop")
                    self._event(row["path"], "done")
                else:
                    db.execute("UPDATE files SET status='pending' WHERE path=?", (row["path"],))
                    self._event(row["path"], "requeued", "the previous run stopped during this file")
                n += 1
        return n

    def claim_next(self, outdir: Path) -> QueueRow | None:
        """Take the next pending row and mark it running in one transaction, so two queues on
        one file never take the same document."""
        with self._tx() as db:
            row = db.execute(
                "SELECT * FROM files WHERE status='pending' ORDER BY added_at, path LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            self._start(row["path"], outdir)
        claimed = QueueRow.from_row(row)
        claimed.status = "running"
        claimed.attempts += 1  # as _start counted it: this is that try
        return claimed

    def _start(self, path: str, outdir: Path) -> None:
        prior = _fingerprint(outdir / output_name(path))
        self.db.execute(
            "UPDATE files SET status='running', attempts=attempts+1, started_at=?, prior_output=? "
            "WHERE path=?",
            (time.time(), prior, path),
        )
        self._event(path, "started")

    def mark_done(self, path: str, result: dict[str, Any]) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE files SET status='done', reason=NULL, reason_said=NULL, finished_at=?, result_json=? WHERE path=?",
                (time.time(), json.dumps(result, default=str), path),
            )
            db.execute("DELETE FROM parts WHERE path=?", (path,))  # its summary is written: not needed
            self._event(path, "done")

    def mark_failed(self, path: str, reason: str, said: list[Phrase] | None = None, status: str = "failed") -> None:
        """``reason``: why, in English; ``said``: the same sentence as phrases, where it has them.
        ``status="skipped"``: the document has no text to summarize (an empty file), not failed:
        left alone until it changes (``--retry-failed`` cannot help it)."""
        with self._tx() as db:
            db.execute(
                "UPDATE files SET status=?, reason=?, reason_said=?, finished_at=? WHERE path=?",
                (status, reason, _said_json(said or []), time.time(), path),
            )
            self._event(path, status, reason)

    def mark_pending(self, path: str, why: str, *, tried: bool = True) -> None:
        """Back in the queue; ``tried=False``: the document was never worked on (the engine
        could not be opened), so its claim does not count as a try."""
        with self._tx() as db:
            if tried:
                db.execute("UPDATE files SET status='pending' WHERE path=?", (path,))
            else:
                db.execute("UPDATE files SET status='pending', attempts=MAX(0, attempts-1) WHERE path=?", (path,))
            self._event(path, "requeued", why)

    # --- reading ----------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        counts = {"pending": 0, "running": 0, "done": 0, "failed": 0}
        for row in self.db.execute("SELECT status, COUNT(*) AS n FROM files GROUP BY status"):
            counts[row["status"]] = row["n"]
        return counts

    def rows(self) -> list[QueueRow]:
        """Every document, with the parts a stopped run kept of a pending one (of the file as it is:
        another version's are dropped as the next run opens them)."""
        kept: dict[str, list[str]] = {}
        for r in self.db.execute("SELECT path, version FROM parts"):
            kept.setdefault(r["path"], []).append(r["version"])
        rows = []
        for r in self.db.execute("SELECT * FROM files ORDER BY path"):
            row = QueueRow.from_row(r)
            if row.status == "pending":
                row.parts_kept = sum(v.startswith(file_version(r["size"], r["mtime_ns"])) for v in kept.get(row.path, ()))
            rows.append(row)
        return rows


def _complete(db: sqlite3.Connection) -> None:
    """The columns a queue made before its file had a version may lack (its first step is
    ``CREATE TABLE IF NOT EXISTS``): added once."""
    if "prior_output" not in {r["name"] for r in db.execute("PRAGMA table_info(files)")}:
        db.execute("ALTER TABLE files ADD COLUMN prior_output TEXT")
    if "kept_at" not in {r["name"] for r in db.execute("PRAGMA table_info(parts)")}:  # (and its parts)
        db.execute("ALTER TABLE parts ADD COLUMN kept_at REAL NOT NULL DEFAULT 0")


def _fsync_dir(path: Path) -> None:
    """Make the rename of a just-written summary durable before the queue says 'done'."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass
class BatchEvent:
    kind: str  # start | file-start | file-done | file-failed | file-skipped | file-pending | progress | finish
    path: str | None = None
    detail: str = ""
    counts: dict[str, int] | None = None
    progress: Any = None
    unnamed: list[str] = field(default_factory=list)  # (start) documents left alone for their names
    exports: list[str] = field(default_factory=list)  # (start) conversations the app exported, left out
    eta_s: float | None = None  # (file-done) the rest of the queue at this run's pace so far
    eta_high: float | None = None  # (file-done) rough: said as a range up to this share of ``eta_s``
    # (file-done) this run's work by the Pace, in tokens: (done, done and left), for a bar by work, not documents
    work: tuple[float, float] | None = None
    said: list[Phrase] = field(default_factory=list)  # (file-failed) ``detail`` as phrases, where it has them


class Pace:
    """How long the rest of the queue will take at this run's pace, by tokens, not documents: each
    document left is taken as its own text (``text_of``) in tokens, read at this run's pace of
    reading, its parts' summaries (and the combining steps of a document in several parts) written
    at its pace of writing, plus what a document took besides (opened, measured). After a short
    e-mail, a time a document said "3 documents left, about 14 s" where a 6,000-word handbook took
    minutes: the documents' time over their characters, and a kind not read yet (the .md after the
    e-mail) taken as the average document done. Rough (said as a range: ``high``, the range's top
    as a share of the estimate) while a document left is longer than any done (parts and combining
    steps not measured at that length) or its text is guessed (a kind with no text a byte known).
    A document that failed adds nothing (a 50 MB scan refused in a second made the rest look free)."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.text_done = 0
        self.documents = 0
        self.paths: set[str] = set()  # this run's documents done (``work``: the others done were done before)
        self.kinds: dict[str, list[int]] = {}  # a name's ending -> [characters of text, bytes] done
        # this run's documents done: their tokens, the prompt tokens read and the ms it took, the calls
        # and the ms they took writing, the ms besides both, the most tokens one had
        self.tokens = 0
        self.read = [0.0, 0.0]
        self.written = [0.0, 0.0]
        self.besides_ms = 0.0
        self.longest = 0
        self.budget = 0
        self.prefix = 0

    def begin(self) -> None:
        if self.started is None:
            self.started = time.monotonic()

    def finished(self, row: QueueRow, text: int, result: Any = None) -> None:
        """``row``'s document summarized, its text ``text`` characters long; ``result`` its
        ``SummaryResult`` (its tokens, parts and times: this run's pace)."""
        text = max(1, text)
        self.text_done += text
        self.documents += 1
        self.paths.add(row.path)
        kind = self.kinds.setdefault(Path(row.path).suffix.lower(), [0, 0])
        kind[0] += text
        kind[1] += max(1, row.size)
        totals = getattr(result, "totals", None) or {}
        if totals:
            tokens = int(totals.get("document_tokens", 0))
            self.tokens += tokens
            self.longest = max(self.longest, tokens)
            # (prompt_n: the tokens read; cache_n: those reused, not read. Taking cache_n off it left a
            # run of short notes, each reusing the instruction read before, with fewer tokens read
            # than none: "283 documents left, about 53 h 40 min" of a run of a second a document)
            self.read[0] += totals.get("prompt_n", 0)
            self.read[1] += totals.get("prompt_ms", 0)
            self.written[0] += totals.get("calls", 0)
            self.written[1] += totals.get("predicted_ms", 0)
            self.besides_ms += max(0.0, totals.get("total_ms", 0) - totals.get("prompt_ms", 0)
                                   - totals.get("predicted_ms", 0))
            self.budget = max(self.budget, int(result.chunk_budget))
            self.prefix = max(self.prefix, int(result.prefix_tokens))

    def guessed(self, row: QueueRow) -> bool:
        """Whether ``row``'s text is a guess: a kind whose text a byte no document done has said,
        and whose bytes are not its text (a .docx, a .pdf)."""
        suffix = Path(row.path).suffix.lower()
        return suffix not in self.kinds and suffix not in TEXT_SUFFIXES

    def text_of(self, row: QueueRow) -> float:
        """The characters of text ``row``'s document is taken to hold: as much a byte as those of its
        kind done (by the ending of its name), else its bytes for a kind that is text (a .md: a
        6,000-word handbook was taken as long as the e-mail done before it), else as the average
        document done."""
        suffix = Path(row.path).suffix.lower()
        kind = self.kinds.get(suffix)
        if kind is not None:
            return max(1, row.size) * kind[0] / kind[1]
        if suffix in TEXT_SUFFIXES:
            return float(max(1, row.size))
        return self.text_done / self.documents

    def _seconds(self, text: float) -> tuple[float, bool]:
        """The time a document of ``text`` characters takes at this run's pace by tokens, and
        whether it is longer than any done (its parts, its combining steps foreseen, not measured)."""
        tokens = text * self.tokens / max(1, self.text_done)
        parts = max(1, math.ceil(tokens / max(1, self.budget)))
        calls_done = max(1.0, self.written[0])
        answer_ms = self.written[1] / calls_done  # a call's writing, its summary's
        combining = 0 if parts == 1 else max(1, math.ceil(parts / 8))  # (a step takes up to about 8 parts' summaries)
        # a call's prompt read besides the document's own tokens, as this run's calls read it: the
        # instruction (its ``prefix``) read once, then reused from the cache by the next call
        besides = min(float(self.prefix), max(0.0, self.read[0] - self.tokens) / calls_done)
        reading = (tokens + (parts + combining) * besides) * self.read[1] / max(1.0, self.read[0])
        seconds = (reading + (parts + combining) * answer_ms + self.besides_ms / self.documents) / 1000
        return seconds, tokens > 1.5 * self.longest

    def work(self, queue: BatchQueue) -> tuple[float, float] | None:
        """The queue's work in tokens: (the documents done, those and the ones left), each taken as
        its text at this run's tokens a character (``text_of``), this run's done as measured; None
        before a document is done. Those a run before did count as done: F6's bar, at 50% as a run
        went on with 10 of 20 documents done, fell to 9% at the next (1 done of about 11). F6's bar
        went by documents: 15% for a minute and a half on a report, then 40% to 90% in 20 s of notes."""
        if self.started is None or not self.text_done or not self.tokens:
            return None
        rows = queue.rows()
        per_character = self.tokens / self.text_done
        left = sum(self.text_of(row) for row in rows if row.status in ("pending", "running")) * per_character
        before = round(sum(self.text_of(row) for row in rows if row.status == "done" and row.path not in self.paths)
                       * per_character)
        return float(self.tokens + before), self.tokens + before + left

    def eta(self, queue: BatchQueue) -> float | None:
        """The rest of the queue's time in seconds (``Pace``); None before a document is done."""
        estimate = self.estimate(queue)
        return estimate[0] if estimate is not None else None

    def estimate(self, queue: BatchQueue) -> tuple[float, float | None] | None:
        """(seconds left, the range's top as a share of them where rough, else None); None before
        a document is done or where none is left."""
        if self.started is None or not self.text_done:
            return None
        rows = [row for row in queue.rows() if row.status in ("pending", "running")]
        if not rows:
            return None
        if not self.tokens or not self.read[0]:  # (no tokens measured: the time of the text done, as a range)
            seconds = (time.monotonic() - self.started) / self.text_done * sum(self.text_of(r) for r in rows)
            return seconds, PACE_ROUGH
        total, rough = 0.0, False
        for row in rows:
            seconds, longer = self._seconds(self.text_of(row))
            total += seconds
            rough = rough or longer or self.guessed(row)
        return total, PACE_ROUGH if rough else None


PACE_ROUGH = 2.5  # a rough time left of the queue: said as a range up to this many times its estimate


def run_batch(
    root: Path,
    outdir: Path,
    profile: Any,
    engine_factory: Callable[[Any], Any],
    on_event: Callable[[BatchEvent], None] | None = None,
    retry_failed: bool = False,
    cancel: Any = None,
    lookup: Lookup | None = None,
    summary_lookup: Lookup | None = None,
    languages: Sequence[Lookup | None] = (),
    taken: Callable[[Path], Taken | None] | None = None,
) -> dict[str, int]:
    """Work through ``root``'s queue; returns the final counts by status.

    Up to ``profile.parallel`` documents are in flight at once (each in a worker thread over
    the one engine, which then decodes their chunks side by side in its slots); only this
    thread touches the queue and writes summaries. ``on_event`` may be called from workers.
    ``BatchStopped`` when the engine cannot be opened or its server cannot be reached (the
    documents not done stay pending; none is marked failed for it). However it ends, the file of
    every summary (``write_all_summaries``) is written again, in ``lookup``'s language;
    ``summary_lookup``: the language of the words each summary's own (its headings, its notes),
    as F6 writes them (the command: English). ``engine_factory`` may lend an engine its caller
    holds (``LentEngine``: the app's loaded model), which the run then does not close.
    ``languages``: every language each summary's words are kept in too (``_in_languages``), for the
    file of every summary written later in another (its notes were left in the summary's).
    ``taken``: a summary made before of a document (F6's, ``Taken``), taken in its place (``scan``).
    """
    check_folder(root)
    emit = on_event or (lambda _e: None)
    lock = BatchLock(outdir)
    try:
        queue = BatchQueue(outdir / DB_NAME)
    except BaseException:
        lock.release()
        raise
    width = max(1, int(getattr(profile, "parallel", 1) or 1))
    engine: Any = None
    in_flight: dict[Future[Any], tuple[QueueRow, Path]] = {}
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="batch")
    pace = Pace()
    try:
        queue.recover(outdir)
        queue.scan(root, outdir, retry_failed=retry_failed, taken=taken)
        emit(BatchEvent("start", counts=queue.counts(), detail="\n".join(queue.skipped), unnamed=queue.unnamed,
                          exports=queue.exports))
        stopping = False
        outage: WorkstationError | None = None  # why the engine cannot go on (no document's fault)
        while True:
            while not stopping and len(in_flight) < width:
                if cancel is not None and cancel.is_set():
                    stopping = True
                    break
                row = queue.claim_next(outdir)
                if row is None:
                    break
                emit(BatchEvent("file-start", row.path, counts=queue.counts()))
                try:
                    source, out = _paths_for(row.path, queue.found, root, outdir)
                except WorkstationError as err:
                    _fail(queue, row.path, str(err), err.said, emit)
                    continue
                if engine is None:
                    try:
                        engine = engine_factory(profile)
                    except WorkstationError as err:  # the engine's problem, not this document's
                        _put_back(queue, row, err, emit, tried=False)
                        outage, stopping = err, True
                        break
                pace.begin()
                job = pool.submit(_summarize_file, engine, source, profile, row.path, emit, cancel,
                                  outdir / DB_NAME, summary_lookup)
                in_flight[job] = (row, out)
            if not in_flight:
                break
            done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for job in done:
                row, out = in_flight.pop(job)
                try:
                    stopping |= _settle_file(queue, row, out, job, emit, pace, (lookup, *languages))
                except BackendUnreachable as err:  # the others in flight finish or come back too
                    outage, stopping = outage or err, True
        counts = queue.counts()
        emit(BatchEvent("finish", str(outage or ""), counts=counts))
        if outage is not None:
            raise BatchStopped(str(outage), counts, isinstance(outage, BackendUnreachable)) from outage
        return counts
    except BaseException:
        # Ctrl+C or worse: stop the documents in flight and put them back in the queue
        if engine is not None:
            engine.cancel()
        for row, _out in in_flight.values():
            try:
                queue.mark_pending(row.path, "stopped by the user")
            except WorkstationError:  # (a full disk: the next run finds it "running" and takes it again)
                break
        raise
    finally:
        pool.shutdown(wait=True)
        if engine is not None:
            engine.close()
        try:
            write_all_summaries(queue, root, outdir, lookup)
        except (OSError, WorkstationError, sqlite3.Error):  # (a full disk: said by what stopped the run, or the next)
            pass
        finally:
            queue.close()
            lock.release()


class LentEngine:
    """An engine its caller holds and keeps (F6: the app's loaded model), lent to ``run_batch``
    through its ``engine_factory``: everything is the engine's but ``close``, which leaves it
    open (the run closes the engine its factory made: the app's model would have been closed
    under the chat)."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def close(self) -> None:
        pass


def queue_rows(outdir: Path) -> list[QueueRow]:
    """The rows of the queue kept in ``outdir`` (``BatchQueue.rows``), read and closed; none where
    no run has made one there."""
    if not (outdir / DB_NAME).is_file():
        return []
    queue = BatchQueue(outdir / DB_NAME)
    try:
        return queue.rows()
    finally:
        queue.close()


def all_summaries_path(outdir: Path, lookup: Lookup | None = None) -> Path:
    """The file in ``outdir`` that holds every summary, named in ``lookup``'s language ("All
    summaries.md", "Tüm özetler.md")."""
    return outdir / say([("batch.all_file", {})], lookup)


def written_all_summaries(outdir: Path, lookup: Lookup | None = None) -> Path | None:
    """The file of every summary a run wrote in ``outdir``: named in ``lookup``'s language where
    there is one, else in the language of the run that wrote it; None where there is none."""
    path = all_summaries_path(outdir, lookup)
    if path.is_file() and _our_all_summaries(path):
        return path
    try:
        return next((other for other in sorted(outdir.iterdir())
                     if _all_summaries_file(other) and _our_all_summaries(other)), None)
    except OSError:
        return None


def _all_summaries_file(path: Path) -> bool:
    """Whether ``path`` is named as ``all_summaries_path`` names it, in any language the app speaks."""
    from workstation.core.locales import phrase_patterns

    return any(re.fullmatch(p, path.name) for p in phrase_patterns(("batch.all_file",)))


def write_all_summaries(queue: BatchQueue, root: Path, outdir: Path, lookup: Lookup | None = None) -> Path | None:
    """Every summary of the folder in one file to read (``all_summaries_path``), in the folder's
    order, each under its document's name; a line for each document skipped (no text), failed or
    not done yet, saying so. Written atomically; a file of a person's own of that name (its
    first line not this file's title) is left as it is (None)."""
    from workstation.core.locales import phrase_patterns

    path = all_summaries_path(outdir, lookup)
    if path.exists() and not _our_all_summaries(path):
        return None
    out = [f"# {say([('batch.all_title', {'folder': root.resolve().name})], lookup)}"]
    caveats = [re.compile("> " + p, re.S) for p in phrase_patterns(("summary.small_model",))]
    notes: list[str] = []  # the small model's caveat, said of every summary alike: once, under the title
    for row in queue.rows():
        if row.path not in queue.found:  # (a document gone from the folder)
            continue
        if row.status == "done":
            try:
                summary = (outdir / output_name(row.path)).read_text(encoding="utf-8")
            except OSError:
                continue
            said = row.written.get(language_of(lookup))  # its notes in this file's language, where kept
            if said is not None and row.digest == hashlib.sha256(summary.encode("utf-8")).hexdigest():
                summary = said
            body = summary.split("\n", 1)[1] if summary.startswith("# ") else summary  # (its own title)
            body = re.sub(r"^(#{1,5}) ", r"#\1 ", body.strip(), flags=re.MULTILINE)  # (under the document's)
            # the small model's caveat goes to the top (it was said under the first summary alone, as if of
            # it); a summary's own note (cut at its length limit) stays with it, however many say the same
            paragraphs = []
            for para in body.split("\n\n"):
                if not any(c.fullmatch(para) for c in caveats):
                    paragraphs.append(para)
                elif para not in notes:
                    notes.append(para)
            if row.taken is not None:  # not summarized again: whose summary it is, and when it was made
                paragraphs.insert(0, "_" + say([("batch.all_taken", {"name": row.taken[0], "at": Moment(row.taken[1])})],
                                               lookup) + "_")
            out.append(f"## {row.path}\n\n" + "\n\n".join(paragraphs))
            continue
        why = " ".join(say(row.said, lookup).split()) if row.said else " ".join((row.reason or "").split())
        key = {"skipped": "batch.all_skipped", "failed": "batch.all_failed"}.get(row.status, "batch.all_pending")
        out.append("- " + say([(key, {"path": row.path, "why": why})], lookup))
    out[1:1] = notes
    write_text_atomic(path, "\n\n".join(out) + "\n")
    for other in outdir.iterdir():  # the one of a run in another language: out of date now (two to choose from)
        if other != path and _all_summaries_file(other) and _our_all_summaries(other):
            with contextlib.suppress(OSError):
                other.unlink()
    return path


def _our_all_summaries(path: Path) -> bool:
    """Whether ``path`` is a file ``write_all_summaries`` wrote (its first line its title, in any
    language the app speaks), not a person's own of that name."""
    from workstation.core.locales import phrase_patterns

    try:
        first = path.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    except OSError:
        return False
    return any(re.fullmatch("# " + p, first) for p in phrase_patterns(("batch.all_title",)))


def _summarize_file(
    engine: Any, source: Path, profile: Any, rel: str, emit: Callable[[BatchEvent], None], cancel: Any,
    db_path: Path, lookup: Lookup | None = None,
) -> Any:
    from workstation.core.summarize import summarize_document

    document = read_document(source, isolate=True)
    parts = PartsKept(db_path, rel, version_of(source, profile))
    try:
        return summarize_document(
            engine, document, profile,
            on_progress=lambda p: emit(BatchEvent("progress", rel, progress=p)),
            cancel=cancel, done_parts=parts.done, on_part=parts.keep, lookup=lookup,
        )
    finally:
        parts.close()


def language_of(lookup: Lookup | None) -> str:
    """Which language ``lookup`` speaks, as the file of every summary is named in it."""
    return say([("batch.all_file", {})], lookup)


def _in_languages(result: Any, languages: Sequence[Lookup | None]) -> dict[str, Any]:
    """What the queue keeps of a summary beside its file: its Markdown in each of ``languages`` (by
    ``language_of``), and the digest of the file as written."""
    written = {language_of(lk): result.in_language(lk) for lk in languages} if result.document is not None else {}
    return {"written": written, "digest": hashlib.sha256(result.summary.encode("utf-8")).hexdigest()}


def _settle_file(
    queue: BatchQueue, row: QueueRow, out: Path, job: Future[Any], emit: Callable[[BatchEvent], None],
    pace: Pace | None = None, languages: Sequence[Lookup | None] = (),
) -> bool:
    """Record a finished document (summary written atomically first); True when it was stopped.
    ``BackendUnreachable`` (re-raised) puts the document back in the queue instead."""
    try:
        result = job.result()
        if result.cancelled:
            queue.mark_pending(row.path, "stopped by the user")
            return True
        _check_not_theirs(out)  # (again: made meanwhile)
        write_text_atomic(out, result.summary)
        _fsync_dir(out.parent)
        queue.mark_done(row.path, {"totals": result.totals, "chunks": len(result.chunks),
                                   **_in_languages(result, languages)})
        if pace is not None:
            pace.finished(row, len(result.document.text) if result.document is not None else 0, result)
    except INTERRUPTS:  # Ctrl-C, or the output's reader gone while it was said: no failure of the document's
        queue.mark_pending(row.path, "stopped by the user")
        raise
    except BatchError:  # the queue's or the summaries' disk is full: the run stops, no document failed
        raise
    except BackendUnreachable as err:  # the server, not this document: it waits for the next run
        if row.attempts < MAX_ATTEMPTS:
            _put_back(queue, row, err, emit)
            raise
        # the server went away on this very document each time (it may bring the server down):
        # it fails, so that the rest of the queue is not held up behind it night after night
        said: list[Phrase] = [("batch.last_try", {"why": err.said or str(err), "n": row.attempts})]
        _fail(queue, row.path, say(said), said, emit)
        raise
    except WorkstationError as err:  # (a document with no text at all is skipped: there is nothing to summarize)
        _fail(queue, row.path, str(err), err.said, emit, skipped=nothing_to_read(err.said))
    except Exception as err:  # noqa: BLE001 - one bad file must not stop the night
        if disk_is_full(err):  # the summary, or a part kept as it was done: the run stops, the document waits
            raise disk_full(out.parent) from None
        said = [("batch.failed_foreign", {"path": row.path, "what": f"{type(err).__name__}: {err}"})]
        _fail(queue, row.path, say(said), said, emit)
    else:  # (said once it is recorded: a reader gone as it is said leaves it done)
        left = pace.estimate(queue) if pace is not None else None
        emit(BatchEvent("file-done", row.path, str(out), counts=queue.counts(),
                        eta_s=left[0] if left else None, eta_high=left[1] if left else None,
                        work=pace.work(queue) if pace is not None else None))
    return False


INTERRUPTS = (KeyboardInterrupt, BrokenPipeError)  # a stop, never a document's failure


def _fail(queue: BatchQueue, path: str, reason: str, said: list[Phrase], emit: Callable[[BatchEvent], None],
          skipped: bool = False) -> None:
    """The document failed (``skipped``: has no text to summarize): ``reason`` in English, ``said``
    its phrases (none: English only)."""
    queue.mark_failed(path, reason, said, "skipped" if skipped else "failed")
    emit(BatchEvent("file-skipped" if skipped else "file-failed", path, reason, counts=queue.counts(), said=said))


def _put_back(queue: BatchQueue, row: QueueRow, err: WorkstationError, emit: Callable[[BatchEvent], None],
              *, tried: bool = True) -> None:
    """A document that could not be worked on for the engine's sake: pending again, not failed."""
    queue.mark_pending(row.path, str(err), tried=tried)
    emit(BatchEvent("file-pending", row.path, str(err), counts=queue.counts()))


def _paths_for(rel: str, found: set[str], root: Path, outdir: Path) -> tuple[Path, Path]:
    """The document and summary paths for a queue row, derived from this run's scan (never
    from the queue file); BatchError if the row is not a document the scan found or either
    path would resolve outside its folder."""
    source, out = root / rel, outdir / output_name(rel)
    if rel not in found or not _inside(source, root):
        raise BatchError(said=[("batch.not_in_folder", {"path": rel, "folder": str(root)})])
    if not _inside(out.parent, outdir):
        raise BatchError(said=[("batch.outside_output", {"path": rel, "folder": str(outdir)})])
    _check_not_theirs(out)  # before the work, not after it (a night's summary was thrown away)
    return source, out


def _check_not_theirs(out: Path) -> None:
    """WorkstationError where a person's own file is where the summary goes: never written over
    (as ``summarize -o`` leaves one)."""
    from workstation.core.summary_file import earlier_summary

    if out.exists() and not earlier_summary(out):
        raise WorkstationError(said=[("batch.not_ours", {"path": str(out)})])
