"""What changed between two versions of a document, found by the program: a paralegal attached
Lease_v1.docx, then Lease_v2.docx, and asked "what changed?"; the second took the place of the
first, and the small model invented the changes. Here the two plain texts are compared sentence by
sentence (``difflib``): the sentences removed, added, and changed in some words ("The rent is
$1,850 → $1,975 a month."), the first ``SHOWN_CHANGES`` of them, for the model (``for_the_model``,
after the newer document, in place of the older text) and under the reply (``changes_lines``,
kept with it in the store: ``changes_record``)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from workstation.core.phrases import Phrase, say

SHOWN_CHANGES = 12  # the changes said (the model's and the reply's); the rest are "and N more"
QUOTE_CHARS = 240  # a sentence quoted in a change, at most (a clause of a contract can be a page)
SIMILAR_WORDS = 0.5  # two texts whose words are this alike (difflib's ratio) are versions of one
VERSION_WORDS = 20  # ... and each this long at least, where their names are not alike
ALIKE_NAMES_WORDS = 0.2  # ... or whose names are alike ("Lease_v1", "Lease_v2") and words this alike
COMPARED_WORDS = 5_000  # the words of each text weighed for likeness (a long document's start tells)
CONTEXT_WORDS = 8  # the words kept either side of the changed ones in a long sentence
SENTENCE_WORDS = 4  # a piece between full stops with fewer words ("1.", "Rent.") is part of the next
WRAPPED_WIDTH = 50  # a line this long not ending a sentence was wrapped at a width: it goes on below
CHARS_PER_TOKEN = 3  # a change's characters a token, counted low (figures and arrows are tokens of their own)
PAIRED = 0.5  # a removed and an added sentence this alike (in words) are one sentence changed
PAIR_AHEAD = 12  # ... looked for among this many added after the last paired (a long rewrite: not each with each)

_ENDS = (".", "!", "?", ":", ";")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=\S)")
# what a version adds to a file's name: "_v2", " (2)", "-final", " copy", "rev3", "draft 2"
_VERSION_MARK = re.compile(
    r"(?:\s*\(\s*\d+\s*\)|[\s_.\-]+(?:v(?:er(?:sion)?)?\s*\d+(?:\.\d+)*|rev(?:ision)?\s*\d*|draft\s*\d*|final|"
    r"signed|new|old|edited|updated|copy|kopya|son|yeni|eski|taslak|\d+))+$", re.IGNORECASE)


@dataclass(frozen=True)
class DocumentChange:
    """One change from the older text to the newer: ``kind`` is "removed" (``old`` only), "added"
    (``new`` only) or "changed" (both: one sentence with some words changed); ``marked``: the
    newer sentence with its changed words as "old → new", where only some words were put in
    others' place ('' where it is said as "was …, now …")."""

    kind: str
    old: str = ""
    new: str = ""
    marked: str = ""


@dataclass(frozen=True)
class DocumentComparison:
    """The changes between ``older`` and ``newer`` (the two files' names): the first
    ``SHOWN_CHANGES`` in ``changes``, and how many there are in all (``total``)."""

    older: str
    newer: str
    changes: list[DocumentChange]
    total: int


def sentences(text: str) -> list[str]:
    """``text``'s sentences (and lines: a heading, a list item), each with its spaces made one
    (doubled spaces are no change); a clause's number and heading go with its first sentence."""
    found: list[str] = []
    for paragraph in _unwrapped(text):
        pieces = _SENTENCE_END.split(paragraph)
        held = ""  # a piece too short to be a sentence ("1.", "Rent."): said with the next one
        for piece in pieces:
            held = f"{held} {piece}".strip()
            if len(held.split()) >= SENTENCE_WORDS:
                found.append(held)
                held = ""
        if held:
            found.append(held)
    return found


def _unwrapped(text: str) -> list[str]:
    """``text``'s lines, each with its spaces made one, a line broken in a sentence (wrapped at a
    width: a long line, or the next one begun in lower case) joined with the next: the same
    words wrapped elsewhere are no change. A short line without a full stop ("Rent: $1,850 a
    month", a heading) stays a line of its own."""
    lines: list[str] = []
    long = False  # the line before was long (wrapped at a width, where it did not end a sentence)
    for raw in text.split("\n"):
        line = " ".join(raw.split())
        if not line:  # (a blank line ends a paragraph)
            long = False
            continue
        if lines and long and not lines[-1].endswith(_ENDS) or lines and line[:1].islower() and not lines[-1].endswith(_ENDS):
            lines[-1] += " " + line
        else:
            lines.append(line)
        long = len(line) >= WRAPPED_WIDTH
    return lines


def _words(text: str) -> list[str]:
    return text.split()


