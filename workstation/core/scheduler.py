"""The one decode core: N slots over ONE llama.cpp context, one loop that calls ``llama_decode``.

Every generation is a request to a ``Scheduler``: a chat turn (CLI, TUI), each chunk of a
summary, a batch file, an eval task turn, a bench TTFT turn and every API request of
``serve``. ``Engine`` (``core/engine.py``) is a synchronous facade that drives the same loop
from the caller's thread; ``serve`` runs it in a thread of its own (``threaded=True``) and
submits from HTTP handlers.

Each step (``step``):
1. **plan** (pure, ``core/slots.py``): admit waiting requests to free slots, settle which
   cached cells each new request reuses (its own prefix, a copy from another slot, a saved
   state on disk, or a wait for a slot prefilling the same prefix right now:
   ``core/prompt_cache.py``), let each generating slot's speculator
   propose drafts, and fill one batch: every generating slot's sampled token and drafts, then
   prompt chunks up to ``n_batch`` tokens;
2. **decode** the batch (llama.cpp's abort callback is armed when it holds prompt chunks, so a
   cancelled long prefill stops inside llama.cpp);
3. **update** (``core/slot_run.py``): each slot samples (or verifies its drafts) at its own
   output index with its own sampler chain, and its text goes through an incremental UTF-8
   detokenizer and its stop strings to the request's ``sink``; limits (``max_tokens``, the
   slot's context, EOS, stop) finish it with ``TurnMetrics``.

A slot keeps its cells after a request (prefix reuse: the next turn of a conversation, the
next chunk of a document with the same instruction). Requests wait in a bounded FIFO queue
while all slots are busy (``QueueFull`` when it is full). Events go to each request's ``sink``,
called from the decoding thread (it must not block): ``TokenDelta``, then ``TurnFinished``, or
``RequestFailed``.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

import numpy as np

from workstation.core.catalog import resolve_model_path
from workstation.core.chat_template import FALLBACK_STOPS, chat_prompt_tokens, template_for
from workstation.core.errors import EngineError, WorkstationError
from workstation.core.events import (
    CancelFlag,
    EngineInfo,
    Message,
    PromptRead,
    RequestFailed,
    SchedulerEvent,
    TurnFinished,
)
from workstation.core.grammar import compile_grammar
from workstation.core.installed_models import installed_name
from workstation.core.invocation import cli
from workstation.core.kv_state import (
    MIN_RESTORE_TOKENS,
    KvStateStore,
    StateKey,
)
from workstation.core.loops import loop_watch
from workstation.core.metrics import TurnMetrics
from workstation.core.phrases import Phrase, say
from workstation.core.profile_plan import gpu_layers_for_load
from workstation.core.profiles import KV_CACHE_TYPES, Constraints, Profile, Sampling
from workstation.core.prompt_cache import PromptCache
from workstation.core.reasoning import CLOSE, OPEN, ThinkingSplitter, opens_thinking
from workstation.core.runtime import (
    Batch,
    DecodeAborted,
    LoadedModel,
    RuntimeSettings,
)
from workstation.core.sampling import SamplerChain
from workstation.core.scheduler_stats import SchedulerStats
from workstation.core.slot_run import SlotReplies, SlotRun, deliver
from workstation.core.slots import (
    Owner,
    Request,
    Slot,
    StepPlan,
    admit,
    plan_step,
    queue_victim,
)
from workstation.core.stop_strings import StopMatcher
from workstation.core.thread_policy import RECHECK_TOKENS, LoadSampler, ThreadChoice, ThreadGovernor
from workstation.core.token_probs import ReplyProbs
from workstation.core.waiting_callers import WaitingCallers

log = logging.getLogger(__name__)


ADMIT_WINDOW_S = 0.005  # after an idle spell, wait this long for requests sent at the same time
UNBOUNDED_QUEUE = 1 << 30
T = TypeVar("T")

__all__ = ["PromptTooLong", "QueueFull", "Scheduler"]


class QueueFull(WorkstationError):
    """Every slot is busy and the waiting line is full."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PromptTooLong(EngineError):
    """The prompt does not fit one slot's context."""


