"""A model file as it was when llama.cpp loaded it, to tell whether it has changed on disk since.

llama.cpp maps the file into memory (mmap) and reads its weights from the mapping as it
decodes. A file overwritten in place or cut short while it is mapped ends the process that
reads it with a bus error (SIGBUS: ``serve`` exited with status 135, saying nothing, and its
clients got no HTTP status); one replaced by another (a new download, a copy moved over it)
leaves the old weights mapped, so the model no longer is the file its name says. Each turn
checks the file first (``Scheduler.submit``): changed, the turn is refused with a sentence
(``serve``: a 503; the app loads the model again) before anything reads the mapping. A change
between the check and a read of the mapping still ends the process: the check narrows the
window, it cannot close it (only a copy of the weights in memory could, at twice the memory).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from workstation.core.errors import EngineError, WorkstationError

CHANGED = "engine.model_file_changed"  # the phrase of a turn refused because its model file changed


@dataclass(frozen=True)
class FileStamp:
    """What identifies a file's contents cheaply: its device and inode (a file replaced by
    another has a new one), size and modification time in nanoseconds (one written in place)."""

    path: Path
    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> FileStamp:
        st = os.stat(path)
        return cls(path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def changed(self) -> bool:
        """Whether the file at ``path`` is not the one stamped any more (gone too)."""
        try:
            return FileStamp.of(self.path) != self
        except OSError:
            return True

    def check(self) -> None:
        """Raise ``EngineError`` (the phrase ``CHANGED``) when the file has changed since."""
        if self.changed():
            raise EngineError(said=[(CHANGED, {"name": self.path.name})])


def model_file_changed(err: WorkstationError) -> bool:
    """Whether a turn was refused because its model file changed on disk since it was loaded."""
    return bool(err.said) and err.said[0][0] == CHANGED
