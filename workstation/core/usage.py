"""Every request ``serve`` answered, one row each, in ``usage.sqlite3`` (stdlib ``sqlite3``),
and the summaries ``workstation usage`` and the TUI's Usage screen show.

A row: when, which key (its name; ``(shared)`` for the single ``--api-key`` or an open server,
``(unknown)`` for a key that was refused), profile, route, prompt / cached / generated tokens,
TTFT, decode tok/s, HTTP status, duration, client address, and the audit line it was written
as (``audit_seq``, ``audit_hash``: ``audit verify`` uses the newest to see lines cut from the
end of the trail).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from dataclasses import asdict, astuple, dataclass, fields, replace
from pathlib import Path
from typing import Any

from workstation.core.atomic import write_bytes_atomic
from workstation.core.errors import WorkstationError
from workstation.core.letters import fold
from workstation.core.moments import BAD, SQL_LOCAL_DAY
from workstation.core.paths import data_dir
from workstation.core.sqlite_schema import SchemaError, in_plain_words, open_database

DB_NAME = "usage.sqlite3"
# rows a stopping server could not write (the file locked by another program, a full disk): kept
# beside it as JSON lines (written whole, atomically) and folded back in by the next start
UNSAVED_NAME = "usage-unsaved.jsonl"
SHARED = "(shared)"  # the single --api-key, or a server without keys
UNKNOWN = "(unknown)"  # a key that was refused (missing or wrong; a revoked key's requests are its owner's)
# the status of a reply the server's shutdown cut off (and of requests refused while it stops): its
# row keeps the tokens the server spent, but none count against the key's day. The person got no
# whole reply through no doing of theirs and sends it again once the server is back: counted, the
# same question cost its day twice ("chat 503 1014+184 tokens" ran a small daily limit out)
CUT_BY_STOPPING = 503
GROUPS = {"person": "key", "profile": "profile", "day": SQL_LOCAL_DAY}  # (a day that is no time: NULL, shown "?")

_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE requests (
        id INTEGER PRIMARY KEY,
        t REAL NOT NULL,
        key TEXT NOT NULL,
        profile TEXT NOT NULL,
        route TEXT NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        cached_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        ttft_ms REAL NOT NULL,
        decode_tps REAL NOT NULL,
        status INTEGER NOT NULL,
        duration_ms REAL NOT NULL,
        client TEXT NOT NULL,
        audit_seq INTEGER NOT NULL DEFAULT 0,
        audit_hash TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX requests_by_time ON requests(t);
    CREATE INDEX requests_by_key ON requests(key, t);
    """,
    # each row's key (``ApiKey.id``; NULL: the shared key, none, or a row from before) and the name
    # each key was last given by ``keys rename``: a row written later under an older name (a reply
    # still being written while its person was renamed) is written under the key's name now
    """
    ALTER TABLE requests ADD COLUMN key_id INTEGER;
    CREATE TABLE key_names (key_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
    """,
)


class UsageError(WorkstationError):
    """The usage file cannot be used, or a question about it is malformed."""


@dataclass
class UsageRecord:
    t: float  # seconds since the epoch, when the request arrived
    key: str
    profile: str
    route: str  # chat | completions | completion | responses | api/chat | api/generate
    prompt_tokens: int = 0  # OpenAI's: evaluated + cached
    cached_tokens: int = 0
    completion_tokens: int = 0
    ttft_ms: float = 0.0
    decode_tps: float = 0.0
    status: int = 200
    duration_ms: float = 0.0
    client: str = ""
    audit_seq: int = 0
    audit_hash: str = ""
    key_id: int | None = None  # the key that made it (``ApiKey.id``; None: the shared key, or none)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


_RECORD_COLUMNS = ", ".join(f.name for f in fields(UsageRecord))