def words_alike(a: str, b: str) -> float:
    """How alike two texts' words are (difflib's ratio, 0 to 1; of their first COMPARED_WORDS)."""
    first, second = _words(a)[:COMPARED_WORDS], _words(b)[:COMPARED_WORDS]
    if not first and not second:
        return 1.0
    matcher = difflib.SequenceMatcher(None, first, second)
    return matcher.ratio() if matcher.quick_ratio() >= ALIKE_NAMES_WORDS else matcher.quick_ratio()


def name_stem(name: str) -> str:
    """A file's name without its suffix and what a version adds to it ("Lease_v2.docx": "lease")."""
    stem = PurePath(name).stem.casefold()
    return _VERSION_MARK.sub("", stem).strip(" _.-") or stem


def looks_like_versions(older_name: str, older_text: str, newer_name: str, newer_text: str) -> bool:
    """Whether two documents look like two versions of one text: their names alike
    ("Lease_v1"/"Lease_v2", "contract"/"contract (2)") and their words in part, or their words
    mostly alike (neither a note of a few words)."""
    alike = words_alike(older_text, newer_text)
    if name_stem(older_name) == name_stem(newer_name):
        return alike >= ALIKE_NAMES_WORDS
    # (two notes of a few words are alike by chance: "Meeting at ten." and "Meeting at noon.")
    return alike >= SIMILAR_WORDS and min(len(_words(older_text)), len(_words(newer_text))) >= VERSION_WORDS


def _quoted(text: str) -> str:
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS - 1].rstrip() + "…"


def _trailing(a: str, b: str) -> str:
    """The punctuation both end with ("$1,850," and "$1,975,": ",")."""
    same = ""
    while a and b and a[-1] == b[-1] and not a[-1].isalnum():
        same, a, b = a[-1] + same, a[:-1], b[:-1]
    return same


def _marked(old: str, new: str) -> str:
    """``new`` with the words put in the place of ``old``'s as "old → new" ("The rent is $1,850 →
    $1,975 a month."), where the sentence changed only so (some words for others, under half of
    it); '' where words were only added or left out, or most of it changed."""
    a, b = _words(old), _words(new)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    changed = [op for op in ops if op[0] != "equal"]
    if not changed or any(op[0] != "replace" for op in changed) or sum(j2 - j1 for _, _, _, j1, j2 in changed) * 2 > len(b):
        return ""
    out: list[str] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            out += b[j1:j2]
            continue
        was, now = " ".join(a[i1:i2]), " ".join(b[j1:j2])
        tail = _trailing(was, now)
        out.append(f"{was[:len(was) - len(tail)]} → {now}")
    first = next(i for i, (tag, *_rest) in enumerate(ops) if tag != "equal")
    last = max(i for i, (tag, *_rest) in enumerate(ops) if tag != "equal")
    # (a long sentence: the changed words with a few either side)
    start = max(0, sum(len(b[j1:j2]) if tag == "equal" else 1 for tag, _, _, j1, j2 in ops[:first]) - CONTEXT_WORDS)
    upto = sum(len(b[j1:j2]) if tag == "equal" else 1 for tag, _, _, j1, j2 in ops[:last + 1]) + CONTEXT_WORDS
    text = " ".join(out[start:upto])
    return ("… " if start > 0 else "") + text + (" …" if upto < len(out) else "")


def _alike(a: str, b: str) -> float:
    matcher = difflib.SequenceMatcher(None, _words(a), _words(b), autojunk=False)
    return matcher.ratio() if matcher.quick_ratio() >= PAIRED else 0.0


def _block_changes(old: list[str], new: list[str]) -> list[DocumentChange]:
    """The changes of a block of ``old`` sentences replaced by ``new`` ones: each old one paired
    with the first new one of the PAIR_AHEAD after the last paired that is alike enough (one sentence changed);
    the others removed or added, in the newer text's order."""
    found: list[DocumentChange] = []
    at = 0  # the first new sentence not yet said
    for sentence in old:
        match = next((j for j in range(at, min(len(new), at + PAIR_AHEAD)) if _alike(sentence, new[j]) >= PAIRED), None)
        if match is None:
            found.append(DocumentChange("removed", old=sentence))
            continue
        found += [DocumentChange("added", new=s) for s in new[at:match]]
        found.append(DocumentChange("changed", old=sentence, new=new[match], marked=_marked(sentence, new[match])))
        at = match + 1
    return found + [DocumentChange("added", new=s) for s in new[at:]]


