"""Continuous batching: several requests decoded together in ONE llama.cpp context.

The scheduler owns a ``LoadedModel`` created with ``n_seq_max = N`` (a unified KV pool shared
by N sequences, one per *slot*) and one decode-loop thread that is the only caller of the
context. Each step builds one batch: one token for every slot that is generating, then prefill
chunks for slots whose prompt is not in the KV cache yet, up to ``n_batch`` tokens. After the
decode every slot samples with its own sampler chain at its own output index.

Prefix sharing: every slot remembers the tokens its KV cells hold. A new request first looks
for the slot (busy or idle) whose cache shares the longest prefix with its prompt; a free slot
with that prefix is reused as is, otherwise the cells are copied into a free slot with
``llama_memory_seq_cp`` (no recompute). ``cache_n`` counts the tokens reused.

Requests wait in a bounded FIFO queue while all slots are busy; when the queue is full,
``submit`` raises ``QueueFull`` (the server answers 429 with Retry-After). A cancelled request
(a client that went away) frees its slot at the next step.

Events go to each request's ``sink`` (called from the decode thread; it must not block):
``TokenDelta`` for text, then ``TurnFinished`` with ``TurnMetrics``, or ``RequestFailed``.
"""

from __future__ import annotations

import collections
import itertools
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workstation.core.catalog import resolve_model_path
from workstation.core.chat_template import chat_prompt_tokens, template_for
from workstation.core.detokenizer import StreamDetokenizer
from workstation.core.engine import TokenDelta, TurnFinished, resolve_gpu_layers
from workstation.core.errors import EngineError, WorkstationError
from workstation.core.metrics import TurnMetrics
from workstation.core.profiles import KV_CACHE_TYPES, Profile, Sampling
from workstation.core.runtime import Batch, LoadedModel, RuntimeSettings
from workstation.core.sampling import SamplerChain

Message = dict[str, str]
ADMIT_WINDOW_S = 0.005  # after an idle spell, wait this long for requests sent at the same time


class QueueFull(WorkstationError):
    """Every slot is busy and the waiting line is full."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PromptTooLong(EngineError):
    """The prompt does not fit one slot's context."""


@dataclass
class RequestFailed:
    message: str


SchedulerEvent = TokenDelta | TurnFinished | RequestFailed


