"""A model's words a token in a language, measured with its own tokenizer.

The UI language's general figure (``phrases.words_per_token``: 0.4 a Turkish word) is an average
of tokenizers that differ twice over: SmolLM2's spends about 4 tokens on a Turkish word, Gemma 3's
2, both about 1.2 on an English one. F3 and F4 say a model's context in words by its own figure
(``phrases.context_basis``), measured here on a plain office text of the UI's language
(``number.words_sample``) with the model's vocabulary alone (no weights: 0.1 to 0.4 s), once a file.
"""

from __future__ import annotations

import threading
from pathlib import Path

from workstation.core.phrases import Lookup, words_in

_known: dict[tuple[str, int, int, str], float] = {}
_lock = threading.Lock()


def _sample(lookup: Lookup | None) -> str:
    from workstation.core.phrases import ENGLISH

    return (lookup("number.words_sample") if lookup is not None else None) or ENGLISH["number.words_sample"]


def _key(model: Path, text: str) -> tuple[str, int, int, str] | None:
    try:
        stat = model.stat()
    except OSError:
        return None
    return str(model.resolve()), stat.st_size, stat.st_mtime_ns, text


def _measure(model: Path, text: str) -> float | None:
    import llama_cpp
    from llama_cpp import _internals as internals

    import workstation.core.runtime  # noqa: F401 - llama.cpp's log kept off the screen

    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    vocab = internals.LlamaModel(path_model=str(model), params=params, verbose=False)
    try:
        tokens = len(vocab.tokenize(text.encode(), add_bos=False, special=False))
    finally:
        vocab.close()
    return words_in(text) / tokens if tokens else None


def words_a_token_in(model: Path, text: str, measure: bool = True) -> float | None:
    """``text``'s words over the tokens ``model``'s tokenizer makes of it; None where the file
    cannot be read, or (``measure`` False) it has not been measured yet (no file read: the UI thread)."""
    key = _key(model, text)
    if key is None:
        return None
    with _lock:
        if key in _known or not measure:
            return _known.get(key)
    try:
        found = _measure(model, text)
    except Exception:  # noqa: BLE001 - a damaged or foreign file: the language's general figure is said
        return None
    if found is not None:
        with _lock:
            _known[key] = found
    return found


def own_figures(lookup: Lookup | None) -> bool:
    """Whether a model's own figure is said in ``lookup``'s language (``model_figures``): not in
    English, whose general figure holds for every tokenizer here."""
    return _sample(lookup) != _sample(None)


def model_figures(model: Path | str, lookup: Lookup | None = None, measure: bool = True) -> tuple[float, float] | None:
    """``model``'s words a token in ``lookup``'s language and in English (``phrases.context_basis``);
    None where not known (``measure`` False: not measured yet, nothing read), and in English: its
    general figure holds for both tokenizers (0.76 on the UI's texts), where this plain sample read
    0.88 with both, and stays the figure every English screen says."""
    if not own_figures(lookup):
        return None
    path = Path(model)
    own = words_a_token_in(path, _sample(lookup), measure)
    english = words_a_token_in(path, _sample(None), measure) if own is not None else None
    return (own, english) if own is not None and english is not None else None
