"""Who calls the server and what they used: per-person keys, profile limits, tokens per day,
the usage file, the audit trail and the per-key Prometheus counters.

``Accounts`` answers four questions on the request path, each in microseconds:
``authenticate`` (which key, or 401), ``check_profile`` (403 for a key limited to other
profiles), ``check_quota`` (429 with when it resets) and
``owner`` (the key's turn and cap for slots, ``slots.admit``); ``finish`` counts the tokens
and hands the record to a writer thread, which appends the audit lines and the usage rows in
batches, off the event loop. ``flush`` waits for it (tests, shutdown).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hmac
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from workstation.core.audit import AuditTrail
from workstation.core.keys import ApiKey, KeyRing, logged_name
from workstation.core.metrics import TurnMetrics
from workstation.core.quota import Clock, DailyQuota, OverQuota, minute_text, next_day_start
from workstation.core.server.prometheus import ServerMetrics
from workstation.core.server.protocol import ApiError
from workstation.core.slots import Owner
from workstation.core.usage import CUT_BY_STOPPING, SHARED, UsageLog, UsageRecord

log = logging.getLogger("uvicorn.error")
BAD_KEY = "Incorrect or missing API key; send 'Authorization: Bearer <key>' or 'X-Api-Key: <key>'."
# what only the operator's key reads (/slots, /metrics' per-key lines), on a server started without
# one: no key could read them, and the 403 said "its --api-key" as if it had one
NO_OPERATOR_KEY = ("this server was started without an operator's key, so no key can read them: start serve with "
                   "--api-key-file FILE (a key of the operator's own, in a file only the server's user reads) and "
                   "send that key")


class RevokedKey(ApiError):
    """A revoked key was used: refused, and recorded under its owner's name (an operator
    wants to see it still being tried), never counted against a quota."""

    def __init__(self, who: str) -> None:
        # (its own code: a desk PC tells it from a key never given, in its own language)
        super().__init__(401, f"The API key '{who}' was revoked.", code="key_revoked", reason="revoked key")
        self.who = who


@dataclass(frozen=True)
class Caller:
    name: str  # the key's name, SHARED or UNKNOWN
    client: str = ""
    key: ApiKey | None = None
    owner: Owner | None = None  # whose turn it is for slots; None: the shared line

CUT = "cut: "  # a reason of a reply cut off ("cut: day limit"): its audit line's ``cut`` ("day_limit")


def cut_reason(why: str) -> str:
    """The log's reason of a reply cut off for ``why`` ("day limit", "server stopping"): the one
    form its audit line's ``cut`` is read from."""
    return CUT + why


@dataclass
class Ticket:
    """One generation request from arrival to its answer."""

    caller: Caller
    route: str  # chat | completions | completion | responses | api/chat | api/generate
    t: float  # the accounts' clock at arrival (seconds since the epoch)
    t0: float = field(default_factory=time.perf_counter)
    content: dict[str, Any] | None = None  # for the audit trail, when content is kept
    done: bool = False
    held: int = 0  # tokens of the caller's quota set aside while it runs
    held_at: float = 0.0  # the accounts' clock when they were set aside (their day)
    capped: bool = False  # the reply may be no longer than what is left of the key's day
    reason: str = ""  # why it was refused or cut, for its log line (``ApiError.reason``)

    def cut_at_day_limit(self, m: TurnMetrics) -> bool:
        """Whether its reply stopped where the key's day ran out, not at its own max_tokens."""
        return self.capped and m.stop_reason == "length"


@dataclass(frozen=True)
class Finished:
    """A finished request as the writer thread takes it: its usage row, which holds the key that
    made it (``UsageRecord.key_id``), whose last use it is, and its audit line. The key was found
    by its person's name when written: a use written after the person's key was renewed was set
    on the new key."""

    record: UsageRecord
    line: dict[str, Any]


def given_key(headers: Mapping[str, str]) -> str:
    header = headers.get("authorization", "")
    given = header[7:].strip() if header.lower().startswith("bearer ") else ""
    return given or headers.get("x-api-key", "").strip()


MAX_UNSAVED = 100_000  # usage rows kept in memory while the file takes none (about 20 MB)
RETRY_UNSAVED_S = 5.0  # how often the file is tried again meanwhile
CLOSING_TRY_S = 10.0  # how long a stopping server tries the file for the rows it still holds
CLOSE_WAIT_S = 30 + CLOSING_TRY_S  # how long a stopping server waits for the writer to end