@contextlib.contextmanager
def _discarded_on_error(req: Request) -> Iterator[None]:
    try:
        yield
    except BaseException:
        req.discard()
        raise


def _requests(n: int) -> str:
    return "1 request" if n == 1 else f"{n:,} requests"


class Scheduler(SlotReplies, PromptCache, WaitingCallers):
    """N slots over one context. ``submit`` from any thread; one thread calls ``step``. Its
    parts, each a module: ``SlotReplies`` (``core/slot_run.py``: each step's update),
    ``PromptCache`` (``core/prompt_cache.py``: the cells reused, saved and restored) and
    ``WaitingCallers`` (``core/waiting_callers.py``: ``stream`` and ``run_all``, whose callers
    wait)."""

    def __init__(
        self,
        profile: Profile,
        n_parallel: int | None = None,
        max_queue: int = 16,
        *,
        slot_context: int | None = None,
        progress: Callable[[float], None] | None = None,
        threaded: bool = True,
        kv_store: KvStateStore | None = None,
        min_save_tokens: int = MIN_RESTORE_TOKENS,
        save_when_reused: bool = False,
    ) -> None:
        if profile.backend != "llama":
            # by the name typed (-p office-server), its title after it: the title alone was no name to type
            title = f" ({profile.name})" if profile.name and profile.name != profile.key else ""
            raise EngineError(said=[("serve.remote_profile", {"profile": profile.key, "title": title,
                                                              "url": profile.remote.base_url,
                                                              "command": cli("profiles list")})])
        n_parallel = n_parallel or profile.parallel
        if not 1 <= n_parallel <= 64:
            raise EngineError(f"--parallel is {n_parallel}; allowed values are 1 to 64.")
        t0 = time.perf_counter()
        self.profile = profile
        self.n_parallel = n_parallel
        self.max_queue = max(0, max_queue)
        self.slot_ctx = slot_context or profile.context
        self.gpu_layers = gpu_layers_for_load(profile, self.slot_ctx * n_parallel)  # (serve's slots together)
        self.settings = RuntimeSettings(
            n_ctx=self.slot_ctx * n_parallel,
            n_gpu_layers=self.gpu_layers,
            n_threads=profile.resolved_threads(),
            flash_attn=profile.resolved_flash_attn(),
            type_k=KV_CACHE_TYPES[profile.kv_cache.k],
            type_v=KV_CACHE_TYPES[profile.kv_cache.v],
            n_seq_max=n_parallel,
        )
        # threads: auto measures the machine's load from before the load on (core/thread_policy.py)
        # its thread starts once the models are loaded: on the first GPU run (an H200) every load
        # with it ticking crashed inside llama.cpp, every load without it loaded (the GPU check's
        # engine_load probes tell whether it is the cause); its first reading is from before
        sampler = LoadSampler(ticker=False) if profile.threads == "auto" else None
        try:
            self.model = LoadedModel(resolve_model_path(profile.model), self.settings, progress=progress)
        except BaseException:
            if sampler is not None:
                sampler.close()
            raise
        self.draft_model: Any = None
        self.slots = [Slot(seq=i) for i in range(n_parallel)]
        try:
            self.template = template_for(self.model)
            self.batch = Batch(self.model.n_batch, 1)
            if profile.speculative.mode != "off":
                from workstation.core.speculative import make_speculators

                specs, self.draft_model = make_speculators(profile, self.model, n_parallel, self.slot_ctx)
                for slot, spec in zip(self.slots, specs, strict=True):
                    slot.spec = spec
        except BaseException:
            self.model.close()
            if sampler is not None:
                sampler.close()
            raise
        self.model_name = installed_name(self.model.path)  # as 'models list' and profiles name it
        # threads: auto follows the machine's load (core/thread_policy.py); a number stays
        self.governor: ThreadGovernor | None = None
        if sampler is not None:
            gpu_all = self.model.gpu_offload and self.gpu_layers > self.model.n_layer
            self.governor = ThreadGovernor(self.settings.n_threads, gpu_all_layers=gpu_all, sampler=sampler)
            self._apply_threads(self.governor.current)
        self._since_thread_check = 0  # tokens generated since the governor last looked
        # saved KV states on disk (core/kv_state.py): restored into a fresh slot; a slot's cells
        # of at least ``min_save_tokens`` are saved when another prompt takes the slot and when
        # the scheduler closes. The decode thread only copies the cells out (about 25 us a
        # token); the file is written by a writer thread (about 100 us a token).
        self.kv_store = kv_store
        self._save_problem: int | None = None  # the errno of the last save that failed (said once)
        self.min_save_tokens = max(MIN_RESTORE_TOKENS, min_save_tokens)
        # serve: a prompt nobody's (no conversation_tag) is saved only as far as another request
        # shared it (an earlier prompt, a saved state, a slot's cells); one-offs are never written
        self.save_when_reused = save_when_reused
        self._writer: concurrent.futures.ThreadPoolExecutor | None = None
        self._forgotten: set[str] = set()  # tags of deleted conversations: their cells are never saved
        self._reader: concurrent.futures.ThreadPoolExecutor | None = None
        self.state_key = StateKey.for_model(
            self.model.path, profile.kv_cache.k, profile.kv_cache.v, self.slot_ctx, n_parallel, self.settings.flash_attn
        )
        self.load_ms = (time.perf_counter() - t0) * 1000
        self.waiting: collections.deque[Request] = collections.deque()
        self.stats = SchedulerStats()
        self._slot_hold_s: float | None = None  # recent requests' time in a slot (EWMA): Retry-After
        self._cond = threading.Condition()
        self._chores: collections.deque[tuple[Callable[[], Any], Future[Any]]] = collections.deque()
        self._ids = itertools.count(1)
        self._stop = False
        self._eog: np.ndarray | None = None
        self._think_tokens: frozenset[int] | None = None  # <think> and </think> where they are one token
        self._last_decode = 0.0  # start of the last decode while busy; 0 after an idle spell
        self.threaded = threaded
        self._thread: threading.Thread | None = None
        if threaded:
            self._thread = threading.Thread(target=self._loop, name="workstation-decode", daemon=True)
            self._thread.start()
        if sampler is not None:  # last: a failure before it leaves no thread ticking
            sampler.start()

    # --- public ----------------------------------------------------------------------------
    def chat_tokens(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None,
        variables: dict[str, Any] | None = None, *, begun: str = "",
    ) -> list[int]:
        """The chat prompt's tokens; ``variables`` go to the template over the profile's
        (``Profile.template_variables``: whether a reasoning model thinks). ``begun``: the
        reply's text so far, which the model goes on from (``reply_to_continue``), as text,
        never control tokens, after the assistant's turn opened."""
        tokens = chat_prompt_tokens(self.model, self.template, messages, tools, self.template_variables(variables))
        if begun:
            if opens_thinking(self.model.detokenize(tokens[-16:], special=True)):
                # the template opens the thinking: the reply begun is answer, after the block closed
                # (it went inside the thinking, and the model thought, then answered, again)
                tokens += self.model.tokenize(CLOSE + "\n\n", add_special=False, parse_special=True)
            tokens += self.model.tokenize(begun, add_special=False, parse_special=False)
        return tokens

    def template_variables(self, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """The chat template's inputs besides the messages: the profile's, then a request's."""
        return {**self.profile.template_variables(), **(variables or {})}

    def text_tokens(self, text: str) -> list[int]:
        return self.model.tokenize(text, add_special=self.model.add_bos, parse_special=True)

    def marker_tokens(self, markers: Sequence[str]) -> frozenset[int]:
        """The tokens that are these markers whole in this model's vocabulary (a tool-call
        format's markers, to stream as text: ``Constraints.preserved_tokens``)."""
        ids = (self.model.tokenize(m, add_special=False, parse_special=True) for m in markers)
        return frozenset(t[0] for t in ids if len(t) == 1)

    def _model_files(self) -> list[LoadedModel]:
        """The models whose files are mapped: the model, and the draft model where there is one."""
        return [self.model] + ([self.draft_model.model] if self.draft_model is not None else [])

    def model_file_changed(self) -> bool:
        """Whether a model file (the draft's too) changed on disk since it was loaded, so that
        every request is refused (``serve``'s /health says so)."""
        return any(model.file.changed() for model in self._model_files())

    def submit(
        self,
        prompt: list[int],
        sampling: Sampling,
        sink: Callable[[SchedulerEvent], None],
        *,
        max_tokens: int | None = None,
        ignore_eos: bool = False,
        stop: list[str] | None = None,
        t_request: float | None = None,
        cancelled: CancelFlag | None = None,
        owner: Owner | None = None,
        constraints: Constraints | None = None,
        id_slot: int = -1,
        tag: str | None = None,
        reasoning: bool = False,
        cache_prompt: bool = True,
        reading: bool = False,
        chat: bool | None = None,
    ) -> Request:
        """Queue a request; raises PromptTooLong, GrammarError or QueueFull (nothing is queued
        then). ``owner`` (an API key) takes turns with other owners for slots (``slots.admit``);
        ``id_slot`` >= 0 waits for that slot (llama-server's ``id_slot``); ``tag`` names whose
        cells the slot then holds (a saved conversation: ``forget`` deletes them).
        ``constraints.grammar`` is compiled here, once (a grammar that does not parse is refused
        now, never in the decoding thread). ``reasoning``: a chat reply, whose thinking (a
        reasoning model's ``<think>`` block) streams apart from its answer. ``reading``: how far
        the prompt has been read is told after each part of it but the last (``PromptRead``).
        ``chat``: a chat reply (default: ``reasoning``; a server's with ``reasoning_format: none``
        is one without its thinking told apart), which a model without a chat template ends at
        the stand-in template's markers."""
        if not prompt:
            raise EngineError("The prompt is empty.")
        # a model file overwritten or cut short while mapped ends this process at its next read
        # (a bus error): refused, with a sentence, before anything reads it (core/model_file.py)
        for model in self._model_files():
            model.file.check()
        if not -1 <= id_slot < self.n_parallel:
            raise EngineError(f"id_slot is {id_slot}; this server has slots 0 to {self.n_parallel - 1} (-1: any).")
        if len(prompt) >= self.slot_ctx:
            raise PromptTooLong(
                f"The prompt is {len(prompt)} tokens but this profile's context holds at most "
                f"{self.slot_ctx - 1} prompt tokens per request."
            )
        asked_n = len(prompt)
        if self.kv_store is not None and tag is not None and cache_prompt:
            prompt = self._aligned_to_saved(prompt, tag)
        req = Request(
            prompt=list(prompt),
            sampling=sampling,
            sink=sink,
            max_tokens=max(1, max_tokens if max_tokens is not None else sampling.max_tokens),
            ignore_eos=ignore_eos or sampling.ignore_eos,
            # the request's own, else the profile's: never under a grammar, whose reply (JSON, a
            # tool call) a profile's stop text ("\n") would cut short
            stop=list(stop if stop is not None else [] if constraints and constraints.grammar else sampling.stop)
            # a chat reply in the stand-in template's words (a model with none): its markers end it
            + (list(FALLBACK_STOPS) if (reasoning if chat is None else chat) and self.template.fallback_reason
               and not (constraints and constraints.grammar) else []),
            t_request=t_request if t_request is not None else time.perf_counter(),
            owner=owner,
            constraints=constraints or Constraints(),
            id_slot=id_slot,
            tag=tag,
            reasoning=reasoning,
            cache_prompt=cache_prompt,
            reading=reading,
            asked_n=asked_n,
        )
        if reasoning:  # the tags stream as text, also where they are control tokens
            if self._think_tokens is None:
                self._think_tokens = self.marker_tokens([OPEN, CLOSE])
            marks = req.constraints.preserved_tokens | self._think_tokens
            req.constraints = dataclasses.replace(req.constraints, preserved_tokens=marks)
        if cancelled is not None:
            req.cancelled = cancelled
        if req.constraints.grammar:
            req.grammar = compile_grammar(self.model.vocab, req.constraints.grammar)
        with _discarded_on_error(req), self._cond:
            if self._stop:
                raise EngineError("The server is shutting down.")
            if self._thread is not None and not self._thread.is_alive():
                raise EngineError("The engine stopped; load the profile again.")
            busy = sum(1 for s in self.slots if s.req is not None)
            victim = None
            if busy + len(self.waiting) >= self.n_parallel + self.max_queue:
                victim = queue_victim(self.waiting, owner)
                if victim is None:
                    self.stats.requests_rejected_total += 1
                    # (its limits, not "all N slots busy and M waiting": a request stays in the
                    # queue until the decode thread gives it its slot, and was counted there)
                    raise QueueFull(
                        f"This server is full: it answers {_requests(self.n_parallel)} at once and keeps "
                        f"{_requests(self.max_queue)} waiting; try again shortly.",
                        retry_after_s=self._retry_after_s(),
                    )
                self.waiting.remove(victim)
                self.stats.requests_rejected_total += 1
            req.id = next(self._ids)
            self.stats.requests_total += 1
            self.waiting.append(req)
            self._cond.notify()
        if victim is not None:  # outside the lock: a sink may take its time
            victim.discard()
            deliver(victim, RequestFailed(
                "The queue is full and your requests held the most places in it; this one gave "
                "its place to someone else's. Try again shortly.",
                status=429, retry_after_s=self._retry_after_s(),
            ))
        return req

    def cancel(self, req: Request) -> None:
        """Cancel one request: a waiting one leaves the queue at once (its place is free)."""
        req.cancel()
        with self._cond:
            queued = req in self.waiting
            if queued:
                self.waiting.remove(req)
            self._cond.notify()
        if queued:
            req.discard()
            self.stats.requests_cancelled_total += 1
            m = TurnMetrics(stop_reason="cancelled", kv_size=self.slot_ctx)
            m.total_ms = (time.perf_counter() - req.t_request) * 1000
            deliver(req, TurnFinished("", m))

    def between_steps(self, chore: Callable[[], T]) -> Future[T]:
        """Run ``chore`` on the decoding thread between two steps (at once in the caller's
        thread when the scheduler is not threaded), so it may read and change slots and the
        KV cache safely; its result or exception comes in the returned Future."""
        done: Future[T] = Future()
        if not self.threaded:
            self._run_chore(chore, done)
            return done
        with self._cond:
            if self._stop or (self._thread is not None and not self._thread.is_alive()):
                raise EngineError("The engine stopped; load the profile again.")
            self._chores.append((chore, done))
            self._cond.notify()
        return done

    @staticmethod
    def _run_chore(chore: Callable[[], Any], done: Future[Any]) -> None:
        if not done.set_running_or_notify_cancel():
            return
        try:
            done.set_result(chore())
        except BaseException as err:  # noqa: BLE001 - the caller hears it through its Future
            done.set_exception(err)

    def _run_chores(self) -> None:
        while True:
            with self._cond:
                if not self._chores:
                    return
                chore, done = self._chores.popleft()
            self._run_chore(chore, done)

    def drafting_off(self) -> list[Phrase]:
        """Why drafting is off for the rest of the session ([] where it is not): a draft model
        that cannot pay on this machine, in its measured costs (bench says it under its table,
        in the command line's language)."""
        return next((slot.spec.off_said for slot in self.slots
                     if slot.spec is not None and slot.spec.off_for_session), [])

    def reset(self) -> None:
        """Forget every slot's cached cells (no request may be running)."""
        self.model.clear_memory()
        for slot in self.slots:
            slot.tokens = []
            slot.tag = None
            if slot.spec is not None:
                slot.spec.forget()

    @property
    def requests_processing(self) -> int:
        return sum(1 for s in self.slots if s.req is not None)

    @property
    def requests_deferred(self) -> int:
        return len(self.waiting)

    def owner_requests(self, name: str) -> tuple[int, int]:
        """The requests of one owner (an API key's name) holding a slot now, and those waiting
        for one: a desk PC whose chat waits behind the same person's summary says so."""
        running = sum(1 for s in list(self.slots) if s.req is not None and s.req.owner is not None
                      and s.req.owner.name == name)
        waiting = sum(1 for r in list(self.waiting) if r.owner is not None and r.owner.name == name)
        return running, waiting

    @property
    def kv_tokens(self) -> int:
        return sum(len(s.tokens) for s in self.slots)

    def info(self) -> EngineInfo:
        """What is loaded, with the settings it was loaded with (its slots' context, K/V types,
        GPU layers): the chat's status bar, and ``memory_held`` (what it holds, counted as free
        where it is what a plan would replace)."""
        model, settings = self.model, self.settings
        return EngineInfo(
            profile=self.profile.key,
            model_name=self.model_name,  # as 'models list' and profiles name it (general.name can mislead)
            model_path=str(model.path),
            n_ctx=self.slot_ctx,
            n_layer=model.n_layer,
            gpu_layers=min(self.gpu_layers, model.n_layer + 1) if model.gpu_offload else 0,
            type_k=self.profile.kv_cache.k,
            type_v=self.profile.kv_cache.v,
            flash_attn=settings.flash_attn,
            threads=settings.n_threads,
            load_ms=self.load_ms,
            template_fallback=self.template.fallback_reason,
            speculative=self.profile.speculative.mode,
            parallel=self.n_parallel,
        )

    def close(self) -> None:
        if self.governor is not None:
            self.governor.close()
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)
            if self._thread.is_alive():
                return
        else:
            self._fail_all("The engine is closing.")
        self.save_states()  # the slots' cells, for the next start (with a store)
        if self.kv_store is not None:
            self.kv_store.keep_seen()  # and which prompts were asked (a state is saved at a second ask)
        if self._reader is not None:  # a state may still be read for a request that ended unanswered
            self._reader.shutdown(wait=True)
        for slot in self.slots:
            if slot.run is not None:
                slot.run.sampler.close()
        if self.draft_model is not None:
            self.draft_model.close()
        self.batch.close()
        self.model.close()

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- driving the loop ------------------------------------------------------------------
    def _loop(self) -> None:
        try:
            while True:
                with self._cond:
                    waited = False
                    while not self._stop and not self.waiting and not self._chores and not any(
                        s.req is not None for s in self.slots
                    ):
                        waited = True
                        self._last_decode = 0.0
                        self._cond.wait()
                    if self._stop:
                        break
                if waited and ADMIT_WINDOW_S:
                    # woken from idle: clients that send together should prefill together
                    time.sleep(ADMIT_WINDOW_S)
                self.step()
        finally:
            self._fail_all("The server is shutting down.")

    def step(self) -> bool:
        """One decode step; False when there was nothing to do. Never raises: an unexpected
        failure fails every running request (``RequestFailed``) and the slots start clean."""
        try:
            return self._step()
        except Exception as err:  # noqa: BLE001 - every request must hear why, never a traceback
            message = str(err) if isinstance(err, WorkstationError) else f"The engine failed: {type(err).__name__}: {err}"
            for slot in self.slots:
                if slot.req is not None:
                    self._fail(slot, message)
            return True

    def _step(self) -> bool:
        self._run_chores()
        with self._cond:
            admitted, dropped = admit(self.slots, self.waiting, self.model.piece, self.slot_ctx - 1)
        for req in dropped:
            req.discard()
            self.stats.requests_cancelled_total += 1
            m = TurnMetrics(stop_reason="cancelled", kv_size=self.slot_ctx)
            m.total_ms = (time.perf_counter() - req.t_request) * 1000
            deliver(req, TurnFinished("", m))
        if self.governor is not None and (admitted or self._since_thread_check >= RECHECK_TOKENS):
            self._since_thread_check = 0
            choice = self.governor.check()
            if choice is not None:
                self._apply_threads(choice)
        for slot in admitted:
            self._start(slot)
        for slot in self.slots:
            if slot.req is not None and slot.req.is_cancelled():
                self.stats.requests_cancelled_total += 1
                self._finish(slot, "cancelled")
        self._settle()
        self._propose()
        plan = plan_step(self.slots, self.batch.capacity)
        if not plan.entries:
            return bool(admitted or dropped)
        self._run(plan)
        return True

    def _apply_threads(self, choice: ThreadChoice) -> None:
        self.model.set_threads(choice.decode, choice.batch)

    @property
    def thread_choice(self) -> ThreadChoice:
        if self.governor is not None:
            return self.governor.current
        n = self.settings.n_threads
        return ThreadChoice(n, n, "fixed", 0.0)

    # --- plan ------------------------------------------------------------------------------
    def _start(self, slot: Slot) -> None:
        req = slot.req
        assert req is not None
        now = time.perf_counter()
        grammar = req.grammar.take() if req.grammar is not None else None
        # ignore_eos under a grammar: avoid ending while the grammar allows anything else
        avoid = self._eog_tokens() if grammar is not None and req.ignore_eos else None
        sampler = SamplerChain(req.sampling, self.model.n_vocab, req.constraints, grammar=grammar, avoid_eog=avoid)
        sampler.remember(req.prompt)  # the penalties' window starts with the prompt's end
        slot.run = SlotRun(
            sampler=sampler,
            metrics=TurnMetrics(load_ms=self.load_ms, kv_size=self.slot_ctx),
            stopper=StopMatcher(req.stop),
            t_start=now,
            probs=ReplyProbs(req.constraints.n_probs) if req.constraints.n_probs > 0 else None,
            thinking=ThinkingSplitter(self._opens_thinking(req)) if req.reasoning else None,
            # (not under a grammar, a JSON list's items may well be alike; nor with the tokens'
            # probabilities, which the text cut short would leave behind; nor where it must write
            # all its tokens, bench's)
            loops=loop_watch(req.sampling) if req.sampling.stop_on_loop and not req.constraints.active
            and req.constraints.n_probs <= 0 and not req.ignore_eos else None,
        )
        slot.last_used = now
        if self.kv_store is not None and self.save_when_reused and req.tag is None:
            slot.run.seen_n = self.kv_store.seen_before(req.prompt)
        if slot.spec is not None:
            slot.spec.begin_turn(sampler, req.prompt)

    def _propose(self) -> None:
        for slot in self.slots:
            slot.drafts = []
            if slot.spec is None or not slot.generating:
                continue
            if slot.req is not None and slot.req.constraints.active:
                continue  # a grammar or bias: plain steps (drafting was never tried with one)
            req, run = slot.req, slot.run
            assert req is not None
            left = req.max_tokens - len(run.reply)
            room = min(left - 1, self.slot_ctx - len(slot.tokens) - 2)
            try:
                slot.drafts = slot.spec.propose(slot.tokens, slot.pending, room, left)
            except EngineError:  # the draft model's own context failed: draft from scratch later
                slot.spec.forget()

    # --- decode ----------------------------------------------------------------------------
    def _run(self, plan: StepPlan) -> None:
        batch, model = self.batch, self.model
        batch.clear()
        outputs: list[int] = []
        for entry in plan.entries:
            first = -1
            last = len(entry.tokens) - 1
            for j, tok in enumerate(entry.tokens):
                want = entry.all_logits or (entry.ends_prompt and j == last)
                idx = batch.add(tok, entry.pos + j, entry.slot.seq, want)
                if want and first < 0:
                    first = idx
            outputs.append(first)
        t0 = time.perf_counter()
        if self._last_decode:
            self.stats.busy_seconds_total += t0 - self._last_decode
        self._last_decode = t0
        prefill = plan.has_prefill
        if prefill:
            entries = plan.entries
            model.set_abort(lambda: all(e.slot.req is None or e.slot.req.is_cancelled() for e in entries))
        try:
            # each slot has its own KV stream of slot_ctx cells and never outgrows it (the
            # "context" limit), so a failure here is not a full pool that eviction could fix
            model.decode(batch)
        except DecodeAborted:
            for entry in plan.entries:
                model.seq_rm(entry.slot.seq, len(entry.slot.tokens), -1)
                if entry.slot.req is not None:
                    if entry.slot.prefilling:  # (its cells are gone, its time was spent: a key pays for it)
                        entry.slot.run.metrics.dropped_n += len(entry.tokens)
                    self.stats.requests_cancelled_total += 1
                    self._finish(entry.slot, "cancelled")
            return
        except EngineError as err:
            for entry in plan.entries:
                if entry.slot.req is not None:
                    self._fail(entry.slot, str(err))
            return
        finally:
            if prefill:
                model.set_abort(None)
        now = time.perf_counter()
        self.stats.n_decode_total += 1
        self.stats.n_busy_slots_total += len(plan.entries)
        self.stats.decode_seconds_total += now - t0
        verified: list[tuple[Slot, int, int, int]] = []
        for entry, idx in zip(plan.entries, outputs, strict=True):
            slot = entry.slot
            if slot.req is None:
                continue
            slot.tokens.extend(entry.tokens)
            if not entry.all_logits:
                if not entry.ends_prompt:
                    if slot.req.reading:  # (another key's cells reused: told as read, as in its metrics)
                        told = len(slot.tokens) - slot.reused_n + slot.run.metrics.cache_n
                        deliver(slot.req, PromptRead(told, len(slot.req.prompt), slot.run.metrics.cache_n,
                                                     (now - slot.run.t_start) * 1000))
                    continue
                slot.prefilling = False
                m = slot.run.metrics
                m.prompt_n = len(slot.req.prompt) - m.cache_n
                m.aligned_n = len(slot.req.prompt) - slot.req.asked_n if slot.req.asked_n else 0
                m.prompt_ms = (now - slot.run.t_start) * 1000
                if slot.req.reading and len(slot.tokens) - len(entry.tokens) <= slot.reused_n:
                    # read in one part (512 tokens or fewer): that it was read is said (``PromptRead.whole``),
                    # as a longer one's parts are (it said nothing, and F5's memory gauge left the new message
                    # out until the reply ended); a longer one's last part is said by its first word
                    deliver(slot.req, PromptRead(len(slot.req.prompt), len(slot.req.prompt), m.cache_n, m.prompt_ms))
            n_drafts = len(entry.tokens) - 1 if entry.all_logits else 0
            n_acc, n_out = self._update(slot, idx, entry, n_drafts)
            if n_drafts:
                verified.append((slot, n_drafts, n_acc, n_out))
        if any(s.spec is not None for s in self.slots):
            seconds = time.perf_counter() - t0
            if not prefill:  # a step with prompt chunks in it says nothing about a step's cost
                self.slots[0].spec.costs.record(seconds, plan.n_generating, plan.n_drafts)
            for slot, n_drafts, n_acc, n_out in verified:
                slot.spec.after_step(seconds, n_drafts, n_acc, n_out, timed=not prefill)

    # --- update: SlotReplies (core/slot_run.py); a request refused, failed, its slot released --
    def _retry_after_s(self) -> int:
        """Seconds a refused request waits before trying again (Retry-After): the queue before
        it served at the pace requests have held a slot lately, 1 to 30. It was a second per
        waiting request: 18 s for 17 short ones the slots cleared in 1.4 s (the openai client
        sleeps that long before each retry)."""
        ahead = len(self.waiting) + 1
        if self._slot_hold_s is None:  # nothing served yet: a second a request
            return max(1, min(30, ahead))
        return max(1, min(30, math.ceil(self._slot_hold_s * ahead / self.n_parallel)))

    def _fail(self, slot: Slot, message: str = "", status: int = 500, said: list[Phrase] | None = None) -> None:
        req = slot.req
        self.model.seq_rm(slot.seq, -1, -1)
        slot.tokens = []
        if slot.spec is not None:
            slot.spec.forget()
        self._release(slot)
        if req is not None:
            deliver(req, RequestFailed(message or say(said or []), status, said=said))

    def _fail_all(self, message: str) -> None:
        for slot in self.slots:
            if slot.req is not None:
                self._fail(slot, message)
        with self._cond:
            left = list(self.waiting)
            self.waiting.clear()
            chores = list(self._chores)
            self._chores.clear()
        for req in left:
            req.discard()
            deliver(req, RequestFailed(message))
        for _, done in chores:
            if done.set_running_or_notify_cancel():
                done.set_exception(EngineError(message))

    def _release(self, slot: Slot) -> None:
        if slot.run is not None:
            slot.run.sampler.close()
        slot.run = None
        slot.req = None
        slot.prefilling = False
        slot.fresh = False
        slot.restoring = None
        slot.pending = -1
        slot.drafts = []
        slot.last_used = time.perf_counter()
        with self._cond:
            self._cond.notify()
