"""Tokens per day per key: what each key used today, and when its day ends.

A day is the server's local calendar day; the quota resets at local midnight. The clock is
injected (tests move it past midnight instead of waiting). Today's counts start from the usage
file, so a restarted server remembers what each person already used.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from workstation.core.moments import local_text

Clock = Callable[[], float]  # seconds since the epoch


def day_start(t: float) -> float:
    """Local midnight at the start of the day holding ``t``."""
    local = dt.datetime.fromtimestamp(t).astimezone()
    return local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def next_day_start(t: float) -> float:
    """Local midnight at the end of the day holding ``t`` (23 or 25 hours away on DST days)."""
    local = dt.datetime.fromtimestamp(t).astimezone()
    tomorrow = local.date() + dt.timedelta(days=1)
    return dt.datetime.combine(tomorrow, dt.time()).astimezone().timestamp()


def minute_text(t: float) -> str:
    """``t`` as local time to the minute, with its UTC offset: 2026-12-03T00:00+03:00."""
    return dt.datetime.fromtimestamp(t).astimezone().isoformat(timespec="minutes")


@dataclass(frozen=True)
class OverQuota:
    used: int
    limit: int
    resets_at: float  # seconds since the epoch
    held: int = 0  # of the rest, what requests still running hold

    def retry_after_s(self, now: float) -> int:
        return max(1, int(self.resets_at - now + 0.999))

    def resets_text(self) -> str:
        """When the day resets, as the app writes a moment (``moments.local_text``: 2026-12-08 00:00),
        for a person to read: a 429 said "resets at 2026-12-08T00:00+00:00" (``minute_text``, for
        machines: the JSON's ``resets_at``; the headers say the seconds left)."""
        return local_text(self.resets_at)


class DailyQuota:
    """Tokens used today per key name; thread-safe."""

    def __init__(self, clock: Clock = time.time, used_since: Callable[[float], dict[str, int]] | None = None) -> None:
        self.clock = clock
        self._used_since = used_since
        self._lock = threading.Lock()
        self._day = -1.0
        self._used: dict[str, int] = {}
        self._held: dict[str, int] = {}  # tokens requests still running may use (see ``hold``)

    def _today(self, now: float) -> None:
        start = day_start(now)
        if start > self._day:  # never back: a request that read the clock before midnight and
            # came here after another began the new day switched to the old one, clearing the new
            # day's holds (the key could then go past its limit by them); it is measured against the new day
            self._day = start
            self._used = dict(self._used_since(start)) if self._used_since else {}
            self._held = {}  # a hold never outlives its day (one a lost request never gave back)

    def used(self, name: str) -> int:
        with self._lock:
            self._today(self.clock())
            return self._used.get(name, 0)

    def held(self, name: str) -> int:
        """Tokens that requests of ``name`` still running have set aside (see ``hold``)."""
        with self._lock:
            self._today(self.clock())
            return self._held.get(name, 0)

    def check(self, name: str, limit: int | None) -> OverQuota | None:
        """None while ``name`` is under ``limit`` today (no limit: always)."""
        now = self.clock()
        with self._lock:
            self._today(now)
            used = self._used.get(name, 0)
        if limit is None or used < limit:
            return None
        return OverQuota(used, limit, next_day_start(now))

    def hold(self, name: str, limit: int, prompt: int, reply: int, now: float | None = None) -> int | OverQuota:
        """Set aside, for a request about to run, its ``prompt`` and at most ``reply`` tokens of
        answer out of what ``name`` has left today (requests already running hold theirs):
        the reply tokens held, fewer than asked when little is left, or OverQuota when not even
        the prompt and one reply token fit (``held`` says how much of the day running requests
        hold: they may give it back in seconds). ``release`` gives the hold back when it ends.
        ``now``: the clock as the caller read it, kept as when it was held (``release``)."""
        now = self.clock() if now is None else now
        with self._lock:
            self._today(now)
            used, held = self._used.get(name, 0), self._held.get(name, 0)
            left = limit - used - held - prompt
            if left < 1:
                return OverQuota(used, limit, next_day_start(max(now, self._day)), held)
            reply = min(reply, left)
            if day_start(now) == self._day:  # (a hold read before midnight is of the day gone, as
                # ``release`` and ``charge`` take it: held in the new day, it was never given back)
                self._held[name] = held + prompt + reply
        return reply

    def release(self, name: str, tokens: int, held_at: float | None = None) -> None:
        """Give back a hold made at ``held_at``. A hold of a day already past went with its day:
        a request that ran past midnight took its hold off the new day's, and the key's requests
        of the new day could then go past its limit by that much."""
        with self._lock:
            self._today(self.clock())
            if held_at is not None and day_start(held_at) != self._day:
                return
            self._held[name] = max(0, self._held.get(name, 0) - tokens)

    def rename(self, old: str, new: str) -> None:
        """``old``'s day (used and held) is ``new``'s from now (``keys rename`` on a running server)."""
        with self._lock:
            for counts in (self._used, self._held):
                if old in counts:
                    counts[new] = counts.get(new, 0) + counts.pop(old)

    def charge(self, name: str, tokens: int, when: float) -> None:
        """Count ``tokens`` for ``name`` on the day of ``when`` (a request that began before
        midnight counts for the day it began; a day already past is not counted again)."""
        with self._lock:
            self._today(self.clock())
            if day_start(when) == self._day:
                self._used[name] = self._used.get(name, 0) + tokens