@dataclass
class UsageRow:
    """One line of a summary."""

    group: str
    requests: int
    errors: int  # answered with a status of 400 or more
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    ttft_ms: float  # mean over successful requests
    decode_tps: float  # mean over successful requests that generated more than one token
    # replies the server's stopping cut off (``CUT_BY_STOPPING``) and the tokens it spent on them:
    # counted in ``requests`` and ``errors``, never in the tokens above, as the key's day leaves
    # them out (``tokens_on_day``): one rule for what a person is charged
    cut_requests: int = 0
    cut_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "tokens": self.tokens}

    def speed_texts(self) -> tuple[str, str]:
        """TTFT (ms) and tok/s as a table shows them: "-" where no request measured one (all
        failed, or none generated two tokens), not a figure of 0."""
        return (f"{self.ttft_ms:,.0f}" if self.ttft_ms > 0 else "-",
                f"{self.decode_tps:,.1f}" if self.decode_tps > 0 else "-")


# the days ``--since`` takes by name, in the two languages the app speaks: how many days back
# each starts ("--since today" was refused, and said so in English under --lang tr)
# words as ``fold`` gives them: "bugün", "Bugun", "BUGÜN" alike (typed on a keyboard without Turkish letters)
_DAYS_BACK = {"today": 0, "yesterday": 1, "bugun": 0, "dun": 1}
# "7d" / "7g" (Turkish gün), "7 days" / "7 gün": the last 7 days, today included
_LAST_DAYS = re.compile(r"(\d{1,4})\s*(?:d|days?|g|gun)")


def parse_since(text: str) -> float:
    """``YYYY-MM-DD`` (local midnight) or an ISO date and time, as seconds since the epoch; or
    a day as it is written in Turkey and much of Europe, ``DD.MM.YYYY`` (03.12.2026 was refused);
    or ``today`` / ``yesterday`` (``bugün`` / ``dün``, or ``bugun`` / ``dun`` without Turkish letters),
    or ``7d`` (``7g``, ``7 days``, ``7 gün``): from the start of the day six days before today, so
    the last 7 days with today among them."""
    word = fold(text.strip())
    days_back = _DAYS_BACK.get(word)
    if days_back is None and (last := _LAST_DAYS.fullmatch(word)) and int(last[1]) >= 1:
        days_back = int(last[1]) - 1
    if days_back is not None:
        day = dt.date.today() - dt.timedelta(days=days_back)
        return dt.datetime.combine(day, dt.time()).astimezone().timestamp()
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        try:
            when = dt.datetime.strptime(text.strip(), "%d.%m.%Y")
        except ValueError:
            raise UsageError(said=[("usage.since_bad", {"text": repr(text)})]) from None
    if when.tzinfo is None:
        when = when.astimezone()  # local time
    return when.timestamp()


