"""The audit trail: a hash chain of JSON lines that ``verify`` checks, across rotated files,
with a changed, inserted or removed line named; and ``workstation audit verify``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workstation.cli import main
from workstation.core.audit import CURRENT, GENESIS, AuditTrail, line_hash, trail_files, verify


def entry(i: int) -> dict[str, object]:
    return {"who": f"person{i % 3}", "profile": "office", "route": "chat", "status": 200,
            "prompt_tokens": 10 + i, "cached_tokens": 0, "completion_tokens": i, "client": "127.0.0.1"}


def write(directory: Path, n: int, max_bytes: int = 1 << 20) -> list[tuple[int, str]]:
    trail = AuditTrail(directory, max_bytes=max_bytes)
    out: list[tuple[int, str]] = []
    for i in range(0, n, 3):  # batches of up to three lines, as the writer thread appends them
        out += trail.append([entry(j) for j in range(i, min(n, i + 3))])
    return out


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_lines_chain_each_to_the_one_before(tmp_path: Path) -> None:
    heads = write(tmp_path, 7)
    lines = [json.loads(x) for x in lines_of(tmp_path / CURRENT)]
    assert [x["seq"] for x in lines] == list(range(1, 8))
    assert lines[0]["prev"] == GENESIS
    for before, after in zip(lines, lines[1:], strict=False):
        assert after["prev"] == before["hash"] == line_hash(before)
    assert heads[-1] == (7, lines[-1]["hash"])
    report = verify(tmp_path, heads[-1])
    assert report.ok and report.lines == 7 and report.files == 1


def test_a_new_writer_continues_the_chain(tmp_path: Path) -> None:
    """A second writer (a restarted server, or another server on the same data folder) picks
    up the head from the file."""
    first = AuditTrail(tmp_path)
    first.append([entry(0), entry(1)])
    second = AuditTrail(tmp_path)
    second.append([entry(2)])
    first.append([entry(3)])  # the first writer sees the file grew and re-reads the head
    seqs = [json.loads(x)["seq"] for x in lines_of(tmp_path / CURRENT)]
    assert seqs == [1, 2, 3, 4]
    assert verify(tmp_path).ok


def test_a_last_line_longer_than_one_read_still_continues_the_chain(tmp_path: Path) -> None:
    """A line over 64 KiB (``--audit-content`` with a long prompt) was never found whole from
    the file's end: the restarted server began again at seq 1, and verify called it changed."""
    AuditTrail(tmp_path).append([entry(0), {**entry(1), "content": {"prompt": "word " * 40_000}}])
    assert (tmp_path / CURRENT).stat().st_size > 200_000
    AuditTrail(tmp_path).append([entry(2)])  # a restarted server
    assert [json.loads(x)["seq"] for x in lines_of(tmp_path / CURRENT)] == [1, 2, 3]
    assert verify(tmp_path).ok


def _rewrite(path: Path, lines: list[str]) -> None:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


def test_a_changed_line_is_named(tmp_path: Path) -> None:
    write(tmp_path, 6)
    path = tmp_path / CURRENT
    lines = lines_of(path)
    lines[2] = lines[2].replace('"status":200', '"status":201')
    _rewrite(path, lines)
    assert verify(tmp_path).problems == [f"{CURRENT} line 3 was changed: its content does not match its hash."]


def test_a_changed_line_with_its_hash_recomputed_is_named(tmp_path: Path) -> None:
    write(tmp_path, 6)
    path = tmp_path / CURRENT
    lines = lines_of(path)
    forged = json.loads(lines[3])
    forged["completion_tokens"] = 0
    forged["hash"] = line_hash(forged)
    lines[3] = json.dumps(forged, sort_keys=True, separators=(",", ":"))
    _rewrite(path, lines)
    problems = verify(tmp_path).problems
    assert problems == [f"{CURRENT} line 4 was changed: the next line's link to it does not match."]


