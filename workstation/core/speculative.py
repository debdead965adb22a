"""Speculative decoding: a draft model or prompt lookup proposes tokens, the target verifies them.

Each slot of the scheduler (``core/scheduler.py``) has its own ``SlotSpeculator``, as each of
llama-server's slots carries its own speculative state. Before a step it proposes drafts; the
scheduler puts the slot's last accepted token plus its ``k`` drafts into the step's ONE batch,
next to every other slot's tokens, with logits only at those ``k + 1`` positions; after the
step the speculator keeps the longest prefix the target agrees with:

* at every temperature, each position of the step is sampled through the request's own
  llama.cpp sampler chain, exactly as a plain step samples (one draw of its random generator a
  token), and a drafted token is accepted while it equals what was sampled; the first that
  differs is replaced by the sampled token, and when all are accepted the next position gives one
  more. So the reply is the one the profile gives without speculation, token for token (with one
  thread: ``bench/greedy_equality.py``), and a seeded reply is the same however many tokens were
  drafted. (It was the speculative-sampling rule, accept with min(1, p/q) and resample from
  norm(max(0, p - q)), drawn with numpy: one or two extra draws a drafted position, and a draft
  model drew from the same generator, so how many tokens timing let the speculator draft changed
  the random numbers, and the text, of a seeded reply.)

A draft model drafts its most likely token at temperature 0. At temperature > 0 it draws from its
own distribution with the request's penalties, top-k, top-p, min-p and temperature
(``sampling_distribution``), using a copy of the target's generator (``sampling.DrawsAhead``):
its n-th draft uses the number the target's n-th next sample will use, so where the two models
agree the target draws the drafted token, and the target's own draws are untouched. Measured on
the test pair (SmolLM2 Q8_0 target, Q4_1 draft, 4 drafts every step, 15 turns of 48 tokens),
tokens a verifying step gave: 4.2 at temperature 0.7 with the rejection rule (91% of drafts
accepted), 3.4 now (65%); drafting the draft's most likely token instead gave 2.3 (62%). Both
models order their candidates most likely first under top-k; with top_k 0 the target's stay in
vocabulary order and fewer drafts match (still the same reply).

Drafters:

* ``ModelDrafter``: a smaller GGUF with the same vocabulary, loaded once per scheduler with one
  sequence per slot; a slot's sequence follows the slot's token list by prefix matching (across
  steps and turns), so only tokens it has not seen are decoded.
* ``LookupDrafter``: copies what followed the most recent earlier occurrence of the last
  n-gram (n = ``ngram`` down to 1) of prompt + reply; an index keyed by n-gram makes a
  proposal O(n).

Adaptive: the scheduler measures a plain step (per number of generating slots), the extra cost of each verified token and of
each drafted token, and the acceptance rate (per n-gram length for lookup), and each step
picks the draft length with the best expected tokens per second, or a plain step when none
beats plain decoding. A draft model that cannot pay even at 100% acceptance on this machine
(a compute-bound CPU) is switched off for the session.

Lookup drafts also grow like a slow start: copied text is accepted in runs (a sentence
quoted whole) broken where the reply departs from the source, so the draft length doubles
after each fully accepted draft, up to ``draft_tokens``, and falls back to the cost model's
length after a rejection. Replayed on the quoting bench's greedy replies with the measured
cost of a verified token (0.4-0.55 of a plain step on 2 cores), a pure slow start gave
1.37-1.73x where a fixed 10-token draft gave 0.7-0.9x. Lookup drafts only once its proposals
(scored for free while decoding plainly) matched ``LOOKUP_STREAK`` tokens in a row, and again
after each rejection: on text with little to copy, n-grams match now and then but never for long,
and each rejected draft cost a verification (measured: lookup at 0.95-0.97x of plain on a summary
and on tips without the streak; with it 0.96-1.00x, and quoting gained: 1.19x against 1.03x;
a streak of 3 gave 0.98-1.00x on those but lost the hard-wrapped quote, 1.00x against 1.18x).

A turn keeps an account of the time drafting saved against plain steps for the same tokens;
once it has lost more than ``BAIL_OUT_PLAIN_STEPS`` plain steps, the turn decodes plainly to
its end, which bounds what a bad guess can cost (a 38-token summary: at most about 4%).
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from workstation.core.catalog import resolve_model_path
from workstation.core.errors import EngineError, ModelFileError
from workstation.core.model_info import draft_problem
from workstation.core.phrases import Phrase, say
from workstation.core.profiles import KV_CACHE_TYPES, Profile, Sampling, Speculative
from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings
from workstation.core.sampling import PENALTY_LAST_N, DrawsAhead, SamplerChain, penalized
from workstation.core.slots import common_prefix, moved_runs

GREEDY_DRAFT_P_MIN = 0.6  # a greedy draft model stops drafting below this confidence
MIN_GAIN = 1.03  # draft only when the expected speed-up beats plain decoding by this much
BAIL_OUT_PLAIN_STEPS = 1.5  # a turn stops drafting once drafting has lost this many plain steps
LOOKUP_STREAK = 2  # lookup drafts only after its proposals matched this many tokens in a row


# --- the target's sampling distribution, as llama.cpp's chain computes it ----------------------
def sampling_distribution(
    logits: np.ndarray, s: Sampling, history: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(token ids, probabilities) that SamplerChain samples from at temperature > 0.

    Same steps and order as the chain: the penalties over the last 64 tokens, prompt's end included (as
    llama.cpp's sampler: the repeat penalty, then each token's count times the frequency
    penalty and its presence times the presence penalty taken off), top-k, top-p, min-p,
    temperature, softmax.
    """
    x = logits
    if penalized(s) and history:
        x = np.array(logits, dtype=np.float32)
        seen, counts = np.unique(np.asarray(history[-PENALTY_LAST_N:], dtype=np.int64), return_counts=True)
        v = x[seen]
        if s.repeat_penalty != 1.0:
            v = np.where(v <= 0, v * s.repeat_penalty, v / s.repeat_penalty)
        x[seen] = v - (counts.astype(np.float32) * np.float32(s.frequency_penalty) + np.float32(s.presence_penalty))
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


