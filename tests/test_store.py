"""Conversations in SQLite: create, rename, delete, search, migrate, export."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from workstation.core.conversation_records import StoreError
from workstation.core.conversation_schema import SCHEMA_VERSION
from workstation.core.conversation_titles import title_from_message
from workstation.core.metrics import figures_line
from workstation.core.moments import local_text
from workstation.core.sqlite_schema import (
    in_plain_words,
    kept_before_upgrade,
    kept_copies,
    migrate,
    schema_version,
)
from workstation.core.store import ConversationStore


def test_round_trip_and_search(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    assert [p.name for p in tmp_path.iterdir() if "backup" in p.name] == []  # a new file: no copy of nothing kept
    a = store.new("Budget 2025", "office-cpu")
    b = store.new("Holiday plan")
    store.add_message(a.id, "user", "What is the travel budget?")
    store.add_message(a.id, "assistant", "About **12 000 TL**.", {"ttft_ms": 120.0, "predicted_n": 7})
    store.add_message(b.id, "user", "Kış tatili için öneri?")
    store.close()

    store = ConversationStore(tmp_path / "c.sqlite3")  # a new process sees the same data
    assert store.schema_version == SCHEMA_VERSION
    conv = store.get(a.id)
    assert [m.role for m in conv.messages] == ["user", "assistant"]
    assert conv.messages[1].metrics == {"ttft_ms": 120.0, "predicted_n": 7}
    assert [c.id for c in store.list()] == [b.id, a.id]  # newest activity first
    assert [(c.title, c.match, c.match_id) for c in store.list("travel")] == [  # message text, why, and
        ("Budget 2025", "What is the travel budget?", conv.messages[0].id)]  # where (opened there)
    assert [c.match for c in store.list("budget")] == [""]  # the title says why already
    assert [c.match_id for c in store.list("12 000")] == [conv.messages[1].id]
    assert store.list("%") == [] and store.list("_") == []  # typed as they are, not wildcards
    assert [c.title for c in store.list("holiday")] == ["Holiday plan"]  # title
    assert [c.title for c in store.list("tatil")] == ["Holiday plan"]  # Turkish text

    store.rename(b.id, "Kış tatili")
    assert store.get(b.id).title == "Kış tatili"
    with pytest.raises(StoreError):
        store.rename(b.id, "   ")
    store.delete(a.id)
    assert [c.id for c in store.list()] == [b.id]
    assert store.messages(a.id) == []  # cascade
    with pytest.raises(StoreError):
        store.get(a.id)


def test_export_markdown(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path / "c.sqlite3")
    conv = store.new("Notes", "office-cpu")
    store.add_message(conv.id, "user", "Hi")
    store.add_message(conv.id, "assistant", "Hello!\n\n```py\nprint(1)\n```", {"ttft_ms": 50, "predicted_per_second": 70.5, "predicted_n": 9})
    (tmp_path / "out").mkdir()
    out = store.export_markdown(conv.id, tmp_path / "out" / "notes.md")
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Notes\n")
    assert "## You\n\nHi\n" in text
    assert "## Assistant\n\nHello!" in text and "print(1)" in text
    # for a colleague: the conversation, not the dashboard's figures (the chat's line, figures_line)
    assert "TTFT" not in text and "tok/s" not in text and "Profile: `office-cpu`" in text
    assert figures_line(store.messages(conv.id)[1].metrics or {}) == "TTFT 50 ms · 70.5 tok/s · 9 tokens"
    first, last = (local_text(m.created) for m in (store.messages(conv.id)[0], store.messages(conv.id)[-1]))
    assert f"# Notes\n\nStarted {first}; last message {last}\n" in text  # when: a colleague sent it could not tell
    # a desk PC's conversation names the model that answered, not only "office-server"
    desk = store.new("Desk", "office-server")
    store.add_message(desk.id, "user", "Hi")
    store.add_message(desk.id, "assistant", "Hello!", {"profile": "office-server", "served_model": "smollm2-135m"})
    assert "Profile: `office-server` (the server's model: `smollm2-135m`)\n" in store.to_markdown(desk.id)
    from workstation.tui.i18n import Texts

    stopped = store.new("Durdu", "office-cpu")
    store.add_message(stopped.id, "user", "Merhaba")
    store.add_message(stopped.id, "assistant", "", {"stop_reason": "cancelled"})
    store.add_message(stopped.id, "user", "Bir daha")
    store.add_message(stopped.id, "assistant", "Bir zamanlar", {"stop_reason": "failed"})  # the server went away
    store.add_message(stopped.id, "assistant", "Long", {"ttft_ms": 1904, "predicted_n": 1234, "stop_reason": "length"})
    english = store.to_markdown(stopped.id)
    assert "Bir zamanlar\n\n*cut off by an error*\n" in english  # it read as a whole reply, with zero figures
    assert "Long\n\n*length limit*\n" in english  # how it ended, without the figures the chat writes
    turkish = store.to_markdown(conv.id, Texts("tr").get) + store.to_markdown(stopped.id, Texts("tr").get)
    assert "## Siz\n\nHi\n" in turkish and "## Asistan\n\nHello!" in turkish  # F7 in the UI's language
    assert "token/sn" not in turkish and "Profil: `office-cpu`" in turkish
    assert figures_line(store.messages(stopped.id)[-1].metrics or {}, Texts("tr").get).startswith("TTFT 1,9 sn")
    assert f"Başlangıç: {local_text(store.messages(conv.id)[0].created, '%d.%m.%Y %H:%M')}; son mesaj: " in turkish
    assert "*Yanıt başlamadan durduruldu.*" in turkish and "You" not in turkish
    assert "*bir hatayla kesildi*" in turkish and "*uzunluk sınırı*" in turkish
    assert list((tmp_path / "out").iterdir()) == [out]  # no temp file left behind
    with pytest.raises(StoreError, match=r"c\.sqlite3/x\.md: .*c\.sqlite3 is a file, not a folder\.$"):
        store.export_markdown(conv.id, tmp_path / "c.sqlite3" / "x.md")  # said "(File exists)"
    with pytest.raises(StoreError, match=r"the folder .*/nowhere does not exist\.$"):  # a typo is said, not made
        store.export_markdown(conv.id, tmp_path / "nowhere" / "x.md")
    assert not (tmp_path / "nowhere").exists()
    with pytest.raises(StoreError) as caught:  # said "the folder /proc does not exist"
        store.export_markdown(conv.id, Path("/proc/x.md"))
    assert str(caught.value) == "Cannot write /proc/x.md: the folder /proc does not take new files."
    # a summarized document's prompt is exported as the chat shows it, not the model's instructions
    doc = store.new("About notes.txt", "office-cpu")
    store.add_message(doc.id, "user", "Summarize the following part … END OF TEXT.",
                      shown="notes.txt belgesini özetle; sonra onunla ilgili sorularımı yanıtla.")
    exported = store.to_markdown(doc.id, Texts("tr").get)
    assert "## Siz\n\nnotes.txt belgesini özetle" in exported and "END OF TEXT" not in exported
    # the program's figure for a question about a table, under the reply as the chat says it (the
    # export kept only the model's wrong "98.38"), in the export's language
    store.add_message(doc.id, "user", "What is the total price?")
    store.add_message(doc.id, "assistant", "The total is 98.38.", {"ttft_ms": 5, "predicted_n": 6, "counted": [
        {"what": "total", "name": "Price", "letter": "C", "figure": "73.65", "rows": "5"}]})
    assert "The total is 98.38.\n\n*Counted by the program: Price (column C), all 5 rows: total 73.65*\n" \
        in store.to_markdown(doc.id)
    assert "*Programın hesabı: Price (C sütunu), 5 satırın tümü: toplam 73,65*" in store.to_markdown(doc.id, Texts("tr").get)

    # replies from two profiles: each names its own (the header named the last profile for all)
    mixed = store.new("Mixed", "/home/ayla/profiles/long-documents.yaml")
    for ref, name in (("office-cpu", "Office CPU"), ("/home/ayla/profiles/long-documents.yaml", "Long")):
        store.add_message(mixed.id, "user", "Hi")
        store.add_message(mixed.id, "assistant", "Hello", {"ttft_ms": 5, "predicted_n": 1, "profile": ref,
                                                           "profile_name": name})
    both = store.to_markdown(mixed.id)
    assert "Profiles: `office-cpu`, `long-documents` (each reply says which)" in both
    assert "Hello\n\n*office-cpu*\n" in both and "Hello\n\n*long-documents*\n" in both
    assert "\n*office-cpu" not in text  # one profile: named once, at the top

    with pytest.raises(StoreError) as caught:  # F7 in the Turkish UI says it in Turkish
        store.export_markdown(conv.id, tmp_path / "nowhere" / "x.md")
    assert Texts("tr").error(caught.value) == f"{tmp_path / 'nowhere' / 'x.md'} yazılamıyor: {tmp_path / 'nowhere'} klasörü yok."


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    db.close()
    with pytest.raises(StoreError, match="newer") as refused:
        ConversationStore(path)
    assert str(refused.value).endswith("Use the newer workstation again.")
    # a rollback after an upgrade: the copy kept before it is named, with what to do
    kept = kept_before_upgrade(path, SCHEMA_VERSION)
    kept.write_bytes(b"")
    with pytest.raises(StoreError) as refused:
        ConversationStore(path)
    assert ("losing what was written since its upgrade, move it aside with c.sqlite3-wal and c.sqlite3-shm beside "
            f"it, and rename the copy kept before it, {kept}, to c.sqlite3.") in str(refused.value)


def test_default_location_is_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKSTATION_DATA", str(tmp_path / "data"))
    store = ConversationStore()
    assert store.path == tmp_path / "data" / "conversations.sqlite3"
    store.close()


def test_store_does_not_import_textual() -> None:
    import subprocess
    import sys

    code = "import sys, workstation.core.store; assert 'textual' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_unanswered_message_joins_the_next_so_roles_alternate(tmp_path: Path) -> None:
    """A turn that failed (the server was down) leaves a user message without a reply; the next
    turn's prompt keeps it, joined to the new message, because Gemma's (and Mistral's) templates
    refuse two user messages in a row and the conversation could not go on."""
    from conftest import GEMMA3

    from workstation.core.chat_template import ChatTemplate

    store = ConversationStore(tmp_path / "c.sqlite3")
    conv = store.new("Printers")
    store.add_message(conv.id, "user", "Where is the printer?")
    store.add_message(conv.id, "assistant", "On the third floor.")
    store.add_message(conv.id, "user", "Are you there?")  # its turn failed: no reply was saved
    gemma = ChatTemplate.for_model(GEMMA3, "<bos>", "<eos>")
    raw = [{"role": m.role, "content": m.content} for m in store.messages(conv.id)]
    with pytest.raises(Exception, match="alternate"):
        gemma.render([*raw, {"role": "user", "content": "And the toner?"}])
    prompt = store.prompt_messages(conv.id, then="And the toner?")
    assert [m["role"] for m in prompt] == ["user", "assistant", "user"]
    assert prompt[-1]["content"] == "Are you there?\n\nAnd the toner?"
    assert "Are you there?\n\nAnd the toner?" in gemma.render(prompt)
    store.add_message(conv.id, "user", "And the toner?")
    assert store.prompt_messages(conv.id) == prompt  # the saved conversation reads the same
    assert len(store.messages(conv.id)) == 4  # nothing the user typed is dropped from the record


def test_a_title_is_one_line(tmp_path: Path) -> None:
    """A tab or line break in a name (chat -c "$(printf 'tab\\there')") showed as two rows in the
    list, like two conversations: titles are one line, of a bounded length."""
    store = ConversationStore(tmp_path / "c.sqlite3")
    conv = store.new("tab\there\nand\x07 bell")
    assert store.get(conv.id).title == "tab here and bell"
    store.rename(conv.id, "x" * 500)
    assert len(store.get(conv.id).title) == 120
    with pytest.raises(StoreError):
        store.rename(conv.id, "\t\n")


def test_an_old_file_opens_once_another_program_has_written_to_it(tmp_path: Path) -> None:
    """Turning an older build's file (a rollback journal) into WAL needs it to itself, and while
    another program holds its write lock (an older build saving a message, an opener upgrading
    it) SQLite says "database is locked" at once, without the connection's wait. Opening tries
    again until the writer is done (CI's run of the eight-openers test below failed this way)."""
    import threading

    from workstation.core.conversation_schema import MIGRATIONS

    path = tmp_path / "c.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(MIGRATIONS[0])
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO conversations(title, created, updated) VALUES ('Saved meanwhile', 0, 0)")
    done = threading.Timer(0.5, lambda: writer.execute("COMMIT"))
    done.start()
    try:
        store = ConversationStore(path)
    finally:
        done.join()
        writer.close()
    assert store.schema_version == SCHEMA_VERSION
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert [c.title for c in store.list()] == ["Saved meanwhile"]
    store.close()


def test_an_old_file_opened_by_many_at_once_is_upgraded_once(tmp_path: Path) -> None:
    """The TUI and ``chat -c`` may open a file of the previous schema at the same moment: each
    step runs once (an ALTER TABLE run twice fails), and every opener gets a usable store."""
    import threading

    from workstation.core.conversation_schema import MIGRATIONS

    path = tmp_path / "c.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(MIGRATIONS[0])
    old.execute("PRAGMA user_version = 1")
    old.execute("INSERT INTO conversations(title, created, updated) VALUES ('Before', 0, 0)")
    old.execute("INSERT INTO messages(conversation_id, role, content, created) VALUES (1, 'user', 'Hi', 0)")
    old.commit()
    old.close()
    start = threading.Barrier(8)
    errors: list[Exception] = []

    def open_it() -> None:
        start.wait()
        try:
            ConversationStore(path).close()
        except Exception as err:  # noqa: BLE001 - collected for the assertion
            errors.append(err)

    threads = [threading.Thread(target=open_it) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = ConversationStore(path)
    assert store.schema_version == SCHEMA_VERSION
    assert [(m.content, m.reasoning) for m in store.messages(1)] == [("Hi", "")]  # old rows kept
    # the file as it was is kept beside it, once, for a rollback to the older workstation
    assert sorted(p.name for p in tmp_path.glob("c.sqlite3.*")) == ["c.sqlite3.schema-1-backup"]
    kept = sqlite3.connect(kept_before_upgrade(path, 1))
    assert kept.execute("PRAGMA user_version").fetchone()[0] == 1
    assert kept.execute("SELECT content FROM messages").fetchall() == [("Hi",)]
    kept.close()
    # gone back to the older version (the copy copied back) and upgraded again later: the copy
    # is made again, with what was written meanwhile (the one from the first upgrade was kept)
    store.close()
    for name in ("c.sqlite3-wal", "c.sqlite3-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    path.write_bytes(kept_before_upgrade(path, 1).read_bytes())
    old = sqlite3.connect(path)
    old.execute("INSERT INTO messages(conversation_id, role, content, created) VALUES (1, 'user', 'Later', 0)")
    old.commit()
    old.close()
    ConversationStore(path).close()
    kept = sqlite3.connect(kept_before_upgrade(path, 1))
    assert kept.execute("SELECT content FROM messages").fetchall() == [("Hi",), ("Later",)]
    kept.close()


STEPS = ("CREATE TABLE notes(text TEXT);", "ALTER TABLE notes ADD COLUMN day REAL;\nCREATE TABLE tags(name TEXT);\n")


def _schema(db: sqlite3.Connection) -> tuple[int, list[str], list[str]]:
    """The file's version, tables and the columns of ``notes``, as ``db`` sees them."""
    tables = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return schema_version(db), tables, [row[1] for row in db.execute("PRAGMA table_info(notes)")]


def test_a_failed_migration_step_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    """A step that fails half-way (its last statement) is undone whole: the version, the tables
    and the columns as they were, on the connection that ran it and in the file; the step
    mended, the next opening upgrades it. A copy cut short (a process killed while copying the
    file before its upgrade) is no kept copy, and the next upgrade keeps a whole one."""
    path = tmp_path / "m.sqlite3"
    db = sqlite3.connect(path)
    migrate(db, STEPS[:1], "The test file", path)
    db.execute("INSERT INTO notes VALUES ('kept')")
    db.commit()
    cut = kept_before_upgrade(path, 1).with_name(kept_before_upgrade(path, 1).name + ".part")
    cut.write_bytes(path.read_bytes()[:1000])
    assert kept_copies(path) == []
    failing = (STEPS[0], STEPS[1] + "INSERT INTO nowhere VALUES (1);")
    with pytest.raises(sqlite3.OperationalError, match="no such table: nowhere"):
        migrate(db, failing, "The test file", path)
    assert not db.in_transaction
    other = sqlite3.connect(path)
    assert _schema(db) == _schema(other) == (1, ["notes"], ["text"])
    assert db.execute("SELECT text FROM notes").fetchall() == [("kept",)]
    migrate(db, STEPS, "The test file", path)
    assert _schema(other) == (2, ["notes", "tags"], ["text", "day"])
    assert kept_copies(path) == [kept_before_upgrade(path, 1)] and not cut.exists()
    copy = sqlite3.connect(kept_before_upgrade(path, 1))
    assert _schema(copy) == (1, ["notes"], ["text"]) and copy.execute("SELECT text FROM notes").fetchall() == [("kept",)]
    for c in (db, other, copy):
        c.close()


def test_a_step_another_opener_ran_meanwhile_is_not_run_again(tmp_path: Path) -> None:
    """Two programs open a file of the older schema at once: the second read its version before
    the first upgraded it, and takes the write lock after. It reads the version again under the
    lock and runs nothing (an ALTER TABLE run twice fails: "duplicate column name"), and no
    second copy is kept. (The moment between is made with SQLite's trace hook, not a race.)"""
    path = tmp_path / "m.sqlite3"
    first, second = sqlite3.connect(path), sqlite3.connect(path)
    migrate(first, STEPS[:1], "The test file", path)
    ran: list[str] = []

    def meanwhile(statement: str) -> None:
        if statement == "BEGIN IMMEDIATE" and not ran:  # before it takes the lock
            ran.append(statement)
            migrate(first, STEPS, "The test file", path)
            ran.append("upgraded")

    second.set_trace_callback(meanwhile)
    migrate(second, STEPS, "The test file", path)
    assert ran == ["BEGIN IMMEDIATE", "upgraded"]
    assert _schema(second) == (2, ["notes", "tags"], ["text", "day"])
    assert kept_copies(path) == [kept_before_upgrade(path, 1)]
    copy = sqlite3.connect(kept_before_upgrade(path, 1))  # the file as it was, not copied again once upgraded
    assert _schema(copy) == (1, ["notes"], ["text"])
    for c in (first, second, copy):
        c.close()


def test_drafts_are_kept_per_conversation_and_go_with_it(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    store = ConversationStore(path)
    report, menu = store.new("Report"), store.new("Menu")
    store.save_draft(report.id, "Also the margins for", (Path("/docs/margins.txt"), "Q3: 12%"))
    store.save_draft(menu.id, "Soup?")
    store.save_draft(None, "A new idea")
    store.save_draft(menu.id, "Soup on Fridays?")  # the newer text replaces the older
    store.save_draft(menu.id + 100, "nowhere")  # its conversation is gone: nothing kept
    store.close()
    again = ConversationStore(path)
    assert again.drafts() == {report.id: ("Also the margins for", (Path("/docs/margins.txt"), "Q3: 12%")),
                              menu.id: ("Soup on Fridays?", None), None: ("A new idea", None)}
    again.save_draft(None, "  \n")  # nothing typed any more: no draft
    again.save_draft(menu.id, "", (Path("menu.pdf"), "Soup"))  # a document alone is a draft
    again.delete(report.id)  # also from another process: the database itself removes it
    assert again.drafts() == {menu.id: ("", (Path("menu.pdf"), "Soup"))}


def test_a_file_from_a_build_before_schema_3_was_finished_is_completed(tmp_path: Path) -> None:
    """A build from the middle of schema 3's work wrote version 3 with the drafts table only:
    opening it crashed the app (no such table: app_state; no such column: shown). It is
    completed now, its conversations, messages and drafts kept."""
    path = tmp_path / "c.sqlite3"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT NOT NULL, profile TEXT NOT NULL DEFAULT '',
                                    created REAL NOT NULL, updated REAL NOT NULL);
        CREATE TABLE messages (id INTEGER PRIMARY KEY,
                               conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
                               role TEXT NOT NULL, content TEXT NOT NULL, metrics TEXT, created REAL NOT NULL,
                               reasoning TEXT NOT NULL DEFAULT '');
        CREATE TABLE drafts (conversation_id INTEGER PRIMARY KEY, text TEXT NOT NULL, document_path TEXT,
                             document_text TEXT, updated REAL NOT NULL);
        INSERT INTO conversations VALUES (1, 'Budget', '', 1.0, 1.0);
        INSERT INTO messages(conversation_id, role, content, created) VALUES (1, 'user', 'Hi', 1.0);
        INSERT INTO drafts VALUES (1, 'half typed', NULL, NULL, 1.0);
        PRAGMA user_version = 3;
    """)
    db.close()
    store = ConversationStore(path)
    assert store.schema_version == SCHEMA_VERSION  # completed, then upgraded past 3
    assert store.last_open() is False  # nothing remembered yet, and no error
    store.set_open(1)
    store.add_message(1, "assistant", "Hello", shown="Hello!")
    assert [(m.content, m.shown) for m in store.messages(1)] == [("Hi", ""), ("Hello", "Hello!")]
    assert store.drafts()[1][0] == "half typed" and store.last_open() == 1
    store.delete(1)
    assert store.drafts() == {}  # the trigger the repair added empties it with its conversation
    store.close()
    # and a file the finished step 3 made is left as it was
    fresh = tmp_path / "fresh.sqlite3"
    ConversationStore(fresh).close()
    tables = {r[0] for r in sqlite3.connect(fresh).execute("SELECT name FROM sqlite_master")}
    assert {"drafts", "app_state", "drafts_go_with_their_conversation"} <= tables


def test_a_damaged_database_is_one_sentence_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    store = ConversationStore(path)
    store.new("Budget")
    store._db.execute("DROP TABLE app_state")  # whatever made it so: the table is not there
    with pytest.raises(StoreError, match=r"^The conversation database .*c\.sqlite3 cannot be used \(no such table: app_state\)\.$"):
        store.last_open()
    store.close()

    class Counting:  # a part of a store, as ConversationStore's parts are: its methods are worded too
        def states(self: Any) -> int:
            return int(self._db.execute("SELECT count(*) FROM app_state").fetchone()[0])

    @in_plain_words(StoreError, lambda store: f"The conversation database {store.path}")
    class WithPart(Counting, ConversationStore):
        pass

    with_part = WithPart(path)
    with_part._db.execute("DROP TABLE IF EXISTS app_state")
    with pytest.raises(StoreError, match=r"^The conversation database .*c\.sqlite3 cannot be used \(no such table: app_state\)\.$"):
        with_part.states()
    with_part.close()


def test_a_name_is_kept_for_one_conversation_case_aside_in_any_language(tmp_path: Path) -> None:
    """F2 let "çalışma notları" stand beside "Çalışma notları" (SQLite's NOCASE knows only
    ASCII, chat -c matches both), and refused a conversation its own name again (Enter in F2
    on one of two "Hello"s the app made from first messages)."""
    store = ConversationStore(tmp_path / "c.db")
    try:
        notes = store.new("Çalışma notları")
        other = store.new("Bütçe")
        with pytest.raises(StoreError, match="Another conversation is named \u201cÇalışma notları\u201d"):
            store.rename(other.id, "çAlışma Notları")
        first, second = store.new("Hello"), store.new("Hello")  # made so from first messages
        store.rename(second.id, "Hello")  # its own name again: kept, no error
        store.rename(notes.id, "çalışma notları")  # its own name in other case: allowed
        assert store.get(notes.id, with_messages=False).title == "çalışma notları"
        assert store.get(first.id, with_messages=False).title == "Hello"
    finally:
        store.close()


def test_search_and_names_set_turkish_case_aside(tmp_path: Path) -> None:
    """SQLite's LIKE folds ASCII only and casefold() maps neither İ to i nor I to ı: "çalışan"
    did not find "Şirket Çalışanları", nor "iş" "İş Planı", and F2 let "iş planı" stand
    beside "İş Planı"."""
    store = ConversationStore(tmp_path / "c.db")
    try:
        staff, plan, calls = store.new("Şirket Çalışanları"), store.new("İş Planı"), store.new("Notlar")
        store.add_message(calls.id, "user", "ÇAĞRI MERKEZİ için vardiya listesi")
        assert [c.title for c in store.list("çalışan")] == ["Şirket Çalışanları"]
        assert [c.title for c in store.list("ŞİRKET")] == ["Şirket Çalışanları"]
        assert [c.title for c in store.list("İŞ PLANI")] == ["İş Planı"]
        assert "İş Planı" in [c.title for c in store.list("iş")]  # (and "Çalışanları": ı and i are one letter)
        assert [(c.title, c.match) for c in store.list("çağrı merkezi")] == [
            ("Notlar", "ÇAĞRI MERKEZİ için vardiya listesi")]
        with pytest.raises(StoreError, match="Another conversation is named \u201cİş Planı\u201d"):
            store.rename(staff.id, "iş planı")
        store.rename(plan.id, "IŞ PLANI")  # its own name in other capitals: allowed
        # search checks with LIKE first (fast, in C) on what any match holds as it is: a letter
        # that folds to others' letters (ß, a decomposed é) still finds its message
        other = store.new("Reise")
        store.add_message(other.id, "user", "Im Café\u0301 an der Straße")
        assert [c.title for c in store.list("café")] == ["Reise"]
        # a match its snippet's regular expression cannot see (ß for SS): the message's first
        # words under the title, not an empty line
        assert [(c.title, c.match) for c in store.list("STRASSE")] == [("Reise", "Im Café\u0301 an der Straße")]
        assert store.list("Strassenbahn") == []
    finally:
        store.close()


def test_search_finds_turkish_letters_typed_without_them(tmp_path: Path) -> None:
    """Ctrl+F set I, ı and İ alike but not ç, ğ, ö, ş, ü: "CALISANLAR" (typed on a keyboard
    without them) found nothing in "ÇALIŞANLAR", "ozet" nothing in "Özet"."""
    store = ConversationStore(tmp_path / "c.db")
    try:
        staff = store.new("Notlar")
        store.new("Toplantı özeti")
        store.add_message(staff.id, "user", "ÇALIŞANLAR için izin çizelgesi")
        assert [c.title for c in store.list("CALISANLAR")] == ["Notlar"]
        assert [c.title for c in store.list("izin cizelgesi")] == ["Notlar"]
        assert [c.title for c in store.list("ozet")] == ["Toplantı özeti"]
        assert [c.title for c in store.list("toplanti ÖZETİ")] == ["Toplantı özeti"]
        assert store.list("calisanlarimiz") == []
    finally:
        store.close()


def test_a_title_made_from_a_long_message_ends_at_a_word() -> None:
    """"Write a long story about a cat who works in an o": cut mid-word, and that was the name
    `chat -c` wanted typed back."""
    message = "Write a long story about a cat who works in an office, with many details."
    assert title_from_message(message) == "Write a long story about a cat who works…"  # (not "… in an")
    assert title_from_message("Short\nquestion?") == "Short question?"
    assert title_from_message("x" * 60) == "x" * 47 + "…"  # one long word: cut where it must be
    # …and not at a comma that led on (F7's file began "# Write a short email to a client, Mr Brown,")
    message = "Write a short email to a client, Mr Brown, saying the invoice is late."
    assert title_from_message(message) == "Write a short email to a client, Mr Brown…"


def test_a_title_cut_from_a_long_message_reads_whole_and_says_it_was_cut() -> None:
    """"Kiracımızdan gelen mesaj şu, buna kibar bir" stopped mid-phrase, nothing saying it went
    on: a title ends at a punctuation mark in its second half, else before trailing function
    words ("bir", "the"), and "…" says it was cut; a whole sentence is left as it is."""
    cases = {
        "Kiracımızdan gelen mesaj şu, buna kibar bir yanıt yazar mısın: kira bu ay gecikti.":
            "Kiracımızdan gelen mesaj şu…",
        "Müşterimize gönderilecek fiyat teklifi için kısa bir e-posta taslağı hazırlar mısın": "Müşterimize "
            "gönderilecek fiyat teklifi…",
        "Please check this contract and tell me whether the payment terms are fair to us": "Please check this "
            "contract and tell me…",
        "Can you summarize the main points of the report for the board and the staff": "Can you summarize the main "
            "points of the report…",
        "Toplantı notlarını düzenler misin? Yarın sabah müdüre göndereceğim, acele": "Toplantı notlarını düzenler "
            "misin?",
    }
    for message, title in cases.items():
        assert title_from_message(message) == title, message
        assert len(title) <= 48


def test_a_draft_that_cannot_be_saved_is_said_in_the_apps_language(tmp_path: Path) -> None:
    """The Turkish app said "The draft could not be saved …" in English."""

    from workstation.tui.i18n import Texts

    store = ConversationStore(tmp_path / "c.sqlite3")
    with sqlite3.connect(tmp_path / "c.sqlite3") as db:  # the file refuses it as a full disk does
        db.execute("CREATE TRIGGER full BEFORE INSERT ON drafts BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END")
    with pytest.raises(StoreError) as caught:
        store.save_draft(None, "half a thought")
    said = Texts("tr").error(caught.value)
    assert said.startswith(f"Taslak {tmp_path / 'c.sqlite3'} dosyasına kaydedilemedi (") and "disk is full" in said
    store.close()


def test_a_deleted_conversation_leaves_no_text_in_the_file_or_its_wal(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """F8's text stayed readable: in the -wal while any window had the file open (a copy taken
    then held it), in the file's free pages where SQLite is built without secure delete, and
    for good in the copy an upgrade kept beside the file (one from before that upgrade); a
    summary's parts, kept in the data folder and in batch's queue, in their free pages too."""
    from types import SimpleNamespace

    from workstation.core.batch_queue import BatchQueue
    from workstation.core.conversation_schema import MIGRATIONS
    from workstation.core.kept_parts import PartsKept, parts_store

    connect = sqlite3.connect

    def built_without_secure_delete(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = connect(*args, **kwargs)
        db.execute("PRAGMA secure_delete = OFF")  # as SQLite starts where built without it (not Debian's)
        return db

    monkeypatch.setattr(sqlite3, "connect", built_without_secure_delete)
    queue = BatchQueue(tmp_path / "out" / "queue.sqlite")
    for where in (parts_store(tmp_path), queue.path):
        parts = PartsKept(where, "contract.docx", "1")
        parts.keep(SimpleNamespace(start=0, end=9, reply="rent is GECKO-3391 " * 50, summary="GECKO-3391"))
        if where == queue.path:
            queue.mark_done("contract.docx", {})  # (its summary written: its parts go)
        else:
            parts.forget()
        parts.close()
    queue.close()
    for where in (tmp_path / "summary-parts.sqlite", queue.path):
        assert b"GECKO-3391" not in where.read_bytes(), where

    path = tmp_path / "conversations.sqlite3"
    old = sqlite3.connect(path)  # a file of an older workstation, upgraded on opening
    old.executescript(MIGRATIONS[0])
    old.execute("PRAGMA user_version = 1")
    old.execute("INSERT INTO conversations(title, created, updated) VALUES ('older', 0, 0)")
    old.execute("INSERT INTO messages(conversation_id, role, content, created) VALUES (1, 'user', ?, 0)",
                ("my IBAN is YAK-4410 " * 50,))
    old.execute("INSERT INTO conversations(title, created, updated) VALUES ('goes on', 5, 5)")
    old.executemany("INSERT INTO messages(conversation_id, role, content, created) VALUES (2, ?, ?, 5)",
                    [("user", "Hello"), ("assistant", "your card QUOLL-5512 " * 50), ("user", "PIN OKAPI-9 " * 50)])
    old.commit()
    old.close()
    store = ConversationStore(path)
    kept_copy = kept_before_upgrade(path, 1)
    assert b"YAK-4410" in kept_copy.read_bytes()
    store.delete(1)
    store.keep_as_earlier(2, 2, [3])  # a reply asked again (Alt+R), a question changed (Up): out of the copy too
    assert store.forget_messages(2, [4]) == 1
    copied = kept_copy.read_bytes()
    assert b"QUOLL-5512" not in copied and b"OKAPI-9" not in copied and b"Hello" in copied
    keep = store.new("kept", "p")
    store.add_message(keep.id, "user", "nothing secret")
    gone = store.new("secret", "p")
    store.add_message(gone.id, "user", "my PIN is ZEBRA-7731 " * 500)  # (pages of it)
    store.delete(gone.id)
    assert store._db.execute("PRAGMA freelist_count").fetchone()[0] == 0  # its pages given back: the file shrinks
    assert b"YAK-4410" not in kept_copy.read_bytes()
    assert sqlite3.connect(kept_copy).execute("PRAGMA user_version").fetchone()[0] == 1  # still a rollback's copy
    store.remember("summary", '{"follow_up": "the document ZEBRA-7731"}')  # F6's, deleted with its conversation
    store.forget_value("summary")
    try:
        for file in (path, tmp_path / "conversations.sqlite3-wal"):
            if file.exists():
                assert b"ZEBRA-7731" not in file.read_bytes(), file
        assert store._db.execute("PRAGMA secure_delete").fetchone()[0] == 1
        # the older file switched once on opening, so what a delete freed goes back to the disk (it never shrank)
        assert store._db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        fresh = ConversationStore(tmp_path / "fresh.sqlite3")  # a new file is made so
        assert fresh._db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        fresh.close()
        before = sqlite3.connect(tmp_path / "fresh.sqlite3")  # a file of before, that another window has open:
        before.execute("PRAGMA auto_vacuum = NONE")  # not switched (VACUUM held the write lock for seconds,
        before.execute("VACUUM")  # and that window's write that waited 5 s for it moved its session to memory)
        before.execute("SELECT 1 FROM conversations").fetchall()
        beside = ConversationStore(tmp_path / "fresh.sqlite3")
        assert beside._db.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
        beside.close()
        before.close()
        alone = ConversationStore(tmp_path / "fresh.sqlite3")  # switched at an opening alone, still in WAL mode
        assert alone._db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        assert alone._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        alone.close()
        damaged = path.with_name(f"{path.name}.schema-0-backup")  # a copy that cannot be written: said
        damaged.write_bytes(b"not a database: ZEBRA-7731")
        assert store.delete(keep.id) == [damaged]  # (the other copy never held it: not said)
    finally:
        store.close()


def test_two_replies_in_a_row_are_read_as_the_newer(tmp_path: Path) -> None:
    """The app killed while a question was asked again left the old reply and the new one's
    start in a row: Gemma's and Mistral's templates refused every later turn (roles alternate)."""
    store = ConversationStore(tmp_path / "c.sqlite3")
    conv = store.new("Twice")
    for role, text in (("user", "Hi"), ("assistant", "Hello."), ("assistant", "Hello there,")):
        store.add_message(conv.id, role, text)
    assert store.prompt_messages(conv.id, then="Thanks") == [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there,"},
        {"role": "user", "content": "Thanks"}]


def test_a_conversations_own_instructions_are_read_first_kept_and_exported(tmp_path: Path) -> None:
    """Alt+I's instructions: the model reads them first, in place of the profile's system
    prompt; blank, the profile's again; an export shows them; a deleted conversation's are
    said to have nowhere to go; a session moved to memory (a full disk) keeps them."""
    from conftest import make_profile

    from workstation.core.conversation_records import ConversationGone
    from workstation.core.engine_api import with_system_prompt

    store = ConversationStore(tmp_path / "c.sqlite3")
    conv = store.new("Menu")
    store.add_message(conv.id, "user", "Soup?")
    store.add_message(conv.id, "assistant", "Lentil.")
    store.set_instructions(conv.id, "  Answer in Turkish.\n- Two sentences at most.\n")
    assert store.get(conv.id).instructions == "Answer in Turkish.\n- Two sentences at most."
    said = store.prompt_messages(conv.id, then="And Friday?")
    assert said[0] == {"role": "system", "content": "Answer in Turkish.\n- Two sentences at most."}
    assert [m["role"] for m in said[1:]] == ["user", "assistant", "user"]
    profile = make_profile(system_prompt="You are a helpful assistant.")
    assert with_system_prompt(profile, said) == said  # the profile's prompt is not read as well
    markdown = store.to_markdown(conv.id)
    assert "Instructions for this conversation (in place of the profile's system prompt):\n\n" \
           "> Answer in Turkish.\n> - Two sentences at most.\n" in markdown
    memory = ConversationStore(Path(":memory:"))
    assert memory.adopt(store.get(conv.id)).instructions == memory.get(conv.id).instructions != ""
    store.set_instructions(conv.id, " \n ")
    assert store.get(conv.id).instructions == "" and store.prompt_messages(conv.id)[0]["role"] == "user"
    assert with_system_prompt(profile, store.prompt_messages(conv.id))[0]["content"] == "You are a helpful assistant."
    assert "Instructions for this conversation" not in store.to_markdown(conv.id)
    store.delete(conv.id)
    with pytest.raises(ConversationGone):
        store.set_instructions(conv.id, "Answer in one word.")


def test_a_reply_asked_again_is_kept_to_go_back_to(tmp_path: Path) -> None:
    """Alt+R threw the reply it replaced away for good; it is kept as the question's earlier
    reply, and Alt+V goes through them in the order they were written, back to the first."""
    store = ConversationStore(tmp_path / "c.sqlite3")
    conv = store.new("Letters")
    store.add_message(conv.id, "user", "Hi")
    store.add_message(conv.id, "assistant", "Hello.")
    question = store.add_message(conv.id, "user", "A short poem?")
    first = store.add_message(conv.id, "assistant", "Roses are red.", {"predicted_n": 4})
    assert store.next_reply_version(conv.id, question.id, first.id) is None  # nothing earlier yet
    for text in ("Violets are blue.", "Sugar is sweet."):  # asked again twice
        reply = store.add_message(conv.id, "assistant", text)
        before = [m.id for m in store.messages(conv.id) if question.id < m.id < reply.id]
        store.keep_as_earlier(conv.id, question.id, before)
    shown = store.messages(conv.id)[-1]
    assert [m.content for m in store.messages(conv.id)] == ["Hi", "Hello.", "A short poem?", "Sugar is sweet."]
    assert store.reply_versions(conv.id, question.id, shown.id) == (3, 3)
    seen = []
    for _ in range(4):
        seen.append((store.next_reply_version(conv.id, question.id, shown.id), store.messages(conv.id)[-1].content))
    assert seen == [((1, 3), "Roses are red."), ((2, 3), "Violets are blue."), ((3, 3), "Sugar is sweet."),
                    ((1, 3), "Roses are red.")]
    assert store.messages(conv.id)[-1].metrics == {"predicted_n": 4}  # its figures come back with it
    assert store.prompt_messages(conv.id)[-1]["content"] == "Roses are red."  # the next turn reads the one shown
    store.close()
    store = ConversationStore(tmp_path / "c.sqlite3")  # kept in the file
    assert store.reply_versions(conv.id, question.id, shown.id) == (1, 3)
    # the next question: the earlier ones can no longer be reached (Alt+V acts on the last), so they go
    nxt = store.add_message(conv.id, "user", "And a limerick?")
    assert store._db.execute("SELECT COUNT(*) FROM earlier_replies").fetchone()[0] == 0
    store.forget_messages(conv.id, [nxt.id])
    for text in ("Violets are blue.", "Sugar is sweet."):  # asked again, twice
        reply = store.add_message(conv.id, "assistant", text)
        store.keep_as_earlier(conv.id, question.id, [m.id for m in store.messages(conv.id) if question.id < m.id < reply.id])
    # the question taken back (changed, sent again): its replies go with it; so with the conversation
    store.forget_messages(conv.id, [question.id, shown.id])
    other = store.new("Other")
    q2 = store.add_message(other.id, "user", "Why?")
    store.add_message(other.id, "assistant", "Because.")
    r2 = store.add_message(other.id, "assistant", "Since.")
    store.keep_as_earlier(other.id, q2.id, [r2.id - 1])
    store.delete(other.id)
    assert store._db.execute("SELECT COUNT(*) FROM earlier_replies").fetchone()[0] == 0


def test_what_was_taken_out_comes_back_in_its_place_or_after_the_last(tmp_path: Path) -> None:
    """A question taken out (sent again changed) comes back under its own number, its earlier
    replies with it; where the number was taken meanwhile (the next message written takes a
    freed one: another window's), it comes back after the last message, its replies still its own
    (put back under its old number, the insert failed and the session moved to memory)."""
    store = ConversationStore(tmp_path / "c.db")
    conv = store.new("Agenda")
    store.add_message(conv.id, "user", "What is first?")
    store.add_message(conv.id, "assistant", "The budget.")
    question = store.add_message(conv.id, "user", "And then?")
    reply = store.add_message(conv.id, "assistant", "Hiring.")
    store.keep_as_earlier(conv.id, question.id, [reply.id])
    reply = store.add_message(conv.id, "assistant", "The move.")
    before = store.messages(conv.id)
    taken = store.take_out(conv.id, question.id)
    assert [m.content for m in store.messages(conv.id)] == ["What is first?", "The budget."]
    assert store.put_back(conv.id, taken) == before[2:]
    assert store.messages(conv.id) == before and store.reply_versions(conv.id, question.id, reply.id) == (2, 2)

    taken = store.take_out(conv.id, question.id)
    other = store.add_message(conv.id, "user", "Another window's question")  # takes the freed number
    assert other.id == question.id
    kept = store.put_back(conv.id, taken)
    assert [m.content for m in store.messages(conv.id)] == ["What is first?", "The budget.",
                                                            "Another window's question", "And then?", "The move."]
    assert [(m.content, m.created) for m in kept] == [(m.content, m.created) for m in before[2:]]
    assert store.reply_versions(conv.id, kept[0].id, kept[1].id) == (2, 2)  # its earlier reply followed it


def test_a_turn_is_held_by_one_process_however_its_database_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One reply at a time in a conversation (core/turn_lock.py): another process is refused
    while one holds it, by a relative or a whole path alike; a release under another spelling
    of the path is the same hold's (it dropped the process's lock with it)."""
    import subprocess
    import sys

    from workstation.core.turn_lock import claim_turn, release_turn

    db = tmp_path / "c.sqlite3"
    monkeypatch.chdir(tmp_path)

    def other_claims(n: int) -> bool:
        out = subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from workstation.core.turn_lock "
                              "import claim_turn; print(claim_turn(Path(sys.argv[1]), int(sys.argv[2])))", str(db), str(n)],
                             capture_output=True, text=True, timeout=60)
        return out.stdout.strip() == "True"

    assert claim_turn(Path("c.sqlite3"), 7) and claim_turn(db, 8)
    assert not other_claims(7) and not other_claims(8) and other_claims(9)
    release_turn(db, 7)  # (the other spelling of the path)
    assert other_claims(7) and not other_claims(8)
    release_turn(Path("c.sqlite3"), 8)
    assert other_claims(8)
    # the lock file removed while this process holds a turn in it, and another process holding
    # another turn in the new one: this process's claim of that turn locked the old file (both
    # held it); now it finds it held, its own turn moved into the new file
    from workstation.core.turn_lock import lock_file

    assert claim_turn(db, 8)
    lock_file(db).unlink()
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from pathlib import Path; from workstation.core."
                               "turn_lock import claim_turn; print(claim_turn(Path(sys.argv[1]), 7), flush=True); "
                               "sys.stdin.read()", str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        assert not claim_turn(db, 7)
        assert not other_claims(8)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
    release_turn(db, 8)


def test_parts_written_one_after_another_leave_no_file_open(tmp_path: Path) -> None:
    """Each saved KV state is written in a part of its own name, held by its own lock file
    (``held_part``): every lock file stayed open, deleted, for the life of the process, and an
    office server saving states piled them up towards "too many open files"."""
    import os

    from workstation.core.installed_models import held_part
    from workstation.core.turn_lock import claim_turn, lock_file, release_turn

    def open_files() -> int:
        return len(os.listdir("/proc/self/fd"))

    with held_part(tmp_path / ".warm-up.kv.1.part", ("models.being_added", {"name": "x", "folder": "y"})):
        pass
    before = open_files()
    for i in range(30):
        with held_part(tmp_path / f".state{i}.kv.1.part", ("models.being_added", {"name": "x", "folder": "y"})):
            assert open_files() == before + 1  # (its lock file, while held)
    assert open_files() == before
    # a file still holding another turn of this process stays open: closing it would drop that turn
    db = tmp_path / "c.sqlite3"
    assert claim_turn(db, 1) and claim_turn(db, 2)
    release_turn(db, 1)
    assert open_files() == before + 1 and lock_file(db).exists()
    release_turn(db, 2)
    assert open_files() == before


def test_a_session_kept_in_memory_is_written_back_whole(tmp_path: Path) -> None:
    """What the app kept in memory while its file took no writes (a full disk) goes back into
    the file: the open conversation brought up to date (a reply finished in memory, a message
    added), one made in memory under a new number where its own is taken in the file."""
    store = ConversationStore(tmp_path / "c.sqlite3")
    open_one = store.new("Lunch")
    store.add_message(open_one.id, "user", "Soup?")
    partial = store.add_message(open_one.id, "assistant", "Lent")  # a reply kept as it streams
    memory = ConversationStore(Path(":memory:"))
    memory.adopt(store.get(open_one.id))  # the disk filled: the session moved to memory
    other = store.new("Made elsewhere meanwhile")  # (its number is the one memory gives next)
    memory.update_message(partial.id, "Lentil.")
    memory.add_message(open_one.id, "user", "And Friday?")
    made = memory.new("Budget")
    assert made.id == other.id
    memory.add_message(made.id, "user", "Totals?")
    numbers = store.take_in(memory)
    assert numbers[open_one.id] == open_one.id and numbers[made.id] not in (other.id, open_one.id)
    assert [m.content for m in store.messages(open_one.id)] == ["Soup?", "Lentil.", "And Friday?"]
    assert [m.content for m in store.messages(numbers[made.id])] == ["Totals?"]
    assert store.get(numbers[made.id]).title == "Budget" and store.messages(other.id) == []
    # the open one moved without its messages (they could not be read then): theirs stay
    memory = ConversationStore(Path(":memory:"))
    memory.adopt(replace(store.get(open_one.id), messages=[]))
    memory.add_message(open_one.id, "user", "And Monday?")  # (number 1 in memory: the file's first's)
    store.take_in(memory)
    assert [m.content for m in store.messages(open_one.id)] == ["Soup?", "Lentil.", "And Friday?", "And Monday?"]
    # another writer (a second window, `chat -c`) added to the open one before the write-back,
    # and renamed it: the write-back deleted its messages ("theirs": gone from memory's copy)
    # and the name; what memory changed (a message taken away, instructions) still goes back
    memory = ConversationStore(Path(":memory:"))
    memory.adopt(store.get(open_one.id))
    store.add_message(open_one.id, "user", "From chat -c")
    store.add_message(open_one.id, "assistant", "Its reply")
    store.rename(open_one.id, "Lunch plans")
    first = store.messages(open_one.id)[0]
    memory.forget_messages(open_one.id, [first.id])  # (the user took "Soup?" away in memory)
    memory.set_instructions(open_one.id, "Be brief.")
    memory.add_message(open_one.id, "user", "And Tuesday?")
    memory.save_draft(open_one.id, "half typed in memory")
    memo = memory.new("Memo")  # (its number is taken in the file: it comes in under another)
    memory.save_draft(memo.id, "a draft in another one")
    memory.save_draft(None, "a new conversation's draft")
    memory.remember("folder", "/home/ayla/docs")
    numbers = store.take_in(memory)
    assert [m.content for m in store.messages(open_one.id)] == [
        "Lentil.", "And Friday?", "And Monday?", "From chat -c", "Its reply", "And Tuesday?"]
    assert store.get(open_one.id).title == "Lunch plans" and store.get(open_one.id).instructions == "Be brief."
    drafts = store.drafts()
    assert drafts[open_one.id][0] == "half typed in memory" and drafts[None][0] == "a new conversation's draft"
    assert drafts[numbers[memo.id]][0] == "a draft in another one" and store.get(numbers[memo.id]).title == "Memo"
    assert store.recalled("folder") == "/home/ayla/docs"
    # deleted in memory (a read-only folder's session), or in the file by another window
    # meanwhile: neither comes back with the write-back, and the delete in memory is unsaved
    memory = ConversationStore(Path(":memory:"))
    for listed in store.list():
        memory.adopt(store.get(listed.id))
    assert not memory.holds_unsaved()
    memory.delete(numbers[memo.id])
    assert memory.holds_unsaved()
    store.delete(open_one.id)
    store.take_in(memory)
    assert [c.title for c in store.list()] == ["Budget", "Made elsewhere meanwhile"]


def test_export_leaves_an_attached_documents_facts_as_they_are(tmp_path: Path) -> None:
    """F7's export wrote the program's facts of an attached CSV as a broken Markdown table
    ('| invoices.csv: 5 rows under the header row | 4 columns. |'): only the tables pasted in
    the user's own words are written as Markdown tables, the attached document stays as sent."""
    from workstation.tui.attachment import with_attached

    facts = ("Facts counted by the program from every row:\n"
             "invoices.csv: 5 rows under the header row, 4 columns.\n"
             "- Invoice (column A): text, different in every row (INV-001 to INV-005).\n"
             "- Customer (column B): text, different in every row (Acar Ltd to Ege AS).\n"
             "- Amount (column C): numbers; total 7,800.50, smallest 450.00, largest 3,100.50.\n"
             "- Status (column D): text, 2 different values; most common: unpaid (3), paid (2).\n\n")
    document = facts + "Invoice,Customer,Amount,Status\nINV-001,Acar Ltd,1250.00,unpaid\nINV-002,Bilge AS,800.00,paid"
    store = ConversationStore(tmp_path / "c.db")
    conv = store.new("Invoices")
    store.add_message(conv.id, "user", with_attached("Total of the unpaid ones?", "Document: invoices.csv", document))
    exported = store.export_markdown(conv.id, tmp_path / "out.md").read_text(encoding="utf-8")
    assert facts in exported
    assert "| 4 columns. |" not in exported


def test_export_names_an_attached_document_in_its_own_language(tmp_path: Path) -> None:
    """A message sent with a document on a Turkish screen is stored with "Belge: invoices.csv";
    exported in English (``conversations export``'s default) it said "Belge" among English words.
    The line is said in the export's language; what is stored stays as sent."""
    from workstation.tui.attachment import with_attached
    from workstation.tui.i18n import Texts

    store = ConversationStore(tmp_path / "c.db")
    conv = store.new("Invoices")
    sent = with_attached("Ödenmemişlerin toplamı?", "Belge: invoices.csv", "Invoice,Amount\nINV-001,1250.00")
    store.add_message(conv.id, "user", sent)
    english = store.to_markdown(conv.id)
    assert "---\nDocument: invoices.csv\n\nInvoice,Amount\nINV-001,1250.00" in english and "Belge" not in english
    assert "---\nBelge: invoices.csv\n\n" in store.to_markdown(conv.id, Texts("tr").get)
    assert store.messages(conv.id)[0].content == sent


def test_a_messages_facts_are_kept_and_an_older_file_without_them_still_opens(tmp_path: Path) -> None:
    """The facts the program counted of a message's attached table are kept with it as data (they
    were said in English after a restart); a file of the step before them is upgraded, its messages
    read with none, and a new message's facts read back as they were given."""
    from workstation.core.conversation_schema import MIGRATIONS

    path = tmp_path / "c.sqlite3"
    old = sqlite3.connect(path)
    for step in MIGRATIONS[:-1]:
        old.executescript(step)
    old.execute("INSERT INTO conversations(title, created, updated) VALUES ('Invoices', 0, 0)")
    old.execute("INSERT INTO messages(conversation_id, role, content, created) VALUES (1, 'user', 'total?', 0)")
    old.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
    old.commit()
    old.close()
    store = ConversationStore(path)
    assert store.schema_version == SCHEMA_VERSION
    assert [(m.content, m.facts) for m in store.messages(1)] == [("total?", [])]
    facts = [{"title": "invoices.csv", "rows": 4, "columns": [{"name": "Amount", "total": "4,800"}]}]
    store.add_message(1, "user", "and paid ones?", facts=facts)
    assert [m.facts for m in ConversationStore(path).messages(1)] == [[], facts]
    store.close()


def test_a_cut_title_is_found_by_its_words_without_the_cut_mark(tmp_path: Path) -> None:
    """A title the app cut from a long message ends in "…": `chat -c` with its words as the list
    shows them, less the mark, continues it (it made a second conversation of that name); a
    conversation titled exactly so is taken first."""
    store = ConversationStore(tmp_path / "c.sqlite3")
    try:
        cut = store.new(title_from_message("Kiracımızdan gelen mesaj şu, buna kibar bir yanıt yazar mısın: kira"))
        assert cut.title == "Kiracımızdan gelen mesaj şu…"
        found, new = store.titled_or_new("Kiracımızdan gelen mesaj şu")
        assert (found.id, new) == (cut.id, False)
        assert store.titled_or_new("Kiracımızdan gelen mesaj şu…")[0].id == cut.id
        exact = store.new("Kiracımızdan gelen mesaj şu")
        assert store.titled_or_new("Kiracımızdan gelen mesaj şu")[0].id == exact.id
        assert store.titled_or_new("Kiracımızdan gelen")[1] is True  # not a prefix search
    finally:
        store.close()


def test_a_messages_facts_travel_with_it_and_unreadable_ones_are_none(tmp_path: Path) -> None:
    """A message's facts go with it where the store copies it (``adopt``: the session moved to
    memory and back); facts the file holds that cannot be read (not JSON, not a list, an item no
    record) are none, and a record of them that is no table's is left out, not an error."""
    from workstation.core.table_facts import recorded_facts

    facts = [{"title": "invoices.csv", "rows": 4, "columns": [{"name": "Amount", "total": "4,800"}]}]
    first = ConversationStore(tmp_path / "a.sqlite3")
    second = ConversationStore(tmp_path / "b.sqlite3")
    try:
        conv = first.new("Invoices")
        first.add_message(conv.id, "user", "total?", facts=facts)
        second.adopt(first.get(conv.id))
        assert [m.facts for m in second.messages(conv.id)] == [facts]
        for kept, read in (("{not json", []), ('{"title": "x"}', []), ('[1, {"title": "x"}]', [{"title": "x"}])):
            with first._db:
                first._db.execute("UPDATE messages SET facts = ?", (kept,))
            assert [m.facts for m in first.messages(conv.id)] == [read], kept
    finally:
        first.close()
        second.close()
    assert recorded_facts(["not a record", {"columns": 5}, {"columns": [7]}]) == []  # type: ignore[list-item]


def test_a_cut_title_drops_trailing_function_words_and_an_early_comma_is_no_clause_end() -> None:
    """A title cut at a word's end leaves no "the" or "bir" hanging at its end ("… tenant on the…"),
    and a comma in its first half ("Dear team,") is no place to cut it: it would say nothing."""
    assert title_from_message("Please write polite reply for our tenant on the deposit refund now") == (
        "Please write polite reply for our tenant…")
    assert title_from_message("Kiracımızın depozito iadesi konusunda kibar bir yanıt yazar mısın") == (
        "Kiracımızın depozito iadesi konusunda kibar…")
    assert title_from_message("Dear team, please write a polite reply to our tenant about the deposit refund") == (
        "Dear team, please write a polite reply…")


def test_a_conversation_goes_on_from_an_earlier_message_in_a_copy(tmp_path: Path) -> None:
    """An earlier message changed (Up again in the app): a new conversation with the messages
    before it, each as kept (a document attached, its figures, thinking and facts), and the
    conversation's own instructions, settings and profile; the one copied stays as it was."""
    from workstation.core.conversation_records import ConversationGone

    store = ConversationStore(tmp_path / "c.sqlite3")
    conv = store.new("Budget letter", "office-cpu", "Answer in Turkish.", {"temperature": 0.2})
    facts = [{"what": "rows", "n": 3}]
    store.add_message(conv.id, "user", "Summarize.\n\n[document]\nQ1 figures", shown="Summarize (report.xlsx)",
                      facts=facts)
    store.add_message(conv.id, "assistant", "Three rows.", {"predicted_n": 3}, reasoning="Count them.")
    changed = store.add_message(conv.id, "user", "Now the letter.")
    store.add_message(conv.id, "assistant", "Dear team.")
    before = store.messages(conv.id)
    copy = store.copy_before(conv.id, changed.id, "Budget letter (changed at message 2)")
    assert copy.id != conv.id and copy.title == "Budget letter (changed at message 2)"
    assert (copy.profile, copy.instructions, copy.sampling) == ("office-cpu", "Answer in Turkish.", {"temperature": 0.2})
    assert [(m.role, m.content, m.metrics, m.reasoning, m.shown, m.facts, m.created) for m in copy.messages] == \
        [(m.role, m.content, m.metrics, m.reasoning, m.shown, m.facts, m.created) for m in before[:2]]
    assert {m.id for m in copy.messages}.isdisjoint(m.id for m in before)  # its own rows
    assert store.messages(conv.id) == before and store.list()[0].id == copy.id  # the newest: first in the list
    # a title no other has (case aside, as rename keeps them): the same message changed again
    again = store.copy_before(conv.id, changed.id, "budget letter (changed at message 2)",
                              lambda k: f"Budget letter (changed at message 2, copy {k})")
    third = store.copy_before(conv.id, changed.id, "Budget letter (changed at message 2)")  # ("again" left out)
    assert (again.title, third.title) == ("Budget letter (changed at message 2, copy 2)",
                                          "Budget letter (changed at message 2) (2)")
    store.delete(conv.id)
    with pytest.raises(ConversationGone):
        store.copy_before(conv.id, changed.id, "Gone")
    store.close()
