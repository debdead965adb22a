"""The overnight queue: summarize every document in a folder, resumable after any stop.

State lives in SQLite (WAL, synchronous=FULL) next to the summaries, one row per document:
``pending`` -> ``running`` -> ``done`` | ``failed``. Summaries are written atomically (a
temporary file, fsync, rename) *before* the row is marked done, so after a ``kill -9`` at any
moment the next run finds either

* a ``running`` row whose summary file exists: it was finished, only the bookkeeping was cut
  off; it is marked done without being redone, or
* a ``running`` row without a summary file: it is queued again (nothing half-written exists),

and never redoes a ``done`` document (unless the file changed on disk since). A document that
cannot be read or summarized is marked ``failed`` with its one-sentence reason and the queue
goes on; ``retry_failed=True`` queues those again.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workstation.core.atomic import write_text_atomic
from workstation.core.documents import SUPPORTED_SUFFIXES, read_document
from workstation.core.errors import WorkstationError

DB_NAME = ".workstation-batch.sqlite"
SUMMARY_SUFFIX = ".summary.md"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,          -- relative to the batch folder
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    status TEXT NOT NULL,           -- pending | running | done | failed
    reason TEXT,
    output TEXT,                    -- relative to the output folder
    attempts INTEGER NOT NULL DEFAULT 0,
    added_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    result_json TEXT
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    event TEXT NOT NULL,            -- queued | started | done | failed | requeued | recovered | changed
    at REAL NOT NULL,
    detail TEXT
);
"""


class BatchError(WorkstationError):
    """The batch folder or its queue cannot be used."""


@dataclass
class QueueRow:
    path: str
    status: str
    reason: str | None
    output: str | None
    attempts: int

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> QueueRow:
        return cls(row["path"], row["status"], row["reason"], row["output"], row["attempts"])


def output_name(rel: str) -> str:
    return rel + SUMMARY_SUFFIX


