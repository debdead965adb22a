"""Slots, and the plan of one decode step. No model, so it is unit-tested alone.

A slot is one sequence of the scheduler's llama.cpp context, as a ``server_slot`` is in
llama-server: it remembers exactly which tokens its KV cells hold, the request it serves, and
(when it generates) the token it sampled last and the drafts to verify with it.

Planning decides, before each ``llama_decode`` (vLLM's ``schedule()``; applying the step's
outputs is the scheduler's ``update`` half):

* ``admit``: which waiting requests take which free slots. Between owners (the server's API
  keys) admission goes round by round: the next free slot goes to the owner holding the fewest
  slots, ties to the one admitted least recently (then to the oldest request); an owner at its
  ``max_parallel`` waits. One owner's requests (and requests without an owner) are admitted in
  the order they came. A request goes to the free slot that reuses the most of its prompt (its
  own cells, or the longest prefix any slot holds, copied); of those alike, one that loses no
  cells or whose cells the prompt goes on from, else the least recently used (``choose_slot``).
  Its prompt first takes the tokens a slot's cells hold for the same text (``aligned_prompt``: a
  reply as it was generated).
* ``settle_prefix``: which KV cells a new request reuses — its slot's own prefix, or a copy of
  a longer prefix from another slot (``llama_memory_seq_cp``, no recompute), or it waits a step
  for a slot admitted before it that is prefilling the same prefix right now (the map phase of a
  summary submits every chunk at once; they share the instruction, so it is computed once).
* ``plan_step``: which tokens go into the batch. Every generating slot puts its sampled token
  and its drafts (logits at each); then prompt chunks fill what is left of the batch, in the
  order requests came.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy

from workstation.core.events import CancelFlag, SchedulerEvent
from workstation.core.profiles import Constraints, Sampling

MIN_SHARED_WAIT = 16  # wait for another slot's prefill only when it would share this many tokens
MIN_MOVED_RUN = 64  # cached cells found again further on in a prompt are moved there in runs this long


@dataclass(frozen=True)
class Owner:
    """Who a request is for (an API key's name), for fair admission: ``max_parallel`` caps the
    slots its requests hold at once (0: no cap)."""

    name: str
    max_parallel: int = 0


@dataclass(eq=False)
class Request:
    prompt: list[int]  # (with the tokens a slot's cells hold for a reply's text: ``aligned_prompt``)
    sampling: Sampling
    sink: Callable[[SchedulerEvent], None]
    max_tokens: int
    ignore_eos: bool = False
    stop: list[str] = field(default_factory=list)
    t_request: float = field(default_factory=time.perf_counter)
    id: int = 0
    # the caller's cancel flag: an engine's Esc, shared by every request of that engine
    cancelled: CancelFlag = field(default_factory=threading.Event)
    dropped: bool = False  # this request alone is cancelled (its client went away)
    owner: Owner | None = None  # None: one shared line, first come first served
    constraints: Constraints = field(default_factory=Constraints)  # grammar, logit bias, n_probs
    grammar: Any = None  # constraints.grammar compiled at submit (core/grammar.py), until started
    id_slot: int = -1  # the slot it must run in (-1: any); ``admit`` sets the one it got
    tag: str | None = None  # whose cells these become (a saved conversation): kept with a saved state
    reasoning: bool = False  # a reply's thinking streams apart from its answer (core/reasoning.py)
    # False (llama-server's cache_prompt): the whole prompt is read again, nothing reused, so
    # a temperature-0 reply does not depend on what the slots held before
    cache_prompt: bool = True
    reading: bool = False  # how far the prompt has been read is told after each part (events.PromptRead)
    asked_n: int = 0  # the prompt's tokens as its text reads, before ``aligned_prompt`` (a client's usage)

    def cancel(self) -> None:
        """Cancel this request only (not others that share its ``cancelled`` flag)."""
        self.dropped = True

    def is_cancelled(self) -> bool:
        return self.dropped or self.cancelled.is_set()

    def discard(self) -> None:
        """It leaves without ever starting: free what was compiled for it."""
        if self.grammar is not None:
            self.grammar.close()


@dataclass(eq=False)
class Slot:
    seq: int
    tokens: list[int] = field(default_factory=list)  # exactly what this sequence's KV cells hold
    req: Request | None = None
    prefilling: bool = False
    fresh: bool = False  # admitted; which cached cells it reuses is not settled yet
    restoring: Any = None  # a saved state being read for it (prompt_cache.PendingRestore)
    pending: int = -1  # sampled, not yet decoded
    drafts: list[int] = field(default_factory=list)  # to verify with ``pending`` this step
    last_used: float = 0.0
    spec: Any = None  # the slot's SlotSpeculator (speculative profiles), kept across turns
    run: Any = None  # the scheduler's state for the current request (sampler, text, metrics)
    owner: str | None = None  # whose request it was given last (``admit``'s memory of turns)
    turn: int = 0  # when: admissions are numbered 1, 2, ... across the slots
    tag: str | None = None  # whose cells ``tokens`` are (the tag of the request that made them)
    prompt_n: int = 0  # how many of ``tokens`` that request's prompt was (the rest its reply)
    worth: int | None = None  # how many of ``tokens`` are worth saving (None: all; the scheduler's rule)
    # whose requests wrote or read ``tokens``, in runs from the start: (the API keys' names, None for
    # a request without a person's key; how many cells); none: read back from a saved state. Cells
    # past the runs are ``writer``'s (the request that ran last). A key is told it reused only cells
    # its own requests wrote or read (``own_cells``): desk2 saw "reused 53 of 54" right after desk1
    # sent the same words
    writers: list[tuple[frozenset[str | None], int]] = field(default_factory=list)
    writer: str | None = None
    reused_n: int = 0  # the cells the current request reuses, its own or not (its metrics say its own)

    @property
    def generating(self) -> bool:
        return self.req is not None and not self.prefilling


Writers = list[tuple[frozenset[str | None], int]]
NOBODY_KNOWN: frozenset[str | None] = frozenset()  # cells read back from a saved state: whose, not known


def owners_unknown(slot: Slot) -> None:
    """The slot's cells came from elsewhere than a request (a slot file read back, or none left):
    whose they are is not known, so no key is told it reused them (``own_cells``). The last request's
    key was told a slot file's cells as its own."""
    slot.writers = [(NOBODY_KNOWN, len(slot.tokens))] if slot.tokens else []
    slot.writer = None


def cell_writers(slot: Slot, n: int | None = None) -> Writers:
    """Who wrote or read the slot's first ``n`` cells (all: its ``tokens``), in runs (``Slot.writers``)."""
    n = len(slot.tokens) if n is None else min(n, len(slot.tokens))
    rest = len(slot.tokens) - sum(k for _, k in slot.writers)
    return cut_runs([*slot.writers, (frozenset({slot.writer}), rest)], n)


def cut_runs(runs: Sequence[tuple[frozenset[str | None], int]], n: int) -> Writers:
    """The first ``n`` cells of ``runs``, runs of the same people joined."""
    out: Writers = []
    for who, k in runs:
        k = min(k, n - sum(m for _, m in out))
        if k <= 0:
            continue
        if out and out[-1][0] == who:
            out[-1] = (who, out[-1][1] + k)
        else:
            out.append((who, k))
    return out


def known_prefix(writers: Sequence[tuple[frozenset[str | None], int]], who: str | None) -> int:
    """How many cells from the start ``who``'s own requests wrote or read, in one stretch."""
    n = 0
    for w, k in writers:
        if who not in w:
            break
        n += k
    return n


def with_known(writers: Sequence[tuple[frozenset[str | None], int]], who: str | None, n: int) -> Writers:
    """``writers`` with ``who`` among the people of the first ``n`` cells: it read the same tokens in
    another slot (bob's repeat went to ann's slot, where the words were ann's: told 0 reused, though
    bob had read them in his own slot just before)."""
    out: Writers = []
    at = 0
    for w, k in writers:
        inside = max(0, min(k, n - at))
        if inside:
            out.append((w | {who}, inside))
        if k - inside:
            out.append((w, k - inside))
        at += k
    return cut_runs(out, at)


def own_cells(writers: Sequence[tuple[frozenset[str | None], int]], who: str | None) -> int:
    """Of the cells ``writers`` covers, how many a request of ``who`` may be told it reused: all for
    no person's key (None); else those its own requests wrote or read. Another key's are still
    reused (for speed) but told as read: a key learns nothing of what another sent."""
    return sum(k for _, k in writers) if who is None else sum(k for w, k in writers if who in w)


def common_prefix(a: Sequence[int], b: Sequence[int], limit: int | None = None) -> int:
    """Length of the common prefix of ``a`` and ``b`` (at most ``limit``)."""
    m = min(len(a), len(b))
    if limit is not None:
        m = min(m, max(0, limit))
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


def aligned_prompt(cells: Sequence[int], prompt: list[int], piece: Callable[[int], bytes],
                   most: int | None = None) -> list[int]:
    """``prompt`` with the tokens ``cells`` hold where both spell the same text: a reply comes
    back as text, and its text tokenized again need not give the tokens it was generated as
    (SmolLM2 wrote " Abon" as " Ab" "on", which read again is " A" "bon"), so the cells of a
    reply matched up to its first such token and the rest of it was read again (a third turn
    said "cache 72/191": the reply before it not kept). llama-cli keeps the generated tokens
    themselves; so does this, from the cells: the prompt then holds the tokens the model wrote,
    the ones it read them as. Text only: ``piece`` (a token's text, empty for a control token)
    stops the match at any control token, which must be the same token to be kept. The tokens
    a reply was generated as are often more than its text read again: with ``most`` (the prompt
    tokens a slot holds) a prompt is never taken longer than that (one that fitted its context
    by a few tokens failed "The context is full" once it took a long reply's cells)."""
    out = prompt
    n = common_prefix(cells, out)
    while n < len(cells) and n < len(out) - 1:
        a = b = n
        cell_bytes = prompt_bytes = b""
        same = 0  # bytes alike in both so far
        best = n, n
        while True:
            if len(cell_bytes) <= len(prompt_bytes) and a < len(cells):
                part = piece(cells[a])
                cell_bytes += part
                a += 1
            elif b < len(out) and len(prompt_bytes) < len(cell_bytes):
                part = piece(out[b])
                prompt_bytes += part
                b += 1
            else:
                break
            if not part:
                break  # a control token: never stood for by text
            m = min(len(cell_bytes), len(prompt_bytes))
            if cell_bytes[same:m] != prompt_bytes[same:m]:
                break
            same = m
            if len(cell_bytes) == len(prompt_bytes):
                best = a, b
        a, b = best
        if a == n or (most is not None and len(out) + (a - n) - (b - n) > most):
            break
        if out is prompt:
            out = list(prompt)
        out[n:b] = cells[n:a]
        n = a + common_prefix(cells[a:], out[a:])
    return out


def choose_slot(slots: Sequence[Slot], free: Sequence[Slot], prompt: Sequence[int]) -> Slot:
    """The free slot for ``prompt``: the one that reuses the most of it, its own cells (their
    prefix, and cells further on that ``moved_runs`` moves) or a prefix copied from another slot
    (``settle_prefix``); of those alike, one that loses no cells, then one whose cells the prompt
    goes on from (it keeps at least as many as it loses: a conversation's next turn, a reply asked
    again), then the least recently used (it loses its cache), as llama-server picks a slot by how
    much of the prompt it holds and else the least recently used. Several people's conversations
    and documents begin with the same instructions: the longest prefix alone sent each to the slot
    of the one before, whose cells it wrote over, and with two conversations in two slots every
    turn was read again from the instructions on (18 of 932 tokens cached); a slot's own cells
    preferred to a copy of them sent alice's document into bob's slot for the 44 tokens of
    instructions both shared, though a staler slot was free, and bob's same document asked again
    was read again (44 cached of ~520). A copy is as good as the cells themselves: the prefix any
    slot holds every free slot can copy (``llama_memory_seq_cp``, no recompute)."""
    limit = len(prompt) - 1
    prefix = {id(s): common_prefix(s.tokens, prompt, limit) for s in slots}

    def rank(slot: Slot) -> tuple[int, bool, bool, float]:
        mine = prefix[id(slot)]
        mine += sum(run[2] for run in moved_runs(slot.tokens, prompt, mine))
        copied = max((n for key, n in prefix.items() if key != id(slot)), default=0)
        kept = mine if mine >= copied else 0  # (alike: its own are kept, as ``settle_prefix`` keeps them)
        lost = len(slot.tokens) - kept
        return max(mine, copied), lost == 0, 0 < kept >= lost, -slot.last_used

    return max(free, key=rank)


def queue_victim(waiting: Sequence[Request], owner: Owner | None) -> Request | None:
    """When the queue is full and ``owner`` asks for a place: the request that gives way to it,
    the newest of the person holding the most places (at least two more than ``owner`` holds;
    the longest-queue-drop rule), so one person's backlog never shuts another out. None: the
    new request is refused instead (no owners, or nobody holds more than their share)."""
    if owner is None:
        return None
    held = collections.Counter(r.owner.name for r in waiting if r.owner is not None)
    if not held:
        return None
    top, n = max(held.items(), key=lambda item: item[1])
    if top == owner.name or n < held.get(owner.name, 0) + 2:
        return None
    return next(r for r in reversed(waiting) if r.owner is not None and r.owner.name == top)


def admit(slots: Sequence[Slot], waiting: collections.deque[Request],
          piece: Callable[[int], bytes] | None = None, most: int | None = None) -> tuple[list[Slot], list[Request]]:
    """Pair waiting requests with free slots, round by round between owners (see the module's
    docstring); with ``piece`` (a token's text) a prompt that reuses cells first takes the
    tokens the slot whose cells it matches most holds for its text (``aligned_prompt``, no longer
    than ``most`` tokens). Returns (slots now serving a new request, cancelled requests dropped from the
    queue). Mutates slots and ``waiting``; the requests left keep their order."""
    admitted: list[Slot] = []
    dropped: list[Request] = []
    free = [s for s in slots if s.req is None]
    if not free or not waiting:
        return admitted, dropped
    if any(r.is_cancelled() for r in waiting):
        dropped = [r for r in waiting if r.is_cancelled()]
        kept = [r for r in waiting if not r.is_cancelled()]
        waiting.clear()
        waiting.extend(kept)
    held: dict[str | None, int] = collections.Counter(_owner_name(s.req) for s in slots if s.req is not None)
    last_turn: dict[str | None, int] = {}
    for s in slots:
        if s.turn > last_turn.get(s.owner, 0):
            last_turn[s.owner] = s.turn
    turn = max((s.turn for s in slots), default=0)
    while free and waiting:
        req = _next_turn(waiting, held, last_turn, {s.seq for s in free})
        if req is None:  # every owner left waiting is at its cap (or waits for a busy slot)
            break
        waiting.remove(req)
        name = _owner_name(req)
        held[name] = held.get(name, 0) + 1
        turn += 1
        last_turn[name] = turn
        if piece is not None and req.cache_prompt:
            limit, best = len(req.prompt) - 1, 0
            for other in slots if req.id_slot < 0 else [s for s in free if s.seq == req.id_slot]:
                prompt = aligned_prompt(other.tokens, req.prompt, piece, most)
                gain = common_prefix(other.tokens, prompt, limit) - common_prefix(other.tokens, req.prompt, limit)
                if gain > best:
                    req.prompt, best = prompt, gain
        if req.id_slot >= 0:
            slot = next(s for s in free if s.seq == req.id_slot)
        else:
            slot = choose_slot(slots, free, req.prompt)
        req.id_slot = slot.seq
        free.remove(slot)
        slot.req = req
        slot.owner = name
        slot.turn = turn
        slot.prefilling = True
        slot.fresh = True
        slot.pending = -1
        slot.drafts = []
        admitted.append(slot)
    return admitted, dropped


def _owner_name(req: Request) -> str | None:
    return req.owner.name if req.owner is not None else None


def _next_turn(
    waiting: Sequence[Request], held: dict[str | None, int], last_turn: dict[str | None, int], free: set[int]
) -> Request | None:
    """The oldest waiting request of the owner whose turn it is: the fewest slots held, then
    the least recently admitted, then the oldest waiting request; owners at their
    ``max_parallel`` are skipped, and so are requests waiting for a slot that is not free."""
    best: Request | None = None
    best_key = (0, 0)
    seen: set[str | None] = set()
    for req in waiting:  # oldest first, so each owner's first request is its oldest
        if req.id_slot >= 0 and req.id_slot not in free:
            continue
        name = _owner_name(req)
        if name in seen:
            continue
        seen.add(name)
        n = held.get(name, 0)
        cap = req.owner.max_parallel if req.owner is not None else 0
        if cap and n >= cap:
            continue
        key = (n, last_turn.get(name, 0))
        if best is None or key < best_key:
            best, best_key = req, key
    return best


@dataclass
class PrefixAction:
    """What to do with a fresh slot's cells before it prefills."""

    slot: Slot
    keep: int  # cells of the slot's own cache kept (the rest are removed)
    copy_from: Slot | None = None  # instead: the first ``keep`` cells are copied from this slot


def settle_prefix(slot: Slot, slots: Sequence[Slot]) -> PrefixAction | None:
    """How a fresh slot reuses cached cells; None: wait a step, a slot admitted earlier is
    prefilling at least ``MIN_SHARED_WAIT`` more tokens of the same prefix right now."""
    assert slot.req is not None
    prompt = slot.req.prompt
    limit = len(prompt) - 1  # at least one token is evaluated for the first logits
    own = common_prefix(slot.tokens, prompt, limit)
    src, n_src = None, own
    for other in slots:
        if other is not slot:
            n = common_prefix(other.tokens, prompt, limit)
            if n > n_src:
                src, n_src = other, n
    for other in slots:
        if other is slot or other.req is None or not other.prefilling or other.req.id > slot.req.id:
            continue
        if common_prefix(other.req.prompt, prompt, limit) >= n_src + MIN_SHARED_WAIT:
            return None
    return PrefixAction(slot, n_src, src)


def moved_runs(cached: Sequence[int], prompt: Sequence[int], start: int,
               min_run: int = MIN_MOVED_RUN) -> list[tuple[int, int, int]]:
    """Runs of cached cells past a shared prefix of ``start`` tokens that the prompt holds again,
    nearer its start: (where in the cells, where in the prompt, how many), the prompt's runs
    back to back from ``start``. A conversation past its context leaves out its oldest messages:
    the prompt then differs from the cells just after the instructions, and everything after
    was read again (25.7 s before the first word, with 32 of 2,301 tokens from the cache). Its
    cells are moved instead, as llama.cpp's context shift and llama-server's cache reuse
    (``--cache-reuse``, with its search) do; like theirs, the moved cells were computed with
    the left-out messages before them. At least one prompt token is left to read.

    Each run is the first place in the cells (from the end of the run before) that holds the
    prompt's next ``min_run`` tokens, then as far as both go on alike. The search is
    ``bytes.find`` over the tokens written as bytes (``_token_bytes``), so a 32K-token cache
    costs a few milliseconds on the scheduler's thread whatever it holds (``bench/moved_runs.py``:
    the cell-by-cell search before took 0.3 to 0.6 s for a cache of one token repeated)."""
    runs: list[tuple[int, int, int]] = []
    need = max(1, min_run)
    limit = len(prompt) - 1
    head_c = head_p = start
    if head_p + need > limit or head_c + need > len(cached):
        return runs
    cells = numpy.asarray(cached, dtype=numpy.int64)
    wanted = numpy.asarray(prompt[:limit], dtype=numpy.int64)
    (cells_b, cells_exact), (wanted_b, wanted_exact) = _token_bytes(cells), _token_bytes(wanted)
    while head_p + need <= limit and head_c + need <= len(cells):
        at = cells_b.find(wanted_b[head_p * 4:(head_p + need) * 4], head_c * 4)
        if at < 0:
            break
        at //= 4  # every match starts at a token's first byte (``_token_bytes``)
        if not (cells_exact and wanted_exact) and (cells[at:at + need] != wanted[head_p:head_p + need]).any():
            head_c = at + 1  # ids past 2**28 were written alike
            continue
        head_c, n = at, need
        if head_c + n < len(cells) and head_p + n < limit and cached[head_c + n] == prompt[head_p + n]:
            n += _same_run(cells[head_c + n:], wanted[head_p + n:])  # a run longer than ``need``
        runs.append((head_c, head_p, n))
        head_c += n
        head_p += n
    return runs


_ID_BITS = 28  # token ids written exactly by ``_token_bytes`` (the largest vocabularies hold 2**18)


def _token_bytes(tokens: numpy.ndarray) -> tuple[bytes, bool]:
    """``tokens`` as bytes that a search finds only at a token's start: four bytes of seven bits
    each, the first marked with the high bit, which no other byte has. Ids below zero or past
    ``_ID_BITS`` bits are written as the largest id (False: some were)."""
    top = (1 << _ID_BITS) - 1
    exact = not len(tokens) or (int(tokens.min()) >= 0 and int(tokens.max()) <= top)
    ids = (tokens if exact else numpy.clip(tokens, 0, top)).astype(numpy.uint32)
    codes = (0x80 | (ids >> 21)) | ((ids >> 14) & 0x7F) << 8 | ((ids >> 7) & 0x7F) << 16 | (ids & 0x7F) << 24
    return codes.astype("<u4", copy=False).tobytes(), exact


def _same_run(a: numpy.ndarray, b: numpy.ndarray) -> int:
    """How many leading tokens ``a`` and ``b`` share, compared in growing pieces, so a short
    run costs little however long the arrays are."""
    m = min(len(a), len(b))
    done, piece = 0, 64
    while done < m:
        end = min(m, done + piece)
        differ = a[done:end] != b[done:end]
        first = int(differ.argmax())
        if differ[first]:
            return done + first
        done, piece = end, piece * 2
    return m


@dataclass
class BatchEntry:
    slot: Slot
    tokens: list[int]
    pos: int  # position of tokens[0] in the slot's sequence
    all_logits: bool  # generating: logits at every token (the sampled one and each draft)
    ends_prompt: bool  # prefill: this chunk ends the prompt, logits at its last token


@dataclass
class StepPlan:
    entries: list[BatchEntry] = field(default_factory=list)
    n_tokens: int = 0

    @property
    def has_prefill(self) -> bool:
        return any(not e.all_logits for e in self.entries)

    @property
    def n_generating(self) -> int:
        return sum(1 for e in self.entries if e.all_logits)

    @property
    def n_drafts(self) -> int:
        return sum(len(e.tokens) - 1 for e in self.entries if e.all_logits)


def plan_step(slots: Sequence[Slot], capacity: int) -> StepPlan:
    """The next batch: generating slots first (drafts cut to fit), then prompt chunks."""
    plan = StepPlan()
    for slot in slots:
        if slot.generating:
            room = capacity - plan.n_tokens - 1
            if room < 0:
                break
            del slot.drafts[room:]
            tokens = [slot.pending, *slot.drafts]
            plan.entries.append(BatchEntry(slot, tokens, len(slot.tokens), True, False))
            plan.n_tokens += len(tokens)
    prefilling = [s for s in slots if s.req is not None and s.prefilling and not s.fresh]
    for slot in sorted(prefilling, key=lambda s: s.req.id if s.req else 0):
        budget = capacity - plan.n_tokens
        if budget <= 0:
            break
        assert slot.req is not None
        todo = slot.req.prompt[len(slot.tokens) :]
        chunk = todo[:budget]
        plan.entries.append(BatchEntry(slot, chunk, len(slot.tokens), False, len(chunk) == len(todo)))
        plan.n_tokens += len(chunk)
    return plan
