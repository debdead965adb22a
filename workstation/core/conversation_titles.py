"""A conversation's title and the words that name it: one line, cut at a word's end, a profile
as people name it, and the words around a search's match (what the list shows under a title)."""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from pathlib import Path

from workstation.core.letters import fold
from workstation.core.locales import locale_languages, locale_texts
from workstation.core.pasted_tables import pasted_tables, question_of

MAX_TITLE_CHARS = 120
NUMBER_TITLE = re.compile(r"#([0-9]{1,9})")  # a conversation by its number, as `conversations` lists it


def profile_key(ref: str) -> str:
    """A conversation's or a reply's profile as people name it: a profile file's path as its
    name (``/home/ayla/profiles/fast.yaml``: ``fast``)."""
    return Path(ref).stem if "/" in ref else ref


def clean_title(title: str) -> str:
    """A title as one line: tabs, line breaks and other control characters become spaces (a
    tab showed as two rows in the list, like two conversations), runs of spaces one, at most
    MAX_TITLE_CHARS characters."""
    return one_line(title)[:MAX_TITLE_CHARS]


# what a title cut from a message does not end with: the punctuation that leads on to the words cut
# away ("Write a short email to a client, Mr Brown," was the title, and F7's file began with it)
LEADS_ON = ",;:-–—([{\"'“‘«/&"


# words a title cut from a message does not end on: they lead on to the words cut away ("Kiracımızdan
# gelen mesaj şu, buna kibar bir" stopped mid-phrase), in the languages the app speaks (lower case)
FUNCTION_WORDS = frozenset((
    "a an the of to in on at for with by from into onto about as and or but nor so than that this these those "
    "my our your his her their its is are was were be been will would can could should shall may might must "
    "please if when while whether because very some any no not"
).split()) | frozenset((
    "bir ve ile veya ya yahut ama fakat ancak çünkü ki da de için gibi kadar daha en çok az her hem ne "
    "bu şu o bana sana buna şuna ona bize size onlara"
).split())
CLAUSE_MARKS = ",;:.!?"  # a cut made at one of them reads whole ("…mesaj şu" where a comma followed)
CUT_MARK = "…"  # said where a title was cut from a longer message


def title_from_message(text: str, limit: int = 48) -> str:
    """A new conversation's title from its first message: where it is too long, cut where what
    is kept reads whole, with "…" after it: at a punctuation mark in its second half ("…mesaj
    şu, buna kibar bir" stopped mid-phrase), else at a word's end ("… works in an o", cut
    mid-word, was the name `chat -c` wanted typed back) before any trailing function words
    (``FUNCTION_WORDS``: "a", "the", "bir", "ve"), without the punctuation after that word that
    leads on (``LEADS_ON``). A message with a table pasted in it: its own words, without the
    table's lines ("What is the total of this invoice? Item Qty Unit" was the title, and F7's
    file name); the table's where it has no other words."""
    line = one_line(question_of(text, pasted_tables(text))) or one_line(text)
    if len(line) <= limit:
        return line
    room = limit - len(CUT_MARK)
    cut = line[:room + 1].rsplit(" ", 1)[0]  # (the character after the room a space: the whole of it)
    cut = cut if room // 2 <= len(cut) <= room else line[:room]
    marks = [i for i, c in enumerate(cut) if c in CLAUSE_MARKS and (i + 1 == len(cut) or cut[i + 1] == " ")]
    if marks and marks[-1] >= room // 2:  # a clause's end in the second half: up to it
        cut = cut[:marks[-1] + 1]
        if cut[-1] in ".!?":  # (a whole sentence: said as it is)
            return cut
    else:
        words = cut.split(" ")
        while len(words) > 1 and words[-1].strip(LEADS_ON).casefold() in FUNCTION_WORDS \
                and len(" ".join(words[:-1])) >= room // 2:
            words.pop()
        cut = " ".join(words)
    return (cut.rstrip(LEADS_ON + CLAUSE_MARKS + " ") or cut) + CUT_MARK