# --- compatibility of a draft model ------------------------------------------------------------
def check_draft_compatible(target: LoadedModel, draft_path: Path, context: int) -> None:
    """Refuse a draft model that cannot draft for ``target`` at ``context`` tokens per request,
    in one plain sentence (both GGUF headers are read; no weights are loaded)."""
    problem = draft_problem(target.path, draft_path, context)
    if problem:
        raise ModelFileError(said=[problem])


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


class DraftModel:
    """The draft GGUF, loaded once per scheduler: one sequence per slot, one batch."""

    def __init__(self, model: LoadedModel, n_target_vocab: int | None = None) -> None:
        self.model = model
        self.batch = Batch(model.n_batch)
        # token ids both vocabularies have (llama.cpp lets them differ by padding at the end):
        # the draft proposes only these, and a target token past the draft's stops drafting
        self.n_common = min(model.n_vocab, n_target_vocab or model.n_vocab)

    def close(self) -> None:
        self.batch.close()
        self.model.close()


class ModelDrafter:
    """One slot's drafting with the draft model: its sequence follows the slot's tokens by
    prefix matching, so only tokens it has not seen are decoded."""

    def __init__(self, shared: DraftModel, seq: int) -> None:
        self.shared = shared
        self.seq = seq
        self.tokens: list[int] = []  # what this slot's sequence in the draft's KV cache holds
        self.pp_time = _Recent()  # seconds per token of catch-up batches
        self.last_catch_up = 0.0  # seconds the last sync spent on a catch-up batch (>= 8 tokens)
        self.n_decoded = 0  # tokens the draft model has decoded for this slot

    def pending(self, tokens: Sequence[int]) -> int:
        """How many tokens a sync to ``tokens + [last]`` would decode."""
        return len(tokens) + 1 - common_prefix(self.tokens, tokens)

    def forget(self) -> None:
        self.shared.model.seq_rm(self.seq, -1, -1)
        self.tokens = []

    def sync(self, tokens: Sequence[int], last: int) -> int:
        """Make the draft's cache hold ``tokens + [last]``; returns the logits index of ``last``."""
        model, batch, seq = self.shared.model, self.shared.batch, self.seq
        ctx = [*tokens, last]
        common = min(common_prefix(self.tokens, ctx), len(ctx) - 1)
        runs = moved_runs(self.tokens, ctx, common) if common < len(self.tokens) else []
        if runs and model.can_shift:  # the target's cells were moved so (a conversation's oldest left out)
            self.tokens = model.move_cells(seq, self.tokens, common, runs)
        elif common < len(self.tokens):
            if not model.seq_rm(seq, common, -1):
                model.seq_rm(seq, -1, -1)
                common = 0
            del self.tokens[common:]
        todo = ctx[len(self.tokens):]
        if todo and max(todo) >= model.n_vocab:
            raise EngineError("a token the draft model's vocabulary does not have")
        t0 = time.perf_counter()
        idx = 0
        for start in range(0, len(todo), model.n_batch):
            chunk = todo[start : start + model.n_batch]
            batch.clear()
            base = len(self.tokens)
            for j, tok in enumerate(chunk):
                idx = batch.add(tok, base + j, seq, start + j == len(todo) - 1)
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
        draws: DrawsAhead | None = None,
    ) -> list[int]:
        """Up to ``k`` drafted tokens after ``tokens + [last]``. Temperature 0 (``sampling`` None):
        the draft's most likely token, stopping at one less likely than ``GREEDY_DRAFT_P_MIN``;
        else drawn from the distribution the request samples from (``history``: the penalties'
        window) with ``draws``, the target's next draws."""
        model, batch = self.shared.model, self.shared.batch
        idx = self.sync(tokens, last)
        drafts: list[int] = []
        hist = list(history)
        for j in range(k):
            x = model.logits(idx)[: self.shared.n_common]
            if sampling is None:
                d = int(np.argmax(x))
                likely = 1.0 / float(np.exp(x - x[d]).sum())
            else:
                assert draws is not None
                d, likely = draws.pick(*sampling_distribution(x, sampling, hist)), 1.0
            if j > 0 and likely < GREEDY_DRAFT_P_MIN:
                break
            hist.append(d)
            drafts.append(d)
            if j == k - 1 or model.is_eog(d):
                break
            batch.clear()
            batch.add(d, len(self.tokens), self.seq, True)
            model.decode(batch)
            self.tokens.append(d)
            self.n_decoded += 1
            idx = 0
        return drafts


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


