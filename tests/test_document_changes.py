"""Two versions of a document compared by the program (core/document_changes.py): the changes it
finds, and in the TUI a second version attached after the first kept beside it, its changes given
to the model and listed under the reply, kept with it in the store."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import message_views, notices, send_text, until

from workstation.core.document_changes import (
    SHOWN_CHANGES,
    changes_lines,
    changes_record,
    compared,
    document_changes,
    for_the_model,
    looks_like_versions,
    recorded_changes,
    without_changes,
)
from workstation.core.phrases import say
from workstation.tui.i18n import Texts

LEASE_V1 = """RESIDENTIAL LEASE AGREEMENT

1. Rent. The monthly rent is $1,850, payable on the first day of each month.
2. Term. The term of this lease is 12 months, starting March 1, 2025.
3. Pets. No pets are allowed on the premises without written consent.
4. Parking. One parking space in the garage is included with the flat.
"""
LEASE_V2 = """RESIDENTIAL  LEASE AGREEMENT

1. Rent. The monthly rent is $1,975, payable on the first day of each month.
2. Term. The term of this lease is 24 months, starting March 1, 2025.
4. Parking. One parking space in the garage is included with the flat.
5. Late fee. A late fee of $75 applies when rent is paid after the fifth day.
"""


def _said(older: str, newer: str, lookup: object = None) -> list[str]:
    comparison = compared("Lease_v1.docx", older, "Lease_v2.docx", newer)
    return [say([line], lookup) for line in changes_lines(comparison)]  # type: ignore[arg-type]


def test_changed_figures_an_added_and_a_removed_clause_are_found() -> None:
    assert _said(LEASE_V1, LEASE_V2) == [
        "Found by the program: 4 changes between Lease_v1.docx and Lease_v2.docx:",
        "- changed: 1. Rent. The monthly rent is $1,850 → $1,975, payable on the first day of each month.",
        "- changed: 2. Term. The term of this lease is 12 → 24 months, starting March 1, 2025.",
        "- removed: 3. Pets. No pets are allowed on the premises without written consent.",
        "- added: 5. Late fee. A late fee of $75 applies when rent is paid after the fifth day.",
    ]
    # said in Turkish in a Turkish UI (the document's own words as they are)
    assert _said(LEASE_V1, LEASE_V2, Texts("tr").get)[:2] == [
        "Programın bulduğu: Lease_v1.docx ile Lease_v2.docx arasında 4 değişiklik:",
        "- değişti: 1. Rent. The monthly rent is $1,850 → $1,975, payable on the first day of each month.",
    ]


def test_whitespace_and_line_wrapping_are_no_change() -> None:
    wrapped = ("The tenant shall pay the monthly rent of $1,850 to the landlord on\nthe first day of each month.\n"
               "Rent: $1,850 a month\nTerm: 12 months\n")
    rewrapped = ("The tenant shall  pay the monthly rent of $1,850 to the\nlandlord on the first day of each month.  \n\n"
                 "Rent: $1,850 a month\n   Term: 12 months")
    assert document_changes(wrapped, rewrapped) == []
    assert _said(wrapped, rewrapped) == [
        "Found by the program: no changes between Lease_v1.docx and Lease_v2.docx (the same sentences)."]


def test_a_sentence_mostly_rewritten_says_what_it_was_and_is() -> None:
    older = "The landlord pays for water.\nThe tenant keeps the garden tidy."
    newer = "The landlord pays for water.\nThe tenant keeps the garden and the yard tidy."
    assert _said(older, newer)[1] == ("- changed: was “The tenant keeps the garden tidy.”, "
                                      "now “The tenant keeps the garden and the yard tidy.”")


def test_many_changes_are_cut_to_the_first_ones_and_said_so() -> None:
    older = "\n".join(f"Clause {i}: the fee for item number {i} is {i * 10} dollars." for i in range(20))
    newer = "\n".join(f"Clause {i}: the fee for item number {i} is {i * 10 + 5} dollars." for i in range(20))
    said = _said(older, newer)
    assert said[0].startswith("Found by the program: 20 changes") and len(said) == 1 + SHOWN_CHANGES + 1
    assert said[-1] == f"- and {20 - SHOWN_CHANGES} more"
    record = changes_record(compared("a.txt", older, "b.txt", newer))
    assert recorded_changes(record) == compared("a.txt", older, "b.txt", newer)


def test_versions_are_known_by_their_names_or_words() -> None:
    assert looks_like_versions("Lease_v1.docx", LEASE_V1, "Lease_v2.docx", LEASE_V2)
    assert looks_like_versions("draft.txt", LEASE_V1, "lease for Ayse.txt", LEASE_V2)  # (their words)
    assert looks_like_versions("contract.docx", "Payment within 30 days.", "contract (2).docx",
                               "Payment within 14 days.")  # (their names)
    assert not looks_like_versions("notes.txt", "Meeting at ten.", "memo.txt", "Meeting at noon.")
    assert not looks_like_versions("Lease_v1.docx", LEASE_V1, "minutes.txt",
                                   "Minutes of the board meeting on Monday: the budget was approved, "
                                   "the new office opens in May, and the next meeting is on June 3.")


def test_the_models_lines_come_off_the_message_as_sent() -> None:
    comparison = compared("Lease_v1.docx", LEASE_V1, "Lease_v2.docx", LEASE_V2)
    message = f"what changed?\n\n---\nDocument: Lease_v2.docx\n\n{LEASE_V2.rstrip()}"
    sent = f"{message}\n\n{for_the_model(comparison)}\n\n- For this question, the program counted: x."
    # a heading over the list, not a sentence for the model to go on with: SmolLM2 wrote "The program
    # (not the model) compared lease_v1.txt with lease_v2.txt has been updated as a new version …"
    assert for_the_model(comparison).startswith(
        "Changes between Lease_v1.docx (the earlier version) and Lease_v2.docx (the document above), 4 changes, "
        "found by comparing the two files:\n  - changed: 1. Rent. The monthly rent is $1,850 → $1,975")
    assert "The program" not in for_the_model(comparison)
    assert without_changes(sent) == f"{message}\n\n- For this question, the program counted: x."
    # a message sent before, with the sentence it had then: its lines come off too
    earlier = ("\n\nThe program (not the model) compared Lease_v1.docx, the earlier version, with Lease_v2.docx, "
               "the document above, and found 1 change:\n  - removed: 4. Pets.")
    assert without_changes(f"{message}{earlier}") == message
    # a paragraph of the document that happens to begin so stays
    assert without_changes(f"{message}\n\nChanges between drafts are kept by the Landlord.") == \
        f"{message}\n\nChanges between drafts are kept by the Landlord."
    # within the room the message has left beside the document: the first changes, then how many more
    short = for_the_model(comparison, room=80).split("\n")
    assert short[1:] == ["  - changed: 1. Rent. The monthly rent is $1,850 → $1,975, payable on the first day of each month.",
                         "  - and 3 more"]
    assert for_the_model(comparison, room=0).split("\n")[1:] == ["  - and 4 more"]
    # the document as it was attached, put back by Up (its file found again by its text)
    from workstation.tui.attachment import find_attached

    found = find_attached(f"{message}\n\n{for_the_model(comparison)}")
    assert found is not None and found.document == LEASE_V2.rstrip()


def test_the_exported_conversation_lists_the_changes_under_the_reply(tmp_path: Path) -> None:
    """F7's Markdown says the program's list under the reply, as the chat does, and the question
    without the lines given to the model."""
    from workstation.core.store import ConversationStore

    store = ConversationStore(tmp_path / "c.sqlite3")
    conv = store.new("Lease")
    comparison = compared("Lease_v1.docx", LEASE_V1, "Lease_v2.docx", LEASE_V2)
    store.add_message(conv.id, "user", f"what changed?\n\n---\nDocument: Lease_v2.docx\n\n{LEASE_V2.rstrip()}"
                                       f"\n\n{for_the_model(comparison)}")
    store.add_message(conv.id, "assistant", "The rent went up.", {"changes": changes_record(comparison)})
    written = store.to_markdown(conv.id)
    assert "found by comparing the two files" not in written
    assert ("*Found by the program: 4 changes between Lease_v1.docx and Lease_v2.docx:*\n\n"
            "- changed: 1. Rent. The monthly rent is $1,850 → $1,975, payable") in written


def _docx(path: Path, text: str) -> Path:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    for line in text.strip().split("\n"):
        if line:
            document.add_paragraph(line)
    document.save(str(path))
    return path


async def test_a_second_version_attached_is_compared_and_its_changes_kept_under_the_reply(
        profiles: Path, tmp_path: Path) -> None:
    """A paralegal attached Lease_v1.docx, then Lease_v2.docx, and asked "what changed?": the
    second took the first's place and the small model invented the changes. Both are kept; the
    message carries the newer one and the program's list of changes, which the model is given
    and the line under the reply lists, after the conversation is opened again too."""
    from workstation.tui import integrations
    from workstation.tui.app import WorkstationApp
    from workstation.tui.messages import DocumentRead

    v1, v2 = _docx(tmp_path / "Lease_v1.docx", LEASE_V1), _docx(tmp_path / "Lease_v2.docx", LEASE_V2)
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(110, 32), notifications=True) as pilot:
        await until(pilot, lambda: app.engine is not None)
        said = notices(app)
        for path in (v1, v2):
            app.post_message(DocumentRead(str(path), *integrations.read_document_text(path)))
            await until(pilot, lambda path=path: app.pending_document is not None and app.pending_document[0] == path)
        assert ("Lease_v2.docx is compared with Lease_v1.docx: the program finds what changed and the reply is "
                "given it.") in said
        assert not [n for n in said if "takes the place of" in n]
        assert "Compared with Lease_v1.docx" in str(app.chat_screen.query_one("#attachment").render())
        await send_text(pilot, app, "what changed?")
        conv = app.conversation_id
        assert conv is not None
        await until(pilot, lambda: not app.generating and len(app.store.messages(conv)) == 2
                    and app.store.messages(conv)[-1].metrics is not None)
        question, reply = app.store.messages(conv)
        # the model read the newer document and the changes, not the older text
        assert "Document: Lease_v2.docx" in question.content and "$1,850 → $1,975" in question.content
        assert "No pets are allowed" not in question.content.split("4 changes, found by comparing the two files:")[0]
        lines = str(message_views(app)[-1].query_one(".metrics").render()).split("\n")
        at = lines.index("Found by the program: 4 changes between Lease_v1.docx and Lease_v2.docx:")
        assert lines[at + 1:at + 3] == [
            "- changed: 1. Rent. The monthly rent is $1,850 → $1,975, payable on the first day of each month.",
            "- changed: 2. Term. The term of this lease is 12 → 24 months, starting March 1, 2025."]
        # the message as shown: the question and the document, not the program's lines for the model
        shown = message_views(app)[-2]
        assert shown._shown.startswith("what changed?") and "found by comparing the two files" not in shown._shown + shown._folded
        assert reply.metrics["changes"]["older"] == "Lease_v1.docx"
        assert app.compared_with is None and app.pending_document is None
        await pilot.press("alt+r")  # asked again: the same question of the same versions, the same list under it
        await until(pilot, lambda: not app.generating and app.store.messages(conv)[-1].id != reply.id
                    and app.store.messages(conv)[-1].metrics is not None)
        assert (app.store.messages(conv)[-1].metrics or {}).get("changes") == reply.metrics["changes"]
    # opened again: the line is kept (read from the store: no model needed to show it)
    again = WorkstationApp("a", sample_system=False, language="tr", start_engine=False)
    async with again.run_test(size=(110, 32)) as pilot:
        await until(pilot, lambda: again.conversation_id == conv and len(message_views(again)) == 2)
        shown = str(message_views(again)[-1].query_one(".metrics").render())
        assert "Programın bulduğu: Lease_v1.docx ile Lease_v2.docx arasında 4 değişiklik:" in shown
        assert "12 → 24 months" in shown


async def test_two_unrelated_documents_still_replace_one_another(profiles: Path, tmp_path: Path) -> None:
    """A document of another text attached after the first takes its place, as before."""
    from workstation.tui import integrations
    from workstation.tui.app import WorkstationApp
    from workstation.tui.messages import DocumentRead

    lease = _docx(tmp_path / "Lease_v1.docx", LEASE_V1)
    minutes = tmp_path / "minutes.txt"
    minutes.write_text("Minutes of the board meeting on Monday: the budget was approved, the new office "
                       "opens in May, and the next meeting is on June 3.\n", encoding="utf-8")
    app = WorkstationApp("a", sample_system=False, language="en", start_engine=False)
    async with app.run_test(size=(110, 32), notifications=True) as pilot:
        said = notices(app)
        for path in (lease, minutes):
            app.post_message(DocumentRead(str(path), *integrations.read_document_text(path)))
            await until(pilot, lambda path=path: app.pending_document is not None and app.pending_document[0] == path)
        assert any(n.startswith("minutes.txt takes the place of Lease_v1.docx") for n in said)
        assert app.compared_with is None
        assert "Compared with" not in str(app.chat_screen.query_one("#attachment").render())


def _two_versions(tmp_path: Path) -> tuple[Path, Path]:
    v1, v2 = tmp_path / "Lease_v1.txt", tmp_path / "Lease_v2.txt"
    v1.write_text(LEASE_V1, encoding="utf-8")
    v2.write_text(LEASE_V2, encoding="utf-8")
    return v1, v2


async def _attach_both(pilot: object, app: object, v1: Path, v2: Path) -> None:
    """Lease_v1.txt, then Lease_v2.txt attached (as the Open dialog does), until the second is compared."""
    from workstation.tui import integrations
    from workstation.tui.messages import DocumentRead

    for path in (v1, v2):
        app.post_message(DocumentRead(str(path), *integrations.read_document_text(path)))  # type: ignore[attr-defined]
        await until(pilot, lambda path=path: app.pending_document is not None  # type: ignore[attr-defined]
                    and app.pending_document[0] == path)  # type: ignore[attr-defined]
    await until(pilot, lambda: app.compared_with is not None)  # type: ignore[attr-defined]


def _attach_line(app: object) -> str:
    return str(app.chat_screen.query_one("#attachment").render())  # type: ignore[attr-defined]


async def test_up_keeps_the_comparison_for_the_message_sent_again(
        profiles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lease_v1 then Lease_v2 attached, "What changed?" answered with the program's list; Up put
    the message back, " In the rent?" added, Enter: the new reply had no "Found by the program"
    lines and the model no list (the older text is not kept: the changes found go again).

    Whether the second document is a version of the first was weighed on the screen's thread
    (two 5,000-word texts: about a second with the screen held). It is weighed in a worker; a
    message sent meanwhile waits for it, and goes with the program's list of changes."""
    import threading

    from textual.widgets import Input

    from workstation.tui import attaching, integrations
    from workstation.tui.app import WorkstationApp
    from workstation.tui.messages import DocumentRead

    weighed_in: list[threading.Thread] = []
    may_answer = threading.Event()
    weigh = attaching.looks_like_versions

    def recorded(*args: str) -> bool:
        weighed_in.append(threading.current_thread())
        if threading.current_thread() is not threading.main_thread():
            may_answer.wait(30)
        return weigh(*args)

    monkeypatch.setattr(attaching, "looks_like_versions", recorded)
    v1, v2 = _two_versions(tmp_path)
    app = WorkstationApp("a", sample_system=False, language="en")
    said = notices(app)
    async with app.run_test(size=(110, 32), notifications=True) as pilot:
        await until(pilot, lambda: app.engine is not None)
        for path in (v1, v2):
            app.post_message(DocumentRead(str(path), *integrations.read_document_text(path)))
            await until(pilot, lambda path=path: app.pending_document is not None and app.pending_document[0] == path)
        await until(pilot, lambda: bool(weighed_in))
        assert weighed_in[0] is not threading.main_thread()
        app.chat_screen.set_input("What changed?")
        await pilot.press("enter")  # before it is known whether they are versions: it waits
        await until(pilot, lambda: "Comparing Lease_v2.txt with Lease_v1.txt; your message is sent once that "
                    "is done." in said)
        assert app.conversation_id is None and not app.generating
        may_answer.set()
        await until(pilot, lambda: app.conversation_id is not None and not app.generating
                    and len(app.store.messages(app.conversation_id)) == 2
                    and app.store.messages(app.conversation_id)[-1].metrics is not None)
        conv = app.conversation_id
        assert conv is not None
        question, reply = app.store.messages(conv)
        assert "$1,850 → $1,975" in question.content
        assert (reply.metrics or {})["changes"]["older"] == "Lease_v1.txt"
        first = app.store.messages(conv)[-1].metrics["changes"]
        prompt = app.chat_screen.query_one("#prompt", Input)
        prompt.focus()
        await pilot.press("up")
        await until(pilot, lambda: prompt.value == "What changed?" and app.finding_attached is None
                    and app.pending_document is not None and app.pending_document[0] == v2)
        assert app.compared_with is not None
        assert "Compared with Lease_v1.txt" in _attach_line(app)
        await pilot.press("end", *" In the rent?", "enter")
        await until(pilot, lambda: not app.generating and len(app.store.messages(conv)) == 2
                    and app.store.messages(conv)[0].content.startswith("What changed? In the rent?")
                    and app.store.messages(conv)[-1].metrics is not None)
        question, reply = app.store.messages(conv)
        assert "$1,850 → $1,975" in question.content  # the model got the list again
        assert (reply.metrics or {}).get("changes") == first
        shown = str(message_views(app)[-1].query_one(".metrics").render())
        assert "Found by the program: 4 changes between Lease_v1.txt and Lease_v2.txt:" in shown


