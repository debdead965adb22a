"""The probabilities of a reply's tokens (the API's ``logprobs``, llama-server's ``n_probs``).

Recorded by the scheduler for a request whose ``Constraints.n_probs`` is above 0, one
``TokenProb`` per reply token: the chosen token's log-probability and the ``n_probs`` most
likely tokens with theirs. The values are the log-softmax of the logits llama.cpp samples from
(``llama_get_logits_ith`` for the token's batch output): raw logits, before the sampler chain, so
neither temperature, top-k/top-p/min-p, repeat penalty, logit bias nor a grammar changes them.
That is what llama-server reports by default; its ``post_sampling_probs`` reports instead the
probabilities of the candidates left after the whole chain (this server does not offer that).
A position whose logits the scheduler masks (``ignore_eos`` sets the end-of-generation tokens to
-inf) reports them as impossible.

``ReplyProbs`` keeps one reply's records in step with its text: a record notes how many
characters of the reply's text came before its token, so a delta of text carries exactly the
tokens whose text starts in it (a token whose bytes are not yet a whole character waits for the
text that completes it), and a token that lies wholly inside a stop string is not in the reply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

UNLIKELY = -9999.0  # OpenAI's value for a token with no chance (never -inf in JSON)


@dataclass(frozen=True)
class TokenProb:
    """One reply token: its id and log-probability, the most likely tokens at its position
    (most likely first, ties by id), and the characters of reply text before it."""

    token: int
    logprob: float
    top: tuple[tuple[int, float], ...]
    offset: int


def _finite(value: float) -> float:
    return value if math.isfinite(value) else UNLIKELY


def token_prob(logits: np.ndarray, token: int, n_top: int, offset: int = 0) -> TokenProb:
    """The log-softmax of ``logits`` at ``token`` and its ``n_top`` largest entries."""
    peak = float(logits.max())
    log_z = peak + math.log(float(np.exp(logits - peak).sum(dtype=np.float64)))
    top: tuple[tuple[int, float], ...] = ()
    if n_top > 0:
        n = min(n_top, logits.shape[0])
        ids = np.argpartition(logits, -n)[-n:]
        ids = ids[np.lexsort((ids, -logits[ids]))]  # by logit, highest first; ties by id
        top = tuple((int(i), float(logits[i]) - log_z) for i in ids if math.isfinite(float(logits[i])))
    return TokenProb(int(token), _finite(float(logits[token]) - log_z), top, offset)


@dataclass
class ReplyProbs:
    """A reply's records as they are made and as its text goes out (see the module's doc)."""

    n_top: int
    records: list[TokenProb] = field(default_factory=list)
    chars: int = 0  # characters the detokenizer has produced for the reply so far
    shown: int = 0  # characters of it sent to the client (stop strings hold some back)
    sent: int = 0  # records sent with text

    def record(self, logits: np.ndarray, token: int) -> None:
        self.records.append(token_prob(logits, token, self.n_top, self.chars))

    def decoded(self, text: str) -> None:
        """The detokenizer turned the last token into ``text`` (maybe empty)."""
        self.chars += len(text)

    def take(self, text: str) -> list[TokenProb]:
        """``text`` goes to the client: the records of the tokens whose text starts in it."""
        self.shown += len(text)
        n = self.sent
        while n < len(self.records) and self.records[n].offset < self.shown:
            n += 1
        out, self.sent = self.records[self.sent : n], n
        return out

    def final(self, stopped: bool) -> list[TokenProb]:
        """The reply's records: all of them, or after a stop string only those of tokens
        whose text starts before it."""
        if not stopped:
            return list(self.records)
        return [r for r in self.records if r.offset < self.shown]