class BatchQueue:
    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        db_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(str(db_path), timeout=30, isolation_level=None)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as err:
            raise BatchError(f"The batch queue '{db_path}' cannot be opened ({err}).") from None

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _event(self, path: str, event: str, detail: str | None = None) -> None:
        self.db.execute(
            "INSERT INTO events (path, event, at, detail) VALUES (?, ?, ?, ?)",
            (path, event, time.time(), detail),
        )

    # --- state changes --------------------------------------------------------------------
    def scan(self, root: Path, outdir: Path, retry_failed: bool = False) -> int:
        """Queue the folder's documents (new or changed ones); returns how many were queued."""
        queued = 0
        outdir_resolved = outdir.resolve()
        found: list[tuple[str, int, int]] = []
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix.lower() not in SUPPORTED_SUFFIXES:
                continue
            rel_parts = path.relative_to(root).parts
            if any(p.startswith(".") for p in rel_parts):
                continue
            resolved = path.resolve()
            if resolved == outdir_resolved or outdir_resolved in resolved.parents:
                continue
            st = path.stat()
            found.append((path.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns))
        with self._tx() as db:
            for rel, size, mtime in found:
                row = db.execute("SELECT status, size, mtime_ns FROM files WHERE path = ?", (rel,)).fetchone()
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
                        "UPDATE files SET status='pending', reason=NULL, size=?, mtime_ns=? WHERE path=?",
                        (size, mtime, rel),
                    )
                    self._event(rel, "changed")
                    queued += 1
                elif retry_failed and row["status"] == "failed":
                    db.execute("UPDATE files SET status='pending', reason=NULL WHERE path=?", (rel,))
                    self._event(rel, "requeued", "retry failed")
                    queued += 1
        return queued

    def recover(self, outdir: Path) -> int:
        """Rows left 'running' by a killed run: done if their summary exists, else pending."""
        n = 0
        with self._tx() as db:
            for row in db.execute("SELECT path, output FROM files WHERE status='running'").fetchall():
                out = outdir / row["output"]
                if out.is_file():
                    db.execute(
                        "UPDATE files SET status='done', finished_at=? WHERE path=?", (time.time(), row["path"])
                    )
                    self._event(row["path"], "recovered", "summary was written before the stop")
                    self._event(row["path"], "done")
                else:
                    db.execute("UPDATE files SET status='pending' WHERE path=?", (row["path"],))
                    self._event(row["path"], "requeued", "the previous run stopped during this file")
                n += 1
        return n

    def next_pending(self) -> QueueRow | None:
        row = self.db.execute(
            "SELECT * FROM files WHERE status='pending' ORDER BY added_at, path LIMIT 1"
        ).fetchone()
        return QueueRow.from_row(row) if row else None

    def mark_running(self, path: str) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE files SET status='running', attempts=attempts+1, started_at=? WHERE path=?",
                (time.time(), path),
            )
            self._event(path, "started")

    def mark_done(self, path: str, result: dict[str, Any]) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE files SET status='done', reason=NULL, finished_at=?, result_json=? WHERE path=?",
                (time.time(), json.dumps(result, default=str), path),
            )
            self._event(path, "done")

    def mark_failed(self, path: str, reason: str) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE files SET status='failed', reason=?, finished_at=? WHERE path=?",
                (reason, time.time(), path),
            )
            self._event(path, "failed", reason)

    def mark_pending(self, path: str, why: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE files SET status='pending' WHERE path=?", (path,))
            self._event(path, "requeued", why)

    # --- reading ----------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        counts = {"pending": 0, "running": 0, "done": 0, "failed": 0}
        for row in self.db.execute("SELECT status, COUNT(*) AS n FROM files GROUP BY status"):
            counts[row["status"]] = row["n"]
        return counts

    def rows(self) -> list[QueueRow]:
        return [QueueRow.from_row(r) for r in self.db.execute("SELECT * FROM files ORDER BY path")]


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
    kind: str  # start | file-start | file-done | file-failed | progress | finish
    path: str | None = None
    detail: str = ""
    counts: dict[str, int] | None = None
    progress: Any = None


def run_batch(
    root: Path,
    outdir: Path,
    profile: Any,
    engine_factory: Callable[[Any], Any],
    on_event: Callable[[BatchEvent], None] | None = None,
    retry_failed: bool = False,
    cancel: Any = None,
) -> dict[str, int]:
    """Work through ``root``'s queue; returns the final counts by status."""
    from workstation.core.summarize import summarize_document

    if not root.is_dir():
        raise BatchError(f"'{root}' is not a folder.")
    emit = on_event or (lambda _e: None)
    queue = BatchQueue(outdir / DB_NAME)
    engine = None
    try:
        queue.recover(outdir)
        queue.scan(root, outdir, retry_failed=retry_failed)
        emit(BatchEvent("start", counts=queue.counts()))
        while True:
            if cancel is not None and cancel.is_set():
                break
            row = queue.next_pending()
            if row is None:
                break
            queue.mark_running(row.path)
            emit(BatchEvent("file-start", row.path, counts=queue.counts()))
            try:
                document = read_document(root / row.path, isolate=True)
                if engine is None:
                    engine = engine_factory(profile)
                result = summarize_document(
                    engine, document, profile,
                    on_progress=lambda p, _path=row.path: emit(BatchEvent("progress", _path, progress=p)),
                    cancel=cancel,
                )
                if result.cancelled:
                    queue.mark_pending(row.path, "stopped by the user")
                    break
                out = outdir / (row.output or output_name(row.path))
                write_text_atomic(out, result.summary)
                _fsync_dir(out.parent)
                queue.mark_done(row.path, {"totals": result.totals, "chunks": len(result.chunks)})
                emit(BatchEvent("file-done", row.path, str(out), counts=queue.counts()))
            except WorkstationError as err:
                queue.mark_failed(row.path, str(err))
                emit(BatchEvent("file-failed", row.path, str(err), counts=queue.counts()))
            except KeyboardInterrupt:
                queue.mark_pending(row.path, "stopped by the user")
                raise
            except Exception as err:  # noqa: BLE001 - one bad file must not stop the night
                reason = f"'{row.path}' failed: {type(err).__name__}: {err}"
                queue.mark_failed(row.path, reason)
                emit(BatchEvent("file-failed", row.path, reason, counts=queue.counts()))
        counts = queue.counts()
        emit(BatchEvent("finish", counts=counts))
        return counts
    finally:
        if engine is not None:
            engine.close()
        queue.close()