def test_the_last_line_changed_with_its_hash_recomputed_is_named_by_the_known_head(tmp_path: Path) -> None:
    """The last line has no next line to give it away: rewritten with a new hash, it passed
    verify although the usage file records another hash for it."""
    heads = write(tmp_path, 3)
    path = tmp_path / CURRENT
    lines = lines_of(path)
    forged = json.loads(lines[-1])
    forged["completion_tokens"] = 0
    forged["hash"] = line_hash(forged)
    lines[-1] = json.dumps(forged, sort_keys=True, separators=(",", ":"))
    _rewrite(path, lines)
    problems = verify(tmp_path, heads[-1]).problems
    assert problems == [f"{CURRENT} line 3 was changed: the usage file records another hash for it."]
    forged["seq"] = 9  # its number changed too, its link to the line before left as it was
    forged["hash"] = line_hash(forged)
    _rewrite(path, [*lines[:-1], json.dumps(forged, sort_keys=True, separators=(",", ":"))])
    assert verify(tmp_path).problems == [f"{CURRENT} line 3 has seq 9, expected 3."]


def test_a_trail_rewritten_whole_with_its_chain_made_again_is_named_by_the_usage_file(tmp_path: Path) -> None:
    """One person's lines renamed to another's, every hash and link made again: the chain holds,
    and verify passed it ("intact"). Each line's hash as the usage file recorded it when it was
    written names them; lines past the last it records are said apart, as a server still writing."""
    heads = write(tmp_path, 6)
    known = dict(heads)
    path = tmp_path / CURRENT
    rechained, prev = [], GENESIS
    for line in lines_of(path):
        forged = json.loads(line)
        if forged["who"] == "person1":
            forged["who"] = "person2"
        forged["prev"] = prev
        forged["hash"] = line_hash(forged)
        prev = forged["hash"]
        rechained.append(json.dumps(forged, sort_keys=True, separators=(",", ":")))
    _rewrite(path, rechained)
    assert verify(tmp_path).ok  # the chain alone cannot tell
    problems = verify(tmp_path, heads[-1], known).problems
    assert problems == [f"{CURRENT} line 2, {CURRENT} line 3, {CURRENT} line 4 and 2 more were changed: the usage "
                        "file records another hash for them (the chain was made again after)."], problems
    _rewrite(path, [json.dumps(json.loads(line), sort_keys=True, separators=(",", ":")) for line in rechained])
    write(tmp_path, 0)
    AuditTrail(tmp_path).append([entry(7), entry(8)])  # two lines more, no usage row for them yet
    report = verify(tmp_path, heads[-1], known)
    assert report.unrecorded == 2


def test_a_lines_hash_is_the_sha256_of_the_line_without_it(tmp_path: Path) -> None:
    """An auditor checking a line by the documented rule (SHA-256 of the line, keys sorted, no
    spaces, less its ``hash``) found every hash wrong when ``prev`` was left out of it."""
    import hashlib

    write(tmp_path, 2)
    for raw in lines_of(tmp_path / CURRENT):
        line = json.loads(raw)
        digest = line.pop("hash")
        assert hashlib.sha256(json.dumps(line, sort_keys=True, separators=(",", ":")).encode()).hexdigest() == digest


def test_an_inserted_line_is_named(tmp_path: Path) -> None:
    write(tmp_path, 5)
    path = tmp_path / CURRENT
    lines = lines_of(path)
    before = json.loads(lines[1])
    fake = {**entry(99), "seq": 3, "prev": before["hash"]}  # well forged: links to line 2
    fake["hash"] = line_hash(fake)
    lines.insert(2, json.dumps(fake, sort_keys=True, separators=(",", ":")))
    _rewrite(path, lines)
    problems = verify(tmp_path).problems
    assert len(problems) == 1 and problems[0].startswith(f"{CURRENT} line 3 inserted")


def test_a_removed_line_is_named(tmp_path: Path) -> None:
    write(tmp_path, 6)
    path = tmp_path / CURRENT
    lines = lines_of(path)
    del lines[3]
    _rewrite(path, lines)
    assert verify(tmp_path).problems == [f"1 line removed before {CURRENT} line 4 (seq 4 is missing)."]


def test_lines_cut_from_the_end_are_found_with_the_known_head(tmp_path: Path) -> None:
    heads = write(tmp_path, 6)
    path = tmp_path / CURRENT
    _rewrite(path, lines_of(path)[:4])
    assert verify(tmp_path).ok  # the chain alone cannot tell
    assert verify(tmp_path, heads[-1]).problems == [
        f"2 lines removed after {CURRENT} line 4: the usage file records seq 6."
    ]


