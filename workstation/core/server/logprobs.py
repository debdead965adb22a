"""Token probabilities and logit bias on the API: the request fields, checked, and the reply's
recorded probabilities (``core/token_probs.py``) in each wire shape.

Asked with
* chat: ``logprobs: true`` and ``top_logprobs`` 0..20 (OpenAI) -> ``choices[].logprobs.content``,
  ``[{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]``, in stream chunks too
  (each chunk lists the tokens whose text starts in its delta); llama-server's ``n_probs`` there
  works as ``top_logprobs`` (up to 100);
* completions: ``logprobs: N`` (0..20) -> OpenAI's legacy ``{tokens, token_logprobs,
  top_logprobs: [{text: logprob}], text_offset}`` (the chosen token is always in its position's
  ``top_logprobs``, so it holds up to N+1 entries; ``text_offset`` counts characters from the
  start of the completion), and llama-server's ``n_probs: N`` (0..100) ->
  ``completion_probabilities: [{id, token, bytes, logprob, top_logprobs: [{id, token, bytes,
  logprob}]}]``, the shape of its ``/completion``.

The values are log-probabilities of the raw logits (see ``core/token_probs.py``);
``post_sampling_probs: true`` (llama-server: probabilities after the sampler chain) is not offered.

``logit_bias`` (chat and completions) takes OpenAI's ``{"token id": bias}`` and llama-server's
shapes: ``[[id, bias], ...]``, ``[["text", bias], ...]`` or ``{"text": bias}`` (every token of the
text gets the bias), and ``false`` as the bias (ban). A bias is -100..100; -100 and ``false`` ban
the token outright (-inf: it can never be sampled); a token id outside the vocabulary is a 400.
Applied by llama.cpp's logit-bias sampler at the head of the request's sampler chain.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from workstation.core.profile_check import short_repr
from workstation.core.server.protocol import GenParams, bad, flag, parse_integer
from workstation.core.token_probs import TokenProb

MAX_TOP_LOGPROBS = 20  # OpenAI's limit for chat's top_logprobs; also completions' logprobs here
MAX_N_PROBS = 100  # llama-server's n_probs has no limit; this keeps a reply's JSON sane
MAX_BIAS = 100.0
BAN = -math.inf


class Vocabulary(Protocol):
    n_vocab: int

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True) -> list[int]: ...

    def piece(self, token: int, special: bool = False) -> bytes: ...


@dataclass(frozen=True)
class ProbsAsked:
    """Which probabilities a request wants rendered: ``logprobs`` (chat: top_logprobs, with
    ``logprobs: true``; completions: the legacy ``logprobs: N``) and llama-server's ``n_probs``."""

    chat: bool
    logprobs: int | None = None
    n_probs: int | None = None

    @property
    def n_record(self) -> int:
        """``Constraints.n_probs``: top tokens to record per reply token (at least 1, so the
        chosen token's own log-probability is recorded when no alternatives are asked)."""
        return max(1, self.logprobs or 0, self.n_probs or 0)

    def add_to(
        self, choice: dict[str, Any], body: dict[str, Any], probs: Sequence[TokenProb], vocab: Vocabulary
    ) -> None:
        """Put what was asked of ``probs`` into a response (or stream chunk): the choice's
        ``logprobs``, and for completions with ``n_probs`` the body's ``completion_probabilities``."""
        if self.chat:
            top = self.logprobs if self.logprobs is not None else self.n_probs
            if top is not None:
                choice["logprobs"] = {"content": chat_content(probs, vocab, top)}
            return
        if self.logprobs is not None:
            choice["logprobs"] = legacy_logprobs(probs, vocab, self.logprobs)
        if self.n_probs is not None:
            body["completion_probabilities"] = completion_probabilities(probs, vocab, self.n_probs)


def parse_token_fields(body: dict[str, Any], chat: bool, vocab: Vocabulary, params: GenParams) -> ProbsAsked | None:
    """Check the probability and logit-bias fields; set ``params.constraints``' ``logit_bias``
    and ``n_probs``. Returns what to render (None: no probabilities asked). ApiError(400) on a
    bad value."""
    asked = parse_probs(body, chat)
    bias = parse_logit_bias(body.get("logit_bias"), vocab)
    n_record = asked.n_record if asked is not None else 0
    if bias or n_record:
        params.constraints = dataclasses.replace(params.constraints, logit_bias=bias, n_probs=n_record)
    return asked


