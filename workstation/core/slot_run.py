"""A slot's run: the state of the request a slot serves now (``SlotRun``), and the scheduler's
part that makes each slot's reply from its logits (``SlotReplies``): sampling, or verifying the
drafts, the text through the detokenizer, the stop strings and the thinking split to the
request's sink, and the limits that finish it with its ``TurnMetrics``."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from workstation.core.detokenizer import StreamDetokenizer
from workstation.core.events import SchedulerEvent, TokenDelta, TurnFinished
from workstation.core.grammar import GrammarStuck
from workstation.core.loops import LoopWatch
from workstation.core.metrics import TurnMetrics
from workstation.core.reasoning import CLOSE, ThinkingSplitter, opens_thinking
from workstation.core.sampling import SamplerChain
from workstation.core.slots import BatchEntry, Request, Slot
from workstation.core.stop_strings import StopMatcher
from workstation.core.token_probs import ReplyProbs

if TYPE_CHECKING:
    from workstation.core.scheduler import Scheduler

log = logging.getLogger(__name__)


@dataclass
class SlotRun:
    """A slot's state for the request it serves now."""

    sampler: SamplerChain
    metrics: TurnMetrics
    stopper: StopMatcher
    detok: StreamDetokenizer = field(default_factory=StreamDetokenizer)
    reply: list[int] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    t_start: float = 0.0  # admitted: its prefill starts
    t_first: float = 0.0  # first token sampled
    t_last: float = 0.0  # last token sampled
    unsent: int = 0  # reply tokens not yet covered by a TokenDelta (held UTF-8 bytes, stop text)
    probs: ReplyProbs | None = None  # the reply tokens' probabilities (Constraints.n_probs > 0)
    thinking: ThinkingSplitter | None = None  # the request's ``reasoning``: thinking apart from the answer
    thought: list[str] = field(default_factory=list)  # the thinking streamed so far
    unpushed: int = 0  # reply tokens whose text has not reached ``thinking`` yet
    start_n: int = 0  # tokens pushed while it was not known yet whether a block opens
    emitted: bool = False  # a TokenDelta went out (time to first token)
    loops: LoopWatch | None = None  # the answer's text, watched for a loop (core/loops.py)
    looped: bool = False  # it began repeating itself: the answer was cut where it did, the reply ends
    seen_n: int = 0  # how many of the prompt's first tokens an earlier prompt had (``save_when_reused``)


def deliver(req: Request, event: SchedulerEvent) -> None:
    """Hand ``event`` to the request's sink; a sink that fails (a client's event loop already
    closed) loses its own events, never the decoding thread."""
    try:
        req.sink(event)
    except Exception as err:  # noqa: BLE001 - one caller's failure must not stop the others
        req.dropped = True
        log.warning("A request's events could not be delivered (%s: %s); it is dropped.", type(err).__name__, err)


