"""The one interface every engine offers, and the one factory that builds them.

Three engines satisfy ``ChatEngine``:

* ``Engine`` (``core/engine.py``): the model in this process, over the decode core;
* ``EngineProcess`` (``core/engine_process.py``): the same in a child process (the TUI: a
  Textual app decoding in its own process runs at a third of the speed);
* ``RemoteEngine`` (``core/remote.py``): ``backend: openai``, any OpenAI-compatible server.

Chat, summarize, batch, eval and the TUI take a ``ChatEngine`` from ``open_engine`` and never
ask which one they got. Token counts are exact locally and against ``workstation serve`` (its
``/tokenize``); other servers get a stated conservative estimate (``RemoteEngine``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from workstation.core.errors import EngineError, WorkstationError
from workstation.core.events import (
    EngineInfo,
    Message,
    StepEvent,
    TurnEvent,
    TurnFinished,
)
from workstation.core.invocation import cli
from workstation.core.profiles import Constraints, Profile, Sampling

Progress = Callable[[float], None]


def with_system_prompt(profile: Profile, messages: list[Message]) -> list[Message]:
    """``messages`` with the profile's system prompt first, unless they bring their own."""
    if profile.system_prompt.strip() and not any(m["role"] == "system" for m in messages):
        return [{"role": "system", "content": profile.system_prompt.strip()}, *messages]
    return messages


