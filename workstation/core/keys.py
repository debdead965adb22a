"""API keys per person for ``workstation serve``: each with a name and its own limits.

A key is 32 random bytes shown once, when it is made (``ws-`` and 43 URL-safe characters);
only its SHA-256 is stored (a random 256-bit secret needs no salt or slow hash: nothing can be
guessed from the digest). The ring lives in ``keys.sqlite3`` in the data folder, so
``workstation keys revoke`` in one terminal reaches a running server at its next request.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from workstation.core.errors import WorkstationError
from workstation.core.invocation import cli, shell_word
from workstation.core.letters import alphabetical, fold
from workstation.core.moments import Moment
from workstation.core.paths import data_dir
from workstation.core.phrases import Phrase
from workstation.core.sqlite_schema import SchemaError, in_plain_words, open_database

DB_NAME = "keys.sqlite3"
KEY_PREFIX = "ws-"
# letters of any language (ayşe, müdür), not only a-z; words apart by one space ("Ayşe Yılmaz":
# a person's name was refused for its space)
NAME_RULE = re.compile(r"(?=.{1,64}\Z)[^\W_][\w.@-]*(?: [\w.@-]+)*")

BEARER_BEFORE = re.compile(r"(?:authorization:\s*)?bearer\s", re.IGNORECASE)  # a header's words copied with the key


def bearer_before(key: str) -> bool:
    """Whether ``key`` was written with 'Bearer ' (or the whole 'Authorization: Bearer ')
    before it, as a request's header carries it: it was refused for the space in it."""
    return BEARER_BEFORE.match(key) is not None


def key_from_file(path: str | None, named_by: str | Phrase, *, service: bool = False) -> str | None:
    """A key from a file: its first line, without the spaces around it (serve's
    ``--api-key-file``, a desk profile's ``remote.api_key_file``). A file every user of the
    computer may read is refused, as ssh refuses such a private key: the key would be no more
    secret than on the command line (``ps``) or in ~/.profile; one of the reader's own that its
    group may read too (640: the message said chmod 600 and it was taken). Another user's file
    its group may read is the service's way (root:workstation, 640: the service's user reads a
    file it cannot change). ``service``: the server's operator key (what to do is said for a
    service)."""
    if path is None:
        return None
    import os
    import stat

    from workstation.core.paths import typed_path

    # phrases, so that a desk PC's app and commands say it in their language (it was English)
    then = ("key.then_restart", {}) if service else ("key.then_try", {})
    try:
        with open(typed_path(path), encoding="utf-8-sig") as f:
            st = os.fstat(f.fileno()) if os.name != "nt" else None
            mine = st is not None and st.st_uid == os.geteuid()
            if st is not None and (st.st_mode & stat.S_IROTH or (mine and st.st_mode & stat.S_IRGRP)):
                who = ("key.only_service" if service else "key.only_you", {"path": path})
                readers = ("key.readers_all" if st.st_mode & stat.S_IROTH else "key.readers_group", {})
                raise WorkstationError(said=[("key.file_open", {"named": named_by, "path": path, "readers": readers,
                                                                "who": who, "then": then})])
            first = f.readline(4096).strip()
    except OSError as err:
        raise WorkstationError(said=[("key.file_unreadable", {"named": named_by, "path": path,
                                                              "why": err.strerror or str(err)})]) from None
    except UnicodeDecodeError:
        raise WorkstationError(said=[("key.file_not_text", {"named": named_by, "path": path})]) from None
    if not first:
        raise WorkstationError(said=[("key.file_empty", {"named": named_by, "path": path, "then": then})])
    if bearer_before(first):
        raise WorkstationError(said=[("key.file_bearer", {"named": named_by, "path": path, "then": then})])
    return first