async def test_a_message_given_back_keeps_its_comparison(profiles: Path, tmp_path: Path) -> None:
    """A message too long for the context comes back into the box with its document attached
    again: compared with the earlier version still (it came back with the newer alone)."""
    from workstation.tui.app import WorkstationApp

    v1, v2 = _two_versions(tmp_path)
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(110, 32), notifications=True) as pilot:
        await until(pilot, lambda: app.engine is not None)
        await _attach_both(pilot, app, v1, v2)
        long = "Which of these clauses changed for the tenant, and how? " * 120
        app.chat_screen.set_input(long)
        said = notices(app)
        await pilot.press("enter")
        await until(pilot, lambda: any("so it was not sent" in n for n in said) and not app.generating
                    and app.pending_document is not None and app.chat_screen.input_text().strip() == long.strip())
        assert app.pending_document[0] == v2
        assert app.compared_with is not None and app.compared_with[0] == v1  # type: ignore[index]
        assert "Compared with Lease_v1.txt" in _attach_line(app)


async def test_a_draft_keeps_the_comparison_elsewhere_and_after_a_restart(profiles: Path, tmp_path: Path) -> None:
    """Two versions attached and a question typed; another conversation opened and this one
    again (or the app started again): Lease_v2 alone was attached, compared with nothing, silently."""
    from workstation.tui.app import WorkstationApp

    v1, v2 = _two_versions(tmp_path)
    app = WorkstationApp("a", sample_system=False, language="en", start_engine=False)
    async with app.run_test(size=(110, 32), notifications=True) as pilot:
        conv = app.store.new("Lease").id
        await app.open_conversation(conv)
        await _attach_both(pilot, app, v1, v2)
        app.chat_screen.set_input("What changed?")
        await pilot.press("ctrl+n")  # another conversation, then back
        await until(pilot, lambda: app.conversation_id is None and app.pending_document is None)
        assert app.compared_with is None
        await app.open_conversation(conv)
        await until(pilot, lambda: app.pending_document is not None and app.pending_document[0] == v2)
        assert app.compared_with is not None and app.compared_with[0] == v1  # type: ignore[index]
        assert "Compared with Lease_v1.txt" in _attach_line(app)
    again = WorkstationApp("a", sample_system=False, language="en")  # started again: the draft, compared
    async with again.run_test(size=(110, 32), notifications=True) as pilot:
        await until(pilot, lambda: again.engine is not None and again.conversation_id == conv
                    and again.pending_document is not None)
        assert again.pending_document is not None and again.pending_document[0] == v2
        assert again.compared_with is not None and again.compared_with[0] == v1  # type: ignore[index]
        assert "Compared with Lease_v1.txt" in _attach_line(again)
        again.chat_screen.focus_prompt()
        await pilot.press("enter")
        await until(pilot, lambda: not again.generating and len(again.store.messages(conv)) == 2
                    and again.store.messages(conv)[-1].metrics is not None)
        assert (again.store.messages(conv)[-1].metrics or {})["changes"]["older"] == "Lease_v1.txt"


