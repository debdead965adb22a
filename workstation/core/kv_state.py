"""KV state on disk: a slot's cells saved, so a reopened conversation answers at once.

Re-reading a 4,000-token history costs 15-30 s of prefill on a small CPU. When a conversation is
left (another conversation, another profile, quitting, the end of ``chat -c``), the engine saves
its slot's sequence state (llama.cpp's ``llama_state_seq_get_data``) here; when a prompt later
starts with the same tokens, the scheduler restores the longest saved prefix into the slot
(``llama_state_seq_set_data``) and prefills only the rest (``restored_n`` counts those tokens,
inside ``cache_n``).

A state is only valid for the same model file, K/V types, context per slot and number of slots
(llama.cpp's sequence state records how many KV streams its context had, and refuses another
count): those make up the ``StateKey``, and the exact tokens are stored with the state. Files are written atomically
(temporary file, fsync, rename). Each holds a magic line, a JSON header (key, tokens, byte count,
sha256 of the state) and the state bytes; a file that is foreign, truncated, corrupt or made for
another model is ignored with one warning in the log (logger "workstation.core.kv_state") and a normal prefill follows (never a
crash, never a wrong answer). The folder keeps to a byte budget (``WORKSTATION_KV_CACHE_MB``,
default 2048), evicting the least recently used files, but states that nobody's cells are and
that were never restored first (``expendable``): a file restored once is renamed ``*.reused.kv``.

What is worth keeping: a conversation's cells always (its person comes back to it); a server's
prompt only once a second request started the same way (``seen_before``: a shared system prompt,
a document several people ask about), and then only the part they had in common. A server with
many one-off long prompts (each person's own document, pasted once) wrote 22 KB a token for
each, spent its budget on them and evicted the states that were reused. The prompts asked are
remembered across starts (``SEEN_FILE``, hashes only, 1 MiB at most, written when serve stops,
and now and then as it runs: ``SEEN_KEEP_S``).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import errno
import hashlib
import json
import logging
import os
import shutil
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workstation.core.atomic import write_bytes_atomic, write_problem
from workstation.core.disk_budget import budget_from_env, evict_least_recent
from workstation.core.errors import WorkstationError
from workstation.core.moments import seconds
from workstation.core.paths import data_dir, own_folder
from workstation.core.phrases import Phrase, log_said

MAGIC = b"WORKSTATION-KV 1\n"
DEFAULT_BUDGET_MB = 2048
MIN_RESTORE_TOKENS = 64  # a restore must save at least this many tokens of prefill
REUSED = ".reused.kv"  # the name's end of a state restored at least once (``load``)
SEEN_BLOCK = 16  # prompts are remembered by the hashes of their prefixes, 16 tokens at a time
SEEN_BLOCKS = 65536  # ... the most recent this many (1M tokens of prompts, about 10 MiB)
SEEN_FILE = "seen-prompts.kv.hashes"  # those hashes, kept beside the states from one start to the next
# ... written then too where more were asked and this long has passed since they last were (in a
# thread of its own): only a clean stop wrote them, and a kill -9 (a power cut) lost a day's
SEEN_KEEP_S = 60.0
LEFTOVER_AGE_S = 600.0  # a half-written state this old was left by a process that died


class KvStateError(WorkstationError):
    """A state file that cannot be used (foreign, truncated, corrupt, another model)."""


class NotSaved(KvStateError):
    """A state not saved: the budget (``errno`` EFBIG) or its disk (ENOSPC) has no room for it."""

    def __init__(self, code: int, why: Phrase) -> None:
        super().__init__(said=[("kv.not_saved", {"why": why})])
        self.errno = code


def _unusable(path: Path, key: str, **values: str) -> KvStateError:
    """Why the state file ``path`` cannot be used, said (``kv.*`` phrases: "FILE is truncated")."""
    return KvStateError(said=[(key, {"file": path.name, **values})])


@dataclass(frozen=True)
class StateKey:
    model: str  # the model file's identity: name, size and modification time
    type_k: str
    type_v: str
    n_ctx: int  # per slot
    n_stream: int = 1  # the context's slots, each a KV stream of its own
    # flash attention as the context runs it: without it llama.cpp keeps V transposed, and a
    # state saved one way is refused the other ("incompatible V transposition"). Not in the key,
    # a profile with it off and one with it on shared the digest: each replaced the other's state,
    # and each restore failed. (Offloaded layers are not: the state holds the cells' data wherever
    # they were; swa_full is llama.cpp's default, on, in every context made here.)
    flash_attn: bool = True

    @classmethod
    def for_model(cls, path: Path, type_k: str, type_v: str, n_ctx: int, n_stream: int = 1,
                  flash_attn: bool = True) -> StateKey:
        st = path.stat()
        return cls(f"{path.name}:{st.st_size}:{st.st_mtime_ns}", type_k, type_v, n_ctx, n_stream, flash_attn)

    @property
    def digest(self) -> str:
        fields: list[object] = [self.model, self.type_k, self.type_v, self.n_ctx]
        if self.n_stream != 1 or not self.flash_attn:  # one slot, flash attention on (auto): the digest
            fields.append(self.n_stream)  # states were saved under before
        if not self.flash_attn:
            fields.append("no-flash-attn")
        return hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:16]


@dataclass
class SavedState:
    path: Path
    key_digest: str
    tokens: list[int]
    n_bytes: int
    last_used: float
    model: str = ""  # the model file's name
    kv_types: str = ""  # "f16/f16"
    tag: str | None = None  # whose cells: a saved conversation (``conversation_tag``), or None
    prompt_n: int = 0  # how many of ``tokens`` were the prompt (the rest its reply); 0: not known
    reused: bool = False  # restored at least once (or supersedes a state that was)
    n_ctx: int = 0  # the context per slot it was saved in (0: not known)
    flash_attn: bool | None = None  # flash attention on when it was saved (None: not known, an older file)


NOT_KEPT = "not-kept"  # the tag of cells nobody comes back to (a long document's parts): never saved


STORE = "store="  # how a tag names a conversation database: by the identity kept inside it


def conversation_tag(store_identity: str, conversation_id: int, created: object) -> str:
    """The tag of a saved conversation's cells: deleting the conversation deletes them too (a
    state holds the conversation's text as tokens). With the time it was made: SQLite gives a
    deleted conversation's number to the next one. The database is named by its identity
    (``ConversationStore.identity``), not its path: a data folder copied or moved (restored
    from a backup) kept states whose path named the old place, and deleting the conversation
    left them."""
    return f"conversation:{STORE}{store_identity}:{conversation_id}:{seconds(created) or 0.0:.6f}"


def tagged_conversation(tag: str | None) -> tuple[str, int, float] | None:
    """(the database as the tag names it: ``store=IDENTITY``, or the path older builds wrote,
    conversation id, time made) of a ``conversation_tag``; None for other tags."""
    if not tag or not tag.startswith("conversation:"):
        return None
    rest, _, created = tag.removeprefix("conversation:").rpartition(":")
    where, _, number = rest.rpartition(":")
    try:
        return (where, int(number), float(created)) if where else None
    except ValueError:
        return None


def same_conversation(saved: str | None, tag: str) -> bool:
    """Whether a state saved under the tag ``saved`` is the conversation of ``tag``: the same
    tag, or the tag an older build wrote for it (its database's path, wherever the folder was
    then) with the same number and the same time made, to the microsecond."""
    if saved == tag:
        return True
    old, new = tagged_conversation(saved), tagged_conversation(tag)
    return (old is not None and new is not None and not old[0].startswith(STORE) and new[0].startswith(STORE)
            and old[1:] == new[1:])


def reused_name(path: Path) -> Path:
    """The name a state file takes once restored (``load``); itself for one that has it."""
    return path if path.name.endswith(REUSED) else path.with_name(path.name.removesuffix(".kv") + REUSED)


def default_folder() -> Path:
    return data_dir() / "kv-cache"


KEEP_FREE_BYTES = 2**30  # what the cache leaves free on its disk, at most 10% of a small one


def keep_free(disk_bytes: int) -> int:
    return min(KEEP_FREE_BYTES, disk_bytes // 10)


def budget_bytes() -> int:
    return budget_from_env("WORKSTATION_KV_CACHE_MB", DEFAULT_BUDGET_MB)


def tokens_digest(tokens: list[int]) -> str:
    return hashlib.sha256(b"".join(struct.pack("<i", t) for t in tokens)).hexdigest()


log = logging.getLogger(__name__)


def _count(value: object) -> int:
    """A header's count (0 where it is missing or not a count: a file of an older build)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# a sequence's state in memory: llama.cpp's own buffer (saving) or the bytes read from a file;