class Accounts:
    """The server's accounting; every part optional (none: only the shared key is checked)."""

    def __init__(
        self,
        profile: str,
        *,
        shared_key: str | None = None,
        keys: KeyRing | None = None,
        usage: UsageLog | None = None,
        audit: AuditTrail | None = None,
        audit_content: bool = False,
        default_max_parallel: int = 0,
        clock: Clock = time.time,
    ) -> None:
        self.profile = profile
        self.default_max_parallel = default_max_parallel  # for keys without their own (0: none)
        self.shared_key = shared_key
        self.keys = keys
        self.usage = usage
        self.audit = audit
        self.audit_content = audit_content and audit is not None
        self.clock = clock
        self.quota = DailyQuota(clock, usage.tokens_on_day if usage is not None else None)
        self.metrics = ServerMetrics()
        self._pending: queue.Queue[Finished | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self.write_errors = 0
        self.write_problems: dict[str, str] = {}  # what could not be written: the problem said of it
        # usage rows the file did not take (a full disk): written with the next that it takes; they
        # were lost, and a restarted server counted the day's tokens without them
        self._unsaved: list[UsageRecord] = []
        self._unsaved_since = 0.0  # when the file was last tried
        # every row handed to the writer and not yet in the usage file (queued, being written or
        # kept), by id: what ``close`` keeps aside. It kept only the rows kept above, so a writer
        # that had not ended in time dropped the ones it held and those queued behind them
        self._not_in_file: dict[int, UsageRecord] = {}
        self._not_in_file_lock = threading.Lock()
        self.kept_aside = 0  # at close: rows kept in the usage file's side file for the next start
        self.lost = 0  # at close: rows that could not be kept there either
        self.lost_because = ""
        self.folded_in = usage.fold_in() if usage is not None else 0  # rows a stopped server kept aside
        self._protected = False
        # each key's name as last seen (by ``ApiKey.id``): a key renamed (``keys rename``) while the
        # server runs takes its day's count to the new name (its rows: the usage file, by key)
        self._names: dict[int, str] = {}
        self._renamed: dict[str, str] = {}
        self._names_lock = threading.Lock()  # (the request path's thread and /usage/today's, in the threadpool)
        if usage is not None or audit is not None:
            self._writer = threading.Thread(target=self._write_loop, name="workstation-accounts", daemon=True)
            self._writer.start()

    # --- the request path ------------------------------------------------------------------
    @property
    def protected(self) -> bool:
        """Whether a request needs a key: a shared key, or any person's key was ever made
        (keys are never deleted, only revoked, so once true it stays true)."""
        if not self._protected:
            self._protected = bool(self.shared_key) or (self.keys is not None and self.keys.any_keys())
        return self._protected

    def authenticate(self, headers: Mapping[str, str], client: str = "") -> Caller:
        t0 = time.perf_counter()
        try:
            return self._authenticate(headers, client)
        finally:
            self.metrics.accounting_seconds += time.perf_counter() - t0

    def _authenticate(self, headers: Mapping[str, str], client: str) -> Caller:
        given = given_key(headers)
        if given and self.shared_key and hmac.compare_digest(given.encode(), self.shared_key.encode()):
            return Caller(SHARED, client)
        if given and self.keys is not None:
            key = self.keys.find(given)
            if key is not None:
                if key.revoked is not None:
                    raise RevokedKey(key.name)
                self._seen(key)
                cap = key.max_parallel or self.default_max_parallel
                return Caller(key.name, client, key, Owner(key.name, cap))
        if self.protected:
            raise ApiError(401, BAD_KEY, code="invalid_api_key", reason="wrong key" if given else "no key")
        return Caller(SHARED, client)

    def _seen(self, key: ApiKey) -> None:
        """Note ``key``'s name; one renamed since it was last seen moves its day to the new name."""
        if key.id is None:
            return
        with self._names_lock:
            was = self._names.get(key.id)
            self._names[key.id] = key.name
            self._renamed.pop(key.name, None)  # (a name given anew, to another person: theirs)
            if was is not None and was != key.name:
                self.quota.rename(was, key.name)
                self._renamed[was] = key.name

    def now_named(self, name: str) -> str:
        """``name``, or what it was renamed to while the server runs."""
        seen: set[str] = set()
        while name in self._renamed and name not in seen:
            seen.add(name)
            name = self._renamed[name]
        return name

    def check_profile(self, caller: Caller) -> None:
        """ApiError(403) when the caller's key is limited to other profiles."""
        key = caller.key
        if key is not None and not key.allows(self.profile):
            raise ApiError(
                403,
                f"The key '{key.name}' may use the profiles {', '.join(key.profiles)}; "
                f"this server serves '{self.profile}'.",
                type_="permission_error",
                code="profile_not_allowed",
                fields={"profiles": list(key.profiles), "profile": self.profile},  # (a desk PC says them)
            )

    def check_quota(self, caller: Caller) -> None:
        """ApiError(429) when the caller's key used its tokens for today."""
        if caller.key is None or caller.key.tokens_per_day is None:
            return
        t0 = time.perf_counter()
        over = self.quota.check(caller.name, caller.key.tokens_per_day)
        self.metrics.accounting_seconds += time.perf_counter() - t0
        if over is not None:
            # (thousands apart as 'keys list' shows them: "2,300 of its 2,300", not "2300 of its 2300")
            raise self._over(caller, over, f"The key '{caller.name}' has used {over.used:,} of its {over.limit:,} "
                                           "tokens for today")

    def hold_quota(self, ticket: Ticket, prompt: int, reply: int) -> int:
        """The reply tokens a request may generate within its key's quota (``reply`` without
        one): its prompt and those are held until it ends, so a long document, or requests
        side by side, cannot take the key past its day. ApiError(429) when not even the prompt
        fits in what is left."""
        caller = ticket.caller
        if caller.key is None or caller.key.tokens_per_day is None:
            return reply
        now = self.clock()
        held = self.quota.hold(caller.name, caller.key.tokens_per_day, prompt, reply, now)
        if isinstance(held, OverQuota):
            left = max(0, held.limit - held.used)
            if prompt >= held.limit:  # not even a whole day holds it: waiting until midnight cannot help
                raise over_whole_day(caller.name, prompt, held.limit, left)
            if held.held and prompt < left:  # it fits the day: the key's own requests running hold the rest
                raise ApiError(
                    429, f"The key '{caller.name}' has {left:,} of its {held.limit:,} tokens left today, but its "
                         f"requests still running hold {held.held:,} of them; try again when they end.",
                    type_="insufficient_quota", code="rate_limit_exceeded", reason="held by running requests",
                    headers={"Retry-After": "2", "X-RateLimit-Limit-Tokens": str(held.limit),
                             "X-RateLimit-Remaining-Tokens": str(max(0, left - held.held))})
            raise self._over(caller, held, f"This request's prompt is {prompt:,} tokens, but the key "
                                           f"'{caller.name}' has {left:,} of its {held.limit:,} tokens left for today")
        ticket.held, ticket.held_at = prompt + held, now
        ticket.capped = held < reply
        return held

    def resets_in_s(self) -> int:
        """Seconds until the keys' day resets (the server's local midnight)."""
        now = self.clock()
        return OverQuota(0, 0, next_day_start(now)).retry_after_s(now)

    def _over(self, caller: Caller, over: OverQuota, what: str) -> ApiError:
        wait = over.retry_after_s(self.clock())
        return ApiError(
            429,
            f"{what}; the quota resets at midnight ({over.resets_text()}).",
            type_="insufficient_quota",
            code="insufficient_quota",
            reason="day limit",
            headers={
                "Retry-After": str(wait),
                "X-RateLimit-Limit-Tokens": str(over.limit),
                "X-RateLimit-Remaining-Tokens": str(max(0, over.limit - over.used)),
                "X-RateLimit-Reset-Tokens": f"{wait}s",
            },
        )

    def today(self, caller: Caller, requests: Callable[[str], tuple[int, int]]) -> dict[str, Any]:
        """What keys used today against their daily quota, what requests still running hold
        of it, and ``requests(name)``: the key's requests ``running`` and ``waiting`` for a slot
        now (``Scheduler.owner_requests``). A person's key sees its own, the server's shared key
        (or anyone on a server without keys) every key's."""
        reset = minute_text(next_day_start(self.clock()))

        def one(name: str, limit: int | None) -> dict[str, Any]:
            used, held = self.quota.used(name), self.quota.held(name)
            running, waiting = requests(name)  # (a desk PC waiting says it waits behind its own)
            # held: set aside by replies still being written (counted as used once they end;
            # what they do not use comes back): a new request has left - held to work with
            return {"key": name, "tokens": used, "tokens_per_day": limit, "held": held,
                    "left": None if limit is None else max(0, limit - used), "running": running, "waiting": waiting}

        if caller.key is not None:
            return {**one(caller.name, caller.key.tokens_per_day), "resets_at": reset}
        keys = self.keys.list() if self.keys is not None else []
        for k in keys:  # (one renamed since its last request: its day moved to the new name, not said as 0)
            self._seen(k)
        return {"keys": [one(k.name, k.tokens_per_day) for k in keys], "resets_at": reset}

    def begin(self, caller: Caller, route: str) -> Ticket:
        return Ticket(caller, route, self.clock())

    def keep_content(self, ticket: Ticket, content: dict[str, Any]) -> None:
        """The request's messages or prompt, for the audit trail when content is kept."""
        if self.audit_content:
            ticket.content = content

    def finish(
        self, ticket: Ticket, status: int, m: TurnMetrics | None = None, reply: str | None = None,
        reason: str = "",
    ) -> None:
        """Account for a request once: tokens against the quota, counters, the usage row and
        audit line (queued for the writer thread). ``reason``: why it was refused or cut, for
        its log line (else the ticket's; a reply cut where the key's day ran out says so)."""
        if ticket.done:
            return
        ticket.done = True
        if reason:
            ticket.reason = reason
        elif status == 200 and m is not None and ticket.cut_at_day_limit(m):
            ticket.reason = cut_reason("day limit")
        t0 = time.perf_counter()
        duration_s = t0 - ticket.t0
        # a client that left while its prompt was read pays for the batch stopped under it, as
        # llama-server's (which runs it to its end) counts it; a key could have read long prompts for free
        # (a prompt's text counted as it reads, not as a kept reply's tokens were generated: ``aligned_n``)
        prompt = (m.asked_n + m.dropped_n) if m is not None else 0
        cached = m.asked_cached_n if m is not None else 0
        completion = m.predicted_n if m is not None else 0
        caller = ticket.caller
        name = self.now_named(caller.name) if caller.key is not None else caller.name  # (renamed meanwhile)
        if ticket.held:
            self.quota.release(name, ticket.held, ticket.held_at)
        # (a reply the server's stopping cut off: not against the day, as ``tokens_on_day`` counts it)
        if caller.key is not None and prompt + completion and status != CUT_BY_STOPPING:
            self.quota.charge(name, prompt + completion, ticket.t)
        self.metrics.observe(self.profile, caller.name, status, m, duration_s, prompt, completion)
        if log.isEnabledFor(logging.INFO):  # --log-level info: a line a request, as llama-server's
            log.info(f"{logged_name(caller.name)} {caller.client or '-'} {ticket.route} {status} {prompt}+{completion} tokens "
                     f"in {duration_s:.2f} s{f' ({ticket.reason})' if ticket.reason else ''}")
        if self._writer is not None:
            record = UsageRecord(
                t=ticket.t,
                key=name,
                profile=self.profile,
                route=ticket.route,
                prompt_tokens=prompt,
                cached_tokens=cached,
                completion_tokens=completion,
                ttft_ms=round(m.ttft_ms, 3) if m is not None else 0.0,
                decode_tps=round(m.predicted_per_second, 3) if m is not None else 0.0,
                status=status,
                duration_ms=round(duration_s * 1000, 3),
                client=caller.client,
                key_id=caller.key.id if caller.key is not None else None,
            )
            line: dict[str, Any] = {
                "time": dt.datetime.fromtimestamp(ticket.t, dt.UTC).isoformat(timespec="milliseconds"),
                "who": caller.name,
                "profile": self.profile,
                "route": ticket.route,
                "status": status,
                "prompt_tokens": prompt,
                "cached_tokens": cached,
                "completion_tokens": completion,
                "client": caller.client,
            }
            if ticket.reason.startswith(CUT):  # a reply cut off: why ("day_limit"; the log's "cut: day limit")
                line["cut"] = ticket.reason.removeprefix(CUT).replace(" ", "_")
            if self.audit_content and ticket.content is not None:
                line.update(ticket.content)
                if reply is not None:
                    line["reply"] = reply
            if self.usage is not None:
                with self._not_in_file_lock:
                    self._not_in_file[id(record)] = record
            self._pending.put(Finished(record, line))
        self.metrics.accounting_seconds += time.perf_counter() - t0
        self.metrics.accounted += 1

    # --- the writer thread -----------------------------------------------------------------
    def _write_loop(self) -> None:
        while True:
            item = self._pending.get()
            batch = [item]
            while True:  # whatever else is waiting goes in the same transaction
                try:
                    batch.append(self._pending.get_nowait())
                except queue.Empty:
                    break
            items = [x for x in batch if x is not None]
            try:
                if items or (len(items) < len(batch) and self._unsaved):
                    with self._guard("the accounts"):  # (the last batch tries the rows kept, too)
                        self._write(items, last=len(items) < len(batch))
            finally:
                for _ in batch:
                    self._pending.task_done()
            if len(items) < len(batch):
                return

    def _write(self, items: list[Finished], last: bool = False) -> None:
        """The audit lines, then the usage rows (with the audit line each became) and the keys'
        last use. A part that fails is logged and the others are still written. ``last``: the
        server is closing, so rows kept from a failed write are tried now, whenever last tried."""
        t0 = time.perf_counter()
        # (a person renamed since their request began: the usage file writes it under the new name)
        records = [item.record for item in items]
        if self.audit is not None:
            with self._guard("the audit trail"):
                heads = self.audit.append([item.line for item in items])
                for record, (seq, digest) in zip(records, heads, strict=True):
                    record.audit_seq, record.audit_hash = seq, digest
        if self.usage is not None:
            tried = rows = self._unsaved + records
            # while the file takes none, tried again every few seconds, not at every batch (each
            # try inserted all the rows kept, beside the decoding thread)
            if last or not self._unsaved or time.monotonic() - self._unsaved_since >= RETRY_UNSAVED_S:
                # closing: tried for a while (each try waits its own 5 s for a lock), then the
                # rows are kept aside by ``close``
                deadline = time.monotonic() + (CLOSING_TRY_S if last else 0.0)
                while True:
                    with self._guard("the usage file"):
                        self.usage.add(rows)
                        rows = []
                    if not rows or time.monotonic() >= deadline:
                        break
                    time.sleep(0.5)
                self._unsaved_since = time.monotonic()
            self._unsaved = rows[-MAX_UNSAVED:]
            kept = {id(r) for r in self._unsaved}
            with self._not_in_file_lock:
                for r in tried:
                    if id(r) not in kept:  # written (or past what is kept: dropped)
                        self._not_in_file.pop(id(r), None)
        if self.keys is not None:
            used: dict[int, float] = {}  # by the key that made the request (``UsageRecord.key_id``)
            for r in records:
                # a refusal (a revoked key's 401 under its owner's name, a day used up) is no use: it
                # was written as the last use of the person's new key, never used
                if r.key_id is not None and (r.status < 400 or r.tokens):
                    used[r.key_id] = max(used.get(r.key_id, 0.0), r.t)
            with self._guard("the keys' last use"):
                self.keys.touch(used)
        self.metrics.writer_seconds += time.perf_counter() - t0

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        try:
            yield
        except Exception as err:  # noqa: BLE001 - one failed write must not stop the others
            self.write_errors += 1
            message = f"workstation: could not write {what}: {err}"
            # once per distinct problem of each part, not per request (one memory for all of
            # them said the usage file's and the audit trail's full disk in turn, twice a request)
            if self.write_problems.get(what) != message:
                log.warning(message)
            self.write_problems[what] = message
        else:
            if self.write_problems.pop(what, None) is not None:
                log.warning(f"workstation: {what} is written again")

    def flush(self) -> None:
        """Wait until every finished request is written."""
        if self._writer is not None and self._writer.is_alive():
            self._pending.join()

    def close(self) -> None:
        """Write what is left, then close. Usage rows not in the file by then (it takes none, or
        the writer did not end within CLOSE_WAIT_S) are kept in its side file
        (``usage.UNSAVED_NAME``) for the next start: ``kept_aside`` says how many, ``lost`` how
        many could not be kept there either (a full disk). One the writer still writes after
        that is in both, and the next start's ``fold_in`` adds it once."""
        if self._writer is not None and self._writer.is_alive():
            self._pending.put(None)
            self._writer.join(timeout=CLOSE_WAIT_S)
        with self._not_in_file_lock:
            rows = list(self._not_in_file.values())
            self._not_in_file.clear()
        if rows and self.usage is not None:
            try:
                self.usage.keep_aside(rows)
                self.kept_aside = len(rows)
            except OSError as err:
                self.lost = len(rows)
                self.lost_because = err.strerror or str(err)
            self._unsaved = []
        for part in (self.usage, self.keys):
            if part is not None:
                part.close()


def over_whole_day(name: str, prompt: int, limit: int, left: int) -> ApiError:
    """The refusal of a request whose prompt alone is more than its key's whole day: a 429 as
    OpenAI answers a request over a hard token limit ("Request too large ... Limit 30000,
    Requested 36278"), but with no Retry-After, and ``x-should-retry: false`` (the openai
    library retries a 429 twice): it would be refused again after midnight. The desk PC says it
    from its code and fields."""
    return ApiError(
        429, f"This request alone needs about {prompt:,} tokens, more than the whole day's {limit:,} of the key "
             f"'{name}': ask the person who runs the server for a larger daily limit, or send a shorter text.",
        type_="insufficient_quota", code="request_over_day_limit", reason="larger than a whole day",
        headers={"x-should-retry": "false", "X-RateLimit-Limit-Tokens": str(limit),
                 "X-RateLimit-Remaining-Tokens": str(left)},
        fields={"prompt_tokens": prompt, "tokens_per_day": limit})