def test_a_drafts_comparison_is_kept_with_it_and_goes_with_its_conversation(tmp_path: Path) -> None:
    """The earlier version a draft's document is compared with is kept beside the draft (its text,
    as the draft's document's), and deleted with the conversation (its text left in the file)."""
    from workstation.core.store import ConversationStore
    from workstation.tui.attaching import kept_compared, recalled_compared

    store = ConversationStore(tmp_path / "c.sqlite3")
    lease = store.new("Lease")
    newer, older = (Path("/docs/Lease_v2.txt"), LEASE_V2), (Path("/docs/Lease_v1.txt"), LEASE_V1)
    store.save_draft(lease.id, "What changed?", newer, kept_compared(older, newer))
    store.save_draft(lease.id + 100, "nowhere", newer, kept_compared(older, newer))  # its conversation is gone
    kept = store.compared_drafts()
    assert list(kept) == [lease.id]
    assert recalled_compared(kept[lease.id], newer) == older
    assert recalled_compared(kept[lease.id], (newer[0], "another text")) is None  # (not the draft's document)
    comparison = compared("Lease_v1.txt", LEASE_V1, "Lease_v2.txt", LEASE_V2)  # Up's: the changes found
    assert recalled_compared(kept_compared(comparison, newer), newer) == recorded_changes(changes_record(comparison))
    store.save_draft(lease.id, "What changed?", newer)  # compared with nothing now
    assert store.compared_drafts() == {}
    store.save_draft(lease.id, "What changed?", newer, kept_compared(older, newer))
    store.delete(lease.id)
    assert store.compared_drafts() == {}
    assert LEASE_V1[:40] not in "".join(str(v) for _k, v in store._db.execute("SELECT * FROM app_state"))
    store.close()