# the decode thread copies neither (tens of MB for a few thousand tokens)
StateBytes = bytes | bytearray | memoryview


def read_sequence(model: Any, seq: int) -> memoryview:
    """A sequence's state as llama.cpp serializes it (cells, positions, K/V data)."""
    import llama_cpp

    size = int(llama_cpp.llama_state_seq_get_size(model.ctx, seq))
    buf = (ctypes.c_ubyte * size)()
    n = int(llama_cpp.llama_state_seq_get_data(model.ctx, buf, size, seq))
    return memoryview(buf).cast("B")[:n]


def write_sequence(model: Any, seq: int, data: StateBytes) -> bool:
    """Load ``data`` into sequence ``seq`` (emptied first); False when llama.cpp refuses it."""
    import llama_cpp

    model.seq_rm(seq, -1, -1)
    array = ctypes.c_ubyte * len(data)
    buf = array.from_buffer_copy(data) if isinstance(data, bytes) else array.from_buffer(data)
    ok = int(llama_cpp.llama_state_seq_set_data(model.ctx, buf, len(data), seq)) > 0
    if not ok:
        model.seq_rm(seq, -1, -1)
    return ok


def encode_state(key: StateKey, tokens: list[int], state: StateBytes, tag: str | None = None,
                 prompt_n: int = 0) -> bytes:
    """A state file's bytes: the magic line, the JSON header (key, tokens, byte count, sha256,
    the owner's tag, how many tokens were the prompt) and llama.cpp's sequence state."""
    header = json.dumps(
        {"key": key.digest, "model": key.model, "type_k": key.type_k, "type_v": key.type_v,
         "n_ctx": key.n_ctx, "n_stream": key.n_stream, "flash_attn": key.flash_attn, "tokens": tokens, "n_bytes": len(state),
         "sha256": hashlib.sha256(state).hexdigest(), "tag": tag, "prompt_n": prompt_n}
    ).encode()
    return MAGIC + struct.pack("<Q", len(header)) + header + state


