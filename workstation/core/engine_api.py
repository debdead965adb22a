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

import collections
import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from workstation.core.errors import EngineError
from workstation.core.events import EngineInfo, Message, TurnEvent, TurnFinished
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


def check_sent(messages: list[Message]) -> None:
    """A conversation whose last message is empty is not sent: said in one sentence."""
    if not messages or not str(messages[-1].get("content", "")).strip():
        raise EngineError(said=[("remote.empty", {})])


TOO_LONG = "engine.too_long"  # the phrase of a message the context cannot hold, even alone


class KeptStarts:
    """Where an engine's recent fits began (``fit_history``), each known by how many messages were
    left out before it, the system prompt and the first two messages kept. A conversation grown past the context starts where it started
    the turn before, while that still fits: the kept part began one message later each turn, so
    the prompt shared no prefix with the cells of the turn before and the whole of it was read
    again before every reply (a minute a turn on a CPU)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._keys: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._lock = threading.Lock()  # threads share an engine

    @staticmethod
    def key(left_out: int, kept: list[Message]) -> str:
        system = [m for m in kept if m["role"] == "system"]
        talk = [m for m in kept if m["role"] != "system"][:2]
        text = json.dumps([left_out, *([m["role"], str(m.get("content", ""))] for m in system + talk)],
                          ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def knows(self, left_out: int, kept: list[Message]) -> bool:
        with self._lock:
            return self.key(left_out, kept) in self._keys

    def add(self, left_out: int, kept: list[Message]) -> None:
        key = self.key(left_out, kept)
        with self._lock:
            self._keys[key] = None
            self._keys.move_to_end(key)
            while len(self._keys) > self.size:
                self._keys.popitem(last=False)


def fit_history(
    messages: list[Message], count: Callable[[list[Message]], int], n_ctx: int, reserve: int,
    most: int | None = None, kept_starts: KeptStarts | None = None,
) -> tuple[list[Message], int]:
    """The newest messages whose prompt (``count``: its tokens) fits ``n_ctx`` with ``reserve``
    left for the answer (and is at most ``most`` tokens: a server's prompt limit), and how many
    earlier messages were left out for it. The system prompt is kept, a reply to go on from
    (a last assistant message) keeps its question, and what is kept starts with a user's message (Gemma's and Mistral's chat templates refuse a conversation that
    starts with the assistant's). Every engine fits a conversation so, and says how many it
    left out (``TurnMetrics.left_out_n``): the local engine dropped the oldest without a word,
    and the model answered a question about them as if it had never been told.

    With ``kept_starts`` (an engine's memory of its fits) a conversation that does not fit
    starts where one of its earlier fits started, the earliest that still fits, so that its
    prompt begins with the cells the turn before left; where none does, the oldest messages go
    until the prompt takes half the room (llama.cpp's and Ollama's context shift free half), so
    the next turns fit there too. Without it, as few go as make room.

    The first message kept is found by halving (a few counts, each a tokenization, or two HTTP
    requests to a desk PC's server): counted again after each message dropped, 400 messages
    took two minutes before the first word, and a desk PC sent 780 requests a turn."""
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

    room = n_ctx - reserve if most is None else min(n_ctx - reserve, most)

    def earliest(starts: list[int], within: int) -> int | None:
        """The first of ``starts`` whose prompt takes at most ``within`` tokens (by halving:
        fewer messages never take more), None where none does."""
        low, high = -1, len(starts)  # starts[low] does not fit (or is none), starts[high] does (or is none)
        while high - low > 1:
            mid = (low + high) // 2
            if count(kept(starts[mid])) <= within:
                high = mid
            else:
                low = mid
        return starts[high] if high < len(starts) else None

    # where the kept part may start: at a user's message (a reply goes with its question)
    starts = [0] + [k for k in range(1, len(talk)) if body[talk[k]]["role"] != "assistant"] + [len(talk)]
    starts = sorted(set(starts))
    if count(kept(0)) <= room:
        return list(messages), 0
    n = count(kept(starts[-1]))
    if len(starts) == 1 or n > room:
        raise EngineError(said=[(TOO_LONG, {"n": f"{n:,}", "ctx": f"{n_ctx:,}", "reserve": f"{reserve:,}",
                                            "summarize": cli("summarize")})])
    if kept_starts is None:
        start = earliest(starts[1:], room)
    else:
        start = earliest([k for k in starts[1:] if kept_starts.knows(k, kept(k))], room)
        if start is None:
            start = earliest(starts[1:], room // 2)
        if start is None:
            start = starts[-1]
    assert start is not None  # the last start fits (above)
    chosen = kept(start)
    if kept_starts is not None:
        kept_starts.add(start, chosen)
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
    ) -> list[TurnFinished]:
        """One turn for each conversation, as many at once as the engine has slots (``tag``:
        as for ``stream_chat``; ``kv_state.NOT_KEPT`` for cells never to be saved)."""
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
) -> ChatEngine:
    """An engine for ``profile``: a remote client for ``backend: openai``, else a local model
    (in a child process for interactive apps, in this process for one-shot commands).
    ``concurrent``: several threads will run turns at once (a remote engine always allows it;
    a local one then runs its decode loop in a thread of its own). ``keep_state``: a local
    engine saves conversations' KV cells to disk when they are left, and restores them."""
    if profile.backend == "openai":
        from workstation.core.remote import RemoteEngine

        return RemoteEngine(profile)
    if child_process:
        if concurrent:
            raise ValueError("an engine in a child process runs one turn at a time")
        from workstation.core.engine_process import EngineProcess

        return EngineProcess(profile, progress=progress, keep_state=keep_state)
    from workstation.core.engine import Engine

    return Engine(profile, progress=progress, concurrent=concurrent, keep_state=keep_state)
