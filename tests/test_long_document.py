"""A document a little too long for a message in this profile: the line under the box names the
user's profile that holds it whole, F3 opens on it, and a switch keeps the message and the
document (a secretary summarized a letter the "Long documents" profile held whole, and the
small model's invented summary answered her question wrong)."""

from __future__ import annotations

from pathlib import Path

from conftest import tui_profile as _profile
from tui_helpers import message_views, until

from workstation.core.engine_api import answer_reserve
from workstation.core.phrases import rounded_words
from workstation.tui.app import WorkstationApp
from workstation.tui.screens.profile_menu import ProfileMenu


async def test_a_document_too_long_here_names_the_profile_that_holds_it(profiles: Path, tmp_path: Path,
                                                                        smollm2_path: Path, gemma_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    ledger.write_text("The invoice was paid. " * 400, encoding="utf-8")  # ~2,000 tokens; "a" reads 1,024
    # the same model with a longer context (chosen: its tokens are the ones measured), another model
    # with a longer one still (more memory), and one whose model is not here (never named)
    _profile(profiles / "long.yaml", str(smollm2_path), context=4096, name="Long documents")
    _profile(profiles / "gemma.yaml", str(gemma_path), context=8192)
    _profile(profiles / "gone.yaml", str(tmp_path / "gone.gguf"), context=8192)
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        line = app.chat_screen.query_one("#attachment")
        await until(pilot, lambda: app.engine is not None)
        app._attach_document((ledger, ledger.read_text(encoding="utf-8")))
        await until(pilot, lambda: "holds it whole" in str(line.render()))
        said = str(line.render())
        tokens, _n_ctx, own = next(m for d, m in app._document_tokens.items() if d[0] == ledger)
        sampling = app.profile.sampling
        there = rounded_words((4096 - answer_reserve(sampling, 4096) - (tokens - own)) * 1600 / own)
        here = rounded_words((app.profile.context - answer_reserve(sampling, app.profile.context)
                              - (tokens - own)) * 1600 / own)
        # the figure that decides it first, then its words (it said "holds a conversation of about 3,500
        # words of this document" of a 2,800-word report it refused)
        assert said.startswith(f"Attached: ledger.txt. It is too long to send: a message in this profile can be up "
                               f"to about {here} words of this document (the rest of the room is kept for the "
                               "reply), and it has about 1,600."), said
        assert said.endswith(" Ctrl+R removes it. The \"Long documents\" profile takes longer messages, up to about "
                             f"{there} words of this document, so it holds it whole. F3, then Enter, switches to it; "
                             "your message and the document stay."), said
        # F3 says the same figures of this document beside its general ones, for both profiles
        await pilot.press("f3")
        await until(pilot, lambda: app.screen.__class__.__name__ == "ProfileMenu")
        listed = " ".join(str(app.screen._prompt(i, e)) for i, e in enumerate(app.screen.entries))
        assert f"ledger.txt's words are shorter, so a message holds about {here} of them" in listed or \
            f"ledger.txt's words are longer, so a message holds about {here} of them" in listed, listed
        assert f"so a message holds about {there} of them" in listed, listed
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        await pilot.press("f9")  # in Turkish too
        await until(pilot, lambda: "bütünüyle alır" in str(line.render()))
        assert str(line.render()).endswith(" Ctrl+R onu kaldırır. \"Long documents\" profili daha uzun mesajlar "
                                           f"alır, en çok bu belgeden yaklaşık {there.replace(',', '.')} sözcük; bu "
                                           "yüzden onu bütünüyle alır. F3, ardından Enter ona geçer; mesajınız ve "
                                           "belge kalır."), \
            str(line.render())
        await pilot.press("f9")
        await until(pilot, lambda: str(line.render()).startswith("Attached:"))
        # Enter: refused, and the notice names it too
        app.chat_screen.set_input("What was paid?")
        await pilot.press("enter")
        await until(pilot, lambda: any(str(n.message).startswith("Not sent: ledger.txt") for n in app._notifications))
        refused = next(str(n.message) for n in app._notifications if str(n.message).startswith("Not sent: ledger"))
        assert refused.endswith("Ctrl+R removes the document. The \"Long documents\" profile takes longer messages, "
                                f"up to about {there} words of this document, so it holds it whole. F3, then Enter, "
                                "switches to it; your message and the document stay."), refused
        # F3, as it says: the notice goes (it sat over the profiles, the highlighted row hidden); another stays
        app.notify("Another notice", timeout=60)
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        await pilot.pause()
        assert [str(n.message) for n in app._notifications] == ["Another notice"]


async def test_f3_opens_on_the_profile_that_holds_it_and_the_switch_keeps_message_and_document(
        profiles: Path, tmp_path: Path, smollm2_path: Path, gemma_path: Path) -> None:
    """F3, as the line under the box says, opens with that profile highlighted; Enter switches to it,
    and the message typed and the document are still there, the document fitting now."""
    from textual.widgets import OptionList

    ledger = tmp_path / "ledger.txt"
    ledger.write_text("The invoice was paid. " * 400, encoding="utf-8")
    _profile(profiles / "gemma.yaml", str(gemma_path), context=8192)
    _profile(profiles / "long.yaml", str(smollm2_path), context=4096, name="Long documents")
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        line = app.chat_screen.query_one("#attachment")
        await until(pilot, lambda: app.engine is not None)
        app._attach_document((ledger, ledger.read_text(encoding="utf-8")))
        await until(pilot, lambda: "holds it whole" in str(line.render()))
        app.chat_screen.set_input("What was paid?")
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        menu = app.screen
        options = menu.query_one(OptionList)
        assert menu.entries[options.highlighted].key == "long"
        await pilot.press("enter")
        await until(pilot, lambda: app.engine is not None and app.profile.key == "long" and app.loading is None)
        await until(pilot, lambda: str(line.render()).startswith("Attached: ledger.txt ("))
        assert app.chat_screen.input_text() == "What was paid?"
        assert app.pending_document is not None and app.pending_document[0] == ledger
        assert "too long" not in str(line.render()) and "holds it whole" not in str(line.render())
        assert app.document_holder() is None


async def test_no_profile_holds_it_keeps_the_words(profiles: Path, tmp_path: Path) -> None:
    """Where none of the user's profiles holds it whole (all 1,024 here), the line is as it was,
    and F3 opens on the running profile."""
    ledger = tmp_path / "ledger.txt"
    ledger.write_text("The invoice was paid. " * 400, encoding="utf-8")
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        line = app.chat_screen.query_one("#attachment")
        await until(pilot, lambda: app.engine is not None)
        document = (ledger, ledger.read_text(encoding="utf-8"))
        app._attach_document(document)
        await until(pilot, lambda: document in app._holders)
        assert app._holders[document] is None
        assert str(line.render()).endswith("Ctrl+R removes it."), str(line.render())
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(app.screen, ProfileMenu))
        from textual.widgets import OptionList

        menu = app.screen
        assert menu.entries[menu.query_one(OptionList).highlighted].key == "a"


