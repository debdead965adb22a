"""The documents a conversation is about: the one F6 summarized for it (Ctrl+K), and those
attached to its messages this session (a message keeps the name, not the path). An export of
the conversation (F7, ``conversations export``) is never written over one of them: F7 offered
to replace the document, and the command line's --yes replaced it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from workstation.core.store import ConversationStore
from workstation.tui.attachment import find_attached


def is_document_of(path: Path, store: ConversationStore, conversation_id: int,
                   attached_here: Iterable[Path] = ()) -> bool:
    """Whether ``path`` (a file that is there) is a document of the conversation: F6's, or one
    attached to it this session (``attached_here``, by their paths)."""
    from workstation.core.kept_summary import asked_about

    if not path.is_file():
        return False
    where = path.resolve()
    summarized = asked_about(store, conversation_id)
    if summarized is not None and summarized.resolve() == where:
        return True
    # an attached one by its path where this session attached it (by its name alone, a file of that name
    # anywhere was refused)
    names = {a.name for m in store.messages(conversation_id) if (a := find_attached(m.content)) is not None}
    return any(p.name in names and p.resolve() == where for p in attached_here)
