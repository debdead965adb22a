"""llama.cpp's sampler chain built from a profile's sampling settings.

Plain greedy decoding (temperature 0, no repeat penalty) skips the chain: llama.cpp's sampler
copies all n_vocab logits into a candidate array before picking the largest (116 us a token
for SmolLM2's 49152 tokens on the 2-core machine), while numpy's argmax over the same logits
takes 9 us. Both take the first of equal maxima, so the token is the same.

A request with a grammar (``Constraints.grammar``, compiled at submit: ``core/grammar.py``)
samples through ``GrammarSampling``: the chain picks, llama.cpp's grammar sampler allows or
refuses, and only a refused pick masks the whole vocabulary by the grammar.
"""

from __future__ import annotations

import ctypes
import random
from typing import Any

import llama_cpp
import numpy as np

from workstation.core.grammar import GrammarSampling
from workstation.core.profile_check import fixed_seed
from workstation.core.profiles import Constraints, Sampling

# the last tokens the penalties look at (llama-server's repeat_last_n): the prompt's, then the
# reply's as it grows, as llama-server and llama-cli feed the prompt through the sampler first
PENALTY_LAST_N = 64


def penalized(s: Sampling) -> bool:
    """Whether any penalty is on (repeat, presence, frequency): the chain then keeps a history."""
    return s.repeat_penalty != 1.0 or s.presence_penalty != 0.0 or s.frequency_penalty != 0.0


class SamplerChain:
    """Owns a llama_sampler chain; ``sample(ctx, i)`` picks the next token from output ``i``."""

    def __init__(
        self,
        settings: Sampling,
        n_vocab: int,
        constraints: Constraints | None = None,
        *,
        grammar: Any = None,
        avoid_eog: np.ndarray | None = None,
    ) -> None:
        """``grammar``: a compiled grammar sampler (``CompiledGrammar.take()``), owned by this
        chain from now on; ``avoid_eog``: with a grammar, end-of-generation tokens to avoid
        while the grammar allows anything else (``ignore_eos``: a complete grammar still ends)."""
        self.settings = settings
        self.constraints = constraints or Constraints()
        params = llama_cpp.llama_sampler_chain_default_params()
        params.no_perf = True
        chain = llama_cpp.llama_sampler_chain_init(params)
        add = llama_cpp.llama_sampler_chain_add
        if self.constraints.logit_bias:  # first, as in llama-server: every later step sees the bias
            bias = self.constraints.logit_bias
            entries = (llama_cpp.llama_logit_bias * len(bias))(
                *(llama_cpp.llama_logit_bias(tok, value) for tok, value in bias.items())
            )  # llama.cpp copies them
            add(chain, llama_cpp.llama_sampler_init_logit_bias(n_vocab, len(bias), entries))
        if penalized(settings):
            add(chain, llama_cpp.llama_sampler_init_penalties(
                n_vocab, PENALTY_LAST_N, settings.repeat_penalty, settings.frequency_penalty, settings.presence_penalty))
        if settings.temperature <= 0.0:
            add(chain, llama_cpp.llama_sampler_init_greedy())
        else:
            if settings.top_k > 0:
                add(chain, llama_cpp.llama_sampler_init_top_k(settings.top_k))
            if settings.top_p < 1.0:
                add(chain, llama_cpp.llama_sampler_init_top_p(settings.top_p, 1))
            if settings.min_p > 0.0:
                add(chain, llama_cpp.llama_sampler_init_min_p(settings.min_p, 1))
            add(chain, llama_cpp.llama_sampler_init_temp(settings.temperature))
            seed = fixed_seed(settings)
            seed = seed if seed is not None else random.getrandbits(32)
            add(chain, llama_cpp.llama_sampler_init_dist(seed))
        self.chain = chain
        self.greedy = settings.temperature <= 0.0
        # argmax needs no chain: nothing in it keeps state (no penalty history)
        self.argmax = self.greedy and not penalized(settings) and not self.constraints.active
        self._row = ctypes.POINTER(ctypes.c_float * n_vocab)
        self.grammar: GrammarSampling | None = None
        if grammar is not None:
            plain = self.greedy and not penalized(settings) and not self.constraints.logit_bias
            self.grammar = GrammarSampling(grammar, chain, n_vocab, plain, avoid_eog)

    def remember(self, tokens: list[int]) -> None:
        """The tokens before the reply into the penalties' window (the prompt's last ones): a
        reply repeating the question's words is penalised as in llama-server, which accepts the
        prompt into its sampler. Before, only the reply's own tokens were, so the same request
        at repeat_penalty 1.1 answered otherwise than llama-server."""
        if penalized(self.settings) and self.chain is not None:
            for tok in tokens[-PENALTY_LAST_N:]:
                llama_cpp.llama_sampler_accept(self.chain, tok)

    def sample(self, ctx: llama_cpp.llama_context_p, i: int) -> int:
        """Sample from batch output ``i`` and record the token in the chain's history."""
        if self.argmax or self.grammar is not None:
            ptr = llama_cpp.llama_get_logits_ith(ctx, i)
            row = np.frombuffer(ctypes.cast(ptr, self._row).contents, dtype=np.float32)
            if self.grammar is not None:
                return self.grammar.sample(row)
            return int(row.argmax())
        return int(llama_cpp.llama_sampler_sample(self.chain, ctx, i))

    def draws_ahead(self) -> DrawsAhead | None:
        """The random draws this chain will make next, to draw a draft model's tokens with
        (``DrawsAhead``); None at temperature 0."""
        if self.greedy or self.chain is None:
            return None
        last = llama_cpp.llama_sampler_chain_get(self.chain, llama_cpp.llama_sampler_chain_n(self.chain) - 1)
        return DrawsAhead(llama_cpp.llama_sampler_clone(last))

    def close(self) -> None:
        if self.grammar is not None:
            self.grammar.close()
            self.grammar = None
        if self.chain is not None:
            llama_cpp.llama_sampler_free(self.chain)
            self.chain = None


_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])


class DrawsAhead:
    """A copy of a chain's last sampler (``dist``: one uniform number a token, then the token
    where the running sum of the probabilities passes it, in the candidates' order) in the state
    the chain has now: its n-th ``pick`` uses the number the chain's n-th next sample will use.
    A draft model picks with it, so where the draft's distribution is near the target's its
    token is the one the target then draws (the chain itself draws nothing more)."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler

    def pick(self, ids: np.ndarray, p: np.ndarray) -> int:
        """One of ``ids`` (most likely first, as top-k leaves the target's candidates) by their
        probabilities ``p``, with the next number of the copied generator."""
        n = len(ids)
        data = np.zeros(n, dtype=_TOKEN_DATA)  # llama_token_data's layout, filled at numpy's pace
        data["id"] = ids
        data["logit"] = np.log(np.maximum(p, 1e-30))
        arr = llama_cpp.llama_token_data_array(
            data.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token_data)), n, -1, True)
        llama_cpp.llama_sampler_apply(self.sampler, ctypes.byref(arr))
        return int(ids[max(0, min(int(arr.selected), n - 1))])

    def close(self) -> None:
        if self.sampler is not None:
            llama_cpp.llama_sampler_free(self.sampler)
            self.sampler = None
