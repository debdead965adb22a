"""The overnight queue when the server is down: nothing is marked failed, the run stops with
the reason and the next run (server back) does the rest. Real `workstation serve` processes on
127.0.0.1 and real `workstation batch` runs; nothing of the HTTP layer is faked."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import wait_until
from docmaker import SUBJECT_PARAGRAPHS
from serve_helpers import DroppingServer, free_port, serve, write_profile

from workstation.core.batch_queue import DB_NAME
from workstation.core.errors import EX_TEMPFAIL

ROOT = Path(__file__).resolve().parent.parent
KEY_ENV = "WS_BATCH_OUTAGE_TEST_KEY"  # never set: the test server takes no key


def _desk_profile(tmp_path: Path, base_url: str) -> Path:
    """A desk PC's profile, like profiles/office-server.yaml."""
    path = tmp_path / "desk.yaml"
    path.write_text(yaml.safe_dump({
        "name": "desk", "backend": "openai",
        "remote": {"base_url": base_url, "api_key_env": KEY_ENV, "timeout_s": 120},
        "sampling": {"temperature": 0.0, "max_tokens": 16, "repeat_penalty": 1.0},
    }), encoding="utf-8")
    return path


def _inbox(tmp_path: Path) -> Path:
    folder = tmp_path / "inbox"
    folder.mkdir()
    for i in range(2):
        (folder / f"note{i}.txt").write_text(SUBJECT_PARAGRAPHS[i], encoding="utf-8")
    (folder / "broken.txt").write_bytes(bytes(range(256)) * 20)  # binary: the document's own fault
    return folder


def _rows(db: Path) -> dict[str, tuple[str, str | None]]:
    con = sqlite3.connect(db)
    try:
        return {p: (s, r) for p, s, r in con.execute("SELECT path, status, reason FROM files")}
    finally:
        con.close()


def _events(db: Path, kind: str) -> int:
    con = sqlite3.connect(db)
    try:
        return int(con.execute("SELECT COUNT(*) FROM events WHERE event=?", (kind,)).fetchone()[0])
    finally:
        con.close()


