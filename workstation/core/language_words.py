"""A model's words a token in a language, measured with its own tokenizer.

The UI language's general figure (``phrases.words_per_token``: 0.4 a Turkish word) is an average
of tokenizers that differ twice over: SmolLM2's spends about 4 tokens on a Turkish word, Gemma 3's
2, both about 1.2 on an English one. F3 and F4 say a model's context in words by its own figure
(``phrases.context_basis``), measured here on a plain office text of the UI's language
(``number.words_sample``) with the model's vocabulary alone (no weights: 0.1 to 0.4 s), once a file.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workstation.core.phrases import Lookup, words_in

SAID = "words_a_token"  # serve's /models meta: its model's words a token, by language (``served_figures``)

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


def _measure(model: Path, texts: list[str]) -> list[float | None]:
    """Each of ``texts``' words over the tokens ``model``'s tokenizer makes of it, its vocabulary
    loaded once for them all (a load for each doubled F4's first list in Turkish: 2.1 s more than
    in English for four small models, the list shown after them all)."""
    import llama_cpp
    from llama_cpp import _internals as internals

    import workstation.core.runtime  # noqa: F401 - llama.cpp's log kept off the screen

    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    # verbose: llama-cpp-python's quiet mode points the process's stdout and stderr at /dev/null and
    # back, for every thread: two measures at once (F4's list, F9, the status line) left them there for
    # good, and the app drew on /dev/null (a screen that never changed again). Its log is kept by runtime's.
    vocab = internals.LlamaModel(path_model=str(model), params=params, verbose=True)
    try:
        counts = [len(vocab.tokenize(text.encode(), add_bos=False, special=False)) for text in texts]
    finally:
        vocab.close()
    return [words_in(text) / tokens if tokens else None for text, tokens in zip(texts, counts, strict=True)]


def words_a_token_in(model: Path, texts: list[str], measure: bool = True) -> list[float] | None:
    """Each of ``texts``' words over the tokens ``model``'s tokenizer makes of it (its file read
    once for those not measured yet); None where the file cannot be read, or (``measure`` False)
    one has not been measured yet (no file read: the UI thread)."""
    keys = [_key(model, text) for text in texts]
    if any(key is None for key in keys):
        return None
    with _lock:
        missing = [(text, key) for text, key in zip(texts, keys, strict=True) if key not in _known]
        if not missing:
            return [_known[key] for key in keys if key is not None]
        if not measure:
            return None
    try:
        found = _measure(model, [text for text, _ in missing])
    except Exception:  # noqa: BLE001 - a damaged or foreign file: the language's general figure is said
        return None
    if any(value is None for value in found):
        return None
    with _lock:
        for (_, key), value in zip(missing, found, strict=True):
            if key is not None and value is not None:
                _known[key] = value
        return [_known[key] for key in keys if key is not None]


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
    found = words_a_token_in(Path(model), [_sample(lookup), _sample(None)], measure)
    return (found[0], found[1]) if found is not None else None


def served_figures(model: Path | str) -> dict[str, float]:
    """What ``serve`` says its model's words a token are in each language the app speaks (its
    ``/models`` meta's ``words_a_token``, ``{"en": 0.88, "tr": 0.27}``), measured as this PC
    measures a file of its own (``model_figures``): a desk PC has no file to measure, and said
    the language's general figure ("about 1,600 Turkish words" where the same model said 1,100
    here). Empty where the file cannot be read. A vocabulary read (0.1 to 0.4 s): once a server,
    in a thread."""
    from workstation.core.locales import locale_languages, locale_texts

    languages = locale_languages()
    found = words_a_token_in(Path(model), [_sample(locale_texts(lang).get) for lang in languages])
    return dict(zip(languages, found, strict=True)) if found is not None else {}


def said_figures(meta: Mapping[str, Any] | None) -> dict[str, float]:
    """The words a token a server's ``/models`` ``meta`` says its model has, by language
    (``served_figures``): each a positive number; empty where it says none (a server before it
    said them, another kind of server: the language's general figure is said)."""
    said = meta.get(SAID) if meta is not None else None
    if not isinstance(said, Mapping):
        return {}
    return {str(lang): float(value) for lang, value in said.items()
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0}


def words_figures(lookup: Lookup | None, lang: str, model: Path | str | None = None,
                  said: Mapping[str, float] | None = None, measure: bool = True) -> tuple[float, float] | None:
    """The model's words a token in ``lookup``'s language (``lang``) and in English that a
    context is said in words by (``phrases.context_basis``): a ``model`` file here, measured
    (``model_figures``; ``measure`` False: only once measured); else a desk PC's, as its server
    ``said`` them (``said_figures``); None where neither is known (English, an older server):
    the language's general figure. F3, F4, the load settings and the line under the box ask here."""
    if not own_figures(lookup):
        return None
    if model:
        return model_figures(model, lookup, measure)
    own, english = (said or {}).get(lang), (said or {}).get("en")
    return (own, english) if own and english else None


# the commonest words of each language the app speaks: what ``text_language`` knows a text's language by
_COMMON_WORDS = {
    "en": frozenset("a an the and of to is in that for it with on are was this be will what when how you your "
                    "from by at as not have has we our about me my please can do".split()),
    "tr": frozenset("ve bir bu için ile da de ne mi mı mu mü çok daha gibi olarak ama nasıl neden zaman "
                    "hangi ben siz sonra şu veya ya olan".split()),
}
_TURKISH_LETTERS = frozenset("ğşıİĞŞ")


def text_language(text: str) -> str | None:
    """The language of the app's (``en``, ``tr``) that ``text`` is written in, by its commonest words
    (and Turkish's own letters); None where it says too little to tell (a name, a figure). A room
    said in Turkish words of an English conversation ("about 1,100 words; Turkish words take more
    room" where the server said 3,100), and a summary's question asked in Turkish of an English
    document (the answer came in Turkish), went by the UI's language instead."""
    words = re.findall(r"[^\W\d_]+", text[:20_000])
    counts = {lang: sum(1 for w in words if w.lower() in common) for lang, common in _COMMON_WORDS.items()}
    counts["tr"] += sum(1 for w in words if _TURKISH_LETTERS.intersection(w))
    best = max(counts, key=lambda lang: counts[lang])
    return best if counts[best] >= 2 and counts[best] > 2 * min(counts.values()) else None
