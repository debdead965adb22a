"""One loaded model for one profile: a synchronous facade over the decode core.

``Engine`` owns a ``Scheduler`` (``core/scheduler.py``) with ``profile.parallel`` slots and no
thread of its own: iterating a turn runs the scheduler's steps in the caller's thread, so the
chat, summaries, batch, eval and bench turns go through exactly the loop ``serve`` runs
(speculation, stop strings, prefix reuse, metrics exist once). The slots' KV cells are kept
between turns and a new prompt goes to the slot that holds most of it, so turn N of a
conversation only prefills what is new (``cache_n`` counts the reused tokens).

``Engine(profile, concurrent=True)`` runs the scheduler in a thread of its own instead, so
several threads may run turns at once (``batch`` keeps ``parallel`` documents in flight).

``Engine`` runs in the calling process (``workstation chat``, summarize, batch, eval, bench).
The TUI uses ``EngineProcess`` (``core/engine_process.py``), the same interface with the
engine in a child process; ``backend: openai`` profiles use ``RemoteEngine``. All three
satisfy ``ChatEngine`` (``core/engine_api.py``) and are built by ``open_engine`` there.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from workstation.core.chat_template import reply_to_continue
from workstation.core.engine_api import answer_reserve, fit_history, with_system_prompt
from workstation.core.errors import EngineError
from workstation.core.events import (
    CancelFlag,
    EngineInfo,
    Message,
    RunningTurns,
    StepEvent,
    TurnEvent,
    TurnFinished,
    finished_turn,
)
from workstation.core.kv_state import KvStateStore, kept_store
from workstation.core.loops import watched
from workstation.core.phrases import log_said
from workstation.core.profiles import Constraints, Profile, Sampling
from workstation.core.runtime import LoadedModel
from workstation.core.scheduler import UNBOUNDED_QUEUE, Scheduler

__all__ = ["Engine"]


log = logging.getLogger(__name__)


class Engine:
    """A model loaded for one profile. One caller at a time, except ``cancel()`` — or, with
    ``concurrent=True``, any number of threads running turns at once."""

    def __init__(
        self,
        profile: Profile,
        *,
        cancel_flag: CancelFlag | None = None,
        progress: Callable[[float], None] | None = None,
        concurrent: bool = False,
        keep_state: bool = False,
    ) -> None:
        self.profile = profile
        self.cancel_flag: CancelFlag = cancel_flag or threading.Event()
        # keep_state: conversations' KV cells are saved to disk when left (reset, close) and
        # restored when a prompt starts with them again (core/kv_state.py)
        store = kept_store() if keep_state else None  # (none for a budget of 0)
        self.core = Scheduler(
            profile, max_queue=UNBOUNDED_QUEUE, progress=progress, threaded=concurrent, kv_store=store
        )
        self.load_ms = self.core.load_ms
        self.turns = RunningTurns(self.cancel_flag)
        self.shift_by_half = True  # a conversation grown past the context loses half the room at a time (fit_history)

    @property
    def model(self) -> LoadedModel:
        return self.core.model

    @property
    def tokens(self) -> list[int]:
        """What slot 0's KV cells hold (the conversation of a one-slot engine)."""
        return self.core.slots[0].tokens

    @property
    def decoder(self) -> Any:
        """Slot 0's speculator (None without speculation): its stats and policy knobs."""
        return self.core.slots[0].spec

    @property
    def n_ctx(self) -> int:
        return self.core.slot_ctx

    def info(self) -> EngineInfo:
        return self.core.info()

    def cancel(self) -> None:
        self.cancel_flag.set()

    def reset(self) -> None:
        """Forget the KV cache (a new conversation); with ``keep_state`` it is saved first."""
        self.save_state()
        self.core.reset()

    def forget(self, tag: str) -> int:
        """A saved conversation was deleted: drop its cells here and its saved states on disk."""
        return self.core.forget(tag)

    def claim_cells(self, tag: str, messages: list[Message]) -> int:
        """A conversation was made of what the engine just did (a document's summary): the
        cells that begin with ``messages``' prompt are that conversation's from now on."""
        return self.core.claim(tag, self.chat_prompt(messages))

    def save_state(self) -> int:
        """Save the slots' cells to disk (``keep_state`` engines; else nothing): states saved."""
        try:
            return self.core.save_states()
        except OSError as err:  # a full disk must not cost the conversation: it is in SQLite
            log_said(log, (self.core.kv_store or KvStateStore()).not_saved(err))
            return 0

    def close(self) -> None:
        self.core.close()  # saves the slots' cells first (keep_state)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- prompts ---------------------------------------------------------------------------
    def chat_prompt(self, messages: list[Message]) -> list[int]:
        """The prompt tokens for ``messages`` (system prompt from the profile unless given); a
        last assistant message is a reply begun, which the model goes on from, as serve's
        (the app's "continue" asks so; it was closed and a new reply begun)."""
        history, begun = reply_to_continue(with_system_prompt(self.profile, messages))
        return self.core.chat_tokens(history, begun=begun)

    def count_prompt(self, messages: list[Message]) -> int:
        return len(self.chat_prompt(messages))

    def fit_messages(self, messages: list[Message], reserve: int) -> tuple[list[int], int]:
        """Prompt tokens for the newest messages that fit the context with ``reserve`` left,
        and how many earlier messages were left out for it (``fit_history``)."""
        last: list[tuple[int, list[int]]] = []  # the last count's (messages, tokens): one list held

        def count(kept: list[Message]) -> int:
            last[:] = [(len(kept), self.chat_prompt(kept))]
            return len(last[0][1])

        kept, left_out = fit_history(messages, count, self.n_ctx, reserve, shift=self.shift_by_half)
        return (last[0][1] if last[0][0] == len(kept) else self.chat_prompt(kept)), left_out

    # --- turns -----------------------------------------------------------------------------
    def stream_chat(
        self, messages: list[Message], sampling: Sampling | None = None, *,
        constraints: Constraints | None = None, tag: str | None = None, reading: bool = False,
    ) -> Iterator[TurnEvent]:
        """Stream one assistant turn for ``messages`` (the last one is the user's); ``tag``: the
        saved conversation they are (its cells are saved with it, and ``forget`` deletes them);
        ``reading``: ``PromptRead`` events say how far a long prompt has been read."""
        t_request = time.perf_counter()
        sampling = watched(messages, sampling or self.profile.sampling)
        tokens, left_out = self.fit_messages(messages, answer_reserve(sampling, self.n_ctx))
        asked = messages[-1].get("content") if messages and messages[-1]["role"] == "user" else None
        # the new message's own tokens (its text alone: one message, not the conversation, tokenized again)
        new_n = len(self.core.model.tokenize(asked, add_special=False, parse_special=False)) \
            if isinstance(asked, str) and asked else 0
        if new_n and all(m["role"] == "system" for m in messages[:-1]):
            # a conversation's first message: its instructions are read in any case, no conversation again
            # (a long system prompt made F5 count a first reply among those that "read it all again")
            new_n = sys.maxsize
        for event in self.stream_tokens(
            tokens, sampling, t_request=t_request, constraints=constraints, tag=tag, reasoning=True, reading=reading,
        ):
            if isinstance(event, TurnFinished):
                event.metrics.left_out_n = left_out
                event.metrics.new_n = min(new_n, event.metrics.prompt_n)
            yield event

    def stream_tokens(
        self,
        prompt: list[int],
        sampling: Sampling | None = None,
        *,
        t_request: float | None = None,
        stop: list[str] | None = None,
        constraints: Constraints | None = None,
        tag: str | None = None,
        reasoning: bool = False,
        reading: bool = False,
    ) -> Iterator[TurnEvent]:
        """Stream a continuation of ``prompt`` (token ids), reusing the KV cache's common prefix;
        ``reasoning``: it is a chat reply, whose thinking streams apart (``TokenDelta.reasoning``)."""
        sampling = sampling or self.profile.sampling
        if len(prompt) >= self.n_ctx:
            raise EngineError(
                f"The prompt is {len(prompt)} tokens but this profile's context holds {self.n_ctx}."
            )
        with self.turns.turn():
            yield from self.core.stream(
                prompt, sampling, t_request=t_request, stop=stop, cancelled=self.cancel_flag,
                constraints=constraints, tag=tag, reasoning=reasoning, reading=reading,
            )

    def run_chat(
        self, messages: list[Message], sampling: Sampling | None = None, *, constraints: Constraints | None = None
    ) -> TurnFinished:
        """A whole turn at once (tests, scripts)."""
        return finished_turn(self.stream_chat(messages, sampling, constraints=constraints))

    def run_many(
        self,
        conversations: Sequence[list[Message]],
        sampling: Sampling | None = None,
        on_finished: Callable[[int, TurnFinished], None] | None = None,
        *,
        tag: str | None = None,
        on_step: Callable[[int, StepEvent], None] | None = None,
    ) -> list[TurnFinished]:
        """One turn for each conversation, decoded together in the profile's slots (they share
        common prefixes in the KV cache); results in order, ``on_finished`` as each ends."""
        sampling = sampling or self.profile.sampling
        reserve = answer_reserve(sampling, self.n_ctx)
        fitted = [self.fit_messages(list(c), reserve) for c in conversations]

        def finished(i: int, turn: TurnFinished) -> None:
            turn.metrics.left_out_n = fitted[i][1]
            if on_finished is not None:
                on_finished(i, turn)

        with self.turns.turn():
            return self.core.run_all(
                [tokens for tokens, _ in fitted], sampling, finished, cancelled=self.cancel_flag, tag=tag,
                reasoning=True, on_step=on_step,
            )