_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE keys (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        created REAL NOT NULL,
        last_used REAL,
        revoked REAL,
        tokens_per_day INTEGER,
        max_parallel INTEGER,
        profiles TEXT NOT NULL DEFAULT ''
    );
    CREATE UNIQUE INDEX keys_active_name ON keys(name) WHERE revoked IS NULL;
    """,
)
_COLUMNS = "name, created, last_used, revoked, tokens_per_day, max_parallel, profiles, id"


class KeyRingError(WorkstationError):
    """A key cannot be made, found or revoked."""


@dataclass(frozen=True)
class ApiKey:
    """One person's key as stored (never the key itself)."""

    name: str
    created: float
    last_used: float | None = None
    revoked: float | None = None
    tokens_per_day: int | None = None  # prompt + generated tokens a day; None: no limit
    max_parallel: int | None = None  # slots held at once; None: the server's default (serve --key-max-parallel)
    profiles: tuple[str, ...] = ()  # profiles it may use; empty: any
    # its row in the key file: which of a person's keys it is (their name is also their renewed key's)
    id: int | None = field(default=None, compare=False)

    def allows(self, profile: str) -> bool:
        return not self.profiles or profile in self.profiles

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "created": self.created,
            "last_used": self.last_used,
            "revoked": self.revoked,
            "tokens_per_day": self.tokens_per_day,
            "max_parallel": self.max_parallel,
            "profiles": list(self.profiles),
        }


def key_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def canonical_name(name: str) -> str:
    """A key's name in one Unicode form (NFC), so "ayşe" typed with a combining cedilla is the
    same person's name, not refused nor a second key; its words apart by one space ("Ayşe
    Yılmaz" typed with two is the same name)."""
    return " ".join(unicodedata.normalize("NFC", name).split())


def logged_name(name: str) -> str:
    """A key's name as a log line's first field: in quotes where it has a space, so that the
    line's fields are still told apart (``"Ayşe Yılmaz" 10.0.0.7 POST …``)."""
    return f'"{name}"' if " " in name else name


def check_name(name: str) -> str:
    """The name as stored, checked. A tab or another control character is refused, not made a
    space (``keys add $'Ali\\tVeli'`` was stored as "Ali Veli" without a word)."""
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise KeyRingError(said=[("keys.control_character", {"name": repr(name)})])
    name = canonical_name(name)
    if not NAME_RULE.fullmatch(name):
        raise KeyRingError(said=[("keys.name_not_allowed", {"name": repr(name)})])
    return name


def _checked_limits(tokens_per_day: int | None, max_parallel: int | None,
                   profiles: Iterable[str]) -> tuple[int | None, int | None, tuple[str, ...]]:
    """A key's limits as ``add`` and ``change`` take them (``keys add`` and ``keys set`` alike):
    0 is none, no daily limit and the server's default at once (``keys add NAME
    --tokens-per-day 0`` could not say "no limit", where the person's revoked key had one); the
    profile names, each once."""
    if tokens_per_day is not None and tokens_per_day < 0:
        raise KeyRingError(said=[("keys.tokens_per_day", {"n": str(tokens_per_day)})])
    if max_parallel is not None and not 0 <= max_parallel <= 64:
        raise KeyRingError(said=[("keys.max_parallel", {"n": str(max_parallel)})])
    names = tuple(dict.fromkeys(p.strip() for p in profiles if p.strip()))
    for p in names:
        if "," in p:
            raise KeyRingError(said=[("keys.profile_comma", {"profile": repr(p)})])
    return tokens_per_day or None, max_parallel or None, names


def _row(row: Sequence[Any]) -> ApiKey:
    name, created, last_used, revoked, per_day, parallel, profiles, key_id = row
    return ApiKey(
        name, created, last_used, revoked, per_day, parallel, tuple(p for p in profiles.split(",") if p), key_id
    )