def _batch(folder: Path, out: Path, prof: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(KEY_ENV, None)
    return subprocess.run(
        [sys.executable, "-m", "workstation.cli", "batch", str(folder), "-p", str(prof), "-o", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )


def _last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


def test_server_down_leaves_the_queue_pending_and_the_next_run_does_it(tmp_path: Path, smollm2_path: Path) -> None:
    port = free_port()  # nothing listens here yet
    base_url = f"http://127.0.0.1:{port}/v1"
    folder, out = _inbox(tmp_path), tmp_path / "out"
    desk = _desk_profile(tmp_path, base_url)

    # the server is down: the run stops, says why, and fails no document
    down = _batch(folder, out, desk)
    assert down.returncode == 75, down.stderr  # EX_TEMPFAIL: try again later
    last = _last_line(down.stderr)
    assert f"Cannot reach the server at {base_url}" in last, down.stderr
    assert "3 documents are still waiting" in last and "none was marked failed" in last, last
    assert "run the same command again to continue where it stopped" in last, last
    assert "low priority" not in down.stderr  # the work is on the server, not this computer
    assert {p: s for p, (s, _r) in _rows(out / DB_NAME).items()} == dict.fromkeys(
        ("note0.txt", "note1.txt", "broken.txt"), "pending"
    )
    assert _events(out / DB_NAME, "failed") == 0

    # the server is back on that port: the same command does every document; the broken one
    # fails (its own fault) and the last line says what to do: not --retry-failed, which cannot help it
    with serve(write_profile(tmp_path, smollm2_path), "--port", str(port)) as server:
        assert server.base_url == base_url
        back = _batch(folder, out, desk)
        assert back.returncode == 3, back.stderr  # finished, one document failed
        rows = _rows(out / DB_NAME)
        assert {p: s for p, (s, _r) in rows.items()} == {
            "note0.txt": "done", "note1.txt": "done", "broken.txt": "failed"
        }, back.stderr
        assert "binary" in (rows["broken.txt"][1] or "")
        for name in ("note0.txt", "note1.txt"):
            assert (out / f"{name}.summary.md").read_text(encoding="utf-8").startswith(f"# Summary of {name}\n")
        assert "--retry-failed" not in back.stderr, back.stderr
        assert "1 document cannot be summarized as it is" in _last_line(back.stderr), back.stderr

        # nothing left to do but the failed one: the run says so, and what to do
        again = _batch(folder, out, desk)
        assert again.returncode == 3
        assert "0 waiting, 0 being summarized, 2 done, 1 failed" in again.stderr
        assert "the next run takes it by itself" in _last_line(again.stderr), again.stderr


def test_server_lost_mid_run_puts_the_rest_back_in_the_queue(tmp_path: Path, smollm2_path: Path) -> None:
    """The server goes away after the first document: the one that was being summarized and
    the rest stay pending (not failed), run_batch raises BatchStopped naming the server."""
    import pytest

    from workstation.commands.batch import engine_factory
    from workstation.core.batch_queue import BatchEvent, BatchStopped, run_batch
    from workstation.core.profile_lookup import load_profile_file

    folder, out = tmp_path / "inbox", tmp_path / "out"
    folder.mkdir()
    for i in range(3):
        (folder / f"memo{i}.txt").write_text(SUBJECT_PARAGRAPHS[i], encoding="utf-8")
    with serve(write_profile(tmp_path, smollm2_path)) as server:
        profile = load_profile_file(_desk_profile(tmp_path, server.base_url))

        def on_event(ev: BatchEvent) -> None:
            if ev.kind == "file-done" and server.proc.poll() is None:  # the server crashes
                server.proc.kill()
                server.proc.wait(timeout=30)

        with pytest.raises(BatchStopped) as stop:
            run_batch(folder, out, profile, engine_factory, on_event)
    # (the next document's count found the server gone: the server's own count is not given up
    # for an estimate that cuts documents into other parts)
    assert f"Cannot reach the server at {server.base_url}" in str(stop.value)
    assert stop.value.counts == {"pending": 2, "running": 0, "done": 1, "failed": 0}
    assert stop.value.exit_code == 75
    assert _events(out / DB_NAME, "failed") == 0


def test_a_model_that_cannot_be_loaded_fails_no_document(tmp_path: Path) -> None:
    """The local engine cannot be loaded (not a GGUF file): the same stop, every file pending,
    but exit status 1: running again later will not help until the model is fixed."""
    folder, out = _inbox(tmp_path), tmp_path / "out"
    model = tmp_path / "not-a-model.gguf"
    model.write_bytes(b"\0" * 4096)
    prof = tmp_path / "local.yaml"
    prof.write_text(yaml.safe_dump({"name": "local", "model": str(model), "threads": 1}), encoding="utf-8")
    run = _batch(folder, out, prof)
    assert run.returncode == 1, run.stderr
    last = _last_line(run.stderr)
    assert str(model) in last and "none was marked failed" in last, last
    assert "fix that, then run the same command again" in last, last
    assert not (out / ".workstation-batch.lock").exists()  # the run ended: its lock file went
    assert {s for s, _r in _rows(out / DB_NAME).values()} == {"pending"}


def test_a_document_the_server_goes_away_on_each_time_fails_at_its_third_try(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A document that brings the server down (the connection drops mid-reply, every time) is put
    back twice, then marked failed, so that the rest of the queue is not held up behind it."""
    from workstation.cli import main
    from workstation.core.batch_queue import MAX_ATTEMPTS

    folder, out = tmp_path / "inbox", tmp_path / "out"
    folder.mkdir()
    (folder / "heavy.txt").write_text(SUBJECT_PARAGRAPHS[0], encoding="utf-8")
    server = DroppingServer()
    try:
        desk = _desk_profile(tmp_path, server.base_url)
        for attempt in range(1, MAX_ATTEMPTS):
            run = _batch(folder, out, desk)
            assert run.returncode == 75, run.stderr
            assert "Lost the connection" in _last_line(run.stderr)
            assert _rows(out / DB_NAME)["heavy.txt"][0] == "pending", attempt
        last = _batch(folder, out, desk)
        status, reason = _rows(out / DB_NAME)["heavy.txt"]
        assert status == "failed" and f"try {MAX_ATTEMPTS} at this document" in (reason or ""), last.stderr
        assert server.replies == MAX_ATTEMPTS
        # said whole in the reader's language (both its sentences were English under Turkish)
        assert main(["batch", str(folder), "-o", str(out), "--status", "--lang", "tr"]) == 0
        line = capsys.readouterr().out.splitlines()[1]
        assert line.startswith("başarısız heavy.txt — ") and "Lost the connection" not in line, line
        assert line.endswith(f" Bu belge {MAX_ATTEMPTS}. kez denendi, bu yüzden bir daha denenmeyecek."), line
    finally:
        server.close()


def test_a_server_down_for_nights_uses_no_document_tries(tmp_path: Path) -> None:
    """Runs that never reach the server do not count as tries: after them, the document still
    has its tries when the server is back."""
    from workstation.core.batch_queue import BatchQueue

    folder, out = tmp_path / "inbox", tmp_path / "out"
    folder.mkdir()
    (folder / "memo.txt").write_text(SUBJECT_PARAGRAPHS[1], encoding="utf-8")
    desk = _desk_profile(tmp_path, f"http://127.0.0.1:{free_port()}/v1")
    for _ in range(3):
        assert _batch(folder, out, desk).returncode == 75
    queue = BatchQueue(out / DB_NAME)
    try:
        (row,) = queue.rows()
    finally:
        queue.close()
    assert (row.status, row.attempts) == ("pending", 0)


def test_a_server_that_answers_nothing_in_time_fails_that_document(tmp_path: Path) -> None:
    """A read time-out after the server took the request is the request's fault (too long for
    it), not an outage: that document fails with the time-out named, and the queue goes on."""
    folder, out = tmp_path / "inbox", tmp_path / "out"
    folder.mkdir()
    (folder / "long.txt").write_text(SUBJECT_PARAGRAPHS[2], encoding="utf-8")
    server = DroppingServer(stall=True)
    try:
        desk = _desk_profile(tmp_path, server.base_url)
        data = yaml.safe_load(desk.read_text(encoding="utf-8"))
        data["remote"]["timeout_s"] = 1
        desk.write_text(yaml.safe_dump(data), encoding="utf-8")
        run = _batch(folder, out, desk)
        status, reason = _rows(out / DB_NAME)["long.txt"]
        assert run.returncode == 3 and status == "failed", run.stderr
        assert "sent nothing for 1 s (remote.timeout_s in the profile)" in (reason or "")
    finally:
        server.close()


def test_a_summary_cut_by_the_server_going_away_says_what_to_do(
    tmp_path: Path, smollm2_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`summarize long.txt -p desk.yaml` with the server gone halfway said only "Lost the
    connection to …" and wrote nothing: it now says so, and what to do."""
    import threading

    import httpx

    from workstation.cli import main

    doc = tmp_path / "long.txt"
    doc.write_text("\n\n".join(SUBJECT_PARAGRAPHS * 4), encoding="utf-8")
    with serve(write_profile(tmp_path, smollm2_path)) as server:
        desk = _desk_profile(tmp_path, server.base_url)

        def crash() -> None:  # while the first part is being read or summarized
            wait_until(lambda: httpx.get(f"{server.root}/health", timeout=30).json()["slots_processing"] >= 1,
                       "the summary's first request in a slot", 300, every_s=0.02)
            server.proc.kill()

        crasher = threading.Thread(target=crash)
        crasher.start()
        code = main(["summarize", str(doc), "-p", str(desk), "--quiet", "-o", str(tmp_path / "summary.md")])
        crasher.join()
    err = capsys.readouterr().err.strip()
    # (75, "try again later", as batch exits for the same cause: it was 1)
    assert code == EX_TEMPFAIL and err.startswith(f"workstation: Lost the connection to {server.base_url}: "), err
    assert err.endswith(". Nothing was written; run the same command again once the server answers."), err
    assert "\n" not in err and not (tmp_path / "summary.md").exists()
