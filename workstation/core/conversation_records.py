"""What the conversation database keeps, as the app handles it: a conversation and its
messages, a question taken out with its reply, a draft's attached document, the errors the
store raises, and a conversation's and a message's fields as the store writes them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workstation.core.errors import WorkstationError

Draft = tuple[Path, str]  # a document attached to a message not sent yet: its path and text


class StoreError(WorkstationError):
    """The conversation database cannot be used."""


class ConversationGone(StoreError):
    """The conversation was deleted (in another window of the app, by the command line) while
    it was open here: a message for it has nowhere to go."""


@dataclass
class StoredMessage:
    id: int
    role: str  # system | user | assistant
    content: str
    metrics: dict[str, Any] | None = None
    created: float = 0.0
    reasoning: str = ""  # a reasoning model's thinking (not part of ``content``)
    shown: str = ""  # what the chat shows instead of ``content`` ('': the content)
    # the facts the program counted of its attached document's tables (``table_facts.facts_record``'s)
    facts: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Conversation:
    id: int
    title: str
    profile: str = ""
    created: float = 0.0
    updated: float = 0.0
    messages: list[StoredMessage] = field(default_factory=list)
    match: str = ""  # from a search: the words around where a message matched (not the title)
    match_id: int | None = None  # the message those words are from (opened there: Ctrl+F's result)
    instructions: str = ""  # the conversation's own, in place of its profile's system prompt ('': the profile's)
    # its own sampling settings (Ctrl+E) in place of its profile's, by field ({}: the profile's)
    sampling: dict[str, Any] = field(default_factory=dict)


@dataclass
class TakenOut:
    """A question and its reply taken out of a conversation (``ConversationStore.take_out``),
    with the question's earlier replies (rows of ``earlier_replies`` without their conversation)."""
    messages: list[StoredMessage]
    earlier: list[tuple[Any, ...]]


ROW_FIELDS = ("title", "profile", "instructions", "sampling")


def row_fields(conv: Conversation) -> tuple[Any, ...]:
    """A conversation's own fields as ``ROW_FIELDS`` names them, as the store keeps them."""
    return conv.title, conv.profile, conv.instructions, sampling_text(conv.sampling)


def message_fields(m: StoredMessage) -> tuple[Any, ...]:
    """A message as the store keeps it, its number aside (the order of the messages table's
    columns from ``created``)."""
    return (m.created, m.role, m.content, json.dumps(m.metrics) if m.metrics else None, m.reasoning, m.shown,
            facts_text(m.facts))


def facts_text(facts: list[dict[str, Any]]) -> str:
    """A message's facts as the store keeps them ('' none)."""
    return json.dumps(facts) if facts else ""


def facts_read(text: str | None) -> list[dict[str, Any]]:
    """A message's facts as ``facts_text`` kept them ([] none, or none that can be read)."""
    try:
        facts = json.loads(text) if text else []
    except ValueError:
        return []
    return [f for f in facts if isinstance(f, dict)] if isinstance(facts, list) else []


@dataclass
class AsAdopted:
    """A conversation as ``ConversationStore.adopt`` took it in: its fields and its messages'
    (``message_fields``) by number, what ``take_in`` tells this store's changes from."""
    row: tuple[Any, ...]
    messages: dict[int, tuple[Any, ...]]


def sampling_text(own: dict[str, Any] | None) -> str:
    """A conversation's own sampling settings as the store keeps them ('' for none)."""
    return json.dumps(own, sort_keys=True) if own else ""


def sampling_read(text: str | None) -> dict[str, Any]:
    """The settings ``sampling_text`` wrote; {} for none or a damaged record (the profile's:
    whether each value is usable is the profile's check, ``profile_check.with_own_sampling``)."""
    try:
        own = json.loads(text) if text else {}
    except ValueError:
        return {}
    return own if isinstance(own, dict) else {}
