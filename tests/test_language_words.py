"""A model's words a token in the UI's language, read with its vocabulary alone (``language_words``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import workers_done

from workstation.core import language_words
from workstation.core.locales import locale_texts
from workstation.tui.i18n import Texts


def test_a_models_two_figures_read_its_vocabulary_once(
        smollm2_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its figure in Turkish and in English from one load of its vocabulary, kept for the file: a
    load for each doubled the wait for F4's first list in Turkish (every installed model read twice
    before the list showed). A damaged file says no figure, never an error."""
    from llama_cpp import _internals as internals

    loads: list[str] = []

    class Counted(internals.LlamaModel):  # the real loader, its loads counted
        def __init__(self, *args: object, **kwargs: object) -> None:
            loads.append(str(kwargs.get("path_model")))
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(internals, "LlamaModel", Counted)
    monkeypatch.setattr(language_words, "_known", {})
    turkish = locale_texts("tr").get
    assert language_words.model_figures(smollm2_path, turkish, measure=False) is None  # (nothing read yet)
    assert loads == []
    own, english = language_words.model_figures(smollm2_path, turkish) or (0.0, 0.0)
    assert 0 < own < english  # (SmolLM2 spends more tokens on a Turkish word than on an English one)
    assert len(loads) == 1
    assert language_words.model_figures(smollm2_path, turkish, measure=False) == (own, english)
    assert language_words.model_figures(smollm2_path, turkish) == (own, english) and len(loads) == 1
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(smollm2_path.read_bytes()[:3_000_000])  # (a download cut short)
    assert language_words.model_figures(broken, turkish) is None
    assert language_words.model_figures(smollm2_path, None) is None  # (English: the general figure holds)


