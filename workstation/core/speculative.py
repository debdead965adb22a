"""Speculative decoding: a draft model or prompt lookup proposes tokens, the target verifies them.

Both drafters plug into the engine's ``Decoder`` protocol. Each step the target model decodes
the last accepted token plus ``k`` drafted tokens in ONE batch, with logits only at those
``k + 1`` positions (the prompt's prefill is the engine's, unchanged), and keeps the longest
prefix it agrees with:

* temperature 0: a drafted token is accepted while it equals the target's own greedy choice
  (through the same llama.cpp sampler chain the plain decoder uses), so the text is the
  target's greedy text;
* temperature > 0: the standard speculative-sampling rule (accept with min(1, p/q), resample
  from norm(max(0, p - q)) on rejection, a bonus token from p when all are accepted), with p
  the target's sampling distribution (repeat penalty, top-k, top-p, min-p, temperature, the
  order of llama.cpp's chain) computed with numpy, so the output follows the target's
  distribution.

Drafters:

* ``ModelDrafter``: a smaller GGUF with the same vocabulary, its own context and KV cache; its
  cache follows the target's token list by prefix matching (across steps and turns), so only
  tokens it has not seen are decoded.
* ``LookupDrafter``: copies what followed the most recent earlier occurrence of the last
  n-gram (n = ``ngram`` down to 1) of prompt + reply; an index keyed by n-gram makes a
  proposal O(n).

Adaptive: the decoder measures a plain step, the extra cost of each verified token and of
each drafted token, and the acceptance rate (per n-gram length for lookup), and each step
picks the draft length with the best expected tokens per second, or a plain step when none
beats plain decoding. A draft model that cannot pay even at 100% acceptance on this machine
(a compute-bound CPU) is switched off for the session.

Lookup drafts also grow like a slow start: copied text is accepted in runs (a sentence
quoted whole) broken where the reply departs from the source, so the draft length doubles
after each fully accepted draft, up to ``draft_tokens``, and falls back to the cost model's
length after a rejection. Replayed on the quoting bench's greedy replies with the measured
cost of a verified token (0.4-0.55 of a plain step on 2 cores), a pure slow start gave
1.37-1.73x where a fixed 10-token draft gave 0.7-0.9x.

A turn keeps an account of the time drafting saved against plain steps for the same tokens;
once it has lost more than ``BAIL_OUT_PLAIN_STEPS`` plain steps, the turn decodes plainly to
its end, which bounds what a bad guess can cost (a 38-token summary: at most about 4%).
"""

from __future__ import annotations

import hashlib
import math
import statistics
import time
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import llama_cpp
import numpy as np
from llama_cpp import _internals as internals

from workstation.core.catalog import check_gguf, resolve_model_path
from workstation.core.errors import EngineError, ModelFileError
from workstation.core.profiles import KV_CACHE_TYPES, Profile, Sampling, Speculative
from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings, last_log_error

if TYPE_CHECKING:
    from workstation.core.engine import Decoder, GenerationState

PENALTY_LAST_N = 64  # the window SamplerChain gives llama.cpp's penalties sampler
GREEDY_DRAFT_P_MIN = 0.6  # a greedy draft model stops drafting below this confidence
MIN_GAIN = 1.03  # draft only when the expected speed-up beats plain decoding by this much
BAIL_OUT_PLAIN_STEPS = 1.5  # a turn stops drafting once drafting has lost this many plain steps


