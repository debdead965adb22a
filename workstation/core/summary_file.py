"""A summary file as ``summarize``, ``batch`` and the app's F6 write it, read back: whether a
file is one of ours (its title and its closing line of figures, in any language the app speaks,
or its JSON), which documents it is a summary of, and whether it is whole (every part done), so
that a run writes over its own summaries only, and never over a whole one with a stopped one.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

MAX_SUMMARY_BYTES = 64 * 2**20  # a summary larger than this is no summary of ours


def earlier_summary(path: Path, of: list[str] | None = None) -> bool:
    """Whether ``path`` holds what ``summarize``, ``batch`` or the app's F6 writes: its Markdown (a title,
    and its closing line of figures: "_9 of 9 parts, 61,926 document tokens, …, 212.4 s._"), or
    its JSON (the summary, its parts and their totals). A note a person titled "# Summary of the
    meeting" is none. ``of``: the names of the documents it must be a summary of (a summary
    of another document was replaced without a word: nine minutes of a contract's summary lost)."""
    said = summary_heads(path)
    # the very documents, no more and no fewer ("Summary of Q3 report.pdf" is none of report.pdf's)
    return said is not None and (of is None or sorted(_named(head) for head in said) == sorted(of))


# a summary's closing line as it was written before it said its figures in words ("_9 of 9 parts,
# 61,926 document tokens, 10 model calls, 212.4 s._"; Turkish "_9/9 bölüm, …, 212,4 sn._"): last
# night's summaries are still ours
_OLD_FOOTER = re.compile(r"_\d.* \d+(?:[.,]\d+)? (?:s|sn)\._")


@functools.lru_cache(maxsize=1)
def _footer_patterns() -> tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]]:
    """A summary's closing line (``render_markdown``) in each language the app speaks: those of a
    whole summary, and those of one stopped part-way."""
    from workstation.core.locales import phrase_patterns

    def patterns(keys: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile("_" + said + "_") for said in phrase_patterns(keys))

    return patterns(("summary.footer", "summary.footer_one")), patterns(("summary.footer_stopped",))


def _footer(line: str) -> bool | None:
    """Whether ``line`` is a summary's closing line of a whole summary (True), of one stopped
    part-way (False), or no such line (None)."""
    whole, stopped = _footer_patterns()
    if any(p.fullmatch(line) for p in whole):
        return True
    if any(p.fullmatch(line) for p in stopped):
        return False
    if _OLD_FOOTER.fullmatch(line):
        count = re.match(r"_(\d[\d,.]*)(?: of |/)(\d[\d,.]*) ", line)
        return count is not None and count.group(1) == count.group(2)
    return None


def whole_summary(path: Path, of: list[str]) -> bool:
    """Whether ``path`` holds a whole summary of the documents ``of`` (every part of each done),
    which a run stopped part-way does not write over (a stopped --start-over replaced one with
    "Stopped after 1 of 5 parts")."""
    if not earlier_summary(path, of=of):
        return False
    text = path.read_text(encoding="utf-8")
    if text.startswith("# "):
        footers = [said for line in text.splitlines() if (said := _footer(line)) is not None]
        return bool(footers) and all(footers)
    data = json.loads(text)
    items = data["documents"] if set(data) == {"documents"} else [data]
    return all(not item.get("cancelled") for item in items)


@functools.lru_cache(maxsize=1)
def _title_patterns() -> tuple[re.Pattern[str], ...]:
    """A summary's title in each language the app speaks ("Summary of {name}", "{name} özeti")."""
    from workstation.core.locales import locale_languages, locale_texts
    from workstation.core.phrases import ENGLISH

    templates = {ENGLISH["summary.title"]}
    for lang in locale_languages():
        said = locale_texts(lang).get("summary.title")
        if isinstance(said, str) and "{name}" in said:
            templates.add(said)
    return tuple(re.compile("^" + re.escape(t).replace(re.escape("{name}"), "(.+)") + "$") for t in sorted(templates))


def _named(head: str) -> str:
    """The document a summary's title names, in any language's title (a JSON's source: as it is)."""
    return next((m.group(1) for m in (p.match(head) for p in _title_patterns()) if m), head)


def summary_heads(path: Path) -> list[str] | None:
    """What an earlier summary in ``path`` says it is of: its Markdown's titles, or its JSON's
    documents' names; None where the file is no summary of ours (``earlier_summary``)."""
    try:
        if path.stat().st_size > MAX_SUMMARY_BYTES:
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if text.startswith("# "):
        if _footer(text.rstrip().rsplit("\n", 1)[-1]) is None:
            return None
        return [line[2:].strip() for line in text.splitlines() if line.startswith("# ")]
    try:
        data = json.loads(text)
    except ValueError:
        return None
    items = data.get("documents") if isinstance(data, dict) and set(data) == {"documents"} else [data]
    if not (isinstance(items, list) and items and all(
            isinstance(i, dict) and {"summary", "chunks", "totals"} <= set(i) for i in items)):
        return None
    return [Path(str(i.get("source", ""))).name for i in items]
