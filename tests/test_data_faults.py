"""Data files faulted as a tester found them: locked, a table missing, bad timestamps, a
read-only folder, a data folder moved, a saved state cut short. Each is one sentence naming
the file, and nothing the user had is lost."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from workstation.cli import main
from workstation.core.keys import KeyRing
from workstation.core.quota import day_start
from workstation.core.usage import UsageLog, UsageRecord


def _data() -> Path:
    return Path(os.environ["WORKSTATION_DATA"])


def _row(t: object, key: str = "alice", tokens: int = 10) -> UsageRecord:
    return UsageRecord(t=t, key=key, profile="office", route="chat", prompt_tokens=tokens)  # type: ignore[arg-type]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """``path`` held by another connection's write lock, as another program holds it."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_rows_a_stopping_server_cannot_write_are_kept_aside_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """serve stopped while usage.sqlite3 was locked dropped the rows it held (a warning, exit
    0); they are kept in a side file, counted against today's limit, and folded in later."""
    from workstation.core.server import accounts as accounts_module
    from workstation.core.server.accounts import Accounts, Caller
    from workstation.core.usage import UNSAVED_NAME

    monkeypatch.setattr(accounts_module, "CLOSING_TRY_S", 0.2)
    monkeypatch.setattr("workstation.core.sqlite_schema.WRITE_WAIT_MS", 100)
    path = _data() / "usage.sqlite3"
    usage = UsageLog(path)
    usage._db.execute("PRAGMA busy_timeout = 100")
    accounts = Accounts("office", usage=usage)
    with _locked(path):
        for _ in range(2):
            ticket = accounts.begin(Caller("alice"), "chat")
            accounts.finish(ticket, 200)
        accounts.close()
    assert accounts.kept_aside == 2 and accounts.lost == 0
    assert (_data() / UNSAVED_NAME).is_file()
    again = UsageLog(path)
    try:
        assert again.records() == []  # not in the file yet,
        assert again.fold_in() == 2  # folded in at the next start
        assert len(again.records()) == 2 and not (_data() / UNSAVED_NAME).exists()
    finally:
        again.close()
    # a writer that does not end in time (here it waits for the audit trail another holds): the
    # rows it held and those queued behind it were dropped; they are kept aside too
    import fcntl

    from workstation.core.audit import LOCK, AuditTrail

    monkeypatch.setattr(accounts_module, "CLOSE_WAIT_S", 0.0)
    audit = AuditTrail(_data() / "audit")
    accounts = Accounts("office", usage=UsageLog(path), audit=audit)
    with open(audit.directory / LOCK, "ab") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        for _ in range(3):
            accounts.finish(accounts.begin(Caller("bob"), "chat"), 200)
        accounts.close()
    assert accounts.kept_aside == 3 and accounts.lost == 0
    assert accounts._writer is not None
    accounts._writer.join(30)  # (it goes on once the trail is free; the usage file is closed by then)
    again = UsageLog(path)
    try:
        assert again.fold_in() == 3 and [r.key for r in again.records()].count("bob") == 3
    finally:
        again.close()


def test_the_side_file_counts_toward_today_until_folded_in() -> None:
    log = UsageLog(_data() / "usage.sqlite3")
    try:
        now = time.time()  # (one reading: two read either side of midnight are two days)
        log.keep_aside([_row(now, tokens=40)])
        assert log.tokens_on_day(now) == {"alice": 40}
    finally:
        log.close()


def test_rows_kept_aside_are_folded_in_once_by_servers_at_once_or_after_a_stop() -> None:
    """Two servers on one data folder folded the side file in at once and counted its rows
    twice; a fold-in stopped after writing them (before the side file went) wrote them again."""
    import threading

    from workstation.core.usage import UNSAVED_NAME

    path = _data() / "usage.sqlite3"
    first = UsageLog(path)
    first.keep_aside([_row(1_700_000_000.0 + i, tokens=15) for i in range(3)])
    second = UsageLog(path)
    folded: list[int] = []
    try:
        with first._side_file_held():  # the first server folds in; the second starts meanwhile
            other = threading.Thread(target=lambda: folded.append(second.fold_in()))
            other.start()
            other.join(0.5)
            assert other.is_alive()  # (it waits for the side file)
            folded.append(len(first._aside()))
            first.add(first._aside())
            (_data() / UNSAVED_NAME).unlink()
        other.join(30)
        assert folded == [3, 0] and len(first.records()) == 3
        # stopped between writing the rows and removing the side file: the next start adds none
        first.keep_aside([_row(1_700_000_100.0, tokens=5)])
        first.add(first._aside())
        assert second.fold_in() == 0 and len(second.records()) == 4 and not (_data() / UNSAVED_NAME).exists()
    finally:
        first.close()
        second.close()