def test_rotation_keeps_the_chain_across_files(tmp_path: Path) -> None:
    write(tmp_path, 60, max_bytes=4096)
    files = trail_files(tmp_path)
    assert len(files) >= 3 and files[-1].name == CURRENT and files[0].name == "audit-000001.jsonl"
    assert all(f.stat().st_size <= 4096 for f in files)
    first_of_second = json.loads(lines_of(files[1])[0])
    last_of_first = json.loads(lines_of(files[0])[-1])
    assert first_of_second["prev"] == last_of_first["hash"]
    assert first_of_second["seq"] == last_of_first["seq"] + 1
    report = verify(tmp_path)
    assert report.ok and report.lines == 60 and report.files == len(files)
    # a whole rotated file removed is found as the lines it held
    n = len(lines_of(files[1]))
    files[1].unlink()
    problems = verify(tmp_path).problems
    assert len(problems) == 1
    assert problems[0].startswith(f"{n} lines removed before {files[2].name} line 1")


def test_a_first_batch_larger_than_a_file_starts_no_empty_one(tmp_path: Path) -> None:
    """A batch larger than ``max_bytes`` written to an empty trail rotated the empty file
    first, leaving an empty audit-000001.jsonl in the trail."""
    AuditTrail(tmp_path, max_bytes=4096).append([{**entry(0), "content": {"prompt": "word " * 1000}}])
    assert trail_files(tmp_path) == [tmp_path / CURRENT]


