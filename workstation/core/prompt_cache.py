"""The prompt cache: which cells a fresh slot reuses (its own prefix, another slot's copied, its
own cells moved back where a shorter prompt has them), and the saved KV states on disk
(``core/kv_state.py``): a slot's cells saved when another prompt takes the slot or the
scheduler closes, restored into a fresh slot that shares more of its prompt than any slot's
cells do, and forgotten with their conversation."""

from __future__ import annotations

import concurrent.futures
import logging
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from workstation.core.kv_state import (
    MIN_RESTORE_TOKENS,
    NOT_KEPT,
    KvStateError,
    KvStateStore,
    NotSaved,
    SavedState,
    StateBytes,
    read_sequence,
    same_conversation,
    write_sequence,
)
from workstation.core.phrases import log_said
from workstation.core.slots import (
    NOBODY_KNOWN,
    PrefixAction,
    Slot,
    aligned_prompt,
    cell_writers,
    common_prefix,
    cut_runs,
    known_prefix,
    moved_runs,
    own_cells,
    settle_prefix,
    with_known,
)

if TYPE_CHECKING:
    from workstation.core.scheduler import Scheduler

log = logging.getLogger(__name__)


MAX_FORGOTTEN = 4096  # deleted conversations' tags kept so their cells are never saved again


@dataclass
class PendingRestore:
    """A saved state being read and checked by the reader thread for a fresh slot."""

    entry: SavedState
    n: int  # the prompt's tokens it holds
    data: Future[bytearray]
    runs: list[tuple[int, int, int]] = field(default_factory=list)  # of its cells, to move (``moved_runs``)