# --- the target's sampling distribution, as llama.cpp's chain computes it ----------------------
def sampling_distribution(
    logits: np.ndarray, s: Sampling, history: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(token ids, probabilities) that SamplerChain samples from at temperature > 0.

    Same steps and order as the chain: repeat penalty over the last 64 generated tokens,
    top-k, top-p, min-p, temperature, softmax.
    """
    x = logits
    if s.repeat_penalty != 1.0 and history:
        x = np.array(logits, dtype=np.float32)
        seen = np.fromiter(set(history[-PENALTY_LAST_N:]), dtype=np.int64)
        v = x[seen]
        x[seen] = np.where(v <= 0, v * s.repeat_penalty, v / s.repeat_penalty)
    n = x.shape[0]
    if 0 < s.top_k < n:
        ids = np.argpartition(x, n - s.top_k)[n - s.top_k :]
    else:
        ids = np.arange(n)
    vals = x[ids].astype(np.float64)
    order = np.argsort(-vals, kind="stable")
    ids, vals = ids[order], vals[order]
    if s.top_p < 1.0:
        p = np.exp(vals - vals[0])
        cum = np.cumsum(p / p.sum())
        last = min(int(np.searchsorted(cum, s.top_p)) + 1, len(vals))
        ids, vals = ids[:last], vals[:last]
    if s.min_p > 0.0:
        keep = max(1, int(np.count_nonzero(vals >= vals[0] + math.log(s.min_p))))
        ids, vals = ids[:keep], vals[:keep]
    t = max(s.temperature, 1e-6)
    p = np.exp((vals - vals[0]) / t)
    return ids, p / p.sum()


def _dense(ids: np.ndarray, p: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.float64)
    out[ids] = p
    return out


def _draw(weights: np.ndarray, rng: np.random.Generator, ids: np.ndarray | None = None) -> int:
    """One index drawn in proportion to ``weights`` (mapped through ``ids`` when given)."""
    cum = np.cumsum(weights)
    j = min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), len(cum) - 1)
    return int(ids[j]) if ids is not None else j


def accept_or_resample(
    p: np.ndarray, q: np.ndarray | None, d: int, rng: np.random.Generator
) -> tuple[int, bool]:
    """The speculative-sampling rule for one drafted token ``d`` (dense p and q over the vocab).

    Accept with probability min(1, p[d] / q[d]); otherwise draw from norm(max(0, p - q)).
    ``q`` None is a deterministic draft (prompt lookup): q puts all its mass on ``d``.
    The token returned is distributed as p whatever q was.
    """
    if q is None:
        if rng.random() < p[d]:
            return d, True
        resid = p.copy()
        resid[d] = 0.0
    else:
        if rng.random() * q[d] < p[d]:
            return d, True
        resid = np.maximum(p - q, 0.0)
    if resid.sum() <= 0.0:  # only possible through rounding
        resid = p
    return _draw(resid, rng), False


# --- compatibility of a draft model ------------------------------------------------------------
def _vocab_fingerprint(vocab: llama_cpp.llama_vocab_p) -> tuple[int, str]:
    n = llama_cpp.llama_vocab_n_tokens(vocab)
    h = hashlib.sha256()
    for i in range(n):
        h.update(llama_cpp.llama_vocab_get_text(vocab, i) or b"")
        h.update(b"\0%d\0" % llama_cpp.llama_vocab_get_attr(vocab, i))
    return n, h.hexdigest()


def _vocab_info(path: Path, want_n: int) -> tuple[int, str, int]:
    """(n_vocab, tokenizer fingerprint, training context) of a GGUF, loading its vocabulary only;
    the fingerprint is only computed (and otherwise "") when the size is ``want_n``."""
    check_gguf(path)
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    params.n_gpu_layers = 0
    try:
        model = internals.LlamaModel(path_model=str(path), params=params, verbose=True)
    except ValueError:
        why = last_log_error()
        raise ModelFileError(
            f"llama.cpp could not read the vocabulary of {path.name}" + (f": {why}." if why else ".")
        ) from None
    try:
        n = llama_cpp.llama_vocab_n_tokens(model.vocab)
        fp = _vocab_fingerprint(model.vocab)[1] if n == want_n else ""
        return n, fp, int(llama_cpp.llama_model_n_ctx_train(model.model))
    finally:
        model.close()


def check_draft_compatible(target: LoadedModel, draft_path: Path) -> None:
    """Refuse a draft model that cannot draft for ``target``, in one plain sentence."""
    try:  # the models helper's GGUF reader, when it exists
        from workstation.core.catalog import read_model_info  # type: ignore[attr-defined]
    except ImportError:
        read_model_info = None
    if read_model_info is not None:
        info_t, info_d = read_model_info(target.path), read_model_info(draft_path)
        n_t, fp_t = int(info_t.n_vocab), str(info_t.tokenizer_fingerprint)
        n_d, fp_d = int(info_d.n_vocab), str(info_d.tokenizer_fingerprint)
        ctx_d = None
    else:
        n_t = target.n_vocab
        n_d, fp_d, ctx_d = _vocab_info(draft_path, n_t)
        fp_t = _vocab_fingerprint(target.vocab)[1] if n_d == n_t else ""
    if n_d != n_t:
        raise ModelFileError(
            f"The draft model {draft_path.name} uses a different vocabulary ({n_t} vs {n_d} tokens), "
            f"so it cannot draft for {target.path.name}."
        )
    if fp_d != fp_t:
        raise ModelFileError(
            f"The draft model {draft_path.name} uses a different vocabulary (same size, {n_t} tokens, "
            f"but other token texts), so it cannot draft for {target.path.name}."
        )
    if ctx_d is not None and 0 < ctx_d < target.n_ctx:
        raise ModelFileError(
            f"The draft model {draft_path.name} was trained for {ctx_d} tokens of context but this "
            f"profile uses {target.n_ctx}; lower the context or pick another draft model."
        )


# --- drafters ------------------------------------------------------------------------------------
class LookupDrafter:
    """Prompt lookup: an n-gram index over the conversation's tokens (most recent occurrence)."""

    def __init__(self, ngram: int) -> None:
        self.ngram = max(1, ngram)
        self.seq: list[int] = []
        self.index: list[dict[tuple[int, ...], int]] = [{} for _ in range(self.ngram + 1)]

    def sync(self, tokens: Sequence[int]) -> None:
        """Index ``tokens`` (extending when the indexed text is a prefix, rebuilding otherwise)."""
        m = len(self.seq)
        if m > len(tokens) or tokens[:m] != self.seq:
            self.seq = []
            self.index = [{} for _ in range(self.ngram + 1)]
        seq, index = self.seq, self.index
        for tok in tokens[len(seq) :]:
            pos = len(seq)  # where ``tok`` goes: every n-gram ending just before it points here
            for n in range(1, min(self.ngram, pos) + 1):
                index[n][tuple(seq[pos - n : pos])] = pos
            seq.append(tok)

    def propose(self, tokens: Sequence[int], last: int, k: int) -> tuple[int, list[int]]:
        """(matched n-gram length, up to ``k`` tokens) that followed the last n-gram of
        ``tokens + [last]`` earlier on; (0, []) when nothing matches."""
        self.sync(tokens)
        seq = self.seq
        for n in range(min(self.ngram, len(seq) + 1), 0, -1):
            key = (*seq[len(seq) - n + 1 :], last) if n > 1 else (last,)
            pos = self.index[n].get(key)
            if pos is not None:
                return n, seq[pos : pos + k]
        return 0, []


class ModelDrafter:
    """A draft model whose KV cache (sequence 0) follows the target's tokens by prefix matching."""

    def __init__(self, model: LoadedModel) -> None:
        self.model = model
        self.batch = Batch(model.n_batch)
        self.tokens: list[int] = []  # what the draft's KV cache holds
        self.pp_time = _Recent()  # seconds per token of catch-up batches
        self.last_catch_up = 0.0  # seconds the last sync spent on a catch-up batch (>= 8 tokens)
        self.n_decoded = 0  # tokens the draft model has decoded (catch-up and drafting)

    def pending(self, tokens: Sequence[int]) -> int:
        """How many tokens a sync to ``tokens + [last]`` would decode."""
        return len(tokens) + 1 - _common_prefix(self.tokens, tokens)

    def sync(self, tokens: Sequence[int], last: int) -> int:
        """Make the draft's cache hold ``tokens + [last]``; returns the logits index of ``last``."""
        model, batch = self.model, self.batch
        ctx = [*tokens, last]
        common = min(_common_prefix(self.tokens, ctx), len(ctx) - 1)
        if common < len(self.tokens):
            if not model.seq_rm(0, common, -1):
                model.seq_rm(0, -1, -1)
                common = 0
            del self.tokens[common:]
        todo = ctx[common:]
        t0 = time.perf_counter()
        idx = 0
        for start in range(0, len(todo), model.n_batch):
            chunk = todo[start : start + model.n_batch]
            batch.clear()
            base = len(self.tokens)
            for j, tok in enumerate(chunk):
                idx = batch.add(tok, base + j, 0, start + j == len(todo) - 1)
            model.decode(batch)
            self.tokens.extend(chunk)
        self.n_decoded += len(todo)
        self.last_catch_up = 0.0
        if len(todo) >= 8:
            self.last_catch_up = time.perf_counter() - t0
            self.pp_time.add(self.last_catch_up / len(todo))
        return idx

    def draft(
        self,
        tokens: Sequence[int],
        last: int,
        k: int,
        sampling: Sampling | None,
        history: list[int],
        rng: np.random.Generator,
    ) -> tuple[list[int], list[tuple[np.ndarray, np.ndarray]] | None]:
        """Up to ``k`` drafted tokens after ``tokens + [last]``; with ``sampling`` (temperature > 0)
        also the distribution q each was drawn from."""
        model, batch = self.model, self.batch
        idx = self.sync(tokens, last)
        drafts: list[int] = []
        qs: list[tuple[np.ndarray, np.ndarray]] = []
        hist = list(history)
        for j in range(k):
            x = model.logits(idx)
            if sampling is None:
                d = int(np.argmax(x))
                if j > 0 and 1.0 / float(np.exp(x - x[d]).sum()) < GREEDY_DRAFT_P_MIN:
                    break
            else:
                ids, q = sampling_distribution(x, sampling, hist)
                d = _draw(q, rng, ids)
                qs.append((ids, q))
                hist.append(d)
            drafts.append(d)
            if j == k - 1 or model.is_eog(d):
                break
            batch.clear()
            batch.add(d, len(self.tokens), 0, True)
            model.decode(batch)
            self.tokens.append(d)
            self.n_decoded += 1
            idx = 0
        return drafts, (qs if sampling is not None else None)

    def close(self) -> None:
        self.batch.close()
        self.model.close()


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    m = min(len(a), len(b))
    if a[:m] == b[:m]:
        return m
    lo, hi = 0, m  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


# --- measurements ----------------------------------------------------------------------------------
class _Recent:
    """The median of the last few measurements (a shared, noisy machine needs medians)."""

    def __init__(self, size: int = 9) -> None:
        self.values: deque[float] = deque(maxlen=size)

    def add(self, value: float) -> None:
        self.values.append(value)

    def value(self, default: float) -> float:
        return statistics.median(self.values) if self.values else default

    def __len__(self) -> int:
        return len(self.values)


class _Acceptance:
    """Per-token conditional acceptance rate from decayed counts (a prior to start with)."""

    def __init__(self, prior: float, weight: float = 2.0, decay: float = 0.9) -> None:
        self.ok = prior * weight
        self.bad = (1.0 - prior) * weight
        self.decay = decay

    def update(self, accepted: int, drafted: int) -> None:
        self.ok = self.ok * self.decay + accepted
        self.bad = self.bad * self.decay + (1 if accepted < drafted else 0)

    @property
    def rate(self) -> float:
        return self.ok / (self.ok + self.bad)


def expected_tokens(a: float, k: int) -> float:
    """Tokens a step yields with ``k`` drafts at per-token acceptance ``a`` (1 + a + ... + a^k)."""
    return float(sum(a**j for j in range(k + 1)))


def best_draft_length(a: float, kmax: int, t_plain: float, t_verify: float, t_draft: float) -> tuple[int, float]:
    """(k, expected speed-up over plain decoding); k = 0 when no draft length pays by MIN_GAIN.

    A step with k drafts costs k * t_draft + t_plain + k * t_verify and yields
    expected_tokens(a, k) tokens; plain decoding yields one per t_plain.
    """
    best, best_gain = 0, 1.0
    for k in range(1, kmax + 1):
        gain = expected_tokens(a, k) * t_plain / (k * t_draft + t_plain + k * t_verify)
        if gain > best_gain:
            best, best_gain = k, gain
    return (best, best_gain) if best_gain >= MIN_GAIN else (0, best_gain)


# --- the decoder ---------------------------------------------------------------------------------
class SpeculativeDecoder:
    """Implements the engine's ``Decoder`` protocol with a lookup or draft-model drafter."""

    WARMUP_PLAIN_STEPS = 2  # per session, to measure a plain step before drafting
    PROBE_STEPS = 3  # draft steps before judging whether a draft model can ever pay here

    def __init__(self, spec: Speculative, drafter: LookupDrafter | ModelDrafter) -> None:
        self.spec = spec
        self.kmax = spec.draft_tokens
        self.drafter = drafter
        self.lookup = isinstance(drafter, LookupDrafter)
        self.t_plain = _Recent()  # seconds of a plain step (decode one + sample)
        self.t_verify = _Recent()  # extra seconds per verified draft token
        self.t_draft = _Recent()  # seconds per drafted token (draft model; ~0 for lookup)
        n_classes = drafter.ngram + 1 if isinstance(drafter, LookupDrafter) else 1
        priors = [0.8] if not self.lookup else [0.3, 0.35, 0.5, *([0.6] * n_classes)]
        self.acceptance = [_Acceptance(priors[i]) for i in range(n_classes)]
        self.draft_steps = 0
        self.off_for_session = False
        self.off_reason = ""
        self.session_drafted = 0
        self.session_accepted = 0
        self.turn_steps: list[tuple[int, int]] = []  # (drafted, accepted) of this turn's drafts
        self.turns_bailed_out = 0
        # False: draft the full draft_tokens every step (tests use it to exercise verification)
        self.adaptive = True

    # stats a bench or a dashboard may show
    def stats(self) -> dict[str, float | int | str | bool]:
        return {
            "t_plain_ms": self.t_plain.value(0.0) * 1000,
            "t_verify_per_token_ms": self.t_verify.value(0.0) * 1000,
            "t_draft_per_token_ms": self.t_draft.value(0.0) * 1000,
            "draft_steps": self.draft_steps,
            "turns_bailed_out": self.turns_bailed_out,
            "off_for_session": self.off_for_session,
            "off_reason": self.off_reason,
        }

    def _choose(self, cls: int, kmax: int) -> int:
        if not self.adaptive:
            return kmax
        t_plain = self.t_plain.value(0.0)
        if t_plain <= 0.0:
            return 0
        if not self.lookup and self.draft_steps < self.PROBE_STEPS:
            return min(kmax, 4)  # probe: measure the draft model and verification here
        # unmeasured: assume a CPU (a verified token 0.6 of a plain step; a GPU soon shows less)
        t_verify = self.t_verify.value(0.6 * t_plain)
        t_draft = self.t_draft.value(0.0 if self.lookup else 0.5 * t_plain)
        k, _ = best_draft_length(self.acceptance[cls].rate, kmax, t_plain, t_verify, t_draft)
        return k

    def _judge_draft_model(self) -> None:
        """Switch a draft model off for the session when it cannot pay even at 100% acceptance."""
        t_plain = self.t_plain.value(0.0)
        if self.lookup or not self.adaptive or self.draft_steps < self.PROBE_STEPS or t_plain <= 0.0:
            return
        _, gain = best_draft_length(
            1.0, self.kmax, t_plain, self.t_verify.value(0.0), self.t_draft.value(0.0)
        )
        if gain < MIN_GAIN:
            self.off_for_session = True
            self.off_reason = (
                f"a drafted token costs {self.t_draft.value(0.0) * 1000:.1f} ms + "
                f"{self.t_verify.value(0.0) * 1000:.1f} ms to verify against "
                f"{t_plain * 1000:.1f} ms for a plain step: drafting cannot pay on this machine"
            )

    def generate(self, state: GenerationState) -> Iterator[int]:
        model, batch, sampler = state.model, state.batch, state.sampler
        settings: Sampling = sampler.settings
        greedy = sampler.greedy
        rng = np.random.default_rng(settings.seed)
        history: list[int] = []  # generated tokens (the penalties' window at temperature > 0)
        n_vocab = model.n_vocab

        def pick(i: int) -> int:
            if greedy:
                return sampler.sample(model.ctx, i)
            ids, p = sampling_distribution(model.logits(i), settings, history)
            tok = _draw(p, rng, ids)
            history.append(tok)
            return tok

        last = pick(state.logits_index)
        produced = 1
        yield last  # the first token goes out before any drafting work (TTFT unchanged)

        plain_this_turn = 0
        off_for_turn = False
        run_k = 1  # lookup: the next draft length (slow start), doubled after full acceptance
        saved = 0.0  # seconds drafting has saved this turn against plain steps (negative: lost)
        self.turn_steps = []
        while True:
            room = min(state.max_new - produced - 1, model.n_ctx - len(state.tokens) - 2)
            drafts: list[int] = []
            qs: list[tuple[np.ndarray, np.ndarray]] | None = None
            shadow: tuple[int, int] | None = None  # (n-gram class, proposed token) not drafted
            cls = 0
            warm = not self.adaptive or (
                len(self.t_plain) >= self.WARMUP_PLAIN_STEPS and plain_this_turn >= 1
            )
            if room >= 1 and warm and not self.off_for_session and not off_for_turn:
                t0 = time.perf_counter()
                if isinstance(self.drafter, LookupDrafter):
                    cls, cand = self.drafter.propose(state.tokens, last, min(room, self.kmax))
                    if cand:
                        k = self._choose(cls, len(cand))
                        if k:
                            # the cost model says drafting pays; the slow start says how far
                            drafts = cand[: max(k, run_k)] if self.adaptive else cand[:k]
                        else:
                            shadow = (cls, cand[0])
                else:
                    k = self._choose(0, min(room, self.kmax))
                    pending = self.drafter.pending(state.tokens)
                    catch_up = pending * self.drafter.pp_time.value(0.1 * self.t_plain.value(0.0))
                    if k and self.adaptive and catch_up > 0.1 * (state.max_new - produced) * self.t_plain.value(0.0):
                        k = 0  # catching the draft up would cost more than this turn can win back
                    if k:
                        drafts, qs = self.drafter.draft(
                            state.tokens, last, k, None if greedy else settings, history, rng
                        )
                    else:
                        off_for_turn = True
                if drafts:
                    spent = time.perf_counter() - t0
                    if isinstance(self.drafter, ModelDrafter):
                        spent -= self.drafter.last_catch_up  # a one-off, judged separately above
                    self.t_draft.add(max(0.0, spent) / len(drafts))

            if not drafts:
                # a plain step: decode ``last``, sample the next token from its logits
                t0 = time.perf_counter()
                batch.clear()
                batch.add(last, len(state.tokens), 0, True)
                model.decode(batch)
                state.tokens.append(last)
                tok = pick(0)
                self.t_plain.add(time.perf_counter() - t0)
                plain_this_turn += 1
                if shadow is not None:  # what the lookup would have drafted, scored for free
                    self.acceptance[shadow[0]].update(int(tok == shadow[1]), 1)
                last = tok
                produced += 1
                yield tok
                continue

            # verify: ``last`` and the drafts in one batch, logits at each of those positions
            t0 = time.perf_counter()
            n0 = len(state.tokens)
            batch.clear()
            batch.add(last, n0, 0, True)
            for j, d in enumerate(drafts):
                batch.add(d, n0 + 1 + j, 0, True)
            model.decode(batch)
            state.tokens.append(last)
            state.tokens.extend(drafts)
            out: list[int] = []
            n_acc = 0
            for j in range(len(drafts) + 1):
                d = drafts[j] if j < len(drafts) else -1
                if greedy:
                    tok = sampler.sample(model.ctx, j)
                    ok = tok == d
                else:
                    ids, p = sampling_distribution(model.logits(j), settings, history)
                    if d < 0:
                        tok, ok = _draw(p, rng, ids), False
                    else:
                        q_dense = _dense(*qs[j], n_vocab) if qs is not None else None
                        tok, ok = accept_or_resample(_dense(ids, p, n_vocab), q_dense, d, rng)
                    history.append(tok)
                out.append(tok)
                if not ok:
                    break
                n_acc += 1
                if model.is_eog(tok):
                    break
            keep = n0 + 1 + n_acc
            if len(state.tokens) > keep:
                model.seq_rm(0, keep, -1)
                del state.tokens[keep:]
            elapsed = time.perf_counter() - t0
            t_plain = self.t_plain.value(elapsed)
            self.t_verify.add(max(0.0, (elapsed - t_plain) / len(drafts)))
            # what this step cost against plain steps for the same tokens; a turn whose drafts
            # have lost more than BAIL_OUT_PLAIN_STEPS plain steps decodes plainly from here on
            saved += len(out) * t_plain - elapsed - (self.t_draft.value(0.0) * len(drafts))
            if self.adaptive and saved < -BAIL_OUT_PLAIN_STEPS * t_plain:
                off_for_turn = True
                self.turns_bailed_out += 1
            state.metrics.draft_n += len(drafts)
            state.metrics.draft_n_accepted += n_acc
            self.session_drafted += len(drafts)
            self.session_accepted += n_acc
            self.acceptance[cls].update(n_acc, len(drafts))
            run_k = min(run_k * 2, self.kmax) if n_acc == len(drafts) else 1
            self.turn_steps.append((len(drafts), n_acc))
            self.draft_steps += 1
            self._judge_draft_model()
            for tok in out:
                produced += 1
                yield tok
            last = out[-1]

    def close(self) -> None:
        if isinstance(self.drafter, ModelDrafter):
            self.drafter.close()


def _draft_gpu_layers(spec: Speculative, target: LoadedModel) -> int:
    gl = spec.draft_gpu_layers
    if isinstance(gl, int):
        return gl
    if gl == "all":
        return 999
    # auto: a draft model is small; put it all on the GPU whenever the target uses one
    return 999 if target.settings.n_gpu_layers > 0 else 0


def load_draft_model(profile: Profile, target: LoadedModel) -> LoadedModel:
    """The profile's draft model, checked against ``target`` before it is loaded."""
    spec = profile.speculative
    if not spec.draft_model:
        raise EngineError(f"Profile '{profile.name}' uses speculative mode draft but names no draft_model.")
    path = resolve_model_path(spec.draft_model)
    check_draft_compatible(target, path)
    ts = target.settings
    settings = RuntimeSettings(
        n_ctx=target.n_ctx,
        n_gpu_layers=_draft_gpu_layers(spec, target),
        n_threads=ts.n_threads,
        flash_attn=ts.flash_attn,
        type_k=KV_CACHE_TYPES["f16"],
        type_v=KV_CACHE_TYPES["f16"],
        n_batch=ts.n_batch,
    )
    return LoadedModel(path, settings)


def make_decoder(profile: Profile, target: LoadedModel) -> Decoder:
    """The decoder for ``profile.speculative.mode`` (lookup or draft) over ``target``."""
    spec = profile.speculative
    if spec.mode == "lookup":
        return SpeculativeDecoder(spec, LookupDrafter(spec.ngram))
    if spec.mode == "draft":
        return SpeculativeDecoder(spec, ModelDrafter(load_draft_model(profile, target)))
    raise EngineError(f"Unknown speculative mode '{spec.mode}'; allowed values are off, draft, lookup.")
