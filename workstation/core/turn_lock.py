"""One reply at a time in a conversation, across the app's windows and ``chat -c``: two windows
open on one conversation, sent to at once, wrote both questions and then both replies, and each
window showed another history. A turn holds a lock on the conversation's byte of a file beside
the conversation database (``fcntl.lockf``: the kernel drops it when the process ends, even by
SIGKILL); another process finds it held and says so. A summary of a document holds its byte of
the kept parts' store's lock file the same way (``kept_parts``: F6 and ``summarize`` at once).

Record locks belong to the process and go when it closes any descriptor of the file, so each
file is opened once per process, and closed only once another file has taken its name or the
process holds nothing in it any more."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from pathlib import Path

_files: dict[Path, int] = {}
_held: dict[tuple[Path, int], int] = {}  # (file, conversation) -> how many holds in this process
_guard = threading.Lock()
_TRIES = 5  # a claim's tries where the file is replaced under it again and again (then it holds the last)


def lock_file(store_path: Path) -> Path:
    """The lock file of a conversation database, by its whole path (one file, however named)."""
    whole = store_path.absolute().resolve()
    return whole.with_name(whole.name + ".answering")


def _open(path: Path) -> int | None:
    """The lock file at ``path``, opened once in this process (None: it cannot be, as in a
    read-only folder: no lock, as before there was one)."""
    fd = _files.get(path)
    if fd is None:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return None
        _files[path] = fd
    return fd


def _is_at(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except OSError:
        return False


def _move_to_new_file(path: Path, old: int) -> None:
    """The lock file at ``path`` is no longer the one open (removed, or the folder restored
    from a backup): this process's turns held in the old one are taken in the new one, and the
    old one is closed (which drops them there: no other process can reach it by its name)."""
    del _files[path]
    new = _open(path)
    if new is not None:
        for held_path, conversation_id in _held:
            if held_path == path:
                try:
                    fcntl.lockf(new, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, conversation_id, os.SEEK_SET)
                except OSError:  # (another process took it in the new file meanwhile: nothing undoes that)
                    pass
    os.close(old)


def claim_turn(store_path: Path, conversation_id: int, again: bool = True) -> bool:
    """Whether this process may write a reply in the conversation now (False: another process
    is writing one). Held until ``release_turn``, or the process ends. ``again``: a hold of
    this process's own counts as this one's (held once more); not so for a download, which
    another thread of this process may be doing (F4 left and opened again: a second p began
    a second download of the file into the same part).

    The lock is taken in the file the path names once it is taken (the classic check): a
    process that had the file open before it was removed or replaced locked the old one, and
    another process that opened the new one held the same turn at once."""
    path = lock_file(store_path)
    with _guard:
        if _held.get((path, conversation_id)):
            if not again:
                return False
            _held[(path, conversation_id)] += 1
            return True
        for attempt in range(_TRIES):
            fd = _open(path)
            if fd is None:
                return True
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, conversation_id, os.SEEK_SET)
            except BlockingIOError:
                return False
            except OSError:  # (a file system without locks)
                return True
            if _is_at(fd, path) or attempt == _TRIES - 1:
                _held[(path, conversation_id)] = 1
                return True
            _move_to_new_file(path, fd)  # (its close drops the lock just taken in the old file)
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
            fd = _files.get(path)
            if fd is not None:
                with contextlib.suppress(OSError):
                    fcntl.lockf(fd, fcntl.LOCK_UN, 1, conversation_id, os.SEEK_SET)
                # no hold of this process left in it: closed (it drops none), not kept open for good:
                # each saved KV state's part has a lock file of its own name, and a server kept one
                # descriptor open a state saved, deleted files piling up to "too many open files"
                if not any(held == path for held, _ in _held):
                    del _files[path]
                    with contextlib.suppress(OSError):
                        os.close(fd)
