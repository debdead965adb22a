"""The last summary F6 made, kept in the conversation store for the next start (its document's
path, when, the result, and the conversation Ctrl+K made of it): read by F6, by F7 and
``conversations export`` (never written over that document) and by a delete of that
conversation (the summary goes with it). Here, not in the F6 screen: the command line read it
through Textual (0.7 s more for an export)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def content_hash(path: Path) -> str | None:
    """The document's bytes as a digest (the same content under any name or time); None where
    it cannot be read."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def profile_key(profile: Any) -> str:
    """What makes two summaries of one document the same work: the profile, its model, its
    context and a part's budget (as ``kept_parts.version_of`` tells a stopped run's parts apart)."""
    return (f"{getattr(profile, 'ref', '')}:{getattr(profile, 'model', '')}:{getattr(profile, 'context', '')}:"
            f"{profile.sampling.max_tokens}")


@dataclass
class KeptSummary:
    """F6's last summary as kept (``KEPT``): its document, when it was made, the document's
    content digest and profile then, and its Markdown by UI language ("en", "tr")."""

    path: Path
    at: float
    sha256: str
    profile: str
    size: int
    written: dict[str, str]


def kept_whole(kept: str | None) -> KeptSummary | None:
    """The kept record ``kept`` (``store.recalled(KEPT)``) where it is a whole summary whose
    document's content and profile were kept with it (one kept before they were: None)."""
    try:
        data = json.loads(kept) if kept else {}
        if not data.get("sha256") or not data.get("profile") or data["result"].get("cancelled"):
            return None
        written = {str(k): str(v) for k, v in dict(data.get("written") or {}).items() if v}
        if not written:
            return None
        size = int(str(data.get("version") or "-1:").split(":", 1)[0])
        return KeptSummary(Path(data["path"]), float(data["at"]), str(data["sha256"]), str(data["profile"]), size,
                           written)
    except (ValueError, AttributeError, KeyError, TypeError):
        return None


def kept_for(kept: KeptSummary | None, source: Path, profile: Any) -> KeptSummary | None:
    """``kept`` where it is a summary of the document at ``source`` as it is now (the same content,
    under whatever name) by ``profile``: a folder run takes it instead of summarizing it again."""
    if kept is None or kept.profile != profile_key(profile):
        return None
    try:
        if source.stat().st_size != kept.size:  # (no digest of every document of a folder)
            return None
    except OSError:
        return None
    return kept if content_hash(source) == kept.sha256 else None