async def test_an_answer_from_f6s_summary_says_so_under_it(profiles: Path, tmp_path: Path) -> None:
    """A message asked about a document too long for a message, F6's summary sent in its place: the
    reply says under it that it came from the summary, not the document (in Turkish too, and in the
    conversation's Markdown); a reply about a document sent whole says nothing of it."""
    from workstation.core.kept_parts import document_version
    from workstation.core.summarize import SummaryResult
    from workstation.tui.screens.summarize import SummarizeScreen

    letter = tmp_path / "PTA letter long.txt"
    letter.write_text("The summer fair raised 4,870 pounds. " * 300, encoding="utf-8")
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        line = app.chat_screen.query_one("#attachment")
        await until(pilot, lambda: app.engine is not None)
        app._attach_document((letter, letter.read_text(encoding="utf-8")))
        await until(pilot, lambda: "too long to send" in str(line.render()))
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SummarizeScreen))
        f6 = app.screen
        f6.path, f6.summary = letter, "The fair raised 1,200 pounds."
        f6.result = SummaryResult(str(letter), f6.summary, f6.summary, [], [], {}, False, 1024, 0, 512)
        f6.version = document_version(letter)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.chat_screen)
        app._attach_document(app.pending_document)
        await until(pilot, lambda: "asks about its summary" in str(line.render()))
        app.chat_screen.set_input("How much money did the summer fair raise?")
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation_id is not None and not app.generating)
        said = "Answered from F6's summary of PTA letter long.txt, not the document itself: a summary can miss or " \
               "change names, dates and figures."
        reply = message_views(app)[-1]
        await until(pilot, lambda: said in str(reply.query_one(".metrics").render()))
        await pilot.press("f9")
        await until(pilot, lambda: "F6'nın PTA letter long.txt özetinden yanıtlandı, belgenin kendisinden değil"
                    in str(message_views(app)[-1].query_one(".metrics").render()))
        assert said in app.store.to_markdown(app.conversation_id)
        await pilot.press("f9")
        # a short document, sent whole: no such line
        await pilot.press("ctrl+n")
        app._attach_document((Path("/docs/short.txt"), "Meeting at ten."))
        app.chat_screen.set_input("When is the meeting?")
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation_id is not None and not app.generating
                    and len(message_views(app)) == 2 and message_views(app)[-1].metrics is not None)
        assert "summary" not in str(message_views(app)[-1].query_one(".metrics").render())