# --- one slot's speculation ------------------------------------------------------------------------
class SpecCosts:
    """What a step costs here, measured by the scheduler and shared by its slots; keyed by how
    many slots were generating in the step (a batch of 4 costs more than a batch of 1)."""

    def __init__(self) -> None:
        self._plain: dict[int, _Recent] = {}
        self.t_verify = _Recent()  # extra seconds per verified draft token
        self.t_draft = _Recent()  # seconds per drafted token (draft model; ~0 for lookup)
        self.n_active = 1  # generating slots in the last step

    def plain(self, n_active: int | None = None) -> _Recent:
        n = n_active or self.n_active
        if n not in self._plain:
            self._plain[n] = _Recent()
        return self._plain[n]

    def record(self, seconds: float, n_active: int, n_drafts: int) -> None:
        """One step with no prefill in it: ``n_active`` generating slots, ``n_drafts`` verified."""
        self.n_active = n_active
        if n_drafts == 0:
            self.plain(n_active).add(seconds)
            return
        t_plain = self.plain(n_active).value(0.0)
        if t_plain > 0.0:
            self.t_verify.add(max(0.0, (seconds - t_plain) / n_drafts))


class SlotSpeculator:
    """One slot's speculative decoding: it proposes drafts before a step and verifies them from
    the step's logits; the scheduler puts ``[last, *drafts]`` in the shared batch with logits at
    each position. The adaptive policy (draft length, slow start, bail-out) is per slot; the
    costs it weighs are the scheduler's ``SpecCosts``."""

    WARMUP_PLAIN_STEPS = 2  # per session, to measure a plain step before drafting
    PROBE_STEPS = 3  # draft steps before judging whether a draft model can ever pay here

    def __init__(self, spec: Speculative, drafter: LookupDrafter | ModelDrafter, costs: SpecCosts) -> None:
        self.spec = spec
        self.kmax = spec.draft_tokens
        self.drafter = drafter
        self.lookup = isinstance(drafter, LookupDrafter)
        self.costs = costs
        n_classes = drafter.ngram + 1 if isinstance(drafter, LookupDrafter) else 1
        priors = [0.8] if not self.lookup else [0.3, 0.35, 0.5, *([0.6] * n_classes)]
        self.acceptance = [_Acceptance(priors[i]) for i in range(n_classes)]
        self.draft_steps = 0
        self.off_for_session = False
        self.off_said: list[Phrase] = []  # why, in its figures (bench says it in the command line's language)
        self.session_drafted = 0
        self.session_accepted = 0
        self.turns_bailed_out = 0
        # False: draft the full draft_tokens every step (tests use it to exercise verification)
        self.adaptive = True
        self.turn_steps: list[tuple[int, int]] = []  # (drafted, accepted) of this turn's drafts
        self.begin_turn(None)

    # the time a plain step takes now (the slot's view of the shared measurements)
    @property
    def t_plain(self) -> _Recent:
        return self.costs.plain()

    @property
    def t_verify(self) -> _Recent:
        return self.costs.t_verify

    @property
    def t_draft(self) -> _Recent:
        return self.costs.t_draft

    def stats(self) -> dict[str, float | int | str | bool]:
        return {
            "t_plain_ms": self.t_plain.value(0.0) * 1000,
            "t_verify_per_token_ms": self.t_verify.value(0.0) * 1000,
            "t_draft_per_token_ms": self.t_draft.value(0.0) * 1000,
            "draft_steps": self.draft_steps,
            "turns_bailed_out": self.turns_bailed_out,
            "off_for_session": self.off_for_session,
            "off_reason": say(self.off_said),
        }

    def begin_turn(self, sampler: SamplerChain | None, prompt: list[int] | None = None) -> None:
        """A new reply; ``prompt``: the tokens before it, whose end the penalties look at too."""
        self.sampler = sampler
        settings = sampler.settings if sampler is not None else Sampling()
        self.settings = settings
        self.greedy = sampler.greedy if sampler is not None else True
        # the penalties' window a draft model drafts with at temperature > 0: the prompt's end,
        # then the reply's tokens (the target's own is in its sampler chain)
        self.history: list[int] = list((prompt or [])[-PENALTY_LAST_N:]) if penalized(settings) else []
        self.plain_this_turn = 0
        self.off_for_turn = False
        self.run_k = 1  # lookup: the next draft length (slow start), doubled after full acceptance
        self.streak = 0  # lookup: proposals that matched the reply in a row (shadow or drafted)
        self.saved = 0.0  # seconds drafting saved this turn against plain steps (negative: lost)
        self.turn_steps = []
        self.shadow: tuple[int, int] | None = None  # (n-gram class, proposed token) not drafted
        self.cls = 0

    def forget(self) -> None:
        """The slot's KV cache was cleared."""
        if isinstance(self.drafter, ModelDrafter):
            self.drafter.forget()

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
            self.off_said = [("bench.drafting_cannot_pay", {"draft": f"{self.t_draft.value(0.0) * 1000:.1f}",
                                                            "verify": f"{self.t_verify.value(0.0) * 1000:.1f}",
                                                            "plain": f"{t_plain * 1000:.1f}"})]

    def propose(self, tokens: list[int], last: int, room: int, left: int) -> list[int]:
        """Drafts to verify after ``last`` (the slot's KV holds ``tokens``); [] for a plain step.
        ``room``: drafts that fit this turn; ``left``: tokens this turn may still produce."""
        self.shadow, self.cls = None, 0
        warm = not self.adaptive or (
            len(self.t_plain) >= self.WARMUP_PLAIN_STEPS and self.plain_this_turn >= 1
        )
        if room < 1 or not warm or self.off_for_session or self.off_for_turn:
            return []
        t0 = time.perf_counter()
        drafts: list[int] = []
        if isinstance(self.drafter, LookupDrafter):
            cls, cand = self.drafter.propose(tokens, last, min(room, self.kmax))
            self.cls = cls
            if cand:
                # text with little to copy matches an n-gram now and then, never for long: wait
                # for a streak before paying for verification (copied text comes in runs)
                k = self._choose(cls, len(cand)) if self.streak >= LOOKUP_STREAK or not self.adaptive else 0
                if k:
                    # the cost model says drafting pays; the slow start says how far
                    drafts = cand[: max(k, self.run_k)] if self.adaptive else cand[:k]
                else:
                    self.shadow = (cls, cand[0])
        else:
            k = self._choose(0, min(room, self.kmax))
            pending = self.drafter.pending(tokens)
            t_plain = self.t_plain.value(0.0)
            catch_up = pending * self.drafter.pp_time.value(0.1 * t_plain)
            if k and self.adaptive and catch_up > 0.1 * left * t_plain:
                k = 0  # catching the draft up would cost more than this turn can win back
            if k:
                draws = self.sampler.draws_ahead() if self.sampler is not None else None
                try:
                    drafts = self.drafter.draft(
                        tokens, last, k, None if self.greedy else self.settings, self.history, draws
                    )
                finally:
                    if draws is not None:
                        draws.close()
            else:
                self.off_for_turn = True
        if drafts:
            spent = time.perf_counter() - t0
            if isinstance(self.drafter, ModelDrafter):
                spent -= self.drafter.last_catch_up  # a one-off, judged separately above
            self.t_draft.add(max(0.0, spent) / len(drafts))
        return drafts

    def _pick(self, model: LoadedModel, i: int) -> int:
        """The token at batch output ``i``, sampled as a plain step samples (the request's chain:
        one draw of its generator at temperature > 0), drafted position or not."""
        assert self.sampler is not None
        tok = self.sampler.sample(model.ctx, i)
        if not self.greedy and penalized(self.settings):
            self.history.append(tok)
        return tok

    def verify(self, model: LoadedModel, idx0: int, drafts: list[int]) -> tuple[list[int], int]:
        """(tokens produced, drafts accepted) from the logits at ``idx0 .. idx0 + len(drafts)``."""
        if not drafts:
            tok = self._pick(model, idx0)
            if self.shadow is not None:  # what the lookup would have drafted, scored for free
                hit = tok == self.shadow[1]
                self.acceptance[self.shadow[0]].update(int(hit), 1)
                self.streak = self.streak + 1 if hit else 0
            else:
                self.streak = 0
            self.plain_this_turn += 1
            return [tok], 0
        out: list[int] = []
        n_acc = 0
        for j in range(len(drafts) + 1):
            # sample as a plain step would have here; a draft is kept while it is what was drawn
            tok = self._pick(model, idx0 + j)
            ok = j < len(drafts) and tok == drafts[j]
            out.append(tok)
            if not ok:
                break
            n_acc += 1
            if model.is_eog(tok):
                break
        return out, n_acc

    def after_step(self, seconds: float, n_drafts: int, n_acc: int, n_out: int, timed: bool = True) -> None:
        """Account a verified draft: acceptance, slow start, and (``timed``: the step held no
        prompt chunks, so its time is this decoding's) the turn's time saved or lost."""
        if not n_drafts:
            return
        if timed:
            t_plain = self.t_plain.value(seconds)
            # what this step cost against plain steps for the same tokens; a turn whose drafts
            # have lost more than BAIL_OUT_PLAIN_STEPS plain steps decodes plainly from here on
            self.saved += n_out * t_plain - seconds - (self.t_draft.value(0.0) * n_drafts)
            if self.adaptive and self.saved < -BAIL_OUT_PLAIN_STEPS * t_plain:
                self.off_for_turn = True
                self.turns_bailed_out += 1
        self.session_drafted += n_drafts
        self.session_accepted += n_acc
        self.acceptance[self.cls].update(n_acc, n_drafts)
        self.run_k = min(self.run_k * 2, self.kmax) if n_acc == n_drafts else 1
        self.streak = self.streak + n_acc if n_acc == n_drafts else 0
        self.turn_steps.append((n_drafts, n_acc))
        self.draft_steps += 1
        self._judge_draft_model()


