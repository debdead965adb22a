"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

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


def write_bytes_atomic(path: Path, data: bytes, *, private: bool = False) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder. The file gets the
    mode a plain ``open`` would give it (an existing file keeps its own), so a summary in a
    shared folder is readable by the others there, as a file saved by any program is;
    ``private`` keeps it to its owner (0600: saved KV caches hold a conversation's text)."""
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


def read_text_file(path: Path, what: str, error: type[Exception]) -> str:
    """The UTF-8 text of a file the user named (``what``: "Task set", "Replay file", ...);
    ``error`` with one sentence naming the file when it is missing or unreadable."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as err:
        raise error(f"{what} {path} cannot be read ({err}).") from None
