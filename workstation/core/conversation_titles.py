"""A conversation's title and the words that name it: one line, cut at a word's end, a profile
as people name it, and the words around a search's match (what the list shows under a title)."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

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


def title_from_message(text: str, limit: int = 48) -> str:
    """A new conversation's title from its first message: cut at a word's end where it is too
    long ("… works in an o", cut mid-word, was the name `chat -c` wanted typed back), without
    the punctuation after that word that leads on (``LEADS_ON``). A message with a table pasted in
    it: its own words, without the table's lines ("What is the total of this invoice? Item Qty
    Unit" was the title, and F7's file name); the table's where it has no other words."""
    line = one_line(question_of(text, pasted_tables(text))) or one_line(text)
    if len(line) <= limit:
        return line
    cut = line[:limit + 1].rsplit(" ", 1)[0]  # (the character after the limit a space: the whole of it)
    cut = cut if limit // 2 <= len(cut) <= limit else line[:limit]
    return cut.rstrip(LEADS_ON + " ") or cut


def one_line(text: str) -> str:
    """``text`` on one line: control characters (tabs, line breaks) and runs of spaces become one space."""
    flat = "".join(" " if unicodedata.category(c)[0] == "C" else c for c in text)
    return " ".join(flat.split())


SNIPPET_BEFORE, SNIPPET_CHARS = 10, 40


def match_snippet(text: str, needle: str) -> str:
    """The words around ``needle`` in ``text``, on one line (why a search found a conversation);
    "" when the text holds no such words. Only the text near the match is flattened (a
    message can be a whole document, and the list is searched as the user types)."""
    words = needle.split()
    if not words:
        return ""
    rx = re.compile(r"\s+".join(map(re.escape, words)), re.IGNORECASE)
    found = rx.search(text)
    if found is None:
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