def _draft_gpu_layers(spec: Speculative, target: LoadedModel) -> int:
    gl = spec.draft_gpu_layers
    if isinstance(gl, int):
        return gl
    if gl == "all":
        return 999
    # auto: a draft model is small; put it all on the GPU whenever the target uses one
    return 999 if target.settings.n_gpu_layers > 0 else 0


def load_draft_model(profile: Profile, target: LoadedModel, slot_context: int) -> DraftModel:
    """The profile's draft model with one sequence per slot, checked against ``target`` first."""
    spec = profile.speculative
    if not spec.draft_model:
        raise EngineError(f"Profile '{profile.name}' uses speculative mode draft but names no draft_model.")
    path = resolve_model_path(spec.draft_model)
    check_draft_compatible(target, path, slot_context)
    ts = target.settings
    settings = RuntimeSettings(
        n_ctx=target.n_ctx,
        n_gpu_layers=_draft_gpu_layers(spec, target),
        n_threads=ts.n_threads,
        flash_attn=ts.flash_attn,
        type_k=KV_CACHE_TYPES["f16"],
        type_v=KV_CACHE_TYPES["f16"],
        n_seq_max=ts.n_seq_max,
        n_batch=ts.n_batch,
    )
    return DraftModel(LoadedModel(path, settings), target.n_vocab)


def make_speculators(
    profile: Profile, target: LoadedModel, n_slots: int, slot_context: int
) -> tuple[list[SlotSpeculator], DraftModel | None]:
    """One speculator per slot for ``profile.speculative.mode`` (lookup or draft), and the draft
    model they share (None for lookup)."""
    spec = profile.speculative
    costs = SpecCosts()
    if spec.mode == "lookup":
        return [SlotSpeculator(spec, LookupDrafter(spec.ngram), costs) for _ in range(n_slots)], None
    if spec.mode == "draft":
        shared = load_draft_model(profile, target, slot_context)
        return [SlotSpeculator(spec, ModelDrafter(shared, seq), costs) for seq in range(n_slots)], shared
    raise EngineError(f"Unknown speculative mode '{spec.mode}'; allowed values are off, draft, lookup.")