def one_line(text: str) -> str:
    """``text`` on one line: control characters (tabs, line breaks) and runs of spaces become one space."""
    flat = "".join(" " if unicodedata.category(c)[0] == "C" else c for c in text)
    return " ".join(flat.split())


SNIPPET_BEFORE, SNIPPET_CHARS = 10, 40


def _words_rx(needle: str) -> re.Pattern[str] | None:
    """The words of ``needle``, any spaces or line breaks between them, case aside."""
    words = needle.split()
    return re.compile(r"\s+".join(map(re.escape, words)), re.IGNORECASE) if words else None


def match_span(text: str, needle: str) -> tuple[int, int] | None:
    """Where in ``text`` the words of ``needle`` are (as a search finds them: case and the
    Turkish letters' dots and tails aside, "sozlesme" in "Sözleşme"); None where they are not."""
    rx = _words_rx(needle)
    if rx is None:
        return None
    found = rx.search(text)
    if found is None:
        folded = fold(text)
        if len(folded) != len(text):  # (a letter that folds to two: its places are not the text's)
            return None
        found = _words_rx(fold(needle)).search(folded)  # type: ignore[union-attr]
    return None if found is None else found.span()


def match_snippet(text: str, needle: str) -> str:
    """The words around ``needle`` in ``text``, on one line (why a search found a conversation);
    "" when the text holds no such words. Only the text near the match is flattened (a
    message can be a whole document, and the list is searched as the user types)."""
    rx = _words_rx(needle)
    found = rx.search(text) if rx is not None else None
    if rx is None or found is None:
        return ""
    lo = max(0, found.start() - 4 * SNIPPET_CHARS)
    flat = one_line(text[lo : found.end() + 4 * SNIPPET_CHARS])
    hit = rx.search(flat)
    if hit is None:  # not after flattening (cannot happen: \s+ spans what one_line joins)
        return ""
    # from the start when the match shows there; else from a word just before it
    start = 0 if lo == 0 and hit.end() <= SNIPPET_CHARS - SNIPPET_BEFORE else max(0, hit.start() - SNIPPET_BEFORE)
    if start:
        space = flat.find(" ", start, hit.start())
        start = space + 1 if space >= 0 else start
    piece = flat[start : start + SNIPPET_CHARS]
    more = start + SNIPPET_CHARS < len(flat) or found.end() + 4 * SNIPPET_CHARS < len(text)
    return ("…" if start or lo else "") + piece + ("…" if more else "")


def root_title(title: str) -> str:
    """``title`` without what a conversation gone on from an earlier message adds to it (its
    ``conv.changed_title``, ``conv.again_title`` and their "copy k" forms, in any of the app's
    languages), so that a copy of a copy is named after the first ("X (changed at message 2)
    (changed at message 3)")."""
    title = title.strip()
    while (found := title_change(title)) is not None:
        title = found[0]
    return title


def title_change(title: str) -> tuple[str, str, str] | None:
    """What a conversation gone on from an earlier message has in its title (``root_title``):
    the title without it (whole: a copy of a copy keeps the first's mark), how it went on
    ("changed", or "again": sent unchanged) and at which message ("2"); None where it has none."""
    title = title.strip()
    for kind, wording in _changed_wordings():
        found = wording.fullmatch(title)
        if found is not None and found.group("title").strip():
            return found.group("title").strip(), kind, found.group("n")
    return None


@cache
def _changed_wordings() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """What ``title_change`` finds: its phrases' wordings, ``{title}`` anything, ``{n}`` and ``{k}`` numbers."""
    return tuple((kind, re.compile(re.escape(text).replace(r"\{title\}", "(?P<title>.+)", 1)
                                   .replace(r"\{n\}", "(?P<n>[0-9.,]+)", 1).replace(r"\{k\}", "[0-9.,]+")))
                 for lang in locale_languages()
                 for kind, key in (("changed", "conv.changed_title"), ("changed", "conv.changed_title_again"),
                                   ("again", "conv.again_title"), ("again", "conv.again_title_again"))
                 if "{title}" in (text := locale_texts(lang).get(key, "")))