class StopMatcher:
    """Stop strings over streamed text: holds back what could be the start of a stop string."""

    def __init__(self, stops: list[str]) -> None:
        self.stops = [s for s in stops if s]
        self.held = ""

    def push(self, text: str) -> tuple[str, bool]:
        """Returns (text safe to emit, stopped)."""
        if not self.stops:
            return text, False
        buf = self.held + text
        cut = min((i for i in (buf.find(s) for s in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.held = ""
            return buf[:cut], True
        keep = 0
        for s in self.stops:
            for n in range(min(len(s) - 1, len(buf)), 0, -1):
                if buf.endswith(s[:n]):
                    keep = max(keep, n)
                    break
        self.held = buf[len(buf) - keep :] if keep else ""
        return buf[: len(buf) - keep], False

    def flush(self) -> str:
        out, self.held = self.held, ""
        return out


@dataclass
class Request:
    prompt: list[int]
    sampling: Sampling
    sink: Callable[[SchedulerEvent], None]
    max_tokens: int
    ignore_eos: bool = False
    stop: list[str] = field(default_factory=list)
    t_request: float = field(default_factory=time.perf_counter)
    id: int = 0
    cancelled: threading.Event = field(default_factory=threading.Event)

    def cancel(self) -> None:
        self.cancelled.set()


@dataclass
class _Slot:
    seq: int
    tokens: list[int] = field(default_factory=list)  # exactly what this sequence's KV cells hold
    req: Request | None = None
    prefilling: bool = False
    pending: int = -1  # sampled, not yet decoded
    out_index: int = -1  # batch output with this slot's logits after the current step
    chunk: list[int] = field(default_factory=list)
    sampler: SamplerChain | None = None
    detok: StreamDetokenizer | None = None
    stopper: StopMatcher | None = None
    reply: list[int] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    metrics: TurnMetrics | None = None
    t_prefill: float = 0.0
    t_gen: float = 0.0
    t_last: float = 0.0
    last_used: float = 0.0


@dataclass
class SchedulerStats:
    """Counters for /metrics (names follow llama-server's Prometheus metrics)."""

    prompt_tokens_total: int = 0
    prompt_seconds_total: float = 0.0
    tokens_predicted_total: int = 0
    tokens_predicted_seconds_total: float = 0.0
    n_decode_total: int = 0
    n_busy_slots_total: int = 0
    cached_tokens_total: int = 0
    requests_total: int = 0
    requests_rejected_total: int = 0
    requests_cancelled_total: int = 0
    decode_seconds_total: float = 0.0  # inside llama_decode
    busy_seconds_total: float = 0.0  # from one decode's start to the next's while slots are busy


def _common_prefix(a: list[int], b: list[int], limit: int) -> int:
    n = min(len(a), len(b), limit)
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Scheduler:
    """N slots over one context, one decode thread. ``submit`` from any thread."""

    def __init__(
        self,
        profile: Profile,
        n_parallel: int = 4,
        max_queue: int = 16,
        *,
        slot_context: int | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> None:
        if profile.backend != "llama":
            raise EngineError(
                f"Profile '{profile.name}' uses the {profile.backend} backend; serve needs a local model."
            )
        if not 1 <= n_parallel <= 64:
            raise EngineError(f"--parallel is {n_parallel}; allowed values are 1 to 64.")
        t0 = time.perf_counter()
        self.profile = profile
        self.n_parallel = n_parallel
        self.max_queue = max(0, max_queue)
        self.slot_ctx = slot_context or profile.context
        self.gpu_layers = resolve_gpu_layers(profile)
        self.settings = RuntimeSettings(
            n_ctx=self.slot_ctx * n_parallel,
            n_gpu_layers=self.gpu_layers,
            n_threads=profile.resolved_threads(),
            flash_attn=profile.resolved_flash_attn(),
            type_k=KV_CACHE_TYPES[profile.kv_cache.k],
            type_v=KV_CACHE_TYPES[profile.kv_cache.v],
            n_seq_max=n_parallel,
        )
        self.model = LoadedModel(resolve_model_path(profile.model), self.settings, progress=progress)
        try:
            self.template = template_for(self.model)
            self.batch = Batch(self.model.n_batch, 1)
        except BaseException:
            self.model.close()
            raise
        self.model_name = str(self.model.metadata.get("general.name", self.model.path.stem))
        self.load_ms = (time.perf_counter() - t0) * 1000
        self.slots = [_Slot(seq=i) for i in range(n_parallel)]
        self.waiting: collections.deque[Request] = collections.deque()
        self.stats = SchedulerStats()
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._stop = False
        self._eog: np.ndarray | None = None
        self._last_decode = 0.0  # start of the last decode while busy; 0 after an idle spell
        self._thread = threading.Thread(target=self._loop, name="workstation-decode", daemon=True)
        self._thread.start()

    # --- public ----------------------------------------------------------------------------
    def chat_tokens(self, messages: list[Message]) -> list[int]:
        return chat_prompt_tokens(self.model, self.template, messages)

    def text_tokens(self, text: str) -> list[int]:
        return self.model.tokenize(text, add_special=self.model.add_bos, parse_special=True)

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
    ) -> Request:
        """Queue a request; raises PromptTooLong or QueueFull (nothing is queued then)."""
        if not prompt:
            raise EngineError("The prompt is empty.")
        if len(prompt) >= self.slot_ctx:
            raise PromptTooLong(
                f"The prompt is {len(prompt)} tokens but this server holds at most "
                f"{self.slot_ctx - 1} prompt tokens per request."
            )
        req = Request(
            prompt=list(prompt),
            sampling=sampling,
            sink=sink,
            max_tokens=max(1, max_tokens if max_tokens is not None else sampling.max_tokens),
            ignore_eos=ignore_eos,
            stop=list(stop or []),
            t_request=t_request if t_request is not None else time.perf_counter(),
        )
        with self._cond:
            if self._stop:
                raise EngineError("The server is shutting down.")
            busy = sum(1 for s in self.slots if s.req is not None)
            if busy + len(self.waiting) >= self.n_parallel + self.max_queue:
                self.stats.requests_rejected_total += 1
                raise QueueFull(
                    f"All {self.n_parallel} slots are busy and {len(self.waiting)} requests are "
                    "waiting; try again shortly.",
                    retry_after_s=max(1, min(30, len(self.waiting) + 1)),
                )
            req.id = next(self._ids)
            self.stats.requests_total += 1
            self.waiting.append(req)
            self._cond.notify()
        return req

    def cancel(self, req: Request) -> None:
        req.cancel()
        with self._cond:
            self._cond.notify()

    def stream(
        self,
        prompt: list[int],
        sampling: Sampling,
        **kwargs: Any,
    ) -> Iterator[TokenDelta | TurnFinished]:
        """Blocking iterator over one request's events (scripts, tests); closing it cancels."""
        q: queue.Queue[SchedulerEvent] = queue.Queue()
        req = self.submit(prompt, sampling, q.put, **kwargs)
        try:
            while True:
                event = q.get()
                if isinstance(event, RequestFailed):
                    raise EngineError(event.message)
                yield event
                if isinstance(event, TurnFinished):
                    return
        finally:
            self.cancel(req)

    @property
    def requests_processing(self) -> int:
        return sum(1 for s in self.slots if s.req is not None)

    @property
    def requests_deferred(self) -> int:
        return len(self.waiting)

    @property
    def kv_tokens(self) -> int:
        return sum(len(s.tokens) for s in self.slots)

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(timeout=30)
        if not self._thread.is_alive():
            self.batch.close()
            self.model.close()

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- decode thread ---------------------------------------------------------------------
    def _loop(self) -> None:
        try:
            while True:
                with self._cond:
                    waited = False
                    while not self._stop and not self.waiting and not any(
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
                with self._cond:
                    admitted = self._take_waiting()
                for slot, req in admitted:
                    self._start(slot, req)
                self._drop_cancelled()
                if not any(s.req is not None for s in self.slots):
                    continue
                self._step()
        finally:
            for slot in self.slots:
                if slot.req is not None:
                    self._fail(slot, "The server is shutting down.")
            with self._cond:
                left = list(self.waiting)
                self.waiting.clear()
            for req in left:
                req.sink(RequestFailed("The server is shutting down."))

    def _take_waiting(self) -> list[tuple[_Slot, Request]]:
        """Pair waiting requests (FIFO) with free slots; called with the lock held."""
        out: list[tuple[_Slot, Request]] = []
        free = [s for s in self.slots if s.req is None]
        while free and self.waiting:
            req = self.waiting.popleft()
            if req.cancelled.is_set():
                self.stats.requests_cancelled_total += 1
                m = TurnMetrics(stop_reason="cancelled", kv_size=self.slot_ctx)
                m.total_ms = (time.perf_counter() - req.t_request) * 1000
                req.sink(TurnFinished("", m))
                continue
            slot = self._choose_slot(free, req.prompt)
            free.remove(slot)
            slot.req = req  # reserve it now so the counts stay right
            out.append((slot, req))
        return out

    def _choose_slot(self, free: list[_Slot], prompt: list[int]) -> _Slot:
        limit = len(prompt) - 1
        best = max(self.slots, key=lambda s: _common_prefix(s.tokens, prompt, limit))
        if best in free and _common_prefix(best.tokens, prompt, limit) > 0:
            return best
        return min(free, key=lambda s: s.last_used)  # least recently used loses its cache

    def _start(self, slot: _Slot, req: Request) -> None:
        model, prompt = self.model, req.prompt
        limit = len(prompt) - 1  # at least one token is evaluated for the first logits
        own = _common_prefix(slot.tokens, prompt, limit)
        src, n_src = None, own
        for other in self.slots:
            if other is not slot:
                n = _common_prefix(other.tokens, prompt, limit)
                if n > n_src:
                    src, n_src = other, n
        if src is not None:
            model.seq_rm(slot.seq, -1, -1)
            model.seq_cp(src.seq, slot.seq, 0, n_src)
            slot.tokens = prompt[:n_src]
        elif own < len(slot.tokens):
            if not model.seq_rm(slot.seq, own, -1):
                model.seq_rm(slot.seq, -1, -1)
                own = 0
            slot.tokens = slot.tokens[:own]
        now = time.perf_counter()
        slot.req = req
        slot.prefilling = True
        slot.pending = -1
        slot.reply = []
        slot.parts = []
        slot.sampler = SamplerChain(req.sampling, model.n_vocab)
        slot.detok = StreamDetokenizer()
        slot.stopper = StopMatcher(req.stop)
        slot.metrics = TurnMetrics(load_ms=self.load_ms, kv_size=self.slot_ctx, cache_n=len(slot.tokens))
        slot.t_prefill = now
        slot.last_used = now
        self.stats.cached_tokens_total += len(slot.tokens)

    def _drop_cancelled(self) -> None:
        for slot in self.slots:
            if slot.req is not None and slot.req.cancelled.is_set():
                self.stats.requests_cancelled_total += 1
                self._finish(slot, "cancelled")

    def _step(self) -> None:
        batch, model = self.batch, self.model
        batch.clear()
        active: list[_Slot] = []
        for slot in self.slots:
            slot.out_index = -1
            slot.chunk = []
            if slot.req is not None and not slot.prefilling:
                slot.out_index = batch.add(slot.pending, len(slot.tokens), slot.seq, True)
                active.append(slot)
        budget = batch.capacity - batch.n_tokens
        for slot in sorted(
            (s for s in self.slots if s.req is not None and s.prefilling), key=lambda s: s.t_prefill
        ):
            if budget <= 0:
                break
            assert slot.req is not None
            todo = slot.req.prompt[len(slot.tokens) :]
            chunk = todo[:budget]
            base = len(slot.tokens)
            for j, tok in enumerate(chunk):
                idx = batch.add(tok, base + j, slot.seq, j == len(todo) - 1)
            if len(chunk) == len(todo):
                slot.out_index = idx
            slot.chunk = chunk
            budget -= len(chunk)
            active.append(slot)
        if not active:
            return
        t_decode = time.perf_counter()
        if self._last_decode:
            self.stats.busy_seconds_total += t_decode - self._last_decode
        self._last_decode = t_decode
        try:
            model.decode(batch)
        except EngineError as err:
            if not self._evict_idle():
                for slot in active:
                    self._fail(slot, str(err))
                return
            try:
                model.decode(batch)
            except EngineError as err2:
                for slot in active:
                    self._fail(slot, str(err2))
                return
        self.stats.n_decode_total += 1
        self.stats.n_busy_slots_total += len(active)
        now = time.perf_counter()
        self.stats.decode_seconds_total += now - t_decode
        for slot in active:
            if slot.prefilling:
                slot.tokens.extend(slot.chunk)
                if slot.out_index < 0:
                    continue
                slot.prefilling = False
                slot.t_gen = now
                assert slot.metrics is not None
                slot.metrics.prompt_n = len(slot.req.prompt) - slot.metrics.cache_n  # type: ignore[union-attr]
                slot.metrics.prompt_ms = (now - slot.t_prefill) * 1000
            else:
                slot.tokens.append(slot.pending)
            self._sample(slot, now)

    def _eog_tokens(self) -> np.ndarray:
        if self._eog is None:
            self._eog = np.array(
                [t for t in range(self.model.n_vocab) if self.model.is_eog(t)], dtype=np.int64
            )
        return self._eog

    def _sample(self, slot: _Slot, now: float) -> None:
        req, model = slot.req, self.model
        assert req is not None and slot.sampler is not None and slot.detok is not None
        assert slot.stopper is not None and slot.metrics is not None
        if req.ignore_eos:
            model.logits(slot.out_index)[self._eog_tokens()] = -np.inf
        token = slot.sampler.sample(model.ctx, slot.out_index)
        slot.t_last = now
        if model.is_eog(token) and not req.ignore_eos:
            self._finish(slot, "eos")
            return
        slot.reply.append(token)
        text = slot.detok.push(model.piece(token))
        if text:
            text, stopped = slot.stopper.push(text)
            if text:
                self._emit_text(slot, text)
            if stopped:
                self._finish(slot, "stop", flush=False)
                return
        if len(slot.reply) >= req.max_tokens:
            self._finish(slot, "length")
        elif len(slot.tokens) + 1 >= self.slot_ctx:
            self._finish(slot, "context")
        else:
            slot.pending = token

    def _emit_text(self, slot: _Slot, text: str) -> None:
        assert slot.req is not None and slot.metrics is not None
        if not slot.parts:
            slot.metrics.ttft_ms = (time.perf_counter() - slot.req.t_request) * 1000
        slot.parts.append(text)
        slot.req.sink(TokenDelta(text))

    def _finish(self, slot: _Slot, stop: str, flush: bool = True) -> None:
        req, m = slot.req, slot.metrics
        assert req is not None and m is not None
        if flush and slot.detok is not None and slot.stopper is not None and stop != "cancelled":
            tail = slot.stopper.push(slot.detok.flush())[0] + slot.stopper.flush()
            if tail:
                self._emit_text(slot, tail)
        now = time.perf_counter()
        if slot.prefilling:
            m.prompt_n = len(slot.tokens) - m.cache_n
            m.prompt_ms = (now - slot.t_prefill) * 1000
        else:
            m.predicted_ms = (slot.t_last - slot.t_gen) * 1000
        m.predicted_n = len(slot.reply)
        if not slot.parts:
            m.ttft_ms = ((slot.t_last or now) - req.t_request) * 1000
        m.total_ms = (now - req.t_request) * 1000
        m.kv_used = len(slot.tokens)
        m.stop_reason = stop
        m.finish_rates()
        self.stats.prompt_tokens_total += m.prompt_n
        self.stats.prompt_seconds_total += m.prompt_ms / 1000
        self.stats.tokens_predicted_total += m.predicted_n
        self.stats.tokens_predicted_seconds_total += m.predicted_ms / 1000
        self._release(slot)
        req.sink(TurnFinished("".join(slot.parts), m))

    def _fail(self, slot: _Slot, message: str) -> None:
        req = slot.req
        self.model.seq_rm(slot.seq, -1, -1)
        slot.tokens = []
        self._release(slot)
        if req is not None:
            req.sink(RequestFailed(message))

    def _release(self, slot: _Slot) -> None:
        if slot.sampler is not None:
            slot.sampler.close()
        slot.sampler = None
        slot.req = None
        slot.prefilling = False
        slot.pending = -1
        slot.last_used = time.perf_counter()
        with self._cond:
            self._cond.notify()

    def _evict_idle(self) -> bool:
        """Free the cached cells of idle slots (the KV pool ran out); True if any were freed."""
        freed = False
        for slot in self.slots:
            if slot.req is None and slot.tokens:
                self.model.seq_rm(slot.seq, -1, -1)
                slot.tokens = []
                freed = True
        return freed
