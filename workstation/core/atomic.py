"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from workstation.core.errors import WorkstationError
from workstation.core.paths import typed_path
from workstation.core.phrases import Phrase


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


def write_bytes_atomic(path: Path, data: bytes, *, private: bool = False, make_folders: bool = True,
                       replace: bool = True, part: Path | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder. The file gets the
    mode a plain ``open`` would give it (an existing file keeps its own), so a summary in a
    shared folder is readable by the others there, as a file saved by any program is;
    ``private`` keeps it to its owner (0600: saved KV caches hold a conversation's text).
    ``make_folders``: make the folders on the way (the data folder's files; a file a person
    named goes only where its folder already is: ``write_named_file``). ``replace`` False: a
    file at ``path`` (made meanwhile too) is left as it is, FileExistsError (``write_new_file``).
    ``part``: the temporary file, in the same folder, where the caller holds its lock while it
    writes (``installed_models.held_part``), so one a killed process left is told from one being
    written now; else a new name of its own."""
    if make_folders:
        path.parent.mkdir(parents=True, exist_ok=True)
    if part is None:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    else:
        fd, tmp = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), str(part)
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
        if replace:
            os.replace(tmp, path)
        else:
            _link_new(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _link_new(tmp: str, path: Path) -> None:
    """The written ``tmp`` at ``path``, where no file is (FileExistsError where one is): a link
    cannot replace a file, as a rename would. A disk that takes no links (a FAT USB stick)
    gets it renamed there once no file of the name is seen."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def write_new_file(folder: Path, name: str, data: str | bytes, error: type[WorkstationError]) -> Path:
    """``data`` written atomically to a new file ``name`` in ``folder``, or where a file of
    that name is there (or comes meanwhile) ``stem-2.md``, ``stem-3.md``...: nothing is written
    over. Its path; ``error`` with one sentence when it cannot be written."""
    from workstation.core.profile_folders import free_path

    raw = data.encode("utf-8") if isinstance(data, str) else data
    while True:
        path = free_path(folder, name)
        try:
            write_bytes_atomic(path, raw, make_folders=False, replace=False)
            return path
        except FileExistsError:
            continue  # made since it was looked for: the next number
        except OSError as err:
            raise error(said=cannot_write(path, err)) from None


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_named_file(path: Path, data: str | bytes, error: type[WorkstationError]) -> None:
    """Write a file a person named (an export, ``-o``), atomically, into a folder that exists:
    a typo in a folder's name is said, not made. ``error`` with one sentence when it cannot.

    A link is written through, to its file (it was replaced by a plain file, and the file it
    named kept the old text). A device or a pipe (``-o /dev/stdout``, a FIFO) is written to as
    it is: replacing it made /dev/full, as root, a plain file."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd = _open_descriptor(path)
        if fd is not None:  # -o /dev/stdout: into what this process has open, as the shell opened it
            _write_all(fd, raw)  # (`| less`: a pipe; `>> log.md`: appended, not the file replaced)
            return
        try:
            kind = os.stat(path).st_mode
        except FileNotFoundError:
            kind = stat.S_IFREG  # a new file
        if stat.S_ISREG(kind) or stat.S_ISDIR(kind):  # (a folder: write_bytes_atomic says it is one)
            write_bytes_atomic(Path(os.path.realpath(path)), raw, make_folders=False)
        else:
            with open(path, "wb") as out:
                out.write(raw)
    except OSError as err:
        raise error(said=cannot_write(path, err)) from None


_STANDARD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_PATH = re.compile(r"/dev/fd/(\d+)|/proc/(self|thread-self|\d+)/fd/(\d+)")


def _open_descriptor(path: Path) -> int | None:
    """The file descriptor ``path`` names in this process (/dev/stdout, /dev/fd/3,
    /proc/self/fd/1), or None: it is written through that descriptor, not reopened."""
    text = str(path)
    if text in _STANDARD:
        return _STANDARD[text]
    found = _FD_PATH.fullmatch(text)
    if found is None:
        return None
    fd, who, proc_fd = found.groups()
    if who is not None and who not in ("self", "thread-self", str(os.getpid())):
        return None  # another process's
    return int(fd if fd is not None else proc_fd)


def is_a_stream(path: Path) -> bool:
    """``path`` is no file to be made or replaced but something written into: a descriptor of
    this process (/dev/stdout), a pipe, a device."""
    try:
        return _open_descriptor(path) is not None or not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False  # a new file (or one it is said of, on writing, why it cannot be)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def named_output(text: str, reads: Iterable[Path] = (), error: type[WorkstationError] = WorkstationError) -> Path:
    """The file a person named for a command's output (``-o``), checked before any work: its
    folder is there (a typo is said, not made), it is no folder (``outdir/``, not yet made, was
    written as a file named outdir), and it is none of the files the command ``reads`` (a
    summary written over its own document replaced it)."""
    path = typed_path(text)
    if text.endswith(("/", "\\")) or path.is_dir():
        raise error(said=cannot_write(path, IsADirectoryError()))
    if not path.parent.is_dir():
        raise error(said=cannot_write(path, FileNotFoundError()))
    for read in reads:
        try:
            same = path.exists() and path.samefile(read)
        except OSError:
            same = False
        if same:
            raise error(said=[("file.cannot_write", {"path": str(path), "why": ("file.is_input", {})})])
    return path


def output_folder(path: Path, error: type[WorkstationError] = WorkstationError) -> Path:
    """A folder a command writes into (``batch -o OUTDIR``), made with its parents where
    missing. A file of that name, a folder that takes no new ones or no permission is one
    sentence (they were "unexpected error: FileExistsError", as a Python error)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file of that name
        raise error(said=[("file.cannot_write", {"path": str(path),
                                                 "why": ("file.not_a_folder", {"folder": str(path)})})]) from None
    except OSError as err:
        raise error(said=cannot_write(path, err)) from None
    return path


def cannot_write(path: Path, err: OSError) -> list[Phrase]:
    """"Cannot write PATH: why." as phrases (the TUI says it in its language)."""
    return [("file.cannot_write", {"path": str(path), "why": write_problem(path, err)})]


WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)  # only ever a write's: a full or read-only disk


def write_problem(path: Path, err: OSError) -> Phrase:
    """Why ``path`` cannot be written, in words a person can act on."""
    if isinstance(err, IsADirectoryError):  # also one not made yet (a name ending in /)
        return ("file.is_a_folder", {})
    for folder in path.parents:
        if folder.exists():
            if not folder.is_dir():
                return ("file.not_a_folder", {"folder": str(folder)})
            break
    if isinstance(err, FileNotFoundError):
        if path.parent.is_dir():  # /proc, /sys: the folder is there and takes no new files
            return ("file.no_new_files", {"folder": str(path.parent)})
        return ("file.no_folder", {"folder": str(path.parent)})
    if isinstance(err, PermissionError):
        return ("file.no_permission", {"folder": str(path.parent)})
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return ("file.disk_full", {})
    if err.errno == errno.EROFS:
        return ("file.read_only", {})
    if isinstance(err, IsADirectoryError) or path.is_dir():
        return ("file.is_a_folder", {})
    return ("file.os_says", {"reason": err.strerror or str(err)})


# the files read_text_file names: each a phrase (core/phrases.py, Turkish in tr.yaml), so that what
# it says is said in the command line's language; a new kind of file is a new phrase and a new name here
FileWhat = Literal["file.what_profile", "file.what_workload", "file.what_task_set", "file.what_replay",
                   "file.what_schema", "file.what_text"]


def read_text_file(path: Path, what: FileWhat, error: type[WorkstationError], *, any_encoding: bool = False) -> str:
    """The UTF-8 text of a file the user named (``what``: the phrase naming it, "file.what_task_set",
    "file.what_replay", ...); ``error`` with one sentence naming the file when it is missing or
    unreadable. With ``any_encoding``, a text in another encoding is read as documents read it (a
    Latin-1 text that summarize read was refused by eval as "not UTF-8")."""

    def said(key: str, **values: Any) -> Exception:  # (``error``: a WorkstationError, said in the app's language)
        return error(said=[(key, {"what": (what, {}), "path": str(path), **values})])

    try:
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            if not any_encoding:
                raise
        # (UTF-8 is read as it is, CRLF too, as llama-perplexity reads it; another encoding as documents are)
        from workstation.core.documents import DocumentError, plain_text

        try:
            return plain_text(path.read_bytes(), path.name)[0]
        except DocumentError as err:
            raise said("file.unreadable_because", why=err.said or str(err)) from None
    except FileNotFoundError:
        raise said("file.missing") from None
    except IsADirectoryError:
        raise said("file.folder") from None
    except PermissionError:
        raise said("file.no_read_permission") from None
    except UnicodeDecodeError:
        raise said("file.not_utf8") from None
    except OSError as err:
        raise said("file.unreadable", why=err.strerror or str(err)) from None