def test_a_row_dated_in_the_future_is_not_today(capsys: pytest.CaptureFixture[str]) -> None:
    """A usage row with a future time counted toward "today" for ever (keys list, /usage/today)."""
    ring = KeyRing()
    ring.add("alice", tokens_per_day=1000)
    ring.close()
    log = UsageLog(_data() / "usage.sqlite3")
    now = time.time()
    log.add([_row(now, tokens=7), _row(day_start(now) + 3 * 86400, tokens=500)])
    assert log.tokens_on_day(now) == {"alice": 7}
    log.close()
    assert main(["keys", "list", "--json"]) == 0
    assert '"tokens_today": 7' in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["garbage", 1e13, -5.0])
def test_one_bad_timestamp_is_shown_as_a_question_mark(bad: object, capsys: pytest.CaptureFixture[str]) -> None:
    """keys list with created=1e13 said "year 318857 is out of range"; text gave a TypeError;
    usage --by day showed None."""
    ring = KeyRing()
    ring.add("alice")
    ring.add("bob")
    ring.close()
    with sqlite3.connect(_data() / "keys.sqlite3") as db:
        db.execute("UPDATE keys SET created = ?, last_used = ? WHERE name = 'alice'", (bad, bad))
    log = UsageLog(_data() / "usage.sqlite3")
    now = time.time()
    log.add([_row(now), _row(now, key="bob")])
    log.close()
    with sqlite3.connect(_data() / "usage.sqlite3") as db:
        db.execute("UPDATE requests SET t = ? WHERE key = 'alice'", (bad,))
    assert main(["keys", "list"]) == 0
    out = capsys.readouterr().out
    assert "alice" in out and "bob" in out
    assert main(["usage", "--by", "day"]) == 0
    out = capsys.readouterr().out
    assert "None" not in out and time.strftime("%Y-%m-%d", time.localtime(now)) in out  # (the day it was used: not
    # today's date read after the commands ran, which past midnight is the next day's)
    assert "| ?" in out


def test_a_conversation_with_a_bad_time_is_listed_and_tagged(capsys: pytest.CaptureFixture[str]) -> None:
    """created='garbage' kept the app from starting (its KV tag formatted it as a number)."""
    from workstation.core.kv_state import conversation_tag
    from workstation.core.store import ConversationStore

    store = ConversationStore()
    conv = store.new("Budget")
    store._db.execute("UPDATE conversations SET created = 'garbage', updated = 'garbage'")
    store._db.commit()
    bad = store.get(conv.id, with_messages=False)
    assert conversation_tag(store.identity, conv.id, bad.created).endswith(f":{conv.id}:0.000000")
    assert store.title_of(conv.id, 0.0) == "Budget"
    store.close()
    assert main(["conversations"]) == 0
    assert "Budget" in capsys.readouterr().out