def test_audit_verify_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "one", 1)
    assert main(["audit", "verify", "--dir", str(tmp_path / "one")]) == 0
    assert "intact: 1 line in 1 file," in capsys.readouterr().out  # it said "1 lines"
    write(tmp_path, 4)
    assert main(["audit", "verify", "--dir", str(tmp_path)]) == 0
    assert "intact: 4 lines" in capsys.readouterr().out
    path = tmp_path / CURRENT
    lines = lines_of(path)
    lines[1] = lines[1].replace('"who":"person1"', '"who":"someone"')
    _rewrite(path, lines)
    assert main(["audit", "verify", "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{CURRENT} line 2 was changed" in out
    assert main(["audit", "verify", "--dir", str(tmp_path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["lines"] == 4



def test_audit_verify_speaks_turkish_with_lang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """'audit --lang tr' was refused ("'audit tr' is not a command"), and what it found was in
    English on a Turkish PC: --lang says it, the problems named too; --json's as they were."""
    assert main(["audit", "--lang", "tr", "--dir", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert "klasöründe henüz denetim kaydı yok." in out and "No audit trail" not in out, out
    write(tmp_path, 4)
    assert main(["audit", "verify", "--lang", "tr", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Denetim kaydı sağlam: ") and "1 dosya içinde 4 satır" in out and "intact" not in out, out
    path = tmp_path / CURRENT
    lines = lines_of(path)
    lines[1] = lines[1].replace('"who":"person1"', '"who":"someone"')
    _rewrite(path, lines)
    assert main(["audit", "--lang", "tr", "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "denetim kaydı kurcalanmış (1 sorun):" in out, out
    assert f"{CURRENT} dosyasının 2. satırı değiştirilmiş: içeriği, özetiyle (hash) tutmuyor." in out
    assert "tampered" not in out and "was changed" not in out and " line 2" not in out
    assert main(["audit", "--dir", str(tmp_path)]) == 1
    assert f"  {CURRENT} line 2 was changed: its content does not match its hash." in capsys.readouterr().out
    assert main(["audit", "--lang", "tr", "--dir", str(tmp_path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["problems"] == [
        f"{CURRENT} line 2 was changed: its content does not match its hash."]
    whole = path.read_bytes()  # a last entry cut short by a stop: said in Turkish too
    write(tmp_path / "cut", 3)
    cut = tmp_path / "cut" / CURRENT
    cut.write_bytes(cut.read_bytes()[:-40])
    assert whole and main(["audit", "--lang", "tr", "--dir", str(tmp_path / "cut")]) == 0
    out = capsys.readouterr().out
    assert f"not: son kaydı ({CURRENT} dosyasının 3. satırı) sunucu durduğunda" in out and "cut short" not in out, out


def test_a_last_line_cut_short_when_the_server_stopped_is_not_tampering(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crash or power cut mid-write leaves the last line cut short (no newline, no JSON), and
    `audit verify` called the trail tampered with. It says the entry was cut short; a restarted
    server writes on a line of its own, the chain going on from the line before the cut one,
    and that is still no tampering; a middle line cut with the next linking to it is."""
    heads = write(tmp_path, 3)
    path = tmp_path / CURRENT
    whole = path.read_bytes()
    path.write_bytes(whole[:-40])
    report = verify(tmp_path, heads[1])  # (its request never reached the usage file: written after)
    assert report.ok and report.lines == 3 and report.cut_short == [f"{CURRENT} line 3"], report.problems
    assert main(["audit", "verify", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "intact" in out and f"its last entry ({CURRENT} line 3) was cut short when the server stopped" in out
    AuditTrail(tmp_path).append([entry(3)])  # a restarted server
    lines = lines_of(path)
    assert len(lines) == 4 and json.loads(lines[3])["seq"] == 3 and lines[2] == whole[:-40].decode().splitlines()[2]
    report = verify(tmp_path)
    assert report.ok and report.cut_short == [f"{CURRENT} line 3"], report.problems
    assert main(["audit", "verify", "--dir", str(tmp_path)]) == 0
    assert f"an entry ({CURRENT} line 3) was cut short when the server stopped" in capsys.readouterr().out
    _rewrite(path, [lines[0][:-30], *lines[1:]])
    report = verify(tmp_path)
    assert not report.ok and report.problems[0].startswith(f"{CURRENT} line 1 is not an audit line")
    # the last entries replaced by other text, the last without its end: a stop cuts one line,
    # so none of them is "cut short" (all three were, and the trail was intact)
    path.write_bytes("".join(f"{line}\n" for line in lines[:1]).encode() + b'xx\nyy\n{"seq": 5')
    report = verify(tmp_path)
    assert not report.ok and report.cut_short == [f"{CURRENT} line 4"], (report.problems, report.cut_short)
    assert [p.split(" is ")[0] for p in report.problems] == [f"{CURRENT} line 2", f"{CURRENT} line 3"], report.problems
    # a whole middle line replaced by other text, the next made to link past it under its own number:
    # no stop cut it (a restarted server writes the cut line's number again), so it was changed
    forged_dir = tmp_path / "forged"
    write(forged_dir, 4)
    lines = lines_of(forged_dir / CURRENT)
    fourth = json.loads(lines[3])
    fourth["prev"] = json.loads(lines[1])["hash"]
    fourth["hash"] = line_hash(fourth)
    _rewrite(forged_dir / CURRENT, [*lines[:2], "xx", json.dumps(fourth, sort_keys=True, separators=(",", ":"))])
    report = verify(forged_dir)
    assert not report.ok and not report.cut_short, (report.problems, report.cut_short)


def test_a_line_the_disk_had_no_room_for_leaves_no_stub(tmp_path: Path) -> None:
    """A full disk wrote part of a line; the next lines went on after it, and `audit verify`
    called the trail tampered with ("line 12 is not an audit line"). The file-size limit cuts a
    write short as a full disk does."""
    import subprocess
    import sys

    code = f"""
import resource, signal
from pathlib import Path
from workstation.core.audit import AuditError, AuditTrail, CURRENT
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
trail = AuditTrail(Path({str(tmp_path)!r}))
trail.append([{{"who": "alice", "n": 1}}])
size = (Path({str(tmp_path)!r}) / CURRENT).stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 20, resource.RLIM_INFINITY))
try:
    trail.append([{{"who": "bob", "text": "x" * 200}}])
    print("written")
except AuditError:
    print("refused", (Path({str(tmp_path)!r}) / CURRENT).stat().st_size == size)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
trail.append([{{"who": "carol", "n": 3}}])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.stdout.split() == ["refused", "True"], out.stdout + out.stderr
    report = verify(tmp_path)
    assert report.ok and report.lines == 2, report.problems


def test_verify_holds_the_chain_not_the_trails_content(tmp_path: Path) -> None:
    """verify held every line whole: a trail with content (20,000 lines, 199 MB) took 314 MB of
    memory. Now only each line's links: here 40 lines of 200 KB each, verified in under 4 MB."""
    import tracemalloc

    trail = AuditTrail(tmp_path, max_bytes=1 << 30)
    for i in range(40):
        trail.append([{**entry(i), "content": {"prompt": f"{i} " + "text " * 40_000}}])
    tracemalloc.start()
    try:
        report = verify(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.ok and report.lines == 40
    assert peak < 4 << 20, peak
