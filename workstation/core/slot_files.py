"""llama-server's slot actions: one slot's KV cells saved to a named file, restored, erased.

``serve --slot-save-path DIR`` turns them on (``POST /slots/{id}?action=save|restore|erase``).
A file holds the slot's exact tokens and llama.cpp's sequence state in the format of
``core/kv_state.py`` (magic line, header with the model's ``StateKey``, checksum), so a file
made for another model, other K/V types or another context is refused with one sentence, as is
a truncated or corrupt one. File names are plain names inside DIR: no separators, no ``..``,
no absolute paths, no control characters.

The slot's cells are read and written on the scheduler's decoding thread between two steps
(``Scheduler.between_steps``); a slot serving a request is busy (``SlotBusy``). Disk reading
and writing happen in the caller's thread, never on the decoding thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from workstation.core.atomic import write_bytes_atomic
from workstation.core.errors import WorkstationError
from workstation.core.kv_state import (
    MAGIC,
    KvStateError,
    StateBytes,
    encode_state,
    read_sequence,
    read_state_file,
    write_sequence,
)
from workstation.core.slots import owners_unknown

if TYPE_CHECKING:
    from workstation.core.scheduler import Scheduler
    from workstation.core.slots import Slot

MAX_NAME_BYTES = 255
T = TypeVar("T")


class SlotFileError(WorkstationError):
    """A slot action that cannot be done as asked (bad name, no such slot or file, unusable file)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class SlotBusy(WorkstationError):
    """The slot is serving a request."""


@dataclass
class SlotResult:
    id_slot: int
    filename: str
    n_tokens: int
    n_bytes: int
    ms: float


def check_filename(name: object) -> str:
    """``name`` when it is a plain file name; SlotFileError (one sentence) otherwise."""
    if not isinstance(name, str) or not name:
        raise SlotFileError("'filename' is required: a file name inside the slot save folder.", "filename")
    bad = (
        name in (".", "..")
        or "/" in name
        or "\\" in name
        or name != name.strip()
        or name.endswith(".")
        or any(ord(c) < 32 or ord(c) == 127 for c in name)
        or len(name.encode("utf-8", errors="replace")) > MAX_NAME_BYTES
    )
    if bad:
        raise SlotFileError(
            f"'filename' {name[:80]!r} is not a plain file name; give a name without folders, "
            "'..', separators or control characters.",
            "filename",
        )
    return name


class SlotFiles:
    """Slot actions of one scheduler over one folder."""

    def __init__(self, scheduler: Scheduler, folder: Path) -> None:
        self.scheduler = scheduler
        self.folder = folder

    def path(self, name: object) -> Path:
        name = check_filename(name)
        path = self.folder / name
        if path.resolve().parent != self.folder.resolve():  # a link may not lead out of the folder
            raise SlotFileError(f"'filename' {name!r} leads out of the slot save folder.", "filename")
        return path

    def _slot(self, id_slot: int) -> Slot:
        slots = self.scheduler.slots
        if not 0 <= id_slot < len(slots):
            raise SlotFileError(
                f"There is no slot {id_slot}; this server has slots 0 to {len(slots) - 1}.", "id_slot"
            )
        slot = slots[id_slot]
        if slot.req is not None:
            raise SlotBusy(f"Slot {id_slot} is serving a request; try again when it is idle.")
        return slot

    def _between_steps(self, chore: Callable[[], T]) -> T:
        return self.scheduler.between_steps(chore).result()

    def save(self, id_slot: int, name: object) -> SlotResult:
        """Write the slot's cells to ``name`` (atomically); blocks until written."""
        path = self.path(name)
        t0 = time.perf_counter()
        if path.exists() and not _ours(path):  # (an operator's own file in the folder was written over)
            raise SlotFileError(f"{path.name!r} in the slot save folder is not a slot file this server wrote; "
                                "choose another name.", "filename")

        def grab() -> tuple[list[int], StateBytes]:
            slot = self._slot(id_slot)
            return list(slot.tokens), read_sequence(self.scheduler.model, slot.seq)

        tokens, state = self._between_steps(grab)
        data = encode_state(self.scheduler.state_key, tokens, state)
        self.folder.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, data, private=True)
        return SlotResult(id_slot, path.name, len(tokens), len(data), (time.perf_counter() - t0) * 1000)

    def restore(self, id_slot: int, name: object) -> SlotResult:
        """Load ``name`` into the slot (its cells are replaced); blocks until loaded."""
        path = self.path(name)
        t0 = time.perf_counter()
        if not path.is_file():
            raise SlotFileError(f"There is no saved slot file {path.name!r} in the slot save folder.", "filename")
        try:
            n_read = path.stat().st_size
            tokens, state = read_state_file(path, self.scheduler.state_key)
        except OSError as err:
            raise SlotFileError(f"The slot file {path.name!r} cannot be read ({err.strerror}).", "filename") from None
        except KvStateError as err:
            raise SlotFileError(f"The slot file cannot be restored: {err}.", "filename") from None
        s = self.scheduler
        if len(tokens) >= s.slot_ctx or any(not 0 <= t < s.model.n_vocab for t in tokens):
            raise SlotFileError(f"The slot file {path.name!r} holds tokens this model cannot use.", "filename")

        def load() -> None:
            slot = self._slot(id_slot)
            slot.tokens = []
            if slot.spec is not None:
                slot.spec.forget()
            if not write_sequence(s.model, slot.seq, state):  # the sequence is empty now
                raise SlotFileError(f"llama.cpp could not load the slot file {path.name!r}.", "filename")
            if s.model.seq_pos_max(slot.seq) + 1 != len(tokens):
                s.model.seq_rm(slot.seq, -1, -1)
                raise SlotFileError(f"The slot file {path.name!r} holds other cells than its header says.", "filename")
            slot.tokens = list(tokens)
            owners_unknown(slot)  # (the last request's key is none of theirs)
            slot.worth = None  # restored on purpose: kept as a whole

        self._between_steps(load)
        return SlotResult(id_slot, path.name, len(tokens), n_read, (time.perf_counter() - t0) * 1000)

    def erase(self, id_slot: int) -> int:
        """Forget the slot's cells; the number of tokens they held."""

        def erase() -> int:
            slot = self._slot(id_slot)
            n = len(slot.tokens)
            self.scheduler.model.seq_rm(slot.seq, -1, -1)
            slot.tokens = []
            owners_unknown(slot)
            if slot.spec is not None:
                slot.spec.forget()
            return n

        return self._between_steps(erase)


def _ours(path: Path) -> bool:
    """Whether ``path`` starts as a saved state of this server's does (kv_state's MAGIC)."""
    try:
        with path.open("rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False