class PromptCache:
    """The scheduler's cells between requests: ``_settle`` (in each step's **plan**) applies a
    fresh slot's reuse and restores a saved state; a slot's cells are saved when another prompt
    takes it (``_save_slot``) and at close (``save_states``). A part of ``Scheduler``: the
    slots, the model, the store (``kv_store``, ``state_key``) and the reader and writer threads
    are the Scheduler's, set in its ``__init__``."""

    def forget(self: Scheduler, tag: str) -> int:
        """A conversation was deleted: drop the idle slots' cells made for ``tag`` (they would
        be saved at close), never save cells of that tag again, and delete its saved states:
        the files deleted."""

        def drop() -> None:
            if len(self._forgotten) >= MAX_FORGOTTEN:  # bounded: a tag is one deleted conversation
                self._forgotten.pop()
            self._forgotten.add(tag)
            for slot in self.slots:
                if slot.tag == tag and slot.req is None:
                    self.model.seq_rm(slot.seq, -1, -1)
                    slot.tokens = []
                    slot.tag = None
                    if slot.spec is not None:
                        slot.spec.forget()

        self.between_steps(drop).result()  # on the decoding thread: it owns the slots
        self.between_steps(self._wait_for_writes).result()  # a state of it may be on its way to disk
        return self.kv_store.forget(tag) if self.kv_store is not None else 0

    def claim(self: Scheduler, tag: str, prompt: list[int]) -> int:
        """The idle cells that begin with ``prompt`` and belong to nobody (a document just
        summarized) now belong to ``tag`` (the conversation made of it): saved with it, deleted
        with it. The slots claimed."""

        def take() -> int:
            n = 0
            for slot in self.slots:
                if slot.req is None and slot.tag is None and prompt and slot.tokens[: len(prompt)] == prompt:
                    slot.tag = tag
                    slot.worth = None  # a conversation's cells: kept as a whole
                    n += 1
            return n

        return self.between_steps(take).result()

    def _settle(self: Scheduler) -> None:
        """Apply the cell reuse of fresh slots (oldest request first). A saved state on disk is
        read and checked by a reader thread: the other slots go on decoding meanwhile, and the
        slot settles when its state is in memory (at once when no other slot has work)."""
        model = self.model
        sources: set[int] = set()  # slots copied from in this pass: llama.cpp copies at the next decode
        for slot in sorted((s for s in self.slots if s.fresh), key=lambda s: s.req.id if s.req else 0):
            reuse = slot.req is None or slot.req.cache_prompt
            action = settle_prefix(slot, self.slots) if reuse else PrefixAction(slot, keep=0)
            if action is None:
                continue  # a slot admitted earlier is prefilling the same prefix: wait for it
            runs = self._runs_to_move(slot, action) if reuse else []
            kept = action.keep + sum(n for _, _, n in runs)  # the cells this prompt reuses in memory
            if self.kv_store is not None and slot.restoring is None:
                worth = self._worth(slot)
                # the same conversation's next turn (its oldest messages left out, a reply asked
                # again) is no other one: the state it saves later supersedes this one, which
                # was copied out and written (tens of MiB) on every turn that left more out
                going_on = slot.tag is not None and slot.req is not None and slot.req.tag == slot.tag
                if (worth - kept >= MIN_RESTORE_TOKENS and worth >= self.min_save_tokens and not going_on
                        and (worth == len(slot.tokens) or slot.seq not in sources)):
                    if self._save_slot(slot, worth):  # another conversation takes the slot: keep this one on disk
                        # (its cells past ``worth`` were dropped with it: the runs found before may be gone)
                        runs = self._runs_to_move(slot, action) if reuse else []
                        kept = action.keep + sum(n for _, _, n in runs)
                slot.restoring = self._start_restore(slot, kept) if reuse else None
            slot.tag = slot.req.tag if slot.req is not None else None  # its cells are the new request's now
            slot.prompt_n = len(slot.req.prompt) if slot.req is not None else 0
            slot.worth = (slot.run.seen_n if self.save_when_reused and slot.req is not None and slot.tag is None
                          else None)
            pending = slot.restoring
            if pending is not None and not pending.data.done() and self._others_have_work(slot):
                continue  # the others decode while the file is read
            if pending is not None and slot.seq in sources:
                continue  # restoring now would overwrite the cells another slot is copying
            slot.restoring = None
            slot.fresh = False
            before = cell_writers(slot)
            copied = cell_writers(action.copy_from) if action.copy_from is not None else []
            restored = self._restore(slot, pending, kept) if pending is not None else 0
            if restored:
                pass  # the slot's cells are now a saved state's prefix, longer than any slot's
            elif runs:
                self._move_cells(slot, action.keep, runs)
            elif action.copy_from is not None:
                # each sequence has its own KV stream: llama.cpp copies a whole stream (at the
                # next decode), then the cells past the shared prefix are dropped
                model.seq_rm(slot.seq, -1, -1)
                model.seq_cp(action.copy_from.seq, slot.seq, -1, -1)
                sources.add(action.copy_from.seq)
                model.seq_rm(slot.seq, action.keep, -1)
                slot.tokens = action.copy_from.tokens[: action.keep]
            elif action.keep < len(slot.tokens):
                keep = action.keep
                if not model.seq_rm(slot.seq, keep, -1):
                    model.seq_rm(slot.seq, -1, -1)
                    keep = 0
                del slot.tokens[keep:]
            if restored:
                writers = [(NOBODY_KNOWN, len(slot.tokens))]
            elif runs:  # the slot's own cells moved back: the people who had them all, where they are moved
                moved = frozenset.intersection(*(w for w, _ in before)) if before else NOBODY_KNOWN
                writers = cut_runs([*cut_runs(before, action.keep), (moved, len(slot.tokens))], len(slot.tokens))
            else:  # a prefix kept, of its own cells or copied from another slot's
                writers = cut_runs(copied if action.copy_from is not None else before, len(slot.tokens))
            slot.writer = slot.req.owner.name if slot.req is not None and slot.req.owner is not None else None
            if slot.writer is not None and slot.tokens:  # the same words known from another slot it read them in
                known = max((known_prefix(cell_writers(other, common_prefix(other.tokens, slot.tokens)), slot.writer)
                             for other in self.slots if other is not slot), default=0)
                writers = with_known(writers, slot.writer, known)
            slot.run.metrics.cache_n = own_cells(writers, slot.writer)
            # the cells reused are this request's prompt: its key knows them from now on
            slot.writers = cut_runs([(w | {slot.writer}, k) for w, k in writers], len(slot.tokens))
            slot.reused_n = len(slot.tokens)
            slot.run.metrics.restored_n = min(restored, slot.run.metrics.cache_n)
            if slot.worth is not None:  # cells reused from a slot or a file: an earlier request's too
                slot.worth = max(slot.worth, len(slot.tokens))
            self.stats.cached_tokens_total += len(slot.tokens)

    def _runs_to_move(self: Scheduler, slot: Slot, action: PrefixAction) -> list[tuple[int, int, int]]:
        """The slot's own cells past the shared prefix that its prompt holds again nearer its
        start (``moved_runs``: a conversation whose oldest messages were left out)."""
        if action.copy_from is not None or slot.req is None or len(slot.tokens) <= action.keep:
            return []
        runs = moved_runs(slot.tokens, slot.req.prompt, action.keep)
        return runs if runs and self.model.can_shift else []

    def _move_cells(self: Scheduler, slot: Slot, keep: int, runs: list[tuple[int, int, int]]) -> None:
        """Move ``runs`` of the slot's cells back to where its prompt has them (llama-server's
        cache reuse), and drop every other cell past ``keep``."""
        slot.tokens = self.model.move_cells(slot.seq, slot.tokens, keep, runs)
        log.debug("moved %d cached tokens of slot %d in %d runs", len(slot.tokens) - keep, slot.seq, len(runs))

    def _others_have_work(self: Scheduler, slot: Slot) -> bool:
        return any(s is not slot and s.req is not None and not s.fresh for s in self.slots)

    def _aligned_to_saved(self: Scheduler, prompt: list[int], tag: str) -> list[int]:
        """``prompt`` with the tokens a saved state of its conversation holds for the same text
        (``aligned_prompt``, as ``admit`` does with the slots' cells): the state saved at a
        close or a profile switch ends with a reply as it was generated, which its text read
        again need not give, and the restore then stopped at its first such token."""
        assert self.kv_store is not None
        best, gain = prompt, 0
        for entry in self.kv_store.entries(self.state_key):
            if entry.tag is None or not same_conversation(entry.tag, tag):
                continue
            aligned = aligned_prompt(entry.tokens, prompt, self.model.piece, self.slot_ctx - 1)
            more = common_prefix(entry.tokens, aligned) - common_prefix(entry.tokens, prompt)
            if more > gain:
                best, gain = aligned, more
        return best

    def _start_restore(self: Scheduler, slot: Slot, in_memory: int) -> PendingRestore | None:
        """Start reading the saved state that shares more of the prompt than any slot's cells
        do (None: there is none)."""
        assert self.kv_store is not None and slot.req is not None
        moved = slot.req.tag if self.model.can_shift else None  # (its own states: cells moved as in memory)
        found = self.kv_store.best(self.state_key, slot.req.prompt, in_memory + MIN_RESTORE_TOKENS, moved)
        if found is None:
            return None
        if self._reader is None:
            self._reader = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kv-reader")
        entry, n, runs = found
        return PendingRestore(entry, n, self._reader.submit(self.kv_store.load, self.state_key, entry), runs)

    def _restore(self: Scheduler, slot: Slot, pending: PendingRestore, in_memory: int) -> int:
        """Load a saved state read by ``_start_restore`` into the slot, when it still shares more
        of the prompt than the slots' cells do; the tokens restored (0: none, or a file that could
        not be used)."""
        entry, n, runs = pending.entry, pending.n, pending.runs
        if n <= in_memory + MIN_RESTORE_TOKENS:
            return 0  # while it was read, another slot came to hold as much: copy that instead
        try:
            data = pending.data.result()
        except KvStateError as err:  # the slot's own cells are untouched
            log_said(log, [("kv.ignored", {"why": err.said or [("file.os_says", {"reason": str(err)})]})])
            return 0
        if not write_sequence(self.model, slot.seq, data):  # the sequence is empty now
            log_said(log, [("kv.refused", {"file": entry.path.name})])
            slot.tokens = []
            return 0
        held = len(entry.tokens) if runs else n  # (runs: its cells past the prefix are moved, not cut)
        self.model.seq_rm(slot.seq, held, -1)
        if self.model.seq_pos_max(slot.seq) + 1 != held:  # not what the file said it held
            log_said(log, [("kv.other_cells", {"file": entry.path.name})])
            self.model.seq_rm(slot.seq, -1, -1)
            slot.tokens = []
            return 0
        assert self.kv_store is not None
        self.kv_store.restored(entry)
        if runs:  # the oldest messages left out since it was saved: its kept cells go where the prompt has them
            slot.tokens = self.model.move_cells(slot.seq, list(entry.tokens), n - sum(run[2] for run in runs), runs)
        else:
            slot.tokens = entry.tokens[:n]
        if slot.spec is not None:
            slot.spec.forget()
        return n

    def save_states(self: Scheduler) -> int:
        """Save every idle slot's cells to the store (leaving a conversation, closing) and wait
        until the files are written: states saved."""
        if self.kv_store is None:
            return 0
        saved = 0
        for slot in self.slots:
            worth = self._worth(slot)
            if slot.req is None and worth >= self.min_save_tokens:
                saved += self._save_slot(slot, worth)
        self._wait_for_writes()
        return saved

    @staticmethod
    def _worth(slot: Slot) -> int:
        """How many of the slot's cells are worth saving (``Slot.worth``)."""
        return len(slot.tokens) if slot.worth is None else min(slot.worth, len(slot.tokens))

    def _save_slot(self: Scheduler, slot: Slot, n: int) -> bool:
        """Copy the slot's first ``n`` cells out (the rest dropped, the slot being left) and have
        the writer thread put them on disk (not when a saved state holds them already)."""
        store = self.kv_store
        assert store is not None
        tokens = slot.tokens[:n]
        if slot.tag == NOT_KEPT or slot.tag in self._forgotten or store.covers(self.state_key, tokens, slot.tag):
            return False
        if n < len(slot.tokens):
            if not self.model.seq_rm(slot.seq, n, -1):  # (a model whose cells cannot be cut: kept whole)
                return False
            del slot.tokens[n:]
        data = read_sequence(self.model, slot.seq)
        if self._writer is None:
            self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kv-writer")
        self._writer.submit(self._write_state, store, tokens, data, slot.tag, slot.prompt_n, self._turn_ends())
        return True

    def _write_state(self: Scheduler, store: KvStateStore, tokens: list[int], data: StateBytes, tag: str | None,
                     prompt_n: int = 0, turn_ends: frozenset[int] = frozenset()) -> None:
        try:
            store.save(self.state_key, tokens, data, tag, prompt_n, turn_ends)
        except (NotSaved, OSError) as err:  # a full disk costs only the speed-up: said once, not at every save
            if err.errno != self._save_problem:
                log_said(log, err.said if isinstance(err, NotSaved) else store.not_saved(err))
            self._save_problem = err.errno
        else:
            self._save_problem = None

    def _turn_ends(self: Scheduler) -> frozenset[int]:
        """The model's end-of-turn tokens (``KvStateStore.superseded``)."""
        return frozenset(int(t) for t in self._eog_tokens())

    def _wait_for_writes(self: Scheduler) -> None:
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