async def test_a_search_for_the_profile_switched_from_is_not_taken(profiles: Path, tmp_path: Path,
                                                                   smollm2_path: Path) -> None:
    """The search for a profile that holds the document runs beside the screen; one begun for the
    profile switched from and ending after the switch (the document measured again meanwhile)
    was taken, and could name the profile now loaded as the one to switch to (review28)."""
    from workstation.tui.attaching import Holder
    from workstation.tui.messages import HolderFound

    ledger = tmp_path / "ledger.txt"
    ledger.write_text("The invoice was paid. " * 400, encoding="utf-8")
    _profile(profiles / "long.yaml", str(smollm2_path), context=4096, name="Long documents")
    app = WorkstationApp("a", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        document = (ledger, ledger.read_text(encoding="utf-8"))
        app._attach_document(document)
        await until(pilot, lambda: app._holders.get(document) is not None)
        found = app._holders[document]
        assert isinstance(found, Holder)
        app._holders.clear()
        stale = app.profile.__class__(**{**vars(app.profile)})  # (another profile object: the one switched from)
        app.post_message(HolderFound(document, found, stale))
        await pilot.pause()
        assert document not in app._holders
        app.post_message(HolderFound(document, found, app.profile))  # the profile loaded now's own: taken
        await until(pilot, lambda: app._holders.get(document) is found)


async def test_f3s_figure_for_another_profile_counts_that_profiles_reply_room(
        profiles: Path, tmp_path: Path, smollm2_path: Path) -> None:
    """F3's "a message holds about N words of this document" of another profile of the same model
    took the loaded profile's reply room (its sampling, Ctrl+E's own settings on it): the figure
    beside it, of that profile, then disagreed. Each profile's room is its own sampling's, with the
    conversation's own settings on top (as after a switch)."""
    import pytest

    from workstation.core.profile_lookup import load_profile

    ledger = tmp_path / "ledger.txt"
    ledger.write_text("The invoice was paid. " * 100, encoding="utf-8")
    _profile(profiles / "short.yaml", str(smollm2_path), context=2048)
    (profiles / "short.yaml").write_text((profiles / "short.yaml").read_text(encoding="utf-8")
                                         .replace("max_tokens: 8", "max_tokens: 64"), encoding="utf-8")
    _profile(profiles / "wide.yaml", str(smollm2_path), context=2048)
    (profiles / "wide.yaml").write_text((profiles / "wide.yaml").read_text(encoding="utf-8")
                                        .replace("max_tokens: 8", "max_tokens: 400"), encoding="utf-8")
    app = WorkstationApp("short", sample_system=False, language="en")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.engine is not None)
        app._attach_document((ledger, ledger.read_text(encoding="utf-8")))
        await until(pilot, lambda: app.pending_document is not None and app.pending_document in app._document_tokens)
        app.own_sampling = {"temperature": 0.5}  # (Ctrl+E's own setting for this conversation)
        short, wide = load_profile("short"), load_profile("wide")
        mine, its = app.attached_room(short), app.attached_room(wide)
        assert mine is not None and its is not None
        reserves = answer_reserve(short.sampling, 2048), answer_reserve(wide.sampling, 2048)
        assert reserves[0] < reserves[1]
        assert mine[1] - its[1] == pytest.approx((reserves[1] - reserves[0]) * mine[2], abs=2)  # (words, rounded)
