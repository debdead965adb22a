"""One loaded model: stream a chat turn, cancel it, and measure it.

The engine keeps sequence 0's KV cache between turns, so turn N only prefills what is new
(``cache_n`` counts the reused tokens). Generation runs through a ``Decoder`` that yields one
token at a time: the plain decoder here, or a speculative one (``core/speculative.py``) that
verifies several drafted tokens per llama.cpp call. The engine owns everything around it:
template, context fitting, prefill, stop rules, detokenization, cancellation and metrics.

``Engine`` runs in the calling process (``workstation chat``). The TUI and the server use
``EngineProcess`` (``core/engine_process.py``), the same interface with the engine in a
child process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from workstation.core.catalog import resolve_model_path
from workstation.core.chat_template import chat_prompt_tokens, template_for
from workstation.core.detokenizer import StreamDetokenizer
from workstation.core.errors import EngineError
from workstation.core.metrics import TurnMetrics
from workstation.core.profiles import KV_CACHE_TYPES, Profile, Sampling
from workstation.core.runtime import Batch, DecodeAborted, LoadedModel, RuntimeSettings
from workstation.core.sampling import SamplerChain

Message = dict[str, str]


# --- events a turn streams --------------------------------------------------------------------
@dataclass
class TokenDelta:
    text: str
    tokens: int = 1  # how many generated tokens this piece of text covers


@dataclass
class TurnFinished:
    text: str
    metrics: TurnMetrics


TurnEvent = TokenDelta | TurnFinished


def finished_turn(events: Iterator[TurnEvent]) -> TurnFinished:
    """Run a streamed turn to its end and return its last event (tests, scripts, batch work)."""
    final: TurnFinished | None = None
    for event in events:
        if isinstance(event, TurnFinished):
            final = event
    if final is None:
        raise EngineError("The turn ended without a result.")
    return final


class CancelFlag(Protocol):
    def is_set(self) -> bool: ...
    def set(self) -> None: ...
    def clear(self) -> None: ...


# --- what a decoder sees ----------------------------------------------------------------------
@dataclass
class GenerationState:
    """Sequence 0 during one turn's generation.

    ``tokens`` is exactly what sequence 0's KV cache holds, in order; a decoder appends to it
    whatever it decodes. ``logits_index`` is the batch output with the logits for the next
    token when generation starts.
    """

    model: LoadedModel
    sampler: SamplerChain
    batch: Batch
    tokens: list[int]
    logits_index: int
    metrics: TurnMetrics
    max_new: int
    prompt_len: int
    generated: list[int] = field(default_factory=list)


class Decoder(Protocol):
    def generate(self, state: GenerationState) -> Iterator[int]:
        """Yield the reply's tokens one at a time; may have decoded ahead of what it yielded."""
        ...

    def close(self) -> None: ...


class PlainDecoder:
    """One token per llama_decode, logits only for that token."""

    def generate(self, state: GenerationState) -> Iterator[int]:
        model, batch = state.model, state.batch
        idx = state.logits_index
        while True:
            token = state.sampler.sample(model.ctx, idx)
            yield token
            batch.clear()
            batch.add(token, len(state.tokens), 0, True)
            model.decode(batch)
            state.tokens.append(token)
            idx = 0

    def close(self) -> None:
        pass


@dataclass
class EngineInfo:
    profile: str
    model_name: str
    model_path: str
    n_ctx: int
    n_layer: int
    gpu_layers: int
    type_k: str
    type_v: str
    flash_attn: bool
    threads: int
    load_ms: float
    template_fallback: str | None
    speculative: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def resolve_gpu_layers(profile: Profile, n_layer_hint: int | None = None) -> int:
    """``gpu_layers`` as a number: explicit values pass, ``all`` is every layer, ``auto`` asks the
    planner (0 when there is no GPU)."""
    gl = profile.gpu_layers
    if isinstance(gl, int):
        return gl
    if gl == "all":
        return 999
    try:
        from workstation.core.planner import plan_for_profile

        return plan_for_profile(profile).gpu_layers
    except (ImportError, AttributeError):
        return 0


