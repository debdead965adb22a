"""The scheduler's callers that wait for their requests (``Scheduler.stream``, ``run_all``): a
blocking iterator over one request's events, or every prompt at once waited for together. A
threaded scheduler's thread delivers the events; otherwise the caller's thread runs the steps
until they come. A caller that stops waiting cancels what it asked."""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from workstation.core.errors import EngineError
from workstation.core.events import (
    CancelFlag,
    PromptRead,
    RequestFailed,
    SchedulerEvent,
    StepEvent,
    TurnEvent,
    TurnFinished,
)
from workstation.core.profiles import Sampling
from workstation.core.slots import Request

if TYPE_CHECKING:
    from workstation.core.scheduler import Scheduler


class WaitingCallers:
    """``stream`` and ``run_all``: a caller's thread waits on its requests' events
    (``_next_event``) and cancels them when it stops waiting (``_abandon``). A part of
    ``Scheduler``: ``submit``, ``step``, ``cancel``, the queue and the slots are the Scheduler's."""

    def stream(self: Scheduler, prompt: list[int], sampling: Sampling, **kwargs: Any) -> Iterator[TurnEvent]:
        """Blocking iterator over one request's events; closing it early cancels the request."""
        events: queue.SimpleQueue[SchedulerEvent] = queue.SimpleQueue()
        req = self.submit(prompt, sampling, events.put, **kwargs)
        try:
            while True:
                event = self._next_event(events)
                if isinstance(event, RequestFailed):
                    raise EngineError(event.message, said=event.said)
                yield event
                if isinstance(event, TurnFinished):
                    return
        finally:
            self._abandon(req)

    def run_all(
        self: Scheduler,
        prompts: Sequence[list[int]],
        sampling: Sampling,
        on_finished: Callable[[int, TurnFinished], None] | None = None,
        *,
        cancelled: CancelFlag | None = None,
        tag: str | None = None,
        reasoning: bool = False,
        on_step: Callable[[int, StepEvent], None] | None = None,
    ) -> list[TurnFinished]:
        """Submit every prompt at once (they run in parallel in free slots, sharing common
        prefixes) and wait for all; ``on_finished(i, result)`` as each ends (``reasoning``: as
        for ``submit``); ``on_step(i, event)`` as its prompt is read and its reply comes."""
        events: queue.SimpleQueue[tuple[int, SchedulerEvent]] = queue.SimpleQueue()
        reqs: list[Request] = []
        try:
            for i, prompt in enumerate(prompts):
                reqs.append(
                    self.submit(
                        prompt, sampling, lambda e, i=i: events.put((i, e)), cancelled=cancelled, tag=tag,
                        reasoning=reasoning, reading=on_step is not None,
                    )
                )
            results: list[TurnFinished | None] = [None] * len(reqs)
            left = len(reqs)
            while left:
                i, event = self._next_event(events)
                if isinstance(event, RequestFailed):
                    raise EngineError(event.message, said=event.said)
                if isinstance(event, TurnFinished):
                    results[i] = event
                    left -= 1
                    if on_finished is not None:
                        on_finished(i, event)
                elif on_step is not None and not (isinstance(event, PromptRead) and event.whole):
                    on_step(i, event)
            return [r for r in results if r is not None]
        finally:
            for req in reqs:
                self._abandon(req)

    def _next_event(self: Scheduler, events: queue.SimpleQueue[Any]) -> Any:
        """The next event for a caller waiting on ``events``: a threaded scheduler delivers it;
        otherwise the caller's thread runs steps until it arrives."""
        if self.threaded:
            return events.get()
        while events.empty():
            if not self.step() and events.empty():
                raise EngineError("internal error: a request was lost by the scheduler.")
        return events.get()

    def _abandon(self: Scheduler, req: Request) -> None:
        """A caller stopped waiting for ``req``: cancel it (at once when nothing else steps)."""
        if self.threaded:
            self.cancel(req)
            return
        with self._cond:
            if req in self.waiting:
                self.waiting.remove(req)
                req.discard()
                return
        for slot in self.slots:
            if slot.req is req:
                self._finish(slot, "cancelled")