@in_plain_words(UsageError, lambda log: f"The usage file {log.path}")
class UsageLog:
    """The usage file. Safe to share between threads (one connection behind a lock).
    ``read_only``: only read (``usage``, the Usage screen), so a file that cannot be written still is."""

    def __init__(self, path: Path | None = None, read_only: bool = False) -> None:
        self.path = path or data_dir() / DB_NAME
        try:
            self._db = open_database(self.path, _MIGRATIONS, f"The usage file {self.path}", check_same_thread=False,
                                     read_only=read_only)
            self._db.execute("PRAGMA synchronous = NORMAL")  # WAL: durable at checkpoints, never corrupt
        except SchemaError as err:
            raise UsageError(str(err)) from None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def add(self, records: Iterable[UsageRecord]) -> None:
        """Store records in one transaction, each under the name its key has now (``rename``):
        a person renamed while their reply was written had it under the old name."""
        marks = ", ".join("?" * len(fields(UsageRecord)))
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")  # (the names read under the write lock: a rename is before or after)
            names: dict[int, str] = dict(self._db.execute("SELECT key_id, name FROM key_names").fetchall())
            self._db.executemany(
                f"INSERT INTO requests({_RECORD_COLUMNS}) VALUES ({marks})",
                [astuple(replace(r, key=names.get(r.key_id, r.key)) if r.key_id is not None else r) for r in records],
            )

    @property
    def unsaved_path(self) -> Path:
        return self.path.parent / UNSAVED_NAME

    @contextlib.contextmanager
    def _side_file_held(self) -> Iterator[None]:
        """The side file is this process's alone meanwhile (an ``flock`` on a file beside it):
        two servers on one data folder, folding it in at once, counted its rows twice, and two
        stopping at once each wrote it over the other's rows."""
        fd = os.open(self.unsaved_path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # (the lock goes with it)

    def keep_aside(self, records: list[UsageRecord]) -> None:
        """Keep ``records`` the file does not take in the side file (with those already there),
        written whole, atomically; OSError when that cannot be written either."""
        with self._side_file_held():
            rows = [*self._aside(), *records]
            text = "".join(json.dumps(asdict(r), separators=(",", ":")) + "\n" for r in rows)
            write_bytes_atomic(self.unsaved_path, text.encode(), private=True)

    def _aside(self) -> list[UsageRecord]:
        """The rows the side file keeps (none without one; a line that is not a row: left out)."""
        try:
            lines = self.unsaved_path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return []
        names = {f.name for f in fields(UsageRecord)}
        out = []
        for line in lines:
            try:
                data = json.loads(line)
                out.append(UsageRecord(**{k: v for k, v in data.items() if k in names}))
            except (ValueError, TypeError, AttributeError):
                continue
        return out

    def fold_in(self) -> int:
        """The side file's rows written into the file and the side file removed: how many (0 when
        there is none, or the file still takes none: it stays for the next start)."""
        if not self.unsaved_path.exists():
            return 0
        try:
            with self._side_file_held():
                rows = [r for r in self._aside() if not self._has(r)]  # (a fold-in stopped before the file went)
                self.add(rows)
                self.unsaved_path.unlink(missing_ok=True)
        except (UsageError, OSError, sqlite3.Error):
            return 0
        return len(rows)

    def _has(self, record: UsageRecord) -> bool:
        """Whether the file holds ``record`` already (the same moment, key, by name or the key
        itself, as it may have been renamed meanwhile, and route)."""
        with self._lock:
            return self._db.execute(
                "SELECT 1 FROM requests WHERE t = ? AND (key = ? OR key_id = ?) AND route = ? LIMIT 1",
                (record.t, record.key, record.key_id, record.route)).fetchone() is not None

    def rename(self, old: str, new: str, key_ids: Iterable[int] = ()) -> int:
        """A person's usage under their new name (``keys rename``): the rows of ``old`` and those the
        side file keeps, so ``usage --by person`` and their day's tokens go on under ``new``; and
        those written later by their keys (``key_ids``: a reply still being written, a server's
        rows kept aside). How many rows of the file were renamed."""
        with self._lock, self._db:
            n = self._db.execute("UPDATE requests SET key = ? WHERE key = ?", (new, old)).rowcount
            self._db.executemany("INSERT OR REPLACE INTO key_names(key_id, name) VALUES (?, ?)",
                                 [(i, new) for i in key_ids])
        if self.unsaved_path.exists():
            with self._side_file_held():
                rows = self._aside()
                if any(r.key == old for r in rows):
                    text = "".join(json.dumps({**asdict(r), "key": new if r.key == old else r.key},
                                              separators=(",", ":")) + "\n" for r in rows)
                    write_bytes_atomic(self.unsaved_path, text.encode(), private=True)
        return n

    def records(self, since: float | None = None) -> list[UsageRecord]:
        where, args = ("WHERE t >= ?", (since,)) if since is not None else ("", ())
        with self._lock:
            rows = self._db.execute(f"SELECT {_RECORD_COLUMNS} FROM requests {where} ORDER BY id", args).fetchall()
        return [UsageRecord(*r) for r in rows]

    def tokens_on_day(self, t: float) -> dict[str, int]:
        """Prompt + generated tokens per key on the local day holding ``t``: from its midnight
        to the next, never later (a row dated in the future counted for "today" for ever).
        The one place a day's use is summed: the quota, ``keys list`` and /usage/today. A reply the
        server's stopping cut off (``CUT_BY_STOPPING``) is not counted (``Accounts.finish`` neither)."""
        from workstation.core.quota import day_start, next_day_start

        with self._lock:
            rows = self._db.execute(
                "SELECT key, SUM(prompt_tokens + completion_tokens) FROM requests WHERE t >= ? AND t < ? "
                "AND typeof(t) IN ('integer', 'real') AND status != ? GROUP BY key",
                (day_start(t), next_day_start(t), CUT_BY_STOPPING),
            ).fetchall()
        used = {key: int(n or 0) for key, n in rows}
        for r in self._aside():  # rows a stopped server could not write count too, until folded in
            if day_start(t) <= r.t < next_day_start(t) and r.status != CUT_BY_STOPPING:
                used[r.key] = used.get(r.key, 0) + r.tokens
        return used

    def summary(self, by: str = "person", since: float | None = None) -> list[UsageRow]:
        """One row per person (key), profile or local day, in that order of names or days."""
        if by not in GROUPS:
            raise UsageError(f"--by is {by!r}; allowed values are {', '.join(GROUPS)}.")
        group = GROUPS[by]
        where, args = ("WHERE t >= ?", (since,)) if since is not None else ("", ())
        ok = "status < 400"
        # tokens as the key's day counts them (``tokens_on_day``): a reply the server's stopping
        # cut off is not charged; it is counted apart. `usage` said 626 where `keys list` said 425
        charged = f"status != {CUT_BY_STOPPING}"
        sql = (
            f"SELECT {group} AS g, COUNT(*), SUM(status >= 400), SUM(CASE WHEN {charged} THEN prompt_tokens END), "
            f"SUM(CASE WHEN {charged} THEN cached_tokens END), SUM(CASE WHEN {charged} THEN completion_tokens END), "
            f"AVG(CASE WHEN {ok} THEN ttft_ms END), AVG(CASE WHEN {ok} AND completion_tokens > 1 THEN decode_tps END), "
            f"SUM(NOT ({charged}) AND prompt_tokens + completion_tokens > 0), "
            f"SUM(CASE WHEN NOT ({charged}) THEN prompt_tokens + completion_tokens END) "
            f"FROM requests {where} GROUP BY g ORDER BY g"
        )
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [
            UsageRow(BAD if g is None else str(g), n, int(err or 0), int(p or 0), int(c or 0), int(gen or 0),
                     float(tt or 0), float(tps or 0), int(cut or 0), int(cut_n or 0))
            for g, n, err, p, c, gen, tt, tps, cut, cut_n in rows
        ]

    def daily_by_person(self, since: float | None = None) -> list[tuple[str, str, int]]:
        """(local day, key, prompt + generated tokens), by day then key: the Usage screen's chart
        (a reply the server's stopping cut off not charged, as ``summary`` and the key's day)."""
        where, args = ("WHERE t >= ?", (since,)) if since is not None else ("", ())
        with self._lock:
            rows = self._db.execute(
                f"SELECT {SQL_LOCAL_DAY} AS d, key, SUM(prompt_tokens + completion_tokens) "
                f"FROM requests {where}{' AND' if where else ' WHERE'} status != ? GROUP BY d, key ORDER BY d, key",
                (*args, CUT_BY_STOPPING),
            ).fetchall()
        return [(d, k, int(n or 0)) for d, k, n in rows if d is not None]  # (a time that is none: left out)

    def audit_lines(self) -> dict[int, str]:
        """Every audit line a request was written as: seq -> hash (``audit verify`` holds the
        trail to them: a trail rewritten whole, its chain made again, passed)."""
        with self._lock:
            rows = self._db.execute("SELECT audit_seq, audit_hash FROM requests WHERE audit_seq > 0").fetchall()
        return {int(seq): str(digest) for seq, digest in rows}

    def last_audit(self) -> tuple[int, str] | None:
        """The newest audit line a request was written as: (seq, hash); None if none."""
        with self._lock:
            row = self._db.execute(
                "SELECT audit_seq, audit_hash FROM requests WHERE audit_seq > 0 ORDER BY audit_seq DESC LIMIT 1"
            ).fetchone()
        return (int(row[0]), str(row[1])) if row else None


def open_usage_if_present(path: Path | None = None) -> UsageLog | None:
    """The usage file when one exists, to read (readers must not create it; one on read-only
    media is opened read-only)."""
    path = path or data_dir() / DB_NAME
    return UsageLog(path, read_only=True) if path.exists() else None