def document_changes(older: str, newer: str) -> list[DocumentChange]:
    """Every change from the ``older`` text to the ``newer``, in the order they come in the newer."""
    a, b = sentences(older), sentences(newer)
    found: list[DocumentChange] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "delete":
            found += [DocumentChange("removed", old=s) for s in a[i1:i2]]
        elif tag == "insert":
            found += [DocumentChange("added", new=s) for s in b[j1:j2]]
        elif tag == "replace":
            found += _block_changes(a[i1:i2], b[j1:j2])
    return found


def compared(older_name: str, older: str, newer_name: str, newer: str) -> DocumentComparison:
    """The changes from ``older`` to ``newer`` (their files' names), the first SHOWN_CHANGES kept."""
    found = document_changes(older, newer)
    return DocumentComparison(older_name, newer_name, found[:SHOWN_CHANGES], len(found))


def changes_record(comparison: DocumentComparison) -> dict[str, Any]:
    """``comparison`` as a reply's record keeps it (JSON: the store), its sentences quoted short."""
    return {"older": comparison.older, "newer": comparison.newer, "total": comparison.total,
            "changes": [{"kind": c.kind, "old": _quoted(c.old), "new": _quoted(c.new), "marked": _quoted(c.marked)}
                        for c in comparison.changes]}


def recorded_changes(record: Any) -> DocumentComparison | None:
    """A reply's kept record (``changes_record``'s) back; None where it is none or cannot be read."""
    if not isinstance(record, dict) or not isinstance(record.get("changes"), list):
        return None
    changes = [DocumentChange(str(c.get("kind", "")), str(c.get("old", "")), str(c.get("new", "")),
                              str(c.get("marked", "")))
               for c in record["changes"] if isinstance(c, dict) and c.get("kind") in ("removed", "added", "changed")]
    total = record.get("total")
    return DocumentComparison(str(record.get("older", "")), str(record.get("newer", "")), changes,
                              total if isinstance(total, int) and total >= len(changes) else len(changes))


def change_phrase(change: DocumentChange) -> Phrase:
    """One change as a line of the list ("- changed: The rent is $1,850 → $1,975 a month.")."""
    if change.kind == "removed":
        return ("changes.removed", {"text": change.old})
    if change.kind == "added":
        return ("changes.added", {"text": change.new})
    if change.marked:
        return ("changes.changed", {"text": change.marked})
    return ("changes.changed", {"text": ("changes.was_now", {"source": change.old, "text": change.new})})


def changes_lines(comparison: DocumentComparison) -> list[Phrase]:
    """The lines under the reply: "Found by the program: 3 changes between Lease_v1.docx and
    Lease_v2.docx:", a line for each change, then "and N more"."""
    if not comparison.total:
        return [("changes.none", {"file": comparison.older, "name": comparison.newer})]
    more = comparison.total - len(comparison.changes)
    return [("changes.found", {"n": comparison.total, "file": comparison.older, "name": comparison.newer}),
            *(change_phrase(c) for c in comparison.changes), *([("changes.more", {"n": more})] if more > 0 else [])]


def for_the_model(comparison: DocumentComparison, room: int | None = None) -> str:
    """The changes as the model reads them after the newer document (English, as the counted
    facts are; in place of the older text, which would take as much room again): a line saying
    what was compared, then each change indented (``without_changes`` finds it so), as many as
    ``room`` tokens hold (None: all of ``comparison``'s), then "and N more"."""
    said = say([("changes.for_model", {"file": comparison.older, "name": comparison.newer, "n": comparison.total})])
    lines, given = [said], 0
    budget = None if room is None else room * CHARS_PER_TOKEN - len(said)
    for change in comparison.changes:
        line = "  " + say([change_phrase(change)])
        if budget is not None and len(line) + 1 > budget:
            break
        lines.append(line)
        given += 1
        budget = None if budget is None else budget - len(line) - 1
    if comparison.total > given:
        lines.append("  " + say([("changes.more", {"n": comparison.total - given})]))
    return "\n".join(lines)


# the line before the changes in messages sent before it was a heading (``changes.for_model``)
_EARLIER_HEADING = "The program (not the model) compared "


def without_changes(text: str) -> str:
    """``text`` (a message as sent) without what ``for_the_model`` put after its document: the
    message as the user wrote it, its document as it was attached. (Its heading as messages sent
    earlier have it too: ``_EARLIER_HEADING``.)"""
    head, _, rest = say([("changes.for_model", {"file": "\0", "name": "\1", "n": 0})]).partition("\0")
    middle = rest.partition("\1")[0]
    if head not in text and _EARLIER_HEADING not in text:
        return text
    heading = rf"(?:{re.escape(head)}[^\n]*?{re.escape(middle)}|{re.escape(_EARLIER_HEADING)})"
    return re.sub(rf"\n\n{heading}[^\n]*(?:\n  [^\n]*)*", "", text)
