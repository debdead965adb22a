"""A model's words a token in the UI's language, read with its vocabulary alone (``language_words``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workstation.core import language_words
from workstation.core.locales import locale_texts


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
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.words_basis().of == "language"  # (Turkish: SmolLM2's own figure, measured)


def test_a_servers_words_a_token_that_is_no_finite_number_is_not_taken() -> None:
    """A server's /models answer read by Python's JSON may say NaN or Infinity (another kind of
    server, a broken one): no figure a desk PC says its context by ("about nan words")."""
    from workstation.core.language_words import SAID, said_figures

    assert said_figures({SAID: {"en": float("nan"), "tr": float("inf"), "de": 0.4}}) == {"de": 0.4}
