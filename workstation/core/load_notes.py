"""What is said as a profile loads: settings that load but work against the user, that it
runs slowly where its weights do not all fit in the memory free, and for a desk PC's profile
the settings only a model loaded here uses and where its text goes (said once a server)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workstation.core.errors import WorkstationError
from workstation.core.memory_plan import FreedMemory
from workstation.core.phrases import Phrase
from workstation.core.profile_plan import plan_for_profile, profile_model_info, setting_phrases
from workstation.core.profiles import Profile
from workstation.core.ram_room import RAM_RESERVE_BYTES, paged_phrase

if TYPE_CHECKING:
    from workstation.core.store import ConversationStore


def load_notes(profile: Profile, *, memory: bool = True, freed: FreedMemory | None = None) -> list[Phrase]:
    """``setting_phrases`` for a profile about to be loaded, each a sentence ("Note: …"):
    ``profiles check`` and ``fit`` said them, and chat and the app loaded such a profile in
    silence (a 32K context on a model trained for 8K gave worse answers, never said why).
    With ``memory``, that it runs slowly where its weights do not all fit in the memory free
    (``paged_bytes``: fit said "does not fit", and it loaded and crawled with no word why);
    ``freed``: memory the loaded model holds (asked once it has loaded), counted as free.
    Nothing for a model file that cannot be read (loading says that). A server's profile: that
    the text goes to that server (the status bar's host alone said it), and unencrypted over
    http:// to another machine."""
    if profile.backend != "llama":
        return remote_notes(profile)
    try:
        info, _ = profile_model_info(profile.model, False)
        held = plan_for_profile(profile, freed=freed) if memory else None
    except WorkstationError:
        return []
    notes: list[Phrase] = [("fit.setting_note", {"what": p}) for p in setting_phrases(profile, info)]
    if held is not None and held.paged_bytes:
        room = max(0, held.ram_available - RAM_RESERVE_BYTES)
        said = paged_phrase(held.paged_bytes, held.cpu_bytes, room, held.ram_limit is not None,
                            held.devices[-1].total_bytes)
        notes.insert(0, ("fit.setting_note", {"what": ("fit.paged_note", {"said": said})}))
    return notes


# what only a profile that loads its model here uses: written in a desk PC's profile, the server
# decides them (a draft model that did not exist went unused without a word). Not context (the
# parts of a summary for a server that does not say its own) nor parallel (requests in flight)
LOADS_HERE = ("gpu_layers", "threads", "flash_attn", "kv_cache", "speculative")


def remote_notes(profile: Profile) -> list[Phrase]:
    """A desk PC's notes: the settings it has that only a model loaded here uses; where its
    messages and documents go (nothing for a server on this PC)."""
    from urllib.parse import urlsplit

    from workstation.core.addresses import is_loopback

    unused = [key for key in LOADS_HERE if key in profile.written]
    notes: list[Phrase] = [("fit.setting_note", {"what": ("remote.unused", {"keys": ", ".join(unused)})})] \
        if unused else []
    where = urlsplit(profile.remote.base_url)
    if not where.hostname or is_loopback(where.hostname):
        return notes
    # one sentence (two "Note:"s ran together in the app's box at every start)
    sends = "remote.sends_unencrypted" if where.scheme == "http" else "remote.sends"
    notes.append(("fit.setting_note", {"what": (sends, {"server": profile.remote.server_name})}))
    return notes


def where_text_goes(note: Phrase) -> str:
    """The server a ``remote_notes`` note says the text goes to ("" for any other note): the
    app says it once for each server, not at every start."""
    what = note[1].get("what")
    if isinstance(what, tuple) and what[0] in ("remote.sends", "remote.sends_unencrypted"):
        return str(what[1].get("server", ""))
    return ""


def unsaid_notes(notes: list[Phrase], store: ConversationStore | None = None) -> list[Phrase]:
    """A profile's load notes less where the text goes for a server this app has said it of
    before (remembered in the conversations' database): a desk PC's box said it, in two
    sentences run together, at every start, and `chat` and `profiles check` at every run.
    Without ``store``, the data folder's own is opened (only where a note names a server); one
    that cannot be opened leaves every note said."""
    if not any(where_text_goes(note) for note in notes):
        return notes
    import sqlite3

    from workstation.core.store import ConversationStore

    if store is None:
        try:
            opened = ConversationStore()
        except (WorkstationError, OSError, sqlite3.Error):
            return notes
        try:
            return unsaid_notes(notes, opened)
        finally:
            opened.close()
    kept = []
    for note in notes:
        server = where_text_goes(note)
        if server:
            said = f"told where the text goes:{server}"
            if store.recalled(said):
                continue
            store.remember(said, "1")
        kept.append(note)
    return kept
