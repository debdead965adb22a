"""One reply at a time in a conversation, across the app's windows and ``chat -c``: two windows
open on one conversation, sent to at once, wrote both questions and then both replies, and each
window showed another history. A turn holds a lock on the conversation's byte of a file beside
the conversation database (``fcntl.lockf``: the kernel drops it when the process ends, even by
SIGKILL); another process finds it held and says so. A summary of a document holds its byte of
the kept parts' store's lock file the same way (``kept_parts``: F6 and ``summarize`` at once).

Record locks belong to the process and go when it closes any descriptor of the file, so each
file is opened once per process and never closed."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

_files: dict[Path, int] = {}
_held: dict[tuple[Path, int], int] = {}  # (file, conversation) -> how many holds in this process
_guard = threading.Lock()


def lock_file(store_path: Path) -> Path:
    """The lock file of a conversation database, by its whole path (one file, however named)."""
    whole = store_path.absolute().resolve()
    return whole.with_name(whole.name + ".answering")


def _descriptor(path: Path) -> int | None:
    """The open lock file at ``path``; opened again where the file there is another (removed,
    or the folder restored from a backup) and this process holds nothing in the old one."""
    fd = _files.get(path)
    if fd is not None:
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except OSError:
            same = False
        if not same and not any(held_path == path for held_path, _ in _held):
            os.close(fd)  # (nothing held in it: closing it drops nothing)
            del _files[path]
            fd = None
    if fd is None:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return None  # (a read-only folder: no lock, as before there was one)
        _files[path] = fd
    return fd


def claim_turn(store_path: Path, conversation_id: int) -> bool:
    """Whether this process may write a reply in the conversation now (False: another process
    is writing one). Held until ``release_turn``, or the process ends."""
    path = lock_file(store_path)
    with _guard:
        if _held.get((path, conversation_id)):
            _held[(path, conversation_id)] += 1
            return True
        fd = _descriptor(path)
        if fd is None:
            return True
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, conversation_id, os.SEEK_SET)
        except BlockingIOError:
            return False
        except OSError:  # (a file system without locks)
            return True
        _held[(path, conversation_id)] = 1
        return True


def release_turn(store_path: Path, conversation_id: int) -> None:
    path = lock_file(store_path)
    with _guard:
        n = _held.get((path, conversation_id), 0)
        if n > 1:
            _held[(path, conversation_id)] = n - 1
            return
        if n == 1:
            del _held[(path, conversation_id)]
            try:
                fcntl.lockf(_files[path], fcntl.LOCK_UN, 1, conversation_id, os.SEEK_SET)
            except OSError:
                pass