def answer_reserve(sampling: Sampling, n_ctx: int) -> int:
    """Tokens kept free for the answer when fitting a conversation into the context."""
    return min(sampling.max_tokens, max(16, n_ctx // 4))


def least_answer(reserve: int, n_ctx: int) -> int:
    """The answer's room at the least that a conversation over ``n_ctx`` less ``reserve`` is kept
    whole with (``fit_history``; its answer stops at the context's end, and says so), and that a
    document summarized in one part leaves its questions (``summarize.room_to_ask``): one rule for both."""
    return min(reserve, max(16, n_ctx // 16))


def check_sent(messages: list[Message]) -> None:
    """A conversation whose last message is empty is not sent: said in one sentence."""
    if not messages or not str(messages[-1].get("content", "")).strip():
        raise EngineError(said=[("remote.empty", {})])


TOO_LONG = "engine.too_long"  # the phrase of a message the context cannot hold, even alone
TOO_LONG_INSTRUCTIONS = "engine.instructions_too_long"  # ... beside instructions that take most of it
OVER_PROMPT_LIMIT = "engine.over_prompt_limit"  # ... over the prompt tokens a server reads a request
# the same of a summary's step (a part of the document, or their summaries put together): said as the
# summary's own problem (it ended "…summarize the document (F6 …)" inside F6's summary)
# (and a server's refusal or stop that said what a chat does: "a new conversation needs fewer", "send it again")
IN_A_SUMMARY = {TOO_LONG: "engine.too_long_in_summary", OVER_PROMPT_LIMIT: "engine.over_prompt_limit_in_summary",
                "remote.prompt_too_big": "remote.prompt_too_big_in_summary",
                "remote.over_whole_day": "remote.over_whole_day_in_summary",
                "remote.cut_by_stopping": "remote.cut_by_stopping_in_summary"}


def too_long(err: WorkstationError) -> bool:
    """Whether a turn failed because the context cannot hold its message (with the instructions)."""
    return bool(err.said) and err.said[0][0] in (TOO_LONG, TOO_LONG_INSTRUCTIONS, OVER_PROMPT_LIMIT)


def fit_history(
    messages: list[Message], count: Callable[[list[Message]], int], n_ctx: int, reserve: int,
    most: int | None = None, shift: bool = True,
) -> tuple[list[Message], int]:
    """The newest messages whose prompt (``count``: its tokens) fits ``n_ctx`` with ``reserve``
    left for the answer (and is at most ``most`` tokens: a server's prompt limit), and how many
    earlier messages were left out for it. The system prompt is kept, a reply to go on from
    (a last assistant message) keeps its question, and what is kept starts with a user's message (Gemma's and Mistral's chat templates refuse a conversation that
    starts with the assistant's). Every engine fits a conversation so, and says how many it
    left out (``TurnMetrics.left_out_n``): the local engine dropped the oldest without a word,
    and the model answered a question about them as if it had never been told.

    ``shift``: the oldest go by halves of the room (as llama.cpp's and Ollama's context shift
    free half the context): the kept part may start only where the tokens left out before it
    first reach a whole number of half rooms, and it starts at the first of those that fits. So the
    next turns start at the same message while it fits, and their prompt begins with the cells
    the turn before left; the kept part began a message later each turn, so no prompt shared a
    prefix with the last, and the whole conversation was read again before every reply (a minute
    a turn on a CPU). Where it starts follows from the conversation and the room alone, so a restart, another
    process (``chat -c``) or a desk PC finds the same start, and its saved cells with it.
    Without ``shift``, as few go as make room.

    A conversation over the room by less than the reserve less a sixteenth of the context is
    kept whole, its answer given less room (it stops at the context's end, and says so): a
    question after a long document left the document out, the answer reserve being a quarter
    of the context, and the model answered without it.

    Each start is found by halving (a few counts, each a tokenization, or two HTTP requests to a
    desk PC's server): counted again after each message dropped, 400 messages took two minutes
    before the first word, and a desk PC sent 780 requests a turn."""
    check_sent(messages)
    body, last = messages[:-1], messages[-1]
    # a reply to go on from keeps its question: from the last user's message on, nothing is left out
    asked = [i for i, m in enumerate(body) if m["role"] == "user"] if last["role"] == "assistant" else []
    keep_from = asked[-1] if asked else len(body)
    talk = [i for i, m in enumerate(body[:keep_from]) if m["role"] != "system"]

    def kept(k: int) -> list[Message]:
        """The messages with the first ``k`` of the talk left out."""
        out = set(talk[:k])
        return [m for i, m in enumerate(body) if i not in out] + [last]

    counted: dict[int, int] = {}

    def tokens(k: int) -> int:
        if k not in counted:
            counted[k] = count(kept(k))
        return counted[k]

    room = n_ctx - reserve if most is None else min(n_ctx - reserve, most)

    def first(starts: list[int], ok: Callable[[int], bool]) -> int:
        """The first of ``starts`` where ``ok`` holds, by halving (it holds from there on); the
        last one where it holds nowhere before."""
        low, high = -1, len(starts) - 1
        while high - low > 1:
            mid = (low + high) // 2
            if ok(starts[mid]):
                high = mid
            else:
                low = mid
        return starts[high]

    # where the kept part may start: at a user's message (a reply goes with its question)
    starts = [0] + [k for k in range(1, len(talk)) if body[talk[k]]["role"] != "assistant"] + [len(talk)]
    starts = sorted(set(starts))
    whole = tokens(0)
    if whole <= room:
        return list(messages), 0
    least = least_answer(reserve, n_ctx)  # the answer's room at the least, to keep everything
    if whole <= n_ctx - least and (most is None or whole <= most):
        return list(messages), 0
    n = tokens(starts[-1])
    if len(starts) == 1 or n > room:
        told = n - count([last])  # the system prompt's: a conversation's long instructions (Alt+I)
        if any(m["role"] == "system" for m in body) and told > room // 2:  # left no room beside them
            raise EngineError(said=[(TOO_LONG_INSTRUCTIONS, {"n": f"{told:,}", "ctx": f"{n_ctx:,}",
                                                             "reserve": f"{reserve:,}"})])
        if most is not None and most < n_ctx - reserve and n <= n_ctx - reserve:
            # the server's prompt limit (serve --max-prompt-tokens), not the context: "with 1,024 kept
            # for the reply, this profile's context (4,096 tokens) cannot hold it" of 1,499 tokens
            raise EngineError(said=[(OVER_PROMPT_LIMIT, {"n": f"{n:,}", "most": f"{most:,}",
                                                         "summarize": cli("summarize")})])
        raise EngineError(said=[(TOO_LONG, {"n": f"{n:,}", "ctx": f"{n_ctx:,}", "reserve": f"{reserve:,}",
                                            "summarize": cli("summarize")})])
    start = first(starts[1:], lambda k: tokens(k) <= room)  # as few left out as make room
    if shift:  # the first whole number of half rooms whose start fits: past the last start that does not
        half = max(1, room // 2)
        short = whole - tokens(starts[starts.index(start) - 1])  # tokens left out there (0: none)
        reach = (short // half + 1) * half
        fewest = start
        start = first([k for k in starts if k >= start], lambda k: whole - tokens(k) >= reach)
        if start == starts[-1] and fewest < start:  # (a long last message) not all the talk for it: the fewest
            start = fewest
    chosen = kept(start)
    return chosen, len(messages) - len(chosen)


@runtime_checkable
class ChatEngine(Protocol):
    profile: Profile

    def info(self) -> EngineInfo:
        """What is loaded: model, context per request, layers, K/V types, slots."""
        ...

    def count_prompt(self, messages: list[Message]) -> int:
        """Tokens the chat prompt for ``messages`` takes (system prompt included)."""
        ...

    def stream_chat(
        self, messages: list[Message], sampling: Sampling | None = None, *,
        constraints: Constraints | None = None, tag: str | None = None, reading: bool = False,
    ) -> Iterator[TurnEvent]:
        """One assistant turn, streamed: ``TokenDelta`` pieces, then ``TurnFinished``.
        ``constraints``: a grammar (or JSON schema) the reply must follow, and the like.
        ``tag``: the saved conversation these messages are (``kv_state.conversation_tag``).
        ``reading``: before the first piece, ``PromptRead`` events say how far a long prompt has
        been read (where the engine can tell: locally and from ``workstation serve``)."""
        ...

    def forget(self, tag: str) -> int:
        """A saved conversation was deleted: drop the cells kept for it (in memory and its
        saved states on disk); the files deleted (0 for a server's engine)."""
        ...

    def claim_cells(self, tag: str, messages: list[Message]) -> int:
        """The cells beginning with ``messages``' prompt that belong to no conversation (a
        document just summarized) become ``tag``'s; the slots claimed (0 for a server's)."""
        ...

    def run_chat(
        self, messages: list[Message], sampling: Sampling | None = None, *, constraints: Constraints | None = None
    ) -> TurnFinished:
        """One assistant turn at once."""
        ...

    def run_many(
        self,
        conversations: Sequence[list[Message]],
        sampling: Sampling | None = None,
        on_finished: Callable[[int, TurnFinished], None] | None = None,
        *,
        tag: str | None = None,
        on_step: Callable[[int, StepEvent], None] | None = None,
    ) -> list[TurnFinished]:
        """One turn for each conversation, as many at once as the engine has slots (``tag``:
        as for ``stream_chat``; ``kv_state.NOT_KEPT`` for cells never to be saved).
        ``on_step(i, event)``: how far conversation ``i`` has got before it ends: how much of
        its prompt is read (``PromptRead``) and each piece of its reply (``TokenDelta``)."""
        ...

    def cancel(self) -> None:
        """Stop the running turn(s) soon; safe from any thread."""
        ...

    def reset(self) -> None:
        """Forget cached conversation state."""
        ...

    def close(self) -> None: ...


def open_engine(
    profile: Profile,
    *,
    child_process: bool = True,
    progress: Progress | None = None,
    concurrent: bool = False,
    keep_state: bool = False,
    cpu_only: bool = False,
) -> ChatEngine:
    """An engine for ``profile``: a remote client for ``backend: openai``, else a local model
    (in a child process for interactive apps, in this process for one-shot commands).
    ``concurrent``: several threads will run turns at once (a remote engine always allows it;
    a local one then runs its decode loop in a thread of its own). ``keep_state``: a local
    engine saves conversations' KV cells to disk when they are left, and restores them.
    ``cpu_only``: the model on the CPU, no GPU seen (the app, after it crashed on one)."""
    if profile.backend == "openai":
        from workstation.core.remote import RemoteEngine

        return RemoteEngine(profile)
    if child_process:
        if concurrent:
            raise ValueError("an engine in a child process runs one turn at a time")
        import dataclasses

        from workstation.core.engine_process import EngineCrashed, EngineProcess

        cpu = dataclasses.replace(profile, gpu_layers=0)
        if cpu_only:
            return EngineProcess(cpu, progress=progress, keep_state=keep_state, cpu_only=True)
        try:
            return EngineProcess(profile, progress=progress, keep_state=keep_state)
        except EngineCrashed as crash:
            if not crash.on_gpu:
                raise
            # crashed loading onto a GPU (the first GPU run: every such load): on the CPU this
            # time, no GPU seen, and said, as Ollama falls back to its CPU runner; slower, but the
            # chat goes on
            try:
                engine = EngineProcess(cpu, progress=progress, keep_state=keep_state, cpu_only=True)
            except EngineCrashed as again:  # on the CPU too: not the GPU's doing
                raise EngineCrashed(said=[("engine.stopped_crash_both", dict(again.how[1]))], on_gpu=False,
                                    how=again.how) from None
            engine.load_notes.append(("engine.gpu_crashed", {}))
            return engine
    from workstation.core.engine import Engine

    return Engine(profile, progress=progress, concurrent=concurrent, keep_state=keep_state)
