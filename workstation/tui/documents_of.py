"""The documents a conversation is about: the one F6 summarized for it (Ctrl+K), and those
attached to its messages (by name: a message keeps the name, not the path). An export of the
conversation (F7, ``conversations export``) is never written over one of them: F7 offered to
replace the document, and the command line's --yes replaced it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from workstation.core.store import ConversationStore
from workstation.tui.attachment import find_attached


def is_document_of(path: Path, store: ConversationStore, conversation_id: int,
                   attached_here: Iterable[Path] = ()) -> bool:
    """Whether ``path`` (a file that is there) is a document of the conversation: F6's, one
    attached this session (``attached_here``, by their paths), or one of an attached name."""
    from workstation.tui.screens.summarize import asked_about

    if not path.is_file():
        return False
    where = path.resolve()
    summarized = asked_about(store, conversation_id)
    if summarized is not None and summarized.resolve() == where:
        return True
    names = {a.name for m in store.messages(conversation_id) if (a := find_attached(m.content)) is not None}
    return path.name in names or any(p.resolve() == where and p.name in names for p in attached_here)