def read_header(path: Path) -> tuple[dict[str, Any], int]:
    """(header, offset of the state bytes); KvStateError for anything but our own format."""
    try:
        with path.open("rb") as f:
            if f.read(len(MAGIC)) != MAGIC:
                raise _unusable(path, "kv.not_ours")
            raw = f.read(8)
            if len(raw) != 8:
                raise _unusable(path, "kv.truncated")
            (n,) = struct.unpack("<Q", raw)
            if n > 64 * 2**20:
                raise _unusable(path, "kv.damaged_header")
            header = json.loads(f.read(n))
    except (OSError, ValueError, UnicodeDecodeError) as err:
        raise _unusable(path, "kv.unreadable", reason=str(err)) from None
    if not isinstance(header, dict) or not isinstance(header.get("tokens"), list):
        raise _unusable(path, "kv.damaged_header")
    return header, len(MAGIC) + 8 + n


def read_state_file(path: Path, key: StateKey) -> tuple[list[int], bytearray]:
    """The tokens and state bytes of a file made by ``encode_state``, checked against ``key``,
    the byte count and the checksum; KvStateError (one sentence) otherwise."""
    header, offset = read_header(path)
    if header.get("key") != key.digest or header.get("model") != key.model:
        raise _unusable(path, "kv.other_settings")
    n = header.get("n_bytes")
    try:
        with path.open("rb") as f:
            if not isinstance(n, int) or n < 0 or os.fstat(f.fileno()).st_size - offset != n:
                raise _unusable(path, "kv.truncated")
            f.seek(offset)
            data = bytearray(n)
            if f.readinto(data) != n:
                raise _unusable(path, "kv.truncated")
    except OSError as err:
        raise _unusable(path, "kv.unreadable", reason=str(err)) from None
    if hashlib.sha256(data).hexdigest() != header.get("sha256"):
        raise _unusable(path, "kv.corrupt")
    tokens = header["tokens"]
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise _unusable(path, "kv.damaged_header")
    return tokens, data


