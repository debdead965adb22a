"""The audit trail: append-only JSON lines, each holding the hash of the line before it.

A line (keys sorted, no spaces) holds ``seq`` (1, 2, ...), ``time`` (UTC), ``who`` (the key's
name), ``profile``, ``route``, ``status``, the token counts, ``client`` (address), ``prev`` (the
``hash`` of the line before; 64 zeros for the first) and ``hash``: the SHA-256 of the line
written without its ``hash``. A reply cut off has ``cut``, why (``day_limit``: where the key's
tokens for the day ran out; ``server_stopping``); lines written before it was kept have none. Message content (``messages``/``prompt`` and ``reply``) is there
only when the operator turns it on (``serve --audit-content``).

``audit.jsonl`` in the data folder's ``audit/`` is the current file; when it would grow past
``max_bytes`` it is renamed ``audit-000001.jsonl`` (the next number) and a new one starts whose
first line's ``prev`` is the last hash of the file before, so the chain runs across files.
Appends hold an exclusive ``flock`` on ``audit.lock`` and read the chain's head from the files
when another process wrote since, so two servers on one data folder keep one chain.

``verify`` walks every file and names each line that was changed, inserted or removed; the
newest line the usage file knows of (``UsageLog.last_audit``) shows lines cut from the end.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workstation.core.errors import WorkstationError
from workstation.core.paths import data_dir, own_file, own_folder
from workstation.core.phrases import Phrase, say

GENESIS = "0" * 64
CURRENT = "audit.jsonl"
LOCK = "audit.lock"  # held while appending, so writers in several processes keep one chain
ROTATED = re.compile(r"audit-(\d{6,})\.jsonl")
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_TAIL = 64 * 1024  # bytes read from a file's end to find its last line


class AuditError(WorkstationError):
    """The audit trail cannot be written or read."""


def canonical(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def line_hash(entry: dict[str, Any]) -> str:
    """The hash of a line: SHA-256 of the line without its ``hash`` field."""
    return hashlib.sha256(canonical({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


def audit_dir() -> Path:
    return data_dir() / "audit"


def trail_files(directory: Path) -> list[Path]:
    """The rotated files oldest first, then the current one (when they exist)."""
    rotated = sorted(
        (p for p in directory.glob("audit-*.jsonl") if ROTATED.fullmatch(p.name)),
        key=lambda p: int(ROTATED.fullmatch(p.name).group(1)),  # type: ignore[union-attr]
    )
    current = directory / CURRENT
    return [*rotated, current] if current.exists() else rotated


def _tail_lines(path: Path) -> Iterator[bytes]:
    """The lines of ``path``, last first, read from its end 64 KiB at a time. A last line
    longer than one read (``--audit-content`` with a long prompt) was never found whole, so a
    restarted server began the chain again at seq 1, and verify called the trail changed."""
    with open(path, "rb") as f:
        pos = f.seek(0, os.SEEK_END)
        tail: list[bytes] = []  # the blocks of a line longer than one read, last first (joined once)
        while pos > 0:
            step = min(_TAIL, pos)
            pos -= step
            f.seek(pos)
            block = f.read(step)
            if b"\n" not in block:
                tail.append(block)
                continue
            parts = block.split(b"\n")
            parts[-1] += b"".join(reversed(tail))
            tail = [parts[0]]
            for line in reversed(parts[1:]):
                if line.strip():
                    yield line
        first = b"".join(reversed(tail))
        if first.strip():
            yield first


class AuditTrail:
    """Appends lines to the trail in ``directory`` (one writer thread per process)."""

    def __init__(self, directory: Path | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.directory = directory or audit_dir()
        self.max_bytes = max(4096, max_bytes)
        try:
            # its owner's alone, as the data folder the program makes: in one of mode 755 given
            # by WORKSTATION_DATA, a trail with everyone's prompts (--audit-content) was 644
            own_folder(self.directory)
            for path in [self.directory / CURRENT, self.directory / LOCK, *trail_files(self.directory)]:
                own_file(path)
        except OSError as err:
            raise AuditError(f"The audit trail in {self.directory} cannot be written ({err.strerror or err}).") from None
        self._known_size = -1  # the current file's size after our last append
        self._head: tuple[int, str] = (0, GENESIS)

    def _read_head(self) -> tuple[int, str]:
        """(seq, hash) of the newest valid line. A line cut short by a crash is skipped (verify
        reports it); the chain goes on from the line before it."""
        for path in reversed(trail_files(self.directory)):
            for raw in _tail_lines(path):
                try:
                    entry = json.loads(raw)
                    return int(entry["seq"]), str(entry["hash"])
                except (ValueError, KeyError, TypeError):
                    continue
        return 0, GENESIS

    def append(self, entries: Sequence[dict[str, Any]]) -> list[tuple[int, str]]:
        """Chain and write ``entries`` (each gets ``seq``, ``prev``, ``hash``); returns (seq, hash)
        of each."""
        if not entries:
            return []
        path = self.directory / CURRENT
        out: list[tuple[int, str]] = []
        try:
            with open(os.open(self.directory / LOCK, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
                with open(os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600), "ab+") as f:  # (one moved away)
                    size = os.fstat(f.fileno()).st_size
                    if size != self._known_size:  # another process wrote (or rotated) since
                        self._head = self._read_head()
                        if size and os.pread(f.fileno(), 1, size - 1) != b"\n":
                            f.write(b"\n")  # a line cut short by a crash stays a line of its own
                            size += 1
                    seq, prev = self._head
                    lines: list[bytes] = []
                    for entry in entries:
                        seq += 1
                        full = {**entry, "seq": seq, "prev": prev}
                        full["hash"] = prev = line_hash(full)
                        lines.append(canonical(full) + b"\n")
                        out.append((seq, prev))
                    data = b"".join(lines)
                    if size and size + len(data) > self.max_bytes:
                        os.fsync(f.fileno())
                        self._rotate(path)
                        size = 0
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                    # on the disk before the usage rows that name these lines are written: after a
                    # power cut a row naming a lost line, its seq then reused, read as tampering for good
                    os.fsync(fd)
                except OSError:
                    # a full disk wrote part of a line: cut back to the whole lines, or `audit verify`
                    # took that stub for a changed line and the trail for tampered with
                    os.ftruncate(fd, size)
                    raise
                finally:
                    os.close(fd)
                self._known_size = size + len(data)
                self._head = (seq, prev)
        except OSError as err:
            raise AuditError(f"The audit trail in {self.directory} cannot be written ({err.strerror or err}).") from None
        return out

    def _rotate(self, path: Path) -> None:
        numbers = [int(m.group(1)) for p in self.directory.glob("audit-*.jsonl") if (m := ROTATED.fullmatch(p.name))]
        os.rename(path, self.directory / f"audit-{max(numbers, default=0) + 1:06d}.jsonl")
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- verification ----------------------------------------------------------------------------
@dataclass
class AuditReport:
    files: int = 0
    lines: int = 0
    problems: list[str] = field(default_factory=list)  # in English (--json); ``said``: as phrases
    said: list[Phrase] = field(default_factory=list)
    unrecorded: int = 0  # lines after the last the usage file records (a server still writing, a full disk)
    # lines cut short when the server stopped (a crash, a power cut: no line's end, no JSON), the
    # trail's last or with the chain going on after them from the line before: no tampering
    cut_short: list[str] = field(default_factory=list)
    cut_short_said: list[Phrase] = field(default_factory=list)
    ends_cut: bool = False  # the trail's last line is one of them

    @property
    def ok(self) -> bool:
        return not self.problems

    def problem(self, key: str, **values: Any) -> None:
        """A problem found, as a phrase (core/phrases.py ``audit.*``) and in English."""
        self.said.append((key, values))
        self.problems.append(say([(key, values)]))

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "files": self.files, "lines": self.lines, "problems": self.problems,
                "unrecorded": self.unrecorded, "cut_short": self.cut_short}


@dataclass
class _Line:
    said: Phrase  # "audit.jsonl line 7"
    entry: dict[str, Any] | None
    hash_ok: bool
    ended: bool = True  # it ends with a newline

    @property
    def where(self) -> str:
        return say([self.said])


def _read_lines(files: Sequence[Path], whole: bool = False) -> Iterator[_Line]:
    """The trail's lines; ``whole``: each with all its fields (``entries``), else the chain's only."""
    for path in files:
        with open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                where: Phrase = ("audit.where", {"file": path.name, "line": str(number)})
                try:
                    entry = json.loads(raw)
                    if not isinstance(entry, dict) or not isinstance(entry.get("seq"), int):
                        raise ValueError
                    if not isinstance(entry.get("prev"), str) or not isinstance(entry.get("hash"), str):
                        raise ValueError
                except ValueError:
                    yield _Line(where, None, False, raw.endswith(b"\n"))
                    continue
                # the chain's fields only: a trail with content was held whole in memory by
                # verify (20,000 lines with content, 199 MB: 314 MB of memory)
                link = entry if whole else {"seq": entry["seq"], "prev": entry["prev"], "hash": entry["hash"]}
                yield _Line(where, link, line_hash(entry) == entry["hash"])


def entries(directory: Path | None = None) -> Iterator[dict[str, Any]]:
    """The trail's lines oldest first, each with its fields (``audit show``); a line that is no
    audit line (cut short by a crash) is left out: ``verify`` says it."""
    directory = directory or audit_dir()
    for line in _read_lines(trail_files(directory) if directory.exists() else [], whole=True):
        if line.entry is not None:
            yield line.entry


def _cut_short(lines: Sequence[_Line], i: int, prev_hash: str | None, expected: int) -> bool:
    """Whether the line at ``i``, no audit line, was cut short when the server stopped: a crash
    or power cut mid-write leaves the last line without its end, and a restarted server writes
    on a line of its own after it, its chain going on from the line before (``AuditTrail.append``).
    A changed line is not so: the line after it links to it, or the chain breaks there. A stop
    cuts one line: of several lines in a row that are none, none was cut short (removed entries
    replaced with other text at the trail's end were called so, and the trail intact)."""
    if i == len(lines) - 1:  # the trail's last line, without its end
        return not lines[i].ended
    after = lines[i + 1].entry
    return after is not None and prev_hash is not None and after["prev"] == prev_hash and after["seq"] == expected


def verify(directory: Path | None = None, known_head: tuple[int, str] | None = None,
           known: dict[int, str] | None = None) -> AuditReport:
    """Check the chain in ``directory``; ``known_head`` (the newest (seq, hash) recorded elsewhere)
    shows lines removed from the end; ``known`` (every seq -> hash the usage file recorded) a
    line changed with the chain made again after it."""
    directory = directory or audit_dir()
    files = trail_files(directory) if directory.exists() else []
    report = AuditReport(files=len(files))
    lines = list(_read_lines(files))
    report.lines = len(lines)
    seen: dict[str, int] = {}  # hash -> index of the line holding it
    prev_hash: str | None = GENESIS
    expected = 1
    last_ok: int | None = None  # index of the last line the chain accepted
    for i, line in enumerate(lines):
        entry = line.entry
        if entry is None:
            if _cut_short(lines, i, prev_hash, expected):
                report.cut_short.append(line.where)
                report.cut_short_said.append(line.said)
                report.ends_cut = i == len(lines) - 1
                continue  # the chain goes on from the line before
            report.problem("audit.not_a_line", where=line.said)
            prev_hash = None
            continue
        if prev_hash is not None and entry["prev"] != prev_hash:
            nxt = lines[i + 1].entry if i + 1 < len(lines) else None
            if nxt is not None and nxt["prev"] == prev_hash:
                report.problem("audit.inserted_one", where=line.said)
                continue  # the chain goes on from the line before
            if entry["prev"] in seen and seen[entry["prev"]] < i - 1:
                first = seen[entry["prev"]] + 1
                span: Phrase = lines[first].said if first == i - 1 else (
                    "audit.span", {"first": lines[first].said, "last": lines[i - 1].said})
                report.problem("audit.inserted", span=span, where=line.said, before=lines[first - 1].said)
            elif entry["seq"] > expected:
                missing = entry["seq"] - expected
                if missing == 1:
                    report.problem("audit.removed_one", where=line.said, seq=str(expected))
                else:
                    report.problem("audit.removed", n=f"{missing:,}", where=line.said, first=str(expected),
                                   last=str(entry["seq"] - 1))
            elif last_ok is not None:
                report.problem("audit.link_changed", where=lines[last_ok].said)
            else:
                report.problem("audit.no_start", where=line.said)
        elif prev_hash is not None and entry["seq"] != expected:
            report.problem("audit.wrong_seq", where=line.said, seq=str(entry["seq"]), expected=str(expected))
        if not line.hash_ok:
            report.problem("audit.hash_changed", where=line.said)
        seen[entry["hash"]] = i
        prev_hash = entry["hash"]
        expected = entry["seq"] + 1
        last_ok = i
    if known_head is not None:
        seq, digest = known_head
        last = lines[last_ok].entry if last_ok is not None else None
        last_seq = last["seq"] if last else 0
        if last_seq < seq:
            after: Phrase = ("audit.after", {"where": lines[last_ok].said}) if last_ok is not None else (
                "audit.from_start", {})
            report.problem("audit.removed_after_one" if seq - last_seq == 1 else "audit.removed_after",
                           n=f"{seq - last_seq:,}", after=after, seq=str(seq))
        elif last is not None and last_seq == seq and last["hash"] != digest and not known:
            report.problem("audit.head_changed", where=lines[last_ok].said)
    if known:  # each line a request became, as the usage file recorded it when it was written
        changed = [line.said for line in lines if line.entry is not None and line.entry["seq"] in known
                   and known[line.entry["seq"]] != line.entry["hash"]]
        if changed:
            listed: list[Phrase] = [part for i, where in enumerate(changed[:3])
                                    for part in ([("audit.comma", {})] if i else []) + [where]]
            if len(changed) > 3:
                listed.append(("audit.and_more", {"n": f"{len(changed) - 3:,}"}))
            report.problem("audit.changed_one" if len(changed) == 1 else "audit.changed", listed=listed)
        newest = max(known)
        report.unrecorded = sum(1 for line in lines if line.entry is not None and line.entry["seq"] > newest)
    return report