@in_plain_words(KeyRingError, lambda ring: f"The key file {ring.path}")
class KeyRing:
    """The keys file. Safe to share between threads (one connection behind a lock).
    ``read_only``: only read (``keys list``), so a file that cannot be written still is."""

    def __init__(self, path: Path | None = None, read_only: bool = False) -> None:
        self.path = path or data_dir() / DB_NAME
        try:  # (made 0600, as every database here)
            self._db = open_database(self.path, _MIGRATIONS, f"The key file {self.path}", check_same_thread=False,
                                     read_only=read_only)
        except SchemaError as err:
            raise KeyRingError(str(err)) from None
        self._db.create_function("fold", 1, fold, deterministic=True)  # a name, capitals aside
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def add(
        self,
        name: str,
        *,
        tokens_per_day: int | None = None,
        max_parallel: int | None = None,
        profiles: Iterable[str] | None = None,
        now: float | None = None,
    ) -> tuple[ApiKey, str]:
        """A new key for ``name``: (what is stored, the key to hand over once). A person given a
        key again after theirs was revoked keeps the limits it had, those not given here (None;
        the new key had none: a day's budget set before was lost without a word); 0, or no
        profiles, is none of it (``_checked_limits``)."""
        name = check_name(name)
        _checked_limits(tokens_per_day, max_parallel, profiles or ())  # (what was given, as given)
        if (before := self.last_revoked(name)) is not None:
            tokens_per_day = before.tokens_per_day if tokens_per_day is None else tokens_per_day
            max_parallel = before.max_parallel if max_parallel is None else max_parallel
            profiles = before.profiles if profiles is None else profiles
        tokens_per_day, max_parallel, names = _checked_limits(tokens_per_day, max_parallel, profiles or ())
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        key = ApiKey(name, time.time() if now is None else now, None, None, tokens_per_day, max_parallel, names)
        try:
            with self._lock, self._db:
                # one person's name in other capitals (AYŞE beside ayşe, ismail beside İsmail) is
                # that person, not a second one: usage and limits would split between the two
                taken = self._db.execute("SELECT name FROM keys WHERE revoked IS NULL AND fold(name) = ? LIMIT 1",
                                         (fold(name),)).fetchone()
                if taken is not None and taken[0] != name:
                    raise KeyRingError(said=[("keys.other_capitals", {
                        "name": name, "person": taken[0],
                        "command": cli("keys revoke " + shell_word(taken[0], readable=True))})])
                made = self._db.execute(
                    "INSERT INTO keys(name, hash, created, tokens_per_day, max_parallel, profiles) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (name, key_digest(secret), key.created, tokens_per_day, max_parallel, ",".join(names)),
                )
                key = replace(key, id=made.lastrowid)
        except sqlite3.IntegrityError:
            raise KeyRingError(said=[("keys.has_key", {
                "name": name, "command": cli("keys revoke " + shell_word(name, readable=True))})]) from None
        return key, secret

    def change(self, name: str, *, tokens_per_day: int | None, max_parallel: int | None,
               profiles: Iterable[str]) -> ApiKey:
        """The active key of ``name`` (in any capitals) with these limits (None: none, the
        server's default, as 0 is; no profiles: any): an admin had to revoke a key and hand out a new one
        to change its day's tokens. A running server reads them at the key's next request."""
        tokens_per_day, max_parallel, names = _checked_limits(tokens_per_day, max_parallel, profiles)
        name = canonical_name(name)
        with self._lock, self._db:
            row = self._db.execute("SELECT name FROM keys WHERE revoked IS NULL AND fold(name) = ? "
                                   "ORDER BY name = ? DESC LIMIT 1", (fold(name), name)).fetchone()
            if row is not None:
                self._db.execute("UPDATE keys SET tokens_per_day = ?, max_parallel = ?, profiles = ? "
                                 "WHERE name = ? AND revoked IS NULL",
                                 (tokens_per_day, max_parallel, ",".join(names), row[0]))
        if row is None:
            if (revoked := self._revoked(name)) is not None:
                raise KeyRingError(said=[("keys.revoked_no_limits", {
                    "name": revoked[0], "when": revoked[1],
                    "command": cli("keys add " + shell_word(revoked[0], readable=True))})])
            raise self._none_named(name)
        return next(k for k in self.list() if k.name == row[0])

    def rename(self, old: str, new: str) -> tuple[str, ApiKey]:
        """The person ``old`` (in any capitals) named ``new``: every key of theirs, the one in use
        and those revoked, the same secrets and limits (usage, kept by name, is the usage file's
        to rename: ``UsageLog.rename``). Refused where ``new`` is another person's, in any
        capitals, as ``add`` refuses it (a revoked key's too: their usage would merge).
        Returns (the old name as stored, the key in use, or the last revoked)."""
        new = check_name(new)
        old = canonical_name(old)
        with self._lock, self._db:
            row = self._db.execute("SELECT name FROM keys WHERE fold(name) = ? "
                                   "ORDER BY revoked IS NULL DESC, name = ? DESC, revoked DESC LIMIT 1",
                                   (fold(old), old)).fetchone()
            if row is not None:
                stored = row[0]
                taken = self._db.execute("SELECT name FROM keys WHERE fold(name) = ? AND fold(name) != ? LIMIT 1",
                                         (fold(new), fold(stored))).fetchone()
                if taken is not None:
                    raise KeyRingError(said=[("keys.rename_taken", {"name": new, "person": taken[0]})])
                self._db.execute("UPDATE keys SET name = ? WHERE name = ?", (new, stored))
        if row is None:
            raise self._none_named(old)
        keys = [k for k in self.list(include_revoked=True) if k.name == new]
        return stored, next((k for k in keys if k.revoked is None), keys[-1])

    def list(self, include_revoked: bool = False) -> list[ApiKey]:
        where = "" if include_revoked else " WHERE revoked IS NULL"
        with self._lock:
            rows = self._db.execute(f"SELECT {_COLUMNS} FROM keys{where} ORDER BY created").fetchall()
        return sorted((_row(r) for r in rows), key=lambda k: alphabetical(k.name))  # Çağla before zeki

    def revoke(self, name: str, now: float | None = None) -> ApiKey:
        """Revoke the active key of ``name``, in any capitals (active names differ by more, as
        ``add`` keeps them: "ayşe" revokes AYŞE's key)."""
        name = canonical_name(name)
        with self._lock, self._db:
            row = self._db.execute("SELECT id FROM keys WHERE revoked IS NULL AND fold(name) = ? "
                                   "ORDER BY name = ? DESC LIMIT 1", (fold(name), name)).fetchone()
            if row is not None:  # that key alone: the person's keys revoked before keep their dates
                self._db.execute("UPDATE keys SET revoked = ? WHERE id = ?", (time.time() if now is None else now, row[0]))
                revoked = self._db.execute(f"SELECT {_COLUMNS} FROM keys WHERE id = ?", row).fetchone()
        if row is None:
            if (gone := self._revoked(name)) is not None:  # (it said "no active key", as for a name never given one)
                raise KeyRingError(said=[("keys.already_revoked", {"name": gone[0], "when": gone[1]})])
            raise self._none_named(name)
        # (the first of the person's revoked keys was returned: a key revoked before, with its date)
        return _row(revoked)

    def _none_named(self, name: str) -> KeyRingError:
        """There is no active key named ``name``: the names that have one."""
        known = ", ".join(k.name for k in self.list())
        return KeyRingError(said=[("keys.no_active_key", {"name": name, "names": known or ("keys.none", {})})])

    def last_revoked(self, name: str) -> ApiKey | None:
        """The last key of ``name`` (in any capitals) that was revoked, with its limits; None
        where it never had one."""
        name = canonical_name(name)
        with self._lock:
            row = self._db.execute(f"SELECT {_COLUMNS} FROM keys WHERE revoked IS NOT NULL AND fold(name) = ? "
                                   "ORDER BY name = ? DESC, revoked DESC LIMIT 1", (fold(name), name)).fetchone()
        return None if row is None else _row(row)

    def _revoked(self, name: str) -> tuple[str, Moment] | None:
        """The name, as stored, of the last key of ``name`` (in any capitals) that was revoked,
        and when (said in the sentence's language); None where it never had one."""
        key = self.last_revoked(name)
        return None if key is None or key.revoked is None else (key.name, Moment(key.revoked))

    def find(self, secret: str) -> ApiKey | None:
        """The key whose digest matches ``secret`` (revoked ones too: the caller says so)."""
        if not secret.startswith(KEY_PREFIX):
            return None
        digest = key_digest(secret)
        with self._lock:
            row = self._db.execute(f"SELECT {_COLUMNS}, hash FROM keys WHERE hash = ?", (digest,)).fetchone()
        if row is None or not hmac.compare_digest(row[-1], digest):
            return None
        return _row(row[:-1])

    def any_keys(self) -> bool:
        """Whether any key was ever made (revoked ones count: revoking the last key must not
        open the server to everyone)."""
        with self._lock:
            return self._db.execute("SELECT 1 FROM keys LIMIT 1").fetchone() is not None

    def touch(self, last_used: dict[int, float]) -> None:
        """Record when each key (by its ``id``) was last used (one transaction). By the key that
        made the request, not its person's name: a use written after the person's key was renewed
        (revoked, a new one given) was set on the new key, never used, and not on the old one."""
        if not last_used:
            return
        with self._lock, self._db:
            self._db.executemany(
                "UPDATE keys SET last_used = MAX(COALESCE(last_used, 0), ?) WHERE id = ?",
                [(t, key_id) for key_id, t in last_used.items()],
            )