async def test_the_app_reads_the_loaded_models_vocabulary_in_one_worker_at_a_time(
        profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The room said under the box and an attached document's share of it, asked again while the
    loaded model's tokenizer was being read, each started another worker reading it again."""
    from workstation.tui.app import WorkstationApp

    monkeypatch.setattr(language_words, "_known", {})
    app = WorkstationApp("a", start_engine=False, sample_system=False, language="tr")
    async with app.run_test(size=(100, 30)) as pilot:
        app.words_basis()
        app.words_basis()  # (asked again at once: the first is still reading)
        assert len([w for w in app.workers if w.group == "words"]) == 1
        await workers_done(pilot)
        await pilot.pause()
        assert app.words_basis().of == "language"  # (Turkish: SmolLM2's own figure, measured)


def test_a_servers_words_a_token_that_is_no_finite_number_is_not_taken() -> None:
    """A server's /models answer read by Python's JSON may say NaN or Infinity (another kind of
    server, a broken one): no figure a desk PC says its context by ("about nan words")."""
    from workstation.core.language_words import SAID, said_figures

    assert said_figures({SAID: {"en": float("nan"), "tr": float("inf"), "de": 0.4}}) == {"de": 0.4}


def _info(n_ctx: int) -> object:
    from workstation.core.events import EngineInfo

    return EngineInfo(profile="a", model_name="SmolLM2", model_path="", n_ctx=n_ctx, n_layer=30, gpu_layers=0,
                      type_k="f16", type_v="f16", flash_attn=False, threads=2, load_ms=0.0, template_fallback=None,
                      speculative="")


async def test_the_room_under_the_box_only_falls_and_is_the_same_when_the_conversation_is_opened_again(
        profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The room left said in words on one basis for a conversation (the model's figure for the UI
    language): by its replies' own words a token, measured again after each, it went up after a
    reply (2,500 to 3,100 after a 120-token one) and changed when the same conversation was opened
    again (910 to 2,500), where the tokens left only fall."""
    from workstation.core.metrics import TurnMetrics, turn_record
    from workstation.core.phrases import context_basis, rounded_words
    from workstation.tui.app import WorkstationApp

    monkeypatch.setattr(language_words, "_known", {})
    app = WorkstationApp("a", start_engine=False, sample_system=False)
    async with app.run_test(size=(100, 30)) as pilot:
        app.engine_info = _info(4096)  # type: ignore[assignment]
        conv = app.store.new("Contract")
        await app.open_conversation(conv.id)
        used, said, shown = 0, [], []
        # replies of few words a token (a table of figures), of many (plain English), of few again
        for words, tokens in ((40, 400), (300, 120), (30, 600), (400, 130)):
            reply = TurnMetrics(prompt_n=50, cache_n=used, predicted_n=tokens, predicted_ms=1000.0, stop_reason="eos")
            used += 50 + tokens
            app.store.add_message(conv.id, "user", "OK.")  # (no language to tell: the UI's)
            app.store.add_message(conv.id, "assistant", " ".join(["word"] * words), turn_record(reply, "a", "a"))
            app.history.add(reply, "a", "a", words=words)  # (as a reply arrives)
            said.append(app.context_fill_text())
            await app.open_conversation(conv.id)  # (the same conversation opened again: Ctrl+B, Enter)
            await pilot.pause()
            shown.append(app.context_fill_text())
        figures = [int(s.split("about ")[1].split(" ")[0].replace(",", "")) for s in said]
        assert said == shown, (said, shown)
        assert figures == sorted(figures, reverse=True), said
        assert said[-1] == f"room for about {rounded_words((4096 - used) * context_basis().per_token)} more " \
            "words in this conversation"
        # in Turkish: by SmolLM2's own figure for Turkish, said once its tokenizer is read (not the language's
        # general figure first and the model's after it)
        app.texts = Texts("tr")
        assert app.context_fill_text() == ""
        await workers_done(pilot)
        await pilot.pause()
        basis = app.words_basis()
        assert basis is not None and basis.per_token < context_basis(app.texts.get).per_token
        assert app.chat_screen.query_one("#prompt").border_subtitle == app.context_fill_text() != ""


def test_a_conversations_and_a_messages_words_are_written_the_languages_way() -> None:
    """Both figures of ``holds_words`` as Turkish writes a number: the message's said "1,200" beside
    the conversation's "1.600" on F3 (its value was taken for people's words, left as it came)."""
    from workstation.core.phrases import WordsBasis, holds_words

    turkish = locale_texts("tr").get
    assert holds_words(4096, 3200, WordsBasis(0.4), turkish) == \
        "yaklaşık 1.600 sözcüklük bir sohbet; en çok yaklaşık 1.300 sözcüklük bir mesaj"
    assert holds_words(4096, 3200, WordsBasis(0.4, "document")) == \
        "a conversation of about 1,600 words of this document; a message up to about 1,300"


async def test_the_room_left_in_turkish_says_why_it_is_fewer_words_than_in_english(profiles) -> None:  # noqa: ANN001
    """In the same conversation the line under the box said "yaklaşık 680 sözcüklük yer kaldı" in
    Turkish and "room for about 1,900 more words" in English after F9, without a word of why (a
    Turkish word takes 2-3 times the tokens of an English one with SmolLM2). Where the model's own
    Turkish figure is under half its English one (``WordsBasis.costly``), the Turkish line says so;
    the English line says nothing more."""
    from tui_helpers import message_views, screen_lines, send_text, until

    from workstation.tui.app import WorkstationApp

    async def room_left(lang: str) -> None:
        app = WorkstationApp("a", sample_system=False, language=lang)
        async with app.run_test(size=(110, 32)) as pilot:
            await until(pilot, lambda: app.engine is not None)
            shown = len(message_views(app))  # (English: the Turkish run's conversation, opened again)
            await send_text(pilot, app, "Merhaba.")
            await until(pilot, lambda: not app.generating and len(message_views(app)) == shown + 2)
            await until(pilot, lambda: app.context_fill_text() != "", what="the room left said")
            basis = app.words_basis()
            assert basis is not None and basis.costly == (lang == "tr"), (lang, basis)
            room = app.context_fill_text()
            said = "Türkçe sözcük daha çok yer tutar"
            assert (said in room) == (lang == "tr") and "words of this language" not in room, room
            await until(pilot, lambda: app.chat_screen.query_one("#prompt").border_subtitle == room)
            if lang == "tr":  # (seen whole under the box, not cut off)
                assert room.startswith("yaklaşık ") and room.endswith(" sözcüklük yer kaldı; " + said), room
                assert any(room in row for row in screen_lines(app)), "\n".join(screen_lines(app))

    await room_left("tr")
    await room_left("en")


def test_a_measures_plus_or_minus_is_written_the_turkish_way() -> None:
    """A table's cell "12.3456 ± 0.0123" and "±0.0123", "−1.5" under ``--lang tr``: each number with
    Turkish separators, the sign before it kept (``phrases.local_numbers``)."""
    from workstation.core.phrases import local_numbers

    texts = Texts("tr")
    assert local_numbers("12.3456 ± 0.0123", texts.get) == "12,3456 ± 0,0123"
    assert local_numbers("12.3456 ±0.0123 −1.5", texts.get) == "12,3456 ±0,0123 −1,5"


def test_vocabularies_measured_in_several_threads_at_once_leave_the_terminal_where_it_was(
        smollm2_path: Path, gemma_path: Path) -> None:
    """F4's list, F9 and the status line each measure a vocabulary in a thread of their own: with
    llama-cpp-python's quiet mode, which points the whole process's standard output and error at
    /dev/null and back, two at once left them at /dev/null for good, and the app drew on it (a
    screen that never changed again). Eight measures at once, twice: both stay the terminal's."""
    import os
    import sys
    import threading

    def where(fd: int) -> tuple[int, int]:
        seen = os.fstat(fd)
        return seen.st_dev, seen.st_ino

    before = (where(1), where(2), sys.stdout, sys.stderr)
    for _ in range(2):
        start = threading.Barrier(8)

        def measure(model: Path, start: threading.Barrier = start) -> None:
            start.wait()
            language_words._measure(model, ["Bees make honey in the summer."])

        threads = [threading.Thread(target=measure, args=(m,)) for m in [smollm2_path, gemma_path] * 4]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert (where(1), where(2), sys.stdout, sys.stderr) == before, "standard output or error left at /dev/null"
