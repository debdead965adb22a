"""One process at a time on something, by a lock file that says who holds it: an exclusive
``flock`` on the file, held while the process works (the kernel drops it when the process dies,
even by SIGKILL: a crashed holder leaves nothing stuck), and the holder's words written in it
(its process id; serve's port too), read by the one refused. ``batch`` holds one per output
folder (``BatchLock``), ``serve`` one per data folder (``commands/serve.py``).

The file is removed while still locked at the end, and a process that locked a file just removed
so tries the new one, so two never both hold a lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

TRIES = 20  # files locked, each removed under it meanwhile, before ``LockChanging``


class LockHeld(Exception):
    """Another process holds the lock; ``holder``: what it wrote in the file ("" when nothing yet)."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


class LockChanging(Exception):
    """The file at the path was another each time it was locked (inode numbers that change
    under us: some network file systems)."""


class HeldFile:
    """The lock on ``path`` for this process: OSError where the file cannot be opened or made,
    ``LockHeld`` where another process holds it, ``LockChanging`` (see there)."""

    def __init__(self, path: Path, mode: int = 0o644) -> None:
        self.path = path
        self._fd = -1
        for _attempt in range(TRIES):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, mode)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
                os.close(fd)
                raise LockHeld(holder) from None
            try:
                at_path, held = os.stat(path), os.fstat(fd)
                if (at_path.st_dev, at_path.st_ino) == (held.st_dev, held.st_ino):
                    self._fd = fd
                    return  # the file at the path is the one locked
            except FileNotFoundError:
                pass
            os.close(fd)  # the holder before removed it as it ended: lock the new one
        raise LockChanging

    def write(self, words: str) -> None:
        """Say who holds it (OSError where the disk takes nothing)."""
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, words.encode(), 0)

    def release(self) -> None:
        """Remove the file and let go (again: nothing)."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            os.close(self._fd)
            self._fd = -1