def parse_probs(body: dict[str, Any], chat: bool) -> ProbsAsked | None:
    """What to render (None: nothing). ``post_sampling_probs: true`` is refused with llama-server's
    other options this server does not implement (``server/unsupported.py``, branch ``native``)."""
    n_probs = parse_integer(body, "n_probs", 0, MAX_N_PROBS) or None  # 0: none, as in llama-server
    if chat:
        wanted = flag(body, "logprobs", False)
        top = parse_integer(body, "top_logprobs", 0, MAX_TOP_LOGPROBS)
        if top and not wanted:
            raise bad("'top_logprobs' needs 'logprobs': true.", "top_logprobs")
        logprobs = (top or 0) if wanted else None
    else:
        logprobs = parse_integer(body, "logprobs", 0, MAX_TOP_LOGPROBS)
    if logprobs is None and n_probs is None:
        return None
    return ProbsAsked(chat, logprobs, n_probs)


def _bias_value(value: Any, where: str) -> float:
    if value is False:
        return BAN
    if isinstance(value, bool) or not isinstance(value, int | float) or not -MAX_BIAS <= value <= MAX_BIAS:
        raise bad(
            f"'logit_bias' gives {where} a bias of {short_repr(value)}; allowed values are -100 to 100, or "
            "false to ban it.",
            "logit_bias",
        )
    return BAN if value <= -MAX_BIAS else float(value)


def _bias_tokens(key: Any, vocab: Vocabulary) -> list[int]:
    """A token id (an int, or a string of digits as OpenAI sends it), or a text whose every
    token gets the bias (llama-server)."""
    digits = key.strip().lstrip("-") if isinstance(key, str) else ""
    if digits.isascii() and digits.isdigit():
        key = int(key)
    if isinstance(key, int) and not isinstance(key, bool):
        if not 0 <= key < vocab.n_vocab:
            raise bad(
                f"'logit_bias' names token id {key}; this model's token ids are 0 to {vocab.n_vocab - 1}.",
                "logit_bias",
            )
        return [key]
    if isinstance(key, str) and key:
        return vocab.tokenize(key, False, False)
    raise bad("'logit_bias' names a token that is neither a token id nor a non-empty text.", "logit_bias")


def parse_logit_bias(value: Any, vocab: Vocabulary) -> dict[int, float]:
    """``{token id: bias}`` from any of the accepted shapes (see the module's doc)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        pairs: list[Any] = list(value.items())
    elif isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
        pairs = [tuple(p) for p in value]
    else:
        raise bad(
            "'logit_bias' must be an object of token id to bias, or a list of [token, bias] pairs.",
            "logit_bias",
        )
    out: dict[int, float] = {}
    for key, bias in pairs:
        value_ = _bias_value(bias, f"token {short_repr(key)}")
        for tok in _bias_tokens(key, vocab):
            out[tok] = value_
    return out


# --- rendering -----------------------------------------------------------------------------------
def _text(token: int, vocab: Vocabulary) -> tuple[str, list[int]]:
    raw = vocab.piece(token, True)
    return raw.decode("utf-8", errors="replace"), list(raw)


def _pieces(vocab: Vocabulary) -> Callable[[int], tuple[str, list[int]]]:
    cache: dict[int, tuple[str, list[int]]] = {}

    def piece(token: int) -> tuple[str, list[int]]:
        if token not in cache:
            cache[token] = _text(token, vocab)
        return cache[token]

    return piece


def _entries(probs: Sequence[TokenProb], vocab: Vocabulary, top: int, ids: bool) -> list[dict[str, Any]]:
    """One ``{[id,] token, logprob, bytes, top_logprobs: [...]}`` per token (OpenAI's chat
    shape; llama-server's adds the token ids)."""
    piece = _pieces(vocab)

    def entry(token: int, logprob: float) -> dict[str, Any]:
        text, raw = piece(token)
        return {**({"id": token} if ids else {}), "token": text, "logprob": logprob, "bytes": raw}

    return [{**entry(p.token, p.logprob), "top_logprobs": [entry(t, lp) for t, lp in p.top[:top]]} for p in probs]


def chat_content(probs: Sequence[TokenProb], vocab: Vocabulary, top: int) -> list[dict[str, Any]]:
    """OpenAI's ``choices[].logprobs.content``."""
    return _entries(probs, vocab, top, ids=False)


def legacy_logprobs(probs: Sequence[TokenProb], vocab: Vocabulary, top: int) -> dict[str, Any]:
    """OpenAI's legacy completions ``logprobs``."""
    piece = _pieces(vocab)
    tops = []
    for p in probs:
        entry = {piece(tok)[0]: lp for tok, lp in p.top[:top]}
        entry.setdefault(piece(p.token)[0], p.logprob)
        tops.append(entry)
    return {
        "tokens": [piece(p.token)[0] for p in probs],
        "token_logprobs": [p.logprob for p in probs],
        "top_logprobs": tops,
        "text_offset": [p.offset for p in probs],
    }


def completion_probabilities(probs: Sequence[TokenProb], vocab: Vocabulary, top: int) -> list[dict[str, Any]]:
    """llama-server's ``completion_probabilities`` (``/completion`` with ``n_probs``)."""
    return _entries(probs, vocab, top, ids=True)