@pytest.mark.parametrize(("name", "table", "command"), [
    ("keys.sqlite3", "keys", ["keys", "list"]),
    ("usage.sqlite3", "requests", ["usage"]),
    ("conversations.sqlite3", "conversations", ["conversations"]),
])
def test_a_file_without_its_table_is_one_sentence(
        name: str, table: str, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """keys.sqlite3 without `keys` said "unexpected error: OperationalError: no such table"."""
    {"keys.sqlite3": lambda: KeyRing().close(), "usage.sqlite3": lambda: UsageLog().close(),
     "conversations.sqlite3": lambda: __import__("workstation.core.store", fromlist=["x"]).ConversationStore().close(),
     }[name]()
    with sqlite3.connect(_data() / name) as db:
        db.execute("PRAGMA foreign_keys = OFF")
        db.execute(f"DROP TABLE {table}")
    assert main(command) == 1
    err = capsys.readouterr().err
    assert f"{_data() / name} cannot be used: it has no table '{table}'" in err, err
    assert "Move it aside" in err and "unexpected" not in err


def test_results_history_without_its_table_is_said() -> None:
    from workstation.core.errors import WorkstationError
    from workstation.core.results import ResultRow, db_path, history, save_run

    save_run("bench", [ResultRow("p", "tg", 5.0, "tok/s")])
    with sqlite3.connect(db_path()) as db:
        db.execute("PRAGMA foreign_keys = OFF")
        db.execute("DROP TABLE runs")
    with pytest.raises(WorkstationError, match="has no table 'runs'"):
        history()


def test_a_locked_key_file_is_one_sentence(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """keys add with keys.sqlite3 locked past the wait said "database is locked" as an unexpected error."""
    monkeypatch.setattr("workstation.core.sqlite_schema.WRITE_WAIT_MS", 100)
    KeyRing().close()
    with _locked(_data() / "keys.sqlite3"):
        assert main(["keys", "add", "bob"]) == 1
    err = capsys.readouterr().err
    assert f"The key file {_data() / 'keys.sqlite3'} cannot be used (database is locked: another program is " \
           "using it" in err, err


def test_a_database_that_is_a_folder_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    (_data() / "keys.sqlite3").mkdir(parents=True)
    assert main(["keys", "list"]) == 1
    assert f"{_data() / 'keys.sqlite3'} is a folder, not a database file" in capsys.readouterr().err


def test_a_read_only_data_folder_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A backup on read-only media: conversations, usage and keys list refused with "attempt
    to write a readonly database"; they only read, so they read it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("mounting a disk needs root")
    monkeypatch.setenv("WORKSTATION_DATA", str(disk))
    try:
        from workstation.core.store import ConversationStore

        store = ConversationStore()
        store.new("Budget")
        store.close()
        ring = KeyRing()
        ring.add("alice")
        ring.close()
        log = UsageLog()
        log.add([_row(time.time())])
        log.close()
        (disk / "empty").mkdir()
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        capsys.readouterr()
        for command, said in ((["conversations"], "Budget"), (["usage"], "alice"), (["keys", "list"], "alice")):
            assert main(command) == 0, capsys.readouterr().err
            assert said in capsys.readouterr().out
        assert main(["keys", "add", "bob"]) == 1  # a write still says why not
        assert "read-only" in capsys.readouterr().err
        # a folder there with nothing saved yet: nothing to list (it refused), and a write says
        # why in words ("[Errno 30] Read-only file system: '/…/conversations.sqlite3'" before)
        monkeypatch.setenv("WORKSTATION_DATA", str(disk / "empty"))
        assert main(["conversations"]) == 0, capsys.readouterr().err
        assert "No saved conversations yet" in capsys.readouterr().out
        assert main(["conversations", "rename", "#1", "Plan"]) == 1
        err = capsys.readouterr().err
        assert f"its folder {disk / 'empty'} cannot be written (read-only)" in err and "Errno" not in err, err
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def test_a_damaged_batch_queue_gets_the_move_aside_advice(tmp_path: Path) -> None:
    from workstation.core.batch_queue import DB_NAME, BatchError, BatchQueue

    (tmp_path / DB_NAME).write_bytes(b"\0" * 4096)
    with pytest.raises(BatchError, match="file is not a database.*Move it aside|move it aside"):
        BatchQueue(tmp_path / DB_NAME)


def test_a_batch_into_a_folder_it_cannot_write_is_a_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workstation.core.batch_queue import BatchError, BatchLock

    def refused(*_args: object, **_kw: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("workstation.core.batch_queue.os.open", refused)
    with pytest.raises(BatchError, match="cannot write in .* \\(Permission denied\\)"):
        BatchLock(tmp_path)


def test_delete_removes_the_saved_states_in_a_moved_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """conversation_tag held the database's path; in a folder copied or moved (a backup
    restored), delete compared it with the new path and left the conversation's states."""
    from workstation.core.kv_state import KvStateStore, StateKey, conversation_tag
    from workstation.core.store import ConversationStore

    old = tmp_path / "old"
    monkeypatch.setenv("WORKSTATION_DATA", str(old))
    store = ConversationStore()
    one, two = store.new("One"), store.new("Two")
    key = StateKey("m.gguf", "f16", "f16", 512)
    states = KvStateStore()
    states.save(key, [1, 2, 3], b"a" * 64, tag=conversation_tag(store.identity, one.id, one.created))
    # and one an older build tagged with the path
    states.save(key, [4, 5, 6], b"b" * 64,
                tag=f"conversation:{(old / 'conversations.sqlite3').resolve()}:{two.id}:{two.created:.6f}")
    store.close()
    new = tmp_path / "new"
    old.rename(new)
    monkeypatch.setenv("WORKSTATION_DATA", str(new))
    assert len(KvStateStore().entries()) == 2
    assert main(["conversations", "delete", "One", "--yes"]) == 0
    assert main(["conversations", "delete", "Two", "--yes"]) == 0
    assert KvStateStore().entries() == [], capsys.readouterr()


def test_cache_list_marks_a_state_cut_short(capsys: pytest.CaptureFixture[str]) -> None:
    from workstation.core.kv_state import KvStateStore, StateKey

    states = KvStateStore()
    path = states.save(StateKey("m.gguf", "f16", "f16", 512), [1, 2, 3], b"a" * 4096)
    path.write_bytes(path.read_bytes()[:-1000])
    states.save(StateKey("m.gguf", "f16", "f16", 2048), list(range(1234)), b"b" * 4096)
    assert main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert f"damaged: {path.name}" in out and "\n  1,234  " in out, out
    # sizes as every command says them: a state of 10 KB read "0.0 MiB", and the total "0.0 of 2,048 MiB"
    assert "  10 KB  " in out and ", 10 KB of 2.0 GB, in " in out and "MiB" not in out, out
    assert main(["cache", "list", "--lang", "tr"]) == 0  # in the app's language or --lang's (it was English)
    out = capsys.readouterr().out  # (numbers as the language writes them: "1.234", "2,0 GB")
    assert f"\nbozuk: {path.name} yarım ya da okunamıyor ve hiç kullanılmaz ('" in out and "\n  1.234  " in out, out
    assert "2,0 GB içinden 10 KB kullanımda, " in out, out  # (it said "10 KB" of the 2.0 GB, not what they were)
    assert main(["cache", "clear", "--damaged", "--lang", "tr"]) == 0
    assert not path.exists() and capsys.readouterr().out == f"{states.folder} klasöründen 1 bozuk kayıtlı KV durumu silindi.\n"
