"""A message sent with a document: how the two are joined in the message, and found in it
again, to fold the document away in the chat and to attach it again when the message is put
back in the box to be changed (Up)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workstation.core.pasted_tables import PASTED_TITLE, pasted_known, tables_read_again
from workstation.core.summary_chunks import ATTACHED_SEPARATOR, attached_named, without_counted
from workstation.core.table_facts import counted_answer

if TYPE_CHECKING:
    from workstation.core.conversation_records import StoredMessage
    from workstation.core.table_facts import SheetFacts

SEPARATOR = ATTACHED_SEPARATOR  # between the words and the line that names the document


def with_attached(text: str, label: str, document: str) -> str:
    """``text`` (the user's words, may be empty) followed by ``document`` under ``label``
    ("Document: report.pdf")."""
    return f"{text}{SEPARATOR}{label}\n\n{document}".strip()


@dataclass(frozen=True)
class Attached:
    """Where ``with_attached`` put a document in a message."""

    text: str  # the user's words before it ('' where it was sent with none)
    name: str  # the document's file name
    document: str  # its text
    start: int  # where its text begins in the message (the words, rule and name are before it)


def find_attached(content: str) -> Attached | None:
    """The document sent with this message, in any of our languages (None: none)."""
    found = attached_named().search(content)
    if found is None:
        return None
    name = next(v for k, v in found.groupdict().items() if v is not None)
    # (without the counts of the rows its question named: the document as it was attached, and is again)
    return Attached(content[: found.start()], name, without_counted(content[found.end():]), found.end())


def conversation_document(questions: Iterable[str], asked: str) -> Attached | None:
    """The document a question is asked of: its own, else the one last attached to the
    conversation's user messages ``questions`` (in order) before it (``asked``, as sent; an
    earlier one where it was asked again, Alt+R): a follow-up asked without attaching it again
    is about it still, its text in the conversation the model reads. A table pasted in a message's
    own words is one too, named ``PASTED_TITLE`` (its text: ``pasted_known``): "When were these
    invoices issued?" after a pasted table had its invented dates unchecked. None: none there."""
    said = list(questions)
    if asked in said:  # (only those up to it: a later message's document is not what it was asked of)
        said = said[:len(said) - said[::-1].index(asked)]
    elif asked:
        said.append(asked)
    for content in reversed(said):
        if (found := find_attached(content)) is not None:
            return found
        if pasted := pasted_known(content):
            return Attached("", PASTED_TITLE, pasted, 0)
    return None


def conversation_tables(messages: Iterable[StoredMessage]) -> list[SheetFacts]:
    """The tables a follow-up asked without attaching a document again is counted of: those of the
    document last attached to the conversation's ``messages`` (in order) whose tables the program
    counted (the facts kept with its message), their rows read again from its text there
    (``pasted_tables.tables_read_again``), as when it was attached: reopened after a restart, or
    continued by ``chat -c``, the conversation's "how many invoices does Birlik AS have?" had no
    counted line, the program's count of the first run lost with the app's memory. [] where none
    is, or its tables cannot be read again exactly."""
    for message in reversed(list(messages)):
        if message.role != "user" or not message.facts:
            continue
        found = find_attached(message.content)
        return tables_read_again(found.document, found.name, message.facts) if found is not None else []
    return []


def follow_up_counted(question: str, tables: list[SheetFacts]) -> list[dict[str, Any]]:
    """What the program counts for a follow-up asked without a document attached, of the
    conversation's ``tables`` (``conversation_tables``, or those attached in this run of the app):
    what the question names of them, never a bare count of their rows, which "how many people
    came?" would be of any question."""
    return [item for item in counted_answer(question, tables) if item.get("what") != "rows"] if tables else []
