"""Timestamps as the databases keep them (seconds since the epoch), read tolerantly.

A file another program wrote, or damage, can hold text, NULL or a number past year 9999 where
a time belongs: one such value ended a command or the app ("year 318857 is out of range",
"fromisoformat: argument must be str"). Every place that shows or compares a stored time reads
it through ``seconds``; a bad one is shown as ``BAD`` and the rest are shown as they are.
"""

from __future__ import annotations

import datetime as dt
import math

BAD = "?"  # what a time that is not one is shown as
LATEST = 253402214400.0  # 9999-12-31 00:00 UTC: the last day datetime can show in any zone


def seconds(value: object) -> float | None:
    """``value`` as seconds since the epoch, or None where it is not a time (text, NULL, a
    boolean, not finite, before 1970 or past year 9999)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    t = float(value)
    return t if math.isfinite(t) and 0 <= t < LATEST else None


def local_time(value: object) -> dt.datetime | None:
    """``value`` as a local, aware datetime; None where it is not a time."""
    t = seconds(value)
    return None if t is None else dt.datetime.fromtimestamp(t).astimezone()


MOMENT = "%Y-%m-%d %H:%M"  # a moment in English (the locales' ``date.moment``: Turkish 07.12.2026 09:36)


class Moment(float):
    """A stored time given to a sentence (``phrases.say``): written in the sentence's language,
    through its ``date.moment``, as ``Texts.moment`` writes one (a revoked key's date was
    2026-12-07 09:36 in a Turkish sentence, where the rest of the Turkish UI says 07.12.2026 09:36)."""


def local_text(value: object, fmt: str = MOMENT) -> str:
    """``value`` in local time as ``fmt`` writes it; ``BAD`` where it is not a time."""
    at = local_time(value)
    return BAD if at is None else at.strftime(fmt)


# the SQL that gives a stored time's local day (NULL where the value is not a time): the usage
# file's summaries by day, read with the same bounds as ``seconds``
SQL_LOCAL_DAY = (f"CASE WHEN typeof(t) IN ('integer', 'real') AND t >= 0 AND t < {LATEST:.0f} "
                 "THEN date(t, 'unixepoch', 'localtime') END")
