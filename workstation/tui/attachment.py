"""A message sent with a document: how the two are joined in the message, and taken apart
again when the message is put back in the box to be changed (Up)."""

from __future__ import annotations

import re
from functools import cache

from workstation.tui.i18n import every_language

SEPARATOR = "\n\n---\n"


def with_attached(text: str, label: str, document: str) -> str:
    """``text`` (the user's words, may be empty) followed by ``document`` under ``label``
    ("Document: report.pdf")."""
    return f"{text}{SEPARATOR}{label}\n\n{document}".strip()


@cache
def _label_patterns() -> tuple[re.Pattern[str], ...]:
    """``chat.document`` in each language as a pattern that finds it and its name."""
    patterns = []
    for label in every_language("chat.document"):
        head, _, tail = label.partition("{name}")
        start = rf"(?:\A---\n|{re.escape(SEPARATOR)})"  # no words before it: the message starts with it
        patterns.append(re.compile(rf"{start}{re.escape(head)}(?P<name>[^\n]+?){re.escape(tail)}\n\n"))
    return tuple(patterns)


def split_attached(content: str) -> tuple[str, tuple[str, str] | None]:
    """A sent message's text and its document's (name, text), as ``with_attached`` joined them
    in any of our languages (None: it had none)."""
    found = [m for m in (p.search(content) for p in _label_patterns()) if m is not None]
    if not found:
        return content, None
    first = min(found, key=lambda m: m.start())
    return content[: first.start()], (first["name"], content[first.end():])
