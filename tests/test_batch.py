"""The overnight queue: a real `workstation batch` subprocess, killed with SIGKILL mid-run."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_profile, wait_until, write_profile_file
from docmaker import SUBJECT_PARAGRAPHS, make_docx

from workstation.core.atomic import umask
from workstation.core.batch_queue import DB_NAME, BatchQueue
from workstation.core.phrases import say
from workstation.core.reply_check import unchecked_figures, unchecked_phrases, unchecked_record

ROOT = Path(__file__).resolve().parent.parent


def _profile_file(tmp_path: Path) -> Path:
    return write_profile_file(tmp_path / "batch-profile.yaml", context=512, threads=1, sampling={"max_tokens": 16})


def _status(db: Path) -> dict[str, str]:
    if not db.exists():
        return {}
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return dict(con.execute("SELECT path, status FROM files").fetchall())
        finally:
            con.close()
    except sqlite3.OperationalError:
        return {}


def _batch(folder: Path, out: Path, prof: Path, yielding: bool = False) -> list[str]:
    """A batch run's command; ``yielding``: at the low priority a batch takes by default (a
    test's run is at normal priority: at nice 10 beside the other test processes on 2 cores,
    one run took 54 s where it takes 10)."""
    return [sys.executable, "-m", "workstation.cli", "batch", str(folder), "-p", str(prof), "-o", str(out),
            *([] if yielding else ["--full-priority"])]


def _batch_run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``workstation batch ARGS`` in a process of its own, to its end. Not ``main()`` in this
    one: a run lowers its process's priority (nice 10) for good, and this pytest worker then ran
    every test after it, in this file and the next ones, behind everything else on the machine."""
    return subprocess.run([sys.executable, "-m", "workstation.cli", "batch", *map(str, args), "--full-priority"],
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The umask most desks have (022), so that a summary's mode says something: under 077 a
    plain file is 0600 too."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_batch_resumes_after_kill_9_and_never_redoes_a_file(tmp_path: Path, smollm2_path: Path, usual_umask: None,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.cli import main

    folder = tmp_path / "inbox"
    folder.mkdir()
    for i in range(2):  # with memo.docx, three to summarize: one done before the kill, two after
        paras = [SUBJECT_PARAGRAPHS[(i + k) % 6] for k in range(2)]
        (folder / f"note{i}.txt").write_text("\n\n".join(paras), encoding="utf-8")
    make_docx(folder / "memo.docx", [("Bees", [SUBJECT_PARAGRAPHS[0]])])
    (folder / "broken.txt").write_bytes(bytes(range(256)) * 20)  # binary: must fail, queue goes on
    (folder / "ignored.pages").write_bytes(b"x")  # (Apple's Pages: not read)
    out = tmp_path / "out"
    db = out / DB_NAME
    prof = _profile_file(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    # run 1: kill -9 as soon as the first document is done (said in Turkish)
    proc = subprocess.Popen([*_batch(folder, out, prof, yielding=True), "--lang", "tr"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: proc.poll() is not None or "done" in _status(db).values(),
                   "the first document done (or the run ended)", 240)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        # people using the computer come first: the run is at nice 10 (field 19 of its stat)
        assert int(Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[16]) == 10
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # why the document failed, in the run's language as it fails (it was English)
    why = "'broken.txt' ikili bir dosya, metin değil."
    assert proc.stderr is not None
    log = proc.stderr.read().decode()
    assert f"batch: başarısız: broken.txt: {why}\n" in log, log
    first = _status(db)
    done_before = {p for p, s in first.items() if s == "done"}
    assert done_before and len(done_before) < 3
    mtimes = {p: (out / f"{p}.summary.md").stat().st_mtime_ns for p in done_before}

    # run 2: finishes the rest, redoes nothing (said in Turkish)
    rerun = subprocess.run([*_batch(folder, out, prof), "--lang", "tr"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 3, rerun.stderr  # one document failed (1: the run could not start)
    # a one-part document's part done, its summary being written: not "time left 0 s"
    assert re.search(r"^batch:   note\d\.txt: 1 bölümden 1'i bitti, az kaldı$", rerun.stderr, re.M), rerun.stderr
    assert " 0 sn" not in rerun.stderr, rerun.stderr
    assert "düşük öncelikle" not in rerun.stderr  # --full-priority: a computer no one is using
    assert f"batch:   başarısız: broken.txt: {why}\n" in rerun.stderr, rerun.stderr  # (where its log ends)
    # a binary file cannot be read by another try: what to do, not --retry-failed
    assert rerun.stderr.splitlines()[-1].startswith("batch: 1 belge olduğu hâliyle özetlenemiyor, bu yüzden yeniden "
                                                    "denemek işe yaramaz;") and "--retry-failed" not in rerun.stderr
    # and by --status in the language asked for; --json's stays English
    for lang, line in (("tr", f"başarısız broken.txt — {why}"),
                       ("en", "failed   broken.txt — 'broken.txt' is a binary file, not text.")):
        assert main(["batch", str(folder), "-o", str(out), "--status", "--lang", lang]) == 0
        assert line in capsys.readouterr().out.splitlines()
    assert main(["batch", str(folder), "-o", str(out), "--status", "--json"]) == 0
    (failed,) = [f for f in json.loads(capsys.readouterr().out)["files"] if f["status"] == "failed"]
    assert failed["reason"] == "'broken.txt' is a binary file, not text." and "said" not in failed, failed
    final = _status(db)
    expected = {"note0.txt", "note1.txt", "memo.docx", "broken.txt"}
    assert set(final) == expected
    assert final.pop("broken.txt") == "failed"
    assert set(final.values()) == {"done"}

    con = sqlite3.connect(db)
    try:
        reason = con.execute("SELECT reason FROM files WHERE path='broken.txt'").fetchone()[0]
        done_events = dict(
            con.execute("SELECT path, COUNT(*) FROM events WHERE event='done' GROUP BY path").fetchall()
        )
        started = dict(
            con.execute("SELECT path, COUNT(*) FROM events WHERE event='started' GROUP BY path").fetchall()
        )
    finally:
        con.close()
    assert "broken.txt" in reason and "binary" in reason
    assert done_events == {p: 1 for p in final}  # every document finished exactly once
    for p in done_before:
        assert started[p] == 1  # never started again after it was done
        assert (out / f"{p}.summary.md").stat().st_mtime_ns == mtimes[p]

    # every summary is whole: its title, a point per part and the closing line, with as many
    # parts as the queue recorded for it; no temporary files are left behind
    con = sqlite3.connect(db)
    try:
        parts = {p: json.loads(r)["chunks"] for p, r in con.execute("SELECT path, result_json FROM files WHERE status='done'")}
    finally:
        con.close()
    for p in final:
        # the mode any program's saved file gets (0644 under the usual umask), not mkstemp's 0600,
        # so colleagues sharing the output folder can read the summaries
        assert (out / f"{p}.summary.md").stat().st_mode & 0o777 == 0o644 == 0o666 & ~umask()
        text = (out / f"{p}.summary.md").read_text(encoding="utf-8")
        n = parts[p]
        assert n >= 1 and text.startswith(f"# Summary of {p}\n"), text
        # the 135M model's facts are not to be trusted: the file read the next morning says so
        assert text.split("\n\n")[1].startswith("> Check names, dates and figures against the document"), text
        points = re.findall(r"^- \*\*(.+?)\*\* — (.+)$", text, re.M)
        if n == 1 and not points:  # one part: its point is the summary itself, not said twice (and
            assert text.split("\n\n")[2].strip()[:1] not in ("", "#", ">", "_"), text  # no whole-document label)
        else:
            assert len(points) == n and all(summary.strip() for _cite, summary in points), text
        read = f"Read in {n} parts" if n > 1 else "Read in one go"
        assert re.search(rf"^_{read} \(about [\d,.]+ words\); the model was asked (once|\d+ times); [\d a-z]+\._\n\Z",
                         text, re.M), text
        assert "Stopped after" not in text
    assert not [f for f in out.rglob("*") if f.name.endswith(".tmp")]
    assert not (out / "ignored.pages.summary.md").exists()

    # run 3: nothing left to do, nothing redone
    again = subprocess.run(_batch(folder, out, prof), cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert "0 waiting" in again.stderr
    assert _status(db) == {**final, "broken.txt": "failed"}


def test_recover_marks_written_summaries_done_and_requeues_the_rest(tmp_path: Path) -> None:
    folder, out = tmp_path / "in", tmp_path / "out"
    folder.mkdir()
    for name in ("a.txt", "b.txt"):
        (folder / name).write_text("text", encoding="utf-8")
    q = BatchQueue(out / DB_NAME)
    try:
        assert q.scan(folder, out) == 2
        assert [r.path for r in (q.claim_next(out), q.claim_next(out)) if r] == ["a.txt", "b.txt"]  # as a run takes them
        (out / "a.txt.summary.md").write_text("# Summary of a.txt\n", encoding="utf-8")  # written, not marked
        assert q.recover(out) == 2
        assert {r.path: r.status for r in q.rows()} == {"a.txt": "done", "b.txt": "pending"}
        # a changed file is queued again; an unchanged one is not
        time.sleep(0.01)
        (folder / "a.txt").write_text("new text", encoding="utf-8")
        assert q.scan(folder, out) == 1
        assert (row := q.claim_next(out)) is not None and row.path == "a.txt"
    finally:
        q.close()


@pytest.mark.parametrize("where", ["the documents' folder", "a folder above it", "a folder inside it"])
def test_summaries_kept_with_the_documents_are_the_only_files_left_out(tmp_path: Path, where: str) -> None:
    """`batch DIR -o DIR` (or a folder above DIR) found nothing to do and said 0 pending: every
    document was inside the output folder, so taken for the run's own output. Only summaries
    are; a folder of their own (DIR/summaries, the default) still holds no documents."""
    folder = tmp_path / "docs"
    (folder / "2024").mkdir(parents=True)
    (folder / "a.txt").write_text("text", encoding="utf-8")
    (folder / "2024" / "b.md").write_text("# B\n\ntext", encoding="utf-8")
    out = {"the documents' folder": folder, "a folder above it": tmp_path,
           "a folder inside it": folder / "summaries"}[where]
    # a run's output beside its document (summaries kept with the documents), and a person's
    # own minutes.summary.md, which is no summary of any document here: a document
    (folder / "a.txt.summary.md").write_text("# Summary of a.txt\n", encoding="utf-8")
    (folder / "minutes.summary.md").write_text("# Minutes\n\ntext", encoding="utf-8")
    if where == "a folder inside it":
        out.mkdir()
        (out / "notes.txt").write_text("text", encoding="utf-8")
    q = BatchQueue(out / DB_NAME)
    try:
        queued = q.scan(folder, out)
        names = sorted(r.path for r in q.rows())
    finally:
        q.close()
    if where == "the documents' folder":
        assert names == ["2024/b.md", "a.txt", "minutes.summary.md"] and queued == 3
    else:  # summaries elsewhere: a.txt.summary.md here is the person's too (nothing in DIR/summaries is read)
        assert names == ["2024/b.md", "a.txt", "a.txt.summary.md", "minutes.summary.md"] and queued == 4


def test_a_profile_with_slots_keeps_several_documents_in_flight(tmp_path: Path, smollm2_path: Path) -> None:
    """parallel: 2 -> two documents are summarized at once over one engine; all are done, each
    summary written once, and never more than two at a time."""
    import threading

    from workstation.commands.batch import engine_factory
    from workstation.core.batch_queue import BatchEvent, output_name, run_batch

    folder, out = tmp_path / "inbox", tmp_path / "out"
    folder.mkdir()
    for i in range(4):
        (folder / f"memo{i}.txt").write_text(" ".join(SUBJECT_PARAGRAPHS[i:i + 2]), encoding="utf-8")
    profile = make_profile(context=512, threads=1, parallel=2, sampling={"max_tokens": 16})
    running: set[str] = set()
    most = 0
    lock = threading.Lock()

    def on_event(ev: BatchEvent) -> None:
        nonlocal most
        with lock:
            if ev.kind == "file-start" and ev.path:
                running.add(ev.path)
                most = max(most, len(running))
            elif ev.kind in ("file-done", "file-failed") and ev.path:
                running.discard(ev.path)

    counts = run_batch(folder, out, profile, engine_factory, on_event)
    assert counts == {"pending": 0, "running": 0, "done": 4, "failed": 0}
    assert most == 2
    for i in range(4):
        text = (out / output_name(f"memo{i}.txt")).read_text(encoding="utf-8")
        assert text.startswith("# Summary of memo") and text.count("# Summary of") == 1


def test_status_finds_the_queue_of_a_run_with_o_and_a_later_run_leaves_its_summaries_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`batch big -o big/out`, then `batch big --status`: it listed the two summaries in
    big/out as documents waiting (a run would have summarized the summaries), said nothing of
    the queue in big/out, and made an empty big/summaries."""
    from workstation.cli import main

    folder, out = tmp_path / "big", tmp_path / "big" / "out"
    folder.mkdir()
    (folder / "minutes.txt").write_text("text", encoding="utf-8")
    q = BatchQueue(out / DB_NAME)
    try:
        q.scan(folder, out)
        assert (row := q.claim_next(out)) is not None and row.path == "minutes.txt"
        q.mark_done("minutes.txt", {})
    finally:
        q.close()
    (out / "minutes.txt.summary.md").write_text("# Summary of minutes.txt\n", encoding="utf-8")
    assert main(["batch", str(folder), "--status"]) == 0
    listed, said = capsys.readouterr()
    assert f"No batch has run on {folder} with its summaries in {folder / 'summaries'}; a run would take these:" in said
    assert f"(A queue of its documents is in {out}: '" in said and f"-o {out} --status' shows it.)" in said
    assert "waiting  minutes.txt" in listed and "summary.md" not in listed, listed
    assert main(["batch", str(folder), "--status", "--json"]) == 0  # JSON alone on stdout
    assert [f["path"] for f in json.loads(capsys.readouterr().out)["files"]] == ["minutes.txt"]
    assert not (folder / "summaries").exists()
    q = BatchQueue(folder / "summaries" / DB_NAME)  # the next run without -o
    try:
        q.scan(folder, folder / "summaries")
        assert [r.path for r in q.rows()] == ["minutes.txt"]  # not out/minutes.txt.summary.md
    finally:
        q.close()


def test_status_after_a_killed_run_and_a_deleted_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After `kill -9`, --status said a document was "running" with no run alive; a document
    that failed and was then deleted stayed "failed" (and counted) for ever."""
    from workstation.cli import main

    folder, out = tmp_path / "crash", tmp_path / "crash" / "summaries"
    folder.mkdir()
    for name in ("a.txt", "photo.txt", "tasks.txt"):
        (folder / name).write_text("text", encoding="utf-8")
    (folder / "report.pages").write_bytes(b"PK\x03\x04 an Apple Pages file")
    q = BatchQueue(out / DB_NAME)
    try:
        q.scan(folder, out)
        assert q.skipped == ["report.pages"]  # said when a run starts
        # the killed run's document (no lock held any more), and one that failed
        assert [r.path for r in (q.claim_next(out), q.claim_next(out)) if r] == ["a.txt", "photo.txt"]
        q.mark_failed("photo.txt", "'photo.txt' is a binary file, not text.")
    finally:
        q.close()
    (folder / "photo.txt").unlink()
    assert main(["batch", str(folder), "--status"]) == 0
    said = capsys.readouterr().out
    assert "being summarized" not in said.replace("0 being summarized", "") and "photo.txt" not in said, said
    # plain words (it said "2 pending, 0 running"), and which output folder the queue is of (it did not say)
    assert said.splitlines()[-1] == "2 waiting, 0 being summarized, 0 done, 0 failed", said
    assert said.splitlines()[0] == f"The documents of {folder}, and their summaries in {folder / 'summaries'}:", said
    assert main(["batch", str(folder), "--status", "--json"]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    assert [(f["path"], f["output"]) for f in files] == [("a.txt", None), ("tasks.txt", None)]  # none written yet


def test_a_queue_of_an_older_workstation_opens_and_says_its_reasons_in_english(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A queue made before its file had a version (nor its later columns) is brought to the
    current schema on opening; its reasons, kept in English alone, are said as they are under
    Turkish. One of a newer workstation is refused in a sentence, never changed."""
    from workstation.cli import main

    folder, out = tmp_path / "old", tmp_path / "old" / "summaries"
    out.mkdir(parents=True)
    (folder / "photo.txt").write_text("text", encoding="utf-8")
    db = sqlite3.connect(out / DB_NAME)  # the first queue's tables, as an older workstation made them
    db.executescript("""
        CREATE TABLE files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
            status TEXT NOT NULL, reason TEXT, output TEXT, attempts INTEGER NOT NULL DEFAULT 0,
            added_at REAL NOT NULL, started_at REAL, finished_at REAL, result_json TEXT);
        CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL, event TEXT NOT NULL,
            at REAL NOT NULL, detail TEXT);""")
    st = (folder / "photo.txt").stat()
    db.execute("INSERT INTO files VALUES ('photo.txt', ?, ?, 'failed', ?, NULL, 1, 0, 0, 0, NULL)",
               (st.st_size, st.st_mtime_ns, "'photo.txt' is a binary file, not text."))
    db.commit()
    db.close()
    english = "başarısız photo.txt — 'photo.txt' is a binary file, not text."
    assert main(["batch", str(folder), "--status", "--lang", "tr"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == english
    db = sqlite3.connect(out / DB_NAME)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2
        assert {"prior_output", "reason_said"} <= {r[1] for r in db.execute("PRAGMA table_info(files)")}
        # phrases that say another reason (an older workstation's run wrote the English alone since)
        db.execute("""UPDATE files SET reason_said = '[["doc.empty", {"name": "photo.txt"}]]'""")
        db.commit()
        assert main(["batch", str(folder), "--status", "--lang", "tr"]) == 0
        assert capsys.readouterr().out.splitlines()[1] == english
        db.execute("PRAGMA user_version = 99")  # (a newer workstation's)
    finally:
        db.close()
    assert main(["batch", str(folder), "--status"]) == 1
    assert "was written by a newer workstation (schema 99, this one knows 2)" in capsys.readouterr().err


def test_a_folder_without_documents_says_so_and_names_what_it_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder of .pages, .key and .numbers files (.rtf, .odt, .ods and .pptx then, read since) said "0 pending, 0 running,
    0 done, 0 failed" and exited, without a word of the files it did not read."""
    folder = tmp_path / "inbox"
    folder.mkdir()
    for name in ("report.pages", "budget.numbers", "slides.key"):
        (folder / name).write_bytes(b"PK\x03\x04 not text")
    # and conversations F7 exported there (it offers the folder documents were opened from), in
    # English and Turkish: the next batch summarized one as "document 1 of 6"; a person's note is a document
    from workstation.core.conversation_export import conversation_export
    from workstation.core.locales import locale_texts
    from workstation.core.store import ConversationStore

    store = ConversationStore(tmp_path / "c.sqlite3")
    conv = store.new("Weekly notes")
    store.add_message(conv.id, "user", "What is left to do?")
    store.add_message(conv.id, "assistant", "Send the budget.")
    store.export_markdown_new(conv.id, folder)
    store.export_markdown(conv.id, folder / "Haftalık.md", locale_texts("tr").get)
    (tmp_path / "notes.md").write_text("# Notes\n\nStarted the budget; last message to Ayla.\n", encoding="utf-8")
    assert not conversation_export(tmp_path / "notes.md")
    run = _batch_run(folder, "-p", _profile_file(tmp_path))
    assert run.returncode == 0, run.stderr
    err = run.stderr
    assert "batch: left alone 3 files of kinds it does not read (budget.numbers, report.pages, slides.key); it reads .txt" in err
    assert ("batch: left out 2 conversations this app exported here (F7: Haftalık.md, Weekly-notes.md); a conversation "
            "is not a document to summarize") in err, err
    assert f"batch: found no documents in {folder}" in err
    # in the app's language, or --lang's (it was English on a Turkish PC); no model loads, no priority lowered
    from workstation.cli import main

    assert main(["batch", str(folder), "-p", str(_profile_file(tmp_path)), "--lang", "tr", "--full-priority"]) == 0
    err = capsys.readouterr().err
    assert "batch: okumadığı türden 3 dosya atlandı (budget.numbers, report.pages, slides.key); okuduğu türler: .txt" in err
    assert f"batch: {folder} içinde hiç belge bulunamadı" in err and "batch: 0 bekliyor, 0 özetleniyor, 0 bitti" in err, err


def test_documents_whose_names_are_not_utf8_are_left_alone_with_a_sentence(tmp_path: Path) -> None:
    """A name unpacked from an old zip archive (latin-1 bytes: lat\xfc\xdf.txt) stopped the whole
    run with "unexpected error: UnicodeEncodeError" (SQLite takes only UTF-8 text)."""
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / os.fsdecode(b"lat\xfc\xdf.txt")).write_text("The canteen closes at two.\n", encoding="utf-8")
    run = _batch_run(folder, "-p", _profile_file(tmp_path))
    assert run.returncode == 0, run.stderr
    err = run.stderr
    assert ("batch: left alone 1 document whose name is not UTF-8 text (lat\ufffd\ufffd.txt): probably from another "
            "computer or an old zip archive; rename it, then run the same command again") in err, err
    assert f"batch: found no documents in {folder}" in err


def test_the_log_says_each_part_once_as_it_ends(tmp_path: Path, smollm2_path: Path) -> None:
    """batch's stderr is a night's log: a line a part as it ends, not one each half second a
    part is being read or written (what the app's live progress is told); parts summarized
    side by side (two slots) each get their line too."""
    from docmaker import honeybee_text

    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "bees.txt").write_text(honeybee_text(2), encoding="utf-8")  # two parts at 512 tokens
    both = write_profile_file(tmp_path / "two-slots.yaml", context=512, parallel=2, threads=1, sampling={"max_tokens": 16})
    run = _batch_run(folder, "-p", both)
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stderr.splitlines() if " parts done" in line]
    done = [int(line.split(": ")[2].split(" of ")[0]) for line in lines]
    assert done == list(range(len(lines))) and len(lines) >= 3, lines  # from "0 of N" on, each once
    # its parts done, their summaries put together: said so, not a time left ("2 of 2 parts done, ETA 42s")
    n = len(lines) - 1
    assert lines[-1] == f"batch:   bees.txt: {n} of {n} parts done, putting the summary together", lines
    assert not [line for line in lines if "ETA" in line], lines  # "time left", as summarize and F6 say it
    # while it is measured (its parts not known yet), said so: no count of parts before there is one
    said = [line for line in run.stderr.splitlines() if "bees.txt: " in line]
    assert said[0] == "batch:   bees.txt: measuring it to cut it into parts" and said[1] == lines[0], said


def test_a_stopped_run_goes_on_from_the_parts_it_finished(tmp_path: Path, smollm2_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C in the morning said the run would "continue where it stopped", but the next run
    summarized the document from its first part again (75 s to be back at part 1 of 3). The
    parts finished are kept in the queue and not done again; the summary is whole."""
    import threading

    from docmaker import honeybee_text

    from workstation.commands.batch import engine_factory
    from workstation.core.batch_queue import BatchEvent, output_name, run_batch

    folder, out = tmp_path / "inbox", tmp_path / "out"
    folder.mkdir()
    (folder / "bees.txt").write_text(honeybee_text(2), encoding="utf-8")
    from workstation.core.profile_lookup import load_profile

    # short parts: a quicker test (a file: the next run is the command's, with -p FILE)
    profile_file = write_profile_file(tmp_path / "p.yaml", context=256, threads=1, sampling={"max_tokens": 8})
    profile = load_profile(str(profile_file))
    stop = threading.Event()
    seen: list[tuple[str, int, int]] = []

    def on_event(ev: BatchEvent) -> None:
        # as parts end (not a part under way: ``part``)
        if ev.kind == "progress" and ev.progress is not None and ev.progress.stage in ("map", "kept") \
                and not ev.progress.inside_part:
            seen.append((ev.progress.stage, ev.progress.chunks_done, ev.progress.chunks_total))
            if ev.progress.stage == "map" and ev.progress.chunks_done >= 1:
                stop.set()  # Ctrl-C, after a part

    counts = run_batch(folder, out, profile, engine_factory, on_event, cancel=stop)
    assert counts["pending"] == 1 and not (out / output_name("bees.txt")).exists()
    finished = max(done for stage, done, _ in seen if stage == "map")
    total = seen[-1][2]
    assert 1 <= finished < total and total >= 3, seen
    # --status says so (it said "pending  bees.txt", as of a document never begun)
    from workstation.cli import main

    assert main(["batch", str(folder), "-o", str(out), "--status"]) == 0
    parts = f"{finished} part" if finished == 1 else f"{finished} parts"
    assert (f"waiting  bees.txt — {parts} kept from the run that stopped; the next run goes on from there"
            in capsys.readouterr().out.splitlines())
    # the next run, as a person runs it: the parts kept said, then the part under way at once (its time
    # left; it said nothing for 75 s after "1 of 3 parts kept"), then each part as it ends
    run = _batch_run(folder, "-o", out, "-p", profile_file)
    assert run.returncode == 0, run.stderr
    said = [line.split("bees.txt: ", 1)[1] for line in run.stderr.splitlines() if line.startswith("batch:   bees.txt: ")]
    assert said[1] == f"{finished} of {total} parts kept from the run that stopped", said  # not summarized again
    assert re.fullmatch(rf"part {finished + 1} of {total} under way \(\d+% read\), (time left \S.*|writing its summary)",
                        said[2]), said
    assert [int(line.split(" of ")[0]) for line in said if " parts done" in line] == list(range(finished + 1, total + 1))
    text = (out / output_name("bees.txt")).read_text(encoding="utf-8")
    assert text.count("\n- **") == total and "Stopped after" not in text
    con = sqlite3.connect(out / DB_NAME)
    try:
        assert con.execute("SELECT COUNT(*) FROM parts").fetchone() == (0,)  # done: nothing kept any more
    finally:
        con.close()


def test_a_run_says_which_document_of_how_many_it_is_on(tmp_path: Path, smollm2_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """An overnight queue of eleven documents said only "summarizing memo.txt": nothing of how
    far the night had got."""
    from workstation.cli import main

    folder = tmp_path / "inbox"
    folder.mkdir()
    for i in range(2):
        (folder / f"memo{i}.txt").write_text(SUBJECT_PARAGRAPHS[i], encoding="utf-8")
    # a part's budget as summarize takes it, refused before the queue is made (and before the
    # run lowers its priority: main() here leaves this process as it was)
    assert main(["batch", str(folder), "-p", str(_profile_file(tmp_path)), "--max-tokens", "0"]) == 1
    assert capsys.readouterr().err.strip() == "workstation: --max-tokens is 0; allowed values are 1 to 10,000,000."
    assert not (folder / "summaries").exists()
    run = _batch_run(folder, "-p", _profile_file(tmp_path))
    assert run.returncode == 0, run.stderr
    err = run.stderr
    assert "batch: summarizing memo0.txt (document 1 of 2)" in err and "batch: summarizing memo1.txt (document 2 of 2)" in err
    # and how long the rest will take, once a document is done (the last says no more)
    done = [line for line in err.splitlines() if line.startswith("batch: done ")]
    assert len(done) == 2, err
    assert re.search(r" \(1 document left, (about (\d+ min )?\d+ s|nearly finished) at this run's pace\)$", done[0]), done
    assert done[1].endswith("memo1.txt.summary.md"), done
    # a part read whose time is not known yet says what it does ("time left …" said nothing)
    under_way = [line for line in err.splitlines() if " under way " in line]
    assert under_way and all(re.search(r"read\), (time left \S.*|writing its summary)$", line) for line in under_way), err
    assert not any(line.endswith("…") for line in under_way), under_way
    # an estimate that rounds to none is "nearly finished" ("az kaldı"): it said "about 0s for the 1 document left"
    from workstation.commands.batch import time_left
    from workstation.tui.i18n import Texts

    assert time_left(Texts("en"), 0.3, 1) == " (1 document left, nearly finished at this run's pace)"
    assert time_left(Texts("tr"), 0.3, 1) == " (kalan 1 belge, bu çalıştırmanın hızıyla az kaldı)"
    # in F6's words, one way each language says a time (English said "about 1m05s")
    assert time_left(Texts("en"), 65, 3) == " (3 documents left, about 1 min 5 s at this run's pace)"
    assert time_left(Texts("tr"), 65, 3) == " (kalan 3 belge, bu çalıştırmanın hızıyla yaklaşık 1 dk 5 sn)"
    assert time_left(Texts("en"), 65, 0) == time_left(Texts("en"), None, 3) == ""
    # rough (a document left longer than any done, or its text guessed): a range, as F6 says one
    assert time_left(Texts("en"), 130, 3, 2.5) == " (3 documents left, about 1–6 min at this run's pace)"
    assert time_left(Texts("tr"), 130, 3, 2.5) == " (kalan 3 belge, bu çalıştırmanın hızıyla yaklaşık 1–6 dk)"


def test_a_full_disk_under_the_queue_is_said_and_stops_the_run(tmp_path: Path) -> None:
    """The queue's disk full ended the run with "unexpected error: OperationalError: database
    or disk is full". SQLite's own limit on its pages makes the same error a full disk does."""
    from workstation.core.batch_queue import BatchError

    inbox, out = tmp_path / "inbox", tmp_path / "out"
    inbox.mkdir()
    for i in range(200):
        (inbox / f"memo-{i:03}-{'x' * 80}.txt").write_text("The canteen closes at two.\n", encoding="utf-8")
    q = BatchQueue(out / DB_NAME)
    try:
        pages = q.db.execute("PRAGMA page_count").fetchone()[0]
        q.db.execute(f"PRAGMA max_page_count={pages + 2}")
        with pytest.raises(BatchError) as full:
            q.scan(inbox, out)
        assert str(full.value) == (f"The disk holding {out} is full; free some space there, then run the same "
                                   "command again to go on where it stopped.")
        assert q.counts()["pending"] == 0  # nothing half-queued: the scan's transaction was rolled back
    finally:
        q.close()


@pytest.mark.parametrize(("output", "why"), [
    ("letter.txt", "letter.txt is a file, not a folder"),
    ("letter.txt/sub", "letter.txt is a file, not a folder"),
    ("/proc/summaries", "the folder /proc does not take new files"),
])
def test_an_output_folder_that_cannot_be_made_is_one_sentence(
    output: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`batch DIR -o letter.txt` (a file there) said "unexpected error: FileExistsError"; under
    /proc and through a file, NotADirectoryError and FileNotFoundError."""
    from workstation.cli import main

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "memo.txt").write_text("Desks go to the third floor.", encoding="utf-8")
    (tmp_path / "letter.txt").write_text("Dear team,", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["batch", "docs", "-o", output]) == 1
    assert capsys.readouterr().err.strip() == f"workstation: Cannot write {output}: {why}."
    assert (tmp_path / "letter.txt").read_text(encoding="utf-8") == "Dear team,"


def test_a_spreadsheet_saved_as_csv_is_a_document_of_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """summarize read staff.csv; batch left it alone as "a kind it does not read"."""
    from workstation.cli import main

    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "staff.csv").write_text("name,desk\nAyla,3\nMert,7\n", encoding="utf-8")
    (folder / "photo.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(64))
    assert main(["batch", str(folder), "--status", "--json"]) == 0
    captured = capsys.readouterr()
    assert [f["path"] for f in json.loads(captured.out)["files"]] == ["staff.csv"]


def test_a_deleted_summary_is_made_again_and_a_gone_document_leaves_the_counts(tmp_path: Path) -> None:
    """A summary deleted by hand stayed "done" and no run made it again; a document renamed or
    deleted stayed "done" and counted ("document 7 of 7" of a folder of 6); with -o elsewhere, a
    moved document's summary in the folder's own summaries/ was summarized as a document."""
    folder, out = tmp_path / "inbox", tmp_path / "inbox" / "summaries"
    folder.mkdir()
    for name in ("minutes.md", "memo.txt", "report.txt", "empty.txt"):
        (folder / name).write_text("" if name == "empty.txt" else "text", encoding="utf-8")
    q = BatchQueue(out / DB_NAME)
    try:
        q.scan(folder, out)
        while (row := q.claim_next(out)) is not None:
            name = row.path
            if name == "empty.txt":  # skipped (nothing to summarize), then deleted: its row goes too
                q.mark_failed(name, "'empty.txt' is empty.", status="skipped")
                continue
            q.mark_done(name, {})
            (out / f"{name}.summary.md").write_text(f"# Summary of {name}\n\nText.\n\n_Read in one go (about 8 "
                                                    "words); the model was asked once; 0 s._\n", encoding="utf-8")
        (out / "memo.txt.summary.md").unlink()  # deleted by hand
        (folder / "minutes.md").rename(folder / "board-minutes.md")  # renamed
        (folder / "report.txt").rename(tmp_path / "report.txt")  # moved out
        (folder / "empty.txt").unlink()
        assert q.scan(folder, out) == 2  # the memo again, and the renamed one
        # a gone document's row stays done (a scan of the wrong folder forgot a night's work)
        assert {r.path: r.status for r in q.rows()} == {"memo.txt": "pending", "board-minutes.md": "pending",
                                                        "minutes.md": "done", "report.txt": "done"}
        assert (out / "minutes.md.summary.md").exists()  # its summary stays
    finally:
        q.close()
    elsewhere = BatchQueue(tmp_path / "out2" / DB_NAME)
    try:
        elsewhere.scan(folder, tmp_path / "out2")
        assert sorted(r.path for r in elsewhere.rows()) == ["board-minutes.md", "memo.txt"]  # no summary of a summary
    finally:
        elsewhere.close()


def test_a_file_of_a_persons_own_where_a_summary_goes_is_left_as_it_was(
        tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A person's own notes named as a summary would be ("a.md.summary.md") were written over
    without a word; summarize -o leaves such a file and says so, and so does batch now. Beside
    them, an empty file and a broken PDF: both were "failed; to try them again, run the batch
    with --retry-failed", which cannot help either."""
    folder, out = tmp_path / "docs", tmp_path / "docs" / "summaries"
    out.mkdir(parents=True)
    (folder / "a.md").write_text("\n\n".join(SUBJECT_PARAGRAPHS[:2]), encoding="utf-8")
    (folder / "b.md").write_text("\n\n".join(SUBJECT_PARAGRAPHS[2:4]), encoding="utf-8")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "scan.pdf").write_bytes(b"Scanned by the copier on the third floor.\n")
    mine = out / "a.md.summary.md"
    mine.write_text("my handwritten notes\n", encoding="utf-8")
    # as a first-time user runs it: the folder by its relative name, the summaries where they go by default
    run = subprocess.run([sys.executable, "-m", "workstation.cli", "batch", "docs", "-p", str(_profile_file(tmp_path)),
                          "--full-priority"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 3, run.stderr  # (a document failed)
    assert mine.read_text(encoding="utf-8") == "my handwritten notes\n"
    assert "was not written by workstation, so it was left as it was" in run.stderr, run.stderr
    # an empty document is skipped, not failed; a broken PDF said in plain words (it said "no %PDF header")
    assert "batch: skipped empty.txt: 'empty.txt' is empty.\n" in run.stderr, run.stderr
    pdf = "'scan.pdf' is damaged or not really a PDF; open it in the program it came from and save it as a PDF again."
    # named with why where the night's log ends (only "1 document failed (see why with --status)"), after
    # where the summaries are, as a folder to open (it said "summaries in docs/summaries"; from inside
    # the folder, "summaries in summaries"); --retry-failed only for the one another try can help
    last = run.stderr.strip().splitlines()[-5:]
    assert last[0].endswith(f"1 done, 2 failed, 1 skipped; summaries in {out}, all of them in one file there: "
                            "All summaries.md"), last
    assert last[1].startswith("batch:   failed a.md: '") and "left as it was" in last[1], last
    assert last[2] == f"batch:   failed scan.pdf: {pdf}", last
    assert last[3] == ("batch: 1 document cannot be summarized as it is, so trying it again cannot help; once it is "
                       "fixed as its line says (or saved again), the next run takes it by itself."), last
    assert last[4] == "batch: 1 document failed; to try it again, run the batch with --retry-failed.", last
    assert _status(out / DB_NAME) == {"a.md": "failed", "b.md": "done", "empty.txt": "skipped", "scan.pdf": "failed"}
    assert "a.md: 1 of" not in run.stderr and "done a.md" not in run.stderr  # refused before the work, not after
    assert (out / "b.md.summary.md").read_text(encoding="utf-8").startswith("# Summary of b.md")
    # --status says the same, and exits 0 (a report, not a failure), as --help says of each exit status
    from workstation.cli import main

    assert main(["batch", str(folder), "--status"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert f"failed   scan.pdf — {pdf}" in listed and "skipped  empty.txt — 'empty.txt' is empty." in listed, listed
    assert listed[-3:] == ["0 waiting, 0 being summarized, 1 done, 2 failed, 1 skipped", *(line[len("batch: "):] for line in last[3:])]
    with pytest.raises(SystemExit):
        main(["batch", "--help"])
    said = capsys.readouterr().out
    assert "\n  3         the run ended, but some documents failed" in said and "--status always 0" in said, said


def test_the_time_left_of_a_queue_is_its_text_not_its_bytes(tmp_path: Path) -> None:
    """A 40 s run said "18m02s" left: its pace was the bytes of the documents done, and a PDF's
    bytes are mostly not its text. The text of those done (as read), and a document of a kind
    not read yet taken as the average one."""
    from workstation.core.batch_queue import PACE_ROUGH, Pace

    folder, out = tmp_path / "inbox", tmp_path / "out"
    folder.mkdir()
    out.mkdir()
    (folder / "memo.txt").write_text("Bees make honey. " * 60, encoding="utf-8")  # 1,020 bytes of text
    (folder / "scan.pdf").write_bytes(b"%PDF-1.4\n" + b"\0" * 102_000)  # 100 times the bytes, as much text
    (folder / "handbook.md").write_text("Bees make honey. " * 600, encoding="utf-8")  # 10 times the text
    queue = BatchQueue(out / DB_NAME)
    try:
        queue.scan(folder, out)
        queue.mark_done("memo.txt", {})
        pace = Pace()
        pace.begin()
        assert pace.started is not None
        pace.started -= 100  # the memo took 100 s
        pace.finished(next(r for r in queue.rows() if r.path == "memo.txt"), 1020)
        eta = pace.eta(queue)
        assert eta is not None and 1100 <= eta < 1200, eta  # (the memo's time, its text 11 times: by the bytes 11,000 s)
        # a text file left is its own text (bytes), not the average document done: a 6,000-word handbook
        # after a short e-mail was said to take as long ("3 documents left, about 14 s"); said as a range
        handbook = next(r for r in queue.rows() if r.path == "handbook.md")
        assert pace.text_of(handbook) == handbook.size
        assert pace.estimate(queue) == (pytest.approx(eta, abs=1.0), PACE_ROUGH)  # (the clock runs on between the two)
        # once a PDF is done, one left is taken to hold the text a byte that one did
        pace.finished(next(r for r in queue.rows() if r.path == "scan.pdf"), 1020)
        assert pace.text_of(next(r for r in queue.rows() if r.path == "scan.pdf")) == pytest.approx(1020)
    finally:
        queue.close()


def test_the_time_left_of_short_notes_is_their_time_not_hours(tmp_path: Path) -> None:
    """300 one-line notes, a second each, were said to take "about 53 h 40 min": each note's
    prompt reused the instruction the one before had read (``cache_n`` 75 beside ``prompt_n`` 28,
    the tokens read), and the pace took the reused off the read, leaving fewer read than none.
    The totals are those of a real run's notes (``SummaryResult.totals``)."""
    from types import SimpleNamespace

    from workstation.core.batch_queue import Pace

    folder, out = tmp_path / "many", tmp_path / "out"
    folder.mkdir()
    out.mkdir()
    for i in range(20):
        (folder / f"f{i:02}.txt").write_text(f"note {i}: item {i} is done.\n", encoding="utf-8")
    queue = BatchQueue(out / DB_NAME)
    try:
        queue.scan(folder, out)
        pace = Pace()
        pace.begin()
        first = {"document_tokens": 11, "prompt_n": 101, "cache_n": 0, "prompt_ms": 1159.0, "calls": 1,
                 "predicted_ms": 444.0, "total_ms": 1598.0}
        later = {"document_tokens": 13, "prompt_n": 28, "cache_n": 75, "prompt_ms": 520.0, "calls": 1,
                 "predicted_ms": 600.0, "total_ms": 1120.0}
        for i in range(10):
            row = next(r for r in queue.rows() if r.path == f"f{i:02}.txt")
            queue.mark_done(row.path, {})
            result = SimpleNamespace(totals=first if i == 0 else later, chunk_budget=3982, prefix_tokens=90)
            pace.finished(row, row.size, result)
        eta = pace.eta(queue)
        assert eta is not None and 10 * 1.0 <= eta <= 10 * 2.0, eta  # (10 notes left, about 1.1 s each)
    finally:
        queue.close()


def test_a_closed_output_pipe_stops_the_run_and_fails_no_document(tmp_path: Path, smollm2_path: Path) -> None:
    """Ctrl-C in `batch … | tee log` ends tee too: the letter in hand was marked failed ("failed:
    BrokenPipeError: [Errno 32] Broken pipe") and the next run left it out without --retry-failed.
    A reader gone is a stop: the letter waits in the queue, exit 141 (a closed pipe's)."""
    folder, out = tmp_path / "School Letters", tmp_path / "out"
    folder.mkdir()
    (folder / "letter1.txt").write_text(SUBJECT_PARAGRAPHS[0], encoding="utf-8")  # (one letter: its stop is the point)
    prof = _profile_file(tmp_path)
    proc = subprocess.Popen(_batch(folder, out, prof), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # the first letter under way: its next line finds no reader
        seen.append(line)
        if line.startswith("batch: summarizing "):
            break
    proc.stderr.close()
    assert proc.wait(timeout=300) == 141, seen
    statuses = _status(out / DB_NAME)
    assert "failed" not in statuses.values() and statuses["letter1.txt"] == "pending", statuses
    again = subprocess.run(_batch(folder, out, prof), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert set(_status(out / DB_NAME).values()) == {"done"}
    assert "BrokenPipeError" not in again.stderr


def test_the_file_of_every_summary_beside_the_documents_is_no_document(tmp_path: Path, smollm2_path: Path) -> None:
    """Summaries written beside the letters (-o the folder itself): the next run finds All
    summaries.md among them and leaves it out, as its own file, not a document to summarize."""
    folder = tmp_path / "School Letters"
    folder.mkdir()
    (folder / "letter1.txt").write_text(SUBJECT_PARAGRAPHS[0], encoding="utf-8")
    prof = _profile_file(tmp_path)
    first = subprocess.run(_batch(folder, folder, prof), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0 and (folder / "All summaries.md").is_file(), first.stderr
    again = subprocess.run(_batch(folder, folder, prof), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "All summaries.md.summary.md" not in again.stderr and "summarizing" not in again.stderr, again.stderr
    assert set(_status(folder / DB_NAME)) == {"letter1.txt"}


def test_the_file_of_every_summary_of_another_queue_in_the_folder_is_no_document(
        tmp_path: Path, smollm2_path: Path) -> None:
    """A run with -o DIR/out, then one without -o: the second summarized out/All summaries.md as a
    letter (another queue's summaries were left out, not its file of them all)."""
    folder = tmp_path / "Letters"
    folder.mkdir()
    (folder / "letter1.txt").write_text(SUBJECT_PARAGRAPHS[0], encoding="utf-8")
    prof = _profile_file(tmp_path)
    assert _batch_run(folder, "-p", prof, "-o", folder / "out").returncode == 0
    assert (folder / "out" / "All summaries.md").is_file()
    again = _batch_run(folder, "-p", prof)
    assert again.returncode == 0, again.stderr
    assert set(_status(folder / "summaries" / DB_NAME)) == {"letter1.txt"}, again.stderr


def test_what_a_summary_names_that_its_document_does_not_is_said_under_it(tmp_path: Path) -> None:
    """The chat said "“420,000” … are not in Q3_report.txt." under a small model's reply; `batch`'s
    summaries said nothing of what the model made up ("estimated $5 million" of a note naming no
    sum). A real run: the very small model's summary of a team's note names a "CEO" the note does
    not; the reply check's line is under it, in its file and in the file of every summary."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "note_05.txt").write_text("Team meeting Wednesday 10:00.\nAgenda: year-end closing, new hire, holiday "
                                        "rota.\nBring the Q3 figures.\n", encoding="utf-8")
    prof = write_profile_file(tmp_path / "p.yaml", context=512, threads=1, sampling={"max_tokens": 48})
    run = _batch_run(folder, "-p", prof)
    assert run.returncode == 0, run.stderr
    summary = (folder / "summaries" / "note_05.txt.summary.md").read_text(encoding="utf-8")
    words = summary.split("\n\n")[2]  # (its title, the small model's caveat, then its words)
    missing = unchecked_figures(words, (folder / "note_05.txt").read_text(encoding="utf-8"), "note_05.txt")
    assert missing, summary  # (the model's own words: "a keynote speech by the CEO of the company")
    line = "> " + say(unchecked_phrases(unchecked_record("note_05.txt", missing))[1:])
    assert f"{words}\n\n{line}\n\n_Read in one go" in summary, summary
    every = (folder / "summaries" / "All summaries.md").read_text(encoding="utf-8")
    assert f"{words}\n\n{line}\n\n_Read in one go" in every, every


def test_every_summary_of_the_folder_is_in_one_file_to_read(tmp_path: Path, smollm2_path: Path) -> None:
    """A school secretary's nine letters made nine files in summaries/, one to open after another.
    One file holds them all, in the folder's order under each letter's name, with a line for a
    letter skipped or failed; the run's last line names it; a file of her own of that name stays.
    The very small model's caveat, the same over each summary, is said once (not once a letter),
    at the top under the title, not under the first letter as if of it alone (Turkish "Tüm
    özetler.md" alike); each summary file keeps its own; a letter taken out of the folder since is
    no longer in it."""
    folder = tmp_path / "School Letters"
    folder.mkdir()
    for i in range(2):
        (folder / f"letter{i + 1}.txt").write_text(SUBJECT_PARAGRAPHS[i], encoding="utf-8")
    (folder / "letter3 empty.txt").write_text("", encoding="utf-8")
    (folder / "letter4 broken.docx").write_bytes(b"not a word document")
    prof = _profile_file(tmp_path)
    run = _batch_run(folder, "-p", prof)
    assert run.returncode == 3, run.stderr
    out = folder / "summaries"
    every = out / "All summaries.md"
    assert f"; summaries in {out}, all of them in one file there: All summaries.md\n" in run.stderr, run.stderr
    text = every.read_text(encoding="utf-8")
    assert re.match(r"# All summaries of School Letters\n\n> Check names, dates and figures .+\n\n## letter1\.txt\n\n",
                    text), text
    assert "## letter1.txt" in text and "## letter2.txt" in text, text
    assert text.count("is a very small model") == 1, text
    assert all("is a very small model" in (out / f"letter{i}.txt.summary.md").read_text(
        encoding="utf-8") for i in (1, 2))
    one = (out / "letter1.txt.summary.md").read_text(encoding="utf-8").split("\n\n")[-2]  # its summary's words
    assert one in text and text.index("## letter1.txt") < text.index("## letter2.txt") < text.index("letter3 empty.txt")
    assert "- letter3 empty.txt: skipped: 'letter3 empty.txt' is empty." in text
    assert re.search(r"^- letter4 broken\.docx: not summarized: .+", text, re.MULTILINE), text
    # a summary's own note (cut at its length limit: 16 tokens here) stays with each that has it (the
    # second summary cut short lost it, the note the same as the first's)
    cut = [(out / f"letter{i}.txt.summary.md").read_text(encoding="utf-8") for i in (1, 2)]
    assert all("stopped at its length limit" in each for each in cut), cut
    assert text.count("stopped at its length limit") == 2, text
    # what a summary names that its letter does not have, by the chat's reply check, said under it in its file
    # and in the file of them all (the chat said it of its replies; the summaries had no line)
    for i, each in enumerate(cut):
        words = each.split("\n\n")[2]  # (its title, the small model's caveat, then its words)
        missing = unchecked_figures(words, SUBJECT_PARAGRAPHS[i], f"letter{i + 1}.txt")
        line = f"> {say(unchecked_phrases(unchecked_record(f'letter{i + 1}.txt', missing))[1:])}" if missing else ""
        assert (line in each and line in text) if missing else f"not in letter{i + 1}.txt" not in each, (line, each)
    # a run again in Turkish writes the Turkish-named one; it is no document of the folder
    again = _batch_run(folder, "-p", prof, "--lang", "tr")
    turkish = (out / "Tüm özetler.md").read_text(encoding="utf-8")
    assert again.returncode == 3 and re.match(
        r"# School Letters klasörünün tüm özetleri\n\n> Adları, .+\n\n## letter1\.txt\n\n", turkish), turkish
    assert turkish.count("> Adları, tarihleri ve rakamları belgeyle karşılaştırın:") == 1, turkish
    assert "summarizing" not in again.stderr and "özetleniyor" not in again.stderr.replace("0 özetleniyor", ""), again.stderr
    assert not every.exists()  # (the English one, out of date: two files to choose from, one stale)
    (folder / "letter2.txt").unlink()
    again = _batch_run(folder, "-p", prof)
    assert again.returncode == 3, again.stderr
    text = every.read_text(encoding="utf-8")
    assert "## letter1.txt" in text and "letter2.txt" not in text, text
    # a person's own file of that name is left as it was
    every.write_text("my notes\n", encoding="utf-8")
    assert _batch_run(folder, "-p", prof).returncode == 3
    assert every.read_text(encoding="utf-8") == "my notes\n"
