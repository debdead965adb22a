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
