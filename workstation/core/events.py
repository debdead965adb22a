"""What a turn streams, and what every engine reports about itself.

Shared by the decode core (``scheduler.py``), its synchronous facade (``engine.py``), the engine
in a child process and the remote engine, so none of them imports another to speak.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from workstation.core.errors import EngineError
from workstation.core.metrics import TurnMetrics
from workstation.core.phrases import Phrase
from workstation.core.token_probs import TokenProb

Message = dict[str, str]


@dataclass
class TokenDelta:
    text: str  # the answer's text (a reasoning model's thinking is in ``reasoning``)
    tokens: int = 1  # how many generated tokens this piece of text covers
    ids: list[int] = field(default_factory=list)  # their ids (the scheduler's; may be empty)
    probs: list[TokenProb] = field(default_factory=list)  # of the tokens whose text starts here (n_probs)
    reasoning: str = ""  # thinking that came with these tokens (core/reasoning.py)


@dataclass
class TurnFinished:
    text: str
    metrics: TurnMetrics
    tokens: list[int] = field(default_factory=list)  # the reply's token ids (local engines)
    probs: list[TokenProb] = field(default_factory=list)  # the reply's tokens' probabilities (n_probs)
    reasoning: str = ""  # a reasoning model's thinking before the answer (not part of ``text``)


@dataclass
class RequestFailed:
    message: str
    status: int = 500  # the HTTP status a server answers with (429: the queue gave its place away)
    retry_after_s: int = 0
    param: str | None = None  # a 400's request field that caused it (the server names it)
    said: list[Phrase] | None = None  # the message as phrases, for the app's language (core/phrases.py)


@dataclass
class ServerWaiting:
    """Nothing has come from a remote server for ``seconds`` since the request: it queues the
    request behind the same person's other one (``own``: its key may run one at a time), or it
    is slow to answer (busy, frozen). The app said "reading the conversation… 26 s" of both.
    ``stalled``: the server stopped sending in the middle of the reply (``seconds`` since its
    last word), where the half-written reply stood still without a word."""

    seconds: float
    own: bool = False
    stalled: bool = False
    # the server answered why it holds the request back, and is asked again: ``server_busy`` (every
    # slot taken by other people's requests) or ``loading`` (restarted, loading its model)
    held: str = ""


# ``ServerWaiting.held`` of a server that has begun to stop while it writes the reply (an SSE
# comment line in the stream, ``: shutting_down …``, which SSE clients skip): the reply goes on
# for the server's grace, then may be cut off; a desk PC said nothing until the cut
SERVER_STOPPING = "shutting_down"


@dataclass
class PromptRead:
    """How far the prompt has been read, after each part of it (only to a request that asked:
    ``reading=True``): a long prompt read on a CPU takes a minute before the first word, and
    the app showed only the seconds going by. As llama-server's ``prompt_progress``."""

    read: int  # prompt tokens in the cells now, those reused from the cache included
    total: int  # the prompt's tokens
    cached: int = 0  # of them, reused from the cache (not read)
    ms: float = 0.0  # since the reading began

    @property
    def fraction(self) -> float:
        """Of the tokens to read, the part read (0 to 1)."""
        to_read = self.total - self.cached
        return min(1.0, max(0.0, (self.read - self.cached) / to_read)) if to_read > 0 else 1.0

    @property
    def whole(self) -> bool:
        """All of the prompt read at once (512 tokens or fewer): said to a chat, whose F5 memory
        gauge counts the new message by it, not to a summary's step (``StepEvent``: a part said
        read at the moment its first word comes took that word's place in the twice-a-second
        progress); a longer prompt's last part is said by the first word."""
        return self.read >= self.total


TurnEvent = TokenDelta | TurnFinished | PromptRead | ServerWaiting
StepEvent = PromptRead | TokenDelta | ServerWaiting  # how far one of several turns has got (run_many's on_step)
SchedulerEvent = TokenDelta | TurnFinished | RequestFailed | PromptRead


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


class RunningTurns:
    """Counts an engine's turns in flight around one cancel flag: a turn starts uncancelled,
    unless other turns are running and were just cancelled (threads share one engine)."""

    def __init__(self, flag: CancelFlag) -> None:
        self.flag = flag
        self.n = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        with self._lock:
            if self.n == 0:
                self.flag.clear()
            self.n += 1
        try:
            yield
        finally:
            with self._lock:
                self.n -= 1


@dataclass
class EngineInfo:
    profile: str
    model_name: str
    model_path: str
    n_ctx: int  # tokens one request may use (a slot's context)
    n_layer: int
    gpu_layers: int
    type_k: str
    type_v: str
    flash_attn: bool
    threads: int
    load_ms: float
    template_fallback: str | None
    speculative: str
    parallel: int = 1
    n_params: int = 0  # the model's parameters (a server's: where its /models says; 0: not known)
    # the most prompt tokens one request may have, where fewer than the context's (a server's
    # --max-prompt-tokens, its /models meta): a summary's parts fit it; 0: the context's
    max_prompt_tokens: int = 0
    # a desk PC's: its server's model's words a token by language, as the server says them (its
    # /models meta, ``language_words.said_figures``); empty: not said (an older server), a local model
    words_a_token: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)
