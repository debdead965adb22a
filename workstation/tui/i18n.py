"""UI text in English and Turkish, from ``locales/<lang>.yaml``.

The language comes from the settings, else from the locale (``LC_ALL``, ``LC_MESSAGES``,
``LANG`` starting with ``tr`` gives Turkish), else English. A key missing in Turkish falls
back to English, and a key missing everywhere shows as itself so nothing crashes.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from workstation.core.errors import WorkstationError
from workstation.core.invocation import command
from workstation.core.locales import locale_texts
from workstation.core.moments import BAD, local_text, local_time
from workstation.core.phrases import ENGLISH, Phrase, fill_in, local_number, local_value, say

LANGUAGES = ("en", "tr")


def detect_language(environ: dict[str, str] | None = None) -> str:
    """The UI's language as gettext chooses messages: LANGUAGE's first language we have
    ("tr:en"; ignored under the C locale, as gettext does), else LC_ALL, LC_MESSAGES, LANG.
    LANGUAGE was ignored: a desktop set to Turkish that way got English."""
    env = os.environ if environ is None else environ
    locale_name = next((env[name] for name in ("LC_ALL", "LC_MESSAGES", "LANG") if env.get(name)), "")
    if locale_name.split(".")[0] not in ("", "C", "POSIX"):
        for wanted in env.get("LANGUAGE", "").split(":"):
            if wanted[:2].lower() in LANGUAGES:
                return wanted[:2].lower()
    return "tr" if locale_name.lower().startswith("tr") else "en"


class Texts:
    """``texts("key", name=...)`` gives the text in the current language."""

    RECENT = 64  # the sentences said last that ``phrase_of`` finds again

    def __init__(self, lang: str = "en") -> None:
        self.lang = lang if lang in LANGUAGES else "en"
        self._recent: OrderedDict[str, Phrase] = OrderedDict()

    def phrase_of(self, text: str) -> Phrase | None:
        """The key and values that one of the last sentences said (``texts(key, ...)``) was said
        with: a toast still shown is said again in the language of now after F9 (``App.notify``);
        None for a sentence made otherwise (joined from two, or said by ``say``)."""
        return self._recent.get(text)

    def get(self, key: str) -> str | None:
        """The text for ``key`` in the current language, None where it has none (the caller
        then has its own English: the planner's verdicts)."""
        return locale_texts(self.lang).get(key)

    def error(self, err: BaseException | None, place: str | None = None, foreign: bool = False) -> str:
        """An error's sentence in the current language: a ``WorkstationError`` raised with
        phrases (``said=``) is translated where this language has them, anything else is
        ``str(err)``. A phrase may have an in-app wording (``in_app.<key>``: "press F4" where
        the command line's says "run './run.sh models list'"), used here first; ``place``, one
        for where the app says it (``"in_f3"``: F3's list, where "F3 chooses another profile"
        told the user to open what was open), used before that. ``foreign``: where an error
        not the app's own may come (a net under a worker, a load), it is named with its kind,
        ``KeyError: 'x'`` (a bare ``'x'`` says nothing)."""
        if foreign and not isinstance(err, WorkstationError):
            return f"{type(err).__name__}: {err}" if err is not None else "unknown"
        said = getattr(err, "said", None)
        if not said:
            return str(err)
        return say(said, self.in_app if place is None else lambda key: self.get(f"{place}.{key}") or self.in_app(key))

    def in_app(self, key: str) -> str | None:
        """A phrase's text as the app says it (``in_app.<key>``: "F6's setting", where the command
        line's names an option), else as ``get``: the lookup for ``say`` in the app."""
        return self.get(f"in_app.{key}") or self.get(key)

    def number(self, text: str) -> str:
        """A number written the English way (``f"{n:,}"``, ``f"{x:.1f}"``) as this language
        writes it: 8.192 and 23,0 in Turkish. Values given to ``texts(key, ...)`` and
        ``say(..., texts.get)`` get this already; it is for figures shown outside a sentence."""
        return local_number(text, self.get)

    def day(self, iso_day: str) -> str:
        """A day the app keeps as 2026-12-05 as this language writes dates (Turkish 05.12.2026)."""
        try:
            return dt.date.fromisoformat(iso_day).strftime(self("date.day"))
        except (ValueError, TypeError):  # (a day the usage file holds no time for: "?")
            return iso_day if isinstance(iso_day, str) else BAD

    def moment(self, when: float | Any) -> str:
        """A moment (a timestamp, or an aware datetime) in this machine's local time, as this
        language writes it: 2026-12-05 06:38, in Turkish 05.12.2026 06:38."""
        if isinstance(when, int | float | str | None):  # (a stored time that is none: "?")
            return local_text(when, self("date.moment"))
        return when.astimezone().strftime(self("date.moment"))

    def day_heading(self, when: object, today: dt.date) -> str:
        """The heading the conversation list puts over a conversation last used at ``when`` (a
        stored time): Today, Yesterday, the weekday's name within the week before ``today``,
        else its month ("November 2026"), as ChatGPT's list is headed; ``BAD`` where it is not
        a time."""
        at = local_time(when)
        if at is None:
            return BAD
        days = (today - at.date()).days
        if days <= 0:  # (a clock set back: what is "later" than today is today's)
            return self("date.today")
        if days == 1:
            return self("date.yesterday")
        if days < 7:
            return self("date.weekdays").split()[at.weekday()]
        return self("date.month_year", month=self("date.months").split()[at.month - 1], year=at.year)

    def day_line(self, when: object, today: dt.date) -> str:
        """The line the chat puts over a day's first message: as the list's heading within the
        week before ``today`` (Today, Yesterday, Tuesday), else the day itself (Tuesday 1
        December; the year too where it is not ``today``'s), as chat apps do; ``BAD`` where it
        is not a time."""
        at = local_time(when)
        if at is None or (today - at.date()).days < 7:
            return self.day_heading(when, today)
        values = {"weekday": self("date.weekdays").split()[at.weekday()], "day": at.day,
                  "month": self("date.months").split()[at.month - 1], "year": at.year}
        return self("date.weekday_day" if at.year == today.year else "date.weekday_day_year", **values)

    def capital(self, text: str) -> str:
        """``text`` with a capital first letter, as this language writes it (Turkish: indir ->
        İndir, ısıt -> Isıt; str.capitalize() wrote Indir and lowered the rest)."""
        if not text:
            return text
        first = {"i": "İ", "ı": "I"}.get(text[0], text[0].upper()) if self.lang == "tr" else text[0].upper()
        return first + text[1:]

    def series(self, items: Sequence[str], most: int = 3) -> str:
        """``items`` as a sentence lists them: ".docx and .txt", ".png, .odt and README" (Turkish:
        ve); more than ``most``: the first ``most`` and "…", with no "and" (the list goes on)."""
        if len(items) > most:
            return ", ".join(items[:most]) + " …"
        if len(items) < 2:
            return "".join(items)
        return ", ".join(items[:-1]) + self("list.and") + items[-1]

    def file_kinds(self, suffixes: Sequence[str] | None = None) -> str:
        """The kinds of file with ``suffixes`` (all the app reads: None), as people call them: "text,
        Word (.docx), PDF, Excel (.xlsx), CSV, PowerPoint (.pptx), e-mail (.eml) and web page" (the
        ending where an older kind is not read: no .doc; one no word is known for as it is: ".gguf").
        A sentence with ``{documents}`` gets it for all (Ctrl+P and F1's line for attaching)."""
        from workstation.core.documents import FILE_KIND_WORDS, SUPPORTED_SUFFIXES

        suffixes = SUPPORTED_SUFFIXES if suffixes is None else suffixes
        given = set(suffixes)
        keys = dict.fromkeys(key for suffix, key in FILE_KIND_WORDS.items() if suffix in given)  # (its order)
        said = [self(key) for key in keys] + [suffix for suffix in suffixes if suffix not in FILE_KIND_WORDS]
        return self.series(said, most=len(said))

    def key(self, key: str) -> str:
        """A key as people write it in this language: Ctrl+N, F3, Esc; the arrows and the space
        bar, which have no word on them, in its words (``key.up``: Up, Turkish Yukarı ok)."""
        if len(key) == 1:
            return key  # p, d: as typed
        names = {"escape": "Esc", "delete": "Del", "pageup": "PgUp", "pagedown": "PgDn"}
        return "+".join(self.get(f"key.{part}") or names.get(part)
                        or (part.upper() if re.fullmatch(r"f\d+", part) or len(part) == 1 else part.capitalize())
                        for part in key.split("+"))

    def yes_no_keys(self) -> tuple[str, str]:
        """The keys that answer a yes/no question: y/n, in Turkish e/h (evet, hayır)."""
        return self("dialog.yes_key"), self("dialog.no_key")

    def __call__(self, key: str, **values: Any) -> str:
        """The sentence ``key`` in this language, with ``values`` filled in: figures as this
        language writes them (``local_value``), and a value that is a phrase (``(key, values)``)
        or a list of them said in this language too, so that a notice said again after F9 is
        wholly in the new one (its values, "Temperature 0.2", were made in the old)."""
        said = self._said(key, values)
        self._recent[said] = (key, values)
        if len(self._recent) > self.RECENT:
            self._recent.popitem(last=False)  # (atomic: workers say sentences too)
        return said

    def _said(self, key: str, values: dict[str, Any]) -> str:
        text = locale_texts(self.lang).get(key) or locale_texts("en").get(key) or ENGLISH.get(key) or key
        if "{cmd}" in text:  # advice naming a command: the one that started us (./run.sh ...)
            values.setdefault("cmd", command())
        if "{documents}" in text:  # the kinds of document the app reads, from what its reader reads
            values.setdefault("documents", self.file_kinds())
        if not values:
            return text
        try:
            return fill_in(text, {k: self._value(k, v) for k, v in values.items()})
        except (KeyError, IndexError, ValueError):
            return text

    def _value(self, name: str, value: Any) -> Any:
        if _is_phrase(value):
            return self._said(value[0], dict(value[1]))
        if isinstance(value, list) and value and all(_is_phrase(v) for v in value):
            return "".join(self._said(k, dict(v)) for k, v in value)
        return local_value(name, value, self.get)


def _is_phrase(value: Any) -> bool:
    """``value`` is a phrase, ``(key, values)``: said as a sentence's part in the language of now."""
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], dict)