class Engine:
    """A model loaded for one profile. Not thread-safe, except ``cancel()``."""

    def __init__(
        self,
        profile: Profile,
        *,
        cancel_flag: CancelFlag | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> None:
        if profile.backend != "llama":
            raise EngineError(f"Profile '{profile.name}' uses the {profile.backend} backend, not a local model.")
        t0 = time.perf_counter()
        self.profile = profile
        self.cancel_flag: CancelFlag = cancel_flag or threading.Event()
        path = resolve_model_path(profile.model)
        self.gpu_layers = resolve_gpu_layers(profile)
        self.settings = RuntimeSettings(
            n_ctx=profile.context,
            n_gpu_layers=self.gpu_layers,
            n_threads=profile.resolved_threads(),
            flash_attn=profile.resolved_flash_attn(),
            type_k=KV_CACHE_TYPES[profile.kv_cache.k],
            type_v=KV_CACHE_TYPES[profile.kv_cache.v],
        )
        self.model = LoadedModel(path, self.settings, progress=progress)
        try:
            self.template = template_for(self.model)
            self.batch = Batch(self.model.n_batch)
            self.decoder: Decoder = self._make_decoder()
        except BaseException:
            self.model.close()
            raise
        self.tokens: list[int] = []  # what sequence 0's KV cache holds
        self.load_ms = (time.perf_counter() - t0) * 1000

    def _make_decoder(self) -> Decoder:
        mode = self.profile.speculative.mode
        if mode == "off":
            return PlainDecoder()
        from workstation.core.speculative import make_decoder

        return make_decoder(self.profile, self.model)

    # --- public interface (mirrored by EngineProcess) ----------------------------------------
    def info(self) -> EngineInfo:
        return EngineInfo(
            profile=self.profile.key,
            model_name=self.model.metadata.get("general.name", self.model.path.stem),
            model_path=str(self.model.path),
            n_ctx=self.model.n_ctx,
            n_layer=self.model.n_layer,
            gpu_layers=min(self.gpu_layers, self.model.n_layer),
            type_k=self.profile.kv_cache.k,
            type_v=self.profile.kv_cache.v,
            flash_attn=self.settings.flash_attn,
            threads=self.settings.n_threads,
            load_ms=self.load_ms,
            template_fallback=self.template.fallback_reason,
            speculative=self.profile.speculative.mode,
        )

    def cancel(self) -> None:
        self.cancel_flag.set()

    def reset(self) -> None:
        """Forget the KV cache (a new conversation)."""
        self.model.clear_memory()
        self.tokens = []

    def close(self) -> None:
        self.decoder.close()
        self.batch.close()
        self.model.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chat_prompt(self, messages: list[Message]) -> list[int]:
        """The prompt tokens for ``messages`` (system prompt from the profile unless given)."""
        if self.profile.system_prompt.strip() and not any(m["role"] == "system" for m in messages):
            messages = [{"role": "system", "content": self.profile.system_prompt.strip()}, *messages]
        return chat_prompt_tokens(self.model, self.template, messages)

    def fit_messages(self, messages: list[Message], reserve: int) -> list[int]:
        """Prompt tokens for the newest messages that fit the context with ``reserve`` left."""
        if not messages or not messages[-1].get("content", "").strip():
            raise EngineError("The message is empty; type something to send.")
        kept = list(messages)
        while True:
            tokens = self.chat_prompt(kept)
            if len(tokens) + reserve <= self.model.n_ctx:
                return tokens
            droppable = [i for i, m in enumerate(kept[:-1]) if m["role"] != "system"]
            if not droppable:
                raise EngineError(
                    f"The message is {len(tokens)} tokens but this profile's context holds "
                    f"{self.model.n_ctx}; shorten it or use 'workstation summarize' for long documents."
                )
            del kept[droppable[0]]

    def stream_chat(
        self, messages: list[Message], sampling: Sampling | None = None
    ) -> Iterator[TurnEvent]:
        """Stream one assistant turn for ``messages`` (the last one is the user's)."""
        t_request = time.perf_counter()
        sampling = sampling or self.profile.sampling
        reserve = min(sampling.max_tokens, max(16, self.model.n_ctx // 4))
        tokens = self.fit_messages(messages, reserve)
        yield from self.stream_tokens(tokens, sampling, t_request=t_request)

    def stream_tokens(
        self,
        prompt: list[int],
        sampling: Sampling | None = None,
        *,
        t_request: float | None = None,
    ) -> Iterator[TurnEvent]:
        """Stream a continuation of ``prompt`` (token ids), reusing the KV cache's common prefix."""
        t_request = t_request if t_request is not None else time.perf_counter()
        sampling = sampling or self.profile.sampling
        model = self.model
        if not prompt:
            raise EngineError("The prompt is empty.")
        if len(prompt) >= model.n_ctx:
            raise EngineError(
                f"The prompt is {len(prompt)} tokens but this profile's context holds {model.n_ctx}."
            )
        self.cancel_flag.clear()
        metrics = TurnMetrics(load_ms=self.load_ms, kv_size=model.n_ctx)

        # 1. reuse the common prefix of what the KV cache holds
        n_common = 0
        limit = min(len(self.tokens), len(prompt) - 1)  # at least one token must be evaluated
        while n_common < limit and self.tokens[n_common] == prompt[n_common]:
            n_common += 1
        if n_common < len(self.tokens):
            if not model.seq_rm(0, n_common, -1):
                model.seq_rm(0, -1, -1)
                n_common = 0
            self.tokens = self.tokens[:n_common]
        metrics.cache_n = n_common

        # 2. prefill the rest, logits only for the last prompt token
        t_prefill = time.perf_counter()
        todo = prompt[n_common:]
        logits_index = 0
        model.set_abort(self.cancel_flag.is_set)
        try:
            for start in range(0, len(todo), model.n_batch):
                if self.cancel_flag.is_set():
                    raise DecodeAborted()
                chunk = todo[start : start + model.n_batch]
                self.batch.clear()
                base = len(self.tokens)
                for j, tok in enumerate(chunk):
                    logits_index = self.batch.add(tok, base + j, 0, False)
                if start + len(chunk) == len(todo):
                    self.batch._batch.logits[logits_index] = True
                model.decode(self.batch)
                self.tokens.extend(chunk)
        except DecodeAborted:
            model.seq_rm(0, len(self.tokens), -1)
            metrics.prompt_n = len(self.tokens) - n_common
            metrics.prompt_ms = (time.perf_counter() - t_prefill) * 1000
            metrics.total_ms = (time.perf_counter() - t_request) * 1000
            metrics.stop_reason = "cancelled"
            metrics.kv_used = len(self.tokens)
            metrics.finish_rates()
            yield TurnFinished("", metrics)
            return
        finally:
            model.set_abort(None)
        t_gen = time.perf_counter()
        metrics.prompt_n = len(todo)
        metrics.prompt_ms = (t_gen - t_prefill) * 1000

        # 3. generate
        sampler = SamplerChain(sampling, model.n_vocab)
        state = GenerationState(
            model=model,
            sampler=sampler,
            batch=self.batch,
            tokens=self.tokens,
            logits_index=logits_index,
            metrics=metrics,
            max_new=sampling.max_tokens,
            prompt_len=len(prompt),
        )
        detok = StreamDetokenizer()
        parts: list[str] = []
        reply: list[int] = []
        stop = "length"
        t_last = t_gen
        gen = self.decoder.generate(state)
        try:
            for token in gen:
                t_last = time.perf_counter()
                if model.is_eog(token) and not sampling.ignore_eos:
                    stop = "eos"
                    break
                reply.append(token)
                text = detok.push(model.piece(token))
                if text:
                    if not parts:
                        metrics.ttft_ms = (time.perf_counter() - t_request) * 1000
                    parts.append(text)
                    yield TokenDelta(text)
                if len(reply) >= sampling.max_tokens:
                    stop = "length"
                    break
                if len(prompt) + len(reply) >= model.n_ctx:
                    stop = "context"
                    break
                if self.cancel_flag.is_set():
                    stop = "cancelled"
                    break
        except DecodeAborted:
            stop = "cancelled"
        finally:
            gen.close()
            sampler.close()
        tail = detok.flush()
        if tail:
            parts.append(tail)
            yield TokenDelta(tail)

        # 4. the KV cache keeps prompt + reply (a speculative decoder may have run ahead)
        keep = len(prompt) + len(reply)
        if len(self.tokens) > keep:
            model.seq_rm(0, keep, -1)
            del self.tokens[keep:]
        metrics.predicted_n = len(reply)
        metrics.predicted_ms = (t_last - t_gen) * 1000
        if not parts:
            metrics.ttft_ms = (t_last - t_request) * 1000
        metrics.total_ms = (time.perf_counter() - t_request) * 1000
        metrics.kv_used = len(self.tokens)
        metrics.stop_reason = stop
        metrics.finish_rates()
        yield TurnFinished("".join(parts), metrics)

    def run_chat(self, messages: list[Message], sampling: Sampling | None = None) -> TurnFinished:
        """A whole turn at once (tests, scripts)."""
        return finished_turn(self.stream_chat(messages, sampling))