class SlotReplies:
    """The **update** of each step (``core/scheduler.py``): each slot's sampled (or verified)
    tokens become its reply's text, streamed as ``TokenDelta``s until a limit finishes it
    (``TurnFinished``). A part of ``Scheduler``: the state it reads (``model``, ``slot_ctx``,
    ``stats``, the thread choice) and the slot's release and failure are the Scheduler's."""

    def _eog_tokens(self: Scheduler) -> np.ndarray:
        if self._eog is None:
            self._eog = np.array(
                [t for t in range(self.model.n_vocab) if self.model.is_eog(t)], dtype=np.int64
            )
        return self._eog

    def _update(self: Scheduler, slot: Slot, idx0: int, entry: BatchEntry, n_drafts: int) -> tuple[int, int]:
        """Sample (or verify the drafts) at ``idx0``..; stream the text; finish at a limit.
        Returns (drafts accepted, tokens produced)."""
        req, run, model = slot.req, slot.run, self.model
        assert req is not None
        constrained = req.constraints.active
        if req.ignore_eos and run.sampler.grammar is None:  # a grammar decides when it may end
            for j in range(n_drafts + 1):
                model.logits(idx0 + j)[self._eog_tokens()] = -np.inf
        if not run.reply and np.isnan(model.logits(idx0)).any():  # once a reply, before its first token
            self._fail(slot, said=[("engine.not_a_number", {})])  # it wrote <unk> to the end, and a reply
            return 0, 0  # of nothing ended well ("exit 0")
        drafts = entry.tokens[1:] if n_drafts else []
        try:
            if slot.spec is not None and not constrained:
                out, n_acc = slot.spec.verify(model, idx0, drafts)
            else:
                out, n_acc = [run.sampler.sample(model.ctx, idx0)], 0
        except GrammarStuck as err:  # the request's own constraints contradict each other: a 400
            self._fail(slot, str(err), status=400)
            return 0, 0
        if n_drafts:
            keep = len(slot.tokens) - n_drafts + n_acc
            model.seq_rm(slot.seq, keep, -1)
            del slot.tokens[keep:]
            run.metrics.draft_n += n_drafts
            run.metrics.draft_n_accepted += n_acc
        now = time.perf_counter()
        if not run.t_first:  # the step that ends the prompt: its time ends once its logits were read (sampled),
            # as llama-server's ends after the context's sync and llama.cpp's own counter ends where logits are read
            # (it ended as llama_decode returned: llama.cpp counted 505 ms of a prompt timed here at 501 ms)
            run.metrics.prompt_ms = (now - run.t_start) * 1000
        self._since_thread_check += len(out)
        for j, tok in enumerate(out):
            if model.is_eog(tok) and (not req.ignore_eos or run.sampler.grammar is not None):
                self._finish(slot, "eos")
                return n_acc, len(out)
            # the reply's tokens' times (an EOS is not one: its step would count one more)
            if not run.t_first:
                run.t_first = now
            run.t_last = now
            run.reply.append(tok)
            run.unsent += 1
            run.unpushed += 1
            text = run.detok.push(model.piece(tok, tok in req.constraints.preserved_tokens))
            if run.probs is not None:  # out[j] was sampled (or verified) at output idx0 + j
                run.probs.record(model.logits(idx0 + j), tok)
                run.probs.decoded(text)
            if text:
                text, stopped = run.stopper.push(text)
                if text:
                    self._emit(slot, text)
                if run.looped:  # its answer's repeats were left out: it ends with its first copy
                    self._finish(slot, "loop", flush=False)
                    return n_acc, len(out)
                if stopped:
                    self._finish(slot, "stop", flush=False)
                    return n_acc, len(out)
            if len(run.reply) >= req.max_tokens:
                self._finish(slot, "length")
                return n_acc, len(out)
        if len(slot.tokens) + 1 >= self.slot_ctx:
            self._finish(slot, "context")
        else:
            slot.pending = out[-1]
        return n_acc, len(out)

    def _opens_thinking(self: Scheduler, req: Request) -> bool:
        """Whether the chat template opened the thinking block at the end of the prompt. Not
        under a grammar that cannot close it (a JSON schema, a tool call): the reply is then
        the answer the grammar makes, never thinking."""
        grammar = req.constraints.grammar
        if grammar and CLOSE not in grammar:
            return False
        return opens_thinking(self.model.detokenize(req.prompt[-16:], special=True))

    @staticmethod
    def _count_thinking(run: SlotRun, before: str, after: str, thought: bool, answer: bool) -> None:
        """``reasoning_n``: the tokens whose text went into the thinking block (its tags too),
        counted as their text is split, whether or not it is sent yet."""
        n, run.unpushed = run.unpushed, 0
        if before == "thinking":
            run.metrics.reasoning_n += n
        elif before == "start":
            run.start_n += n
            if after == "thinking" or thought:
                run.metrics.reasoning_n += run.start_n
            if after != "start" or answer:  # decided, or blank space let out as the answer's
                run.start_n = 0

    def _emit(self: Scheduler, slot: Slot, text: str, last: bool = False) -> None:
        """Stream ``text`` of the reply (``last``: the reply ends; what was held comes out)."""
        req, run = slot.req, slot.run
        assert req is not None
        probs = run.probs.take(text) if run.probs is not None else []
        thought = ""
        split = run.thinking
        if split is not None:
            before = split.phase
            thought, text = split.push(text)
            if last:
                more, tail = split.flush()
                thought, text = thought + more, text + tail
            self._count_thinking(run, before, split.phase, bool(thought), bool(text))
            if before == "thinking":
                run.metrics.reasoning_ms = (time.perf_counter() - (run.t_first or req.t_request)) * 1000
            if not (thought or text or probs):
                return  # held: its tokens go with the next piece
            if thought:
                run.thought.append(thought)
        if not run.emitted:
            run.emitted = True
            run.metrics.ttft_ms = (time.perf_counter() - req.t_request) * 1000
        if text and run.loops is not None and not last:
            text = self._cut_at_loop(run, text)
        if text:
            run.parts.append(text)
        ids = run.reply[len(run.reply) - run.unsent :] if run.unsent else []
        deliver(req, TokenDelta(text, max(1, run.unsent), ids, probs=probs, reasoning=thought))
        run.unsent = 0

    @staticmethod
    def _cut_at_loop(run: SlotRun, text: str) -> str:
        """``text`` of the answer, watched for a loop: where it began repeating itself, what of
        it comes before the repeats (the answer sent so far cut there too: what streamed of them
        is left out of the reply kept, ``TurnFinished.text``), and ``run.looped``."""
        assert run.loops is not None
        sent = len(run.loops.text)
        cut = run.loops.push(text)
        if cut is None:
            return text
        run.looped = True
        kept = run.loops.text[:cut].rstrip()
        run.parts = [kept[:sent]]
        return kept[sent:]

    def _finish(self: Scheduler, slot: Slot, stop: str, flush: bool = True) -> None:
        req, run = slot.req, slot.run
        assert req is not None
        m = run.metrics
        tail = ""
        if flush and stop != "cancelled":
            tail = run.stopper.push(run.detok.flush())[0] + run.stopper.flush()
        if tail or run.thinking is not None:
            self._emit(slot, tail, last=True)
        now = time.perf_counter()
        if slot.prefilling:  # a fresh slot has not touched its cells for this request yet
            m.prompt_n = 0 if slot.fresh else max(0, len(slot.tokens) - m.cache_n)
            m.prompt_ms = (now - run.t_start) * 1000
        n = len(run.reply)
        m.predicted_n = n
        if n > 1 and run.t_last > run.t_first:
            # n tokens take n-1 decode steps after the first (sampled from the prompt's
            # logits): the rate is (n-1) over their time, as llama.cpp's own counters give it
            m.predicted_ms = (run.t_last - run.t_first) * 1000 * n / (n - 1)
        if not run.emitted:
            m.ttft_ms = ((run.t_last or now) - req.t_request) * 1000
        # the cells keep prompt + reply (a speculative step may have run ahead of a stop)
        keep = len(req.prompt) + n
        if len(slot.tokens) > keep and not slot.prefilling:
            self.model.seq_rm(slot.seq, keep, -1)
            del slot.tokens[keep:]
        m.total_ms = (now - req.t_request) * 1000
        m.kv_used = len(slot.tokens)
        m.stop_reason = stop
        threads = self.thread_choice
        m.n_threads, m.threads_reason, m.cpu_others = threads.decode, threads.reason, round(threads.others, 2)
        m.finish_rates()
        self.stats.prompt_tokens_total += m.prompt_n + m.dropped_n  # (its time is in prompt_seconds_total)
        self.stats.prompt_seconds_total += m.prompt_ms / 1000
        self.stats.tokens_predicted_total += m.predicted_n
        self.stats.tokens_predicted_seconds_total += m.predicted_ms / 1000
        held = now - run.t_start  # how long requests hold a slot: how soon a waiting one gets one
        self._slot_hold_s = held if self._slot_hold_s is None else 0.8 * self._slot_hold_s + 0.2 * held
        self._release(slot)
        probs = run.probs.final(stopped=stop == "stop") if run.probs is not None else []
        reasoning = "".join(run.thought)
        deliver(req, TurnFinished("".join(run.parts), m, list(run.reply), probs=probs, reasoning=reasoning))
