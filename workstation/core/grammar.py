"""GBNF grammars: compiled once into llama.cpp's grammar sampler, applied while sampling.

A request's grammar (``Constraints.grammar``) is compiled by ``compile_grammar`` when the
request is submitted (``Scheduler.submit``), so a grammar that does not parse is refused with
llama.cpp's own parse message before anything is queued, never inside the decoding thread.
The compiled sampler travels with the request and is handed to the slot's ``SamplerChain`` when
the request starts (``CompiledGrammar.take``); a request that never starts frees it
(``CompiledGrammar.close``).

Sampling under a grammar (``GrammarSampling.sample``) follows llama.cpp's common sampler: the
token is first chosen as if there were no grammar (numpy's argmax when greedy, else the sampling
chain) and checked against the grammar alone; only when the grammar rejects it are all the
candidates masked by the grammar and the choice made again among what is left. Masking every
token of the vocabulary is the expensive part (each candidate's text is matched against the
grammar's stacks), and most tokens a model picks in a JSON reply are already valid. Greedy
decoding goes one step further: the next most likely tokens are asked one by one, in order
(``GREEDY_CHECKS`` of them), and the first the grammar allows is the argmax over the allowed
tokens, the very token masking would give; the whole vocabulary is masked only when none is.

llama.cpp aborts the process when a grammar is asked to accept a token it does not allow (an
end-of-generation token before the grammar is complete, or any token once it is), so a token
is only accepted after the grammar has allowed it; when it allows none, the request fails
(``GrammarStuck``) and the process goes on.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import sys
import tempfile
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import llama_cpp
import numpy as np

from workstation.core.errors import EngineError
from workstation.core.runtime import log_mark, log_since

# llama_token_data {int32 id; float logit; float p}: 12 bytes, no padding
TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])
# greedy: the most likely tokens asked one by one before the whole vocabulary is masked
GREEDY_CHECKS = 32
# llama.cpp's GBNF parser recurses once per nested group: 20000 nested "(" overflowed an 8 MiB
# stack (a segfault, the whole server gone); real grammars nest a few levels
MAX_NESTING = 200
# and once per rule a rule refers to, in a chain: 100,000 rules each naming the next overflowed
# the stack as the grammar was checked (a segfault from one request); 40,000 held the decoding
# for 10 s. A grammar a client writes is held to these (check_written_grammar)
MAX_RULES = 4096
MAX_GRAMMAR_CHARS = 1_000_000
_ROOT = b"root"


class GrammarError(EngineError):
    """A GBNF grammar that llama.cpp cannot compile; the message is one sentence saying why."""


class GrammarStuck(EngineError):
    """The grammar allows no token at this point of the reply (every allowed token is masked,
    or no token of this model's vocabulary spells what the grammar needs next)."""


_stderr_lock = threading.Lock()


@contextlib.contextmanager
def _stderr_captured() -> Iterator[list[str]]:
    """File descriptor 2 into a temporary file for a moment: llama.cpp's grammar parser prints
    its reason there (``fprintf(stderr, ...)``, not through the log callback). The list gets
    what arrived; the caller keeps it (a failed parse) or ``_give_back`` writes it out."""
    captured: list[str] = []
    with _stderr_lock:
        try:
            tmp = tempfile.TemporaryFile()
        except OSError:  # no room for a temporary file: the reason goes unsaid, nothing fails
            yield captured
            return
        with tmp:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            saved = os.dup(2)
            os.dup2(tmp.fileno(), 2)
            try:
                yield captured
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                tmp.seek(0)
                captured.append(tmp.read().decode("utf-8", errors="replace"))


def _give_back(captured: list[str]) -> None:
    """Write what another thread printed while stderr was captured to the real stderr."""
    text = "".join(captured)
    if text:
        os.write(2, text.encode("utf-8"))


def _parse_message(lines: list[str]) -> str:
    """llama.cpp's reason from what it printed ("expecting ')' at ...", "Undefined rule ...")."""
    for line in lines:
        match = re.search(r"error parsing grammar: (.*)", line)
        if match:
            why = match.group(1).strip()
            if why.endswith(" at"):
                why += " the end of the grammar"
            return why if len(why) <= 120 else why[:117] + "..."
    for line in lines:
        low = line.lower()
        if "grammar" in low and ("error" in low or "invalid" in low or "unsupported" in low or "does not" in low):
            return line.strip().split(": ", 1)[-1]
    return ""


class CompiledGrammar:
    """llama.cpp's grammar sampler for one request: owned here until ``take`` hands it to a
    sampler chain; ``close`` (or garbage collection) frees it if it was never taken."""

    def __init__(self, handle: Any, text: str) -> None:
        self.text = text
        self._handle = handle
        self._finalizer = weakref.finalize(self, llama_cpp.llama_sampler_free, handle)

    @property
    def live(self) -> bool:
        """Held here: neither handed to a sampler chain nor freed."""
        return self._handle is not None

    def take(self) -> Any:
        """The sampler; the caller frees it from now on (``GrammarSampling.close``)."""
        handle, self._handle = self._handle, None
        if handle is None:
            raise EngineError("internal error: a compiled grammar was used twice.")
        self._finalizer.detach()
        return handle

    def close(self) -> None:
        if self._handle is not None:
            self._handle = None
            self._finalizer()


def grammar_shape(text: str) -> tuple[int, int]:
    """How deeply ``text`` (GBNF) nests groups ("(" outside literals, character classes and
    comments) and how many rules it defines ("::=" there): a scan, to refuse what would
    overflow llama.cpp's recursive parser and checker before it sees the text."""
    depth = deepest = rules = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"[":
            close = '"' if c == '"' else "]"
            i += 1
            while i < n and text[i] != close:
                i += 2 if text[i] == "\\" else 1
        elif c == "#":
            while i < n and text[i] not in "\r\n":  # llama.cpp ends a comment at either
                i += 1
        elif c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth = max(0, depth - 1)
        elif c == ":" and text.startswith("::=", i):
            rules += 1
            i += 2
        i += 1
    return deepest, rules


def check_written_grammar(text: str) -> None:
    """GrammarError for a grammar a client wrote (a request's ``grammar``) too large to check
    safely: the grammars made here of schemas and tools are held by their own bounds (128 tools
    of 15 parameters make 5,775 rules, and are a client's everyday request)."""
    if len(text) > MAX_GRAMMAR_CHARS:
        raise GrammarError(f"The grammar is {len(text):,} characters long; at most {MAX_GRAMMAR_CHARS:,} are accepted.")
    _, rules = grammar_shape(text)
    if rules > MAX_RULES:
        raise GrammarError(f"The grammar has {rules:,} rules; at most {MAX_RULES:,} are accepted.")


def compile_grammar(vocab: Any, text: str) -> CompiledGrammar:
    """``text`` (GBNF, start rule ``root``) compiled for ``vocab`` (``LoadedModel.vocab``);
    GrammarError when llama.cpp cannot parse it."""
    if not text.strip():
        raise GrammarError("The grammar is empty; it needs at least a rule named root.")
    if "\x00" in text:
        raise GrammarError("The grammar holds a NUL character.")
    depth, _ = grammar_shape(text)
    if depth > MAX_NESTING:
        raise GrammarError(f"The grammar nests groups {depth} deep; at most {MAX_NESTING} levels are accepted.")
    mark = log_mark()
    with _stderr_captured() as printed:
        handle = llama_cpp.llama_sampler_init_grammar(vocab, text.encode("utf-8"), _ROOT)
    if not handle:
        lines = "".join(printed).splitlines() + log_since(mark)
        why = _parse_message(lines)
        raise GrammarError("The grammar is not valid GBNF" + (f": {why}." if why else "."))
    _give_back(printed)
    return CompiledGrammar(handle, text)


class _Candidates:
    """A llama_token_data_array over the whole vocabulary, refilled from one logits row."""

    def __init__(self, n_vocab: int) -> None:
        self.n_vocab = n_vocab
        self.fresh = np.zeros(n_vocab, dtype=TOKEN_DATA)
        self.fresh["id"] = np.arange(n_vocab, dtype=np.int32)
        self.data = self.fresh.copy()
        self._ptr = self.data.ctypes.data_as(llama_cpp.llama_token_data_p)
        self.array = llama_cpp.llama_token_data_array(data=self._ptr, size=n_vocab, selected=-1, sorted=False)
        self.ref = ctypes.byref(self.array)
        self.one = np.zeros(1, dtype=TOKEN_DATA)
        self.one_array = llama_cpp.llama_token_data_array(
            data=self.one.ctypes.data_as(llama_cpp.llama_token_data_p), size=1, selected=-1, sorted=False
        )
        self.one_ref = ctypes.byref(self.one_array)

    def fill(self, logits: np.ndarray, masked: np.ndarray | None = None) -> None:
        # samplers reorder the entries (and may point ``data`` elsewhere): start clean each time
        np.copyto(self.data, self.fresh)
        self.data["logit"] = logits
        if masked is not None:
            self.data["logit"][masked] = -np.inf
        self.array.data = self._ptr
        self.array.size = self.n_vocab
        self.array.selected = -1
        self.array.sorted = False

    def selected(self) -> tuple[int, float]:
        """(token, logit) of the entry a sampler selected."""
        entry = self.array.data[self.array.selected]
        return int(entry.id), float(entry.logit)

    def any_allowed(self) -> bool:
        """Whether any candidate is still allowed (read right after the grammar masked them in
        place, before a sampler reorders them)."""
        return bool(np.isfinite(self.data["logit"]).any())


class GrammarSampling:
    """Sampling under a grammar for one request: ``chain`` (the profile's samplers, owned by
    the caller) picks, ``grammar`` (owned here) allows or refuses. ``avoid_eog``: token ids
    not to end with while the grammar allows anything else (``ignore_eos``)."""

    def __init__(self, grammar: Any, chain: Any, n_vocab: int, argmax: bool, avoid_eog: np.ndarray | None) -> None:
        self.grammar = grammar
        self.chain = chain
        self.argmax = argmax
        self.avoid_eog = avoid_eog
        self.cand = _Candidates(n_vocab)

    def allows(self, token: int) -> bool:
        one = self.cand.one
        one[0] = (token, 1.0, 0.0)
        arr = self.cand.one_array
        arr.size, arr.selected, arr.sorted = 1, -1, False
        llama_cpp.llama_sampler_apply(self.grammar, self.cand.one_ref)
        return bool(np.isfinite(one["logit"][0]))

    def _greedy_allowed(self, row: np.ndarray) -> int:
        """The most likely token the grammar allows among the ``GREEDY_CHECKS`` most likely
        (ties: the lowest id, as argmax and llama.cpp's greedy sampler choose); -1 if none."""
        token = int(row.argmax())
        if self.allows(token):
            return token
        k = min(GREEDY_CHECKS, len(row) - 1)
        top = np.argpartition(-row, k)[:k]
        for t in top[np.lexsort((top, -row[top]))]:
            if t == token or row[t] == -np.inf:
                continue
            if self.allows(int(t)):
                return int(t)
        return -1

    def sample(self, logits: np.ndarray) -> int:
        """The next token from ``logits`` (a row of the batch's output), accepted by the grammar
        and the chain; GrammarStuck when the grammar allows no token."""
        cand = self.cand
        avoid = self.avoid_eog
        # 1. as if unconstrained, then ask the grammar about that one token (greedy: the next
        # most likely ones too, in order)
        if self.argmax:
            row = logits
            if avoid is not None and len(avoid):
                row = logits.copy()
                row[avoid] = -np.inf
            token = self._greedy_allowed(row)
        else:
            cand.fill(logits, avoid)
            llama_cpp.llama_sampler_apply(self.chain, cand.ref)
            token, _ = cand.selected()
            if not self.allows(token):
                token = -1
        if token < 0:
            # 2. the grammar masks every candidate, then the chain chooses among what is left
            cand.fill(logits, avoid)
            llama_cpp.llama_sampler_apply(self.grammar, cand.ref)
            if avoid is not None and not cand.any_allowed():
                cand.fill(logits)  # only an end is allowed: the grammar is complete, so end
                llama_cpp.llama_sampler_apply(self.grammar, cand.ref)
            if not cand.any_allowed():
                raise GrammarStuck(
                    "The grammar allows no token of this model's vocabulary at this point of the reply."
                )
            llama_cpp.llama_sampler_apply(self.chain, cand.ref)
            token, logit = cand.selected()
            if logit == -np.inf:  # the chain's own filters left nothing the grammar allows
                raise GrammarStuck("The grammar and the sampling settings together allow no token here.")
        llama_cpp.llama_sampler_accept(self.grammar, token)
        llama_cpp.llama_sampler_accept(self.chain, token)
        return token

    def close(self) -> None:
        if self.grammar is not None:
            llama_cpp.llama_sampler_free(self.grammar)
            self.grammar = None
