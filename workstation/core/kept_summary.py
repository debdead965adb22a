"""The last summary F6 made, kept in the conversation store for the next start (its document's
path, when, the result, and the conversation Ctrl+K made of it): read by F6, by F7 and
``conversations export`` (never written over that document) and by a delete of that
conversation (the summary goes with it). Here, not in the F6 screen: the command line read it
through Textual (0.7 s more for an export)."""

from __future__ import annotations

import json
from pathlib import Path

from workstation.core.store import ConversationStore

KEPT = "summary"  # the store's key for the last summary (ConversationStore.remember)
# the store's key for the last folder F6 summarized (its path and when, JSON): F6 shows that run's outcome
# again after a restart, read from the queue and the file of every summary in the folder (they stay there)
KEPT_FOLDER = "summary_folder"


def asked_about(store: ConversationStore, conversation_id: int) -> Path | None:
    """The document whose kept summary Ctrl+K made ``conversation_id`` of (None: none)."""
    kept = store.recalled(KEPT)
    try:
        data = json.loads(kept) if kept else {}
        return Path(data["path"]) if data.get("asked") == conversation_id else None
    except (ValueError, AttributeError, KeyError, TypeError):
        return None


def forget_summary_asked_in(store: ConversationStore, conversation_id: int) -> None:
    """The kept summary (and its document's text), where Ctrl+K made ``conversation_id`` of it."""
    kept = store.recalled(KEPT)
    try:
        asked = json.loads(kept).get("asked") if kept else None
    except (ValueError, AttributeError):
        return
    if asked == conversation_id:
        store.forget_value(KEPT)