# a state file's header as listed: (size, inode), key digest, tokens, model file, K/V types, tag,
# prompt's tokens, context per slot, flash attention
_Header = tuple[tuple[int, int], str, list[int], str, str, str | None, int, int, bool | None]


def kept_store(folder: Path | None = None) -> KvStateStore | None:
    """The store an engine or a server saves its states to; None where the budget keeps none
    (``WORKSTATION_KV_CACHE_MB=0``): a store there copied each slot's cells out (tens of MiB) and
    made its folder before ``save`` kept nothing. The states kept before the budget was lowered
    to nothing go now (they went at the first save)."""
    store = KvStateStore(folder)
    if store.budget:
        return store
    if store.folder.is_dir():
        store.evict()
    return None


class KvStateStore:
    def __init__(self, folder: Path | None = None, budget: int | None = None) -> None:
        self.folder = folder or default_folder()
        self.budget = budget_bytes() if budget is None else budget
        # headers already read, by file and its (size, inode): a prompt's lookup reads only new
        # files (every request of a server looks, in the decoding thread)
        # per file: (size, inode), key digest, tokens, model file, K/V types, tag, prompt's tokens,
        # context per slot, flash attention (read once a version)
        self._known: dict[Path, _Header] = {}
        # the prompts asked here (``seen_before``): hashes of their prefixes, read from
        # ``SEEN_FILE`` at the first, written back by ``keep_seen`` when some were added
        self._seen: collections.OrderedDict[bytes, None] | None = None
        self._seen_added = False
        self.keep_seen_every_s = SEEN_KEEP_S
        self._seen_kept_at = time.monotonic()
        self._seen_taken = 0  # copies of them taken to be written; the newest written (one at a time):
        self._seen_written = 0  # a late write of an older copy never replaces a newer one
        self._seen_lock = threading.Lock()
        self._seen_writer: threading.Thread | None = None

    def _path(self, key: StateKey, tokens: list[int], reused: bool = False) -> Path:
        return self.folder / f"{key.digest}-{tokens_digest(tokens)[:24]}{REUSED if reused else '.kv'}"

    def seen_before(self, prompt: list[int]) -> int:
        """How many of ``prompt``'s first tokens an earlier prompt given here had too (a whole
        number of 16-token blocks; 0: none), remembering this one. Earlier starts count too
        (``keep_seen``): forgotten at each start, a document asked once a day on a machine
        switched off every night was never saved."""
        h = hashlib.blake2b(digest_size=16)
        shared, still = 0, True
        if self._seen is None:
            self._seen = collections.OrderedDict.fromkeys(self._read_seen())
        seen = self._seen
        self._seen_added = True
        for end in range(SEEN_BLOCK, len(prompt) + 1, SEEN_BLOCK):
            h.update(struct.pack(f"<{SEEN_BLOCK}i", *prompt[end - SEEN_BLOCK:end]))
            d = h.digest()
            if still and d in seen:
                shared = end
            else:
                still = False
            seen[d] = None
            seen.move_to_end(d)
        while len(seen) > SEEN_BLOCKS:
            seen.popitem(last=False)
        now = time.monotonic()
        if now - self._seen_kept_at >= self.keep_seen_every_s and not self._writing_seen():
            self._seen_kept_at = now  # (written off the request: a copy of them, in a thread)
            self._seen_writer = threading.Thread(target=self._write_seen, args=self._copy_seen(),
                                                 name="kv-seen", daemon=True)
            self._seen_writer.start()
        return shared

    def _writing_seen(self) -> bool:
        return self._seen_writer is not None and self._seen_writer.is_alive()

    def _copy_seen(self) -> tuple[int, list[bytes]]:
        """The prompts asked, to be written (in the thread that asks ``seen_before``)."""
        self._seen_taken += 1
        self._seen_added = False
        return self._seen_taken, list(self._seen or ())

    def _read_seen(self) -> list[bytes]:
        """The hashes ``keep_seen`` wrote (oldest first); none from a file that is not theirs."""
        path = self.folder / SEEN_FILE
        try:
            with path.open("rb") as f:
                raw = f.read(SEEN_BLOCKS * 16 + 1)
        except FileNotFoundError:
            return []
        except OSError as err:
            log_said(log, [("kv.seen_unreadable", {"file": path.name, "reason": err.strerror or str(err)})])
            return []
        if len(raw) % 16 or len(raw) > SEEN_BLOCKS * 16:
            log_said(log, [("kv.seen_damaged", {"file": path.name})])
            return []
        return [raw[i:i + 16] for i in range(0, len(raw), 16)]

    def keep_seen(self) -> None:
        """Write the prompts asked here (``seen_before``) beside the states, for the next start
        (atomically, with those another process kept meanwhile, the most recent last); a
        problem costs only that memory, said in the log. ``seen_before`` writes them now and
        then too; this one waits for such a write under way."""
        if self._seen is not None and self._seen_added:
            self._write_seen(*self._copy_seen())
        writer = self._seen_writer
        if writer is not None:
            writer.join()

    def _write_seen(self, taken: int, mine: list[bytes]) -> None:
        with self._seen_lock:
            if taken <= self._seen_written:  # a newer copy is written already
                return
            try:
                have = set(mine)
                others = [d for d in self._read_seen() if d not in have]
                self.own_folder()
                self._write(self.folder / SEEN_FILE, b"".join((others + mine)[-SEEN_BLOCKS:]))
            except OSError as err:
                log_said(log, [("kv.seen_not_kept", {"why": write_problem(self._failed_path(err), err)})])
                self._seen_added = True  # (tried again at the next time, or the stop)
                return
            self._seen_written = taken

    def _failed_path(self, err: OSError) -> Path:
        """The file or folder an OSError of this store names (its folder where it names none)."""
        return Path(os.fsdecode(err.filename or self.folder))

    def not_saved(self, err: OSError) -> list[Phrase]:
        """Why a state was not saved, said (``log_said``): a full disk, a folder it cannot write."""
        return [("kv.not_saved", {"why": write_problem(self._failed_path(err), err)})]

    def save(self, key: StateKey, tokens: list[int], state: StateBytes, tag: str | None = None,
             prompt_n: int = 0, turn_ends: frozenset[int] = frozenset()) -> Path | None:
        """Write a state (``prompt_n``: how many of ``tokens`` were the prompt, the rest its
        reply; ``turn_ends``: the model's end-of-turn tokens, ``superseded``). None: nothing
        kept, for a budget of 0 (``WORKSTATION_KV_CACHE_MB=0`` keeps nothing on disk). NotSaved
        where the budget is smaller than the state (EFBIG), or where, older states evicted, its
        disk still has no room for it beside what the cache leaves free for everything else
        (``keep_free``: ENOSPC). Either way the folder is brought down to its budget: one
        lowered since kept all it held."""
        if not self.budget:  # (no folder made for it: ``kept_store`` makes no store for it at all)
            if self.folder.is_dir():
                self.evict()
            return None
        self.own_folder()
        older = [e for e in self.entries() if e.key_digest == key.digest and self.superseded(e, tokens, tag, turn_ends)]
        # a later turn of a state that was restored (a conversation, a prompt asked again) is one too
        path = self._path(key, tokens, reused=any(e.reused for e in older))
        data = encode_state(key, tokens, state, tag, min(max(0, prompt_n), len(tokens)))
        self.remove_leftovers(LEFTOVER_AGE_S)  # first: they may be what fills the disk
        size = f"{len(data) / 2**20:.1f} MiB"
        if len(data) > self.budget:  # no state this size is kept: said as the budget, not the disk (it
            self.evict()  # said "the disk is full" with 76 GB free, and nothing evicted down to the budget)
            raise NotSaved(errno.EFBIG, ("kv.over_budget", {"size": size, "budget": f"{self.budget // 2**20} MiB"}))
        room = self.room()
        if len(data) > room:  # (not after evicting: one state too large emptied the cache for nothing)
            raise NotSaved(errno.ENOSPC, ("kv.no_room", {"size": size, "folder": str(self.folder)}))
        evict_least_recent(self.folder, "*.kv", room - len(data), first=self.expendable)  # the room it needs
        if not self._write(path, data):
            return path  # (another thread of this process writes the same state now)
        for entry in older:
            if entry.path != path:
                self.remove(entry.path)
        self.evict()
        return path

    def own_folder(self) -> None:
        """The folder made where it is missing, before anything is written into it (the prompts
        asked too: serve made it 0755 with them, and 0700 only at the first state)."""
        if self.folder == default_folder():  # (the states hold people's text: the folder its owner's alone, 0700)
            own_folder(self.folder)
        else:  # (--slot-save-path: one made is made so; one there keeps the mode its owner gave it)
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _write(self, path: Path, data: bytes) -> bool:
        """Write ``path`` atomically through this process's part of it (``own_part``), its lock
        held while it is written (``held_part``): one a killed process left is told from one
        being written now, and removed at once (``remove_leftovers``). False where another
        thread of this process is writing the same file now."""
        from workstation.core.installed_models import held_part, own_part

        part = own_part(path)
        try:
            with held_part(part, ("kv.being_written", {"file": path.name})):
                write_bytes_atomic(path, data, private=True, make_folders=False, part=part)
        except WorkstationError:
            return False
        return True

    def expendable(self, path: Path) -> bool:
        """Whether the budget drops ``path`` before the others: a state nobody's cells are (no
        conversation's) that was never restored. A conversation's state stays in the plain
        least-recently-used order: its person comes back to it."""
        if path.name.endswith(REUSED):
            return False
        seen = self._known.get(path)
        return seen is None or seen[5] is None

    @staticmethod
    def superseded(older: SavedState, tokens: list[int], tag: str | None, turn_ends: frozenset[int] = frozenset()) -> bool:
        """Whether a state saved earlier for the same key can never be worth more than the one
        just saved (``tokens``, ``tag``): it is the start of it (an earlier turn), or an earlier
        state of the same conversation. A conversation that outgrew its context drops its
        oldest messages, and a reply asked again or an edited message changes what follows:
        its earlier states then no longer start what it sends, and each stayed on disk (tens
        of MiB) until the budget pushed out other conversations' states instead. Nobody's state
        (a summary's, a server's prompt) of the same prompt, with another reply, is superseded
        too: a document summarized again added one more state of it each time.

        With ``turn_ends`` (the model's end-of-turn tokens) the same conversation's earlier state
        goes only when both begin with the same first message (the instructions): a profile of
        the same model file with other instructions (F3, quoting-lookup, then office-cpu again)
        saved the conversation's state under its own instructions, which superseded the first
        profile's, and going back read the whole conversation again (0/1,449 cached, 17 s)."""
        if tokens[: len(older.tokens)] == older.tokens:
            return True
        if older.tag is None and 0 < older.prompt_n and tokens[: older.prompt_n] == older.tokens[: older.prompt_n]:
            return True
        if tag is None or tag == NOT_KEPT or not same_conversation(older.tag, tag):
            return False
        from workstation.core.slots import common_prefix

        return not turn_ends or any(t in turn_ends for t in tokens[: common_prefix(older.tokens, tokens)])

    def entries(self, key: StateKey | None = None) -> list[SavedState]:
        """Saved states (for ``key`` only when given); unreadable files are skipped."""
        out = []
        if not self.folder.is_dir():
            return out
        known: dict[Path, _Header] = {}
        for path in self.folder.glob("*.kv"):
            if key is not None and not path.name.startswith(key.digest + "-"):
                continue
            try:
                st = path.stat()
                ident = (st.st_size, st.st_ino)  # a rewrite is a new file (written aside, renamed)
                seen = self._known.get(path)
                if seen is None or seen[0] != ident:
                    header, _ = read_header(path)
                    seen = (ident, str(header.get("key")), [int(t) for t in header["tokens"]],
                            str(header.get("model", "")).split(":", 1)[0],
                            f"{header.get('type_k', '?')}/{header.get('type_v', '?')}",
                            header.get("tag") if isinstance(header.get("tag"), str) else None,
                            _count(header.get("prompt_n")), _count(header.get("n_ctx")),
                            flash if isinstance(flash := header.get("flash_attn"), bool) else None)
            except (KvStateError, OSError):
                continue
            known[path] = seen
            out.append(SavedState(path, seen[1], seen[2], st.st_size, st.st_mtime, seen[3], seen[4], seen[5], seen[6],
                                  path.name.endswith(REUSED), seen[7], seen[8]))
        prefix = "" if key is None else key.digest + "-"  # what this look saw, removed files dropped
        self._known = {p: v for p, v in self._known.items() if not p.name.startswith(prefix)} | known
        return out

    def damaged(self) -> list[Path]:
        """Files of the folder that are no state it can use: cut short (a crash or a full disk
        while one was written by an older build), or not a state at all. ``entries`` leaves
        out those whose header it cannot read; ``cache list`` shows them all and ``cache clear
        --damaged`` removes them."""
        out = []
        if not self.folder.is_dir():
            return out
        for path in sorted(self.folder.glob("*.kv")):
            try:
                header, offset = read_header(path)
                if header.get("n_bytes") == path.stat().st_size - offset:
                    continue
            except KvStateError:
                pass
            except OSError:  # (removed meanwhile)
                continue
            out.append(path)
        return out

    def covers(self, key: StateKey, tokens: list[int], tag: str | None = None) -> bool:
        """True when a saved state with the same ``tag`` holds ``tokens`` already (as all or the
        start of its own): saving them again would write the same cells twice. Another owner's
        copy does not count: the new one supersedes it (``save``), so that deleting the new
        owner's conversation deletes those cells too (a document's summary, then questions)."""
        n = len(tokens)
        return any(
            len(e.tokens) >= n and e.tokens[:n] == tokens and e.tag == tag for e in self.entries(key)
        )

    def forget(self, tag: str) -> int:
        """Delete every state saved with ``tag`` (any model), or with the tag an older build
        gave the same conversation (``same_conversation``): the files deleted."""
        n = 0
        for entry in self.entries():
            if same_conversation(entry.tag, tag):
                self.remove(entry.path)
                n += 1
        return n

    def forget_deleted(self, store_identity: str, store_path: Path, holds: Callable[[int, float], bool]) -> int:
        """Delete the states of the conversations of the database ``store_identity`` (tags of
        older builds: its path ``store_path``) that are gone (``holds`` says which are there): a
        window that had a conversation open saved its cells after another window deleted it,
        and they stayed, the deleted text in them."""
        n = 0
        names = {STORE + store_identity, str(store_path.resolve())}
        for entry in self.entries():
            found = tagged_conversation(entry.tag)
            if found is not None and found[0] in names and not holds(found[1], found[2]):
                self.remove(entry.path)
                n += 1
        return n

    def best(self, key: StateKey, prompt: list[int], at_least: int,
             moved: str | None = None) -> tuple[SavedState, int, list[tuple[int, int, int]]] | None:
        """The saved state that holds the most of ``prompt`` (> ``at_least`` tokens): the tokens
        it holds, and the runs of its cells to move to where the prompt has them (``moved_runs``;
        none: a prefix alone). Runs are looked for only in the states of the conversation
        ``moved`` (its tag; None: none): a conversation past its context leaves its oldest
        messages out, and its state saved at the close (``chat -c``, the app restarted) then
        shared only the instructions with the prompt, so the whole conversation was read again
        (502 tokens, none cached), where the same turn in one run moves the cells."""
        from workstation.core.slots import common_prefix, moved_runs

        best: tuple[SavedState, int, list[tuple[int, int, int]]] | None = None
        limit = len(prompt) - 1  # one token is always evaluated for the first logits
        for entry in self.entries(key):
            n = common_prefix(entry.tokens, prompt, limit)
            runs = moved_runs(entry.tokens, prompt, n) if moved is not None and same_conversation(entry.tag, moved) else []
            n += sum(run[2] for run in runs)
            if n > at_least and (best is None or n > best[1]):
                best = (entry, n, runs)
        return best

    def load(self, key: StateKey, entry: SavedState) -> bytearray:
        """The state bytes, checked against the key, the byte count and the checksum. Renamed
        ``*.reused.kv`` since it was listed (another slot or process restored it first), it is
        read under that name: the second restore read its whole prompt again."""
        path = entry.path
        try:
            _, data = read_state_file(path, key)
        except KvStateError:
            if path.exists() or not reused_name(path).exists():
                raise
            _, data = read_state_file(reused_name(path), key)
        return data

    @staticmethod
    def restored(entry: SavedState) -> None:
        """llama.cpp took the state ``load`` read: restored for the first time, it is renamed
        ``*.reused.kv`` (the budget keeps it before those never restored), and it is recently
        used (evicted last). Not before: a state llama.cpp refused was renamed so all the same."""
        path = entry.path
        with contextlib.suppress(OSError):  # evicted meanwhile: the bytes are read already
            if not path.exists():
                path = reused_name(path)
            if not path.name.endswith(REUSED):
                os.replace(path, reused_name(path))
                path = reused_name(path)
            os.utime(path)

    @staticmethod
    def remove(path: Path) -> None:
        """Delete a listed state, also when it was renamed ``*.reused.kv`` since (restored
        meanwhile): it was left behind, a deleted conversation's text or a superseded turn."""
        try:
            path.unlink()
        except FileNotFoundError:
            reused_name(path).unlink(missing_ok=True)

    def room(self) -> int:
        """Bytes the cache may hold now: its budget, but no more than leaves its disk
        ``keep_free`` bytes free. The 2 GiB budget whatever the free space filled a small disk
        to its last megabyte, and then the conversations' file could not be written."""
        cached = 0
        for path in self.folder.glob("*.kv"):
            with contextlib.suppress(OSError):  # (evicted meanwhile by another process)
                cached += path.stat().st_size
        try:
            usage = shutil.disk_usage(self.folder)
        except OSError:
            return self.budget
        return max(0, min(self.budget, cached + usage.free - keep_free(usage.total)))

    def evict(self) -> list[Path]:
        """Remove files until the folder fits the budget (and its disk keeps its room): the
        ``expendable`` ones first, least recently used first among each."""
        self.entries()  # (the headers of files written by others: whose they are)
        return evict_least_recent(self.folder, "*.kv", self.room(), first=self.expendable)

    def clear(self) -> tuple[int, list[int]]:
        """Delete every state, the prompts asked and the half-written files a stopped program
        left: (the states deleted, the bytes of each half-written file deleted)."""
        n = 0
        for path in self.folder.glob("*.kv"):
            path.unlink(missing_ok=True)
            n += 1
        (self.folder / SEEN_FILE).unlink(missing_ok=True)  # (a state is saved at a prompt's second ask)
        self._seen, self._seen_added = None, False
        return n, self.remove_leftovers(60.0)  # (an older build's, being written by a running server now, is younger)

    def leftovers(self) -> list[tuple[Path, int, bool]]:
        """The half-written files of the folder: (path, bytes, being written now). A part
        (``_write``) is being written while its writer holds its lock; one left by a process
        that was killed holds none. An older build's ``.NAME.kv.XXXX.tmp`` has no lock: being
        written while younger than ``LEFTOVER_AGE_S``."""
        from workstation.core.installed_models import held_part

        out: list[tuple[Path, int, bool]] = []
        if not self.folder.is_dir():
            return out
        now = time.time()
        for path in sorted(self.folder.glob(".*.kv*.part")):
            try:
                size = path.stat().st_size
                with held_part(path, ("kv.being_written", {"file": path.name})):
                    pass
                writing = False
            except WorkstationError:
                writing = True
            except OSError:
                continue
            out.append((path, size, writing))
        for path in sorted(self.folder.glob(".*.kv.*.tmp")):
            with contextlib.suppress(OSError):
                st = path.stat()
                out.append((path, st.st_size, now - st.st_mtime <= LEFTOVER_AGE_S))
        return out

    def remove_leftovers(self, older_than_s: float) -> list[int]:
        """Half-written files a killed process left (tens of MiB each, conversation text in
        them): nothing removed them, and the budget did not count them. A part whose writer is
        gone goes at once (its lock is free: ``_write``); an older build's ``.tmp``, which holds
        no lock, only once older than ``older_than_s`` (another process may be writing one now).
        The bytes of each file removed (``cache clear`` says them)."""
        from workstation.core.installed_models import held_part

        now = time.time()
        removed: list[int] = []
        parts = set(self.folder.glob(".*.kv*.part"))
        parts |= {lock.with_name(lock.name.removesuffix(".answering")) for lock in self.folder.glob(".*.kv*.part.answering")}
        for part in parts:
            try:
                with held_part(part, ("kv.being_written", {"file": part.name})):
                    if part.exists():  # (only its lock file was left)
                        size = part.stat().st_size
                        part.unlink()  # (its lock file goes as the hold ends)
                        removed.append(size)
            except (WorkstationError, OSError):
                continue
        for path in self.folder.glob(".*.kv.*.tmp"):
            with contextlib.suppress(OSError):
                st = path.stat()
                if now - st.st_mtime > older_than_s:
                    path.unlink()
                    removed.append(st.st_size)
        return removed
