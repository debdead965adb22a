"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path


def umask() -> int:
    """The process's umask, read from /proc (os.umask can only read it by setting it, which
    would change it for a moment for every thread creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022  # the usual one, where /proc does not say


def write_bytes_atomic(path: Path, data: bytes, *, private: bool = False, make_folders: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder. The file gets the
    mode a plain ``open`` would give it (an existing file keeps its own), so a summary in a
    shared folder is readable by the others there, as a file saved by any program is;
    ``private`` keeps it to its owner (0600: saved KV caches hold a conversation's text).
    ``make_folders``: make the folders on the way (the data folder's files; a file a person
    named goes only where its folder already is: ``write_named_file``)."""
    if make_folders:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if not private:
            try:
                mode = path.stat().st_mode & 0o777  # setuid/setgid/sticky go, as a plain write drops them
            except OSError:
                mode = 0o666 & ~umask()
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_named_file(path: Path, data: str | bytes, error: type[Exception]) -> None:
    """Write a file a person named (an export, ``-o``), atomically, into a folder that exists:
    a typo in a folder's name is said, not made. ``error`` with one sentence when it cannot."""
    try:
        write_bytes_atomic(path, data.encode("utf-8") if isinstance(data, str) else data, make_folders=False)
    except OSError as err:
        raise error(f"Cannot write {path}: {write_problem(path, err)}.") from None


def write_problem(path: Path, err: OSError) -> str:
    """Why ``path`` cannot be written, in words a person can act on."""
    for folder in path.parents:
        if folder.exists():
            if not folder.is_dir():
                return f"{folder} is a file, not a folder"
            break
    if isinstance(err, FileNotFoundError):
        return f"the folder {path.parent} does not exist"
    if isinstance(err, PermissionError):
        return f"there is no permission to write in {path.parent}"
    if err.errno == errno.ENOSPC:
        return "the disk is full"
    if isinstance(err, IsADirectoryError) or path.is_dir():
        return "that is a folder; give a file name"
    return err.strerror or str(err)


def read_text_file(path: Path, what: str, error: type[Exception]) -> str:
    """The UTF-8 text of a file the user named (``what``: "Task set", "Replay file", ...);
    ``error`` with one sentence naming the file when it is missing or unreadable."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as err:
        raise error(f"{what} {path} cannot be read ({err}).") from None
